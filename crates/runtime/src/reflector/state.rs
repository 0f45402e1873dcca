//! The reflector's states and the decisions between them, as pure functions with no I/O.
//!
//! Each state is named after what the loop is waiting for; the diagram of the transitions is in
//! the parent module's contract.
//!
//! - [`State::StreamingList`] waits for the initial events of a streaming list (WatchList) and
//!   the bookmark that ends them; the same stream then goes on as the watch, so it is followed
//!   in [`State::Watching`]. If the streaming list cannot be completed, [`after_streaming_list`]
//!   falls back to a paged [`State::Listing`] at once.
//! - [`State::Listing`] waits for a complete (paged) list; [`ListFrom`] says which
//!   resourceVersion it asks for (client-go's rules: `0` the first time, the last synced version
//!   on a relist, none at all once that one is known to be unavailable), and [`list_limit`]
//!   whether it is paged.
//! - [`State::Watching`] waits for the events of a watch from a resourceVersion.
//! - [`State::BackingOff`] waits out a delay, then enters the state it holds.
//!
//! Where a list is due, [`ListBy::list`] says which of the two list states makes it: a
//! streaming list while they are enabled and the server has not refused one, else a LIST.
//!
//! The run loop (in the parent module) does the I/O and calls [`after_streaming_list`],
//! [`after_list`] and [`after_watch`] to learn where to go next; the last two answer a [`Next`],
//! and the loop turns a [`Next::BackOff`] into a [`State::BackingOff`] with a delay from its
//! [`Backoff`](super::backoff::Backoff).

use std::time::Duration;

use kube_gc_client::{ApiErrorKind, Error};

/// Which resourceVersion a list asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListFrom {
    /// `resourceVersion=0`: whatever the API server's watch cache holds. Cheap, possibly a
    /// little stale; the first list.
    AnyCached,
    /// A state at least as new as the last one synced: a relist never goes back in time.
    LastSynced(String),
    /// No resourceVersion: a consistent read from etcd. The fallback when the last synced
    /// version is expired (410) or not yet reached by this API server (504).
    Latest,
}

impl ListFrom {
    /// The `resourceVersion` query value.
    pub fn resource_version(&self) -> Option<&str> {
        match self {
            ListFrom::AnyCached => Some("0"),
            ListFrom::LastSynced(rv) => Some(rv),
            ListFrom::Latest => None,
        }
    }
}

/// The `limit` of a list asked `from`, for lists of `page_size`: client-go's pager rules.
///
/// A relist at the last synced version goes **unpaged**, because of where a real API server
/// reads a LIST from. With a non-zero `resourceVersion`, a `limit` and no
/// `resourceVersionMatch`, kube-apiserver reads etcd at *exactly* that revision (the legacy
/// rule for `limit`): after an API server restart that is the old state at the old version,
/// and the watch from it is refused with 410 again, forever (exchanges 56, 59). Without `limit`
/// the same LIST is served from the watch cache as "not older than" that version: the present,
/// at the current version, from which the watch works (exchanges 57, 60). (`limit` with
/// `resourceVersionMatch=NotOlderThan` would give the present too, read from etcd, exchange 58;
/// client-go drops `limit` instead, and so does kube-gc.) `0` goes to the watch cache, which
/// ignores `limit`; no resourceVersion is a consistent read from etcd, paged.
///
/// `server_pages`: a list at `0` once came back in pages, so this server has no watch cache for
/// the resource (client-go's `paginatedResult`); then every list keeps paging, since there is
/// no cache to protect etcd from one huge read.
pub fn list_limit(from: &ListFrom, page_size: u32, server_pages: bool) -> Option<u32> {
    match from {
        ListFrom::LastSynced(_) if !server_pages => None,
        _ => Some(page_size).filter(|size| *size > 0),
    }
}

/// What the reflector is waiting for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum State {
    /// The initial events of a streaming list, up to the bookmark that ends them.
    StreamingList {
        /// What the paged LIST made instead, should the streaming list fail, asks for. (The
        /// streaming list itself asks for no resourceVersion: the latest state.)
        fallback: ListFrom,
    },
    /// A complete list of the resource, by LIST.
    Listing {
        /// The resourceVersion asked for.
        from: ListFrom,
    },
    /// The events of a watch starting after `resource_version`.
    Watching {
        /// The last resourceVersion seen: of the list, or of the latest event or bookmark.
        resource_version: String,
    },
    /// The end of a delay after a failure.
    BackingOff {
        /// How long.
        delay: Duration,
        /// Where to go afterwards.
        then: Box<State>,
    },
}

