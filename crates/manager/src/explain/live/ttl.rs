//! [`TtlView`]: a TTL controller's cache of judgements (the engine's [`ResourceWatch`]), read
//! for `/debug/explain`.
//!
//! Contract: the decision is the one `kube-gc explain` makes (`decide::judgement_decision`) on
//! the very judgement the controller made; the store is read with one shard read lock.

use std::sync::Arc;

use chrono::{DateTime, Utc};

use crate::explain::decide::{decision, judgement_decision, not_its_resource};
use crate::explain::VerdictKind;
use kube_gc_controllers::retention::engine::ResourceWatch;
use kube_gc_controllers::ttl::TtlKind;
use kube_gc_runtime::cache::ObjectKey;
use kube_gc_runtime::informer::InformerSynced;

use super::{CacheView, LiveTarget, View};

/// The cache of the TTL controller of `K`.
pub struct TtlView<K: TtlKind> {
    watch: Arc<ResourceWatch>,
    synced: InformerSynced,
    _kind: std::marker::PhantomData<fn() -> K>,
}

impl<K: TtlKind> TtlView<K> {
    /// A view of the controller's `watch`, which has its first list once `synced`.
    pub fn new(watch: Arc<ResourceWatch>, synced: InformerSynced) -> TtlView<K> {
        TtlView {
            watch,
            synced,
            _kind: std::marker::PhantomData,
        }
    }
}

impl<K: TtlKind> CacheView for TtlView<K> {
    fn controller(&self) -> &'static str {
        K::CONTROLLER
    }

    fn holds(&self) -> String {
        let synced = if self.synced.has_synced() {
            ""
        } else {
            ", first list not in yet"
        };
        let resource = K::resource().path_name();
        format!(
            "watches {resource} ({} cached{synced})",
            self.watch.store.len()
        )
    }

    fn view(&self, target: &LiveTarget, now: DateTime<Utc>) -> View {
        if let Some(not_its) = not_its_resource::<K>(&target.resource) {
            return View {
                decision: not_its,
                found: None,
            };
        }
        let key = ObjectKey::new(target.namespace.as_deref().unwrap_or(""), &target.name);
        let Some(judgement) = self.watch.store.get(&key) else {
            let why = format!("not in its cache: it {}", self.holds());
            return View {
                decision: decision(K::CONTROLLER, false, VerdictKind::Keep, why),
                found: None,
            };
        };
        let decision = judgement_decision::<K>(&judgement, now);
        View::of_judgement(decision, &judgement, self.synced.has_synced())
    }
}
