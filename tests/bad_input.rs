//! Bad input kube-gc must survive, for the rows of the "Bad input" table in
//! docs/reliability.md that no other suite covers: an object with 1,000 owner references, an
//! owner reference with an empty UID, a list item over the size limit, a server that stops in
//! the middle of a list body, and an expired client certificate.

mod gc_support;

use std::sync::Arc;
use std::time::Duration;

use gc_support::{configmaps, create, delete, object, owned_by, pods, reference_to, running};
use kube_gc::api::{ObjectMeta, OwnerReference, PartialObjectMetadata};
use kube_gc::client::config::{ClientConfig, Environment, LoadOptions};
use kube_gc::client::{Api, Client, ClientOptions, Error, ListParams};
use kube_gc::controllers::garbagecollector::builder::{apply, Effects, GraphEvent};
use kube_gc::controllers::garbagecollector::graph::Graph;
use kube_gc::controllers::garbagecollector::identity::Gvk;
use kube_gc::sim::faults::Verb;
use kube_gc::sim::{Propagation, SimServer};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const OWNERS: usize = 1000;

fn owner_name(i: usize) -> String {
    format!("owner-{i}")
}

/// A pod owned by 1,000 ConfigMaps, 999 of them deleted before the collector starts: the
/// collector verifies each absent owner, keeps the pod for its one live owner, and strips the
/// 999 dangling references; when the last owner goes, the pod goes.
#[tokio::test(start_paused = true)]
async fn an_object_with_a_thousand_owner_references_is_judged_on_all_of_them() {
    let gc = running(|sim: &SimServer| {
        let owners: Vec<Value> = (0..OWNERS)
            .map(|i| {
                create(
                    sim,
                    &configmaps(),
                    object("v1", "ConfigMap", Some("default"), &owner_name(i)),
                )
            })
            .collect();
        let references = owners.iter().map(|o| reference_to(o, false)).collect();
        // Only one reference may be the controller.
        let mut pod = owned_by(object("v1", "Pod", Some("default"), "many"), references);
        for reference in pod["metadata"]["ownerReferences"]
            .as_array_mut()
            .into_iter()
            .flatten()
            .skip(1)
        {
            reference["controller"] = Value::Bool(false);
        }
        create(sim, &pods(), pod);
        for i in 1..OWNERS {
            delete(
                sim,
                &configmaps(),
                Some("default"),
                &owner_name(i),
                Propagation::Background,
            );
        }
    })
    .await;
    let pod = gc
        .until(&pods(), Some("default"), "many", |p| {
            p.is_none()
                || p.is_some_and(|p| {
                    p["metadata"]["ownerReferences"].as_array().map(Vec::len) == Some(1)
                })
        })
        .await
        .expect("the pod with a live owner was deleted");
    assert_eq!(pod["metadata"]["ownerReferences"][0]["name"], "owner-0");
    assert_eq!(gc.requests(Verb::Delete, "/pods/"), 0);
    delete(
        &gc.sim,
        &configmaps(),
        Some("default"),
        &owner_name(0),
        Propagation::Background,
    );
    gc.gone(&pods(), Some("default"), "many").await;
    gc.assert_invariant();
    gc.stop().await;
}

fn pod_with_owner_uid(owner_uid: &str) -> PartialObjectMetadata {
    PartialObjectMetadata {
        metadata: ObjectMeta {
            name: Some("p".into()),
            namespace: Some("default".into()),
            uid: Some("pod-uid".into()),
            resource_version: Some("1".into()),
            owner_references: vec![OwnerReference {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                name: "owner".into(),
                uid: owner_uid.into(),
                ..Default::default()
            }],
            ..Default::default()
        },
        ..Default::default()
    }
}

/// The API server refuses an owner reference with an empty UID (422, see
/// `client_errors::an_invalid_object_lists_its_causes`), so the collector can only meet one
/// from a non-conforming server. It then handles it like any owner it has not seen: a virtual
/// node queued for verification, which a live owner (whose UID is never empty) fails, exactly
/// as a UID mismatch does — no panic, no special case.
#[test]
fn an_owner_reference_with_an_empty_uid_is_an_unverified_owner() {
    let mut graph = Graph::new();
    let mut effects = Effects::default();
    let gvk = Arc::new(Gvk {
        api_version: "v1".into(),
        kind: "Pod".into(),
    });
    apply(
        &mut graph,
        GraphEvent::Upserted {
            gvk,
            object: pod_with_owner_uid(""),
        },
        &mut effects,
    );
    let queued: Vec<&str> = effects.attempt_to_delete.iter().map(|u| &**u).collect();
    assert_eq!(queued, [""]);
    assert!(graph.node("pod-uid").is_some());
}

/// A server that sends the headers and half of a list body, then never another byte.
async fn hanging_server() -> (std::net::SocketAddr, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut request = [0u8; 4096];
            let _ = socket.read(&mut request).await;
            let body = br#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[{"metadata":{"name":"a"}},"#;
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                body.len() * 2
            );
            let _ = socket.write_all(head.as_bytes()).await;
            let _ = socket.write_all(body).await;
            let _ = socket.flush().await;
            // Keep the connection open and silent.
            held.push(socket);
        }
    });
    (addr, task)
}

