//! A policy checked and compiled: [`compile`] turns what a user wrote into a
//! [`CompiledPolicy`] the engine applies, or into every [`FieldError`] it has, each naming the
//! field at fault — the reasons `Ready=False` and the Warning Event give.
//!
//! Contract:
//! - Exactly one of `preset` and `resource`; a preset must exist; a `resource` needs
//!   `finished` (a preset's rule may be overridden by one).
//! - TTLs and history limits are not negative; a TTL after finishing and a TTL after creation
//!   together are refused (which one would count?).
//! - `groupBy` is `owner` or `{label: <key>}`; `propagationPolicy` one of the three; label
//!   selectors well formed; CEL compiles and reads only `object` and `now`;
//!   `namespaceSelector` only on a `ClusterRetentionPolicy`; `mode` and `notification` as
//!   `reporting.rs` says.
//! - Compiling is pure and total: it never fails on anything but the policy itself, and a
//!   policy that compiles can be applied to any object (errors per object are the assessment's).

use chrono::Duration;

use super::reporting::{self, Mode, WebhookSecret};
use super::spec::{ResourceSpec, RetentionPolicyObject, RetentionPolicySpec};
use super::{finished, FieldError};
use crate::retention::cel::CelExpr;
use crate::retention::finish::{FinishRule, GroupBy, TtlField};
use crate::retention::history::Limits;
use crate::retention::preset::{self, PresetResource};
use crate::retention::ttl::{PolicyTtl, Since};
use kube_gc_api::{LabelSelector, PropagationPolicy};

/// Which policy: a `RetentionPolicy` has a namespace, a `ClusterRetentionPolicy` none.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PolicyId {
    /// `Some` for a `RetentionPolicy`.
    pub namespace: Option<String>,
    /// Its name.
    pub name: String,
}

impl PolicyId {
    /// The `ClusterRetentionPolicy` `name`.
    pub fn cluster(name: &str) -> PolicyId {
        PolicyId {
            namespace: None,
            name: name.to_owned(),
        }
    }

    /// The kind, as Events and logs name it.
    pub fn kind(&self) -> &'static str {
        if self.namespace.is_some() {
            "RetentionPolicy"
        } else {
            "ClusterRetentionPolicy"
        }
    }

    /// `namespace/name`, or `name` for a `ClusterRetentionPolicy`: a metric label value, which
    /// holds no space (the kind goes in a label of its own).
    pub fn path(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{ns}/{}", self.name),
            None => self.name.clone(),
        }
    }
}

impl std::fmt::Display for PolicyId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "RetentionPolicy {ns}/{}", self.name),
            None => write!(f, "ClusterRetentionPolicy {}", self.name),
        }
    }
}

/// A resource a policy applies to, by group, version and plural.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Target {
    /// API group (`""` for core).
    pub group: String,
    /// Version.
    pub version: String,
    /// Plural.
    pub resource: String,
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.group.is_empty() {
            write!(f, "{}/{}", self.version, self.resource)
        } else {
            write!(f, "{}/{}/{}", self.group, self.version, self.resource)
        }
    }
}

/// A valid policy, ready to apply.
#[derive(Clone, Debug)]
pub struct CompiledPolicy {
    /// Which policy.
    pub id: PolicyId,
    /// `metadata.generation` it was compiled from.
    pub generation: Option<i64>,
    /// The preset it uses, if any.
    pub preset: Option<&'static str>,
    /// The resources it applies to.
    pub targets: Vec<Target>,
    /// Cluster policies: the namespaces it applies in (`None`: all).
    pub namespace_selector: Option<LabelSelector>,
    /// The objects it applies to (`None`: all).
    pub selector: Option<LabelSelector>,
    /// Only objects for which this is true.
    pub match_expr: Option<CelExpr>,
    /// When an object has finished.
    pub finish: FinishRule,
    /// The objects' own TTL fields, which override the policy's TTL.
    pub own_ttl: Vec<TtlField>,
    /// The policy's TTL.
    pub ttl: PolicyTtl,
    /// History limits.
    pub limits: Limits,
    /// How objects are grouped for the limits.
    pub group_by: GroupBy,
    /// How deletions propagate.
    pub propagation: PropagationPolicy,
    /// Delete what is due, or only judge and report it.
    pub mode: Mode,
    /// Where its notifications go, besides kube-gc's own webhook.
    pub notification: Option<WebhookSecret>,
    /// Leave objects with a controlling owner to their controller.
    pub skip_controlled: bool,
    /// A user's policy object, or the fixed policy a TTL controller runs the engine with.
    pub origin: Origin,
}

