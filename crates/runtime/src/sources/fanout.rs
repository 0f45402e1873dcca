//! How one stream of objects serves several subscribers: each object's text is decoded once
//! per subscriber, by that subscriber's own decoder, and the results travel together
//! ([`Projections`]) through the one reflector until [`FanOut`] hands each subscriber its own.
//!
//! Contract:
//! - [`Tee`] calls every subscriber's decoder on the same text, in subscription order; if any
//!   refuses it, the object is refused for all (a malformed object, logged, counted and skipped
//!   by the reflector as before) — so every subscriber sees the same objects.
//! - A [`Projections`] carries the identity (key, UID, resourceVersion) the reflector needs,
//!   taken from the first subscriber's projection; every subscriber's projection is
//!   [`Cacheable`], so they all agree on it.
//! - [`FanOut`] gives each subscriber its events in the reflector's order, with its own type
//!   back: a `Replaced` becomes one `Replaced` per subscriber, holding only its projections.
//!   A subscriber that has left is skipped.
//!
//! Types are erased behind [`Slot`] so that one reflector can carry projections of different
//! types; [`TypedSlot`] is the only implementation, and it only ever downcasts what it made.

use std::any::Any;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::cache::{Cacheable, ObjectKey};
use crate::reflector::{Form, ReflectorEvent, ReflectorSink, WatchErrorHandler};
use kube_gc_client::protobuf::Selection;
use kube_gc_client::{DecodeItem, ItemDecoder};

/// One subscriber's projection of one object, its type erased.
pub(super) type Erased = Box<dyn Any + Send>;

/// One subscriber, whatever the type of its projection.
pub(super) trait Slot: Send + Sync {
    /// Who subscribed, for the logs.
    fn name(&self) -> &str;
    /// What it needs the server to send.
    fn form(&self) -> Form;
    /// Told of the source's failed requests.
    fn on_error(&self) -> Option<&WatchErrorHandler>;
    /// Its projection of one object's text (`deleted`: the final state of a DELETED event).
    fn decode(&self, bytes: &[u8], deleted: bool) -> Result<Erased, serde_json::Error>;
    /// Key, UID and resourceVersion of a projection it made.
    fn identity(&self, projection: &Erased) -> Option<Identity>;
    /// Hands it an event of its own projections.
    fn deliver(&self, event: ReflectorEvent<Erased>);
    /// The members of an object it reads (`None`: anything).
    fn reads(&self) -> Option<Selection>;
    /// Whether it has left (its events are dropped).
    fn has_left(&self) -> bool;
    /// It leaves: no more events.
    fn leave(&self);
}

/// Who an object is, for the reflector.
pub(super) struct Identity {
    key: ObjectKey,
    uid: Box<str>,
    resource_version: Box<str>,
}

/// A subscriber with projections of type `T`.
pub(super) struct TypedSlot<T> {
    name: String,
    form: Form,
    decoder: ItemDecoder<T>,
    sink: Arc<dyn ReflectorSink<T>>,
    on_error: Option<WatchErrorHandler>,
    left: AtomicBool,
}

impl<T> TypedSlot<T> {
    pub(super) fn new(
        name: String,
        form: Form,
        decoder: ItemDecoder<T>,
        sink: Arc<dyn ReflectorSink<T>>,
        on_error: Option<WatchErrorHandler>,
    ) -> Self {
        TypedSlot {
            name,
            form,
            decoder,
            sink,
            on_error,
            left: AtomicBool::new(false),
        }
    }
}

impl<T: Cacheable + Send + 'static> TypedSlot<T> {
    /// Its own projections back from erased ones. Every erased value a slot is given was made
    /// by its own `decode`, so the downcast cannot fail; were it to, the object is dropped
    /// (and the bug shows in debug builds) rather than the process.
    fn typed(&self, projection: Erased) -> Option<T> {
        let typed = projection.downcast::<T>().ok().map(|boxed| *boxed);
        debug_assert!(
            typed.is_some(),
            "{}: a projection of another type",
            self.name
        );
        typed
    }
}

