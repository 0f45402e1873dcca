//! The plan's rows: each controller's deletions to come and the objects it keeps for a
//! problem, found with the controller's own decision functions over one LIST per resource.
//! `plan::rows_of` calls each controller's function here (or in `namespaces.rs`, `storage.rs`);
//! all read what they need from one [`PlanContext`].

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::explain::decide::{group_phrase, ordinal, outcome_word};
use crate::explain::gather::serves;
use kube_gc_client::{Api, Client, Discovery, ListParams, ResourceRef};
use kube_gc_controllers::retention::assessment::{assess, Standing};
use kube_gc_controllers::retention::engine::{assessing, plan_served, PolicyState};
use kube_gc_controllers::retention::history::{over_limit, Member};
use kube_gc_controllers::retention::policy::{CompiledPolicy, PolicyId};
use kube_gc_controllers::retention::verdict::{decide, Verdict};
use kube_gc_controllers::ttl::{
    judge as judge_ttl, rules as ttl_rules, TtlKind, TtlState, Verdict as TtlVerdict,
};
use kube_gc_core::labels::Selector;
use kube_gc_runtime::cache::Cacheable;

use super::{KeptRow, PlanOptions, PolicyProblem};
use crate::explain::gather::{read_namespaces, read_policies, GatherError};

/// What every controller's rows are found with.
pub(crate) struct PlanContext<'a> {
    /// Reads (LISTs only).
    pub client: &'a Client,
    /// What the server serves.
    pub discovery: &'a Discovery,
    /// Every resource served, in every version.
    pub served: &'a [ResourceRef],
    /// What the plan was asked for.
    pub options: &'a PlanOptions,
    /// `options.selector`, parsed.
    pub selector: Option<&'a Selector>,
    /// The moment of the plan.
    pub now: DateTime<Utc>,
}

/// A deletion found: what and why; when is beside it.
pub(crate) struct Found {
    /// The object's UID (empty if its source gave none).
    pub uid: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
    pub controller: String,
    pub reason: String,
}

/// Everything the plan found, before it is sorted and totalled.
#[derive(Default)]
pub(crate) struct Findings {
    /// Each deletion and when (`None`: due now).
    pub deletions: Vec<(Option<DateTime<Utc>>, Found)>,
    pub kept: Vec<KeptRow>,
    pub policy_problems: Vec<PolicyProblem>,
    /// The retention policy of each retention deletion, by the object's UID.
    pub policies: HashMap<String, PolicyNote>,
}

/// The retention policy a deletion is made under.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PolicyNote {
    /// Which policy.
    pub policy: PolicyId,
    /// It is in `Audit` mode: it would delete the object, kube-gc will not.
    pub audit: bool,
}

impl Findings {
    /// The policy of a deletion found, if it is a retention policy's.
    pub fn policy_of(&self, found: &Found) -> Option<&PolicyNote> {
        (found.controller == "retention")
            .then(|| self.policies.get(&found.uid))
            .flatten()
    }
}

impl Findings {
    fn delete(
        &mut self,
        object: &Value,
        kind: &str,
        controller: &str,
        reason: String,
        at: Option<DateTime<Utc>>,
        policy: Option<PolicyNote>,
    ) {
        let (namespace, name) = identity(object);
        let uid = object["metadata"]["uid"].as_str().unwrap_or_default();
        if let Some(policy) = policy {
            self.policies.insert(uid.to_owned(), policy);
        }
        self.deletions.push((
            at,
            Found {
                uid: uid.to_owned(),
                kind: kind.to_owned(),
                namespace,
                name,
                controller: controller.to_owned(),
                reason,
            },
        ));
    }

    fn keep(
        &mut self,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
        controller: &str,
        problem: String,
    ) {
        self.kept.push(KeptRow {
            kind: kind.to_owned(),
            namespace: namespace.map(str::to_owned),
            name: name.to_owned(),
            controller: controller.to_owned(),
            problem,
        });
    }
}

fn identity(object: &Value) -> (Option<String>, String) {
    let meta = &object["metadata"];
    let text = |v: &Value| v.as_str().map(str::to_owned);
    (
        text(&meta["namespace"]),
        text(&meta["name"]).unwrap_or_default(),
    )
}

async fn list(
    client: &Client,
    resource: &ResourceRef,
    options: &PlanOptions,
) -> Result<Vec<Value>, GatherError> {
    let namespace = options.namespace.as_deref().filter(|_| resource.namespaced);
    let api: Api<Value> = Api::dynamic(client.clone(), resource.clone(), namespace);
    let params = ListParams {
        label_selector: options.selector.clone(),
        ..ListParams::default()
    };
    api.list(&params)
        .await
        .map(|l| l.items)
        .map_err(|source| GatherError::Api {
            what: format!("list {}", resource.path_name()),
            source,
        })
}

