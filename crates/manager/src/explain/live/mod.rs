//! `/debug/explain?object=TYPE/NAME&namespace=NS[&output=json|yaml]`: what `kube-gc explain`
//! says, answered by a running kube-gc from its caches instead of the API server.
//!
//! ```text
//!  manager start ─▶ LiveExplainer (discovery, clock) ──▶ route /debug/explain on the Endpoints
//!  each init     ─▶ register(Arc<dyn CacheView>)   or   not_running(name, why)
//!  GET           ─▶ query ─▶ resolve TYPE ─▶ each view, in the CLI's order ─▶ explanation()
//! ```
//!
//! | file | what it holds |
//! |---|---|
//! | `query.rs` | the query string |
//! | `ttl.rs` | [`TtlView`]: a TTL controller's store of assessments |
//! | `retention.rs` | [`RetentionView`]: the retention engine's watches and cached assessments |
//! | `gc.rs` | [`GcView`]: the garbage collector's graph |
//! | `namespace.rs` | [`NamespaceView`]: the namespace controller's namespaces, content index and progress |
//! | `storage.rs` | [`PodGcView`], [`PvcView`], [`PvView`]: the pod garbage collector's and the protection controllers' caches |
//!
//! Contract:
//! - No request leaves the process: `TYPE` is resolved with the discovery the manager started
//!   with, and every fact is read from a controller's cache — under `parking_lot` read locks,
//!   taken and released within the (synchronous) handler, never across an `.await`.
//! - Every decision is worded by `explain::decide` and the verdict reached by the same
//!   [`explanation`](crate::explain::explanation) as `kube-gc explain`'s; what a cache does not
//!   keep (Events, a deletion time, finalizers other than the collector's, why a policy does not
//!   apply) is said to be missing, never guessed.
//! - A controller that does not run here (disabled by `--controllers`, skipped at start-up) is a
//!   decision that does not govern, saying so. An object no cache holds is a 404 naming what
//!   the caches hold; a bad query or an unknown type a 400 naming what was wrong.

mod gc;
mod namespace;
mod query;
mod retention;
mod storage;
mod ttl;

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use http::StatusCode;
use parking_lot::RwLock;

use crate::server::{DebugPage, Endpoints};
use kube_gc_client::{Discovery, ResourceRef};
use kube_gc_controllers::retention::assessment::Assessment;
use kube_gc_core::clock::SharedClock;
use kube_gc_runtime::cache::Cacheable;

use super::controllers::covered_names;
use super::decide::{decision, namespace_verdict, rfc3339};
use super::resolve::{resolve, UnknownType};
use super::{
    explanation, render, Decision, DeletionInProgress, Explanation, NamespaceReport, ObjectId,
    VerdictKind,
};
use crate::selection::ControllerSelection;

pub use gc::GcView;
pub use namespace::NamespaceView;
pub use query::{parse as parse_query, Output, Query, QueryError};
pub use retention::RetentionView;
pub use storage::{PodGcView, PvView, PvcView};
pub use ttl::TtlView;

/// Where the page is served.
pub const PATH: &str = "/debug/explain";

/// The object asked about, resolved.
#[derive(Clone, Debug)]
pub struct LiveTarget {
    /// Its resource.
    pub resource: ResourceRef,
    /// Its namespace (`None` for a cluster-scoped resource).
    pub namespace: Option<String>,
    /// Its name.
    pub name: String,
    /// Its UID, once a cache has found it (the next caches look it up by UID first).
    pub uid: Option<String>,
    /// The controllers that run here (those with a cache registered): who removes a finalizer
    /// is said for them.
    pub running: ControllerSelection,
}

impl LiveTarget {
    /// `jobs.batch "x" in namespace "y"`.
    pub fn describe(&self) -> String {
        let resource = format!("{}.{}", self.resource.plural, self.resource.group);
        let resource = resource.trim_end_matches('.');
        match &self.namespace {
            Some(ns) => format!("{resource} {:?} in namespace {ns:?}", self.name),
            None => format!("{resource} {:?}", self.name),
        }
    }
}

/// What one controller's cache says about the object.
#[derive(Clone, Debug)]
pub struct View {
    /// The controller's decision (for an object not in its cache, one that does not govern).
    pub decision: Decision,
    /// What the cache holds of the object, if it holds it.
    pub found: Option<Found>,
}

impl View {
    /// The view of an engine's cached `assessment` (the TTL controllers' and the retention
    /// controller's caches alike): `decision`, said to come from the assessment made when its
    /// resourceVersion was decoded, and the object as the assessment records it.
    fn of_judgement(mut decision: Decision, assessment: &Assessment, synced: bool) -> View {
        decision.details.push(format!(
            "from its cache: judged when resourceVersion {} was decoded{}",
            assessment.resource_version(),
            if synced {
                ""
            } else {
                " (first list not in yet)"
            }
        ));
        let being_deleted = assessment.governed().is_some_and(|g| g.facts.being_deleted);
        View {
            decision,
            found: Some(Found {
                uid: assessment.uid().to_owned(),
                being_deleted,
                deletion: None,
                namespace: None,
            }),
        }
    }
}

