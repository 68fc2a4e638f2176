//! Which rule of `spec/RULES.md` has a witness that fails, derived by running: for every rule
//! id, the properties whose checker enforces it, the mutants whose witness runs
//! (`acp_chaos_cli::campaign::witness`) fail with a verdict citing it (with how many of the witness
//! scenario's seeds caught the mutant), the mutants that declare it but whose runs never cite
//! it, the scenarios that name it, and the findings that measure it (`acp-chaos findings`:
//! what a MAY leaves open is measured, not broken). `acp-chaos list rules` prints it and
//! `docs/rules.md` holds it (a test keeps the two equal).

use std::collections::BTreeMap;

use super::rules::{rule_text, RULES_MD};
use crate::checkers::CHECKERS;
use crate::models::mutant::Mutant;
use crate::scenario::Scenario;

/// What one mutant's witness runs showed (`acp_chaos_cli::campaign::witness::shown` runs them).
#[derive(Debug, Clone)]
pub struct Shown {
    /// The mutant.
    pub mutant: &'static Mutant,
    /// Seeds run (`0..seeds` of its witness scenario, on its witness design).
    pub seeds: u64,
    /// Runs that caught it: its property failed as it must (invalid, or a finding for a
    /// mutant of a SHOULD), blaming its party.
    pub caught: u64,
    /// Each rule id a failing verdict blaming the mutant's party cited, with the number of
    /// runs that cited it (invalid and finding verdicts; valid and unknown ones cite
    /// nothing).
    pub cited: BTreeMap<String, u64>,
}

impl Shown {
    /// Whether at least half of the runs caught it.
    pub fn most(&self) -> bool {
        self.caught * 2 >= self.seeds
    }
}

/// A mutant whose witness runs cite a rule: its name, the runs that caught it, the runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Cited {
    /// The mutant.
    pub mutant: &'static str,
    /// Runs of its witness scenario that caught it.
    pub caught: u64,
    /// Runs made.
    pub seeds: u64,
}

/// One rule's row.
#[derive(Debug, Clone, PartialEq)]
pub struct Witnesses {
    /// The rule id (`K1`, `A7`, `X4`, `D1`).
    pub rule: String,
    /// Its RFC 2119 keywords in the order of strength (`MUST NOT`, `MUST`, `SHOULD NOT`,
    /// `SHOULD`, `MAY`), or `ours` for a rule of our own with none.
    pub strength: Vec<&'static str>,
    /// Properties whose checker enforces the rule (`P1`, ...; `X4` is its own checker).
    pub properties: Vec<&'static str>,
    /// Mutants whose witness runs failed with a verdict citing the rule.
    pub mutants: Vec<Cited>,
    /// Mutants that declare the rule but whose witness runs never cited it.
    pub declared: Vec<&'static str>,
    /// Scenarios that name it.
    pub scenarios: Vec<String>,
    /// Claims of `acp-chaos findings` that measure it (`docs/findings/spec.md`).
    pub findings: Vec<&'static str>,
}

impl Witnesses {
    /// What the rule lacks to have a failing witness: a checker, a mutant whose runs cite it,
    /// or (for a MUST) a mutant caught in at least half of its witness scenario's runs (empty:
    /// none). A rule whose only keyword is MAY breaks nothing when an Agent or Client takes
    /// either side: a finding that measures the choice is its witness.
    pub fn gap(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        if self.strength == ["MAY"] && !self.findings.is_empty() {
            return out;
        }
        if self.properties.is_empty() {
            out.push("checker");
        }
        if self.mutants.is_empty() {
            out.push("mutant whose runs cite it");
        } else if self.strength.iter().any(|s| s.starts_with("MUST"))
            && !self.mutants.iter().any(|m| m.caught * 2 >= m.seeds)
        {
            out.push("mutant caught in half its runs");
        }
        out
    }
}

/// Whether `id` has the shape of a rule id: one of the letters of RULES.md's rule sections
/// (K, C, A, D, X, R) and a number. The open points (O1..O4) are policies, not rules; the
/// properties (P1..) check rules.
pub fn is_rule_id(id: &str) -> bool {
    id.len() >= 2
        && matches!(&id[..1], "K" | "C" | "A" | "D" | "X" | "R")
        && id[1..].chars().all(|c| c.is_ascii_digit())
}

/// Every rule id RULES.md defines as a `- **ID**` item, in file order.
pub fn rule_ids() -> Vec<String> {
    RULES_MD
        .lines()
        .filter_map(|l| l.strip_prefix("- **")?.split_once("**"))
        .map(|(id, _)| id.to_string())
        .filter(|id| is_rule_id(id))
        .collect()
}

