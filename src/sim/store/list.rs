//! Listing: resourceVersion semantics, paging and continue tokens.
//!
//! Contract (a v1.28 server with its watch cache):
//! - `resourceVersion` unset: the latest state, paged by `limit`.
//! - `resourceVersion=0`: served "from the watch cache": the latest state, and `limit` is
//!   ignored — everything comes in one response.
//! - `resourceVersion=N` with `resourceVersionMatch=NotOlderThan` (or no match and no limit): the
//!   latest state; N beyond the current version → 504 "Too large resource version".
//! - `resourceVersion=N` with `Exact` (or no match but a limit): the state *at* N, rebuilt from the
//!   history; N older than the history window → 410 Expired.
//! - `continue`: an opaque token (base64url JSON `{"v","rv","start"}` like the real one) naming the
//!   version of the first page and the key to resume after; pages of one list all show that
//!   version. A token whose version left the window → 410 with a fresh token (version -1) that
//!   continues from the same key at the latest version; a malformed token → 400.
//! - `remainingItemCount` is set on non-final pages unless label or field selectors are used.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use base64::Engine;
use serde_json::Value;

use super::{Store, StoreError};
use crate::sim::filter::ObjectFilter;
use crate::sim::history::Rewound;
use crate::sim::resources::ResourceId;

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
        window_start: u64,
    ) -> Result<ReadPlan, StoreError> {
        if let Some(token) = options.continue_token.as_deref().filter(|t| !t.is_empty()) {
            let token = decode_continue(token)?;
            let start = token.start.trim_end_matches('\0').to_string();
            if token.rv < 0 {
                return Ok(ReadPlan {
                    at: None,
                    start_after: Some(start),
                    paged: true,
                });
            }
            let rv = token.rv as u64;
            if rv < window_start {
                return Err(StoreError::ContinueTooOld {
                    fresh_continue: encode_continue(-1, &start),
                });
            }
            return Ok(ReadPlan {
                at: Some(rv),
                start_after: Some(start),
                paged: true,
            });
        }
        let requested = options
            .resource_version
            .as_deref()
            .filter(|rv| !rv.is_empty());
        let Some(requested) = requested else {
            return Ok(ReadPlan {
                at: None,
                start_after: None,
                paged: true,
            });
        };
        let rv: u64 = requested.parse().map_err(|_| {
            StoreError::BadRequest(format!("invalid resource version: {requested}"))
        })?;
        let exact = match options.resource_version_match.as_deref() {
            Some("Exact") => true,
            Some("NotOlderThan") => false,
            Some(other) if !other.is_empty() => {
                return Err(StoreError::BadRequest(format!(
                    "unsupported resourceVersionMatch: {other}"
                )))
            }
            // Without a match, a non-zero version with a limit is read from etcd at exactly
            // that version; anything else is served by the watch cache.
            _ => rv != 0 && options.limit.is_some_and(|l| l > 0),
        };
        if rv > current {
            return Err(StoreError::TooLargeResourceVersion {
                requested: rv,
                current,
            });
        }
        if rv == 0 {
            return Ok(ReadPlan {
                at: None,
                start_after: None,
                paged: false,
            });
        }
        if !exact {
            return Ok(ReadPlan {
                at: None,
                start_after: None,
                paged: false,
            });
        }
        if rv < window_start {
            return Err(StoreError::ListTooOld);
        }
        Ok(ReadPlan {
            at: Some(rv),
            start_after: None,
            paged: true,
        })
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
