//! The in-process API of a [`SimServer`]: fast test setup and inspection without HTTP.
//!
//! Contract: every method goes through the same [`Store`](crate::store::Store) operations
//! as the HTTP handlers, so uid, resourceVersion, finalizer and deletion rules apply and watchers
//! see the same events. Objects are named by [`Gvr`] plus namespace and name; objects passed in
//! carry their own namespace and name in `metadata`.

use std::sync::Arc;

use serde_json::Value;

use super::{SimError, SimServer};
use crate::crds;
use crate::filter::ObjectFilter;
use crate::handlers::authorize::{ResourceDenial, ADMIN};
use crate::history::Change;
use crate::object;
use crate::resources::{Gvr, ResourceId};
use crate::store::{
    DeleteOptions, DeleteOutcome, DeletionRecord, Store, UpdateTarget, WatchItem, WatchStart,
    WatcherId,
};

impl SimServer {
    fn resource(&self, gvr: &Gvr) -> Result<ResourceId, SimError> {
        self.ctx.store.resources().lookup(gvr).ok_or_else(|| {
            SimError::UnknownResource(format!("{}/{}/{}", gvr.group, gvr.version, gvr.resource))
        })
    }

    /// Creates an object (its namespace comes from `metadata.namespace`).
    pub fn create(&self, gvr: &Gvr, obj: Value) -> Result<Value, SimError> {
        let resource = self.resource(gvr)?;
        let namespace = object::namespace(&obj).map(str::to_string);
        let created = self
            .ctx
            .store
            .create(resource, namespace.as_deref(), obj, false)?;
        Ok((*created).clone())
    }

    /// One object.
    pub fn get(&self, gvr: &Gvr, namespace: Option<&str>, name: &str) -> Result<Value, SimError> {
        let resource = self.resource(gvr)?;
        Ok((*self.ctx.store.get(resource, namespace, name)?).clone())
    }

    /// Every object of a resource, in key order, optionally in one namespace.
    pub fn list(&self, gvr: &Gvr, namespace: Option<&str>) -> Result<Vec<Value>, SimError> {
        let resource = self.resource(gvr)?;
        let objects = self.ctx.store.snapshot(resource, namespace);
        Ok(objects.iter().map(|o| (**o).clone()).collect())
    }

    /// Replaces an object (conditional on `metadata.resourceVersion` when it is set).
    pub fn update(&self, gvr: &Gvr, obj: Value) -> Result<Value, SimError> {
        self.write(gvr, obj, UpdateTarget::Main)
    }

    /// Replaces an object's status (like `PUT …/status`).
    pub fn update_status(&self, gvr: &Gvr, obj: Value) -> Result<Value, SimError> {
        self.write(gvr, obj, UpdateTarget::Status)
    }

    /// Replaces a namespace's `spec.finalizers` and metadata (like `PUT …/finalize`, conditional
    /// on `metadata.resourceVersion` and `metadata.uid` when set): the namespace leaves when it
    /// was being deleted and no finalizer of either kind is left.
    pub fn finalize_namespace(&self, obj: Value) -> Result<Value, SimError> {
        self.write(
            &Gvr::new("", "v1", "namespaces"),
            obj,
            UpdateTarget::Finalize,
        )
    }

    fn write(&self, gvr: &Gvr, obj: Value, target: UpdateTarget) -> Result<Value, SimError> {
        let resource = self.resource(gvr)?;
        let name = object::name(&obj).ok_or(SimError::MissingName)?.to_string();
        let namespace = object::namespace(&obj).map(str::to_string);
        let updated =
            self.ctx
                .store
                .update(resource, namespace.as_deref(), &name, obj, target, false)?;
        Ok((*updated).clone())
    }

    /// Deletes an object with DeleteOptions, exactly as a DELETE request would.
    pub fn delete(
        &self,
        gvr: &Gvr,
        namespace: Option<&str>,
        name: &str,
        options: &DeleteOptions,
    ) -> Result<DeleteOutcome, SimError> {
        let resource = self.resource(gvr)?;
        Ok(self.ctx.store.delete(resource, namespace, name, options)?)
    }

    /// Deletes every object of a resource in `namespace` (all of them with `None`), each as a
    /// DELETE with `options` would, as a `deletecollection` request does; returns them as they
    /// were before.
    pub fn delete_collection(
        &self,
        gvr: &Gvr,
        namespace: Option<&str>,
        options: &DeleteOptions,
    ) -> Result<Vec<Value>, SimError> {
        let resource = self.resource(gvr)?;
        let filter = ObjectFilter::namespace(namespace);
        let deleted = self
            .ctx
            .store
            .delete_collection(resource, &filter, options)?;
        Ok(deleted.items.iter().map(|o| (**o).clone()).collect())
    }

    /// Stops serving a declared resource, as before its CustomResourceDefinition exists: it
    /// leaves discovery, its definition is removed and every request to it answers 404.
    /// Objects stored are kept and watches already open stay open;
    /// [`SimServer::delete_custom_resource_definition`] is what deleting the definition of a
    /// resource in use does.
    pub fn unserve_resource(&self, gvr: &Gvr) -> Result<(), SimError> {
        let resource = self.resource(gvr)?;
        self.ctx.unserved.write().insert(resource);
        Ok(crds::forget_definition_of(&self.ctx.store, resource)?)
    }

