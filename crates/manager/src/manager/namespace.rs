//! The init function of the namespace controller (`namespace`, kcm's `namespace-controller`).
//!
//! Contract: the controller needs nothing but discovery and namespaces, so it is built on every
//! cluster — except under `--namespace`: it must see namespaces and every resource in them, so
//! a run restricted to one namespace skips it with an info log. Its client has its own token
//! bucket at 20 times the configured rate, as kube-controller-manager gives its namespace
//! controller (a deletion is a burst of lists and deletes); its User-Agent ends in
//! `namespace-controller`, as upstream's. It is ready once the namespaces' cache synced. With
//! [`Endpoints`](crate::server::Endpoints) it publishes its metrics and its queue, and its
//! caches for `/debug/explain`.

use std::sync::Arc;

use super::{BoxError, ControllerContext, Init, ManagedController, NAMESPACE};
use crate::explain::live::NamespaceView;
use kube_gc_controllers::namespace::{
    NamespaceController, NamespaceOptions, COMPONENT as USER_AGENT, QUEUE,
};

/// kube-controller-manager runs its namespace controller's client at 20 times the QPS.
const RATE_FACTOR: f64 = 20.0;

/// Builds the controller, or skips it under `--namespace`.
pub(super) fn init(context: &ControllerContext<'_>) -> Result<Init, BoxError> {
    let options = context.options;
    if let Some(namespace) = &options.namespace {
        return Ok(Init::Skip(format!(
            "it needs every namespace, and --namespace is {namespace:?}"
        )));
    }
    let namespace_options = NamespaceOptions {
        workers: options.namespace_workers,
        sync_period: options.namespace_sync_period,
        finalize_delay: options.namespace_deletion_grace_period,
        discovery_period: options.gc_discovery_period,
        dry_run: options.dry_run,
        reflector: options.reflector.clone(),
        wiring: context.wiring.clone(),
    };
    let client = context.client.for_component(USER_AGENT, RATE_FACTOR);
    // The sources wait for the first content monitors, so that a resource the garbage
    // collector monitors too is listed once for both.
    let controller =
        NamespaceController::new(client, namespace_options).holding(context.sources.hold());
    let handle = controller.handle();
    if let Some(explainer) = context.explainer {
        explainer.register(Arc::new(NamespaceView::new(handle.clone())));
    }
    if let Some(endpoints) = context.endpoints {
        endpoints
            .metrics
            .register_with(|registry| handle.metrics().register(registry));
        endpoints.queues.register(Arc::new(handle.queue().clone()));
        if let Some(wait) = handle.server_wait() {
            endpoints.metrics.availability().add_queue(QUEUE, &wait);
        }
    }
    let managed = ManagedController::new(NAMESPACE, vec![handle.synced()], move |shutdown| {
        controller.run(shutdown)
    });
    Ok(Init::Run(managed))
}
