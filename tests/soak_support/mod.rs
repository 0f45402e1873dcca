//! The seeded fault-injection soak: a workload, a fault schedule, and the invariants checked
//! against the simulated API server's request journal and change history.
//!
//! Contract: [`run`] starts a simulated server whose clock follows tokio's (paused) clock, runs
//! the real controllers through [`Manager`], drives a workload drawn from one seed while the
//! server injects faults drawn from the same seed, then turns faults off, lets the controllers
//! settle for [`SoakConfig::settle`] and returns a [`Report`] whose `violations` list every
//! broken invariant. The workload goes through the server's in-process API (not journaled), so
//! every request in the journal is a controller's.
//!
//! Reproducibility: the workload and the fault plan come from the seed; which concurrent request
//! draws which fault depends on how the runtime interleaves the controllers' tasks, so a replay
//! (`KUBE_GC_SOAK_SEED=n`) repeats the same workload and fault plan, not necessarily the very
//! same interleaving.
//!
//! The heap figures come from the counting allocator of `memory_support`, which the soak binary
//! installs; this module is compiled into that binary only.
#![allow(dead_code)] // The soak test uses part of the world helpers.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Once};
use std::time::Duration;

use chrono::{DateTime, Utc};
use kube_gc::manager::{Manager, ManagerOptions};
use kube_gc::metrics::Metrics;
use kube_gc::server::Endpoints;
use kube_gc::sim::faults::{FaultPlan, Verb};
use kube_gc::sim::history::{Change, ChangeKind, ObjectTimelines};
use kube_gc::sim::{DeleteOptions, Gvr, Propagation, SimConfig, SimServer};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::ttl_support::{create_job, create_vcjob, jobs, vcjobs, wire_time, World};

/// Panics seen anywhere in this test process (worker panics are caught by the runtime but still
/// pass through the panic hook, so this counts them too).
static PANICS: AtomicU64 = AtomicU64::new(0);

fn count_panics() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.fetch_add(1, Ordering::SeqCst);
            previous(info);
        }));
    });
}

/// How long and how hard to soak.
#[derive(Debug, Clone)]
pub struct SoakConfig {
    /// Seed of the workload and the faults.
    pub seed: u64,
    /// Simulated time the workload (and the faults) run.
    pub duration: Duration,
    /// Simulated time between two workload steps.
    pub step: Duration,
    /// Workload actions per step.
    pub actions_per_step: usize,
    /// How many Job, Volcano Job and ReplicaSet names the workload cycles through (a small pool
    /// makes re-creation under the same name frequent).
    pub names: usize,
    /// Bound after faults stop within which everything due must be gone.
    pub settle: Duration,
}

impl SoakConfig {
    /// The CI-sized run: two simulated minutes of workload.
    pub fn ci(seed: u64) -> Self {
        SoakConfig {
            seed,
            duration: Duration::from_secs(120),
            step: Duration::from_secs(1),
            actions_per_step: 3,
            names: 40,
            settle: Duration::from_secs(300),
        }
    }
}

