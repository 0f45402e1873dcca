//! The verdict on one object, pure: every controller's decision from the gathered facts, with
//! the controllers' own functions — the TTL controllers' projection and `judge`, the retention
//! engine's `plan`, `project`, `judge` and `rank`, the garbage collector's `action`.
//!
//! Contract: the object's verdict is the earliest deletion any governing controller would make
//! (`delete-now` before `delete-at`); an object with a `deletionTimestamp` is `blocked` while
//! finalizers remain; `unknown` when something it depends on could not be read (a missing
//! finish time, a CEL error, an owner kind not served); else `keep`. Each controller says
//! whether it governs the object and, when it does not, why.

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::Value;

use crate::api::{ObjectMeta, OwnerReference, PropagationPolicy};
use crate::controllers::garbagecollector::{action, Action};
use crate::controllers::retention::engine::plan_served;
use crate::controllers::retention::history::{rank, Member};
use crate::controllers::retention::judge::{judge as judge_retention, KeepReason, Verdict};
use crate::controllers::retention::judgement::{project, Judged, Rules};
use crate::controllers::retention::policy::{CompiledPolicy, Target};
use crate::controllers::retention::ttl::{Since, Ttl, TtlSource};
use crate::controllers::ttl::{
    judge as judge_ttl, BatchJob, TtlKind, TtlObject, Verdict as TtlVerdict, VolcanoJobs,
};
use crate::runtime::cache::Cacheable;

use super::gather::{same_resource, Gathered, OwnerState, Related};
use super::{
    Blocker, Decision, DeletionInProgress, EventLine, Explanation, FinalizerWait, ObjectId,
    VerdictKind,
};

/// Explains `gathered` at `now`.
pub fn decide(gathered: &Gathered, now: DateTime<Utc>) -> Explanation {
    let meta = gathered.meta();
    let decisions = vec![
        ttl_decision::<BatchJob>(gathered, now),
        ttl_decision::<VolcanoJobs>(gathered, now),
        retention_decision(gathered, &meta, now),
        gc_decision(gathered, &meta),
    ];
    let deletion = deletion_in_progress(gathered, &meta);
    let (verdict, delete_at, reasons) = overall(&decisions, deletion.as_ref());
    Explanation {
        object: ObjectId {
            api_version: gathered.resource.api_version(),
            kind: gathered.resource.kind.clone(),
            namespace: meta.namespace.clone(),
            name: meta.name.clone().unwrap_or_default(),
            uid: meta.uid.clone().unwrap_or_default(),
        },
        verdict,
        delete_at,
        reasons,
        decisions,
        deletion,
        events: gathered.events.iter().map(event_line).collect(),
    }
}

