//! What a checker answers: a [`Verdict`] with its [`Status`].

use acp_chaos_models::Party;
use serde::{Deserialize, Serialize};

/// Verdict status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// The property holds.
    Valid,
    /// A SHOULD or an *(ours)* rule broken, or a permitted outcome worth a look. Never fails.
    Finding,
    /// Cannot decide (e.g. still pending at the liveness bound).
    Unknown,
    /// A MUST broken.
    Invalid,
}

impl Status {
    /// `valid`, `finding`, `unknown` or `invalid` (as in `summary.json`).
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Valid => "valid",
            Status::Finding => "finding",
            Status::Unknown => "unknown",
            Status::Invalid => "invalid",
        }
    }
}

/// One checker's answer for one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// Property id, e.g. `P1`.
    pub property: String,
    /// Status.
    pub status: Status,
    /// RULES.md ids concerned.
    pub rules: Vec<String>,
    /// Op indices that witness it.
    pub witnesses: Vec<usize>,
    /// Index of the nemesis op that enabled it, if any.
    pub fault: Option<usize>,
    /// Who is at fault.
    pub party: Option<Party>,
    /// One readable sentence.
    pub message: String,
}

impl Verdict {
    /// A valid verdict of `property`, naming the rules its checker enforces (the registry's
    /// list, [`super::CHECKERS`]: one place says what a property covers). A failing branch
    /// replaces them with the clauses it tested.
    pub fn valid(property: &str) -> Verdict {
        let rules = super::CHECKERS
            .iter()
            .find(|c| c.property == property)
            .map_or(&[][..], |c| c.rules);
        Verdict {
            property: property.into(),
            status: Status::Valid,
            rules: rules.iter().map(|r| r.to_string()).collect(),
            witnesses: vec![],
            fault: None,
            party: None,
            message: String::new(),
        }
    }

    /// The verdict broken: `status` (invalid, or a finding for a SHOULD), the `party` at
    /// fault, the rules the failing clause cites, its witness ops, the nemesis op that enabled
    /// it (if any) and the sentence saying what happened.
    pub fn breach(
        &mut self,
        status: Status,
        party: Party,
        rules: Vec<String>,
        witnesses: Vec<usize>,
        fault: Option<usize>,
        message: String,
    ) {
        self.status = status;
        self.party = Some(party);
        self.rules = rules;
        self.witnesses = witnesses;
        self.fault = fault;
        self.message = message;
    }
}

/// At most `n` characters: a longer text keeps its first `n - 1` and ends with `…` (a value
/// quoted in a message, a label on a page).
pub fn clip(s: &str, n: usize) -> String {
    if s.chars().count() > n {
        format!(
            "{}…",
            s.chars().take(n.saturating_sub(1)).collect::<String>()
        )
    } else {
        s.to_string()
    }
}
