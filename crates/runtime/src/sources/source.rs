//! [`Source`]: one resource's list and watch, for every subscriber of it.
//!
//! Contract:
//! - The source's task runs one reflector at a time over the subscribers present when it
//!   started: whole objects if any of them wants them, metadata only otherwise.
//! - A subscriber joining stops that reflector (if one runs) and the task starts the next
//!   over everyone: a fresh list, which existing subscribers take as a relist. Joins that come
//!   together cost one restart, not one each.
//! - A subscriber leaving is dropped from the running reflector's fan-out at once; the
//!   reflector goes on for the others. When the last leaves, the task ends.
//! - The task stops when the source's token is cancelled, whatever it waits for.

use std::sync::Arc;

use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use super::fanout::{FanOut, Slot, Tee};
use super::gate::Gate;
use super::SourceKey;
use crate::reflector::{
    Decoded, Form, Reflector, ReflectorConfig, ReflectorMetrics, WatchErrorHandler,
};
use kube_gc_client::{Api, Client};

/// The subscribers one reflector serves, fixed for its run.
type RunSlots = Arc<[Arc<dyn Slot>]>;

/// What a source lists and watches with.
pub(super) struct SourceContext {
    pub(super) objects_client: Client,
    pub(super) metadata_client: Client,
    pub(super) config: ReflectorConfig,
    pub(super) metrics: Arc<ReflectorMetrics>,
    pub(super) gate: Gate,
}

/// One resource's subscribers, and the reflector serving them.
pub(super) struct Source {
    key: SourceKey,
    members: Mutex<Members>,
    stop: CancellationToken,
}

#[derive(Default)]
struct Members {
    slots: Vec<Arc<dyn Slot>>,
    /// Stops the reflector now running; `None` while none runs (or one was already told to
    /// stop), so joins arriving together stop it once.
    running: Option<CancellationToken>,
}

impl Source {
    pub(super) fn new(key: SourceKey) -> Arc<Source> {
        Arc::new(Source {
            key,
            members: Mutex::new(Members::default()),
            stop: CancellationToken::new(),
        })
    }

    /// Adds a subscriber; a running reflector restarts to serve it too.
    pub(super) fn join(&self, slot: Arc<dyn Slot>) {
        let mut members = self.members.lock();
        members.slots.push(slot);
        if let Some(running) = members.running.take() {
            running.cancel();
        }
    }

    /// Removes a subscriber; whether none is left.
    pub(super) fn leave(&self, slot: &Arc<dyn Slot>) -> bool {
        slot.leave();
        let mut members = self.members.lock();
        members.slots.retain(|member| !Arc::ptr_eq(member, slot));
        members.slots.is_empty()
    }

    /// Ends the task.
    pub(super) fn stop(&self) {
        self.stop.cancel();
    }

    /// Serves the subscribers until there are none or the source is stopped.
    pub(super) async fn run(self: Arc<Self>, context: SourceContext) {
        let described = self.key.to_string();
        let mut runs = 0_u64;
        loop {
            tokio::select! {
                biased;
                () = self.stop.cancelled() => return,
                () = context.gate.opened(&described) => {}
            }
            let Some((slots, token)) = self.next_run() else {
                return;
            };
            if runs > 0 {
                // Routine (a controller starting late, the retention engine applying a policy
                // change) and nothing an operator acts on: a debug line, not an info one.
                tracing::debug!(source = %described, subscribers = %names(slots.iter().map(|slot| slot.name())),
                    "a subscriber joined: listing again for everyone");
            }
            runs += 1;
            let reflector = self.reflector(&context, &slots);
            let fan_out = Arc::new(FanOut { slots });
            tokio::select! {
                biased;
                () = self.stop.cancelled() => return,
                () = reflector.run(fan_out, token) => {}
            }
        }
    }

    /// The subscribers for the next reflector, and the token a join stops it with; `None`
    /// when nobody is left.
    fn next_run(&self) -> Option<(RunSlots, CancellationToken)> {
        let mut members = self.members.lock();
        if members.slots.is_empty() {
            return None;
        }
        let token = self.stop.child_token();
        members.running = Some(token.clone());
        Some((members.slots.clone().into(), token))
    }

    fn reflector(
        &self,
        context: &SourceContext,
        slots: &RunSlots,
    ) -> Reflector<Decoded<super::fanout::Projections>> {
        let form = form_for(slots);
        let client = match form {
            Form::Objects => &context.objects_client,
            Form::Metadata => &context.metadata_client,
        };
        let api = Api::dynamic(
            client.clone(),
            self.key.resource.clone(),
            self.key.namespace.as_deref(),
        );
        let tee = Tee {
            slots: Arc::clone(slots),
        };
        let source = Decoded::with_form(api, tee.into_decoder(), form);
        let reflector = Reflector::new(source, context.config.clone())
            .with_metrics(Arc::clone(&context.metrics));
        match on_errors(slots) {
            Some(handler) => reflector.on_error(handler),
            None => reflector,
        }
    }
}

/// Whole objects if any subscriber wants them.
fn form_for(slots: &[Arc<dyn Slot>]) -> Form {
    if slots.iter().any(|slot| slot.form() == Form::Objects) {
        Form::Objects
    } else {
        Form::Metadata
    }
}

/// One handler telling every subscriber that has one, or `None` if none has.
fn on_errors(slots: &RunSlots) -> Option<WatchErrorHandler> {
    if slots.iter().all(|slot| slot.on_error().is_none()) {
        return None;
    }
    let slots = Arc::clone(slots);
    Some(WatchErrorHandler::new(move |error| {
        for slot in slots.iter().filter(|slot| !slot.has_left()) {
            if let Some(handler) = slot.on_error() {
                handler.call(error);
            }
        }
    }))
}

/// The subscribers' names, each once, with how many subscribe under it when more than one
/// (`retention×2,garbagecollector`: a watch and its successor overlap for a moment).
fn names<'a>(subscribers: impl Iterator<Item = &'a str>) -> String {
    let mut counted: Vec<(&str, usize)> = Vec::new();
    for subscriber in subscribers {
        match counted.iter_mut().find(|(name, _)| *name == subscriber) {
            Some((_, n)) => *n += 1,
            None => counted.push((subscriber, 1)),
        }
    }
    let said: Vec<String> = counted
        .into_iter()
        .map(|(name, n)| match n {
            1 => name.to_owned(),
            n => format!("{name}×{n}"),
        })
        .collect();
    said.join(",")
}

#[cfg(test)]
mod tests {
    use super::names;

    #[test]
    fn each_subscriber_is_named_once_with_its_count() {
        let said = names(["retention", "garbagecollector", "retention"].into_iter());
        assert_eq!(said, "retention×2,garbagecollector");
        assert_eq!(names(["retention"].into_iter()), "retention");
    }
}