    /// Deletes a resource's CustomResourceDefinition as the real server does (exchanges
    /// 74–76, 135, 136; see [`crds`]): it stops being served (lists and watches answer the
    /// plain-text 404 of exchange 66), the definition's cleanup deletes every object of it — a
    /// DELETED event each to the watches open on it — those watches end, and the definition
    /// goes. Objects are deleted the way a DELETE request would: one a finalizer holds is only
    /// marked, where the real server would keep the definition `Terminating` until it goes.
    pub fn delete_custom_resource_definition(&self, gvr: &Gvr) -> Result<(), SimError> {
        let resource = self.resource(gvr)?;
        Ok(crds::delete_definition_of(
            &self.ctx.store,
            &self.ctx.unserved,
            resource,
        )?)
    }

    /// Serves a declared resource again (or for the first time, after
    /// [`SimServer::unserve_resource`] at start-up), as when its CustomResourceDefinition is
    /// created: it appears in discovery, answers requests and has its definition again.
    pub fn serve_resource(&self, gvr: &Gvr) -> Result<(), SimError> {
        let resource = self.resource(gvr)?;
        self.ctx.unserved.write().remove(&resource);
        Ok(crds::ensure_definition(&self.ctx.store, resource)?)
    }

    /// Lifts every denial of `user` on `resource` (its plural, or `plural/subresource`) in
    /// `group` ([`SimConfig::forbidding`](crate::SimConfig::forbidding)), as binding a role
    /// that grants them would: its next requests are allowed.
    pub fn grant(&self, user: &str, group: &str, resource: &str) {
        self.ctx
            .denials
            .write()
            .retain(|d| !(d.user == user && d.group == group && d.resource == resource));
    }

    /// Refuses the server's own user ([`ADMIN`](crate::handlers::authorize::ADMIN)) `verb`
    /// (RBAC's: `list`, `delete`, `deletecollection`…) on a resource with the authorization
    /// filter's 403, as a role lacking the rule would, until [`SimServer::allow`].
    pub fn deny(&self, verb: &str, gvr: &Gvr) -> Result<(), SimError> {
        let resource = self.resource(gvr)?;
        let def = self.ctx.store.resources().def(resource);
        self.ctx.denials.write().push(ResourceDenial {
            user: ADMIN.to_owned(),
            group: def.group.clone(),
            resource: def.resource.clone(),
            verbs: vec![verb.to_owned()],
            cluster_scope_only: false,
        });
        Ok(())
    }

    /// Allows what [`SimServer::deny`] refused.
    pub fn allow(&self, verb: &str, gvr: &Gvr) -> Result<(), SimError> {
        let resource = self.resource(gvr)?;
        let def = self.ctx.store.resources().def(resource);
        let mut denials = self.ctx.denials.write();
        for denial in denials.iter_mut() {
            if denial.user == ADMIN && denial.group == def.group && denial.resource == def.resource
            {
                denial.verbs.retain(|v| v != verb);
            }
        }
        denials.retain(|d| !d.verbs.is_empty());
        Ok(())
    }

    /// Makes `group/version` stale, as an aggregated API whose server does not answer
    /// (exchanges 98, 99): aggregated discovery lists it `Stale` with no resources, its own
    /// document and its resources answer 503. `false` makes it answer again.
    pub fn set_stale(&self, group: &str, version: &str, stale: bool) {
        self.ctx.stale.set_stale(group, version, stale);
    }

    /// The current resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.ctx.store.resource_version()
    }

    /// Forgets all history: watches and exact lists from any earlier resourceVersion now get 410.
    pub fn compact(&self) {
        self.ctx.store.compact();
    }

    /// The retained change log (bounded by the history limit), oldest first.
    pub fn history(&self) -> Vec<Arc<Change>> {
        self.ctx.store.history()
    }

    /// Every object that left storage — what, when (resourceVersion and clock time) and its
    /// final state — oldest first; unaffected by [`SimServer::compact`].
    pub fn deletions(&self) -> Vec<DeletionRecord> {
        self.ctx.store.deletions()
    }

    /// Waits until `condition` holds for one object's state (`None` while it does not exist) and
    /// returns that state. It never polls: it follows the store's changes, so a test can wait
    /// for a controller's write without sleeping (wrap it in `tokio::time::timeout`).
    pub async fn wait_for(
        &self,
        gvr: &Gvr,
        namespace: Option<&str>,
        name: &str,
        condition: impl Fn(Option<&Value>) -> bool,
    ) -> Result<Option<Value>, SimError> {
        let resource = self.resource(gvr)?;
        let store = &self.ctx.store;
        loop {
            // Read the state, then follow every change after the version it was read at.
            let from = store.resource_version();
            let mut state = store.get(resource, namespace, name).ok();
            if condition(state.as_deref()) {
                return Ok(state.map(|s| (*s).clone()));
            }
            let filter = ObjectFilter::namespace(namespace);
            let mut registration = store.watch(resource, filter, WatchStart::After(from))?;
            let _guard = Unwatch {
                store,
                id: registration.id,
            };
            let mut initial = std::mem::take(&mut registration.initial).into_iter();
            loop {
                let item = match initial.next() {
                    Some(item) => item,
                    // The channel closes if this waiter fell behind; start over from a fresh read.
                    None => match registration.live.recv().await {
                        Some(item) => item,
                        None => break,
                    },
                };
                let WatchItem::Event { event_type, object } = item else {
                    continue;
                };
                if object::name(object.object()) != Some(name) {
                    continue;
                }
                state = (event_type != "DELETED").then(|| object.to_arc());
                if condition(state.as_deref()) {
                    return Ok(state.map(|s| (*s).clone()));
                }
            }
        }
    }
}

/// Unregisters an in-process watcher when a wait ends.
struct Unwatch<'a> {
    store: &'a Store,
    id: WatcherId,
}

impl Drop for Unwatch<'_> {
    fn drop(&mut self) {
        self.store.unwatch(self.id);
    }
}
