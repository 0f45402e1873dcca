//! Evaluation of finish rules and own TTLs, rule by rule.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::*;

fn t(text: &str) -> DateTime<Utc> {
    kube_gc_api::Time::parse(text).unwrap().0
}

fn now() -> DateTime<Utc> {
    t("2026-11-25T10:00:00Z")
}

fn path(text: &str) -> FieldPath {
    FieldPath::parse(text).unwrap()
}

fn job_rule() -> FinishRule {
    let rule = |type_: &str, outcome| ConditionRule {
        type_: type_.into(),
        status: "True".into(),
        outcome,
    };
    FinishRule {
        kind: FinishKind::Conditions(vec![
            rule("Complete", Outcome::Succeeded),
            rule("Failed", Outcome::Failed),
        ]),
        time: FinishTime::MatchedCondition,
    }
}

fn with_conditions(conditions: Value) -> Value {
    json!({"status": {"conditions": conditions}})
}

fn finished(outcome: Outcome, at: Option<&str>) -> Option<Finished> {
    Some(Finished {
        outcome,
        at: at.map(t),
    })
}

#[test]
fn a_condition_finishes_only_with_its_exact_status() {
    let rule = job_rule();
    for running in [
        json!({}),
        json!({"status": {}}),
        json!({"status": {"conditions": null}}),
        with_conditions(json!([])),
        with_conditions(json!([{"type": "Complete", "status": "False"}])),
        with_conditions(json!([{"type": "Complete", "status": "Unknown"}])),
        with_conditions(json!([{"type": "Complete", "status": "true"}])),
        with_conditions(json!([{"type": "SuccessCriteriaMet", "status": "True"}])),
        with_conditions(json!(["odd", {"status": "True"}, {"type": "Complete"}])),
    ] {
        assert_eq!(rule.evaluate(&running, now()), Ok(None), "{running}");
    }
    let failed = with_conditions(json!([
        {"type": "FailureTarget", "status": "True", "lastTransitionTime": "2026-11-22T03:40:00Z"},
        {"type": "Failed", "status": "True", "lastTransitionTime": "2026-11-22T03:45:32Z"}
    ]));
    assert_eq!(
        rule.evaluate(&failed, now()),
        Ok(finished(Outcome::Failed, Some("2026-11-22T03:45:32Z")))
    );
}

#[test]
fn the_first_rule_that_matches_wins_and_unknown_never_does() {
    let both = with_conditions(json!([
        {"type": "Failed", "status": "True", "lastTransitionTime": "2026-11-22T03:00:00Z"},
        {"type": "Complete", "status": "True", "lastTransitionTime": "2026-11-22T04:00:00Z"}
    ]));
    assert_eq!(
        job_rule().evaluate(&both, now()),
        Ok(finished(Outcome::Succeeded, Some("2026-11-22T04:00:00Z")))
    );
    let unknown = FinishRule {
        kind: FinishKind::Conditions(vec![ConditionRule {
            type_: "Succeeded".into(),
            status: "Unknown".into(),
            outcome: Outcome::Succeeded,
        }]),
        time: FinishTime::MatchedCondition,
    };
    let running = with_conditions(json!([{"type": "Succeeded", "status": "Unknown"}]));
    assert_eq!(unknown.evaluate(&running, now()), Ok(None));
}

#[test]
fn a_matched_condition_without_a_time_is_finished_at_an_unknown_time() {
    let odd = with_conditions(json!([{"type": "Complete", "status": "True"}]));
    assert_eq!(
        job_rule().evaluate(&odd, now()),
        Ok(finished(Outcome::Succeeded, None))
    );
    let null = with_conditions(
        json!([{"type": "Complete", "status": "True", "lastTransitionTime": null}]),
    );
    assert_eq!(
        job_rule().evaluate(&null, now()),
        Ok(finished(Outcome::Succeeded, None))
    );
}