/// How the reflector makes a list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListBy {
    /// A streaming list (WatchList), which falls back to a LIST when it fails.
    StreamingList,
    /// A paged LIST.
    Paging,
}

impl ListBy {
    /// How a reflector configured with `use_watch_list` starts to list.
    pub fn configured(use_watch_list: bool) -> ListBy {
        if use_watch_list {
            ListBy::StreamingList
        } else {
            ListBy::Paging
        }
    }

    /// The state that makes a list asking `from`.
    pub fn list(self, from: ListFrom) -> State {
        match self {
            ListBy::StreamingList => State::StreamingList { fallback: from },
            ListBy::Paging => State::Listing { from },
        }
    }
}

/// How a streaming list ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StreamingListEnd {
    /// Its initial events ended at a bookmark of this resourceVersion; the stream goes on.
    Complete {
        /// The end bookmark's resourceVersion: the version of the list.
        resource_version: String,
    },
    /// Refused, failed, unanswered, stalled, or ended before its initial events did.
    Incomplete,
}

/// Where to go after a streaming list that may have fallen back to a LIST asking `fallback`.
///
/// A complete one goes on as the watch on its own stream. An incomplete one is replaced at once
/// by the LIST client-go makes without WatchList: its failure says nothing about the LIST's, so
/// there is nothing to wait for (client-go's `fallbackToList`).
pub fn after_streaming_list(fallback: ListFrom, end: StreamingListEnd) -> State {
    match end {
        StreamingListEnd::Complete { resource_version } => State::Watching { resource_version },
        StreamingListEnd::Incomplete => State::Listing { from: fallback },
    }
}

/// Where to go after a list or a watch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Next {
    /// Straight into this state.
    Go(State),
    /// Into this state after a backoff delay of at least `retry_after`.
    BackOff {
        /// The state to enter after the delay.
        then: State,
        /// The wait the server asked for, if any.
        retry_after: Option<Duration>,
    },
}

/// How a watch ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WatchEnd {
    /// The stream ended: the server's timeout, a cut connection, a restart. Nothing is wrong
    /// with the resourceVersion, so the next watch resumes from it.
    Closed,
    /// 410 (HTTP, or an `ERROR` event): the resourceVersion left the server's window.
    Expired,
    /// A failure that may clear up on its own: connection refused, 429, 5xx, server timeout.
    Retryable {
        /// The wait the server asked for.
        retry_after: Option<Duration>,
    },
    /// Any other failure (403, a bad request): start over from a list.
    Failed,
}

impl WatchEnd {
    /// How an error that ended (or prevented) a watch is handled.
    pub fn from_error(error: &Error) -> WatchEnd {
        if error.is_gone() {
            WatchEnd::Expired
        } else if error.is_retryable() {
            WatchEnd::Retryable {
                retry_after: error.retry_after(),
            }
        } else {
            WatchEnd::Failed
        }
    }
}

/// Whether a list error means the resourceVersion asked for cannot be served: expired (410) or
/// ahead of this API server (504 `ResourceVersionTooLarge`).
pub fn version_unavailable(error: &Error) -> bool {
    error.is_gone() || error.kind() == Some(ApiErrorKind::ResourceVersionTooLarge)
}

/// Where to go after a LIST asked `from` ended with `result` (its resourceVersion, or the
/// error); a list made again is made `by`.
pub fn after_list(from: &ListFrom, result: Result<String, &Error>, by: ListBy) -> Next {
    match result {
        Ok(resource_version) => Next::Go(State::Watching { resource_version }),
        // client-go retries at once with a consistent read: the version is gone for good, so
        // waiting would not help, and a consistent list always succeeds if the server is up.
        Err(e) if version_unavailable(e) && *from != ListFrom::Latest => {
            Next::Go(by.list(ListFrom::Latest))
        }
        Err(e) => Next::BackOff {
            then: by.list(from.clone()),
            retry_after: e.retry_after(),
        },
    }
}

