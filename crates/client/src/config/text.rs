//! Turning the bytes of a kubeconfig file into text, the way kubectl's YAML reader does.
//!
//! kubectl's YAML parser (go-yaml, a port of libyaml) looks at the byte-order mark: a UTF-8 BOM
//! is skipped, and a UTF-16 little- or big-endian BOM switches the whole file to UTF-16. Windows
//! PowerShell's `>` writes UTF-16LE with a BOM, so such files are common. Without a BOM the file
//! must be UTF-8; UTF-16 without a BOM is refused with an error that says so.

/// Why a file's bytes are not text kubectl would read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TextError {
    /// UTF-16 with a byte-order mark, but an odd number of bytes or an unpaired surrogate.
    #[error("it starts with a UTF-16 byte-order mark but is not valid UTF-16")]
    BadUtf16,
    /// NUL bytes and no byte-order mark: UTF-16 that go-yaml cannot detect either.
    #[error("it looks like UTF-16 without a byte-order mark; save it as UTF-8")]
    Utf16WithoutBom,
    /// Neither UTF-8 nor BOM-marked UTF-16.
    #[error("it is not UTF-8 (byte {offset} is invalid); save it as UTF-8")]
    NotUtf8 {
        /// Offset of the first invalid byte.
        offset: usize,
    },
}

const UTF8_BOM: &[u8] = &[0xEF, 0xBB, 0xBF];
const UTF16_LE_BOM: &[u8] = &[0xFF, 0xFE];
const UTF16_BE_BOM: &[u8] = &[0xFE, 0xFF];

/// Decodes a kubeconfig file's bytes to a string (see the module documentation).
pub fn decode(bytes: &[u8]) -> Result<String, TextError> {
    if let Some(rest) = bytes.strip_prefix(UTF8_BOM) {
        return utf8(rest);
    }
    if let Some(rest) = bytes.strip_prefix(UTF16_LE_BOM) {
        return utf16(rest, u16::from_le_bytes);
    }
    if let Some(rest) = bytes.strip_prefix(UTF16_BE_BOM) {
        return utf16(rest, u16::from_be_bytes);
    }
    if bytes.contains(&0) {
        return Err(TextError::Utf16WithoutBom);
    }
    utf8(bytes)
}

fn utf8(bytes: &[u8]) -> Result<String, TextError> {
    String::from_utf8(bytes.to_vec()).map_err(|err| TextError::NotUtf8 {
        offset: err.utf8_error().valid_up_to(),
    })
}

fn utf16(bytes: &[u8], unit: fn([u8; 2]) -> u16) -> Result<String, TextError> {
    if !bytes.len().is_multiple_of(2) {
        return Err(TextError::BadUtf16);
    }
    let units = bytes.chunks_exact(2).map(|pair| unit([pair[0], pair[1]]));
    char::decode_utf16(units)
        .collect::<Result<String, _>>()
        .map_err(|_| TextError::BadUtf16)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utf16_bytes(text: &str, bom: &[u8], unit: fn(u16) -> [u8; 2]) -> Vec<u8> {
        let mut bytes = bom.to_vec();
        bytes.extend(text.encode_utf16().flat_map(unit));
        bytes
    }

    #[test]
    fn plain_utf8_passes_through() {
        assert_eq!(decode(b"kind: Config\n").as_deref(), Ok("kind: Config\n"));
    }

    #[test]
    fn utf8_bom_is_skipped() {
        assert_eq!(
            decode(b"\xEF\xBB\xBFkind: Config").as_deref(),
            Ok("kind: Config")
        );
    }

    #[test]
    fn utf16_with_either_bom_is_converted() {
        let text = "kind: Config # é ✓ 𝄞\n";
        let le = utf16_bytes(text, UTF16_LE_BOM, u16::to_le_bytes);
        let be = utf16_bytes(text, UTF16_BE_BOM, u16::to_be_bytes);
        assert_eq!(decode(&le).as_deref(), Ok(text));
        assert_eq!(decode(&be).as_deref(), Ok(text));
    }

    proptest::proptest! {
        #[test]
        fn any_text_survives_a_utf16_round_trip(text in "\\PC*") {
            let le = utf16_bytes(&text, UTF16_LE_BOM, u16::to_le_bytes);
            let be = utf16_bytes(&text, UTF16_BE_BOM, u16::to_be_bytes);
            proptest::prop_assert_eq!(decode(&le), Ok(text.clone()));
            proptest::prop_assert_eq!(decode(&be), Ok(text));
        }
    }

    #[test]
    fn broken_encodings_are_named() {
        let no_bom = utf16_bytes("kind: Config", &[], u16::to_le_bytes);
        assert_eq!(decode(&no_bom), Err(TextError::Utf16WithoutBom));
        assert_eq!(decode(b"\xFF\xFEk"), Err(TextError::BadUtf16));
        assert_eq!(decode(b"ok\xC3("), Err(TextError::NotUtf8 { offset: 2 }));
    }
}
