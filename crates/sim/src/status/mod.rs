//! Builders of the `Status` bodies a real kube-apiserver sends when a request fails (and for
//! the few successes that answer with a `Status`, like a Background delete).
//!
//! Contract: every builder returns `(http::StatusCode, serde_json::Value)` where the value is,
//! field for field, the body a v1.28 kube-apiserver sends in the same situation (checked against
//! the captures in `fixtures/real-apiserver/exchanges` by `tests.rs`). The server only has
//! to serialize the value; it never assembles a `Status` by hand.
//!
//! The shapes follow apimachinery's `metav1.Status`, whose optional fields are all `omitempty`:
//! an empty `details.group` (the core group), an empty name, no causes or a zero
//! `retryAfterSeconds` are left out, and `details` itself is absent unless the upstream error
//! sets it. Messages are Go format strings in upstream; names are quoted the way Go's `%q` quotes
//! them, which for Kubernetes names is the same as JSON string quoting.

use http::StatusCode;
use serde_json::{json, Map, Value};

mod names;
#[cfg(test)]
mod tests;

use kube_gc_core::field_errors::quote;
pub use kube_gc_core::field_errors::{aggregate_causes, Cause, CauseType};
pub use names::{GroupKind, GroupResource};

/// The message of a list whose `continue` token was compacted away (exchange 53).
pub const CONTINUE_EXPIRED_MESSAGE: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

/// The message of a list at an exact resourceVersion that was compacted away (exchange 54).
pub const LIST_RESOURCE_VERSION_EXPIRED_MESSAGE: &str =
    "The resourceVersion for the provided list is too old.";

/// The patch types a custom resource accepts; anything else (strategic merge) gets a 415
/// naming these (exchange 49).
pub const CUSTOM_RESOURCE_PATCH_TYPES: [&str; 3] = [
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
];

/// The message of a watch that starts before the oldest event the server still holds
/// (exchange 55): `too old resource version: 300 (557)`.
pub fn too_old_resource_version_message(requested: u64, oldest_available: u64) -> String {
    format!("too old resource version: {requested} ({oldest_available})")
}

/// A `Status` with `status: Failure`. `details` is left out when `None`, as upstream leaves out
/// a nil `*StatusDetails`.
fn failure(code: StatusCode, reason: &str, message: &str, details: Option<Value>) -> Value {
    let mut body = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code.as_u16(),
    });
    if let (Some(details), Value::Object(map)) = (details, &mut body) {
        map.insert("details".to_owned(), details);
    }
    body
}

/// `StatusDetails` naming one object: empty group and name are omitted, like upstream's
/// `omitempty`. `kind` holds a resource or a kind, depending on the error.
fn details(group: &str, kind: &str, name: &str) -> Map<String, Value> {
    let mut map = Map::new();
    if !name.is_empty() {
        map.insert("name".to_owned(), Value::from(name));
    }
    if !group.is_empty() {
        map.insert("group".to_owned(), Value::from(group));
    }
    if !kind.is_empty() {
        map.insert("kind".to_owned(), Value::from(kind));
    }
    map
}

fn resource_details(gr: &GroupResource, name: &str) -> Value {
    Value::Object(details(&gr.group, &gr.resource, name))
}

/// 404 `NotFound`: `jobs.batch "nope" not found` (exchanges 13, 31).
pub fn not_found(gr: &GroupResource, name: &str) -> (StatusCode, Value) {
    let code = StatusCode::NOT_FOUND;
    let message = format!("{gr} {} not found", quote(name));
    let body = failure(code, "NotFound", &message, Some(resource_details(gr, name)));
    (code, body)
}

/// 404 for a path that names no resource the server serves (upstream's generic
/// "the server could not find the requested resource", with empty details).
pub fn not_found_path() -> (StatusCode, Value) {
    let code = StatusCode::NOT_FOUND;
    let message = "the server could not find the requested resource";
    (code, failure(code, "NotFound", message, Some(json!({}))))
}

