//! [`ContentIndex`]: what every namespace holds, by resource — each object's name, UID,
//! finalizers and whether it is marked for deletion — and [`ContentMonitors`], which keep it fed:
//! one metadata-only subscription per namespaced resource to the process's shared
//! [`Sources`]. The garbage collector's monitors subscribe to the very same sources, so with
//! both controllers running each resource is still listed and watched once.
//!
//! Contract:
//! - A resource is [`Known::Cached`] once its first list is in the index, [`Known::Unknown`]
//!   before, and when nothing monitors it (Events, which no monitor watches: they are many and
//!   change often; a namespace's Events are listed when it is deleted).
//! - Every change to a namespace's content tells the index's `changed` callback the namespace,
//!   after the index holds it: the controller queues namespaces being deleted, so a finalizer
//!   released or an object gone is acted on at once, never found by polling.
//! - Memory: per object its UID, name and finalizers (about 100 bytes), in a map per
//!   namespace and resource; a namespace's lookup walks its own objects only.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::RwLock;
use serde::Deserialize;

use super::decide::{Known, Object};
use kube_gc_api::null_as_default;
use kube_gc_client::ResourceRef;
use kube_gc_runtime::cache::{Cacheable, ObjectKey};
use kube_gc_runtime::reflector::{Form, ReflectorEvent, ReflectorSink};
use kube_gc_runtime::sources::{SourceKey, Sources, Subscriber, Subscription};

/// The subscriber name of the content monitors, in the sources' logs.
const SUBSCRIBER: &str = "namespace";

/// What the index reads of each object: its metadata's identity, finalizers and deletion mark.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct ContentMeta {
    #[serde(default)]
    metadata: Meta,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Meta {
    #[serde(default)]
    name: String,
    #[serde(default)]
    namespace: String,
    #[serde(default)]
    uid: String,
    #[serde(default)]
    resource_version: String,
    #[serde(default, deserialize_with = "null_as_default")]
    finalizers: Vec<String>,
    #[serde(default)]
    deletion_timestamp: Option<String>,
}

impl Cacheable for ContentMeta {
    fn cache_key(&self) -> ObjectKey {
        ObjectKey::new(&self.metadata.namespace, &self.metadata.name)
    }

    fn resource_version(&self) -> &str {
        &self.metadata.resource_version
    }

    fn uid(&self) -> &str {
        &self.metadata.uid
    }
}

/// One object as the index keeps it.
#[derive(Clone, Debug)]
struct Item {
    name: Box<str>,
    finalizers: Box<[Box<str>]>,
    deleting: bool,
}

impl Item {
    fn of(meta: &Meta) -> Item {
        Item {
            name: meta.name.as_str().into(),
            finalizers: meta.finalizers.iter().map(|f| f.as_str().into()).collect(),
            deleting: meta.deletion_timestamp.is_some(),
        }
    }
}

/// One resource's objects, by namespace, then UID.
#[derive(Debug, Default)]
struct Slot {
    synced: bool,
    namespaces: HashMap<Box<str>, HashMap<Box<str>, Item>>,
}

impl Slot {
    fn upsert(&mut self, meta: &Meta) {
        self.namespaces
            .entry(meta.namespace.as_str().into())
            .or_default()
            .insert(meta.uid.as_str().into(), Item::of(meta));
    }

    fn remove(&mut self, meta: &Meta) {
        if let Some(objects) = self.namespaces.get_mut(meta.namespace.as_str()) {
            objects.remove(meta.uid.as_str());
            if objects.is_empty() {
                self.namespaces.remove(meta.namespace.as_str());
            }
        }
    }
}

/// Told the name of a namespace whose content changed.
pub type ChangedFn = Arc<dyn Fn(&str) + Send + Sync>;

/// The content of every namespace, by resource (see the module documentation).
pub struct ContentIndex {
    slots: RwLock<HashMap<ResourceRef, Slot>>,
    changed: ChangedFn,
}

impl std::fmt::Debug for ContentIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContentIndex")
            .field("resources", &self.slots.read().len())
            .finish_non_exhaustive()
    }
}

impl ContentIndex {
    /// An empty index telling `changed` of every namespace whose content changes.
    pub fn new(changed: ChangedFn) -> Arc<ContentIndex> {
        Arc::new(ContentIndex {
            slots: RwLock::new(HashMap::new()),
            changed,
        })
    }

