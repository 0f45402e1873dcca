//! Every request the namespace controller makes, each with its guards, and what its answer
//! means for the decisions.
//!
//! Contract:
//! - A request the API server could not serve (no answer, 429, 5xx) is an `Err`: the namespace
//!   waits for the server ([`ServerWait`](kube_gc_runtime::controller::ServerWait)). Any other
//!   refusal is a [`Failure`] of the resource (403 marked `forbidden`), which blocks the
//!   finalize and is reported; a 404 of a collection means the resource is no longer served:
//!   nothing of it can hold the namespace.
//! - Deletions are Background, as upstream's (dependents go through the garbage collector);
//!   one by name carries the object's UID as precondition.
//! - The status write is a JSON merge patch of `status` guarded by the namespace's UID and
//!   resourceVersion; the finalize PUTs the namespace as it was judged — every field as read,
//!   `kubernetes` removed from `spec.finalizers` — so the server refuses it (409) if the
//!   namespace changed meanwhile, or is another one by the same name.

use serde_json::{json, Value};

use super::decide::{Failure, Known, Object, KUBERNETES_FINALIZER};
use kube_gc_api::{DeleteOptions, List, Namespace, NamespaceCondition, PartialObjectMetadata};
use kube_gc_client::{Api, Client, DynamicApi, Error, ListParams, Patch, PostParams, ResourceRef};

/// What a request on a resource came to, when the server answered.
#[derive(Debug)]
pub(super) enum Answer<T> {
    /// It did what was asked.
    Done(T),
    /// The resource is not served (404 on its collection).
    NotServed,
    /// The server refused or failed it: it blocks the finalize.
    Failed(Failure),
}

/// `Err` when the server could not serve the request (wait for it), else the answer.
fn answer<T>(result: Result<T, Error>, verb: &'static str) -> Result<Answer<T>, Error> {
    match result {
        Ok(done) => Ok(Answer::Done(done)),
        Err(error) if error.is_unavailable() => Err(error),
        Err(error) if error.is_not_found() => Ok(Answer::NotServed),
        Err(error) => Ok(Answer::Failed(Failure {
            verb,
            forbidden: error.is_forbidden(),
            message: error
                .status()
                .and_then(|s| s.message.clone())
                .unwrap_or_else(|| error.to_string()),
        })),
    }
}

fn content_api(client: &Client, resource: &ResourceRef, namespace: &str) -> DynamicApi {
    Api::dynamic(client.clone(), resource.clone(), Some(namespace))
}

fn object_of(item: &PartialObjectMetadata) -> Object {
    let meta = &item.metadata;
    Object {
        name: meta.name.clone().unwrap_or_default(),
        uid: meta.uid.clone().unwrap_or_default(),
        finalizers: meta.finalizers.clone(),
        deleting: meta.deletion_timestamp.is_some(),
    }
}

fn objects_of(list: &List<PartialObjectMetadata>) -> Vec<Object> {
    list.items.iter().map(object_of).collect()
}

/// One `deletecollection` (Background): the objects it deleted or marked, as they were.
pub(super) async fn delete_collection(
    client: &Client,
    resource: &ResourceRef,
    namespace: &str,
) -> Result<Answer<Vec<Object>>, Error> {
    let api = content_api(client, resource, namespace);
    let deleted = api
        .delete_collection(&ListParams::default(), &DeleteOptions::background())
        .await;
    Ok(match answer(deleted, "deletecollection")? {
        Answer::Done(list) => Answer::Done(objects_of(&list)),
        Answer::NotServed => Answer::NotServed,
        Answer::Failed(failure) => Answer::Failed(failure),
    })
}

