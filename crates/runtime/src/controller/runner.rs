//! [`Controller`]: the life of a controller, from start to clean shut-down (what every kcm
//! controller's `Run` does).
//!
//! ```text
//! run(shutdown)
//!   1. start the informers it owns
//!   2. wait until every cache it needs has synced      (cancellable)
//!   3. start N workers: get → reconcile → forget / add_rate_limited / add_after → done,
//!      and, with a ServerWait, the task that sends back the keys that wait for the API server
//!   4. on shutdown: workers stop taking keys; the queue shuts down and drains the keys in
//!      hand; the workers end; then the owned informers stop
//! ```
//!
//! Contract:
//! - Workers only start once every cache has synced, so a reconcile never mistakes "not cached
//!   yet" for "does not exist".
//! - Shut-down never abandons a key in hand: each worker finishes its current reconcile.
//!   Keys still queued or waiting for a timer are dropped (a restarted controller relists and
//!   finds them again). Like client-go, shut-down waits as long as a reconcile runs.
//! - Every task `run` spawns (informers, workers) is owned by it: they are stopped before `run`
//!   returns, and aborted if the `run` future is dropped.

use std::fmt::Display;
use std::hash::Hash;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use tokio::task::JoinSet;
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::cache::Cacheable;
use crate::informer::{wait_for_cache_sync, InformerSynced, SharedInformer, WaitForSyncError};
use crate::workqueue::WorkQueue;

use super::counters::ReconcileCounters;
use super::reconcile::Reconciler;
use super::server_wait::ServerWait;
use super::worker::Worker;
use kube_gc_client::ServerAvailability;

/// Why a controller could not run.
#[derive(Debug, thiserror::Error)]
pub enum ControllerError {
    /// A cache the controller needs will never sync (its informer was dropped).
    #[error("controller {controller} cannot start: {source}")]
    CacheSync {
        /// The controller's name.
        controller: String,
        /// What the wait ran into.
        #[source]
        source: WaitForSyncError,
    },
}

/// A controller: a workqueue, a reconciler, the workers that connect them, and the informers
/// whose caches they read.
pub struct Controller<K, R> {
    name: String,
    queue: WorkQueue<K>,
    reconciler: Arc<R>,
    workers: usize,
    /// Caches to wait for before starting workers.
    caches: Vec<InformerSynced>,
    /// Informers this controller starts and stops, as not-yet-started `run` futures.
    informers: Vec<BoxFuture<'static, ()>>,
    /// Stops the owned informers, once the workers have drained.
    informer_stop: CancellationToken,
    counters: Arc<ReconcileCounters>,
    server_wait: Option<ServerWait<K>>,
}

