//! The init function of the retention controller (`retention`).
//!
//! Contract:
//! - Under `--namespace` the controller is skipped: a `ClusterRetentionPolicy` and a namespace
//!   selector need every namespace.
//! - When the server serves both `kube-gc.io/v1alpha1` policy kinds (the CRDs of `deploy/crds/`
//!   are installed) it runs at once. When it does not, the controller waits for them instead of
//!   being skipped: an info log says what to install, the group version's discovery document is
//!   read again every `rediscover_interval` (30 s; one GET), and the controller starts as soon
//!   as both kinds are served — installing the CRDs needs no restart. While it waits it is
//!   ready (a cluster without the CRDs has no policies to apply, so there is nothing it fails
//!   to see), and `/debug/explain` says it waits; once started it is ready when its caches
//!   have synced. A failed discovery of the group is an error, not a wait: whether the kinds
//!   are served is then unknown.
//! - It reads and deletes through a client of its own (`retention`), lists and watches through
//!   the shared informers' client, and publishes its metrics, its queue and the reflector
//!   counters of its policies', namespaces' and running watches' informers.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::{BoxError, ControllerContext, Init, ManagedController, RETENTION};
use crate::explain::live::RetentionView;
use kube_gc_client::{Client, Discovery};
use kube_gc_controllers::retention::engine::{
    cluster_policies, namespaced_policies, RetentionController, RetentionMetrics, RetentionOptions,
};
use kube_gc_runtime::informer::wait_for_cache_sync;

/// What the controller waits for while the CRDs are not installed, as logs and
/// `/debug/explain` say it.
const WAITING: &str =
    "waiting for the kube-gc.io retention policy CRDs (deploy/crds/) to be installed";

/// Builds the retention controller, or skips it.
pub(super) fn init(context: &ControllerContext<'_>) -> Result<Init, BoxError> {
    let options = context.options;
    if let Some(namespace) = &options.namespace {
        return Ok(Init::Skip(format!(
            "it needs every namespace, and --namespace is {namespace:?}"
        )));
    }
    let served = policies_served(context.discovery);
    let group = namespaced_policies().group;
    if !served && context.discovery.group_failed(&group) {
        return Err(format!(
            "discovery of group {group:?} failed, so whether retention policies are served is unknown"
        )
        .into());
    }
    let retention_options = RetentionOptions {
        workers: options.retention_workers,
        dry_run: options.dry_run,
        status_interval: options.retention_status_interval,
        reflector: options.reflector.clone(),
        ..RetentionOptions::default()
    };
    let rediscover = retention_options.rediscover_interval;
    let metrics = Arc::new(RetentionMetrics::default());
    let client = context.client.for_component(RETENTION, 1.0);
    let controller = RetentionController::builder(client.clone(), retention_options)
        .wiring(context.wiring.clone())
        .metrics(Arc::clone(&metrics))
        .build();
    if let Some(endpoints) = context.endpoints {
        endpoints
            .metrics
            .register_with(|registry| metrics.register(registry));
        endpoints.queues.register(Arc::new(controller.queue()));
        if let Some(wait) = controller.server_wait() {
            let queue = controller.queue();
            endpoints
                .metrics
                .availability()
                .add_queue(queue.name(), &wait);
        }
        let reflectors = endpoints.metrics.reflectors();
        for (resource, reflector) in controller.reflector_metrics() {
            reflectors.add(RETENTION, &resource, reflector);
        }
        reflectors.add_source(RETENTION, Arc::new(controller.watch_reflectors()));
    }
    context.pending.add(
        controller.pending_source(),
        Arc::clone(&context.wiring.clock),
    );
    let view = Arc::new(RetentionView::new(controller.watches()));
    if served {
        if let Some(explainer) = context.explainer {
            explainer.register(view);
        }
        let caches = controller.synced();
        return Ok(Init::Run(ManagedController::new(
            RETENTION,
            caches,
            move |shutdown| controller.run(shutdown),
        )));
    }
    tracing::info!(
        controller = RETENTION,
        recheck_seconds = rediscover.as_secs(),
        "{WAITING}"
    );
    let explainer = context.explainer.cloned();
    if let Some(explainer) = &explainer {
        explainer.not_running(RETENTION, WAITING);
    }
    let (ready, ready_flag) = watch::channel(true);
    let run = move |shutdown: CancellationToken| async move {
        if !until_served(&client, rediscover, &shutdown).await {
            return Ok(());
        }
        tracing::info!(
            controller = RETENTION,
            "the retention policy CRDs are served; starting"
        );
        if let Some(explainer) = &explainer {
            explainer.register(view);
        }
        ready.send_replace(false);
        let caches = controller.synced();
        let became_ready = async {
            if wait_for_cache_sync(caches, &shutdown).await.is_ok() {
                ready.send_replace(true);
            }
        };
        let (ran, ()) = tokio::join!(controller.run(shutdown.clone()), became_ready);
        ran
    };
    Ok(Init::Run(
        ManagedController::new(RETENTION, Vec::new(), run).with_ready_flag(RETENTION, ready_flag),
    ))
}

/// Whether both policy kinds are served.
fn policies_served(discovery: &Discovery) -> bool {
    discovery.serves(&namespaced_policies()) && discovery.serves(&cluster_policies())
}

/// Reads the policies' group version document every `period` until both kinds are served
/// (`true`) or `shutdown` is cancelled (`false`). A failed read is a warning and a retry.
async fn until_served(client: &Client, period: Duration, shutdown: &CancellationToken) -> bool {
    let policies = namespaced_policies();
    loop {
        match Discovery::group_version(client, &policies.group, &policies.version).await {
            Ok(discovery) if policies_served(&discovery) => return true,
            Ok(_) => {}
            Err(error) => tracing::warn!(controller = RETENTION, %error,
                "cannot read whether the retention policy CRDs are installed; trying again"),
        }
        tokio::select! {
            () = shutdown.cancelled() => return false,
            () = tokio::time::sleep(period) => {}
        }
    }
}
