//! `acp-chaos agent`: one of our model Agents as a real process, serving ACP v2 over stdio
//! (newline-delimited JSON-RPC on stdin and stdout), with its stored sessions on the real file
//! system. `acp-chaos probe` drives it like any other Agent, so `cargo test` probes the correct
//! models (valid) and the mutants (caught) as real processes, with no npm and no network.
//!
//! It runs the same sans-IO [`ModelAgent`] as the simulator's Agent host (`hosts::agent`),
//! with the simulator's effects replaced by the real thing:
//! - `Persist` appends a framed record (`models::store`: length, check over length and
//!   payload, JSON) to `DIR/sessions.log`; `sync: true` is `sync_all` (and a sync of `DIR` when
//!   the file is new), then the watermark `DIR/sessions.synced` (the log's synced length and
//!   the highest boot started) is written and synced (`store_dir`);
//! - `Timer` is a real timer (turns take `--turn-ms` of wall time);
//! - `Send` writes one line on stdout; `Point` and `Effect` do nothing (a real kill comes from
//!   outside: `acp-chaos probe` SIGKILLs the process group);
//! - each start appends a synced boot record to `DIR/sessions.log` and takes one more than the
//!   highest boot its records or its watermark show (boot records, ids handed out), so session
//!   and message ids stay unique across restarts, as the simulator's boot counter keeps them,
//!   even when the log was cut or an older store's `DIR/boots` file is damaged or deleted;
//! - recovery cuts a torn tail after the watermark and refuses to start (exit 2, naming the
//!   file and the byte offset) when the log is damaged below it or shorter than it: a damaged
//!   store is reported, never cut back to its damage (`--salvage` does, saying what it drops).
//!
//! One process serves one connection (stdio): EOF on stdin ends it. Bad input never panics:
//! the model answers `-32700`, `-32600` (a bad id or `jsonrpc` too), `-32601` or `-32602`;
//! batches and ids beyond 64 bits are handled around it (`stdio_envelope`). Lines are read
//! strictly (`line_reader`): a line that is not UTF-8 is answered `-32700` (`id: null`) and a
//! line longer than `--max-line-bytes` `-32600` (`id: null`; it is discarded as it is read, so
//! it was never parsed), and neither reaches the model.

use crate::error::{usage, Outcome};
use std::collections::BinaryHeap;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use clap::Args;

use crate::wall_clock::now;
use acp_chaos::exit;
use acp_chaos::models::agent::{AgentConfig, AgentInput, AgentModel, ModelAgent};
use acp_chaos::models::mutant::{self, MutantKind};
use acp_chaos::models::rpc::{self, code};
use acp_chaos::models::{Action, Design, DuringTurn, HeldOnDisconnect, WorkOnDisconnect};

use super::line_reader::{Line, LineReader, MAX_LINE_BYTES};
use super::stdio_envelope::Envelope;
use super::store_dir::StoreDir;
use super::wire_log::{die, Pipe, ServedFault, WireLog};

