//! GET of one object and LIST of a collection.
//!
//! Contract: a GET answers the stored object (in the media type and representation the
//! `Accept` header asks for, see [`encoding`]); GET of `/status` answers the same object. A
//! LIST turns the query (`labelSelector`, `fieldSelector`, `limit`, `continue`,
//! `resourceVersion`, `resourceVersionMatch`) into [`ListOptions`] and answers one page as
//! `<Kind>List` or `PartialObjectMetadataList`, streamed in JSON ([`ListBody`]) or whole in
//! protobuf; the semantics of each parameter are the store's (see `crate::store::list`).
//! Both negotiate after reading, as the real server fails to encode only then: a custom
//! resource asked for in protobuf alone is 404 when missing, 406 when there (exchange 109).

use http::header::ACCEPT;
use http::{Response, StatusCode};

use super::encoding::{self, Encoding};
use super::errors::HandlerError;
use super::list_body::ListBody;
use super::protobuf;
use super::response::{self, Body, Representation};
use super::route::Target;
use super::{Context, Incoming};
use crate::filter::ObjectFilter;
use crate::resources::ResourceDef;
use crate::selectors::{FieldSelector, FieldSet, LabelSelector};
use crate::status::{self, Cause, CauseType, GroupKind};
use crate::store::{ListOptions, ListSource};
use crate::table;
use kube_gc_protobuf::encode::EncodeError;

/// GET of one object.
pub fn get(
    ctx: &Context,
    incoming: &Incoming,
    target: &Target,
) -> Result<Response<Body>, HandlerError> {
    let name = target.name.as_deref().unwrap_or_default();
    let obj = ctx
        .store
        .get(target.resource, target.namespace.as_deref(), name)?;
    let def = ctx.store.resources().def(target.resource);
    if let Some(printer) = table_printer(incoming, def) {
        let now = ctx.store.clock().now();
        let metadata = serde_json::json!({"resourceVersion": obj["metadata"]["resourceVersion"]});
        let answer = table::table(&printer, std::slice::from_ref(&*obj), metadata, now);
        return Ok(response::json(StatusCode::OK, &answer));
    }
    let encoding = encoding::for_resource(incoming.header(ACCEPT), def);
    object_response(def, encoding, StatusCode::OK, &obj)
}

/// LIST of a collection.
pub async fn list(
    ctx: &Context,
    incoming: &Incoming,
    target: &Target,
) -> Result<Response<Body>, HandlerError> {
    validate_list_options(incoming)?;
    let options = ListOptions {
        filter: request_filter(incoming, target, ctx.store.resources().def(target.resource))?,
        limit: parse_limit(incoming.query("limit"))?,
        continue_token: incoming.query("continue").map(str::to_string),
        resource_version: incoming.query("resourceVersion").map(str::to_string),
        resource_version_match: incoming.query("resourceVersionMatch").map(str::to_string),
    };
    // The watch cache waits a while for a version it has not seen yet (a client that read it
    // from another API server); the store answers 504 if it still has not.
    let waits_for = ListSource::of(&options)?.waits_for(ctx.store.resource_version());
    if let Some(rv) = waits_for {
        ctx.store.wait_for_version(rv, ctx.too_large_wait).await;
    }
    let page = ctx.store.list(target.resource, &options)?;
    let def = ctx.store.resources().def(target.resource);
    if let Some(printer) = table_printer(incoming, def) {
        let objects: Vec<serde_json::Value> = page.items.iter().map(|o| (**o).clone()).collect();
        let mut metadata =
            serde_json::json!({"resourceVersion": page.resource_version.to_string()});
        if let Some(token) = &page.continue_token {
            metadata["continue"] = serde_json::Value::from(token.as_str());
        }
        if let Some(remaining) = page.remaining_item_count {
            metadata["remainingItemCount"] = serde_json::Value::from(remaining);
        }
        let now = ctx.store.clock().now();
        let answer = table::table(&printer, &objects, metadata, now);
        return Ok(response::json(StatusCode::OK, &answer));
    }
    match encoding::for_resource(incoming.header(ACCEPT), def) {
        // Encoded as it is sent: a resourceVersion=0 list of every object can be hundreds of MB.
        Encoding::Json(representation) => {
            Ok(ListBody::new(def, page, representation).into_response())
        }
        // Whole, as the real server's protobuf serializer writes it: the body's length leads it.
        Encoding::Protobuf {
            representation,
            fallback,
        } => protobuf_answer(
            StatusCode::OK,
            protobuf::list(def, representation, &page),
            fallback,
            |r| ListBody::new(def, page, r).into_response(),
        ),
        Encoding::NotAcceptable => Err(HandlerError::Status(status::not_acceptable())),
    }
}

/// The printer to answer a `Table` with, when the client asks for one first and this server
/// knows the resource's columns (`sim::table`).
fn table_printer(incoming: &Incoming, def: &ResourceDef) -> Option<table::Printer> {
    if !table::asked_first(incoming.header(ACCEPT)) {
        return None;
    }
    table::printer(def)
}

