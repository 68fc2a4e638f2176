//! The fuzz harness: seeded rounds of bad input through every door, reproducible from the
//! seed they print (`acp-chaos fuzz`; `cargo test` runs a short fixed-seed round).
//!
//! - `files.rs`: mutated scenario, schedule and regression files through their loaders (no
//!   panic; every refusal names its file; an unknown field is never accepted), and some of
//!   the plans that load run in the simulator;
//! - `argv.rs`: arbitrary argument vectors through the CLI parser, and arbitrary
//!   `ACP_CHAOS_*` values through the binary;
//! - `frames.rs`: arbitrary frames to the stdio Agent (`acp-chaos agent` as a child process):
//!   no panic, no hang, every line it writes well-formed JSON-RPC; and the same kind of frames
//!   to the sans-IO model Agent of every design in process (the cluster's node too): no panic,
//!   every line it writes JSON.
//!
//! Each case draws from its own stream of the seed ([`acp_chaos::plan::stream`], ChaCha), so a
//! failure's case reruns alone; every failure carries its input and the command that
//! reproduces it.

mod argv;
mod files;
mod frames;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;

/// Parse a command line (program name first) without running it: `Err` is a refusal (its
/// message), `Ok` an accepted line. [`crate::commands::parse_from`] in `acp-chaos fuzz`.
pub type Parse = fn(&[OsString]) -> Result<(), String>;

/// One round's settings.
#[derive(Debug, Clone)]
pub struct Round {
    /// The seed every case draws from.
    pub seed: u64,
    /// Mutated files (a third each of scenario, schedule and regression files).
    pub files: u64,
    /// Run every Nth plan that loads in the simulator (0: none).
    pub run_every: u64,
    /// Argument vectors through the parser.
    pub argv: u64,
    /// `ACP_CHAOS_*` environments through the binary (one child process each).
    pub env: u64,
    /// Frames to the stdio Agent.
    pub frames: u64,
    /// Run only the case with this number (in each area asked for).
    pub case: Option<u64>,
    /// The `acp-chaos` binary (for the stdio Agent and the environment cases).
    pub bin: PathBuf,
    /// The scenarios folder: the seed corpus (its `*.toml` and `regressions/*.toml`).
    pub scenarios: PathBuf,
    /// The command-line vocabulary: every subcommand and flag.
    pub command: clap::Command,
    /// The parser under test.
    pub parse: Parse,
}

/// What one input did wrong.
#[derive(Debug, Clone)]
pub struct Failure {
    /// `files`, `argv`, `env` or `frames`.
    pub area: &'static str,
    /// The case number (a frame batch's number for `frames`).
    pub case: u64,
    /// The input, as text (bytes that are not UTF-8 escaped).
    pub input: String,
    /// What went wrong: a panic's message, a hang, a refusal that names no file.
    pub problem: String,
}

/// A round's outcome: counts by what happened, and the failures.
#[derive(Debug, Default)]
pub struct Report {
    /// `area.what` → count (e.g. `files.schedule.refused`).
    pub counts: BTreeMap<String, u64>,
    /// Every failing input.
    pub failures: Vec<Failure>,
}

impl Report {
    fn count(&mut self, key: &str) {
        *self.counts.entry(key.to_string()).or_default() += 1;
    }

    fn fail(&mut self, area: &'static str, case: u64, input: String, problem: String) {
        self.failures.push(Failure {
            area,
            case,
            input,
            problem,
        });
    }
}

/// Run a round: the files, argument vectors, environments and frames it asks for.
///
/// Errors: the seed corpus cannot be read, or the stdio Agent cannot be started.
pub fn run(r: &Round) -> anyhow::Result<Report> {
    let mut report = Report::default();
    files::round(r, &mut report)?;
    argv::round(r, &mut report);
    argv::env_round(r, &mut report)?;
    frames::round(r, &mut report)?;
    frames::model_round(r, &mut report);
    Ok(report)
}

/// The command that reruns one failure's case (`--case`; frames rerun every batch up to it,
/// since the Agent keeps state).
pub fn repro(r: &Round, f: &Failure) -> String {
    let only = |files: u64, argv: u64, env: u64, frames: u64| {
        format!(
            "acp-chaos fuzz --seed {} --files {files} --argv {argv} --env {env} --frames {frames}",
            r.seed
        )
    };
    match f.area {
        "files" => format!(
            "{} --run-every {} --case {}",
            only(r.files, 0, 0, 0),
            r.run_every,
            f.case
        ),
        "argv" => format!("{} --case {}", only(0, r.argv, 0, 0), f.case),
        "env" => format!("{} --case {}", only(0, 0, r.env, 0), f.case),
        _ => only(0, 0, 0, (f.case + 1) * frames::BATCH),
    }
}

thread_local! {
    /// While set, a panic on this thread is recorded here instead of printed.
    static CAUGHT: RefCell<Option<Option<String>>> = const { RefCell::new(None) };
}

/// Run `f`, turning a panic into `Err(message)` (printed nowhere: the round reports it).
fn catch<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let quiet = CAUGHT.with(|c| {
                let mut c = c.borrow_mut();
                match c.as_mut() {
                    Some(slot) => {
                        *slot = Some(info.to_string());
                        true
                    }
                    None => false,
                }
            });
            if !quiet {
                previous(info);
            }
        }));
    });
    CAUGHT.with(|c| *c.borrow_mut() = Some(None));
    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    let message = CAUGHT.with(|c| c.borrow_mut().take().flatten());
    out.map_err(|_| message.unwrap_or_else(|| "panicked".into()))
}

/// Whether this case runs (`--case` picks one).
fn picked(r: &Round, case: u64) -> bool {
    r.case.is_none_or(|c| c == case)
}
