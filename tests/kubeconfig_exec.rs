//! Exec credential plugins, driven by `fixtures/kubeconfig/exec/plugin.sh`, which records every
//! run (count, args, `KUBERNETES_EXEC_INFO`, stdin) in a temporary directory.

mod kubeconfig_common;

use std::sync::Arc;

use base64::Engine;
use chrono::{Duration, TimeZone, Utc};
use kube_gc::client::config::{ClientConfig, Environment};
use kube_gc::clock::{Clock, ManualClock};
use kubeconfig_common::{fixture, hermetic_env, load_with};

/// A plugin's state directory, and a wall clock the test moves by hand.
struct Harness {
    state: tempfile::TempDir,
    clock: ManualClock,
}

impl Harness {
    fn new() -> Harness {
        let start = Utc.with_ymd_and_hms(2026, 1, 1, 12, 0, 0).unwrap();
        Harness {
            state: tempfile::tempdir().unwrap(),
            clock: ManualClock::new(start),
        }
    }

    fn env(&self) -> Environment {
        hermetic_env()
            .with_var("PLUGIN_STATE_DIR", self.state.path().display().to_string())
            .with_clock(Arc::new(self.clock.clone()))
    }

    fn load(&self, context: &str, env: Environment) -> ClientConfig {
        load_with("exec/config.yaml", Some(context), &env).unwrap()
    }

    fn advance(&self, by: Duration) {
        self.clock.set(self.clock.now() + by);
    }

    fn record(&self, name: &str) -> String {
        std::fs::read_to_string(self.state.path().join(name)).unwrap_or_default()
    }

    fn runs(&self) -> u32 {
        self.record("count").trim().parse().unwrap_or(0)
    }

    fn exec_info(&self) -> serde_json::Value {
        serde_json::from_str(&self.record("exec-info")).unwrap()
    }
}

async fn header(config: &ClientConfig) -> String {
    let value = config.auth.authorization_header().await.unwrap().unwrap();
    value.to_str().unwrap().to_string()
}

#[tokio::test]
async fn v1_plugin_runs_once_and_gets_cluster_info() {
    let harness = Harness::new();
    let config = harness.load("v1", harness.env());
    assert_eq!(header(&config).await, "Bearer v1-1");
    assert_eq!(
        header(&config).await,
        "Bearer v1-1",
        "cached without an expiry"
    );
    assert_eq!(harness.runs(), 1);

    assert_eq!(harness.record("args"), "get-token\n--cluster\nlocal\n");
    assert_eq!(
        harness.record("stdin").trim(),
        "null",
        "interactiveMode Never"
    );
    let ca = std::fs::read(fixture("pki/ca.crt")).unwrap();
    let expected = serde_json::json!({
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "spec": {
            "interactive": false,
            "cluster": {
                "server": "https://127.0.0.1:6443/",
                "tls-server-name": "api.internal",
                "certificate-authority-data": base64::engine::general_purpose::STANDARD.encode(ca),
                "config": {"audience": "kube-gc-tests"},
            },
        },
    });
    assert_eq!(harness.exec_info(), expected);
}

#[tokio::test]
async fn v1beta1_plugin_without_cluster_info() {
    let harness = Harness::new();
    let config = harness.load("v1beta1", harness.env());
    assert_eq!(header(&config).await, "Bearer beta-1");
    let expected = serde_json::json!({
        "apiVersion": "client.authentication.k8s.io/v1beta1",
        "kind": "ExecCredential",
        "spec": {"interactive": false},
    });
    assert_eq!(harness.exec_info(), expected);
}

#[tokio::test]
async fn the_token_is_cached_until_its_expiry() {
    let harness = Harness::new();
    let expires = harness.clock.now() + Duration::minutes(10);
    let env = harness
        .env()
        .with_var("PLUGIN_EXPIRES", expires.to_rfc3339());
    let config = harness.load("v1", env);
    assert_eq!(header(&config).await, "Bearer v1-1");
    harness.advance(Duration::minutes(9));
    assert_eq!(header(&config).await, "Bearer v1-1");
    harness.advance(Duration::minutes(1));
    assert_eq!(
        header(&config).await,
        "Bearer v1-2",
        "expired: the plugin ran again"
    );
    assert_eq!(harness.runs(), 2);
}

#[tokio::test]
async fn a_401_reruns_the_plugin() {
    let harness = Harness::new();
    let config = harness.load("v1", harness.env());
    assert_eq!(header(&config).await, "Bearer v1-1");
    config.auth.invalidate();
    assert_eq!(header(&config).await, "Bearer v1-2");
    assert_eq!(harness.runs(), 2);
}

