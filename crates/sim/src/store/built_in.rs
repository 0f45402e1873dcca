//! What a real API server writes into a new object of certain built-in types: its registry's
//! `PrepareForCreate`, one default, and the admission plugins on by default in v1.28.
//!
//! Contract: [`prepare_created`] is a pure function on the object a create stores, called after
//! the generic server-owned fields are set. Only the rules the pod garbage collector and the
//! protection controllers read are modelled, each pinned to an exchange of
//! `fixtures/real-apiserver/`:
//! - Pods: `status` becomes `{phase: Pending}` whatever the request said (the pod registry
//!   resets it; exchange 170 — the real server also sets a `qosClass`, which the sim does not
//!   compute), and `spec.terminationGracePeriodSeconds` defaults to 30, the grace period a
//!   DELETE then grants (exchanges 170, 171).
//! - Nodes: the TaintNodesByCondition plugin appends the `node.kubernetes.io/not-ready`
//!   `NoSchedule` taint unless a taint of that key and effect is there (exchange 165).
//! - PersistentVolumeClaims and PersistentVolumes: the StorageObjectInUseProtection plugin
//!   appends `kubernetes.io/pvc-protection` / `kubernetes.io/pv-protection` to the finalizers
//!   unless present, and the registry sets `status.phase: Pending` (exchanges 184–186).
//! - Secrets ([`convert_secret`], on create and on update alike: it is the v1 → internal
//!   conversion, not a registry rule): `stringData` is written into `data` in base64, over a
//!   `data` key of the same name, and is never stored; `type` defaults to `Opaque` (exchange
//!   240, the scene's Secrets created with `stringData: {k: v}` and answered `data: {k: dg==}`).

use serde_json::{json, Value};

use crate::object;
use crate::resources::ResourceDef;

/// The finalizer admission gives every PersistentVolumeClaim.
pub const PVC_PROTECTION: &str = "kubernetes.io/pvc-protection";
/// The finalizer admission gives every PersistentVolume.
pub const PV_PROTECTION: &str = "kubernetes.io/pv-protection";
/// The grace period of a Pod whose spec names none (`DefaultTerminationGracePeriodSeconds`).
pub const DEFAULT_TERMINATION_GRACE_PERIOD: i64 = 30;

/// Applies the rules of the module documentation to `obj`, a new object of `def`.
pub fn prepare_created(def: &ResourceDef, obj: &mut Value) {
    if !def.group.is_empty() || def.version != "v1" {
        return;
    }
    match def.resource.as_str() {
        "pods" => prepare_pod(obj),
        "nodes" => taint_not_ready(obj),
        "persistentvolumeclaims" => protect(obj, PVC_PROTECTION),
        "persistentvolumes" => protect(obj, PV_PROTECTION),
        "secrets" => convert_secret(def, obj),
        _ => {}
    }
}

/// A v1 Secret as the server stores it: `stringData` merged into `data`, `type` defaulted.
/// Any other object is left alone.
pub fn convert_secret(def: &ResourceDef, obj: &mut Value) {
    use base64::Engine as _;
    if !def.group.is_empty() || def.version != "v1" || def.resource != "secrets" {
        return;
    }
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    if let Some(Value::Object(strings)) = map.remove("stringData") {
        let data = map.entry("data").or_insert_with(|| json!({}));
        if !data.is_object() {
            *data = json!({});
        }
        if let Some(data) = data.as_object_mut() {
            for (key, value) in strings {
                let text = value.as_str().unwrap_or_default();
                let encoded = base64::engine::general_purpose::STANDARD.encode(text);
                data.insert(key, Value::from(encoded));
            }
        }
    }
    if map
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .is_empty()
    {
        map.insert("type".into(), Value::from("Opaque"));
    }
}

fn prepare_pod(obj: &mut Value) {
    obj["status"] = json!({"phase": "Pending"});
    let spec = spec_mut(obj);
    if !spec.contains_key("terminationGracePeriodSeconds") {
        spec.insert(
            "terminationGracePeriodSeconds".into(),
            Value::from(DEFAULT_TERMINATION_GRACE_PERIOD),
        );
    }
}

fn taint_not_ready(obj: &mut Value) {
    const KEY: &str = "node.kubernetes.io/not-ready";
    const EFFECT: &str = "NoSchedule";
    let spec = spec_mut(obj);
    let taints = spec.entry("taints").or_insert_with(|| json!([]));
    if !taints.is_array() {
        *taints = json!([]);
    }
    let Some(taints) = taints.as_array_mut() else {
        return;
    };
    let present = taints
        .iter()
        .any(|t| t["key"] == KEY && t["effect"] == EFFECT);
    if !present {
        taints.push(json!({"key": KEY, "effect": EFFECT}));
    }
}