/// `acp-chaos agent` arguments.
#[derive(Args, Debug, Clone)]
pub struct AgentArgs {
    /// Agent design: stored, in-memory or adapter (a cluster needs the simulator's store host).
    #[arg(long, default_value = "stored")]
    pub design: String,
    /// Serve a mutant of the design (an Agent mutant, see `acp-chaos list mutants`).
    #[arg(long)]
    pub mutant: Option<String>,
    /// Folder of the stored sessions and boot records (`sessions.log`); created if missing.
    /// Without it nothing is stored (every start is boot 1). Beside the log, `sessions.synced`
    /// keeps its synced length: a log damaged below it, or cut short of it, stops the start
    /// with exit 2 naming the file and the byte offset (a torn tail after it is cut).
    #[arg(long)]
    pub store: Option<PathBuf>,
    /// With `--store`: on a log damaged below its synced length, keep the whole records
    /// before the damage, say on stderr what was dropped (file, offset, bytes, records), and
    /// start, instead of exit 2. Acknowledged records after the damage are lost.
    #[arg(long, requires = "store")]
    pub salvage: bool,
    /// Length of a turn in wall ms: `N` or `MIN..MAX`.
    #[arg(long, default_value = "30")]
    pub turn_ms: String,
    /// Chance that a turn makes a tool call (0 to 1).
    #[arg(long, default_value_t = 0.0, value_parser = acp_chaos::bounds::parse_rate)]
    pub tool_rate: f64,
    /// Chance that a tool call first asks the Client with `session/request_permission` (0 to 1).
    #[arg(long, default_value_t = 0.0, value_parser = acp_chaos::bounds::parse_rate)]
    pub permission_rate: f64,
    /// Fail every Nth `session/prompt` this process reads with a transient `-32603` (the
    /// simulator's `transient-error` fault; a stand-in for a model API error). 0: never.
    #[arg(long, default_value_t = 0)]
    pub transient_every: u64,
    /// Seed of turn lengths and tool choices.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Keep records persisted without a sync in this process's memory until the next sync,
    /// so a SIGKILL loses them as a power loss would (the page cache survives a SIGKILL, which
    /// hides a missing `sync_all`, e.g. the `record-unsynced` mutant's).
    #[arg(long)]
    pub lose_unsynced: bool,
    /// Append every line read and written, the model's effects and this process's start,
    /// end and crash to FILE (JSON lines; `acp-chaos probe --client` reads it as the ground
    /// truth of a Client under test, see `probe::wire_log`).
    #[arg(long, value_name = "FILE")]
    pub wire_log: Option<PathBuf>,
    /// A fault at `POINT:N` of the Nth `session/prompt` counted over every start logged in
    /// `--wire-log`: die (SIGKILL to itself) at `receive`, `before-response` (inserted, the
    /// response lost) or `after-response`; or hold the response 600 ms (`stall-response`).
    /// Repeatable; each fires once. Needs `--wire-log`.
    #[arg(long, value_name = "POINT:N")]
    pub fault_at: Vec<ServedFault>,
    /// Hold each `session/resume` answer this long on every start after the first (a slow
    /// resume), reading on meanwhile: a Client that prompts before the answer shows in the
    /// wire log (C6). Needs `--wire-log`.
    #[arg(long, default_value_t = 0)]
    pub slow_resume_ms: u64,
    /// The longest line read, in bytes (its newline not counted). A longer line is discarded
    /// as it is read and answered `-32600` with `id: null`; the next line is read as usual.
    #[arg(long, default_value_t = MAX_LINE_BYTES, value_parser = parse_max_line)]
    pub max_line_bytes: usize,
}

fn parse_max_line(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if (1..=1 << 30).contains(&n) => Ok(n),
        _ => Err(format!(
            "`{s}`: expected a whole number of bytes from 1 to 1073741824 (1 GiB)"
        )),
    }
}

/// Run the server until stdin ends: the exit code, or a usage error (exit 2). A failure while
/// serving is said on stderr as the served process's own (`acp-chaos agent: ...`), beside what
/// the probe collects of it.
pub fn main(a: &AgentArgs) -> Outcome {
    let design = match a.design.as_str() {
        "stored" => Design::Stored,
        "in-memory" => Design::InMemory,
        "adapter" => Design::Adapter,
        "cluster" => {
            return usage(
                "`cluster` is not served as a process (its nodes share the simulator's store host); use stored, in-memory or adapter",
            )
        }
        d => return usage(format!("unknown design `{d}` (stored, in-memory, adapter)")),
    };
    let agent_mutant = match a.mutant.as_deref() {
        None => None,
        Some(n) => match mutant::find(n) {
            Some(m) => match m.kind {
                MutantKind::Agent(x) if m.designs.is_empty() || m.designs.contains(&design) => {
                    Some(x)
                }
                MutantKind::Agent(_) => {
                    return usage(format!(
                        "mutant `{n}` does not apply to the {} design",
                        design.as_str()
                    ))
                }
                _ => return usage(format!("`{n}` is not an Agent mutant")),
            },
            None => {
                return usage(format!(
                    "unknown mutant `{n}` (see `acp-chaos list mutants`)"
                ))
            }
        },
    };
    if (!a.fault_at.is_empty() || a.slow_resume_ms > 0) && a.wire_log.is_none() {
        return usage(
            "--fault-at and --slow-resume-ms need --wire-log (the log counts prompts across restarts)",
        );
    }
    let (turn_min, turn_max) = match parse_range(&a.turn_ms) {
        Some(r) => r,
        None => return usage(format!("--turn-ms `{}`: expected N or MIN..MAX", a.turn_ms)),
    };
    let cfg = AgentConfig {
        design,
        o1: HeldOnDisconnect::Keep,
        o2: WorkOnDisconnect::Continue,
        o4: DuringTurn::Hold,
        turn_ms_min: turn_min,
        turn_ms_max: turn_max,
        tool_rate: a.tool_rate,
        permission_rate: a.permission_rate,
        mutant: agent_mutant,
        retention_ms: 0,
        fail_rate: 0.0,
        cancel_request: Default::default(),
    };
    Ok(match serve(cfg, a) {
        Ok(()) => exit::VALID,
        Err(e) => {
            eprintln!("acp-chaos agent: {e:#}");
            exit::USAGE
        }
    })
}

