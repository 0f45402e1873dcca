//! `kubectl auth can-i` against the simulated server: the SelfSubjectAccessReviews and the
//! SelfSubjectRulesReview kubectl v1.28 sent the real server (exchanges 280–286 of
//! `fixtures/real-apiserver/`), sent as they were, answered as they were.
//!
//! The real scene: the admin (`system:masters`), and a service account `narrow` whose Role
//! lets it get, list and watch ConfigMaps in `kubectl-capture`. This server knows no roles;
//! it refuses what it is told to, so `narrow` is refused deleting Jobs, and ConfigMaps
//! outside a namespace.

mod sim_support;

use kube_gc::sim::SimConfig;
use serde_json::{json, Value};
use sim_support::*;

const SELF_ACCESS: &str = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
const SELF_RULES: &str = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews";
const NARROW: &str = "system:serviceaccount:kubectl-capture:narrow";

fn config() -> SimConfig {
    SimConfig::default()
        .with_token("admin-token")
        .with_user(
            "narrow-token",
            NARROW,
            &[
                "system:serviceaccounts",
                "system:serviceaccounts:kubectl-capture",
            ],
        )
        .forbidding(NARROW, "batch", "jobs", &["delete", "deletecollection"])
        .forbidding_cluster_wide(NARROW, "", "configmaps", &["get", "list", "watch"])
}

async fn review(server: &kube_gc::sim::SimServer, token: &str, prefix: &str) -> (u16, Value) {
    let captured = exchange(prefix);
    let path = captured["request"]["path"].as_str().unwrap();
    send(
        client()
            .post(url(server, path))
            .bearer_auth(token)
            .json(&captured["request"]["body"]),
    )
    .await
}

#[tokio::test]
async fn access_reviews_answer_as_the_real_server_did() {
    let server = start(config()).await;
    for (prefix, token) in [
        ("280-", "admin-token"),
        ("281-", "admin-token"),
        ("283-", "narrow-token"),
        ("284-", "narrow-token"),
        ("285-", "narrow-token"),
    ] {
        let real = captured_body(prefix);
        let (code, answer) = review(&server, token, prefix).await;
        assert_eq!(code, 201, "{prefix}: {answer}");
        assert_eq!(answer["kind"], real["kind"], "{prefix}");
        assert_eq!(answer["apiVersion"], real["apiVersion"], "{prefix}");
        assert_eq!(answer["spec"], real["spec"], "{prefix}");
        assert_eq!(answer["status"], real["status"], "{prefix}");
    }
    // Allowed in its namespace; the real server says which RoleBinding allowed it, this one
    // knows no bindings.
    let (code, answer) = review(&server, "narrow-token", "282-").await;
    assert_eq!(code, 201);
    assert_eq!(
        answer["status"]["allowed"],
        captured_body("282-")["status"]["allowed"]
    );
}

#[tokio::test]
async fn a_review_agrees_with_what_the_request_then_meets() {
    let server = start(config()).await;
    let ask = |verb: &str, namespace: Option<&str>| {
        let mut attributes = json!({"verb": verb, "group": "batch", "resource": "jobs"});
        if let Some(ns) = namespace {
            attributes["namespace"] = json!(ns);
        }
        json!({"kind": "SelfSubjectAccessReview", "apiVersion": "authorization.k8s.io/v1",
            "spec": {"resourceAttributes": attributes}})
    };
    let (_, answer) = send(
        client()
            .post(url(&server, SELF_ACCESS))
            .bearer_auth("narrow-token")
            .json(&ask("list", None)),
    )
    .await;
    assert_eq!(answer["status"]["allowed"], true);
    let (code, _) = send(
        client()
            .get(url(&server, "/apis/batch/v1/jobs"))
            .bearer_auth("narrow-token"),
    )
    .await;
    assert_eq!(code, 200);
    // Denied to the server's own user at run time: the review says so at once.
    server.deny("list", &jobs()).unwrap();
    let (_, answer) = send(
        client()
            .post(url(&server, SELF_ACCESS))
            .bearer_auth("admin-token")
            .json(&ask("list", Some("default"))),
    )
    .await;
    assert_eq!(answer["status"], json!({"allowed": false}));
    let (code, _) = send(
        client()
            .get(url(&server, "/apis/batch/v1/namespaces/default/jobs"))
            .bearer_auth("admin-token"),
    )
    .await;
    assert_eq!(code, 403);
}

#[tokio::test]
async fn the_rules_review_lists_what_the_user_may_do() {
    let server = start(config()).await;
    let real = captured_body("286-");
    let (code, answer) = review(&server, "narrow-token", "286-").await;
    assert_eq!(code, 201, "{answer}");
    assert_eq!(answer["kind"], real["kind"]);
    assert_eq!(answer["spec"], real["spec"]);
    assert_eq!(answer["status"]["incomplete"], real["status"]["incomplete"]);
    assert_eq!(
        answer["status"]["nonResourceRules"],
        real["status"]["nonResourceRules"]
    );
    let rules = answer["status"]["resourceRules"].as_array().unwrap();
    let real_rules = real["status"]["resourceRules"].as_array().unwrap();
    assert_eq!(rules[..2], real_rules[..2], "the self-review rules first");
    let may = |group: &str, resource: &str, verb: &str| {
        rules.iter().any(|rule| {
            rule["apiGroups"][0] == group
                && rule["resources"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|r| r == resource)
                && rule["verbs"].as_array().unwrap().iter().any(|v| v == verb)
        })
    };
    for verb in ["get", "list", "watch"] {
        assert!(may("", "configmaps", verb), "{verb} configmaps: {answer}");
    }
    assert!(!may("batch", "jobs", "delete"), "{answer}");
    assert!(may("batch", "jobs", "list"), "{answer}");
    assert!(may("batch", "jobs/status", "patch"), "{answer}");

    // The admin may do everything, to every path.
    let (_, admin) = send(
        client()
            .post(url(&server, SELF_RULES))
            .bearer_auth("admin-token")
            .json(&exchange("286-")["request"]["body"]),
    )
    .await;
    assert_eq!(
        admin["status"]["resourceRules"][2],
        json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]})
    );
    assert_eq!(
        admin["status"]["nonResourceRules"][0],
        json!({"verbs": ["*"], "nonResourceURLs": ["*"]})
    );
}
