//! What a reflector hands to the component that keeps its results: the event type and the sink
//! trait.
//!
//! This is the seam between the reflector (which talks to the API server) and the informer (which
//! keeps the cache and runs handlers). The reflector only ever *reports*: it never touches a
//! cache itself, so it can be tested with a sink that records events, and the informer can be
//! tested by feeding it events by hand.

/// What a reflector tells its sink, in the order it learned it.
#[derive(Debug)]
pub enum ReflectorEvent<T> {
    /// A complete list (the initial one, or a relist after a 410 / failed watch): the full set of
    /// objects at `resource_version`. The sink replaces its contents with it.
    Replaced {
        objects: Vec<T>,
        resource_version: String,
    },
    /// A watch ADDED event.
    Added(T),
    /// A watch MODIFIED event.
    Modified(T),
    /// A watch DELETED event (the object's final state).
    Deleted(T),
    /// A BOOKMARK: the resourceVersion advanced, no object changed.
    Bookmark { resource_version: String },
}

/// Where a reflector delivers events. `apply` must not block for long: it runs on the
/// reflector's task between reads of the watch stream.
pub trait ReflectorSink<T>: Send + Sync + 'static {
    /// Takes one event. Events arrive one at a time, in the order the reflector learned them.
    fn apply(&self, event: ReflectorEvent<T>);
}
