//! The garbage-collection controllers.
//!
//! Not built yet: the TTL-after-finished controller for batch/v1 Jobs and Volcano Jobs (issue #6)
//! and the ownerReference garbage collector (issue #7). They will run on [`crate::runtime`].
