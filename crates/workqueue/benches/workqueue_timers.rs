//! Timer benchmark of the workqueue (`harness = false`, prints its numbers):
//!
//! 1. memory per waiting item: heap bytes held by a queue with 1,000,000 pending `add_after`
//!    timers, measured with a counting global allocator (this binary only), for `String` keys of
//!    25 bytes and for `u64` keys;
//! 2. the cost of one `add_after` into a queue already holding 1,000,000 timers, timed over a
//!    fixed number of inserts in a fresh queue each time: 40,000 (no container grows) and
//!    200,000 (the slab and the heap double past 2^20 entries on the way);
//! 3. delivery lateness (ready time → `get` returning the key), p50/p99/max, while a storm of
//!    1,000,000 `add_after` inserts is still running and after it ended, plus the cost per insert
//!    during the storm, and the process's CPU time over the whole storm run. A key delivered *before* its ready time is counted and must
//!    never happen.
//!
//! Run with `cargo bench --bench workqueue_timers`; results are discussed in
//! kube-gc's `docs/performance.md`.

use kube_gc_workqueue::WorkQueue;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

#[path = "support/counting_alloc.rs"]
mod counting_alloc;
#[path = "support/workqueue.rs"]
mod support;

use support::{key, queue_with_pending_timers, time_inserts, PENDING_TIMERS};

const TIMERS: usize = 1_000_000;

fn allocated() -> usize {
    counting_alloc::live_bytes()
}

/// Waits until nothing is being freed any more: a dropped queue's state goes away only when the
/// runtime reaps its aborted timer task, and the next measurement must not see that.
async fn settle_allocations() {
    loop {
        let before = allocated();
        tokio::time::sleep(Duration::from_millis(20)).await;
        if allocated() == before {
            return;
        }
    }
}

/// Bytes per waiting item for keys made by `make_key`, counting the keys themselves.
async fn memory_per_waiting_item<K>(make_key: impl Fn(usize) -> K) -> f64
where
    K: Clone + Eq + std::hash::Hash + Send + Sync + 'static,
{
    settle_allocations().await;
    let before = allocated();
    let queue: WorkQueue<K> = WorkQueue::new("memory");
    for i in 0..TIMERS {
        let delay =
            Duration::from_secs(3600) + Duration::from_micros((i as u64 * 7919) % 3_600_000_000);
        queue.add_after(make_key(i), delay);
    }
    let used = allocated().saturating_sub(before);
    assert_eq!(queue.debug_snapshot(0).waiting, TIMERS);
    drop(queue);
    settle_allocations().await;
    used as f64 / TIMERS as f64
}

/// Microseconds per `add_after` of `inserts` fresh keys into a queue holding 1M timers.
async fn insert_cost(inserts: usize) -> f64 {
    let queue = queue_with_pending_timers();
    time_inserts(&queue, PENDING_TIMERS, inserts).as_secs_f64() * 1e6 / inserts as f64
}

/// Lateness samples in nanoseconds, split by whether the storm was still running at ready time.
#[derive(Default)]
struct Lateness {
    during: Vec<u64>,
    after: Vec<u64>,
    early: usize,
}

/// Time the hypervisor ran something else on this VM's CPUs, summed over them ("steal", Linux
/// `/proc/stat`, 10 ms ticks). A vCPU taken away for milliseconds makes keys late that no queue
/// could have delivered, so every lateness figure is printed with the steal time it saw.
fn steal_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let ticks = stat
        .lines()
        .next()
        .and_then(|cpu| cpu.split_whitespace().nth(8))
        .and_then(|steal| steal.parse::<u64>().ok())
        .unwrap_or(0);
    Duration::from_millis(ticks * 10)
}

/// User + system CPU time of this process so far (Linux `/proc/self/stat`, 10 ms ticks).
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the parenthesised command name; utime and stime are the 12th and 13th.
    let after_name = stat.rsplit(')').next().unwrap_or_default();
    let ticks: u64 = after_name
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|field| field.parse::<u64>().ok())
        .sum();
    Duration::from_millis(ticks * 10)
}

fn percentile(sorted: &[u64], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let index = ((sorted.len() - 1) as f64 * p).round() as usize;
    Duration::from_nanos(sorted[index])
}

fn report(name: &str, samples: &mut [u64]) {
    samples.sort_unstable();
    println!(
        "lateness {name:<13} n={:>7}  p50={:>9.3?}  p99={:>9.3?}  max={:>9.3?}",
        samples.len(),
        percentile(samples, 0.50),
        percentile(samples, 0.99),
        percentile(samples, 1.0),
    );
}

/// How the storm's inserting task treats the tokio scheduler.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Producer {
    /// Spends its cooperative budget on every insert, like any task that awaits I/O between
    /// adds (an informer): it yields once every 128 inserts.
    Cooperative,
    /// Never yields while inserting its million timers.
    NeverYields,
}

