use super::*;
use chrono::{DateTime, Utc};

fn kind(group: &str, plural: &str, kind: &str, delete_collection: bool) -> ContentType {
    ContentType {
        resource: ResourceRef::new(group, "v1", plural, kind, true),
        delete_collection,
    }
}

fn pods() -> ContentType {
    kind("", "pods", "Pod", true)
}

fn configmaps() -> ContentType {
    kind("", "configmaps", "ConfigMap", true)
}

/// A resource served without `deletecollection`.
fn widgets() -> ContentType {
    kind("example.com", "widgets", "Widget", false)
}

fn events() -> ContentType {
    kind("", "events", "Event", true)
}

fn at(seconds: i64) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-11-29T03:00:00Z")
        .map(|t| t.to_utc())
        .unwrap_or_default()
        + chrono::Duration::seconds(seconds)
}

fn object(name: &str, finalizers: &[&str], deleting: bool) -> Object {
    Object {
        name: name.into(),
        uid: format!("uid-{name}"),
        finalizers: finalizers.iter().map(|f| f.to_string()).collect(),
        deleting,
    }
}

fn cached(kind: ContentType, objects: Vec<Object>) -> Content {
    Content {
        kind,
        known: Known::Cached(objects),
        failure: None,
    }
}

fn subject() -> Subject {
    Subject {
        name: "team-a".into(),
        uid: "ns-uid".into(),
        deletion_timestamp: Some(at(0)),
        spec_finalizers: vec![KUBERNETES_FINALIZER.into()],
    }
}

struct Scene {
    subject: Subject,
    discovered: Discovered,
    content: Vec<Content>,
    progress: Progress,
    now: DateTime<Utc>,
}

impl Scene {
    fn new(content: Vec<Content>) -> Scene {
        Scene {
            subject: subject(),
            discovered: Discovered {
                types: content.iter().map(|c| c.kind.clone()).collect(),
                failed: Vec::new(),
                started: at(0),
            },
            content,
            progress: Progress::default(),
            now: at(1),
        }
    }

    fn assess(&self) -> Assessment {
        assess(&Inputs {
            subject: &self.subject,
            discovered: &self.discovered,
            content: &self.content,
            progress: &self.progress,
            now: self.now,
            finalize_delay: Duration::from_secs(5),
        })
    }

    fn pods_proven(mut self) -> Scene {
        self.progress.pods_gone = true;
        self
    }
}

fn deleted(assessment: &Assessment) -> Vec<(String, DeleteHow)> {
    assessment
        .delete
        .iter()
        .map(|d| (d.resource.plural.clone(), d.how.clone()))
        .collect()
}

#[test]
fn a_namespace_not_deleted_or_already_finalized_is_not_ours() {
    let mut scene = Scene::new(vec![cached(configmaps(), vec![object("c", &[], false)])]);
    scene.subject.deletion_timestamp = None;
    assert_eq!(scene.assess().next, Next::Nothing);
    let mut scene = Scene::new(vec![cached(configmaps(), vec![object("c", &[], false)])]);
    scene.subject.spec_finalizers = vec!["example.com/other".into()];
    let assessment = scene.assess();
    assert_eq!(assessment.next, Next::Nothing);
    assert!(assessment.delete.is_empty() && assessment.blockers.is_empty());
}

#[test]
fn pods_go_first_and_nothing_else_is_touched_while_one_remains() {
    let scene = Scene::new(vec![
        cached(pods(), vec![object("p", &[], false)]),
        cached(configmaps(), vec![object("c", &[], false)]),
    ]);
    let assessment = scene.assess();
    assert_eq!(
        deleted(&assessment),
        [("pods".into(), DeleteHow::Collection)]
    );
    assert!(assessment.blockers.contains(&Blocker::PodsFirst));
    // A Pod a finalizer holds, marked already, still holds everything else back (upstream's
    // conformance test): nothing to delete, wait.
    let scene = Scene::new(vec![
        cached(pods(), vec![object("p", &["example.com/hold"], true)]),
        cached(configmaps(), vec![object("c", &[], false)]),
    ]);
    let assessment = scene.assess();
    assert!(assessment.delete.is_empty());
    assert_eq!(assessment.next, Next::Wait { recheck: None });
    assert!(assessment.is_settled());
}

