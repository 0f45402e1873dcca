//! The retention engine's decision: which policy governs the object (the engine's `assess`),
//! whether its TTL is up (`decide`), and its place in its history group (`rank`).
//!
//! Contract: [`decision_on`] is the one place the decision is worded, from an [`Assessment`] and the
//! [`ResourcePolicies`] it was made with. `kube-gc explain` makes both itself ([`from_gathered`]: the
//! engine's `plan_served` over the policies it listed, `assess` over the object it read);
//! `/debug/explain` passes the running engine's rules and cached assessment. The history group
//! is ranked from the assessments of the same group either path has ([`group_members`]), and why
//! a policy does not apply is asked of the caller, who may or may not have the object to say.

use std::borrow::Borrow;

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::explain::gather::Gathered;
use crate::explain::{Decision, VerdictKind};
use kube_gc_api::{ObjectMeta, OwnerReference};
use kube_gc_controllers::retention::assessment::{
    assess, Assessment, Governed, ResourcePolicies, Standing, NO_CONTROLLER_GROUP,
};
use kube_gc_controllers::retention::engine::{plan_served, CONTROLLER};
use kube_gc_controllers::retention::finish::{GroupBy, Outcome};
use kube_gc_controllers::retention::history::{rank, Member};
use kube_gc_controllers::retention::policy::{CompiledPolicy, Target};
use kube_gc_controllers::retention::ttl::{Since, Ttl, TtlSource};
use kube_gc_controllers::retention::verdict::{decide, KeepReason, Verdict};
use kube_gc_runtime::cache::Cacheable;

use crate::explain::wording::{decision, human, relative, rfc3339};

/// The members of one history group: the policy's index and the group's value.
pub(crate) type Members<'a> = dyn Fn(u16, &str) -> Vec<Member<String>> + 'a;

/// What an assessment is read with.
pub(crate) struct Assessing<'a> {
    /// The object's resource.
    pub target: &'a Target,
    /// The policies naming it, as the assessment was made with them.
    pub rules: &'a ResourcePolicies,
    /// The time of the verdict.
    pub now: DateTime<Utc>,
    /// The members of a history group.
    pub members: &'a Members<'a>,
    /// Why a policy does not apply to the object.
    pub why_not: &'a dyn Fn(&CompiledPolicy) -> String,
}

