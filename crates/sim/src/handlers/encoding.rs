//! Content negotiation: the media type and representation an answer is written in, chosen from
//! the request's `Accept` header as a v1.28 kube-apiserver chooses it.
//!
//! Contract:
//! - `Accept` is a list of media types with parameters, ordered as the server orders them: by
//!   `q` (highest first; `q=0` refuses), then concrete types before wildcards, otherwise as
//!   written. The first one the server can produce for the resource wins.
//! - `application/json` (and `*/*`, `application/*`) is JSON: the whole object without `as`,
//!   the metadata-only form with `as=PartialObjectMetadata` or `as=PartialObjectMetadataList`
//!   and `g=meta.k8s.io;v=v1`; any other `as` (`Table`) is skipped here: the read handlers
//!   answer a `Table` first asked for themselves, for the resources `sim::table` knows.
//! - `application/vnd.kubernetes.protobuf`: the metadata-only forms for every resource, custom
//!   ones included (exchanges 105–108); whole objects only for a built-in kind whose descriptor
//!   table exists in `client::protobuf::schema` (100, 112, 113, 115, 116). A custom resource
//!   has no protobuf form: it is skipped, so `protobuf,json` gets JSON (110).
//! - Nothing producible: 406 when a protobuf type was skipped for want of a protobuf form
//!   (109); otherwise JSON whole objects, as this server always answered (`application/yaml`
//!   alone gets JSON where the real server writes YAML).
//! - Deviation: a built-in kind without a table (Deployment, Lease, …) is answered in protobuf
//!   by the real server, which this one cannot write: it answers JSON when JSON is acceptable,
//!   406 when not.
//! - Error `Status` bodies ([`status_media`]): the first media type without `as` or `stream`
//!   (upstream's default endpoint restrictions): protobuf (109, 111) or JSON; JSON when none.
//! - Parameters other than `as`, `g`, `v`, `q` (`stream=watch`, `pretty`, `charset`) do not
//!   change the choice of an object's media type.

use std::cmp::Ordering;

use crate::resources::ResourceDef;
use kube_gc_protobuf::{schema, MEDIA_TYPE};

/// How objects are represented in the response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Representation {
    /// The full object.
    Full,
    /// `PartialObjectMetadata` / `PartialObjectMetadataList` (`meta.k8s.io/v1`).
    MetadataOnly,
}

impl Representation {
    /// Picks the representation of a JSON answer from an `Accept` header: the first media type
    /// the server can produce in JSON wins. `as=Table` and protobuf are skipped, so clients
    /// that list JSON as a fallback (kubectl does) get plain JSON; nothing acceptable gets whole
    /// objects.
    pub fn from_accept(accept: Option<&str>) -> Representation {
        match negotiate(accept, Offer::JSON) {
            Encoding::Json(representation) => representation,
            _ => Representation::Full,
        }
    }
}

/// A media type the server writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Media {
    /// `application/json`.
    Json,
    /// `application/vnd.kubernetes.protobuf`.
    Protobuf,
}

/// How an answer carrying objects is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// JSON, in this representation.
    Json(Representation),
    /// Protobuf, in this representation; `fallback` is what the same `Accept` allows in JSON,
    /// for an object the tables cannot write (a member of the wrong JSON type).
    Protobuf {
        /// Whole objects or metadata only.
        representation: Representation,
        /// The JSON answer also acceptable, if any.
        fallback: Option<Representation>,
    },
    /// 406: nothing acceptable can be written.
    NotAcceptable,
}

/// What the server can write for one resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Offer {
    /// Whole objects (and their lists) in protobuf.
    pub protobuf_objects: bool,
    /// `PartialObjectMetadata(List)` in protobuf.
    pub protobuf_metadata: bool,
}

impl Offer {
    /// JSON alone (the fallback of a protobuf answer; `Representation::from_accept`).
    pub const JSON: Offer = Offer {
        protobuf_objects: false,
        protobuf_metadata: false,
    };

    /// What is written for `def`: metadata in protobuf always; whole objects when the kind is
    /// built in and the tables describe it and its list.
    pub fn for_resource(def: &ResourceDef) -> Offer {
        let api_version = def.api_version();
        let described = |kind: &str| schema::for_kind(&api_version, kind).is_some();
        Offer {
            protobuf_objects: !def.is_custom && described(&def.kind) && described(&def.list_kind()),
            protobuf_metadata: true,
        }
    }
}

/// The encoding of an answer carrying objects of `def`.
pub fn for_resource(accept: Option<&str>, def: &ResourceDef) -> Encoding {
    negotiate(accept, Offer::for_resource(def))
}

