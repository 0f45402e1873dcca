//! [`ObjectKey`]: the identity of a cached object, `namespace/name` (or `name` alone for a
//! cluster-scoped object), as client-go's `MetaNamespaceKeyFunc` writes it.
//!
//! Contract:
//! - `Display` writes `namespace/name` or `name`; [`ObjectKey::parse`] (and `FromStr`) reads
//!   exactly that form back, so a key survives a trip through text (logs, the workqueue).
//! - An empty namespace means cluster-scoped: Kubernetes never gives a namespaced object the
//!   namespace `""`.
//! - Keys order by namespace, then name (cluster-scoped keys first). The cache relies on that
//!   order: every key of a namespace sits in one contiguous run of an ordered map.
//! - Neither part may contain `/` (the API server rejects such names), so the text form is
//!   unambiguous. [`ObjectKey::new`] does not check this; [`ObjectKey::parse`] does.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

/// A compact `(namespace, name)` pair: one shared, immutable string holding `namespace/name`,
/// and the length of the namespace prefix.
///
/// The same key is held by a projection, the cache's map, its index entries and the workqueue,
/// so cloning one only bumps a reference count: the text exists once however many hold it. A
/// key is 24 bytes inline, which matters when 100,000 objects are cached.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ObjectKey {
    /// `namespace/name`, or `name` alone for a cluster-scoped object.
    text: Arc<str>,
    /// Bytes of `text` before the `/`; 0 for a cluster-scoped object.
    namespace_len: u32,
}

/// Why a string is not an [`ObjectKey`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseKeyError {
    /// More than one `/`: neither a namespace nor a name may contain one.
    #[error("object key {0:?} has more than one '/'")]
    TooManySlashes(String),
    /// A `/` with nothing before it (`/name`).
    #[error("object key {0:?} has an empty namespace before '/'")]
    EmptyNamespace(String),
    /// No name (`""` or `namespace/`).
    #[error("object key {0:?} has an empty name")]
    EmptyName(String),
    /// A namespace longer than `u32::MAX` bytes (Kubernetes allows 63).
    #[error("object key has a namespace of {0} bytes")]
    NamespaceTooLong(usize),
}

impl ObjectKey {
    /// The key of `name` in `namespace`; an empty `namespace` makes a cluster-scoped key.
    pub fn new(namespace: &str, name: &str) -> Self {
        if namespace.is_empty() {
            return ObjectKey::cluster_scoped(name);
        }
        let mut text = String::with_capacity(namespace.len() + 1 + name.len());
        text.push_str(namespace);
        text.push('/');
        text.push_str(name);
        ObjectKey {
            text: text.into(),
            // Kubernetes caps namespaces at 63 bytes. A namespace over 4 GiB cannot occur; it
            // would leave the whole text as a cluster-scoped name rather than panic.
            namespace_len: u32::try_from(namespace.len()).unwrap_or(0),
        }
    }

    /// The key of a cluster-scoped object (a Node, a Namespace, a ClusterRole...).
    pub fn cluster_scoped(name: &str) -> Self {
        ObjectKey {
            text: name.into(),
            namespace_len: 0,
        }
    }

    /// Reads the text form back: `namespace/name` or `name`.
    pub fn parse(text: &str) -> Result<Self, ParseKeyError> {
        let Some((namespace, name)) = text.split_once('/') else {
            if text.is_empty() {
                return Err(ParseKeyError::EmptyName(text.to_owned()));
            }
            return Ok(ObjectKey::cluster_scoped(text));
        };
        if name.contains('/') {
            return Err(ParseKeyError::TooManySlashes(text.to_owned()));
        }
        if namespace.is_empty() {
            return Err(ParseKeyError::EmptyNamespace(text.to_owned()));
        }
        if name.is_empty() {
            return Err(ParseKeyError::EmptyName(text.to_owned()));
        }
        let namespace_len = u32::try_from(namespace.len())
            .map_err(|_| ParseKeyError::NamespaceTooLong(namespace.len()))?;
        Ok(ObjectKey {
            text: text.into(),
            namespace_len,
        })
    }

    /// The namespace, or `None` for a cluster-scoped object.
    pub fn namespace(&self) -> Option<&str> {
        match self.namespace_len {
            0 => None,
            len => self.text.get(..len as usize),
        }
    }

