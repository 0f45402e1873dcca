//! A group key: the history limits. The group's finished members are ranked from the cache,
//! and each one beyond its limit is deleted with preconditions on the copy that was ranked;
//! on Conflict it is read fresh and re-ranked with the others before anything is deleted.

use std::collections::HashMap;

use crate::retention::assessment::Assessment;
use crate::retention::history::{over_limit, Member};
use crate::retention::policy::CompiledPolicy;
use kube_gc_runtime::cache::ObjectKey;
use kube_gc_runtime::controller::Action;

use super::super::groups::GroupKey;
use super::super::watch::ResourceWatch;
use super::delete::{Deletion, Guard, Reason};
use super::{RetentionError, RetentionReconciler};

impl RetentionReconciler {
    pub(super) async fn group(
        &self,
        watch: &ResourceWatch,
        group: &GroupKey,
    ) -> Result<Action, RetentionError> {
        let Some(policy) = watch.rules.policies.get(usize::from(group.policy)).cloned() else {
            return Ok(Action::Done);
        };
        let mut members = group_members(watch, group);
        for excess in over_limit(&history_members(&members), policy.limits) {
            let Some(assessment) = members.get(&excess.id).cloned() else {
                continue;
            };
            let limit = Reason::HistoryLimit;
            if let Deletion::Conflict = self
                .delete(watch, &assessment, &policy, limit, Guard::UidAndVersion)
                .await?
            {
                self.delete_fresh_member(watch, group, &policy, &mut members, &excess.id)
                    .await?;
            }
        }
        Ok(Action::Done)
    }

    /// On Conflict: read the member fresh, re-rank the group with it, delete only if it is
    /// still beyond the limit.
    async fn delete_fresh_member(
        &self,
        watch: &ResourceWatch,
        group: &GroupKey,
        policy: &CompiledPolicy,
        members: &mut HashMap<ObjectKey, Assessment>,
        key: &ObjectKey,
    ) -> Result<(), RetentionError> {
        members.remove(key);
        let Some(fresh) = self.read_fresh(watch, key).await? else {
            return Ok(());
        };
        if member_of(&fresh, group) {
            members.insert(key.clone(), fresh.clone());
        }
        let still_over = over_limit(&history_members(members), policy.limits)
            .iter()
            .any(|r| &r.id == key);
        if still_over {
            let limit = Reason::HistoryLimit;
            if let Deletion::Conflict = self
                .delete(watch, &fresh, policy, limit, Guard::UidAndVersion)
                .await?
            {
                tracing::info!(resource = %watch.target, %key, "changed again while being deleted; leaving it to its next event");
            }
        }
        Ok(())
    }
}

/// The group's finished members that are not being deleted, from the cache.
fn group_members(watch: &ResourceWatch, group: &GroupKey) -> HashMap<ObjectKey, Assessment> {
    watch
        .groups
        .members(group)
        .into_iter()
        .filter_map(|key| watch.store.get(&key))
        .filter(|j| member_of(j, group))
        .map(|j| (j.key().clone(), (*j).clone()))
        .collect()
}

/// A finished, governed member of `group`, not being deleted.
fn member_of(assessment: &Assessment, group: &GroupKey) -> bool {
    assessment.governed().is_some_and(|g| {
        g.policy == group.policy
            && !g.facts.being_deleted
            && g.facts.finished.is_some()
            && g.group.as_deref() == Some(&*group.value)
    })
}

fn history_members(members: &HashMap<ObjectKey, Assessment>) -> Vec<Member<ObjectKey>> {
    members
        .iter()
        .filter_map(|(key, assessment)| {
            let finished = assessment.governed()?.facts.finished?;
            Some(Member {
                id: key.clone(),
                outcome: finished.outcome,
                finished_at: finished.at,
            })
        })
        .collect()
}
