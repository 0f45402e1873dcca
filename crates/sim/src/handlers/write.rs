//! POST, PUT, PATCH and DELETE of objects.
//!
//! Contract: each handler decodes what the client sent (an object or DeleteOptions in JSON or,
//! as client-go's typed clients send them, in protobuf — [`crate::request_body`], exchanges
//! 242, 253, 256–270, 289–293 —, a patch document of one of the supported media types,
//! DeleteOptions from the body and/or query) and hands it to the store, answering as the real
//! server does: 201 with the object on create, 200 with the object on update/patch, and on
//! delete either a `Status` Success (the object is gone, exchange 29) or the object still marked
//! for deletion (exchanges 25, 30, 32). Answers are negotiated before anything is written (406
//! then changes nothing) and written in protobuf where the client accepts it first and the
//! kind has a table (242, 253, 263, 266, 268, 289–293; a custom resource's success `Status` is
//! JSON whatever was accepted, 255 and 269); a DELETE of a collection
//! (`deletecollection`) deletes each object it matches and answers them as a list. Strategic merge patch is refused for
//! custom resources (415, exchange 49), a PATCH labelled protobuf is refused by a built-in
//! resource's route before its handler sees it (415 `415: Unsupported Media Type`, exchange 258),
//! and server-side apply (`application/apply-patch+yaml`) is
//! not implemented (415). Every handler honours `dryRun=All`. Creating and deleting a
//! CustomResourceDefinition also serves and unserves its resource ([`crds`]).

use http::header::{HeaderValue, ACCEPT, CONTENT_TYPE};
use http::{Response, StatusCode};
use serde_json::Value;

use super::encoding::{self, Encoding, Media};
use super::errors::HandlerError;
use super::protobuf;
use super::read::{object_response, protobuf_answer};
use super::response::{self, Body, Representation};
use super::route::Target;
use super::{Context, Incoming};
use crate::crds;
use crate::patch::{apply_json_patch, apply_merge_patch, apply_strategic_merge_patch};
use crate::request_body::{self, BodyMedia};
use crate::resources::ResourceDef;
use crate::status::{self, Cause, CauseType, GroupKind, CUSTOM_RESOURCE_PATCH_TYPES};
use crate::store::{DeleteOptions, DeleteOutcome, Propagation, UpdateTarget};

/// The patch media types of built-in resources, as a 415 lists them.
const BUILT_IN_PATCH_TYPES: [&str; 3] = [
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
];

/// The warning a v1.28 server adds when a batch/v1 Job is deleted without a policy (exchange 32).
const JOB_ORPHAN_WARNING: &str = "299 - \"child pods are preserved by default when jobs are deleted; set propagationPolicy=Background to remove them or set propagationPolicy=Orphan to suppress this warning\"";

/// POST: create an object.
pub fn create(
    ctx: &Context,
    incoming: &Incoming,
    target: &Target,
) -> Result<Response<Body>, HandlerError> {
    let def = ctx.store.resources().def(target.resource);
    let encoding = answer_encoding(incoming, def)?;
    let obj = object_body(incoming, def)?;
    let created = if crds::is_definitions(def) {
        crds::create(
            &ctx.store,
            &ctx.unserved,
            target.resource,
            obj,
            incoming.dry_run(),
        )?
    } else {
        ctx.store.create(
            target.resource,
            target.namespace.as_deref(),
            obj,
            incoming.dry_run(),
        )?
    };
    object_response(def, encoding, StatusCode::CREATED, &created)
}

/// PUT: replace an object (or its status).
pub fn update(
    ctx: &Context,
    incoming: &Incoming,
    target: &Target,
) -> Result<Response<Body>, HandlerError> {
    let def = ctx.store.resources().def(target.resource);
    let encoding = answer_encoding(incoming, def)?;
    let obj = object_body(incoming, def)?;
    let updated = ctx.store.update(
        target.resource,
        target.namespace.as_deref(),
        target.name.as_deref().unwrap_or_default(),
        obj,
        update_target(target),
        incoming.dry_run(),
    )?;
    object_response(def, encoding, StatusCode::OK, &updated)
}

/// PATCH: change an object (or its status) with a merge, JSON or strategic merge patch.
pub fn patch(
    ctx: &Context,
    incoming: &Incoming,
    target: &Target,
) -> Result<Response<Body>, HandlerError> {
    let def = ctx.store.resources().def(target.resource);
    let encoding = answer_encoding(incoming, def)?;
    let kind = patch_kind(def, incoming.header(CONTENT_TYPE))?;
    let document: Value = serde_json::from_slice(&incoming.body)
        .map_err(|e| HandlerError::bad_request(format!("error decoding patch: {e}")))?;
    let patched = ctx.store.patch::<HandlerError>(
        target.resource,
        target.namespace.as_deref(),
        target.name.as_deref().unwrap_or_default(),
        update_target(target),
        incoming.dry_run(),
        |obj| {
            match kind {
                PatchKind::Merge => apply_merge_patch(obj, &document),
                PatchKind::Json => apply_json_patch(obj, &document)?,
                PatchKind::Strategic => apply_strategic_merge_patch(obj, &document)?,
            }
            Ok(())
        },
    )?;
    object_response(def, encoding, StatusCode::OK, &patched)
}