/// 403 `Forbidden` as the authorization filter answers a request RBAC denies:
/// `jobs.batch "pi" is forbidden: User "bob" cannot delete resource "jobs" in API group "batch"
/// in the namespace "ns"` (`at the cluster scope` when `namespace` is `None`; no quoted name for
/// collection requests, where `name` is empty; exchanges 200–206). A subresource is named in the
/// sentence (`resource "jobs/status"`) but not in the group-qualified resource that starts it.
pub fn forbidden(
    gr: &GroupResource,
    subresource: Option<&str>,
    name: &str,
    user: &str,
    verb: &str,
    namespace: Option<&str>,
) -> (StatusCode, Value) {
    let code = StatusCode::FORBIDDEN;
    let scope = match namespace {
        Some(ns) => format!("in the namespace {}", quote(ns)),
        None => "at the cluster scope".to_owned(),
    };
    let resource = match subresource {
        Some(sub) => format!("{}/{sub}", gr.resource),
        None => gr.resource.clone(),
    };
    let why = format!(
        "User {} cannot {verb} resource {} in API group {} {scope}",
        quote(user),
        quote(&resource),
        quote(&gr.group)
    );
    // Upstream escapes these so the message cannot pass for HTML.
    let why = why
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    let message = if name.is_empty() {
        format!("{gr} is forbidden: {why}")
    } else {
        format!("{gr} {} is forbidden: {why}", quote(name))
    };
    let body = failure(
        code,
        "Forbidden",
        &message,
        Some(resource_details(gr, name)),
    );
    (code, body)
}

/// 403 `Forbidden` as the `NamespaceLifecycle` admission plugin refuses a create in a namespace
/// being deleted: `configmaps "x" is forbidden: unable to create new content in namespace ns
/// because it is being terminated`, with one cause `NamespaceTerminating` on
/// `metadata.namespace` (exchange 143).
pub fn namespace_terminating(
    gr: &GroupResource,
    name: &str,
    namespace: &str,
) -> (StatusCode, Value) {
    let code = StatusCode::FORBIDDEN;
    let message = format!(
        "{gr} {} is forbidden: unable to create new content in namespace {namespace} because it is being terminated",
        quote(name)
    );
    let mut details = details(&gr.group, &gr.resource, name);
    details.insert(
        "causes".to_owned(),
        json!([{
            "reason": "NamespaceTerminating",
            "message": format!("namespace {namespace} is being terminated"),
            "field": "metadata.namespace",
        }]),
    );
    let body = failure(code, "Forbidden", &message, Some(Value::Object(details)));
    (code, body)
}

/// 409 `AlreadyExists`: `jobs.batch "pi" already exists` (exchange 10).
pub fn already_exists(gr: &GroupResource, name: &str) -> (StatusCode, Value) {
    let code = StatusCode::CONFLICT;
    let message = format!("{gr} {} already exists", quote(name));
    let body = failure(
        code,
        "AlreadyExists",
        &message,
        Some(resource_details(gr, name)),
    );
    (code, body)
}

/// 409 `Conflict` in upstream's `NewConflict` form: `Operation cannot be fulfilled on <what>
/// "<name>": <why>`. `group`/`kind_or_resource` fill the details.
fn conflict(group: &str, kind_or_resource: &str, what: &str, name: &str, why: &str) -> Value {
    let message = format!(
        "Operation cannot be fulfilled on {what} {}: {why}",
        quote(name)
    );
    let details = Value::Object(details(group, kind_or_resource, name));
    failure(StatusCode::CONFLICT, "Conflict", &message, Some(details))
}

/// 409 `Conflict` for an update carrying a stale resourceVersion (exchanges 36, 44).
pub fn conflict_modified(gr: &GroupResource, name: &str) -> (StatusCode, Value) {
    let why = "the object has been modified; please apply your changes to the latest version and try again";
    let body = conflict(&gr.group, &gr.resource, &gr.to_string(), name, why);
    (StatusCode::CONFLICT, body)
}

/// 409 `Conflict` for a delete whose UID precondition does not match (exchange 24). Upstream
/// names the object by its kind here (`Job.batch`), not its resource.
pub fn precondition_failed_uid(
    gk: &GroupKind,
    name: &str,
    expected: &str,
    actual: &str,
) -> (StatusCode, Value) {
    let why = format!(
        "the UID in the precondition ({expected}) does not match the UID in record ({actual}). The object might have been deleted and then recreated"
    );
    let body = conflict(&gk.group, &gk.kind, &gk.to_string(), name, &why);
    (StatusCode::CONFLICT, body)
}

