//! Decode rate of a Job LIST body: protobuf (`kube_gc::client::protobuf`) against JSON (the
//! crate's streaming JSON list decoder, `kube_gc::client::ListDecoder`).
//!
//! The Jobs are `tests/job_support::real_sized_job` as a server returns them (uid,
//! resourceVersion, creationTimestamp, the selector and template labels the server adds):
//! a pod template with a container (command, 16 env vars, resources, mounts), volumes,
//! tolerations, and `managedFields` from two writers — ~7 KB of JSON each. Each body holds
//! `PROTOBUF_BENCH_JOBS` Jobs (default 1000) and is fed in 16 KB chunks (an HTTP/2 frame), as
//! the client reads it. What is timed, per body:
//!
//! - `json/api-job`: `ListDecoder<api::Job>` — serde reads the metadata, the TTL and the
//!   conditions and scans past the rest (the template, `managedFields`) byte by byte.
//! - `protobuf/ttl-selection`: `ListStream` hands out each item; it is transcoded with the
//!   TTL assessment's selection (`metadata`, `spec.ttlSecondsAfterFinished`,
//!   `status.conditions`) — the template is skipped by its length — and the JSON is read as an
//!   `api::Job` by the same serde code.
//! - `protobuf/ttl-selection-without-managed-fields`: the same without `metadata.managedFields`.
//! - `protobuf/everything`: transcoded whole, then read as an `api::Job`.
//! - `protobuf/framing-only`: `ListStream` alone, items handed out and dropped.
//! - `json/ttl-assessment` and `protobuf/ttl-assessment`: what the TTL controller does with a
//!   list, end to end — each item to its `Assessment` by the controller's own assessing decoder,
//!   from the JSON text, or from the protobuf item transcoded with the members that decoder
//!   says it reads (`DecodeItem::reads`), as the client does (the target: protobuf at
//!   least 1.5× JSON's rate).
//!
//! Run: `cargo bench --bench protobuf_decode` (criterion; throughput in Jobs per second).

#[path = "../tests/job_support/mod.rs"]
mod job_support;

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use kube_gc::api::Job;
use kube_gc::client::protobuf::{encode, schema, transcode, ListEvent, ListStream, Selection};
use kube_gc::client::{ItemDecoder, ListDecoder};
use kube_gc::controllers::retention::assessment::Assessment;
use kube_gc::controllers::retention::engine::assessing;
use kube_gc::controllers::ttl::{rules, BatchJob};
use serde_json::{json, Value};

const CHUNK: usize = 16 * 1024;

/// More environment variables than `real_sized_job` has, to bring a Job to ~7 KB of JSON.
const EXTRA_ENV: usize = 7;

/// Job `i` as a server returns it in a list (no `kind`/`apiVersion` on items).
fn served_job(i: usize) -> Value {
    let mut job = job_support::real_sized_job(i);
    let object = job.as_object_mut().expect("an object");
    object.remove("kind");
    object.remove("apiVersion");
    let container = &mut job["spec"]["template"]["spec"]["containers"][0];
    let env = container["env"].as_array_mut().expect("env");
    for e in 0..EXTRA_ENV {
        env.push(
            json!({"name": format!("REPORT_EXTRA_{e:02}"), "value": format!("extra-{e:02}-{i}")}),
        );
    }
    let fields = &mut job["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]["f:template"]
        ["f:spec"]["f:containers"]["k:{\"name\":\"report\"}"]["f:env"];
    for e in 0..EXTRA_ENV {
        fields[format!("k:{{\"name\":\"REPORT_EXTRA_{e:02}\"}}")] =
            json!({".": {}, "f:name": {}, "f:value": {}});
    }
    let uid = format!("0b7c5a1e-3f2d-4c8b-9a6e-{i:012}");
    let name = job["metadata"]["name"].clone();
    let meta = &mut job["metadata"];
    meta["uid"] = json!(uid);
    meta["resourceVersion"] = json!((1000 + i).to_string());
    meta["generation"] = json!(1);
    meta["creationTimestamp"] = json!("2026-11-22T03:40:00Z");
    job["spec"]["selector"] = json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}});
    let labels = &mut job["spec"]["template"]["metadata"]["labels"];
    labels["batch.kubernetes.io/controller-uid"] = json!(uid);
    labels["controller-uid"] = json!(uid);
    labels["job-name"] = name;
    job
}

struct Bodies {
    jobs: usize,
    json: Vec<Bytes>,
    protobuf: Vec<Bytes>,
}

fn chunked(body: Vec<u8>) -> Vec<Bytes> {
    let body = Bytes::from(body);
    (0..body.len())
        .step_by(CHUNK)
        .map(|at| body.slice(at..(at + CHUNK).min(body.len())))
        .collect()
}

fn bodies(jobs: usize) -> Bodies {
    let items: Vec<Value> = (0..jobs).map(served_job).collect();
    let meta = json!({"resourceVersion": "99999"});
    let json_body = serde_json::to_vec(
        &json!({"kind": "JobList", "apiVersion": "batch/v1", "metadata": meta, "items": items}),
    )
    .expect("JSON");
    let protobuf_body = encode::list("batch/v1", "JobList", &meta, &items).expect("protobuf");
    eprintln!(
        "{jobs} Jobs: JSON body {} bytes ({} per Job), protobuf body {} bytes ({} per Job)",
        json_body.len(),
        json_body.len() / jobs,
        protobuf_body.len(),
        protobuf_body.len() / jobs
    );
    Bodies {
        jobs,
        json: chunked(json_body),
        protobuf: chunked(protobuf_body),
    }
}