/// What a run did, and what it broke.
#[derive(Debug, Default)]
pub struct Report {
    /// Seed of the run.
    pub seed: u64,
    /// Objects the workload created.
    pub objects_created: u64,
    /// Workload actions by kind.
    pub actions: BTreeMap<&'static str, u64>,
    /// Requests the controllers sent.
    pub requests: usize,
    /// Faults injected: errors, 429s, watch-cut budget aside.
    pub faults_errors: u64,
    /// 429s injected.
    pub faults_throttled: u64,
    /// Forced API server restarts, each with an etcd compaction: every watch gets a 410 and
    /// every reflector relists.
    pub compactions: u64,
    /// The most relists any one reflector made (invariant 5 bounds it by the restarts).
    pub max_relists: u64,
    /// Objects the controllers deleted (successful DELETEs).
    pub controller_deletions: usize,
    /// Objects that left storage, by anyone.
    pub removals: usize,
    /// Panics counted.
    pub panics: u64,
    /// Tasks alive on the runtime, connections closed, before the first manager started.
    pub tasks_before: usize,
    /// The same once the crashed manager was gone.
    pub tasks_after_crash: usize,
    /// The same after the last manager stopped (one more crashed in between): equal when no
    /// task leaked.
    pub tasks_after: usize,
    /// Heap the crashed manager held (freed once it and its tasks were gone), in bytes.
    pub manager_heap_at_crash: usize,
    /// Heap the last manager held when it stopped, in bytes.
    pub manager_heap_at_end: usize,
    /// Objects stored at the crash: what the manager's caches and graph had to hold then.
    pub objects_at_crash: usize,
    /// Objects stored at the end. Pods orphaned by the workload stay for good, so this grows with
    /// the length of the run, and the manager's heap with it.
    pub objects_at_end: usize,
    /// Every invariant broken, in words.
    pub violations: Vec<String>,
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "seed {}: objects created {}, actions {:?}, requests {}, faults injected {} errors + {} 429s, \
             restarts with compaction {}, most relists of one informer {}, controller deletions {}, objects removed {}, panics {}, \
             tasks alive before/after crash/at end {}/{}/{}, manager heap at crash/end {}/{} KiB \
             for {}/{} objects stored, violations {}",
            self.seed,
            self.objects_created,
            self.actions,
            self.requests,
            self.faults_errors,
            self.faults_throttled,
            self.compactions,
            self.max_relists,
            self.controller_deletions,
            self.removals,
            self.panics,
            self.tasks_before,
            self.tasks_after_crash,
            self.tasks_after,
            self.manager_heap_at_crash >> 10,
            self.manager_heap_at_end >> 10,
            self.objects_at_crash,
            self.objects_at_end,
            self.violations.len()
        )
    }
}

pub fn replicasets() -> Gvr {
    Gvr::new("apps", "v1", "replicasets")
}

pub fn pods() -> Gvr {
    Gvr::new("", "v1", "pods")
}

/// The faults of the soak: ~5% 500/503 on every verb, ~1% 429 with Retry-After, latency, and
/// watches cut every 100 events.
pub fn fault_plan(seed: u64) -> FaultPlan {
    FaultPlan::new(seed)
        .fail_all(0.05, &[500, 503])
        .throttle(0.01, 1)
        .latency(Duration::from_millis(1), Duration::from_millis(30))
        .cut_watches_after_events(100)
}

/// Every change the server committed, kept across forced compactions (which empty the server's
/// own history): [`ChangeLog::catch_up`] must run before each compaction.
#[derive(Default)]
struct ChangeLog {
    changes: Vec<Arc<Change>>,
}

impl ChangeLog {
    fn catch_up(&mut self, sim: &SimServer) {
        let last = self.changes.last().map(|c| c.rv).unwrap_or(0);
        self.changes
            .extend(sim.history().into_iter().filter(|c| c.rv > last));
    }
}

/// The most heap the manager may hold, at the crash or at the end, with `objects` stored: a fixed
/// part, plus a share per object. Measured: about 1.5 MiB plus 500–600 B per stored object (an
/// object sits in a TTL informer's cache and in the collector's graph), over runs of 10 minutes
/// to 12 hours. A leak that grows with the run's churn — 80 B for each of the ~85,000 objects a
/// 12-hour run removes — crosses this.
///
/// The fixed part is what the manager holds in flight at the instant it is measured (buffers,
/// tasks, timers), and it varies by seed: over the same twelve 15-minute seeds (2000–2011,
/// ~250–340 objects stored) it was 2.2–4.3 MiB with the TTL controllers' own runtime and
/// 2.6–4.7 MiB once they ran on the retention engine (judgements of 176 B inline, where the
/// typed projection was 88, and engine work keys in the queue); two 3-hour seeds on the engine
/// (~21,000 objects created, ~19,000 removed) ended at 4.2 and 3.6 MiB for ~2,500 objects, with
/// no growth from the churn. Hence 5 MiB.
fn manager_heap_limit(objects: usize) -> usize {
    (5 << 20) + objects * 1024
}

/// Objects of the workload's four kinds the server stores now.
fn stored_objects(sim: &SimServer) -> usize {
    [jobs(), vcjobs(), replicasets(), pods()]
        .iter()
        .map(|gvr| sim.list(gvr, Some("default")).map_or(0, |all| all.len()))
        .sum()
}

