//! The init function of the retention controller (`retention`).
//!
//! Contract: the controller is built when the server serves both `kube-gc.io/v1alpha1`
//! policy kinds (the CRDs of `deploy/crds/` are installed); otherwise it is skipped with an info
//! log naming what to install — a cluster without the CRDs has no policies to apply. Under
//! `--namespace` it is skipped too: a `ClusterRetentionPolicy` and a namespace selector need
//! every namespace. It reads and deletes through a client of its own (`retention`), lists and
//! watches through the shared informers' client, and publishes its metrics, its queue and the
//! reflector counters of its policies', namespaces' and running watches' informers.

use std::sync::Arc;

use super::{BoxError, ControllerContext, Init, ManagedController, RETENTION};
use crate::controllers::retention::engine::{
    cluster_policies, namespaced_policies, RetentionController, RetentionMetrics, RetentionOptions,
};
use crate::explain::live::RetentionView;

/// Builds the retention controller, or skips it.
pub(super) fn init(context: &ControllerContext<'_>) -> Result<Init, BoxError> {
    let options = context.options;
    if let Some(namespace) = &options.namespace {
        return Ok(Init::Skip(format!(
            "it needs every namespace, and --namespace is {namespace:?}"
        )));
    }
    let (namespaced, cluster) = (namespaced_policies(), cluster_policies());
    if !context.serves(&namespaced) || !context.serves(&cluster) {
        if context.discovery.group_failed(&namespaced.group) {
            return Err(format!(
                "discovery of group {:?} failed, so whether retention policies are served is unknown",
                namespaced.group
            )
            .into());
        }
        return Ok(Init::Skip(
            "the kube-gc.io retention policy CRDs are not installed (deploy/crds/)".to_owned(),
        ));
    }
    let retention_options = RetentionOptions {
        workers: options.retention_workers,
        dry_run: options.dry_run,
        status_interval: options.retention_status_interval,
        reflector: options.reflector.clone(),
        ..RetentionOptions::default()
    };
    let metrics = Arc::new(RetentionMetrics::default());
    let client = context.client.for_component(RETENTION, 1.0);
    let controller = RetentionController::builder(client, retention_options)
        .informer_client(context.informers.clone())
        .clock(Arc::clone(context.clock))
        .metrics(Arc::clone(&metrics))
        .recorder(Arc::clone(context.recorder))
        .queue_metrics(context.queue_metrics.cloned())
        .build();
    if let Some(endpoints) = context.endpoints {
        endpoints
            .metrics
            .register_with(|registry| metrics.register(registry));
        endpoints.queues.register(Arc::new(controller.queue()));
        let reflectors = endpoints.metrics.reflectors();
        for (resource, reflector) in controller.reflector_metrics() {
            reflectors.add(RETENTION, &resource, reflector);
        }
        reflectors.add_source(RETENTION, Arc::new(controller.watch_reflectors()));
    }
    if let Some(explainer) = context.explainer {
        explainer.register(Arc::new(RetentionView::new(controller.watches())));
    }
    let caches = controller.synced();
    Ok(Init::Run(ManagedController::new(
        RETENTION,
        caches,
        move |shutdown| controller.run(shutdown),
    )))
}
