//! The command line. `acp-chaos` with no subcommand runs the default campaign.
//!
//! Exit codes (every command): 0 valid (findings allowed), 1 invalid, 2 usage or input error,
//! 3 nondeterminism, 4 liveness failure, unknown verdict or vacuous campaign.

//!
//! One file per command (`run.rs`, `replay.rs`, `list.rs`, `check.rs`, `bench.rs`,
//! `mutants.rs`, `shrink.rs`, `merge.rs`, `audit.rs`, `matrix.rs`, `sweep.rs`, `findings.rs`, `fuzz.rs`; `acp-chaos agent`,
//! `acp-chaos client` and `acp-chaos probe` take their arguments from [`crate::probe`]), each with its arguments and
//! an `exec` returning the exit code or a `CliError` that carries one; `args.rs` holds what
//! several commands share; `env.rs` how the `ACP_CHAOS_*` variables are read.

use std::path::Path;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

mod args;
mod audit;
mod bench;
mod check;
mod env;
mod explore;
mod findings;
mod fuzz;
#[doc(hidden)]
pub mod github;
mod list;
mod matrix;
mod merge;
mod mutants;
mod output;
mod replay;
mod run;
mod shrink;
#[doc(hidden)]
pub mod sweep;
mod writable;

pub use crate::error::{usage, CliError, Outcome};
pub use list::ListSection;

use acp_chaos::exit;

/// Deterministic fault-injection simulator for ACP v2 (idempotencyKey, retries, no silent drop).
#[derive(Parser, Debug)]
#[command(name = "acp-chaos", version, about, long_about = None, after_help = after_help(), allow_negative_numbers = true)]
pub struct Cli {
    #[command(subcommand)]
    cmd: Option<Cmd>,
    #[command(flatten)]
    run: run::RunArgs,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Run a campaign: scenarios × seeds (the default command).
    Run(run::RunArgs),
    /// Re-run one (scenario, seed) and print its plan, history and verdicts.
    Replay(replay::ReplayArgs),
    /// List scenarios, designs, clients, policies, transports, mutants, faults, properties and
    /// `sometimes` events (or one of them: `acp-chaos list faults`).
    List(list::ListArgs),
    /// Re-run every checker on a stored history (a run folder or a history.jsonl), or gate on
    /// a campaign's summary.json (failing groups, one repro each; --github for GitHub Actions).
    Check(check::CheckArgs),
    /// Measure seeds per second and the overhead over a bare turmoil run.
    Bench(bench::BenchArgs),
    /// The mutant scoreboard: each mutant's median runs of one design to the first catch (the
    /// fewest over its designs) under the swarm alone (no scripted schedule), under the uniform
    /// mix, and their ratio, and under exhaustive, lineage and guided exploration; the mutant ×
    /// checker view; and the correct models on the same seeds. Exits 1 when the swarm misses, within
    /// `--seeds`, a mutant it reaches within 40 seeds (rare-window mutants, pinned by their own
    /// scenarios, are listed instead) or a correct model has a violation.
    Mutants(mutants::MutantsArgs),
    /// Shrink a failing run to a 1-minimal schedule (ddmin over its faults, submissions and raw
    /// probes, at fixed latency) and write it as a schedule file for `replay --schedule`.
    Shrink(shrink::ShrinkArgs),
    /// Explore a scenario's fault-free trace exhaustively: every schedule of at most
    /// `--faults` faults over every place a fault can land (frames of every method in both
    /// directions, protocol points, submissions), equivalent placements run once; ends with a
    /// certificate or the violating schedules.
    Explore(explore::ExploreArgs),
    /// Merge the report folders of a campaign's shards (`run --shard K/N`) into one report,
    /// the same as one unsharded run of the same seeds would write.
    Merge(merge::MergeArgs),
    /// Findings on the spec: what the correct models do where the rules leave a choice or
    /// say nothing, measured over seeded runs, written as a page (figures, the shortest
    /// witness of each, a suggested wording): `reports/findings/spec.md`, or the committed
    /// `docs/findings/spec.md` with `--out`.
    Findings(findings::FindingsArgs),
    /// The false-positive sweep: every scenario under every design it lists, on the correct
    /// models, on seeds far from the ones the tests and the default campaign run (scripted
    /// scenarios from 10,000, swarm scenarios from 100,000). Exits 1 on any violation.
    Sweep(sweep::SweepArgs),
    /// A seeded round of bad input through every door: mutated scenario, schedule and
    /// regression files, command lines, `ACP_CHAOS_*` values, frames to the stdio Agent.
    /// Exits 1 on a panic, a hang or a refusal that names no file, printing the input and
    /// the command that reproduces it.
    Fuzz(fuzz::FuzzArgs),
    /// Print every method's retry class and what sending it twice does to the stored Agent.
    Audit(audit::AuditArgs),
    /// The retry-class matrix: every method x fault x Client policy over N seeds on the model
    /// Agents (sans-IO), outcome counts per cell and whether each retry class holds. Exits 1
    /// when a stated class is refuted. With --seed, --method, --fault and --policy: one run,
    /// every frame in and out.
    Matrix(matrix::MatrixArgs),
    /// Serve a model Agent (stored, in-memory, adapter; a mutant with --mutant) as a real
    /// process: ACP v2 over stdio, its sessions in --store DIR.
    Agent(crate::probe::stdio_agent::AgentArgs),
    /// Run the model Client (a Client mutant with --mutant) as a real process: it starts
    /// `-- AGENT_CMD` on stdio, submits prompts, and restarts, resumes and resends when the
    /// Agent ends (the Client `probe --client` tests first).
    Client(crate::probe::stdio_client::ClientArgs),
    /// Probe a real ACP Agent process (`-- COMMAND ARGS...` or --profile) through black-box
    /// traces, N runs each, and judge every run with the checkers: outcome rates, not seeds.
    Probe(crate::probe::ProbeArgs),
}

