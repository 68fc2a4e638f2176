//! `acp-chaos audit`: every method's retry class and what sending it twice does to the stored
//! Agent (see [`acp_chaos::retry_class::audit`]).

use clap::Args;

use super::Outcome;
use acp_chaos::exit;

/// `acp-chaos audit` arguments.
#[derive(Args, Debug, Clone)]
pub(super) struct AuditArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

pub(super) fn exec(a: &AuditArgs) -> Outcome {
    let rows = acp_chaos::retry_class::audit::audit();
    if a.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
    } else {
        print!("{}", acp_chaos::retry_class::audit::table_text(&rows));
    }
    Ok(if rows.iter().all(|r| r.consistent) {
        exit::VALID
    } else {
        exit::INVALID
    })
}