impl<T: Cacheable + Send + 'static> Slot for TypedSlot<T> {
    fn name(&self) -> &str {
        &self.name
    }

    fn form(&self) -> Form {
        self.form
    }

    fn on_error(&self) -> Option<&WatchErrorHandler> {
        self.on_error.as_ref()
    }

    fn decode(&self, bytes: &[u8], deleted: bool) -> Result<Erased, serde_json::Error> {
        let projection = if deleted {
            self.decoder.decode_deleted(bytes)?
        } else {
            self.decoder.decode(bytes)?
        };
        Ok(Box::new(projection))
    }

    fn identity(&self, projection: &Erased) -> Option<Identity> {
        let typed = projection.downcast_ref::<T>()?;
        Some(Identity {
            key: typed.cache_key(),
            uid: typed.uid().into(),
            resource_version: typed.resource_version().into(),
        })
    }

    fn deliver(&self, event: ReflectorEvent<Erased>) {
        let event = match event {
            ReflectorEvent::Replaced {
                objects,
                resource_version,
            } => ReflectorEvent::Replaced {
                objects: objects.into_iter().filter_map(|o| self.typed(o)).collect(),
                resource_version,
            },
            ReflectorEvent::Added(o) => match self.typed(o) {
                Some(o) => ReflectorEvent::Added(o),
                None => return,
            },
            ReflectorEvent::Modified(o) => match self.typed(o) {
                Some(o) => ReflectorEvent::Modified(o),
                None => return,
            },
            ReflectorEvent::Deleted(o) => match self.typed(o) {
                Some(o) => ReflectorEvent::Deleted(o),
                None => return,
            },
            ReflectorEvent::Bookmark { resource_version } => {
                ReflectorEvent::Bookmark { resource_version }
            }
        };
        self.sink.apply(event);
    }

    fn reads(&self) -> Option<Selection> {
        self.decoder.reads()
    }

    fn has_left(&self) -> bool {
        self.left.load(Ordering::Acquire)
    }

    fn leave(&self) {
        self.left.store(true, Ordering::Release);
    }
}

/// Every subscriber's projection of one object, in subscription order.
pub(super) struct Projections {
    identity: Identity,
    each: Vec<Erased>,
}

impl Cacheable for Projections {
    fn cache_key(&self) -> ObjectKey {
        self.identity.key.clone()
    }

    fn resource_version(&self) -> &str {
        &self.identity.resource_version
    }

    fn uid(&self) -> &str {
        &self.identity.uid
    }
}

/// The reflector's item decoder: every subscriber's decoder, on the same text.
pub(super) struct Tee {
    pub(super) slots: Arc<[Arc<dyn Slot>]>,
}

