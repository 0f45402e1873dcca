//! kube-gc's own CRDs on the simulated server: `RetentionPolicy` namespaced and
//! `ClusterRetentionPolicy` cluster-scoped, each with a status subresource, so that a status
//! update leaves `metadata.generation` alone and a spec change bumps it — replayed from the real
//! server's exchanges in `fixtures/retention/crd-validation/` (06, 07, 20, 21); a status merge
//! patch writes what it names and `null` removes a member (`fixtures/real-apiserver/exchanges/`
//! 72, 73) — and the presets' workload resources served on request.

mod sim_support;

use std::path::Path;

use kube_gc::sim::resources::workload_custom_resources;
use kube_gc::sim::SimConfig;
use serde_json::{json, Value};
use sim_support::*;

const GROUP_VERSION: &str = "/apis/kube-gc.io/v1alpha1";

/// A captured exchange of `fixtures/retention/crd-validation/` by its number (`"20-"`).
fn real(prefix: &str) -> Value {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/retention/crd-validation");
    let file = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().starts_with(prefix))
        .unwrap_or_else(|| panic!("no exchange {prefix}"));
    serde_json::from_str(&std::fs::read_to_string(file.path()).unwrap()).unwrap()
}

#[tokio::test]
async fn policies_are_served_with_their_scope() {
    let server = start(SimConfig::default()).await;
    let http = client();
    let cluster = format!("{GROUP_VERSION}/clusterretentionpolicies");
    let namespaced = format!("{GROUP_VERSION}/namespaces/default/retentionpolicies");

    let (code, created) = send(
        http.post(url(&server, &cluster))
            .json(&real("06-")["request"]["body"]),
    )
    .await;
    assert_eq!(code, 201, "{created}");
    assert!(created["metadata"].get("namespace").is_none());
    assert_eq!(created["kind"], "ClusterRetentionPolicy");
    assert_eq!(created["metadata"]["generation"], 1);

    let (code, created) = send(
        http.post(url(&server, &namespaced))
            .json(&real("07-")["request"]["body"]),
    )
    .await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["metadata"]["namespace"], "default");
    assert_eq!(
        created["spec"]["groupBy"],
        json!({"label": "tekton.dev/pipeline"})
    );

    // Cluster-scoped objects have no namespaced path; namespaced ones list across namespaces.
    let wrong = format!("{GROUP_VERSION}/namespaces/default/clusterretentionpolicies");
    assert_eq!(send(http.get(url(&server, &wrong))).await.0, 404);
    let (code, all) =
        send(http.get(url(&server, &format!("{GROUP_VERSION}/retentionpolicies")))).await;
    assert_eq!(code, 200);
    assert_eq!(all["kind"], "RetentionPolicyList");
    assert_eq!(
        all["items"][0]["kind"], "RetentionPolicy",
        "custom: items keep their kind"
    );
}

