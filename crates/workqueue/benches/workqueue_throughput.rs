//! Throughput of the workqueue: add → get → done cycles per second with 1, 4 and 16 workers, the
//! way client-go's figures were taken — one producer adds 1,000,000 keys while N workers `get`
//! and `done` them concurrently; time runs from the first add to the last `done`.
//! (`harness = false`; prints its numbers. Run with `cargo bench --bench workqueue_throughput`.)
//!
//! Trustworthy figures need more than one run: each case runs in `REPEATS` fresh processes (a
//! fresh heap, fresh runtime threads), each process measures `RUNS` times after one warm-up, and
//! the report gives the median over all runs with the lowest and highest.
//!
//! Which producer: a tokio task that wakes a getter puts it in *its own thread's* LIFO slot,
//! which the other runtime thread cannot steal. A producer that never yields therefore keeps the
//! woken worker off the CPU until it has added everything, and the "concurrent" benchmark turns
//! into "add a million, then drain them" on whichever thread gets there — fast or slow depending
//! on where the workers happened to be, which is why earlier figures swung by 2×. The main
//! figure uses a **cooperative** producer (it spends tokio's budget on every add, so it yields
//! every 128 adds, as an informer awaiting its watch stream does); the never-yielding producer is
//! reported beside it, labelled, so the effect stays visible.
//!
//! One more case runs the cooperative producer and one worker on a runtime with a **single
//! thread**. Producer and worker then take turns on one core, every key and the queue's state
//! stay in that core's cache, and nothing is woken across threads: the figure is what the
//! queue's own operations cost, with no cross-core traffic or work-stealing in it.

use kube_gc_workqueue::WorkQueue;
use std::process::Command;
use std::time::{Duration, Instant};

#[path = "support/workqueue.rs"]
mod support;

use support::key;

/// Keys per run (client-go's reference figures used 1M unique keys).
const CYCLE_KEYS: usize = 1_000_000;
/// Distinct keys in the "repeated" case: each is added 1,000 times.
const REPEATED_DISTINCT: usize = 1_000;
/// Fresh processes per case.
const REPEATS: usize = 5;
/// Measured runs per process, after one warm-up run.
const RUNS: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Producer {
    Cooperative,
    NeverYields,
}

/// One benchmark case, as passed to a child process: `<keys> <workers> <producer> <threads>`.
#[derive(Debug, Clone, Copy)]
struct Case {
    repeated: bool,
    workers: usize,
    producer: Producer,
    /// Runtime threads: 2 (the machine's cores), or 1 for the single-thread case.
    threads: usize,
}

impl Case {
    fn args(self) -> [String; 4] {
        [
            if self.repeated { "repeated" } else { "unique" }.to_string(),
            self.workers.to_string(),
            format!("{:?}", self.producer),
            self.threads.to_string(),
        ]
    }

    fn name(self) -> String {
        let keys = if self.repeated { "repeated" } else { "unique" };
        let threads = if self.threads == 1 { "/1_thread" } else { "" };
        format!(
            "{keys}/{}_workers/{:?}{threads}",
            self.workers, self.producer
        )
    }

    fn parse(args: &[String]) -> Option<Case> {
        let producer = match args.get(2)?.as_str() {
            "Cooperative" => Producer::Cooperative,
            "NeverYields" => Producer::NeverYields,
            _ => return None,
        };
        Some(Case {
            repeated: args.first()? == "repeated",
            workers: args.get(1)?.parse().ok()?,
            producer,
            threads: args.get(3)?.parse().ok()?,
        })
    }
}

/// One run: returns cycles (adds, for repeated keys) per second.
async fn add_get_done(keys: Vec<String>, workers: usize, producer: Producer) -> f64 {
    let queue: WorkQueue<String> = WorkQueue::new("bench");
    let adds = keys.len();
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
    let adder = {
        let queue = queue.clone();
        tokio::spawn(async move {
            for key in keys {
                queue.add(key);
                if producer == Producer::Cooperative {
                    tokio::task::coop::consume_budget().await;
                }
            }
        })
    };
    adder.await.expect("producer panicked");
    queue.shut_down_with_drain().await;
    for handle in handles {
        handle.await.expect("worker panicked");
    }
    adds as f64 / start.elapsed().as_secs_f64()
}

/// The child process: warm up once, measure `RUNS` times, print one rate per line.
fn run_child(case: Case) {
    let mut builder = if case.threads == 1 {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut builder = tokio::runtime::Builder::new_multi_thread();
        builder.worker_threads(case.threads); // the machine's two cores, like a controller on it
        builder
    };
    let rt = builder
        .enable_all()
        .build()
        .expect("cannot build the benchmark runtime");
    let keys: Vec<String> = (0..CYCLE_KEYS)
        .map(|i| {
            key(if case.repeated {
                i % REPEATED_DISTINCT
            } else {
                i
            })
        })
        .collect();
    for run in 0..=RUNS {
        let rate = rt.block_on(add_get_done(keys.clone(), case.workers, case.producer));
        if run > 0 {
            println!("{rate}");
        }
    }
}

fn median_and_range(mut rates: Vec<f64>) -> (f64, f64, f64) {
    rates.sort_by(f64::total_cmp);
    let median = rates[rates.len() / 2];
    (median, rates[0], rates[rates.len() - 1])
}

fn run_case(case: Case) -> Vec<f64> {
    let exe = std::env::current_exe().expect("cannot find the benchmark binary");
    let mut rates = Vec::new();
    for _ in 0..REPEATS {
        let output = Command::new(&exe)
            .arg("--child")
            .args(case.args())
            .output()
            .expect("cannot run a benchmark child process");
        assert!(output.status.success(), "child failed: {output:?}");
        let stdout = String::from_utf8_lossy(&output.stdout);
        rates.extend(
            stdout
                .lines()
                .filter_map(|line| line.trim().parse::<f64>().ok()),
        );
    }
    rates
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(at) = args.iter().position(|a| a == "--child") {
        let case = Case::parse(&args[at + 1..]).expect("bad child arguments");
        run_child(case);
        return;
    }
    // `cargo bench` passes `--bench`; `cargo test --benches` does not: skip the long run there.
    if !args.iter().any(|a| a == "--bench") {
        println!("workqueue_throughput: run with `cargo bench --bench workqueue_throughput`");
        return;
    }
    let filter = args.iter().find(|a| !a.starts_with("--"));
    println!(
        "add → get → done, {CYCLE_KEYS} adds per run, {REPEATS} processes × {RUNS} runs; \
         median (min – max) per second"
    );
    let mut cases = Vec::new();
    for producer in [Producer::Cooperative, Producer::NeverYields] {
        for repeated in [false, true] {
            for workers in [1, 4, 16] {
                cases.push(Case {
                    repeated,
                    workers,
                    producer,
                    threads: 2,
                });
            }
        }
    }
    cases.push(Case {
        repeated: false,
        workers: 1,
        producer: Producer::Cooperative,
        threads: 1,
    });
    for case in cases {
        let name = case.name();
        if filter.is_some_and(|f| !name.contains(f.as_str())) {
            continue;
        }
        let started = Instant::now();
        let (median, low, high) = median_and_range(run_case(case));
        println!(
            "{name:<36} {:>7.0} k  ({:.0} – {:.0} k)   [{:.0?}]",
            median / 1e3,
            low / 1e3,
            high / 1e3,
            Duration::from_secs(started.elapsed().as_secs()),
        );
    }
}