/// An RFC 3339 time, to the second.
pub fn rfc3339(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// "in 3h12m", "2m5s ago".
pub fn relative(at: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let seconds = (at - now).num_seconds();
    let span = human(seconds.unsigned_abs());
    if seconds >= 0 {
        format!("in {span}")
    } else {
        format!("{span} ago")
    }
}

fn human(seconds: u64) -> String {
    let (d, h, m, s) = (
        seconds / 86_400,
        seconds / 3600 % 24,
        seconds / 60 % 60,
        seconds % 60,
    );
    match (d, h, m) {
        (0, 0, 0) => format!("{s}s"),
        (0, 0, _) => format!("{m}m{s}s"),
        (0, _, _) => format!("{h}h{m}m"),
        _ => format!("{d}d{h}h"),
    }
}

fn decision(controller: &str, governs: bool, verdict: VerdictKind, summary: String) -> Decision {
    Decision {
        controller: controller.to_owned(),
        governs,
        verdict,
        delete_at: None,
        summary,
        details: Vec::new(),
    }
}

/// The TTL controller of kind `K`: its projection and its `judge`.
fn ttl_decision<K: TtlKind>(gathered: &Gathered, now: DateTime<Utc>) -> Decision {
    let resource = K::resource();
    if !same_resource(&gathered.resource, &resource) {
        let why = format!(
            "does not apply: it cleans up {} ({}) only",
            K::KIND,
            resource.path_name()
        );
        return decision(K::CONTROLLER, false, VerdictKind::Keep, why);
    }
    let Ok(object) = serde_json::from_value::<TtlObject<K>>(gathered.object.clone()) else {
        return decision(
            K::CONTROLLER,
            true,
            VerdictKind::Unknown,
            "its spec or status cannot be read".into(),
        );
    };
    let state = *object.state();
    let Some(ttl) = state.ttl_seconds else {
        return decision(
            K::CONTROLLER,
            false,
            VerdictKind::Keep,
            "does not apply: no spec.ttlSecondsAfterFinished".into(),
        );
    };
    let mut d = match judge_ttl(&state, now) {
        Ok(TtlVerdict::Keep) if state.being_deleted => decision(K::CONTROLLER, true, VerdictKind::Keep, "already being deleted".into()),
        Ok(TtlVerdict::Keep) => decision(K::CONTROLLER, true, VerdictKind::Keep, format!("not finished: its ttlSecondsAfterFinished ({ttl}s) starts when it finishes")),
        Ok(TtlVerdict::Wait { expires_at, finished_in_future, .. }) => {
            let mut d = decision(K::CONTROLLER, true, VerdictKind::DeleteAt, format!("ttlSecondsAfterFinished {ttl}s expires at {} ({})", rfc3339(expires_at), relative(expires_at, now)));
            d.delete_at = Some(rfc3339(expires_at));
            if finished_in_future {
                d.details.push("its finish time is later than now: the cluster's and this machine's clocks disagree".into());
            }
            d
        }
        Ok(TtlVerdict::Expired { expired_at }) => decision(K::CONTROLLER, true, VerdictKind::DeleteNow, format!("ttlSecondsAfterFinished {ttl}s expired at {} ({})", rfc3339(expired_at), relative(expired_at, now))),
        Err(_) => decision(K::CONTROLLER, true, VerdictKind::Unknown, "finished, but its finish time is not set: its TTL cannot be applied, and it is not deleted on a guess".into()),
    };
    d.details.push(format!(
        "controller: {} (kube-controller-manager's rules for {})",
        K::CONTROLLER,
        K::KIND
    ));
    d
}

/// The retention engine: the plan for the object's resource, its judgement, its group's ranks.
fn retention_decision(gathered: &Gathered, meta: &ObjectMeta, now: DateTime<Utc>) -> Decision {
    const NAME: &str = "retention";
    let Some(policies) = &gathered.policies else {
        return decision(
            NAME,
            false,
            VerdictKind::Keep,
            "does not apply: the kube-gc.io retention policy CRDs are not installed".into(),
        );
    };
    let policies = policies.iter().map(|(object, cluster)| (object, *cluster));
    let planned = plan_served(policies, &gathered.namespaces, &gathered.served);
    let target = Target {
        group: gathered.resource.group.clone(),
        version: gathered.resource.version.clone(),
        resource: gathered.resource.plural.clone(),
    };
    let Some(watch) = planned.watches.get(&target) else {
        return decision(
            NAME,
            false,
            VerdictKind::Keep,
            format!("does not apply: no valid policy names {target}"),
        );
    };
    let rules = &watch.rules;
    let judgement = project(&gathered.object, rules, now);
    let governed = match &judgement.judged {
        Judged::Ungoverned => {
            let mut d = decision(
                NAME,
                false,
                VerdictKind::Keep,
                format!(
                    "no policy applies (of {} naming {target})",
                    rules.policies.len()
                ),
            );
            d.details = rules
                .policies
                .iter()
                .map(|p| {
                    format!(
                        "{}: {}",
                        p.id,
                        why_not(p, meta, rules, &gathered.object, now)
                    )
                })
                .collect();
            return d;
        }
        Judged::Problem(problem) => {
            return decision(
                NAME,
                true,
                VerdictKind::Unknown,
                format!("kept: {}", problem.message),
            )
        }
        Judged::Governed(governed) => governed,
    };
    let policy = &rules.policies[usize::from(governed.policy)];
    let mut details = vec![format!(
        "governed by {}{}",
        policy.id,
        policy
            .preset
            .map(|p| format!(" (preset {p})"))
            .unwrap_or_default()
    )];
    for &loser in governed.shadowed.iter() {
        let tie = if governed.tie {
            ", equally specific: the name decided"
        } else {
            ""
        };
        details.push(format!(
            "also matched by {} (less specific{tie})",
            rules.policies[usize::from(loser)].id
        ));
    }
    details.push(match governed.facts.finished {
        None => "not finished".to_owned(),
        Some(f) => match f.at {
            Some(at) => format!("finished ({}) at {}", f.outcome.as_str(), rfc3339(at)),
            None => format!("finished ({}), time unknown", f.outcome.as_str()),
        },
    });
    details.push(ttl_line(governed.ttl, &governed.ttl_source));
    let mut d = match judge_retention(&governed.facts, governed.ttl, now) {
        Ok(Verdict::Keep(KeepReason::NoTtl)) => decision(
            NAME,
            true,
            VerdictKind::Keep,
            "no TTL: only a history limit can delete it".into(),
        ),
        Ok(Verdict::Keep(KeepReason::NotFinished)) => decision(
            NAME,
            true,
            VerdictKind::Keep,
            "not finished: its TTL counts from the finish".into(),
        ),
        Ok(Verdict::Keep(KeepReason::BeingDeleted)) => decision(
            NAME,
            true,
            VerdictKind::Keep,
            "already being deleted".into(),
        ),
        Ok(Verdict::Wait { expires_at, .. }) => {
            let mut d = decision(
                NAME,
                true,
                VerdictKind::DeleteAt,
                format!(
                    "its TTL expires at {} ({})",
                    rfc3339(expires_at),
                    relative(expires_at, now)
                ),
            );
            d.delete_at = Some(rfc3339(expires_at));
            d
        }
        Ok(Verdict::Expired { expired_at }) => decision(
            NAME,
            true,
            VerdictKind::DeleteNow,
            format!(
                "its TTL expired at {} ({})",
                rfc3339(expired_at),
                relative(expired_at, now)
            ),
        ),
        Err(e) => decision(NAME, true, VerdictKind::Unknown, format!("kept: {e}")),
    };
    if let Some(line) = history_line(
        gathered,
        rules,
        policy,
        governed.policy,
        governed.group.as_deref(),
        &judgement,
        now,
    ) {
        if line.1 && d.verdict != VerdictKind::DeleteNow {
            d.verdict = VerdictKind::DeleteNow;
            d.delete_at = None;
            d.summary = format!("beyond its history limit: {}", line.0);
        }
        details.push(line.0);
    }
    d.details = details;
    d
}

/// The TTL in words, and who set it.
fn ttl_line(ttl: Ttl, source: &TtlSource) -> String {
    let from = match source {
        TtlSource::Policy => "the policy".to_owned(),
        TtlSource::OwnField(path) => format!("the object's {path}"),
        TtlSource::TtlAnnotation => "annotation kube-gc.io/ttl".to_owned(),
        TtlSource::ExpiresAtAnnotation => "annotation kube-gc.io/expires-at".to_owned(),
    };
    let since = |since: Since| match since {
        Since::Finished => "it finished",
        Since::Created => "it was created",
    };
    match ttl {
        Ttl::None => format!("no TTL (none from {from}): only a history limit can delete it"),
        Ttl::After { since: s, length } => format!(
            "TTL {} after {} (from {from})",
            human(length.num_seconds().unsigned_abs()),
            since(s)
        ),
        Ttl::At {
            since: Since::Finished,
            at,
        } => {
            format!("expires at {} once finished (from {from})", rfc3339(at))
        }
        Ttl::At {
            since: Since::Created,
            at,
        } => format!("expires at {} (from {from})", rfc3339(at)),
    }
}

/// Its place in its history group: the sentence, and whether it is beyond the limit.
fn history_line(
    gathered: &Gathered,
    rules: &Rules,
    policy: &CompiledPolicy,
    index: u16,
    group: Option<&str>,
    judged: &crate::controllers::retention::judgement::Judgement,
    now: DateTime<Utc>,
) -> Option<(String, bool)> {
    let group = group?;
    let members: Vec<Member<String>> = gathered
        .siblings
        .iter()
        .map(|s| project(s, rules, now))
        .filter_map(|j| {
            let g = j.governed()?;
            let finished = g.facts.finished?;
            (g.policy == index && !g.facts.being_deleted && g.group.as_deref() == Some(group)).then(
                || Member {
                    id: j.uid().to_owned(),
                    outcome: finished.outcome,
                    finished_at: finished.at,
                },
            )
        })
        .collect();
    let ranked = rank(&members, policy.limits);
    let me = ranked.iter().find(|r| r.id == judged.uid())?;
    let limit = me
        .limit
        .map_or("no limit".to_owned(), |l| format!("limit {l}"));
    let fate = if me.kept {
        "kept"
    } else {
        "beyond it: deleted"
    };
    let sentence = format!(
        "{} newest of {} {} in its group ({group}); {limit}: {fate}",
        ordinal(me.position),
        me.of,
        match me.outcome {
            crate::controllers::retention::rule::Outcome::Succeeded => "successful",
            crate::controllers::retention::rule::Outcome::Failed => "failed",
        }
    );
    Some((sentence, !me.kept))
}

fn ordinal(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// Why a policy does not apply to the object.
fn why_not(
    policy: &CompiledPolicy,
    meta: &ObjectMeta,
    rules: &Rules,
    object: &Value,
    now: DateTime<Utc>,
) -> String {
    let namespace = meta.namespace.as_deref().unwrap_or_default();
    if let Some(own) = &policy.id.namespace {
        if own != namespace {
            return format!("applies in namespace {own} only");
        }
    }
    if let Some(selector) = &policy.namespace_selector {
        if !rules
            .namespaces
            .get(namespace)
            .is_some_and(|labels| selector.matches(labels))
        {
            return format!("its namespaceSelector does not match namespace {namespace:?}");
        }
    }
    if policy
        .selector
        .as_ref()
        .is_some_and(|s| !s.matches(&meta.labels))
    {
        return "its selector does not match the object's labels".to_owned();
    }
    if policy.skip_controlled
        && meta
            .owner_references
            .iter()
            .any(OwnerReference::is_controller)
    {
        return "the object has a controlling owner, which the preset leaves it to (includeControlled: false)".to_owned();
    }
    match &policy.match_expr {
        Some(expr) => match expr.eval_bool(object, now) {
            Ok(false) => format!("its match expression is false: {}", expr.source()),
            Ok(true) => "applies, but another policy governs it".to_owned(),
            Err(e) => format!("its match expression fails: {e}"),
        },
        None => "applies, but another policy governs it".to_owned(),
    }
}

/// The garbage collector: the owners' verdicts and its `action`.
fn gc_decision(gathered: &Gathered, meta: &ObjectMeta) -> Decision {
    const NAME: &str = "garbagecollector";
    if gathered.owners.is_empty() {
        return decision(
            NAME,
            false,
            VerdictKind::Keep,
            "does not apply: no owner references".into(),
        );
    }
    let (mut solid, mut dangling, mut waiting) = (0, 0, 0);
    let mut details = Vec::new();
    for owner in &gathered.owners {
        let (reference, line) = match owner {
            OwnerState::Exists {
                reference,
                deleting_dependents: false,
            } => {
                solid += 1;
                (reference, "exists".to_owned())
            }
            OwnerState::Exists {
                reference,
                deleting_dependents: true,
            } => {
                waiting += 1;
                (
                    reference,
                    "exists, being deleted in the foreground: it waits for its dependents"
                        .to_owned(),
                )
            }
            OwnerState::Absent { reference } => {
                dangling += 1;
                (reference, "absent: it was deleted".to_owned())
            }
            OwnerState::Recreated { reference, uid } => {
                dangling += 1;
                (
                    reference,
                    format!("absent: the owner was deleted and re-created (UID now {uid})"),
                )
            }
            OwnerState::NotServed { reference } => {
                let mut d = decision(NAME, true, VerdictKind::Unknown, format!("the owner's kind {} {} is not served: the collector cannot tell whether it exists", reference.api_version, reference.kind));
                d.details = details;
                return d;
            }
            OwnerState::InvalidClusterScoped { reference } => {
                return decision(NAME, true, VerdictKind::Keep, format!("never collected: a cluster-scoped object cannot be owned by the namespaced {} {}", reference.kind, reference.name));
            }
        };
        let blocks = if reference.blocks_owner_deletion() {
            ", blockOwnerDeletion"
        } else {
            ""
        };
        details.push(format!(
            "owner {} {} (uid {}{blocks}): {line}",
            reference.kind, reference.name, reference.uid
        ));
    }
    if meta.deletion_timestamp.is_some() {
        let mut d = decision(
            NAME,
            true,
            VerdictKind::Keep,
            "being deleted: see the finalizers".into(),
        );
        d.details = details;
        return d;
    }
    let uid = meta.uid.as_deref().unwrap_or_default();
    let dependents = dependents_of(&gathered.related, uid).count();
    let finalizers = &meta.finalizers;
    let acted = action(
        solid,
        dangling,
        waiting,
        dependents,
        finalizers.iter().any(|f| f == "orphan"),
        finalizers.iter().any(|f| f == "foregroundDeletion"),
    );
    let mut d = match acted {
        Action::Keep => decision(NAME, true, VerdictKind::Keep, "kept: an owner exists".into()),
        Action::RemoveReferences => decision(NAME, true, VerdictKind::Keep, "kept: an owner exists; the references to absent or waiting owners will be removed".into()),
        Action::DeleteInForeground => decision(NAME, true, VerdictKind::DeleteNow, "no owner remains and one waits on it: deleted in the foreground, its own dependents first".into()),
        Action::Delete(policy) => decision(NAME, true, VerdictKind::DeleteNow, format!("every owner is gone: deleted ({})", propagation(policy))),
    };
    d.details = details;
    d
}

fn propagation(policy: PropagationPolicy) -> &'static str {
    match policy {
        PropagationPolicy::Orphan => "Orphan: its dependents are kept",
        PropagationPolicy::Background => "Background",
        PropagationPolicy::Foreground => "Foreground",
    }
}

fn dependents_of<'a>(
    related: &'a [Related],
    uid: &'a str,
) -> impl Iterator<Item = (&'a Related, &'a OwnerReference)> + 'a {
    related.iter().filter_map(move |r| {
        r.meta
            .owner_references
            .iter()
            .find(|o| o.uid == uid)
            .map(|o| (r, o))
    })
}

