//! Criterion benchmarks of the workqueue: the cost of one `add_after` into a queue already holding
//! a million timers, and the cost of one rate-limited add. (Throughput of add → get → done cycles
//! is in `workqueue_throughput.rs`, which repeats each case in fresh processes.)
//! Run with `cargo bench --bench workqueue`; results are discussed in kube-gc's
//! `docs/performance.md`.

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode, Throughput};
use kube_gc_workqueue::WorkQueue;
use std::time::{Duration, Instant};
use tokio::runtime::Runtime;

#[path = "support/workqueue.rs"]
mod support;

use support::{key, queue_with_pending_timers, remove_waiting, time_inserts, PENDING_TIMERS};

fn runtime() -> Runtime {
    // The machine has two cores: two runtime threads, like a controller on it would use.
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("cannot build the benchmark runtime")
}

fn add_after_insert(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("add_after");
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(3));
    group.throughput(Throughput::Elements(1));
    // One queue of a million timers for every sample, built once: were it built inside
    // `iter_custom`, its second of set-up would count towards criterion's warm-up and
    // measurement time, and criterion would settle on timing two inserts per sample (it did,
    // which made this figure 1–2 µs of cold caches and clock reads). Each sample times `iters`
    // fresh inserts, then takes those keys out again, untimed, so the queue stays at 1M.
    let queue = rt.block_on(async { queue_with_pending_timers() });
    let mut next_key = PENDING_TIMERS;
    group.bench_function("insert_into_1M_pending", |b| {
        b.iter_custom(|iters| {
            let (first, count) = (next_key, iters as usize);
            next_key += count;
            rt.block_on(async {
                let took = time_inserts(&queue, first, count);
                remove_waiting(&queue, first..first + count).await;
                took
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

criterion_group!(benches, add_after_insert);
criterion_main!(benches);
