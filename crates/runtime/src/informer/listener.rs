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
//! - The informer marks the point in the buffer where the handler has been sent the whole
//!   initial list ([`Listener::mark_synced`]); when the task gets there,
//!   [`HandlerRegistration::synced`] turns true (client-go's registration `HasSynced`): the
//!   handler has *handled* every object of the initial list, not merely been sent it.
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
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::handler::{EventHandler, Notification};
use super::synced::InformerSynced;

/// What travels through a handler's buffer.
enum Message<T> {
    /// A notification for the handler.
    Notify(Notification<T>),
    /// Everything before this was the initial list.
    Synced,
}

/// The informer's side of one handler: where its notifications go.
pub(super) struct Listener<T> {
    buffer: mpsc::UnboundedSender<Message<T>>,
    pending: Arc<AtomicUsize>,
}

impl<T> Listener<T> {
    /// Queues `notification` for the handler. Returns `false` if the handler's task has ended,
    /// so the informer can forget this listener.
    pub(super) fn send(&self, notification: Notification<T>) -> bool {
        // Counted before sending, so the task can never decrement below zero.
        self.pending.fetch_add(1, Ordering::Relaxed);
        let sent = self.buffer.send(Message::Notify(notification)).is_ok();
        if !sent {
            self.pending.fetch_sub(1, Ordering::Relaxed);
        }
        sent
    }

    /// Marks the end of the initial list in the handler's buffer.
    pub(super) fn mark_synced(&self) {
        // A failure means the task has ended; `send` reports that at the next event.
        let _ = self.buffer.send(Message::Synced);
    }
}

/// What the registrant keeps of a handler: whether it has handled the initial list, and how far
/// behind it is.
#[derive(Debug, Clone)]
pub struct HandlerRegistration {
    pending: Arc<AtomicUsize>,
    synced: InformerSynced,
}

impl HandlerRegistration {
    /// A handle that turns synced once the handler has handled every object of the informer's
    /// initial list (a handler registered later: every object cached when it was registered).
    /// Waiting on it fails with `InformerGone` if the handler's task stops first.
    pub fn synced(&self) -> InformerSynced {
        self.synced.clone()
    }

    /// Notifications queued for the handler and not yet fully delivered (the one it is
    /// handling now included). A number that keeps growing means the handler cannot keep up.
    pub fn pending(&self) -> usize {
        self.pending.load(Ordering::Relaxed)
    }
}

/// Creates the buffer for `handler` and spawns the task that drains it until `stop`. `name`
/// names the handler in sync errors.
pub(super) fn spawn_listener<T, H>(
    name: String,
    handler: H,
    stop: CancellationToken,
) -> (Listener<T>, HandlerRegistration, JoinHandle<()>)
where
    T: Send + Sync + 'static,
    H: EventHandler<T>,
{
    let (buffer, messages) = mpsc::unbounded_channel();
    let pending = Arc::new(AtomicUsize::new(0));
    let (synced_tx, synced_rx) = watch::channel(false);
    let task = tokio::spawn(drain(
        handler,
        messages,
        Arc::clone(&pending),
        synced_tx,
        stop,
    ));
    let listener = Listener {
        buffer,
        pending: Arc::clone(&pending),
    };
    let registration = HandlerRegistration {
        pending,
        synced: InformerSynced::new(name, synced_rx),
    };
    (listener, registration, task)
}

/// The listener task: hands each buffered notification to the handler, in order.
async fn drain<T, H>(
    mut handler: H,
    mut messages: mpsc::UnboundedReceiver<Message<T>>,
    pending: Arc<AtomicUsize>,
    synced: watch::Sender<bool>,
    stop: CancellationToken,
) where
    T: Send + Sync + 'static,
    H: EventHandler<T>,
{
    loop {
        let message = tokio::select! {
            // Stop first: after shut-down, a backlog is work nobody will act on.
            biased;
            () = stop.cancelled() => return,
            next = messages.recv() => match next {
                Some(message) => message,
                None => return,
            },
        };
        let notification = match message {
            Message::Notify(notification) => notification,
            Message::Synced => {
                synced.send_replace(true);
                continue;
            }
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