/// The object, as a cache holds it.
#[derive(Clone, Debug)]
pub struct Found {
    /// Its UID.
    pub uid: String,
    /// It has a `deletionTimestamp`.
    pub being_deleted: bool,
    /// What its finalizers wait for, if this cache can tell.
    pub deletion: Option<DeletionInProgress>,
    /// For a namespace: what its deletion waits for, if this cache can tell.
    pub namespace: Option<Box<NamespaceReport>>,
}

/// A controller's cache, as `/debug/explain` reads it.
pub trait CacheView: Send + Sync {
    /// The controller's name.
    fn controller(&self) -> &'static str;
    /// What it watches and holds, for the answer to an object no cache holds.
    fn holds(&self) -> String;
    /// What its cache says about `target` at `now`. Must not block: read locks only.
    fn view(&self, target: &LiveTarget, now: DateTime<Utc>) -> View;
}

/// Why there is no explanation.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    /// The query is malformed.
    #[error(transparent)]
    Query(#[from] QueryError),
    /// The type names nothing served.
    #[error(transparent)]
    Type(#[from] UnknownType),
    /// No cache holds the object.
    #[error("{object} is not in kube-gc's caches ({holds})")]
    NotCached {
        /// The object asked for.
        object: String,
        /// What each controller watches, or why it does not run.
        holds: String,
    },
    /// The answer could not be printed.
    #[error("cannot print the explanation: {0}")]
    Print(String),
}

impl LiveError {
    /// The HTTP status it answers with.
    pub fn status(&self) -> StatusCode {
        match self {
            LiveError::Query(_) | LiveError::Type(_) => StatusCode::BAD_REQUEST,
            LiveError::NotCached { .. } => StatusCode::NOT_FOUND,
            LiveError::Print(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

struct Inner {
    discovery: Arc<Discovery>,
    clock: SharedClock,
    views: RwLock<BTreeMap<&'static str, Arc<dyn CacheView>>>,
    not_running: RwLock<BTreeMap<&'static str, String>>,
}

/// The registry behind `/debug/explain`: one [`CacheView`] per running controller, and why the
/// others do not run. Cheap to clone; clones share registrations.
#[derive(Clone)]
pub struct LiveExplainer {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for LiveExplainer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveExplainer")
            .field("views", &self.inner.views.read().keys().collect::<Vec<_>>())
            .field("not_running", &*self.inner.not_running.read())
            .finish_non_exhaustive()
    }
}

impl LiveExplainer {
    /// An explainer resolving types with `discovery` and assessing at `clock`'s now.
    pub fn new(discovery: Arc<Discovery>, clock: SharedClock) -> LiveExplainer {
        LiveExplainer {
            inner: Arc::new(Inner {
                discovery,
                clock,
                views: RwLock::default(),
                not_running: RwLock::default(),
            }),
        }
    }

    /// Serves [`PATH`] on `endpoints` (only with debug handlers enabled, as every debug page).
    pub fn publish(&self, endpoints: &Endpoints) {
        let explainer = self.clone();
        endpoints.add_debug_route_with_query(PATH, move |query| explainer.page(query));
    }

    /// Adds a running controller's cache (a later one for the same controller replaces it).
    pub fn register(&self, view: Arc<dyn CacheView>) {
        let name = view.controller();
        self.inner.not_running.write().remove(name);
        self.inner.views.write().insert(name, view);
    }

    /// Records that `controller` does not run here, and why.
    pub fn not_running(&self, controller: &'static str, why: impl Into<String>) {
        self.inner.views.write().remove(controller);
        self.inner
            .not_running
            .write()
            .insert(controller, why.into());
    }

    /// The page for `query`: the explanation, or one line naming what was wrong.
    pub fn page(&self, query: &str) -> DebugPage {
        match self.answer(query) {
            Ok(page) => page,
            Err(error) => DebugPage::error(error.status(), &error.to_string()),
        }
    }

    fn answer(&self, query: &str) -> Result<DebugPage, LiveError> {
        let query = parse_query(query)?;
        let explained = self.explain(&query)?;
        print(&explained, query.output)
    }

    /// Explains what `query` names, now.
    ///
    /// # Errors
    ///
    /// [`LiveError::Type`] for a type not served, [`LiveError::NotCached`] for an object no
    /// cache holds.
    pub fn explain(&self, query: &Query) -> Result<Explanation, LiveError> {
        self.explain_at(query, self.inner.clock.now())
    }

    /// Explains what `query` names, at `now`.
    ///
    /// # Errors
    ///
    /// As [`explain`](Self::explain).
    pub fn explain_at(&self, query: &Query, now: DateTime<Utc>) -> Result<Explanation, LiveError> {
        let resource = resolve(&self.inner.discovery, &query.type_)?;
        let mut target = LiveTarget {
            namespace: resource.namespaced.then(|| query.namespace.clone()),
            resource,
            name: query.name.clone(),
            uid: None,
            running: self.running(),
        };
        let (decisions, found) = self.views_of(&mut target, now);
        if found.is_empty() {
            return Err(LiveError::NotCached {
                object: target.describe(),
                holds: self.holds(),
            });
        }
        Ok(assemble(&target, decisions, found, now))
    }

    /// The controllers with a cache registered, as a `--controllers` selection.
    fn running(&self) -> ControllerSelection {
        let names: Vec<&str> = self.inner.views.read().keys().copied().collect();
        // No cache registered: nothing is found, so what it says of finalizers is never read.
        ControllerSelection::parse(&names).unwrap_or_default()
    }

    /// Every controller's view, in order; each found copy of the object.
    fn views_of(&self, target: &mut LiveTarget, now: DateTime<Utc>) -> (Vec<Decision>, Vec<Found>) {
        let (mut decisions, mut found) = (Vec::new(), Vec::new());
        // In the order `kube-gc explain` lists their decisions.
        for name in covered_names() {
            let view = match self.view(name) {
                Ok(view) => view.view(target, now),
                Err(why) => View {
                    decision: decision(name, false, VerdictKind::Keep, why),
                    found: None,
                },
            };
            if let Some(seen) = view.found {
                target.uid.get_or_insert_with(|| seen.uid.clone());
                found.push(seen);
            }
            decisions.push(view.decision);
        }
        (decisions, found)
    }

    /// The controller's view, or why it does not run here.
    fn view(&self, name: &'static str) -> Result<Arc<dyn CacheView>, String> {
        if let Some(view) = self.inner.views.read().get(name) {
            return Ok(Arc::clone(view));
        }
        let why = self.inner.not_running.read().get(name).cloned();
        Err(match why {
            Some(why) => format!("not running in this kube-gc: {why}"),
            None => "not running in this kube-gc".to_owned(),
        })
    }

    /// What every controller holds, or why it does not run: one line.
    fn holds(&self) -> String {
        let lines: Vec<String> = covered_names()
            .map(|name| match self.view(name) {
                Ok(view) => format!("{name} {}", view.holds()),
                Err(why) => format!("{name} is {why}"),
            })
            .collect();
        lines.join("; ")
    }
}

/// The explanation from the views' decisions and the copies found.
fn assemble(
    target: &LiveTarget,
    decisions: Vec<Decision>,
    mut found: Vec<Found>,
    now: DateTime<Utc>,
) -> Explanation {
    let uid = target.uid.clone().unwrap_or_default();
    let object = ObjectId {
        api_version: target.resource.api_version(),
        kind: target.resource.kind.clone(),
        namespace: target.namespace.clone(),
        name: target.name.clone(),
        uid: uid.clone(),
    };
    let report = found.iter_mut().find_map(|f| f.namespace.take());
    let namespace_decision = decisions
        .iter()
        .find(|d| d.controller == crate::selection::NAMESPACE)
        .cloned();
    let mut explained = explanation(object, decisions, deletion(&found));
    explained.notes = notes(&uid, &found, now);
    if let (Some(report), Some(decided)) = (report, namespace_decision) {
        namespace_verdict(&mut explained, &decided, *report, &target.running);
    }
    explained
}

/// What the caches say of its deletion: a cache that keeps every finalizer if one holds it,
/// else the collector's graph if it told, else what the others know (that it is being deleted,
/// not what holds it).
fn deletion(found: &[Found]) -> Option<DeletionInProgress> {
    let told = || found.iter().filter_map(|f| f.deletion.as_ref());
    if let Some(whole) = told().find(|d| d.unknown.is_none()) {
        return Some(whole.clone());
    }
    if let Some(told) = told().next() {
        return Some(told.clone());
    }
    found
        .iter()
        .any(|f| f.being_deleted)
        .then(|| {
            DeletionInProgress {
        since: None,
        finalizers: Vec::new(),
        unknown: Some(
            "its finalizers are not in the caches that hold it: the garbage collector's graph, \
             which keeps foregroundDeletion and orphan, does not hold it"
                .to_owned(),
        ),
        grace: None,
    }
        })
}

fn notes(uid: &str, found: &[Found], now: DateTime<Utc>) -> Vec<String> {
    let mut notes = vec![
        format!(
            "answered from kube-gc's caches at {}, without a request to the API server",
            rfc3339(now)
        ),
        "Events are not cached: `kube-gc explain` lists them".to_owned(),
    ];
    if let Some(other) = found.iter().find(|f| f.uid != uid) {
        notes.push(format!(
            "the caches hold two objects under this name (UIDs {uid} and {}): it was deleted \
             and re-created, and not every cache has caught up; ask again",
            other.uid
        ));
    }
    notes
}

/// The page in the asked format.
fn print(explained: &Explanation, output: Output) -> Result<DebugPage, LiveError> {
    let fail = |e: &dyn std::fmt::Display| LiveError::Print(e.to_string());
    Ok(match output {
        Output::Text => DebugPage::ok("text/plain; charset=utf-8", render::text(explained)),
        Output::Json => {
            let mut body = serde_json::to_string_pretty(explained).map_err(|e| fail(&e))?;
            body.push('\n');
            DebugPage::ok("application/json", body)
        }
        Output::Yaml => {
            let body = serde_saphyr::to_string(explained).map_err(|e| fail(&e))?;
            DebugPage::ok("application/yaml", body)
        }
    })
}