/// DELETE: delete an object following its DeleteOptions.
pub fn delete(
    ctx: &Context,
    incoming: &Incoming,
    target: &Target,
) -> Result<Response<Body>, HandlerError> {
    let def = ctx.store.resources().def(target.resource);
    let encoding = answer_encoding(incoming, def)?;
    let options = delete_options(incoming)?;
    let name = target.name.as_deref().unwrap_or_default();
    let outcome = if crds::is_definitions(def) {
        crds::delete(&ctx.store, &ctx.unserved, target.resource, name, &options)?
    } else {
        ctx.store
            .delete(target.resource, target.namespace.as_deref(), name, &options)?
    };
    let mut response = match outcome {
        // Pods, Namespaces and a few more answer with what they deleted (exchange 67).
        DeleteOutcome::Deleted(last) if def.returns_deleted_object => {
            stamped_response(def, encoding, &last)?
        }
        DeleteOutcome::Deleted(last) => {
            let uid = crate::object::uid(last.object()).unwrap_or_default();
            let success = status::success_deleted(&def.group_resource(), name, uid);
            success_response(incoming, def, success)
        }
        DeleteOutcome::Pending(obj) => {
            // The API server answers 202 only when the client explicitly asked not to orphan.
            let code = if options.orphan_dependents == Some(false) {
                StatusCode::ACCEPTED
            } else {
                StatusCode::OK
            };
            object_response(def, encoding, code, &obj)?
        }
    };
    let defaulted = options.propagation.is_none() && options.orphan_dependents.is_none();
    if defaulted && def.group == "batch" && def.version == "v1" && def.resource == "jobs" {
        response
            .headers_mut()
            .insert("warning", HeaderValue::from_static(JOB_ORPHAN_WARNING));
    }
    Ok(response)
}

/// DELETE of a collection (`deletecollection`): every object the namespace and the label and
/// field selectors match, deleted as its own DELETE would be; the answer is the list of them
/// as they were before, at the list's resourceVersion, `items: null` when there were none
/// (exchanges 147, 149, 150).
pub fn delete_collection(
    ctx: &Context,
    incoming: &Incoming,
    target: &Target,
) -> Result<Response<Body>, HandlerError> {
    let def = ctx.store.resources().def(target.resource);
    let options = delete_options(incoming)?;
    let filter = super::read::request_filter(incoming, target, def)?;
    let deleted = ctx
        .store
        .delete_collection(target.resource, &filter, &options)?;
    let representation = Representation::from_accept(incoming.header(ACCEPT));
    let page = crate::store::ListPage {
        items: deleted.items,
        resource_version: deleted.resource_version,
        continue_token: None,
        remaining_item_count: None,
    };
    let mut document = serde_json::to_value(response::ListDocument {
        def,
        page: &page,
        representation,
    })
    .map_err(|e| HandlerError::Status(status::internal_error(&e.to_string())))?;
    if page.items.is_empty() {
        // Upstream builds the answer by appending to a nil slice.
        document["items"] = Value::Null;
    }
    Ok(response::json(StatusCode::OK, &document))
}

fn update_target(target: &Target) -> UpdateTarget {
    match target.subresource.as_deref() {
        Some("status") => UpdateTarget::Status,
        Some("finalize") => UpdateTarget::Finalize,
        _ => UpdateTarget::Main,
    }
}

/// The object a create or update sent, in JSON or protobuf as its `Content-Type` says.
fn object_body(incoming: &Incoming, def: &ResourceDef) -> Result<Value, HandlerError> {
    if BodyMedia::of(incoming.header(CONTENT_TYPE)) == BodyMedia::Protobuf {
        let expected = (def.api_version(), def.kind.clone());
        return request_body::protobuf_object(&incoming.body, (&expected.0, &expected.1))
            .map_err(|e| HandlerError::Status(e.status()));
    }
    match incoming.json_body() {
        Ok(Some(obj)) if obj.is_object() => Ok(obj),
        Ok(_) => Err(HandlerError::bad_request(
            "the body of the request must be a JSON object",
        )),
        Err(e) => Err(HandlerError::bad_request(format!(
            "couldn't get version/kind; json parse error: {e}"
        ))),
    }
}

/// How the answer will be written; 406 before anything is written when nothing acceptable
/// can be (upstream negotiates the output before it decodes the body).
fn answer_encoding(incoming: &Incoming, def: &ResourceDef) -> Result<Encoding, HandlerError> {
    match encoding::for_resource(incoming.header(ACCEPT), def) {
        Encoding::NotAcceptable => Err(HandlerError::Status(status::not_acceptable())),
        chosen => Ok(chosen),
    }
}

