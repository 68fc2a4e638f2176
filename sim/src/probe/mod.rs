//! `acp-chaos probe`: drive a real ACP Agent process through black-box traces and judge it
//! with the simulator's checkers.
//!
//! The Agent runs as a process (newline-delimited JSON-RPC on stdio) in its own process
//! group, with a fresh temporary `HOME` per run (kept across the restarts of that run). A
//! trace ([`traces::TRACES`]) is a scripted Client session: prompts with an
//! `idempotencyKey`, retries, SIGKILL to the whole group at a swept delay, restarts,
//! `session/resume` with replay, malformed keys, cancels. Each run is recorded as a history in
//! the simulator's format (`history.jsonl`), the Agent's side inferred from what it sent
//! ([`infer`]), and judged by the same checkers ([`crate::check`]) plus the probe's own X4
//! resume-order check.
//!
//! **A real process is not deterministic.** There is no seed that replays a run: each trace
//! runs `--repeat` times, the report gives outcome rates per trace and property, the timing
//! of each failing run, and a command that runs that trace again (with the same kill delay)
//! to measure its rate. Times in a probe history are wall-clock ms since the run started.
//!
//! Every wait is bounded (`--timeout-ms`): a command that is not an ACP agent, exits at once
//! or never answers gets `unknown` with the reason, and exit 4.

pub mod driver;
pub mod infer;
pub mod mock_model;
pub mod profile;
pub mod stdio_agent;
pub mod traces;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use clap::Args;
use serde::Serialize;
use serde_json::json;

use crate::campaign::write_atomic;
use crate::checkers::{self, Status, Verdict};
use crate::exit;
use crate::history::History;
use crate::models::{Party, Retention};

use driver::{Driver, Launch};

/// The properties a probe reports: those a black-box history decides (see the README).
pub const PROPERTIES: &[&str] = &["P1", "P2", "P3", "P4", "P5", "P6", "P7", "P8", "P11", "X4"];

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
    /// Bound of every wait for the Agent, in ms (default 10,000; a real agent's profile
    /// its start-up time, 30 s or more).
    #[arg(long)]
    pub timeout_ms: Option<u64>,
    /// Pin the kill delay of the traces with a kill (default: swept over the runs).
    #[arg(long)]
    pub delay_ms: Option<u64>,
    /// The Agent's declared retention: `durable` holds it to D1 (P11), `process` (default
    /// for a command) lets a restart lose messages.
    #[arg(long)]
    pub retention: Option<String>,
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
    /// The Agent command after `--`; `{home}` in an argument is the run's temporary home.
    #[arg(last = true)]
    pub command: Vec<String>,
}

/// What the probe runs against, and how to launch it.
#[derive(Debug, Clone, Serialize)]
pub struct Target {
    /// Name (report folder `reports/probe-<name>`).
    pub name: String,
    /// Program and arguments; `{home}` is the run's temporary home, `{cwd}` its workspace.
    /// For a real-agent profile, the launch comes from [`crate::probe::profile::launch`] instead.
    pub command: Vec<String>,
    /// Environment on top of `HOME` (same placeholders).
    pub env: Vec<(String, String)>,
    /// The retention the Agent declares.
    pub retention: Retention,
    /// A real agent ([`crate::probe::profile`]): each run gets its own mock model server
    /// ([`crate::probe::mock_model`]) and the profile's launch (cleared environment, config files
    /// pointing at the mock) with the run's temporary home.
    pub real: Option<&'static crate::probe::profile::Profile>,
    /// Files written under the temporary home before the first start: (relative path,
    /// contents with placeholders).
    pub files: Vec<(String, String)>,
}

/// Our own model Agents as processes (`acp-chaos agent`): built-in profile names.
pub const OURS: &[(&str, &str)] = &[
    ("acp-chaos-stored", "stored"),
    ("acp-chaos-in-memory", "in-memory"),
    ("acp-chaos-adapter", "adapter"),
];

