//! The simulated API server (issue #2): being written.
//!
//! Self-contained building blocks, each usable and tested on its own:
//! - [`status`]: the `Status` bodies the real server answers errors with.
//! - [`selectors`]: label and field selectors, parsed and matched like the real server.
//! - [`patch`]: JSON merge patch, JSON patch and strategic merge patch on JSON values.
//! - [`journal`]: a bounded log of the requests the server received, for tests to assert on.
//! - [`faults`]: seeded, reproducible fault injection (errors, 429s, latency, watch cuts).
//! - [`tls`]: a throw-away CA and server certificate, and the rustls configuration using them.
//! - [`kubeconfig`]: kubeconfig files pointing a client at a simulated server.

pub mod faults;
pub mod journal;
pub mod kubeconfig;
pub mod patch;
pub mod selectors;
pub mod status;
pub mod tls;
