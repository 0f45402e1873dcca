//! Content negotiation for lists and watches: what the client asks the server to send, and how
//! it reads what comes back — by the answer's `Content-Type`, never by what it asked for.
//!
//! Why: encoding JSON is most of what a large LIST costs the API server (on the kit, 100,000
//! Jobs: 16.6 CPU s in JSON, 2.5 in protobuf — `shared/upstream-facts.md`), and
//! kube-controller-manager asks for protobuf for that reason.
//!
//! Contract:
//! - Metadata-only lists and watches ask for protobuf first, then JSON, exactly as client-go's
//!   metadata client does: the server answers them in protobuf for every resource, custom ones
//!   included (exchanges 105–108), and the tables describe `PartialObjectMetadata` completely.
//! - Whole objects ask for protobuf first only where kube-gc can read all that the reader
//!   reads: the kind has a descriptor table and every member the reader's selection names is
//!   described there, every subtree it wants whole by a table known to be complete
//!   ([`covers`]). Anything else asks for JSON only — a custom resource (which would answer
//!   JSON anyway, exchange 110), a kind without tables, a reader that may read anything.
//! - A protobuf item is transcoded to the JSON text the reader's decoder reads, keeping only
//!   the members the reader reads; a protobuf answer the client did not expect is still read,
//!   with everything kept.

use super::protobuf::schema::{self, Kind, Message};
use super::protobuf::Selection;
use super::request::ACCEPT_JSON;
use super::resource_ref::ResourceRef;

/// The protobuf media type (`runtime/serializer/protobuf`).
pub const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// Whole objects, protobuf first (kube-controller-manager's `AcceptContentTypes`).
pub const ACCEPT_PROTOBUF_OR_JSON: &str = "application/vnd.kubernetes.protobuf,application/json";

/// A metadata-only LIST, protobuf first (client-go's metadata client).
pub const ACCEPT_METADATA_LIST_PROTOBUF: &str = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";

/// A metadata-only WATCH or GET, protobuf first.
pub const ACCEPT_METADATA_PROTOBUF: &str = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";

/// What to ask for, and what to keep of a protobuf answer.
#[derive(Clone, Debug)]
pub(crate) struct Asking {
    /// The `Accept` header.
    pub(crate) accept: &'static str,
    /// The members transcoded from a protobuf answer.
    pub(crate) keep: Selection,
}

impl Asking {
    /// JSON as `accept` says; a protobuf answer (unasked) is read whole.
    pub(crate) fn json(accept: &'static str) -> Asking {
        Asking {
            accept,
            keep: Selection::all(),
        }
    }
}

/// Whole objects of `resource`, for a reader that reads `reads` (`None`: anything).
pub(crate) fn objects(resource: &ResourceRef, reads: Option<Selection>) -> Asking {
    let message = schema::for_kind(&resource.api_version(), &resource.kind);
    match (message, reads) {
        (Some(message), Some(reads)) if covers(message, &reads) => Asking {
            accept: ACCEPT_PROTOBUF_OR_JSON,
            keep: reads,
        },
        _ => Asking::json(ACCEPT_JSON),
    }
}

/// Metadata only: a LIST if `list`, else a WATCH.
pub(crate) fn metadata(list: bool, reads: Option<Selection>) -> Asking {
    Asking {
        accept: if list {
            ACCEPT_METADATA_LIST_PROTOBUF
        } else {
            ACCEPT_METADATA_PROTOBUF
        },
        keep: reads.unwrap_or_default(),
    }
}

/// Whether `response` is protobuf, by its `Content-Type`.
pub(crate) fn answered_protobuf(response: &reqwest::Response) -> bool {
    let content_type = response.headers().get(http::header::CONTENT_TYPE);
    is_protobuf(content_type.and_then(|value| value.to_str().ok()))
}

/// Whether an answer with this `Content-Type` is protobuf (a watch's says `;stream=watch`).
pub fn is_protobuf(content_type: Option<&str>) -> bool {
    content_type
        .and_then(|value| value.split(';').next())
        .is_some_and(|media| media.trim().eq_ignore_ascii_case(PROTOBUF))
}