/// The retention decision on `gathered`: the plan for its resource, its assessment, its group.
pub(crate) fn from_gathered(
    gathered: &Gathered,
    meta: &ObjectMeta,
    now: DateTime<Utc>,
) -> Decision {
    let Some(policies) = &gathered.policies else {
        return decision(
            CONTROLLER,
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
        return no_policy(&target);
    };
    let rules = &watch.rules;
    let members = |index: u16, group: &str| {
        let siblings = gathered.siblings.iter().map(|s| assess(s, rules, now));
        group_members(siblings, index, group)
    };
    let why_not = |p: &CompiledPolicy| why_not(p, meta, rules, &gathered.object, now);
    let assessing = Assessing {
        target: &target,
        rules,
        now,
        members: &members,
        why_not: &why_not,
    };
    decision_on(&assess(&gathered.object, rules, now), &assessing)
}

/// "Does not apply": no valid policy names `target`.
pub(crate) fn no_policy(target: &Target) -> Decision {
    decision(
        CONTROLLER,
        false,
        VerdictKind::Keep,
        format!("does not apply: no valid policy names {target}"),
    )
}

/// The decision on an object judged as `assessment`.
pub(crate) fn decision_on(assessment: &Assessment, assessing: &Assessing<'_>) -> Decision {
    match &assessment.standing {
        Standing::Ungoverned => ungoverned(assessing),
        Standing::Gone => decision(
            CONTROLLER,
            false,
            VerdictKind::Keep,
            "gone: the server reported it deleted".to_owned(),
        ),
        Standing::Problem(problem) => decision(
            CONTROLLER,
            true,
            VerdictKind::Unknown,
            format!("kept: {}", problem.message),
        ),
        Standing::Governed(governed) => governed_decision(assessment, governed, assessing),
    }
}

fn ungoverned(assessing: &Assessing<'_>) -> Decision {
    let policies = &assessing.rules.policies;
    let mut d = decision(
        CONTROLLER,
        false,
        VerdictKind::Keep,
        format!(
            "no policy applies (of {} naming {})",
            policies.len(),
            assessing.target
        ),
    );
    d.details = policies
        .iter()
        .map(|p| format!("{}: {}", p.id, (assessing.why_not)(p)))
        .collect();
    d
}

fn governed_decision(
    assessment: &Assessment,
    governed: &Governed,
    assessing: &Assessing<'_>,
) -> Decision {
    let (rules, now) = (assessing.rules, assessing.now);
    let Some(policy) = rules.policies.get(usize::from(governed.policy)) else {
        let why = "kept: its assessment names a policy its rules do not hold".into();
        return decision(CONTROLLER, true, VerdictKind::Unknown, why);
    };
    let mut details = who_governs(governed, policy, rules);
    details.push(match governed.facts.finished {
        None => "not finished".to_owned(),
        Some(f) => match f.at {
            Some(at) => format!("finished ({}) at {}", f.outcome.as_str(), rfc3339(at)),
            None => format!("finished ({}), time unknown", f.outcome.as_str()),
        },
    });
    details.push(ttl_line(governed.ttl, governed.ttl_source, policy));
    let mut d = ttl_verdict(governed, now);
    let place = governed.group.as_deref().and_then(|group| {
        let ranked = (assessing.members)(governed.policy, group);
        let namespace = assessment.key().namespace().unwrap_or_default();
        let group = group_phrase(&policy.group_by, group, namespace, None);
        history_line(&ranked, policy, &group, assessment.uid())
    });
    if let Some((line, beyond)) = place {
        if beyond && d.verdict != VerdictKind::DeleteNow {
            d.verdict = VerdictKind::DeleteNow;
            d.delete_at = None;
            d.summary = format!("beyond its history limit: {line}");
        }
        details.push(line);
    }
    d.details = details;
    audited(d, policy)
}

/// Under a policy in `Audit` mode a deletion is only reported: the object is kept, and the
/// decision says what `Enforce` would do.
fn audited(mut d: Decision, policy: &CompiledPolicy) -> Decision {
    if !policy.mode.is_audit() {
        return d;
    }
    if matches!(d.verdict, VerdictKind::DeleteNow | VerdictKind::DeleteAt) {
        d.summary = format!(
            "kept: {} is in mode Audit; Enforce would delete it: {}",
            policy.id, d.summary
        );
        d.verdict = VerdictKind::Keep;
        d.delete_at = None;
    }
    d.details.push(format!(
        "{} is in mode Audit: it reports what it would delete (a WouldDelete Event) and deletes nothing",
        policy.id
    ));
    d
}

fn who_governs(
    governed: &Governed,
    policy: &CompiledPolicy,
    rules: &ResourcePolicies,
) -> Vec<String> {
    let preset = policy
        .preset
        .map(|p| format!(" (preset {p})"))
        .unwrap_or_default();
    let mut details = vec![format!("governed by {}{preset}", policy.id)];
    let tie = if governed.tie() {
        ", equally specific: the name decided"
    } else {
        ""
    };
    let losers = governed
        .shadowed()
        .iter()
        .filter_map(|&loser| rules.policies.get(usize::from(loser)));
    details.extend(losers.map(|p| format!("also matched by {} (less specific{tie})", p.id)));
    details
}

/// The engine's `decide` on the TTL.
fn ttl_verdict(governed: &Governed, now: DateTime<Utc>) -> Decision {
    let said = |verdict, summary: String| decision(CONTROLLER, true, verdict, summary);
    match decide(&governed.facts, governed.ttl, now) {
        Ok(Verdict::Keep(KeepReason::NoTtl)) => said(
            VerdictKind::Keep,
            "no TTL: only a history limit can delete it".into(),
        ),
        Ok(Verdict::Keep(KeepReason::NotFinished)) => said(
            VerdictKind::Keep,
            "not finished: its TTL counts from the finish".into(),
        ),
        Ok(Verdict::Keep(KeepReason::BeingDeleted)) => {
            said(VerdictKind::Keep, "already being deleted".into())
        }
        Ok(Verdict::Wait { expires_at, .. }) => {
            let when = format!("{} ({})", rfc3339(expires_at), relative(expires_at, now));
            let mut d = said(VerdictKind::DeleteAt, format!("its TTL expires at {when}"));
            d.delete_at = Some(rfc3339(expires_at));
            d
        }
        Ok(Verdict::Expired { expired_at }) => said(
            VerdictKind::DeleteNow,
            format!(
                "its TTL expired at {} ({})",
                rfc3339(expired_at),
                relative(expired_at, now)
            ),
        ),
        Err(e) => said(VerdictKind::Unknown, format!("kept: {e}")),
    }
}

/// The TTL in words, and who set it.
fn ttl_line(ttl: Ttl, source: TtlSource, policy: &CompiledPolicy) -> String {
    let from = match source {
        TtlSource::Policy => "the policy".to_owned(),
        TtlSource::OwnField(index) => match policy.own_ttl.get(usize::from(index)) {
            Some(field) => format!("the object's {}", field.path),
            None => "the object's own TTL field".to_owned(),
        },
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
        } => format!("expires at {} once finished (from {from})", rfc3339(at)),
        Ttl::At {
            since: Since::Created,
            at,
        } => format!("expires at {} (from {from})", rfc3339(at)),
    }
}