#[test]
fn pods_gone_by_the_cache_are_proven_by_a_list_before_the_rest() {
    let scene = Scene::new(vec![
        cached(pods(), Vec::new()),
        cached(configmaps(), vec![object("c", &[], false)]),
    ]);
    let assessment = scene.assess();
    assert!(
        assessment.delete.is_empty(),
        "configmaps wait for the proof"
    );
    assert_eq!(
        assessment.next,
        Next::Prove {
            rediscover: false,
            resources: vec![pods().resource],
            emptied: Vec::new(),
        }
    );
    let assessment = scene.pods_proven().assess();
    assert_eq!(
        deleted(&assessment),
        [("configmaps".into(), DeleteHow::Collection)]
    );
}

#[test]
fn only_resources_holding_content_are_deleted_each_by_the_means_it_offers() {
    let scene = Scene::new(vec![
        cached(pods(), Vec::new()),
        cached(configmaps(), vec![object("c", &[], false)]),
        cached(widgets(), vec![object("w", &[], false)]),
        cached(kind("", "secrets", "Secret", true), Vec::new()),
    ])
    .pods_proven();
    let assessment = scene.assess();
    assert_eq!(
        deleted(&assessment),
        [
            ("configmaps".into(), DeleteHow::Collection),
            ("widgets".into(), DeleteHow::EachListed)
        ]
    );
    assert_eq!(assessment.next, Next::Delete);
}

#[test]
fn what_was_asked_is_not_asked_again_and_is_in_flight_until_marked_or_gone() {
    let mut scene = Scene::new(vec![
        cached(pods(), Vec::new()),
        cached(
            configmaps(),
            vec![
                object("a", &[], false),
                object("held", &["example.com/hold"], false),
            ],
        ),
    ])
    .pods_proven();
    scene.progress.asked = ["uid-a".to_string(), "uid-held".to_string()].into();
    let assessment = scene.assess();
    assert!(assessment.delete.is_empty());
    assert!(!assessment.is_settled(), "asked, not marked yet");
    assert_eq!(assessment.next, Next::Wait { recheck: None });
    // The watch then shows one gone and the other marked: settled.
    scene.content[1].known = Known::Cached(vec![object("held", &["example.com/hold"], true)]);
    let assessment = scene.assess();
    assert!(assessment.is_settled());
    // Marked with no finalizer holding it (a Pod in its grace period): on its way out, until
    // the settle time has passed.
    scene.content[1].known = Known::Cached(vec![object("a", &[], true)]);
    assert!(!scene.assess().is_settled());
    scene.now = at(0) + chrono::Duration::from_std(SETTLE_AFTER).unwrap();
    assert!(scene.assess().is_settled());
    scene.content[1].known = Known::Cached(vec![object("held", &["example.com/hold"], true)]);
    assert_eq!(assessment.remaining[0].count, 1);
    assert_eq!(assessment.remaining[0].finalizers["example.com/hold"], 1);
}

#[test]
fn the_garbage_collectors_finalizers_are_not_counted_as_holding_content() {
    let scene = Scene::new(vec![cached(
        configmaps(),
        vec![object("c", &["orphan", "example.com/x"], true)],
    )]);
    let assessment = scene.pods_proven().assess();
    let finalizers: Vec<&String> = assessment.remaining[0].finalizers.keys().collect();
    assert_eq!(finalizers, ["example.com/x"]);
}

#[test]
fn an_empty_namespace_waits_for_the_delay_then_a_fresh_discovery_and_lists_then_finalizes() {
    let mut scene = Scene::new(vec![
        cached(pods(), Vec::new()),
        cached(configmaps(), Vec::new()),
    ])
    .pods_proven();
    assert_eq!(scene.assess().next, Next::WaitUntil(at(5)));
    assert!(scene
        .assess()
        .blockers
        .contains(&Blocker::TooEarly { until: at(5) }));
    scene.now = at(5);
    let resources = vec![pods().resource, configmaps().resource];
    assert_eq!(
        scene.assess().next,
        Next::Prove {
            rediscover: true,
            resources: resources.clone(),
            emptied: Vec::new(),
        }
    );
    scene.discovered.started = at(5);
    assert_eq!(
        scene.assess().next,
        Next::Prove {
            rediscover: false,
            resources: resources.clone(),
            emptied: Vec::new(),
        }
    );
    scene.progress.proven_empty = resources.into_iter().collect();
    let assessment = scene.assess();
    assert_eq!(assessment.next, Next::Finalize);
    assert!(assessment.blockers.is_empty());
}

