//! The simulated API server (issue #2): being written.
//!
//! Self-contained building blocks, each usable and tested on its own:
//! - [`status`]: the `Status` bodies the real server answers errors with.
//! - [`selectors`]: label and field selectors, parsed and matched like the real server.

pub mod selectors;
pub mod status;
