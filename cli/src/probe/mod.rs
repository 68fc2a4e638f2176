//! `acp-chaos probe`: drive a real ACP Agent process through black-box traces and judge it
//! with the simulator's checkers.
//!
//! The Agent runs as a process (newline-delimited JSON-RPC on stdio) in its own process
//! group, with a fresh temporary `HOME` per run (kept across the restarts of that run). A
//! trace ([`traces::TRACES`]) is a scripted Client session: prompts with an
//! `idempotencyKey`, retries, SIGKILL to the whole group at a swept delay, restarts,
//! `session/resume` with replay, malformed keys, cancels. Each run is recorded as a history in
//! the simulator's format (`history.jsonl`), the Agent's side inferred from what it sent
//! (`infer`), and judged by the same checkers ([`acp_chaos::checkers`]) plus the probe's own X4
//! resume-order check.
//!
//! **A real process is not deterministic.** There is no seed that replays a run: each trace
//! runs `--repeat` times, the report gives outcome rates per trace and property, the timing
//! of each failing run, and a command that runs that trace again (with the same kill delay)
//! to measure its rate. Times in a probe history are wall-clock ms since the run started.
//!
//! Every wait is bounded (`--timeout-ms`): a command that is not an ACP agent, exits at once
//! or never answers gets `unknown` with the reason, and exit 4.
//!
//! The folder holds four ideas:
//!
//! - **Probing an Agent**: this file (arguments, `main`, `--install`), `target` (what is
//!   probed), `start` (a run's fresh `HOME`, launch and mock model), [`calibrate`] (how long
//!   the Agent takes), [`traces`] and [`driver`] (a scripted trace against the process),
//!   [`realtime`] (a scenario's faults at the pipe, the model Client in real time), [`infer`]
//!   (the Agent's side read off what it wrote), [`runner`] (the runs and their verdicts: the
//!   library's checkers and `checkers::black_box`), `report` and `junit` (the report folder),
//!   [`line_reader`] (strict, bounded JSON-RPC lines), `tree` (a folder's files, for
//!   persistence), [`profile`] (pinned real agents).
//! - **Probing a Client**: `client` (`probe --client`, judged by
//!   `checkers::black_box::client_wire`).
//! - **Our models as processes**: [`stdio_agent`] (`acp-chaos agent`), with
//!   [`stdio_envelope`], `store_dir` and [`wire_log`]; [`stdio_client`] (`acp-chaos client`).
//! - **The mock model server** real agents talk to: [`mock_model`].
//!
//! Every command here returns an [`crate::error::Outcome`], as the other commands do.

pub mod calibrate;
mod client;
#[doc(hidden)]
pub mod driver;
#[doc(hidden)]
pub mod infer;
mod junit;
#[doc(hidden)]
pub mod line_reader;
pub mod mock_model;
pub mod profile;
#[doc(hidden)]
pub mod realtime;
mod report;
#[doc(hidden)]
pub mod runner;
mod start;
pub mod stdio_agent;
pub mod stdio_client;
#[doc(hidden)]
pub mod stdio_envelope;
mod store_dir;
mod target;
pub mod traces;
mod tree;
#[doc(hidden)]
pub mod wire_log;

pub use report::ProbeSummary;
pub use runner::{is_probe_history, judge_history};
pub use target::Target;

use std::path::{Path, PathBuf};

use clap::Args;

use acp_chaos::exit;

use crate::error::{CliError, Outcome};
use acp_chaos::models::Retention;

use runner::{prepare_out, probe_traces};

/// The properties a probe reports, in report order: those a black-box history decides, as
/// each checker's row says ([`acp_chaos::checkers::Checker::black_box`]; `docs/probe.md`).
pub fn properties() -> Vec<&'static str> {
    acp_chaos::checkers::black_box_properties()
        .into_iter()
        .map(|p| p.as_str())
        .collect()
}