fn protect(obj: &mut Value, finalizer: &str) {
    let mut finalizers = object::finalizers(obj);
    if !finalizers.iter().any(|f| f == finalizer) {
        finalizers.push(finalizer.to_owned());
        object::set_finalizers(obj, &finalizers);
    }
    obj["status"] = json!({"phase": "Pending"});
}

/// `obj.spec` as a map, made one if it is missing or not an object.
fn spec_mut(obj: &mut Value) -> &mut serde_json::Map<String, Value> {
    if !obj["spec"].is_object() {
        obj["spec"] = json!({});
    }
    match obj["spec"].as_object_mut() {
        Some(spec) => spec,
        None => unreachable!("spec was just made an object"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn core(resource: &str, kind: &str) -> ResourceDef {
        ResourceDef::new("", "v1", resource, kind)
    }

    /// Exchange 240: `stringData: {k: v}` is answered `data: {k: dg==}`, `type: Opaque`.
    #[test]
    fn a_secret_stores_its_string_data_in_base64_data() {
        let secrets = core("secrets", "Secret");
        let mut secret = json!({"data": {"k": "b2xk", "other": "eA=="}, "stringData": {"k": "v"}});
        prepare_created(&secrets, &mut secret);
        assert_eq!(
            secret,
            json!({"data": {"k": "dg==", "other": "eA=="}, "type": "Opaque"})
        );
        let mut typed = json!({"type": "kubernetes.io/tls"});
        convert_secret(&secrets, &mut typed);
        assert_eq!(typed, json!({"type": "kubernetes.io/tls"}));
        let mut config_map = json!({"stringData": {"k": "v"}});
        convert_secret(&core("configmaps", "ConfigMap"), &mut config_map);
        assert_eq!(config_map, json!({"stringData": {"k": "v"}}));
    }

    #[test]
    fn a_pod_starts_pending_with_the_default_grace_period() {
        let mut pod = json!({"spec": {"nodeName": "n"}, "status": {"phase": "Succeeded"}});
        prepare_created(&core("pods", "Pod"), &mut pod);
        assert_eq!(pod["status"], json!({"phase": "Pending"}));
        assert_eq!(pod["spec"]["terminationGracePeriodSeconds"], 30);
        let mut own = json!({"spec": {"terminationGracePeriodSeconds": 5}});
        prepare_created(&core("pods", "Pod"), &mut own);
        assert_eq!(own["spec"]["terminationGracePeriodSeconds"], 5);
    }

    #[test]
    fn a_node_is_tainted_not_ready_once() {
        let mut node = json!({"metadata": {"name": "n"}});
        prepare_created(&core("nodes", "Node"), &mut node);
        let taint = json!({"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"});
        assert_eq!(node["spec"]["taints"], json!([taint.clone()]));
        let mut tainted = json!({"spec": {"taints": [taint.clone()]}});
        prepare_created(&core("nodes", "Node"), &mut tainted);
        assert_eq!(tainted["spec"]["taints"], json!([taint]));
    }

    #[test]
    fn claims_and_volumes_get_their_protection_finalizer_last_and_once() {
        let mut claim = json!({"metadata": {"finalizers": ["example.com/keep"]}});
        prepare_created(
            &core("persistentvolumeclaims", "PersistentVolumeClaim"),
            &mut claim,
        );
        assert_eq!(
            claim["metadata"]["finalizers"],
            json!(["example.com/keep", PVC_PROTECTION])
        );
        assert_eq!(claim["status"]["phase"], "Pending");
        let mut volume = json!({"metadata": {"finalizers": [PV_PROTECTION]}});
        prepare_created(&core("persistentvolumes", "PersistentVolume"), &mut volume);
        assert_eq!(volume["metadata"]["finalizers"], json!([PV_PROTECTION]));
    }

    #[test]
    fn other_resources_and_groups_are_left_alone() {
        let mut cm = json!({"data": {}});
        prepare_created(&core("configmaps", "ConfigMap"), &mut cm);
        assert_eq!(cm, json!({"data": {}}));
        let mut other = json!({});
        prepare_created(
            &ResourceDef::new("example.com", "v1", "pods", "Pod"),
            &mut other,
        );
        assert_eq!(other, json!({}));
    }
}
