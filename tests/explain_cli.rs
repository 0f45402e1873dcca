//! `kube-gc explain` and `kube-gc plan` as the binary runs them against the simulated API
//! server: the verdict as data (`-o json`), the screen, the plan's table, and one-line errors
//! with a non-zero exit; `kube-gc record` naming its resource as `explain` does.

mod run_support;

use std::process::{Command, Output};

use kube_gc::sim::{SimConfig, SimServer};
use run_support::{create_expired_job, Kubeconfig};
use serde_json::Value;

fn kube_gc(kubeconfig: &Kubeconfig, args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_kube-gc"))
        .args(args)
        .arg("--kubeconfig")
        .arg(kubeconfig.path())
        .output();
    out.expect("run kube-gc")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_and_plan_answer_as_an_operator_reads_them() {
    let sim = SimServer::start(SimConfig::default())
        .await
        .expect("start the sim");
    let kubeconfig = Kubeconfig::for_sim(&sim);
    create_expired_job(&sim, "done");

    let kc = kubeconfig;
    let json = tokio::task::spawn_blocking(move || {
        let out = kube_gc(
            &kc,
            &["explain", "jobs/done", "-n", "default", "-o", "json"],
        );
        (out, kc)
    })
    .await
    .unwrap();
    let (out, kubeconfig) = json;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let said: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(said["verdict"], "delete-now", "{said:#}");
    assert_eq!(said["object"]["kind"], "Job");
    assert!(said["reasons"][0]
        .as_str()
        .unwrap_or("")
        .starts_with("ttl-after-finished: "));

    let kc = kubeconfig;
    let (screen, kc) =
        tokio::task::spawn_blocking(move || (kube_gc(&kc, &["explain", "job", "done"]), kc))
            .await
            .unwrap();
    assert!(screen.status.success(), "{}", text(&screen.stderr));
    let screen = text(&screen.stdout);
    assert!(
        screen.starts_with("Job default/done (batch/v1, uid "),
        "{screen}"
    );
    assert!(
        screen.contains("Verdict: delete-now") && screen.contains("Who decides"),
        "{screen}"
    );

    let (plan, kc) =
        tokio::task::spawn_blocking(move || (kube_gc(&kc, &["plan", "--within", "2h"]), kc))
            .await
            .unwrap();
    assert!(plan.status.success(), "{}", text(&plan.stderr));
    let plan = text(&plan.stdout);
    // What it assumed first, then the table.
    assert!(
        plan.starts_with("Assuming kube-gc runs: ttl-after-finished, volcano-job-ttl, ")
            && plan.contains("\n\nKIND "),
        "{plan}"
    );
    assert!(
        plan.contains("done") && plan.contains("\n1 deletion within 2h\n"),
        "{plan}"
    );

    let (unknown, kc) =
        tokio::task::spawn_blocking(move || (kube_gc(&kc, &["explain", "widgets/x"]), kc))
            .await
            .unwrap();
    assert!(!unknown.status.success());
    assert_eq!(
        text(&unknown.stderr).trim(),
        "kube-gc: the server doesn't have a resource type \"widgets\""
    );
    let (missing, _kc) =
        tokio::task::spawn_blocking(move || (kube_gc(&kc, &["explain", "jobs/nope"]), kc))
            .await
            .unwrap();
    assert!(!missing.status.success());
    assert_eq!(
        text(&missing.stderr).trim(),
        "kube-gc: jobs.batch \"nope\" not found in namespace \"default\""
    );
}

/// A selector matching nothing says so as kubectl does — "No resources found in default
/// namespace." on standard error, exit 0 — instead of printing nothing; as data, an empty list.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_selector_matching_nothing_says_no_resources_found() {
    let sim = SimServer::start(SimConfig::default())
        .await
        .expect("start the sim");
    let kubeconfig = Kubeconfig::for_sim(&sim);
    create_expired_job(&sim, "done");
    let (text_out, json_out) = tokio::task::spawn_blocking(move || {
        (
            kube_gc(&kubeconfig, &["explain", "jobs", "-l", "nothing=1"]),
            kube_gc(
                &kubeconfig,
                &["explain", "jobs", "-l", "nothing=1", "-o", "json"],
            ),
        )
    })
    .await
    .unwrap();
    assert!(text_out.status.success(), "{}", text(&text_out.stderr));
    assert_eq!(text(&text_out.stdout), "");
    assert_eq!(
        text(&text_out.stderr),
        "No resources found in default namespace.\n"
    );
    assert!(json_out.status.success(), "{}", text(&json_out.stderr));
    assert_eq!(text(&json_out.stdout), "[]\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn record_takes_a_type_as_kubectl_does() {
    let sim = SimServer::start(SimConfig::default())
        .await
        .expect("start the sim");
    let kubeconfig = Kubeconfig::for_sim(&sim);
    create_expired_job(&sim, "done");
    let out = tokio::task::spawn_blocking(move || {
        kube_gc(
            &kubeconfig,
            &["record", "--resource", "jobs", "--duration", "1s"],
        )
    })
    .await
    .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let script = text(&out.stdout);
    assert!(script.contains("/apis/batch/v1/jobs"), "{script}");
    assert!(script.contains("\"done\""), "{script}");
}