/// The encoding for `accept` given what the server `offer`s.
pub fn negotiate(accept: Option<&str>, offer: Offer) -> Encoding {
    match choose(accept, offer) {
        Encoding::Protobuf { representation, .. } => Encoding::Protobuf {
            representation,
            fallback: match choose(accept, Offer::JSON) {
                Encoding::Json(json) => Some(json),
                _ => None,
            },
        },
        chosen => chosen,
    }
}

/// The media type of an error `Status` answering a request that accepts `accept`.
pub fn status_media(accept: Option<&str>) -> Media {
    let Some(accept) = accept else {
        return Media::Json;
    };
    for clause in media_types(accept) {
        // Upstream negotiates errors with its default endpoint restrictions: no conversion
        // (`as`), no stream schema.
        if clause.param("as").is_some() || clause.param("stream").is_some_and(|s| !s.is_empty()) {
            continue;
        }
        match clause.family() {
            Family::Json => return Media::Json,
            Family::Protobuf => return Media::Protobuf,
            Family::Other => {}
        }
    }
    Media::Json
}

/// The `Content-Type` of a protobuf answer (metadata-only ones too: no `as` in it).
pub const PROTOBUF_CONTENT_TYPE: &str = MEDIA_TYPE;

/// The `Content-Type` of a protobuf watch (exchanges 103, 104, 106, 108).
pub const PROTOBUF_WATCH_CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";

fn choose(accept: Option<&str>, offer: Offer) -> Encoding {
    let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else {
        return Encoding::Json(Representation::Full);
    };
    let mut protobuf_refused = false;
    for clause in media_types(accept) {
        let conversion = clause.conversion();
        match (clause.family(), conversion) {
            (_, Conversion::Unsupported) | (Family::Other, _) => {}
            (Family::Json, Conversion::None) => return Encoding::Json(Representation::Full),
            (Family::Json, Conversion::Metadata) => {
                return Encoding::Json(Representation::MetadataOnly)
            }
            (Family::Protobuf, Conversion::None) if offer.protobuf_objects => {
                return protobuf(Representation::Full)
            }
            (Family::Protobuf, Conversion::Metadata) if offer.protobuf_metadata => {
                return protobuf(Representation::MetadataOnly)
            }
            (Family::Protobuf, _) => protobuf_refused = true,
        }
    }
    if protobuf_refused {
        Encoding::NotAcceptable
    } else {
        Encoding::Json(Representation::Full)
    }
}

fn protobuf(representation: Representation) -> Encoding {
    Encoding::Protobuf {
        representation,
        fallback: None,
    }
}

/// One media type of an `Accept` header, parsed: its essence in lower case, its parameters.
pub struct MediaType<'a> {
    essence: String,
    params: Vec<(&'a str, &'a str)>,
    q: f32,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Family {
    Json,
    Protobuf,
    Other,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Conversion {
    None,
    Metadata,
    Unsupported,
}

impl<'a> MediaType<'a> {
    fn parse(text: &'a str) -> Option<MediaType<'a>> {
        let mut parts = text.split(';').map(str::trim);
        let essence = parts.next()?.to_ascii_lowercase();
        if essence.is_empty() {
            return None;
        }
        let params: Vec<(&str, &str)> = parts
            .filter_map(|p| p.split_once('='))
            .map(|(k, v)| (k.trim(), v.trim().trim_matches('"')))
            .collect();
        let q = params
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("q"))
            .map_or(1.0, |(_, v)| v.parse().unwrap_or(0.0));
        Some(MediaType { essence, params, q })
    }

    /// `type/subtype` in lower case (`application/json`, `*/*`).
    pub fn essence(&self) -> &str {
        &self.essence
    }

    /// The value of parameter `name` (any case), unquoted.
    pub fn param(&self, name: &str) -> Option<&'a str> {
        self.params
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| *v)
    }

    fn family(&self) -> Family {
        match self.essence.as_str() {
            "application/json" | "*/*" | "application/*" => Family::Json,
            MEDIA_TYPE => Family::Protobuf,
            _ => Family::Other,
        }
    }

    fn conversion(&self) -> Conversion {
        match self.param("as") {
            None => Conversion::None,
            Some("PartialObjectMetadata" | "PartialObjectMetadataList")
                if self.param("g") == Some("meta.k8s.io") && self.param("v") == Some("v1") =>
            {
                Conversion::Metadata
            }
            Some(_) => Conversion::Unsupported,
        }
    }

    /// 0 for `type/subtype`, 1 for `type/*`, 2 for `*/*`: concrete types are tried first.
    fn wildcards(&self) -> u8 {
        u8::from(self.essence.starts_with('*')) + u8::from(self.essence.ends_with("/*"))
    }
}

