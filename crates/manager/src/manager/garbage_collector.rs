//! The init function of the ownerReference garbage collector (`garbagecollector`).
//!
//! Contract: the collector needs nothing but discovery, so it is built on every cluster — except
//! under `--namespace`: it must see owners and dependents in every namespace (and cluster-scoped
//! owners), so a run restricted to one namespace skips it with an info log rather than collect
//! from a partial graph. It is ready once its workers run (its graph synced, or the initial sync
//! timed out). With [`Endpoints`](crate::server::Endpoints) it publishes its metrics (its
//! monitors' reflector counters among them), its two queues and its graph, in Graphviz DOT, at
//! both of upstream's debug paths; with a [`LiveExplainer`](crate::explain::live::LiveExplainer),
//! its graph for `/debug/explain`.

use std::sync::Arc;

use super::{BoxError, ControllerContext, Init, ManagedController, GARBAGE_COLLECTOR};
use crate::explain::live::GcView;
use crate::server::{DebugPage, Endpoints};
use kube_gc_controllers::garbagecollector::{GarbageCollector, GcHandle, GcOptions};

/// Where the graph is served: upstream's current path and its older alias.
pub const GRAPH_PATHS: [&str; 2] = [
    "/debug/controllers/garbage-collector-controller/graph",
    "/debug/controllers/garbagecollector/graph",
];

/// The `Content-Type` of the graph.
const GRAPHVIZ: &str = "text/vnd.graphviz";

/// Builds the collector, or skips it under `--namespace`.
pub(super) fn init(context: &ControllerContext<'_>) -> Result<Init, BoxError> {
    let options = context.options;
    if let Some(namespace) = &options.namespace {
        return Ok(Init::Skip(format!(
            "it needs every namespace, and --namespace is {namespace:?}"
        )));
    }
    let gc_options = GcOptions {
        workers: options.gc_workers,
        discovery_period: options.gc_discovery_period,
        initial_sync_timeout: options.gc_initial_sync_timeout,
        reflector: options.reflector.clone(),
        wiring: context.wiring.clone(),
        ..GcOptions::default()
    };
    // Twice the rate, as upstream's: each deletion takes two calls.
    let client = context.client.for_component(GARBAGE_COLLECTOR, 2.0);
    // The sources wait for the collector's first monitors, so that a resource another
    // controller reads too is listed once for both.
    let collector = GarbageCollector::new(client, gc_options).holding(context.sources.hold());
    let handle = collector.handle();
    if let Some(endpoints) = context.endpoints {
        publish(&handle, endpoints);
    }
    context
        .pending
        .add(handle.pending_source(), Arc::clone(&context.wiring.clock));
    if let Some(explainer) = context.explainer {
        explainer.register(Arc::new(GcView::new(handle.clone())));
    }
    let managed = ManagedController::new(GARBAGE_COLLECTOR, Vec::new(), move |shutdown| {
        collector.run(shutdown)
    });
    Ok(Init::Run(
        managed.with_ready_flag(GARBAGE_COLLECTOR, handle.ready_watch()),
    ))
}

/// Registers the collector's metrics, queues and graph pages.
fn publish(handle: &GcHandle, endpoints: &Endpoints) {
    endpoints
        .metrics
        .register_with(|registry| handle.metrics().register(registry));
    for (queue, wait) in handle.queues().into_iter().zip(handle.server_waits()) {
        endpoints
            .metrics
            .availability()
            .add_queue(queue.name(), &wait);
        endpoints.queues.register(Arc::new(queue));
    }
    let monitors = handle.clone();
    endpoints.metrics.reflectors().add_source(
        GARBAGE_COLLECTOR,
        Arc::new(move || monitors.monitor_reflectors()),
    );
    for path in GRAPH_PATHS {
        let handle = handle.clone();
        endpoints.add_debug_route_with_query(path, move |query| {
            DebugPage::ok(GRAPHVIZ, handle.debug_graph(&uids(query)))
        });
    }
}

/// The repeated `uid` parameters of a query string (`uid=a&uid=b`).
fn uids(query: &str) -> Vec<String> {
    url::form_urlencoded::parse(query.as_bytes())
        .filter(|(name, _)| name == "uid")
        .map(|(_, value)| value.into_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uids_are_read_from_repeated_parameters() {
        assert_eq!(uids("uid=a&x=1&uid=b%2Dc"), ["a", "b-c"]);
        assert!(uids("").is_empty());
    }
}