/// `acp-chaos probe` arguments.
#[derive(Args, Debug, Clone)]
pub struct ProbeArgs {
    /// A built-in profile instead of `-- COMMAND`: our models (`acp-chaos-stored`,
    /// `acp-chaos-in-memory`, `acp-chaos-adapter`) or an installed real agent (`codex-acp`,
    /// `claude-agent-acp`, `opencode`), run against a mock model server.
    #[arg(long)]
    pub profile: Option<String>,
    /// Install a real-agent profile (exact npm versions, into the cache folder) and exit.
    #[arg(long, value_name = "PROFILE")]
    pub install: Option<String>,
    /// A real agent's mock model server waits this long in each turn's stream (so a kill
    /// can land mid-turn and prompts queue behind a running turn).
    #[arg(long, default_value_t = 0)]
    pub mock_delay_ms: u64,
    /// Runs per trace (real processes are not deterministic: the report gives rates).
    #[arg(long, default_value_t = 3)]
    pub repeat: u32,
    /// Only these traces (repeatable; default: all).
    #[arg(long = "trace")]
    pub traces: Vec<String>,
    /// Run this scenario against the Agent instead of the traces (repeatable): the model
    /// Client plays it in real time on the Agent's stdio, with the scenario's frame faults,
    /// kills and Client restarts injected at the pipe (the conformance kit).
    #[arg(long = "scenario", value_name = "NAME")]
    pub scenarios: Vec<String>,
    /// A suite of scenarios: `conformance` (the RFD's `rfd-*` traces and the field cases
    /// that run against a black box; the others are listed with the reason they cannot).
    #[arg(long, value_name = "SUITE")]
    pub suite: Option<String>,
    /// Folder of scenario files for `--scenario` and `--suite`.
    /// (Default: `./scenarios` when there is one, else the built-in scenarios.)
    #[arg(long)]
    pub scenarios_dir: Option<PathBuf>,
    /// A scenario's millisecond lasts this many real ones (for agents slower than the
    /// scenario's timeouts assume). Default: chosen from the agent's measured `initialize`
    /// latency, so the model Client waits at least three times that long for it.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub time_scale: Option<u64>,
    /// Bound of every wait for the Agent, in ms (default 10,000; a real agent's profile
    /// its start-up time, 30 s or more).
    #[arg(long)]
    pub timeout_ms: Option<u64>,
    /// Pin the kill delay of the traces with a kill, ms (default: swept over the runs; at
    /// most 600,000).
    #[arg(long, value_parser = clap::value_parser!(u64).range(0..=600_000))]
    pub delay_ms: Option<u64>,
    /// Pin the kill point of the traces that have it (default: every point of a kill
    /// trace; `docs/probe.md` names them).
    #[arg(long, value_name = "POINT")]
    pub kill_point: Option<String>,
    /// The Agent's declared retention: `durable` holds it to D1 (P11), `process` (default
    /// for a command) lets a restart lose messages.
    #[arg(long)]
    pub retention: Option<String>,
    /// The Agent keeps its sessions in memory only: it does not offer `session/resume` across
    /// its restarts, so a message gone after a restart is no A10 violation (by default an
    /// acknowledged message a restart lost is one, whatever `--retention` says).
    #[arg(long)]
    pub no_resume_after_restart: bool,
    /// Report folder (default `reports/probe-<name>`).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The Agent's name in the report folder and the output.
    #[arg(long)]
    pub name: Option<String>,
    /// Extra environment for the Agent, `KEY=VALUE` (repeatable; `{home}` is replaced).
    #[arg(long = "env")]
    pub env: Vec<String>,
    /// Keep every run's folder (history, verdicts, stderr), not only the failing ones.
    #[arg(long)]
    pub keep_runs: bool,
    /// Seed of the keys and markers (runs differ by their index).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Probe a Client instead of an Agent: `-- CLIENT_CMD ... {agent} ...` starts the Client,
    /// which starts our model Agent as `{agent}`; the Agent logs the wire and dies at each
    /// trial's point, and the Client rules the wire shows are judged (see `docs/probe.md`).
    #[arg(long)]
    pub client: bool,
    /// With --client: the served Agent's design (stored, in-memory, adapter).
    #[arg(long, default_value = "stored")]
    pub served_design: String,
    /// With --client: serve an Agent mutant instead of the correct model.
    #[arg(long)]
    pub served_mutant: Option<String>,
    /// The Agent command after `--`; `{home}` in an argument is the run's temporary home.
    /// With --client, the Client command, with `{agent}` where it takes its Agent's command.
    #[arg(last = true)]
    pub command: Vec<String>,
}

impl ProbeArgs {
    /// The bound on every wait for the Agent (`--timeout-ms`, default 10 s).
    pub(super) fn wait_ms(&self) -> u64 {
        self.timeout_ms.unwrap_or(10_000)
    }

