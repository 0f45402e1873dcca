//! The simulated server refusing a user what a configuration denies it, as a real server's RBAC
//! refuses a service account without the rule (exchanges 200–206): the same 403 `Status`, for a
//! list, a watch (before any stream) and a delete, at the cluster scope and in a namespace;
//! everything else allowed; and `kubectl` printing the refusal as it does against a real server.

mod sim_support;

use std::time::Duration;

use kube_gc::sim::{SimConfig, SimServer};
use serde_json::json;
use sim_support::*;

/// The service account of the captures 200–206.
const USER: &str = "system:serviceaccount:rd-capture-forbidden:rd-capture";

async fn server() -> SimServer {
    server_with(SimConfig::default()).await
}

async fn server_with(config: SimConfig) -> SimServer {
    let server = start(
        config
            .with_token("admin-token")
            .with_user("sa-token", USER, &["system:serviceaccounts"])
            .forbidding(USER, "", "configmaps", &["list", "watch"])
            .forbidding(USER, "", "configmaps", &["delete"])
            .forbidding(USER, "batch", "jobs", &["list"])
            .with_namespaces(&["default", "rd-capture-forbidden"]),
    )
    .await;
    server
        .create(
            &configmaps(),
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "rd-kept", "namespace": "rd-capture-forbidden"}}),
        )
        .expect("created");
    server
}

fn as_user(server: &SimServer, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
    client()
        .request(method, url(server, path))
        .bearer_auth("sa-token")
}

#[tokio::test]
async fn a_denied_verb_is_refused_with_the_real_403() {
    let server = server().await;
    for (prefix, method, path) in [
        (
            "200-",
            reqwest::Method::GET,
            "/api/v1/configmaps?limit=500&resourceVersion=0",
        ),
        (
            "202-",
            reqwest::Method::GET,
            "/api/v1/configmaps?allowWatchBookmarks=true&watch=true&timeoutSeconds=5",
        ),
        (
            "204-",
            reqwest::Method::DELETE,
            "/api/v1/namespaces/rd-capture-forbidden/configmaps/rd-kept",
        ),
        (
            "205-",
            reqwest::Method::GET,
            "/apis/batch/v1/jobs?limit=500",
        ),
    ] {
        let response = tokio::time::timeout(
            Duration::from_secs(5),
            as_user(&server, method, path).send(),
        )
        .await
        .expect("refused at once, before any stream")
        .expect("an answer");
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let (code, body) = status_and_json(response).await;
        assert_eq!(code, 403, "{prefix}");
        assert_eq!(
            content_type.as_deref(),
            Some("application/json"),
            "{prefix}"
        );
        assert_eq!(body, captured_body(prefix), "{prefix}");
    }
    // Refused means untouched: the ConfigMap is still there.
    let (code, _) = send(
        client()
            .get(url(
                &server,
                "/api/v1/namespaces/rd-capture-forbidden/configmaps/rd-kept",
            ))
            .bearer_auth("admin-token"),
    )
    .await;
    assert_eq!(code, 200);
}

#[tokio::test]
async fn only_what_is_denied_is_refused_and_only_to_that_user() {
    let server = server().await;
    // In a namespace the scope is named (a real Role could grant it there; here it is denied
    // everywhere, as the denial names no namespace).
    let (code, body) = send(as_user(
        &server,
        reqwest::Method::GET,
        "/api/v1/namespaces/rd-capture-forbidden/configmaps",
    ))
    .await;
    assert_eq!(code, 403);
    assert_eq!(
        body["message"],
        format!("configmaps is forbidden: User \"{USER}\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"rd-capture-forbidden\"")
    );
    // A verb not denied: the GET of one ConfigMap.
    let (code, _) = send(as_user(
        &server,
        reqwest::Method::GET,
        "/api/v1/namespaces/rd-capture-forbidden/configmaps/rd-kept",
    ))
    .await;
    assert_eq!(code, 200);
    // Another resource.
    let (code, _) = send(as_user(&server, reqwest::Method::GET, "/api/v1/pods")).await;
    assert_eq!(code, 200);
    // Discovery is granted by path, never refused here.
    let (code, _) = send(as_user(&server, reqwest::Method::GET, "/api/v1")).await;
    assert_eq!(code, 200);
    // The server's own token (admin, system:masters) is never refused.
    let (code, _) = send(
        client()
            .get(url(&server, "/api/v1/configmaps"))
            .bearer_auth("admin-token"),
    )
    .await;
    assert_eq!(code, 200);
    // A token nobody has is not authenticated at all.
    let (code, body) = send(
        client()
            .get(url(&server, "/api/v1/pods"))
            .bearer_auth("nobody"),
    )
    .await;
    assert_eq!((code, body["reason"].as_str()), (401, Some("Unauthorized")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_prints_the_refusal_as_against_a_real_server() {
    // kubectl sends a bearer token over TLS only.
    let server = server_with(SimConfig::default().with_tls()).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).expect("kubeconfig");
    let run = tokio::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(["--token", "sa-token", "get", "configmaps", "-A"])
        .kill_on_drop(true)
        .output();
    let output = match tokio::time::timeout(Duration::from_secs(60), run).await {
        Ok(Ok(output)) => output,
        Ok(Err(e)) => {
            println!("skipping: kubectl could not be run: {e}");
            return;
        }
        Err(_) => panic!("kubectl did not finish within 60 s"),
    };
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        stderr.trim(),
        format!("Error from server (Forbidden): configmaps is forbidden: User \"{USER}\" cannot list resource \"configmaps\" in API group \"\" at the cluster scope")
    );
}
