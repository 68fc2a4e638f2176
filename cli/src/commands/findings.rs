//! `acp-chaos findings`: measure the spec's open choices on the correct models and write the
//! findings page (`reports/findings/spec.md` by default; the committed page is
//! `--out docs/findings/spec.md`, which a test regenerates byte for byte).

use std::path::PathBuf;

use clap::Args;

use super::args::{scenarios_dir, DirArgs};
use super::{CliError, Outcome};
use crate::findings;
use acp_chaos::exit;

#[derive(Args, Debug, Clone)]
// `--seeds -1` is read as a value and refused as one, not taken for a flag.
#[command(allow_negative_numbers = true)]
pub(super) struct FindingsArgs {
    /// Scenario to measure on (a swarm scenario reaches every claim).
    #[arg(default_value = "swarm-basic")]
    scenario: String,
    /// Seeds per design (`0..N`).
    #[arg(long, value_parser = super::args::seed_count, default_value_t = 500)]
    seeds: u64,
    /// Worker threads (default: the number of cores; the page does not depend on it).
    #[arg(long, env = "ACP_CHAOS_JOBS", value_parser = super::args::parse_jobs)]
    jobs: Option<usize>,
    /// Where to write the page (its witnesses and the retry-classes page go beside it).
    /// The committed page is `docs/findings/spec.md`: give that to regenerate it.
    #[arg(long, default_value = "reports/findings/spec.md")]
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
    // Before measuring: a path that cannot be written fails at once, and so does a
    // retry-classes page that cannot be read (its text is kept around the generated block).
    super::writable::file(&a.out, "--out")?;
    let dir = a
        .out
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."));
    let witnesses = dir.join("witnesses");
    let classes = dir.join("retry-classes.md");
    let old = match std::fs::read_to_string(&classes) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(CliError::usage(format!("{}: {e}", classes.display()))),
    };
    let g = findings::generate(
        &scenarios_dir(&a.dir),
        &a.scenario,
        a.seeds,
        super::args::jobs(a.jobs, u64::MAX),
        &witnesses.display().to_string(),
    )?;
    let (m, r, block) = (&g.measured, &g.rendered, &g.retry_classes);
    let write = |path: &std::path::Path, text: &str| {
        acp_chaos::folders::write_atomic(path, text.as_bytes())
            .map_err(|e| CliError::usage(format!("{}: {e}", path.display())))
    };
    std::fs::create_dir_all(&witnesses)
        .map_err(|e| CliError::usage(format!("{}: {e}", witnesses.display())))?;
    write(&a.out, &r.page)?;
    for (name, text) in &r.files {
        write(&witnesses.join(name), text)?;
    }
    // The retry-classes page's generated block (the page is made with it when missing).
    write(&classes, &findings::matrix::with_block(&old, block))?;
    for (id, _) in findings::CLAIMS {
        let Some(c) = m.claims().get(id) else {
            continue;
        };
        let figures: Vec<String> = findings::ROWS
            .iter()
            .filter(|r| r.0 == id)
            .map(|r| format!("{} {}", r.1, c.get(r.1)))
            .collect();
        println!("{id}: {}", figures.join(", "));
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
    println!(
        "findings: {} and {} ({} runs, {} with an Agent ignoring $/cancel_request; {} violations, {} unknown)",
        a.out.display(),
        classes.display(),
        m.runs,
        m.ignoring.runs,
        m.main.violations + m.ignoring.violations,
        m.main.unknown + m.ignoring.unknown
    );
    Ok(exit::VALID)
}
