//! Decodes the bodies captured from a real kube-apiserver v1.28.7
//! (fixtures/real-apiserver/exchanges) into the `kube_gc::api` types, checks the fields, then
//! re-encodes and checks that everything kept is written back exactly as the server wrote it.

use kube_gc::api::{
    DeleteOptions, Event, EventSource, Job, Lease, LeaseSpec, List, MicroTime, ObjectMeta,
    ObjectReference, PartialObjectMetadata, PartialObjectMetadataList, Resource, Status,
    StatusReason, Time, TypeMeta, VolcanoJob, WatchEvent,
};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

macro_rules! exchange {
    ($name:literal) => {
        parse_exchange(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/real-apiserver/exchanges/",
            $name,
            ".json"
        )))
    };
}

fn parse_exchange(text: &str) -> Value {
    serde_json::from_str(text).expect("fixture is JSON")
}

fn response_body(exchange: &Value) -> &Value {
    &exchange["response"]["body"]
}

/// Decodes `body` as `T`, re-encodes it, and checks that (1) every value we write back is the
/// value the server wrote at the same place, and (2) decoding our output gives the same `T`.
fn round_trip<T>(body: &Value) -> T
where
    T: DeserializeOwned + Serialize + PartialEq + std::fmt::Debug,
{
    let decoded: T = serde_json::from_value(body.clone()).expect("decodes");
    let encoded = serde_json::to_value(&decoded).expect("encodes");
    assert_subset(&encoded, body, "$");
    let again: T = serde_json::from_value(encoded).expect("re-decodes");
    assert_eq!(again, decoded);
    decoded
}

/// Every leaf of `ours` is present and equal in `theirs`, and none is `null` (a `null` in a
/// request would clear the field on the server).
fn assert_subset(ours: &Value, theirs: &Value, path: &str) {
    match (ours, theirs) {
        (Value::Null, _) => panic!("{path}: we wrote null"),
        (Value::Object(o), Value::Object(t)) => {
            for (k, v) in o {
                let sub = format!("{path}.{k}");
                let other = t
                    .get(k)
                    .unwrap_or_else(|| panic!("{sub} not in the original"));
                assert_subset(v, other, &sub);
            }
        }
        (Value::Array(o), Value::Array(t)) => {
            assert_eq!(o.len(), t.len(), "{path}: array length");
            for (i, (a, b)) in o.iter().zip(t).enumerate() {
                assert_subset(a, b, &format!("{path}[{i}]"));
            }
        }
        _ => assert_eq!(ours, theirs, "{path}"),
    }
}

fn time(s: &str) -> Option<Time> {
    Some(Time::parse(s).expect("valid time"))
}

#[test]
fn finished_job_as_the_server_returns_it() {
    let ex = exchange!("12-job-get");
    let job: Job = round_trip(response_body(&ex));
    assert_eq!(job.types, TypeMeta::new(Job::API_VERSION, Job::KIND));
    let meta = &job.metadata;
    assert_eq!(meta.name.as_deref(), Some("pi"));
    assert_eq!(meta.namespace.as_deref(), Some("capture"));
    assert_eq!(
        meta.uid.as_deref(),
        Some("085ad5ab-19e7-4b4b-9240-0c88f7b0971e")
    );
    assert_eq!(meta.resource_version.as_deref(), Some("203"));
    assert_eq!(meta.generation, Some(1));
    assert_eq!(meta.creation_timestamp, time("2026-11-22T03:45:32Z"));
    assert_eq!(meta.labels.get("app").map(String::as_str), Some("capture"));
    assert!(!meta.is_being_deleted());
    assert_eq!(job.spec.ttl_seconds_after_finished, Some(30));
    assert_eq!(job.status.conditions.len(), 2);
    assert_eq!(job.status.start_time, time("2026-11-22T03:45:32Z"));
    assert_eq!(job.status.completion_time, time("2026-11-22T03:45:32Z"));
    let finished = job.finished_condition().expect("the Job is finished");
    assert_eq!(finished.type_, "Complete");
    assert_eq!(finished.last_transition_time, time("2026-11-22T03:45:32Z"));

    // managedFields and the pod template are dropped: the kept form is much smaller.
    let kept = serde_json::to_string(&job).expect("encodes").len();
    let original = response_body(&ex).to_string().len();
    assert!(kept * 3 < original, "kept {kept} of {original} bytes");
}

