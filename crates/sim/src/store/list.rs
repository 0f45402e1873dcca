//! Listing: where a LIST is served from, resourceVersion semantics, paging and continue tokens.
//!
//! Contract: the LIST table of a v1.28 kube-apiserver with its watch cache, decided by
//! [`ListSource::of`] (the rules of `cacher.go`'s `shouldDelegateList` and `etcd3/store.go`'s
//! `GetList`; each row is tested below and the ones the captures show are pinned to them):
//!
//! | `resourceVersion` | `limit` | `resourceVersionMatch` | served from | what comes back |
//! |---|---|---|---|---|
//! | unset | any | — | etcd, consistent | the latest state, paged (14, 15) |
//! | `0` | ignored | unset / `NotOlderThan` | watch cache | the latest state, in one response (17) |
//! | `N` | none | unset / `NotOlderThan` | watch cache | the latest state once the cache has seen `N`; waits for it (3 s), then 504 `Too large resource version`, retry after 1 s (57, 61) |
//! | `N` | set | unset (legacy) | etcd at exactly `N` | the state at `N`, paged, at version `N`; 410 once compacted; 500 from etcd if `N` is ahead (56, 63) |
//! | `N` | set | `NotOlderThan` | etcd, latest | the latest state, paged; 504 with no retry hint if `N` is ahead (58, 62) |
//! | `N` | any | `Exact` | etcd at exactly `N` | the state at `N`; 410 once compacted, 500 if ahead (54, 63) |
//! | — | — | — with `continue` | etcd at the token's version | the next page; 410 with a fresh token once compacted (53) |
//!
//! - The waiting is the handler's (it is async; the store's lock is not):
//!   [`ListSource::waits_for`] says for which version, [`Store::wait_for_version`] waits.
//! - `continue`: an opaque token (base64url JSON `{"v","rv","start"}` like the real one) naming
//!   the version of the first page and the key to resume after; pages of one list all show that
//!   version. A token whose version was compacted → 410 with a fresh token (version -1) that
//!   continues from the same key at the latest version; a malformed token → 400.
//! - `remainingItemCount` is set on non-final pages unless label or field selectors are used.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use base64::Engine;
use serde_json::Value;

use super::{Store, StoreError};
use crate::filter::ObjectFilter;
use crate::history::Rewound;
use crate::resources::ResourceId;

const TOKEN_ENCODING: base64::engine::GeneralPurpose =
    base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// A list request.
#[derive(Debug, Default)]
pub struct ListOptions {
    /// Namespace, label and field restrictions.
    pub filter: ObjectFilter,
    /// `limit` (0 or absent: no limit).
    pub limit: Option<usize>,
    /// `continue`.
    pub continue_token: Option<String>,
    /// `resourceVersion`.
    pub resource_version: Option<String>,
    /// `resourceVersionMatch` (`Exact` or `NotOlderThan`).
    pub resource_version_match: Option<String>,
}

/// One page of a list.
#[derive(Debug, Clone)]
pub struct ListPage {
    /// The objects, in key order.
    pub items: Vec<Arc<Value>>,
    /// The version the page shows (`metadata.resourceVersion` of the list).
    pub resource_version: u64,
    /// Token for the next page, if there is one.
    pub continue_token: Option<String>,
    /// How many more objects follow, when known.
    pub remaining_item_count: Option<u64>,
}

/// Where a real API server serves a LIST from, and at which version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListSource {
    /// The watch cache: the latest state, unpaged, once the cache has seen `not_older_than`.
    WatchCache {
        /// The version the answer must not be older than (0: any).
        not_older_than: u64,
    },
    /// etcd at its latest revision, paged, which must be at least `not_older_than`.
    EtcdLatest {
        /// The version the answer must not be older than (0: any).
        not_older_than: u64,
    },
    /// etcd at exactly this revision, paged.
    EtcdExact(u64),
    /// etcd, the page after `start_after` of a list at the token's revision (`None`: the
    /// latest, a token handed out after the old one was compacted).
    EtcdContinue {
        /// The revision of the list's first page.
        at: Option<u64>,
        /// The (relative) key the previous page ended with.
        start_after: String,
    },
}

