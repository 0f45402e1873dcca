//! [`ListDecodeError`]: why a list body could not be decoded, and where. Its own module, so that
//! the client's [`Error`](crate::Error), which carries one, does not depend on the decoder.

/// Why a list body could not be decoded.
#[derive(Debug, thiserror::Error)]
pub enum ListDecodeError {
    /// The body is not a JSON object of the expected shape at this point.
    #[error("malformed list body at byte {offset}: expected {expected}, found {found:?}")]
    Syntax {
        /// Offset of the unexpected byte in the body.
        offset: u64,
        /// What the list grammar allows here.
        expected: &'static str,
        /// The byte found instead, as a character.
        found: char,
    },
    /// The body ended before the list did.
    #[error("list body ended after {offset} bytes, inside the list (expected {expected})")]
    Truncated {
        /// The body's length.
        offset: u64,
        /// What was still expected.
        expected: &'static str,
    },
    /// One element of `items` did not decode as the item type.
    #[error("could not decode list item {index} (at byte {offset}): {source}; item starts with: {snippet}")]
    Item {
        /// Position of the item in `items`, from 0.
        index: usize,
        /// Offset of its first byte in the body.
        offset: u64,
        /// The start of its text.
        snippet: String,
        /// The JSON error.
        #[source]
        source: serde_json::Error,
    },
    /// The list's other members (`kind`, `apiVersion`, `metadata`, or `items` when it is not an
    /// array) did not decode.
    #[error("could not decode the list's {what}: {source}; input starts with: {snippet}")]
    Member {
        /// Which part, e.g. `metadata and type`.
        what: &'static str,
        /// The start of the offending text.
        snippet: String,
        /// The JSON error.
        #[source]
        source: serde_json::Error,
    },
    /// An item or member exceeded [`MAX_VALUE_BYTES`](super::MAX_VALUE_BYTES).
    #[error("a list value at byte {offset} exceeds {limit} bytes")]
    TooLarge {
        /// Offset of the value's first byte.
        offset: u64,
        /// The limit exceeded.
        limit: usize,
    },
}
