//! `kubectl` against the simulated server, through a generated kubeconfig (TLS and a token).
//! Skipped, with a printed reason, when `kubectl` is not on PATH.

mod sim_support;

use std::path::Path;
use std::time::Duration;

use kube_gc::sim::{AggregatedDiscovery, SimConfig, SimServer};
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

/// What a new user types first: `kubectl create -f` and `apply -f` of a Job
/// and of a retention policy (kubectl reads `/openapi/v2` first), `kubectl get crp` with the
/// CRD's columns, and the real server's refusal of an invalid policy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_creates_and_applies_files_and_prints_policies() {
    let server = start(SimConfig::default().with_tls().with_token("kubectl-token")).await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).unwrap();
    let job = dir.path().join("job.yaml");
    std::fs::write(
        &job,
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: from-file, namespace: default}\n\
         spec:\n  ttlSecondsAfterFinished: 60\n  template: {spec: {restartPolicy: Never, \
         containers: [{name: c, image: busybox}]}}\n",
    )
    .unwrap();
    let policy = |ttl: i64| {
        format!(
            "apiVersion: kube-gc.io/v1alpha1\nkind: ClusterRetentionPolicy\n\
             metadata: {{name: from-file}}\nspec: {{preset: pods, ttlSecondsAfterFinished: {ttl}}}\n"
        )
    };
    let crp = dir.path().join("crp.yaml");
    std::fs::write(&crp, policy(3600)).unwrap();
    let file = |p: &std::path::Path| p.display().to_string();

    let Some((ok, _, stderr)) = kubectl(&kubeconfig, &["create", "-f", &file(&job)]).await else {
        return;
    };
    assert!(ok, "kubectl create -f: {stderr}");
    let (ok, _, stderr) = kubectl(&kubeconfig, &["apply", "-f", &file(&job)])
        .await
        .unwrap();
    assert!(ok, "kubectl apply -f of the Job: {stderr}");
    let (ok, _, stderr) = kubectl(&kubeconfig, &["apply", "-f", &file(&crp)])
        .await
        .unwrap();
    assert!(ok, "kubectl apply -f of the policy: {stderr}");
    let (ok, stdout, stderr) = kubectl(&kubeconfig, &["get", "crp"]).await.unwrap();
    assert!(ok, "{stderr}");
    assert!(
        stdout.starts_with("NAME") && stdout.contains("PRESET") && stdout.contains("from-file"),
        "{stdout}"
    );
    std::fs::write(&crp, policy(-5)).unwrap();
    let (ok, _, stderr) = kubectl(&kubeconfig, &["apply", "-f", &file(&crp)])
        .await
        .unwrap();
    assert!(!ok);
    assert!(
        stderr
            .contains("spec.ttlSecondsAfterFinished in body should be greater than or equal to 0"),
        "{stderr}"
    );
}

/// What a user types to install kube-gc's CRDs, then waits for: `kubectl apply -k deploy/crds/`
/// finds them installed as that command installs them (`unchanged`, no warning), `kubectl wait
/// --for condition=established` returns, and `kubectl get crd` lists them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_applies_the_crds_and_waits_for_them() {
    let server = start(SimConfig::default().with_tls().with_token("kubectl-token")).await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).unwrap();
    let crds = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/crds");
    let crds = crds.display().to_string();

    let Some((ok, stdout, stderr)) = kubectl(&kubeconfig, &["apply", "-k", &crds]).await else {
        return;
    };
    assert!(ok, "kubectl apply -k deploy/crds/: {stderr}");
    assert_eq!(
        stdout.lines().filter(|l| l.ends_with(" unchanged")).count(),
        2,
        "{stdout}"
    );
    assert!(!stderr.contains("Warning"), "{stderr}");
    let (ok, _, stderr) = kubectl(
        &kubeconfig,
        &[
            "wait",
            "--for",
            "condition=established",
            "--timeout=10s",
            "crd/retentionpolicies.kube-gc.io",
            "crd/clusterretentionpolicies.kube-gc.io",
        ],
    )
    .await
    .unwrap();
    assert!(ok, "kubectl wait: {stderr}");
    let (ok, stdout, stderr) = kubectl(&kubeconfig, &["get", "crd"]).await.unwrap();
    assert!(ok, "{stderr}");
    assert!(stdout.contains("jobs.batch.volcano.sh"), "{stdout}");
}

