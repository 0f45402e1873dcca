//! `kube-gc run` and `kube-gc demo` as a user runs them: the binary, its flags, its exit codes.

use std::process::{Command, Stdio};
use std::time::Duration;

use kube_gc::sim::{Gvr, SimConfig, SimServer};
use serde_json::json;

fn kube_gc() -> Command {
    Command::new(env!("CARGO_BIN_EXE_kube-gc"))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn help_lists_run_demo_and_kcm_flags() {
    let out = kube_gc().arg("--help").output().expect("run kube-gc");
    assert!(out.status.success());
    let help = text(&out.stdout);
    for needle in [
        "run",
        "demo",
        "--kubeconfig",
        "--master",
        "--controllers",
        "--concurrent-ttl-after-finished-syncs",
        "--worker-threads-for-gc",
        "--kube-api-qps",
        "--kube-api-burst",
        "--namespace",
        "--dry-run",
        "--ttl-fresh-read",
        "--concurrent-gc-syncs",
        "--gc-discovery-period",
        "--gc-initial-sync-timeout",
        "--leader-elect",
        "--leader-elect-lease-duration",
        "--secure-port",
        "--enable-debug-handlers",
        "--shutdown-grace-period",
    ] {
        assert!(help.contains(needle), "help lacks {needle}:\n{help}");
    }
}

#[test]
fn an_unknown_controller_is_refused_before_connecting() {
    let out = kube_gc()
        .args([
            "--controllers",
            "*,-ttl-after-finsihed",
            "--master",
            "http://127.0.0.1:1",
        ])
        .output()
        .expect("run kube-gc");
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("unknown controller \"ttl-after-finsihed\""),
        "{stderr}"
    );
}

/// `--controllers=-retention` enables nothing in kube-controller-manager's syntax: refused
/// before connecting, naming the list that was probably meant, instead of running nothing and
/// exiting 0.
#[test]
fn a_controller_list_that_enables_nothing_is_refused_with_what_was_meant() {
    let out = kube_gc()
        .args(["--controllers=-retention", "--master", "http://127.0.0.1:1"])
        .output()
        .expect("run kube-gc");
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("--controllers=-retention enables no controller")
            && stderr.contains("write --controllers='*,-retention'"),
        "{stderr}"
    );
}

