//! `acp-chaos check`: every checker again on a stored history (Jepsen's analyze), or a
//! campaign's `summary.json` read back as a CI gate (`--github` for GitHub Actions).

use std::io::BufRead;
use std::path::{Path, PathBuf};

use super::output::print_verdicts;
use super::{github, CliError, Outcome};
use acp_chaos::checkers::{self, Status};
use acp_chaos::history::History;
use acp_chaos::summary::{read_summary_file, Summary};

/// What `check` reads, for the error that names a file it cannot use.
const EXPECTS: &str = "check reads a run's history.jsonl (a JSON header line, then one op per \
                       line; or the run folder holding it) or a campaign's summary.json (or \
                       the report folder holding it)";

/// `acp-chaos check` arguments.
#[derive(clap::Args, Debug, Clone)]
pub(super) struct CheckArgs {
    /// A run folder or its history.jsonl (the checkers run again), or a report folder or its
    /// summary.json (its failures, grouped by property, rules, design and mutant, one repro
    /// each; exit code the campaign's).
    path: PathBuf,
    /// GitHub Actions: one `::error` annotation per failing group, and a Markdown summary
    /// appended to the file `$GITHUB_STEP_SUMMARY` names, when it is set.
    #[arg(long)]
    github: bool,
}

/// The two files `check` reads.
enum Input {
    History(PathBuf),
    Summary(PathBuf),
}

pub(super) fn exec(a: &CheckArgs) -> Outcome {
    match classify(&a.path)? {
        Input::History(file) => check_history(&file, a.github),
        Input::Summary(file) => {
            let s = read_summary_file(&file)
                .map_err(|e| CliError::usage(format!("{e:#} ({EXPECTS})")))?;
            check_summary(&s, &file, a.github)
        }
    }
}

/// Which file `path` is: a folder by what it holds, a file by its first line (a history's is
/// a whole JSON object; a pretty-printed summary's is `{`). Errors (exit 2) name the path and
/// say what `check` reads.
fn classify(path: &Path) -> Result<Input, CliError> {
    if path.is_dir() {
        let (h, s) = (path.join("history.jsonl"), path.join("summary.json"));
        return if h.is_file() {
            Ok(Input::History(h))
        } else if s.is_file() {
            Ok(Input::Summary(s))
        } else {
            Err(CliError::usage(format!(
                "{}: a folder with neither history.jsonl nor summary.json ({EXPECTS})",
                path.display()
            )))
        };
    }
    let f = std::fs::File::open(path)
        .map_err(|e| CliError::usage(format!("{}: {e} ({EXPECTS})", path.display())))?;
    // The first line that is not blank; a line that cannot be read (not UTF-8) is refused by
    // its number, never taken for a blank one.
    let mut first = None;
    for (i, l) in std::io::BufReader::new(f).lines().enumerate() {
        let l = l.map_err(|e| {
            CliError::usage(format!("{}:{}: {e} ({EXPECTS})", path.display(), i + 1))
        })?;
        if !l.trim().is_empty() {
            first = Some(l);
            break;
        }
    }
    let Some(first) = first else {
        return Err(CliError::usage(format!(
            "{}: empty file ({EXPECTS})",
            path.display()
        )));
    };
    let header: Option<serde_json::Value> = serde_json::from_str(&first).ok();
    if header
        .as_ref()
        .is_some_and(|h| h.get("scenario").is_some() && h.get("table").is_none())
    {
        return Ok(Input::History(path.to_path_buf()));
    }
    if !first.trim_start().starts_with('{') {
        return Err(CliError::usage(format!(
            "{}:1: neither a history nor a summary: the first line is not a JSON object \
             ({EXPECTS})",
            path.display()
        )));
    }
    // A whole JSON document: a campaign's summary, or a probe's (which check does not read).
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::usage(format!("{}: {e} ({EXPECTS})", path.display())))?;
    let v: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| CliError::usage(format!("{}: not JSON ({e}) ({EXPECTS})", path.display())))?;
    if v.get("deterministic").is_some() && v.get("agent").is_some() {
        return Err(CliError::usage(format!(
            "{}: a probe's summary.json; check reads a campaign's (a probe's verdicts are in \
             the summary.md and junit.xml beside it)",
            path.display()
        )));
    }
    Ok(Input::Summary(path.to_path_buf()))
}

