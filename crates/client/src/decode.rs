//! Item decoders: how one list item or watch object becomes a `T` when `T` cannot simply be
//! `DeserializeOwned`.
//!
//! Some callers cache not the object but a compact *judgement* of it, computed while it is
//! decoded, by rules known only at run time (a retention policy's CEL expressions and field
//! paths). Such a `T` has no `Deserialize` impl that could see those rules, so the list decoder
//! ([`ListDecoder::with_item_decoder`](super::ListDecoder::with_item_decoder)), the
//! [`Pager`](super::Pager) ([`Api::pager_with`](super::Api::pager_with)) and the watch decoder
//! ([`Api::watch_with`](super::Api::watch_with)) accept a runtime [`ItemDecoder<T>`] instead.
//!
//! Contract:
//! - [`DecodeItem::decode`] gets the complete JSON text of one object (a list item, or the
//!   `object` of an `ADDED`/`MODIFIED`/`DELETED` watch event) and answers a `T` or a
//!   `serde_json::Error`; the caller turns that error into its usual typed error (a list item's
//!   index, offset and snippet; a watch line's [`Error::Decode`](super::Error::Decode)).
//! - A decoder refuses text that is more than one JSON value (trailing text after it), as
//!   `serde_json::from_slice` does: a watch line in the server's own shape hands over the rest
//!   of the line unscanned, and relies on that refusal to fall back to parsing the line
//!   ([`WatchEvent::from_slice_with`](kube_gc_api::WatchEvent::from_slice_with)).
//! - The bytes are borrowed for the call only: a decoder keeps what it computed, never the text.
//! - The object of a `DELETED` watch event goes to [`DecodeItem::decode_deleted`]: the final
//!   state of an object that no longer exists. By default it is decoded as any other; a
//!   decoder whose caller does nothing with a deleted object but forget it may decode only its
//!   identity (key, UID, resourceVersion), as the retention engine's does. List items and
//!   `ADDED`/`MODIFIED` objects always go to [`DecodeItem::decode`].
//! - Any `Fn(&[u8]) -> Result<T, serde_json::Error>` closure is a decoder.
//! - The typed paths do not go through a decoder object: `ItemDecode::Serde` is a plain
//!   function pointer to a monomorphized `serde_json::from_slice::<T>`.
//! - The decoded type is `'static`, as the trait requires of its implementors.

use std::fmt;
use std::sync::Arc;

use serde::de::DeserializeOwned;

/// Decodes one object's JSON text into a `T`, by rules known at run time.
pub trait DecodeItem<T>: Send + Sync + 'static {
    /// The `T` for one object's complete JSON text; an error for anything after that object
    /// (see the module documentation).
    fn decode(&self, bytes: &[u8]) -> Result<T, serde_json::Error>;

    /// The `T` for the final state of an object a `DELETED` watch event reports; by default
    /// [`decode`](Self::decode). The same refusal of trailing text applies.
    fn decode_deleted(&self, bytes: &[u8]) -> Result<T, serde_json::Error> {
        self.decode(bytes)
    }

    /// The members of an object this decoder reads, if it knows: the client may then ask for
    /// an encoding it reads fewer bytes of (protobuf, where the tables describe all of them —
    /// [`negotiate`](super::negotiate)) and hands it only those members. `None` (the
    /// default): anything.
    fn reads(&self) -> Option<super::protobuf::Selection> {
        None
    }
}

impl<T, F> DecodeItem<T> for F
where
    F: Fn(&[u8]) -> Result<T, serde_json::Error> + Send + Sync + 'static,
{
    fn decode(&self, bytes: &[u8]) -> Result<T, serde_json::Error> {
        self(bytes)
    }
}

/// A shared item decoder, as the list and watch decoders take it.
pub type ItemDecoder<T> = Arc<dyn DecodeItem<T>>;

/// A caller's decoder as the client holds it. Calling a `dyn DecodeItem<T>` asks `T: 'static`
/// (the trait's own bound); this closure does not, so the decoders' types and methods keep the
/// bounds they had before item decoders existed (a `WatchStream<T>` is a `Stream` for any `T`).
pub(crate) type DecodeFn<T> =
    Arc<dyn Fn(&[u8], ObjectText) -> Result<T, serde_json::Error> + Send + Sync>;

/// Which of a decoder's two methods a text goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ObjectText {
    /// A list item, or the object of an `ADDED` or `MODIFIED` event: [`DecodeItem::decode`].
    Current,
    /// The object of a `DELETED` event: [`DecodeItem::decode_deleted`].
    FinalState,
}

