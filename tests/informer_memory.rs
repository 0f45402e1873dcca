//! Measures what a handler's backlog costs: a handler that is not keeping up holds, per
//! notification, a buffer slot with `Arc`s to objects the cache shares — counted here by a
//! counting allocator that exists only in this test binary.
//!
//! Run `cargo test --test informer_memory -- --nocapture` to see the numbers. The figures are
//! requested bytes; the system allocator rounds each request up to its size class on top.
//! This binary holds one test so no other test's allocations are counted.

use std::sync::Arc;

use kube_gc::runtime::cache::{Cacheable, ObjectKey, Store};
use kube_gc::runtime::informer::{EventHandler, SharedInformer};
use kube_gc::runtime::reflector::{ReflectorEvent, ReflectorSink};
use tokio::sync::watch;

mod memory_support;

use memory_support::live_bytes;

const OBJECTS: usize = 100_000;

#[derive(Debug)]
struct Obj {
    key: ObjectKey,
    version: Box<str>,
}

impl Cacheable for Obj {
    fn cache_key(&self) -> ObjectKey {
        self.key.clone()
    }
    fn resource_version(&self) -> &str {
        &self.version
    }
    fn uid(&self) -> &str {
        self.key.as_str()
    }
}

/// A handler parked at a gate until the test opens it.
struct Parked(watch::Receiver<bool>);

impl EventHandler<Obj> for Parked {
    async fn on_add(&mut self, _object: Arc<Obj>) {
        let _ = self.0.wait_for(|open| *open).await;
    }
}

#[tokio::test(start_paused = true)]
async fn a_backlog_costs_a_buffer_slot_per_notification_not_a_copy_of_the_object() {
    let informer = SharedInformer::builder("objs", Store::new()).build();
    let objects = (0..OBJECTS).map(|i| Obj {
        key: ObjectKey::new("default", &format!("job-{i:06}")),
        version: i.to_string().into_boxed_str(),
    });
    informer.apply(ReflectorEvent::Replaced {
        objects: objects.collect(),
        resource_version: "1".into(),
    });

    // A handler registered now is sent every cached object as an add; parked, it keeps them
    // all in its buffer.
    let (open, gate) = watch::channel(false);
    let before = live_bytes();
    let registration = informer.add_handler(Parked(gate));
    let backlog = live_bytes() - before;
    assert_eq!(registration.pending(), OBJECTS);
    let per_notification = backlog as f64 / OBJECTS as f64;
    println!(
        "a backlog of {OBJECTS} notifications: {backlog} bytes, \
         {per_notification:.1} per notification"
    );
    // 40 bytes of notification plus the channel's per-block bookkeeping; the listing the
    // registration made is freed by then.
    assert!(
        per_notification < 64.0,
        "{per_notification} bytes per notification"
    );

    // Draining the backlog gives the memory back.
    open.send_replace(true);
    while registration.pending() > 0 {
        tokio::task::yield_now().await;
    }
    let left = live_bytes().saturating_sub(before);
    println!("after draining: {left} bytes above the start");
    assert!(left < backlog / 10, "{left} bytes still held");
}