impl Target {
    /// A built-in profile: our own model Agents as processes (`acp-chaos agent`), or a real
    /// agent of [`crate::probe::profile`] (it must be installed: `acp-chaos probe --install NAME`).
    pub fn builtin(name: &str) -> Result<Target, String> {
        let Some((_, design)) = OURS.iter().find(|(n, _)| *n == name) else {
            let real = crate::probe::profile::get(name).map_err(|_| {
                let ours: Vec<&str> = OURS.iter().map(|(n, _)| *n).collect();
                format!(
                    "unknown profile `{name}` (ours: {}; real agents: {})",
                    ours.join(", "),
                    crate::probe::profile::names().join(", ")
                )
            })?;
            crate::probe::profile::require_installed(real).map_err(|e| e.to_string())?;
            return Ok(Target {
                name: name.to_string(),
                command: Vec::new(),
                env: Vec::new(),
                retention: Retention::Process,
                real: Some(real),
                files: Vec::new(),
            });
        };
        let exe = std::env::current_exe()
            .map_err(|e| format!("cannot find the acp-chaos binary: {e}"))?;
        Ok(Target {
            name: name.to_string(),
            command: vec![
                exe.display().to_string(),
                "agent".into(),
                "--design".into(),
                design.to_string(),
                "--store".into(),
                "{home}/store".into(),
            ],
            env: Vec::new(),
            retention: if *design == "stored" {
                Retention::Durable
            } else {
                Retention::Process
            },
            real: None,
            files: Vec::new(),
        })
    }

    /// A target for `-- COMMAND ARGS...`. A relative program path (`./agent`,
    /// `target/release/x`) is made absolute: the Agent runs in the run's workspace folder.
    pub fn command(argv: &[String], name: Option<&str>) -> Target {
        let mut command = argv.to_vec();
        if let Some(p) = command.first_mut() {
            if p.contains('/') && Path::new(p.as_str()).is_relative() {
                if let Ok(cwd) = std::env::current_dir() {
                    *p = cwd.join(p.as_str()).display().to_string();
                }
            }
        }
        Target {
            name: name.map(str::to_string).unwrap_or_else(|| name_of(argv)),
            command,
            env: Vec::new(),
            retention: Retention::Process,
            real: None,
            files: Vec::new(),
        }
    }

    /// What the output shows as the command.
    fn shown(&self) -> String {
        match self.real {
            Some(p) => format!(
                "profile {} ({}; {}, against a mock model server per run)",
                p.name,
                p.specs(),
                p.description
            ),
            None => self
                .command
                .iter()
                .map(|w| shell_quote(w))
                .collect::<Vec<_>>()
                .join(" "),
        }
    }
}

/// A folder-safe name from a command: the program's file name and the plain words after it
/// (`acp-chaos agent --design stored ...` → `acp-chaos-agent-stored`).
fn name_of(argv: &[String]) -> String {
    let mut parts: Vec<String> = Vec::new();
    if let Some(p) = argv.first() {
        parts.push(
            Path::new(p)
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_else(|| p.clone()),
        );
    }
    for a in argv.iter().skip(1) {
        if !a.starts_with('-')
            && !a.contains(['/', '{', '=', ' '])
            && !a.is_empty()
            && parts.len() < 4
        {
            parts.push(a.clone());
        }
    }
    parts
        .join("-")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// One run's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct RunOutcome {
    /// Trace name.
    pub trace: String,
    /// Run index within the trace, from 0.
    pub run: u32,
    /// The kill delay of this run, if the trace kills.
    pub delay_ms: Option<u64>,
    /// Wall time of the run, ms.
    pub wall_ms: u64,
    /// One verdict per reported property ([`PROPERTIES`]).
    pub verdicts: Vec<Verdict>,
    /// Why the trace stopped early, if it did.
    pub aborted: Option<String>,
    /// What never came, and other remarks.
    pub notes: Vec<String>,
    /// Timing windows aimed at: (name, hit).
    pub windows: Vec<(String, bool)>,
    /// Folder kept for this run (a failing one), relative to the report folder.
    pub folder: Option<String>,
    /// Number of ops in its history.
    pub ops: usize,
}

/// Counts of one trace × property.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Cell {
    /// Runs judged.
    pub runs: u32,
    /// Valid runs.
    pub valid: u32,
    /// Runs with a finding (valid otherwise).
    pub finding: u32,
    /// Runs where a MUST broke.
    pub invalid: u32,
    /// Runs that could not be decided.
    pub unknown: u32,
}

/// One failing run × property, with its timing and the command that retries it.
#[derive(Debug, Clone, Serialize)]
pub struct Failure {
    /// Trace.
    pub trace: String,
    /// Run index.
    pub run: u32,
    /// Kill delay of the run.
    pub delay_ms: Option<u64>,
    /// The verdict.
    pub verdict: Verdict,
    /// Wall ms (since the run started) of its first witness op.
    pub at_ms: Option<u64>,
    /// Wall time of the run, ms.
    pub wall_ms: u64,
    /// Run folder, relative to the report folder.
    pub folder: Option<String>,
    /// A command that runs this trace again (same delay) to measure its rate.
    pub retry: String,
}

