//! Loading configurations from the fixtures: file discovery and merging, context selection,
//! relative paths, every credential kind, encodings, in-cluster, redaction and `config view`.

mod kubeconfig_common;

use std::time::Duration;

use kube_gc::client::config::auth::token_file::REREAD_INTERVAL;
use kube_gc::client::config::{
    config_view, Auth, ClientConfig, ConfigError, Environment, LoadOptions, Origin,
};
use kubeconfig_common::{fixture, hermetic_env, load, TestCa};

async fn header(config: &ClientConfig) -> Option<String> {
    let value = config.auth.authorization_header().await.unwrap();
    value.map(|value| value.to_str().unwrap().to_string())
}

fn kubeconfig_list(files: &[&str]) -> String {
    let paths: Vec<String> = files
        .iter()
        .map(|f| fixture(f).display().to_string())
        .collect();
    paths.join(":")
}

fn load_env(env: &Environment, context: Option<&str>) -> Result<ClientConfig, ConfigError> {
    let options = LoadOptions {
        kubeconfig: None,
        context: context.map(String::from),
    };
    ClientConfig::load(&options, env)
}

#[tokio::test]
async fn kubeconfig_files_merge_with_the_first_file_winning_each_key() {
    let env = hermetic_env().with_var(
        "KUBECONFIG",
        kubeconfig_list(&["merge/first.yaml", "merge/second.yaml"]),
    );
    let config = load_env(&env, None).unwrap();
    assert_eq!(config.server.as_str(), "https://first.example:6443/");
    assert_eq!(config.default_namespace, "from-first");
    assert_eq!(header(&config).await.as_deref(), Some("Bearer first-token"));
    let Origin::Kubeconfig { context, files, .. } = &config.origin else {
        panic!("not from a kubeconfig: {:?}", config.origin);
    };
    assert_eq!(context, "shared");
    assert_eq!(
        files,
        &[fixture("merge/first.yaml"), fixture("merge/second.yaml")]
    );

    // Entries only the second file defines are still there.
    let config = load_env(&env, Some("second")).unwrap();
    assert_eq!(config.server.as_str(), "https://only-second.example/");
    assert_eq!(header(&config).await.as_deref(), Some("Bearer bob-token"));
}

#[tokio::test]
async fn reversing_kubeconfig_reverses_the_winner() {
    let list = kubeconfig_list(&["merge/second.yaml", "merge/first.yaml"]);
    let env = hermetic_env().with_var("KUBECONFIG", list);
    let config = load_env(&env, None).unwrap();
    let Origin::Kubeconfig { context, .. } = &config.origin else {
        panic!("not from a kubeconfig");
    };
    assert_eq!(context, "second");
    let config = load_env(&env, Some("shared")).unwrap();
    assert_eq!(config.default_namespace, "from-second");
}

#[test]
fn missing_files_in_kubeconfig_are_skipped_but_an_explicit_one_is_an_error() {
    let list = format!(
        "/nonexistent/config:{}",
        kubeconfig_list(&["merge/first.yaml"])
    );
    let env = hermetic_env().with_var("KUBECONFIG", list);
    assert!(load_env(&env, None).is_ok());

    let options = LoadOptions {
        kubeconfig: Some("/nonexistent/config".into()),
        context: None,
    };
    let err = ClientConfig::load(&options, &env).unwrap_err().to_string();
    assert_eq!(
        err,
        "cannot read kubeconfig /nonexistent/config: No such file or directory (os error 2)"
    );
}

#[test]
fn the_flag_beats_the_variable_and_the_variable_beats_home() {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir(home.path().join(".kube")).unwrap();
    std::fs::copy(
        fixture("merge/second.yaml"),
        home.path().join(".kube/config"),
    )
    .unwrap();
    let env = hermetic_env().with_home(home.path());
    let from_home = load_env(&env, None).unwrap();
    assert_eq!(from_home.server.as_str(), "https://only-second.example/");

    let env = env.with_var("KUBECONFIG", kubeconfig_list(&["merge/first.yaml"]));
    let from_variable = load_env(&env, None).unwrap();
    assert_eq!(from_variable.server.as_str(), "https://first.example:6443/");

    let options = LoadOptions {
        kubeconfig: Some(fixture("multi-document.yaml")),
        context: None,
    };
    let from_flag = ClientConfig::load(&options, &env).unwrap();
    assert_eq!(from_flag.server.as_str(), "https://first.example/");
}

