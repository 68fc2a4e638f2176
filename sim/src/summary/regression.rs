//! One regression replayed, as `summary.json`'s `regressions` list holds it; the corpus and
//! its replay are `explore::regression`.

use serde::{Deserialize, Serialize};

/// One regression replayed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// The file, as given.
    pub file: String,
    /// What it must show (`Expect::line`).
    pub expect: String,
    /// What it showed: the matching verdict's line, or the first invalid/unknown one, or
    /// `valid`.
    pub got: String,
    /// Whether it held.
    pub ok: bool,
    /// The run's history hash.
    pub hash: String,
    /// The command that replays it.
    pub replay: String,
}