/// The probe's `summary.json` (format 1).
#[derive(Debug, Clone, Serialize)]
pub struct ProbeSummary {
    /// Format version.
    pub format: u32,
    /// Always false: a real process does not replay.
    pub deterministic: bool,
    /// The Agent's name.
    pub agent: String,
    /// The launch target.
    pub target: Target,
    /// Runs per trace.
    pub repeat: u32,
    /// Bound of every wait, ms.
    pub timeout_ms: u64,
    /// Traces run, in order.
    pub traces: Vec<String>,
    /// trace → property → counts.
    pub table: BTreeMap<String, BTreeMap<String, Cell>>,
    /// trace → window → (runs that hit it, runs).
    pub windows: BTreeMap<String, BTreeMap<String, (u32, u32)>>,
    /// trace → remark → runs it was made in.
    pub notes: BTreeMap<String, BTreeMap<String, u32>>,
    /// Traces not run, with the reason (the command is not an ACP agent).
    pub not_run: BTreeMap<String, String>,
    /// Every failing run × property.
    pub failures: Vec<Failure>,
    /// Every run.
    pub runs: Vec<RunOutcome>,
    /// The exit code.
    pub exit_code: i32,
}

static HOMES: AtomicU64 = AtomicU64::new(0);

fn usage(msg: &str) -> i32 {
    eprintln!("error: {msg}");
    exit::USAGE
}

/// Run `acp-chaos probe`; returns the exit code.
pub fn main(a: &ProbeArgs) -> i32 {
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
    if let Some(name) = &a.install {
        return install(name);
    }
    let mut target = match (&a.profile, a.command.is_empty()) {
        (Some(_), false) => return usage("give either --profile NAME or -- COMMAND, not both"),
        (None, true) => {
            return usage("no agent to probe: give -- COMMAND ARGS... or --profile NAME")
        }
        (Some(p), true) => match Target::builtin(p) {
            Ok(p) => p,
            Err(e) => return usage(&e),
        },
        (None, false) => Target::command(&a.command, a.name.as_deref()),
    };
    if let Some(n) = &a.name {
        target.name = n.clone();
    }
    match a.retention.as_deref() {
        None => {}
        Some("durable") => target.retention = Retention::Durable,
        Some("process") => target.retention = Retention::Process,
        Some(r) => return usage(&format!("--retention `{r}`: durable or process")),
    }
    for e in &a.env {
        match e.split_once('=') {
            Some((k, v)) if !k.is_empty() => target.env.push((k.to_string(), v.to_string())),
            _ => return usage(&format!("--env `{e}`: expected KEY=VALUE")),
        }
    }
    if a.repeat == 0 {
        return usage("--repeat must be at least 1");
    }
    let mut a = a.clone();
    match (a.timeout_ms, target.real) {
        (Some(0), _) => return usage("--timeout-ms must be at least 1"),
        (None, Some(p)) => {
            a.timeout_ms = Some(crate::probe::profile::startup_timeout(p).as_millis() as u64)
        }
        _ => {}
    }
    let a = &a;
    let selected: Vec<&traces::Trace> = if a.traces.is_empty() {
        traces::TRACES.iter().collect()
    } else {
        let mut v = Vec::new();
        for t in &a.traces {
            match traces::find(t) {
                Some(x) => v.push(x),
                None => {
                    let names: Vec<&str> = traces::TRACES.iter().map(|t| t.name).collect();
                    return usage(&format!(
                        "unknown trace `{t}` (known: {})",
                        names.join(", ")
                    ));
                }
            }
        }
        v
    };
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| Path::new("reports").join(format!("probe-{}", target.name)));
    if let Err(e) = prepare_out(&out) {
        return usage(&format!("{e:#}"));
    }
    match run(a, &target, &selected, &out) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            exit::USAGE
        }
    }
}

/// `--install NAME`: npm install of a real-agent profile into the cache folder.
fn install(name: &str) -> i32 {
    let p = match crate::probe::profile::get(name) {
        Ok(p) => p,
        Err(e) => return usage(&e.to_string()),
    };
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
            exit::VALID
        }
        Err(e) => {
            eprintln!("error: {e}");
            e.exit_code()
        }
    }
}

/// The bound of every wait, ms.
fn wait_ms(a: &ProbeArgs) -> u64 {
    a.timeout_ms.unwrap_or(10_000)
}