fn describe(related: &Related) -> String {
    let meta = &related.meta;
    match &meta.namespace {
        Some(ns) => format!(
            "{} {ns}/{}",
            related.resource.kind,
            meta.name.as_deref().unwrap_or("")
        ),
        None => format!(
            "{} {}",
            related.resource.kind,
            meta.name.as_deref().unwrap_or("")
        ),
    }
}

/// For an object with a `deletionTimestamp`: what each finalizer waits for.
fn deletion_in_progress(gathered: &Gathered, meta: &ObjectMeta) -> Option<DeletionInProgress> {
    let since = meta.deletion_timestamp?;
    let uid = meta.uid.as_deref().unwrap_or_default();
    let finalizers = meta
        .finalizers
        .iter()
        .map(|finalizer| match finalizer.as_str() {
            "foregroundDeletion" => FinalizerWait {
                finalizer: finalizer.clone(),
                waits_for: "its dependents with blockOwnerDeletion to be deleted (the garbage collector removes it then)".into(),
                blockers: blockers(&gathered.related, uid, 0),
            },
            "orphan" => FinalizerWait {
                finalizer: finalizer.clone(),
                waits_for: "the garbage collector to remove its dependents' references to it".into(),
                blockers: dependents_of(&gathered.related, uid)
                    .map(|(r, _)| Blocker { object: describe(r), why: "still refers to it".into(), blockers: Vec::new() })
                    .collect(),
            },
            other => FinalizerWait {
                finalizer: other.to_owned(),
                waits_for: format!("another controller ({}) to finish its clean-up and remove it", other.split('/').next().unwrap_or(other)),
                blockers: Vec::new(),
            },
        })
        .collect();
    Some(DeletionInProgress {
        since: rfc3339(since.0),
        finalizers,
    })
}

