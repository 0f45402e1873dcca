//! [`plan`]: from the policies and namespaces the informers hold, what the engine must watch —
//! one [`ResourcePolicies`] per served resource — and what to report on each policy. Pure.
//!
//! Contract:
//! - Every policy is compiled (`policy/compile.rs`); an invalid one is reported with its
//!   errors and applies to nothing.
//! - A valid policy applies to each of its targets the server serves; a target that is not
//!   served is reported (`ResourceNotServed`), and the policy is ready only if all are served.
//!   (Whether kube-gc may read and delete them is learnt from the server's 403s, applied after
//!   by `refusal.rs`.)
//! - A resource's [`ResourcePolicies`] hold its policies in a fixed order (cluster policies by name, then
//!   namespaced ones by namespace and name), so that the same inputs always give the same
//!   rules, and a [`fingerprint`](WatchPlan::fingerprint) that changes exactly when a relist is
//!   needed to re-assess its objects: a policy's generation, or (for cluster policies with a
//!   namespace selector) the namespaces' labels.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::refused::Refused;
use crate::retention::assessment::ResourcePolicies;
use crate::retention::policy::{
    compile, CompiledPolicy, FieldError, PolicyId, RetentionPolicyObject, Target, WebhookSecret,
};
use kube_gc_client::ResourceRef;

/// What is known about one policy after planning.
#[derive(Clone, Debug, PartialEq)]
pub enum PolicyState {
    /// Valid, and every target is watched.
    Ready {
        /// The generation compiled.
        generation: Option<i64>,
    },
    /// Invalid: the fields at fault.
    Invalid {
        /// The generation read.
        generation: Option<i64>,
        /// What is wrong.
        errors: Vec<FieldError>,
    },
    /// Valid, but the server does not serve some of its targets.
    NotServed {
        /// The generation compiled.
        generation: Option<i64>,
        /// The targets missing.
        missing: Vec<Target>,
    },
    /// Valid and served, but the server forbids kube-gc to read or delete some of its targets
    /// (never made by [`plan`]: the engine's [`forbid`](super::refusal::forbid) makes it from
    /// the 403s it met).
    Forbidden {
        /// The generation compiled.
        generation: Option<i64>,
        /// The targets refused, and how.
        refused: Vec<Refused>,
    },
}

/// One resource to watch, with its rules.
#[derive(Clone, Debug)]
pub struct WatchPlan {
    /// The resource as discovery describes it.
    pub resource: ResourceRef,
    /// Its policies and the namespaces' labels.
    pub rules: Arc<ResourcePolicies>,
    /// Changes exactly when the objects must be assessed again.
    pub fingerprint: String,
}

/// The whole plan.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    /// Per served target.
    pub watches: BTreeMap<Target, WatchPlan>,
    /// Per policy.
    pub policies: BTreeMap<PolicyId, PolicyState>,
    /// The valid policies that have a notification destination of their own, and where.
    pub notifications: BTreeMap<PolicyId, WebhookSecret>,
}

/// A policy object as read, and whether it is a `ClusterRetentionPolicy`.
pub struct PolicyInput<'a> {
    /// The object.
    pub object: &'a RetentionPolicyObject,
    /// Read as the cluster kind.
    pub cluster: bool,
}