#[test]
fn fresh_job_has_empty_status() {
    let ex = exchange!("09-job-create");
    let job: Job = round_trip(response_body(&ex));
    assert_eq!(job.spec.ttl_seconds_after_finished, Some(30));
    assert!(job.status.conditions.is_empty());
    assert_eq!(job.finished_condition(), None);
}

#[test]
fn job_being_deleted_foreground_and_orphan() {
    for (ex, finalizer) in [
        (exchange!("25-job-delete-foreground"), "foregroundDeletion"),
        (exchange!("26-job-get-being-deleted"), "foregroundDeletion"),
        (exchange!("30-job-delete-orphan"), "orphan"),
        (exchange!("32-job-delete-default"), "orphan"),
    ] {
        let job: Job = round_trip(response_body(&ex));
        assert!(job.metadata.is_being_deleted());
        assert_eq!(
            job.metadata.deletion_timestamp,
            time("2026-11-22T03:46:50Z")
        );
        assert_eq!(job.metadata.deletion_grace_period_seconds, Some(0));
        assert_eq!(job.metadata.finalizers, vec![finalizer.to_owned()]);
    }
}

#[test]
fn paged_job_lists() {
    let page1: List<Job> = round_trip(response_body(&exchange!("14-job-list-page1")));
    assert_eq!(page1.types, TypeMeta::new("batch/v1", "JobList"));
    assert_eq!(page1.metadata.resource_version.as_deref(), Some("203"));
    assert_eq!(page1.metadata.remaining_item_count, Some(2));
    assert!(page1.next_page().is_some_and(|t| t.starts_with("eyJ2Ijoi")));
    let names: Vec<_> = page1
        .items
        .iter()
        .filter_map(|j| j.metadata.name.as_deref())
        .collect();
    assert_eq!(names, ["list-a", "list-b"]);
    // Items in a list carry no apiVersion/kind of their own.
    assert_eq!(page1.items[0].types, TypeMeta::default());

    let page2: List<Job> = round_trip(response_body(&exchange!("15-job-list-page2")));
    assert_eq!(page2.next_page(), None);
    assert_eq!(page2.metadata.remaining_item_count, None);
    assert_eq!(page2.items.len(), 2);

    let all: List<Job> = round_trip(response_body(&exchange!("17-job-list-rv0")));
    assert_eq!(all.items.len(), 4);
}

#[test]
fn metadata_only_get_and_lists() {
    let one: PartialObjectMetadata = round_trip(response_body(&exchange!("19-job-get-meta")));
    assert_eq!(
        one.types,
        TypeMeta::new("meta.k8s.io/v1", "PartialObjectMetadata")
    );
    assert_eq!(
        one.metadata.uid.as_deref(),
        Some("085ad5ab-19e7-4b4b-9240-0c88f7b0971e")
    );

    let jobs: PartialObjectMetadataList = round_trip(response_body(&exchange!("18-job-list-meta")));
    assert_eq!(jobs.types.kind, "PartialObjectMetadataList");
    assert_eq!(jobs.items.len(), 4);
    assert!(jobs
        .items
        .iter()
        .all(|i| i.types.kind == "PartialObjectMetadata"));

    let cms: PartialObjectMetadataList =
        round_trip(response_body(&exchange!("40-cm-list-meta-all")));
    assert_eq!(cms.metadata.remaining_item_count, Some(1));
    assert!(cms.next_page().is_some());
    let namespaces: Vec<_> = cms
        .items
        .iter()
        .filter_map(|i| i.metadata.namespace.as_deref())
        .collect();
    assert_eq!(namespaces, ["capture", "capture", "kube-system"]);

    let vc: PartialObjectMetadataList = round_trip(response_body(&exchange!("50-vcjob-list-meta")));
    assert_eq!(vc.items[0].metadata.name.as_deref(), Some("vc"));
}