fn decode_json(chunks: &[Bytes]) -> Vec<Job> {
    let mut decoder = ListDecoder::<Job>::new();
    for chunk in chunks {
        decoder.feed(chunk).expect("JSON list");
    }
    decoder.finish().expect("JSON list").items
}

/// Every item of the protobuf body, each transcoded with `selection` and read as a `Job`
/// (`None`: handed out and dropped).
fn decode_protobuf(chunks: &[Bytes], selection: Option<&Selection>) -> Vec<Job> {
    let mut stream = ListStream::new();
    let mut jobs = Vec::new();
    let mut text = Vec::new();
    for chunk in chunks {
        stream.feed(chunk.clone());
        while let Some(event) = stream.next_event().expect("protobuf list") {
            let (ListEvent::Item(item), Some(selection)) = (event, selection) else {
                continue;
            };
            text.clear();
            transcode::write_json(&mut text, &schema::JOB, &item, None, selection)
                .expect("transcodes");
            jobs.push(serde_json::from_slice(&text).expect("a Job"));
        }
    }
    stream.finish().expect("complete");
    jobs
}

/// The TTL controller's assessing decoder for batch/v1 Jobs.
fn ttl_assessing() -> ItemDecoder<Assessment> {
    assessing(Arc::new(rules::<BatchJob>()), chrono::Utc::now)
}

fn judge_json(chunks: &[Bytes], decoder: &ItemDecoder<Assessment>) -> usize {
    let mut list = ListDecoder::with_item_decoder(Arc::clone(decoder));
    for chunk in chunks {
        list.feed(chunk).expect("JSON list");
    }
    list.finish().expect("JSON list").items.len()
}

fn judge_protobuf(chunks: &[Bytes], decoder: &ItemDecoder<Assessment>) -> usize {
    let keep = decoder.reads().expect("the assessment says what it reads");
    let mut stream = ListStream::new();
    let (mut assessed, mut text) = (Vec::new(), Vec::new());
    for chunk in chunks {
        stream.feed(chunk.clone());
        while let Some(event) = stream.next_event().expect("protobuf list") {
            if let ListEvent::Item(item) = event {
                text.clear();
                transcode::write_json(&mut text, &schema::JOB, &item, None, &keep)
                    .expect("transcodes");
                assessed.push(decoder.decode(&text).expect("an assessment"));
            }
        }
    }
    stream.finish().expect("complete");
    assessed.len()
}

fn ttl_selection() -> Selection {
    Selection::paths([
        "metadata",
        "spec.ttlSecondsAfterFinished",
        "status.conditions",
    ])
}

fn bench(c: &mut Criterion) {
    let jobs = std::env::var("PROTOBUF_BENCH_JOBS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1000);
    let bodies = bodies(jobs);
    let ttl = ttl_selection();
    let lean = ttl_selection().without("metadata.managedFields");
    // Both encodings give the same Jobs; the TTL selection leaves out only the start and
    // completion times, which `api::Job` reads and the TTL assessment does not.
    let from_json = decode_json(&bodies.json);
    assert_eq!(
        decode_protobuf(&bodies.protobuf, Some(&Selection::all())),
        from_json
    );
    let without_times: Vec<Job> = from_json
        .into_iter()
        .map(|mut job| {
            job.status.start_time = None;
            job.status.completion_time = None;
            job
        })
        .collect();
    assert_eq!(decode_protobuf(&bodies.protobuf, Some(&ttl)), without_times);

    let mut group = c.benchmark_group("job_list_decode");
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(4));
    group.throughput(Throughput::Elements(bodies.jobs as u64));
    group.bench_function("json/api-job", |b| {
        b.iter(|| black_box(decode_json(&bodies.json)))
    });
    group.bench_function("protobuf/ttl-selection", |b| {
        b.iter(|| black_box(decode_protobuf(&bodies.protobuf, Some(&ttl))))
    });
    group.bench_function("protobuf/ttl-selection-without-managed-fields", |b| {
        b.iter(|| black_box(decode_protobuf(&bodies.protobuf, Some(&lean))))
    });
    group.bench_function("protobuf/everything", |b| {
        b.iter(|| black_box(decode_protobuf(&bodies.protobuf, Some(&Selection::all()))))
    });
    let assessing = ttl_assessing();
    assert_eq!(judge_json(&bodies.json, &assessing), bodies.jobs);
    assert_eq!(judge_protobuf(&bodies.protobuf, &assessing), bodies.jobs);
    group.bench_function("json/ttl-assessment", |b| {
        b.iter(|| black_box(judge_json(&bodies.json, &assessing)))
    });
    group.bench_function("protobuf/ttl-assessment", |b| {
        b.iter(|| black_box(judge_protobuf(&bodies.protobuf, &assessing)))
    });
    group.bench_function("protobuf/framing-only", |b| {
        b.iter(|| black_box(decode_protobuf(&bodies.protobuf, None)))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
