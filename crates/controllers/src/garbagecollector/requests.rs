//! Every request the workers send, each guarded so that it acts only on the state that was
//! judged.
//!
//! Contract:
//! - [`delete`] sends a DELETE with the UID *and* resourceVersion preconditions of the copy the
//!   decision was made on, so the server deletes only if the object is still exactly that copy
//!   (in particular, still holds the owner references that were judged). On Conflict it reads
//!   the object once: a new UID or changed owner references → the decision is retried from the
//!   graph; the same references → one more DELETE at the fresh resourceVersion (upstream, since
//!   kubernetes PR #132632, retries without it; we keep it, which is stricter).
//! - Owner references are rewritten with a JSON patch that first `test`s the UID and the whole
//!   `ownerReferences` list that was judged: a concurrent change fails the patch (422) instead
//!   of being overwritten.
//! - A finalizer is removed with a merge patch carrying the resourceVersion just read, so only
//!   that finalizer goes and a concurrent change is a 409, never a lost update.
//! - NotFound is success for every call: the object is already gone.

use std::collections::HashSet;

use serde_json::{json, Value};

use super::errors::WorkError;
use super::identity::{ObjectIdentity, OwnerLink, Uid};
use super::Shared;
use crate::deleted::DeletionRecord;
use kube_gc_api::{DeleteOptions, OwnerReference, PartialObjectMetadata, PropagationPolicy};
use kube_gc_client::{Api, Patch, PostParams, ResourceRef};

/// A metadata-only handle on the resource of `identity`, scoped to its namespace.
pub(super) fn api_for(
    shared: &Shared,
    identity: &ObjectIdentity,
) -> Result<(Api<PartialObjectMetadata>, ResourceRef), WorkError> {
    let resource = shared.resource_for(&identity.gvk.api_version, &identity.gvk.kind)?;
    let namespace = identity.namespace.as_deref();
    let api = Api::dynamic(shared.client.clone(), resource.clone(), namespace);
    Ok((api, resource))
}

/// Deletes `item` with `policy`, if it is still at `resource_version` with `judged` owners;
/// `reason` says why, for the log line every deletion gets.
pub(super) async fn delete(
    shared: &Shared,
    item: &ObjectIdentity,
    policy: PropagationPolicy,
    resource_version: &str,
    judged: &[OwnerReference],
    reason: &'static str,
) -> Result<(), WorkError> {
    let (api, _) = api_for(shared, item)?;
    let options = guarded(policy, &item.uid, resource_version);
    // The answer is not read (kube-controller-manager's collector discards it too): it is asked
    // for as metadata, so that a Pod's, say, is not the whole Pod (exchanges 67, 69).
    let error = match api.delete_for_metadata(&item.name, &options).await {
        Ok(_) => {
            deleted(shared, item, policy, reason);
            return Ok(());
        }
        Err(e) if e.is_not_found() => return Ok(()),
        Err(e) if e.is_conflict() => e,
        Err(e) => return Err(WorkError::api("delete", item, e)),
    };
    tracing::debug!(object = %item, %error, "delete precondition failed; reading the object");
    let live = match api.get_metadata(&item.name).await {
        Ok(live) => live,
        Err(e) if e.is_not_found() => return Ok(()),
        Err(e) => return Err(WorkError::api("get", item, e)),
    };
    if live.metadata.uid.as_deref() != Some(&*item.uid) {
        return Ok(());
    }
    if live.metadata.owner_references != judged {
        return Err(WorkError::Changed(
            "owner references changed since they were judged",
        ));
    }
    let fresh = live.metadata.resource_version.as_deref().unwrap_or("");
    match api
        .delete_for_metadata(&item.name, &guarded(policy, &item.uid, fresh))
        .await
    {
        Ok(_) => {
            deleted(shared, item, policy, reason);
            Ok(())
        }
        Err(e) if e.is_not_found() => Ok(()),
        Err(e) => Err(WorkError::api("delete", item, e)),
    }
}

/// Counts and logs an accepted DELETE.
fn deleted(shared: &Shared, item: &ObjectIdentity, policy: PropagationPolicy, reason: &str) {
    shared.metrics.deleted(policy);
    shared.feed.record(DeletionRecord {
        controller: super::CONTROLLER,
        policy: None,
        audit: false,
        kind: item.gvk.kind.to_string(),
        namespace: item.namespace.as_deref().map(str::to_owned),
        name: item.name.to_string(),
        uid: item.uid.to_string(),
        reason: super::pending::OWNERS_GONE,
        at: shared.clock.now(),
    });
    tracing::info!(
        controller = "garbagecollector",
        kind = %item.gvk.kind,
        api_version = %item.gvk.api_version,
        namespace = item.namespace.as_deref().unwrap_or(""),
        name = %item.name,
        uid = %item.uid,
        propagation_policy = ?policy,
        reason,
        "deleted"
    );
}

fn guarded(policy: PropagationPolicy, uid: &str, resource_version: &str) -> DeleteOptions {
    let options = DeleteOptions::with_policy(policy).with_uid(uid);
    if resource_version.is_empty() {
        options
    } else {
        options.with_resource_version(resource_version)
    }
}

