//! The simulated API server (issue #2): being written.
