//! [`Queues`]: the workqueues the process registered for inspection — refreshed before each
//! `/metrics` scrape and shown at `/debug/workqueue`.
//!
//! Contract: a queue is registered once, by its owner, as an [`InspectableQueue`] (implemented for
//! every [`WorkQueue`] whose key prints with `Display`). Inspection locks each queue briefly, one
//! at a time. The JSON of one queue:
//!
//! ```json
//! {"name": "ttl-after-finished", "depth": 3, "ready": 3, "in_flight": 1, "waiting": 2,
//!  "heap_entries": 2, "next_ready_in_seconds": 4.5, "unfinished_work_seconds": 0.2,
//!  "longest_running_processor_seconds": 0.2, "shutting_down": false,
//!  "most_requeued": [{"key": "default/pi", "requeues": 4}]}
//! ```

use std::fmt::Display;
use std::hash::Hash;
use std::sync::Arc;

use parking_lot::RwLock;
use serde_json::{json, Value};

use kube_gc_runtime::workqueue::WorkQueue;

/// How many of the most requeued keys `/debug/workqueue` shows per queue.
pub const MOST_REQUEUED_SHOWN: usize = 10;

/// A queue the server can inspect.
pub trait InspectableQueue: Send + Sync {
    /// Refreshes the `unfinished_work_seconds` / `longest_running_processor_seconds` gauges.
    fn refresh_unfinished_work(&self);
    /// The queue's state as JSON (see the module documentation).
    fn debug_json(&self, most_requeued: usize) -> Value;
}

impl<K> InspectableQueue for WorkQueue<K>
where
    K: Clone + Eq + Hash + Display + Send + Sync + 'static,
{
    fn refresh_unfinished_work(&self) {
        WorkQueue::refresh_unfinished_work(self);
    }

    fn debug_json(&self, most_requeued: usize) -> Value {
        let s = self.debug_snapshot(most_requeued);
        let requeued: Vec<Value> = s
            .most_requeued
            .iter()
            .map(|(key, n)| json!({"key": key.to_string(), "requeues": n}))
            .collect();
        json!({
            "name": s.name,
            "depth": s.depth,
            "ready": s.ready,
            "in_flight": s.in_flight,
            "waiting": s.waiting,
            "heap_entries": s.heap_entries,
            "next_ready_in_seconds": s.next_ready_in.map(|d| d.as_secs_f64()),
            "unfinished_work_seconds": s.unfinished.total.as_secs_f64(),
            "longest_running_processor_seconds": s.unfinished.longest.as_secs_f64(),
            "shutting_down": s.shutting_down,
            "most_requeued": requeued,
        })
    }
}

/// The registered queues; cheap to clone (clones share the list).
#[derive(Clone, Default)]
pub struct Queues {
    queues: Arc<RwLock<Vec<Arc<dyn InspectableQueue>>>>,
}

impl std::fmt::Debug for Queues {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queues")
            .field("count", &self.queues.read().len())
            .finish()
    }
}

impl Queues {
    /// No queues.
    pub fn new() -> Queues {
        Queues::default()
    }

    /// Registers `queue` (a clone of a [`WorkQueue`] shares the queue).
    pub fn register(&self, queue: Arc<dyn InspectableQueue>) {
        self.queues.write().push(queue);
    }

    fn all(&self) -> Vec<Arc<dyn InspectableQueue>> {
        self.queues.read().clone()
    }

    /// Refreshes every queue's unfinished-work gauges (before a scrape).
    pub fn refresh_unfinished_work(&self) {
        for queue in self.all() {
            queue.refresh_unfinished_work();
        }
    }

    /// `{"queues": [...]}`, one object per queue in registration order.
    pub fn debug_json(&self) -> Value {
        let queues: Vec<Value> = self
            .all()
            .iter()
            .map(|q| q.debug_json(MOST_REQUEUED_SHOWN))
            .collect();
        json!({ "queues": queues })
    }
}