#[test]
fn owner_references_round_trip_exactly() {
    let ex = exchange!("34-cm-dependent-create");
    // A ConfigMap read as metadata only: its `data` is simply skipped.
    let cm: PartialObjectMetadata =
        serde_json::from_value(response_body(&ex).clone()).expect("decodes");
    let refs = &cm.metadata.owner_references;
    assert_eq!(refs.len(), 1);
    assert_eq!(refs[0].kind, "ConfigMap");
    assert_eq!(refs[0].uid, "90eabea7-5567-4795-9545-9bf952469ae1");
    assert!(refs[0].is_controller() && refs[0].blocks_owner_deletion());
    assert_eq!(cm.metadata.controller_owner(), Some(&refs[0]));
    let sent = &ex["request"]["body"]["metadata"]["ownerReferences"];
    assert_eq!(&serde_json::to_value(refs).expect("encodes"), sent);
}

#[test]
fn status_bodies_of_every_captured_error() {
    let cases = [
        (
            exchange!("10-job-create-already-exists"),
            409,
            StatusReason::AlreadyExists,
        ),
        (
            exchange!("13-job-get-notfound"),
            404,
            StatusReason::NotFound,
        ),
        (
            exchange!("16-job-list-bad-continue"),
            400,
            StatusReason::BadRequest,
        ),
        (
            exchange!("24-job-delete-uid-conflict"),
            409,
            StatusReason::Conflict,
        ),
        (
            exchange!("28-job-get-after-finalizer"),
            404,
            StatusReason::NotFound,
        ),
        (
            exchange!("31-job-delete-notfound"),
            404,
            StatusReason::NotFound,
        ),
        (
            exchange!("35-cm-dependent-bad-ref"),
            422,
            StatusReason::Invalid,
        ),
        (
            exchange!("36-cm-update-stale-rv"),
            409,
            StatusReason::Conflict,
        ),
        (
            exchange!("37-cm-jsonpatch-test-fails"),
            422,
            StatusReason::Invalid,
        ),
        (
            exchange!("41-unauthorized"),
            401,
            StatusReason::Unauthorized,
        ),
        (
            exchange!("44-lease-renew-stale"),
            409,
            StatusReason::Conflict,
        ),
        (
            exchange!("49-vcjob-strategic-patch"),
            415,
            StatusReason::UnsupportedMediaType,
        ),
        (
            exchange!("53-job-list-continue-expired"),
            410,
            StatusReason::Expired,
        ),
        (
            exchange!("54-job-list-rv-too-old"),
            410,
            StatusReason::Expired,
        ),
    ];
    for (ex, code, reason) in cases {
        let status: Status = round_trip(response_body(&ex));
        assert_eq!(ex["response"]["status"], code);
        assert_eq!(status.code, Some(code), "{}", ex["note"]);
        assert_eq!(status.reason, reason, "{}", ex["note"]);
        assert_eq!(status.status.as_deref(), Some("Failure"));
        assert!(status.message.as_deref().is_some_and(|m| !m.is_empty()));
    }
}

#[test]
fn status_details_causes_and_continue() {
    let not_found: Status = round_trip(response_body(&exchange!("13-job-get-notfound")));
    let details = not_found.details.expect("details");
    assert_eq!(details.name.as_deref(), Some("nope"));
    assert_eq!(details.group.as_deref(), Some("batch"));
    assert_eq!(details.kind.as_deref(), Some("jobs"));

    let invalid: Status = round_trip(response_body(&exchange!("35-cm-dependent-bad-ref")));
    let cause = &invalid.causes()[0];
    assert_eq!(cause.reason.as_deref(), Some("FieldValueInvalid"));
    assert_eq!(cause.field.as_deref(), Some("metadata.ownerReferences.uid"));
    assert!(invalid.has_cause("FieldValueInvalid"));

    let expired: Status = round_trip(response_body(&exchange!("53-job-list-continue-expired")));
    assert!(expired
        .metadata
        .continue_token
        .as_deref()
        .is_some_and(|t| t.starts_with("eyJ2")));

    let deleted: Status = round_trip(response_body(&exchange!("29-job-delete-background")));
    assert!(deleted.is_success());
    assert_eq!(deleted.code, None);
    let uid = deleted.details.and_then(|d| d.uid);
    assert_eq!(uid.as_deref(), Some("19297836-5c0d-40c2-9153-263638eb844d"));
}