    /// The time scale scenarios run at (`--time-scale`, 1 until a calibration chose one).
    pub(super) fn scale(&self) -> u64 {
        self.time_scale.unwrap_or(1)
    }
}

/// Run `acp-chaos probe`: the exit code, or a usage error (exit 2) the dispatch prints, as
/// every command's.
pub fn main(a: &ProbeArgs) -> Outcome {
    on_signals();
    if let Some(name) = &a.install {
        return install(name);
    }
    if a.client {
        return client::main(a);
    }
    let target = target_of(a).map_err(CliError::usage)?;
    if a.repeat == 0 {
        return Err(CliError::usage("--repeat must be at least 1"));
    }
    let mut a = a.clone();
    match (a.timeout_ms, target.real) {
        (Some(0), _) => return Err(CliError::usage("--timeout-ms must be at least 1")),
        (None, Some(p)) => {
            a.timeout_ms = Some(crate::probe::profile::startup_timeout(p).as_millis() as u64)
        }
        _ => {}
    }
    let a = &a;
    let (selected, skipped) = select(a).map_err(CliError::usage)?;
    check_kill_point(a, &selected).map_err(CliError::usage)?;
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| Path::new("reports").join(format!("probe-{}", target.name)));
    prepare_out(&out)?;
    Ok(probe_traces(a, &target, &selected, skipped, &out)?)
}

/// SIGPIPE ignored, and Ctrl-C takes the Agent's process group down with the probe.
fn on_signals() {
    // A write to an Agent that died must be an error we handle, not a signal that ends us.
    // SAFETY: setting a signal disposition; no handler code runs.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
    // Ctrl-C: take the Agent's process group down with us (it is not in our foreground group).
    let _ = ctrlc::set_handler(|| {
        let g = driver::RUNNING_GROUP.load(std::sync::atomic::Ordering::SeqCst);
        if g > 0 {
            // SAFETY: kill(2) on the process group the probe created.
            unsafe {
                libc::kill(-g, libc::SIGKILL);
            }
        }
        eprintln!("interrupted: the agent's process group was killed; no report written");
        std::process::exit(exit::INTERRUPTED);
    });
}

/// The Agent under test: a built-in profile or the command, with `--name`, `--retention`,
/// `--no-resume-after-restart` and `--env` applied.
fn target_of(a: &ProbeArgs) -> Result<Target, String> {
    let mut target = match (&a.profile, a.command.is_empty()) {
        (Some(_), false) => return Err("give either --profile NAME or -- COMMAND, not both".into()),
        (None, true) => {
            return Err("no agent to probe: give -- COMMAND ARGS... or --profile NAME".into())
        }
        (Some(p), true) => Target::builtin(p)?,
        (None, false) => Target::command(&a.command, a.name.as_deref()),
    };
    if let Some(n) = &a.name {
        target.name = n.clone();
    }
    match a.retention.as_deref() {
        None => {}
        Some("durable") => target.retention = Retention::Durable,
        Some("process") => target.retention = Retention::Process,
        Some(r) => return Err(format!("--retention `{r}`: durable or process")),
    }
    if a.no_resume_after_restart {
        target.resumes_after_restart = false;
    }
    for e in &a.env {
        match e.split_once('=') {
            Some((k, v)) if !k.is_empty() => target.env.push((k.to_string(), v.to_string())),
            _ => return Err(format!("--env `{e}`: expected KEY=VALUE")),
        }
    }
    Ok(target)
}

/// `--kill-point P`: some selected trace must kill there (else the points there are).
fn check_kill_point(a: &ProbeArgs, selected: &[Item]) -> Result<(), String> {
    let Some(p) = &a.kill_point else {
        return Ok(());
    };
    let has = |i: &Item| matches!(i, Item::Trace(t) if t.points.contains(&p.as_str()));
    if selected.iter().any(has) {
        return Ok(());
    }
    let mut known: Vec<&str> = Vec::new();
    for t in traces::TRACES {
        for q in t.points {
            if !known.contains(q) {
                known.push(q);
            }
        }
    }
    Err(format!(
        "--kill-point `{p}`: no selected trace kills there (points: {})",
        known.join(", ")
    ))
}

/// The items to run, and the suite's scenarios left out with the reason.
type Selection = (Vec<Item>, Vec<(String, String)>);

