//! [`Pager`]: a LIST read page by page with `limit` and `continue`, restarting when the
//! snapshot it reads expires.
//!
//! Contract:
//! - The first page is requested with the caller's [`ListParams`]; each next page with the
//!   previous page's continue token instead of a resourceVersion (the token pins the snapshot).
//!   The list ends with the page whose continue token is absent or empty.
//! - A 410 on a *continue* page means the snapshot was compacted away mid-list. The pager then
//!   starts over from the first page and marks that page [`Page::restarted`]: the caller must
//!   discard what it gathered so far, since the new pages are a different snapshot. After
//!   [`MAX_RESTARTS`] restarts of the same pager the 410 is returned instead, so a server
//!   compacting faster than we can read cannot keep us looping.
//! - A 410 on the first page (a resourceVersion too old for an `Exact` read) is returned as it
//!   is: only the caller knows whether to retry without a resourceVersion.
//! - After the last page or an error, [`Pager::next_page`] returns `None`.
//! - Each page's body is decoded item by item as it arrives ([`read_list`]), never buffered
//!   whole: a `resourceVersion=0` list ignores `limit` and can be hundreds of megabytes. A
//!   protobuf body (by its `Content-Type`) is read the same way, each item transcoded to the
//!   JSON text of the members the reader keeps ([`negotiate`](super::negotiate)).
//! - Items are decoded with `serde_json::from_slice::<K>` ([`Pager::new`]) or with a caller's
//!   [`ItemDecoder`] ([`Pager::with_item_decoder`], [`Api::pager_with`](super::Api::pager_with));
//!   paging, restarts and errors are the same either way.
//!
//! [`Api::list`](super::Api::list) collects all pages; a reflector can use the pager directly
//! to process one page at a time.

use serde::de::DeserializeOwned;
use url::Url;

use super::decode::{ItemDecode, ItemDecoder};
use super::error::Error;
use super::list_decoder::read_list_decoding;
use super::negotiate::answered_protobuf;
use super::params::ListParams;
use super::protobuf::Selection;
use super::protobuf_answers;
use super::request::ApiRequest;
use super::transport::Client;
use kube_gc_api::List;

/// How many times one list restarts after its continue token expired before giving up.
pub const MAX_RESTARTS: u32 = 3;

/// One page of a paged list.
#[derive(Clone, Debug, PartialEq)]
pub struct Page<K> {
    /// The objects and the list metadata (resourceVersion of the snapshot, continue token).
    pub list: List<K>,
    /// This page starts a new snapshot after the old one expired: drop earlier pages.
    pub restarted: bool,
}

#[derive(Debug)]
enum Cursor {
    First,
    Continue(String),
    Done,
}

/// Reads a list one page at a time.
#[derive(Debug)]
pub struct Pager<K> {
    client: Client,
    url: Url,
    accept: &'static str,
    params: ListParams,
    cursor: Cursor,
    restarts: u32,
    /// What turns each item's text into a `K`.
    decode: ItemDecode<K>,
    /// The members of each item a protobuf answer is transcoded with.
    keep: Selection,
}

impl<K: DeserializeOwned> Pager<K> {
    /// A pager over the collection at `url`, sending `accept` and `params` (whose
    /// `continue_token`, if set, is where it starts), decoding items as `K` with serde.
    pub fn new(client: Client, url: Url, accept: &'static str, params: ListParams) -> Self {
        Self::decoding(client, url, accept, params, ItemDecode::serde())
    }
}

impl<K: 'static> Pager<K> {
    /// Like [`new`](Self::new), decoding each item with `decoder`.
    pub fn with_item_decoder(
        client: Client,
        url: Url,
        accept: &'static str,
        params: ListParams,
        decoder: ItemDecoder<K>,
    ) -> Self {
        Self::decoding(client, url, accept, params, ItemDecode::custom(decoder))
    }
}

impl<K> Pager<K> {
    fn decoding(
        client: Client,
        url: Url,
        accept: &'static str,
        params: ListParams,
        decode: ItemDecode<K>,
    ) -> Self {
        let cursor = match &params.continue_token {
            Some(token) => Cursor::Continue(token.clone()),
            None => Cursor::First,
        };
        Pager {
            client,
            url,
            accept,
            params,
            cursor,
            restarts: 0,
            decode,
            keep: Selection::all(),
        }
    }

    /// Transcodes a protobuf answer's items keeping only `keep`, the members the reader reads
    /// ([`negotiate`](super::negotiate) chose the `Accept` that may bring one).
    pub(crate) fn keeping(mut self, keep: Selection) -> Self {
        self.keep = keep;
        self
    }

    /// The next page, `None` once the list is complete or failed.
    pub async fn next_page(&mut self) -> Option<Result<Page<K>, Error>> {
        let mut restarted = false;
        loop {
            let token = match &self.cursor {
                Cursor::Done => return None,
                Cursor::First => None,
                Cursor::Continue(token) => Some(token.clone()),
            };
            let on_continue_page = token.is_some();
            match self.fetch(token).await {
                Ok(list) => {
                    self.cursor = match list.next_page() {
                        Some(next) => Cursor::Continue(next.to_owned()),
                        None => Cursor::Done,
                    };
                    return Some(Ok(Page { list, restarted }));
                }
                Err(e) if on_continue_page && e.is_gone() && self.restarts < MAX_RESTARTS => {
                    tracing::debug!(url = %self.url, error = %e, "continue token expired; restarting the list");
                    self.restarts += 1;
                    self.cursor = Cursor::First;
                    restarted = true;
                }
                Err(e) => {
                    self.cursor = Cursor::Done;
                    return Some(Err(e));
                }
            }
        }
    }

    /// Reads every remaining page into one list, whose metadata is the last page's (the
    /// snapshot's resourceVersion, no continue token).
    pub async fn collect(self) -> Result<List<K>, Error> {
        Ok(self.collect_pages().await?.0)
    }

    /// Like [`collect`](Self::collect), also telling how many pages the list's snapshot came
    /// in (a reflector learns from it whether the server pages at all, i.e. has no watch cache).
    pub async fn collect_pages(mut self) -> Result<(List<K>, u32), Error> {
        let mut all: Option<List<K>> = None;
        let mut pages = 0;
        while let Some(page) = self.next_page().await {
            let page = page?;
            match &mut all {
                Some(all) if !page.restarted => {
                    all.items.extend(page.list.items);
                    all.metadata = page.list.metadata;
                    pages += 1;
                }
                _ => {
                    all = Some(page.list);
                    pages = 1;
                }
            }
        }
        // `next_page` yields at least one page or an error before `None`.
        Ok((all.unwrap_or_default(), pages))
    }

    async fn fetch(&self, continue_token: Option<String>) -> Result<List<K>, Error> {
        let params = ListParams {
            continue_token,
            ..self.params.clone()
        };
        let request = ApiRequest::get(self.url.clone())
            .with_query(&params.query())
            .with_accept(self.accept);
        let response = self.client.send(&request).await?;
        // Decoded as it streams in: a `resourceVersion=0` list ignores `limit` and may be
        // hundreds of megabytes in one body. By what the server sent, not what was asked.
        if answered_protobuf(&response) {
            protobuf_answers::read_list(response.bytes_stream(), &self.decode, &self.keep).await
        } else {
            read_list_decoding(response.bytes_stream(), self.decode.clone()).await
        }
    }
}
