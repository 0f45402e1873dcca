//! The garbage-collection controllers, built on [`crate::runtime`].
//!
//! - [`ttl`]: TTL-after-finished for batch/v1 Jobs and Volcano Jobs (issue #6).
//!
//! The ownerReference garbage collector (issue #7) is built separately.

pub mod ttl;