/// A kubeconfig naming a port nothing listens on.
fn closed_port_kubeconfig(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("kubeconfig");
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let port = closed.local_addr().expect("its address").port();
    drop(closed);
    let text = format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n\
         clusters: [{{name: c, cluster: {{server: \"https://127.0.0.1:{port}\"}}}}]\n\
         users: [{{name: u, user: {{token: t}}}}]\n\
         contexts: [{{name: c, context: {{cluster: c, user: u}}}}]\n"
    );
    std::fs::write(&path, text).expect("write the kubeconfig");
    path
}

/// `kube-gc run 2>&1 | head -1`: once nobody reads the log, `run` stops as on SIGTERM and
/// exits non-zero without a panic (it used to exit 101 from tracing's own report of the
/// failed write), rather than run on blind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_ends_quietly_when_nobody_reads_its_log() {
    use std::io::{BufRead, BufReader};
    let dir = tempfile::tempdir().expect("temp dir");
    let kubeconfig = closed_port_kubeconfig(dir.path());
    let mut child = kube_gc()
        .arg("run")
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(["--leader-elect=false", "--secure-port=0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start kube-gc");
    let stderr = child.stderr.take().expect("piped stderr");
    let mut first = String::new();
    BufReader::new(stderr)
        .read_line(&mut first)
        .expect("the first log line");
    assert!(first.contains("starting kube-gc"), "{first}");
    // The reader is gone; the next retry's line (within a second) finds the pipe closed.
    let exited = tokio::task::spawn_blocking(move || child.wait());
    let status = tokio::time::timeout(Duration::from_secs(30), exited)
        .await
        .expect("kube-gc ends once its log is closed")
        .expect("join")
        .expect("wait");
    assert_eq!(status.code(), Some(1), "{status:?}");
}

/// A server that refuses connections: every retry's line says so ("Connection refused"), not
/// only "error sending request" until the last.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_retry_line_says_why_the_request_failed() {
    use std::io::{BufRead, BufReader};
    let dir = tempfile::tempdir().expect("temp dir");
    let kubeconfig = closed_port_kubeconfig(dir.path());
    let mut child = kube_gc()
        .arg("run")
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(["--leader-elect=false", "--secure-port=0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start kube-gc");
    let stderr = child.stderr.take().expect("piped stderr");
    let first_retry = tokio::task::spawn_blocking(move || {
        BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
            .find(|line| line.contains("retrying"))
    });
    let line = tokio::time::timeout(Duration::from_secs(30), first_retry)
        .await
        .expect("a retry is logged at once")
        .expect("join");
    let _ = child.kill();
    let _ = child.wait();
    let line = line.expect("a retry line");
    assert!(
        line.contains("discovery failed at start-up; retrying")
            && line.contains("Connection refused"),
        "{line}"
    );
}

#[test]
fn a_small_demo_passes_and_prints_its_summary() {
    let out = kube_gc()
        .args([
            "demo",
            "--jobs",
            "30",
            "--volcano-jobs",
            "10",
            "--pods",
            "10",
            "--spread",
            "1s",
        ])
        .args(["--kube-api-qps", "0"])
        .output()
        .expect("run kube-gc demo");
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.contains("PASS"), "{stdout}");
    progress_only_grows_and_ends_at_what_was_expected(&stdout);
    assert!(stdout.contains("ttl-extended"), "{stdout}");
    assert!(stdout.contains("recreated"), "{stdout}");
    for tree in [
        "OWNER TREE",
        "background",
        "foreground",
        "orphan",
        "job-with-pods",
    ] {
        assert!(stdout.contains(tree), "{stdout}");
    }
    // The retention scene: standalone Pods under a TTL, PipelineRuns under history limits,
    // both policies Ready with the counts they should report.
    for line in [
        "RETENTION",
        "bad-annotation",
        "PipelineRun  build",
        "ClusterRetentionPolicy finished-pods    True",
        "RetentionPolicy demo/pipeline-history   True",
        "Pod deletion after expiry",
    ] {
        assert!(stdout.contains(line), "{line}: {stdout}");
    }
    assert!(
        stdout.contains("8 over a history limit"),
        "newest 2 succeeded and 1 failed run kept per Pipeline: {stdout}"
    );
    // The namespace scene: three namespaces deleted and finalized, Pods first, the held one
    // after its release; the pod garbage collector and PVC protection did their part.
    for line in [
        "NAMESPACE      FATE",
        "demo-stays     kept",
        "Namespaces: 3/3 finalized",
        "force-deleted 3 Pods of the lost node, PVC protection released 1 claim(s)",
        "| namespaces finalized 3/3",
    ] {
        assert!(stdout.contains(line), "{line}: {stdout}");
    }
    for namespace in ["demo-shop", "demo-edge", "demo-archive"] {
        let row = stdout.lines().find(|l| l.starts_with(namespace));
        assert!(
            row.is_some_and(|r| r.split_whitespace().any(|w| w == "yes")),
            "{namespace}: its Pods first: {stdout}"
        );
    }
    // The summary explains a kept and a blocked object.
    for line in [
        "$ kube-gc explain pods/explain-running -n demo-pods",
        "Verdict: keep",
        "$ kube-gc explain configmaps/explain-owner -n demo",
        "Verdict: blocked",
        "- Pod demo/explain-held: being deleted, waiting for its finalizers demo.kube-gc.io/hold",
    ] {
        assert!(stdout.contains(line), "{line}: {stdout}");
    }
}

/// Policies applied one after another while `run` runs (the managed overlay's controllers):
/// at the default verbosity the log says once that v1/pods is watched and once per policy that
/// it is ready — not "retention: watching" again for each, nor how the shared list restarts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn applying_policies_one_by_one_logs_what_an_operator_acts_on() {
    use std::io::{BufRead, BufReader};
    let sim = SimServer::start(SimConfig::default())
        .await
        .expect("start the sim");
    let dir = tempfile::tempdir().expect("temp dir");
    let kubeconfig = dir.path().join("kubeconfig");
    sim.write_kubeconfig(&kubeconfig).expect("kubeconfig");
    let mut child = kube_gc()
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(["--controllers=volcano-job-ttl,retention"])
        .args(["--leader-elect=false", "--secure-port=0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start kube-gc");
    let (lines, seen) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().expect("piped stderr");
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = lines.send(line);
        }
    });
    let mut log = Vec::new();
    let mut wait_for = |needle: &str| loop {
        let line = seen
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("no {needle:?} in:\n{}", log.join("\n")));
        log.push(line.clone());
        if line.contains(needle) {
            break;
        }
    };
    wait_for("caches synced; starting workers\" controller=\"retention\"");
    let policies = Gvr::new("kube-gc.io", "v1alpha1", "clusterretentionpolicies");
    for team in ["a", "b", "c"] {
        let policy = json!({"apiVersion": "kube-gc.io/v1alpha1", "kind": "ClusterRetentionPolicy",
            "metadata": {"name": format!("ux-{team}")},
            "spec": {"preset": "pods", "ttlSecondsAfterFinished": 3600,
                "selector": {"matchLabels": {"team": team}}}});
        sim.create(&policies, policy).expect("create the policy");
        wait_for(&format!("ClusterRetentionPolicy ux-{team}\""));
    }
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let status = child.wait().expect("kube-gc exits");
    let _ = reader.join();
    log.extend(seen.try_iter());
    assert!(status.success(), "{status:?}");
    let count = |needle: &str| log.iter().filter(|l| l.contains(needle)).count();
    assert_eq!(
        count("\"retention: watching\" resource=\"v1/pods\""),
        1,
        "{log:#?}"
    );
    assert_eq!(count("\"retention policy ready\""), 3, "{log:#?}");
    assert_eq!(count("a subscriber joined"), 0, "{log:#?}");
    sim.shutdown().await;
}

