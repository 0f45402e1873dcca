//! [`ControllerSet`]: the named controllers a process runs together, started at once, stopped
//! together, and [`Readiness`], whether all of them are ready to work.
//!
//! Contract:
//! - A [`ManagedController`] is a name, what it needs before it is useful (informer caches
//!   synced, or a readiness flag of its own, as the garbage collector's), and a run function
//!   taking a cancellation token. Anything with that shape can be plugged in — the TTL
//!   controllers, the ownerReference garbage collector — without the set knowing its type.
//! - [`ControllerSet::run`] runs every controller on its own task until the token is cancelled,
//!   then waits until each has drained and stopped. If one controller fails (or panics) while
//!   the others run, the others are stopped too and the failure is returned: a manager with a
//!   dead controller must not look healthy.
//! - [`Readiness`] can be taken before `run` and read from anywhere (a health endpoint, leader
//!   election, a progress display); it never blocks.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use kube_gc_controllers::ProgressProbe;
use kube_gc_runtime::informer::{wait_for_cache_sync, InformerSynced, WaitForSyncError};

/// Any error a controller's run can end with.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

type RunFn = Box<dyn FnOnce(CancellationToken) -> BoxFuture<'static, Result<(), BoxError>> + Send>;

/// One controller as the manager sees it.
pub struct ManagedController {
    name: String,
    caches: Vec<InformerSynced>,
    flags: Vec<ReadyFlag>,
    run: RunFn,
    progress: Option<ProgressProbe>,
}

impl ManagedController {
    /// A controller called `name`, ready once `caches` have synced, run by `run` until the
    /// token it is given is cancelled.
    pub fn new<F, Fut, E>(name: impl Into<String>, caches: Vec<InformerSynced>, run: F) -> Self
    where
        F: FnOnce(CancellationToken) -> Fut + Send + 'static,
        Fut: Future<Output = Result<(), E>> + Send + 'static,
        E: Into<BoxError>,
    {
        ManagedController {
            name: name.into(),
            caches,
            run: Box::new(move |token| {
                let running = run(token);
                Box::pin(async move { running.await.map_err(Into::into) })
            }),
            progress: None,
            flags: Vec::new(),
        }
    }

    /// Also waits for `ready` to turn true before the controller counts as ready — for a
    /// controller whose readiness is more than informer caches (the garbage collector is ready
    /// once its workers run). `name` appears in errors.
    pub fn with_ready_flag(
        mut self,
        name: impl Into<String>,
        ready: watch::Receiver<bool>,
    ) -> Self {
        self.flags.push(ReadyFlag {
            name: name.into(),
            ready,
        });
        self
    }

    /// Lets displays read the controller's progress through `probe`.
    pub fn with_progress(mut self, probe: ProgressProbe) -> Self {
        self.progress = Some(probe);
        self
    }

    /// The controller's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl std::fmt::Debug for ManagedController {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ManagedController")
            .field("name", &self.name)
            .field("caches", &self.caches)
            .finish_non_exhaustive()
    }
}

/// A controller's own "ready" flag, beside its caches.
#[derive(Debug, Clone)]
struct ReadyFlag {
    name: String,
    ready: watch::Receiver<bool>,
}

/// Whether every controller of a set is ready (its caches synced, its flags true); cheap to
/// clone.
#[derive(Debug, Clone, Default)]
pub struct Readiness {
    caches: Vec<InformerSynced>,
    flags: Vec<ReadyFlag>,
}

impl Readiness {
    /// Whether every cache has synced and every flag is true (true for an empty set).
    pub fn is_ready(&self) -> bool {
        self.caches.iter().all(InformerSynced::has_synced)
            && self.flags.iter().all(|flag| *flag.ready.borrow())
    }

    /// Waits until every cache has synced and every flag is true, or `cancel` fires.
    pub async fn wait(&self, cancel: &CancellationToken) -> Result<(), WaitForSyncError> {
        wait_for_cache_sync(self.caches.iter().cloned(), cancel).await?;
        for flag in &self.flags {
            let mut ready = flag.ready.clone();
            tokio::select! {
                biased;
                result = ready.wait_for(|ready| *ready) => {
                    result.map_err(|_| WaitForSyncError::InformerGone(flag.name.clone()))?;
                }
                () = cancel.cancelled() => return Err(WaitForSyncError::Cancelled(flag.name.clone())),
            }
        }
        Ok(())
    }
}

/// A controller failed while the manager ran.
#[derive(Debug, thiserror::Error)]
#[error("controller {controller} failed: {source}")]
pub struct ControllerFailed {
    /// Its name.
    pub controller: String,
    /// What it ended with.
    #[source]
    pub source: BoxError,
}

/// The controllers a manager runs, and the services that serve them all.
#[derive(Default)]
pub struct ControllerSet {
    controllers: Vec<ManagedController>,
    services: Vec<(String, RunService)>,
}

type RunService = Box<dyn FnOnce(CancellationToken) -> BoxFuture<'static, ()> + Send>;

impl std::fmt::Debug for ControllerSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let services: Vec<&str> = self
            .services
            .iter()
            .map(|(name, _)| name.as_str())
            .collect();
        f.debug_struct("ControllerSet")
            .field("controllers", &self.controllers)
            .field("services", &services)
            .finish()
    }
}

