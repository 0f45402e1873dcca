//! The namespace explanation on hand-made facts: its verdict follows the controller's next
//! step, and every blocker is named.

use chrono::{DateTime, Utc};

use super::{explain_namespace, namespace_decision};
use crate::explain::gather::{NamespaceContent, NamespaceFacts};
use crate::explain::{Settings, VerdictKind};
use crate::selection::ControllerSelection;
use kube_gc_client::ResourceRef;
use kube_gc_controllers::namespace::decide::{
    Content, ContentType, FailedGroup, Known, Object, Progress, Subject,
};

fn at(seconds: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(1_800_000_000 + seconds, 0).unwrap_or_default()
}

fn kind(plural: &str, kind: &str) -> ContentType {
    ContentType {
        resource: ResourceRef::new("", "v1", plural, kind, true),
        delete_collection: true,
    }
}

fn object(name: &str, finalizers: &[&str], deleting: bool) -> Object {
    Object {
        name: name.to_owned(),
        uid: format!("uid-{name}"),
        finalizers: finalizers.iter().map(|f| f.to_string()).collect(),
        deleting,
    }
}

/// Namespace `ns`, deleted at 0, with `pods` and `configmaps` as cached (not listed).
fn facts(pods: Vec<Object>, configmaps: Vec<Object>, progress: Progress) -> NamespaceFacts {
    let types = vec![kind("configmaps", "ConfigMap"), kind("pods", "Pod")];
    let content = vec![
        Content {
            kind: types[0].clone(),
            known: Known::Cached(configmaps),
            failure: None,
        },
        Content {
            kind: types[1].clone(),
            known: Known::Cached(pods),
            failure: None,
        },
    ];
    NamespaceFacts {
        subject: Subject {
            name: "ns".into(),
            uid: "uid-ns".into(),
            deletion_timestamp: Some(at(0)),
            spec_finalizers: vec!["kubernetes".into()],
        },
        finalizers: Vec::new(),
        phase: Some("Terminating".into()),
        conditions: Vec::new(),
        content: Some(NamespaceContent {
            types,
            content,
            progress,
            source: "test".into(),
            ..NamespaceContent::default()
        }),
        discovered_at: Some(at(-60)),
    }
}

fn proven(pods_gone: bool) -> Progress {
    let mut progress = Progress {
        pods_gone,
        ..Progress::default()
    };
    for plural in ["configmaps", "pods"] {
        progress
            .proven_empty
            .insert(ResourceRef::new("", "v1", plural, "", true));
    }
    progress
}

#[test]
fn content_left_while_the_pods_are_not_proven_gone_is_blocked_not_finalized() {
    let held = facts(
        Vec::new(),
        vec![object("cm", &["example.com/hold"], false)],
        Progress::default(),
    );
    let d = namespace_decision(&held, &Settings::default(), at(10));
    assert_eq!(
        (d.governs, d.verdict),
        (true, VerdictKind::Blocked),
        "{d:?}"
    );
    assert!(
        d.summary.contains("a LIST must prove the Pods gone first"),
        "{d:?}"
    );
}

#[test]
fn an_empty_namespace_goes_when_the_safety_delay_ends() {
    let mut empty = facts(Vec::new(), Vec::new(), proven(true));
    let d = namespace_decision(&empty, &Settings::default(), at(2));
    assert_eq!(d.verdict, VerdictKind::DeleteAt, "{d:?}");
    assert_eq!(d.delete_at.as_deref(), Some("2027-01-15T08:00:05Z"));
    // Past it, with a discovery made since, it is finalized now.
    empty.discovered_at = Some(at(6));
    let d = namespace_decision(&empty, &Settings::default(), at(6));
    assert_eq!(d.verdict, VerdictKind::DeleteNow, "{d:?}");
}

#[test]
fn a_failed_group_holds_the_finalize_and_is_named_with_who_finishes_it() {
    let mut stale = facts(Vec::new(), Vec::new(), proven(true));
    if let Some(content) = stale.content.as_mut() {
        content.failed.push(FailedGroup {
            group_version: "metrics.k8s.io/v1beta1".into(),
            message: "stale".into(),
        });
    }
    stale.discovered_at = Some(at(6));
    let managed = ControllerSelection::parse(&["retention"]).unwrap_or_default();
    let said = explain_namespace(&stale, &Settings::default(), &managed, at(10));
    assert_eq!(said.decision.verdict, VerdictKind::Blocked);
    let kubernetes = &said.spec[0];
    assert!(kubernetes
        .blockers
        .iter()
        .any(|b| b.object == "discovery of metrics.k8s.io/v1beta1"));
    assert_eq!(
        said.report.discovery_failures[0].what,
        "metrics.k8s.io/v1beta1"
    );
    let by = said
        .report
        .finished_by
        .as_ref()
        .map(|b| (b.run_here, b.who.clone()));
    assert!(
        by.as_ref()
            .is_some_and(|(here, who)| !here && who.starts_with("kube-controller-manager's")),
        "{by:?}"
    );
}

#[test]
fn a_terminating_pod_without_its_details_says_they_are_unknown_here() {
    let pods = vec![object("web", &[], true)];
    let terminating = facts(pods, Vec::new(), Progress::default());
    let said = explain_namespace(
        &terminating,
        &Settings::default(),
        &ControllerSelection::default(),
        at(10),
    );
    let web = said.spec[0]
        .blockers
        .iter()
        .find(|b| b.object == "Pod ns/web")
        .map(|b| b.why.clone());
    assert_eq!(
        web.as_deref(),
        Some("terminating (its grace period and node are not known here)")
    );
}
