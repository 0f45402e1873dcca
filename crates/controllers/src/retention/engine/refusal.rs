//! [`Refusals`]: the resources the API server forbids kube-gc to read (a 403 on a watch's list
//! or watch) or to delete (a 403 on a DELETE), and what the policies naming them report — a
//! refusal is one policy's trouble, said on that policy, never the whole replica's.
//!
//! Contract:
//! - The watches' error handler records a read refusal ([`Refusals::refused_read`]), the
//!   reconciler a delete refusal ([`Refusals::refused_delete`]) and lifts it at the next
//!   deletion that works ([`Refusals::deleted`]); each change wakes the planner.
//! - [`forbid`] (pure) applies them to a plan: the watch of a resource kube-gc may not read is
//!   dropped — it would only fail, warn and, after a minute, fail `/readyz` for every policy —
//!   and every valid policy naming a refused resource is [`PolicyState::Forbidden`], naming the
//!   resource, the server's words and the RBAC rule to grant. A resource only refused deletion
//!   stays watched: the policy still counts what it would delete.
//! - A read refusal is tried again every rediscover interval by one LIST of a single object
//!   (the planner's [`Refusals::due`] and [`Refusals::read_again`]); once the LIST is allowed
//!   the resource is watched again. A resource no policy names any more is forgotten
//!   ([`Refusals::retain`]).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::plan::{Plan, PolicyState};
use super::refused::{Refusal, Refused};
use crate::retention::policy::Target;

/// Applies `refusals` to `plan`: stops watching what may not be read, and turns every ready
/// policy naming a refused resource `Forbidden` (an invalid or unserved policy keeps its state:
/// that is what it must fix first).
pub fn forbid(plan: &mut Plan, refusals: &BTreeMap<Target, Refusal>) {
    for (target, refusal) in refusals {
        let policies = match &refusal.read {
            Some(_) => plan.watches.remove(target),
            None => plan.watches.get(target).cloned(),
        };
        let Some(watched) = policies else { continue };
        for policy in &watched.rules.policies {
            let refused = Refused {
                target: target.clone(),
                refusal: refusal.clone(),
            };
            let Some(state) = plan.policies.get_mut(&policy.id) else {
                continue;
            };
            match state {
                PolicyState::Ready { generation } => {
                    *state = PolicyState::Forbidden {
                        generation: *generation,
                        refused: vec![refused],
                    };
                }
                PolicyState::Forbidden { refused: all, .. } => all.push(refused),
                PolicyState::Invalid { .. } | PolicyState::NotServed { .. } => {}
            }
        }
    }
}

/// The refusals of one controller, shared by its watches, its reconciler and its planner.
#[derive(Debug, Default)]
pub struct Refusals {
    by_target: Mutex<BTreeMap<Target, Entry>>,
    /// Whether any delete is refused: the check every successful deletion makes, lock-free.
    deletes_refused: AtomicBool,
    changed: Notify,
}

#[derive(Debug, Default)]
struct Entry {
    refusal: Refusal,
    /// When the read was last refused (or tried again).
    read_tried: Option<Instant>,
}

impl Refusals {
    /// A list or watch of `target` was refused, the server saying `message`.
    pub fn refused_read(&self, target: &Target, message: String) {
        let mut by_target = self.by_target.lock();
        let entry = by_target.entry(target.clone()).or_default();
        entry.read_tried = Some(Instant::now());
        if entry.refusal.read.as_ref() != Some(&message) {
            entry.refusal.read = Some(message);
            self.changed.notify_one();
        }
    }

    /// A DELETE of an object of `target` was refused, the server saying `message`.
    pub fn refused_delete(&self, target: &Target, message: String) {
        let mut by_target = self.by_target.lock();
        let entry = by_target.entry(target.clone()).or_default();
        self.deletes_refused.store(true, Ordering::Relaxed);
        if entry.refusal.delete.as_ref() != Some(&message) {
            entry.refusal.delete = Some(message);
            self.changed.notify_one();
        }
    }

    /// A DELETE of an object of `target` worked: deleting is allowed again.
    pub fn deleted(&self, target: &Target) {
        if !self.deletes_refused.load(Ordering::Relaxed) {
            return;
        }
        let mut by_target = self.by_target.lock();
        let lifted = by_target
            .get_mut(target)
            .and_then(|entry| entry.refusal.delete.take())
            .is_some();
        if lifted {
            remove_if_empty(&mut by_target, target);
            let any = by_target.values().any(|e| e.refusal.delete.is_some());
            self.deletes_refused.store(any, Ordering::Relaxed);
            self.changed.notify_one();
        }
    }

    /// Reading `target` was tried again and allowed.
    pub fn read_again(&self, target: &Target) {
        let mut by_target = self.by_target.lock();
        let lifted = by_target
            .get_mut(target)
            .and_then(|entry| entry.refusal.read.take())
            .is_some();
        if lifted {
            remove_if_empty(&mut by_target, target);
            self.changed.notify_one();
        }
    }

    /// The read refusals due to be tried again: refused at least `interval` ago.
    pub fn due(&self, interval: Duration) -> Vec<Target> {
        let now = Instant::now();
        self.by_target
            .lock()
            .iter()
            .filter(|(_, e)| e.refusal.read.is_some())
            .filter(|(_, e)| e.read_tried.is_none_or(|at| now - at >= interval))
            .map(|(target, _)| target.clone())
            .collect()
    }

    /// Whether a read refusal waits to be tried again.
    pub fn any_read_refused(&self) -> bool {
        self.by_target
            .lock()
            .values()
            .any(|e| e.refusal.read.is_some())
    }

