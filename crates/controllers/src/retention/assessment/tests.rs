//! Tests of [`assess`]: which policy governs, what is kept, and problems that keep objects.

use std::time::Duration as StdDuration;

use serde_json::{json, Value};

use super::*;
use crate::retention::finish::Outcome;
use crate::retention::policy::{compile, RetentionPolicyObject};
use crate::retention::verdict::{decide, KeepReason, Verdict};
use crate::retention::wire::decode_needed;

fn policy(yaml: &str, cluster: bool) -> Arc<CompiledPolicy> {
    let object: RetentionPolicyObject = serde_saphyr::from_str(yaml).unwrap();
    Arc::new(compile(&object, cluster).unwrap())
}

fn rules(policies: Vec<Arc<CompiledPolicy>>) -> ResourcePolicies {
    let team = |t: &str| BTreeMap::from([("team".to_owned(), t.to_owned())]);
    ResourcePolicies {
        policies,
        namespaces: BTreeMap::from([
            ("data".to_owned(), team("data")),
            ("web".to_owned(), team("web")),
        ]),
    }
}

fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-11-25T12:00:00Z")
        .map(|t| t.with_timezone(&Utc))
        .unwrap_or_default()
}

/// A finished Pod: Succeeded at 11:00, created at 10:00.
fn pod(namespace: &str, name: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "uid": format!("uid-{name}"),
                     "resourceVersion": "7", "creationTimestamp": "2026-11-25T10:00:00Z",
                     "labels": {"app": "etl"}},
        "status": {"phase": "Succeeded", "containerStatuses": [
            {"name": "main", "state": {"terminated": {"exitCode": 0,
                "startedAt": "2026-11-25T10:00:00Z", "finishedAt": "2026-11-25T11:00:00Z"}}}]}
    })
}

fn governed(assessment: &Assessment) -> &Governed {
    assessment
        .governed()
        .unwrap_or_else(|| panic!("not governed: {assessment:?}"))
}

#[test]
fn a_finished_pod_is_assessed_and_only_the_assessment_is_kept() {
    let rules = rules(vec![policy(
        "metadata: {name: pods}\nspec: {preset: pods, ttlSecondsAfterFinished: 1800}",
        true,
    )]);
    let assessment = assess(&pod("data", "a"), &rules, now());
    assert_eq!(assessment.key().to_string(), "data/a");
    assert_eq!(
        (assessment.uid(), assessment.resource_version()),
        ("uid-a", "7")
    );
    let g = governed(&assessment);
    assert_eq!(
        g.facts.finished.map(|f| f.outcome),
        Some(Outcome::Succeeded)
    );
    assert_eq!(g.ttl_source, TtlSource::Policy);
    // Finished at 11:00, 30 min TTL: expired at 11:30.
    assert!(matches!(
        decide(&g.facts, g.ttl, now()),
        Ok(Verdict::Expired { .. })
    ));
    // Inline size of a cached object; its strings (name, namespace, UID, version, group) come
    // on top (benches/retention.rs measures the whole).
    assert!(
        std::mem::size_of::<Assessment>() <= 144,
        "{}",
        std::mem::size_of::<Assessment>()
    );
}

#[test]
fn the_namespaced_policy_wins_and_the_others_are_counted_as_shadowed() {
    let rules = rules(vec![
        policy("metadata: {name: all}\nspec: {preset: pods, ttlSecondsAfterFinished: 60}", true),
        policy(
            "metadata: {name: data-only}\nspec: {preset: pods, ttlSecondsAfterFinished: 120, namespaceSelector: {matchLabels: {team: data}}}",
            true,
        ),
        policy(
            "metadata: {name: mine, namespace: data}\nspec: {preset: pods, ttlSecondsAfterFinished: 7200}",
            false,
        ),
    ]);
    let in_data = assess(&pod("data", "a"), &rules, now());
    let g = governed(&in_data);
    assert_eq!(rules.policies[usize::from(g.policy)].id.name, "mine");
    let shadowed: Vec<&str> = g
        .shadowed()
        .iter()
        .map(|&i| rules.policies[usize::from(i)].id.name.as_str())
        .collect();
    assert_eq!(shadowed, ["data-only", "all"], "most specific first");
    assert!(!g.tie());
    assert!(matches!(
        decide(&g.facts, g.ttl, now()),
        Ok(Verdict::Wait { remaining, .. }) if remaining == StdDuration::from_secs(3600)
    ));
    // In `web` only the cluster-wide one applies.
    let in_web = assess(&pod("web", "b"), &rules, now());
    assert_eq!(
        rules.policies[usize::from(governed(&in_web).policy)]
            .id
            .name,
        "all"
    );
}