/// kubectl v1.28 asks discovery in `v2beta1`, then plain JSON. A server of each later release
/// still serves it: v1.30–v1.32 in `v2beta1`, v1.33 and later, which serve `v2` alone, in the
/// legacy documents, read one per group version — and `kubectl get crp` works against both, as
/// against the real server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_v1_28_reads_discovery_from_servers_of_later_releases() {
    for served in [AggregatedDiscovery::Both, AggregatedDiscovery::V2] {
        let server = start(
            SimConfig::default()
                .with_tls()
                .with_token("kubectl-token")
                .with_aggregated_discovery(served),
        )
        .await;
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = dir.path().join("kubeconfig");
        server.write_kubeconfig(&kubeconfig).unwrap();
        // A fresh discovery cache, so that kubectl asks the server.
        let cache = dir.path().join("cache");
        let cache_flag = format!("--cache-dir={}", cache.display());
        let Some((ok, stdout, stderr)) = kubectl(&kubeconfig, &[&cache_flag, "get", "crp"]).await
        else {
            return;
        };
        assert!(ok, "{served:?}: {stderr}");
        assert!(
            stdout.is_empty() || stdout.starts_with("NAME"),
            "{served:?}: {stdout}"
        );
        let journal = server.journal().entries();
        let apis: Vec<_> = journal.iter().filter(|e| e.path == "/apis").collect();
        assert!(!apis.is_empty(), "{served:?}: kubectl read /apis");
        let legacy = apis
            .iter()
            .all(|e| e.content_type.as_deref() == Some("application/json"));
        assert_eq!(
            legacy,
            served == AggregatedDiscovery::V2,
            "{served:?}: {:?}",
            apis.iter().map(|e| &e.content_type).collect::<Vec<_>>()
        );
        if legacy {
            assert!(
                journal
                    .iter()
                    .any(|e| e.path == "/apis/kube-gc.io/v1alpha1"),
                "the legacy fallback reads each group version"
            );
        }
    }
}

/// A namespace's life as kubectl sees it on a server without a namespace controller: deleted,
/// it stays `Terminating` and refuses new content (the real server's Status, exchange 143);
/// `kubectl replace --raw …/finalize` lets it go.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_deletes_a_namespace_sees_it_terminating_and_finalizes_it() {
    let server = start(SimConfig::default().with_tls().with_token("kubectl-token")).await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).unwrap();
    let Some((ok, _, stderr)) = kubectl(&kubeconfig, &["create", "namespace", "team"]).await else {
        return;
    };
    assert!(ok, "{stderr}");
    let (ok, stdout, stderr) = kubectl(
        &kubeconfig,
        &["delete", "namespace", "team", "--wait=false"],
    )
    .await
    .unwrap();
    assert!(ok, "{stderr}");
    assert_eq!(stdout.trim(), "namespace \"team\" deleted");
    let (ok, stdout, stderr) = kubectl(&kubeconfig, &["get", "namespace", "team"])
        .await
        .unwrap();
    assert!(ok, "{stderr}");
    assert!(stdout.contains("Terminating"), "{stdout}");
    let (ok, _, stderr) = kubectl(&kubeconfig, &["create", "configmap", "late", "-n", "team"])
        .await
        .unwrap();
    assert!(!ok);
    assert!(
        stderr.contains("configmaps \"late\" is forbidden: unable to create new content in namespace team because it is being terminated"),
        "{stderr}"
    );
    let (ok, namespace, stderr) = kubectl(&kubeconfig, &["get", "namespace", "team", "-o", "json"])
        .await
        .unwrap();
    assert!(ok, "{stderr}");
    let mut namespace: serde_json::Value = serde_json::from_str(&namespace).unwrap();
    namespace["spec"]["finalizers"] = serde_json::json!([]);
    let body = dir.path().join("finalize.json");
    std::fs::write(&body, namespace.to_string()).unwrap();
    let (ok, _, stderr) = kubectl(
        &kubeconfig,
        &[
            "replace",
            "--raw",
            "/api/v1/namespaces/team/finalize",
            "-f",
            body.to_str().unwrap(),
        ],
    )
    .await
    .unwrap();
    assert!(ok, "{stderr}");
    let (ok, _, stderr) = kubectl(&kubeconfig, &["get", "namespace", "team"])
        .await
        .unwrap();
    assert!(!ok);
    assert!(stderr.contains("namespaces \"team\" not found"), "{stderr}");
}

