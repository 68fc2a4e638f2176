//! `acp-chaos sweep`: the false-positive sweep. Every scenario under every design it lists, on
//! the correct models, on seeds far outside the ones the tests and the default campaign run:
//! a checker that is too strict shows up here as a violation or an unknown.

use std::path::{Path, PathBuf};

use clap::Args;

use super::args::{load, scenarios_dir, DirArgs};
use super::run::{campaign, RunArgs};
use super::{CliError, Outcome};
use acp_chaos::exit;

#[derive(Args, Debug, Clone)]
// `--seeds -1` is read as a value and refused as one, not taken for a flag.
#[command(allow_negative_numbers = true)]
pub(super) struct SweepArgs {
    /// Seeds per scripted scenario@design.
    #[arg(long, value_parser = super::args::seed_count, default_value_t = 1_000)]
    seeds: u64,
    /// First seed of the scripted scenarios (the default campaign and the tests run 0..200).
    #[arg(long, default_value_t = 10_000)]
    seed_start: u64,
    /// Seeds per swarm scenario@design (`[swarm]`: faults drawn per seed).
    #[arg(long, value_parser = super::args::seed_count, default_value_t = 10_000)]
    swarm_seeds: u64,
    /// First seed of the swarm scenarios.
    #[arg(long, default_value_t = 100_000)]
    swarm_seed_start: u64,
    /// Look somewhere new: derive both first seeds from BASE (a number; `commit`, the
    /// checked-out commit from `GITHUB_SHA` or `git rev-parse HEAD`; or `random`, printed) into
    /// [2^32, 2^64), far from every seed the tests and the default campaign run. Overrides
    /// `--seed-start` and `--swarm-seed-start`; the first line printed says the ranges.
    #[arg(long, value_name = "BASE", conflicts_with_all = ["seed_start", "swarm_seed_start"])]
    base: Option<String>,
    /// Run only the K-th of N disjoint slices of each seed range (`--shard 2/4`), as `run`
    /// does; `acp-chaos merge` joins the shards' `scripted/` (and `swarm/`) folders.
    #[arg(long, value_parser = super::args::parse_shard, env = "ACP_CHAOS_SHARD")]
    shard: Option<(u64, u64)>,
    /// Worker threads (default: the number of cores).
    #[arg(long, env = "ACP_CHAOS_JOBS", value_parser = super::args::parse_jobs)]
    jobs: Option<usize>,
    /// Report folder: the campaigns `scripted/` and `swarm/` inside it, and beside each its
    /// `scripted-rows.md` / `swarm-rows.md` (every scenario@design row's runs, violations,
    /// unknowns, findings) (default `reports/sweep`, under `--shard K/N`
    /// `reports/sweep-shard-K-of-N`).
    #[arg(long)]
    out: Option<PathBuf>,
    /// No progress bar or progress lines on stderr.
    #[arg(long)]
    no_progress: bool,
    #[command(flatten)]
    dir: DirArgs,
}