/// The running controller manager.
pub struct Running {
    pub shutdown: CancellationToken,
    pub task: JoinHandle<Result<(), kube_gc::manager::ControllerFailed>>,
    /// Its metrics, as `/metrics` would serve them.
    pub metrics: Metrics,
    /// API server restarts since it started.
    pub restarts: u64,
}

impl Running {
    /// Crashes the manager: its task dies without draining, and its metrics go with it (held
    /// on, they would keep the crashed manager's queues, and their timer tasks, alive). Whether
    /// the task was aborted (rather than already finished).
    pub async fn crash(&mut self) -> bool {
        self.metrics = Metrics::new();
        self.task.abort();
        self.shutdown.cancel();
        (&mut self.task).await.is_err()
    }
}

/// Invariant 5 (docs/reliability.md): no informer went blind. Every relist follows a 410, and the soak's only 410s
/// come from API server restarts (injected errors are 5xx and 429s, which re-watch): after a
/// restart each reflector relists once — unpaged, from the watch cache — and watches on. So
/// no reflector of a manager relisted more often than the server restarted in its lifetime;
/// one that did looped on 410s, seeing nothing created after a restart.
fn check_no_informer_went_blind(running: &Running, when: &str, report: &mut Report) {
    let text = running.metrics.encode().unwrap_or_default();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("kube_gc_reflector_relists_total{") else {
            continue;
        };
        let Some((labels, value)) = rest.rsplit_once("} ") else {
            continue;
        };
        let relists = value.trim().parse::<f64>().unwrap_or(0.0) as u64;
        report.max_relists = report.max_relists.max(relists);
        if relists > running.restarts {
            report.violations.push(format!(
                "informer {{{labels}}} relisted {relists} times over {} API server restarts {when}: \
                 it lost sight of the server",
                running.restarts
            ));
        }
    }
}

/// Tasks alive on this runtime once every connection to the server is closed and the count has
/// stopped changing: the server's own tasks, and whatever else is still running. Closing the
/// connections first keeps pooled keep-alive connections (a task each, on both ends) out of the
/// count, so a difference between two calls means tasks that outlived their owner.
pub async fn quiet_task_count(sim: &SimServer) -> usize {
    let runtime = tokio::runtime::Handle::current();
    sim.drop_connections();
    let mut last = usize::MAX;
    let mut unchanged = 0;
    for _ in 0..60 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = runtime.metrics().num_alive_tasks();
        unchanged = if now == last { unchanged + 1 } else { 0 };
        last = now;
        if unchanged == 3 {
            break;
        }
    }
    last
}

/// Starts a manager, retrying while discovery (which may be failing) does not answer.
pub async fn start_manager(world: &World) -> Running {
    loop {
        let endpoints = Endpoints::new(Metrics::new(), false);
        let manager = Manager::new(world.harness.client.clone(), ManagerOptions::default())
            .clock(Arc::clone(&world.clock))
            .publish_to(&endpoints);
        match manager.start().await {
            Ok(set) => {
                let shutdown = CancellationToken::new();
                let task = tokio::spawn(set.run(shutdown.clone()));
                return Running {
                    shutdown,
                    task,
                    metrics: endpoints.metrics,
                    restarts: 0,
                };
            }
            Err(_) => tokio::time::sleep(Duration::from_secs(1)).await,
        }
    }
}

/// Whether a Job (batch/v1 or Volcano) is finished, and when it expires.
fn expiry(gvr: &Gvr, object: &Value) -> Option<DateTime<Utc>> {
    let ttl = object["spec"]["ttlSecondsAfterFinished"].as_i64()?;
    let finished = if gvr == &jobs() {
        object["status"]["conditions"]
            .as_array()?
            .iter()
            .find(|c| (c["type"] == "Complete" || c["type"] == "Failed") && c["status"] == "True")?
            ["lastTransitionTime"]
            .as_str()?
            .to_string()
    } else {
        let state = &object["status"]["state"];
        let phase = state["phase"].as_str()?;
        if !["Completed", "Failed", "Terminated"].contains(&phase) {
            return None;
        }
        state["lastTransitionTime"].as_str()?.to_string()
    };
    let finished = DateTime::parse_from_rfc3339(&finished)
        .ok()?
        .with_timezone(&Utc);
    Some(finished + chrono::Duration::seconds(ttl))
}

