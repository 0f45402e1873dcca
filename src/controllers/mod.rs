//! The garbage-collection controllers.
//!
//! - [`garbagecollector`]: the ownerReference garbage collector (issue #7): a dependency graph fed
//!   by metadata-only monitors, Background / Foreground / Orphan cascades.
//!
//! Not built yet: the TTL-after-finished controller for batch/v1 Jobs and Volcano Jobs (issue #6).
//! They run on [`crate::runtime`].

pub mod garbagecollector;
