//! The workqueue (issue #3): not built yet.