/// Where a [`CompiledPolicy`] comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A `RetentionPolicy` or `ClusterRetentionPolicy` object.
    Object,
    /// The fixed policy of the controller so named (`ttl-after-finished`, `volcano-job-ttl`):
    /// the preset's kind, deleted when its own TTL field says, exactly as the upstream
    /// controller does — no policy TTL, no limits, and the `kube-gc.io` annotations are not
    /// read (upstream knows nothing of them).
    Controller(&'static str),
}

impl CompiledPolicy {
    /// The fixed policy the TTL controller `controller` runs the engine with: every object
    /// of `preset`'s kinds in scope, kept until its own TTL field expires.
    pub fn for_controller(preset: &preset::Preset, controller: &'static str) -> CompiledPolicy {
        CompiledPolicy {
            id: PolicyId {
                namespace: None,
                name: controller.to_owned(),
            },
            generation: None,
            preset: Some(preset.name),
            targets: preset.resources.iter().map(target_of).collect(),
            namespace_selector: None,
            selector: None,
            match_expr: None,
            finish: preset.finish.clone(),
            own_ttl: preset.own_ttl.clone(),
            ttl: PolicyTtl {
                since: Since::Finished,
                length: None,
            },
            limits: Limits::default(),
            group_by: preset.group_by.clone(),
            propagation: preset.propagation,
            mode: Mode::Enforce,
            notification: None,
            skip_controlled: false,
            origin: Origin::Controller(controller),
        }
    }

    /// Whether the `kube-gc.io/ttl` and `kube-gc.io/expires-at` annotations apply.
    pub fn reads_annotations(&self) -> bool {
        self.origin == Origin::Object
    }

    /// The policy as messages name it: `ClusterRetentionPolicy x`, or `controller y`.
    pub fn label(&self) -> PolicyLabel<'_> {
        PolicyLabel(self)
    }
}

/// [`CompiledPolicy::label`].
pub struct PolicyLabel<'a>(&'a CompiledPolicy);

impl std::fmt::Display for PolicyLabel<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0.origin {
            Origin::Object => self.0.id.fmt(f),
            Origin::Controller(name) => write!(f, "controller {name}"),
        }
    }
}

/// Compiles a policy object; `cluster` says which kind it was read as.
///
/// # Errors
///
/// Every field at fault, in the order of the spec.
pub fn compile(
    object: &RetentionPolicyObject,
    cluster: bool,
) -> Result<CompiledPolicy, Vec<FieldError>> {
    let spec = &object.spec;
    let mut errors = Vec::new();
    let id = PolicyId {
        namespace: if cluster {
            None
        } else {
            object.metadata.namespace.clone()
        },
        name: object.metadata.name.clone().unwrap_or_default(),
    };
    let source = what(spec, &mut errors);
    if !cluster && spec.namespace_selector.is_some() {
        errors.push(FieldError::new(
            "spec.namespaceSelector",
            "only a ClusterRetentionPolicy selects namespaces; a RetentionPolicy applies in its own",
        ));
    }
    let namespace_selector = selector(
        spec.namespace_selector.as_ref(),
        "spec.namespaceSelector",
        &mut errors,
    );
    let object_selector = selector(spec.selector.as_ref(), "spec.selector", &mut errors);
    let match_expr = spec.match_expression.as_deref().and_then(|text| {
        CelExpr::compile(text)
            .map_err(|e| errors.push(FieldError::new("spec.match", e.to_string())))
            .ok()
    });
    let finish = finish_rule(spec, source.as_ref(), &mut errors);
    let ttl = policy_ttl(spec, &mut errors);
    let limits = Limits {
        successful: limit(
            spec.successful_history_limit,
            "spec.successfulHistoryLimit",
            &mut errors,
        ),
        failed: limit(
            spec.failed_history_limit,
            "spec.failedHistoryLimit",
            &mut errors,
        ),
    };
    let group_by = group_by(spec, source.as_ref(), &mut errors);
    let propagation = propagation(spec, source.as_ref(), &mut errors);
    let mode = reporting::mode(spec, &mut errors);
    // A RetentionPolicy's own namespace; `None` marks a ClusterRetentionPolicy.
    let own_namespace = (!cluster).then(|| id.namespace.as_deref().unwrap_or(""));
    let notification =
        reporting::notification(spec.notification.as_ref(), own_namespace, &mut errors);
    let (Some(source), Some(finish), Some(group_by), Some(propagation), true) =
        (source, finish, group_by, propagation, errors.is_empty())
    else {
        return Err(errors);
    };
    Ok(CompiledPolicy {
        id,
        generation: object.metadata.generation,
        preset: source.preset,
        targets: source.targets,
        namespace_selector,
        selector: object_selector,
        match_expr,
        finish,
        own_ttl: source.own_ttl,
        ttl,
        limits,
        group_by,
        propagation,
        mode,
        notification,
        skip_controlled: source.skip_controlled && spec.include_controlled != Some(true),
        origin: Origin::Object,
    })
}

