//! `kubectl` against the simulated server, through a generated kubeconfig (TLS and a token).
//! Skipped, with a printed reason, when `kubectl` is not on PATH.

mod sim_support;

use std::path::Path;
use std::time::Duration;

use kube_gc::sim::{SimConfig, SimServer};
use sim_support::*;

async fn kubectl(kubeconfig: &Path, args: &[&str]) -> Option<(bool, String, String)> {
    let run = tokio::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .kill_on_drop(true)
        .output();
    match tokio::time::timeout(Duration::from_secs(60), run).await {
        Ok(Ok(output)) => Some((
            output.status.success(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )),
        Ok(Err(e)) => {
            println!("skipping: kubectl could not be run: {e}");
            None
        }
        Err(_) => panic!("kubectl {args:?} did not finish within 60 s"),
    }
}

async fn tls_server_with_jobs() -> SimServer {
    let server = start(SimConfig::default().with_tls().with_token("kubectl-token")).await;
    create_job(&server, "first");
    create_job(&server, "second");
    server
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_lists_jobs_and_streams_a_raw_watch() {
    let server = tls_server_with_jobs().await;
    let dir = match tempfile::tempdir() {
        Ok(dir) => dir,
        Err(e) => panic!("tempdir: {e}"),
    };
    let kubeconfig = dir.path().join("kubeconfig");
    if let Err(e) = server.write_kubeconfig(&kubeconfig) {
        panic!("writing kubeconfig: {e}");
    }

    let Some((ok, stdout, stderr)) = kubectl(&kubeconfig, &["get", "jobs", "-A"]).await else {
        return;
    };
    assert!(ok, "kubectl get jobs -A failed: {stderr}");
    println!("kubectl get jobs -A:\n{stdout}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines
            .first()
            .is_some_and(|h| h.starts_with("NAMESPACE") && h.contains("NAME")),
        "{stdout}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("capture") && l.contains("first")),
        "{stdout}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("capture") && l.contains("second")),
        "{stdout}"
    );

    let raw = "/apis/batch/v1/jobs?watch=1&timeoutSeconds=2";
    let Some((ok, stdout, stderr)) = kubectl(&kubeconfig, &["get", "--raw", raw]).await else {
        return;
    };
    assert!(ok, "kubectl get --raw watch failed: {stderr}");
    let events: Vec<serde_json::Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert_eq!(
        summary(&events),
        vec![
            ("ADDED".into(), "first".into()),
            ("ADDED".into(), "second".into())
        ],
        "{stdout}"
    );
    let watches = server.journal().by_verb(kube_gc::sim::faults::Verb::Watch);
    assert_eq!(watches.len(), 1);
    assert_eq!(watches[0].header("authorization"), Some("Bearer"));
}