/// Rewrites `item`'s owner references from `current` with `edit`; answers the object's new
/// metadata, or `None` if it is gone.
pub(super) async fn patch_owners(
    shared: &Shared,
    item: &ObjectIdentity,
    current: &[OwnerLink],
    edit: impl Fn(&OwnerLink) -> Option<OwnerReference>,
) -> Result<Option<PartialObjectMetadata>, WorkError> {
    let (api, _) = api_for(shared, item)?;
    let judged: Vec<OwnerReference> = current.iter().map(OwnerLink::to_reference).collect();
    let edited: Vec<OwnerReference> = current.iter().filter_map(edit).collect();
    let patch = owners_patch(&item.uid, &judged, &edited);
    match api.patch(&item.name, &PostParams::default(), &patch).await {
        Ok(updated) => Ok(Some(updated)),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(WorkError::api("patch", item, e)),
    }
}

/// The JSON patch replacing `judged` owner references with `edited`, only if the object still
/// has this UID and exactly the judged references.
pub fn owners_patch(uid: &str, judged: &[OwnerReference], edited: &[OwnerReference]) -> Patch {
    let write = if edited.is_empty() {
        json!({"op": "remove", "path": "/metadata/ownerReferences"})
    } else {
        json!({"op": "replace", "path": "/metadata/ownerReferences", "value": edited})
    };
    Patch::Json(json!([
        {"op": "test", "path": "/metadata/uid", "value": uid},
        {"op": "test", "path": "/metadata/ownerReferences", "value": judged},
        write,
    ]))
}

/// `edit` for [`patch_owners`]: drops the references to `owners`.
pub(super) fn without(owners: &HashSet<Uid>) -> impl Fn(&OwnerLink) -> Option<OwnerReference> + '_ {
    move |link| (!owners.contains(&link.uid)).then(|| link.to_reference())
}

/// `edit` for [`patch_owners`]: sets `blockOwnerDeletion: false` on the references to `owners`.
pub(super) fn unblocking(
    owners: &HashSet<Uid>,
) -> impl Fn(&OwnerLink) -> Option<OwnerReference> + '_ {
    move |link| {
        let mut reference = link.to_reference();
        if owners.contains(&link.uid) {
            reference.block_owner_deletion = Some(false);
        }
        Some(reference)
    }
}

/// Removes `finalizer` from `item` (read first, then a merge patch at that resourceVersion).
pub(super) async fn remove_finalizer(
    shared: &Shared,
    item: &ObjectIdentity,
    finalizer: &str,
) -> Result<(), WorkError> {
    let (api, _) = api_for(shared, item)?;
    let live = match api.get_metadata(&item.name).await {
        Ok(live) => live,
        Err(e) if e.is_not_found() => return Ok(()),
        Err(e) => return Err(WorkError::api("get", item, e)),
    };
    let meta = &live.metadata;
    if meta.uid.as_deref() != Some(&*item.uid) || !meta.has_finalizer(finalizer) {
        return Ok(());
    }
    let remaining: Vec<&String> = meta.finalizers.iter().filter(|f| *f != finalizer).collect();
    let patch = finalizer_patch(meta.resource_version.as_deref().unwrap_or(""), &remaining);
    match api.patch(&item.name, &PostParams::default(), &patch).await {
        Ok(_) => Ok(()),
        Err(e) if e.is_not_found() => Ok(()),
        Err(e) => Err(WorkError::api("patch", item, e)),
    }
}

/// The merge patch setting the finalizers to `remaining`, only at `resource_version`.
pub fn finalizer_patch(resource_version: &str, remaining: &[&String]) -> Patch {
    let finalizers: Value = if remaining.is_empty() {
        Value::Null
    } else {
        json!(remaining)
    };
    Patch::Merge(json!({
        "metadata": {"resourceVersion": resource_version, "finalizers": finalizers}
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(uid: &str) -> OwnerReference {
        OwnerReference {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: format!("cm-{uid}"),
            uid: uid.into(),
            ..Default::default()
        }
    }

    #[test]
    fn the_owners_patch_tests_uid_and_references_before_writing() {
        let patch = owners_patch("d", &[reference("a"), reference("b")], &[reference("b")]);
        let body = patch.body();
        assert_eq!(patch.content_type(), "application/json-patch+json");
        assert_eq!(body[0]["path"], "/metadata/uid");
        assert_eq!(body[1]["op"], "test");
        assert_eq!(body[1]["value"][0]["uid"], "a");
        assert_eq!(body[2]["op"], "replace");
        assert_eq!(body[2]["value"].as_array().map(Vec::len), Some(1));
        let patch = owners_patch("d", &[reference("a")], &[]);
        assert_eq!(patch.body()[2]["op"], "remove");
    }

    #[test]
    fn the_finalizer_patch_carries_the_resource_version() {
        let other = "example.com/keep".to_string();
        let patch = finalizer_patch("42", &[&other]);
        assert_eq!(
            patch.body(),
            &json!({"metadata": {"resourceVersion": "42", "finalizers": ["example.com/keep"]}})
        );
        assert_eq!(
            finalizer_patch("42", &[]).body()["metadata"]["finalizers"],
            Value::Null
        );
    }

    #[test]
    fn deletes_carry_both_preconditions() {
        let options = guarded(PropagationPolicy::Background, "u", "7");
        let pre = options.preconditions.unwrap_or_default();
        assert_eq!(pre.uid.as_deref(), Some("u"));
        assert_eq!(pre.resource_version.as_deref(), Some("7"));
        assert!(guarded(PropagationPolicy::Background, "u", "")
            .preconditions
            .is_some_and(|p| p.resource_version.is_none()));
    }
}
