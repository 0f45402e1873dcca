//! [`Settled`]: the uids of objects a controller has finished with (force-deleted, released)
//! whose removal its cache has not seen yet.
//!
//! Why: an object's last events (the write that finished it, the deletion's mark) reach the
//! handlers after the worker is done with it, and queue it again; the cache still holds it
//! for a moment — or for good, when another finalizer holds it. Without this a worker would
//! judge it again and send a request that can only answer 404 or change nothing.
//!
//! Contract: [`Settled::insert`] after the write succeeded, [`Settled::forget`] from the
//! handler of the object's deletion, [`Settled::contains`] before judging. Only uids are kept,
//! so a new object under the same name is never mistaken for the settled one.

use std::collections::HashSet;

use parking_lot::Mutex;

/// The uids a controller is done with, until their deletion is seen.
#[derive(Debug, Default)]
pub struct Settled {
    uids: Mutex<HashSet<String>>,
}

impl Settled {
    /// The object with `uid` needs nothing more.
    pub fn insert(&self, uid: &str) {
        self.uids.lock().insert(uid.to_owned());
    }

    /// Whether the object with `uid` needs nothing more.
    pub fn contains(&self, uid: &str) -> bool {
        self.uids.lock().contains(uid)
    }

    /// The object with `uid` left the cache.
    pub fn forget(&self, uid: &str) {
        self.uids.lock().remove(uid);
    }

    /// How many uids are held (objects a finalizer keeps, or whose deletion is on its way).
    pub fn len(&self) -> usize {
        self.uids.lock().len()
    }

    /// Whether none is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_uid_is_settled_until_forgotten() {
        let settled = Settled::default();
        settled.insert("u-1");
        assert!(settled.contains("u-1") && !settled.contains("u-2"));
        settled.forget("u-1");
        assert!(settled.is_empty());
    }
}