fn being_deleted(object: &Value) -> bool {
    object["metadata"]["deletionTimestamp"].is_string()
}

fn uid(object: &Value) -> String {
    object["metadata"]["uid"].as_str().unwrap_or("").to_string()
}

/// The seeded workload.
struct Workload {
    rng: StdRng,
    names: usize,
    report: Report,
}

impl Workload {
    fn count(&mut self, action: &'static str) {
        *self.report.actions.entry(action).or_default() += 1;
    }

    fn step(&mut self, world: &World) {
        match self.rng.random_range(0..10) {
            0..=3 => self.job_action(world, jobs()),
            4..=6 => self.job_action(world, vcjobs()),
            _ => self.tree_action(world),
        }
    }

    fn ttl(&mut self) -> Option<i32> {
        [None, Some(0), Some(5), Some(30), Some(90)][self.rng.random_range(0..5)]
    }

    fn create(&mut self, world: &World, gvr: &Gvr, name: &str, finished: bool) {
        let ttl = self.ttl();
        let now = world.now();
        let sim = world.sim();
        // A same-named object may still be there (e.g. being deleted): then nothing is created.
        let ok = if gvr == &jobs() {
            sim.get(gvr, Some("default"), name).is_err() && {
                create_job(sim, name, ttl, finished.then_some(now));
                true
            }
        } else {
            let phase = if finished { "Completed" } else { "Running" };
            sim.get(gvr, Some("default"), name).is_err() && {
                create_vcjob(sim, name, ttl, phase, now);
                true
            }
        };
        if ok {
            self.report.objects_created += 1;
        }
    }

    fn job_action(&mut self, world: &World, gvr: Gvr) {
        let prefix = if gvr == jobs() { "job" } else { "vc" };
        let name = format!("{prefix}-{}", self.rng.random_range(0..self.names));
        let sim = world.sim();
        let Ok(current) = sim.get(&gvr, Some("default"), &name) else {
            let finished = self.rng.random_bool(0.5);
            self.count("create");
            self.create(world, &gvr, &name, finished);
            return;
        };
        if being_deleted(&current) {
            return;
        }
        let finished = expiry(&gvr, &current).is_some()
            || current["status"]["conditions"].is_array()
            || current["status"]["state"]["phase"] == "Completed";
        if !finished {
            self.count("finish");
            self.finish(world, &gvr, current);
            return;
        }
        match self.rng.random_range(0..4) {
            0 => {
                // Extend the TTL before it runs out: the controller must notice the new value.
                self.count("extend-ttl");
                let mut extended = current;
                let ttl = extended["spec"]["ttlSecondsAfterFinished"]
                    .as_i64()
                    .unwrap_or(0);
                extended["spec"]["ttlSecondsAfterFinished"] = json!(ttl + 600);
                let _ = sim.update(&gvr, extended);
            }
            1 => {
                self.count("delete-by-hand");
                let _ = sim.delete(&gvr, Some("default"), &name, &DeleteOptions::default());
            }
            2 => {
                // Re-create under the same name, finished with TTL 0: a controller acting on
                // its judgement of the old object must not delete the new one by name.
                self.count("re-create");
                if sim
                    .delete(&gvr, Some("default"), &name, &DeleteOptions::default())
                    .is_ok()
                {
                    self.create(world, &gvr, &name, true);
                }
            }
            _ => {}
        }
    }

    fn finish(&mut self, world: &World, gvr: &Gvr, current: Value) {
        let now = wire_time(world.now());
        let sim = world.sim();
        if gvr == &jobs() {
            let kind = if self.rng.random_bool(0.8) {
                "Complete"
            } else {
                "Failed"
            };
            let condition = json!({"type": kind, "status": "True", "lastTransitionTime": now});
            let mut job = current;
            job["status"] = json!({"conditions": [condition]});
            let _ = sim.update_status(gvr, job);
        } else {
            let mut job = current;
            job["status"] = json!({"state": {"phase": "Completed", "lastTransitionTime": now}});
            let _ = sim.update_status(gvr, job);
        }
    }

