//! `kubectl get crp` against the simulated server: the `Table` it answers is the real server's
//! with the CRDs of `deploy/crds/` applied (exchange 231 of `fixtures/real-apiserver/`; 207
//! before the `Mode` and `WouldDelete` columns), columns read from the CRD.

mod sim_support;

use std::sync::Arc;

use kube_gc::clock::ManualClock;
use kube_gc::sim::{Gvr, SimConfig};
use serde_json::{json, Value};
use sim_support::*;

const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";
const KUBECTL: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

fn captured_table() -> Value {
    let exchange = exchange("231-");
    assert_eq!(exchange["request"]["headers"]["Accept"], TABLE);
    exchange["response"]["body"].clone()
}

#[tokio::test]
async fn kubectl_get_crp_prints_the_crds_columns_like_exchange_231() {
    // The real server read the policy back within the second it was created (its Age is `0s`);
    // a clock that stands still reads it back at the same instant, whatever the machine's load.
    let answered = exchange("231-")["response"]["headers"]["date"]
        .as_str()
        .and_then(|date| chrono::DateTime::parse_from_rfc2822(date).ok())
        .expect("exchange 231 has a Date header");
    let clock = ManualClock::new(answered.with_timezone(&chrono::Utc));
    let server = start(SimConfig::default().with_clock(Arc::new(clock))).await;
    let policies = Gvr::new("kube-gc.io", "v1alpha1", "clusterretentionpolicies");
    let created = server
        .create(
            &policies,
            json!({"apiVersion": "kube-gc.io/v1alpha1", "kind": "ClusterRetentionPolicy",
                "metadata": {"name": "au-audit-pods"},
                "spec": {"preset": "pods", "mode": "Audit", "ttlSecondsAfterFinished": 7200,
                    "namespaceSelector": {"matchLabels": {"au-capture": "no-namespace-has-this"}}}}),
        )
        .unwrap();
    let mut with_status = created.clone();
    // The status 231's policy was given (234 reads it back).
    let mut status = exchange("234-")["response"]["body"]["status"].clone();
    status["conditions"][0]["lastTransitionTime"] =
        created["metadata"]["creationTimestamp"].clone();
    with_status["status"] = status;
    server.update_status(&policies, with_status).unwrap();

    let real = captured_table();
    let http = client();
    for accept in [TABLE, KUBECTL] {
        let (code, table) = send(
            http.get(url(
                &server,
                "/apis/kube-gc.io/v1alpha1/clusterretentionpolicies",
            ))
            .header("Accept", accept),
        )
        .await;
        assert_eq!(code, 200, "{table}");
        assert_eq!(
            (&table["kind"], &table["apiVersion"]),
            (&real["kind"], &real["apiVersion"])
        );
        assert_eq!(table["columnDefinitions"], real["columnDefinitions"]);
        assert_eq!(table["rows"][0]["cells"], real["rows"][0]["cells"]);
        let object = &table["rows"][0]["object"];
        assert_eq!(object["kind"], "PartialObjectMetadata");
        assert_eq!(object["metadata"]["name"], "au-audit-pods");
        assert!(table["metadata"]["resourceVersion"].is_string());
    }
    // One object, as `kubectl get crp au-audit-pods` asks (231 itself).
    let (_, one) = send(
        http.get(url(
            &server,
            "/apis/kube-gc.io/v1alpha1/clusterretentionpolicies/au-audit-pods",
        ))
        .header("Accept", KUBECTL),
    )
    .await;
    assert_eq!(one["rows"][0]["cells"], real["rows"][0]["cells"]);
    assert!(one["metadata"]["resourceVersion"].is_string());
    // A page says where the rest is, so a paging kubectl get sees it.
    server
        .create(
            &policies,
            json!({"apiVersion": "kube-gc.io/v1alpha1", "kind": "ClusterRetentionPolicy",
                "metadata": {"name": "second"}, "spec": {"preset": "pods"}}),
        )
        .unwrap();
    let (_, page) = send(
        http.get(url(
            &server,
            "/apis/kube-gc.io/v1alpha1/clusterretentionpolicies?limit=1",
        ))
        .header("Accept", KUBECTL),
    )
    .await;
    assert_eq!(page["rows"].as_array().map(Vec::len), Some(1));
    // As a real server's Table page (exchange 129 of fixtures/real-apiserver/).
    let real_page = exchange("129-");
    let keys = |v: &Value| {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    assert_eq!(
        keys(&page["metadata"]),
        keys(&real_page["response"]["body"]["metadata"]),
        "{page}"
    );
    // Resources without known columns answer JSON, as before.
    let (_, configmaps) = send(
        http.get(url(&server, "/api/v1/configmaps"))
            .header("Accept", KUBECTL),
    )
    .await;
    assert_eq!(configmaps["kind"], "ConfigMapList");
}

/// `kubectl get rp` (exchange 279): a column whose JSONPath has no value is `null` (Resource,
/// for a preset policy), the others as the real server printed them.
#[tokio::test]
async fn kubectl_get_rp_prints_null_for_a_path_without_a_value_like_exchange_279() {
    let server = start(SimConfig::default().with_namespaces(&["default", "kubectl-capture"])).await;
    let policies = Gvr::new("kube-gc.io", "v1alpha1", "retentionpolicies");
    let mut created = server
        .create(
            &policies,
            json!({"apiVersion": "kube-gc.io/v1alpha1", "kind": "RetentionPolicy",
                "metadata": {"name": "finished-jobs", "namespace": "kubectl-capture"},
                "spec": {"preset": "batch-jobs", "ttlSecondsAfterFinished": 600, "dryRun": true}}),
        )
        .unwrap();
    created["status"] = json!({"matched": 4, "waiting": 1, "unknown": 0, "deleted": 2,
        "conditions": [{"type": "Ready", "status": "True", "reason": "Watching", "message": "",
            "lastTransitionTime": created["metadata"]["creationTimestamp"]}]});
    server.update_status(&policies, created).unwrap();
    let real = captured_body("279-");
    let (code, table) = send(
        client()
            .get(url(
                &server,
                "/apis/kube-gc.io/v1alpha1/namespaces/kubectl-capture/retentionpolicies?limit=500",
            ))
            .header("Accept", KUBECTL),
    )
    .await;
    assert_eq!(code, 200, "{table}");
    // 279 was captured before the CRDs gained `Mode` (after `TTL`) and `WouldDelete` (after
    // `Deleted`); their definitions are the ones exchange 231 shows for the same CRD columns.
    // Without those two, the columns and cells are 279's.
    let added = ["Mode", "WouldDelete"];
    let columns = table["columnDefinitions"].as_array().unwrap();
    let with_added: Vec<&str> = columns
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    let audit_table = captured_body("231-");
    let audit_columns: Vec<&str> = audit_table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(with_added, audit_columns, "the columns are 231's");
    let kept = |values: &Value| -> Vec<Value> {
        values
            .as_array()
            .unwrap()
            .iter()
            .zip(&with_added)
            .filter(|(_, name)| !added.contains(name))
            .map(|(value, _)| value.clone())
            .collect()
    };
    assert_eq!(
        Value::Array(kept(&table["columnDefinitions"])),
        real["columnDefinitions"]
    );
    let (ours, theirs) = (kept(&table["rows"][0]["cells"]), &real["rows"][0]["cells"]);
    let last = theirs.as_array().unwrap().len() - 1;
    // All but the age, which is the time since creation.
    assert_eq!(ours[..last], theirs.as_array().unwrap()[..last]);
    assert_eq!(ours[2], Value::Null);
}