/// Plans the engine's watches. `served` resolves a target to the resource the server serves.
pub fn plan(
    inputs: &[PolicyInput<'_>],
    namespaces: &BTreeMap<String, BTreeMap<String, String>>,
    served: &dyn Fn(&Target) -> Option<ResourceRef>,
) -> Plan {
    let mut compiled: Vec<Arc<CompiledPolicy>> = Vec::new();
    let mut plan = Plan::default();
    for input in inputs {
        match compile(input.object, input.cluster) {
            Ok(policy) => compiled.push(Arc::new(policy)),
            Err(errors) => {
                let id = PolicyId {
                    namespace: (!input.cluster)
                        .then(|| input.object.metadata.namespace.clone())
                        .flatten(),
                    name: input.object.metadata.name.clone().unwrap_or_default(),
                };
                let generation = input.object.metadata.generation;
                plan.policies
                    .insert(id, PolicyState::Invalid { generation, errors });
            }
        }
    }
    compiled.sort_by(|a, b| order_key(&a.id).cmp(&order_key(&b.id)));
    let mut by_target: BTreeMap<Target, (ResourceRef, Vec<Arc<CompiledPolicy>>)> = BTreeMap::new();
    for policy in &compiled {
        if let Some(secret) = &policy.notification {
            plan.notifications.insert(policy.id.clone(), secret.clone());
        }
        let mut missing = Vec::new();
        for target in &policy.targets {
            match served(target) {
                Some(resource) => by_target
                    .entry(target.clone())
                    .or_insert_with(|| (resource, Vec::new()))
                    .1
                    .push(Arc::clone(policy)),
                None => missing.push(target.clone()),
            }
        }
        let generation = policy.generation;
        let state = if missing.is_empty() {
            PolicyState::Ready { generation }
        } else {
            PolicyState::NotServed {
                generation,
                missing,
            }
        };
        plan.policies.insert(policy.id.clone(), state);
    }
    for (target, (resource, policies)) in by_target {
        let fingerprint = fingerprint(&policies, namespaces);
        let rules = ResourcePolicies {
            policies,
            namespaces: namespaces.clone(),
        };
        plan.watches.insert(
            target,
            WatchPlan {
                resource,
                rules: Arc::new(rules),
                fingerprint,
            },
        );
    }
    plan
}

/// [`plan`] for policies read as `(object, is_cluster)`, each target resolved among the
/// `served` resources, every version of every group as discovery lists them (the engine's
/// planner, `kube-gc explain` and `plan`, so that all resolve a target alike).
pub fn plan_served<'a>(
    policies: impl IntoIterator<Item = (&'a RetentionPolicyObject, bool)>,
    namespaces: &BTreeMap<String, BTreeMap<String, String>>,
    served: &[ResourceRef],
) -> Plan {
    let inputs: Vec<PolicyInput<'_>> = policies
        .into_iter()
        .map(|(object, cluster)| PolicyInput { object, cluster })
        .collect();
    let resolve = |t: &Target| {
        served
            .iter()
            .find(|r| r.group == t.group && r.version == t.version && r.plural == t.resource)
            .cloned()
    };
    plan(&inputs, namespaces, &resolve)
}

/// Cluster policies first, then namespaced ones; by namespace and name within each.
fn order_key(id: &PolicyId) -> (bool, &str, &str) {
    (
        id.namespace.is_some(),
        id.namespace.as_deref().unwrap_or(""),
        &id.name,
    )
}

fn fingerprint(
    policies: &[Arc<CompiledPolicy>],
    namespaces: &BTreeMap<String, BTreeMap<String, String>>,
) -> String {
    let mut text = String::new();
    for policy in policies {
        text.push_str(&format!("{}@{:?};", policy.id, policy.generation));
    }
    let selects_namespaces = policies.iter().any(|p| p.namespace_selector.is_some());
    if selects_namespaces {
        let labelled: BTreeSet<String> = namespaces
            .iter()
            .map(|(name, labels)| format!("{name}={labels:?}"))
            .collect();
        text.push_str(&labelled.into_iter().collect::<Vec<_>>().join(","));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(yaml: &str) -> RetentionPolicyObject {
        serde_saphyr::from_str(yaml).unwrap()
    }

    fn serves_core_only(target: &Target) -> Option<ResourceRef> {
        (target.group.is_empty() && target.resource == "pods")
            .then(|| ResourceRef::new("", "v1", "pods", "Pod", true))
    }

    fn namespaces(pairs: &[(&str, &str)]) -> BTreeMap<String, BTreeMap<String, String>> {
        pairs
            .iter()
            .map(|(ns, team)| {
                let labels = BTreeMap::from([("team".to_owned(), team.to_string())]);
                (ns.to_string(), labels)
            })
            .collect()
    }

    #[test]
    fn valid_policies_share_a_resource_and_invalid_or_unserved_ones_are_reported() {
        let cluster = object("metadata: {name: pods, generation: 1}\nspec: {preset: pods, ttlSecondsAfterFinished: 60}");
        let local = object("metadata: {name: mine, namespace: a, generation: 3}\nspec: {preset: pods, ttlSecondsAfterFinished: 5}");
        let bad = object("metadata: {name: bad, namespace: a}\nspec: {preset: nope}");
        let argo = object("metadata: {name: wf}\nspec: {preset: argo-workflows}");
        let inputs = [
            PolicyInput {
                object: &local,
                cluster: false,
            },
            PolicyInput {
                object: &cluster,
                cluster: true,
            },
            PolicyInput {
                object: &bad,
                cluster: false,
            },
            PolicyInput {
                object: &argo,
                cluster: true,
            },
        ];
        let plan = plan(&inputs, &namespaces(&[("a", "x")]), &serves_core_only);
        assert_eq!(plan.watches.len(), 1);
        let pods = plan.watches.values().next().unwrap();
        let names: Vec<String> = pods
            .rules
            .policies
            .iter()
            .map(|p| p.id.to_string())
            .collect();
        assert_eq!(
            names,
            ["ClusterRetentionPolicy pods", "RetentionPolicy a/mine"]
        );
        let state = |ns: Option<&str>, name: &str| {
            plan.policies[&PolicyId {
                namespace: ns.map(str::to_owned),
                name: name.to_owned(),
            }]
                .clone()
        };
        assert_eq!(
            state(Some("a"), "mine"),
            PolicyState::Ready {
                generation: Some(3)
            }
        );
        assert!(matches!(
            state(Some("a"), "bad"),
            PolicyState::Invalid { .. }
        ));
        assert!(
            matches!(state(None, "wf"), PolicyState::NotServed { ref missing, .. } if missing.len() == 1)
        );
    }

    #[test]
    fn the_fingerprint_follows_generations_and_selected_namespaces_labels() {
        let selective = object("metadata: {name: p, generation: 1}\nspec: {preset: pods, namespaceSelector: {matchLabels: {team: x}}}");
        let inputs = [PolicyInput {
            object: &selective,
            cluster: true,
        }];
        let before = plan(&inputs, &namespaces(&[("a", "x")]), &serves_core_only);
        let relabelled = plan(&inputs, &namespaces(&[("a", "y")]), &serves_core_only);
        let fp = |p: &Plan| p.watches.values().next().unwrap().fingerprint.clone();
        assert_ne!(fp(&before), fp(&relabelled));
        let bumped = object("metadata: {name: p, generation: 2}\nspec: {preset: pods, namespaceSelector: {matchLabels: {team: x}}}");
        let after = plan(
            &[PolicyInput {
                object: &bumped,
                cluster: true,
            }],
            &namespaces(&[("a", "x")]),
            &serves_core_only,
        );
        assert_ne!(fp(&before), fp(&after));
        // Without a namespace selector, namespace labels do not matter.
        let plain = object("metadata: {name: p, generation: 1}\nspec: {preset: pods}");
        let one = plan(
            &[PolicyInput {
                object: &plain,
                cluster: true,
            }],
            &namespaces(&[("a", "x")]),
            &serves_core_only,
        );
        let two = plan(
            &[PolicyInput {
                object: &plain,
                cluster: true,
            }],
            &namespaces(&[("a", "y")]),
            &serves_core_only,
        );
        assert_eq!(fp(&one), fp(&two));
    }
}