    /// The name.
    pub fn name(&self) -> &str {
        match self.namespace_len {
            0 => &self.text,
            // Skips the namespace and the '/' after it.
            len => self.text.get(len as usize + 1..).unwrap_or_default(),
        }
    }

    /// The text form, `namespace/name` or `name`, without allocating.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The namespace as the cache's ordering sees it: `""` for cluster-scoped objects.
    fn namespace_or_empty(&self) -> &str {
        self.namespace().unwrap_or_default()
    }
}

impl Ord for ObjectKey {
    /// By namespace, then name (cluster-scoped keys, namespace `""`, first), so the keys of one
    /// namespace form one contiguous run in an ordered map.
    fn cmp(&self, other: &Self) -> Ordering {
        self.namespace_or_empty()
            .cmp(other.namespace_or_empty())
            .then_with(|| self.name().cmp(other.name()))
    }
}

impl PartialOrd for ObjectKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl fmt::Debug for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ObjectKey({:?})", &*self.text)
    }
}

impl FromStr for ObjectKey {
    type Err = ParseKeyError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        ObjectKey::parse(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_namespaced_key_prints_and_parses_as_namespace_slash_name() {
        let key = ObjectKey::new("team-a", "pi-1");
        assert_eq!(key.to_string(), "team-a/pi-1");
        assert_eq!(key.namespace(), Some("team-a"));
        assert_eq!(key.name(), "pi-1");
        assert_eq!("team-a/pi-1".parse::<ObjectKey>(), Ok(key));
    }

    #[test]
    fn a_cluster_scoped_key_is_the_name_alone() {
        let key = ObjectKey::cluster_scoped("node-1");
        assert_eq!(key.to_string(), "node-1");
        assert_eq!(key.namespace(), None);
        assert_eq!(key.name(), "node-1");
        assert_eq!(ObjectKey::parse("node-1"), Ok(key.clone()));
        // An empty namespace is how a cluster-scoped object's metadata reads.
        assert_eq!(ObjectKey::new("", "node-1"), key);
    }

    #[test]
    fn malformed_keys_are_rejected() {
        assert_eq!(
            ObjectKey::parse("a/b/c"),
            Err(ParseKeyError::TooManySlashes("a/b/c".into()))
        );
        assert_eq!(
            ObjectKey::parse("/b"),
            Err(ParseKeyError::EmptyNamespace("/b".into()))
        );
        assert_eq!(
            ObjectKey::parse("a/"),
            Err(ParseKeyError::EmptyName("a/".into()))
        );
        assert_eq!(
            ObjectKey::parse(""),
            Err(ParseKeyError::EmptyName("".into()))
        );
    }

    #[test]
    fn keys_order_by_namespace_then_name_with_cluster_scoped_first() {
        let mut keys: Vec<ObjectKey> = ["a0/x", "a/z", "a-b/y", "a/y", "zz", "a.b/a"]
            .iter()
            .map(|text| ObjectKey::parse(text).unwrap())
            .collect();
        keys.sort();
        let texts: Vec<String> = keys.iter().map(ToString::to_string).collect();
        assert_eq!(texts, ["zz", "a/y", "a/z", "a-b/y", "a.b/a", "a0/x"]);
    }

    #[test]
    fn a_key_costs_one_fat_pointer_and_a_length_inline() {
        assert_eq!(std::mem::size_of::<ObjectKey>(), 24);
    }

    proptest! {
        #[test]
        fn text_form_round_trips(namespace in "[a-z0-9-]{0,12}", name in "[a-z0-9.-]{1,24}") {
            let key = ObjectKey::new(&namespace, &name);
            let parsed = ObjectKey::parse(&key.to_string());
            prop_assert_eq!(parsed.as_ref(), Ok(&key));
            prop_assert_eq!(key.namespace(), (!namespace.is_empty()).then_some(namespace.as_str()));
            prop_assert_eq!(key.name(), name.as_str());
        }

        #[test]
        fn order_is_the_order_of_namespace_name_pairs(
            a in ("[ab.-]{0,3}", "[ab.-]{1,3}"),
            b in ("[ab.-]{0,3}", "[ab.-]{1,3}"),
        ) {
            let (ka, kb) = (ObjectKey::new(&a.0, &a.1), ObjectKey::new(&b.0, &b.1));
            prop_assert_eq!(ka.cmp(&kb), (&a.0, &a.1).cmp(&(&b.0, &b.1)));
            prop_assert_eq!(ka == kb, a == b);
        }
    }
}
