//! [`ValueExtent`]: where one JSON value ends, found incrementally over bytes that arrive in
//! pieces.
//!
//! Contract:
//! - A scanner is started on the first byte of a value and fed the bytes that follow, in as
//!   many pieces as they arrive. [`ValueExtent::scan`] answers how many bytes of the piece
//!   complete the value, or `None` if it goes on into the next piece.
//! - It finds the *extent* only; it does not validate. Brackets are counted without checking
//!   that they match, and scalars (`12`, `true`, `null`) are taken to run up to the next
//!   delimiter. Whoever decodes the extent with `serde_json` rejects what is malformed, so a
//!   wrong extent can only turn into a decode error, never into a silently different value.
//! - Strings are understood: brackets and quotes inside a string, escaped or not, do not count.
//!
//! Cost: one pass over each byte, no allocation.

/// The JSON whitespace bytes (RFC 8259): space, tab, line feed, carriage return.
pub(crate) fn is_whitespace(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r')
}

/// The scanning state for one value.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ValueExtent {
    /// What the value's first byte said it is; `None` until that byte is seen.
    shape: Option<Shape>,
    /// Open `{` and `[` not yet closed (objects and arrays).
    depth: u32,
    /// Inside a string (at any depth).
    in_string: bool,
    /// The previous byte was a backslash inside a string.
    escaped: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// `{…}` or `[…]`: ends at the bracket that closes the first one.
    Container,
    /// `"…"`: ends at the unescaped closing quote.
    String,
    /// A number, `true`, `false` or `null`: ends before the next delimiter.
    Scalar,
}

impl ValueExtent {
    /// A scanner for a value whose first byte is the first byte it will be fed.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Scans `bytes`, the value's next piece. `Some(n)`: the value ends with `bytes[n - 1]`
    /// (a scalar's delimiter is not part of it). `None`: all of `bytes` belongs to the value
    /// and it continues.
    pub(crate) fn scan(&mut self, bytes: &[u8]) -> Option<usize> {
        let mut from = 0;
        if self.shape.is_none() {
            let first = *bytes.first()?;
            from = 1;
            match first {
                b'{' | b'[' => {
                    self.shape = Some(Shape::Container);
                    self.depth = 1;
                }
                b'"' => {
                    self.shape = Some(Shape::String);
                    self.in_string = true;
                }
                _ => self.shape = Some(Shape::Scalar),
            }
        }
        let rest = &bytes[from..];
        let end = match self.shape {
            Some(Shape::Scalar) => rest.iter().position(|&b| ends_scalar(b)),
            _ => self.scan_nested(rest).map(|n| n + 1),
        };
        end.map(|n| from + n)
    }

    /// Scans a container's or a string's bytes; `Some(i)`: the value ends at `bytes[i]`.
    fn scan_nested(&mut self, bytes: &[u8]) -> Option<usize> {
        for (i, &byte) in bytes.iter().enumerate() {
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                } else if byte == b'\\' {
                    self.escaped = true;
                } else if byte == b'"' {
                    self.in_string = false;
                    if self.depth == 0 {
                        return Some(i);
                    }
                }
                continue;
            }
            match byte {
                b'"' => self.in_string = true,
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => {
                    self.depth -= 1;
                    if self.depth == 0 {
                        return Some(i);
                    }
                }
                _ => {}
            }
        }
        None
    }
}

/// A byte that cannot be part of a scalar and ends it: whitespace or structure.
fn ends_scalar(byte: u8) -> bool {
    is_whitespace(byte) || matches!(byte, b',' | b'}' | b']' | b':' | b'{' | b'[' | b'"')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The extent of the value at the start of `text`, fed in pieces of `piece` bytes.
    fn extent(text: &str, piece: usize) -> Option<usize> {
        let mut scanner = ValueExtent::new();
        let mut offset = 0;
        for chunk in text.as_bytes().chunks(piece) {
            if let Some(n) = scanner.scan(chunk) {
                return Some(offset + n);
            }
            offset += chunk.len();
        }
        None
    }

    #[test]
    fn each_shape_ends_where_json_says() {
        let cases = [
            (r#"{"a":[1,{"b":"}"}]}, next"#, r#"{"a":[1,{"b":"}"}]}"#),
            (
                r#""a \"quoted\" \\ string",x"#,
                r#""a \"quoted\" \\ string""#,
            ),
            ("12.5e3 ,", "12.5e3"),
            ("null]", "null"),
            ("[[],[]]]", "[[],[]]"),
            (r#"{"k\\":"]"}"#, r#"{"k\\":"]"}"#),
        ];
        for (text, value) in cases {
            for piece in 1..=text.len() {
                assert_eq!(extent(text, piece), Some(value.len()), "{text} / {piece}");
            }
        }
    }

    #[test]
    fn an_unfinished_value_needs_more_bytes() {
        for text in [r#"{"a":"#, r#""abc\""#, "[[1]", "123"] {
            assert_eq!(extent(text, 2), None, "{text}");
        }
    }
}
