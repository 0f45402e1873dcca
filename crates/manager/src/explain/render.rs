//! The screen `kube-gc explain` prints: the verdict first, then each controller's view, the
//! finalizers of an object being deleted (who removes each, with the chain of blockers to the
//! root cause), for a namespace what remains and who finishes it, and the Events. `-o json` /
//! `-o yaml` print the [`Explanation`] itself instead.

use std::fmt::Write;

use super::{Blocker, Explanation};

/// The text for a terminal.
pub fn text(explanation: &Explanation) -> String {
    let mut out = String::new();
    let object = &explanation.object;
    let name = match &object.namespace {
        Some(ns) => format!("{ns}/{}", object.name),
        None => object.name.clone(),
    };
    let _ = writeln!(
        out,
        "{} {name} ({}, uid {})",
        object.kind, object.api_version, object.uid
    );
    let when = explanation
        .delete_at
        .as_deref()
        .map(|t| format!(" {t}"))
        .unwrap_or_default();
    let _ = writeln!(out, "Verdict: {}{when}", explanation.verdict.as_str());
    for reason in &explanation.reasons {
        let _ = writeln!(out, "  {reason}");
    }
    let _ = writeln!(out, "\nWho decides");
    for d in &explanation.decisions {
        let governs = if d.governs { "governs" } else { "-" };
        let _ = writeln!(
            out,
            "  {:<20} {:<8} {:<11} {}",
            d.controller,
            governs,
            d.verdict.as_str(),
            d.summary
        );
        for detail in &d.details {
            let _ = writeln!(out, "  {:<20} {:<8} {:<11} · {detail}", "", "", "");
        }
    }
    if let Some(deletion) = &explanation.deletion {
        let since = deletion.since.as_deref().unwrap_or("a time not cached");
        let _ = writeln!(out, "\nDeletion in progress (since {since})");
        if let Some(grace) = &deletion.grace {
            let _ = writeln!(
                out,
                "  graceful: its {}s grace period ends {}; {}",
                grace.seconds, grace.ends_at, grace.removed_by
            );
        } else if deletion.finalizers.is_empty() && deletion.unknown.is_none() {
            let _ = writeln!(out, "  no finalizers: it should be gone shortly");
        }
        for finalizer in &deletion.finalizers {
            let field = finalizer
                .field
                .map(|f| format!(" ({f})"))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "  {}{field}: waits for {}",
                finalizer.finalizer, finalizer.waits_for
            );
            blockers(&mut out, &finalizer.blockers, 2);
        }
        if let Some(unknown) = &deletion.unknown {
            let _ = writeln!(out, "  {unknown}");
        }
    }
    if let Some(namespace) = &explanation.namespace {
        crate::explain::decide::namespace::render_lines(namespace, &mut out);
    }
    if !explanation.events.is_empty() {
        let _ = writeln!(out, "\nEvents");
        for e in &explanation.events {
            let _ = writeln!(
                out,
                "  {} {} {} ({}): {}",
                e.time, e.type_, e.reason, e.source, e.message
            );
        }
    }
    if !explanation.notes.is_empty() {
        let _ = writeln!(out, "\nNotes");
        for note in &explanation.notes {
            let _ = writeln!(out, "  {note}");
        }
    }
    out
}

fn blockers(out: &mut String, list: &[Blocker], depth: usize) {
    for b in list {
        let _ = writeln!(out, "{}- {}: {}", "  ".repeat(depth), b.object, b.why);
        blockers(out, &b.blockers, depth + 1);
    }
}