#[test]
fn selectors_match_and_controlled_pods_decide_who_applies() {
    let rules = rules(vec![policy(
        "metadata: {name: etl}\nspec: {preset: pods, ttlSecondsAfterFinished: 0, selector: {matchLabels: {app: etl}}, match: \"object.metadata.name.startsWith('etl-')\"}",
        true,
    )]);
    assert!(assess(&pod("data", "etl-1"), &rules, now())
        .governed()
        .is_some());
    assert_eq!(
        assess(&pod("data", "web-1"), &rules, now()).standing,
        Standing::Ungoverned
    );
    let mut unlabelled = pod("data", "etl-2");
    unlabelled["metadata"]["labels"] = json!({});
    assert_eq!(
        assess(&unlabelled, &rules, now()).standing,
        Standing::Ungoverned
    );
    let mut controlled = pod("data", "etl-3");
    controlled["metadata"]["ownerReferences"] = json!([{"apiVersion": "batch/v1", "kind": "Job",
        "name": "j", "uid": "job-uid", "controller": true}]);
    assert_eq!(
        assess(&controlled, &rules, now()).standing,
        Standing::Ungoverned
    );
}

#[test]
fn annotations_override_and_a_bad_one_keeps_the_object() {
    let rules = rules(vec![policy(
        "metadata: {name: pods}\nspec: {preset: pods, ttlSecondsAfterFinished: 0}",
        true,
    )]);
    let mut extended = pod("data", "a");
    extended["metadata"]["annotations"] = json!({"kube-gc.io/ttl": "2h"});
    let g = governed(&assess(&extended, &rules, now())).clone();
    assert_eq!(g.ttl_source, TtlSource::TtlAnnotation);
    assert!(matches!(
        decide(&g.facts, g.ttl, now()),
        Ok(Verdict::Wait { .. })
    ));
    let mut fixed = pod("data", "c");
    fixed["metadata"]["annotations"] =
        json!({"kube-gc.io/expires-at": "2026-12-01T00:00:00Z", "other": "x"});
    let g = governed(&assess(&fixed, &rules, now())).clone();
    assert_eq!(g.ttl_source, TtlSource::ExpiresAtAnnotation);
    let mut bad = pod("data", "b");
    bad["metadata"]["annotations"] = json!({"kube-gc.io/ttl": "soon"});
    match assess(&bad, &rules, now()).standing {
        Standing::Problem(problem) => {
            assert_eq!(problem.reason, "annotation");
            assert!(
                problem.message.contains("kube-gc.io/ttl"),
                "{}",
                problem.message
            );
        }
        other => panic!("expected a problem, got {other:?}"),
    }
}

#[test]
fn a_cel_error_keeps_the_object_and_running_objects_are_kept() {
    let rules = rules(vec![policy(
        "metadata: {name: p}\nspec: {preset: pods, ttlSecondsAfterFinished: 0, match: \"object.spec.nodeName == 'n1'\"}",
        true,
    )]);
    match assess(&pod("data", "a"), &rules, now()).standing {
        Standing::Problem(problem) => assert_eq!(problem.reason, "match"),
        other => panic!("expected a problem, got {other:?}"),
    }
    let plain = self::rules(vec![policy(
        "metadata: {name: p}\nspec: {preset: pods, ttlSecondsAfterFinished: 0}",
        true,
    )]);
    let mut running = pod("data", "r");
    running["status"] = json!({"phase": "Running"});
    let g = governed(&assess(&running, &plain, now())).clone();
    assert_eq!(
        decide(&g.facts, g.ttl, now()),
        Ok(Verdict::Keep(KeepReason::NotFinished))
    );
}

