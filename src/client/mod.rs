//! Talking to a Kubernetes API server.
//!
//! Not built yet (issue #4): kubeconfig and in-cluster configuration, authentication (tokens,
//! client certificates, exec plugins), rustls TLS, the REST verbs, streaming watches, discovery
//! and client-side throttling. Until then nothing in kube-gc talks to a real cluster.

pub mod config;
