//! The options of each verb, and the query parameters they become.
//!
//! Contract:
//! - Every option is optional; an unset option adds no query parameter, so the server applies
//!   its own default (e.g. no `resourceVersion` on a list means a consistent read from etcd).
//! - Parameter names and values are exactly those of the Kubernetes API
//!   (`labelSelector`, `resourceVersionMatch=NotOlderThan`, `allowWatchBookmarks=true`…).
//! - Values are percent-encoded by the URL builder, never here.

use serde_json::Value;

/// Query parameters in the order they are sent.
pub type Query = Vec<(&'static str, String)>;

/// How a list's `resourceVersion` is interpreted (`resourceVersionMatch`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VersionMatch {
    /// Any state at least as new as the resourceVersion (the default for `resourceVersion=N`).
    NotOlderThan,
    /// Exactly the state at the resourceVersion (410 if it was compacted).
    Exact,
}

impl VersionMatch {
    fn as_str(self) -> &'static str {
        match self {
            VersionMatch::NotOlderThan => "NotOlderThan",
            VersionMatch::Exact => "Exact",
        }
    }
}

/// Options of a LIST request (one page of it).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListParams {
    /// Only objects whose labels match, e.g. `app=web,tier!=db`.
    pub label_selector: Option<String>,
    /// Only objects whose fields match, e.g. `metadata.name=x`.
    pub field_selector: Option<String>,
    /// At most this many objects per page; `None` asks for everything at once.
    pub limit: Option<u32>,
    /// The continue token of the previous page.
    pub continue_token: Option<String>,
    /// `"0"`: any cached state (cheap, may be stale); `"N"`: see [`VersionMatch`];
    /// `None`: the latest state (a consistent read).
    pub resource_version: Option<String>,
    /// How `resource_version` is matched.
    pub resource_version_match: Option<VersionMatch>,
}

impl ListParams {
    /// Pages of at most `limit` objects.
    pub fn with_limit(mut self, limit: u32) -> Self {
        self.limit = Some(limit);
        self
    }

    /// Only objects whose labels match `selector`.
    pub fn with_labels(mut self, selector: impl Into<String>) -> Self {
        self.label_selector = Some(selector.into());
        self
    }

    /// Only objects whose fields match `selector`.
    pub fn with_fields(mut self, selector: impl Into<String>) -> Self {
        self.field_selector = Some(selector.into());
        self
    }

    /// Read at `resource_version` (see [`ListParams::resource_version`]).
    pub fn at_version(mut self, resource_version: impl Into<String>) -> Self {
        self.resource_version = Some(resource_version.into());
        self
    }

    /// The query of one page. A continue token already pins the snapshot, and the server
    /// rejects a `resourceVersion` sent with it, so the version is left out on continue pages.
    pub fn query(&self) -> Query {
        let mut query = Query::new();
        push_selectors(&mut query, &self.label_selector, &self.field_selector);
        if let Some(limit) = self.limit {
            query.push(("limit", limit.to_string()));
        }
        match &self.continue_token {
            Some(token) => query.push(("continue", token.clone())),
            None => {
                if let Some(rv) = &self.resource_version {
                    query.push(("resourceVersion", rv.clone()));
                }
                if let Some(m) = self.resource_version_match {
                    query.push(("resourceVersionMatch", m.as_str().to_owned()));
                }
            }
        }
        query
    }
}

/// Options of a WATCH request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WatchParams {
    /// Only objects whose labels match.
    pub label_selector: Option<String>,
    /// Only objects whose fields match.
    pub field_selector: Option<String>,
    /// Events after this resourceVersion; `None` or `"0"` starts with a synthetic ADDED for every
    /// existing object.
    pub resource_version: Option<String>,
    /// The server ends the watch after this many seconds; this is a watch's only timeout.
    pub timeout_seconds: Option<u32>,
    /// Ask for BOOKMARK events.
    pub allow_bookmarks: bool,
    /// Stream the current state first, ending with a BOOKMARK annotated
    /// `k8s.io/initial-events-end` (WatchList; implies `resourceVersionMatch=NotOlderThan`).
    pub send_initial_events: bool,
}

impl WatchParams {
    /// Events after `resource_version`, with bookmarks, ending after `timeout_seconds`: what a
    /// reflector asks for.
    pub fn from_version(resource_version: impl Into<String>, timeout_seconds: u32) -> Self {
        WatchParams {
            resource_version: Some(resource_version.into()),
            timeout_seconds: Some(timeout_seconds),
            allow_bookmarks: true,
            ..Default::default()
        }
    }

