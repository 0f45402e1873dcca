//! [`Assessment`]: what the retention engine caches for an object — what it *is* under the
//! policies of its resource ([`ResourcePolicies`]), computed once, when the object is decoded;
//! the object itself is dropped right after. What to *do* with it is decided later, at
//! reconcile time, from the assessment alone (`verdict.rs`). [`needed`] says which fields the
//! decoder must build for [`assess`] to see what it would see in the whole object.
//!
//! Contract:
//! - [`assess`] applies, in order: which policies apply (namespace, `namespaceSelector`,
//!   `selector`, the controlling-owner rule, the CEL `match`), which one governs
//!   (`precedence.rs`), whether and when the object finished (the policy's finish rule), its TTL
//!   (`ttl.rs`: annotations, own field, policy) and its history group.
//! - It never fails: an object whose CEL, field or annotation cannot be read becomes
//!   [`Standing::Problem`] — kept, counted and reported by the engine, never deleted.
//! - What is kept is small: key, UID, resourceVersion, the governing policy's index, the
//!   [`Facts`], the [`Ttl`] and the group — no labels, no spec, no status.
//! - `now` is the decode time: a CEL `match` reading `now` is evaluated then, not continuously.
//! - A deleted object (a `DELETED` watch event's final state) is not assessed: [`gone`] reads
//!   its key, UID and resourceVersion only and makes [`Standing::Gone`], which nothing acts on.
//!   It fails only on text a watch line could not carry (not one object, a non-string name).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::Deserialize;

use kube_gc_api::{null_as_default, Time};
use kube_gc_runtime::cache::{Cacheable, ObjectKey};

use super::finish::{own_ttl_field, GroupBy};
use super::need::Need;
use super::policy::CompiledPolicy;
use super::precedence::{self, Candidate, Scope};
use super::ttl::{self, Ttl, TtlSource};
use super::verdict::Facts;
use super::wire::expect_object;

/// The compiled policies naming one resource, and what they are applied with: all an
/// assessment of one of its objects reads besides the object.
#[derive(Debug, Default)]
pub struct ResourcePolicies {
    /// The policies naming this resource, in a fixed order (their index is what assessments
    /// keep).
    pub policies: Vec<Arc<CompiledPolicy>>,
    /// Each namespace's labels, for `namespaceSelector`.
    pub namespaces: BTreeMap<String, BTreeMap<String, String>>,
}

impl ResourcePolicies {
    /// How many namespaces a cluster policy's selector matches (all, without a selector).
    pub fn matched_namespaces(&self, policy: &CompiledPolicy) -> usize {
        match &policy.namespace_selector {
            None => self.namespaces.len(),
            Some(selector) => self
                .namespaces
                .values()
                .filter(|labels| selector.matches(labels))
                .count(),
        }
    }
}

/// What one object is, as far as retention goes.
#[derive(Clone, Debug, PartialEq)]
pub enum Standing {
    /// No policy applies.
    Ungoverned,
    /// A policy governs it.
    Governed(Governed),
    /// Something about it could not be read; it is kept.
    Problem(Box<Problem>),
    /// It no longer exists: the final state a `DELETED` watch event reports, of which only the
    /// identity is decoded ([`gone`]). Nothing is assessed of an object that is gone; the engine
    /// only forgets it.
    Gone,
}

/// An object under a policy.
#[derive(Clone, Debug, PartialEq)]
pub struct Governed {
    /// The policy's index in [`ResourcePolicies::policies`].
    pub policy: u16,
    /// Deletion, creation and finish.
    pub facts: Facts,
    /// Its TTL.
    pub ttl: Ttl,
    /// Where the TTL came from.
    pub ttl_source: TtlSource,
    /// Its history group (`None`: the policy sets no limits, or the object has no group).
    pub group: Option<Box<str>>,
    /// Other policies that applied but lost to this one; `None` (the common case, kept to one
    /// word) when none did.
    pub overlap: Option<Box<Overlap>>,
}

/// The policies an object's governing policy won over.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Overlap {
    /// Their indices, most specific first.
    pub shadowed: Box<[u16]>,
    /// The runner-up was as specific as the winner: the name decided.
    pub tie: bool,
}