/// On a paused clock: the whole list, body included, must arrive within the request timeout;
/// a server that stops mid-body is a retryable timeout, not a hang.
#[tokio::test(start_paused = true)]
async fn a_server_that_hangs_mid_body_is_a_timeout() {
    let (addr, server) = hanging_server().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kubeconfig");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: c\n  cluster:\n    \
             server: http://{addr}\ncontexts:\n- name: c\n  context: {{cluster: c}}\n"
        ),
    )
    .unwrap();
    let config = ClientConfig::load(&LoadOptions::file(path), &Environment::empty()).unwrap();
    let mut client_options = ClientOptions::default()
        .with_rate(0.0, 1)
        .without_timeouts();
    client_options.request_timeout = Some(Duration::from_secs(5));
    let client = Client::new(&config, &client_options).unwrap();
    let api: Api<Value> = Api::dynamic(
        client,
        kube_gc::client::ResourceRef::new("", "v1", "configmaps", "ConfigMap", true),
        Some("default"),
    );
    let err = api.list(&ListParams::default()).await.unwrap_err();
    assert!(
        matches!(err, Error::Timeout { .. }) || err.is_timeout(),
        "{err:?}"
    );
    assert!(err.is_retryable());
    server.abort();
}

/// One list item larger than the decoder's limit (64 MiB, far above the API server's object
/// size limit) is refused with a typed error as soon as it crosses the limit, instead of
/// growing the buffer without bound.
#[test]
fn a_huge_list_item_is_refused_at_the_limit() {
    use kube_gc::client::list_decoder::{ListDecodeError, MAX_VALUE_BYTES};
    let mut decoder = kube_gc::client::ListDecoder::<Value>::new();
    decoder
        .feed(br#"{"kind":"ConfigMapList","items":[{"data":""#)
        .unwrap();
    let chunk = vec![b'a'; 1 << 20];
    let mut fed = 0;
    let refused = loop {
        if let Err(e) = decoder.feed(&chunk) {
            break e;
        }
        fed += chunk.len();
        assert!(fed <= MAX_VALUE_BYTES + chunk.len(), "no limit enforced");
    };
    assert!(
        matches!(refused, ListDecodeError::TooLarge { limit, .. } if limit == MAX_VALUE_BYTES),
        "{refused}"
    );
    assert!(
        refused.to_string().contains("exceeds 67108864 bytes"),
        "{refused}"
    );
}

/// A CA, a server certificate for 127.0.0.1 and a client certificate that expired in 2001.
struct ExpiredIdentity {
    ca_pem: String,
    server: (String, String),
    client: (String, String),
}

fn expired_identity() -> ExpiredIdentity {
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::DigitalSignature,
    ];
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca, ca_key);
    let issue = |params: rcgen::CertificateParams| {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &issuer).unwrap();
        (cert.pem(), key.serialize_pem())
    };
    let mut server = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    server.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
    let mut client = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    client
        .distinguished_name
        .push(rcgen::DnType::CommonName, "kube-gc");
    client.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    client.not_before = rcgen::date_time_ymd(2000, 1, 1);
    client.not_after = rcgen::date_time_ymd(2001, 1, 1);
    ExpiredIdentity {
        ca_pem: ca_cert.pem(),
        server: issue(server),
        client: issue(client),
    }
}

/// A TLS server that demands a client certificate from `ca_pem` and counts the handshakes that
/// succeed.
async fn mutual_tls_server(
    identity: &ExpiredIdentity,
) -> (
    std::net::SocketAddr,
    Arc<std::sync::atomic::AtomicUsize>,
    tokio::task::JoinHandle<()>,
) {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(identity.ca_pem.as_bytes()).unwrap())
        .unwrap();
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
        Arc::new(roots),
        provider.clone(),
    )
    .build()
    .unwrap();
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_client_cert_verifier(verifier)
        .with_single_cert(
            vec![CertificateDer::from_pem_slice(identity.server.0.as_bytes()).unwrap()],
            PrivateKeyDer::from_pem_slice(identity.server.1.as_bytes()).unwrap(),
        )
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = Arc::clone(&accepted);
    let task = tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            if acceptor.accept(tcp).await.is_ok() {
                counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
        }
    });
    (addr, accepted, task)
}

/// kube-gc presents the client certificate it is given; the server refuses an expired one
/// during the handshake, so the request fails as a (retryable) connection error and no
/// request is ever served.
#[tokio::test]
async fn an_expired_client_certificate_is_refused_in_the_handshake() {
    use base64::Engine;
    let b64 = |text: &str| base64::engine::general_purpose::STANDARD.encode(text);
    let identity = expired_identity();
    let (addr, accepted, server) = mutual_tls_server(&identity).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kubeconfig");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: c\n  cluster:\n    \
             server: https://{addr}\n    certificate-authority-data: {}\nusers:\n- name: u\n  \
             user:\n    client-certificate-data: {}\n    client-key-data: {}\ncontexts:\n- name: c\n  \
             context: {{cluster: c, user: u}}\n",
            b64(&identity.ca_pem),
            b64(&identity.client.0),
            b64(&identity.client.1),
        ),
    )
    .unwrap();
    let config = ClientConfig::load(&LoadOptions::file(path), &Environment::empty()).unwrap();
    let client = Client::new(&config, &ClientOptions::default().with_rate(0.0, 1)).unwrap();
    let api: Api<Value> = Api::dynamic(
        client,
        kube_gc::client::ResourceRef::new("", "v1", "configmaps", "ConfigMap", true),
        Some("default"),
    );
    let err = api.get("x").await.unwrap_err();
    assert!(matches!(err, Error::Connection { .. }), "{err:?}");
    assert!(err.is_retryable());
    assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 0);
    server.abort();
}