/// An object in the encoding negotiated for it: a GET's answer, and a write's.
pub(super) fn object_response(
    def: &ResourceDef,
    encoding: Encoding,
    code: StatusCode,
    obj: &serde_json::Value,
) -> Result<Response<Body>, HandlerError> {
    match encoding {
        Encoding::Protobuf {
            representation,
            fallback,
        } => protobuf_answer(
            code,
            protobuf::object(def, representation, obj),
            fallback,
            |r| response::json(code, &r.object(obj)),
        ),
        Encoding::Json(representation) => Ok(response::json(code, &representation.object(obj))),
        Encoding::NotAcceptable => Err(HandlerError::Status(status::not_acceptable())),
    }
}

/// The protobuf answer `written`, or for an object the tables cannot write (a member of the
/// wrong JSON type, which the real server would have refused when it was written) the JSON
/// one when JSON is acceptable too, else a 500 naming the member.
pub(super) fn protobuf_answer(
    code: StatusCode,
    written: Result<Vec<u8>, EncodeError>,
    fallback: Option<Representation>,
    json: impl FnOnce(Representation) -> Response<Body>,
) -> Result<Response<Body>, HandlerError> {
    let error = match written {
        Ok(bytes) => return Ok(response::protobuf_bytes(code, bytes)),
        Err(error) => error,
    };
    tracing::warn!(%error, "an object the protobuf tables cannot write");
    match fallback {
        Some(representation) => Ok(json(representation)),
        None => Err(HandlerError::Status(status::internal_error(
            &error.to_string(),
        ))),
    }
}

/// The combinations of `resourceVersion`, `resourceVersionMatch` and `continue` the real server
/// refuses: 422 on the `ListOptions` for a match without a version (or with `continue`, or
/// `Exact` at version 0), 400 for a version together with `continue`.
fn validate_list_options(incoming: &Incoming) -> Result<(), HandlerError> {
    let rv = incoming.query("resourceVersion").filter(|v| !v.is_empty());
    let rv_match = incoming
        .query("resourceVersionMatch")
        .filter(|v| !v.is_empty());
    let has_continue = incoming.query("continue").is_some_and(|c| !c.is_empty());
    let mut causes = Vec::new();
    if let Some(rv_match) = rv_match {
        if has_continue {
            causes.push(forbidden(
                "resourceVersionMatch is forbidden when continue is provided",
            ));
        } else if rv.is_none() {
            causes.push(forbidden(
                "resourceVersionMatch is forbidden unless resourceVersion is provided",
            ));
        } else if rv == Some("0") && rv_match == "Exact" {
            causes.push(forbidden(
                "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
            ));
        }
    }
    if !causes.is_empty() {
        let gk = GroupKind::new("meta.k8s.io", "ListOptions");
        return Err(HandlerError::Status(status::invalid(&gk, "", &causes)));
    }
    if has_continue && rv.is_some_and(|v| v != "0") {
        return Err(HandlerError::bad_request(
            "specifying resource version is not allowed when using continue",
        ));
    }
    Ok(())
}

fn forbidden(detail: &str) -> Cause {
    Cause {
        kind: CauseType::Forbidden,
        field: "resourceVersionMatch".to_string(),
        value: serde_json::Value::Null,
        detail: detail.to_string(),
    }
}

/// The namespace, label and field restrictions of a list or watch request; `def` says which
/// fields its kind can be selected on.
pub fn request_filter(
    incoming: &Incoming,
    target: &Target,
    def: &ResourceDef,
) -> Result<ObjectFilter, HandlerError> {
    let set = if def.group.is_empty() && def.version == "v1" && def.resource == "events" {
        FieldSet::Event
    } else {
        FieldSet::ObjectMeta
    };
    let labels = match incoming.query("labelSelector").filter(|s| !s.is_empty()) {
        Some(s) => {
            Some(LabelSelector::parse(s).map_err(|e| HandlerError::bad_request(e.to_string()))?)
        }
        None => None,
    };
    let fields = match incoming.query("fieldSelector").filter(|s| !s.is_empty()) {
        Some(s) => Some(
            FieldSelector::parse_for(s, set)
                .map_err(|e| HandlerError::bad_request(e.to_string()))?,
        ),
        None => None,
    };
    Ok(ObjectFilter {
        namespace: target.namespace.clone(),
        labels,
        fields,
    })
}

fn parse_limit(limit: Option<&str>) -> Result<Option<usize>, HandlerError> {
    match limit.filter(|l| !l.is_empty()) {
        None => Ok(None),
        Some(l) => l
            .parse::<i64>()
            .map(|l| usize::try_from(l).ok().filter(|l| *l > 0))
            .map_err(|_| HandlerError::bad_request(format!("invalid limit: {l:?}"))),
    }
}
