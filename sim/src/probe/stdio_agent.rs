//! `acp-chaos agent`: one of our model Agents as a real process, serving ACP v2 over stdio
//! (newline-delimited JSON-RPC on stdin and stdout), with its stored sessions on the real file
//! system. `acp-chaos probe` drives it like any other Agent, so `cargo test` probes the correct
//! models (valid) and the mutants (caught) as real processes, with no npm and no network.
//!
//! It runs the same sans-IO [`ModelAgent`] as the simulator's Agent host (`hosts::agent`),
//! with the simulator's effects replaced by the real thing:
//! - `Persist` appends a framed record (`models::store`: length, CRC, JSON) to
//!   `DIR/sessions.log`; `sync: true` is `sync_all` (and a sync of `DIR` when the file is new);
//! - `Timer` is a real timer (turns take `--turn-ms` of wall time);
//! - `Send` writes one line on stdout; `Point` and `Effect` do nothing (a real kill comes from
//!   outside: `acp-chaos probe` SIGKILLs the process group);
//! - each start appends a synced boot record to `DIR/sessions.log` and takes one more than the
//!   highest boot its records show (boot records, ids handed out), so session and message ids
//!   stay unique across restarts, as the simulator's boot counter keeps them, even when an
//!   older store's `DIR/boots` file is damaged or deleted;
//! - recovery cuts a torn tail (a bad last record with nothing valid after it) and refuses to
//!   start (exit 2, naming the file and the byte offset) when a bad record has valid records
//!   after it: a damaged store is reported, never cut back to its damage.
//!
//! One process serves one connection (stdio): EOF on stdin ends it. Bad input never panics:
//! the model answers `-32700`, `-32600` (a bad id or `jsonrpc` too), `-32601` or `-32602`;
//! batches and ids beyond 64 bits are handled around it (`stdio_envelope`). Lines are read
//! strictly (`line_reader`): a line that is not UTF-8 is answered `-32700` (`id: null`) and a
//! line longer than `--max-line-bytes` `-32600` (`id: null`; it is discarded as it is read, so
//! it was never parsed), and neither reaches the model.

use std::collections::BinaryHeap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use clap::Args;

use crate::exit;
use crate::models::agent::{AgentConfig, AgentInput, AgentModel, ModelAgent};
use crate::models::mutant::{self, MutantKind};
use crate::models::rpc::{self, code};
use crate::models::{store, Action, Design, DuringTurn, HeldOnDisconnect, WorkOnDisconnect};
use crate::wall_clock::now;

use super::line_reader::{Line, LineReader, MAX_LINE_BYTES};
use super::stdio_envelope::Envelope;
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
    /// Without it nothing is stored (every start is boot 1). A log damaged in the middle
    /// stops the start with exit 2.
    #[arg(long)]
    pub store: Option<PathBuf>,
    /// Length of a turn in wall ms: `N` or `MIN..MAX`.
    #[arg(long, default_value = "30")]
    pub turn_ms: String,
    /// Chance that a turn makes a tool call (0 to 1).
    #[arg(long, default_value_t = 0.0, value_parser = crate::bounds::parse_rate)]
    pub tool_rate: f64,
    /// Chance that a tool call first asks the Client with `session/request_permission` (0 to 1).
    #[arg(long, default_value_t = 0.0, value_parser = crate::bounds::parse_rate)]
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

fn usage(msg: String) -> i32 {
    eprintln!("error: {msg}");
    exit::USAGE
}

