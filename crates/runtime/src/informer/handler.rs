//! [`EventHandler`]: what an informer tells a controller about changes, one object at a time
//! (client-go's `ResourceEventHandler`), and [`HandlerFns`], a handler made of plain closures.
//!
//! Contract:
//! - A handler learns of every change in the order the informer applied it to its cache: for one
//!   object, `on_add` comes before any `on_update`, and `on_delete` after them.
//! - Each handler runs on its own task with its own unbounded buffer (see `listener.rs`), so a
//!   slow handler delays only its own notifications — never the reflector, never other handlers.
//!   Methods are `async` so a handler may wait (say, for room in a bounded channel) without
//!   blocking a runtime thread; calls to one handler never overlap, hence `&mut self`.
//! - Objects are the cache's own `Arc`s: a handler holds no copy, and must not assume the cache
//!   still holds the same state by the time it runs (later notifications may be queued).

use std::future::Future;
use std::sync::Arc;

use crate::cache::Deleted;

/// Receives an informer's notifications. Every method has a default that ignores the event, so a
/// handler implements only what it cares about.
///
/// Implement the methods as `async fn`; their futures must be `Send` because each handler runs
/// on a spawned task.
pub trait EventHandler<T>: Send + 'static {
    /// `object` appeared: it was created, or it was in a list the cache had not seen it in, or
    /// it was already cached when this handler was registered.
    fn on_add(&mut self, object: Arc<T>) -> impl Future<Output = ()> + Send {
        let _ = object;
        std::future::ready(())
    }

    /// The object changed from `old` to `new`. A periodic resync delivers every cached object as
    /// an update with `old` and `new` the same `Arc`.
    fn on_update(&mut self, old: Arc<T>, new: Arc<T>) -> impl Future<Output = ()> + Send {
        let _ = (old, new);
        std::future::ready(())
    }

    /// The object was deleted. [`Deleted::Observed`] carries the final state from a watch event;
    /// [`Deleted::FinalStateUnknown`] means a relist found it gone and only its last cached
    /// state is known (client-go's `DeletedFinalStateUnknown`).
    fn on_delete(&mut self, deleted: Deleted<T>) -> impl Future<Output = ()> + Send {
        let _ = deleted;
        std::future::ready(())
    }
}

type AddFn<T> = Box<dyn FnMut(Arc<T>) + Send>;
type UpdateFn<T> = Box<dyn FnMut(Arc<T>, Arc<T>) + Send>;
type DeleteFn<T> = Box<dyn FnMut(Deleted<T>) + Send>;

/// An [`EventHandler`] built from synchronous closures, for the common handler that only turns
/// an event into a workqueue key (client-go's `ResourceEventHandlerFuncs`).
///
/// ```
/// use kube_gc_runtime::cache::Cacheable;
/// use kube_gc_runtime::informer::HandlerFns;
/// use kube_gc_api::Job;
///
/// # fn demo(queue: kube_gc_runtime::workqueue::WorkQueue<kube_gc_runtime::cache::ObjectKey>) {
/// let on_add = queue.clone();
/// let handler = HandlerFns::<Job>::new()
///     .on_add(move |job| on_add.add(job.cache_key()))
///     .on_update(move |_old, new| queue.add(new.cache_key()));
/// # let _ = handler;
/// # }
/// ```
pub struct HandlerFns<T> {
    add: Option<AddFn<T>>,
    update: Option<UpdateFn<T>>,
    delete: Option<DeleteFn<T>>,
}

impl<T> HandlerFns<T> {
    /// A handler that ignores every event until closures are set.
    pub fn new() -> Self {
        HandlerFns {
            add: None,
            update: None,
            delete: None,
        }
    }

    /// Calls `f` for every add.
    pub fn on_add(mut self, f: impl FnMut(Arc<T>) + Send + 'static) -> Self {
        self.add = Some(Box::new(f));
        self
    }

    /// Calls `f(old, new)` for every update.
    pub fn on_update(mut self, f: impl FnMut(Arc<T>, Arc<T>) + Send + 'static) -> Self {
        self.update = Some(Box::new(f));
        self
    }

    /// Calls `f` for every delete.
    pub fn on_delete(mut self, f: impl FnMut(Deleted<T>) + Send + 'static) -> Self {
        self.delete = Some(Box::new(f));
        self
    }
}

impl<T> Default for HandlerFns<T> {
    fn default() -> Self {
        HandlerFns::new()
    }
}

impl<T: Send + Sync + 'static> EventHandler<T> for HandlerFns<T> {
    async fn on_add(&mut self, object: Arc<T>) {
        if let Some(f) = &mut self.add {
            f(object);
        }
    }

    async fn on_update(&mut self, old: Arc<T>, new: Arc<T>) {
        if let Some(f) = &mut self.update {
            f(old, new);
        }
    }

    async fn on_delete(&mut self, deleted: Deleted<T>) {
        if let Some(f) = &mut self.delete {
            f(deleted);
        }
    }
}

/// One notification waiting in a handler's buffer.
pub(super) enum Notification<T> {
    Added(Arc<T>),
    Updated { old: Arc<T>, new: Arc<T> },
    Deleted(Deleted<T>),
}

// Cloning copies `Arc`s: every handler's buffer shares the cache's objects.
impl<T> Clone for Notification<T> {
    fn clone(&self) -> Self {
        match self {
            Notification::Added(object) => Notification::Added(Arc::clone(object)),
            Notification::Updated { old, new } => Notification::Updated {
                old: Arc::clone(old),
                new: Arc::clone(new),
            },
            Notification::Deleted(deleted) => Notification::Deleted(deleted.clone()),
        }
    }
}

impl<T> Notification<T> {
    /// Hands the notification to the matching method of `handler`.
    pub(super) async fn deliver_to<H: EventHandler<T>>(self, handler: &mut H) {
        match self {
            Notification::Added(object) => handler.on_add(object).await,
            Notification::Updated { old, new } => handler.on_update(old, new).await,
            Notification::Deleted(deleted) => handler.on_delete(deleted).await,
        }
    }

    /// The event's name, for logs.
    pub(super) fn kind(&self) -> &'static str {
        match self {
            Notification::Added(_) => "add",
            Notification::Updated { .. } => "update",
            Notification::Deleted(_) => "delete",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A handler's backlog costs this much per notification (plus the channel's bookkeeping),
    /// whatever the size of the objects: they are shared with the cache.
    #[test]
    fn a_buffered_notification_is_a_few_words() {
        assert_eq!(std::mem::size_of::<Notification<[u8; 4096]>>(), 40);
    }
}
