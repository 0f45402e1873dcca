//! [`Api<K>`]: the verbs on one resource, in one namespace or across all of them.
//!
//! Contract:
//! - `K` is what responses decode into: a typed object ([`Resource`]), `serde_json::Value` for
//!   any resource (built with [`Api::dynamic`]), or
//!   [`PartialObjectMetadata`] when only metadata is needed.
//! - Reads: [`get`](Api::get), [`list`](Api::list) (all pages), [`list_page`](Api::list_page),
//!   [`pager`](Api::pager), [`watch`](Api::watch). The `*_metadata` variants ask the server for
//!   metadata only (`Accept: …;as=PartialObjectMetadata[List];g=meta.k8s.io;v=v1`), whatever `K`.
//!   [`pager_with`](Api::pager_with) and [`watch_with`](Api::watch_with) read whole objects and
//!   turn each into a `T` with a caller's [`ItemDecoder`], whatever `K`; their `*_metadata_*`
//!   twins do the same with metadata only. These four ask for protobuf first where
//!   [`negotiate`](super::negotiate) says the reader can read it, and read whatever the server
//!   answers.
//! - Writes: [`create`](Api::create), [`replace`](Api::replace) (PUT; a stale
//!   `metadata.resourceVersion` is a 409), [`patch`](Api::patch) (merge, JSON or strategic),
//!   [`delete`](Api::delete) (answers [`DeleteResponse`]: the object if it lingers, a Status if
//!   it is gone), [`delete_collection`](Api::delete_collection), the `status` subresource and
//!   other subresources written whole ([`replace_subresource`](Api::replace_subresource)).
//! - An Api with no namespace on a namespaced resource lists and watches all namespaces; a
//!   request naming one object needs a namespace and uses the handle's, so reach single objects
//!   through [`Api::namespaced`] or [`Api::within`].
//! - Every call goes through the [`Client`]: throttle, credentials, typed errors.

use std::fmt;
use std::marker::PhantomData;

use http::Method;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use url::Url;

use super::decode::ItemDecoder;
use super::error::Error;
use super::list_decoder::read_list;
use super::negotiate;
use super::pager::Pager;
use super::params::{ListParams, Patch, PostParams, WatchParams};
use super::request::{ApiRequest, ACCEPT_JSON, CONTENT_TYPE_JSON};
use super::resource_ref::ResourceRef;
use super::transport::Client;
use super::watch_stream::WatchStream;
use kube_gc_api::{
    DeleteOptions, List, PartialObjectMetadata, Resource, Status, ACCEPT_PARTIAL_OBJECT_METADATA,
    ACCEPT_PARTIAL_OBJECT_METADATA_LIST, ACCEPT_PARTIAL_OBJECT_METADATA_OR_JSON,
};

const STATUS: Option<&str> = Some("status");

/// The verbs on one resource, scoped to a namespace or to all namespaces.
pub struct Api<K> {
    client: Client,
    resource: ResourceRef,
    namespace: Option<String>,
    _objects: PhantomData<fn() -> K>,
}

impl<K> Clone for Api<K> {
    fn clone(&self) -> Self {
        Api {
            client: self.client.clone(),
            resource: self.resource.clone(),
            namespace: self.namespace.clone(),
            _objects: PhantomData,
        }
    }
}

impl<K> fmt::Debug for Api<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Api")
            .field("resource", &self.resource)
            .field("namespace", &self.namespace)
            .finish()
    }
}

/// What a DELETE answered: the server returns the object while its deletion waits on
/// finalizers (Foreground, Orphan, or others), and a Status once it is gone.
#[derive(Clone, Debug, PartialEq)]
pub enum DeleteResponse<K> {
    /// The server answered with the object: still there with a `deletionTimestamp` (finalizers
    /// or a grace period keep it), or — for resources whose registry returns what it deleted,
    /// as Pods, Namespaces and Services do (exchange 67) — its final state, already gone. The
    /// answer alone cannot tell which; client-go's `Delete` reads neither.
    Pending(K),
    /// The object was removed (`status: Success`).
    Deleted(Box<Status>),
}

