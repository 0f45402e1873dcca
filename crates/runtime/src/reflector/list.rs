//! The list phase: the I/O of [`State::Listing`](super::State::Listing) and
//! [`State::StreamingList`](super::State::StreamingList).
//!
//! Contract:
//! - Either way a complete list reaches the sink as one [`ReflectorEvent::Replaced`]; a list
//!   after the first of the same run is counted as a relist.
//! - `Listing` makes a LIST, asking for a resourceVersion as client-go does ([`ListFrom`]),
//!   paged ([`ReflectorConfig::page_size`](super::ReflectorConfig::page_size), 500) except a
//!   relist at the last synced version ([`state::list_limit`] says why); [`state::after_list`]
//!   says where to go next.
//! - `StreamingList` makes one watch request with `sendInitialEvents=true`, whose first events
//!   are the current objects, ending at a bookmark annotated `k8s.io/initial-events-end`; the
//!   same stream then goes on as the watch, handed to `Watching`. If the server refuses it
//!   (the `WatchList` feature gate off) the reflector lists by LIST from then on; if it fails,
//!   goes unanswered, stalls or ends before its initial events do, this one list falls back to
//!   a LIST ([`state::after_streaming_list`]).

use futures_util::StreamExt;

use super::state::{self, ListBy, ListFrom, State, StreamingListEnd};
use super::watch::{is_malformed, OpenWatch, Opened};
use super::{ListWatch, Listed, ReflectorEvent, ReflectorSink, Run};
use crate::cache::Cacheable;
use kube_gc_api::WatchEvent;
use kube_gc_client::availability::warn_unless_unavailable;
use kube_gc_client::{ApiErrorKind, Error, ListParams, WatchParams};