/// Run the server until stdin ends. Returns the exit code.
pub fn main(a: &AgentArgs) -> i32 {
    let design = match a.design.as_str() {
        "stored" => Design::Stored,
        "in-memory" => Design::InMemory,
        "adapter" => Design::Adapter,
        "cluster" => {
            return usage(
                "`cluster` is not served as a process (its nodes share the simulator's store host); use stored, in-memory or adapter".into(),
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
            "--fault-at and --slow-resume-ms need --wire-log (the log counts prompts across restarts)"
                .into(),
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
    match serve(cfg, a) {
        Ok(()) => exit::VALID,
        Err(e) => {
            eprintln!("acp-chaos agent: {e:#}");
            exit::USAGE
        }
    }
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

/// The store folder: `sessions.log`, framed records (`models::store`) that begin each start
/// with a boot record `{"t": "boot", "boot": N}` (the model skips it).
struct StoreDir {
    dir: PathBuf,
    log: Option<std::fs::File>,
    /// `--lose-unsynced`: records not synced yet, written at the next sync.
    unsynced: Option<Vec<u8>>,
}

/// The boot number a record shows was used: a boot record's, an arrival's `boot`, or the
/// boot in a session or message id the model handed out (`s<boot>.<n>`, `m<boot>.<n>`). 0
/// when none.
fn boot_of(r: &serde_json::Value) -> u64 {
    let from_id = |v: &serde_json::Value, letter: char| {
        v.as_str()
            .and_then(|s| s.strip_prefix(letter))
            .and_then(|s| s.split_once('.'))
            .and_then(|(b, _)| b.parse::<u64>().ok())
            .unwrap_or(0)
    };
    [
        r["boot"].as_u64().unwrap_or(0),
        from_id(&r["id"], 's'),
        from_id(&r["session"], 's'),
        from_id(&r["from"], 's'),
        from_id(&r["messageId"], 'm'),
    ]
    .into_iter()
    .max()
    .unwrap_or(0)
}

impl StoreDir {
    fn log_path(&self) -> PathBuf {
        self.dir.join("sessions.log")
    }

    /// Read the records, cutting a torn tail, and count this start: its boot number is one
    /// more than any boot the records show ([`boot_of`]) or the `boots` file of a store from
    /// before boot records counts, so a damaged or deleted file never hands out an id again.
    /// Errors (exit 2) when the log is damaged in the middle (`store::Damage::Corrupt`), naming
    /// the file and the byte offset: cutting there would drop acknowledged records.
    fn open(dir: &Path) -> anyhow::Result<(StoreDir, u32, Vec<serde_json::Value>)> {
        std::fs::create_dir_all(dir).map_err(|e| anyhow::anyhow!("{}: {e}", dir.display()))?;
        let mut disk = StoreDir {
            dir: dir.to_path_buf(),
            log: None,
            unsynced: None,
        };
        let path = disk.log_path();
        let named = |e: std::io::Error| anyhow::anyhow!("{}: {e}", path.display());
        let mut records = Vec::new();
        if path.exists() {
            let bytes = std::fs::read(&path).map_err(named)?;
            let found = store::recover(&bytes);
            match found.damage {
                Some(store::Damage::Corrupt { at, resumes }) => anyhow::bail!(
                    "{}: damaged at byte {at}: the record there fails its checksum and a valid record follows at byte {resumes}; refusing to start rather than drop the records after it (restore the file or move it away)",
                    path.display()
                ),
                Some(store::Damage::TornTail { at }) => {
                    let f = std::fs::OpenOptions::new()
                        .write(true)
                        .open(&path)
                        .map_err(named)?;
                    f.set_len(at as u64).map_err(named)?;
                    f.sync_all().map_err(named)?;
                    eprintln!(
                        "acp-chaos agent: {}: cut a torn tail ({} bytes from byte {at})",
                        path.display(),
                        bytes.len() - at
                    );
                }
                None => {}
            }
            records = found
                .records
                .iter()
                .filter_map(|r| serde_json::from_slice(r).ok())
                .collect();
        }
        // A store from before boot records counted its starts in `boots`, one line each.
        let legacy = std::fs::read_to_string(dir.join("boots"))
            .map(|s| s.lines().count() as u64)
            .unwrap_or(0);
        let last = records.iter().map(boot_of).max().unwrap_or(0).max(legacy);
        let Some(boot) = last.checked_add(1).and_then(|b| u32::try_from(b).ok()) else {
            anyhow::bail!("{}: boot counter at its limit ({last})", path.display());
        };
        disk.persist(&serde_json::json!({"t": "boot", "boot": boot}), true)
            .map_err(|e| anyhow::anyhow!("{}: {e:#}", path.display()))?;
        Ok((disk, boot, records))
    }

    fn persist(&mut self, record: &serde_json::Value, sync: bool) -> anyhow::Result<()> {
        let path = self.log_path();
        self.append(record, sync, &path)
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
    }

    fn append(
        &mut self,
        record: &serde_json::Value,
        sync: bool,
        path: &Path,
    ) -> anyhow::Result<()> {
        let created = !path.exists();
        if self.log.is_none() {
            self.log = Some(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)?,
            );
        }
        let framed = store::encode(&serde_json::to_vec(record)?);
        if let Some(held) = self.unsynced.as_mut() {
            held.extend_from_slice(&framed);
            if !sync {
                return Ok(());
            }
        }
        let f = self.log.as_mut().expect("opened above");
        match self.unsynced.as_mut() {
            // Everything held, this record included, goes out in order before the sync.
            Some(held) => f.write_all(&std::mem::take(held))?,
            None => f.write_all(&framed)?,
        }
        if sync {
            f.sync_all()?;
            if created {
                sync_dir(&self.dir)?;
            }
        }
        Ok(())
    }
}

fn sync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
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

fn serve(cfg: AgentConfig, a: &AgentArgs) -> anyhow::Result<()> {
    let persists = cfg.design != Design::InMemory;
    let (mut disk, boot, records) = match &a.store {
        Some(dir) => {
            let (mut d, b, mut r) = StoreDir::open(dir)?;
            if !persists {
                r.clear();
            }
            if a.lose_unsynced {
                d.unsynced = Some(Vec::new());
            }
            (Some(d), b, r)
        }
        None => (None, 1, Vec::new()),
    };
    let mut pipe = Pipe::new(match &a.wire_log {
        Some(path) => Some(
            WireLog::open(path, boot, a.fault_at.clone(), a.slow_resume_ms)
                .map_err(|e| anyhow::anyhow!("--wire-log {}: {e}", path.display()))?,
        ),
        None => None,
    });
    let mut model = ModelAgent::recover(cfg, boot, a.seed, &records);
    let (tx, rx) = mpsc::channel::<In>();
    let max_line = a.max_line_bytes;
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
        // Lines already read go first: a turn's timer that fell due while the process was
        // descheduled does not overtake a prompt that arrived before it (as on a quiet machine).
        let ready = match rx.try_recv() {
            Ok(ev) => Some(ev),
            Err(mpsc::TryRecvError::Disconnected) => Some(In::Eof),
            Err(mpsc::TryRecvError::Empty) => None,
        };
        let ev = match (ready, next) {
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
        };
        match ev {
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
