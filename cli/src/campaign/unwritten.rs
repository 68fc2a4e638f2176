//! A campaign that ran but whose report could not be written (a full disk, a read-only folder):
//! its summary is kept, so the command still prints the verdict and exits with its code.

use std::fmt;

use acp_chaos::summary::Summary;

/// The error [`super::run`] returns when every run finished but the report could not be
/// written; `out` keeps the previous report, if any.
#[derive(Debug)]
pub struct ReportUnwritten {
    /// The campaign's summary, complete (only the files are missing).
    pub summary: Box<Summary>,
    /// What could not be written, and why (the first error; nothing was written after it).
    pub what: String,
}

impl fmt::Display for ReportUnwritten {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the report could not be written: {}", self.what)
    }
}

impl std::error::Error for ReportUnwritten {}
