//! `acp-chaos findings`: measure the spec's open choices on the correct models and write the
//! findings page (`docs/findings/spec.md` by default).

use std::path::PathBuf;

use clap::Args;

use super::args::{scenarios_dir, DirArgs};
use super::{CliError, Outcome};
use crate::{exit, findings, scenario};

#[derive(Args, Debug, Clone)]
pub(super) struct FindingsArgs {
    /// Scenario to measure on (a swarm scenario reaches every claim).
    #[arg(default_value = "swarm-basic")]
    scenario: String,
    /// Seeds per design (`0..N`).
    #[arg(long, default_value_t = 500)]
    seeds: u64,
    /// Worker threads (default: the number of cores; the page does not depend on it).
    #[arg(long, env = "ACP_CHAOS_JOBS", value_parser = super::args::parse_jobs)]
    jobs: Option<usize>,
    /// Where to write the page.
    #[arg(long, default_value = "docs/findings/spec.md")]
    out: PathBuf,
    #[command(flatten)]
    dir: DirArgs,
}

pub(super) fn exec(a: &FindingsArgs) -> Outcome {
    if a.seeds == 0 || a.jobs == Some(0) {
        return Err(CliError::usage(
            "--seeds and --jobs must be at least 1".to_string(),
        ));
    }
    if a.seeds > 1_000_000 {
        return Err(CliError::usage(format!(
            "--seeds {}: at most 1,000,000 per design",
            a.seeds
        )));
    }
    if let Some(dir) = a.out.parent().filter(|d| !d.as_os_str().is_empty()) {
        // Before measuring: a path that cannot be written fails at once.
        std::fs::create_dir_all(dir)
            .map_err(|e| CliError::usage(format!("{}: {e}", dir.display())))?;
    }
    let s = scenario::resolve(&scenarios_dir(&a.dir), &a.scenario)?;
    let mut m = findings::measure(&s, a.seeds, super::args::jobs(a.jobs, u64::MAX))?;
    // The retention table, when the scenarios folder has its scenario.
    let rs = scenario::resolve(&scenarios_dir(&a.dir), findings::RETENTION_SCENARIO).ok();
    if let Some(rs) = &rs {
        m.retention = Some(findings::measure_retention(
            rs,
            findings::RETENTION_SEEDS,
            super::args::jobs(a.jobs, u64::MAX),
        )?);
    }
    let command = format!("acp-chaos findings {} --seeds {}", a.scenario, a.seeds);
    let page = findings::page::markdown(&m, &s, rs.as_ref(), &command);
    if let Some(dir) = a.out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| CliError::usage(format!("{}: {e}", dir.display())))?;
    }
    std::fs::write(&a.out, &page)
        .map_err(|e| CliError::usage(format!("{}: {e}", a.out.display())))?;
    for (id, _) in findings::CLAIMS {
        let c = &m.claims[id];
        let figures: Vec<String> = c
            .ordered()
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        println!(
            "{id}: {}",
            if figures.is_empty() {
                "not seen".to_string()
            } else {
                figures.join(", ")
            }
        );
    }
    if let Some(t) = &m.retention {
        let rows: Vec<String> = findings::RETENTION_ROWS
            .iter()
            .zip(&t.cells)
            .map(|((label, _, _), cells)| {
                let d: Vec<String> = cells.iter().map(|c| c.duplicates.to_string()).collect();
                format!("{label}: {}", d.join(" "))
            })
            .collect();
        println!(
            "retention ({}, seeds 0..{} per cell; second insertions by staleness limit {:?} ms): {}",
            t.scenario,
            t.seeds,
            findings::STALE_COLUMNS,
            rows.join("; ")
        );
    }
    println!("findings: {} ({} runs)", a.out.display(), m.runs);
    Ok(exit::VALID)
}