/// Clear an earlier probe report in `out` (its `summary.*` and run folders); refuse a folder
/// holding anything else.
fn prepare_out(out: &Path) -> anyhow::Result<()> {
    crate::campaign::prepare_folder(out, "a probe report artefact", |name, path| {
        let run_dir = path.join("history.jsonl").exists() && name.contains("-run");
        let file = matches!(name.trim_end_matches(".tmp"), "summary.json" | "summary.md");
        file || run_dir
    })
}

fn fill(s: &str, home: &Path, cwd: &Path) -> String {
    s.replace("{home}", &home.display().to_string())
        .replace("{cwd}", &cwd.display().to_string())
}

/// A fresh temporary home (with its workspace folder `work/`) for one run.
fn fresh_home(target: &Target) -> anyhow::Result<(PathBuf, PathBuf)> {
    let n = HOMES.fetch_add(1, Ordering::Relaxed);
    let home = std::env::temp_dir().join(format!("acp-chaos-probe-{}-{n}", std::process::id()));
    if home.exists() {
        std::fs::remove_dir_all(&home)?;
    }
    let cwd = home.join("work");
    std::fs::create_dir_all(&cwd)?;
    for (rel, text) in &target.files {
        let p = home.join(rel);
        if let Some(d) = p.parent() {
            std::fs::create_dir_all(d)?;
        }
        std::fs::write(&p, fill(text, &home, &cwd))?;
    }
    Ok((home, cwd))
}

fn run_seed(seed: u64, trace: &str, run: u32) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ seed;
    for b in trace.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h ^ u64::from(run).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// One run of one trace: launch, drive, judge. `Err` only for the probe's own I/O.
fn run_once(
    a: &ProbeArgs,
    target: &Target,
    t: &traces::Trace,
    run: u32,
) -> anyhow::Result<(RunOutcome, History, String, bool)> {
    let delay = if t.sweep.is_empty() {
        None
    } else {
        Some(a.delay_ms.unwrap_or(t.sweep[run as usize % t.sweep.len()]))
    };
    let (home, cwd) = fresh_home(target)?;
    let timeout = Duration::from_millis(wait_ms(a));
    let mut mock = None;
    let launch = match target.real {
        // A real agent: its own mock model server, the profile's launch in this home.
        Some(p) => {
            let m =
                crate::probe::mock_model::MockModel::start(crate::probe::mock_model::MockConfig {
                    delay_ms: a.mock_delay_ms,
                    ..Default::default()
                })?;
            let spec = crate::probe::profile::launch(p, &home, m.port())?;
            spec.write_files()?;
            mock = Some(m);
            let mut env = spec.full_env();
            env.extend(
                target
                    .env
                    .iter()
                    .map(|(k, v)| (k.clone(), fill(v, &home, &cwd))),
            );
            Launch {
                argv: spec.argv(),
                env,
                clear_env: true,
                home: home.clone(),
                cwd: spec.cwd.clone(),
                timeout,
            }
        }
        None => Launch {
            argv: target
                .command
                .iter()
                .map(|s| fill(s, &home, &cwd))
                .collect(),
            env: target
                .env
                .iter()
                .map(|(k, v)| (k.clone(), fill(v, &home, &cwd)))
                .collect(),
            clear_env: false,
            home: home.clone(),
            cwd,
            timeout,
        },
    };
    let mut d = Driver::new(launch, run_seed(a.seed, t.name, run));
    let result = (t.run)(&mut d, delay);
    if let Err(why) = &result {
        d.end_aborted(why);
    }
    d.stop();
    let wall_ms = d.ms();
    let model = mock.map(|m| {
        let seen = d.model_saw(&m);
        let n = m.request_count();
        m.shutdown();
        json!({"requests": n, "markers": seen})
    });
    let _ = std::fs::remove_dir_all(&home);
    let header = json!({
        "format": crate::history::FORMAT,
        "scenario": format!("probe:{}", t.name),
        "seed": run,
        "mutant": null,
        "plan": {
            "retention": match target.retention { Retention::Durable => "durable", Retention::Process => "process" },
            "probe": {
                "agent": target.name,
                "command": target.command,
                "profile": target.real.map(|p| p.specs()),
                "mock_model": model,
                "trace": t.name,
                "run": run,
                "delay_ms": delay,
                "timeout_ms": wait_ms(a),
                "clock": "wall ms since the run started (a real process: not deterministic)",
                "inferred": "agent ops marked inferred are reconstructed from what the agent sent",
            },
        },
    });
    let h = infer::build(header, &d.ops);
    let verdicts = judge(&h, result.as_ref().err().map(String::as_str));
    let fatal = result.is_err() && !d.initialized;
    let outcome = RunOutcome {
        trace: t.name.to_string(),
        run,
        delay_ms: delay,
        wall_ms,
        verdicts,
        aborted: result.err(),
        notes: d.notes.clone(),
        windows: d.windows.clone(),
        folder: None,
        ops: h.ops.len(),
    };
    Ok((outcome, h, d.stderr.clone(), fatal))
}