/// The demo's progress lines (one a second on a pipe): "jobs seen" and "deleted" never fall
/// (they used to: "seen" was what the caches still held), and "deleted" ends at N/N, the owner
/// trees' expired Jobs counted among the expected (it used to end above, at 229/226).
fn progress_only_grows_and_ends_at_what_was_expected(stdout: &str) {
    let number = |line: &str, after: &str| -> u64 {
        let rest = line.split(after).nth(1).unwrap_or_default().trim_start();
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits
            .parse()
            .unwrap_or_else(|_| panic!("{after:?} in {line:?}"))
    };
    let lines: Vec<&str> = stdout.lines().filter(|l| l.starts_with('[')).collect();
    assert!(lines.len() >= 2, "{stdout}");
    let mut last = (0, 0);
    for line in &lines {
        let now = (number(line, "jobs seen"), number(line, "deleted"));
        assert!(
            now.0 >= last.0 && now.1 >= last.1,
            "fell: {line:?} after {last:?}"
        );
        last = now;
    }
    let final_line = lines[lines.len() - 1];
    let expected = number(final_line, &format!("deleted {:>4}/", last.1));
    assert_eq!(last.1, expected, "{final_line}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_deletes_an_expired_job_and_stops_cleanly_on_sigterm() {
    let sim = SimServer::start(SimConfig::default())
        .await
        .expect("start the sim");
    let dir = tempfile::tempdir().expect("temp dir");
    let kubeconfig = dir.path().join("kubeconfig");
    sim.write_kubeconfig(&kubeconfig).expect("kubeconfig");
    let jobs = Gvr::new("batch", "v1", "jobs");
    let job = json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "done", "namespace": "default"},
        "spec": {"ttlSecondsAfterFinished": 0}});
    let mut job = sim.create(&jobs, job).expect("create");
    job["status"] = json!({"conditions": [{"type": "Complete", "status": "True",
        "lastTransitionTime": "2026-01-01T00:00:00Z"}]});
    sim.update_status(&jobs, job).expect("finish");

    let child = kube_gc()
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(["--controllers", "ttl-after-finished"])
        .args(["--leader-elect=false", "--secure-port=0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start kube-gc");
    let deleted = tokio::time::timeout(
        Duration::from_secs(60),
        sim.wait_for(&jobs, Some("default"), "done", |o| {
            o.is_none_or(|o| o["metadata"]["deletionTimestamp"].is_string())
        }),
    )
    .await;
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("send SIGTERM");
    assert!(status.success());
    let out = child.wait_with_output().expect("kube-gc exits");
    let stderr = text(&out.stderr);
    assert!(deleted.is_ok(), "not deleted:\n{stderr}");
    assert!(out.status.success(), "{:?}\n{stderr}", out.status);
    assert!(stderr.contains("stopped"), "{stderr}");
    assert_eq!(sim.journal().deletes().len(), 1);
    sim.shutdown().await;
}