    /// Forgets the refusals of resources `keep` says no policy names any more.
    pub fn retain(&self, keep: impl Fn(&Target) -> bool) {
        let mut by_target = self.by_target.lock();
        by_target.retain(|target, _| keep(target));
        let any = by_target.values().any(|e| e.refusal.delete.is_some());
        self.deletes_refused.store(any, Ordering::Relaxed);
    }

    /// Every refusal now.
    pub fn snapshot(&self) -> BTreeMap<Target, Refusal> {
        self.by_target
            .lock()
            .iter()
            .map(|(target, entry)| (target.clone(), entry.refusal.clone()))
            .collect()
    }

    /// Completes at the next change.
    pub async fn changed(&self) {
        self.changed.notified().await;
    }
}

fn remove_if_empty(by_target: &mut BTreeMap<Target, Entry>, target: &Target) {
    if by_target
        .get(target)
        .is_some_and(|e| e.refusal == Refusal::default())
    {
        by_target.remove(target);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retention::engine::plan::{plan, PolicyInput};
    use crate::retention::engine::refused::rule_needed;
    use crate::retention::policy::{PolicyId, RetentionPolicyObject};
    use kube_gc_client::ResourceRef;

    fn configmaps() -> Target {
        Target {
            group: String::new(),
            version: "v1".into(),
            resource: "configmaps".into(),
        }
    }

    fn object(yaml: &str) -> RetentionPolicyObject {
        serde_saphyr::from_str(yaml).unwrap()
    }

    fn serves_all(target: &Target) -> Option<ResourceRef> {
        Some(ResourceRef::new(
            &target.group,
            &target.version,
            &target.resource,
            "Thing",
            true,
        ))
    }

    const FORBIDDEN: &str = "configmaps is forbidden: User \"system:serviceaccount:kube-system:kube-gc\" cannot list resource \"configmaps\" in API group \"\" at the cluster scope";

    #[test]
    fn the_rule_to_grant_names_the_group_resource_and_every_verb() {
        assert_eq!(
            rule_needed(&configmaps()),
            r#"{apiGroups: [""], resources: ["configmaps"], verbs: ["get", "list", "watch", "delete"]}"#
        );
        let refused = Refused {
            target: configmaps(),
            refusal: Refusal {
                read: Some(FORBIDDEN.into()),
                delete: None,
            },
        };
        assert_eq!(
            refused.describe(),
            format!("kube-gc may not read v1/configmaps ({FORBIDDEN}); grant its service account the RBAC rule {{apiGroups: [\"\"], resources: [\"configmaps\"], verbs: [\"get\", \"list\", \"watch\", \"delete\"]}}")
        );
    }

    #[test]
    fn a_refused_read_stops_the_watch_and_forbids_only_the_policies_naming_it() {
        let configmap_policy = object("metadata: {name: cm, namespace: a, generation: 2}\nspec: {resource: {group: '', version: v1, resource: configmaps}, ttlSecondsAfterCreation: 60}");
        let pods =
            object("metadata: {name: pods, namespace: a, generation: 1}\nspec: {preset: pods}");
        let inputs = [
            PolicyInput {
                object: &configmap_policy,
                cluster: false,
            },
            PolicyInput {
                object: &pods,
                cluster: false,
            },
        ];
        let mut planned = plan(&inputs, &BTreeMap::new(), &serves_all);
        assert_eq!(planned.watches.len(), 2);
        let refusals = BTreeMap::from([(
            configmaps(),
            Refusal {
                read: Some(FORBIDDEN.into()),
                delete: None,
            },
        )]);
        forbid(&mut planned, &refusals);
        assert!(!planned.watches.contains_key(&configmaps()));
        assert_eq!(planned.watches.len(), 1, "the pods are still watched");
        let id = |name: &str| PolicyId {
            namespace: Some("a".into()),
            name: name.into(),
        };
        assert_eq!(
            planned.policies[&id("cm")],
            PolicyState::Forbidden {
                generation: Some(2),
                refused: vec![Refused {
                    target: configmaps(),
                    refusal: refusals[&configmaps()].clone(),
                }],
            }
        );
        assert_eq!(
            planned.policies[&id("pods")],
            PolicyState::Ready {
                generation: Some(1)
            }
        );
    }

    #[test]
    fn a_refused_delete_keeps_the_watch() {
        let policy = object("metadata: {name: cm, namespace: a}\nspec: {resource: {group: '', version: v1, resource: configmaps}, ttlSecondsAfterCreation: 60}");
        let inputs = [PolicyInput {
            object: &policy,
            cluster: false,
        }];
        let mut planned = plan(&inputs, &BTreeMap::new(), &serves_all);
        let refusals = BTreeMap::from([(
            configmaps(),
            Refusal {
                read: None,
                delete: Some("no".into()),
            },
        )]);
        forbid(&mut planned, &refusals);
        assert!(planned.watches.contains_key(&configmaps()));
        assert!(matches!(
            planned.policies.values().next(),
            Some(PolicyState::Forbidden { .. })
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn refusals_are_tried_again_after_the_interval_and_lifted_by_what_works() {
        let refusals = Refusals::default();
        refusals.refused_read(&configmaps(), FORBIDDEN.into());
        let interval = Duration::from_secs(30);
        assert!(refusals.due(interval).is_empty());
        tokio::time::advance(interval).await;
        assert_eq!(refusals.due(interval), [configmaps()]);
        refusals.read_again(&configmaps());
        assert!(refusals.snapshot().is_empty());
        assert!(!refusals.any_read_refused());

        refusals.refused_delete(&configmaps(), "no".into());
        assert!(refusals.due(interval).is_empty(), "deletes are not probed");
        refusals.deleted(&configmaps());
        assert!(refusals.snapshot().is_empty());

        refusals.refused_read(&configmaps(), FORBIDDEN.into());
        refusals.retain(|_| false);
        assert!(refusals.snapshot().is_empty());
    }
}