    /// What `namespace` holds of `resource`.
    pub fn known(&self, resource: &ResourceRef, namespace: &str) -> Known {
        let slots = self.slots.read();
        let Some(slot) = slots.get(resource).filter(|slot| slot.synced) else {
            return Known::Unknown;
        };
        let mut objects: Vec<Object> = slot
            .namespaces
            .get(namespace)
            .map(|objects| {
                objects
                    .iter()
                    .map(|(uid, item)| Object {
                        name: item.name.to_string(),
                        uid: uid.to_string(),
                        finalizers: item.finalizers.iter().map(|f| f.to_string()).collect(),
                        deleting: item.deleting,
                    })
                    .collect()
            })
            .unwrap_or_default();
        objects.sort_by(|a, b| a.name.cmp(&b.name));
        Known::Cached(objects)
    }

    /// Whether `resource` is monitored and its first list is in.
    pub fn is_synced(&self, resource: &ResourceRef) -> bool {
        self.slots.read().get(resource).is_some_and(|s| s.synced)
    }

    /// Objects held, all resources and namespaces together.
    pub fn len(&self) -> usize {
        self.slots
            .read()
            .values()
            .flat_map(|slot| slot.namespaces.values())
            .map(HashMap::len)
            .sum()
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn monitor(&self, resource: &ResourceRef) {
        self.slots.write().entry(resource.clone()).or_default();
    }

    fn forget(&self, resource: &ResourceRef) {
        let forgotten = self.slots.write().remove(resource);
        // What it held is unknown now: the namespaces that held some must be judged again.
        for namespace in forgotten.iter().flat_map(|slot| slot.namespaces.keys()) {
            (self.changed)(namespace);
        }
    }

    /// Applies one event of `resource`'s source, then tells `changed` of each namespace touched.
    fn apply(&self, resource: &ResourceRef, event: ReflectorEvent<ContentMeta>) {
        let touched: Vec<Box<str>> = {
            let mut slots = self.slots.write();
            // A slot is dropped when its monitor stops: late events of that source are ignored.
            let Some(slot) = slots.get_mut(resource) else {
                return;
            };
            match event {
                ReflectorEvent::Replaced { objects, .. } => {
                    let mut touched: Vec<Box<str>> = slot.namespaces.keys().cloned().collect();
                    slot.namespaces.clear();
                    for object in &objects {
                        slot.upsert(&object.metadata);
                    }
                    touched.extend(slot.namespaces.keys().cloned());
                    touched.sort();
                    touched.dedup();
                    slot.synced = true;
                    touched
                }
                ReflectorEvent::Added(object) | ReflectorEvent::Modified(object) => {
                    slot.upsert(&object.metadata);
                    vec![object.metadata.namespace.as_str().into()]
                }
                ReflectorEvent::Deleted(object) => {
                    slot.remove(&object.metadata);
                    vec![object.metadata.namespace.as_str().into()]
                }
                ReflectorEvent::Bookmark { .. } => Vec::new(),
            }
        };
        for namespace in &touched {
            (self.changed)(namespace);
        }
    }
}

/// Feeds one resource's events into the index.
struct ContentSink {
    index: Arc<ContentIndex>,
    resource: ResourceRef,
}

impl ReflectorSink<ContentMeta> for ContentSink {
    fn apply(&self, event: ReflectorEvent<ContentMeta>) {
        self.index.apply(&self.resource, event);
    }
}

/// The running subscriptions, one per monitored resource.
pub struct ContentMonitors {
    sources: Sources,
    index: Arc<ContentIndex>,
    running: HashMap<ResourceRef, Subscription>,
}

impl ContentMonitors {
    /// No monitors yet; each one started subscribes to `sources` and feeds `index`.
    pub fn new(sources: Sources, index: Arc<ContentIndex>) -> ContentMonitors {
        ContentMonitors {
            sources,
            index,
            running: HashMap::new(),
        }
    }

