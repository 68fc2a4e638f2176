//! `acp-chaos check`: every checker again on a stored history (Jepsen's analyze).

use std::path::PathBuf;

use super::output::print_verdicts;
use super::Outcome;
use crate::checkers;
use crate::history::History;

/// `acp-chaos check` arguments.
#[derive(clap::Args, Debug, Clone)]
pub(super) struct CheckArgs {
    /// A run folder (with history.jsonl) or the file itself.
    path: PathBuf,
}

pub(super) fn exec(a: &CheckArgs) -> Outcome {
    let path = &a.path;
    let file = if path.is_dir() {
        path.join("history.jsonl")
    } else {
        path.to_path_buf()
    };
    let h = History::read_jsonl(&file)?;
    println!(
        "# {} seed {} mutant {}",
        h.header["scenario"], h.header["seed"], h.header["mutant"]
    );
    let vs = checkers::check_all(&h);
    let code = print_verdicts(&vs, false);
    println!("history hash {}", h.hash());
    Ok(code)
}
