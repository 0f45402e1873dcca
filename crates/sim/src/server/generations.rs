//! [`Generations`]: which connections belong to the server's current *generation*, so that a
//! network cut or a restart drops every connection accepted before it, and whether the server
//! listens at all. Shared by the accept loop, which ties each connection to a generation, and
//! the in-process API and the handlers, which cut them.

use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

/// The cancellation token of the current connection generation, and whether the server listens.
#[derive(Debug)]
pub struct Generations {
    pub(super) root: CancellationToken,
    current: Mutex<CancellationToken>,
    /// Whether the server should listen.
    pub(super) listening: tokio::sync::watch::Sender<bool>,
    /// Whether the accept loop holds a listening socket now (or why it could not bind one).
    pub(super) bound: tokio::sync::watch::Sender<Result<bool, String>>,
}

impl Generations {
    /// Generations under the server's root token (cancelling it ends every generation).
    pub fn new(root: CancellationToken) -> Generations {
        let current = Mutex::new(root.child_token());
        Generations {
            root,
            current,
            listening: tokio::sync::watch::Sender::new(true),
            bound: tokio::sync::watch::Sender::new(Ok(true)),
        }
    }

    /// Closes the listening socket (`false`: connections are refused) or binds it again, and
    /// waits until the accept loop has; the error if it could not bind.
    pub async fn set_listening(&self, listening: bool) -> Result<(), String> {
        let mut bound = self.bound.subscribe();
        self.listening.send_replace(listening);
        let done = bound
            .wait_for(|now| !matches!(now, Ok(bound) if *bound != listening))
            .await
            .map(|now| now.clone());
        match done {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(e),
            Err(_) => Err("the simulated API server has stopped".to_owned()),
        }
    }

    /// Whether the server listens.
    pub fn is_listening(&self) -> bool {
        matches!(*self.bound.borrow(), Ok(true))
    }

    /// The token of the generation connections are accepted into now.
    pub(super) fn current(&self) -> CancellationToken {
        self.current.lock().clone()
    }

    /// Stops the accept loop and every connection for good.
    pub fn shutdown(&self) {
        self.root.cancel();
    }

    /// Drops every connection accepted so far; later connections are unaffected.
    pub fn cut(&self) {
        let fresh = self.root.child_token();
        let old = std::mem::replace(&mut *self.current.lock(), fresh);
        old.cancel();
    }
}
