//! The reflector end to end against the simulated API server, over real sockets, on tokio's
//! paused clock: what it asks for (read back from the server's request journal), what the sink
//! ends up holding (compared with the server's own state), and when it retries.

mod client_support;
mod reflector_support;

use std::time::Duration;

use client_support::{job, jobs, seed, start_with, unthrottled};
use kube_gc::api::{Job, PartialObjectMetadata};
use kube_gc::client::{Api, Client, ResourceRef};
use kube_gc::runtime::reflector::{MetadataOnly, ReflectorConfig};
use kube_gc::sim::faults::{FaultPlan, Verb};
use kube_gc::sim::journal::JournalEntry;
use kube_gc::sim::{DeleteOptions, Propagation, SimConfig, SimServer};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use reflector_support::{config, spawn, wait_for_requests, Request, Seen, Timed};
use serde_json::{json, Value};

const JOBS_IN_A: &str = "/apis/batch/v1/namespaces/a/jobs";

async fn server(config: SimConfig) -> client_support::Harness {
    let config = config.with_namespaces(&["a", "b"]);
    start_with(config, unthrottled().without_timeouts()).await
}

fn jobs_in_a(client: &Client) -> Api<Job> {
    Api::namespaced(client.clone(), "a")
}

/// key → resourceVersion of the jobs the server holds in namespace `a`.
fn server_state(sim: &SimServer) -> std::collections::BTreeMap<String, String> {
    sim.list(&jobs(), Some("a"))
        .unwrap()
        .iter()
        .map(|o| {
            let meta = &o["metadata"];
            (
                format!(
                    "{}/{}",
                    meta["namespace"].as_str().unwrap(),
                    meta["name"].as_str().unwrap()
                ),
                meta["resourceVersion"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn background() -> DeleteOptions {
    DeleteOptions::propagation(Propagation::Background)
}

/// The requests for jobs in namespace `a`, as `VERB query… -> status`.
fn requests(sim: &SimServer) -> Vec<String> {
    sim.journal()
        .entries_for_path_prefix(JOBS_IN_A)
        .iter()
        .map(describe)
        .collect()
}

fn describe(entry: &JournalEntry) -> String {
    let verb = if entry.query_value("watch").is_some() {
        "WATCH"
    } else {
        "LIST"
    };
    let mut text = verb.to_owned();
    for name in ["resourceVersion", "limit", "continue", "sendInitialEvents"] {
        if let Some(value) = entry.query_value(name) {
            let value = if name == "continue" { "…" } else { value };
            text.push_str(&format!(" {name}={value}"));
        }
    }
    format!("{text} -> {}", entry.status)
}

fn watches(sim: &SimServer) -> Vec<JournalEntry> {
    sim.journal()
        .entries_for_path_prefix(JOBS_IN_A)
        .into_iter()
        .filter(|e| e.query_value("watch").is_some())
        .collect()
}

/// Waits on the paused clock until the server has received `n` watches of jobs in `a`.
async fn wait_for_watches(sim: &SimServer, n: usize) {
    for _ in 0..3600 {
        if watches(sim).len() >= n {
            return;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    panic!("fewer than {n} watches: {:?}", requests(sim));
}

#[tokio::test(start_paused = true)]
async fn lists_then_watches_and_follows_every_change() {
    let h = server(SimConfig::default()).await;
    for name in ["x", "y", "z"] {
        seed(&h.sim, &jobs(), job("a", name));
    }
    seed(&h.sim, &jobs(), job("b", "elsewhere"));
    let listed_at = h.sim.resource_version().to_string();
    let running = spawn(jobs_in_a(&h.client), config());
    running
        .sink
        .wait_until("the initial list", |m| m.objects.len() == 3)
        .await;

    seed(&h.sim, &jobs(), job("a", "w"));
    let mut x = h.sim.get(&jobs(), Some("a"), "x").unwrap();
    x["metadata"]["labels"]["touched"] = json!("yes");
    h.sim.update(&jobs(), x).unwrap();
    h.sim
        .delete(&jobs(), Some("a"), "y", &background())
        .unwrap();
    let target = h.sim.resource_version();
    running
        .sink
        .wait_until("the changes", |m| m.version() >= target)
        .await;

    assert_eq!(running.sink.read(|m| m.versions()), server_state(&h.sim));
    let log = running.sink.log();
    assert_eq!(
        log[0],
        Seen::Replaced {
            keys: vec!["a/x".into(), "a/y".into(), "a/z".into()],
            resource_version: listed_at.clone()
        }
    );
    let changes: Vec<_> = log[1..]
        .iter()
        .filter(|s| !matches!(s, Seen::Bookmark(_)))
        .map(|s| match s {
            Seen::Added(k, _) => format!("added {k}"),
            Seen::Modified(k, _) => format!("modified {k}"),
            Seen::Deleted(k, _) => format!("deleted {k}"),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(changes, ["added a/w", "modified a/x", "deleted a/y"]);
    running.sink.read(|m| {
        let labels = &m.objects["a/x"].metadata.labels;
        assert_eq!(labels.get("touched").map(String::as_str), Some("yes"));
    });

    let entries = h.sim.journal().entries_for_path_prefix(JOBS_IN_A);
    let list = &entries[0];
    assert_eq!(list.query_value("resourceVersion"), Some("0"));
    assert_eq!(list.query_value("limit"), Some("500"));
    let watch = &entries[1];
    assert_eq!(watch.query_value("watch"), Some("1"));
    assert_eq!(
        watch.query_value("resourceVersion"),
        Some(listed_at.as_str())
    );
    assert_eq!(watch.query_value("allowWatchBookmarks"), Some("true"));
    let timeout: u32 = watch
        .query_value("timeoutSeconds")
        .unwrap()
        .parse()
        .unwrap();
    assert!((300..600).contains(&timeout), "{timeout}");
    running.stop().await;
}

/// 1,200 objects; the API server restarts while the reflector is disconnected (and etcd is
/// compacted), and one object is deleted meanwhile: the re-watch gets a 410, and the relist from
/// the last synced version — unpaged, so served from the watch cache — is the present, one
/// response, with the deleted object gone (exchanges 55–57).
#[tokio::test(start_paused = true)]
async fn a_restart_forces_one_unpaged_relist_from_the_watch_cache_that_drops_what_vanished() {
    let h = server(SimConfig::default()).await;
    for i in 0..1_200 {
        seed(&h.sim, &jobs(), job("a", &format!("job-{i:04}")));
    }
    let running = spawn(jobs_in_a(&h.client), config());
    running
        .sink
        .wait_until("the initial list", |m| m.objects.len() == 1_200)
        .await;
    wait_for_watches(&h.sim, 1).await;
    let synced = h.sim.resource_version().to_string();

    // No await between these: the reflector cannot see anything in between.
    h.sim.drop_connections();
    h.sim
        .delete(&jobs(), Some("a"), "job-0000", &background())
        .unwrap();
    seed(&h.sim, &jobs(), job("b", "unrelated"));
    h.sim.restart();
    h.sim.compact();

    running
        .sink
        .wait_until("the relist", |m| {
            m.log.len() >= 2 && m.objects.len() == 1_199
        })
        .await;
    wait_for_watches(&h.sim, 3).await;
    assert_eq!(running.sink.read(|m| m.versions()), server_state(&h.sim));
    let now = h.sim.resource_version().to_string();
    assert_eq!(
        requests(&h.sim),
        [
            "LIST resourceVersion=0 limit=500 -> 200".to_owned(),
            format!("WATCH resourceVersion={synced} -> 200"),
            // The 410 of a watch is an ERROR event in a 200 response.
            format!("WATCH resourceVersion={synced} -> 200"),
            // No limit: the watch cache answers with the present, in one response; with a
            // limit it would be etcd at exactly {synced}, which compaction made a 410.
            format!("LIST resourceVersion={synced} -> 200"),
            format!("WATCH resourceVersion={now} -> 200"),
        ]
    );
    let m = running.metrics.snapshot();
    assert_eq!((m.lists, m.relists, m.errors), (2, 1, 1));
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn bookmarks_advance_the_version_without_touching_the_objects() {
    let h = server(SimConfig::default().with_bookmark_interval(Duration::from_secs(5))).await;
    seed(&h.sim, &jobs(), job("a", "x"));
    let running = spawn(jobs_in_a(&h.client), config());
    running
        .sink
        .wait_until("the initial list", |m| m.objects.len() == 1)
        .await;
    // A change the reflector does not watch moves the server's version on.
    seed(&h.sim, &jobs(), job("b", "elsewhere"));
    let moved_to = h.sim.resource_version().to_string();
    running
        .sink
        .wait_until("a bookmark at the new version", |m| {
            m.log.contains(&Seen::Bookmark(moved_to.clone()))
        })
        .await;
    assert_eq!(running.sink.read(|m| m.versions()), server_state(&h.sim));

    // The next watch resumes from the bookmark, not from the list.
    h.sim.drop_connections();
    wait_for_watches(&h.sim, 2).await;
    let rewatch = watches(&h.sim).pop().unwrap();
    assert_eq!(
        rewatch.query_value("resourceVersion"),
        Some(moved_to.as_str())
    );
    assert!(running.metrics.snapshot().bookmarks >= 1);
    assert_eq!(running.metrics.snapshot().lists, 1);
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_watch_that_times_out_is_resumed_from_the_last_version_seen() {
    let h = server(SimConfig::default()).await;
    let config = ReflectorConfig {
        min_watch_timeout: Duration::from_secs(10),
        ..config()
    };
    let running = spawn(jobs_in_a(&h.client), config);
    wait_for_watches(&h.sim, 1).await;
    seed(&h.sim, &jobs(), job("a", "x"));
    let created = h.sim.resource_version().to_string();
    running
        .sink
        .wait_until("the new job", |m| m.objects.len() == 1)
        .await;
    wait_for_watches(&h.sim, 3).await;
    let watches = watches(&h.sim);
    for watch in &watches {
        let timeout: u32 = watch
            .query_value("timeoutSeconds")
            .unwrap()
            .parse()
            .unwrap();
        assert!((10..20).contains(&timeout), "{timeout}");
    }
    // Nothing changed after the job, so every later watch resumes from its version.
    for watch in &watches[1..] {
        assert_eq!(watch.query_value("resourceVersion"), Some(created.as_str()));
    }
    let m = running.metrics.snapshot();
    assert_eq!((m.lists, m.backoffs), (1, 0));
    running.stop().await;
}

/// Times between the reflector's list attempts while the server fails every list.
async fn list_attempt_gaps(plan: FaultPlan, attempts: usize) -> Vec<Duration> {
    let h = server(SimConfig::default().with_fault_plan(plan)).await;
    let source = Timed::new(jobs_in_a(&h.client));
    let requests = std::sync::Arc::clone(&source.requests);
    let mut counter = source.counter();
    let running = spawn(source, config());
    wait_for_requests(&mut counter, attempts).await;
    h.sim.faults().set_plan(FaultPlan::default());
    running
        .sink
        .wait_until("a successful list", |m| !m.log.is_empty())
        .await;
    running.stop().await;
    let requests = requests.lock();
    assert!(requests[..attempts]
        .iter()
        .all(|(_, r)| matches!(r, Request::List(_))));
    requests[..attempts]
        .windows(2)
        .map(|pair| pair[1].0 - pair[0].0)
        .collect()
}

fn in_jitter_range(delay: Duration, base: Duration) -> bool {
    delay >= base && delay < base * 2
}

#[tokio::test(start_paused = true)]
async fn server_errors_back_off_exponentially_with_jitter() {
    let plan = FaultPlan::new(3).fail(Verb::List, 1.0, &[500, 503]);
    let gaps = list_attempt_gaps(plan, 6).await;
    let bases = [800, 1_600, 3_200, 6_400, 12_800].map(Duration::from_millis);
    for (gap, base) in gaps.iter().zip(bases) {
        assert!(
            in_jitter_range(*gap, base),
            "{gap:?} for base {base:?}: {gaps:?}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn throttling_is_waited_out_as_the_server_asks() {
    // Every request is answered 429 with Retry-After: 3. The client resends each request ten
    // times after 3 s, then reports the 429; the reflector then waits the longer of its backoff
    // and the server's 3 s.
    let plan = FaultPlan::new(3).throttle(1.0, 3);
    let gaps = list_attempt_gaps(plan, 3).await;
    let client_waits = Duration::from_secs(30);
    assert_eq!(
        gaps[0],
        client_waits + Duration::from_secs(3),
        "backoff 0.8–1.6 s < 3 s"
    );
    let second = gaps[1] - client_waits;
    assert!(
        second >= Duration::from_secs(3) && second < Duration::from_millis(3_200),
        "max(1.6–3.2 s, 3 s): {second:?}"
    );
}

/// Watches are cut after every 3 events while 60 random writes happen: every change arrives
/// exactly once and the sink ends equal to the server.
#[tokio::test(start_paused = true)]
async fn watches_cut_after_a_few_events_resume_without_loss_or_duplicates() {
    let plan = FaultPlan::new(5).cut_watches_after_events(3);
    let h = server(SimConfig::default().with_fault_plan(plan)).await;
    let running = spawn(jobs_in_a(&h.client), config());
    running
        .sink
        .wait_until("the initial list", |m| !m.log.is_empty())
        .await;

    let mut rng = StdRng::seed_from_u64(11);
    let mut names: Vec<String> = Vec::new();
    for i in 0..60 {
        match (rng.random_range(0..3), names.is_empty()) {
            (0, _) | (_, true) => {
                let name = format!("job-{i}");
                seed(&h.sim, &jobs(), job("a", &name));
                names.push(name);
            }
            (1, false) => {
                let name = &names[rng.random_range(0..names.len())];
                let mut object = h.sim.get(&jobs(), Some("a"), name).unwrap();
                object["metadata"]["labels"]["step"] = Value::from(i.to_string());
                h.sim.update(&jobs(), object).unwrap();
            }
            _ => {
                let name = names.swap_remove(rng.random_range(0..names.len()));
                h.sim
                    .delete(&jobs(), Some("a"), &name, &background())
                    .unwrap();
            }
        }
        let target = h.sim.resource_version();
        running
            .sink
            .wait_until("the write", |m| m.version() >= target)
            .await;
    }

    assert_eq!(running.sink.read(|m| m.versions()), server_state(&h.sim));
    let versions: Vec<u64> = running
        .sink
        .log()
        .iter()
        .filter_map(Seen::object_version)
        .collect();
    assert_eq!(versions.len(), 60, "one event per write");
    assert!(
        versions.windows(2).all(|w| w[0] < w[1]),
        "in order, no repeats: {versions:?}"
    );
    let m = running.metrics.snapshot();
    assert_eq!(m.lists, 1, "resumed, never relisted");
    assert!(m.watches >= 20, "{m:?}");
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_watch_list_replaces_list_and_watch_with_one_request() {
    let h = server(SimConfig::default().with_watch_list(true)).await;
    for name in ["x", "y"] {
        seed(&h.sim, &jobs(), job("a", name));
    }
    let config = ReflectorConfig {
        use_watch_list: true,
        ..config()
    };
    let running = spawn(jobs_in_a(&h.client), config);
    running
        .sink
        .wait_until("the initial events", |m| m.objects.len() == 2)
        .await;
    seed(&h.sim, &jobs(), job("a", "z"));
    running
        .sink
        .wait_until("a live event", |m| m.objects.len() == 3)
        .await;
    let log = running.sink.log();
    assert!(
        matches!(&log[0], Seen::Replaced { keys, .. } if keys.len() == 2),
        "{log:?}"
    );
    assert!(
        matches!(&log[1], Seen::Added(k, _) if k == "a/z"),
        "{log:?}"
    );
    let entries = h.sim.journal().entries_for_path_prefix(JOBS_IN_A);
    assert_eq!(entries.len(), 1, "{:?}", requests(&h.sim));
    assert_eq!(entries[0].query_value("sendInitialEvents"), Some("true"));
    assert_eq!(
        entries[0].query_value("resourceVersionMatch"),
        Some("NotOlderThan")
    );
    assert_eq!(entries[0].query_value("allowWatchBookmarks"), Some("true"));
    let m = running.metrics.snapshot();
    assert_eq!((m.lists, m.watch_lists, m.watch_list_fallbacks), (1, 1, 0));
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_server_without_watch_list_is_asked_once_then_listed() {
    let h = server(SimConfig::default().with_watch_list(false)).await;
    seed(&h.sim, &jobs(), job("a", "x"));
    let config = ReflectorConfig {
        use_watch_list: true,
        ..config()
    };
    let running = spawn(jobs_in_a(&h.client), config);
    running
        .sink
        .wait_until("the list", |m| m.objects.len() == 1)
        .await;
    wait_for_watches(&h.sim, 2).await;
    let synced = h.sim.resource_version().to_string();
    // Force a relist: it must not try the streaming list again.
    h.sim.drop_connections();
    seed(&h.sim, &jobs(), job("b", "unrelated"));
    h.sim.restart();
    running
        .sink
        .wait_until("the relist", |m| m.log.len() >= 2)
        .await;
    wait_for_watches(&h.sim, 4).await;
    let now = h.sim.resource_version().to_string();
    assert_eq!(
        requests(&h.sim),
        [
            "WATCH sendInitialEvents=true -> 422".to_owned(),
            "LIST resourceVersion=0 limit=500 -> 200".to_owned(),
            format!("WATCH resourceVersion={synced} -> 200"),
            format!("WATCH resourceVersion={synced} -> 200"),
            format!("LIST resourceVersion={synced} -> 200"),
            format!("WATCH resourceVersion={now} -> 200"),
        ]
    );
    let m = running.metrics.snapshot();
    assert_eq!((m.watch_lists, m.watch_list_fallbacks), (1, 1));
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn metadata_only_lists_and_watches_ask_for_partial_objects() {
    let h = server(SimConfig::default()).await;
    seed(&h.sim, &jobs(), job("a", "x"));
    let running = spawn(MetadataOnly(jobs_in_a(&h.client)), config());
    running
        .sink
        .wait_until("the list", |m| m.objects.len() == 1)
        .await;
    seed(&h.sim, &jobs(), job("a", "y"));
    running
        .sink
        .wait_until("the new job", |m| m.objects.len() == 2)
        .await;
    running.sink.read(|m| {
        let y: &PartialObjectMetadata = &m.objects["a/y"];
        assert_eq!(
            y.metadata.labels.get("app").map(String::as_str),
            Some("test")
        );
    });
    let entries = h.sim.journal().entries_for_path_prefix(JOBS_IN_A);
    let accept = |e: &JournalEntry| e.header("accept").unwrap_or_default().to_owned();
    assert!(
        accept(&entries[0]).contains("as=PartialObjectMetadataList"),
        "{}",
        accept(&entries[0])
    );
    assert!(
        accept(&entries[1]).contains("as=PartialObjectMetadata;"),
        "{}",
        accept(&entries[1])
    );
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn dynamic_objects_are_reflected_as_json() {
    let h = server(SimConfig::default()).await;
    seed(&h.sim, &jobs(), job("a", "x"));
    let api: Api<Value> = Api::dynamic(h.client.clone(), ResourceRef::of::<Job>(), Some("a"));
    let running = spawn(api, config());
    running
        .sink
        .wait_until("the list", |m| m.objects.len() == 1)
        .await;
    h.sim
        .delete(&jobs(), Some("a"), "x", &background())
        .unwrap();
    running
        .sink
        .wait_until("the deletion", |m| m.objects.is_empty())
        .await;
    assert!(matches!(running.sink.log().last(), Some(Seen::Deleted(k, _)) if k == "a/x"));
    running.stop().await;
}

/// What a streaming list saves, measured on 1,200 Jobs: requests for a sync and a relist, and
/// the largest run of raw bytes the client must hold before it can decode (a whole LIST body,
/// versus one watch line).
#[tokio::test(start_paused = true)]
async fn a_watch_list_saves_requests_and_raw_bytes() {
    const JOBS: usize = 1_200;
    let mut requests_by_mode = Vec::new();
    for watch_list in [false, true] {
        let h = server(SimConfig::default().with_watch_list(watch_list)).await;
        for i in 0..JOBS {
            seed(&h.sim, &jobs(), job("a", &format!("job-{i:04}")));
        }
        let config = ReflectorConfig {
            use_watch_list: watch_list,
            ..config()
        };
        let running = spawn(jobs_in_a(&h.client), config);
        running
            .sink
            .wait_until("the sync", |m| m.objects.len() == JOBS)
            .await;
        wait_for_watches(&h.sim, 1).await;
        let synced = requests(&h.sim).len();
        h.sim.drop_connections();
        seed(&h.sim, &jobs(), job("b", "unrelated"));
        h.sim.restart();
        running
            .sink
            .wait_until("the relist", |m| m.log.len() >= 2)
            .await;
        // What the relist cost, up to the request that resumes watching.
        wait_for_watches(&h.sim, if watch_list { 2 } else { 3 }).await;
        let relisted = requests(&h.sim).len() - synced;
        requests_by_mode.push((synced, relisted));
        running.stop().await;

        if watch_list {
            let peak = largest_watch_list_line(&h.client).await;
            let list_body = largest_list_body(&h.client).await;
            eprintln!(
                "{JOBS} Jobs: a LIST body holds {list_body} bytes at once; a streaming list's \
                 longest line is {peak} bytes"
            );
            assert!(list_body > 100 * peak, "{list_body} vs {peak}");
        }
    }
    eprintln!(
        "requests (sync, relist): list+watch {:?}, watch-list {:?}",
        requests_by_mode[0], requests_by_mode[1]
    );
    // list+watch: LIST rv=0 + WATCH; relist: WATCH (410), LIST rv=N (one response), WATCH.
    assert_eq!(requests_by_mode[0], (2, 3));
    // watch-list: one WATCH each time; the relist also starts with the WATCH that got the 410.
    assert_eq!(requests_by_mode[1], (1, 2));
}

/// The body of the LIST a reflector's first list makes (`resourceVersion=0`, which the server
/// answers whole whatever the limit).
async fn largest_list_body(client: &Client) -> usize {
    use kube_gc::client::{ApiRequest, ListParams};
    let url = ResourceRef::of::<Job>().collection_url(client.server(), Some("a"));
    let params = ListParams::default().with_limit(500).at_version("0");
    let request = ApiRequest::get(url).with_query(&params.query());
    client.send_for_bytes(&request).await.unwrap().len()
}

/// The longest line of a streaming list, up to its initial-events-end bookmark.
async fn largest_watch_list_line(client: &Client) -> usize {
    use futures_util::StreamExt;
    use kube_gc::client::{ApiRequest, WatchParams};
    let url = ResourceRef::of::<Job>().collection_url(client.server(), Some("a"));
    let params = WatchParams {
        allow_bookmarks: true,
        send_initial_events: true,
        timeout_seconds: Some(1),
        ..WatchParams::default()
    };
    let request = ApiRequest::get(url).with_query(&params.query()).streaming();
    let mut body = client.send(&request).await.unwrap().bytes_stream();
    let (mut longest, mut current) = (0, 0);
    while let Some(chunk) = body.next().await {
        for byte in chunk.unwrap() {
            if byte == b'\n' {
                longest = longest.max(current);
                current = 0;
            } else {
                current += 1;
            }
        }
    }
    longest
}

/// An informer that cannot see changes says so: with every watch refused, after twice the
/// backoff cap (60 s) its reflector is stuck — the gauge counts the time, the collector names
/// it for `/readyz` — and once watches work again it recovers.
#[tokio::test(start_paused = true)]
async fn a_reflector_whose_watches_all_fail_is_reported_stuck_then_recovered() {
    let h = server(SimConfig::default()).await;
    seed(&h.sim, &jobs(), job("a", "x"));
    h.sim
        .faults()
        .set_plan(FaultPlan::new(3).fail(Verb::Watch, 1.0, &[503]));
    let running = spawn(jobs_in_a(&h.client), config());
    let collector = kube_gc::metrics::ReflectorCollector::default();
    collector.add(
        "ttl-after-finished",
        "batch/v1/jobs",
        running.metrics.clone(),
    );
    tokio::time::sleep(Duration::from_secs(50)).await;
    assert!(collector.stuck().is_empty(), "not yet: 50 s");
    tokio::time::sleep(Duration::from_secs(40)).await;
    assert_eq!(collector.stuck(), ["ttl-after-finished batch/v1/jobs"]);
    assert!(running.metrics.since_last_sync() >= Duration::from_secs(60));

    h.sim.faults().set_plan(FaultPlan::default());
    // The next retry is at most two backoff caps away; once its watch holds, it is in sync.
    tokio::time::sleep(Duration::from_secs(65)).await;
    assert!(collector.stuck().is_empty());
    assert_eq!(running.metrics.since_last_sync(), Duration::ZERO);
    running.stop().await;
}

/// The restart bug, at the reflector: the API server restarts in the middle of a watch, after
/// writes the reflector did not see moved the revision on (as in exchanges 56-60); objects
/// created after the restart must reach the cache after exactly one relist, and the relist
/// must not go back in time.
#[tokio::test(start_paused = true)]
async fn objects_created_after_a_restart_mid_watch_are_seen_after_one_relist() {
    let h = server(SimConfig::default()).await;
    seed(&h.sim, &jobs(), job("a", "before"));
    let running = spawn(jobs_in_a(&h.client), config());
    running
        .sink
        .wait_until("the initial list", |m| m.objects.len() == 1)
        .await;
    wait_for_watches(&h.sim, 1).await;
    let synced = h.sim.resource_version();
    // Writes to another namespace: the server's revision moves, this reflector's does not.
    seed(&h.sim, &jobs(), job("b", "elsewhere-1"));
    seed(&h.sim, &jobs(), job("b", "elsewhere-2"));
    h.sim.restart();
    let restarted_at = h.sim.resource_version();
    assert!(restarted_at > synced);
    seed(&h.sim, &jobs(), job("a", "after-1"));
    seed(&h.sim, &jobs(), job("a", "after-2"));

    running
        .sink
        .wait_until("the objects created after the restart", |m| {
            m.objects.len() == 3
        })
        .await;
    assert_eq!(running.sink.read(|m| m.versions()), server_state(&h.sim));
    let m = running.metrics.snapshot();
    assert_eq!((m.relists, m.errors), (1, 1), "one 410, one relist");
    // The relist asked for the last synced version, unpaged, and got the present.
    let relist = h
        .sim
        .journal()
        .entries_for_path_prefix(JOBS_IN_A)
        .into_iter()
        .filter(|e| e.query_value("watch").is_none())
        .nth(1)
        .expect("a relist");
    assert_eq!(
        relist.query_value("resourceVersion"),
        Some(synced.to_string().as_str())
    );
    assert_eq!(relist.query_value("limit"), None);
    // And it then watches on from a version at or after the restart: no 410 loop.
    seed(&h.sim, &jobs(), job("a", "after-3"));
    running
        .sink
        .wait_until("an object created while watching again", |m| {
            m.objects.len() == 4
        })
        .await;
    assert_eq!(running.metrics.snapshot().relists, 1);
    running.stop().await;
}