/// `kubectl get jobs`, `get pods -o wide` and `get events` print the real server's columns
/// (exchanges 275–277), and `kubectl auth can-i` answers yes or no, with the exit code kubectl
/// gives each (280, 283), and `--list` the rules (286).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_prints_server_side_tables_and_asks_can_i() {
    let narrow = "system:serviceaccount:default:narrow";
    let config = SimConfig::default()
        .with_tls()
        .with_token("kubectl-token")
        .with_user("narrow-token", narrow, &["system:serviceaccounts"])
        .forbidding(narrow, "batch", "jobs", &["delete"]);
    let server = start(config).await;
    create_job(&server, "first");
    let pods = kube_gc::sim::Gvr::new("", "v1", "pods");
    server
        .create(
            &pods,
            serde_json::json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "web", "namespace": "default"},
                "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]}}),
        )
        .unwrap();
    server
        .create(
            &kube_gc::sim::Gvr::new("", "v1", "events"),
            serde_json::json!({"apiVersion": "v1", "kind": "Event",
                "metadata": {"name": "web.pulled", "namespace": "default"},
                "involvedObject": {"kind": "Pod", "name": "web", "namespace": "default"},
                "type": "Normal", "reason": "Pulled", "message": "pulled",
                "source": {"component": "kubelet"}}),
        )
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).unwrap();
    let narrow_config = dir.path().join("narrow");
    let admin_text = std::fs::read_to_string(&kubeconfig).unwrap();
    std::fs::write(
        &narrow_config,
        admin_text.replace("kubectl-token", "narrow-token"),
    )
    .unwrap();

    let Some((ok, stdout, stderr)) = kubectl(&kubeconfig, &["get", "jobs", "-n", "capture"]).await
    else {
        return;
    };
    assert!(ok, "{stderr}");
    let header: Vec<&str> = stdout
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        ["NAME", "COMPLETIONS", "DURATION", "AGE"],
        "{stdout}"
    );
    let (ok, stdout, stderr) = kubectl(&kubeconfig, &["get", "pods", "-o", "wide"])
        .await
        .unwrap();
    assert!(ok, "{stderr}");
    assert!(
        stdout.starts_with("NAME   READY   STATUS    RESTARTS   AGE"),
        "{stdout}"
    );
    assert!(
        stdout.contains("NOMINATED NODE   READINESS GATES"),
        "{stdout}"
    );
    let (ok, stdout, stderr) = kubectl(&kubeconfig, &["get", "events", "-A"])
        .await
        .unwrap();
    assert!(ok, "{stderr}");
    let header: Vec<&str> = stdout
        .lines()
        .next()
        .unwrap_or_default()
        .split("  ")
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .collect();
    assert_eq!(
        header,
        [
            "NAMESPACE",
            "LAST SEEN",
            "TYPE",
            "REASON",
            "OBJECT",
            "MESSAGE"
        ],
        "{stdout}"
    );
    assert!(stdout.contains("pod/web"), "{stdout}");

    let (ok, stdout, stderr) = kubectl(&kubeconfig, &["auth", "can-i", "delete", "jobs"])
        .await
        .unwrap();
    assert!(ok, "{stderr}");
    assert_eq!(stdout, "yes\n");
    let (ok, stdout, _) = kubectl(&narrow_config, &["auth", "can-i", "delete", "jobs"])
        .await
        .unwrap();
    assert!(!ok, "kubectl exits 1 for no");
    assert_eq!(stdout, "no\n");
    let (ok, stdout, _) = kubectl(&narrow_config, &["auth", "can-i", "get", "/metrics"])
        .await
        .unwrap();
    assert!(!ok);
    assert_eq!(stdout, "no\n");
    let (ok, stdout, stderr) = kubectl(&narrow_config, &["auth", "can-i", "--list"])
        .await
        .unwrap();
    assert!(ok, "{stderr}");
    assert!(
        stdout.starts_with("Resources") && stdout.contains("selfsubjectaccessreviews"),
        "{stdout}"
    );
    assert!(stdout.contains("[/healthz]"), "{stdout}");
}