/// The media types of `accept` in the order the server tries them (a stable sort keeps the
/// client's order among equals, as upstream's insertion sort of short lists does).
pub fn media_types(accept: &str) -> Vec<MediaType<'_>> {
    let mut clauses: Vec<MediaType> = accept
        .split(',')
        .filter_map(MediaType::parse)
        .filter(|c| c.q > 0.0)
        .collect();
    clauses.sort_by(|a, b| {
        b.q.partial_cmp(&a.q)
            .unwrap_or(Ordering::Equal)
            .then(a.wildcards().cmp(&b.wildcards()))
    });
    clauses
}

#[cfg(test)]
mod tests {
    use super::*;
    use Representation::{Full, MetadataOnly};

    const KCM: &str = "application/vnd.kubernetes.protobuf,application/json";
    const META_LIST: &str = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";

    fn jobs() -> ResourceDef {
        ResourceDef::new("batch", "v1", "jobs", "Job")
    }

    fn vcjobs() -> ResourceDef {
        ResourceDef::new("batch.volcano.sh", "v1alpha1", "jobs", "Job").custom()
    }

    fn leases() -> ResourceDef {
        ResourceDef::new("coordination.k8s.io", "v1", "leases", "Lease")
    }

    #[test]
    fn built_in_kinds_with_tables_answer_protobuf_when_it_comes_first() {
        let job = for_resource(Some(KCM), &jobs());
        assert_eq!(
            job,
            Encoding::Protobuf {
                representation: Full,
                fallback: Some(Full)
            }
        );
        let alone = for_resource(Some(MEDIA_TYPE), &jobs());
        assert_eq!(
            alone,
            Encoding::Protobuf {
                representation: Full,
                fallback: None
            }
        );
        let json_first = "application/json,application/vnd.kubernetes.protobuf";
        assert_eq!(
            for_resource(Some(json_first), &jobs()),
            Encoding::Json(Full)
        );
        let weighted = "application/json;q=0.5,application/vnd.kubernetes.protobuf";
        assert!(matches!(
            for_resource(Some(weighted), &jobs()),
            Encoding::Protobuf { .. }
        ));
    }

    #[test]
    fn metadata_is_protobuf_for_every_resource() {
        for def in [jobs(), vcjobs(), leases()] {
            assert_eq!(
                for_resource(Some(META_LIST), &def),
                Encoding::Protobuf {
                    representation: MetadataOnly,
                    fallback: Some(MetadataOnly)
                },
                "{}",
                def.api_version()
            );
        }
    }

    #[test]
    fn custom_resources_answer_json_or_406() {
        assert_eq!(for_resource(Some(KCM), &vcjobs()), Encoding::Json(Full));
        assert_eq!(
            for_resource(Some(MEDIA_TYPE), &vcjobs()),
            Encoding::NotAcceptable
        );
        // The deviation: a built-in kind without a table, as a custom resource.
        assert_eq!(for_resource(Some(KCM), &leases()), Encoding::Json(Full));
        assert_eq!(
            for_resource(Some(MEDIA_TYPE), &leases()),
            Encoding::NotAcceptable
        );
    }

    #[test]
    fn json_answers_are_chosen_as_before() {
        let kubectl = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        for (accept, expected) in [
            (None, Full),
            (Some(""), Full),
            (Some("*/*"), Full),
            (Some("application/json"), Full),
            (Some("application/yaml"), Full),
            (Some(kubectl), Full),
            (
                Some("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"),
                MetadataOnly,
            ),
        ] {
            assert_eq!(
                for_resource(accept, &jobs()),
                Encoding::Json(expected),
                "{accept:?}"
            );
        }
        assert_eq!(
            Representation::from_accept(Some(META_LIST)),
            MetadataOnly,
            "write answers skip protobuf"
        );
    }

    #[test]
    fn statuses_follow_the_first_plain_media_type() {
        assert_eq!(status_media(Some(KCM)), Media::Protobuf);
        assert_eq!(status_media(Some(MEDIA_TYPE)), Media::Protobuf);
        assert_eq!(status_media(Some(META_LIST)), Media::Json);
        assert_eq!(status_media(Some("application/json")), Media::Json);
        assert_eq!(status_media(Some("text/html")), Media::Json);
        assert_eq!(status_media(None), Media::Json);
    }
}