/// The reported verdicts of one history; an aborted run's valid verdicts become unknown.
pub fn judge(h: &History, aborted: Option<&str>) -> Vec<Verdict> {
    let mut all = checkers::check_all(h);
    all.push(crate::checkers::x4_resume_order(h));
    let mut out: Vec<Verdict> = PROPERTIES
        .iter()
        .filter_map(|p| all.iter().find(|v| v.property == *p).cloned())
        .collect();
    if let Some(why) = aborted {
        for v in out.iter_mut().filter(|v| v.status == Status::Valid) {
            v.status = Status::Unknown;
            v.message = format!("{INCOMPLETE}{why}");
        }
    }
    out
}

fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@{}+".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// The command that runs one trace again, at the same delay, enough times to see a rate.
fn retry_line(a: &ProbeArgs, target: &Target, trace: &str, delay: Option<u64>) -> String {
    let mut s = format!("acp-chaos probe --trace {trace}");
    if let Some(d) = delay {
        s.push_str(&format!(" --delay-ms {d}"));
    }
    s.push_str(&format!(
        " --repeat {} --timeout-ms {}",
        a.repeat.max(10),
        wait_ms(a)
    ));
    if a.retention.is_some() {
        let r = match target.retention {
            Retention::Durable => "durable",
            Retention::Process => "process",
        };
        s.push_str(&format!(" --retention {r}"));
    }
    for e in &a.env {
        s.push_str(&format!(" --env {}", shell_quote(e)));
    }
    match &a.profile {
        Some(p) => s.push_str(&format!(" --profile {p}")),
        None => {
            s.push_str(" --");
            for w in &target.command {
                s.push(' ');
                s.push_str(&shell_quote(w));
            }
        }
    }
    s
}

fn party_word(p: Option<Party>) -> String {
    p.map(|p| {
        serde_json::to_value(p)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    })
    .unwrap_or_else(|| "-".into())
}

/// How an aborted run's undecided verdicts begin.
const INCOMPLETE: &str = "the trace did not complete: ";

/// Folders kept per (trace, property): the first failing runs.
const KEEP: usize = 5;

