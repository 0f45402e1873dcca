//! The namespace controller's last step on its own, for tests outside this crate (the
//! `test-util` feature; no shipped build enables it).
//!
//! Contract: [`finalize_confirmed`] is what a pass does once it has confirmed its copy is the
//! namespace being deleted and found it empty — the finalize, with its guard and its fresh read
//! on a 409 — and nothing before it, so that a test can change the server between the
//! confirmation and the finalize, a window no whole pass lets it reach. It calls the pass's
//! own code.

use std::collections::HashMap;
use std::sync::Arc;

use super::{NamespaceError, Pass};
use crate::namespace::decide::Progress;
use crate::namespace::shared::{CachedNamespace, Shared};

/// Finalizes `judged` as a pass that confirmed it and proved it empty would.
pub async fn finalize_confirmed(
    shared: &Shared,
    judged: Arc<CachedNamespace>,
) -> Result<(), NamespaceError> {
    let mut pass = Pass {
        progress: Progress::default(),
        shared,
        subject: judged.subject(),
        judged,
        discovery: shared.latest_discovery(),
        failures: HashMap::new(),
        listed: HashMap::new(),
        blocked: Vec::new(),
        confirmed: true,
    };
    let assessment = pass.assess();
    pass.finalize(&assessment).await
}