/// Inserts `TIMERS` timers as fast as one task can while two workers take them as they become
/// due; returns the lateness samples and the storm's duration.
async fn lateness_under_storm(producer: Producer) -> (Lateness, Duration, usize) {
    let queue: WorkQueue<u32> = WorkQueue::new("lateness");
    let base = Instant::now() + Duration::from_millis(20);
    // Target ready time of each key: spread over ~20 s, shuffled so inserts are not in order, and
    // paced at 0.5 µs per key so the inserter (≈0.3 µs per insert) stays ahead of its targets.
    let targets: Arc<Vec<Instant>> = Arc::new(
        (0..TIMERS as u64)
            .map(|i| {
                base + Duration::from_nanos(
                    (i.wrapping_mul(2_654_435_761) % 20_000_000_000) + i * 500,
                )
            })
            .collect(),
    );
    let storm_end = Arc::new(std::sync::OnceLock::<Instant>::new());
    let workers: Vec<_> = (0..2)
        .map(|_| {
            let (queue, targets, storm_end) = (queue.clone(), targets.clone(), storm_end.clone());
            tokio::spawn(async move {
                // Room for every sample up front: a sample `Vec` doubling in a worker would make
                // the keys behind it late, and that is the benchmark's cost, not the queue's.
                let mut samples = Lateness {
                    during: Vec::with_capacity(TIMERS),
                    after: Vec::with_capacity(TIMERS),
                    early: 0,
                };
                while let Some(key) = queue.get().await {
                    let now = Instant::now();
                    let target = targets[key as usize];
                    samples.early += usize::from(now < target);
                    let late = now.saturating_duration_since(target).as_nanos() as u64;
                    match storm_end.get() {
                        Some(end) if target >= *end => samples.after.push(late),
                        _ => samples.during.push(late),
                    }
                    queue.done(&key);
                }
                samples
            })
        })
        .collect();
    let inserter = {
        let (queue, targets) = (queue.clone(), targets.clone());
        tokio::spawn(async move {
            let start = std::time::Instant::now();
            let mut missed = 0;
            for (key, target) in targets.iter().enumerate() {
                let now = Instant::now();
                if *target <= now {
                    missed += 1; // the inserter fell behind: not the queue's lateness
                    continue;
                }
                queue.add_after(key as u32, *target - now);
                if producer == Producer::Cooperative {
                    tokio::task::coop::consume_budget().await;
                }
            }
            (start.elapsed(), missed)
        })
    };
    let (storm, missed) = inserter.await.expect("inserter panicked");
    let _ = storm_end.set(Instant::now());
    let last = targets.iter().max().copied().unwrap_or(base);
    tokio::time::sleep_until(last + Duration::from_millis(50)).await;
    queue.shut_down_with_drain().await;
    let mut all = Lateness::default();
    for worker in workers {
        let samples = worker.await.expect("worker panicked");
        all.during.extend(samples.during);
        all.after.extend(samples.after);
        all.early += samples.early;
    }
    (all, storm, missed)
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` does not: skip the long run there.
    if !std::env::args().any(|a| a == "--bench") {
        println!("workqueue_timers: run with `cargo bench --bench workqueue_timers`");
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("cannot build the benchmark runtime");
    rt.block_on(async {
        let string_bytes = memory_per_waiting_item(key).await;
        println!("memory per waiting item, String keys (25 B): {string_bytes:.1} B (incl. the key's own bytes)");
        let u64_bytes = memory_per_waiting_item(|i| i as u64).await;
        println!("memory per waiting item, u64 keys:           {u64_bytes:.1} B");

        for inserts in [40_000, 200_000] {
            let mut runs = Vec::new();
            for _ in 0..3 {
                runs.push(insert_cost(inserts).await);
                settle_allocations().await;
            }
            let runs: Vec<String> = runs.iter().map(|us| format!("{us:.3}")).collect();
            println!("add_after into {PENDING_TIMERS} pending, {inserts} inserts: {} µs per insert (3 runs)", runs.join(" / "));
        }

        for producer in [Producer::Cooperative, Producer::NeverYields] {
            let (cpu_before, steal_before) = (cpu_time(), steal_time());
            let wall = std::time::Instant::now();
            let (mut lateness, storm, missed) = lateness_under_storm(producer).await;
            let (cpu, wall) = (cpu_time() - cpu_before, wall.elapsed());
            let steal = steal_time().saturating_sub(steal_before);
            let inserted = TIMERS - missed;
            println!(
                "{producer:?} storm: {inserted} add_after inserts in {storm:.3?} = {:.3} µs per insert (while 2 workers drain; {missed} skipped as already due)",
                storm.as_secs_f64() * 1e6 / inserted as f64
            );
            report("during storm", &mut lateness.during);
            report("after storm", &mut lateness.after);
            println!(
                "delivered before the ready time: {}; process CPU {cpu:.1?} over {wall:.1?} ({:.0} % of one core); steal {steal:.1?}",
                lateness.early,
                cpu.as_secs_f64() * 100.0 / wall.as_secs_f64()
            );
        }
    });
}
