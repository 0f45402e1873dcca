//! Kubeconfig parsing on arbitrary bytes (YAML or JSON, any encoding kubectl would try).
//!
//! Invariants: `parse` returns a typed result and never panics, and is deterministic.
#![no_main]

use kube_gc::client::config::kubeconfig;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let first = kubeconfig::parse(data);
    let again = kubeconfig::parse(data);
    match (&first, &again) {
        (Ok(a), Ok(b)) => assert_eq!(format!("{a:?}"), format!("{b:?}")),
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
        _ => panic!("parse is not deterministic"),
    }
});
