//! What a reflector's owner hears of its failed requests: client-go's `WatchErrorHandler`.
//!
//! Contract: the handler is called with every failed list and every failed watch request,
//! after the reflector has logged it and before it backs off; the reflector retries on its own
//! whatever the handler does. It runs on the reflector's task, so it must return at once (set
//! a flag, wake a task). Why an owner wants it: a reflector cannot tell a resource that is gone
//! for good from one that is briefly unreachable, and would list it forever; its owner can look
//! again at what the server serves and stop it. When a CustomResourceDefinition is deleted, a
//! real API server deletes its objects (a DELETED event each on an open watch), ends the watch
//! cleanly, and answers every later list and watch of the resource with the plain-text
//! `404 page not found` of a group no API serves (exchanges 74–76).

use std::fmt;
use std::sync::Arc;

use kube_gc_client::Error;

/// A callback for a reflector's failed list and watch requests.
#[derive(Clone)]
pub struct WatchErrorHandler(Arc<dyn Fn(&Error) + Send + Sync>);

impl WatchErrorHandler {
    /// A handler calling `handler`.
    pub fn new(handler: impl Fn(&Error) + Send + Sync + 'static) -> WatchErrorHandler {
        WatchErrorHandler(Arc::new(handler))
    }

    /// Tells the handler of `error`.
    pub(super) fn failed(&self, error: &Error) {
        self.call(error);
    }

    /// Calls the handler with `error`: for a source that passes its reflector's failures on to
    /// several owners.
    pub fn call(&self, error: &Error) {
        (self.0)(error);
    }
}

impl fmt::Debug for WatchErrorHandler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("WatchErrorHandler")
    }
}