/// A LIST of every object (metadata), then a DELETE (Background, UID precondition) of each
/// that is neither marked nor in `skip`: the objects asked to go.
pub(super) async fn delete_each(
    client: &Client,
    resource: &ResourceRef,
    namespace: &str,
    skip: &std::collections::HashSet<String>,
) -> Result<Answer<Vec<Object>>, Error> {
    let api = content_api(client, resource, namespace);
    let listed = match answer(api.list_metadata(&ListParams::default()).await, "list")? {
        Answer::Done(list) => objects_of(&list),
        Answer::NotServed => return Ok(Answer::NotServed),
        Answer::Failed(failure) => return Ok(Answer::Failed(failure)),
    };
    let mut asked = Vec::new();
    for object in listed
        .into_iter()
        .filter(|o| !o.deleting && !skip.contains(&o.uid))
    {
        let options = DeleteOptions::background().with_uid(object.uid.clone());
        match api.delete_for_metadata(&object.name, &options).await {
            // The UID precondition failed: another object by that name now, judged next time.
            Err(error) if error.is_conflict() => {}
            deleted => match answer(deleted, "delete")? {
                // Deleted or marked, or gone already.
                Answer::Done(_) | Answer::NotServed => asked.push(object),
                Answer::Failed(failure) => return Ok(Answer::Failed(failure)),
            },
        }
    }
    Ok(Answer::Done(asked))
}

/// One page of one object at most (metadata, no resourceVersion: read from etcd): what
/// remains, proven by the server.
pub(super) async fn list_page(
    client: &Client,
    resource: &ResourceRef,
    namespace: &str,
) -> Result<Answer<Known>, Error> {
    let api = content_api(client, resource, namespace);
    let page = api
        .list_metadata_page(&ListParams::default().with_limit(1))
        .await;
    Ok(match answer(page, "list")? {
        Answer::Done(list) => Answer::Done(Known::Listed {
            more: list.next_page().is_some(),
            objects: objects_of(&list),
        }),
        Answer::NotServed => Answer::NotServed,
        Answer::Failed(failure) => Answer::Failed(failure),
    })
}

/// Writes `conditions` (and phase `Terminating`) to the namespace's status, guarded by the UID
/// and resourceVersion of `judged`; answers the namespace as written.
pub(super) async fn write_conditions(
    client: &Client,
    judged: &Namespace,
    conditions: &[NamespaceCondition],
) -> Result<Value, Error> {
    let api: DynamicApi = Api::dynamic(client.clone(), namespaces(), None);
    let name = judged.metadata.name.as_deref().unwrap_or_default();
    let patch = json!({
        "metadata": {
            "uid": judged.metadata.uid,
            "resourceVersion": judged.metadata.resource_version,
        },
        "status": {"phase": Namespace::TERMINATING, "conditions": conditions},
    });
    api.patch_status(name, &PostParams::default(), &Patch::Merge(patch))
        .await
}

/// PUTs `raw` (the namespace as judged) to `/finalize` without `kubernetes` in its
/// `spec.finalizers`; answers the namespace as the server left it.
pub(super) async fn finalize(client: &Client, raw: &Value) -> Result<Value, Error> {
    let api: DynamicApi = Api::dynamic(client.clone(), namespaces(), None);
    let name = raw
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    api.replace_subresource(name, "finalize", &PostParams::default(), &without_ours(raw))
        .await
}

/// `raw` with `kubernetes` removed from `spec.finalizers`, every other field as read.
pub(super) fn without_ours(raw: &Value) -> Value {
    let mut body = raw.clone();
    if let Some(finalizers) = body
        .pointer_mut("/spec/finalizers")
        .and_then(Value::as_array_mut)
    {
        finalizers.retain(|f| f.as_str() != Some(KUBERNETES_FINALIZER));
    }
    body
}

/// GET of the namespace, `None` if it is gone.
pub(super) async fn get_namespace(client: &Client, name: &str) -> Result<Option<Value>, Error> {
    let api: DynamicApi = Api::dynamic(client.clone(), namespaces(), None);
    api.get_opt(name).await
}

/// Core `namespaces`.
pub(super) fn namespaces() -> ResourceRef {
    ResourceRef::new("", "v1", "namespaces", "Namespace", false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube_gc_fixtures::response_body as captured;

    #[test]
    fn the_finalize_body_is_the_namespace_as_read_less_our_finalizer() {
        let mut read: Value = captured("154-namespace-finalize-adds-and-ignores");
        let body = without_ours(&read);
        assert_eq!(
            body["spec"]["finalizers"],
            json!(["capture.kube-gc.io/other"])
        );
        // Everything else is sent back as read: the UID and resourceVersion guard the write.
        read["spec"]["finalizers"] = json!(["capture.kube-gc.io/other"]);
        assert_eq!(body, read);
    }
}
