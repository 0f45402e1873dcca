//! The `kube-gc` binary as a user runs it: help, `config view`, and `sim` driven by kubectl.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

fn kube_gc() -> Command {
    Command::new(env!("CARGO_BIN_EXE_kube-gc"))
}

fn fixture(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(path)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn help_lists_the_subcommands() {
    let out = kube_gc().arg("--help").output().expect("run kube-gc");
    assert!(out.status.success());
    let help = text(&out.stdout);
    for needle in ["sim", "config", "--logging-format", "--v"] {
        assert!(help.contains(needle), "help lacks {needle}:\n{help}");
    }
}

#[test]
fn config_view_describes_the_connection_without_secrets() {
    let out = kube_gc()
        .args(["config", "view", "--kubeconfig"])
        .arg(fixture("kubeconfig/credentials.yaml"))
        .args(["--context", "basic"])
        .output()
        .expect("run kube-gc");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let view = text(&out.stdout);
    assert!(
        view.contains("Server:             https://127.0.0.1:6443/"),
        "{view}"
    );
    assert!(view.contains("basic auth as \"admin\""), "{view}");
    let kubeconfig = std::fs::read_to_string(fixture("kubeconfig/credentials.yaml")).expect("read");
    let password = kubeconfig
        .lines()
        .find_map(|l| l.trim().strip_prefix("password:"))
        .map(|p| p.trim().trim_matches('"').to_owned())
        .expect("the fixture has a password");
    assert!(!view.contains(&password), "the password leaked:\n{view}");
}

/// `kube-gc --help` lists `--kubeconfig`: it works before the subcommand, as kubectl's does.
#[test]
fn the_kubeconfig_goes_before_the_subcommand_too() {
    let out = kube_gc()
        .arg("--kubeconfig")
        .arg(fixture("kubeconfig/credentials.yaml"))
        .args(["--context", "basic", "config", "view"])
        .output()
        .expect("run kube-gc");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("basic auth as \"admin\""));
}

/// `plan` and `explain` take `run`'s `--controllers`, parsed alike: a list that enables
/// nothing is refused before connecting, as `run` refuses it.
#[test]
fn plan_and_explain_take_runs_controllers() {
    for command in [&["plan"][..], &["explain", "jobs/x"]] {
        let out = kube_gc()
            .args(command)
            .args(["--controllers=-retention", "--kubeconfig"])
            .arg(fixture("kubeconfig/credentials.yaml"))
            .output()
            .expect("run kube-gc");
        assert_eq!(out.status.code(), Some(1), "{command:?}");
        let err = text(&out.stderr);
        assert!(
            err.contains("enables no controller") && err.contains("'*,-retention'"),
            "{command:?}: {err}"
        );
    }
}

/// `kube-gc plan -o yaml | head -1`: a reader that went away ends the command quietly, as it
/// ends kubectl, not with a panic (exit 101 and a backtrace).
#[test]
fn output_to_a_reader_that_went_away_ends_quietly() {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let out = kube_gc()
        .args(["config", "view", "--kubeconfig"])
        .arg(fixture("kubeconfig/credentials.yaml"))
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .expect("run kube-gc");
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{:?}: {stderr}", out.status);
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// The same for the simulated server's banner (`kube-gc sim | head -1`): it serves on, and
/// ends when asked, with no panic.
#[test]
fn the_sim_banner_to_a_reader_that_went_away_ends_quietly() {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let dir = tempfile::tempdir().expect("temp dir");
    let out = kube_gc()
        .args(["sim", "--for", "100ms", "--kubeconfig-out"])
        .arg(dir.path().join("kubeconfig"))
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .expect("run kube-gc");
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{:?}: {stderr}", out.status);
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn config_view_names_the_file_and_field_at_fault() {
    let path = fixture("kubeconfig/broken/dangling-user.yaml");
    let out = kube_gc()
        .args(["config", "view", "--kubeconfig"])
        .arg(&path)
        .output()
        .expect("run kube-gc");
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!(
            "context \"dev\" names user \"bob\", which is not in {}",
            path.display()
        )),
        "{err}"
    );
}

/// A duration in a unit the flag does not take is refused naming the unit found and the units
/// it takes, so the operator learns what to write instead of guessing again.
#[test]
fn a_duration_in_an_unknown_unit_names_the_units_taken() {
    let out = kube_gc()
        .args(["plan", "--within", "1w"])
        .output()
        .expect("run kube-gc");
    assert_eq!(out.status.code(), Some(2), "clap's usage error");
    let err = text(&out.stderr);
    assert!(
        err.contains(
            "unknown unit \"w\" (units: ns, us (or µs), ms, s, m, h, d; e.g. 90m, 24h, 7d"
        ),
        "{err}"
    );
}

/// A `kube-gc sim` child process, killed when dropped.
struct RunningSim {
    child: Child,
    kubeconfig: PathBuf,
    _dir: tempfile::TempDir,
}

