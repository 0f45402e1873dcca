//! [`ListWatch`]: the two requests a reflector makes, behind a small trait.
//!
//! Contract:
//! - [`ListWatch::list`] returns one complete, consistent list: every page read and joined,
//!   a continue token that expired mid-way already handled (the client's
//!   [`Pager`](kube_gc_client::Pager) restarts the list, and drops the pages it read before), and
//!   the list's resourceVersion in its metadata. A 410 or a 504 "too large resource version" on
//!   the *first* page is returned as the error: only the reflector knows to retry without a
//!   resourceVersion. It says whether the server sent it in more than one page
//!   ([`Listed::paged`]).
//! - [`ListWatch::watch`] opens a watch and returns its events as a stream; errors while
//!   opening (an HTTP 410, a 429, a refused connection) are the call's error, errors later on are
//!   items of the stream (a malformed line is a [`Error::Decode`] item, a cut connection a
//!   transport error item).
//!
//! Implemented for the client's [`Api<K>`] (typed objects, or `serde_json::Value` for a
//! dynamic resource), for [`MetadataOnly`], which asks for `PartialObjectMetadata` whatever
//! `K` is, and for [`Decoded`], which turns each whole object into a `T` with a runtime
//! [`ItemDecoder`] as it is decoded (list items one by one, watch objects one by one), so only
//! the `T` is ever held. Tests implement it with canned answers.

use std::future::Future;

use futures_util::stream::BoxStream;
use futures_util::StreamExt;
use serde::de::DeserializeOwned;

use kube_gc_api::{List, PartialObjectMetadata, WatchEvent};
use kube_gc_client::{Api, Error, ItemDecoder, ListParams, ServerAvailability, WatchParams};

/// A complete list, and how it came.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Listed<T> {
    /// Every object, with the list's resourceVersion in the metadata.
    pub list: List<T>,
    /// The server sent it in more than one page.
    pub paged: bool,
}

impl<T> From<List<T>> for Listed<T> {
    /// A list that came in one response.
    fn from(list: List<T>) -> Self {
        Listed { list, paged: false }
    }
}

impl<T> Listed<T> {
    fn from_pages((list, pages): (List<T>, u32)) -> Self {
        Listed {
            list,
            paged: pages > 1,
        }
    }
}

/// A stream of watch events, or of the errors that interrupted them.
pub type EventStream<T> = BoxStream<'static, Result<WatchEvent<T>, Error>>;

/// Lists and watches one resource.
pub trait ListWatch: Send + Sync + 'static {
    /// What the lists and events carry.
    type Object: Send + 'static;

    /// Every page of the list `params` asks for (`params.limit` is the page size).
    fn list(
        &self,
        params: &ListParams,
    ) -> impl Future<Output = Result<Listed<Self::Object>, Error>> + Send;

    /// A watch as `params` asks for it.
    fn watch(
        &self,
        params: &WatchParams,
    ) -> impl Future<Output = Result<EventStream<Self::Object>, Error>> + Send;

    /// What is listed and watched, for the logs (e.g. `batch/v1/jobs`).
    fn describe(&self) -> String {
        String::new()
    }

    /// Whether the API server answers, as the client behind this source finds it: a reflector
    /// backing off because the server was unavailable retries as soon as it answers again.
    /// `None` (the default): it waits out its backoff.
    fn availability(&self) -> Option<ServerAvailability> {
        None
    }
}

impl<K: DeserializeOwned + Send + 'static> ListWatch for Api<K> {
    type Object = K;

    async fn list(&self, params: &ListParams) -> Result<Listed<K>, Error> {
        let pages = self.pager(params.clone()).collect_pages().await?;
        Ok(Listed::from_pages(pages))
    }

    async fn watch(&self, params: &WatchParams) -> Result<EventStream<K>, Error> {
        Ok(Api::watch(self, params).await?.boxed())
    }

    fn describe(&self) -> String {
        self.resource().path_name()
    }

    fn availability(&self) -> Option<ServerAvailability> {
        Some(self.client().availability().clone())
    }
}

