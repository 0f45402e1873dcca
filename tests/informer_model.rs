//! A model-based property test of the shared informer: for any sequence of reflector events,
//! with handlers registered at any point in it, every handler that replays its notifications
//! onto its own map ends up with exactly the cache's contents, and never hears of a change that
//! does not follow from what it heard before (no add of a key it holds, no update or tombstone
//! whose old state is not the one it holds).

use std::collections::BTreeMap;
use std::sync::Arc;

use kube_gc::runtime::cache::{Cacheable, Deleted, ObjectKey, Store};
use kube_gc::runtime::informer::{EventHandler, HandlerRegistration, SharedInformer};
use kube_gc::runtime::reflector::{ReflectorEvent, ReflectorSink};
use parking_lot::Mutex;
use proptest::prelude::*;

#[derive(Debug)]
struct Obj {
    key: ObjectKey,
    version: String,
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

const KEYS: [&str; 4] = ["a", "b", "c", "d"];

/// key → resourceVersion.
type Versions = BTreeMap<String, String>;

/// What a run ends with.
struct Outcome {
    /// Each handler's replayed state.
    replayed: Vec<Versions>,
    /// The cache's contents.
    cache: Versions,
    /// Every inconsistent notification any handler got.
    violations: Vec<String>,
}

/// What a listed key looks like in a generated relist.
#[derive(Debug, Clone, Copy)]
enum Listed {
    Absent,
    /// The cached version if cached (unchanged), else a new one.
    Same,
    Changed,
}

#[derive(Debug, Clone)]
enum Op {
    Added(usize),
    Modified(usize),
    Deleted(usize),
    Replaced([Listed; 4]),
    Bookmark,
    Register,
}

fn op() -> impl Strategy<Value = Op> {
    let key = 0..KEYS.len();
    let listed = prop_oneof![
        Just(Listed::Absent),
        Just(Listed::Same),
        Just(Listed::Changed)
    ];
    prop_oneof![
        3 => key.clone().prop_map(Op::Added),
        3 => key.clone().prop_map(Op::Modified),
        2 => key.prop_map(Op::Deleted),
        1 => [listed.clone(), listed.clone(), listed.clone(), listed].prop_map(Op::Replaced),
        1 => Just(Op::Bookmark),
        1 => Just(Op::Register),
    ]
}

/// A handler replaying notifications onto its own key → version map, noting any
/// notification inconsistent with what it has seen.
struct Replayer {
    state: Arc<Mutex<Versions>>,
    violations: Arc<Mutex<Vec<String>>>,
}

impl Replayer {
    fn violation(&self, what: String) {
        self.violations.lock().push(what);
    }
}

impl EventHandler<Obj> for Replayer {
    async fn on_add(&mut self, object: Arc<Obj>) {
        let previous = self
            .state
            .lock()
            .insert(object.key.to_string(), object.version.clone());
        if let Some(previous) = previous {
            self.violation(format!("add of {} held at {previous}", object.key));
        }
    }

    async fn on_update(&mut self, old: Arc<Obj>, new: Arc<Obj>) {
        let previous = self
            .state
            .lock()
            .insert(new.key.to_string(), new.version.clone());
        if previous.as_deref() != Some(old.version.as_str()) {
            self.violation(format!(
                "update of {} from {} but held {previous:?}",
                new.key, old.version
            ));
        }
    }

    async fn on_delete(&mut self, deleted: Deleted<Obj>) {
        let key = deleted.object().key.to_string();
        let previous = self.state.lock().remove(&key);
        if let Deleted::FinalStateUnknown(tombstone) = &deleted {
            if previous.as_deref() != Some(tombstone.last_known.version.as_str()) {
                self.violation(format!(
                    "tombstone of {key} at {} but held {previous:?}",
                    tombstone.last_known.version
                ));
            }
        }
    }
}

/// Runs `ops` against an informer, then lets every handler drain its buffer.
fn run(ops: Vec<Op>) -> Outcome {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    runtime.block_on(async move {
        let informer = SharedInformer::builder("objs", Store::new()).build();
        let violations = Arc::new(Mutex::new(Vec::new()));
        let mut handlers: Vec<(HandlerRegistration, Arc<Mutex<Versions>>)> = Vec::new();
        let mut register = |informer: &SharedInformer<Obj>| {
            let state = Arc::new(Mutex::new(BTreeMap::new()));
            let registration = informer.add_handler(Replayer {
                state: Arc::clone(&state),
                violations: Arc::clone(&violations),
            });
            handlers.push((registration, state));
        };
        register(&informer);

        let version = std::cell::Cell::new(0_u64);
        let next_version = || {
            version.set(version.get() + 1);
            version.get().to_string()
        };
        let obj = |key: usize, version: String| Obj {
            key: ObjectKey::new("ns", KEYS[key]),
            version,
        };
        for op in ops {
            match op {
                Op::Added(key) => informer.apply(ReflectorEvent::Added(obj(key, next_version()))),
                Op::Modified(key) => {
                    informer.apply(ReflectorEvent::Modified(obj(key, next_version())))
                }
                Op::Deleted(key) => {
                    informer.apply(ReflectorEvent::Deleted(obj(key, next_version())))
                }
                Op::Replaced(listed) => {
                    let mut objects = Vec::new();
                    for (key, listed) in listed.into_iter().enumerate() {
                        let cached = informer.store().get(&ObjectKey::new("ns", KEYS[key]));
                        let version = match (listed, cached) {
                            (Listed::Absent, _) => continue,
                            (Listed::Same, Some(cached)) => cached.version.clone(),
                            (Listed::Same, None) | (Listed::Changed, _) => next_version(),
                        };
                        objects.push(obj(key, version));
                    }
                    informer.apply(ReflectorEvent::Replaced {
                        objects,
                        resource_version: next_version(),
                    });
                }
                Op::Bookmark => informer.apply(ReflectorEvent::Bookmark {
                    resource_version: next_version(),
                }),
                Op::Register => register(&informer),
            }
            // Sometimes let the handlers catch up, sometimes not: both must work.
            if version.get().is_multiple_of(3) {
                tokio::task::yield_now().await;
            }
        }

        // Let every handler drain its buffer.
        while handlers
            .iter()
            .any(|(registration, _)| registration.pending() > 0)
        {
            tokio::task::yield_now().await;
        }
        let cache: Versions = informer
            .store()
            .list()
            .iter()
            .map(|o| (o.key.to_string(), o.version.clone()))
            .collect();
        let replayed = handlers
            .iter()
            .map(|(_, state)| state.lock().clone())
            .collect();
        let violations = violations.lock().clone();
        Outcome {
            replayed,
            cache,
            violations,
        }
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn every_handler_replays_to_the_cache(ops in prop::collection::vec(op(), 0..40)) {
        let outcome = run(ops);
        prop_assert_eq!(outcome.violations, Vec::<String>::new());
        for state in outcome.replayed {
            prop_assert_eq!(&state, &outcome.cache);
        }
    }
}