fn run(
    a: &ProbeArgs,
    target: &Target,
    selected: &[&traces::Trace],
    out: &Path,
) -> anyhow::Result<i32> {
    println!(
        "probe {}: {} ({} traces x {} runs, every wait bounded by {} ms, retention {})",
        target.name,
        target.shown(),
        selected.len(),
        a.repeat,
        wait_ms(a),
        match target.retention {
            Retention::Durable => "durable",
            Retention::Process => "process",
        }
    );
    println!(
        "note: a real process is not deterministic. Each trace runs {} times and the report gives outcome rates; a failing run's retry command runs its trace again at the same kill delay, it does not replay the same interleaving.",
        a.repeat
    );
    let mut summary = ProbeSummary {
        format: 1,
        deterministic: false,
        agent: target.name.clone(),
        target: target.clone(),
        repeat: a.repeat,
        timeout_ms: wait_ms(a),
        traces: selected.iter().map(|t| t.name.to_string()).collect(),
        table: BTreeMap::new(),
        windows: BTreeMap::new(),
        notes: BTreeMap::new(),
        not_run: BTreeMap::new(),
        failures: Vec::new(),
        runs: Vec::new(),
        exit_code: exit::VALID,
    };
    let mut kept: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut fatal: Option<String> = None;
    for t in selected {
        if let Some(why) = &fatal {
            summary.not_run.insert(t.name.to_string(), why.clone());
            continue;
        }
        let t0 = crate::wall_clock::now();
        for run in 0..a.repeat {
            let (mut o, h, stderr, is_fatal) = run_once(a, target, t, run)?;
            let failing: Vec<&Verdict> = o
                .verdicts
                .iter()
                .filter(|v| matches!(v.status, Status::Invalid | Status::Unknown))
                .collect();
            let keep = a.keep_runs
                || failing.iter().any(|v| {
                    kept.get(&(t.name.to_string(), v.property.clone()))
                        .is_none_or(|n| *n < KEEP)
                });
            if keep {
                for v in &failing {
                    *kept
                        .entry((t.name.to_string(), v.property.clone()))
                        .or_default() += 1;
                }
                let dir = format!("{}-run{run}", t.name);
                write_run(&out.join(&dir), a, target, &o, &h, &stderr)?;
                o.folder = Some(dir);
            }
            for v in &o.verdicts {
                let c = summary
                    .table
                    .entry(t.name.to_string())
                    .or_default()
                    .entry(v.property.clone())
                    .or_default();
                c.runs += 1;
                match v.status {
                    Status::Valid => c.valid += 1,
                    Status::Finding => {
                        c.valid += 1;
                        c.finding += 1
                    }
                    Status::Invalid => c.invalid += 1,
                    Status::Unknown => c.unknown += 1,
                }
                if matches!(v.status, Status::Invalid | Status::Unknown) {
                    let at_ms = v
                        .witnesses
                        .first()
                        .and_then(|i| h.ops.get(*i))
                        .map(|o| o.time_ms);
                    summary.failures.push(Failure {
                        trace: t.name.to_string(),
                        run,
                        delay_ms: o.delay_ms,
                        verdict: v.clone(),
                        at_ms,
                        wall_ms: o.wall_ms,
                        folder: o.folder.clone(),
                        retry: retry_line(a, target, t.name, o.delay_ms),
                    });
                }
            }
            for (w, hit) in &o.windows {
                let e = summary
                    .windows
                    .entry(t.name.to_string())
                    .or_default()
                    .entry(w.clone())
                    .or_default();
                e.0 += u32::from(*hit);
                e.1 += 1;
            }
            for n in o.notes.iter().chain(o.aborted.iter()) {
                *summary
                    .notes
                    .entry(t.name.to_string())
                    .or_default()
                    .entry(n.clone())
                    .or_default() += 1;
            }
            summary.runs.push(o);
            if is_fatal {
                fatal = summary.runs.last().and_then(|o| o.aborted.clone());
                break;
            }
        }
        println!(
            "  {:<22} {} runs in {:.1} s",
            t.name,
            summary.runs.iter().filter(|r| r.trace == t.name).count(),
            t0.elapsed().as_secs_f64()
        );
    }
    let invalid = summary
        .table
        .values()
        .flat_map(|r| r.values())
        .any(|c| c.invalid > 0);
    let unknown = summary
        .table
        .values()
        .flat_map(|r| r.values())
        .any(|c| c.unknown > 0)
        || !summary.not_run.is_empty();
    summary.exit_code = if invalid {
        exit::INVALID
    } else if unknown {
        exit::LIVENESS
    } else {
        exit::VALID
    };
    print!("{}", table_text(&summary));
    write_atomic(
        &out.join("summary.json"),
        &serde_json::to_vec_pretty(&summary)?,
    )?;
    write_atomic(&out.join("summary.md"), summary_md(&summary).as_bytes())?;
    println!(
        "report: {}  exit {}",
        out.join("summary.md").display(),
        summary.exit_code
    );
    Ok(summary.exit_code)
}

fn write_run(
    dir: &Path,
    a: &ProbeArgs,
    target: &Target,
    o: &RunOutcome,
    h: &History,
    stderr: &str,
) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut buf = Vec::new();
    h.write_jsonl(&mut buf)?;
    write_atomic(&dir.join("history.jsonl"), &buf)?;
    write_atomic(
        &dir.join("verdicts.json"),
        &serde_json::to_vec_pretty(&o.verdicts)?,
    )?;
    write_atomic(&dir.join("stderr.txt"), stderr.as_bytes())?;
    let retry = retry_line(a, target, &o.trace, o.delay_ms);
    write_atomic(&dir.join("retry.txt"), format!("{retry}\n").as_bytes())?;
    // The first invalid verdict, else the first unknown one.
    let worst = [Status::Invalid, Status::Unknown]
        .iter()
        .find_map(|s| o.verdicts.iter().find(|v| v.status == *s))
        .cloned();
    if let Some(v) = worst {
        let scenario = format!(
            "probe {} {} run {}{}",
            target.name,
            o.trace,
            o.run,
            o.delay_ms
                .map(|d| format!(" (kill delay {d} ms)"))
                .unwrap_or_default()
        );
        let c = crate::report::Counterexample {
            scenario: &scenario,
            verdict: &v,
            repro: &retry,
            shrunk: None,
            schedule: None,
            history: h,
        };
        let mut md = crate::report::counterexample_md(&c).replace(
            "Times are simulated ms.",
            "Times are wall-clock ms since the run started: this is a real process, and the \
                 retry command runs the trace again, it does not replay this interleaving. Agent \
                 ops marked `inferred` are reconstructed from what the agent sent.",
        );
        if !o.notes.is_empty() || o.aborted.is_some() {
            md.push_str("\n## What never came, and other remarks\n\n");
            for n in o.aborted.iter().chain(o.notes.iter()) {
                md.push_str(&format!("- {n}\n"));
            }
        }
        write_atomic(&dir.join("report.md"), md.as_bytes())?;
        let html = crate::report::counterexample_html(&c);
        write_atomic(&dir.join("report.html"), html.as_bytes())?;
    }
    Ok(())
}