/// Whether `message`'s tables describe all that `selection` wants of it.
pub fn covers(message: &'static Message, selection: &Selection) -> bool {
    if selection.wants_others() && !schema::is_complete(message) {
        return false;
    }
    selection
        .named()
        .filter(|(_, below)| !below.is_none())
        .all(|(name, below)| match field_named(message, name) {
            Some(kind) => kind_covers(kind, below),
            None => false,
        })
}

/// A member's kind, looking into inlined structs too.
fn field_named(message: &'static Message, name: &str) -> Option<&'static Kind> {
    message.fields.iter().find_map(|field| match &field.kind {
        _ if field.name == name => Some(&field.kind),
        Kind::Inline(inner) => field_named(inner, name),
        _ => None,
    })
}

fn kind_covers(kind: &'static Kind, below: &Selection) -> bool {
    match kind {
        Kind::Message(inner) | Kind::Inline(inner) => covers(inner, below),
        Kind::Map(value) => below.is_all() || kind_covers(value, below),
        // Scalars, times, quantities: a selection below them can want nothing more.
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jobs() -> ResourceRef {
        ResourceRef::new("batch", "v1", "jobs", "Job", true)
    }

    #[test]
    fn a_ttl_reader_of_jobs_asks_for_protobuf_and_keeps_what_it_reads() {
        let reads = Selection::paths([
            "metadata",
            "spec.ttlSecondsAfterFinished",
            "status.conditions",
        ]);
        let asking = objects(&jobs(), Some(reads.clone()));
        assert_eq!(asking.accept, ACCEPT_PROTOBUF_OR_JSON);
        assert_eq!(asking.keep, reads);
    }

    #[test]
    fn a_pod_read_for_its_containers_end_asks_for_protobuf() {
        // What the `pods` preset's "containers terminated" finish time reads.
        let pods = ResourceRef::new("", "v1", "pods", "Pod", true);
        let reads = Selection::paths([
            "metadata",
            "status.phase",
            "status.containerStatuses",
            "status.initContainerStatuses",
            "spec.initContainers.name",
            "spec.initContainers.restartPolicy",
        ]);
        assert_eq!(objects(&pods, Some(reads)).accept, ACCEPT_PROTOBUF_OR_JSON);
        // The init containers whole: a container's table is partial.
        let whole = Selection::paths(["spec.initContainers"]);
        assert_eq!(objects(&pods, Some(whole)).accept, "application/json");
    }

    #[test]
    fn json_where_a_transcoded_object_could_lack_what_is_read() {
        // Anything, or a subtree whose table is partial: JSON.
        assert_eq!(objects(&jobs(), None).accept, "application/json");
        let template = Selection::paths(["spec.template"]);
        assert_eq!(objects(&jobs(), Some(template)).accept, "application/json");
        // A member the tables do not know.
        let unknown = Selection::paths(["spec.managedBy"]);
        assert!(!covers(&schema::JOB, &unknown));
        // A custom resource has no tables.
        let vc = ResourceRef::new("batch.volcano.sh", "v1alpha1", "jobs", "Job", true);
        let reads = Selection::paths(["metadata"]);
        assert_eq!(objects(&vc, Some(reads)).accept, "application/json");
    }

    #[test]
    fn metadata_asks_as_client_go_and_answers_are_read_by_their_content_type() {
        assert!(metadata(true, None).accept.starts_with(PROTOBUF));
        assert!(metadata(false, None)
            .accept
            .contains("as=PartialObjectMetadata;"));
        assert!(is_protobuf(Some("application/vnd.kubernetes.protobuf")));
        assert!(is_protobuf(Some(
            "application/vnd.kubernetes.protobuf;stream=watch"
        )));
        assert!(!is_protobuf(Some("application/json")));
        assert!(!is_protobuf(None));
    }
}