#[tokio::test]
async fn context_flag_overrides_current_context() {
    let config = load("credentials.yaml", None).unwrap();
    assert_eq!(
        header(&config).await.as_deref(),
        Some("Bearer static-token-123")
    );
    assert_eq!(config.default_namespace, "default");

    let config = load("credentials.yaml", Some("impersonate")).unwrap();
    assert_eq!(config.default_namespace, "team-a");
}

#[tokio::test]
async fn relative_paths_resolve_against_the_kubeconfig_directory() {
    let config = load("relative/config", None).unwrap();
    let text = config.describe();
    let ca = fixture("relative/../pki/ca.crt");
    assert!(
        text.contains(&format!(
            "CA:                 {} (1 certificate)",
            ca.display()
        )),
        "{text}"
    );
    assert!(config.tls.client_certificate.is_set());

    let config = load("relative/config", Some("token-file")).unwrap();
    assert_eq!(
        header(&config).await.as_deref(),
        Some("Bearer relative-token")
    );
    assert_eq!(config.default_namespace, "jobs");
}

#[tokio::test]
async fn every_static_credential_kind_is_resolved() {
    let cases = [
        ("token", Some("Bearer static-token-123")),
        ("token-file", Some("Bearer relative-token")),
        ("token-beats-token-file", Some("Bearer static-token-123")),
        ("basic", Some("Basic YWRtaW46YmFzaWMtcGFzc3dvcmQtNDU2")),
        ("anonymous", None),
    ];
    for (context, expected) in cases {
        let config = load("credentials.yaml", Some(context)).unwrap();
        assert_eq!(
            header(&config).await.as_deref(),
            expected,
            "context {context}"
        );
    }
    let basic = load("credentials.yaml", Some("basic")).unwrap();
    assert!(matches!(&basic.auth, Auth::Basic { username, .. } if username == "admin"));
}

#[tokio::test]
async fn client_certificates_load_with_every_key_format() {
    for context in ["cert-rsa-pkcs1", "cert-ec-sec1", "cert-ec-pkcs8"] {
        let config = load("credentials.yaml", Some(context)).unwrap();
        assert!(config.tls.client_certificate.is_set(), "context {context}");
        assert_eq!(header(&config).await, None, "context {context}");
        assert!(config.rustls_config().is_ok(), "context {context}");
    }
    let inline = load("inline.yaml", None).unwrap();
    assert!(inline.tls.client_certificate.is_set());
    assert_eq!(inline.default_namespace, "inline-ns");
    let text = inline.describe();
    assert!(
        text.contains("CA:                 inline (-data field) (1 certificate)"),
        "{text}"
    );
    assert!(
        text.contains("Client certificate: inline (-data field)"),
        "{text}"
    );
}

#[test]
fn impersonation_is_sent_as_kubectl_sends_it() {
    let config = load("credentials.yaml", Some("impersonate")).unwrap();
    let headers: Vec<String> = config
        .impersonation
        .headers()
        .unwrap()
        .iter()
        .map(|(name, value)| format!("{name}: {}", value.to_str().unwrap()))
        .collect();
    assert_eq!(
        headers,
        [
            "impersonate-user: jane",
            "impersonate-uid: 1234",
            "impersonate-group: developers",
            "impersonate-group: oncall",
            "impersonate-extra-example.com%2fscope: read",
            "impersonate-extra-example.com%2fscope: write",
            "impersonate-extra-reason: debugging",
        ]
    );
}

#[test]
fn utf16_kubeconfigs_with_a_bom_are_read() {
    let config = load("utf16le-bom.yaml", None).unwrap();
    assert_eq!(config.server.as_str(), "https://windows.example:6443/");
    assert_eq!(config.default_namespace, "café");

    // The same file big-endian.
    let bytes = std::fs::read(fixture("utf16le-bom.yaml")).unwrap();
    let big_endian: Vec<u8> = bytes
        .chunks_exact(2)
        .flat_map(|pair| [pair[1], pair[0]])
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("utf16be");
    std::fs::write(&path, big_endian).unwrap();
    let options = LoadOptions {
        kubeconfig: Some(path),
        context: None,
    };
    let config = ClientConfig::load(&options, &hermetic_env()).unwrap();
    assert_eq!(config.default_namespace, "café");
}

#[test]
fn only_the_first_yaml_document_counts() {
    let config = load("multi-document.yaml", None).unwrap();
    assert_eq!(config.server.as_str(), "https://first.example/");
    let err = load("multi-document.yaml", Some("second")).unwrap_err();
    assert!(matches!(err, ConfigError::ContextNotFound { .. }), "{err}");
}

