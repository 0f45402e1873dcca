//! The OpenAPI v3 documents `kubectl explain` reads (exchanges 271–274): an index of group
//! versions at `/openapi/v3`, and one document per group version at the index's
//! `serverRelativeURL`, built from the resources this server serves — the built-in kinds'
//! field trees from the protobuf tables ([`built_in`]), custom resources' from their stored
//! CustomResourceDefinitions ([`custom`]).
//!
//! Contract:
//! - [`documents`] builds every served group version's document (`api/v1`,
//!   `apis/<group>/<version>`): `openapi: 3.0.0`, `info`, `paths` and `components.schemas`.
//!   Paths carry a `get` of each object and collection (and `/status`) answering the kind or
//!   its list, with `x-kubernetes-group-version-kind`; no `patch`, so kubectl's probe for
//!   server-side field validation falls back to `/openapi/v2`, as against this server before
//!   (it does not refuse unknown fields under `fieldValidation=Strict`).
//! - Each document's [`Document::hash`] is the SHA-512 of its bytes in upper-case hex, as the
//!   real server's: a document that changes (a CRD applied, deleted, changed) changes its
//!   hash, which kubectl's HTTP cache is keyed by (274).
//! - [`index`] lists them: `{"paths": {"apis/batch/v1": {"serverRelativeURL":
//!   "/openapi/v3/apis/batch/v1?hash=…"}}}`. The real index also lists discovery documents
//!   (`api`, `apis`, `apis/<group>`) and `.well-known/openid-configuration`; this one lists
//!   group versions only.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use crate::resources::{ResourceDef, Resources};

pub mod built_in;
pub mod custom;

/// One group version's document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Document {
    /// Its path under `/openapi/v3/`: `api/v1`, `apis/batch/v1`.
    pub path: String,
    /// The document, as sent.
    pub body: Vec<u8>,
    /// SHA-512 of `body`, upper-case hex.
    pub hash: String,
}

impl Document {
    /// Its URL relative to the server, with its hash.
    pub fn server_relative_url(&self) -> String {
        format!("/openapi/v3/{}?hash={}", self.path, self.hash)
    }
}

/// The path of `def`'s group version under `/openapi/v3/`.
pub fn group_version_path(def: &ResourceDef) -> String {
    if def.group.is_empty() {
        format!("api/{}", def.version)
    } else {
        format!("apis/{}/{}", def.group, def.version)
    }
}

/// Every group version's document of `served`; `definition` gives a custom resource's stored
/// CustomResourceDefinition.
pub fn documents(
    served: &Resources,
    definition: impl Fn(&ResourceDef) -> Option<Value>,
) -> Vec<Document> {
    let mut by_group_version: BTreeMap<String, Vec<&ResourceDef>> = BTreeMap::new();
    for (_, def) in served.iter() {
        by_group_version
            .entry(group_version_path(def))
            .or_default()
            .push(def);
    }
    by_group_version
        .into_iter()
        .map(|(path, defs)| {
            let document = document(&path, &defs, &definition);
            let body = serde_json::to_vec(&document).unwrap_or_default();
            let hash = sha512_hex(&body);
            Document { path, body, hash }
        })
        .collect()
}

/// The index of `documents`.
pub fn index(documents: &[Document]) -> Value {
    let paths: Map<String, Value> = documents
        .iter()
        .map(|d| {
            (
                d.path.clone(),
                json!({"serverRelativeURL": d.server_relative_url()}),
            )
        })
        .collect();
    json!({ "paths": paths })
}

/// The document of the group version at `path`, serving `defs`.
fn document(
    path: &str,
    defs: &[&ResourceDef],
    definition: &impl Fn(&ResourceDef) -> Option<Value>,
) -> Value {
    let mut schemas = BTreeMap::new();
    let mut paths = Map::new();
    for def in defs {
        let kind = if def.is_custom {
            custom::kind_schema(def, definition(def).as_ref(), &mut schemas)
        } else {
            built_in::kind_schemas(def, &mut schemas)
        };
        let list = built_in::list_schema(def, &kind, &mut schemas);
        for (url, action, answer) in resource_paths(path, def, &kind, &list) {
            paths.insert(url, get_operation(def, action, &answer));
        }
    }
    let info = if defs.iter().all(|d| d.is_custom) {
        json!({"title": "Kubernetes CRD Swagger", "version": "v0.1.0"})
    } else {
        json!({"title": "Kubernetes", "version": "v1.28.7"})
    };
    json!({"openapi": "3.0.0", "info": info, "paths": paths,
        "components": {"schemas": schemas}})
}