    /// The query, including `watch=1`.
    pub fn query(&self) -> Query {
        let mut query: Query = vec![("watch", "1".to_owned())];
        push_selectors(&mut query, &self.label_selector, &self.field_selector);
        if let Some(rv) = &self.resource_version {
            query.push(("resourceVersion", rv.clone()));
        }
        if let Some(seconds) = self.timeout_seconds {
            query.push(("timeoutSeconds", seconds.to_string()));
        }
        if self.allow_bookmarks {
            query.push(("allowWatchBookmarks", "true".to_owned()));
        }
        if self.send_initial_events {
            query.push(("sendInitialEvents", "true".to_owned()));
            query.push((
                "resourceVersionMatch",
                VersionMatch::NotOlderThan.as_str().to_owned(),
            ));
        }
        query
    }
}

/// Options of a create, update or patch.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PostParams {
    /// Validate and answer without persisting anything (`dryRun=All`).
    pub dry_run: bool,
    /// The name recorded in `managedFields` for this writer.
    pub field_manager: Option<String>,
}

impl PostParams {
    /// The query of the write.
    pub fn query(&self) -> Query {
        let mut query = Query::new();
        if self.dry_run {
            query.push(("dryRun", "All".to_owned()));
        }
        if let Some(manager) = &self.field_manager {
            query.push(("fieldManager", manager.clone()));
        }
        query
    }
}

/// A PATCH body, tagged with how the server must apply it.
#[derive(Clone, Debug, PartialEq)]
pub enum Patch {
    /// RFC 7386 JSON merge patch: objects merge, `null` deletes, lists are replaced whole.
    /// `metadata.resourceVersion` in it acts as a precondition (409 if stale).
    Merge(Value),
    /// RFC 6902 JSON patch: a list of operations; a failing `test` operation is a 422.
    Json(Value),
    /// Kubernetes strategic merge patch: lists merge by key (e.g. ownerReferences by `uid`).
    /// Built-in types only; custom resources answer 415.
    Strategic(Value),
}

impl Patch {
    /// The `Content-Type` naming the patch kind.
    pub fn content_type(&self) -> &'static str {
        match self {
            Patch::Merge(_) => "application/merge-patch+json",
            Patch::Json(_) => "application/json-patch+json",
            Patch::Strategic(_) => "application/strategic-merge-patch+json",
        }
    }

    /// The patch document.
    pub fn body(&self) -> &Value {
        match self {
            Patch::Merge(v) | Patch::Json(v) | Patch::Strategic(v) => v,
        }
    }
}

fn push_selectors(query: &mut Query, labels: &Option<String>, fields: &Option<String>) {
    if let Some(labels) = labels {
        query.push(("labelSelector", labels.clone()));
    }
    if let Some(fields) = fields {
        query.push(("fieldSelector", fields.clone()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unset_options_send_nothing() {
        assert!(ListParams::default().query().is_empty());
        assert!(PostParams::default().query().is_empty());
        assert_eq!(WatchParams::default().query(), vec![("watch", "1".into())]);
    }

    #[test]
    fn a_continue_page_drops_the_resource_version() {
        let first = ListParams::default()
            .with_limit(100)
            .with_labels("app=web")
            .at_version("0");
        assert_eq!(
            first.query(),
            vec![
                ("labelSelector", "app=web".into()),
                ("limit", "100".into()),
                ("resourceVersion", "0".into()),
            ]
        );
        let next = ListParams {
            continue_token: Some("tok".into()),
            resource_version_match: Some(VersionMatch::Exact),
            ..first
        };
        assert_eq!(
            next.query(),
            vec![
                ("labelSelector", "app=web".into()),
                ("limit", "100".into()),
                ("continue", "tok".into()),
            ]
        );
    }

    #[test]
    fn a_reflector_watch_and_a_watch_list_ask_for_what_client_go_asks_for() {
        assert_eq!(
            WatchParams::from_version("42", 300).query(),
            vec![
                ("watch", "1".into()),
                ("resourceVersion", "42".into()),
                ("timeoutSeconds", "300".into()),
                ("allowWatchBookmarks", "true".into()),
            ]
        );
        let watch_list = WatchParams {
            allow_bookmarks: true,
            send_initial_events: true,
            ..Default::default()
        };
        let query = watch_list.query();
        assert!(query.contains(&("sendInitialEvents", "true".into())));
        assert!(query.contains(&("resourceVersionMatch", "NotOlderThan".into())));
    }

    #[test]
    fn patches_carry_their_content_types() {
        let body = serde_json::json!({"metadata": {"labels": {"a": "b"}}});
        assert_eq!(
            Patch::Merge(body.clone()).content_type(),
            "application/merge-patch+json"
        );
        assert_eq!(
            Patch::Json(serde_json::json!([])).content_type(),
            "application/json-patch+json"
        );
        assert_eq!(
            Patch::Strategic(body.clone()).content_type(),
            "application/strategic-merge-patch+json"
        );
        assert_eq!(Patch::Merge(body.clone()).body(), &body);
    }
}
