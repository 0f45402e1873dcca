//! [`TtlView`]: a TTL controller's cache of projections ([`TtlObject`]), read for
//! `/debug/explain`.
//!
//! Contract: the decision is the one `kube-gc explain` makes (`decide::ttl_decision`) on the
//! very projection the controller judges; the store is read with one shard read lock.

use std::sync::Arc;

use chrono::{DateTime, Utc};

use crate::controllers::ttl::{TtlKind, TtlObject};
use crate::explain::decide::{decision, not_its_resource, ttl_decision};
use crate::explain::VerdictKind;
use crate::runtime::cache::{Cacheable, ObjectKey, Store};
use crate::runtime::informer::InformerSynced;

use super::{CacheView, Found, LiveTarget, View};

/// The cache of the TTL controller of `K`.
pub struct TtlView<K: TtlKind> {
    store: Arc<Store<TtlObject<K>>>,
    synced: InformerSynced,
}

impl<K: TtlKind> TtlView<K> {
    /// A view of `store`, which has its first list once `synced`.
    pub fn new(store: Arc<Store<TtlObject<K>>>, synced: InformerSynced) -> TtlView<K> {
        TtlView { store, synced }
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
        format!("watches {resource} ({} cached{synced})", self.store.len())
    }

    fn view(&self, target: &LiveTarget, now: DateTime<Utc>) -> View {
        if let Some(not_its) = not_its_resource::<K>(&target.resource) {
            return View {
                decision: not_its,
                found: None,
            };
        }
        let key = ObjectKey::new(target.namespace.as_deref().unwrap_or(""), &target.name);
        let Some(object) = self.store.get(&key) else {
            let why = format!("not in its cache: it {}", self.holds());
            return View {
                decision: decision(K::CONTROLLER, false, VerdictKind::Keep, why),
                found: None,
            };
        };
        let mut decision = ttl_decision::<K>(object.state(), now);
        decision.details.push(format!(
            "from its cache (resourceVersion {})",
            object.resource_version()
        ));
        View {
            decision,
            found: Some(Found {
                uid: object.uid().to_owned(),
                being_deleted: object.state().being_deleted,
                deletion: None,
            }),
        }
    }
}
