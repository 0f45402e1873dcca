//! The planner task: waits for the policies and namespaces to be cached, then after every
//! change (debounced by [`RetentionOptions::replan_delay`](super::RetentionOptions)) — and
//! periodically while a policy names a resource not served or forbidden, at once when a watch
//! is answered 404 (its resource may be gone) or a request 403 — reads discovery, makes a
//! [`Plan`], tries the forbidden resources that are due once more (one LIST of one object each),
//! applies the refusals that stand ([`forbid`]) and applies the plan: watches started, stopped
//! or restarted, policy states recorded with a Warning Event for each newly invalid, unserved or
//! forbidden policy.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use kube_gc_api::ObjectReference;
use kube_gc_client::availability::warn_unless_unavailable;
use kube_gc_client::{Api, Discovery, ListParams, ResourceRef};
use kube_gc_runtime::cache::ObjectKey;
use kube_gc_runtime::events::{EventRecord, EventType};
use kube_gc_runtime::informer::{wait_for_cache_sync, InformerSynced};

use super::metrics::StateTally;
use super::plan::{plan_served, Plan, PolicyState};
use super::refusal::forbid;
use super::refused::Refused;
use super::watch::ResourceWatch;
use super::{cluster_policies, namespaced_policies, Shared};
use crate::retention::policy::{PolicyId, RetentionPolicyObject, Target};

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
            .any(|s| matches!(s, PolicyState::NotServed { .. }))
            || shared.refusals.any_read_refused();
        let recheck = if waiting_for_resources {
            shared.options.rediscover_interval
        } else {
            Duration::from_secs(3600)
        };
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = shared.dirty.notified() => {}
            _ = shared.refusals.changed() => {}
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
        let mut plan = make_plan(&shared, known.as_deref());
        shared
            .refusals
            .retain(|target| plan.watches.contains_key(target));
        try_refused_again(&shared, &plan).await;
        forbid(&mut plan, &shared.refusals.snapshot());
        apply(&shared, plan).await;
    }
}

/// Tries each resource whose read was refused a rediscover interval ago or more with one LIST
/// of one object: allowed, it is watched again; forbidden still, it waits another interval.
async fn try_refused_again(shared: &Shared, plan: &Plan) {
    for target in shared.refusals.due(shared.options.rediscover_interval) {
        let Some(wanted) = plan.watches.get(&target) else {
            continue;
        };
        let api: Api<serde_json::Value> =
            Api::dynamic(shared.client.clone(), wanted.resource.clone(), None);
        match api.list_page(&ListParams::default().with_limit(1)).await {
            Ok(_) => {
                tracing::info!(resource = %target, "retention: the API server allows reading the resource again; watching it");
                shared.refusals.read_again(&target);
            }
            Err(e) if e.is_forbidden() => {
                let said = e
                    .api()
                    .map_or_else(|| e.to_string(), |api| api.message.clone());
                shared.refusals.refused_read(&target, said);
            }
            Err(e) => {
                warn_unless_unavailable!(e, resource = %target, err = %e, "retention: could not try a forbidden resource again")
            }
        }
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
    shared.feed.route(plan.notifications);
    report_states(shared, plan.policies);
}

/// Records the policies' states, with a Warning Event for each newly invalid generation.
fn report_states(shared: &Shared, states: BTreeMap<PolicyId, PolicyState>) {
    let mut previous = shared.states.lock();
    let mut tally = StateTally::default();
    let mut judged_anew = false;
    for (id, state) in &states {
        match state {
            PolicyState::Ready { .. } => tally.ready += 1,
            PolicyState::Invalid { .. } => tally.invalid += 1,
            PolicyState::NotServed { .. } => tally.not_served += 1,
            PolicyState::Forbidden { .. } => tally.forbidden += 1,
        }
        if previous.get(id) == Some(state) {
            continue;
        }
        judged_anew = true;
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
            PolicyState::Forbidden { refused, .. } => {
                let message = refused
                    .iter()
                    .map(Refused::describe)
                    .collect::<Vec<_>>()
                    .join("; ");
                tracing::warn!(retention_policy = %id, problem = %message, "retention policy cannot be served: the API server forbids kube-gc its resources; it acts on nothing there until the RBAC rule is granted");
                record_policy_event(shared, id, EventType::Warning, "Forbidden", &message);
            }
            PolicyState::Ready { .. } => {
                tracing::info!(retention_policy = %id, "retention policy ready")
            }
        }
    }
    shared.metrics.set_policies(&tally);
    *previous = states;
    if judged_anew {
        shared.judged.notify_one();
    }
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