#[test]
fn conditions_or_times_of_the_wrong_shape_are_errors_naming_the_path() {
    let not_a_list = json!({"status": {"conditions": {"type": "Complete"}}});
    assert_eq!(
        job_rule()
            .evaluate(&not_a_list, now())
            .unwrap_err()
            .to_string(),
        r#"status.conditions: expected an array, found {"type":"Complete"}"#
    );
    let bad_time = with_conditions(
        json!([{"type": "Complete", "status": "True", "lastTransitionTime": "yesterday"}]),
    );
    assert_eq!(
        job_rule().evaluate(&bad_time, now()),
        Err(RuleError::BadTime {
            path: "status.conditions[type=Complete].lastTransitionTime".into(),
            value: "yesterday".into()
        })
    );
}

#[test]
fn times_parse_in_every_form_the_server_writes() {
    for (text, expected) in [
        ("2026-11-22T03:45:32Z", "2026-11-22T03:45:32Z"),
        ("2026-11-22T05:45:32+02:00", "2026-11-22T03:45:32Z"),
        ("2026-11-22T03:45:32.123456Z", "2026-11-22T03:45:32.123456Z"),
    ] {
        let object = with_conditions(
            json!([{"type": "Complete", "status": "True", "lastTransitionTime": text}]),
        );
        let got = job_rule().evaluate(&object, now()).unwrap().unwrap().at;
        assert_eq!(got, Some(t(expected)), "{text}");
    }
}

fn phase_rule(time: FinishTime) -> FinishRule {
    FinishRule {
        kind: FinishKind::Field {
            path: path("status.phase"),
            succeeded: vec!["Succeeded".into()],
            failed: vec!["Failed".into(), "Error".into()],
        },
        time,
    }
}

#[test]
fn a_field_rule_reads_its_values() {
    let rule = phase_rule(FinishTime::Field(path("status.finishedAt")));
    let phase = |p: Value| json!({"status": {"phase": p, "finishedAt": "2026-11-22T03:45:32Z"}});
    assert_eq!(rule.evaluate(&phase(json!("Running")), now()), Ok(None));
    assert_eq!(rule.evaluate(&phase(Value::Null), now()), Ok(None));
    assert_eq!(rule.evaluate(&json!({"status": {}}), now()), Ok(None));
    let at = Some("2026-11-22T03:45:32Z");
    assert_eq!(
        rule.evaluate(&phase(json!("Succeeded")), now()),
        Ok(finished(Outcome::Succeeded, at))
    );
    assert_eq!(
        rule.evaluate(&phase(json!("Error")), now()),
        Ok(finished(Outcome::Failed, at))
    );
    assert!(matches!(
        rule.evaluate(&phase(json!({"x": 1})), now()),
        Err(RuleError::WrongType { path, .. }) if path == "status.phase"
    ));
}

#[test]
fn a_field_rule_compares_numbers_and_bools_by_their_json_text() {
    let rule = FinishRule {
        kind: FinishKind::Field {
            path: path("status.done"),
            succeeded: vec!["true".into()],
            failed: vec!["2".into()],
        },
        time: FinishTime::Field(path("status.at")),
    };
    assert_eq!(
        rule.evaluate(&json!({"status": {"done": true}}), now()),
        Ok(finished(Outcome::Succeeded, None))
    );
    assert_eq!(
        rule.evaluate(&json!({"status": {"done": 2}}), now()),
        Ok(finished(Outcome::Failed, None))
    );
    assert_eq!(
        rule.evaluate(&json!({"status": {"done": false}}), now()),
        Ok(None)
    );
}

#[test]
fn a_time_field_of_the_wrong_type_is_an_error() {
    let rule = phase_rule(FinishTime::Field(path("status.finishedAt")));
    let object = json!({"status": {"phase": "Failed", "finishedAt": 1700000000}});
    assert_eq!(
        rule.evaluate(&object, now()).unwrap_err().to_string(),
        "status.finishedAt: expected an RFC 3339 time, found 1700000000"
    );
}

#[test]
fn a_condition_time_reads_that_type_whatever_its_status() {
    let rule = phase_rule(FinishTime::Condition("Ready".into()));
    let object = json!({"status": {"phase": "Succeeded", "conditions": [
        {"type": "Ready", "status": "False", "lastTransitionTime": "2026-11-22T03:45:32Z"}
    ]}});
    assert_eq!(
        rule.evaluate(&object, now()),
        Ok(finished(Outcome::Succeeded, Some("2026-11-22T03:45:32Z")))
    );
    let without = json!({"status": {"phase": "Succeeded"}});
    assert_eq!(
        rule.evaluate(&without, now()),
        Ok(finished(Outcome::Succeeded, None))
    );
}