    fn tree_action(&mut self, world: &World) {
        let name = format!("rs-{}", self.rng.random_range(0..self.names));
        let sim = world.sim();
        match sim.get(&replicasets(), Some("default"), &name) {
            Err(_) => {
                self.count("create-tree");
                let rs = json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                    "metadata": {"name": name, "namespace": "default"}, "spec": {}});
                let Ok(owner) = sim.create(&replicasets(), rs) else {
                    return;
                };
                self.report.objects_created += 1;
                for i in 0..self.rng.random_range(1..=3) {
                    let block = self.rng.random_bool(0.5);
                    let pod = json!({"apiVersion": "v1", "kind": "Pod",
                        "metadata": {"name": format!("{name}-{}-{i}", uid(&owner)), "namespace": "default",
                            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                "name": name, "uid": uid(&owner), "controller": true,
                                "blockOwnerDeletion": block}]},
                        "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]}});
                    if sim.create(&pods(), pod).is_ok() {
                        self.report.objects_created += 1;
                    }
                }
            }
            Ok(owner) if !being_deleted(&owner) => {
                let (action, propagation) = match self.rng.random_range(0..3) {
                    0 => ("delete-tree-background", Propagation::Background),
                    1 => ("delete-tree-foreground", Propagation::Foreground),
                    _ => ("delete-tree-orphan", Propagation::Orphan),
                };
                self.count(action);
                let options = DeleteOptions {
                    propagation: Some(propagation),
                    ..DeleteOptions::default()
                };
                let _ = sim.delete(&replicasets(), Some("default"), &name, &options);
            }
            Ok(_) => {}
        }
    }
}

