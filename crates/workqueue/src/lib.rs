//! The workqueue: a de-duplicating, delaying, rate-limited queue of keys that worker tasks take
//! work from — client-go's `util/workqueue`, in async Rust, and the one token bucket kube-gc
//! rate-limits with. The crate's `README.md` is where to start: what the queue promises, the
//! order to read its files in, how it relates to client-go, and a walk through the design.
//!
//! # Contract
//!
//! Keys are any `K: Clone + Eq + Hash`. kube-gc's TTL and retention controllers queue the
//! retention engine's `WorkKey` (an object's resource and `namespace/name` key, or a history
//! group), its garbage collector an object's UID; the example and the benchmarks queue
//! `namespace/name` strings.
//!
//! - **De-duplication.** [`WorkQueue::add`] of a key already queued does nothing. A key is never
//!   handed to two workers at once: adding a key while a worker holds it marks it *dirty*, and
//!   [`WorkQueue::done`] queues it again.
//! - **Order.** Keys are handed out first in, first out.
//! - **Waiting.** [`WorkQueue::get`] waits for a key; after shut-down it hands out what is still
//!   queued, then returns `None` without waiting.
//! - **Delays.** [`WorkQueue::add_after`] puts the key in a min-heap of ready times. Due keys
//!   are moved to the FIFO by whichever `get` or `add_after` comes first, or by the queue's one
//!   timer task when nobody else is active. Delivery is never before the ready time. The
//!   *earlier* ready time always wins: a second `add_after` with a later time is dropped, one with
//!   an earlier time replaces the first. An immediate `add` counts as the earliest time of all, so
//!   it cancels a waiting timer, and `add_after` of a key already queued is dropped (client-go
//!   would run such a key twice, kubernetes#112325).
//! - **Rate limiting.** [`WorkQueue::add_rate_limited`] delays the key by what its
//!   [`RateLimiter`] says; a retry that would be dropped as a duplicate reserves nothing from the
//!   limiter (client-go spends a token anyway, kubernetes#104554).
//! - **Shut-down.** [`WorkQueue::shut_down`] ignores further adds and drops waiting keys;
//!   [`WorkQueue::shut_down_with_drain`] also waits until every key handed out is done.
//! - **Metrics** go to a [`MetricsProvider`] under client-go's names; a [`DebugSnapshot`] shows
//!   the queue's insides.
//!
//! # Modules
//!
//! - [`reference`](mod@reference): [`ReferenceQueue`], every rule above in ~250 lines of `std` collections and
//!   nothing else — **the place to learn the rules**. The fast queue below behaves exactly like
//!   it (`tests/workqueue_model.rs` checks that); each of its modules says what it adds over the
//!   reference and what that buys.
//! - [`queue`]: [`WorkQueue`], the async, shareable handle; its timer task in `queue/timer_task.rs`.
//! - `state`: the synchronous state machine behind the handle — the reference's rules over one
//!   record per key; `state/timers.rs` holds `add_after`, rate limiting and the release of due
//!   timers.
//! - `key_table`: each key stored once, in a slab slot, with a sharded hash index; the rest of
//!   the queue holds 4-byte key ids.
//! - `chunked_vec`: the growable array under the slab and the heap, which grows a chunk at a
//!   time instead of copying everything.
//! - `delay_heap`: the min-heap of timers, with lazy deletion.
//! - `fine_timer`: the timer task's sleep, tokio's wheel for the bulk of a wait and a `timerfd`
//!   for its last 2 ms, so keys are delivered within tens of microseconds of their time.
//! - `in_flight`: start times of the work in progress.
//! - [`rate_limiter`]: the [`RateLimiter`] trait and client-go's three limiters.
//! - [`metrics`]: the metrics hooks, a no-op and a recording provider.
//! - [`token_bucket`]: [`TokenBucket`], the bucket under [`BucketRateLimiter`], plain state
//!   driven by the caller's clock (kube-gc's API client throttles its requests with it too).
//!
//! # Example
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use kube_gc_workqueue::WorkQueue;
//!
//! let queue = WorkQueue::new("example");
//! queue.add("default/job-a".to_string());
//! queue.add("default/job-a".to_string()); // de-duplicated
//! while let Some(key) = queue.get().await {
//!     // ... reconcile `key`; on failure: queue.add_rate_limited(key.clone()) ...
//!     queue.forget(&key);
//!     queue.done(&key);
//!     if queue.is_empty() {
//!         queue.shut_down();
//!     }
//! }
//! # }
//! ```

mod chunked_vec;
mod delay_heap;
mod fine_timer;
mod in_flight;
mod key_table;
pub mod metrics;
pub mod queue;
pub mod rate_limiter;
pub mod reference;
mod state;
pub mod token_bucket;

pub use in_flight::UnfinishedWork;
pub use metrics::{
    MetricsProvider, NoopMetricsProvider, QueueMetrics, RecordingMetricsProvider,
    RecordingQueueMetrics, DURATION_BUCKETS,
};
pub use queue::{WorkQueue, WorkQueueBuilder};
pub use rate_limiter::{
    default_controller_rate_limiter, BucketRateLimiter, ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter, RateLimiter,
};
pub use reference::ReferenceQueue;
pub use state::DebugSnapshot;
pub use token_bucket::TokenBucket;

/// The README's example, run as a doctest so that the first page a reader sees keeps compiling
/// and keeps its promises.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
