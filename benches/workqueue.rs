//! Criterion benchmarks of the workqueue: throughput of add → get → done cycles, the cost of one
//! `add_after` into a queue already holding a million timers, and the cost of one rate-limited add.
//! Run with `cargo bench --bench workqueue`; results are discussed in `docs/performance.md`.

use criterion::{
    criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput,
};
use kube_gc::runtime::workqueue::WorkQueue;
use std::time::{Duration, Instant};
use tokio::runtime::Runtime;

/// Keys per throughput iteration (client-go's reference figures used 1M unique keys).
const CYCLE_KEYS: usize = 1_000_000;
/// Distinct keys in the "repeated" case: each is added 1,000 times.
const REPEATED_DISTINCT: usize = 1_000;
/// Timers already waiting when the insert cost is measured.
const PENDING_TIMERS: usize = 1_000_000;

fn runtime() -> Runtime {
    // The machine has two cores: two runtime threads, like a controller on it would use.
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("cannot build the benchmark runtime")
}

/// Realistic `namespace/name` keys, 25 bytes each.
fn key(i: usize) -> String {
    format!("namespace-{:02}/job-{:07}", i % 50, i)
}

/// One producer adds `keys` while `workers` workers take and finish them; returns the elapsed
/// time from the first add to the last `done`.
async fn add_get_done(keys: Vec<String>, workers: usize) -> Duration {
    let queue: WorkQueue<String> = WorkQueue::new("bench");
    let handles: Vec<_> = (0..workers)
        .map(|_| {
            let queue = queue.clone();
            tokio::spawn(async move {
                while let Some(key) = queue.get().await {
                    queue.done(&key);
                }
            })
        })
        .collect();
    let start = Instant::now();
    let producer = {
        let queue = queue.clone();
        tokio::spawn(async move {
            for key in keys {
                queue.add(key);
            }
        })
    };
    producer.await.expect("producer panicked");
    queue.shut_down_with_drain().await;
    for handle in handles {
        handle.await.expect("worker panicked");
    }
    start.elapsed()
}

fn throughput(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("add_get_done");
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(10));
    group.throughput(Throughput::Elements(CYCLE_KEYS as u64));
    let unique: Vec<String> = (0..CYCLE_KEYS).map(key).collect();
    let repeated: Vec<String> = (0..CYCLE_KEYS)
        .map(|i| key(i % REPEATED_DISTINCT))
        .collect();
    for (name, keys) in [("unique", &unique), ("repeated", &repeated)] {
        for workers in [1, 4, 16] {
            let id = BenchmarkId::new(name, format!("{workers}_workers"));
            group.bench_function(id, |b| {
                b.iter_custom(|iters| {
                    (0..iters)
                        .map(|_| rt.block_on(add_get_done(keys.clone(), workers)))
                        .sum()
                })
            });
        }
    }
    group.finish();
}

fn add_after_insert(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("add_after");
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(3));
    group.throughput(Throughput::Elements(1));
    group.bench_function("insert_into_1M_pending", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let queue: WorkQueue<String> = WorkQueue::new("bench");
                let hour = Duration::from_secs(3600);
                for i in 0..PENDING_TIMERS {
                    queue.add_after(
                        key(i),
                        hour + Duration::from_micros(i as u64 * 7 % 3_600_000),
                    );
                }
                let fresh: Vec<String> = (0..iters as usize)
                    .map(|i| key(PENDING_TIMERS + i))
                    .collect();
                let start = Instant::now();
                for (i, key) in fresh.into_iter().enumerate() {
                    queue.add_after(key, hour + Duration::from_micros(i as u64 * 13 % 3_600_000));
                }
                start.elapsed()
            })
        })
    });
    group.bench_function("add_rate_limited_unique", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let queue: WorkQueue<String> = WorkQueue::new("bench");
                let fresh: Vec<String> = (0..iters as usize).map(key).collect();
                let start = Instant::now();
                for key in fresh {
                    queue.add_rate_limited(key);
                }
                start.elapsed()
            })
        })
    });
    group.finish();
}

criterion_group!(benches, throughput, add_after_insert);
criterion_main!(benches);