impl<K, R> Controller<K, R>
where
    K: Clone + Eq + Hash + Display + Send + Sync + 'static,
    R: Reconciler<K>,
{
    /// A controller called `name` (for logs) with one worker, reconciling the keys of `queue`
    /// with `reconciler`.
    pub fn new(name: impl Into<String>, queue: WorkQueue<K>, reconciler: R) -> Self {
        Controller {
            name: name.into(),
            queue,
            reconciler: Arc::new(reconciler),
            workers: 1,
            caches: Vec::new(),
            informers: Vec::new(),
            informer_stop: CancellationToken::new(),
            counters: Arc::new(ReconcileCounters::default()),
            server_wait: None,
        }
    }

    /// Keys whose reconcile failed because the API server was unavailable
    /// ([`Reconciler::server_unavailable`]) wait for it in a [`ServerWait`] told of its returns
    /// by `availability` — the one of the client the reconciler's requests go through —
    /// instead of backing off (default: they back off like any failure).
    pub fn wait_for_server(mut self, availability: ServerAvailability) -> Self {
        self.server_wait = Some(ServerWait::new(self.name.clone(), availability));
        self
    }

    /// The keys waiting for the API server (for metrics and readiness), when
    /// [`wait_for_server`](Self::wait_for_server) set them up.
    pub fn server_wait(&self) -> Option<ServerWait<K>> {
        self.server_wait.clone()
    }

    /// Runs `count` workers (at least one): up to `count` different keys are reconciled at
    /// once (kcm's `--concurrent-*-syncs`).
    pub fn workers(mut self, count: usize) -> Self {
        self.workers = count.max(1);
        self
    }

    /// Starts `informer` with the controller, waits for its cache before starting workers, and
    /// stops it after the workers have drained. For an informer that other controllers share,
    /// run it elsewhere and use [`wait_for`](Self::wait_for) instead.
    pub fn informer<T>(mut self, informer: &SharedInformer<T>) -> Self
    where
        T: Cacheable + Send + Sync + 'static,
    {
        self.caches.push(informer.synced());
        let run = informer.clone().run(self.informer_stop.clone());
        self.informers.push(Box::pin(run));
        self
    }

    /// Waits for `cache` to sync before starting workers, without owning its informer.
    pub fn wait_for(mut self, cache: InformerSynced) -> Self {
        self.caches.push(cache);
        self
    }

    /// The controller's reconcile counters (for metrics).
    pub fn counters(&self) -> Arc<ReconcileCounters> {
        Arc::clone(&self.counters)
    }

    /// Runs the controller until `shutdown` is cancelled, then shuts it down cleanly (see the
    /// module docs). Cancellation while waiting for caches is a normal, early stop: `Ok`.
    ///
    /// # Errors
    ///
    /// [`ControllerError::CacheSync`] if a cache can never sync; the owned informers are
    /// stopped first.
    pub async fn run(self, shutdown: CancellationToken) -> Result<(), ControllerError> {
        let Controller {
            name,
            queue,
            reconciler,
            workers,
            caches,
            informers,
            informer_stop,
            counters,
            server_wait,
        } = self;
        let informers = OwnedInformers::start(informers, informer_stop);

        tracing::info!(controller = %name, "waiting for caches to sync");
        if let Err(error) = wait_for_cache_sync(caches, &shutdown).await {
            informers.stop(&name).await;
            return match error {
                WaitForSyncError::Cancelled(_) => {
                    tracing::info!(controller = %name, "shut down before the caches synced");
                    Ok(())
                }
                source => Err(ControllerError::CacheSync {
                    controller: name,
                    source,
                }),
            };
        }

        tracing::info!(controller = %name, workers, "caches synced; starting workers");
        let worker = Arc::new(Worker {
            controller: name.clone(),
            queue: queue.clone(),
            reconciler,
            counters,
            server_wait: server_wait.clone(),
        });
        let mut worker_tasks = JoinSet::new();
        if let Some(wait) = server_wait {
            let (queue, shutdown) = (queue.clone(), shutdown.clone());
            worker_tasks.spawn(async move { wait.run(queue, shutdown).await });
        }
        for _ in 0..workers {
            let worker = Arc::clone(&worker);
            let shutdown = shutdown.clone();
            worker_tasks.spawn(async move { worker.run(shutdown).await });
        }

        shutdown.cancelled().await;
        tracing::info!(controller = %name, "shutting down; draining work in progress");
        queue.shut_down_with_drain().await;
        join_all(&name, "worker", worker_tasks).await;
        informers.stop(&name).await;
        tracing::info!(controller = %name, "stopped");
        Ok(())
    }
}

/// The running informers a controller owns. Dropped without [`stop`](Self::stop) (the `run`
/// future dropped half-way), it still cancels their token and aborts their tasks.
struct OwnedInformers {
    tasks: JoinSet<()>,
    stop_on_drop: DropGuard,
}

impl OwnedInformers {
    /// Spawns each informer's `run` future; `stop` is the token those futures watch.
    fn start(informers: Vec<BoxFuture<'static, ()>>, stop: CancellationToken) -> Self {
        let mut tasks = JoinSet::new();
        for informer in informers {
            tasks.spawn(informer);
        }
        OwnedInformers {
            tasks,
            stop_on_drop: stop.drop_guard(),
        }
    }

    /// Stops the informers and waits until they have ended.
    async fn stop(self, controller: &str) {
        self.stop_on_drop.disarm().cancel();
        join_all(controller, "informer", self.tasks).await;
    }
}

/// Waits for every task in `tasks`, logging any that did not end normally.
async fn join_all(controller: &str, what: &str, mut tasks: JoinSet<()>) {
    while let Some(result) = tasks.join_next().await {
        if let Err(error) = result {
            tracing::error!(controller, task = what, %error, "task ended abnormally");
        }
    }
}

impl<K, R> std::fmt::Debug for Controller<K, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Controller")
            .field("name", &self.name)
            .field("queue", &self.queue)
            .field("workers", &self.workers)
            .field("caches", &self.caches)
            .field("owned_informers", &self.informers.len())
            .finish_non_exhaustive()
    }
}
