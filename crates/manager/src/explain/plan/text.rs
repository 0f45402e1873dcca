//! The plan for a terminal: the controllers it assumed, the deletions as a table whose columns
//! are as wide as their widest cell (kubectl's tabwriter, which never runs two columns
//! together), what is kept for a problem, the policies that delete nothing, the totals, and the
//! chart of the deletions to come.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::PlanReport;

/// Spaces between two columns, as kubectl prints them.
const GAP: usize = 3;

/// The report, for a terminal.
pub fn text(report: &PlanReport) -> String {
    let mut out = String::new();
    for line in report.controllers.lines("plan") {
        let _ = writeln!(out, "{line}");
    }
    out.push('\n');
    let within = window(report.within_seconds);
    if report.deletions.is_empty() {
        let _ = writeln!(out, "No deletions within {within}.");
    } else {
        let reasons: Vec<String> = report.deletions.iter().map(reason).collect();
        let rows = report.deletions.iter().zip(&reasons).map(|(r, reason)| {
            let at = if r.due { "now" } else { r.deletes_at.as_str() };
            let namespace = r.namespace.as_deref().unwrap_or("-");
            [&*r.kind, namespace, &*r.name, &*r.controller, at, &**reason]
        });
        let header = [
            "KIND",
            "NAMESPACE",
            "NAME",
            "CONTROLLER",
            "DELETES AT",
            "REASON",
        ];
        out.push_str(&table(header, rows));
        let made = report.deletions.len() - report.audit_deletions;
        let _ = write!(
            out,
            "\n{} within {within}",
            counted(made, "deletion", "deletions")
        );
        if report.audit_deletions > 0 {
            let _ = write!(
                out,
                ", and {} that policies in Audit mode would make (not made)",
                report.audit_deletions
            );
        }
        out.push('\n');
        totals("by namespace", &report.by_namespace, &mut out);
        totals("by kind", &report.by_kind, &mut out);
    }
    if !report.kept.is_empty() {
        let _ = writeln!(out, "\nKept because something about them cannot be read:");
        let rows = report.kept.iter().map(|k| {
            let namespace = k.namespace.as_deref().unwrap_or("-");
            [&*k.kind, namespace, &*k.name, &*k.controller, &*k.problem]
        });
        out.push_str(&table(
            ["KIND", "NAMESPACE", "NAME", "CONTROLLER", "PROBLEM"],
            rows,
        ));
    }
    if !report.policy_problems.is_empty() {
        let _ = writeln!(
            out,
            "\nRetention policies that delete nothing, or not all they name:"
        );
        let rows = report
            .policy_problems
            .iter()
            .map(|p| [&*p.policy, &*p.state, &*p.problem]);
        out.push_str(&table(["POLICY", "STATE", "PROBLEM"], rows));
    }
    // With no window there is nothing to chart but what the totals say already.
    if !report.deletions.is_empty() && report.chart.buckets.len() > 1 {
        chart(&report.chart, &mut out);
    }
    out
}

/// The window as `--within` takes it: whole days as days (`7d`, not `168h`).
fn window(seconds: u64) -> String {
    if seconds >= 2 * 86_400 && seconds.is_multiple_of(86_400) {
        format!("{}d", seconds / 86_400)
    } else {
        kube_gc_core::duration::format_duration(std::time::Duration::from_secs(seconds))
    }
}

/// "1 deletion", "2 deletions".
fn counted(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The row's reason (marked when only a policy in `Audit` mode would make it), and the other
/// controllers that would delete the object too.
fn reason(row: &super::Row) -> String {
    let reason = if row.audit {
        format!("audit, not deleted: {}", row.reason)
    } else {
        row.reason.clone()
    };
    if row.also.is_empty() {
        return reason;
    }
    let also: Vec<&str> = row.also.iter().map(|a| a.controller.as_str()).collect();
    format!("{reason} (also: {})", also.join(", "))
}

/// Rows under a header, each column as wide as its widest cell; the last column is not padded.
fn table<'a, const N: usize>(
    header: [&'a str; N],
    rows: impl Iterator<Item = [&'a str; N]>,
) -> String {
    let rows: Vec<[&str; N]> = std::iter::once(header).chain(rows).collect();
    let mut widths = [0usize; N];
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in &rows {
        for (i, cell) in row.iter().enumerate() {
            if i + 1 == N {
                out.push_str(cell);
            } else {
                let pad = widths[i] - cell.chars().count() + GAP;
                let _ = write!(out, "{cell}{:pad$}", "");
            }
        }
        out.push('\n');
    }
    out
}

fn totals(title: &str, map: &BTreeMap<String, usize>, out: &mut String) {
    let parts: Vec<String> = map.iter().map(|(k, n)| format!("{k} {n}")).collect();
    let _ = writeln!(out, "{title}: {}", parts.join(", "));
}

fn chart(chart: &super::Chart, out: &mut String) {
    let max = chart
        .buckets
        .iter()
        .map(|(_, n)| *n)
        .max()
        .unwrap_or(0)
        .max(1);
    let _ = writeln!(out, "\nper {}", chart.size());
    for (label, n) in &chart.buckets {
        let bar = "█".repeat((n * 40).div_ceil(max));
        let _ = writeln!(out, "  {label:>5} {bar} {n}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_pluralised() {
        assert_eq!(counted(1, "deletion", "deletions"), "1 deletion");
        assert_eq!(counted(0, "deletion", "deletions"), "0 deletions");
        assert_eq!(counted(2, "deletion", "deletions"), "2 deletions");
    }

    #[test]
    fn columns_are_as_wide_as_their_widest_cell_and_never_touch() {
        let rows = [
            ["PersistentVolumeClaim", "data", "x"],
            ["Job", "a-very-long-namespace-name-indeed", "y"],
        ];
        let printed = table(["KIND", "NAMESPACE", "NAME"], rows.into_iter());
        let lines: Vec<&str> = printed.lines().collect();
        assert_eq!(
            lines[0],
            "KIND                    NAMESPACE                           NAME"
        );
        assert_eq!(
            lines[1],
            "PersistentVolumeClaim   data                                x"
        );
        assert_eq!(
            lines[2],
            "Job                     a-very-long-namespace-name-indeed   y"
        );
    }
}
