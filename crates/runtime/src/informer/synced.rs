//! [`InformerSynced`]: whether an informer's cache holds its initial list, and
//! [`wait_for_cache_sync`], which waits for several of them (client-go's `InformerSynced` and
//! `WaitForCacheSync`).
//!
//! Contract:
//! - An informer is synced once its first complete list is in the cache (and its notifications
//!   are queued to the handlers); it never becomes unsynced again.
//! - [`InformerSynced`] does not depend on the cached type, so a controller can wait for
//!   informers of different resources together.
//! - Waiting never polls: the informer publishes the change on a `watch` channel.
//! - Waiting ends early, with an error, when the cancellation token fires or when the informer
//!   is dropped before it synced.

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// Why [`wait_for_cache_sync`] (or [`InformerSynced::wait`]) returned before every cache synced.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WaitForSyncError {
    /// The cancellation token fired first.
    #[error("cancelled while waiting for the {0} cache to sync")]
    Cancelled(String),
    /// The informer was dropped before it synced, so it never will.
    #[error("the {0} informer was dropped before its cache synced")]
    InformerGone(String),
}

/// A handle on one informer's sync state; cheap to clone.
#[derive(Debug, Clone)]
pub struct InformerSynced {
    name: String,
    synced: watch::Receiver<bool>,
}

impl InformerSynced {
    /// A handle named `name` (used in errors and logs) following `synced`.
    pub(super) fn new(name: String, synced: watch::Receiver<bool>) -> Self {
        InformerSynced { name, synced }
    }

    /// The informer's name (its resource, unless set otherwise).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the initial list is in the cache.
    pub fn has_synced(&self) -> bool {
        *self.synced.borrow()
    }

    /// Waits until the informer has synced, or `cancel` fires.
    pub async fn wait(&self, cancel: &CancellationToken) -> Result<(), WaitForSyncError> {
        let mut synced = self.synced.clone();
        tokio::select! {
            // Biased towards the sync state so that an already-synced informer reports success
            // even if the token has fired too.
            biased;
            result = synced.wait_for(|synced| *synced) => result
                .map(drop)
                .map_err(|_| WaitForSyncError::InformerGone(self.name.clone())),
            () = cancel.cancelled() => Err(WaitForSyncError::Cancelled(self.name.clone())),
        }
    }
}

/// Waits until every informer in `informers` has synced, or `cancel` fires.
pub async fn wait_for_cache_sync(
    informers: impl IntoIterator<Item = InformerSynced>,
    cancel: &CancellationToken,
) -> Result<(), WaitForSyncError> {
    // One after the other: the total wait is the slowest informer's either way.
    for informer in informers {
        informer.wait(cancel).await?;
        tracing::debug!(informer = informer.name(), "cache synced");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(name: &str) -> (watch::Sender<bool>, InformerSynced) {
        let (sender, receiver) = watch::channel(false);
        (sender, InformerSynced::new(name.to_owned(), receiver))
    }

    #[tokio::test(start_paused = true)]
    async fn waits_for_every_informer() {
        let (jobs_tx, jobs) = pair("jobs");
        let (pods_tx, pods) = pair("pods");
        let cancel = CancellationToken::new();
        let wait = tokio::spawn({
            let cancel = cancel.clone();
            let (jobs, pods) = (jobs.clone(), pods.clone());
            async move { wait_for_cache_sync([jobs, pods], &cancel).await }
        });
        pods_tx.send_replace(true);
        tokio::task::yield_now().await;
        assert!(!wait.is_finished(), "jobs has not synced yet");
        jobs_tx.send_replace(true);
        assert_eq!(wait.await.unwrap(), Ok(()));
        assert!(jobs.has_synced() && pods.has_synced());
    }

    #[tokio::test(start_paused = true)]
    async fn cancellation_ends_the_wait() {
        let (_tx, jobs) = pair("jobs");
        let cancel = CancellationToken::new();
        let wait = tokio::spawn({
            let cancel = cancel.clone();
            async move { wait_for_cache_sync([jobs], &cancel).await }
        });
        tokio::task::yield_now().await;
        cancel.cancel();
        assert_eq!(
            wait.await.unwrap(),
            Err(WaitForSyncError::Cancelled("jobs".into()))
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_dropped_informer_never_syncs() {
        let (tx, jobs) = pair("jobs");
        drop(tx);
        let result = jobs.wait(&CancellationToken::new()).await;
        assert_eq!(result, Err(WaitForSyncError::InformerGone("jobs".into())));
    }

    #[tokio::test(start_paused = true)]
    async fn a_synced_informer_wins_over_a_fired_token() {
        let (tx, jobs) = pair("jobs");
        tx.send_replace(true);
        let cancel = CancellationToken::new();
        cancel.cancel();
        assert_eq!(jobs.wait(&cancel).await, Ok(()));
    }
}
