//! The simulated API server seen through kube-gc's own client: [`Connect::client_config`]
//! writes a kubeconfig for the server and loads it back as `kube-gc --kubeconfig <path>` would.
//!
//! Contract: the configuration returned is the one a user handing kube-gc that file gets (an
//! empty environment, the real loading path: CA, token, context), so a test or the demo that
//! connects this way goes through the same code as `kube-gc run`. It lives here, above both
//! crates, because the simulated server depends on nothing of the client.

use std::path::Path;

use crate::client::config::{ClientConfig, ConfigError, Environment, LoadOptions};
use crate::sim::kubeconfig::{KubeconfigError, KubeconfigSpec};
use crate::sim::SimServer;

/// Why a client configuration for a simulated server could not be had.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The kubeconfig could not be rendered or written.
    #[error(transparent)]
    Write(#[from] KubeconfigError),
    /// The written file did not load.
    #[error(transparent)]
    Load(#[from] ConfigError),
}

/// A client configuration for what a kubeconfig points at.
pub trait Connect {
    /// Writes the kubeconfig to `path` (mode 0600) and loads it as a user's `--kubeconfig`,
    /// with an empty environment.
    ///
    /// # Errors
    ///
    /// The file could not be written, or did not load.
    fn client_config(&self, path: &Path) -> Result<ClientConfig, ConnectError>;
}

impl Connect for KubeconfigSpec {
    fn client_config(&self, path: &Path) -> Result<ClientConfig, ConnectError> {
        self.write_to(path)?;
        Ok(ClientConfig::load(
            &LoadOptions::file(path),
            &Environment::empty(),
        )?)
    }
}

impl Connect for SimServer {
    fn client_config(&self, path: &Path) -> Result<ClientConfig, ConnectError> {
        self.kubeconfig_spec().client_config(path)
    }
}