/// Where to go after a watch from (last) `resource_version` ended with `end`; a relist is made
/// `by`. `healthy` is false for a watch that delivered no event and lasted under a second: a
/// server that closes every watch at once must not be hammered (client-go's "very short watch").
pub fn after_watch(resource_version: String, end: WatchEnd, healthy: bool, by: ListBy) -> Next {
    let rewatch = State::Watching {
        resource_version: resource_version.clone(),
    };
    // A relist after a 410 asks for the last synced version, not for a consistent read: the
    // API server answers it from its watch cache if it can, and `after_list` falls back to a
    // consistent read if it cannot (client-go does the same).
    let relist = by.list(ListFrom::LastSynced(resource_version));
    match end {
        WatchEnd::Closed if healthy => Next::Go(rewatch),
        WatchEnd::Closed => Next::BackOff {
            then: rewatch,
            retry_after: None,
        },
        WatchEnd::Expired if healthy => Next::Go(relist),
        WatchEnd::Expired => Next::BackOff {
            then: relist,
            retry_after: None,
        },
        WatchEnd::Retryable { retry_after } => Next::BackOff {
            then: rewatch,
            retry_after,
        },
        WatchEnd::Failed => Next::BackOff {
            then: relist,
            retry_after: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderMap;
    use kube_gc_api::{Status, StatusReason};
    use kube_gc_client::ApiError;

    fn api_error(code: u16, body: &str) -> Error {
        ApiError::from_response(code, &HeaderMap::new(), body.as_bytes()).into()
    }

    fn expired() -> Error {
        api_error(410, r#"{"kind":"Status","reason":"Expired","code":410}"#)
    }

    fn too_large() -> Error {
        api_error(
            504,
            r#"{"kind":"Status","reason":"Timeout","code":504,"message":"Too large resource version: 9, current: 5","details":{"causes":[{"reason":"ResourceVersionTooLarge","message":"Too large resource version"}]}}"#,
        )
    }

    fn watching(rv: &str) -> State {
        State::Watching {
            resource_version: rv.into(),
        }
    }

    fn listing(from: ListFrom) -> State {
        State::Listing { from }
    }

    #[test]
    fn the_first_list_asks_the_cache_and_a_relist_never_goes_back_in_time() {
        assert_eq!(ListFrom::AnyCached.resource_version(), Some("0"));
        assert_eq!(
            ListFrom::LastSynced("7".into()).resource_version(),
            Some("7")
        );
        assert_eq!(ListFrom::Latest.resource_version(), None);
    }

    #[test]
    fn a_relist_at_the_last_synced_version_is_unpaged_unless_the_server_has_no_watch_cache() {
        let relist = ListFrom::LastSynced("1587".into());
        // Paged, a real API server reads etcd at exactly 1587, the state before its restart
        // (exchange 56); unpaged, it serves its watch cache's present (exchange 57).
        assert_eq!(list_limit(&relist, 500, false), None);
        assert_eq!(list_limit(&ListFrom::AnyCached, 500, false), Some(500));
        assert_eq!(list_limit(&ListFrom::Latest, 500, false), Some(500));
        // A first list that came back in pages: no watch cache, keep paging.
        assert_eq!(list_limit(&relist, 500, true), Some(500));
        // Page size 0 switches paging off everywhere.
        assert_eq!(list_limit(&ListFrom::Latest, 0, false), None);
    }

    #[test]
    fn a_list_leads_to_a_watch_from_its_version() {
        assert_eq!(
            after_list(&ListFrom::AnyCached, Ok("12".into()), ListBy::Paging),
            Next::Go(watching("12"))
        );
    }

    #[test]
    fn an_unavailable_version_falls_back_to_a_consistent_list_at_once() {
        let from = ListFrom::LastSynced("3".into());
        for error in [expired(), too_large()] {
            assert_eq!(
                after_list(&from, Err(&error), ListBy::Paging),
                Next::Go(listing(ListFrom::Latest)),
                "{error}"
            );
        }
        // A consistent list has nothing to fall back to: back off and try it again.
        assert_eq!(
            after_list(&ListFrom::Latest, Err(&expired()), ListBy::Paging),
            Next::BackOff {
                then: listing(ListFrom::Latest),
                retry_after: None
            }
        );
    }

    #[test]
    fn other_list_errors_back_off_and_keep_the_version_and_the_servers_wait() {
        let mut headers = HeaderMap::new();
        headers.insert(http::header::RETRY_AFTER, "4".parse().unwrap());
        let throttled: Error = ApiError::from_response(429, &headers, b"").into();
        assert_eq!(
            after_list(&ListFrom::AnyCached, Err(&throttled), ListBy::Paging),
            Next::BackOff {
                then: listing(ListFrom::AnyCached),
                retry_after: Some(Duration::from_secs(4))
            }
        );
    }

    #[test]
    fn a_closed_watch_resumes_from_the_last_version_backing_off_only_if_it_was_short() {
        assert_eq!(
            after_watch("9".into(), WatchEnd::Closed, true, ListBy::Paging),
            Next::Go(watching("9"))
        );
        assert_eq!(
            after_watch("9".into(), WatchEnd::Closed, false, ListBy::Paging),
            Next::BackOff {
                then: watching("9"),
                retry_after: None
            }
        );
    }

    #[test]
    fn an_expired_watch_relists_from_the_last_synced_version() {
        let relist = listing(ListFrom::LastSynced("9".into()));
        assert_eq!(
            after_watch("9".into(), WatchEnd::Expired, true, ListBy::Paging),
            Next::Go(relist.clone())
        );
        assert_eq!(
            after_watch("9".into(), WatchEnd::Expired, false, ListBy::Paging),
            Next::BackOff {
                then: relist,
                retry_after: None
            }
        );
    }

    #[test]
    fn watch_errors_are_classified_like_client_go() {
        assert_eq!(WatchEnd::from_error(&expired()), WatchEnd::Expired);
        let gone = Error::from(Status {
            code: Some(410),
            reason: StatusReason::Gone,
            ..Status::default()
        });
        assert_eq!(WatchEnd::from_error(&gone), WatchEnd::Expired);
        assert_eq!(
            WatchEnd::from_error(&api_error(503, "")),
            WatchEnd::Retryable { retry_after: None }
        );
        let refused = Error::from(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
        assert_eq!(
            WatchEnd::from_error(&refused),
            WatchEnd::Retryable { retry_after: None }
        );
        assert_eq!(WatchEnd::from_error(&api_error(403, "")), WatchEnd::Failed);
        assert_eq!(
            after_watch("5".into(), WatchEnd::Failed, true, ListBy::Paging),
            Next::BackOff {
                then: listing(ListFrom::LastSynced("5".into())),
                retry_after: None
            }
        );
        assert_eq!(
            after_watch(
                "5".into(),
                WatchEnd::Retryable {
                    retry_after: Some(Duration::from_secs(2))
                },
                true,
                ListBy::Paging
            ),
            Next::BackOff {
                then: watching("5"),
                retry_after: Some(Duration::from_secs(2))
            }
        );
    }

    #[test]
    fn a_list_is_made_by_streaming_list_while_the_server_may_serve_one() {
        assert_eq!(ListBy::configured(true), ListBy::StreamingList);
        assert_eq!(ListBy::configured(false), ListBy::Paging);
        assert_eq!(
            ListBy::StreamingList.list(ListFrom::AnyCached),
            State::StreamingList {
                fallback: ListFrom::AnyCached
            }
        );
        assert_eq!(
            ListBy::Paging.list(ListFrom::AnyCached),
            listing(ListFrom::AnyCached)
        );
    }

    #[test]
    fn a_complete_streaming_list_goes_on_as_the_watch_and_an_incomplete_one_lists_at_once() {
        let fallback = ListFrom::LastSynced("4".into());
        let complete = StreamingListEnd::Complete {
            resource_version: "6".into(),
        };
        assert_eq!(
            after_streaming_list(fallback.clone(), complete),
            watching("6")
        );
        assert_eq!(
            after_streaming_list(fallback.clone(), StreamingListEnd::Incomplete),
            listing(fallback)
        );
    }

    #[test]
    fn every_list_made_again_is_made_the_way_the_reflector_lists() {
        let streaming = |from| State::StreamingList { fallback: from };
        let by = ListBy::StreamingList;
        assert_eq!(
            after_list(&ListFrom::LastSynced("3".into()), Err(&expired()), by),
            Next::Go(streaming(ListFrom::Latest))
        );
        assert_eq!(
            after_list(&ListFrom::AnyCached, Err(&api_error(500, "")), by),
            Next::BackOff {
                then: streaming(ListFrom::AnyCached),
                retry_after: None
            }
        );
        assert_eq!(
            after_watch("9".into(), WatchEnd::Expired, true, by),
            Next::Go(streaming(ListFrom::LastSynced("9".into())))
        );
        // A watch that can resume resumes, however lists are made.
        assert_eq!(
            after_watch("9".into(), WatchEnd::Closed, true, by),
            Next::Go(watching("9"))
        );
    }
}