/// `kubectl explain` of a built-in kind, of one of its fields, and of kube-gc's own CRDs reads
/// `/openapi/v2`, the `/openapi/v3` index and the group version's document (exchanges 271–274,
/// 287), and prints the field tree; a second run, with the same cache directory, reads the
/// documents from kubectl's HTTP cache.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_explains_built_in_kinds_and_kube_gcs_crds() {
    let server = start(SimConfig::default().with_tls().with_token("kubectl-token")).await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).unwrap();
    let cache = dir.path().join("cache").display().to_string();
    let explain = |what: &'static str| {
        let kubeconfig = kubeconfig.clone();
        let cache = cache.clone();
        async move { kubectl(&kubeconfig, &["explain", what, "--cache-dir", &cache]).await }
    };

    let Some((ok, stdout, stderr)) = explain("job").await else {
        return;
    };
    assert!(ok, "kubectl explain job: {stderr}");
    for line in ["GROUP:      batch", "KIND:       Job", "VERSION:    v1"] {
        assert!(stdout.contains(line), "{stdout}");
    }
    assert!(stdout.contains("metadata\t<ObjectMeta>"), "{stdout}");
    assert!(stdout.contains("spec\t<JobSpec>"), "{stdout}");
    assert!(stdout.contains("status\t<JobStatus>"), "{stdout}");

    let (ok, stdout, stderr) = explain("job.spec.ttlSecondsAfterFinished").await.unwrap();
    assert!(ok, "{stderr}");
    assert!(
        stdout.contains("FIELD: ttlSecondsAfterFinished <integer>"),
        "{stdout}"
    );
    let (ok, stdout, stderr) = explain("pod.spec.containers").await.unwrap();
    assert!(ok, "{stderr}");
    assert!(
        stdout.contains("FIELD: containers <[]Container>"),
        "{stdout}"
    );
    assert!(stdout.contains("image\t<string>"), "{stdout}");

    let (ok, stdout, stderr) = explain("crp").await.unwrap();
    assert!(ok, "kubectl explain crp: {stderr}");
    assert!(
        stdout.contains("KIND:       ClusterRetentionPolicy"),
        "{stdout}"
    );
    assert!(stdout.contains("spec\t<Object> -required-"), "{stdout}");
    let (ok, stdout, stderr) = explain("rp.spec.ttlSecondsAfterFinished").await.unwrap();
    assert!(ok, "{stderr}");
    assert!(stdout.contains("<integer>"), "{stdout}");

    // The second explain of batch/v1 read its document from the cache: one GET of it.
    let documents = server
        .journal()
        .entries()
        .into_iter()
        .filter(|e| e.path == "/openapi/v3/apis/batch/v1")
        .count();
    assert_eq!(documents, 1);
}

/// `kube-gc sim --tls` without `--token` writes a kubeconfig with an administrator's client
/// certificate signed by the server's CA: with no credentials kubectl asks for a user name and
/// password on an `https` server, and without a terminal (a script, CI, kube-controller-manager's
/// client) fails with `EOF`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sims_own_kubeconfig_over_tls_without_a_token_needs_no_prompt() {
    let server = start(SimConfig::default().with_tls()).await;
    let spec = server.kubeconfig_spec();
    assert_eq!(spec.token, None);
    let (cert, key) = spec.client_cert.expect("a client certificate");
    assert!(cert.contains("BEGIN CERTIFICATE") && key.contains("PRIVATE KEY"));
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).expect("kubeconfig");
    let Some((ok, stdout, stderr)) = kubectl(&kubeconfig, &["get", "namespaces"]).await else {
        return;
    };
    assert!(ok, "kubectl get namespaces failed: {stderr}");
    assert!(!stderr.contains("Username"), "{stderr}");
    assert!(stdout.contains("default"), "{stdout}");
    let (ok, stdout, _) = kubectl(&kubeconfig, &["auth", "can-i", "delete", "jobs"])
        .await
        .expect("kubectl ran once already");
    assert!(ok && stdout.trim() == "yes", "{stdout}");
}
