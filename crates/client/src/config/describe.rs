//! The `kube-gc config view` text: where a configuration came from and what it will do, one
//! `label: value` line each, with every credential left out (token values, passwords, keys).

use std::fmt::Write;

use super::tls::PemSource;
use super::{ClientConfig, Origin};

/// Width of the label column: the longest label, "Client certificate:", so every view aligns
/// the same way whichever lines it has.
const LABEL_WIDTH: usize = 19;

/// Whose credentials `config` presents, in one line for an error message: the user, context
/// and files of a kubeconfig, or the pod's service account, and the kind of credential —
/// never its value.
pub fn whose_credentials(config: &ClientConfig) -> String {
    let who = match &config.origin {
        Origin::Kubeconfig {
            context,
            user,
            files,
            ..
        } => {
            let files: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
            let user = user.as_deref().unwrap_or("(none)");
            format!(
                "user {user:?} of context {context:?} in {}",
                files.join(", ")
            )
        }
        Origin::InCluster {
            service_account_dir,
        } => format!(
            "the pod's service account ({})",
            service_account_dir.display()
        ),
    };
    format!("{who}: {}", config.auth.describe())
}

/// Renders `config` as aligned `label: value` lines.
pub fn describe(config: &ClientConfig) -> String {
    let mut lines: Vec<(&str, String)> = Vec::new();
    match &config.origin {
        Origin::Kubeconfig {
            context,
            cluster,
            user,
            files,
        } => {
            let files: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
            lines.push(("Source", format!("kubeconfig {}", files.join(", "))));
            lines.push(("Context", context.clone()));
            lines.push(("Cluster", cluster.clone()));
            lines.push(("User", user.clone().unwrap_or_else(|| "(none)".into())));
        }
        Origin::InCluster {
            service_account_dir,
        } => {
            let dir = service_account_dir.display();
            lines.push(("Source", format!("in-cluster service account ({dir})")));
        }
    }
    lines.push(("Server", config.server.to_string()));
    lines.push(("CA", trust(config)));
    if let Some(name) = config.tls_server_name() {
        lines.push(("TLS server name", name.to_string()));
    }
    if let Some(proxy) = &config.proxy_url {
        // `ProxyUrl`'s Display leaves the password out.
        lines.push(("Proxy", proxy.to_string()));
    }
    lines.push(("Auth", config.auth.describe()));
    if let Some(source) = &config.tls.client_certificate_source {
        lines.push(("Client certificate", pem_source(source)));
    }
    if !config.impersonation.is_empty() {
        lines.push(("Impersonate", impersonation(config)));
    }
    lines.push(("Namespace", config.default_namespace.clone()));

    let mut text = String::new();
    for (label, value) in lines {
        // Writing to a String cannot fail.
        let _ = writeln!(text, "{:<LABEL_WIDTH$} {value}", format!("{label}:"));
    }
    text
}

fn trust(config: &ClientConfig) -> String {
    if config.tls.insecure_skip_verify {
        return "NOT VERIFIED (insecure-skip-tls-verify: true)".to_string();
    }
    match &config.tls.certificate_authority {
        Some(ca) => format!(
            "{} ({} certificate{})",
            pem_source(&ca.source),
            ca.certificates.len(),
            if ca.certificates.len() == 1 { "" } else { "s" }
        ),
        None => "system trust store".to_string(),
    }
}

fn pem_source(source: &PemSource) -> String {
    match source {
        PemSource::Inline => "inline (-data field)".to_string(),
        PemSource::File(path) => path.display().to_string(),
    }
}

fn impersonation(config: &ClientConfig) -> String {
    let who = &config.impersonation;
    let mut parts = Vec::new();
    if let Some(user) = &who.user {
        parts.push(format!("user \"{user}\""));
    }
    if let Some(uid) = &who.uid {
        parts.push(format!("uid \"{uid}\""));
    }
    if !who.groups.is_empty() {
        parts.push(format!("groups [{}]", who.groups.join(", ")));
    }
    if !who.extra.is_empty() {
        let keys: Vec<&str> = who.extra.keys().map(String::as_str).collect();
        parts.push(format!("extra [{}]", keys.join(", ")));
    }
    parts.join(", ")
}