impl<K> DeleteResponse<K> {
    /// Whether the answer says the object is gone (a `Status`). `false` does not mean it
    /// still exists: see [`DeleteResponse::Pending`].
    pub fn is_deleted(&self) -> bool {
        matches!(self, DeleteResponse::Deleted(_))
    }
}

impl<K: Resource> Api<K> {
    /// `K` in `namespace` (ignored for cluster-scoped `K`).
    pub fn namespaced(client: Client, namespace: &str) -> Self {
        Self::dynamic(client, ResourceRef::of::<K>(), Some(namespace))
    }

    /// `K` in the configuration's default namespace.
    pub fn default_namespaced(client: Client) -> Self {
        let namespace = client.default_namespace().to_owned();
        Self::namespaced(client, &namespace)
    }

    /// `K` across all namespaces (or a cluster-scoped `K`).
    pub fn all(client: Client) -> Self {
        Self::dynamic(client, ResourceRef::of::<K>(), None)
    }
}

impl<K> Api<K> {
    /// Any resource, decoding responses as `K` (typically `serde_json::Value` or
    /// [`PartialObjectMetadata`]). `namespace` is ignored for cluster-scoped resources.
    pub fn dynamic(client: Client, resource: ResourceRef, namespace: Option<&str>) -> Self {
        let namespace = namespace.filter(|_| resource.namespaced).map(str::to_owned);
        Api {
            client,
            resource,
            namespace,
            _objects: PhantomData,
        }
    }

    /// The same resource in `namespace`: how a handle watching all namespaces reaches one of
    /// the objects it saw. Ignored for cluster-scoped resources.
    pub fn within(&self, namespace: &str) -> Self {
        Self::dynamic(self.client.clone(), self.resource.clone(), Some(namespace))
    }

    /// The resource this handle works on.
    pub fn resource(&self) -> &ResourceRef {
        &self.resource
    }

    /// The namespace, `None` for all namespaces or a cluster-scoped resource.
    pub fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    /// The client requests go through.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// A pager reading the list one page at a time, each item turned into a `T` by `decoder`
    /// as it arrives (no `K` is built).
    pub fn pager_with<T: 'static>(&self, params: ListParams, decoder: ItemDecoder<T>) -> Pager<T> {
        let asking = negotiate::objects(&self.resource, decoder.reads());
        self.negotiated_pager(params, decoder, asking)
    }

    /// WATCH, each object of an `ADDED`, `MODIFIED` or `DELETED` event turned into a `T` by
    /// `decoder`; bookmarks and errors decode as with [`watch`](Api::watch).
    pub async fn watch_with<T: 'static>(
        &self,
        params: &WatchParams,
        decoder: ItemDecoder<T>,
    ) -> Result<WatchStream<T>, Error> {
        let asking = negotiate::objects(&self.resource, decoder.reads());
        let request = self.watch_request(params, asking.accept);
        self.client.watch_with(&request, decoder, asking.keep).await
    }

    /// As [`pager_with`](Api::pager_with), but the server sends each item's metadata only
    /// (`PartialObjectMetadata`): `decoder` gets that text.
    pub fn metadata_pager_with<T: 'static>(
        &self,
        params: ListParams,
        decoder: ItemDecoder<T>,
    ) -> Pager<T> {
        let asking = negotiate::metadata(true, decoder.reads());
        self.negotiated_pager(params, decoder, asking)
    }

    /// As [`watch_with`](Api::watch_with), but the server sends each object's metadata only.
    pub async fn watch_metadata_with<T: 'static>(
        &self,
        params: &WatchParams,
        decoder: ItemDecoder<T>,
    ) -> Result<WatchStream<T>, Error> {
        let asking = negotiate::metadata(false, decoder.reads());
        let request = self.watch_request(params, asking.accept);
        self.client.watch_with(&request, decoder, asking.keep).await
    }

    /// A pager asking as `asking` says and keeping what it says of a protobuf answer.
    fn negotiated_pager<T: 'static>(
        &self,
        params: ListParams,
        decoder: ItemDecoder<T>,
        asking: negotiate::Asking,
    ) -> Pager<T> {
        Pager::with_item_decoder(
            self.client.clone(),
            self.collection_url(),
            asking.accept,
            params,
            decoder,
        )
        .keeping(asking.keep)
    }

    fn watch_request(&self, params: &WatchParams, accept: &'static str) -> ApiRequest {
        ApiRequest::get(self.collection_url())
            .with_query(&params.query())
            .with_accept(accept)
            .streaming()
    }

    fn collection_url(&self) -> Url {
        self.resource
            .collection_url(self.client.server(), self.namespace())
    }

    fn object_url(&self, name: &str, subresource: Option<&str>) -> Url {
        self.resource
            .object_url(self.client.server(), self.namespace(), name, subresource)
    }
}

