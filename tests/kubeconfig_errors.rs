//! Every broken fixture fails with a message naming the file, the entry and the field at fault.

mod kubeconfig_common;

use kubeconfig_common::{fixture, load};

/// The error text for `broken/<name>.yaml`; `{file}` and `{dir}` in `expected` stand for the
/// fixture's path and directory.
fn assert_error(name: &str, expected: &str) {
    let path = fixture(&format!("broken/{name}.yaml"));
    let err = match load(&format!("broken/{name}.yaml"), None) {
        Ok(config) => panic!("{name} loaded: {config:?}"),
        Err(err) => err.to_string(),
    };
    let expected = expected
        .replace("{file}", &path.display().to_string())
        .replace("{dir}", &fixture("broken").display().to_string());
    assert_eq!(err, expected, "fixture {name}");
}

/// Like [`assert_error`] for messages whose tail comes from another library.
fn assert_error_starts(name: &str, expected_start: &str) {
    let path = fixture(&format!("broken/{name}.yaml"));
    let err = load(&format!("broken/{name}.yaml"), None)
        .unwrap_err()
        .to_string();
    let expected = expected_start.replace("{file}", &path.display().to_string());
    assert!(err.starts_with(&expected), "fixture {name}: {err}");
}

#[test]
fn references_to_missing_entries() {
    assert_error(
        "dangling-user",
        "context \"dev\" names user \"bob\", which is not in {file}",
    );
    assert_error(
        "dangling-cluster",
        "context \"dev\" names cluster \"staging\", which is not in {file}",
    );
    assert_error(
        "no-current-context",
        "no context chosen: {file} set no current-context and --context was not given",
    );
    assert_error("unknown-context", "context \"prod\" is not in {file}");
    assert_error(
        "duplicate-cluster",
        "kubeconfig {file} defines cluster \"dev\" twice",
    );
}

#[test]
fn unusable_cluster_fields() {
    assert_error("no-server", "cluster \"dev\" in {file}: server is missing");
    assert_error_starts(
        "bad-base64",
        "cluster \"dev\" in {file}: certificate-authority-data is not valid base64 (",
    );
    assert_error(
        "missing-ca-file",
        "cluster \"dev\" in {file}: certificate-authority names {dir}/missing-ca.crt, which \
         cannot be read: No such file or directory (os error 2)",
    );
    assert_error(
        "ca-and-insecure",
        "cluster \"dev\" in {file} sets both certificate-authority-data and \
         insecure-skip-tls-verify; keep only one",
    );
    assert_error(
        "data-and-path",
        "cluster \"dev\" in {file} sets both certificate-authority-data and \
         certificate-authority; keep only one",
    );
    assert_error(
        "bad-tls-server-name",
        "cluster \"dev\" in {file}: tls-server-name \"api server!\" is not a valid DNS name or \
         IP address",
    );
    assert_error(
        "bad-proxy",
        "cluster \"dev\" in {file}: proxy-url \"ftp://proxy:21\" has scheme ftp; only http, \
         https and socks5 are supported",
    );
}

#[test]
fn unusable_user_fields() {
    assert_error(
        "token-and-basic",
        "user \"dev\" in {file} sets both token and username/password; keep only one",
    );
    assert_error(
        "cert-without-key",
        "user \"dev\" in {file}: client-key is missing, but client-certificate is set and needs it",
    );
    assert_error(
        "not-pem",
        "user \"dev\" in {file}: client-certificate-data holds no PEM certificate",
    );
    assert_error(
        "key-mismatch",
        "user \"dev\" in {file}: client-key is not the private key of the certificate in \
         client-certificate",
    );
    assert_error(
        "exec-v1-without-interactive-mode",
        "user \"dev\" in {file}: exec.interactiveMode is required with \
         client.authentication.k8s.io/v1",
    );
    assert_error(
        "exec-v1alpha1",
        "user \"dev\" in {file}: exec.apiVersion is client.authentication.k8s.io/v1alpha1, which \
         is no longer supported; use client.authentication.k8s.io/v1",
    );
}

#[test]
fn legacy_auth_providers_point_to_exec_plugins() {
    assert_error(
        "auth-provider",
        "user \"dev\" in {file} uses auth-provider \"gcp\", which kube-gc does not support \
         (client-go removed its in-tree auth providers in Kubernetes 1.26); switch this user to \
         an exec credential plugin, e.g. gke-gcloud-auth-plugin",
    );
}

#[test]
fn unreadable_files() {
    assert_error_starts("not-yaml", "cannot parse kubeconfig {file}: ");
    assert_error(
        "utf16-without-bom",
        "cannot parse kubeconfig {file}: it looks like UTF-16 without a byte-order mark; save it \
         as UTF-8",
    );
}

#[test]
fn no_error_message_carries_a_secret() {
    // The auth-provider fixture holds an access token; the refusal must not quote it.
    let err = load("broken/auth-provider.yaml", None).unwrap_err();
    let shown = format!("{err} {err:?}");
    assert!(!shown.contains("ya29.secret-access-token"), "{shown}");
}
