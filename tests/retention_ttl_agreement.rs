//! The TTL controllers and the retention presets that stand for them (`batch-jobs`,
//! `volcano-jobs`) must never disagree: every fixture of those presets is read both ways — the
//! controllers' typed projection (`TtlObject<K>`) and the preset's rule over the JSON — and
//! judged at times before, at and after its expiry, and the verdicts must be the same.

use std::fs;
use std::path::Path;

use chrono::{DateTime, Duration, Utc};
use serde_json::Value;

use kube_gc::controllers::retention::judge::{judge as judge_retention, Facts, Verdict};
use kube_gc::controllers::retention::preset::named;
use kube_gc::controllers::retention::rule::own_ttl_field;
use kube_gc::controllers::retention::ttl::{effective, PolicyTtl, Since};
use kube_gc::controllers::ttl::{
    judge as judge_ttl, BatchJob, Finished, TtlKind, TtlObject, Verdict as TtlVerdict, VolcanoJobs,
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

/// The instants worth judging at: around the finish and the expiry, and far away.
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

fn agree<K: TtlKind>(preset_name: &str) {
    let preset = named(preset_name).expect("the preset exists");
    for (file, object) in objects(preset_name) {
        let typed: TtlObject<K> = serde_json::from_value(object.clone()).unwrap();
        let state = *typed.state();
        let finished = preset.finish.evaluate(&object, Utc::now()).unwrap();
        // Whether and when it finished.
        let typed_finish = match state.finished {
            Finished::No => None,
            Finished::At(at) => Some(Some(at)),
            Finished::WithoutTime => Some(None),
        };
        assert_eq!(typed_finish, finished.map(|f| f.at), "{file}: finish");
        // Its own TTL.
        let own = own_ttl_field(&preset.own_ttl, &object, finished.map(|f| f.outcome)).unwrap();
        assert_eq!(
            state.ttl_seconds.map(i64::from),
            own.map(|(_, s)| s),
            "{file}: TTL"
        );
        // The same verdict at every instant. A policy naming the preset sets no TTL of its own:
        // the object's field is the TTL, as with the controllers.
        let policy = PolicyTtl {
            since: Since::Finished,
            length: None,
        };
        let own_path = own.map(|(f, s)| (f.path.to_string(), s));
        let (ttl, _) = effective(
            policy,
            own_path.as_ref().map(|(p, s)| (p.as_str(), *s)),
            None,
            None,
        )
        .unwrap();
        let facts = Facts {
            being_deleted: state.being_deleted,
            created_at: None,
            finished,
        };
        for now in instants(
            finished.and_then(|f| f.at),
            state.ttl_seconds.map(i64::from),
        ) {
            let by_controller = judge_ttl(&state, now);
            let by_preset = judge_retention(&facts, ttl, now).map(as_ttl_verdict);
            match (by_controller, by_preset) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "{file} at {now}"),
                (Err(_), Err(_)) => {}
                (a, b) => panic!("{file} at {now}: controller {a:?}, preset {b:?}"),
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