impl Tee {
    fn decode_all(&self, bytes: &[u8], deleted: bool) -> Result<Projections, serde_json::Error> {
        // A subscriber that left gets a placeholder, which FanOut never delivers: decoding for
        // it would be work for nobody.
        let each = self
            .slots
            .iter()
            .map(|slot| match slot.has_left() {
                true => Ok(Box::new(()) as Erased),
                false => slot.decode(bytes, deleted),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let identity = self
            .slots
            .iter()
            .zip(&each)
            .find_map(|(slot, projection)| slot.identity(projection))
            .ok_or_else(|| serde::de::Error::custom("no subscriber decoded the object"))?;
        Ok(Projections { identity, each })
    }

    /// As an item decoder for the reflector's source.
    pub(super) fn into_decoder(self) -> ItemDecoder<Projections> {
        Arc::new(self)
    }
}

impl DecodeItem<Projections> for Tee {
    fn decode(&self, bytes: &[u8]) -> Result<Projections, serde_json::Error> {
        self.decode_all(bytes, false)
    }

    fn decode_deleted(&self, bytes: &[u8]) -> Result<Projections, serde_json::Error> {
        self.decode_all(bytes, true)
    }

    /// What all the subscribers read together; anything if one of them may read anything.
    fn reads(&self) -> Option<Selection> {
        self.slots
            .iter()
            .filter(|slot| !slot.has_left())
            .map(|slot| slot.reads())
            .try_fold(Selection::none(), |all, reads| Some(all.union(reads?)))
    }
}

/// The reflector's sink: each subscriber its own events.
pub(super) struct FanOut {
    pub(super) slots: Arc<[Arc<dyn Slot>]>,
}

impl FanOut {
    fn each(&self, projections: Projections, event: fn(Erased) -> ReflectorEvent<Erased>) {
        for (slot, projection) in self.slots.iter().zip(projections.each) {
            if !slot.has_left() {
                slot.deliver(event(projection));
            }
        }
    }
}

impl ReflectorSink<Projections> for FanOut {
    fn apply(&self, event: ReflectorEvent<Projections>) {
        match event {
            ReflectorEvent::Replaced {
                objects,
                resource_version,
            } => {
                let mut per_slot: Vec<Vec<Erased>> = self
                    .slots
                    .iter()
                    .map(|_| Vec::with_capacity(objects.len()))
                    .collect();
                for projections in objects {
                    for (mine, projection) in per_slot.iter_mut().zip(projections.each) {
                        mine.push(projection);
                    }
                }
                for (slot, objects) in self.slots.iter().zip(per_slot) {
                    if !slot.has_left() {
                        slot.deliver(ReflectorEvent::Replaced {
                            objects,
                            resource_version: resource_version.clone(),
                        });
                    }
                }
            }
            ReflectorEvent::Added(p) => self.each(p, ReflectorEvent::Added),
            ReflectorEvent::Modified(p) => self.each(p, ReflectorEvent::Modified),
            ReflectorEvent::Deleted(p) => self.each(p, ReflectorEvent::Deleted),
            ReflectorEvent::Bookmark { resource_version } => {
                for slot in self.slots.iter().filter(|slot| !slot.has_left()) {
                    slot.deliver(ReflectorEvent::Bookmark {
                        resource_version: resource_version.clone(),
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use parking_lot::Mutex;

    use super::*;
    use kube_gc_api::PartialObjectMetadata;

    /// Records what it is given.
    struct Recorder<T>(Mutex<Vec<ReflectorEvent<T>>>);

    impl<T: Send + 'static> ReflectorSink<T> for Recorder<T> {
        fn apply(&self, event: ReflectorEvent<T>) {
            self.0.lock().push(event);
        }
    }

    fn recorder<T>() -> Arc<Recorder<T>> {
        Arc::new(Recorder(Mutex::new(Vec::new())))
    }

    /// A projection of another type: the name's length, keyed by the name.
    #[derive(Debug, PartialEq)]
    struct NameLength(ObjectKey, usize);

    impl Cacheable for NameLength {
        fn cache_key(&self) -> ObjectKey {
            self.0.clone()
        }
        fn resource_version(&self) -> &str {
            ""
        }
        fn uid(&self) -> &str {
            ""
        }
    }

    type TwoSlots = (
        Arc<[Arc<dyn Slot>]>,
        Arc<Recorder<PartialObjectMetadata>>,
        Arc<Recorder<NameLength>>,
    );

    fn slots() -> TwoSlots {
        let (metadata, lengths) = (recorder(), recorder());
        let meta_decoder: ItemDecoder<PartialObjectMetadata> =
            Arc::new(|bytes: &[u8]| serde_json::from_slice(bytes));
        let length_decoder: ItemDecoder<NameLength> = Arc::new(|bytes: &[u8]| {
            let meta: PartialObjectMetadata = serde_json::from_slice(bytes)?;
            let name = meta.metadata.name.unwrap_or_default();
            Ok(NameLength(ObjectKey::new("", &name), name.len()))
        });
        let slots: Vec<Arc<dyn Slot>> = vec![
            Arc::new(TypedSlot::new(
                "meta".into(),
                Form::Metadata,
                meta_decoder,
                metadata.clone(),
                None,
            )),
            Arc::new(TypedSlot::new(
                "length".into(),
                Form::Objects,
                length_decoder,
                lengths.clone(),
                None,
            )),
        ];
        (slots.into(), metadata, lengths)
    }

    const OBJECT: &[u8] =
        br#"{"metadata":{"name":"abc","uid":"u1","resourceVersion":"7"},"spec":{"x":1}}"#;

    #[test]
    fn each_subscriber_gets_its_own_projection_of_every_event() {
        let (slots, metadata, lengths) = slots();
        let tee = Tee {
            slots: slots.clone(),
        };
        let fan_out = FanOut { slots };
        let first = tee.decode(OBJECT).unwrap();
        assert_eq!((first.uid(), first.resource_version()), ("u1", "7"));
        fan_out.apply(ReflectorEvent::Replaced {
            objects: vec![first],
            resource_version: "7".into(),
        });
        fan_out.apply(ReflectorEvent::Deleted(tee.decode_deleted(OBJECT).unwrap()));
        fan_out.apply(ReflectorEvent::Bookmark {
            resource_version: "9".into(),
        });
        let lengths = lengths.0.lock();
        assert!(
            matches!(&lengths[0], ReflectorEvent::Replaced { objects, .. }
            if objects == &[NameLength(ObjectKey::new("", "abc"), 3)])
        );
        assert!(matches!(
            &lengths[1],
            ReflectorEvent::Deleted(NameLength(_, 3))
        ));
        assert!(
            matches!(&lengths[2], ReflectorEvent::Bookmark { resource_version } if resource_version == "9")
        );
        let metadata = metadata.0.lock();
        assert_eq!(metadata.len(), 3);
        assert!(
            matches!(&metadata[0], ReflectorEvent::Replaced { objects, .. }
            if objects[0].metadata.uid.as_deref() == Some("u1"))
        );
    }

    #[test]
    fn a_text_any_subscriber_refuses_is_refused_for_all() {
        let (slots, _, _) = slots();
        let tee = Tee { slots };
        assert!(tee.decode(br#"{"metadata":{"name":5}}"#).is_err());
    }

    #[test]
    fn a_subscriber_that_left_hears_nothing_more() {
        let (slots, metadata, lengths) = slots();
        let tee = Tee {
            slots: slots.clone(),
        };
        slots[1].leave();
        let fan_out = FanOut { slots };
        fan_out.apply(ReflectorEvent::Added(tee.decode(OBJECT).unwrap()));
        assert_eq!(metadata.0.lock().len(), 1);
        assert!(lengths.0.lock().is_empty());
    }
}