/// What `--help` ends with: the Agent designs and the exit codes ([`exit::TABLE`]).
fn after_help() -> String {
    let designs: Vec<&str> = acp_chaos::models::Design::ALL
        .iter()
        .map(|d| d.as_str())
        .collect();
    let mut s = format!(
        "Agent designs (--agent): {}. Scenarios: ./scenarios when there is one, else the built-in set (--scenarios DIR).\n\nExit codes:\n",
        designs.join(", ")
    );
    for (code, meaning) in exit::TABLE {
        s.push_str(&format!("  {code:>3}  {meaning}\n"));
    }
    s.push_str("  When several apply: 3, then 1, then 4, then 130.\n");
    s.push_str("\nDocs: docs/tutorial.md, docs/cli.md (every command and variable).");
    s
}

/// Parse the process arguments and run; returns the exit code.
pub fn main() -> i32 {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .try_init();
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let cli = match parse_from(&args) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            if let Some(note) = env::blame(&Cli::command(), &e, &args) {
                eprintln!("note: {note}");
            }
            return if e.use_stderr() {
                exit::USAGE
            } else {
                exit::VALID
            };
        }
    };
    match dispatch(cli) {
        Ok(code) => code,
        Err(e) => {
            // A command the message quotes (`acp-chaos list`) reads as the user can run it.
            eprintln!("error: {}", crate::launch::runnable_in(&e.to_string()));
            e.code
        }
    }
}

/// Parse a command line (the program name first) as `acp-chaos` does: an empty
/// `ACP_CHAOS_*` variable is unset, and the default command's variables are read only when
/// no command is named.
///
/// Errors: clap's, for a bad flag, a bad value or a bad variable's value.
pub fn parse_from(args: &[std::ffi::OsString]) -> Result<Cli, clap::Error> {
    let m = env::matches(Cli::command(), args)?;
    Cli::from_arg_matches(&m)
}

/// Run parsed arguments (tests call this with [`parse_from`]).
pub fn dispatch(cli: Cli) -> Outcome {
    match cli.cmd {
        None => run::exec(&cli.run),
        Some(Cmd::Run(a)) => run::exec(&a),
        Some(Cmd::Replay(a)) => replay::exec(&a).map(|(code, _)| code),
        Some(Cmd::List(a)) => list::exec(&a),
        Some(Cmd::Check(a)) => check::exec(&a),
        Some(Cmd::Bench(a)) => bench::exec(&a),
        Some(Cmd::Mutants(a)) => mutants::exec(&a),
        Some(Cmd::Shrink(a)) => shrink::exec(&a),
        Some(Cmd::Matrix(a)) => matrix::exec(&a),
        Some(Cmd::Merge(a)) => merge::exec(&a),
        Some(Cmd::Explore(a)) => explore::exec(&a),
        Some(Cmd::Audit(a)) => audit::exec(&a),
        Some(Cmd::Sweep(a)) => sweep::exec(&a),
        Some(Cmd::Findings(a)) => findings::exec(&a),
        Some(Cmd::Fuzz(a)) => fuzz::exec(&a),
        Some(Cmd::Agent(a)) => crate::probe::stdio_agent::main(&a),
        Some(Cmd::Client(a)) => crate::probe::stdio_client::main(&a),
        Some(Cmd::Probe(a)) => crate::probe::main(&a),
    }
}

/// Parse and run a repro line such as `acp-chaos replay S --seed N --mutant M`; returns the
/// exit code and the history hash. Used by tests to round-trip printed repro lines.
pub fn replay_line(line: &str, scenarios: &Path) -> anyhow::Result<(i32, String)> {
    let mut args: Vec<String> = line.split_whitespace().map(String::from).collect();
    args.push("--scenarios".into());
    args.push(scenarios.display().to_string());
    let args: Vec<std::ffi::OsString> = args.into_iter().map(Into::into).collect();
    let cli = parse_from(&args)?;
    match cli.cmd {
        Some(Cmd::Replay(a)) => Ok(replay::exec(&a)?),
        _ => anyhow::bail!("not a replay line: {line}"),
    }
}
