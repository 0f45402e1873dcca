//! The plan for a terminal: the deletions as a table whose columns are as wide as their
//! widest cell (kubectl's tabwriter, which never runs two columns together), what is kept for a
//! problem, the policies that delete nothing, the totals, and the hourly chart.

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
    let within =
        crate::duration::format_duration(std::time::Duration::from_secs(report.within_seconds));
    if report.deletions.is_empty() {
        let _ = writeln!(out, "No deletions within {within}.");
    } else {
        let rows = report.deletions.iter().map(|r| {
            let at = if r.due { "now" } else { r.deletes_at.as_str() };
            let namespace = r.namespace.as_deref().unwrap_or("-");
            [
                &*r.kind,
                namespace,
                &*r.name,
                &*r.controller,
                at,
                &*r.reason,
            ]
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
        let _ = writeln!(
            out,
            "\n{} deletions within {within}",
            report.deletions.len()
        );
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
    if !report.deletions.is_empty() {
        chart(&report.hourly, &mut out);
    }
    out
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

fn chart(hourly: &[(String, usize)], out: &mut String) {
    let max = hourly.iter().map(|(_, n)| *n).max().unwrap_or(0).max(1);
    let _ = writeln!(out, "\nper hour");
    for (label, n) in hourly {
        let bar = "█".repeat((n * 40).div_ceil(max));
        let _ = writeln!(out, "  {label:>5} {bar} {n}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
