//! `deploy/monitoring/grafana-dashboard.json`: every query reads metrics kube-gc publishes,
//! under the names `/metrics` gives them, and the dashboard shows what kube-gc will delete
//! (`kube_gc_pending_deletions`) and what Audit policies would.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use kube_gc::api::PropagationPolicy;
use kube_gc::clock::{SharedClock, SystemClock};
use kube_gc::controllers::garbagecollector::GcMetrics;
use kube_gc::controllers::pending::{PendingQuery, PendingTally, SharedPendingSource};
use kube_gc::controllers::retention::engine::{RetentionMetrics, StateTally};
use kube_gc::controllers::retention::policy::PolicyId;
use kube_gc::controllers::ttl::TtlMetrics;
use kube_gc::metrics::Metrics;
use kube_gc::notify::NotifyMetrics;
use serde_json::Value;

fn dashboard() -> Value {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/monitoring/grafana-dashboard.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("the dashboard")).expect("JSON")
}

/// Every metric family a kube-gc running every controller publishes, as `# TYPE` names it.
fn published() -> BTreeSet<String> {
    let metrics = Metrics::new();
    let (retention, ttl, gc, notify) = (
        RetentionMetrics::default(),
        TtlMetrics::new(),
        GcMetrics::new(),
        NotifyMetrics::default(),
    );
    metrics.register_with(|registry| {
        retention.register(registry);
        ttl.register(registry);
        gc.register(registry);
        notify.register(registry);
    });
    // A family is published once it has a series: reading a count creates one.
    let policy = PolicyId::cluster("enforced");
    retention.deletions(&policy);
    retention.would_deletes(&policy);
    retention.set_policies(&StateTally::default());
    ttl.deletions("Job");
    gc.deletions(PropagationPolicy::Background);
    let destination = kube_gc::notify::FLAG_DESTINATION;
    notify.sent_count(destination);
    notify.dropped_count(destination);
    notify.failed_count(destination);
    // A retention controller with one enforcing and one Audit policy.
    let source: SharedPendingSource = Arc::new(|query: &PendingQuery| {
        [("enforced", false), ("trial", true)]
            .into_iter()
            .map(|(name, audit)| {
                PendingTally::new(query, "retention", Some(PolicyId::cluster(name)), audit).finish()
            })
            .collect()
    });
    let clock: SharedClock = Arc::new(SystemClock);
    metrics.pending().add(source, clock);
    let text = metrics.encode().expect("metrics");
    text.lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

/// Every query of every panel, with its panel's title.
fn queries(dashboard: &Value) -> Vec<(String, String)> {
    let panels = dashboard["panels"].as_array().expect("panels");
    panels
        .iter()
        .flat_map(|panel| {
            let title = panel["title"].as_str().unwrap_or_default().to_owned();
            panel["targets"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(move |t| Some((title.clone(), t["expr"].as_str()?.to_owned())))
        })
        .collect()
}

/// The metric names a PromQL expression reads (identifiers with kube-gc's prefixes).
fn metric_names(expr: &str) -> Vec<String> {
    expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
        .filter(|t| {
            ["kube_gc_", "ttl_after_finished_", "garbagecollector_"]
                .iter()
                .any(|p| t.starts_with(p))
        })
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_query_reads_a_metric_kube_gc_publishes() {
    let families = published();
    let dashboard = dashboard();
    let queries = queries(&dashboard);
    assert!(queries.len() >= 10, "{queries:?}");
    for (title, expr) in &queries {
        let names = metric_names(expr);
        assert!(!names.is_empty(), "{title}: {expr} reads no kube-gc metric");
        for name in names {
            let family = ["_total", "_bucket", "_sum", "_count"]
                .iter()
                .find_map(|suffix| name.strip_suffix(suffix))
                .unwrap_or(&name);
            assert!(
                families.contains(family),
                "{title}: {name} is not published (families: {families:?})"
            );
        }
    }
}

#[test]
fn the_dashboard_shows_what_comes_and_what_audit_policies_would_delete() {
    let dashboard = dashboard();
    let exprs: Vec<String> = queries(&dashboard).into_iter().map(|(_, e)| e).collect();
    for wanted in [
        "kube_gc_pending_deletions{within=\"1h\"}",
        "kube_gc_pending_deletions{within=\"24h\"}",
        "kube_gc_retention_would_delete_pending",
        "kube_gc_retention_would_delete_total",
        "kube_gc_notification_batches_dropped_total",
    ] {
        assert!(
            exprs.iter().any(|e| e.contains(wanted)),
            "no panel reads {wanted}"
        );
    }
    // One Prometheus data source, chosen when imported; panel ids unique.
    let panels = dashboard["panels"].as_array().expect("panels");
    let mut ids = BTreeSet::new();
    for panel in panels {
        assert!(ids.insert(panel["id"].as_u64().expect("an id")), "{panel}");
        if panel["type"] != "row" {
            assert_eq!(
                panel["datasource"]["uid"], "${datasource}",
                "{}",
                panel["title"]
            );
        }
    }
    assert_eq!(dashboard["templating"]["list"][0]["type"], "datasource");
}