/// `decoder` as the client holds it.
pub(crate) fn decode_fn<T: 'static>(decoder: ItemDecoder<T>) -> DecodeFn<T> {
    Arc::new(move |bytes: &[u8], text: ObjectText| match text {
        ObjectText::Current => decoder.decode(bytes),
        ObjectText::FinalState => decoder.decode_deleted(bytes),
    })
}

/// How the client decodes one object: serde's typed path, or a caller's decoder.
pub(crate) enum ItemDecode<T> {
    /// `serde_json::from_slice::<T>`, monomorphized: no trait object on the default path.
    Serde(fn(&[u8]) -> Result<T, serde_json::Error>),
    /// A caller's decoder.
    Custom(DecodeFn<T>),
}

impl<T: DeserializeOwned> ItemDecode<T> {
    /// Decodes with `serde_json::from_slice::<T>`.
    pub(crate) fn serde() -> Self {
        ItemDecode::Serde(from_slice::<T>)
    }
}

/// `serde_json::from_slice` for an owned `T`, as a plain function: its lifetime is late-bound,
/// so unlike `serde_json::from_slice::<T>` itself it coerces to a `fn(&[u8]) -> …` pointer.
pub(crate) fn from_slice<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, serde_json::Error> {
    serde_json::from_slice(bytes)
}

impl<T: 'static> ItemDecode<T> {
    /// Decodes with the caller's `decoder`.
    pub(crate) fn custom(decoder: ItemDecoder<T>) -> Self {
        ItemDecode::Custom(decode_fn(decoder))
    }
}

impl<T> ItemDecode<T> {
    /// One object's `T`.
    #[inline]
    pub(crate) fn decode(&self, bytes: &[u8]) -> Result<T, serde_json::Error> {
        match self {
            ItemDecode::Serde(decode) => decode(bytes),
            ItemDecode::Custom(decode) => decode(bytes, ObjectText::Current),
        }
    }
}

// By hand: a derive would ask `T: Clone`, and the decoder itself is shared, not cloned.
impl<T> Clone for ItemDecode<T> {
    fn clone(&self) -> Self {
        match self {
            ItemDecode::Serde(decode) => ItemDecode::Serde(*decode),
            ItemDecode::Custom(decoder) => ItemDecode::Custom(Arc::clone(decoder)),
        }
    }
}

impl<T> fmt::Debug for ItemDecode<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ItemDecode::Serde(_) => "serde",
            ItemDecode::Custom(_) => "custom",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closure_is_a_decoder_and_serde_is_the_default() {
        let decoder: ItemDecoder<usize> = Arc::new(|bytes: &[u8]| Ok(bytes.len()));
        let custom = ItemDecode::custom(decoder);
        assert_eq!(custom.clone().decode(b"{}").ok(), Some(2));
        assert_eq!(format!("{custom:?}"), "custom");
        let serde = ItemDecode::<u32>::serde();
        assert_eq!(serde.decode(b"7").ok(), Some(7));
        assert!(serde.decode(b"x").is_err());
    }

    /// Counts what it is given, and says which method was called.
    struct Sides;

    impl DecodeItem<String> for Sides {
        fn decode(&self, bytes: &[u8]) -> Result<String, serde_json::Error> {
            Ok(format!("current {}", bytes.len()))
        }
        fn decode_deleted(&self, bytes: &[u8]) -> Result<String, serde_json::Error> {
            Ok(format!("final {}", bytes.len()))
        }
    }

    #[test]
    fn a_final_state_goes_to_decode_deleted_and_a_closure_decodes_both_alike() {
        let sides = decode_fn::<String>(Arc::new(Sides));
        assert_eq!(
            sides(b"{}", ObjectText::Current).ok().as_deref(),
            Some("current 2")
        );
        assert_eq!(
            sides(b"{}", ObjectText::FinalState).ok().as_deref(),
            Some("final 2")
        );
        // A list item is a current object.
        let items = ItemDecode::custom(Arc::new(Sides) as ItemDecoder<String>);
        assert_eq!(items.decode(b"{}").ok().as_deref(), Some("current 2"));
        let closure = decode_fn::<usize>(Arc::new(|bytes: &[u8]| Ok(bytes.len())));
        assert_eq!(closure(b"{}", ObjectText::FinalState).ok(), Some(2));
    }
}