#[test]
fn delete_options_match_the_bodies_sent() {
    let uid_guarded = DeleteOptions::foreground().with_uid("085ad5ab-19e7-4b4b-9240-0c88f7b0971e");
    let cases = [
        (exchange!("25-job-delete-foreground"), uid_guarded),
        (
            exchange!("29-job-delete-background"),
            DeleteOptions::background(),
        ),
        (exchange!("30-job-delete-orphan"), DeleteOptions::orphan()),
        (
            exchange!("51-vcjob-delete-foreground"),
            DeleteOptions::foreground().with_uid("e90014ed-f204-4933-b3d8-c0d2121613ad"),
        ),
    ];
    for (ex, ours) in cases {
        let sent = &ex["request"]["body"];
        assert_eq!(&serde_json::to_value(&ours).expect("encodes"), sent);
        assert_eq!(
            serde_json::from_value::<DeleteOptions>(sent.clone()).ok(),
            Some(ours)
        );
    }
}

#[test]
fn lease_create_and_renew() {
    let create = exchange!("42-lease-create");
    let spec = LeaseSpec {
        holder_identity: Some("host_1".into()),
        lease_duration_seconds: Some(15),
        acquire_time: Some(MicroTime::parse("2026-11-22T00:00:00Z").expect("time")),
        renew_time: Some(MicroTime::parse("2026-11-22T00:00:00Z").expect("time")),
        lease_transitions: Some(0),
    };
    let mut ours = Lease::new("capture", "kube-gc", spec);
    // The capture sent no namespace in the body (it is in the URL).
    ours.metadata.namespace = None;
    assert_eq!(
        &serde_json::to_value(&ours).expect("encodes"),
        &create["request"]["body"]
    );

    let renewed: Lease = round_trip(response_body(&exchange!("43-lease-renew")));
    assert_eq!(renewed.metadata.resource_version.as_deref(), Some("224"));
    assert_eq!(renewed.spec.holder_identity.as_deref(), Some("host_1"));
    assert_eq!(
        renewed.spec.renew_time.map(|t| t.to_wire()).as_deref(),
        Some("2026-11-22T00:00:02.000000Z")
    );
    let created: Lease = round_trip(response_body(&create));
    assert_eq!(created.spec.lease_transitions, Some(0));
}

#[test]
fn event_create() {
    let ex = exchange!("45-event-create");
    let ours = Event {
        types: TypeMeta::new(Event::API_VERSION, Event::KIND),
        metadata: ObjectMeta {
            generate_name: Some("dependent.".into()),
            ..Default::default()
        },
        involved_object: ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("ConfigMap".into()),
            name: Some("dependent".into()),
            namespace: Some("capture".into()),
            ..Default::default()
        },
        reason: Some("OwnerRefInvalidNamespace".into()),
        message: Some("example".into()),
        type_: Some(Event::WARNING.into()),
        source: Some(EventSource {
            component: Some("kube-gc".into()),
            host: None,
        }),
        first_timestamp: time("2026-11-22T03:46:50Z"),
        last_timestamp: time("2026-11-22T03:46:50Z"),
        count: Some(1),
        reporting_component: Some("kube-gc".into()),
        reporting_instance: Some("host_1".into()),
        ..Default::default()
    };
    assert_eq!(
        &serde_json::to_value(&ours).expect("encodes"),
        &ex["request"]["body"]
    );

    // The response has `"eventTime": null`, which we read as None and then omit.
    let body = response_body(&ex);
    let created: Event = serde_json::from_value(body.clone()).expect("decodes");
    assert_eq!(created.event_time, None);
    assert_eq!(created.metadata.name.as_deref(), Some("dependent.nqkg7"));
    assert_eq!(created.involved_object, ours.involved_object);
    let mut without_null = body.clone();
    without_null.as_object_mut().map(|o| o.remove("eventTime"));
    round_trip::<Event>(&without_null);
}