fn parse_range(s: &str) -> Option<(u64, u64)> {
    match s.split_once("..") {
        Some((a, b)) => {
            let (a, b) = (
                a.trim().parse().ok()?,
                b.trim().trim_start_matches('=').parse().ok()?,
            );
            (a <= b).then_some((a, b))
        }
        None => s.trim().parse().ok().map(|n| (n, n)),
    }
}

enum In {
    Line(String),
    /// A line refused unread (not UTF-8, or past the bound): its answer and how the wire log
    /// shows it.
    Refused {
        answer: String,
        shown: String,
    },
    Eof,
}

/// The answer to a line the reader refused: `-32700` for bytes that are not UTF-8 (not JSON
/// text, RFC 8259 §8.1), `-32600` for a line past the bound (discarded unread: whether it was
/// JSON is not known, only that it is not a request this Agent takes). `id: null` both: no id
/// was read.
fn refusal(line: &Line) -> Option<In> {
    let why = line.refusal()?;
    let (c, message) = match line {
        Line::NotUtf8 { .. } => (code::PARSE_ERROR, "Parse error"),
        _ => (code::INVALID_REQUEST, "Invalid Request"),
    };
    Some(In::Refused {
        answer: rpc::err(
            &serde_json::Value::Null,
            c,
            message,
            Some(why.clone().into()),
        ),
        shown: line.shown().unwrap_or(why),
    })
}

const CONN: u64 = 1;

/// The store folder (`--store`), this start's boot number and the records the model
/// recovers from (none for the in-memory design, whose sessions die with it).
fn open_store(
    cfg: &AgentConfig,
    a: &AgentArgs,
) -> anyhow::Result<(Option<StoreDir>, u32, Vec<serde_json::Value>)> {
    let persists = cfg.design != Design::InMemory;
    Ok(match &a.store {
        Some(dir) => {
            let (mut d, b, mut r) = StoreDir::open(dir, a.salvage)?;
            if !persists {
                r.clear();
            }
            if a.lose_unsynced {
                d.unsynced = Some(Vec::new());
            }
            (Some(d), b, r)
        }
        None => (None, 1, Vec::new()),
    })
}

/// Read stdin on its own thread: each line (or refusal of a bad one) arrives on the channel,
/// then `Eof`.
fn read_stdin(max_line: usize) -> mpsc::Receiver<In> {
    let (tx, rx) = mpsc::channel::<In>();
    std::thread::spawn(move || {
        let mut r = LineReader::new(std::io::stdin().lock(), max_line);
        loop {
            let ev = match r.next_line() {
                Ok(None) | Err(_) => {
                    let _ = tx.send(In::Eof);
                    return;
                }
                Ok(Some(Line::Text(line))) => In::Line(line),
                Ok(Some(bad)) => refusal(&bad).unwrap_or(In::Eof),
            };
            if tx.send(ev).is_err() {
                return;
            }
        }
    });
    rx
}

/// The next thing to handle: a line already read, else one that arrives before the earliest
/// timer or held line `next` falls due (`None` when it falls due first).
fn next_event(rx: &mpsc::Receiver<In>, next: Option<Instant>) -> Option<In> {
    // Lines already read go first: a turn's timer that fell due while the process was
    // descheduled does not overtake a prompt that arrived before it (as on a quiet machine).
    let ready = match rx.try_recv() {
        Ok(ev) => Some(ev),
        Err(mpsc::TryRecvError::Disconnected) => Some(In::Eof),
        Err(mpsc::TryRecvError::Empty) => None,
    };
    match (ready, next) {
        (Some(ev), _) => Some(ev),
        (None, Some(d)) => {
            let wait = d.saturating_duration_since(now());
            match rx.recv_timeout(wait) {
                Ok(ev) => Some(ev),
                Err(mpsc::RecvTimeoutError::Timeout) => None,
                Err(mpsc::RecvTimeoutError::Disconnected) => Some(In::Eof),
            }
        }
        (None, None) => Some(rx.recv().unwrap_or(In::Eof)),
    }
}