/// What a policy applies to and the defaults that come with it: a preset's, or a resource's.
struct Source {
    preset: Option<&'static str>,
    targets: Vec<Target>,
    finish: Option<FinishRule>,
    own_ttl: Vec<TtlField>,
    group_by: GroupBy,
    propagation: PropagationPolicy,
    skip_controlled: bool,
}

fn what(spec: &RetentionPolicySpec, errors: &mut Vec<FieldError>) -> Option<Source> {
    match (&spec.preset, &spec.resource) {
        (Some(name), None) => from_preset(name, errors),
        (None, Some(resource)) => from_resource(resource, errors),
        _ => {
            errors.push(FieldError::new(
                "spec",
                "exactly one of preset and resource must be set",
            ));
            None
        }
    }
}

fn from_preset(name: &str, errors: &mut Vec<FieldError>) -> Option<Source> {
    let Some(preset) = preset::named(name) else {
        errors.push(FieldError::new(
            "spec.preset",
            format!(
                "unknown preset {name:?} (known: {})",
                preset::NAMES.join(", ")
            ),
        ));
        return None;
    };
    Some(Source {
        preset: Some(preset.name),
        targets: preset.resources.iter().map(target_of).collect(),
        finish: Some(preset.finish),
        own_ttl: preset.own_ttl,
        group_by: preset.group_by,
        propagation: preset.propagation,
        skip_controlled: preset.skip_controlled,
    })
}

fn target_of(resource: &PresetResource) -> Target {
    Target {
        group: resource.group.to_owned(),
        version: resource.version.to_owned(),
        resource: resource.resource.to_owned(),
    }
}

fn from_resource(resource: &ResourceSpec, errors: &mut Vec<FieldError>) -> Option<Source> {
    let before = errors.len();
    for (field, value) in [
        ("version", &resource.version),
        ("resource", &resource.resource),
    ] {
        if value.trim().is_empty() {
            errors.push(FieldError::new(
                format!("spec.resource.{field}"),
                "must not be empty",
            ));
        }
    }
    if errors.len() > before {
        return None;
    }
    Some(Source {
        preset: None,
        targets: vec![Target {
            group: resource.group.clone(),
            version: resource.version.clone(),
            resource: resource.resource.clone(),
        }],
        finish: None,
        own_ttl: Vec::new(),
        group_by: GroupBy::Owner,
        propagation: PropagationPolicy::Background,
        skip_controlled: false,
    })
}

fn selector(
    selector: Option<&LabelSelector>,
    field: &str,
    errors: &mut Vec<FieldError>,
) -> Option<LabelSelector> {
    let selector = selector?;
    if let Err(e) = selector.validate() {
        errors.push(FieldError::new(
            format!("{field}.matchExpressions[{}]", e.index),
            e.problem,
        ));
    }
    Some(selector.clone())
}

