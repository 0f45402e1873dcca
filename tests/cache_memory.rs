//! Measures what a cached object costs: 100,000 small projections (the shape the TTL controller
//! caches) stored through a relist and through watch events, counted by a counting allocator
//! that exists only in this test binary.
//!
//! Run `cargo test --test cache_memory -- --nocapture` to see the numbers. The figures are
//! requested bytes; the system allocator rounds each request up to its size class on top.
//! This binary holds one test so no other test's allocations are counted.

use std::sync::Arc;

use kube_gc::runtime::cache::{Cacheable, ObjectKey, Store};

mod memory_support;

use memory_support::live_bytes;

const JOBS: usize = 100_000;

/// What the TTL controller needs of a Job: identity, version, deletion flag, TTL, finish time.
#[derive(Debug)]
struct TtlJob {
    key: ObjectKey,
    uid: Box<str>,
    resource_version: Box<str>,
    ttl_seconds: Option<i32>,
    finished_at_unix: Option<i64>,
    being_deleted: bool,
}

impl Cacheable for TtlJob {
    fn cache_key(&self) -> ObjectKey {
        self.key.clone()
    }
    fn resource_version(&self) -> &str {
        &self.resource_version
    }
    fn uid(&self) -> &str {
        &self.uid
    }
}

/// Job `i` with realistic lengths: a 36-character UID, a 8-digit resourceVersion, a name like
/// the ones CronJobs generate.
fn job(i: usize) -> TtlJob {
    TtlJob {
        key: ObjectKey::new(
            &format!("team-{:02}", i % 20),
            &format!("nightly-report-{i:08}"),
        ),
        uid: format!("{i:08x}-1b2c-4d5e-8f90-a1b2c3d4e5f6").into(),
        resource_version: format!("{}", 10_000_000 + i).into(),
        ttl_seconds: Some(3600),
        finished_at_unix: Some(1_795_000_000),
        being_deleted: false,
    }
}

fn per_job(bytes: usize) -> usize {
    bytes / JOBS
}

#[test]
fn a_cached_projection_costs_a_few_hundred_bytes() {
    // The objects alone, each in its Arc, as any cache must hold them (the Vec is excluded).
    let before = live_bytes();
    let objects: Vec<Arc<TtlJob>> = (0..JOBS).map(|i| Arc::new(job(i))).collect();
    let objects_only = live_bytes() - before - objects.capacity() * size_of::<Arc<TtlJob>>();
    drop(objects);

    // Stored by the initial list.
    let before = live_bytes();
    let store: Store<TtlJob> = Store::new();
    drop(store.replace((0..JOBS).map(job), "1"));
    let after_list = live_bytes() - before;
    assert_eq!(store.len(), JOBS);
    let sample = store.get(&job(7).key).expect("job 7 is cached");
    assert_eq!(
        (
            sample.ttl_seconds,
            sample.finished_at_unix,
            sample.being_deleted
        ),
        (Some(3600), Some(1_795_000_000), false)
    );
    drop(sample);
    drop(store);

    // Stored one watch event at a time.
    let before = live_bytes();
    let store: Store<TtlJob> = Store::new();
    for i in 0..JOBS {
        store.apply_added(job(i));
    }
    let after_events = live_bytes() - before;
    drop(store);

    println!(
        "per Job: object in its Arc {} B (size_of {} B); cached after a list {} B \
         (store overhead {} B); cached one event at a time {} B (store overhead {} B)",
        per_job(objects_only),
        size_of::<TtlJob>(),
        per_job(after_list),
        per_job(after_list.saturating_sub(objects_only)),
        per_job(after_events),
        per_job(after_events.saturating_sub(objects_only)),
    );
    assert!(
        per_job(after_list) < 400,
        "{} B per Job",
        per_job(after_list)
    );
    assert!(
        per_job(after_events) < 400,
        "{} B per Job",
        per_job(after_events)
    );
}