fn cell_short(c: Option<&Cell>) -> String {
    match c {
        None => "-".into(),
        Some(c) if c.invalid == 0 && c.unknown == 0 => "ok".into(),
        Some(c) => {
            let mut s = String::new();
            if c.invalid > 0 {
                s.push_str(&format!("{}!", c.invalid));
            }
            if c.unknown > 0 {
                s.push_str(&format!("{}?", c.unknown));
            }
            s
        }
    }
}

fn pct(n: u32, d: u32) -> String {
    if d == 0 {
        "-".into()
    } else {
        format!("{:.0}%", f64::from(n) * 100.0 / f64::from(d))
    }
}

/// The console table: one row per trace, one column per property (`ok`; `N!` runs invalid,
/// `N?` runs unknown), then the rates, the windows hit and the first failing run of each cell.
pub fn table_text(s: &ProbeSummary) -> String {
    let mut out = String::new();
    out.push_str(&format!("\n{:<22} {:>4}", "trace", "runs"));
    for p in PROPERTIES {
        out.push_str(&format!(" {p:>5}"));
    }
    out.push('\n');
    for t in &s.traces {
        let row = s.table.get(t);
        let runs = row.and_then(|r| r.values().next()).map_or(0, |c| c.runs);
        out.push_str(&format!("{t:<22} {runs:>4}"));
        for p in PROPERTIES {
            out.push_str(&format!(" {:>5}", cell_short(row.and_then(|r| r.get(*p)))));
        }
        if let Some(why) = s.not_run.get(t) {
            out.push_str(&format!("  not run: {why}"));
        }
        out.push('\n');
    }
    out.push_str("(ok: valid in every run; N!: invalid in N runs; N?: unknown in N runs)\n");
    for (t, ws) in &s.windows {
        for (w, (hit, runs)) in ws {
            out.push_str(&format!(
                "  window {t}: {w} in {hit} of {runs} runs ({})\n",
                pct(*hit, *runs)
            ));
        }
    }
    let mut shown: BTreeMap<(String, String), bool> = BTreeMap::new();
    let mut aborts: BTreeMap<(String, String), bool> = BTreeMap::new();
    for f in &s.failures {
        let k = (f.trace.clone(), f.verdict.property.clone());
        if shown.insert(k.clone(), true).is_some() {
            continue;
        }
        if let Some(why) = f.verdict.message.strip_prefix(INCOMPLETE) {
            // One line per trace for a run that stopped early, not one per property.
            if aborts
                .insert((f.trace.clone(), why.to_string()), true)
                .is_none()
            {
                let runs = s.runs.iter().filter(|r| r.trace == f.trace).count();
                let n = s
                    .runs
                    .iter()
                    .filter(|r| r.trace == f.trace && r.aborted.as_deref() == Some(why))
                    .count();
                out.push_str(&format!(
                    "UNKNOWN {} (every property not broken before): {n} of {runs} runs did not complete: {why}\n  first: run {}{} after {} ms\n  retry: {}\n",
                    f.trace,
                    f.run,
                    f.delay_ms.map(|d| format!(" (kill delay {d} ms)")).unwrap_or_default(),
                    f.wall_ms,
                    f.retry
                ));
                if let Some(d) = &f.folder {
                    out.push_str(&format!("  run folder: {d}\n"));
                }
            }
            continue;
        }
        let c = &s.table[&f.trace][&f.verdict.property];
        let v = &f.verdict;
        out.push_str(&format!(
            "{} {} {} {}: invalid in {} of {} runs ({}), unknown in {} ({})\n  first: run {}{}: {} (party {}, rules {}) at {} ms of {} ms: {}\n  retry: {}\n",
            if v.status == Status::Invalid { "FAIL" } else { "UNKNOWN" },
            f.trace,
            v.property,
            Status::as_str(v.status),
            c.invalid,
            c.runs,
            pct(c.invalid, c.runs),
            c.unknown,
            pct(c.unknown, c.runs),
            f.run,
            f.delay_ms.map(|d| format!(" (kill delay {d} ms)")).unwrap_or_default(),
            Status::as_str(v.status),
            party_word(v.party),
            v.rules.join(" "),
            f.at_ms.map_or("-".into(), |t| t.to_string()),
            f.wall_ms,
            v.message,
            f.retry
        ));
        if let Some(d) = &f.folder {
            out.push_str(&format!("  run folder: {d}\n"));
        }
    }
    for (t, why) in &s.not_run {
        out.push_str(&format!("UNKNOWN {t}: not run: {why}\n"));
    }
    out
}

