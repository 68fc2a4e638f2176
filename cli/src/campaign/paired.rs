//! `acp-chaos bench --vs BINARY`: this build against another, measured in pairs.
//!
//! A shared machine's speed swings by half within minutes, so two figures taken a minute apart
//! compare the machine, not the builds. Here each round runs both builds' `bench` back to back,
//! as child processes with the same arguments, the order alternating round by round (this build
//! first in rounds 1, 3, …), and the figure is the median of the per-round ratios. Wall clocks
//! are read only inside the children's `bench`, outside any run.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Serialize;

/// One build's figures over the rounds, in round order.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Side {
    /// The binary that ran.
    pub binary: PathBuf,
    /// Seeds per second per worker thread, one per round.
    pub seeds_per_s_per_core: Vec<f64>,
    /// Simulated time over wall time per worker thread, one per round (`None` where the binary's
    /// `bench` does not report it).
    pub sim_to_real_per_core: Vec<Option<f64>>,
}

/// The comparison.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PairedReport {
    /// The `bench` arguments both builds ran with.
    pub args: Vec<String>,
    /// This build.
    pub this: Side,
    /// The other build (`--vs`).
    pub other: Side,
    /// Per round: this build's seeds/s over the other's.
    pub ratios: Vec<f64>,
    /// Median of `ratios`.
    pub ratio_median: f64,
    /// Smallest of `ratios`.
    pub ratio_min: f64,
    /// Largest of `ratios`.
    pub ratio_max: f64,
    /// Median of this build's seeds/s per core.
    pub this_median: f64,
    /// Median of the other build's seeds/s per core.
    pub other_median: f64,
}

/// Which build runs first in round `round` (from 0): this one in even rounds, the other in odd
/// ones, so a machine that slows or speeds up during a round favours neither build overall.
pub fn this_first(round: usize) -> bool {
    round.is_multiple_of(2)
}

/// The median of `xs` (the mean of the middle two for an even count); `NaN` when empty.
pub fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// The smallest and largest of `xs` (`(inf, -inf)` when empty).
pub fn spread(xs: &[f64]) -> (f64, f64) {
    xs.iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
            (lo.min(x), hi.max(x))
        })
}

/// One round's figures of one build: (seeds/s per core, simulated:real per core).
type Figures = (f64, Option<f64>);

/// Run `rounds` pairs of `this bench ARGS` and `other bench ARGS`, the order alternating,
/// calling `each(round, this, other)` after every round (for progress lines).
///
/// Errors: a binary that cannot be started, exits non-zero, or prints no `bench` JSON line
/// with `seeds_per_s`; the message names the binary and quotes its last stderr line.
pub fn compare(
    this: &Path,
    other: &Path,
    args: &[String],
    rounds: usize,
    mut each: impl FnMut(usize, Figures, Figures),
) -> anyhow::Result<PairedReport> {
    let mut a = Side {
        binary: this.to_path_buf(),
        seeds_per_s_per_core: Vec::new(),
        sim_to_real_per_core: Vec::new(),
    };
    let mut b = Side {
        binary: other.to_path_buf(),
        ..a.clone()
    };
    let mut ratios = Vec::new();
    for round in 0..rounds {
        let (x, y) = if this_first(round) {
            let x = bench_once(this, args)?;
            (x, bench_once(other, args)?)
        } else {
            let y = bench_once(other, args)?;
            (bench_once(this, args)?, y)
        };
        a.seeds_per_s_per_core.push(x.0);
        a.sim_to_real_per_core.push(x.1);
        b.seeds_per_s_per_core.push(y.0);
        b.sim_to_real_per_core.push(y.1);
        ratios.push(x.0 / y.0);
        each(round, x, y);
    }
    let (ratio_min, ratio_max) = spread(&ratios);
    Ok(PairedReport {
        args: args.to_vec(),
        ratio_median: median(&ratios),
        ratio_min,
        ratio_max,
        this_median: median(&a.seeds_per_s_per_core),
        other_median: median(&b.seeds_per_s_per_core),
        ratios,
        this: a,
        other: b,
    })
}

/// `binary bench ARGS`, read from the last line of its output that is a JSON object.
fn bench_once(binary: &Path, args: &[String]) -> anyhow::Result<Figures> {
    let shown = binary.display();
    let out = Command::new(binary)
        .arg("bench")
        .args(args)
        .output()
        .map_err(|e| anyhow::anyhow!("--vs: cannot run {shown}: {e}"))?;
    // The line that says why: a panic's message rather than Rust's `note:` after it.
    let last_err = || {
        let err = String::from_utf8_lossy(&out.stderr);
        let lines: Vec<&str> = err
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        let why = match lines.iter().rposition(|l| l.contains("panicked at")) {
            Some(i) => lines[i..]
                .iter()
                .take(2)
                .copied()
                .collect::<Vec<_>>()
                .join(" "),
            None => lines
                .iter()
                .rfind(|l| !l.starts_with("note:"))
                .map(|l| l.to_string())
                .unwrap_or_default(),
        };
        if why.is_empty() {
            why
        } else {
            format!(": {why}")
        }
    };
    if !out.status.success() {
        anyhow::bail!("`{shown} bench` failed ({}){}", out.status, last_err());
    }
    let f = figures(&String::from_utf8_lossy(&out.stdout)).ok_or_else(|| {
        anyhow::anyhow!("`{shown} bench` printed no JSON line with `seeds_per_s`")
    })?;
    // A ratio of zeros or of nonsense would shift the median quietly.
    if !(f.0.is_finite() && f.0 > 0.0) {
        anyhow::bail!(
            "`{shown} bench` reported {} seeds/s: not a positive number",
            f.0
        );
    }
    Ok(f)
}

/// The figures of a `bench` output: its last JSON line's per-core seeds/s (or, from a build
/// that predates per-core figures, `seeds_per_s` over `jobs`) and simulated:real per core.
pub fn figures(stdout: &str) -> Option<Figures> {
    let j: serde_json::Value = stdout.lines().rev().find_map(|l| {
        serde_json::from_str(l.trim())
            .ok()
            .filter(|v: &serde_json::Value| v.is_object())
    })?;
    let per_core = j["seeds_per_s_per_core"].as_f64().or_else(|| {
        let jobs = j["jobs"].as_f64().unwrap_or(1.0).max(1.0);
        j["seeds_per_s"].as_f64().map(|s| s / jobs)
    })?;
    Some((per_core, j["sim_to_real_per_core"].as_f64()))
}