#[test]
fn never_finalized_while_content_remains_or_discovery_is_partial_or_a_request_was_refused() {
    let proven = |scene: &mut Scene| {
        scene.now = at(60);
        scene.discovered.started = at(60);
        scene.progress.proven_empty = scene
            .content
            .iter()
            .map(|c| c.kind.resource.clone())
            .collect();
    };
    // Content a finalizer holds: wait.
    let mut scene = Scene::new(vec![cached(
        configmaps(),
        vec![object("c", &["example.com/hold"], true)],
    )])
    .pods_proven();
    proven(&mut scene);
    let assessment = scene.assess();
    assert_eq!(assessment.next, Next::Wait { recheck: None });
    assert!(matches!(
        assessment.blockers[0],
        Blocker::ContentRemains { .. }
    ));
    // A group discovery could not read: retry, never finalize.
    let mut scene = Scene::new(vec![cached(configmaps(), Vec::new())]).pods_proven();
    proven(&mut scene);
    scene.discovered.failed.push(FailedGroup {
        group_version: "metrics.k8s.io/v1beta1".into(),
        message: "stale".into(),
    });
    let assessment = scene.assess();
    assert_eq!(assessment.next, Next::Retry);
    assert_eq!(assessment.blockers[0].reason(), "DiscoveryFailed");
    // A refused request: retry, never finalize, and the resource is not asked again this pass.
    let mut scene = Scene::new(vec![
        Content {
            kind: configmaps(),
            known: Known::Cached(vec![object("c", &[], false)]),
            failure: Some(Failure {
                verb: "deletecollection",
                forbidden: true,
                message: "forbidden".into(),
            }),
        },
        cached(widgets(), vec![object("w", &[], false)]),
    ])
    .pods_proven();
    proven(&mut scene);
    let assessment = scene.assess();
    assert_eq!(
        deleted(&assessment),
        [("widgets".into(), DeleteHow::EachListed)]
    );
    assert!(assessment
        .blockers
        .iter()
        .any(|b| b.reason() == "Forbidden"));
    assert_eq!(assessment.failures().count(), 1);
}

#[test]
fn content_a_list_found_where_nothing_watches_is_deleted_and_looked_at_again() {
    let mut scene = Scene::new(vec![Content {
        kind: events(),
        known: Known::Unknown,
        failure: None,
    }])
    .pods_proven();
    scene.now = at(10);
    scene.discovered.started = at(10);
    assert_eq!(
        scene.assess().next,
        Next::Prove {
            rediscover: false,
            resources: Vec::new(),
            emptied: vec![events().resource],
        }
    );
    scene.content[0].known = Known::Listed {
        objects: vec![object("e", &[], false)],
        more: true,
    };
    let assessment = scene.assess();
    assert_eq!(
        deleted(&assessment),
        [("events".into(), DeleteHow::Collection)]
    );
    assert!(assessment.remaining[0].more);
    scene.progress.asked.insert("uid-e".into());
    assert_eq!(
        scene.assess().next,
        Next::Wait {
            recheck: Some(UNWATCHED_RECHECK)
        }
    );
}

#[test]
fn a_count_a_page_cut_short_is_not_reported_before_the_settle_deadline() {
    // At start-up the Pods' cache has not synced: the proof LIST (one object a page) finds a
    // Pod being deleted, and more. "pods has 1" would be reported were it settled.
    let mut scene = Scene::new(vec![Content {
        kind: pods(),
        known: Known::Listed {
            objects: vec![object("lost", &[], true)],
            more: true,
        },
        failure: None,
    }]);
    let assessment = scene.assess();
    assert_eq!(
        assessment.next,
        Next::Wait {
            recheck: Some(UNWATCHED_RECHECK)
        }
    );
    assert!(assessment.remaining[0].more);
    assert!(!assessment.is_settled(), "{assessment:?}");
    // The cache tells how many: then it is reported.
    scene.content[0].known =
        Known::Cached(vec![object("lost", &[], true), object("web", &[], true)]);
    assert!(scene.assess().is_settled());
    // Past the deadline, what is known is reported whatever it is.
    scene.content[0].known = Known::Listed {
        objects: vec![object("lost", &[], true)],
        more: true,
    };
    scene.now = at(31);
    assert!(scene.assess().is_settled());
}