fn cel(source: &str) -> CelExpr {
    CelExpr::compile(source).unwrap()
}

#[test]
fn a_cel_rule_decides_finished_then_failed() {
    let rule = FinishRule {
        kind: FinishKind::Cel {
            finished: cel("object.status.state in ['done', 'broken']"),
            failed: Some(cel("object.status.state == 'broken'")),
        },
        time: FinishTime::Cel(cel("object.status.at")),
    };
    let state = |s: &str| json!({"status": {"state": s, "at": "2026-11-22T03:45:32Z"}});
    let at = Some("2026-11-22T03:45:32Z");
    assert_eq!(rule.evaluate(&state("running"), now()), Ok(None));
    assert_eq!(
        rule.evaluate(&state("done"), now()),
        Ok(finished(Outcome::Succeeded, at))
    );
    assert_eq!(
        rule.evaluate(&state("broken"), now()),
        Ok(finished(Outcome::Failed, at))
    );
    let no_failed = FinishRule {
        kind: FinishKind::Cel {
            finished: cel("true"),
            failed: None,
        },
        time: FinishTime::Field(path("status.at")),
    };
    assert_eq!(
        no_failed.evaluate(&state("broken"), now()),
        Ok(finished(Outcome::Succeeded, at))
    );
}

#[test]
fn a_cel_error_is_a_rule_error() {
    let rule = FinishRule {
        kind: FinishKind::Cel {
            finished: cel("object.status.state == 'done'"),
            failed: None,
        },
        time: FinishTime::Field(path("status.at")),
    };
    assert!(matches!(
        rule.evaluate(&json!({"metadata": {}}), now()),
        Err(RuleError::Cel(CelEvalError::Failed { expr, .. })) if expr == "object.status.state == 'done'"
    ));
}

fn pod(init: Value, init_statuses: Value, statuses: Value) -> Value {
    json!({
        "spec": {"initContainers": init},
        "status": {
            "phase": "Succeeded",
            "initContainerStatuses": init_statuses,
            "containerStatuses": statuses,
        }
    })
}

fn terminated(name: &str, at: &str) -> Value {
    json!({"name": name, "state": {"terminated": {"exitCode": 0, "finishedAt": at}}})
}

fn pod_time(object: &Value) -> Result<Option<DateTime<Utc>>, RuleError> {
    let rule = phase_rule(FinishTime::ContainersTerminated);
    rule.evaluate(object, now()).map(|f| f.and_then(|f| f.at))
}

#[test]
fn a_pod_finished_when_its_last_container_did() {
    let object = pod(
        json!([{"name": "setup"}]),
        json!([terminated("setup", "2026-11-22T03:50:00Z")]),
        json!([
            terminated("a", "2026-11-22T03:45:32Z"),
            terminated("b", "2026-11-22T03:46:00Z")
        ]),
    );
    // `setup` is an ordinary init container: left out, even with a (forged) later time.
    assert_eq!(pod_time(&object), Ok(Some(t("2026-11-22T03:46:00Z"))));
}

#[test]
fn sidecars_count_and_any_container_still_running_leaves_the_time_unknown() {
    let with_sidecar = pod(
        json!([{"name": "proxy", "restartPolicy": "Always"}]),
        json!([terminated("proxy", "2026-11-22T03:47:00Z")]),
        json!([terminated("main", "2026-11-22T03:46:00Z")]),
    );
    assert_eq!(pod_time(&with_sidecar), Ok(Some(t("2026-11-22T03:47:00Z"))));
    let sidecar_running = pod(
        json!([{"name": "proxy", "restartPolicy": "Always"}]),
        json!([{"name": "proxy", "state": {"running": {}}}]),
        json!([terminated("main", "2026-11-22T03:46:00Z")]),
    );
    assert_eq!(pod_time(&sidecar_running), Ok(None));
    let main_running = pod(
        json!(null),
        json!(null),
        json!([
            terminated("a", "2026-11-22T03:46:00Z"),
            {"name": "b", "state": {"running": {"startedAt": "2026-11-22T03:00:00Z"}}}
        ]),
    );
    assert_eq!(pod_time(&main_running), Ok(None));
    let never_ran = json!({"status": {"phase": "Failed", "reason": "OutOfcpu"}});
    assert_eq!(pod_time(&never_ran), Ok(None));
}

