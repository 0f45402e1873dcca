//! The TTL controllers and a retention policy naming the preset they run on (`batch-jobs`,
//! `volcano-jobs`) must never disagree: every fixture of those presets is judged both ways —
//! by the controller's fixed policy, read as the controller reads it ([`TtlState`] and its
//! `judge`), and by a `ClusterRetentionPolicy` `{preset: …}` with no TTL of its own, as the
//! retention controller judges it — at times before, at and after its expiry, and the verdicts
//! must be the same. (The fixtures carry no `kube-gc.io` annotation, which only the policy
//! reads.)

use std::fs;
use std::path::Path;

use chrono::{DateTime, Duration, Utc};
use serde_json::Value;

use std::collections::BTreeMap;
use std::sync::Arc;

use kube_gc::controllers::retention::assessment::{assess, ResourcePolicies};
use kube_gc::controllers::retention::policy::{compile, RetentionPolicyObject};
use kube_gc::controllers::retention::verdict::{decide, Verdict};
use kube_gc::controllers::ttl::{
    judge as judge_ttl, judge_object, BatchJob, Finished, TtlKind, TtlState, Verdict as TtlVerdict,
    VolcanoJobs,
};

fn objects(preset: &str) -> Vec<(String, Value)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/retention/presets")
        .join(preset);
    let mut found: Vec<(String, Value)> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .map(|p| {
            let fixture: Value = serde_json::from_str(&fs::read_to_string(&p).unwrap()).unwrap();
            (p.display().to_string(), fixture["object"].clone())
        })
        .collect();
    found.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(found.len() >= 4, "{preset}: too few fixtures");
    found
}

/// The instants worth assessing at: around the finish and the expiry, and far away.
fn instants(finished: Option<DateTime<Utc>>, ttl: Option<i64>) -> Vec<DateTime<Utc>> {
    let base = finished.unwrap_or_else(|| DateTime::from_timestamp(1_800_000_000, 0).unwrap());
    let expiry = base + Duration::seconds(ttl.unwrap_or(0));
    let mut at = vec![
        base - Duration::days(1),
        base,
        expiry - Duration::seconds(1),
        expiry,
    ];
    at.extend([expiry + Duration::seconds(1), expiry + Duration::days(30)]);
    at
}

/// The retention verdict, in the TTL controllers' terms.
fn as_ttl_verdict(verdict: Verdict) -> TtlVerdict {
    match verdict {
        Verdict::Keep(_) => TtlVerdict::Keep,
        Verdict::Wait {
            expires_at,
            remaining,
            finished_in_future,
        } => TtlVerdict::Wait {
            expires_at,
            remaining,
            finished_in_future,
        },
        Verdict::Expired { expired_at } => TtlVerdict::Expired { expired_at },
    }
}

/// The rules of a `ClusterRetentionPolicy` that names `preset` and nothing else.
fn policy_rules(preset: &str) -> ResourcePolicies {
    let object: RetentionPolicyObject = serde_json::from_value(serde_json::json!({
        "apiVersion": "kube-gc.io/v1alpha1", "kind": "ClusterRetentionPolicy",
        "metadata": {"name": "same-preset", "generation": 1},
        "spec": {"preset": preset}
    }))
    .unwrap();
    ResourcePolicies {
        policies: vec![Arc::new(compile(&object, true).unwrap())],
        namespaces: BTreeMap::new(),
    }
}

fn agree<K: TtlKind>(preset_name: &str) {
    let rules = policy_rules(preset_name);
    let decoded_at = Utc::now();
    for (file, object) in objects(preset_name) {
        let state = TtlState::of(&judge_object::<K>(&object, decoded_at)).unwrap();
        let by_policy = assess(&object, &rules, decoded_at);
        let governed = by_policy.governed().expect("the policy governs it");
        // Whether and when it finished.
        let controller_finish = match state.finished {
            Finished::No => None,
            Finished::At(at) => Some(Some(at)),
            Finished::WithoutTime => Some(None),
        };
        let policy_finish = governed.facts.finished.map(|f| f.at);
        assert_eq!(controller_finish, policy_finish, "{file}: finish");
        // The same verdict at every instant.
        for now in instants(policy_finish.flatten(), state.ttl_seconds) {
            let by_controller = judge_ttl(&state, now);
            let by_preset = decide(&governed.facts, governed.ttl, now).map(as_ttl_verdict);
            match (by_controller, by_preset) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "{file} at {now}"),
                (Err(_), Err(_)) => {}
                (a, b) => panic!("{file} at {now}: controller {a:?}, policy {b:?}"),
            }
        }
    }
}

#[test]
fn the_job_ttl_controller_and_the_batch_jobs_preset_agree() {
    agree::<BatchJob>("batch-jobs");
}

#[test]
fn the_volcano_ttl_controller_and_the_volcano_jobs_preset_agree() {
    agree::<VolcanoJobs>("volcano-jobs");
}
