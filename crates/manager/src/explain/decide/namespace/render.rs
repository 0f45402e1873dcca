//! The [`NamespaceReport`] for a terminal: what remains (a table), what could not be read, the
//! conditions, and who finishes the deletion.

use std::fmt::Write;

use super::NamespaceReport;

/// The report's sections, for `explain::render::text`.
pub(crate) fn lines(report: &NamespaceReport, out: &mut String) {
    if let Some(source) = &report.content_source {
        let objects: usize = report.remaining.iter().map(|r| r.count).sum();
        let _ = writeln!(
            out,
            "\nContent ({source}): {objects} object(s) in {} resource(s)",
            report.remaining.len()
        );
        for r in &report.remaining {
            let more = if r.more { "+" } else { "" };
            let deleting = match r.being_deleted {
                0 => String::new(),
                n => format!(", {n} being deleted"),
            };
            let names = r.names.join(", ");
            let etc = if r.count > r.names.len() { ", …" } else { "" };
            let _ = writeln!(
                out,
                "  {} {}{more}{deleting}: {names}{etc}",
                r.resource, r.count
            );
            for f in &r.finalizers {
                let _ = writeln!(
                    out,
                    "    finalizer {} on {}: {}",
                    f.finalizer, f.count, f.removed_by
                );
            }
        }
        for u in &report.unreadable {
            let _ = writeln!(out, "  {}: could not be read here ({})", u.what, u.message);
        }
    }
    if !report.discovery_failures.is_empty() {
        let _ = writeln!(out, "\nDiscovery failed (the finalize waits for these)");
        for f in &report.discovery_failures {
            let _ = writeln!(out, "  {}: {}", f.what, f.message);
        }
    }
    if !report.conditions.is_empty() {
        let _ = writeln!(out, "\nConditions");
        for c in &report.conditions {
            let _ = writeln!(
                out,
                "  {}={} {}: {}",
                c.type_, c.status, c.reason, c.message
            );
        }
    }
    if let Some(by) = &report.finished_by {
        let _ = writeln!(out, "\nWho finishes it\n  {}", by.who);
        let _ = writeln!(out, "  next: {}", by.next);
        if let (Some(at), Some(left)) = (&by.finalize_not_before, by.safety_delay_left_seconds) {
            let left = if left == 0 {
                "passed".to_owned()
            } else {
                format!("{left}s left")
            };
            let _ = writeln!(out, "  safety delay: never finalized before {at} ({left})");
        }
        for line in &by.waits_for {
            let _ = writeln!(out, "  waits for: {line}");
        }
    }
}