#[test]
fn history_groups_follow_the_owner_or_a_label() {
    let by_owner = rules(vec![policy(
        "metadata: {name: p}\nspec: {preset: pods, successfulHistoryLimit: 1, includeControlled: true}",
        true,
    )]);
    let mut owned = pod("data", "a");
    owned["metadata"]["ownerReferences"] = json!([{"apiVersion": "batch/v1", "kind": "Job",
        "name": "j", "uid": "job-uid", "controller": true}]);
    assert_eq!(
        governed(&assess(&owned, &by_owner, now())).group.as_deref(),
        Some("job-uid")
    );
    assert_eq!(
        governed(&assess(&pod("data", "b"), &by_owner, now()))
            .group
            .as_deref(),
        Some("(none)")
    );
    let by_label = rules(vec![policy(
        "metadata: {name: p}\nspec: {preset: pods, successfulHistoryLimit: 1, groupBy: {label: app}}",
        true,
    )]);
    assert_eq!(
        governed(&assess(&pod("data", "c"), &by_label, now()))
            .group
            .as_deref(),
        Some("etl")
    );
    let no_limits = rules(vec![policy(
        "metadata: {name: p}\nspec: {preset: pods}",
        true,
    )]);
    assert_eq!(
        governed(&assess(&pod("data", "d"), &no_limits, now())).group,
        None
    );
}

#[test]
fn a_deleted_objects_final_state_keeps_the_identity_project_gives_and_nothing_else() {
    let rules = rules(vec![policy(
        "metadata: {name: pods}\nspec: {preset: pods, ttlSecondsAfterFinished: 1800}",
        true,
    )]);
    for object in [
        pod("data", "a"),
        json!({"metadata": {"name": "cluster-wide"}}),
    ] {
        let text = serde_json::to_vec(&object).unwrap();
        let assessed = assess(&object, &rules, now());
        let deleted = gone(&text).unwrap();
        assert_eq!(deleted.standing, Standing::Gone);
        assert_eq!(deleted.key(), assessed.key());
        assert_eq!(deleted.uid(), assessed.uid());
        assert_eq!(deleted.resource_version(), assessed.resource_version());
    }
    // Escaped strings are unescaped, not borrowed.
    let escaped = gone(
        br#"{"metadata":{"name":"a\u002db","namespace":"n","uid":"u\"1","resourceVersion":"9"}}"#,
    )
    .unwrap();
    assert_eq!(escaped.key().to_string(), "n/a-b");
    assert_eq!(escaped.uid(), "u\"1");
    // No or null metadata: an empty identity, as `assess` gives.
    for text in [&br#"{"kind":"Pod"}"#[..], br#"{"metadata":null}"#] {
        let deleted = gone(text).unwrap();
        assert_eq!(deleted.key().to_string(), "");
        assert_eq!(deleted.resource_version(), "");
    }
    // Not one object, or an identity field that is not a string: refused, as bad input.
    for text in [
        &br#"["a"]"#[..],
        br#"{"metadata":{"name":"a"}} trailing"#,
        br#"{"metadata":{"name":7}}"#,
        b"",
    ] {
        assert!(gone(text).is_err(), "{}", String::from_utf8_lossy(text));
    }
}

#[test]
fn of_metadata_only_what_an_assessment_reads_is_built() {
    let text = r#"{"metadata":{"name":"j","namespace":"n","uid":"u","generation":3,
        "finalizers":["f"],"labels":{"app":"x"},
        "annotations":{"kube-gc.io/ttl":"1h","last-applied":"{...}"},
        "ownerReferences":[{"apiVersion":"batch/v1","kind":"CronJob","name":"c",
                            "uid":"o","controller":true,"blockOwnerDeletion":true}],
        "managedFields":[{"manager":"m"}]},"spec":{"big":1}}"#;
    let value = decode_needed(text.as_bytes(), &needed(&[])).unwrap();
    assert_eq!(
        value,
        json!({"metadata":{"name":"j","namespace":"n","uid":"u","labels":{"app":"x"},
               "annotations":{"kube-gc.io/ttl":"1h"},
               "ownerReferences":[{"uid":"o","controller":true}]}})
    );
    // Asked for by name, managedFields is still never built; a whole need on the owner
    // references keeps them whole.
    let mut need = needed(&[]);
    need.add(&["metadata", "managedFields"]);
    need.add(&["metadata", "ownerReferences"]);
    let value = decode_needed(text.as_bytes(), &need).unwrap();
    assert!(value["metadata"].get("managedFields").is_none());
    assert_eq!(value["metadata"]["ownerReferences"][0]["kind"], "CronJob");
}