/// Every checker on a stored history; `--github` adds one `::error` per verdict that is not
/// valid.
fn check_history(file: &Path, github: bool) -> Outcome {
    let h = History::read_jsonl(file).map_err(|e| CliError::usage(format!("{e:#} ({EXPECTS})")))?;
    println!(
        "# {} seed {} mutant {}",
        h.header["scenario"], h.header["seed"], h.header["mutant"]
    );
    // A probe's history gets the probe's verdicts (the checkers with what only the wire of a
    // real process shows, and its abort): the same ones `probe` reported for it.
    let vs = if crate::probe::is_probe_history(&h) {
        println!(
            "# a probe's history: the probe's verdicts ({})",
            crate::probe::properties().join(" ")
        );
        crate::probe::judge_history(&h)
    } else {
        checkers::check_all(&h)
    };
    let code = print_verdicts(&vs, false);
    println!("history hash {}", h.hash());
    if github {
        for v in vs
            .iter()
            .filter(|v| matches!(v.status, Status::Invalid | Status::Unknown))
        {
            println!(
                "{}",
                github::error_line(
                    &format!(
                        "acp-chaos {} {} ({})",
                        v.property,
                        format!("{:?}", v.status).to_lowercase(),
                        v.rules.join(" ")
                    ),
                    &format!("{}: {}", file.display(), v.message)
                )
            );
        }
    }
    Ok(code)
}

/// `s` with each shrunk failure's replay line naming its schedule from where `check` runs: the
/// campaign wrote the path as seen from where it ran, and `summary.json` may be read from
/// anywhere (its run folders sit beside it). A line whose schedule is not there is kept.
fn from_here(s: &Summary, file: &Path) -> Summary {
    let mut s = s.clone();
    let dir = file.parent().unwrap_or(Path::new(""));
    for f in &mut s.failures {
        let (Some(folder), Some(line)) = (f["folder"].as_str(), f["shrunk"]["replay"].as_str())
        else {
            continue;
        };
        let Some(name) = line
            .rsplit_once("--schedule ")
            .and_then(|(_, p)| Path::new(p).file_name())
        else {
            continue;
        };
        let schedule = dir.join(folder).join(name);
        if schedule.exists() {
            f["shrunk"]["replay"] =
                format!("acp-chaos replay --schedule {}", schedule.display()).into();
        }
    }
    s
}

/// A campaign's summary as a gate: its failing groups (annotations with `--github`, and the
/// step summary), then its exit code.
fn check_summary(s: &Summary, file: &Path, github: bool) -> Outcome {
    let s = &from_here(s, file);
    if github {
        for l in github::annotations(s) {
            println!("{l}");
        }
        if let Some(dest) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|v| !v.is_empty()) {
            let md = github::step_summary(s, &file.with_file_name("summary.md"));
            append(Path::new(&dest), &md).map_err(|e| {
                CliError::usage(format!(
                    "{} (GITHUB_STEP_SUMMARY): {e}",
                    Path::new(&dest).display()
                ))
            })?;
        }
    } else {
        for l in github::plain_lines(s) {
            println!("{l}");
        }
    }
    println!(
        "{}: campaign {}, {} runs, exit {}",
        file.display(),
        s.name,
        s.hashes.len(),
        s.exit_code
    );
    Ok(s.exit_code)
}

/// Append `text` to `file` (GitHub collects a step's summary from what its steps appended).
fn append(file: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(file)?;
    f.write_all(text.as_bytes())
}
