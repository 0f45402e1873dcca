//! Pods shaped like real ones, as JSON text, for the benches that decode or seed many of them
//! (`benches/retention.rs`): labels, annotations, a controlling ownerReference, a container
//! with env, resources and mounts, conditions and a terminated `containerStatuses` entry.
//! About 3.0 KB of JSON each (no `managedFields`), written straight into a buffer so that a
//! million of them can be made on the fly.
#![allow(dead_code)] // Each bench binary uses part of it.

use std::fmt::Write;

/// What varies from Pod to Pod.
pub struct PodSpec<'a> {
    /// Its namespace.
    pub namespace: &'a str,
    /// Its name.
    pub name: &'a str,
    /// A number that makes its UID (and its owner's) unique.
    pub serial: usize,
    /// The `tier` label.
    pub tier: &'a str,
    /// `Succeeded`, `Failed` or `Running`.
    pub phase: &'a str,
    /// RFC 3339, whole seconds: when its container terminated (ignored while `Running`).
    pub finished_at: &'a str,
    /// Pods per owning Job: Pods `serial / pods_per_owner` share an owner.
    pub pods_per_owner: usize,
}

/// A UID shaped like the API server's (36 characters), unique per `(kind, serial)`.
pub fn uid(kind: u32, serial: usize) -> String {
    format!(
        "{kind:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
        (serial >> 32) & 0xffff,
        (serial >> 20) & 0xfff,
        (serial >> 8) & 0xfff,
        serial
    )
}

/// Clears `out` and writes the Pod into it. `with_status: false` leaves `status` out (for a
/// create, which the simulated server would ignore it on anyway).
pub fn write_pod(out: &mut String, pod: &PodSpec<'_>, with_status: bool) {
    out.clear();
    let owner = pod.serial / pod.pods_per_owner.max(1);
    let owner_name = format!("etl-{:07}", owner);
    let (uid, owner_uid) = (uid(0x9d0d, pod.serial), uid(0x10b5, owner));
    let PodSpec {
        namespace,
        name,
        tier,
        ..
    } = pod;
    let created = "2026-11-25T06:00:00Z";
    let _ = write!(
        out,
        r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{name}","namespace":"{namespace}","uid":"{uid}","resourceVersion":"{rv}","creationTimestamp":"{created}","generateName":"{owner_name}-","labels":{{"app":"etl","tier":"{tier}","batch.kubernetes.io/job-name":"{owner_name}","batch.kubernetes.io/controller-uid":"{owner_uid}","team":"{namespace}"}},"annotations":{{"cluster-autoscaler.kubernetes.io/safe-to-evict":"true","prometheus.io/scrape":"false"}},"ownerReferences":[{{"apiVersion":"batch/v1","kind":"Job","name":"{owner_name}","uid":"{owner_uid}","controller":true,"blockOwnerDeletion":true}}]}},"#,
        rv = 100_000 + pod.serial,
    );
    let _ = write!(
        out,
        r#""spec":{{"restartPolicy":"Never","serviceAccountName":"etl","nodeName":"node-{node:03}","schedulerName":"default-scheduler","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","priority":0,"enableServiceLinks":true,"preemptionPolicy":"PreemptLowerPriority","containers":[{{"name":"etl","image":"registry.example.com/data/etl:2026.11.3","command":["/bin/etl","--since=24h","--output=s3://warehouse/etl"],"env":[{{"name":"ETL_MODE","value":"batch"}},{{"name":"ETL_SHARD","value":"{shard}"}},{{"name":"ETL_BUCKET","value":"warehouse"}},{{"name":"GOMAXPROCS","value":"2"}}],"resources":{{"limits":{{"cpu":"2","memory":"2Gi"}},"requests":{{"cpu":"500m","memory":"512Mi"}}}},"volumeMounts":[{{"name":"scratch","mountPath":"/scratch"}},{{"name":"kube-api-access-{short}","mountPath":"/var/run/secrets/kubernetes.io/serviceaccount","readOnly":true}}],"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}}],"volumes":[{{"name":"scratch","emptyDir":{{}}}},{{"name":"kube-api-access-{short}","projected":{{"defaultMode":420,"sources":[{{"serviceAccountToken":{{"expirationSeconds":3607,"path":"token"}}}}]}}}}],"tolerations":[{{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}}]}}"#,
        node = pod.serial % 997,
        shard = pod.serial % 64,
        short = &uid[uid.len() - 5..],
    );
    if with_status {
        let (at, phase) = (pod.finished_at, pod.phase);
        let state = if phase == "Running" {
            format!(r#"{{"running":{{"startedAt":"{created}"}}}}"#)
        } else {
            let code = i32::from(phase == "Failed");
            format!(
                r#"{{"terminated":{{"exitCode":{code},"reason":"Completed","startedAt":"{created}","finishedAt":"{at}","containerID":"containerd://{uid}"}}}}"#
            )
        };
        let _ = write!(
            out,
            r#","status":{{"phase":"{phase}","hostIP":"10.0.{a}.{b}","podIP":"10.244.{a}.{b}","startTime":"{created}","qosClass":"Burstable","conditions":[{{"type":"PodReadyToStartContainers","status":"False","lastTransitionTime":"{at}"}},{{"type":"Initialized","status":"True","lastTransitionTime":"{created}"}},{{"type":"Ready","status":"False","lastTransitionTime":"{at}","reason":"PodCompleted"}},{{"type":"ContainersReady","status":"False","lastTransitionTime":"{at}","reason":"PodCompleted"}},{{"type":"PodScheduled","status":"True","lastTransitionTime":"{created}"}}],"containerStatuses":[{{"name":"etl","state":{state},"ready":false,"restartCount":0,"image":"registry.example.com/data/etl:2026.11.3","imageID":"registry.example.com/data/etl@sha256:3f9a1c7e5b2d4a6f8e0c1b3d5f7a9c2e4b6d8f0a1c3e5b7d9f2a4c6e8b0d1f3a","started":false}}]}}"#,
            a = pod.serial % 250,
            b = (pod.serial / 250) % 250,
        );
    }
    out.push('}');
}
