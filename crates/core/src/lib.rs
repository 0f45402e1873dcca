//! kube-gc's foundation: what the product and its simulated API server both stand on, and
//! nothing of either.
//!
//! - [`clock`]: injectable wall-clock time — the system clock, a manual one, and one that
//!   follows tokio's (pausable) clock.
//! - [`duration`]: Go-style duration strings (`1m30s`), as kube-controller-manager's flags take
//!   them.
//! - [`error_chain`]: an error and its causes as one line.
//! - [`labels`]: label selectors, parsed and matched as apimachinery does — the one parser and
//!   matcher of the workspace.
//! - [`field_errors`]: field errors worded as apimachinery words them (a 422's causes, a
//!   selector's refusals).

pub mod clock;
pub mod duration;
pub mod error_chain;
pub mod field_errors;
pub mod labels;
