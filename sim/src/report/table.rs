//! The campaign as terminal text: the scenario × property table and the coverage map.

use crate::checkers::{self, CHECKERS};
use crate::nemesis::{FaultKind, Reach};
use crate::summary::Summary;

/// The coverage map as text: fault kind × protocol state at the moment it fired, and the
/// cells never hit for the kinds that fired.
pub fn coverage_text(s: &Summary) -> String {
    if s.coverage_map.is_empty() {
        return String::new();
    }
    let mut out =
        String::from("\n  coverage map (faults fired, by protocol state at that moment):\n");
    out.push_str(&format!("  {:<18}", "fault"));
    for st in checkers::FAULT_STATES {
        out.push_str(&format!(" {st:>19}"));
    }
    out.push('\n');
    let mut never = Vec::new();
    for (kind, cells) in &s.coverage_map {
        out.push_str(&format!("  {kind:<18}"));
        // Only the adapter fills a history; the store's and the remote transport's faults
        // fire only on a cluster: that cell is out of reach of every design.
        let cluster_only = FaultKind::named(kind)
            .is_some_and(|k| matches!(k.reach(), Reach::Store | Reach::Remote));
        for st in checkers::FAULT_STATES {
            let n = cells.get(st).copied().unwrap_or(0);
            if n == 0 && !(cluster_only && st == "filling-history") {
                never.push(format!("{kind}@{st}"));
            }
            out.push_str(&format!(" {n:>19}"));
        }
        out.push('\n');
    }
    if never.is_empty() {
        out.push_str("  every cell the designs allow was hit (a cluster-only fault never meets a history fill)\n");
    } else {
        out.push_str(&format!("  cells never hit: {}\n", never.join(" ")));
    }
    out
}

/// The table as text: scenario × property.
pub fn table_text(s: &Summary) -> String {
    let mut out = String::new();
    let props: Vec<&str> = CHECKERS.iter().map(|c| c.property.as_str()).collect();
    let width = s.table.keys().map(|k| k.len()).max().unwrap_or(8).max(8);
    out.push_str(&format!(
        "{:<width$}  {:<5} {:>6} {:>10} {:>8} {:>8}  {}\n",
        "scenario@design",
        "prop",
        "seeds",
        "violations",
        "unknown",
        "findings",
        "first failing seed (party)"
    ));
    for (scen, row) in &s.table {
        for p in &props {
            let Some(c) = row.get(*p) else { continue };
            let first = match c.first_failing_seed {
                Some(seed) => format!(
                    "{seed} ({})",
                    c.parties.iter().cloned().collect::<Vec<_>>().join(",")
                ),
                None => "-".into(),
            };
            out.push_str(&format!(
                "{scen:<width$}  {p:<5} {:>6} {:>10} {:>8} {:>8}  {first}\n",
                c.seeds, c.violations, c.unknown, c.findings
            ));
        }
    }
    out
}
