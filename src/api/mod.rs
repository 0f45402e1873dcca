//! Kubernetes API types (issue #2): being written.