    /// Starts a monitor for each wanted resource not monitored yet, and stops those no longer
    /// wanted unless `keep` says discovery could not tell (their group failed).
    pub async fn sync(&mut self, wanted: &[ResourceRef], keep: impl Fn(&ResourceRef) -> bool) {
        let gone: Vec<ResourceRef> = self
            .running
            .keys()
            .filter(|r| !wanted.contains(r) && !keep(r))
            .cloned()
            .collect();
        for resource in gone {
            if let Some(subscription) = self.running.remove(&resource) {
                subscription.leave().await;
                self.index.forget(&resource);
            }
        }
        for resource in wanted {
            if self.running.contains_key(resource) {
                continue;
            }
            self.index.monitor(resource);
            let sink = Arc::new(ContentSink {
                index: Arc::clone(&self.index),
                resource: resource.clone(),
            });
            let subscriber = Subscriber::<ContentMeta>::serde(SUBSCRIBER, Form::Metadata);
            let key = SourceKey::all(resource.clone());
            let subscription = self.sources.subscribe(key, subscriber, sink);
            self.running.insert(resource.clone(), subscription);
        }
    }

    /// The resources monitored now, sorted.
    pub fn resources(&self) -> Vec<ResourceRef> {
        let mut all: Vec<ResourceRef> = self.running.keys().cloned().collect();
        all.sort();
        all
    }

    /// Leaves every subscription.
    pub async fn stop_all(&mut self) {
        for (resource, subscription) in self.running.drain() {
            subscription.leave().await;
            self.index.forget(&resource);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parking_lot::Mutex;

    fn meta(namespace: &str, name: &str, finalizers: &[&str], deleting: bool) -> ContentMeta {
        ContentMeta {
            metadata: Meta {
                name: name.into(),
                namespace: namespace.into(),
                uid: format!("uid-{name}"),
                resource_version: "1".into(),
                finalizers: finalizers.iter().map(|f| f.to_string()).collect(),
                deletion_timestamp: deleting.then(|| "2026-11-29T03:00:00Z".into()),
            },
        }
    }

    fn configmaps() -> ResourceRef {
        ResourceRef::new("", "v1", "configmaps", "ConfigMap", true)
    }

    fn index() -> (Arc<ContentIndex>, Arc<Mutex<Vec<String>>>) {
        let told = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&told);
        let index = ContentIndex::new(Arc::new(move |ns: &str| sink.lock().push(ns.to_owned())));
        (index, told)
    }

    #[test]
    fn a_resource_is_unknown_until_its_first_list_then_cached_by_namespace() {
        let (index, told) = index();
        assert_eq!(index.known(&configmaps(), "a"), Known::Unknown);
        index.monitor(&configmaps());
        assert_eq!(index.known(&configmaps(), "a"), Known::Unknown);
        index.apply(
            &configmaps(),
            ReflectorEvent::Replaced {
                objects: vec![meta("a", "x", &[], false), meta("b", "y", &[], false)],
                resource_version: "5".into(),
            },
        );
        let Known::Cached(objects) = index.known(&configmaps(), "a") else {
            panic!("not cached");
        };
        assert_eq!(objects.len(), 1);
        assert_eq!(objects[0].name, "x");
        assert_eq!(index.known(&configmaps(), "c"), Known::Cached(Vec::new()));
        assert_eq!(*told.lock(), ["a", "b"]);
    }

    #[test]
    fn each_change_is_told_after_the_index_holds_it() {
        let (index, told) = index();
        index.monitor(&configmaps());
        index.apply(
            &configmaps(),
            ReflectorEvent::Replaced {
                objects: Vec::new(),
                resource_version: "1".into(),
            },
        );
        index.apply(
            &configmaps(),
            ReflectorEvent::Added(meta("a", "held", &["example.com/hold"], false)),
        );
        index.apply(
            &configmaps(),
            ReflectorEvent::Modified(meta("a", "held", &["example.com/hold"], true)),
        );
        let Known::Cached(objects) = index.known(&configmaps(), "a") else {
            panic!("not cached");
        };
        assert!(objects[0].deleting);
        assert_eq!(objects[0].finalizers, ["example.com/hold"]);
        index.apply(
            &configmaps(),
            ReflectorEvent::Deleted(meta("a", "held", &[], true)),
        );
        assert_eq!(index.known(&configmaps(), "a"), Known::Cached(Vec::new()));
        assert_eq!(*told.lock(), ["a", "a", "a"]);
        assert!(index.is_empty());
        // A resource no longer monitored is unknown again, and its namespaces are told.
        index.apply(
            &configmaps(),
            ReflectorEvent::Added(meta("b", "z", &[], false)),
        );
        index.forget(&configmaps());
        assert_eq!(index.known(&configmaps(), "b"), Known::Unknown);
        assert_eq!(told.lock().last().map(String::as_str), Some("b"));
    }
}