#[test]
fn a_bad_container_time_names_the_container() {
    let object = pod(
        json!(null),
        json!(null),
        json!([terminated("main", "not a time")]),
    );
    assert_eq!(
        pod_time(&object).unwrap_err().to_string(),
        r#"status.containerStatuses[name=main].state.terminated.finishedAt: "not a time" is not an RFC 3339 time"#
    );
}

fn argo_ttl() -> Vec<TtlField> {
    let strategy = |key: &str| FieldPath::new(["spec", "ttlStrategy", key]);
    let phase = || FieldPath::new(["status", "phase"]);
    vec![
        TtlField::on(Outcome::Failed, strategy("secondsAfterFailure")).when(phase(), "Failed"),
        TtlField::on(Outcome::Failed, strategy("secondsAfterError")).when(phase(), "Error"),
        TtlField::on(Outcome::Succeeded, strategy("secondsAfterSuccess")),
        TtlField::any(strategy("secondsAfterCompletion")),
    ]
}

#[test]
fn own_ttl_takes_the_first_field_that_applies_and_is_set() {
    let fields = argo_ttl();
    let wf = |phase: &str, strategy: Value| json!({"spec": {"ttlStrategy": strategy}, "status": {"phase": phase}});
    let all = json!({"secondsAfterFailure": 1, "secondsAfterError": 2,
                     "secondsAfterSuccess": 3, "secondsAfterCompletion": 4});
    let ttl = |o: &Value, outcome| own_ttl(&fields, o, outcome);
    assert_eq!(
        ttl(&wf("Failed", all.clone()), Some(Outcome::Failed)),
        Ok(Some(1))
    );
    assert_eq!(
        ttl(&wf("Error", all.clone()), Some(Outcome::Failed)),
        Ok(Some(2))
    );
    assert_eq!(
        ttl(&wf("Succeeded", all.clone()), Some(Outcome::Succeeded)),
        Ok(Some(3))
    );
    assert_eq!(ttl(&wf("Running", all), None), Ok(Some(4)));
    let only_failure = json!({"secondsAfterFailure": 1, "secondsAfterCompletion": null});
    assert_eq!(
        ttl(&wf("Error", only_failure.clone()), Some(Outcome::Failed)),
        Ok(None)
    );
    assert_eq!(
        ttl(&wf("Succeeded", only_failure), Some(Outcome::Succeeded)),
        Ok(None)
    );
    assert_eq!(ttl(&json!({}), Some(Outcome::Failed)), Ok(None));
}

#[test]
fn own_ttl_must_be_a_non_negative_integer() {
    let fields = [TtlField::any(path("spec.ttlSecondsAfterFinished"))];
    let job = |v: Value| json!({"spec": {"ttlSecondsAfterFinished": v}});
    assert_eq!(own_ttl(&fields, &job(json!(0)), None), Ok(Some(0)));
    assert_eq!(
        own_ttl(&fields, &job(json!(-1)), None),
        Err(RuleError::NegativeTtl {
            path: "spec.ttlSecondsAfterFinished".into(),
            value: -1
        })
    );
    for bad in [json!("60"), json!(1.5), json!({})] {
        assert!(
            matches!(
                own_ttl(&fields, &job(bad.clone()), None),
                Err(RuleError::WrongType {
                    expected: "an integer",
                    ..
                })
            ),
            "{bad}"
        );
    }
}

#[test]
fn outcomes_spell_as_policies_write_them() {
    for outcome in [Outcome::Succeeded, Outcome::Failed] {
        assert_eq!(Outcome::parse(outcome.as_str()), Some(outcome));
    }
    assert_eq!(Outcome::parse("failed"), None);
}
