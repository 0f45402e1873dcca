//! Tests of [`upcoming`] and [`pending`]: TTLs and history limits, each object once.

use std::time::Duration;

use serde_json::{json, Value};

use super::*;
use crate::retention::assessment::assess;
use crate::retention::policy::{compile, CompiledPolicy, RetentionPolicyObject};

fn policy(yaml: &str) -> Arc<CompiledPolicy> {
    let object: RetentionPolicyObject = serde_saphyr::from_str(yaml).unwrap();
    Arc::new(compile(&object, true).unwrap())
}

fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-11-25T12:00:00Z")
        .map(|t| t.with_timezone(&Utc))
        .unwrap_or_default()
}

/// A Pod of the CronJob `nightly` that succeeded `minutes_ago`.
fn pod(name: &str, minutes_ago: i64) -> Value {
    let finished = (now() - chrono::Duration::minutes(minutes_ago)).to_rfc3339();
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "ci", "uid": format!("uid-{name}"),
                     "resourceVersion": "7", "creationTimestamp": "2026-11-25T00:00:00Z",
                     "ownerReferences": [{"apiVersion": "batch/v1", "kind": "CronJob",
                         "name": "nightly", "uid": "cron-1", "controller": true}]},
        "status": {"phase": "Succeeded", "containerStatuses": [
            {"name": "main", "state": {"terminated": {"exitCode": 0,
                "startedAt": finished, "finishedAt": finished}}}]}
    })
}

fn rules(policies: Vec<Arc<CompiledPolicy>>) -> ResourcePolicies {
    ResourcePolicies {
        policies,
        namespaces: BTreeMap::from([("ci".to_owned(), BTreeMap::new())]),
    }
}

fn assessed(rules: &ResourcePolicies, pods: &[Value]) -> Vec<Arc<Assessment>> {
    pods.iter()
        .map(|p| Arc::new(assess(p, rules, now())))
        .collect()
}

const POLICY: &str = "metadata: {name: nightly}\nspec: {preset: pods, includeControlled: true, ttlSecondsAfterFinished: 3600, successfulHistoryLimit: 2}";

#[test]
fn each_object_is_due_once_at_its_earliest_a_limits_excess_now() {
    let rules = rules(vec![policy(POLICY)]);
    // Newest first: fresh (TTL in 55 min), recent (TTL in 30 min), old (beyond the limit,
    // TTL in 10 min), ancient (beyond the limit and expired).
    let pods = [
        pod("fresh", 5),
        pod("recent", 30),
        pod("old", 50),
        pod("ancient", 90),
    ];
    let found = upcoming(&rules, &assessed(&rules, &pods), now());
    let mut seen: Vec<(String, Option<DateTime<Utc>>, &str)> = found
        .iter()
        .map(|u| (u.assessment.key().name().to_owned(), u.at, u.reason))
        .collect();
    seen.sort();
    let in_minutes = |m: i64| Some(now() + chrono::Duration::minutes(m));
    assert_eq!(
        seen,
        [
            ("ancient".to_owned(), None, HISTORY_LIMIT),
            ("fresh".to_owned(), in_minutes(55), TTL),
            ("old".to_owned(), None, HISTORY_LIMIT),
            ("recent".to_owned(), in_minutes(30), TTL),
        ]
    );
}

#[test]
fn running_kept_and_unknown_objects_are_not_deletions_to_come() {
    let rules = rules(vec![policy(
        "metadata: {name: p}\nspec: {preset: pods, includeControlled: true, ttlSecondsAfterFinished: 60}",
    )]);
    let mut running = pod("running", 0);
    running["status"] = json!({"phase": "Running"});
    let mut unknown = pod("unknown", 0);
    unknown["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"] = Value::Null;
    let mut deleting = pod("deleting", 600);
    deleting["metadata"]["deletionTimestamp"] = json!("2026-11-25T11:59:00Z");
    let found = upcoming(
        &rules,
        &assessed(&rules, &[running, unknown, deleting]),
        now(),
    );
    assert!(found.is_empty(), "{found:?}");
}

#[test]
fn every_policy_is_pending_per_horizon_audit_marked_and_idle_ones_at_zero() {
    let audit = policy("metadata: {name: audit}\nspec: {preset: pods, mode: Audit, selector: {matchLabels: {app: x}}, ttlSecondsAfterFinished: 0}");
    let rules = rules(vec![policy(POLICY), audit]);
    let pods = [
        pod("fresh", 5),
        pod("recent", 30),
        pod("old", 50),
        pod("ancient", 90),
    ];
    let watched = Watched {
        rules: &rules,
        kind: "Pod",
        assessments: assessed(&rules, &pods),
    };
    let query = PendingQuery {
        now: now(),
        horizons: vec![Duration::from_secs(40 * 60), Duration::from_secs(86_400)],
        limit: 3,
    };
    let pending = pending_of([watched], &query, "retention");
    assert_eq!(pending.len(), 2);
    let audit = &pending[0];
    assert_eq!(audit.policy, Some(PolicyId::cluster("audit")));
    assert!(audit.audit);
    assert_eq!((audit.due_now, audit.within.clone()), (0, vec![0, 0]));
    let nightly = &pending[1];
    assert!(!nightly.audit);
    assert_eq!(nightly.due_now, 2);
    assert_eq!(nightly.within, [3, 4]);
    let names: Vec<&str> = nightly.earliest.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["ancient", "old", "recent"]);
    assert_eq!(nightly.earliest[0].kind, "Pod");
    assert_eq!(nightly.earliest[0].reason, HISTORY_LIMIT);
}