/// A deleted object as a DELETE answers it (Pods, Namespaces, …: exchange 67).
fn stamped_response(
    def: &ResourceDef,
    encoding: Encoding,
    last: &crate::stamped::Stamped,
) -> Result<Response<Body>, HandlerError> {
    let code = StatusCode::OK;
    match encoding {
        Encoding::Protobuf {
            representation,
            fallback,
        } => protobuf_answer(
            code,
            protobuf::stamped(def, representation, last),
            fallback,
            |r| response::json(code, &r.stamped(last)),
        ),
        Encoding::Json(representation) => Ok(response::json(code, &representation.stamped(last))),
        Encoding::NotAcceptable => Err(HandlerError::Status(status::not_acceptable())),
    }
}

/// A DELETE's `Success` Status: in protobuf when the client asks for it first and the resource
/// is built in (exchange 266); a custom resource's is JSON whatever was accepted (255, 269).
fn success_response(
    incoming: &Incoming,
    def: &ResourceDef,
    (code, body): (StatusCode, Value),
) -> Response<Body> {
    let wants_protobuf = encoding::status_media(incoming.header(ACCEPT)) == Media::Protobuf;
    if wants_protobuf && !def.is_custom {
        if let Ok(bytes) = protobuf::status(&body) {
            return response::protobuf_bytes(code, bytes);
        }
    }
    response::json(code, &body)
}

#[derive(Debug, Clone, Copy)]
enum PatchKind {
    Merge,
    Json,
    Strategic,
}

fn patch_kind(def: &ResourceDef, content_type: Option<&str>) -> Result<PatchKind, HandlerError> {
    let essence = content_type
        .and_then(|c| c.split(';').next())
        .map(str::trim)
        .unwrap_or_default();
    let accepted: &[&str] = if def.is_custom {
        &CUSTOM_RESOURCE_PATCH_TYPES
    } else {
        &BUILT_IN_PATCH_TYPES
    };
    match essence {
        "application/merge-patch+json" => Ok(PatchKind::Merge),
        "application/json-patch+json" => Ok(PatchKind::Json),
        "application/strategic-merge-patch+json" if !def.is_custom => Ok(PatchKind::Strategic),
        // A built-in resource's PATCH route consumes the patch types (and apply) only; its web
        // framework refuses anything else before the handler runs (exchange 258).
        other if !def.is_custom && !other.starts_with("application/apply-patch") => {
            Err(HandlerError::Status(status::generic_failure(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "415: Unsupported Media Type",
            )))
        }
        _ => Err(HandlerError::Status(status::unsupported_media_type(
            accepted,
        ))),
    }
}

/// DeleteOptions from the body, overridden by query parameters, as the real server merges them.
fn delete_options(incoming: &Incoming) -> Result<DeleteOptions, HandlerError> {
    let body = if BodyMedia::of(incoming.header(CONTENT_TYPE)) == BodyMedia::Protobuf {
        request_body::protobuf_delete_options(&incoming.body)
            .map_err(|e| HandlerError::Status(e.status()))?
    } else {
        incoming
            .json_body()
            .map_err(|e| HandlerError::bad_request(format!("invalid DeleteOptions: {e}")))?
    }
    .unwrap_or(Value::Null);
    let text = |v: &Value| v.as_str().map(str::to_string);
    let mut policy = body.get("propagationPolicy").and_then(text);
    let mut orphan = body.get("orphanDependents").and_then(Value::as_bool);
    let preconditions = body.get("preconditions");
    let mut dry_run = body
        .get("dryRun")
        .and_then(Value::as_array)
        .is_some_and(|modes| modes.iter().any(|m| m == "All"));
    if let Some(p) = incoming.query("propagationPolicy") {
        policy = Some(p.to_string());
    }
    if let Some(o) = incoming.query("orphanDependents") {
        orphan = Some(o == "true");
    }
    dry_run |= incoming.dry_run();
    let mut grace_period_seconds = body.get("gracePeriodSeconds").and_then(Value::as_i64);
    if let Some(text) = incoming.query("gracePeriodSeconds") {
        let period = text.parse().map_err(|_| {
            HandlerError::bad_request(format!("invalid gracePeriodSeconds {text:?}"))
        })?;
        grace_period_seconds = Some(period);
    }
    let propagation = match policy.as_deref() {
        None | Some("") => None,
        Some(p) => Some(Propagation::parse(p).ok_or_else(|| unsupported_policy(p))?),
    };
    Ok(DeleteOptions {
        propagation,
        orphan_dependents: orphan,
        precondition_uid: preconditions.and_then(|p| p.get("uid")).and_then(text),
        precondition_resource_version: preconditions
            .and_then(|p| p.get("resourceVersion"))
            .and_then(text),
        dry_run,
        grace_period_seconds,
    })
}

fn unsupported_policy(policy: &str) -> HandlerError {
    let cause = Cause {
        kind: CauseType::NotSupported,
        field: "propagationPolicy".to_string(),
        value: Value::from(policy),
        detail: "supported values: \"Foreground\", \"Background\", \"Orphan\"".to_string(),
    };
    HandlerError::Status(status::invalid(
        &GroupKind::new("meta.k8s.io", "DeleteOptions"),
        "",
        &[cause],
    ))
}
