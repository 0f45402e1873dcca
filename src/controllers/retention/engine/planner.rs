//! The planner task: waits for the policies and namespaces to be cached, then after every
//! change (debounced by [`RetentionOptions::replan_delay`](super::RetentionOptions)) — and
//! periodically while a policy names a resource not served, and at once when a watch is
//! answered 404 (its resource may be gone) — reads discovery, makes a
//! [`Plan`] and applies it: watches started, stopped or restarted, policy states recorded
//! with a Warning Event for each newly invalid or unserved policy.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::api::ObjectReference;
use crate::client::availability::warn_unless_unavailable;
use crate::client::{Discovery, ResourceRef};
use crate::events::{EventRecord, EventType};
use crate::runtime::cache::ObjectKey;
use crate::runtime::informer::{wait_for_cache_sync, InformerSynced};

use super::plan::{plan_served, Plan, PolicyState};
use super::watch::ResourceWatch;
use super::{cluster_policies, namespaced_policies, Shared};
use crate::controllers::retention::policy::{PolicyId, RetentionPolicyObject, Target};

/// Waits for `caches`; false when `stop` fired first.
pub(super) async fn wait_synced(caches: &[InformerSynced], stop: &CancellationToken) -> bool {
    wait_for_cache_sync(caches.iter().cloned(), stop)
        .await
        .is_ok()
        && !stop.is_cancelled()
}

/// Plans again after every change (debounced), and periodically while a policy waits for a
/// resource to be served.
pub(super) async fn planner(
    shared: Arc<Shared>,
    caches: Vec<InformerSynced>,
    stop: CancellationToken,
) {
    if !wait_synced(&caches, &stop).await {
        return;
    }
    let mut discovery: Option<(tokio::time::Instant, Arc<Discovery>)> = None;
    loop {
        let waiting_for_resources = shared
            .states
            .lock()
            .values()
            .any(|s| matches!(s, PolicyState::NotServed { .. }));
        let recheck = if waiting_for_resources {
            shared.options.rediscover_interval
        } else {
            Duration::from_secs(3600)
        };
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = shared.dirty.notified() => {}
            _ = tokio::time::sleep(recheck) => {}
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(shared.options.replan_delay) => {}
        }
        let asked = shared.rediscover.swap(false, Ordering::Relaxed);
        let fresh_enough = !asked
            && discovery
                .as_ref()
                .is_some_and(|(at, _)| at.elapsed() < shared.options.rediscover_interval);
        if !fresh_enough {
            match Discovery::run(&shared.client).await {
                Ok(found) => discovery = Some((tokio::time::Instant::now(), Arc::new(found))),
                Err(e) => {
                    warn_unless_unavailable!(e, err = %e, "retention: discovery failed; planning with what was known")
                }
            }
        }
        let known = discovery.as_ref().map(|(_, d)| Arc::clone(d));
        apply(&shared, make_plan(&shared, known.as_deref())).await;
    }
}

fn make_plan(shared: &Shared, discovery: Option<&Discovery>) -> Plan {
    let namespaced = shared.namespaced.store().list();
    let cluster = shared.cluster.store().list();
    let policies = namespaced
        .iter()
        .map(|o| (&**o, false))
        .chain(cluster.iter().map(|o| (&**o, true)));
    let namespaces: BTreeMap<String, BTreeMap<String, String>> = shared
        .namespaces
        .store()
        .list()
        .iter()
        .filter_map(|ns| Some((ns.metadata.name.clone()?, ns.metadata.labels.clone())))
        .collect();
    let served: Vec<ResourceRef> = discovery
        .map(|d| d.resources().iter().map(|r| r.resource.clone()).collect())
        .unwrap_or_default();
    plan_served(policies, &namespaces, &served)
}

/// Makes the running watches match `plan`, and records the policies' states.
async fn apply(shared: &Shared, plan: Plan) {
    let mut stopping = Vec::new();
    {
        let mut watches = shared.watches.write();
        let gone: Vec<Target> = watches
            .iter()
            .filter(|(t, w)| {
                plan.watches
                    .get(*t)
                    .is_none_or(|p| p.fingerprint != w.fingerprint)
            })
            .map(|(t, _)| t.clone())
            .collect();
        let mut replaced = std::collections::BTreeSet::new();
        for target in gone {
            stopping.extend(watches.remove(&target));
            replaced.insert(target);
        }
        for (target, wanted) in &plan.watches {
            if !watches.contains_key(target) {
                let policies = wanted.rules.policies.len();
                // Said once per resource; a watch restarted for changed rules is routine
                // (each policy applied says "retention policy ready" already).
                if replaced.contains(target) {
                    tracing::debug!(resource = %target, policies, "retention: the policies changed; judging again");
                } else {
                    tracing::info!(resource = %target, policies, "retention: watching");
                }
                let watch = ResourceWatch::start(target.clone(), wanted, &shared.context);
                watches.insert(target.clone(), watch);
            }
        }
    }
    for watch in stopping {
        watch.stop().await;
    }
    report_states(shared, plan.policies);
}

/// Records the policies' states, with a Warning Event for each newly invalid generation.
fn report_states(shared: &Shared, states: BTreeMap<PolicyId, PolicyState>) {
    let mut previous = shared.states.lock();
    let (mut ready, mut invalid, mut not_served) = (0, 0, 0);
    for (id, state) in &states {
        match state {
            PolicyState::Ready { .. } => ready += 1,
            PolicyState::Invalid { .. } => invalid += 1,
            PolicyState::NotServed { .. } => not_served += 1,
        }
        if previous.get(id) == Some(state) {
            continue;
        }
        match state {
            PolicyState::Invalid { errors, .. } => {
                let message = errors
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; ");
                tracing::warn!(retention_policy = %id, errors = %message, "invalid retention policy; it deletes nothing");
                record_policy_event(shared, id, EventType::Warning, "InvalidSpec", &message);
            }
            PolicyState::NotServed { missing, .. } => {
                let missing = missing
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ");
                tracing::warn!(retention_policy = %id, %missing, "retention policy names resources the API server does not serve");
                record_policy_event(
                    shared,
                    id,
                    EventType::Warning,
                    "ResourceNotServed",
                    &missing,
                );
            }
            PolicyState::Ready { .. } => {
                tracing::info!(retention_policy = %id, "retention policy ready")
            }
        }
    }
    shared.metrics.set_policies(ready, invalid, not_served);
    *previous = states;
}

fn record_policy_event(
    shared: &Shared,
    id: &PolicyId,
    kind: EventType,
    reason: &str,
    message: &str,
) {
    let resource = if id.namespace.is_some() {
        namespaced_policies()
    } else {
        cluster_policies()
    };
    let uid = policy_object(shared, id).and_then(|o| o.metadata.uid.clone());
    shared.recorder.record(EventRecord {
        regarding: ObjectReference {
            api_version: Some(resource.api_version()),
            kind: Some(resource.kind),
            namespace: id.namespace.clone(),
            name: Some(id.name.clone()),
            uid,
            ..ObjectReference::default()
        },
        event_type: kind,
        reason: reason.to_owned(),
        message: message.to_owned(),
    });
}

pub(super) fn policy_object(shared: &Shared, id: &PolicyId) -> Option<Arc<RetentionPolicyObject>> {
    let key = ObjectKey::new(id.namespace.as_deref().unwrap_or(""), &id.name);
    match id.namespace {
        Some(_) => shared.namespaced.store().get(&key),
        None => shared.cluster.store().get(&key),
    }
}