/// The TTL controller of kind `K`: its objects listed as the controller caches them (each
/// decoded straight to the engine's assessment under the controller's fixed policy), assessed by
/// its `judge`.
pub(crate) async fn ttl_rows<K: TtlKind>(
    cx: &PlanContext<'_>,
    found: &mut Findings,
) -> Result<(), GatherError> {
    let (client, options, now) = (cx.client, cx.options, cx.now);
    let resource = K::resource();
    if !serves(cx.served, &resource) {
        return Ok(());
    }
    let api: Api<Value> = Api::dynamic(
        client.clone(),
        resource.clone(),
        options.namespace.as_deref(),
    );
    let params = ListParams {
        label_selector: options.selector.clone(),
        ..ListParams::default()
    };
    let decoder = assessing(std::sync::Arc::new(ttl_rules::<K>()), move || now);
    let assessments = api
        .pager_with(params, decoder)
        .collect_pages()
        .await
        .map_err(|source| GatherError::Api {
            what: format!("list {}", resource.path_name()),
            source,
        })?;
    for assessment in &assessments.0.items {
        let key = assessment.key();
        let (namespace, name) = (key.namespace(), key.name());
        let state = match TtlState::of(assessment) {
            Ok(state) => state,
            Err(problem) => {
                found.keep(
                    K::KIND,
                    namespace,
                    name,
                    K::CONTROLLER,
                    problem.message.clone(),
                );
                continue;
            }
        };
        let Some(ttl) = state.ttl_seconds else {
            continue;
        };
        let at = match judge_ttl(&state, now) {
            Ok(TtlVerdict::Expired { .. }) => None,
            Ok(TtlVerdict::Wait { expires_at, .. }) => Some(expires_at),
            Ok(TtlVerdict::Keep) => continue,
            Err(e) => {
                found.keep(K::KIND, namespace, name, K::CONTROLLER, e.to_string());
                continue;
            }
        };
        let deletion = Found {
            uid: assessment.uid().to_owned(),
            kind: K::KIND.to_owned(),
            namespace: namespace.map(str::to_owned),
            name: name.to_owned(),
            controller: K::CONTROLLER.to_owned(),
            reason: format!("ttlSecondsAfterFinished {ttl}s"),
        };
        found.deletions.push((at, deletion));
    }
    Ok(())
}

/// Every retention policy's deletions, its objects kept for a problem, and the policies
/// that are invalid or wait for a resource.
pub(crate) async fn retention_rows(
    cx: &PlanContext<'_>,
    found: &mut Findings,
) -> Result<(), GatherError> {
    let (client, served, options, now) = (cx.client, cx.served, cx.options, cx.now);
    let Some(policies) = read_policies(client, served).await? else {
        return Ok(());
    };
    let namespaces = read_namespaces(client).await?;
    let policies = policies.iter().map(|(object, cluster)| (object, *cluster));
    let planned = plan_served(policies, &namespaces, served);
    found
        .policy_problems
        .extend(policy_problems(&planned.policies));
    for watch in planned.watches.values() {
        let objects = list(client, &watch.resource, options).await?;
        let assessed: Vec<_> = objects
            .iter()
            .map(|o| assess(o, &watch.rules, now))
            .collect();
        let mut groups: BTreeMap<(u16, String, String), Vec<Member<usize>>> = BTreeMap::new();
        let mut due_by_ttl = HashSet::new();
        for (i, (object, assessment)) in objects.iter().zip(&assessed).enumerate() {
            let kind = &watch.resource.kind;
            let governed = match &assessment.standing {
                Standing::Governed(governed) => governed,
                Standing::Problem(problem) => {
                    let key = assessment.key();
                    let why = problem.message.clone();
                    found.keep(kind, key.namespace(), key.name(), "retention", why);
                    continue;
                }
                Standing::Ungoverned | Standing::Gone => continue,
            };
            let policy = &watch.rules.policies[usize::from(governed.policy)];
            let reason = format!("TTL ({})", policy.id);
            let note = Some(note(policy));
            match decide(&governed.facts, governed.ttl, now) {
                Ok(Verdict::Expired { .. }) => {
                    due_by_ttl.insert(i);
                    found.delete(object, kind, "retention", reason, None, note);
                }
                Ok(Verdict::Wait { expires_at, .. }) => {
                    found.delete(object, kind, "retention", reason, Some(expires_at), note)
                }
                Ok(Verdict::Keep(_)) => {}
                Err(e) => {
                    let (namespace, name) = identity(object);
                    let why = format!("{e} ({})", policy.id);
                    found.keep(kind, namespace.as_deref(), &name, "retention", why);
                }
            }
            if let (Some(group), Some(finished)) = (&governed.group, governed.facts.finished) {
                if !governed.facts.being_deleted {
                    let namespace = assessment.key().namespace().unwrap_or_default().to_owned();
                    groups
                        .entry((governed.policy, namespace, group.to_string()))
                        .or_default()
                        .push(Member {
                            id: i,
                            outcome: finished.outcome,
                            finished_at: finished.at,
                        });
                }
            }
        }
        for ((policy, namespace, group), members) in groups {
            let policy = &watch.rules.policies[usize::from(policy)];
            for excess in over_limit(&members, policy.limits) {
                if due_by_ttl.contains(&excess.id) {
                    continue;
                }
                let owner = owner_named(&objects[excess.id], &group);
                let reason = format!(
                    "history limit {} {}: {} newest of {} ({})",
                    excess.limit.unwrap_or(0),
                    outcome_word(excess.outcome),
                    ordinal(excess.position),
                    group_phrase(&policy.group_by, &group, &namespace, owner),
                    policy.id
                );
                found.delete(
                    &objects[excess.id],
                    &watch.resource.kind,
                    "retention",
                    reason,
                    None,
                    Some(note(policy)),
                );
            }
        }
    }
    Ok(())
}