#[test]
fn volcano_job_lifecycle() {
    let created: VolcanoJob = round_trip(response_body(&exchange!("47-vcjob-create")));
    assert_eq!(
        created.types,
        TypeMeta::new(VolcanoJob::API_VERSION, VolcanoJob::KIND)
    );
    assert_eq!(created.spec.ttl_seconds_after_finished, Some(60));
    assert!(!created.status.state.is_finished());

    let completed: VolcanoJob = round_trip(response_body(&exchange!("48-vcjob-status-completed")));
    let state = &completed.status.state;
    assert_eq!(state.phase.as_deref(), Some("Completed"));
    assert_eq!(state.reason.as_deref(), Some(""));
    assert_eq!(state.last_transition_time, time("2026-11-22T03:46:50Z"));
    assert!(state.is_finished());

    let deleting: VolcanoJob = round_trip(response_body(&exchange!("51-vcjob-delete-foreground")));
    assert!(deleting.metadata.has_finalizer("foregroundDeletion"));
}

/// The decoded lines of a watch exchange (`response.events`), as raw JSON.
fn watch_lines(ex: &Value) -> Vec<&Value> {
    ex["response"]["events"]
        .as_array()
        .expect("events")
        .iter()
        .collect()
}

#[test]
fn typed_watch_events() {
    let ex = exchange!("20-job-watch");
    let events: Vec<WatchEvent<Job>> = watch_lines(&ex)
        .into_iter()
        .map(|line| serde_json::from_value(line.clone()).expect("decodes"))
        .collect();
    let summary: Vec<_> = events
        .iter()
        .map(|e| match e {
            WatchEvent::Added(j) | WatchEvent::Modified(j) | WatchEvent::Deleted(j) => {
                format!(
                    "{:?} {}",
                    e.event_type(),
                    j.metadata.resource_version.as_deref().unwrap_or("")
                )
            }
            WatchEvent::Bookmark(b) => format!("Bookmark {}", b.metadata.resource_version),
            WatchEvent::Error(s) => format!("Error {:?}", s.code),
        })
        .collect();
    assert_eq!(
        summary,
        ["Added 204", "Modified 205", "Deleted 206", "Bookmark 206"]
    );
    if let Some(WatchEvent::Modified(job)) = events.get(1) {
        assert_eq!(
            job.metadata.labels.get("touched").map(String::as_str),
            Some("yes")
        );
    }
}

#[test]
fn metadata_only_and_dynamic_watch_events() {
    for line in watch_lines(&exchange!("21-job-watch-meta")) {
        let event: WatchEvent<PartialObjectMetadata> =
            serde_json::from_value(line.clone()).expect("decodes");
        let name = event.object().and_then(|o| o.metadata.name.as_deref());
        assert_eq!(name, Some("watched"));
    }
    for ex in [
        exchange!("22-job-watch-too-old"),
        exchange!("52-job-watch-expired"),
    ] {
        for line in watch_lines(&ex) {
            let dynamic: WatchEvent<Value> = serde_json::from_value(line.clone()).expect("decodes");
            assert_eq!(&serde_json::to_value(&dynamic).expect("encodes"), line);
            let typed: WatchEvent<Job> = serde_json::from_value(line.clone()).expect("decodes");
            assert_eq!(typed.event_type(), dynamic.event_type());
        }
    }
}

#[test]
fn watch_error_event_after_restart() {
    let ex = exchange!("55-job-watch-too-old-after-restart");
    let line = watch_lines(&ex)[0].clone();
    let event: WatchEvent<Job> = serde_json::from_value(line).expect("decodes");
    let WatchEvent::Error(status) = event else {
        panic!("expected ERROR, got {event:?}")
    };
    assert_eq!(status.code, Some(410));
    assert_eq!(status.reason, StatusReason::Expired);
    assert_eq!(
        status.message.as_deref(),
        Some("too old resource version: 300 (557)")
    );
}

fn assert_resource_constants<K: Resource>(plural: &str, namespaced: bool) {
    assert_eq!(
        K::API_VERSION,
        kube_gc::api::api_version_of(K::GROUP, K::VERSION)
    );
    assert_eq!(K::PLURAL, plural);
    assert_eq!(K::NAMESPACED, namespaced);
}

#[test]
fn resource_constants_are_consistent() {
    assert_resource_constants::<Job>("jobs", true);
    assert_resource_constants::<VolcanoJob>("jobs", true);
    assert_resource_constants::<Lease>("leases", true);
    assert_resource_constants::<Event>("events", true);
}
