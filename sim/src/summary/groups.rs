//! A campaign's failures grouped by what failed: property and rules (a campaign has one
//! mutant). Many counterexamples share one root cause (a mutant breaks P1 in 40 scenarios
//! under every design); the terminal and CI want one group, one annotation, one repro per
//! cause.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::{Summary, Tally};

/// One group of failures: a property broken under its rules (by one or more designs).
#[derive(Debug, Clone, PartialEq)]
pub struct FailureGroup {
    /// Property id (`P1`, ...).
    pub property: String,
    /// `invalid` or `unknown` (an invalid verdict outranks an unknown one in the same group).
    pub status: String,
    /// The rule ids the verdicts cite, as the first failure lists them.
    pub rules: Vec<String>,
    /// Agent designs it failed under, in the order first seen.
    pub designs: Vec<String>,
    /// Mutant (`None`: the correct models).
    pub mutant: Option<String>,
    /// Parties blamed.
    pub parties: BTreeSet<String>,
    /// Rows (`scenario@design`) where it failed, in the campaign's order.
    pub rows: Vec<String>,
    /// Failing runs (invalid or unknown verdicts of this property) over those rows.
    pub runs: u64,
    /// The first failure's message.
    pub message: String,
    /// The first failure's repro line.
    pub repro: String,
    /// The first failure's shrunk replay line, when it was shrunk.
    pub shrunk: Option<String>,
    /// The first failure's run folder (relative to the report folder), when kept.
    pub folder: Option<String>,
    /// The first failure's page (`<folder>/[<property>.]report.md`, relative to the report
    /// folder; an `.html` page beside it), when one was written: a run failing two properties
    /// has a page per property.
    pub report: Option<String>,
    /// Its listed failures: indices into the summary's `failures`, in order.
    pub failures: Vec<usize>,
}

impl FailureGroup {
    /// `P1 invalid (A1 A4) on stored, mutant no-dedup`.
    pub fn title(&self) -> String {
        let rules = if self.rules.is_empty() {
            String::new()
        } else {
            format!(" ({})", self.rules.join(" "))
        };
        let mutant = match &self.mutant {
            Some(m) => format!(", mutant {m}"),
            None => String::new(),
        };
        format!(
            "{} {}{rules} on {}{mutant}",
            self.property,
            self.status,
            self.designs.join(" ")
        )
    }
}

/// Group the failures of `summary.json` (`failures`: one entry per listed failing run ×
/// property) by (property, rules); the counts come from the table (a cell whose failures
/// fall in several groups counts in each the runs listed there, and the rest in its first). The example of a group is its first failure that was shrunk, else
/// its first. Rows whose table cell fails with no entry in `failures` (a summary that kept
/// none) form a group of their own per property with no repro. Ordered by first appearance.
pub fn failure_groups(s: &Summary) -> Vec<FailureGroup> {
    let mut grouping = Grouping::default();
    for (at, f) in s.failures.iter().enumerate() {
        grouping.listed(s, at, f);
    }
    grouping.share_runs(s);
    grouping.unlisted(s);
    grouping.groups
}

/// A group's key: (property, rules).
type Key = (String, Vec<String>);

/// The groups as [`failure_groups`] builds them.
#[derive(Default)]
struct Grouping {
    groups: Vec<FailureGroup>,
    /// Each key's group.
    index: BTreeMap<Key, usize>,
    /// The groups each (row, property) cell's listed failures fall in, with how many each.
    cells: BTreeMap<(String, String), Vec<(usize, u64)>>,
}

fn str_of(f: &Value, k: &str) -> String {
    f[k].as_str().unwrap_or("").to_string()
}

impl Grouping {
    /// The group of `key`, made by `new` when it has none yet.
    fn group(&mut self, key: Key, new: impl FnOnce() -> FailureGroup) -> usize {
        let groups = &mut self.groups;
        *self.index.entry(key).or_insert_with(|| {
            groups.push(new());
            groups.len() - 1
        })
    }