/// The finished members of the group `group` of policy `index`, by UID, among `assessments`:
/// what the engine ranks (objects being deleted have left their group).
pub(crate) fn group_members<J: Borrow<Assessment>>(
    assessments: impl IntoIterator<Item = J>,
    index: u16,
    group: &str,
) -> Vec<Member<String>> {
    assessments
        .into_iter()
        .filter_map(|j| {
            let j = j.borrow();
            let g = j.governed()?;
            let finished = g.facts.finished?;
            let same = g.policy == index && g.group.as_deref() == Some(group);
            (same && !g.facts.being_deleted).then(|| Member {
                id: j.uid().to_owned(),
                outcome: finished.outcome,
                finished_at: finished.at,
            })
        })
        .collect()
}

/// Its place among `members`: the sentence, and whether it is beyond the limit.
fn history_line(
    members: &[Member<String>],
    policy: &CompiledPolicy,
    group: &str,
    uid: &str,
) -> Option<(String, bool)> {
    let ranked = rank(members, policy.limits);
    let me = ranked.iter().find(|r| r.id == uid)?;
    let limit = me
        .limit
        .map_or("no limit".to_owned(), |l| format!("limit {l}"));
    let fate = if me.kept {
        "kept"
    } else {
        "beyond it: deleted"
    };
    let outcome = outcome_word(me.outcome);
    let sentence = format!(
        "{} newest of {} {outcome} in its group, {group}; {limit}: {fate}",
        ordinal(me.position),
        me.of,
    );
    Some((sentence, !me.kept))
}

/// What a history group is, in words: the objects `group_by` puts together with the value
/// `value` in `namespace` — "those owned by Pipeline build" (`owner` names the owner when the
/// caller knows it, else its UID is said), "those without a controlling owner in namespace
/// ci", "those labelled app=web in namespace ci".
pub(crate) fn group_phrase(
    group_by: &GroupBy,
    value: &str,
    namespace: &str,
    owner: Option<String>,
) -> String {
    match group_by {
        GroupBy::Owner if value == NO_CONTROLLER_GROUP => {
            format!("those without a controlling owner in namespace {namespace}")
        }
        GroupBy::Owner => match owner {
            Some(owner) => format!("those owned by {owner}"),
            None => format!("those owned by the object with UID {value}"),
        },
        GroupBy::Label(key) => format!("those labelled {key}={value} in namespace {namespace}"),
    }
}

/// "successful" or "failed", as a history limit counts them.
pub(crate) fn outcome_word(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Succeeded => "successful",
        Outcome::Failed => "failed",
    }
}

/// "1st", "2nd", "11th".
pub(crate) fn ordinal(n: usize) -> String {
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
    rules: &ResourcePolicies,
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
        let labels = rules.namespaces.get(namespace);
        if !labels.is_some_and(|labels| selector.matches(labels)) {
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
    let controlled = meta
        .owner_references
        .iter()
        .any(OwnerReference::is_controller);
    if policy.skip_controlled && controlled {
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