/// Runs one soak and checks its invariants.
pub async fn run(world: &World, config: &SoakConfig) -> Report {
    count_panics();
    let panics_before = PANICS.load(Ordering::SeqCst);
    let sim = world.sim();
    let plan = fault_plan(config.seed);
    sim.faults().set_plan(plan.clone());
    let mut log = ChangeLog::default();
    let mut workload = Workload {
        rng: StdRng::seed_from_u64(config.seed),
        names: config.names,
        report: Report {
            seed: config.seed,
            ..Report::default()
        },
    };
    workload.report.tasks_before = quiet_task_count(sim).await;
    let mut running = start_manager(world).await;

    let steps = (config.duration.as_secs_f64() / config.step.as_secs_f64()) as u64;
    let restart_at = steps / 3;
    let crash_at = 2 * steps / 3;
    for step in 0..steps {
        for _ in 0..config.actions_per_step {
            workload.step(world);
        }
        if workload.rng.random_bool(0.03) {
            // An API server restart and an etcd compaction: the watch caches start at the
            // current revision, so every watch behind it gets a 410 and relists, and an object
            // created afterwards must still be seen (invariant 2 fails otherwise).
            log.catch_up(sim);
            sim.restart();
            sim.compact();
            workload.report.compactions += 1;
            running.restarts += 1;
        }
        if step == restart_at {
            // An API server restart: every watch and connection ended, discovery failing for a
            // while.
            sim.restart();
            running.restarts += 1;
            sim.faults()
                .set_plan(plan.clone().fail(Verb::Discovery, 1.0, &[503]));
            tokio::time::sleep(Duration::from_secs(5)).await;
            sim.faults().set_plan(plan.clone());
        }
        if step == crash_at {
            // A controller crash: the manager's task dies without draining, a new one starts.
            let heap_running = crate::memory_support::live_bytes();
            workload.report.objects_at_crash = stored_objects(sim);
            check_no_informer_went_blind(&running, "before the crash", &mut workload.report);
            running.crash().await;
            workload.report.tasks_after_crash = quiet_task_count(sim).await;
            workload.report.manager_heap_at_crash =
                heap_running.saturating_sub(crate::memory_support::live_bytes());
            running = start_manager(world).await;
        }
        tokio::time::sleep(config.step).await;
        log.catch_up(sim);
    }

    // Faults stop; everything due must be gone within `settle`.
    sim.faults().set_plan(FaultPlan::default());
    let faults_off_at = world.now();
    let settle_steps = config.settle.as_secs();
    for _ in 0..settle_steps {
        tokio::time::sleep(Duration::from_secs(1)).await;
        log.catch_up(sim);
    }
    let heap_running = crate::memory_support::live_bytes();
    workload.report.objects_at_end = stored_objects(sim);
    check_no_informer_went_blind(&running, "after the crash", &mut workload.report);
    running.shutdown.cancel();
    match tokio::time::timeout(Duration::from_secs(60), &mut running.task).await {
        Ok(Ok(Ok(()))) => {}
        Ok(Ok(Err(e))) => workload
            .report
            .violations
            .push(format!("manager failed: {e}")),
        Ok(Err(e)) => workload
            .report
            .violations
            .push(format!("manager task: {e}")),
        Err(_) => workload
            .report
            .violations
            .push("manager did not stop within 60 s".into()),
    }
    log.catch_up(sim);
    workload.report.tasks_after = quiet_task_count(sim).await;
    workload.report.manager_heap_at_end =
        heap_running.saturating_sub(crate::memory_support::live_bytes());

    let mut report = workload.report;
    let injected = sim.faults().injected();
    report.faults_errors = injected.errors;
    report.faults_throttled = injected.throttled;
    report.requests = sim.journal().len();
    report.removals = sim.deletions().len();
    report.panics = PANICS.load(Ordering::SeqCst) - panics_before;
    if report.panics > 0 {
        report.violations.push(format!("{} panics", report.panics));
    }
    for (when, held, objects) in [
        (
            "at the crash",
            report.manager_heap_at_crash,
            report.objects_at_crash,
        ),
        (
            "at the end",
            report.manager_heap_at_end,
            report.objects_at_end,
        ),
    ] {
        let limit = manager_heap_limit(objects);
        if held > limit {
            report.violations.push(format!(
                "the manager held {} KiB {when} for {objects} objects, more than the {} KiB bound",
                held >> 10,
                limit >> 10
            ));
        }
    }
    for (when, tasks) in [
        ("after the crash", report.tasks_after_crash),
        ("after the last manager stopped", report.tasks_after),
    ] {
        if tasks > report.tasks_before {
            report.violations.push(format!(
                "task leak: {tasks} tasks alive {when}, {} before the first manager started",
                report.tasks_before
            ));
        }
    }
    if sim.journal().dropped() > 0 {
        report
            .violations
            .push("the journal dropped entries: raise its capacity".into());
    }
    check_deletes_carry_uid(sim, &mut report);
    check_deletions_justified(sim, &log, &mut report);
    check_everything_due_is_gone(sim, faults_off_at, config.settle, &mut report);
    check_due_deletions_sent_promptly(&log, faults_off_at, config.settle, &mut report);
    report
}

/// How soon after a fault ends (or after it falls due, later) every deletion must be sent.
pub const PROMPTLY: Duration = Duration::from_secs(1);