/// What to run: the traces named (default all), or the scenarios of `--scenario` and
/// `--suite`, and the suite's scenarios that cannot run black-box, with the reason.
fn select(a: &ProbeArgs) -> Result<Selection, String> {
    if a.scenarios.is_empty() && a.suite.is_none() {
        if a.traces.is_empty() {
            return Ok((traces::TRACES.iter().map(Item::Trace).collect(), Vec::new()));
        }
        let mut v = Vec::new();
        for t in &a.traces {
            match traces::find(t) {
                Some(x) => v.push(Item::Trace(x)),
                None => {
                    let names: Vec<&str> = traces::TRACES.iter().map(|t| t.name).collect();
                    return Err(format!("unknown trace `{t}` (known: {})", names.join(", ")));
                }
            }
        }
        return Ok((v, Vec::new()));
    }
    if !a.traces.is_empty() {
        return Err("give --trace, or --scenario/--suite, not both".into());
    }
    let dir = acp_chaos::scenario::find_dir(a.scenarios_dir.as_deref());
    let mut items: Vec<Item> = Vec::new();
    let mut skipped = Vec::new();
    for name in &a.scenarios {
        let sc = acp_chaos::scenario::resolve(&dir, name).map_err(|e| e.to_string())?;
        let plan =
            acp_chaos::plan::Plan::derive(&sc, a.seed, None, acp_chaos::models::Design::Stored);
        if let Some(why) = realtime::unsupported(&plan) {
            return Err(format!(
                "scenario `{}` cannot run against a process: {why}",
                sc.name
            ));
        }
        let name = format!("{}{}", SCENARIO, sc.name);
        if !items.iter().any(|i: &Item| i.name() == name) {
            items.push(Item::Scenario(Box::new(sc)));
        }
    }
    match a.suite.as_deref() {
        None => {}
        Some("conformance") => {
            let all = acp_chaos::scenario::load_dir(&dir).map_err(|e| e.to_string())?;
            for sc in all {
                if !(sc.name.starts_with("rfd-") || sc.name.starts_with("field-")) {
                    continue;
                }
                let plan = acp_chaos::plan::Plan::derive(
                    &sc,
                    a.seed,
                    None,
                    acp_chaos::models::Design::Stored,
                );
                let name = format!("{}{}", SCENARIO, sc.name);
                match realtime::unsupported(&plan) {
                    None if items.iter().any(|i| i.name() == name) => {}
                    None => items.push(Item::Scenario(Box::new(sc))),
                    Some(why) => skipped.push((sc.name.clone(), why)),
                }
            }
        }
        Some(s) => return Err(format!("--suite `{s}`: the only suite is `conformance`")),
    }
    Ok((items, skipped))
}

/// Items named `scenario:NAME` are scenarios run by the conformance kit.
pub const SCENARIO: &str = "scenario:";

/// One thing a probe plays against the Agent.
pub enum Item {
    /// A scripted trace.
    Trace(&'static traces::Trace),
    /// A scenario, played by the model Client in real time (the conformance kit).
    Scenario(Box<acp_chaos::scenario::Scenario>),
}

impl Item {
    /// Its name in the report: the trace's, or `scenario:NAME`.
    pub fn name(&self) -> String {
        match self {
            Item::Trace(t) => t.name.to_string(),
            Item::Scenario(s) => format!("{}{}", SCENARIO, s.name),
        }
    }
}

/// `--install NAME`: npm install of a real-agent profile into the cache folder.
fn install(name: &str) -> Outcome {
    let p = crate::probe::profile::get(name).map_err(CliError::usage)?;
    println!(
        "installing {} ({}) into {}",
        p.name,
        p.specs(),
        p.dir().display()
    );
    match crate::probe::profile::install(p) {
        Ok(r) => {
            println!(
                "{} {} in {}: {:.0} MB{}",
                r.profile,
                if r.already {
                    "was installed already"
                } else {
                    "installed"
                },
                r.dir.display(),
                r.bytes as f64 / 1e6,
                if r.already {
                    String::new()
                } else {
                    format!(", {:.0} s", r.seconds)
                }
            );
            Ok(exit::VALID)
        }
        Err(e) => Err(CliError {
            code: e.exit_code(),
            message: e.to_string(),
        }),
    }
}
