//! The init functions of the PVC and PV protection controllers (`pvc-protection`,
//! `pv-protection`).
//!
//! Contract:
//! - `pvc-protection` runs in `--namespace` when it is set (claims and Pods of that namespace),
//!   everywhere otherwise; `pv-protection` needs every claim, so `--namespace` skips it.
//! - A server that does not serve claims or volumes (or Pods) skips them, with the reason.
//! - Each reads and writes through a client of its own named as kube-controller-manager's
//!   (`pvc-protection-controller`, `pv-protection-controller`), lists and watches through the
//!   shared informers, and publishes its queue (`pvcprotection`, `pvprotection`), its
//!   informers' reflector counters and its caches for `/debug/explain`.

use std::sync::Arc;

use super::{BoxError, ControllerContext, Init, ManagedController, PVC_PROTECTION, PV_PROTECTION};
use crate::explain::live::{PvView, PvcView};
use kube_gc_client::ResourceRef;
use kube_gc_controllers::podgc::pod_resource;
use kube_gc_controllers::protection::pv::COMPONENT as PV_COMPONENT;
use kube_gc_controllers::protection::pvc::{ProtectionOptions, COMPONENT as PVC_COMPONENT};
use kube_gc_controllers::protection::{
    claim_resource, volume_resource, PvProtection, PvcProtection,
};
use kube_gc_runtime::controller::ServerWait;
use kube_gc_runtime::reflector::ReflectorMetrics;
use kube_gc_runtime::workqueue::WorkQueue;

/// Builds the PVC protection controller, or says why it is skipped.
pub(super) fn init_pvc(context: &ControllerContext<'_>) -> Result<Init, BoxError> {
    if let Some(reason) = unserved(context, &[claim_resource(), pod_resource()]) {
        return Ok(Init::Skip(reason));
    }
    let options = ProtectionOptions {
        namespace: context.options.namespace.clone(),
        dry_run: context.options.dry_run,
    };
    let client = context.client.for_component(PVC_COMPONENT, 1.0);
    let controller = PvcProtection::new(client, &context.wiring, &options);
    publish(context, controller.queue(), controller.server_wait());
    publish_reflectors(context, PVC_PROTECTION, controller.reflector_metrics());
    if let Some(explainer) = context.explainer {
        explainer.register(Arc::new(PvcView::new(
            Arc::clone(controller.claims()),
            Arc::clone(controller.pods()),
            controller.synced(),
        )));
    }
    let caches = controller.synced();
    Ok(Init::Run(ManagedController::new(
        PVC_PROTECTION,
        caches,
        move |shutdown| controller.run(shutdown),
    )))
}

/// Builds the PV protection controller, or says why it is skipped.
pub(super) fn init_pv(context: &ControllerContext<'_>) -> Result<Init, BoxError> {
    if let Some(namespace) = &context.options.namespace {
        return Ok(Init::Skip(format!(
            "it needs every claim, and --namespace is {namespace:?}"
        )));
    }
    if let Some(reason) = unserved(context, &[volume_resource(), claim_resource()]) {
        return Ok(Init::Skip(reason));
    }
    let client = context.client.for_component(PV_COMPONENT, 1.0);
    let controller = PvProtection::new(client, &context.wiring, context.options.dry_run);
    publish(context, controller.queue(), controller.server_wait());
    publish_reflectors(context, PV_PROTECTION, controller.reflector_metrics());
    if let Some(explainer) = context.explainer {
        explainer.register(Arc::new(PvView::new(
            Arc::clone(controller.volumes()),
            Arc::clone(controller.claims()),
            controller.synced(),
        )));
    }
    let caches = controller.synced();
    Ok(Init::Run(ManagedController::new(
        PV_PROTECTION,
        caches,
        move |shutdown| controller.run(shutdown),
    )))
}

/// Why the controller cannot run: the first of `resources` the server does not serve.
fn unserved(context: &ControllerContext<'_>, resources: &[ResourceRef]) -> Option<String> {
    resources.iter().find(|r| !context.serves(r)).map(|r| {
        format!(
            "the server does not serve {} with list, watch and delete",
            r.plural
        )
    })
}

/// Registers a controller's queue for `/debug/workqueue` and the availability metrics.
fn publish<K>(context: &ControllerContext<'_>, queue: &WorkQueue<K>, wait: Option<ServerWait<K>>)
where
    K: Clone + Eq + std::hash::Hash + std::fmt::Display + std::fmt::Debug + Send + Sync + 'static,
{
    let Some(endpoints) = context.endpoints else {
        return;
    };
    if let Some(wait) = wait {
        endpoints
            .metrics
            .availability()
            .add_queue(queue.name(), &wait);
    }
    endpoints.queues.register(Arc::new(queue.clone()));
}

/// Registers a controller's informers' reflector counters (`/metrics`, and `/readyz`'s check
/// that no informer is stuck).
fn publish_reflectors(
    context: &ControllerContext<'_>,
    controller: &str,
    reflectors: &[(ResourceRef, Arc<ReflectorMetrics>)],
) {
    if let Some(endpoints) = context.endpoints {
        for (resource, metrics) in reflectors {
            endpoints.metrics.reflectors().add(
                controller,
                &resource.path_name(),
                Arc::clone(metrics),
            );
        }
    }
}