/// Lists and watches only the objects' metadata (`PartialObjectMetadata`): what a controller
/// that reads no spec or status needs, at a fraction of the bytes.
#[derive(Clone, Debug)]
pub struct MetadataOnly<K>(pub Api<K>);

impl<K: DeserializeOwned + Send + 'static> ListWatch for MetadataOnly<K> {
    type Object = PartialObjectMetadata;

    async fn list(&self, params: &ListParams) -> Result<Listed<PartialObjectMetadata>, Error> {
        let pages = self
            .0
            .metadata_pager(params.clone())
            .collect_pages()
            .await?;
        Ok(Listed::from_pages(pages))
    }

    async fn watch(
        &self,
        params: &WatchParams,
    ) -> Result<EventStream<PartialObjectMetadata>, Error> {
        Ok(self.0.watch_metadata(params).await?.boxed())
    }

    fn describe(&self) -> String {
        self.0.resource().path_name()
    }

    fn availability(&self) -> Option<ServerAvailability> {
        Some(self.0.client().availability().clone())
    }
}

/// What the server sends of each object: the whole object, or its metadata only
/// (`PartialObjectMetadata`, which every resource, built-in or custom, can be read as).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Form {
    /// The whole object.
    #[default]
    Objects,
    /// `metadata` only.
    Metadata,
}

/// Lists and watches any resource, keeping of each object only what a runtime
/// [`ItemDecoder`] makes of it: e.g. a retention policy's judgement, computed by rules (CEL,
/// field paths) that no `Deserialize` impl could know. The server sends whole objects, or
/// their metadata only ([`Decoded::metadata`]).
pub struct Decoded<T> {
    api: Api<serde_json::Value>,
    decoder: ItemDecoder<T>,
    form: Form,
}

impl<T> Decoded<T> {
    /// The resource and namespace scope of `api`, each whole object decoded by `decoder`.
    pub fn new(api: Api<serde_json::Value>, decoder: ItemDecoder<T>) -> Self {
        Decoded::with_form(api, decoder, Form::Objects)
    }

    /// As [`new`](Self::new), but the server sends each object's metadata only, and that is
    /// what `decoder` reads.
    pub fn metadata(api: Api<serde_json::Value>, decoder: ItemDecoder<T>) -> Self {
        Decoded::with_form(api, decoder, Form::Metadata)
    }

    /// What `decoder` is given of each object, as `form` says.
    pub fn with_form(api: Api<serde_json::Value>, decoder: ItemDecoder<T>, form: Form) -> Self {
        Decoded { api, decoder, form }
    }
}

impl<T> Clone for Decoded<T> {
    fn clone(&self) -> Self {
        Decoded {
            api: self.api.clone(),
            decoder: self.decoder.clone(),
            form: self.form,
        }
    }
}

impl<T> std::fmt::Debug for Decoded<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decoded")
            .field("api", &self.api)
            .field("form", &self.form)
            .finish()
    }
}

impl<T: Send + 'static> ListWatch for Decoded<T> {
    type Object = T;

    async fn list(&self, params: &ListParams) -> Result<Listed<T>, Error> {
        let (params, decoder) = (params.clone(), self.decoder.clone());
        let pager = match self.form {
            Form::Objects => self.api.pager_with(params, decoder),
            Form::Metadata => self.api.metadata_pager_with(params, decoder),
        };
        Ok(Listed::from_pages(pager.collect_pages().await?))
    }

    async fn watch(&self, params: &WatchParams) -> Result<EventStream<T>, Error> {
        let decoder = self.decoder.clone();
        let stream = match self.form {
            Form::Objects => self.api.watch_with(params, decoder).await?,
            Form::Metadata => self.api.watch_metadata_with(params, decoder).await?,
        };
        Ok(stream.boxed())
    }

    fn describe(&self) -> String {
        self.api.resource().path_name()
    }

    fn availability(&self) -> Option<ServerAvailability> {
        Some(self.api.client().availability().clone())
    }
}
