//! The schema walk and the rules against the embedded CRDs.

use super::schema::crds;
use super::*;
use serde_json::json;

fn cluster() -> ResourceDef {
    ResourceDef::new(
        "kube-gc.io",
        "v1alpha1",
        "clusterretentionpolicies",
        "ClusterRetentionPolicy",
    )
}

fn causes(spec: Value) -> Vec<String> {
    let obj = json!({"apiVersion": "kube-gc.io/v1alpha1", "kind": "ClusterRetentionPolicy",
        "metadata": {"name": "p"}, "spec": spec});
    validate(&cluster(), &obj)
        .unwrap()
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn the_embedded_crds_load_and_their_rules_compile() {
    let crds = crds().unwrap();
    assert_eq!(crds.len(), 2);
    let spec = crds[1]
        .schema
        .properties
        .0
        .iter()
        .find(|(n, _)| n == "spec")
        .unwrap();
    assert_eq!(spec.1.rules.len(), 4);
    assert!(spec.1.rules.iter().all(|r| r.program.is_some()));
}

#[test]
fn valid_policies_pass() {
    assert!(causes(json!({"preset": "pods", "ttlSecondsAfterFinished": 60})).is_empty());
    assert!(causes(json!({"preset": "pods", "groupBy": "owner"})).is_empty());
    assert!(causes(json!({"preset": "pods", "groupBy": {"label": "a"}})).is_empty());
    assert!(
        causes(json!({"resource": {"version": "v1", "resource": "x"},
        "finished": {"field": {"path": "status.phase"},
                     "finishTime": {"field": "status.completionTime"}}}))
        .is_empty()
    );
}

#[test]
fn types_required_and_lengths() {
    assert_eq!(
        causes(json!({"preset": "pods", "ttlSecondsAfterFinished": "60"})),
        ["spec.ttlSecondsAfterFinished: Invalid value: \"string\": spec.ttlSecondsAfterFinished in body must be of type integer: \"string\""]
    );
    assert_eq!(
        causes(json!({"resource": {"resource": "x"}, "finished": {"conditions": [{}]}})),
        [
            "spec.resource.version: Required value",
            "spec.finished.conditions[0].type: Required value"
        ]
    );
    assert_eq!(
        causes(json!({"preset": "pods", "match": ""})),
        ["spec.match: Invalid value: \"\": spec.match in body should be at least 1 chars long"]
    );
}

#[test]
fn group_by_shapes() {
    for bad in [
        json!("nobody"),
        json!(""),
        json!({}),
        json!({"foo": 1}),
        json!({"label": ""}),
        json!({"label": 1}),
        json!({"label": "a", "foo": 1}),
        json!(3),
        json!(true),
        json!(["owner"]),
    ] {
        assert!(
            !causes(json!({"preset": "pods", "groupBy": bad.clone()})).is_empty(),
            "{bad}"
        );
    }
    assert!(causes(json!({"preset": "pods", "groupBy": null})).is_empty());
}

#[test]
fn other_resources_are_not_checked() {
    let def = ResourceDef::new("", "v1", "configmaps", "ConfigMap");
    assert!(validate(&def, &json!({"spec": "x"})).unwrap().is_empty());
}
