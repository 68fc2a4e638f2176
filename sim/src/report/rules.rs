//! `spec/RULES.md`, compiled in, so a report can quote any rule.

use crate::checkers::{Verdict, CHECKERS};

/// `spec/RULES.md`, compiled in so a report can quote any rule.
pub const RULES_MD: &str = include_str!("../../spec/RULES.md");

/// The text of rule `id` (`A7`, `K3`, `P1`, ...) from RULES.md: a `- **ID** ...` item with its
/// continuation lines, or a row of the properties table (P1 to P17; P13 and P14 are ours).
/// `None` for ids it does not define.
pub fn rule_text(id: &str) -> Option<String> {
    let item = format!("- **{id}**");
    let row = format!("| {id} ");
    let mut lines = RULES_MD.lines();
    while let Some(l) = lines.next() {
        if let Some(rest) = l.strip_prefix(&item) {
            let mut text = rest.trim().to_string();
            for more in lines.by_ref() {
                if !more.starts_with("  ") {
                    break;
                }
                text.push(' ');
                text.push_str(more.trim());
            }
            return Some(text);
        }
        if let Some(rest) = l.strip_prefix(&row) {
            let cells: Vec<&str> = rest.split('|').map(str::trim).collect();
            return Some(format!(
                "{}: {}",
                cells.first().copied().unwrap_or(""),
                cells.get(1).copied().unwrap_or("")
            ));
        }
    }
    None
}

/// The property and rule ids of a verdict with their RULES.md text (a checker's title for an
/// id RULES.md does not define).
pub fn rules_quoted(v: &Verdict) -> Vec<(String, String)> {
    let mut ids: Vec<String> = vec![v.property.clone()];
    ids.extend(v.rules.iter().filter(|r| **r != v.property).cloned());
    ids.iter()
        .map(|id| {
            let text = rule_text(id).unwrap_or_else(|| {
                CHECKERS
                    .iter()
                    .find(|c| c.property == id.as_str())
                    .map(|c| format!("{} (ours; see the README's Properties)", c.title))
                    .unwrap_or_else(|| "(not in RULES.md)".into())
            });
            (id.clone(), text)
        })
        .collect()
}