impl ControllerSet {
    /// An empty set.
    pub fn new() -> Self {
        ControllerSet::default()
    }

    /// Adds a controller.
    pub fn push(&mut self, controller: ManagedController) {
        self.controllers.push(controller);
    }

    /// Adds a service called `name`: a task that serves every controller (the watch on the API
    /// server's availability), run from the start of [`run`](Self::run) until its controllers
    /// have stopped, by `run` until the token it is given is cancelled.
    pub fn add_service<F, Fut>(&mut self, name: impl Into<String>, run: F)
    where
        F: FnOnce(CancellationToken) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let run: RunService = Box::new(move |token| Box::pin(run(token)));
        self.services.push((name.into(), run));
    }

    /// The controllers' names, in the order they were added.
    pub fn names(&self) -> Vec<&str> {
        self.controllers
            .iter()
            .map(ManagedController::name)
            .collect()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.controllers.is_empty()
    }

    /// The set's readiness: every controller's caches synced and flags true.
    pub fn readiness(&self) -> Readiness {
        Readiness {
            caches: self
                .controllers
                .iter()
                .flat_map(|c| c.caches.iter().cloned())
                .collect(),
            flags: self
                .controllers
                .iter()
                .flat_map(|c| c.flags.iter().cloned())
                .collect(),
        }
    }

    /// The progress probes of the controllers that have one, with their names.
    pub fn progress_probes(&self) -> Vec<(String, ProgressProbe)> {
        self.controllers
            .iter()
            .filter_map(|c| Some((c.name.clone(), Arc::clone(c.progress.as_ref()?))))
            .collect()
    }

    /// Runs every controller until `shutdown` is cancelled, then waits for all to stop.
    ///
    /// # Errors
    ///
    /// The first controller that failed; the others were stopped.
    pub async fn run(self, shutdown: CancellationToken) -> Result<(), ControllerFailed> {
        let stop_services = CancellationToken::new();
        // Should this future be dropped half-way, the services stop with it.
        let _stop_services_on_drop = stop_services.clone().drop_guard();
        let mut services = JoinSet::new();
        for (_, service) in self.services {
            services.spawn(service(stop_services.clone()));
        }
        let stop = shutdown.child_token();
        let mut tasks = JoinSet::new();
        let mut names = HashMap::new();
        for controller in self.controllers {
            let running = (controller.run)(stop.clone());
            tracing::info!(controller = %controller.name, "starting controller");
            let task = tasks.spawn(running);
            names.insert(task.id(), controller.name);
        }
        let mut first_failure = None;
        while let Some(joined) = tasks.join_next_with_id().await {
            let (id, source) = match joined {
                Ok((_, Ok(()))) => continue,
                Ok((id, Err(source))) => (id, source),
                Err(panic) => (panic.id(), Box::new(panic) as BoxError),
            };
            let controller = names.remove(&id).unwrap_or_default();
            tracing::error!(%controller, error = %source, "controller failed; stopping the others");
            stop.cancel();
            first_failure.get_or_insert(ControllerFailed { controller, source });
        }
        stop_services.cancel();
        while let Some(joined) = services.join_next().await {
            if let Err(error) = joined {
                tracing::error!(%error, "a service of the controllers ended abnormally");
            }
        }
        match first_failure {
            Some(failure) => Err(failure),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn runs_until_cancelled_and_stops_everything_when_one_fails() {
        let mut set = ControllerSet::new();
        set.push(ManagedController::new(
            "waits",
            Vec::new(),
            |token: CancellationToken| async move {
                token.cancelled().await;
                Ok::<(), BoxError>(())
            },
        ));
        assert_eq!(set.names(), ["waits"]);
        assert!(set.readiness().is_ready());
        let shutdown = CancellationToken::new();
        let running = tokio::spawn(set.run(shutdown.clone()));
        tokio::task::yield_now().await;
        shutdown.cancel();
        assert!(running.await.unwrap().is_ok());

        let mut set = ControllerSet::new();
        set.push(ManagedController::new(
            "waits",
            Vec::new(),
            |token: CancellationToken| async move {
                token.cancelled().await;
                Ok::<(), BoxError>(())
            },
        ));
        set.push(ManagedController::new(
            "fails",
            Vec::new(),
            |_token| async move { Err::<(), BoxError>("broken".into()) },
        ));
        let failure = set.run(CancellationToken::new()).await.unwrap_err();
        assert_eq!(failure.controller, "fails");
        assert_eq!(failure.source.to_string(), "broken");
    }

    #[tokio::test(start_paused = true)]
    async fn a_ready_flag_joins_the_sets_readiness() {
        let (ready, flag) = watch::channel(false);
        let mut set = ControllerSet::new();
        set.push(
            ManagedController::new("flagged", Vec::new(), |_token| async move {
                Ok::<(), BoxError>(())
            })
            .with_ready_flag("flagged", flag),
        );
        let readiness = set.readiness();
        assert!(!readiness.is_ready());
        let cancel = CancellationToken::new();
        cancel.cancel();
        assert_eq!(
            readiness.wait(&cancel).await,
            Err(WaitForSyncError::Cancelled("flagged".into()))
        );
        ready.send_replace(true);
        assert!(readiness.is_ready());
        assert_eq!(readiness.wait(&CancellationToken::new()).await, Ok(()));
    }
}