/// The Agent's one event loop: stdin lines, due timers and held lines in, the model's actions
/// out, until stdin ends.
fn serve(cfg: AgentConfig, a: &AgentArgs) -> anyhow::Result<()> {
    let (mut disk, boot, records) = open_store(&cfg, a)?;
    let mut pipe = Pipe::new(match &a.wire_log {
        Some(path) => Some(
            WireLog::open(path, boot, a.fault_at.clone(), a.slow_resume_ms)
                .map_err(|e| anyhow::anyhow!("--wire-log {}: {e}", path.display()))?,
        ),
        None => None,
    });
    let mut model = ModelAgent::recover(cfg, boot, a.seed, &records);
    let rx = read_stdin(a.max_line_bytes);
    let stdout = std::io::stdout();
    let mut out = Vec::new();
    // Timers: (deadline, order, id), earliest first.
    let mut timers: BinaryHeap<std::cmp::Reverse<(Instant, u64, u64)>> = BinaryHeap::new();
    let mut order = 0u64;
    // Prompts left until the next injected transient error.
    let mut until_error = a.transient_every;
    // Batches and ids beyond 64 bits, around the model (`stdio_envelope`).
    let mut envelope = Envelope::default();
    model.handle(AgentInput::Connected(CONN), &mut out);
    loop {
        execute(
            &mut out,
            &mut disk,
            &mut envelope,
            &mut pipe,
            &stdout,
            &mut timers,
            &mut order,
        )?;
        // Held lines whose time came go out first (a slow pipe, see `wire_log::Pipe`).
        pipe.release(now(), &mut stdout.lock());
        let next = [timers.peek().map(|t| t.0 .0), pipe.next_due()]
            .into_iter()
            .flatten()
            .min();
        match next_event(&rx, next) {
            None => {
                let t = now();
                pipe.release(t, &mut stdout.lock());
                if timers.peek().is_some_and(|x| x.0 .0 <= t) {
                    if let Some(std::cmp::Reverse((_, _, id))) = timers.pop() {
                        model.handle(AgentInput::Timer(id), &mut out);
                    }
                }
            }
            Some(In::Refused { answer, shown }) => {
                if let Some(w) = pipe.log.as_mut() {
                    w.refused(&shown);
                }
                pipe.send(answer, now(), &mut stdout.lock());
            }
            Some(In::Line(line)) => {
                if pipe.log.as_mut().is_some_and(|w| w.received(&line)) {
                    die();
                }
                let read = envelope.incoming(&line);
                if let Some(reply) = read.reply {
                    pipe.send(reply, now(), &mut stdout.lock());
                }
                for frame in read.frames {
                    if a.transient_every > 0 && is_prompt(&frame) {
                        until_error -= 1;
                        if until_error == 0 {
                            until_error = a.transient_every;
                            model.handle(AgentInput::InjectTransientError, &mut out);
                        }
                    }
                    model.handle(AgentInput::Frame(CONN, frame), &mut out);
                }
            }
            Some(In::Eof) => {
                if let Some(w) = pipe.log.as_mut() {
                    w.eof();
                }
                model.handle(AgentInput::Disconnected(CONN), &mut out);
                execute(
                    &mut out,
                    &mut disk,
                    &mut envelope,
                    &mut pipe,
                    &stdout,
                    &mut timers,
                    &mut order,
                )?;
                return Ok(());
            }
        }
    }
}

fn is_prompt(line: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(line)
        .is_ok_and(|v| v["method"] == "session/prompt" && v.get("id").is_some())
}

fn execute(
    out: &mut Vec<Action>,
    disk: &mut Option<StoreDir>,
    envelope: &mut Envelope,
    pipe: &mut Pipe,
    stdout: &std::io::Stdout,
    timers: &mut BinaryHeap<std::cmp::Reverse<(Instant, u64, u64)>>,
    order: &mut u64,
) -> anyhow::Result<()> {
    for a in out.drain(..) {
        match a {
            Action::Send { line, .. } => {
                if let Some(line) = envelope.outgoing(line) {
                    pipe.send(line, now(), &mut stdout.lock());
                }
            }
            Action::Persist { record, sync } => {
                if let Some(d) = disk.as_mut() {
                    d.persist(&record, sync)?;
                }
            }
            Action::Timer { id, after_ms } => {
                *order += 1;
                timers.push(std::cmp::Reverse((
                    now() + Duration::from_millis(after_ms),
                    *order,
                    id,
                )));
            }
            // Effects are the simulator's ground truth: the wire log keeps them.
            Action::Effect(e) => {
                if let Some(w) = pipe.log.as_mut() {
                    w.effect(e.f, &e.value);
                }
            }
            // A real kill comes from outside (or from a `--crash-on` point).
            Action::Point(_) => {}
            // Not produced by the stdio designs (a cluster node's store and the Client's dials).
            Action::Connect { .. } | Action::Close { .. } | Action::Store { .. } => {}
        }
    }
    Ok(())
}