#[tokio::test]
async fn concurrent_requests_share_one_run() {
    let harness = Harness::new();
    let config = harness.load("v1", harness.env());
    let headers = futures_util::future::join_all((0..8).map(|_| header(&config))).await;
    assert!(headers.iter().all(|h| h == "Bearer v1-1"), "{headers:?}");
    assert_eq!(harness.runs(), 1);
}

#[tokio::test]
async fn a_missing_plugin_shows_its_install_hint() {
    let harness = Harness::new();
    let config = harness.load("not-installed", harness.env());
    let err = config.auth.authorization_header().await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "exec plugin: executable kube-gc-test-no-such-plugin not found\n\n\
         It looks like you are trying to use a client-go credential plugin that is not installed.\n\n\
         kube-gc-test-no-such-plugin is needed to log in.\n\
         Install it with: cargo install kube-gc-test-no-such-plugin\n"
    );
}

#[tokio::test]
async fn interactive_mode_decides_stdin() {
    let harness = Harness::new();
    let config = harness.load("always-interactive", harness.env());
    let err = config
        .auth
        .authorization_header()
        .await
        .unwrap_err()
        .to_string();
    let plugin = fixture("exec/plugin.sh");
    assert_eq!(
        err,
        format!(
            "exec plugin {} has interactiveMode Always, but stdin is not a terminal",
            plugin.display()
        )
    );
    assert_eq!(harness.runs(), 0);

    // With a terminal, Always and IfAvailable (v1beta1's default) both run interactively.
    for context in ["always-interactive", "v1beta1"] {
        let config = harness.load(context, harness.env().with_stdin_terminal(true));
        header(&config).await;
        assert_eq!(
            harness.exec_info()["spec"]["interactive"],
            true,
            "{context}"
        );
    }
}

#[tokio::test]
async fn plugin_failures_quote_stderr() {
    let harness = Harness::new();
    let env = harness
        .env()
        .with_var("PLUGIN_FAIL", "refresh token expired, run login");
    let config = harness.load("v1", env);
    let err = config
        .auth
        .authorization_header()
        .await
        .unwrap_err()
        .to_string();
    let plugin = fixture("exec/plugin.sh");
    assert_eq!(
        err,
        format!(
            "exec plugin {} failed (exit status: 3): refresh token expired, run login",
            plugin.display()
        )
    );
}

/// A plugin that never answers is killed after the limit. (On the paused clock the limit passes
/// as soon as the runtime idles, so this proves the limit, not how far the script got.)
#[tokio::test(start_paused = true)]
async fn a_hung_plugin_times_out_instead_of_stalling_requests() {
    let harness = Harness::new();
    let env = harness.env().with_var("PLUGIN_HANG", "1");
    let config = harness.load("v1", env);
    let started = tokio::time::Instant::now();
    let err = config
        .auth
        .authorization_header()
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(started.elapsed(), kube_gc::client::config::EXEC_TIMEOUT);
    let plugin = fixture("exec/plugin.sh");
    assert_eq!(
        err,
        format!(
            "exec plugin {} did not finish within 60s and was killed",
            plugin.display()
        )
    );
}

#[tokio::test]
async fn a_credential_in_the_wrong_version_is_refused() {
    let harness = Harness::new();
    let env = harness
        .env()
        .with_var("PLUGIN_API_VERSION", "client.authentication.k8s.io/v1beta1");
    let config = harness.load("v1", env);
    let err = config
        .auth
        .authorization_header()
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.ends_with(
            "printed an unusable ExecCredential: apiVersion is \
             \"client.authentication.k8s.io/v1beta1\", but the kubeconfig asks for \
             \"client.authentication.k8s.io/v1\""
        ),
        "{err}"
    );
}

#[tokio::test]
async fn a_client_certificate_from_the_plugin_is_presented() {
    let harness = Harness::new();
    let env = harness
        .env()
        .with_var(
            "PLUGIN_CERT_FILE",
            fixture("pki/client-ec.crt").display().to_string(),
        )
        .with_var(
            "PLUGIN_KEY_FILE",
            fixture("pki/client-ec.key").display().to_string(),
        );
    let config = harness.load("v1", env);
    assert!(!config.tls.client_certificate.is_set());
    assert_eq!(header(&config).await, "Bearer v1-1");
    assert!(config.tls.client_certificate.is_set());
}

#[tokio::test]
async fn cached_exec_tokens_stay_out_of_debug_output() {
    let harness = Harness::new();
    let config = harness.load("v1", harness.env());
    header(&config).await;
    let shown = format!("{config:?} {}", config.describe());
    assert!(!shown.contains("v1-1"), "{shown}");
    assert!(shown.contains("exec plugin"), "{shown}");
}