impl RunningSim {
    /// Starts `kube-gc sim` and waits (by reading its banner, not by sleeping) until it serves.
    fn start(extra_args: &[&str]) -> RunningSim {
        let dir = tempfile::tempdir().expect("temp dir");
        let kubeconfig = dir.path().join("kubeconfig");
        let mut child = kube_gc()
            .arg("sim")
            .arg("--kubeconfig-out")
            .arg(&kubeconfig)
            .args(extra_args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start kube-gc sim");
        let stdout = child.stdout.take().expect("piped stdout");
        // The banner is printed once the server listens and the samples exist.
        let ready = BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .any(|line| line.starts_with("Ctrl-C stops it") || line.starts_with("Stopping after"));
        assert!(ready, "kube-gc sim exited before serving");
        RunningSim {
            child,
            kubeconfig,
            _dir: dir,
        }
    }

    fn kubectl(&self, args: &[&str]) -> Output {
        Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(args)
            .output()
            .expect("run kubectl")
    }
}

impl Drop for RunningSim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn kubectl_available() -> bool {
    let found = Command::new("kubectl")
        .args(["version", "--client"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        eprintln!("kubectl is not on PATH: skipping the kubectl checks");
    }
    found
}

#[test]
fn kubectl_lists_and_watches_the_sample_jobs() {
    if !kubectl_available() {
        return;
    }
    let sim = RunningSim::start(&[]);

    let out = sim.kubectl(&["get", "jobs", "-A"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    for name in [
        "pi-finished-ttl-60",
        "pi-running-ttl-60",
        "pi-finished-no-ttl",
        "pi-failed-ttl-0",
    ] {
        assert!(table.contains(name), "{name} missing from:\n{table}");
    }

    let out = sim.kubectl(&[
        "get",
        "--raw",
        "/apis/batch/v1/jobs?watch=1&timeoutSeconds=1",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let events: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON event per line"))
        .collect();
    assert_eq!(events.len(), 4, "one ADDED per sample Job");
    assert!(events.iter().all(|e| e["type"] == "ADDED"));

    let out = sim.kubectl(&["get", "vcjob", "-n", "demo", "-o", "name"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout).trim(),
        "job.batch.volcano.sh/vc-completed-ttl-60"
    );
}

#[test]
fn kubectl_talks_tls_with_a_token_and_foreground_deletion_keeps_the_job() {
    if !kubectl_available() {
        return;
    }
    let sim = RunningSim::start(&["--tls", "--token", "test-token"]);
    let out = sim.kubectl(&[
        "-n",
        "demo",
        "delete",
        "job",
        "pi-finished-ttl-60",
        "--cascade=foreground",
        "--wait=false",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = sim.kubectl(&[
        "-n",
        "demo",
        "get",
        "job",
        "pi-finished-ttl-60",
        "-o",
        "jsonpath={.metadata.finalizers[0]} {.metadata.deletionTimestamp}",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    assert!(shown.starts_with("foregroundDeletion 20"), "{shown}");
}

/// `kube-gc sim` restarts its API server on SIGHUP (a watch from before then gets the 410 of
/// exchange 55) and compacts etcd on SIGUSR1, saying so on its output.
#[tokio::test]
async fn sim_restarts_on_sighup_and_compacts_on_sigusr1() {
    struct KillOnDrop(Child);
    impl Drop for KillOnDrop {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let mut child = KillOnDrop(
        kube_gc()
            .args(["sim", "--empty", "--kubeconfig-out"])
            .arg(dir.path().join("kubeconfig"))
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start kube-gc sim"),
    );
    let mut lines = BufReader::new(child.0.stdout.take().expect("piped stdout")).lines();
    let mut server = None;
    for line in lines.by_ref().map_while(Result::ok) {
        if let Some(url) = line.strip_prefix("kube-gc simulated API server listening on ") {
            server = Some(url.to_owned());
        }
        if line.starts_with("Ctrl-C stops it") {
            break;
        }
    }
    let server = server.expect("the banner names the server's URL");
    let signal = |name: &str| {
        let sent = Command::new("kill")
            .args([name, &child.0.id().to_string()])
            .status()
            .expect("run kill");
        assert!(sent.success());
    };
    signal("-HUP");
    let said = lines.next().and_then(Result::ok).unwrap_or_default();
    assert!(
        said.starts_with("SIGHUP: API server restarted at resourceVersion"),
        "{said}"
    );
    // Three namespaces were created before the restart: a watch from 1 is too old now.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let watch = reqwest::Client::new()
        .get(format!(
            "{server}/api/v1/namespaces?watch=1&resourceVersion=1&timeoutSeconds=1"
        ))
        .send()
        .await
        .expect("watch");
    assert_eq!(watch.status(), 200);
    let event: serde_json::Value =
        serde_json::from_str(&watch.text().await.expect("body")).expect("one JSON event");
    assert_eq!(event["type"], "ERROR");
    assert_eq!(
        (&event["object"]["code"], &event["object"]["reason"]),
        (&serde_json::json!(410), &serde_json::json!("Expired"))
    );
    signal("-USR1");
    let said = lines.next().and_then(Result::ok).unwrap_or_default();
    assert!(said.starts_with("SIGUSR1: etcd compacted"), "{said}");
}