impl Governed {
    /// Other policies that applied but lost to this one (indices), most specific first.
    pub fn shadowed(&self) -> &[u16] {
        self.overlap.as_deref().map_or(&[], |o| &o.shadowed)
    }

    /// The runner-up was as specific as the winner: the name decided.
    pub fn tie(&self) -> bool {
        self.overlap.as_deref().is_some_and(|o| o.tie)
    }
}

/// Why an object could not be assessed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The policy that governs the object, when precedence chose one: the object is counted
    /// as matched by it. `None` when a `match` expression failed before any could be chosen
    /// (the message names the policy whose expression it was).
    pub policy: Option<u16>,
    /// What went wrong, as a metric label: `match`, `finish_rule`, `own_ttl`, `annotation`.
    pub reason: &'static str,
    /// The message for the Event and the log.
    pub message: String,
}

/// One cached object.
#[derive(Clone, PartialEq)]
pub struct Assessment {
    key: ObjectKey,
    uid: Box<str>,
    resource_version: Box<str>,
    /// The verdict's inputs.
    pub standing: Standing,
}

impl Assessment {
    /// `namespace/name`.
    pub fn key(&self) -> &ObjectKey {
        &self.key
    }

    /// The governing policy's index and inputs, if any.
    pub fn governed(&self) -> Option<&Governed> {
        match &self.standing {
            Standing::Governed(g) => Some(g),
            _ => None,
        }
    }
}

impl Cacheable for Assessment {
    fn cache_key(&self) -> ObjectKey {
        self.key.clone()
    }

    fn resource_version(&self) -> &str {
        &self.resource_version
    }

    fn uid(&self) -> &str {
        &self.uid
    }
}

impl fmt::Debug for Assessment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Assessment")
            .field("key", &self.key)
            .field("uid", &self.uid)
            .field("resource_version", &self.resource_version)
            .field("standing", &self.standing)
            .finish()
    }
}

/// The metadata an assessment reads — only that is built, and its strings are borrowed from
/// the decoded object rather than copied: labels (for selectors and label groups), the two
/// `kube-gc.io` annotations, and of each owner reference its UID and whether it is the
/// controller. The rest of the object is read through the policies' rules.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Meta<'a> {
    #[serde(default, borrow)]
    name: Option<&'a str>,
    #[serde(default, borrow)]
    namespace: Option<&'a str>,
    #[serde(default, borrow)]
    uid: Option<&'a str>,
    #[serde(default, borrow)]
    resource_version: Option<&'a str>,
    #[serde(default)]
    creation_timestamp: Option<Time>,
    #[serde(default)]
    deletion_timestamp: Option<Time>,
    #[serde(default, borrow, deserialize_with = "null_as_default")]
    labels: BTreeMap<&'a str, &'a str>,
    #[serde(default, borrow, deserialize_with = "null_as_default")]
    annotations: KubeGcAnnotations<'a>,
    #[serde(default, borrow, deserialize_with = "null_as_default")]
    owner_references: Vec<Owner<'a>>,
}

/// What `Meta` reads of an object, as a [`Need`]: the watch's decoder builds this much of
/// `metadata` (plus what the rules read), so it names exactly the fields of `Meta`.
pub fn metadata_need() -> Need {
    let mut need = Need::nothing();
    for field in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "deletionTimestamp",
        "labels",
    ] {
        need.add(&["metadata", field]);
    }
    for annotation in [ttl::TTL_ANNOTATION, ttl::EXPIRES_AT_ANNOTATION] {
        need.add(&["metadata", "annotations", annotation]);
    }
    for field in ["uid", "controller"] {
        need.add(&["metadata", "ownerReferences", field]);
    }
    need
}

/// What the decoder must build of an object for [`assess`] under `policies`: the metadata
/// `Meta` reads, plus what each policy's `match`, finish rule and own TTL fields read.
pub fn needed(policies: &[Arc<CompiledPolicy>]) -> Need {
    let mut need = metadata_need();
    for policy in policies {
        if let Some(expr) = &policy.match_expr {
            expr.add_reads_to(&mut need);
        }
        policy.finish.add_reads_to(&mut need);
        for field in &policy.own_ttl {
            field.add_reads_to(&mut need);
        }
    }
    need
}