impl ListSource {
    /// Where the LIST `options` describe is served from (the table in the module docs).
    pub fn of(options: &ListOptions) -> Result<ListSource, StoreError> {
        if let Some(token) = options.continue_token.as_deref().filter(|t| !t.is_empty()) {
            let token = decode_continue(token)?;
            return Ok(ListSource::EtcdContinue {
                at: u64::try_from(token.rv).ok(),
                start_after: token.start.trim_end_matches('\0').to_string(),
            });
        }
        let requested = options
            .resource_version
            .as_deref()
            .filter(|rv| !rv.is_empty());
        let Some(requested) = requested else {
            return Ok(ListSource::EtcdLatest { not_older_than: 0 });
        };
        let rv: u64 = requested.parse().map_err(|_| {
            StoreError::BadRequest(format!("invalid resource version: {requested}"))
        })?;
        // cacher.go: a limit sends the list to etcd, except at version 0.
        let limited = rv != 0 && options.limit.is_some_and(|l| l > 0);
        match options.resource_version_match.as_deref().unwrap_or("") {
            "Exact" => Ok(ListSource::EtcdExact(rv)),
            "NotOlderThan" if limited => Ok(ListSource::EtcdLatest { not_older_than: rv }),
            // The legacy rule for paginated lists: exactly that revision (exchange 56).
            "" if limited => Ok(ListSource::EtcdExact(rv)),
            "NotOlderThan" | "" => Ok(ListSource::WatchCache { not_older_than: rv }),
            other => Err(StoreError::BadRequest(format!(
                "unsupported resourceVersionMatch: {other}"
            ))),
        }
    }

    /// The version a list from the watch cache must wait for, if it is ahead of `current`.
    pub fn waits_for(&self, current: u64) -> Option<u64> {
        match self {
            ListSource::WatchCache { not_older_than } if *not_older_than > current => {
                Some(*not_older_than)
            }
            _ => None,
        }
    }
}

/// Which version of the data a list reads, and where it starts.
struct ReadPlan {
    /// `None` for the latest version.
    at: Option<u64>,
    /// Resume strictly after this (relative) key.
    start_after: Option<String>,
    /// Whether `limit` applies.
    paged: bool,
}

#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct ContinueToken {
    v: String,
    rv: i64,
    start: String,
}

impl Store {
    /// Lists objects of `resource` (see the module documentation for the semantics).
    pub fn list(
        &self,
        resource: ResourceId,
        options: &ListOptions,
    ) -> Result<ListPage, StoreError> {
        let prefix = self.list_prefix(resource, options);
        let state = self.state.lock();
        let current = state.rv;
        let plan = self.plan_read(options, current, state.history.window_start())?;
        let objects = &state.objects[resource.0];
        let (overlay, list_rv) = match plan.at {
            Some(rv) if rv < current => (state.history.overlay(resource, rv), rv),
            _ => (BTreeMap::new(), current),
        };
        let source = Rewound {
            current: objects,
            overlay: &overlay,
        };
        let limit = options.limit.filter(|l| *l > 0 && plan.paged);
        let start = match &plan.start_after {
            Some(relative) => Bound::Excluded(format!("{prefix}{relative}")),
            None => Bound::Included(prefix.clone()),
        };
        let mut matching = source
            .range((start, Bound::Unbounded))
            .take_while(|(key, _)| key.starts_with(&prefix))
            .filter(|(_, obj)| options.filter.matches(obj));
        let mut items = Vec::new();
        let mut last_key = None;
        for (key, obj) in matching.by_ref() {
            items.push(Arc::clone(obj));
            last_key = Some(key.clone());
            if limit.is_some_and(|l| items.len() >= l) {
                break;
            }
        }
        let remaining = if limit.is_some() {
            matching.count() as u64
        } else {
            0
        };
        let (continue_token, remaining_item_count) = match last_key {
            Some(key) if remaining > 0 => {
                let relative = key[prefix.len()..].to_string();
                let count = (!options.filter.has_selectors()).then_some(remaining);
                (Some(encode_continue(list_rv as i64, &relative)), count)
            }
            _ => (None, None),
        };
        Ok(ListPage {
            items,
            resource_version: list_rv,
            continue_token,
            remaining_item_count,
        })
    }