/// 409 `Conflict` for a delete whose resourceVersion precondition does not match; same shape
/// as [`precondition_failed_uid`].
pub fn precondition_failed_rv(
    gk: &GroupKind,
    name: &str,
    expected: &str,
    actual: &str,
) -> (StatusCode, Value) {
    let why = format!(
        "the ResourceVersion in the precondition ({expected}) does not match the ResourceVersion in record ({actual}). The object might have been modified"
    );
    let body = conflict(&gk.group, &gk.kind, &gk.to_string(), name, &why);
    (StatusCode::CONFLICT, body)
}

/// 409 `Conflict` for an update (PUT or PATCH) whose body carries a `metadata.uid` different
/// from the stored object's. Upstream fails the storage precondition and wraps the storage error
/// verbatim, etcd key included: `Operation cannot be fulfilled on configmaps "x": StorageError:
/// invalid object, Code: 4, Key: /registry/configmaps/ns/x, ResourceVersion: 0,
/// AdditionalErrorMsg: Precondition failed: UID in precondition: <body uid>, UID in object meta:
/// <stored uid>`. `namespace` is `None` for cluster-scoped resources.
pub fn conflict_precondition_uid_update(
    gr: &GroupResource,
    namespace: Option<&str>,
    name: &str,
    precondition_uid: &str,
    object_uid: &str,
) -> (StatusCode, Value) {
    let key = storage_key(gr, namespace, name);
    let why = format!(
        "StorageError: invalid object, Code: 4, Key: {key}, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: {precondition_uid}, UID in object meta: {object_uid}"
    );
    let body = conflict(&gr.group, &gr.resource, &gr.to_string(), name, &why);
    (StatusCode::CONFLICT, body)
}

/// The etcd key kube-apiserver stores an object under: built-in resources (core group, the
/// short built-in groups and `*.k8s.io`) as `/registry/<resource>/...`, custom resources as
/// `/registry/<group>/<resource>/...`.
fn storage_key(gr: &GroupResource, namespace: Option<&str>, name: &str) -> String {
    const BUILT_IN_GROUPS: [&str; 5] = ["", "apps", "batch", "autoscaling", "policy"];
    let built_in = BUILT_IN_GROUPS.contains(&gr.group.as_str()) || gr.group.ends_with(".k8s.io");
    let mut key = String::from("/registry/");
    if !built_in {
        key.push_str(&gr.group);
        key.push('/');
    }
    key.push_str(&gr.resource);
    if let Some(namespace) = namespace {
        key.push('/');
        key.push_str(namespace);
    }
    key.push('/');
    key.push_str(name);
    key
}

/// 504 `Timeout` for a read at a resourceVersion newer than the server has (upstream's
/// `NewTooLargeResourceVersionError`): from the watch cache it asks the client to retry after a
/// second, from etcd it asks for nothing (0).
pub fn too_large_resource_version(
    requested: u64,
    current: u64,
    retry_after_seconds: u64,
) -> (StatusCode, Value) {
    let code = StatusCode::GATEWAY_TIMEOUT;
    let message = format!("Timeout: Too large resource version: {requested}, current: {current}");
    let mut details = json!({
        "causes": [{ "reason": "ResourceVersionTooLarge", "message": "Too large resource version" }],
    });
    // apimachinery's NewTimeoutError leaves a zero retryAfterSeconds out.
    if retry_after_seconds > 0 {
        details["retryAfterSeconds"] = json!(retry_after_seconds);
    }
    (code, failure(code, "Timeout", &message, Some(details)))
}

/// 422 `Invalid` with field causes: `ConfigMap "bad" is invalid: <causes>` (exchange 35).
/// Several causes are listed as `[a, b]`, like Go's aggregated error.
pub fn invalid(gk: &GroupKind, name: &str, causes: &[Cause]) -> (StatusCode, Value) {
    let code = StatusCode::UNPROCESSABLE_ENTITY;
    let mut message = format!("{gk} {} is invalid", quote(name));
    if let Some(listed) = aggregate_causes(causes) {
        message.push_str(": ");
        message.push_str(&listed);
    }
    let mut details = details(&gk.group, &gk.kind, name);
    if !causes.is_empty() {
        let causes = causes.iter().map(Cause::to_json).collect();
        details.insert("causes".to_owned(), Value::Array(causes));
    }
    let body = failure(code, "Invalid", &message, Some(Value::Object(details)));
    (code, body)
}

/// 422 `Invalid` with no details, what the server answers when applying a patch fails, e.g. a
/// JSON patch `test` operation that does not hold (exchange 37).
pub fn patch_rejected() -> (StatusCode, Value) {
    generic_failure(StatusCode::UNPROCESSABLE_ENTITY, "")
}