/// `kube-gc.io/ttl` and `kube-gc.io/expires-at`; other annotations are skipped unbuilt.
#[derive(Deserialize, Default)]
struct KubeGcAnnotations<'a> {
    #[serde(default, borrow, rename = "kube-gc.io/ttl")]
    ttl: Option<&'a str>,
    #[serde(default, borrow, rename = "kube-gc.io/expires-at")]
    expires_at: Option<&'a str>,
}

/// What an assessment needs of an owner reference.
#[derive(Deserialize)]
struct Owner<'a> {
    #[serde(default, borrow)]
    uid: &'a str,
    #[serde(default)]
    controller: Option<bool>,
}

impl Owner<'_> {
    fn is_controller(&self) -> bool {
        self.controller == Some(true)
    }
}

#[derive(Deserialize, Default)]
struct Wire<'a> {
    #[serde(default, borrow)]
    metadata: Meta<'a>,
}

/// Assesses one object at `now` (its decode time): which policy governs it and what that
/// policy reads of it, or why it cannot be read.
pub fn assess(
    object: &serde_json::Value,
    rules: &ResourcePolicies,
    now: DateTime<Utc>,
) -> Assessment {
    let meta = Wire::deserialize(object).unwrap_or_default().metadata;
    let standing = standing_of(object, &meta, rules, now);
    Assessment {
        key: ObjectKey::new(
            meta.namespace.unwrap_or_default(),
            meta.name.unwrap_or_default(),
        ),
        uid: meta.uid.unwrap_or_default().into(),
        resource_version: meta.resource_version.unwrap_or_default().into(),
        standing,
    }
}

/// The assessment of a deleted object's final state (the object of a `DELETED` watch event):
/// its key, UID and resourceVersion, read from the text with everything else skipped unbuilt,
/// and [`Standing::Gone`]. A deleted object's labels, status and policies no longer matter, and
/// building them was most of the cost of the event.
///
/// # Errors
///
/// What `serde_json` says of text that is not one JSON object, or whose identity fields are
/// not strings.
pub fn gone(bytes: &[u8]) -> serde_json::Result<Assessment> {
    #[derive(Deserialize)]
    struct Object<'a> {
        #[serde(default, borrow, deserialize_with = "null_as_default")]
        metadata: Identity<'a>,
    }
    /// Borrowed from the text unless a string has escapes.
    #[derive(Deserialize, Default)]
    #[serde(rename_all = "camelCase")]
    struct Identity<'a> {
        #[serde(default, borrow)]
        name: Option<Cow<'a, str>>,
        #[serde(default, borrow)]
        namespace: Option<Cow<'a, str>>,
        #[serde(default, borrow)]
        uid: Option<Cow<'a, str>>,
        #[serde(default, borrow)]
        resource_version: Option<Cow<'a, str>>,
    }
    expect_object(bytes)?;
    let meta = serde_json::from_slice::<Object<'_>>(bytes)?.metadata;
    let text = |field: &Option<Cow<'_, str>>| field.as_deref().unwrap_or_default().into();
    Ok(Assessment {
        key: ObjectKey::new(
            meta.namespace.as_deref().unwrap_or_default(),
            meta.name.as_deref().unwrap_or_default(),
        ),
        uid: text(&meta.uid),
        resource_version: text(&meta.resource_version),
        standing: Standing::Gone,
    })
}

fn standing_of(
    object: &serde_json::Value,
    meta: &Meta<'_>,
    rules: &ResourcePolicies,
    now: DateTime<Utc>,
) -> Standing {
    let applying = match applying_policies(object, meta, rules, now) {
        Ok(applying) => applying,
        Err(problem) => return Standing::Problem(Box::new(problem)),
    };
    let candidates: Vec<Candidate<'_>> = applying
        .iter()
        .map(|&i| {
            let policy = &rules.policies[i];
            Candidate {
                name: &policy.id.name,
                scope: match policy.id.namespace {
                    Some(_) => Scope::Namespaced,
                    None => Scope::Cluster {
                        matched_namespaces: rules.matched_namespaces(policy),
                    },
                },
            }
        })
        .collect();
    let Some(choice) = precedence::choose(&candidates) else {
        return Standing::Ungoverned;
    };
    let index = applying[choice.winner];
    match governed(object, meta, &rules.policies[index], now) {
        Ok(mut governed) => {
            governed.policy = index as u16;
            if !choice.shadowed.is_empty() || choice.tie {
                governed.overlap = Some(Box::new(Overlap {
                    shadowed: choice
                        .shadowed
                        .iter()
                        .map(|&i| applying[i] as u16)
                        .collect(),
                    tie: choice.tie,
                }));
            }
            Standing::Governed(governed)
        }
        Err((reason, message)) => Standing::Problem(Box::new(Problem {
            policy: Some(index as u16),
            reason,
            message,
        })),
    }
}