/// The keywords of a rule's text, strongest first.
fn strength(text: &str) -> Vec<&'static str> {
    let mut rest = text.to_string();
    let mut out = Vec::new();
    for k in ["MUST NOT", "MUST", "SHOULD NOT", "SHOULD", "MAY"] {
        if rest.contains(k) {
            out.push(k);
            rest = rest.replace(k, "");
        }
    }
    if out.is_empty() {
        out.push("ours");
    }
    out
}

/// The table's rows, one per rule id, in RULES.md's order, from the witness runs `shown`
/// (`acp_chaos_cli::campaign::witness::shown`) and the claims of `acp-chaos findings` that measure
/// a rule: (claim id, rule ids), `acp_chaos_cli::findings::claims()`.
pub fn witnesses(
    scenarios: &[Scenario],
    shown: &[Shown],
    claims: &[(&'static str, &'static [&'static str])],
) -> Vec<Witnesses> {
    rule_ids()
        .into_iter()
        .map(|id| {
            let text = rule_text(&id).unwrap_or_default();
            Witnesses {
                strength: strength(&text),
                properties: CHECKERS
                    .iter()
                    .filter(|c| c.rules.contains(&id.as_str()) || c.property == id)
                    .map(|c| c.property.as_str())
                    .collect(),
                mutants: shown
                    .iter()
                    .filter(|s| s.cited.contains_key(&id))
                    .map(|s| Cited {
                        mutant: s.mutant.name,
                        caught: s.caught,
                        seeds: s.seeds,
                    })
                    .collect(),
                declared: shown
                    .iter()
                    .filter(|s| s.mutant.rules.contains(&id.as_str()) && !s.cited.contains_key(&id))
                    .map(|s| s.mutant.name)
                    .collect(),
                scenarios: scenarios
                    .iter()
                    .filter(|s| s.rules.contains(&id))
                    .map(|s| s.name.clone())
                    .collect(),
                findings: claims
                    .iter()
                    .filter(|(_, rules)| rules.contains(&id.as_str()))
                    .map(|(c, _)| *c)
                    .collect(),
                rule: id,
            }
        })
        .collect()
}

/// The rows as a Markdown table, then a line counting the gaps.
pub fn markdown(rows: &[Witnesses]) -> String {
    let mut out = String::from(
        "| rule | strength | properties | mutants whose runs cite it (runs that caught it) | declared, never cited | scenarios | findings | gap |\n|---|---|---|---|---|---|---|---|\n",
    );
    let list = |v: &[&str]| {
        if v.is_empty() {
            "-".to_string()
        } else {
            v.iter()
                .map(|x| format!("`{x}`"))
                .collect::<Vec<_>>()
                .join(" ")
        }
    };
    for r in rows {
        let scenarios = match r.scenarios.len() {
            0 => "-".to_string(),
            1..=3 => list(&r.scenarios.iter().map(String::as_str).collect::<Vec<_>>()),
            n => format!(
                "{} and {} more",
                list(
                    &r.scenarios[..2]
                        .iter()
                        .map(String::as_str)
                        .collect::<Vec<_>>()
                ),
                n - 2
            ),
        };
        let gap = r.gap();
        let cited = if r.mutants.is_empty() {
            "-".to_string()
        } else {
            r.mutants
                .iter()
                .map(|m| format!("`{}` ({}/{})", m.mutant, m.caught, m.seeds))
                .collect::<Vec<_>>()
                .join(" ")
        };
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
            r.rule,
            r.strength.join(", "),
            if r.properties.is_empty() {
                "-".to_string()
            } else {
                r.properties.join(" ")
            },
            cited,
            list(&r.declared),
            scenarios,
            list(&r.findings),
            if gap.is_empty() {
                "-".to_string()
            } else {
                format!("no {}", gap.join(", no "))
            }
        ));
    }
    let gaps = rows.iter().filter(|r| !r.gap().is_empty()).count();
    out.push_str(&format!(
        "\n{} rules, {} with a witness (a checker, and a mutant whose runs fail citing the rule, caught in at least half of them for a MUST; for a rule that is only a MAY, a finding that measures it), {gaps} with a gap. Derived by running each mutant's witness scenario over its first {} seeds.\n",
        rows.len(),
        rows.len() - gaps,
        rows.iter().flat_map(|r| &r.mutants).map(|m| m.seeds).max().unwrap_or(0)
    ));
    out
}