/// The `Status` upstream's `NewGenericServerResponse` builds for a bare HTTP status: the reason
/// and stock message that go with the code, and empty details. The server uses it itself where
/// it has nothing more specific to say (exchange 37 is the 422 case), and it suits injected
/// faults of any status. `server_message` is only used where upstream uses it: as the whole
/// message of a 403, 406 or 415, and quoted inside the message of an unlisted 5xx.
pub fn generic_failure(code: StatusCode, server_message: &str) -> (StatusCode, Value) {
    let number = code.as_u16();
    let stock = STOCK_ANSWERS.iter().find(|(c, _, _)| *c == number);
    let (reason, message) = match (stock, number) {
        (Some((_, reason, message)), _) => (*reason, (*message).to_owned()),
        (None, 403) => ("Forbidden", server_message.to_owned()),
        (None, 406) => ("NotAcceptable", server_message.to_owned()),
        (None, 415) => ("UnsupportedMediaType", server_message.to_owned()),
        (None, 500..=599) => {
            let quoted = quote(server_message);
            let text = format!(
                "an error on the server ({quoted}) has prevented the request from succeeding"
            );
            ("InternalError", text)
        }
        (None, other) => {
            let text = format!("the server responded with the status code {other} but did not return more information");
            ("Unknown", text)
        }
    };
    (code, failure(code, reason, &message, Some(json!({}))))
}

/// The reason and fixed message upstream's `NewGenericServerResponse` pairs with each status.
const STOCK_ANSWERS: [(u16, &str, &str); 9] = [
    (400, "BadRequest", "the server rejected our request for an unknown reason"),
    (401, "Unauthorized", "the server has asked for the client to provide credentials"),
    (404, "NotFound", "the server could not find the requested resource"),
    (405, "MethodNotAllowed", "the server does not allow this method on the requested resource"),
    (409, "Conflict", "the server reported a conflict"),
    (422, "Invalid", "the server rejected our request due to an error in our request"),
    (429, "TooManyRequests", "the server has received too many requests and has asked us to try again later"),
    (503, "ServiceUnavailable", "the server is currently unable to handle the request"),
    (504, "Timeout", "the server was unable to return a response in the time allotted, but may still be processing the request"),
];

/// 400 `BadRequest` with the given message and no details (exchange 16).
pub fn bad_request(message: &str) -> (StatusCode, Value) {
    let code = StatusCode::BAD_REQUEST;
    (code, failure(code, "BadRequest", message, None))
}

/// 410 `Expired`. `fresh_continue`, when given, goes to `metadata.continue`, as the server does
/// for a compacted continue token so the client can carry on inconsistently (exchanges 53, 54).
pub fn gone_expired(message: &str, fresh_continue: Option<String>) -> (StatusCode, Value) {
    let code = StatusCode::GONE;
    let mut body = failure(code, "Expired", message, None);
    if let Some(token) = fresh_continue {
        body["metadata"] = json!({ "continue": token });
    }
    (code, body)
}

/// 401 `Unauthorized` (exchange 41).
pub fn unauthorized() -> (StatusCode, Value) {
    let code = StatusCode::UNAUTHORIZED;
    (code, failure(code, "Unauthorized", "Unauthorized", None))
}

/// The plain-text body of the 429 that the real server's max-in-flight and
/// priority-and-fairness filters send (Go's `http.Error`: `Content-Type: text/plain;
/// charset=utf-8`, `X-Content-Type-Options: nosniff`, and a `Retry-After` header). Clients must
/// cope with a 429 that is not a `Status`.
pub const THROTTLED_PLAIN_TEXT_BODY: &str = "Too many requests, please try again later.\n";

/// 429 `TooManyRequests` with `details.retryAfterSeconds`, upstream's `NewTooManyRequests`.
/// (The real server's priority-and-fairness filter answers 429 in plain text with a
/// `Retry-After` header; the `Status` form is what clients must handle from other sources, and
/// the server should send the header too.)
pub fn too_many_requests(retry_after_seconds: u64) -> (StatusCode, Value) {
    let code = StatusCode::TOO_MANY_REQUESTS;
    let message = "Too many requests, please try again later.";
    let mut details = Map::new();
    if retry_after_seconds > 0 {
        details.insert(
            "retryAfterSeconds".to_owned(),
            Value::from(retry_after_seconds),
        );
    }
    let body = failure(
        code,
        "TooManyRequests",
        message,
        Some(Value::Object(details)),
    );
    (code, body)
}

