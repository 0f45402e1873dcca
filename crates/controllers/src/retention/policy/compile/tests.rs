//! Tests of [`compile`]: the documented example policy, presets and custom rules, and every field that
//! can be at fault.

use super::*;

/// The controller's answer to a `resource` policy that cannot do without a finish rule.
const FINISHED_REQUIRED: &str =
    "spec.finished: required with resource: say when an object has finished \
     (only ttlSecondsAfterCreation without history limits does without)";

fn policy(yaml: &str) -> RetentionPolicyObject {
    serde_saphyr::from_str(yaml).unwrap()
}

fn errors(yaml: &str, cluster: bool) -> Vec<String> {
    match compile(&policy(yaml), cluster) {
        Ok(_) => Vec::new(),
        Err(errors) => errors.iter().map(ToString::to_string).collect(),
    }
}

const EXAMPLE: &str = r#"
metadata: {name: finished-pods, generation: 2}
spec:
  preset: pods
  namespaceSelector: {matchLabels: {team: data}}
  selector: {matchLabels: {app: etl}}
  match: "object.metadata.name.startsWith('etl-')"
  ttlSecondsAfterFinished: 3600
  successfulHistoryLimit: 3
  failedHistoryLimit: 1
  groupBy: owner
"#;

#[test]
fn the_issue_example_compiles_with_the_presets_defaults() {
    let compiled = compile(&policy(EXAMPLE), true).unwrap();
    assert_eq!(
        compiled.id.to_string(),
        "ClusterRetentionPolicy finished-pods"
    );
    assert_eq!(compiled.generation, Some(2));
    assert_eq!(compiled.preset, Some("pods"));
    assert_eq!(compiled.targets[0].to_string(), "v1/pods");
    assert_eq!(
        compiled.ttl,
        PolicyTtl {
            since: Since::Finished,
            length: Some(Duration::hours(1))
        }
    );
    assert_eq!(
        compiled.limits,
        Limits {
            successful: Some(3),
            failed: Some(1)
        }
    );
    assert_eq!(compiled.group_by, GroupBy::Owner);
    assert_eq!(compiled.propagation, PropagationPolicy::Background);
    assert!(
        compiled.skip_controlled,
        "pods: only those without a controller"
    );
    assert!(compiled.match_expr.is_some() && compiled.namespace_selector.is_some());
}

#[test]
fn a_custom_resource_needs_its_own_finish_rule() {
    let without = r#"
metadata: {name: runs, namespace: ci}
spec:
  resource: {group: tekton.dev, version: v1, resource: pipelineruns}
  ttlSecondsAfterFinished: 60
"#;
    assert_eq!(errors(without, false), [FINISHED_REQUIRED]);
    let with = r#"
metadata: {name: runs, namespace: ci}
spec:
  resource: {group: tekton.dev, version: v1, resource: pipelineruns}
  finished:
    conditions: [{type: Succeeded, status: "True"}, {type: Succeeded, status: "False", outcome: Failed}]
  ttlSecondsAfterCreation: 28800
  groupBy: {label: tekton.dev/pipeline}
  propagationPolicy: Foreground
"#;
    let compiled = compile(&policy(with), false).unwrap();
    assert_eq!(compiled.id.to_string(), "RetentionPolicy ci/runs");
    assert_eq!(compiled.ttl.since, Since::Created);
    assert_eq!(
        compiled.group_by,
        GroupBy::Label("tekton.dev/pipeline".into())
    );
    assert_eq!(compiled.propagation, PropagationPolicy::Foreground);
    assert!(!compiled.skip_controlled);
}

#[test]
fn a_creation_ttl_alone_needs_no_finish_rule_and_finishes_nothing() {
    let previews = r#"
metadata: {name: previews}
spec:
  resource: {group: "", version: v1, resource: namespaces}
  selector: {matchLabels: {preview: "true"}}
  ttlSecondsAfterCreation: 28800
"#;
    let compiled = compile(&policy(previews), true).unwrap();
    assert_eq!(compiled.finish, FinishRule::never());
    let namespace =
        serde_json::json!({"metadata": {"name": "pr-1"}, "status": {"phase": "Active"}});
    assert_eq!(
        compiled.finish.evaluate(&namespace, chrono::Utc::now()),
        Ok(None)
    );
    // History limits keep the newest *finished* objects: they need to know what finished.
    let limited = r#"
metadata: {name: previews}
spec:
  resource: {group: "", version: v1, resource: namespaces}
  ttlSecondsAfterCreation: 28800
  successfulHistoryLimit: 3
"#;
    assert_eq!(errors(limited, true), [FINISHED_REQUIRED]);
}

#[test]
fn every_field_at_fault_is_named() {
    let bad = r#"
metadata: {name: bad, namespace: ci}
spec:
  preset: pods
  resource: {group: "", version: v1, resource: pods}
  namespaceSelector: {}
  selector: {matchExpressions: [{key: a, operator: In}]}
  match: "self.x"
  ttlSecondsAfterFinished: -1
  successfulHistoryLimit: -2
  groupBy: nobody
  propagationPolicy: Sometimes
"#;
    let found = errors(bad, false);
    let fields: Vec<&str> = found
        .iter()
        .map(|e| e.split(':').next().unwrap_or(""))
        .collect();
    assert_eq!(
        fields,
        [
            "spec",
            "spec.namespaceSelector",
            "spec.selector.matchExpressions[0]",
            "spec.match",
            "spec.ttlSecondsAfterFinished",
            "spec.successfulHistoryLimit",
            "spec.groupBy",
            "spec.propagationPolicy",
        ],
        "{found:#?}"
    );
}

#[test]
fn both_ttl_kinds_an_unknown_preset_and_an_empty_resource_are_refused() {
    let both = "metadata: {name: b}\nspec: {preset: pods, ttlSecondsAfterFinished: 1, ttlSecondsAfterCreation: 1}";
    assert_eq!(
        errors(both, true),
        ["spec: ttlSecondsAfterFinished and ttlSecondsAfterCreation are exclusive: set one"]
    );
    let unknown = "metadata: {name: u}\nspec: {preset: cronjobs}";
    assert!(
        errors(unknown, true)[0].starts_with("spec.preset: unknown preset \"cronjobs\" (known: ")
    );
    let empty = "metadata: {name: e}\nspec: {resource: {group: x, version: '', resource: ''}, finished: {field: {path: status.phase, succeeded: [Done]}, finishTime: {field: status.end}}}";
    assert_eq!(
        errors(empty, true),
        [
            "spec.resource.version: must not be empty",
            "spec.resource.resource: must not be empty"
        ]
    );
}

#[test]
fn include_controlled_lifts_the_pods_presets_restriction() {
    let yaml = "metadata: {name: p}\nspec: {preset: pods, includeControlled: true, ttlSecondsAfterFinished: 0}";
    assert!(!compile(&policy(yaml), true).unwrap().skip_controlled);
}