/// `summary.md`: the table with rates, the windows, every failing run with its timing and
/// retry command, and what never came.
pub fn summary_md(s: &ProbeSummary) -> String {
    let mut out = String::new();
    out.push_str(&format!("# Probe of `{}`\n\n", s.agent));
    out.push_str(&format!(
        "Agent: {}. {} runs per trace; every wait bounded by {} ms; declared retention {}.\n\n",
        s.target.shown(),
        s.repeat,
        s.timeout_ms,
        match s.target.retention {
            Retention::Durable => "durable",
            Retention::Process => "process",
        }
    ));
    out.push_str(
        "**A real process is not deterministic.** These are outcome rates over repeated runs, \
         not verdicts of one seed. A failing run's retry command runs its trace again (at the \
         same kill delay) to measure the rate; it does not replay the same interleaving. Times \
         are wall-clock ms since the run started. Agent-side ops in the histories are inferred \
         from what the agent sent (marked `inferred`).\n\n",
    );
    out.push_str("| trace | property | runs | valid | invalid | unknown | invalid rate | unknown rate |\n|---|---|---|---|---|---|---|---|\n");
    for t in &s.traces {
        if let Some(why) = s.not_run.get(t) {
            out.push_str(&format!(
                "| {t} | all | 0 | - | - | - | - | not run: {why} |\n"
            ));
            continue;
        }
        for p in PROPERTIES {
            if let Some(c) = s.table.get(t).and_then(|r| r.get(*p)) {
                out.push_str(&format!(
                    "| {t} | {p} | {} | {}{} | {} | {} | {} | {} |\n",
                    c.runs,
                    c.valid,
                    if c.finding > 0 {
                        format!(" ({} findings)", c.finding)
                    } else {
                        String::new()
                    },
                    c.invalid,
                    c.unknown,
                    pct(c.invalid, c.runs),
                    pct(c.unknown, c.runs)
                ));
            }
        }
    }
    if !s.windows.is_empty() {
        out.push_str("\n## Timing windows\n\n");
        for (t, ws) in &s.windows {
            for (w, (hit, runs)) in ws {
                out.push_str(&format!("- {t}: {w} in {hit} of {runs} runs\n"));
            }
        }
    }
    if !s.failures.is_empty() {
        out.push_str("\n## Failing runs\n\n| trace | run | kill delay | property | status | party | at ms | run ms | message | folder |\n|---|---|---|---|---|---|---|---|---|---|\n");
        for f in &s.failures {
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                f.trace,
                f.run,
                f.delay_ms.map_or("-".into(), |d| format!("{d} ms")),
                f.verdict.property,
                Status::as_str(f.verdict.status),
                party_word(f.verdict.party),
                f.at_ms.map_or("-".into(), |t| t.to_string()),
                f.wall_ms,
                f.verdict.message.replace('|', "\\|"),
                f.folder.clone().unwrap_or_else(|| "-".into())
            ));
        }
        out.push_str("\nRetry commands:\n\n```sh\n");
        let mut seen = std::collections::BTreeSet::new();
        for f in &s.failures {
            if seen.insert(f.retry.clone()) {
                out.push_str(&format!("{}\n", f.retry));
            }
        }
        out.push_str("```\n");
    }
    if !s.notes.is_empty() {
        out.push_str("\n## What never came, and other remarks\n\n");
        for (t, ns) in &s.notes {
            for (n, runs) in ns {
                out.push_str(&format!("- {t} ({runs} runs): {n}\n"));
            }
        }
    }
    out.push_str(&format!("\nExit code {}.\n", s.exit_code));
    out
}