fn finish_rule(
    spec: &RetentionPolicySpec,
    source: Option<&Source>,
    errors: &mut Vec<FieldError>,
) -> Option<FinishRule> {
    match (&spec.finished, source) {
        (Some(finished), _) => finished::finish_rule(finished, "spec.finished")
            .map_err(|e| errors.push(e))
            .ok(),
        (None, Some(source)) => match &source.finish {
            Some(rule) => Some(rule.clone()),
            // Deleted a time after creation, finished or not, and no history to keep: nothing
            // needs to know when an object finishes (preview namespaces after 8 h).
            None if creation_ttl_alone(spec) => Some(FinishRule::never()),
            None => {
                errors.push(FieldError::new(
                    "spec.finished",
                    "required with resource: say when an object has finished \
                     (only ttlSecondsAfterCreation without history limits does without)",
                ));
                None
            }
        },
        (None, None) => None,
    }
}

/// `ttlSecondsAfterCreation` and no history limit: the one policy that never asks whether an
/// object has finished.
fn creation_ttl_alone(spec: &RetentionPolicySpec) -> bool {
    spec.ttl_seconds_after_creation.is_some()
        && spec.successful_history_limit.is_none()
        && spec.failed_history_limit.is_none()
}

fn policy_ttl(spec: &RetentionPolicySpec, errors: &mut Vec<FieldError>) -> PolicyTtl {
    let after_finished = seconds(
        spec.ttl_seconds_after_finished,
        "spec.ttlSecondsAfterFinished",
        errors,
    );
    let after_creation = seconds(
        spec.ttl_seconds_after_creation,
        "spec.ttlSecondsAfterCreation",
        errors,
    );
    match (after_finished, after_creation) {
        (Some(_), Some(_)) => {
            errors.push(FieldError::new(
                "spec",
                "ttlSecondsAfterFinished and ttlSecondsAfterCreation are exclusive: set one",
            ));
            PolicyTtl {
                since: Since::Finished,
                length: None,
            }
        }
        (None, Some(length)) => PolicyTtl {
            since: Since::Created,
            length: Some(length),
        },
        (length, None) => PolicyTtl {
            since: Since::Finished,
            length,
        },
    }
}

fn seconds(value: Option<i64>, field: &str, errors: &mut Vec<FieldError>) -> Option<Duration> {
    let value = value?;
    if value < 0 {
        errors.push(FieldError::new(
            field,
            format!("must not be negative, got {value}"),
        ));
        return None;
    }
    Some(Duration::seconds(value))
}

fn limit(value: Option<i64>, field: &str, errors: &mut Vec<FieldError>) -> Option<u32> {
    let value = value?;
    match u32::try_from(value) {
        Ok(limit) => Some(limit),
        Err(_) => {
            errors.push(FieldError::new(
                field,
                format!("must be between 0 and {}, got {value}", u32::MAX),
            ));
            None
        }
    }
}

fn group_by(
    spec: &RetentionPolicySpec,
    source: Option<&Source>,
    errors: &mut Vec<FieldError>,
) -> Option<GroupBy> {
    match &spec.group_by {
        None => source.map(|s| s.group_by.clone()),
        Some(group_by) => finished::group_by(group_by, "spec.groupBy")
            .map_err(|e| errors.push(e))
            .ok(),
    }
}

fn propagation(
    spec: &RetentionPolicySpec,
    source: Option<&Source>,
    errors: &mut Vec<FieldError>,
) -> Option<PropagationPolicy> {
    match spec.propagation_policy.as_deref() {
        None => source.map(|s| s.propagation),
        Some("Foreground") => Some(PropagationPolicy::Foreground),
        Some("Background") => Some(PropagationPolicy::Background),
        Some("Orphan") => Some(PropagationPolicy::Orphan),
        Some(other) => {
            errors.push(FieldError::new(
                "spec.propagationPolicy",
                format!("{other:?} is not one of Foreground, Background, Orphan"),
            ));
            None
        }
    }
}

#[cfg(test)]
mod tests;