/// Invariant 6: after the faults end, every deletion due by then is sent within [`PROMPTLY`],
/// and every one due later in the `settle` time within [`PROMPTLY`] of its time — however many
/// faults its key met before: expired Jobs and Volcano Jobs, and Pods whose every owner is
/// gone. The moment a deletion was sent is the first change that removed the object or gave
/// it a `deletionTimestamp`.
fn check_due_deletions_sent_promptly(
    log: &ChangeLog,
    faults_off_at: DateTime<Utc>,
    settle: Duration,
    report: &mut Report,
) {
    // Each object's last state when the faults ended, by UID (the workload stops then).
    let mut at_end: BTreeMap<String, Value> = BTreeMap::new();
    for change in log.changes.iter().filter(|c| c.at <= faults_off_at) {
        let object = change.object.value();
        let id = uid(&object);
        if change.kind == ChangeKind::Deleted {
            at_end.remove(&id);
        } else {
            at_end.insert(id, object.into_owned());
        }
    }
    let limit = chrono::Duration::from_std(PROMPTLY).unwrap_or_default();
    let watched_until = faults_off_at + chrono::Duration::from_std(settle).unwrap_or_default();
    for (id, object) in &at_end {
        if being_deleted(object) {
            continue; // Already sent.
        }
        let gvr = if object["apiVersion"] == "batch.volcano.sh/v1alpha1" {
            vcjobs()
        } else {
            jobs()
        };
        let due = match object["kind"].as_str() {
            Some("Job") => expiry(&gvr, object).map(|at| at.max(faults_off_at)),
            Some("Pod") => {
                let references = object["metadata"]["ownerReferences"].as_array();
                let orphaned = references.is_some_and(|r| {
                    !r.is_empty()
                        && r.iter()
                            .all(|r| !at_end.contains_key(r["uid"].as_str().unwrap_or("")))
                });
                orphaned.then_some(faults_off_at)
            }
            _ => None,
        };
        let Some(due) = due.filter(|due| *due + limit <= watched_until) else {
            continue;
        };
        let sent = log.changes.iter().find(|c| {
            c.at > faults_off_at && {
                let changed = c.object.value();
                uid(&changed) == *id && (c.kind == ChangeKind::Deleted || being_deleted(&changed))
            }
        });
        let name = &object["metadata"]["name"];
        let kind = &object["kind"];
        let owners_gone: Vec<String> = object["metadata"]["ownerReferences"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| {
                let owner = r["uid"].as_str()?;
                let removal = log
                    .changes
                    .iter()
                    .find(|c| c.kind == ChangeKind::Deleted && uid(&c.object.value()) == owner)?;
                Some(format!("{} at {}", r["name"], removal.at))
            })
            .collect();
        let why = if owners_gone.is_empty() {
            String::new()
        } else {
            format!(" (owners removed: {})", owners_gone.join(", "))
        };
        match sent {
            Some(change) if change.at <= due + limit => {}
            Some(change) => report.violations.push(format!(
                "{kind} {name} was due at {due}{why} but its deletion was sent at {}, {:?} later",
                change.at,
                (change.at - due).to_std().unwrap_or_default()
            )),
            None => report.violations.push(format!(
                "{kind} {name} was due at {due}{why} and its deletion was never sent"
            )),
        }
    }
}

/// The invariant checks alone, on a server whose history was never compacted: what [`run`]
/// checks at its end, for tests proving that the checks do catch a wrong deletion.
pub fn check_invariants(sim: &SimServer, faults_off_at: DateTime<Utc>, settle: Duration) -> Report {
    let mut log = ChangeLog::default();
    log.catch_up(sim);
    let mut report = Report::default();
    check_deletes_carry_uid(sim, &mut report);
    check_deletions_justified(sim, &log, &mut report);
    check_everything_due_is_gone(sim, faults_off_at, settle, &mut report);
    report
}

/// Invariant 3: every DELETE carried a UID precondition.
fn check_deletes_carry_uid(sim: &SimServer, report: &mut Report) {
    for entry in sim.journal().deletes() {
        let uid = entry
            .body
            .as_ref()
            .and_then(|b| b["preconditions"]["uid"].as_str())
            .unwrap_or("");
        if uid.is_empty() {
            report
                .violations
                .push(format!("DELETE {} without a UID precondition", entry.path));
        }
    }
}

