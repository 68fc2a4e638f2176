//! What should have happened, beside what did: for a verdict, the behaviour its rules required
//! ([`Expected::of`]), one sentence per property, made concrete from the run where the history
//! says enough (the messageId a retry was owed, the answer an attempt was owed), and one row per
//! witness op: what the op did, what the rule required of it.

use std::collections::BTreeSet;

use super::diagram::Diagram;
use crate::checkers::Verdict;
use crate::history::{is_agent_host, History, Op};

/// What a witness op was required to do, from the op.
type PerOp = Box<dyn Fn(&Op) -> String>;

/// What a verdict's rules required, for a page to show beside the diagram.
#[derive(Debug, Clone, PartialEq)]
pub struct Expected {
    /// One sentence: what the rules required in this run (concrete ids where the history
    /// gives them, else the rule's general statement).
    pub summary: String,
    /// One row per witness op: (op number as `#27`, what the diagram's row says happened,
    /// what was required of it).
    pub rows: Vec<(String, String, String)>,
}

/// The property's general statement of the required behaviour, from its rules in
/// `spec/RULES.md` (its row's `expected` in [`crate::checkers::CHECKERS`]; `None` for a
/// property id this version does not know).
pub fn general(property: &str) -> Option<&'static str> {
    crate::checkers::CHECKERS
        .iter()
        .find(|c| c.property == property)
        .map(|c| c.expected)
}

/// A witness row's requirement when no op-specific one is known: the property's expected
/// behaviour itself, so every row reads on its own (a page never defers to another line).
fn same(general: &str) -> PerOp {
    let g = general.to_string();
    Box::new(move |_: &Op| g.clone())
}

impl Expected {
    /// What `v`'s rules required in run `h` (the run the verdict was given on).
    pub fn of(v: &Verdict, h: &History) -> Expected {
        let d = Diagram::of(h, Some(v));
        let row_text = |i: usize| {
            d.items
                .iter()
                .find(|it| it.draws_op(i))
                .map(|it| it.text().to_string())
                .unwrap_or_else(|| {
                    h.ops
                        .iter()
                        .find(|o| o.index == i)
                        .map(|o| format!("{} {}", o.process, o.f))
                        .unwrap_or_default()
                })
        };
        let witnesses: BTreeSet<usize> = v.witnesses.iter().copied().collect();
        let ops: Vec<&Op> = h
            .ops
            .iter()
            .filter(|o| witnesses.contains(&o.index))
            .collect();
        let general = general(&v.property).unwrap_or("what the rules quoted on this page require");
        let inserts: Vec<&Op> = ops
            .iter()
            .copied()
            .filter(|o| is_agent_host(&o.process) && o.f == "insert")
            .collect();
        let mid = |o: &Op| o.value["messageId"].as_str().unwrap_or("?").to_string();
        let (summary, per_op): (String, PerOp) = match v.property.as_str() {
            "P1" | "P12" if inserts.len() >= 2 => {
                let first = mid(inserts[0]);
                let later: Vec<String> = inserts[1..].iter().map(|o| mid(o)).collect();
                let first_op = inserts[0].index;
                let f2 = first.clone();
                (
                    format!(
                        "answer the retry with {first} from the key's record (the insertion at op #{first_op}) and insert nothing: {} should not exist ({general})",
                        later.join(", ")
                    ),
                    Box::new(move |o: &Op| {
                        if o.index == first_op {
                            "the first insertion for the key: as it should be".to_string()
                        } else if o.f == "insert" {
                            format!("insert nothing; answer the retry with {f2} from the record")
                        } else {
                            format!("only {f2} for this key")
                        }
                    }),
                )
            }
            "P3" => {
                let answers: Vec<String> = ops
                    .iter()
                    .filter_map(|o| o.value["frame"]["result"]["messageId"].as_str())
                    .map(str::to_string)
                    .collect();
                match answers.first() {
                    Some(a) => {
                        let a2 = a.clone();
                        (
                            format!("answer every attempt of the submission with {a}, the original's messageId ({general})"),
                            Box::new(move |_: &Op| format!("the same answer: messageId {a2}")),
                        )
                    }
                    None => (general.to_string(), same(general)),
                }
            }
            "P4" => {
                let inserted: Vec<String> = ops
                    .iter()
                    .filter(|o| o.f == "insert")
                    .map(|o| mid(o))
                    .collect();
                match inserted.first() {
                    Some(m) => {
                        let m2 = m.clone();
                        (
                            format!("the prompt was inserted as {m}, so its attempt is owed the answer messageId {m}, not an error ({general})"),
                            Box::new(move |o: &Op| {
                                if o.f == "insert" {
                                    "the insertion: as it should be".to_string()
                                } else {
                                    format!("answer messageId {m2}")
                                }
                            }),
                        )
                    }
                    None => (general.to_string(), same(general)),
                }
            }
            _ => (general.to_string(), same(general)),
        };
        let rows = ops
            .iter()
            .map(|o| (format!("#{}", o.index), row_text(o.index), per_op(o)))
            .collect();
        Expected { summary, rows }
    }
}
