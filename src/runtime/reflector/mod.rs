//! The reflector: lists a resource, then watches it, and reports what it learns to a sink.
//!
//! The event type and the sink trait are in [`event`]; the list-then-watch loop is being built.

pub mod event;

pub use event::{ReflectorEvent, ReflectorSink};