/// One campaign's totals in a sweep: kind, first seed, seeds, runs, violations, unknown,
/// findings, exit code.
type Part = (&'static str, u64, u64, u64, u64, u64, u64, i32);

/// Two campaigns (scripted scenarios, then swarm scenarios), no regression corpus; exits with
/// the worse of their codes (130 if Ctrl-C stopped it, then 1 before 4: a violation is the
/// point of a sweep).
pub(super) fn exec(a: &SweepArgs) -> Outcome {
    check_ranges(a)?;
    let (seed_start, swarm_seed_start, base_line) = starts_of(a)?;
    if let Some((_, n)) = a.shard {
        if n > a.seeds.min(a.swarm_seeds) {
            return Err(CliError::usage(format!(
                "--shard ?/{n}: more shards than the {} seeds of a range",
                a.seeds.min(a.swarm_seeds)
            )));
        }
    }
    if a.jobs == Some(0) {
        return Err(CliError::usage("--jobs must be at least 1".to_string()));
    }
    if let Some(line) = base_line {
        println!("{line}");
    }
    let all = load(&a.dir, &[])?;
    let (swarm, scripted): (Vec<_>, Vec<_>) = all.iter().partition(|s| s.swarm.is_some());
    let out = a.out.clone().unwrap_or_else(|| match a.shard {
        // Each shard its own folder, so shards on one machine never share one.
        Some((k, n)) => PathBuf::from(format!("reports/sweep-shard-{k}-of-{n}")),
        None => PathBuf::from("reports/sweep"),
    });
    super::writable::into_folder(&out, "--out")?;
    let mut parts = Vec::new();
    for (kind, list, start, seeds) in [
        ("scripted", scripted, seed_start, a.seeds),
        ("swarm", swarm, swarm_seed_start, a.swarm_seeds),
    ] {
        if list.is_empty() {
            continue;
        }
        let (part, interrupted) = run_part(a, &out, kind, &list, start, seeds)?;
        parts.push(part);
        if interrupted {
            // Ctrl-C stopped this campaign: the next one does not start.
            break;
        }
    }
    if parts.is_empty() {
        return Err(CliError::usage(format!(
            "no scenarios found in {}",
            scenarios_dir(&a.dir).display()
        )));
    }
    Ok(report(&parts))
}

/// Every flag checked under its own name before any run.
fn check_ranges(a: &SweepArgs) -> Result<(), CliError> {
    for (flag, start_flag, start, seeds) in [
        ("--seeds", "--seed-start", a.seed_start, a.seeds),
        (
            "--swarm-seeds",
            "--swarm-seed-start",
            a.swarm_seed_start,
            a.swarm_seeds,
        ),
    ] {
        super::args::check_seeds(seeds).map_err(|e| {
            CliError::usage(
                e.to_string()
                    .replace("--seeds", flag)
                    .replace("--seed-start", start_flag),
            )
        })?;
        if start.checked_add(seeds).is_none() {
            return Err(CliError::usage(format!(
                "{start_flag} {start}: with {seeds} seeds ({flag}) the range would end past \
                 2^64; the largest start for {seeds} seeds is {}",
                u64::MAX - seeds
            )));
        }
    }
    Ok(())
}

/// The first scripted and swarm seeds: the flags', or both derived from `--base`, with the
/// line that says the ranges and how to run them again.
fn starts_of(a: &SweepArgs) -> Result<(u64, u64, Option<String>), CliError> {
    let Some(b) = &a.base else {
        return Ok((a.seed_start, a.swarm_seed_start, None));
    };
    let (base, named) = base_of(b)?;
    let (x, y) = (
        far_start(base, 1, a.seeds),
        far_start(base, 2, a.swarm_seeds),
    );
    if a.shard.is_some() && b == "random" {
        return Err(CliError::usage(
            "--base random with --shard: every shard would draw its own range; draw the base once and give each shard --base N".to_string(),
        ));
    }
    let again = format!(
        "acp-chaos sweep --seed-start {x} --seeds {} --swarm-seed-start {y} --swarm-seeds {}{}{}",
        a.seeds,
        a.swarm_seeds,
        a.shard
            .map_or(String::new(), |(k, n)| format!(" --shard {k}/{n}")),
        a.dir
            .scenarios
            .as_ref()
            .map_or(String::new(), |d| format!(" --scenarios {}", d.display()))
    );
    let line = format!(
        "sweep base {named}: scripted seeds {x}..{}, swarm seeds {y}..{} (again: {again})",
        x + a.seeds,
        y + a.swarm_seeds,
    );
    Ok((x, y, Some(line)))
}

/// Run one kind's campaign into `<out>/<kind>` and write its rows page; its totals, and
/// whether Ctrl-C stopped it.
fn run_part(
    a: &SweepArgs,
    out: &Path,
    kind: &'static str,
    list: &[&acp_chaos::scenario::Scenario],
    start: u64,
    seeds: u64,
) -> Result<(Part, bool), CliError> {
    let args = RunArgs {
        scenario: list.iter().map(|s| s.name.clone()).collect(),
        seeds,
        seed_start: start,
        seed: None,
        verbose: false,
        jobs: a.jobs,
        mutant: None,
        agent: None,
        shard: a.shard,
        no_progress: a.no_progress,
        no_regressions: true,
        check_determinism: false,
        no_shrink: false,
        out: Some(out.join(kind)),
        dir: a.dir.clone(),
    };
    let s = campaign(&args)?;
    let (runs, violations, unknown, findings) = write_rows(
        out,
        kind,
        &s,
        &format!(
            "seeds {start}..{} per scenario@design{}",
            start + seeds,
            a.shard
                .map_or(String::new(), |(k, n)| format!(", shard {k}/{n}"))
        ),
    )?;
    let part = (
        kind,
        start,
        seeds,
        runs,
        violations,
        unknown,
        findings,
        s.exit_code,
    );
    Ok((part, s.interrupted))
}

/// Print each campaign's line (and the vacuous-rows note); the sweep's exit code.
fn report(parts: &[Part]) -> i32 {
    println!();
    for (kind, start, seeds, runs, violations, unknown, findings, code) in parts {
        println!(
            "sweep {kind}: seeds {start}..{} per scenario@design, {runs} runs: {violations} violations, {unknown} unknown, {findings} findings (exit {code})",
            start + seeds
        );
    }
    let codes: Vec<i32> = parts.iter().map(|p| p.7).collect();
    let (violations, unknown): (u64, u64) =
        parts.iter().fold((0, 0), |a, p| (a.0 + p.4, a.1 + p.5));
    // A sweep asks one question: does a correct model ever fail a checker? A short range that
    // never reaches a scenario's `sometimes` event (a vacuous row, exit 4 for `run`) is not a
    // failure of the checkers; it is noted, never the exit code.
    if violations + unknown == 0 && codes.contains(&exit::LIVENESS) {
        println!("sweep: note: some rows were vacuous (a `sometimes` event never happened in so few seeds; see each summary.md); not counted as a failure");
    }
    if codes.contains(&exit::INTERRUPTED) {
        exit::INTERRUPTED
    } else if codes.contains(&exit::NONDETERMINISM) {
        exit::NONDETERMINISM
    } else if violations > 0 {
        exit::INVALID
    } else if unknown > 0 {
        exit::LIVENESS
    } else {
        exit::VALID
    }
}

/// Write `<out>/<kind>-rows.md` from campaign `s` (its folder `<out>/<kind>`): every
/// scenario@design row's runs, violations, unknowns and findings, under the heading
/// `# sweep <kind>: <range>`; print a line for each row with a violation or an unknown.
/// Returns the totals (runs, violations, unknown, findings). Also what `merge` writes for a
/// sweep's shards.
///
/// Errors: the page cannot be written (exit 2, naming it).
pub(super) fn write_rows(
    out: &Path,
    kind: &str,
    s: &acp_chaos::summary::Summary,
    range: &str,
) -> Result<(u64, u64, u64, u64), CliError> {
    let (mut runs, mut violations, mut unknown, mut findings) = (0, 0, 0, 0);
    let mut rows = String::from(
        "| row | runs | violations | unknown | findings |\n|---|---:|---:|---:|---:|\n",
    );
    for (row, cells) in &s.table {
        // Every property of a row ran on the same seeds: count a row's runs once.
        let n = cells.values().map(|t| t.seeds).max().unwrap_or(0);
        let v: u64 = cells.values().map(|t| t.violations).sum();
        let u: u64 = cells.values().map(|t| t.unknown).sum();
        let fi: u64 = cells.values().map(|t| t.findings).sum();
        runs += n;
        violations += v;
        unknown += u;
        findings += fi;
        rows.push_str(&format!("| {row} | {n} | {v} | {u} | {fi} |\n"));
        if v + u > 0 {
            println!(
                "sweep {kind} row {row}: {n} runs, {v} violations, {u} unknown (see {})",
                out.join(kind).join("summary.md").display()
            );
        }
    }
    // Beside the campaign's folder, not in it: a campaign refuses a folder holding what it
    // did not write, so a second sweep into the same --out would fail.
    let page = out.join(format!("{kind}-rows.md"));
    acp_chaos::folders::write_atomic(
        &page,
        format!("# sweep {kind}: {range}\n\n{rows}").as_bytes(),
    )
    .map_err(|e| CliError::usage(format!("{}: {e:#}", page.display())))?;
    Ok((runs, violations, unknown, findings))
}

/// `--base`: the number it names, and how to print it.
pub fn base_of(b: &str) -> Result<(u64, String), CliError> {
    match b {
        "random" => {
            let n = crate::wall_clock::entropy();
            Ok((n, format!("random {n}")))
        }
        "commit" => {
            let sha = std::env::var("GITHUB_SHA")
                .ok()
                .filter(|s| !s.trim().is_empty())
                .or_else(|| {
                    std::process::Command::new("git")
                        .args(["rev-parse", "HEAD"])
                        .output()
                        .ok()
                        .filter(|o| o.status.success())
                        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
                })
                .ok_or_else(|| {
                    CliError::usage(
                        "--base commit: no GITHUB_SHA and `git rev-parse HEAD` failed (run it in a git checkout, or give --base a number)".to_string(),
                    )
                })?;
            let hex: String = sha.chars().take(16).collect();
            let n = u64::from_str_radix(&hex, 16).map_err(|_| {
                CliError::usage(format!("--base commit: `{sha}` is not a commit hash"))
            })?;
            Ok((n, format!("commit {}", &sha[..sha.len().min(12)])))
        }
        n => n
            .trim()
            .parse::<u64>()
            .map(|v| (v, v.to_string()))
            .map_err(|_| {
                CliError::usage(format!(
                    "--base: `{n}` is not a number from 0 to 2^64 - 1, `commit` or `random`"
                ))
            }),
    }
}

/// The first seed of range `which` (1 scripted, 2 swarm) for `base`: a splitmix64 step of
/// both, placed in [2^32, 2^64 - seeds] so the range neither overlaps the seeds the tests and
/// the default campaign run nor overflows.
pub fn far_start(base: u64, which: u64, seeds: u64) -> u64 {
    let mut z = base ^ which.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    let low = 1u64 << 32;
    let span = u64::MAX - low - seeds;
    low + z % span
}