/// Invariant 1: every object a controller deleted deserved it at that moment, judged on the
/// object with the UID the DELETE named (so a re-created object is never the one judged).
fn check_deletions_justified(sim: &SimServer, log: &ChangeLog, report: &mut Report) {
    let deleted_uids: HashSet<String> = sim
        .journal()
        .deletes()
        .iter()
        .filter(|e| e.status < 300)
        .filter_map(|e| {
            e.body.as_ref()?["preconditions"]["uid"]
                .as_str()
                .map(String::from)
        })
        .collect();
    report.controller_deletions = deleted_uids.len();
    let timelines = ObjectTimelines::new(log.changes.iter().map(|change| &**change));
    let mut judged = HashSet::new();
    for change in &log.changes {
        let object = change.object.value();
        let object_uid = uid(&object);
        if !deleted_uids.contains(&object_uid) || judged.contains(&object_uid) {
            continue;
        }
        let Some(before) = change.previous.as_ref().map(|previous| previous.value()) else {
            continue;
        };
        let before = &*before;
        // The moment deletion was requested: removal, or a deletionTimestamp appearing.
        let requested = change.kind == ChangeKind::Deleted || being_deleted(&object);
        if being_deleted(before) || !requested {
            continue;
        }
        judged.insert(object_uid.clone());
        let name = before["metadata"]["name"].as_str().unwrap_or("");
        let kind = before["kind"].as_str().unwrap_or("");
        let gvr = if before["apiVersion"] == "batch/v1" {
            jobs()
        } else {
            vcjobs()
        };
        match kind {
            "Job" => match expiry(&gvr, before) {
                None => report.violations.push(format!(
                    "{kind} {name} (uid {object_uid}) deleted at rv {} while unfinished or without TTL",
                    change.rv
                )),
                Some(at) if at > change.at => report.violations.push(format!(
                    "{kind} {name} (uid {object_uid}) deleted at {} before it expired at {at}",
                    change.at
                )),
                Some(_) => {}
            },
            "Pod" => {
                let references = before["metadata"]["ownerReferences"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                if references.is_empty() {
                    report.violations.push(format!(
                        "Pod {name} deleted at rv {} with no owner (orphaned)",
                        change.rv
                    ));
                }
                for reference in references {
                    let owner_uid = reference["uid"].as_str().unwrap_or("");
                    let Some(owner) = timelines.state_before(owner_uid, change.rv) else {
                        continue;
                    };
                    let foreground = being_deleted(owner)
                        && owner["metadata"]["finalizers"]
                            .as_array()
                            .is_some_and(|f| f.iter().any(|f| f == "foregroundDeletion"));
                    if !foreground {
                        report.violations.push(format!(
                            "Pod {name} deleted at rv {} while its owner {} was live",
                            change.rv, owner["metadata"]["name"]
                        ));
                    }
                }
            }
            other => report.violations.push(format!(
                "controller deleted unexpected {other} {name} at rv {}",
                change.rv
            )),
        }
    }
    // Every object a controller deleted must have been judged, or the check proved nothing.
    for missed in deleted_uids.difference(&judged) {
        report.violations.push(format!(
            "deleted uid {missed} has no deletion request in the change log to judge"
        ));
    }
}

/// Invariant 2: once faults stop, within `settle` everything due is gone: expired Jobs, Pods
/// whose owners are gone, and every deletion in progress finished.
fn check_everything_due_is_gone(
    sim: &SimServer,
    faults_off_at: DateTime<Utc>,
    settle: Duration,
    report: &mut Report,
) {
    let bound = format!("{} s after faults stopped", settle.as_secs());
    for gvr in [jobs(), vcjobs()] {
        for object in sim.list(&gvr, Some("default")).unwrap_or_default() {
            let name = object["metadata"]["name"].as_str().unwrap_or("");
            if expiry(&gvr, &object).is_some_and(|at| at <= faults_off_at) {
                report
                    .violations
                    .push(format!("{gvr:?} {name} expired but still present {bound}"));
            }
        }
    }
    let owners: HashSet<String> = sim
        .list(&replicasets(), Some("default"))
        .unwrap_or_default()
        .iter()
        .map(uid)
        .collect();
    for pod in sim.list(&pods(), Some("default")).unwrap_or_default() {
        let references = pod["metadata"]["ownerReferences"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let orphaned = !references.is_empty()
            && references
                .iter()
                .all(|r| !owners.contains(r["uid"].as_str().unwrap_or("")));
        if orphaned {
            report.violations.push(format!(
                "Pod {} still present {bound} though its owners are gone",
                pod["metadata"]["name"]
            ));
        }
    }
    for gvr in [jobs(), vcjobs(), replicasets(), pods()] {
        for object in sim.list(&gvr, Some("default")).unwrap_or_default() {
            if being_deleted(&object) {
                report.violations.push(format!(
                    "{gvr:?} {} still being deleted {bound}",
                    object["metadata"]["name"]
                ));
            }
        }
    }
}

/// The server configuration of a soak: journal and history large enough to keep everything.
pub fn sim_config(seed: u64) -> SimConfig {
    SimConfig::default()
        .with_fault_plan(FaultPlan::new(seed))
        .with_journal_capacity(2_000_000)
        .with_history_limit(1_000_000)
}
