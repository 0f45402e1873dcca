//! Tests of [`payload`]: every field a receiver reads, and the Slack text.

use super::*;

fn at(seconds: i64) -> DateTime<Utc> {
    DateTime::<Utc>::from_timestamp(1_800_000_000 + seconds, 0).unwrap_or_default()
}

fn record(name: &str, audit: bool) -> DeletionRecord {
    DeletionRecord {
        controller: "retention",
        policy: Some(PolicyId::cluster("nightly")),
        audit,
        kind: "Pod".into(),
        namespace: Some("ci".into()),
        name: name.into(),
        uid: format!("uid-{name}"),
        reason: "ttl",
        at: at(30),
    }
}

fn pending(controller: &'static str, audit: bool, names: &[(&str, Option<i64>)]) -> Pending {
    Pending {
        controller,
        policy: None,
        audit,
        due_now: 0,
        within: vec![names.len() as u64],
        earliest: names
            .iter()
            .map(|(name, seconds)| PendingDeletion {
                kind: "Job".into(),
                namespace: Some("default".into()),
                name: (*name).into(),
                uid: String::new(),
                at: seconds.map(at),
                reason: "ttl",
            })
            .collect(),
    }
}

#[test]
fn a_batch_says_what_was_deleted_what_would_have_been_and_what_comes() {
    let mut batch = Batch::new(at(0), 2);
    for name in ["a", "b", "c"] {
        batch.push(record(name, false));
    }
    batch.push(record("trial", true));
    let upcoming = Upcoming::of(
        &[
            pending(
                "ttl-after-finished",
                false,
                &[("job-later", Some(100)), ("job-due", None)],
            ),
            pending("retention", true, &[("audited", Some(70))]),
        ],
        10,
        at(60),
    );
    assert_eq!(
        upcoming.total, 2,
        "an Audit policy's deletions will not be made"
    );
    let window = Window {
        destination: "--notify-webhook-url",
        to: at(60),
        next: Duration::from_secs(60),
    };
    assert!(worth_sending(&batch, &upcoming));
    let body = payload(&batch, &upcoming, &window);
    assert_eq!(body["source"], "kube-gc");
    assert_eq!(body["window"]["from"], rfc3339(at(0)));
    assert_eq!(body["window"]["nextUntil"], rfc3339(at(120)));
    assert_eq!(body["deleted"]["total"], 3);
    assert_eq!(body["deleted"]["omitted"], 1);
    let first = &body["deleted"]["items"][0];
    assert_eq!(first["name"], "a");
    assert_eq!(first["policyKind"], "ClusterRetentionPolicy");
    assert_eq!(first["policy"], "nightly");
    assert_eq!(first["at"], rfc3339(at(30)));
    assert_eq!(body["deleted"]["counts"][0]["count"], 3);
    assert_eq!(body["wouldDelete"]["total"], 1);
    let due = &body["upcoming"]["items"][0];
    assert_eq!(
        (due["name"].as_str(), due.get("deletesAt")),
        (Some("job-due"), None)
    );
    assert_eq!(body["upcoming"]["items"][1]["deletesAt"], rfc3339(at(100)));
    let text = body["text"].as_str().unwrap();
    assert!(
        text.starts_with("*kube-gc* (--notify-webhook-url): 3 deleted in the last 1m; 1 would have been deleted by policies in Audit mode (kept); 2 due in the next 1m"),
        "{text}"
    );
    assert!(
        text.contains("• Pod ci/a — retention (ClusterRetentionPolicy nightly), ttl"),
        "{text}"
    );
    assert!(text.contains("…and 1 more"), "{text}");
    assert!(
        text.contains("• Job default/job-due — ttl-after-finished, ttl, now"),
        "{text}"
    );
}

#[test]
fn nothing_done_and_nothing_coming_is_not_worth_a_request() {
    let batch = Batch::new(at(0), 10);
    let upcoming = Upcoming::of(&[pending("ttl-after-finished", false, &[])], 10, at(0));
    assert!(!worth_sending(&batch, &upcoming));
}