/// A service-account directory with a token, a CA and a namespace.
fn service_account(namespace: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("token"), "sa-token-1\n").unwrap();
    std::fs::write(dir.path().join("ca.crt"), TestCa::new("cluster-ca").pem).unwrap();
    std::fs::write(dir.path().join("namespace"), namespace).unwrap();
    dir
}

fn pod_env(dir: &std::path::Path) -> Environment {
    hermetic_env()
        .with_var("KUBERNETES_SERVICE_HOST", "10.96.0.1")
        .with_var("KUBERNETES_SERVICE_PORT", "443")
        .with_service_account_dir(dir)
}

#[tokio::test(start_paused = true)]
async fn in_cluster_configuration_is_used_without_a_kubeconfig() {
    let dir = service_account("gc-system");
    let config = load_env(&pod_env(dir.path()), None).unwrap();
    assert_eq!(config.server.as_str(), "https://10.96.0.1/");
    assert_eq!(config.default_namespace, "gc-system");
    assert!(config.tls.certificate_authority.is_some());
    assert_eq!(header(&config).await.as_deref(), Some("Bearer sa-token-1"));
    assert!(config.rustls_config().is_ok());

    // The kubelet rotates the projected token; it is picked up within a minute.
    std::fs::write(dir.path().join("token"), "sa-token-2").unwrap();
    tokio::time::advance(Duration::from_secs(1)).await;
    assert_eq!(header(&config).await.as_deref(), Some("Bearer sa-token-1"));
    tokio::time::advance(REREAD_INTERVAL).await;
    assert_eq!(header(&config).await.as_deref(), Some("Bearer sa-token-2"));
}

#[test]
fn in_cluster_namespace_and_precedence() {
    let dir = service_account("gc-system");
    let env = pod_env(dir.path()).with_var("POD_NAMESPACE", "from-env");
    assert_eq!(load_env(&env, None).unwrap().default_namespace, "from-env");

    // A kubeconfig, when there is one, wins over the service account.
    let env = env.with_var("KUBECONFIG", kubeconfig_list(&["merge/first.yaml"]));
    let config = load_env(&env, None).unwrap();
    assert!(matches!(config.origin, Origin::Kubeconfig { .. }));

    let empty = tempfile::tempdir().unwrap();
    let err = load_env(&pod_env(empty.path()), None)
        .unwrap_err()
        .to_string();
    let token = empty.path().join("token");
    assert_eq!(
        err,
        format!(
            "in-cluster configuration: cannot read {}: No such file or directory (os error 2)",
            token.display()
        )
    );
}

#[test]
fn nothing_to_load_says_where_it_looked() {
    let env = hermetic_env().with_home("/home/nobody");
    let err = load_env(&env, None).unwrap_err().to_string();
    assert_eq!(
        err,
        "no configuration found: no kubeconfig at /home/nobody/.kube/config, and \
         KUBERNETES_SERVICE_HOST is not set so this is not a pod; pass --kubeconfig or set KUBECONFIG"
    );
}

#[tokio::test]
async fn secrets_never_appear_in_debug_or_describe() {
    let key_line = std::fs::read_to_string(fixture("pki/client-rsa.key"))
        .unwrap()
        .lines()
        .nth(1)
        .unwrap()
        .to_string();
    let secrets = [
        "static-token-123",
        "basic-password-456",
        "relative-token",
        &key_line,
    ];
    let contexts = [
        "token",
        "token-file",
        "basic",
        "cert-rsa-pkcs1",
        "impersonate",
    ];
    for context in contexts {
        let config = load("credentials.yaml", Some(context)).unwrap();
        // Fill the caches first, so cached tokens are part of what is printed.
        let header = config.auth.authorization_header().await.unwrap();
        let shown = format!("{config:?}\n{}\n{header:?}", config.describe());
        for secret in secrets {
            assert!(
                !shown.contains(secret),
                "context {context} leaks {secret}: {shown}"
            );
        }
    }
    let inline = load("inline.yaml", None).unwrap();
    let inline_key = std::fs::read_to_string(fixture("inline.yaml")).unwrap();
    let inline_key = inline_key
        .lines()
        .find_map(|line| line.trim().strip_prefix("client-key-data: "))
        .unwrap()
        .to_string();
    assert!(!format!("{inline:?}").contains(&inline_key[..40]));
}