    /// One entry of `failures` (the `at`th) into its group.
    fn listed(&mut self, s: &Summary, at: usize, f: &Value) {
        let (scenario, design, property) = (
            str_of(f, "scenario"),
            str_of(f, "design"),
            str_of(f, "property"),
        );
        let row = format!("{scenario}@{design}");
        // A row that expects a violation and has one is not a failure.
        if s.expected_invalid.contains(&row) && f["status"] == "invalid" {
            return;
        }
        let rules: Vec<String> = f["rules"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|r| r.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        let key = (property.clone(), rules.clone());
        let i = self.group(key, || FailureGroup {
            property: property.clone(),
            status: str_of(f, "status"),
            rules,
            designs: Vec::new(),
            mutant: s.mutant.clone(),
            parties: BTreeSet::new(),
            rows: Vec::new(),
            runs: 0,
            message: str_of(f, "message"),
            repro: str_of(f, "repro"),
            shrunk: f["shrunk"]["replay"].as_str().map(str::to_string),
            folder: f["folder"].as_str().map(str::to_string),
            report: f["report"].as_str().map(str::to_string),
            failures: Vec::new(),
        });
        let g = &mut self.groups[i];
        g.failures.push(at);
        if !g.designs.contains(&design) {
            g.designs.push(design.clone());
        }
        if g.shrunk.is_none() && f["shrunk"]["replay"].is_string() {
            // A shrunk failure is the better example: it has a minimal schedule to replay.
            g.message = str_of(f, "message");
            g.repro = str_of(f, "repro");
            g.shrunk = f["shrunk"]["replay"].as_str().map(str::to_string);
            g.folder = f["folder"].as_str().map(str::to_string);
            g.report = f["report"].as_str().map(str::to_string);
        }
        if f["status"] == "invalid" && g.status != "invalid" {
            g.status = "invalid".into();
        }
        if let Some(p) = f["party"].as_str() {
            g.parties.insert(p.to_string());
        }
        let shares = self.cells.entry((row.clone(), property)).or_default();
        match shares.iter_mut().find(|(j, _)| *j == i) {
            Some((_, n)) => *n += 1,
            None => shares.push((i, 1)),
        }
        if !g.rows.contains(&row) {
            g.rows.push(row);
        }
    }

    /// A cell's failing runs: each later group gets the runs it lists (the failures list is
    /// capped, so this is what is known of them), the cell's first group the rest. The groups'
    /// runs add up to the table's.
    fn share_runs(&mut self, s: &Summary) {
        for ((row, property), shares) in &self.cells {
            let total = s
                .table
                .get(row)
                .and_then(|r| r.get(property))
                .map(|c| c.violations + c.unknown)
                .unwrap_or(0);
            let later: u64 = shares[1..].iter().map(|(_, n)| n).sum();
            self.groups[shares[0].0].runs += total.saturating_sub(later);
            for (j, n) in &shares[1..] {
                self.groups[*j].runs += *n;
            }
        }
    }

    /// Failing cells no failure entry stands for.
    fn unlisted(&mut self, s: &Summary) {
        for row in &s.order {
            let Some(row_cells) = s.table.get(row) else {
                continue;
            };
            for (property, c) in row_cells {
                let expected = s.expected_invalid.contains(row) && c.unknown == 0;
                if c.violations + c.unknown == 0
                    || expected
                    || self.cells.contains_key(&(row.clone(), property.clone()))
                {
                    continue;
                }
                let design = row
                    .rsplit_once('@')
                    .map(|(_, d)| d)
                    .unwrap_or("")
                    .to_string();
                let i = self.group((property.clone(), Vec::new()), || {
                    unlisted_group(s, property, c)
                });
                let g = &mut self.groups[i];
                g.runs += c.violations + c.unknown;
                g.rows.push(row.clone());
                if !g.designs.contains(&design) {
                    g.designs.push(design);
                }
            }
        }
    }
}

/// The group of a failing cell (of `property`) no failure entry stands for: no repro.
fn unlisted_group(s: &Summary, property: &str, c: &Tally) -> FailureGroup {
    FailureGroup {
        property: property.to_string(),
        status: if c.violations > 0 {
            "invalid"
        } else {
            "unknown"
        }
        .into(),
        rules: Vec::new(),
        designs: Vec::new(),
        mutant: s.mutant.clone(),
        parties: c.parties.clone(),
        rows: Vec::new(),
        runs: 0,
        message: format!(
            "first failing seed {}",
            c.first_failing_seed
                .map(|x| x.to_string())
                .unwrap_or_default()
        ),
        repro: String::new(),
        shrunk: None,
        folder: None,
        report: None,
        failures: Vec::new(),
    }
}

/// The campaign-wide failures that belong to no row: unmet expectations, vacuous scenarios,
/// nondeterministic runs, failed regressions, an interrupted campaign. One (title, message)
/// each.
pub fn campaign_failures(s: &Summary) -> Vec<(String, String)> {
    let mut v = Vec::new();
    for row in &s.expectations_unmet {
        v.push((
            format!("expected violation missing on {row}"),
            format!("the scenario expects a violation on {row}; none was found"),
        ));
    }
    for (scen, missing) in &s.vacuous {
        v.push((
            format!("vacuous scenario {scen}"),
            format!(
                "sometimes events that never happened: {}",
                missing.join(", ")
            ),
        ));
    }
    for l in &s.nondeterministic {
        v.push(("nondeterminism".into(), l.clone()));
    }
    for r in s.regressions.iter().filter(|r| !r.ok) {
        v.push((
            format!("regression {}", r.file),
            format!("expected {}, got {}\nrepro: {}", r.expect, r.got, r.replay),
        ));
    }
    if s.interrupted {
        v.push((
            "interrupted".into(),
            "stopped by Ctrl-C: only the runs done are reported".into(),
        ));
    }
    v
}