#[tokio::test]
async fn a_status_update_keeps_the_generation_and_a_spec_change_bumps_it() {
    let server = start(SimConfig::default()).await;
    let http = client();
    let cluster = format!("{GROUP_VERSION}/clusterretentionpolicies");
    let (code, mut policy) = send(
        http.post(url(&server, &cluster))
            .json(&real("06-")["request"]["body"]),
    )
    .await;
    assert_eq!(code, 201);

    // Exchange 20: PUT /status with the real request's status.
    let status = real("20-")["request"]["body"]["status"].clone();
    policy["status"] = status.clone();
    let (code, updated) = send(
        http.put(url(&server, &format!("{cluster}/finished-pods/status")))
            .json(&policy),
    )
    .await;
    assert_eq!(code, 200, "{updated}");
    let expected = real("20-")["response"]["body"].clone();
    assert_eq!(updated["metadata"]["generation"], 1);
    assert_eq!(
        updated["metadata"]["generation"],
        expected["metadata"]["generation"]
    );
    assert_eq!(updated["status"], status);

    // Exchange 21: the main resource, a spec change and a status the server ignores.
    let mut changed = updated.clone();
    changed["spec"]["ttlSecondsAfterFinished"] = json!(7200);
    changed["status"]["matched"] = json!(99);
    let (code, after) = send(
        http.put(url(&server, &format!("{cluster}/finished-pods")))
            .json(&changed),
    )
    .await;
    assert_eq!(code, 200, "{after}");
    let expected = real("21-")["response"]["body"].clone();
    assert_eq!(after["metadata"]["generation"], 2);
    assert_eq!(
        after["metadata"]["generation"],
        expected["metadata"]["generation"]
    );
    assert_eq!(after["status"]["matched"], expected["status"]["matched"]);
    assert_eq!(after["spec"], expected["spec"]);

    // The status alone, again: generation stays at 2.
    let mut again = after.clone();
    again["status"]["deleted"] = json!(3);
    let (code, last) = send(
        http.put(url(&server, &format!("{cluster}/finished-pods/status")))
            .json(&again),
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(last["metadata"]["generation"], 2);
    assert_eq!(last["status"]["deleted"], 3);
}

/// Exchanges 72 and 73 (`fixtures/real-apiserver/exchanges/`): a JSON merge patch of a
/// policy's status writes the fields it names, and one naming a field as `null` removes it —
/// the way the retention engine's status writer clears `nextDeletionTime`.
#[tokio::test]
async fn a_status_merge_patch_writes_what_it_names_and_null_removes() {
    let server = start(SimConfig::default()).await;
    let http = client();
    let cluster = format!("{GROUP_VERSION}/clusterretentionpolicies");
    let (code, _) = send(http.post(url(&server, &cluster)).json(
        &json!({"apiVersion": "kube-gc.io/v1alpha1", "kind": "ClusterRetentionPolicy",
                "metadata": {"name": "capture-status"},
                "spec": {"preset": "pods", "ttlSecondsAfterFinished": 60}}),
    ))
    .await;
    assert_eq!(code, 201);
    for prefix in ["72-", "73-"] {
        let real = exchange(prefix);
        let (code, patched) = send(
            http.patch(url(&server, &format!("{cluster}/capture-status/status")))
                .header("content-type", "application/merge-patch+json")
                .json(&real["request"]["body"]),
        )
        .await;
        assert_eq!(code, real["response"]["status"], "{prefix}: {patched}");
        assert_eq!(
            patched["status"], real["response"]["body"]["status"],
            "{prefix}"
        );
        assert_eq!(
            patched["metadata"]["generation"], real["response"]["body"]["metadata"]["generation"],
            "{prefix}"
        );
    }
}

#[tokio::test]
async fn workload_resources_are_served_on_request_only() {
    let plain = start(SimConfig::default()).await;
    let with = start(SimConfig::default().with_workload_custom_resources()).await;
    let http = client();
    for def in workload_custom_resources() {
        let path = format!(
            "/apis/{}/{}/namespaces/default/{}",
            def.group, def.version, def.resource
        );
        assert_eq!(send(http.get(url(&plain, &path))).await.0, 404, "{path}");
        let (code, list) = send(http.get(url(&with, &path))).await;
        assert_eq!(code, 200, "{path}");
        assert_eq!(list["kind"], def.list_kind());
        let body = json!({
            "apiVersion": def.api_version(),
            "kind": def.kind,
            "metadata": {"name": "one", "namespace": "default"},
            "spec": {},
        });
        let (code, created) = send(http.post(url(&with, &path)).json(&body)).await;
        assert_eq!(code, 201, "{path}: {created}");
        assert_eq!(created["metadata"]["generation"], 1);
    }
    // Served once, even when asked twice.
    let twice = SimConfig::default()
        .with_workload_custom_resources()
        .with_workload_custom_resources();
    assert_eq!(
        twice.resources.len(),
        SimConfig::default().resources.len() + 10
    );
}

/// Exchanges 08–17 and 24: what the real server refuses by the CRDs' schema and CEL rules,
/// refused by the sim with the same status and `Status` body. 18–19 (pruning and strict
/// decoding of an unknown field) are not reproduced.
#[tokio::test]
async fn invalid_policies_are_refused_like_the_real_server() {
    let server = start(SimConfig::default()).await;
    let http = client();
    for prefix in [
        "08-", "09-", "10-", "11-", "12-", "13-", "14-", "15-", "16-", "17-", "24-",
    ] {
        let real = real(prefix);
        let path = real["request"]["path"].as_str().unwrap();
        assert_eq!(real["request"]["method"], "POST", "{prefix}");
        let (code, body) = send(http.post(url(&server, path)).json(&real["request"]["body"])).await;
        assert_eq!(code, real["response"]["status"], "{prefix}: {body}");
        assert_eq!(body, real["response"]["body"], "{prefix}");
    }
    // Exchange 23: without history limits, ttlSecondsAfterCreation decides alone.
    let real = real("23-");
    let (code, body) = send(
        http.post(url(&server, real["request"]["path"].as_str().unwrap()))
            .json(&real["request"]["body"]),
    )
    .await;
    assert_eq!(code, real["response"]["status"], "{body}");
}

/// Exchanges 232 and 233 of `fixtures/real-apiserver/`: a `mode` neither `Enforce` nor `Audit`
/// is refused by the enum, `mode: Enforce` with `dryRun: true` by the CEL rule — by the sim with
/// the real server's status and `Status` body; and 234: the status fields kube-gc writes for an
/// `Audit` policy are kept as written, as the real server keeps them.
#[tokio::test]
async fn a_policys_mode_is_validated_and_its_audit_status_kept_like_the_real_server() {
    let server = start(SimConfig::default()).await;
    let http = client();
    for prefix in ["232-", "233-"] {
        let real = exchange(prefix);
        let path = real["request"]["path"].as_str().unwrap();
        let (code, body) = send(http.post(url(&server, path)).json(&real["request"]["body"])).await;
        assert_eq!(code, real["response"]["status"], "{prefix}: {body}");
        assert_eq!(body, real["response"]["body"], "{prefix}");
    }
    let real = exchange("234-")["response"]["body"].clone();
    let cluster = format!("{GROUP_VERSION}/clusterretentionpolicies");
    let mut policy = json!({"apiVersion": "kube-gc.io/v1alpha1", "kind": "ClusterRetentionPolicy",
        "metadata": {"name": "au-audit-pods"}, "spec": real["spec"].clone()});
    let (code, created) = send(http.post(url(&server, &cluster)).json(&policy)).await;
    assert_eq!(code, 201, "{created}");
    policy = created;
    policy["status"] = real["status"].clone();
    let status = format!("{cluster}/au-audit-pods/status");
    let (code, written) = send(http.put(url(&server, &status)).json(&policy)).await;
    assert_eq!(code, 200, "{written}");
    let (_, read) = send(http.get(url(&server, &format!("{cluster}/au-audit-pods")))).await;
    assert_eq!(read["status"], real["status"]);
    assert_eq!(read["spec"], real["spec"]);
}

/// The same rules guard updates: a PUT or a merge patch of the main resource that would make
/// the policy of exchange 06 one of the refused ones is refused with the same causes.
#[tokio::test]
async fn invalid_updates_are_refused_too() {
    let server = start(SimConfig::default()).await;
    let http = client();
    let cluster = format!("{GROUP_VERSION}/clusterretentionpolicies");
    let (code, policy) = send(
        http.post(url(&server, &cluster))
            .json(&real("06-")["request"]["body"]),
    )
    .await;
    assert_eq!(code, 201, "{policy}");
    let name = policy["metadata"]["name"].as_str().unwrap().to_owned();
    let expected = |prefix: &str| {
        let mut body = real(prefix)["response"]["body"].clone();
        body["details"]["name"] = json!(name);
        body["message"] = json!(body["message"]
            .as_str()
            .unwrap()
            .replace("\"bad\"", &format!("{name:?}")));
        body
    };

    let mut changed = policy.clone();
    changed["spec"]["propagationPolicy"] = json!("Cascade");
    let (code, body) = send(
        http.put(url(&server, &format!("{cluster}/{name}")))
            .json(&changed),
    )
    .await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(body, expected("16-"));

    let (code, body) = send(
        http.patch(url(&server, &format!("{cluster}/{name}")))
            .header("content-type", "application/merge-patch+json")
            .json(&json!({"spec": {"ttlSecondsAfterFinished": -1, "failedHistoryLimit": -2}})),
    )
    .await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(body, expected("11-"));

    // Nothing was stored.
    let (code, stored) = send(http.get(url(&server, &format!("{cluster}/{name}")))).await;
    assert_eq!(code, 200);
    assert_eq!(stored["spec"], policy["spec"]);
}
