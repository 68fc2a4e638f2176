//! `acp-chaos fuzz`: a seeded round of bad input through every door ([`crate::fuzz`]):
//! mutated scenario, schedule and regression files, command lines, `ACP_CHAOS_*` values and
//! frames to the stdio Agent. Exit 0 when nothing panicked, hung or was refused without
//! naming its file, else 1 with each failing input and the command that reproduces it.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, CommandFactory};

use super::args::{scenarios_dir, DirArgs};
use super::{CliError, Outcome};
use crate::{fuzz, wall_clock};
use acp_chaos::exit;

#[derive(Args, Debug, Clone)]
pub(super) struct FuzzArgs {
    /// The round's seed (every case draws from its own stream of it).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Mutated scenario, schedule and regression files (a third each).
    #[arg(long, default_value_t = 3_000)]
    files: u64,
    /// Run every Nth file that loads in the simulator (0: none).
    #[arg(long, default_value_t = 25)]
    run_every: u64,
    /// Command lines through the parser.
    #[arg(long, default_value_t = 3_000)]
    argv: u64,
    /// `ACP_CHAOS_*` environments through the binary (two child processes each).
    #[arg(long, default_value_t = 50)]
    env: u64,
    /// Frames to the stdio Agent (`acp-chaos agent`, a child process).
    #[arg(long, default_value_t = 32_000)]
    frames: u64,
    /// Check only this case of each area (a failure's repro line names it).
    #[arg(long)]
    case: Option<u64>,
    #[command(flatten)]
    dir: DirArgs,
}

fn parse(args: &[OsString]) -> Result<(), String> {
    super::parse_from(args)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

pub(super) fn exec(a: &FuzzArgs) -> Outcome {
    let bin: PathBuf = std::env::current_exe()
        .map_err(|e| CliError::usage(format!("cannot find this binary: {e}")))?;
    let round = fuzz::Round {
        seed: a.seed,
        files: a.files,
        run_every: a.run_every,
        argv: a.argv,
        env: a.env,
        frames: a.frames,
        case: a.case,
        bin,
        scenarios: scenarios_dir(&a.dir),
        command: super::Cli::command(),
        parse,
    };
    println!(
        "acp-chaos fuzz --seed {}: {} files (every {}th that loads run), {} command lines, {} environments, {} frames",
        a.seed, a.files, a.run_every, a.argv, a.env, a.frames
    );
    let start = wall_clock::now();
    let report = fuzz::run(&round)?;
    for (k, v) in &report.counts {
        println!("  {k}: {v}");
    }
    for f in &report.failures {
        println!(
            "FAIL fuzz {} case {}: {}\n  input:\n{}\n  repro: {}",
            f.area,
            f.case,
            f.problem,
            f.input
                .lines()
                .map(|l| format!("    {l}"))
                .collect::<Vec<_>>()
                .join("\n"),
            fuzz::repro(&round, f)
        );
    }
    println!(
        "fuzz: {} failures in {:.1} s",
        report.failures.len(),
        start.elapsed().as_secs_f64()
    );
    Ok(if report.failures.is_empty() {
        exit::VALID
    } else {
        exit::INVALID
    })
}