impl<K: DeserializeOwned> Api<K> {
    /// GET one object.
    pub async fn get(&self, name: &str) -> Result<K, Error> {
        self.get_as(name, None, ACCEPT_JSON).await
    }

    /// GET one object, `None` if it does not exist.
    pub async fn get_opt(&self, name: &str) -> Result<Option<K>, Error> {
        match self.get(name).await {
            Ok(object) => Ok(Some(object)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// GET one object's metadata only.
    pub async fn get_metadata(&self, name: &str) -> Result<PartialObjectMetadata, Error> {
        self.get_as(name, None, ACCEPT_PARTIAL_OBJECT_METADATA)
            .await
    }

    /// GET the `status` subresource.
    pub async fn get_status(&self, name: &str) -> Result<K, Error> {
        self.get_as(name, STATUS, ACCEPT_JSON).await
    }

    async fn get_as<T: DeserializeOwned>(
        &self,
        name: &str,
        subresource: Option<&str>,
        accept: &'static str,
    ) -> Result<T, Error> {
        let request = ApiRequest::get(self.object_url(name, subresource)).with_accept(accept);
        self.client.send_for_json(&request).await
    }

    /// LIST every page (see [`Pager`] for paging and restarts). With no `limit` the server
    /// answers in one response.
    pub async fn list(&self, params: &ListParams) -> Result<List<K>, Error> {
        self.pager(params.clone()).collect().await
    }

    /// LIST every page, metadata only.
    pub async fn list_metadata(
        &self,
        params: &ListParams,
    ) -> Result<List<PartialObjectMetadata>, Error> {
        self.metadata_pager(params.clone()).collect().await
    }

    /// LIST exactly one page (`params.continue_token` selects which).
    pub async fn list_page(&self, params: &ListParams) -> Result<List<K>, Error> {
        let request = ApiRequest::get(self.collection_url()).with_query(&params.query());
        let response = self.client.send(&request).await?;
        read_list(response.bytes_stream()).await
    }

    /// LIST exactly one page, metadata only. With `limit=1` and no `resourceVersion` it is the
    /// cheapest proof, read from etcd, of whether anything matches (exchange 151).
    pub async fn list_metadata_page(
        &self,
        params: &ListParams,
    ) -> Result<List<PartialObjectMetadata>, Error> {
        let request = ApiRequest::get(self.collection_url())
            .with_query(&params.query())
            .with_accept(ACCEPT_PARTIAL_OBJECT_METADATA_LIST);
        let response = self.client.send(&request).await?;
        read_list(response.bytes_stream()).await
    }

    /// A pager reading the list one page at a time.
    pub fn pager(&self, params: ListParams) -> Pager<K> {
        Pager::new(
            self.client.clone(),
            self.collection_url(),
            ACCEPT_JSON,
            params,
        )
    }

    /// A pager reading metadata only, one page at a time.
    pub fn metadata_pager(&self, params: ListParams) -> Pager<PartialObjectMetadata> {
        Pager::new(
            self.client.clone(),
            self.collection_url(),
            ACCEPT_PARTIAL_OBJECT_METADATA_LIST,
            params,
        )
    }

    /// WATCH: the events after `params.resource_version`. A 410 arrives either as the
    /// request's error or as a final `WatchEvent::Error` carrying the Status.
    pub async fn watch(&self, params: &WatchParams) -> Result<WatchStream<K>, Error> {
        self.watch_as(params, ACCEPT_JSON).await
    }

    /// WATCH, metadata only.
    pub async fn watch_metadata(
        &self,
        params: &WatchParams,
    ) -> Result<WatchStream<PartialObjectMetadata>, Error> {
        self.watch_as(params, ACCEPT_PARTIAL_OBJECT_METADATA).await
    }

    async fn watch_as<T: DeserializeOwned>(
        &self,
        params: &WatchParams,
        accept: &'static str,
    ) -> Result<WatchStream<T>, Error> {
        self.client.watch(&self.watch_request(params, accept)).await
    }

    /// PATCH one object.
    pub async fn patch(&self, name: &str, params: &PostParams, patch: &Patch) -> Result<K, Error> {
        self.patch_at(name, None, params, patch).await
    }

    /// PATCH the `status` subresource (only `.status` changes).
    pub async fn patch_status(
        &self,
        name: &str,
        params: &PostParams,
        patch: &Patch,
    ) -> Result<K, Error> {
        self.patch_at(name, STATUS, params, patch).await
    }

    async fn patch_at(
        &self,
        name: &str,
        subresource: Option<&str>,
        params: &PostParams,
        patch: &Patch,
    ) -> Result<K, Error> {
        let request = ApiRequest::new(Method::PATCH, self.object_url(name, subresource))
            .with_query(&params.query())
            .with_json(patch.content_type(), patch.body(), "patch")?;
        self.client.send_for_json(&request).await
    }

    /// DELETE one object. The options choose the propagation policy and the UID /
    /// resourceVersion preconditions (a failed precondition is a 409 Conflict).
    pub async fn delete(
        &self,
        name: &str,
        options: &DeleteOptions,
    ) -> Result<DeleteResponse<K>, Error> {
        self.delete_as(name, options, ACCEPT_JSON).await
    }

    /// DELETE one object, asking for the answer as metadata: an object still there (or, for
    /// Pods, the one deleted) comes back as its `PartialObjectMetadata`, a `Status` as itself
    /// (exchanges 69–71). For callers that read no more of the answer than its metadata: a
    /// Pod's answer shrinks from the whole Pod to ~0.9 KB.
    pub async fn delete_for_metadata(
        &self,
        name: &str,
        options: &DeleteOptions,
    ) -> Result<DeleteResponse<K>, Error> {
        self.delete_as(name, options, ACCEPT_PARTIAL_OBJECT_METADATA_OR_JSON)
            .await
    }

    /// DELETE a collection (`deletecollection`): every object the selectors of `params` match
    /// (in the handle's namespace, or all), each deleted as a DELETE with `options` would be.
    /// The answer lists them as metadata, as they were before their deletion, at the list's
    /// resourceVersion (exchanges 147, 149): those that had finalizers other than the one
    /// `options` removes are still there, marked. Preconditions in `options` would apply to
    /// every object: use none.
    pub async fn delete_collection(
        &self,
        params: &ListParams,
        options: &DeleteOptions,
    ) -> Result<List<PartialObjectMetadata>, Error> {
        let request = ApiRequest::new(Method::DELETE, self.collection_url())
            .with_query(&params.query())
            .with_accept(ACCEPT_PARTIAL_OBJECT_METADATA_LIST)
            .with_json(CONTENT_TYPE_JSON, options, "delete options")?;
        let response = self.client.send(&request).await?;
        read_list(response.bytes_stream()).await
    }

    async fn delete_as(
        &self,
        name: &str,
        options: &DeleteOptions,
        accept: &'static str,
    ) -> Result<DeleteResponse<K>, Error> {
        let request = ApiRequest::new(Method::DELETE, self.object_url(name, None))
            .with_accept(accept)
            .with_json(CONTENT_TYPE_JSON, options, "delete options")?;
        let body = self.client.send_for_bytes(&request).await?;
        decode_delete_response(&body)
    }
}

impl<K: Serialize + DeserializeOwned> Api<K> {
    /// POST a new object; the answer is the object as stored.
    pub async fn create(&self, params: &PostParams, object: &K) -> Result<K, Error> {
        let request = ApiRequest::new(Method::POST, self.collection_url())
            .with_query(&params.query())
            .with_json(CONTENT_TYPE_JSON, object, "object")?;
        self.client.send_for_json(&request).await
    }

    /// PUT a whole object. With `metadata.resourceVersion` set the write is conditional: a
    /// stale one is a 409 Conflict.
    pub async fn replace(&self, name: &str, params: &PostParams, object: &K) -> Result<K, Error> {
        self.put_at(name, None, params, object).await
    }

    /// PUT the `status` subresource (only `.status` changes).
    pub async fn replace_status(
        &self,
        name: &str,
        params: &PostParams,
        object: &K,
    ) -> Result<K, Error> {
        self.put_at(name, STATUS, params, object).await
    }

    /// PUT another subresource whose writes take the whole object (a namespace's `finalize`).
    pub async fn replace_subresource(
        &self,
        name: &str,
        subresource: &str,
        params: &PostParams,
        object: &K,
    ) -> Result<K, Error> {
        self.put_at(name, Some(subresource), params, object).await
    }

    async fn put_at(
        &self,
        name: &str,
        subresource: Option<&str>,
        params: &PostParams,
        object: &K,
    ) -> Result<K, Error> {
        let request = ApiRequest::new(Method::PUT, self.object_url(name, subresource))
            .with_query(&params.query())
            .with_json(CONTENT_TYPE_JSON, object, "object")?;
        self.client.send_for_json(&request).await
    }
}

/// A DELETE answer is a `Status` (`kind: Status`, `apiVersion: v1`) once the object is gone,
/// otherwise the object itself. Only the type fields are looked at before the real decode.
fn decode_delete_response<K: DeserializeOwned>(body: &[u8]) -> Result<DeleteResponse<K>, Error> {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Kind {
        #[serde(default)]
        kind: String,
        #[serde(default)]
        api_version: String,
    }
    let decode_error = |e| Error::decode("delete response", body, e);
    let kind: Kind = serde_json::from_slice(body).map_err(decode_error)?;
    if kind.kind == "Status" && kind.api_version == "v1" {
        let status: Status = serde_json::from_slice(body).map_err(decode_error)?;
        return Ok(DeleteResponse::Deleted(Box::new(status)));
    }
    serde_json::from_slice(body)
        .map(DeleteResponse::Pending)
        .map_err(decode_error)
}

/// A handle on `Value`s of any resource is the common dynamic case; this names it.
pub type DynamicApi = Api<Value>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delete_answer_is_a_status_or_the_object() {
        let gone = br#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","details":{"name":"x","group":"batch","kind":"jobs","uid":"u"}}"#;
        let answer: DeleteResponse<Value> = decode_delete_response(gone).unwrap();
        assert!(answer.is_deleted());
        let pending = br#"{"kind":"Job","apiVersion":"batch/v1","metadata":{"name":"x","deletionTimestamp":"2026-11-22T03:40:00Z","finalizers":["foregroundDeletion"]}}"#;
        let answer: DeleteResponse<kube_gc_api::Job> = decode_delete_response(pending).unwrap();
        match answer {
            DeleteResponse::Pending(job) => {
                assert_eq!(job.metadata.finalizers, vec!["foregroundDeletion"]);
            }
            DeleteResponse::Deleted(status) => panic!("expected the object, got {status:?}"),
        }
        let garbage = decode_delete_response::<Value>(b"<html>");
        assert!(matches!(garbage, Err(Error::Decode { .. })));
    }
}