/// The dependents that block `uid`'s foreground deletion, and what blocks them, three deep.
fn blockers(related: &[Related], uid: &str, depth: usize) -> Vec<Blocker> {
    dependents_of(related, uid)
        .filter(|(_, reference)| reference.blocks_owner_deletion())
        .map(|(r, _)| {
            let meta = &r.meta;
            let (why, below) = match (&meta.deletion_timestamp, depth < 3) {
                (None, _) => (
                    "not deleted yet (blockOwnerDeletion: true)".to_owned(),
                    Vec::new(),
                ),
                (Some(_), true) if meta.finalizers.iter().any(|f| f == "foregroundDeletion") => (
                    "being deleted in the foreground itself, waiting for".to_owned(),
                    blockers(related, meta.uid.as_deref().unwrap_or_default(), depth + 1),
                ),
                (Some(_), _) => (
                    format!(
                        "being deleted, waiting for its finalizers {:?}",
                        meta.finalizers
                    ),
                    Vec::new(),
                ),
            };
            Blocker {
                object: describe(r),
                why,
                blockers: below,
            }
        })
        .collect()
}

fn overall(
    decisions: &[Decision],
    deletion: Option<&DeletionInProgress>,
) -> (VerdictKind, Option<String>, Vec<String>) {
    if let Some(deletion) = deletion {
        return if deletion.finalizers.is_empty() {
            (
                VerdictKind::DeleteNow,
                None,
                vec![format!(
                    "being deleted since {}; no finalizer holds it",
                    deletion.since
                )],
            )
        } else {
            let names: Vec<&str> = deletion
                .finalizers
                .iter()
                .map(|f| f.finalizer.as_str())
                .collect();
            (
                VerdictKind::Blocked,
                None,
                vec![format!(
                    "being deleted since {}, waiting for finalizers {}",
                    deletion.since,
                    names.join(", ")
                )],
            )
        };
    }
    let governing: Vec<&Decision> = decisions.iter().filter(|d| d.governs).collect();
    if governing.is_empty() {
        return (
            VerdictKind::Keep,
            None,
            vec!["no kube-gc controller governs it".to_owned()],
        );
    }
    let first = |kind: VerdictKind| {
        governing
            .iter()
            .filter(|d| d.verdict == kind)
            .collect::<Vec<_>>()
    };
    let reason = |d: &&&Decision| format!("{}: {}", d.controller, d.summary);
    let now = first(VerdictKind::DeleteNow);
    if !now.is_empty() {
        return (
            VerdictKind::DeleteNow,
            None,
            now.iter().map(reason).collect(),
        );
    }
    let mut later = first(VerdictKind::DeleteAt);
    later.sort_by(|a, b| a.delete_at.cmp(&b.delete_at));
    if let Some(earliest) = later.first() {
        return (
            VerdictKind::DeleteAt,
            earliest.delete_at.clone(),
            vec![reason(earliest)],
        );
    }
    let unknown = first(VerdictKind::Unknown);
    if !unknown.is_empty() {
        return (
            VerdictKind::Unknown,
            None,
            unknown.iter().map(reason).collect(),
        );
    }
    (
        VerdictKind::Keep,
        None,
        governing
            .iter()
            .map(|d| format!("{}: {}", d.controller, d.summary))
            .collect(),
    )
}

fn event_line(event: &Value) -> EventLine {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let time = [
        &event["lastTimestamp"],
        &event["eventTime"],
        &event["firstTimestamp"],
    ]
    .into_iter()
    .find(|v| v.is_string())
    .map(text)
    .unwrap_or_default();
    EventLine {
        time,
        type_: text(&event["type"]),
        reason: text(&event["reason"]),
        message: text(&event["message"]),
        source: [&event["reportingComponent"], &event["source"]["component"]]
            .into_iter()
            .find(|v| v.as_str().is_some_and(|s| !s.is_empty()))
            .map(text)
            .unwrap_or_default(),
    }
}