/// `(url, action, schema answered)` of each of `def`'s paths.
fn resource_paths(
    prefix: &str,
    def: &ResourceDef,
    kind: &str,
    list: &str,
) -> Vec<(String, &'static str, String)> {
    let plural = &def.resource;
    let mut paths = vec![(format!("/{prefix}/{plural}"), "list", list.to_owned())];
    let objects = if def.namespaced {
        let namespaced = format!("/{prefix}/namespaces/{{namespace}}/{plural}");
        paths.push((namespaced.clone(), "list", list.to_owned()));
        format!("{namespaced}/{{name}}")
    } else {
        format!("/{prefix}/{plural}/{{name}}")
    };
    if def.has_status {
        paths.push((format!("{objects}/status"), "get", kind.to_owned()));
    }
    paths.push((objects, "get", kind.to_owned()));
    paths
}

fn get_operation(def: &ResourceDef, action: &str, answer: &str) -> Value {
    let schema = json!({"$ref": format!("#/components/schemas/{answer}")});
    json!({"get": {
        "responses": {"200": {"description": "OK",
            "content": {"application/json": {"schema": schema}}}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind":
            {"group": def.group, "version": def.version, "kind": def.kind}}})
}

/// SHA-512 of `bytes` in upper-case hex: 128 digits.
pub fn sha512_hex(bytes: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA512, bytes);
    digest.as_ref().iter().map(|b| format!("{b:02X}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn served() -> Resources {
        Resources::default()
    }

    #[test]
    fn every_served_group_version_has_a_document_and_an_index_entry() {
        let documents = documents(&served(), |_| None);
        let paths: Vec<&str> = documents.iter().map(|d| d.path.as_str()).collect();
        assert!(paths.contains(&"api/v1"), "{paths:?}");
        assert!(paths.contains(&"apis/batch/v1"), "{paths:?}");
        assert!(paths.contains(&"apis/kube-gc.io/v1alpha1"), "{paths:?}");
        let index = index(&documents);
        let url = index["paths"]["apis/batch/v1"]["serverRelativeURL"]
            .as_str()
            .unwrap();
        let hash = url.strip_prefix("/openapi/v3/apis/batch/v1?hash=").unwrap();
        assert_eq!(hash.len(), 128);
        assert!(hash
            .chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_lowercase()));
    }

    #[test]
    fn a_changed_document_changes_its_hash() {
        let policies = |description: &str| {
            let description = description.to_owned();
            documents(&served(), move |def| {
                (def.resource == "retentionpolicies").then(|| {
                    json!({"spec": {"versions": [{"name": "v1alpha1", "schema":
                        {"openAPIV3Schema": {"type": "object", "description": description}}}]}})
                })
            })
            .into_iter()
            .find(|d| d.path == "apis/kube-gc.io/v1alpha1")
            .unwrap()
        };
        let (before, after) = (policies("one"), policies("two"));
        assert_ne!(before.hash, after.hash);
        assert_eq!(
            before.hash,
            policies("one").hash,
            "the same document, the same hash"
        );
    }

    #[test]
    fn a_document_has_the_real_shape() {
        let documents = documents(&served(), |_| None);
        let batch = documents
            .iter()
            .find(|d| d.path == "apis/batch/v1")
            .unwrap();
        let document: Value = serde_json::from_slice(&batch.body).unwrap();
        assert_eq!(document["openapi"], "3.0.0");
        let jobs = &document["paths"]["/apis/batch/v1/namespaces/{namespace}/jobs/{name}"];
        assert_eq!(
            jobs["get"]["x-kubernetes-group-version-kind"],
            json!({"group": "batch", "version": "v1", "kind": "Job"})
        );
        assert!(document["components"]["schemas"]["io.k8s.api.batch.v1.JobList"].is_object());
    }
}