/// The indices of the policies that apply to the object.
fn applying_policies(
    object: &serde_json::Value,
    meta: &Meta<'_>,
    rules: &ResourcePolicies,
    now: DateTime<Utc>,
) -> Result<Vec<usize>, Problem> {
    let namespace = meta.namespace.unwrap_or_default();
    let controlled = meta.owner_references.iter().any(Owner::is_controller);
    let mut applying = Vec::new();
    for (i, policy) in rules.policies.iter().enumerate() {
        let in_scope = match (&policy.id.namespace, &policy.namespace_selector) {
            (Some(own), _) => own == namespace,
            (None, None) => true,
            (None, Some(selector)) => rules
                .namespaces
                .get(namespace)
                .is_some_and(|labels| selector.matches(labels)),
        };
        let selected = policy
            .selector
            .as_ref()
            .is_none_or(|s| s.matches_lookup(|key| meta.labels.get(key).copied()));
        if !in_scope || !selected || (policy.skip_controlled && controlled) {
            continue;
        }
        let matched = match &policy.match_expr {
            None => true,
            Some(expr) => expr.eval_bool(object, now).map_err(|e| Problem {
                policy: None,
                reason: "match",
                message: format!("{}: spec.match: {e}", policy.label()),
            })?,
        };
        if matched {
            applying.push(i);
        }
    }
    Ok(applying)
}

/// The governing policy's reading of the object.
fn governed(
    object: &serde_json::Value,
    meta: &Meta<'_>,
    policy: &CompiledPolicy,
    now: DateTime<Utc>,
) -> Result<Governed, (&'static str, String)> {
    let finished = policy
        .finish
        .evaluate(object, now)
        .map_err(|e| ("finish_rule", format!("{}: {e}", policy.label())))?;
    let own = own_ttl_field(&policy.own_ttl, object, finished.map(|f| f.outcome))
        .map_err(|e| ("own_ttl", format!("{}: {e}", policy.label())))?
        // A preset has a handful of own TTL fields (the presets' tests check it fits).
        .map(|(index, seconds)| (u8::try_from(index).unwrap_or(u8::MAX), seconds));
    let annotations = match policy.reads_annotations() {
        true => (meta.annotations.ttl, meta.annotations.expires_at),
        false => (None, None),
    };
    let (ttl, ttl_source) = ttl::effective(policy.ttl, own, annotations.0, annotations.1)
        .map_err(|e| ("annotation", e.to_string()))?;
    let group = if policy.limits.any() && finished.is_some() {
        group_of(meta, &policy.group_by)
    } else {
        None
    };
    Ok(Governed {
        policy: 0,
        facts: Facts {
            being_deleted: meta.deletion_timestamp.is_some(),
            created_at: meta.creation_timestamp.map(|t| t.0),
            finished,
        },
        ttl,
        ttl_source,
        group,
        overlap: None,
    })
}

/// The history group of the objects without a controlling owner, grouped by owner: one per
/// namespace.
pub const NO_CONTROLLER_GROUP: &str = "(none)";

/// The history group: the controlling owner's UID, or [`NO_CONTROLLER_GROUP`] for objects
/// without one (they form one group per namespace); or a label's value (objects without the
/// label are in no group, so no limit deletes them).
fn group_of(meta: &Meta<'_>, group_by: &GroupBy) -> Option<Box<str>> {
    match group_by {
        GroupBy::Owner => Some(
            meta.owner_references
                .iter()
                .find(|o| o.is_controller())
                .map_or(NO_CONTROLLER_GROUP, |o| o.uid)
                .into(),
        ),
        GroupBy::Label(key) => meta.labels.get(key.as_str()).map(|v| (*v).into()),
    }
}

#[cfg(test)]
mod tests;
