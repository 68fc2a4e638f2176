//! The `[expect]` table of a schedule file: what a run of it must show. The regression corpus
//! (`explore::regression`) requires it and replays against it; `replay --schedule` checks it
//! the same way and leaves it at that, so a malformed one is refused wherever it is read.
//!
//! ```toml
//! [expect]
//! verdict = "invalid"   # or "finding": some checker must give exactly this ...
//! property = "P1"       # ... on this property ...
//! party = "agent"       # ... blaming this party
//! # verdict = "valid"   # a fixed bug: no checker may be invalid or unknown
//! ```

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::checkers::{self, Status};
use crate::models::Party;

/// What a regression's run must show (the file's `[expect]` table).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// `valid` (no invalid or unknown verdict), or `invalid` / `finding` on `property`.
    pub verdict: Status,
    /// The property (`P1` ...); required unless `verdict = "valid"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub property: Option<String>,
    /// The party blamed; required unless `verdict = "valid"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub party: Option<Party>,
}

impl Expect {
    /// One line: `P1 invalid (party agent)` or `valid`.
    pub fn line(&self) -> String {
        match self.verdict {
            Status::Valid => "valid".into(),
            s => format!(
                "{} {} (party {})",
                self.property.as_deref().unwrap_or("?"),
                format!("{s:?}").to_lowercase(),
                self.party
                    .map(|p| format!("{p:?}").to_lowercase())
                    .unwrap_or_else(|| "none".into())
            ),
        }
    }

    /// Refuse a table whose fields do not fit together: `property` (a known one) and `party`
    /// are required unless `verdict = "valid"`.
    ///
    /// Errors: `FILE: field `expect.F` ...`, naming the file and the field.
    pub fn check(&self, path: &Path) -> anyhow::Result<()> {
        if self.verdict != Status::Valid {
            let Some(p) = &self.property else {
                anyhow::bail!(
                    "{}: field `expect.property` is required when `expect.verdict` is not \"valid\"",
                    path.display()
                );
            };
            if !checkers::CHECKERS.iter().any(|c| c.property == p.as_str()) {
                anyhow::bail!(
                    "{}: field `expect.property`: unknown property `{p}` (P1 to P17)",
                    path.display()
                );
            }
            if self.party.is_none() {
                anyhow::bail!(
                    "{}: field `expect.party` is required when `expect.verdict` is not \"valid\" (agent, client, intermediary, nemesis, spec)",
                    path.display()
                );
            }
        }
        Ok(())
    }
}
