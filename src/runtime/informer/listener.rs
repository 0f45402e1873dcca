//! One registered handler: its buffer of notifications and the task that drains it
//! (client-go's `processorListener`).
//!
//! Contract:
//! - [`Listener::send`] never blocks and never fails while the task is alive: the buffer is an
//!   unbounded channel, so the informer can dispatch while holding its lock, and a slow handler
//!   makes only its own backlog grow. A buffered notification is a few `Arc`s shared with the
//!   cache, so a backlog costs words per notification, not copies of objects.
//! - The task delivers notifications one at a time, in buffer order, awaiting each handler call
//!   before the next — which is what keeps one object's events in order.
//! - The task stops at the first of: the stop token cancelled (checked between notifications;
//!   the backlog is dropped, as client-go drops it), or every [`Listener`] dropped and the
//!   backlog delivered.
//! - A panic in the handler is caught and logged; the notification is lost, the handler keeps
//!   receiving the next ones. (Unlike a reconcile, a notification cannot be retried: the
//!   informer does not keep it.)

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use futures_util::FutureExt;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::handler::{EventHandler, Notification};

/// The informer's side of one handler: where its notifications go.
pub(super) struct Listener<T> {
    buffer: mpsc::UnboundedSender<Notification<T>>,
    pending: Arc<AtomicUsize>,
}

impl<T> Listener<T> {
    /// Queues `notification` for the handler. Returns `false` if the handler's task has ended,
    /// so the informer can forget this listener.
    pub(super) fn send(&self, notification: Notification<T>) -> bool {
        // Counted before sending, so the task can never decrement below zero.
        self.pending.fetch_add(1, Ordering::Relaxed);
        let sent = self.buffer.send(notification).is_ok();
        if !sent {
            self.pending.fetch_sub(1, Ordering::Relaxed);
        }
        sent
    }
}

/// What the registrant keeps of a handler: how far behind it is.
#[derive(Debug, Clone)]
pub struct HandlerRegistration {
    pending: Arc<AtomicUsize>,
}

impl HandlerRegistration {
    /// Notifications queued for the handler and not yet fully delivered (the one it is
    /// handling now included). A number that keeps growing means the handler cannot keep up.
    pub fn pending(&self) -> usize {
        self.pending.load(Ordering::Relaxed)
    }
}

/// Creates the buffer for `handler` and spawns the task that drains it until `stop`.
pub(super) fn spawn_listener<T, H>(
    handler: H,
    stop: CancellationToken,
) -> (Listener<T>, HandlerRegistration, JoinHandle<()>)
where
    T: Send + Sync + 'static,
    H: EventHandler<T>,
{
    let (buffer, notifications) = mpsc::unbounded_channel();
    let pending = Arc::new(AtomicUsize::new(0));
    let task = tokio::spawn(drain(handler, notifications, Arc::clone(&pending), stop));
    let listener = Listener {
        buffer,
        pending: Arc::clone(&pending),
    };
    (listener, HandlerRegistration { pending }, task)
}

/// The listener task: hands each buffered notification to the handler, in order.
async fn drain<T, H>(
    mut handler: H,
    mut notifications: mpsc::UnboundedReceiver<Notification<T>>,
    pending: Arc<AtomicUsize>,
    stop: CancellationToken,
) where
    T: Send + Sync + 'static,
    H: EventHandler<T>,
{
    loop {
        let notification = tokio::select! {
            // Stop first: after shut-down, a backlog is work nobody will act on.
            biased;
            () = stop.cancelled() => return,
            next = notifications.recv() => match next {
                Some(notification) => notification,
                None => return,
            },
        };
        let kind = notification.kind();
        let delivered = AssertUnwindSafe(notification.deliver_to(&mut handler))
            .catch_unwind()
            .await;
        pending.fetch_sub(1, Ordering::Relaxed);
        if delivered.is_err() {
            tracing::error!(
                handler = std::any::type_name::<H>(),
                event = kind,
                "event handler panicked; the notification is dropped",
            );
        }
    }
}