    /// Keys of a namespaced list start with `namespace/`; continue tokens hold keys relative to it.
    fn list_prefix(&self, resource: ResourceId, options: &ListOptions) -> String {
        match &options.filter.namespace {
            Some(ns) if self.def(resource).namespaced => format!("{ns}/"),
            _ => String::new(),
        }
    }

    fn plan_read(
        &self,
        options: &ListOptions,
        current: u64,
        compacted: u64,
    ) -> Result<ReadPlan, StoreError> {
        let latest = |paged| ReadPlan {
            at: None,
            start_after: None,
            paged,
        };
        let too_large = |requested, retry_after_seconds| StoreError::TooLargeResourceVersion {
            requested,
            current,
            retry_after_seconds,
        };
        match ListSource::of(options)? {
            ListSource::WatchCache { not_older_than } if not_older_than > current => {
                Err(too_large(not_older_than, 1))
            }
            ListSource::WatchCache { .. } => Ok(latest(false)),
            ListSource::EtcdLatest { not_older_than } if not_older_than > current => {
                Err(too_large(not_older_than, 0))
            }
            ListSource::EtcdLatest { .. } => Ok(latest(true)),
            // etcd's own error, untranslated (exchange 63).
            ListSource::EtcdExact(rv) if rv > current => Err(StoreError::FutureRevision),
            ListSource::EtcdExact(rv) if rv < compacted => Err(StoreError::ListTooOld),
            ListSource::EtcdExact(rv) => Ok(ReadPlan {
                at: Some(rv),
                start_after: None,
                paged: true,
            }),
            ListSource::EtcdContinue { at, start_after } => match at {
                Some(rv) if rv < compacted => Err(StoreError::ContinueTooOld {
                    fresh_continue: encode_continue(-1, &start_after),
                }),
                at => Ok(ReadPlan {
                    at,
                    start_after: Some(start_after),
                    paged: true,
                }),
            },
        }
    }
}

fn encode_continue(rv: i64, relative_key: &str) -> String {
    let token = ContinueToken {
        v: "meta.k8s.io/v1".to_string(),
        rv,
        start: format!("{relative_key}\0"),
    };
    let json = serde_json::to_vec(&token).unwrap_or_default();
    TOKEN_ENCODING.encode(json)
}

fn decode_continue(token: &str) -> Result<ContinueToken, StoreError> {
    let invalid = |why: String| {
        StoreError::BadRequest(format!(
            "invalid continue token: continue key is not valid: {why}"
        ))
    };
    let bytes = TOKEN_ENCODING
        .decode(token.trim_end_matches('='))
        .map_err(|e| invalid(e.to_string()))?;
    let token: ContinueToken =
        serde_json::from_slice(&bytes).map_err(|e| invalid(e.to_string()))?;
    if token.v != "meta.k8s.io/v1" {
        return Err(invalid(format!(
            "incorrect encoded start resourceVersion (version {})",
            token.v
        )));
    }
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_in_the_real_format() {
        // Exchange 14's token decodes to rv 203, start "list-b\0".
        let real = "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MjAzLCJzdGFydCI6Imxpc3QtYlx1MDAwMCJ9";
        let token = decode_continue(real).map(|t| (t.rv, t.start));
        assert_eq!(token, Ok((203, "list-b\0".to_string())));
        assert_eq!(encode_continue(203, "list-b"), real);
        // Exchange 53's fresh token continues at version -1.
        assert_eq!(
            encode_continue(-1, "keep-1"),
            "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6LTEsInN0YXJ0Ijoia2VlcC0xXHUwMDAwIn0"
        );
    }

    #[test]
    fn garbage_tokens_are_bad_requests() {
        let err = decode_continue("garbage").err();
        assert!(
            matches!(err, Some(StoreError::BadRequest(m)) if m.starts_with("invalid continue token: continue key is not valid:"))
        );
    }
}