fn note(policy: &CompiledPolicy) -> PolicyNote {
    PolicyNote {
        policy: policy.id.clone(),
        audit: policy.mode.is_audit(),
    }
}

/// `Kind name` of the owner of `object` whose UID is `uid`, if it names one.
fn owner_named(object: &Value, uid: &str) -> Option<String> {
    let owners = object["metadata"]["ownerReferences"].as_array()?;
    let owner = owners.iter().find(|o| o["uid"].as_str() == Some(uid))?;
    Some(format!(
        "{} {}",
        owner["kind"].as_str()?,
        owner["name"].as_str()?
    ))
}

/// The policies that are invalid or wait for a resource, as their status says it.
fn policy_problems<'p>(
    states: impl IntoIterator<
        Item = (
            &'p kube_gc_controllers::retention::policy::PolicyId,
            &'p PolicyState,
        ),
    >,
) -> Vec<PolicyProblem> {
    states
        .into_iter()
        .filter_map(|(id, state)| {
            let (state, problem) = match state {
                PolicyState::Ready { .. } => return None,
                PolicyState::Invalid { errors, .. } => (
                    "Invalid",
                    errors
                        .iter()
                        .map(|e| format!("{}: {}", e.field, e.message))
                        .collect::<Vec<_>>()
                        .join("; "),
                ),
                PolicyState::Forbidden { refused, .. } => (
                    "Forbidden",
                    refused
                        .iter()
                        .map(|r| r.describe())
                        .collect::<Vec<_>>()
                        .join("; "),
                ),
                PolicyState::NotServed { missing, .. } => (
                    "NotServed",
                    format!(
                        "not served by the API server: {}",
                        missing
                            .iter()
                            .map(ToString::to_string)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ),
            };
            Some(PolicyProblem {
                policy: id.to_string(),
                state: state.to_owned(),
                problem,
            })
        })
        .collect()
}

/// Objects whose owners are all gone: the garbage collector deletes them now.
///
/// Every object is listed unfiltered, since an owner need not match the selector; the
/// selector then picks among the dependents, by the server's own rules (apimachinery's
/// `labels.Parse`, the one the simulated server filters with too, so `-l` means what it means
/// for the kinds the server filters).
pub(crate) async fn orphan_rows(
    cx: &PlanContext<'_>,
    found: &mut Findings,
) -> Result<(), GatherError> {
    let (client, discovery, options, selector) = (cx.client, cx.discovery, cx.options, cx.selector);
    let mut all = Vec::new();
    let mut uids = HashSet::new();
    for resource in discovery.deletable() {
        let namespace = options.namespace.as_deref().filter(|_| resource.namespaced);
        let api: Api<Value> = Api::dynamic(client.clone(), resource.clone(), namespace);
        let list = api
            .list_metadata(&ListParams::default())
            .await
            .map_err(|source| GatherError::Api {
                what: format!("list {}", resource.path_name()),
                source,
            })?;
        for item in list.items {
            uids.extend(item.metadata.uid.clone());
            all.push((resource.clone(), item.metadata));
        }
    }
    let orphans = all
        .into_iter()
        .filter(|(_, meta)| !meta.owner_references.is_empty() && meta.deletion_timestamp.is_none())
        .filter(|(_, meta)| {
            meta.owner_references.iter().all(|o| {
                !uids.contains(&o.uid)
                    && discovery
                        .resource_for_kind(&o.api_version, &o.kind)
                        .is_some()
            })
        })
        .filter(|(_, meta)| {
            selector.is_none_or(|s| s.matches_lookup(|k| meta.labels.get(k).map(String::as_str)))
        })
        .map(|(resource, meta)| {
            let owners: Vec<String> = meta
                .owner_references
                .iter()
                .map(|o| format!("{} {}", o.kind, o.name))
                .collect();
            let orphan = Found {
                uid: meta.uid.clone().unwrap_or_default(),
                kind: resource.kind.clone(),
                namespace: meta.namespace.clone(),
                name: meta.name.clone().unwrap_or_default(),
                controller: "garbagecollector".to_owned(),
                reason: format!("every owner is gone ({})", owners.join(", ")),
            };
            (None, orphan)
        });
    found.deletions.extend(orphans);
    Ok(())
}