impl<L, S> Run<'_, L, S>
where
    L: ListWatch,
    L::Object: Cacheable,
    S: ReflectorSink<L::Object> + ?Sized,
{
    /// `Listing`: a paged LIST.
    pub(super) async fn list(&mut self, from: ListFrom) -> State {
        let params = ListParams {
            label_selector: self.config.label_selector.clone(),
            field_selector: self.config.field_selector.clone(),
            limit: state::list_limit(&from, self.config.page_size, self.server_pages),
            resource_version: from.resource_version().map(str::to_owned),
            ..ListParams::default()
        };
        let next = match self.source.list(&params).await {
            Ok(Listed { list, paged }) => {
                self.answered();
                // Only a list at `0` can tell: the watch cache answers it whole, whatever the
                // limit, so pages mean there is no watch cache (a consistent read from etcd is
                // paged either way).
                if paged && from == ListFrom::AnyCached {
                    self.server_pages = true;
                }
                let resource_version = list.metadata.resource_version.unwrap_or_default();
                self.deliver_list(list.items, resource_version.clone());
                state::after_list(&from, Ok(resource_version), self.list_by)
            }
            Err(e) => {
                warn_unless_unavailable!(e, resource = %self.resource, err = %e, ?from, "reflector list failed");
                self.tell_owner(&e);
                state::after_list(&from, Err(&e), self.list_by)
            }
        };
        self.resolve(next)
    }

    fn deliver_list(&mut self, objects: Vec<L::Object>, resource_version: String) {
        // A relist is a list this run needed because its watch could not resume. The first
        // list of a run is not one, even when the run is a shared source restarting for a
        // subscriber that joined late (the counters outlive the run).
        self.metrics.listed(self.listed_before);
        self.listed_before = true;
        self.sink.apply(ReflectorEvent::Replaced {
            objects,
            resource_version,
        });
    }

    /// `StreamingList`: the initial events of a streaming list, delivered as one list, and the
    /// stream kept for `Watching`; or, if they cannot be had, the fallback to `Listing`.
    pub(super) async fn stream_list(&mut self, fallback: ListFrom) -> State {
        let end = self.streaming_list().await;
        if end == StreamingListEnd::Incomplete {
            self.metrics.watch_list_fell_back();
        }
        state::after_streaming_list(fallback, end)
    }

    /// Sends a streaming list and reads its initial events; if they end at their bookmark,
    /// delivers them and keeps the stream in `self.streamed`.
    async fn streaming_list(&mut self) -> StreamingListEnd {
        self.metrics.watch_list_started();
        self.metrics.watch_started();
        let params = WatchParams {
            send_initial_events: true,
            ..self.watch_params(None)
        };
        let mut open = match self.open_watch(&params).await {
            Opened::Stream(open) => {
                self.answered();
                open
            }
            Opened::Failed(e) => {
                self.streaming_list_failed(&e);
                return StreamingListEnd::Incomplete;
            }
            Opened::Unanswered => return StreamingListEnd::Incomplete,
        };
        let Some((objects, resource_version)) = self.initial_events(&mut open).await else {
            return StreamingListEnd::Incomplete;
        };
        self.deliver_list(objects, resource_version.clone());
        self.metrics.watch_worked();
        self.streamed = Some(open);
        StreamingListEnd::Complete { resource_version }
    }

    /// Logs why a streaming list request failed; if the server refuses streaming lists, lists
    /// by LIST from now on. (The owner is not told: the LIST that follows is the request that
    /// counts, and it tells the owner if it fails too.)
    fn streaming_list_failed(&mut self, error: &Error) {
        if refuses_watch_list(error) {
            tracing::info!(error = %error, "the API server refuses streaming lists; using LIST from now on");
            self.list_by = ListBy::Paging;
        } else {
            warn_unless_unavailable!(error, resource = %self.resource, err = %error, "streaming list failed; falling back to LIST");
        }
    }

    /// The objects of a streaming list and the version of the bookmark that ends them; `None`
    /// if anything else comes first, or if the watchdog finds the stream stalled first. A real
    /// API server may never send that bookmark: with no resourceVersion asked, it waits for an
    /// event of the resource at or after etcd's revision, which a resource nobody writes never
    /// has, and the stream runs to its timeout and ends (exchanges 121, 122). Even a malformed
    /// line ends it: skipping it would leave an object missing from the cache until it next
    /// changes.
    async fn initial_events(
        &mut self,
        open: &mut OpenWatch<L::Object>,
    ) -> Option<(Vec<L::Object>, String)> {
        let mut objects = Vec::new();
        loop {
            let item = tokio::select! {
                biased;
                item = open.stream.next() => item,
                () = open.watchdog.stalled(objects.len() as u64) => return None,
            };
            match item {
                Some(Ok(WatchEvent::Added(object))) => objects.push(object),
                Some(Ok(WatchEvent::Bookmark(b))) if b.is_initial_events_end() => {
                    return Some((objects, b.metadata.resource_version));
                }
                // An ordinary bookmark's version means nothing before the set is complete.
                Some(Ok(WatchEvent::Bookmark(_))) => {}
                other => {
                    if matches!(&other, Some(Err(e)) if is_malformed(e)) {
                        self.metrics.malformed_event();
                    }
                    let event = other.map(|item| item.map(|e| e.event_type()));
                    tracing::warn!(
                        ?event,
                        "streaming list ended before its initial events did; falling back to LIST"
                    );
                    return None;
                }
            }
        }
    }
}

/// The server does not serve streaming lists. A v1.28 kube-apiserver, whose `WatchList` feature
/// gate is alpha and off by default, answers one with 422 `Invalid` and a `FieldValueForbidden`
/// cause on `sendInitialEvents`, before any stream (exchanges 118, 119). A 400 `BadRequest`, a
/// parameter the server will not take, is read the same way.
fn refuses_watch_list(error: &Error) -> bool {
    matches!(
        error.kind(),
        Some(ApiErrorKind::Invalid | ApiErrorKind::BadRequest)
    )
}
