//! The simulated API server (issue #2): being written.
//!
//! Self-contained building blocks, each usable and tested on its own:
//! - [`status`]: the `Status` bodies the real server answers errors with.
//! - [`patch`]: JSON merge patch, JSON patch and strategic merge patch on JSON values.
//! - [`selectors`]: label and field selectors, parsed and matched like the real server.

pub mod patch;
pub mod selectors;
pub mod status;
