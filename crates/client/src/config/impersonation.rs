//! Impersonation (`as`, `as-uid`, `as-groups`, `as-user-extra`) as HTTP headers, as kubectl
//! sends them: `Impersonate-User`, `Impersonate-Uid`, one `Impersonate-Group` per group, and one
//! `Impersonate-Extra-<key>` per value of each extra key.
//!
//! An extra key may contain characters that are not allowed in a header name (a `/` in
//! `scopes.example.com/x`, say); like client-go, those bytes (and `%` itself) are percent-encoded,
//! and the API server decodes them. Lower-case hex digits are used because header names are
//! case-insensitive and the `http` crate sends them lower-cased anyway.

use std::collections::BTreeMap;

use http::{HeaderName, HeaderValue};

/// Who to act as instead of the authenticated user.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Impersonation {
    /// `Impersonate-User`.
    pub user: Option<String>,
    /// `Impersonate-Uid`.
    pub uid: Option<String>,
    /// `Impersonate-Group`, repeated.
    pub groups: Vec<String>,
    /// `Impersonate-Extra-<key>`, repeated per value.
    pub extra: BTreeMap<String, Vec<String>>,
}

/// A value in the kubeconfig that cannot be sent as a header.
#[derive(Debug, thiserror::Error)]
#[error("impersonation value {0:?} cannot be sent in an HTTP header")]
pub struct InvalidImpersonation(pub String);

impl Impersonation {
    /// True when nothing is impersonated.
    pub fn is_empty(&self) -> bool {
        self.user.is_none() && self.uid.is_none() && self.groups.is_empty() && self.extra.is_empty()
    }

    /// The headers to add to every request, in a stable order.
    pub fn headers(&self) -> Result<Vec<(HeaderName, HeaderValue)>, InvalidImpersonation> {
        let mut headers = Vec::new();
        if let Some(user) = &self.user {
            headers.push((HeaderName::from_static("impersonate-user"), value(user)?));
        }
        if let Some(uid) = &self.uid {
            headers.push((HeaderName::from_static("impersonate-uid"), value(uid)?));
        }
        for group in &self.groups {
            headers.push((HeaderName::from_static("impersonate-group"), value(group)?));
        }
        for (key, values) in &self.extra {
            let name = format!("impersonate-extra-{}", escape_header_key(key));
            let name = HeaderName::try_from(name.as_str())
                .map_err(|_| InvalidImpersonation(key.clone()))?;
            for extra in values {
                headers.push((name.clone(), value(extra)?));
            }
        }
        Ok(headers)
    }
}

fn value(text: &str) -> Result<HeaderValue, InvalidImpersonation> {
    HeaderValue::from_str(text).map_err(|_| InvalidImpersonation(text.to_string()))
}

/// Percent-encodes every byte that is not an RFC 7230 token character, and `%`.
fn escape_header_key(key: &str) -> String {
    const TOKEN_PUNCTUATION: &[u8] = b"!#$&'*+-.^_`|~";
    let mut escaped = String::with_capacity(key.len());
    for byte in key.bytes() {
        if byte.is_ascii_alphanumeric() || TOKEN_PUNCTUATION.contains(&byte) {
            escaped.push(char::from(byte));
        } else {
            escaped.push_str(&format!("%{byte:02x}"));
        }
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_becomes_headers_in_order() {
        let impersonation = Impersonation {
            user: Some("alice".into()),
            uid: Some("42".into()),
            groups: vec!["dev".into(), "ops".into()],
            extra: BTreeMap::from([("scopes".into(), vec!["a".into(), "b".into()])]),
        };
        let headers: Vec<(String, String)> = impersonation
            .headers()
            .unwrap()
            .into_iter()
            .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_string()))
            .collect();
        let expected = [
            ("impersonate-user", "alice"),
            ("impersonate-uid", "42"),
            ("impersonate-group", "dev"),
            ("impersonate-group", "ops"),
            ("impersonate-extra-scopes", "a"),
            ("impersonate-extra-scopes", "b"),
        ];
        let expected: Vec<(String, String)> = expected
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect();
        assert_eq!(headers, expected);
    }

    #[test]
    fn extra_keys_are_percent_encoded() {
        assert_eq!(
            escape_header_key("example.com/scope"),
            "example.com%2fscope"
        );
        assert_eq!(escape_header_key("100%"), "100%25");
        assert_eq!(escape_header_key("a b"), "a%20b");
        assert_eq!(escape_header_key("ü"), "%c3%bc");
    }

    proptest::proptest! {
        #[test]
        fn any_extra_key_becomes_a_valid_header_name(key in "\\PC*") {
            let name = format!("impersonate-extra-{}", escape_header_key(&key));
            proptest::prop_assert!(HeaderName::try_from(name.as_str()).is_ok(), "{}", name);
        }
    }

    #[test]
    fn nothing_to_impersonate_means_no_headers() {
        assert!(Impersonation::default().is_empty());
        assert!(Impersonation::default().headers().unwrap().is_empty());
    }
}
