//! The error every command returns: the message `main` prints (`error: ...` on stderr) and the
//! exit code it carries (see [`acp_chaos::exit`]).

use std::fmt;

use acp_chaos::exit;

/// What a command returns: its exit code, or an error that carries one.
pub type Outcome = Result<i32, CliError>;

/// A command that could not do its job.
#[derive(Debug)]
pub struct CliError {
    /// The exit code (2 for usage and input errors).
    pub code: i32,
    /// One line for the user, naming the file, line or field where there is one.
    pub message: String,
}

impl CliError {
    /// A usage or input error: a bad flag, a malformed scenario or schedule file (exit 2).
    pub fn usage(message: impl fmt::Display) -> CliError {
        CliError {
            code: exit::USAGE,
            message: message.to_string(),
        }
    }
}

impl CliError {
    /// A report that could not be written after a campaign that ran: the campaign's exit
    /// code `verdict` is kept (an invalid verdict stays 1), a valid one becomes 2, since the
    /// report is missing.
    pub fn unwritten(what: &str, out: &std::path::Path, verdict: i32) -> CliError {
        let code = if verdict == exit::VALID {
            exit::USAGE
        } else {
            verdict
        };
        CliError {
            code,
            message: format!(
                "the report could not be written: {what}; {} keeps what it held before (exit \
                 {code}: {})",
                out.display(),
                if verdict == exit::VALID {
                    "the verdict was valid, the report is missing"
                } else {
                    "the campaign's verdict, printed above"
                }
            ),
        }
    }
}

/// A usage error as a command's outcome: `return usage("--repeat must be at least 1")`.
pub fn usage(message: impl fmt::Display) -> Outcome {
    Err(CliError::usage(message))
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CliError {}

impl From<anyhow::Error> for CliError {
    fn from(e: anyhow::Error) -> CliError {
        CliError::usage(format!("{e:#}"))
    }
}

impl From<acp_chaos::scenario::ScenarioError> for CliError {
    fn from(e: acp_chaos::scenario::ScenarioError) -> CliError {
        CliError::usage(e)
    }
}

impl From<std::io::Error> for CliError {
    fn from(e: std::io::Error) -> CliError {
        CliError::usage(e)
    }
}

impl From<serde_json::Error> for CliError {
    fn from(e: serde_json::Error) -> CliError {
        CliError::usage(e)
    }
}

impl From<toml::ser::Error> for CliError {
    fn from(e: toml::ser::Error) -> CliError {
        CliError::usage(e)
    }
}