/// 500 `InternalError`: `Internal error occurred: <msg>`, the message repeated as a cause.
pub fn internal_error(message: &str) -> (StatusCode, Value) {
    let code = StatusCode::INTERNAL_SERVER_ERROR;
    let text = format!("Internal error occurred: {message}");
    let details = json!({ "causes": [{ "message": message }] });
    (code, failure(code, "InternalError", &text, Some(details)))
}

/// etcd's refusal of a read at a revision it has not reached, passed through by the API server
/// untranslated: 500 with etcd's message and no reason (exchange 63).
pub fn etcd_future_revision() -> (StatusCode, Value) {
    let code = StatusCode::INTERNAL_SERVER_ERROR;
    let mut body = failure(
        code,
        "",
        "etcdserver: mvcc: required revision is a future revision",
        None,
    );
    if let Value::Object(map) = &mut body {
        map.remove("reason");
    }
    (code, body)
}

/// 500 with no reason and `message` alone: what upstream answers for an error that is not a
/// `Status` of its own, such as a DeleteOptions body its decoder refused (exchange 256).
pub fn unknown_failure(message: &str) -> (StatusCode, Value) {
    let code = StatusCode::INTERNAL_SERVER_ERROR;
    let mut body = failure(code, "", message, None);
    if let Value::Object(map) = &mut body {
        map.remove("reason");
    }
    (code, body)
}

/// 504 `Timeout` of a request that did not finish by its deadline (etcd down: exchange 77).
pub fn request_deadline_exceeded() -> (StatusCode, Value) {
    let code = StatusCode::GATEWAY_TIMEOUT;
    let message =
        "Timeout: request did not complete within requested timeout - context deadline exceeded";
    (code, failure(code, "Timeout", message, Some(json!({}))))
}

/// 503 `ServiceUnavailable` with the given message.
pub fn service_unavailable(message: &str) -> (StatusCode, Value) {
    let code = StatusCode::SERVICE_UNAVAILABLE;
    (code, failure(code, "ServiceUnavailable", message, None))
}

/// 415 `UnsupportedMediaType` listing the media types that would have been accepted
/// (exchange 49; pass [`CUSTOM_RESOURCE_PATCH_TYPES`] for a strategic patch of a custom
/// resource). Upstream names the accepted types, not the rejected one.
pub fn unsupported_media_type(accepted: &[&str]) -> (StatusCode, Value) {
    let code = StatusCode::UNSUPPORTED_MEDIA_TYPE;
    let message = format!(
        "the body of the request was in an unknown format - accepted media types include: {}",
        accepted.join(", ")
    );
    (code, failure(code, "UnsupportedMediaType", &message, None))
}

/// 406 `NotAcceptable`: no media type the request accepts can be produced (exchange 96).
pub fn not_acceptable() -> (StatusCode, Value) {
    let code = StatusCode::NOT_ACCEPTABLE;
    let message = "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf";
    (code, failure(code, "NotAcceptable", message, None))
}

/// 405 `MethodNotAllowed`: `<action> is not supported on resources of kind "jobs.batch"`.
pub fn method_not_allowed(gr: &GroupResource, action: &str) -> (StatusCode, Value) {
    let code = StatusCode::METHOD_NOT_ALLOWED;
    let message = format!(
        "{action} is not supported on resources of kind {}",
        quote(&gr.to_string())
    );
    let body = failure(
        code,
        "MethodNotAllowed",
        &message,
        Some(resource_details(gr, "")),
    );
    (code, body)
}

/// 200 `Success` for a delete that removed the object at once (exchange 29): the server
/// answers with this `Status` instead of the object.
pub fn success_deleted(gr: &GroupResource, name: &str, uid: &str) -> (StatusCode, Value) {
    let mut details = details(&gr.group, &gr.resource, name);
    details.insert("uid".to_owned(), Value::from(uid));
    let body = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    });
    (StatusCode::OK, body)
}

/// The watch-stream line that carries an error: `{"type":"ERROR","object":<Status>}`
/// (exchange 55). The HTTP status of such a watch is still 200.
pub fn watch_error_event(status_body: Value) -> Value {
    json!({ "type": "ERROR", "object": status_body })
}