#[test]
fn config_view_prints_a_redacted_summary() {
    let options = LoadOptions {
        kubeconfig: Some(fixture("credentials.yaml")),
        context: Some("impersonate".into()),
    };
    let text = config_view(&options, &hermetic_env()).unwrap();
    let file = fixture("credentials.yaml");
    let ca = fixture("pki/ca.crt");
    let expected = format!(
        "Source:             kubeconfig {}\n\
         Context:            impersonate\n\
         Cluster:            local\n\
         User:               impersonate\n\
         Server:             https://127.0.0.1:6443/\n\
         CA:                 {} (1 certificate)\n\
         Auth:               bearer token (inline, redacted)\n\
         Impersonate:        user \"jane\", uid \"1234\", groups [developers, oncall], extra [example.com/scope, reason]\n\
         Namespace:          team-a\n",
        file.display(),
        ca.display()
    );
    assert_eq!(text, expected);
}

#[test]
fn config_view_shows_insecure_servers_proxies_and_exec_plugins() {
    let env = hermetic_env();
    let options = LoadOptions {
        kubeconfig: Some(fixture("exec/config.yaml")),
        context: Some("v1".into()),
    };
    let text = config_view(&options, &env).unwrap();
    let plugin = fixture("exec/plugin.sh");
    assert!(
        text.contains("TLS server name:    api.internal\n"),
        "{text}"
    );
    let auth = format!(
        "Auth:               exec plugin {} get-token --cluster local (client.authentication.k8s.io/v1)\n",
        plugin.display()
    );
    assert!(text.contains(&auth), "{text}");

    let options = LoadOptions {
        kubeconfig: Some(fixture("merge/first.yaml")),
        context: None,
    };
    let text = config_view(&options, &env).unwrap();
    assert!(
        text.contains("CA:                 NOT VERIFIED (insecure-skip-tls-verify: true)\n"),
        "{text}"
    );

    let dir = service_account("gc-system");
    let text = config_view(&LoadOptions::default(), &pod_env(dir.path())).unwrap();
    let expected = format!(
        "Source:             in-cluster service account ({dir})\n\
         Server:             https://10.96.0.1/\n\
         CA:                 {dir}/ca.crt (1 certificate)\n\
         Auth:               bearer token from {dir}/token\n\
         Namespace:          gc-system\n",
        dir = dir.path().display()
    );
    assert_eq!(text, expected);
}

#[test]
fn proxy_passwords_are_redacted_but_usernames_kept() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = |proxy: &str| {
        let path = dir.path().join("proxied");
        let text = format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: c\n\
             clusters:\n- name: k\n  cluster:\n    server: http://127.0.0.1:6443\n    proxy-url: {proxy}\n\
             users:\n- name: u\n  user:\n    exec: {{apiVersion: client.authentication.k8s.io/v1, \
             command: plugin, interactiveMode: Never, provideClusterInfo: true}}\n\
             contexts:\n- {{name: c, context: {{cluster: k, user: u}}}}\n"
        );
        std::fs::write(&path, text).unwrap();
        LoadOptions {
            kubeconfig: Some(path),
            context: None,
        }
    };
    let env = hermetic_env();

    // The exec plugin is handed the proxy too (provideClusterInfo), so its Debug is covered.
    let options = kubeconfig("socks5://alice:s3cr3tpw@127.0.0.1:1080");
    let config = ClientConfig::load(&options, &env).unwrap();
    let view = config_view(&options, &env).unwrap();
    let shown = format!("{config:?}\n{}\n{view}", config.describe());
    assert!(!shown.contains("s3cr3tpw"), "{shown}");
    assert!(
        view.contains("Proxy:              socks5://alice:<redacted>@127.0.0.1:1080\n"),
        "{view}"
    );
    let debug = format!("{config:?}");
    assert!(
        debug.contains("socks5://alice:<redacted>@127.0.0.1:1080"),
        "{debug}"
    );
    assert!(debug.contains("cluster_info: Some(<redacted>)"), "{debug}");
    // The client itself still gets the password.
    let proxy = config.proxy_url.as_ref().unwrap().expose();
    assert_eq!(proxy.password(), Some("s3cr3tpw"));

    let options = kubeconfig("gopher://alice:s3cr3tpw@127.0.0.1:70");
    let err = ClientConfig::load(&options, &env).unwrap_err();
    let shown = format!("{err}\n{err:?}");
    assert!(!shown.contains("s3cr3tpw"), "{shown}");
    assert!(
        shown.contains("gopher://alice:<redacted>@127.0.0.1:70"),
        "{shown}"
    );
}
