//! The init function of the pod garbage collector (`podgc`).
//!
//! Contract:
//! - Under `--namespace` the controller is skipped: orphans are found by node, and the
//!   threshold of terminated Pods counts every namespace.
//! - Pods and Nodes are served by every API server; if discovery says otherwise, the
//!   controller is skipped with the reason.
//! - It reads and deletes through a client of its own (`pod-garbage-collector`, as
//!   kube-controller-manager's), lists and watches through the shared informers, and publishes
//!   its metrics (`pod_gc_collector_*`), its queue and its informers' reflector counters, and
//!   its caches for `/debug/explain`.

use std::sync::Arc;

use super::{BoxError, ControllerContext, Init, ManagedController, PODGC};
use crate::explain::live::PodGcView;
use kube_gc_controllers::podgc::{
    node_resource, pod_resource, PodGcController, PodGcMetrics, PodGcOptions, COMPONENT,
};

/// Builds the pod garbage collector, or says why it is skipped.
pub(super) fn init(context: &ControllerContext<'_>) -> Result<Init, BoxError> {
    let options = context.options;
    if let Some(namespace) = &options.namespace {
        return Ok(Init::Skip(format!(
            "it needs every namespace and the nodes, and --namespace is {namespace:?}"
        )));
    }
    for resource in [pod_resource(), node_resource()] {
        if !context.serves(&resource) {
            return Ok(Init::Skip(format!(
                "the server does not serve {} with list, watch and delete",
                resource.plural
            )));
        }
    }
    let metrics = Arc::new(PodGcMetrics::default());
    let podgc_options = PodGcOptions {
        terminated_threshold: options.terminated_pod_gc_threshold,
        quarantine: options.pod_gc_quarantine,
        dry_run: options.dry_run,
        reflector: options.reflector.clone(),
    };
    let client = context.client.for_component(COMPONENT, 1.0);
    let controller = PodGcController::builder(client, podgc_options)
        .wiring(context.wiring.clone())
        .metrics(Arc::clone(&metrics))
        .build();
    if let Some(explainer) = context.explainer {
        explainer.register(Arc::new(PodGcView::new(
            Arc::clone(controller.pods()),
            Arc::clone(controller.nodes()),
            Arc::clone(controller.quarantines()),
            options.terminated_pod_gc_threshold,
            controller.synced(),
        )));
    }
    if let Some(endpoints) = context.endpoints {
        endpoints
            .metrics
            .register_with(|registry| metrics.register(registry));
        let queue = controller.queue().clone();
        if let Some(wait) = controller.server_wait() {
            endpoints
                .metrics
                .availability()
                .add_queue(queue.name(), &wait);
        }
        endpoints.queues.register(Arc::new(queue));
        for (resource, reflector) in controller.reflector_metrics() {
            endpoints
                .metrics
                .reflectors()
                .add(PODGC, &resource.path_name(), Arc::clone(reflector));
        }
    }
    context.pending.add(
        controller.pending_source(),
        Arc::clone(&context.wiring.clock),
    );
    let caches = controller.synced();
    Ok(Init::Run(ManagedController::new(
        PODGC,
        caches,
        move |shutdown| controller.run(shutdown),
    )))
}
