//! One trace run against a real Agent process: launch it in its own process group with a
//! temporary `HOME`, speak newline-delimited JSON-RPC on its stdin and stdout, kill the whole
//! group with SIGKILL, restart it, and record every frame and every decision of the probe's
//! Client as history ops (the agent side is inferred afterwards, see `infer`).
//!
//! Every wait is bounded: a reader thread per process feeds a channel read with
//! `recv_timeout`, so a process that never answers costs at most the timeout.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

use super::line_reader::{Line, LineReader, AGENT_OUTPUT_MAX_LINE_BYTES};
use crate::wall_clock::now;
use acp_chaos::history::{op, process, OpType};
use acp_chaos::models::rpc::{self, code};
use acp_chaos::report::clip;

/// The process group of the Agent running now (0: none), for the Ctrl-C handler: the group
/// is not in the terminal's foreground group, so an interrupt would not reach it.
pub static RUNNING_GROUP: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// Why a trace run could not go on (the run's properties that were not broken become
/// `unknown` with this reason).
pub type Abort = String;

/// One recorded op, before the agent side is inferred and the ops are numbered.
#[derive(Debug, Clone)]
pub struct RawOp {
    /// Wall ms since the run started.
    pub time_ms: u64,
    /// `user`, `client`, `net`, `nemesis`, `world` (and `agent` for the probe's own
    /// observations of the process: `exit`).
    pub process: &'static str,
    /// Jepsen type.
    pub kind: OpType,
    /// Function name.
    pub f: String,
    /// Payload.
    pub value: Value,
}

/// How to launch the Agent for one run.
#[derive(Debug, Clone)]
pub struct Launch {
    /// Program and arguments, placeholders already filled in.
    pub argv: Vec<String>,
    /// Extra environment (`HOME` is always the run's temporary home).
    pub env: Vec<(String, String)>,
    /// Start from an empty environment (a real agent's profile: no model key or base URL of
    /// the machine reaches it), then `env`.
    pub clear_env: bool,
    /// The run's temporary home (kept across the restarts of one run).
    pub home: PathBuf,
    /// The workspace folder: the process's cwd and the sessions' `cwd`.
    pub cwd: PathBuf,
    /// Bound of every wait.
    pub timeout: Duration,
}

/// What a process's reader thread reports.
pub enum Ev {
    /// One line of its stdout.
    Line(String),
    /// A line of its stdout that is not UTF-8 or is longer than
    /// [`AGENT_OUTPUT_MAX_LINE_BYTES`]: what it was (`Line::shown`), never the line repaired.
    Malformed(String),
    /// Its stdout ended.
    Eof,
}

/// A running Agent process (the leader of its own process group).
pub struct Proc {
    child: Child,
    pub(super) stdin: Option<ChildStdin>,
    pub(super) rx: Receiver<Ev>,
    stderr: Arc<Mutex<Vec<u8>>>,
}

impl Proc {
    /// Start it in its own process group, with a reader thread on its stdout and stderr.
    pub(super) fn spawn(l: &Launch) -> std::io::Result<Proc> {
        use std::os::unix::process::CommandExt;
        let mut cmd = Command::new(&l.argv[0]);
        if l.clear_env {
            cmd.env_clear();
        }
        cmd.args(&l.argv[1..])
            .current_dir(&l.cwd)
            .env("HOME", &l.home)
            .envs(l.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own process group: a kill reaches every child it spawned.
            .process_group(0);
        let mut child = cmd.spawn()?;
        RUNNING_GROUP.store(child.id() as i32, std::sync::atomic::Ordering::SeqCst);
        let stdout = child.stdout.take().expect("piped");
        let mut stderr = child.stderr.take().expect("piped");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let stdout = std::io::BufReader::new(stdout);
            let mut r = LineReader::new(stdout, AGENT_OUTPUT_MAX_LINE_BYTES);
            loop {
                let ev = match r.next_line() {
                    Ok(None) | Err(_) => {
                        let _ = tx.send(Ev::Eof);
                        return;
                    }
                    Ok(Some(Line::Text(line))) => Ev::Line(line),
                    Ok(Some(bad)) => Ev::Malformed(bad.shown().unwrap_or_default()),
                };
                if tx.send(ev).is_err() {
                    return;
                }
            }
        });
        let err = Arc::new(Mutex::new(Vec::new()));
        let sink = err.clone();
        std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(n) = stderr.read(&mut chunk) {
                if n == 0 {
                    return;
                }
                let mut s = sink.lock().expect("stderr buffer");
                s.extend_from_slice(&chunk[..n]);
                let excess = s.len().saturating_sub(64 * 1024);
                s.drain(..excess);
            }
        });
        Ok(Proc {
            stdin: child.stdin.take(),
            child,
            rx,
            stderr: err,
        })
    }

    /// [`Proc::spawn`], its failure said in the probe's words.
    pub(super) fn start(l: &Launch) -> Result<Proc, Abort> {
        Proc::spawn(l).map_err(|e| {
            format!(
                "could not start `{}`: {e}",
                l.argv.first().cloned().unwrap_or_default()
            )
        })
    }

    /// SIGKILL to the whole process group, then reap the leader.
    pub(super) fn kill_group(&mut self) {
        let pgid = self.child.id() as i32;
        // SAFETY: kill(2) with a negative pid signals the process group we created.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
        let _ = RUNNING_GROUP.compare_exchange(
            pgid,
            0,
            std::sync::atomic::Ordering::SeqCst,
            std::sync::atomic::Ordering::SeqCst,
        );
        let _ = self.child.wait();
    }

    fn status(&mut self) -> String {
        for _ in 0..20 {
            if let Ok(Some(s)) = self.child.try_wait() {
                return s.to_string();
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        "it closed its stdout but is still running".into()
    }

    pub(super) fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().expect("stderr buffer")).into_owned()
    }
}

/// How one submission ended on the probe's Client side.
#[derive(Debug, Clone, PartialEq)]
pub enum Settled {
    /// The Client holds its messageId.
    Acked(String),
    /// Shown to the user as failed.
    Surfaced,
    /// Withdrawn by its own user's cancel.
    Withdrawn,
}

/// One user input and its attempts.
#[derive(Debug, Clone)]
pub struct Sub {
    /// The idempotency key (the same on every attempt, C1).
    pub key: String,
    /// The prompt text, which holds the marker.
    pub text: String,
    /// The marker naming it in any replay (and in what a mock model is sent).
    pub marker: String,
    /// (connection, JSON-RPC id) of each attempt.
    pub attempts: Vec<(u64, u64)>,
    /// How it ended, once it did.
    pub settled: Option<Settled>,
    /// Resends after an error.
    pub retries: u32,
    /// Its user asked to cancel it.
    pub cancelled: bool,
    /// An error left it unsettled: resend with the same key.
    pub needs_retry: bool,
}

/// A quiet period: no frame for this long (see [`Driver::quiesce`]).
const QUIET_MS: u64 = 50;

/// How long after a new insertion's answer [`Driver::quiesce`] waits for its turn's
/// `running` before taking the Agent for quiet.
const TURN_GRACE_MS: u64 = 1_000;

/// Resends after a transient error before the input is shown to the user as failed.
const RETRIES_MAX: u32 = 2;

/// The state of one trace run.
pub struct Driver {
    launch: Launch,
    t0: Instant,
    /// Ops so far.
    pub ops: Vec<RawOp>,
    proc: Option<Proc>,
    /// Current connection: one per process start, from 1.
    pub conn: u64,
    next_id: u64,
    /// Answers to our requests: (conn, id) → (frame, ms).
    pub answers: BTreeMap<(u64, u64), (Value, u64)>,
    /// Our requests on a live connection still waiting for an answer → method.
    pub outstanding: BTreeMap<(u64, u64), String>,
    /// The session the trace works in.
    pub session: Option<String>,
    /// Submissions by number.
    pub subs: BTreeMap<u64, Sub>,
    raws: u64,
    rng: ChaCha8Rng,
    tag: String,
    /// What never came, and other remarks for the report.
    pub notes: Vec<String>,
    /// Timing windows a trace aimed at and whether the run hit them.
    pub windows: Vec<(String, bool)>,
    sent: BTreeSet<String>,
    /// Everything the processes wrote on stderr.
    pub stderr: String,
    exited: Option<String>,
    /// `session/update` params seen, with (conn, ms).
    pub updates: Vec<(u64, Value, u64)>,
    /// Error answers with `id: null` (a line the Agent could not parse, `-32700`).
    pub null_answers: u64,
    /// Some start of the process answered `initialize` (a run that never got that far probed
    /// something that is not an ACP agent).
    pub initialized: bool,
    stdin_closed: bool,
    /// messageIds the Agent answered a prompt with or replayed: an answer with one not seen
    /// before is a new insertion, whose turn [`Driver::quiesce`] waits out.
    seen_ids: BTreeSet<String>,
    /// Connections with a new insertion answered and no idle `state_update` since: (ms of
    /// the answer, a `running` came since).
    turn_due: BTreeMap<u64, (u64, bool)>,
}

impl Driver {
    /// A run with its launch settings; `seed` makes the keys and markers.
    pub fn new(launch: Launch, seed: u64) -> Driver {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let tag = format!("{:06x}", rng.gen::<u32>() & 0xff_ffff);
        Driver {
            launch,
            t0: now(),
            ops: Vec::new(),
            proc: None,
            conn: 0,
            next_id: 0,
            answers: BTreeMap::new(),
            outstanding: BTreeMap::new(),
            session: None,
            subs: BTreeMap::new(),
            raws: 0,
            rng,
            tag,
            notes: Vec::new(),
            windows: Vec::new(),
            sent: BTreeSet::new(),
            stderr: String::new(),
            exited: None,
            updates: Vec::new(),
            null_answers: 0,
            initialized: false,
            stdin_closed: false,
            seen_ids: BTreeSet::new(),
            turn_due: BTreeMap::new(),
        }
    }

    /// Wall ms since the run started.
    pub fn ms(&self) -> u64 {
        self.t0.elapsed().as_millis() as u64
    }

    /// The run's bound for one wait.
    pub fn timeout(&self) -> Duration {
        self.launch.timeout
    }

    fn op(&mut self, process: &'static str, kind: OpType, f: &str, value: Value) {
        let time_ms = self.ms();
        self.op_at(time_ms, process, kind, f, value);
    }

    fn op_at(&mut self, time_ms: u64, process: &'static str, kind: OpType, f: &str, value: Value) {
        self.ops.push(RawOp {
            time_ms,
            process,
            kind,
            f: f.to_string(),
            value,
        });
    }

    /// Whether a process is running and talking.
    pub fn alive(&self) -> bool {
        self.proc.is_some() && self.exited.is_none() && !self.stdin_closed
    }

    /// Start the Agent (a restart when one ran before) and `initialize` it.
    pub fn start(&mut self) -> Result<(), Abort> {
        self.conn += 1;
        self.exited = None;
        self.stdin_closed = false;
        self.sent.clear();
        if self.conn > 1 {
            self.op(
                process::NEMESIS,
                OpType::Info,
                op::RESTART,
                json!({"host": "agent"}),
            );
        }
        let p = Proc::start(&self.launch)?;
        self.proc = Some(p);
        let conn = self.conn;
        self.op(
            process::NET,
            OpType::Info,
            op::CONN_OPEN,
            json!({"conn": conn, "seen_by": "agent", "transport": "stdio"}),
        );
        let mut init = rpc::initialize_params("acp-chaos-probe", env!("CARGO_PKG_VERSION"));
        init["capabilities"] = json!({});
        let id = self.request("initialize", init);
        let answer = self.wait_answer(id, self.timeout())?;
        let Some(frame) = answer else {
            return Err(match &self.exited {
                Some(why) => format!("the agent exited before answering initialize ({why})"),
                None => format!(
                    "no answer to initialize within {} ms (is it an ACP agent on stdio?)",
                    self.timeout().as_millis()
                ),
            });
        };
        if let Some(e) = frame.get("error") {
            return Err(format!("initialize failed: {e}"));
        }
        match frame["result"]["protocolVersion"].as_u64() {
            Some(2) => {
                self.initialized = true;
                Ok(())
            }
            Some(v) => Err(format!(
                "the agent answered initialize with protocol version {v}; the probe needs ACP v2 (idempotencyKey)"
            )),
            None => Err(format!(
                "the answer to initialize is not an ACP InitializeResponse: {}",
                clip(&frame.to_string(), 200)
            )),
        }
    }

    /// `session/new`; the session becomes the trace's.
    pub fn new_session(&mut self) -> Result<String, Abort> {
        let cwd = self.launch.cwd.display().to_string();
        let id = self.request("session/new", json!({"cwd": cwd, "mcpServers": []}));
        let frame = self.wait_answer(id, self.timeout())?.ok_or_else(|| {
            self.never("session/new", id);
            format!(
                "no answer to session/new within {} ms",
                self.timeout().as_millis()
            )
        })?;
        let sid = frame["result"]["sessionId"]
            .as_str()
            .ok_or_else(|| format!("session/new failed: {}", clip(&frame.to_string(), 200)))?
            .to_string();
        self.session = Some(sid.clone());
        Ok(sid)
    }

    /// `session/resume` of the trace's session, with `replayFrom: start` or without; returns
    /// the answer (success or error). A resume never answered aborts the run.
    pub fn resume(&mut self, replay: bool) -> Result<Value, Abort> {
        let id = self.resume_send(replay)?;
        self.wait_answer(id, self.timeout())?.ok_or_else(|| {
            self.never("session/resume", id);
            format!(
                "no answer to session/resume within {} ms",
                self.timeout().as_millis()
            )
        })
    }

    /// Write `session/resume` of the trace's session (with `replayFrom: start` or without)
    /// and return its JSON-RPC id, without waiting for the answer.
    pub fn resume_send(&mut self, replay: bool) -> Result<u64, Abort> {
        let sid = self.session.clone().ok_or("no session to resume")?;
        let cwd = self.launch.cwd.display().to_string();
        let mut params = json!({"sessionId": sid, "cwd": cwd, "mcpServers": []});
        if replay {
            params["replayFrom"] = json!({"type": "start"});
        }
        Ok(self.request("session/resume", params))
    }

    /// `session/list` (answered or not: P8 scans whatever comes).
    pub fn list(&mut self) -> Result<(), Abort> {
        let cwd = self.launch.cwd.display().to_string();
        let id = self.request("session/list", json!({"cwd": cwd}));
        if self.wait_answer(id, self.timeout())?.is_none() {
            self.never("session/list", id);
        }
        Ok(())
    }

    fn never(&mut self, method: &str, id: u64) {
        let n = format!(
            "no answer to {method} #{id} on connection {} within {} ms",
            self.conn,
            self.timeout().as_millis()
        );
        if !self.notes.contains(&n) {
            self.notes.push(n);
        }
    }

    /// A new user input: a fresh key and a text with a marker that names it in any replay.
    pub fn submit(&mut self, n: u64) {
        let key = uuid::Builder::from_random_bytes(self.rng.gen())
            .into_uuid()
            .to_string();
        let marker = format!("[probe-{}-s{n}]", self.tag);
        let text = format!("Reply with the word OK. {marker}");
        self.op(
            process::USER,
            OpType::Invoke,
            op::SUBMIT,
            json!({"submission": n, "slot": 0, "text": text, "marker": marker}),
        );
        self.subs.insert(
            n,
            Sub {
                key,
                text,
                marker: marker.clone(),
                attempts: Vec::new(),
                settled: None,
                retries: 0,
                cancelled: false,
                needs_retry: false,
            },
        );
    }

    /// Send one attempt of submission `n` (its key, a new JSON-RPC id); returns (conn, id).
    pub fn attempt(&mut self, n: u64) -> Result<(u64, u64), Abort> {
        if !self.alive() {
            return Err(self.gone());
        }
        let sid = self.session.clone().ok_or("no session")?;
        let sub = self.subs.get(&n).cloned().ok_or("unknown submission")?;
        self.next_id += 1;
        let id = self.next_id;
        let conn = self.conn;
        self.op(
            process::CLIENT,
            OpType::Invoke,
            op::ATTEMPT,
            json!({"submission": n, "conn": conn, "id": id, "key": sub.key}),
        );
        let frame = json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
            "params": rpc::prompt_params(&sid, &sub.text, Some(json!(sub.key)))});
        self.outstanding
            .insert((conn, id), "session/prompt".to_string());
        if let Some(s) = self.subs.get_mut(&n) {
            s.attempts.push((conn, id));
            s.needs_retry = false;
        }
        self.write(&frame.to_string(), Some(frame.clone()));
        Ok((conn, id))
    }

    /// A raw `session/prompt` whose key is the JSON text `key_json` (K2/K3 probes): written
    /// as is, so even text that is not JSON (a lone surrogate) goes out. Returns the id.
    pub fn raw_prompt(&mut self, key_json: &str) -> Result<u64, Abort> {
        if !self.alive() {
            return Err(self.gone());
        }
        let sid = self.session.clone().ok_or("no session")?;
        self.raws += 1;
        let n = self.raws;
        self.next_id += 1;
        let id = self.next_id;
        let conn = self.conn;
        let marker = format!("[probe-{}-r{n}]", self.tag);
        let text = format!("Reply with the word OK. {marker}");
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"session/prompt","params":{{"sessionId":{},"prompt":[{{"type":"text","text":{}}}],"idempotencyKey":{key_json}}}}}"#,
            Value::from(sid),
            Value::from(text.clone()),
        );
        self.op(
            process::CLIENT,
            OpType::Info,
            op::RAW_SENT,
            json!({"n": n, "conn": conn, "id": id, "line": line, "marker": marker}),
        );
        let frame = serde_json::from_str::<Value>(&line).ok();
        if frame.is_some() {
            // Text that is not JSON is answered with `id: null` (-32700), never with this id.
            self.outstanding
                .insert((conn, id), "session/prompt".to_string());
        }
        self.write(&line, frame);
        Ok(id)
    }

    /// The user cancels submission `n` with `$/cancel_request` naming attempt `id`.
    pub fn cancel_request(&mut self, n: u64, id: u64) -> Result<(), Abort> {
        self.user_cancel(n);
        self.notify("$/cancel_request", json!({"requestId": id}))
    }

    /// The user presses stop: `session/cancel` (withdraws the inputs `pending` too).
    pub fn session_cancel(&mut self, pending: &[u64]) -> Result<(), Abort> {
        let sid = self.session.clone().ok_or("no session")?;
        self.op(process::USER, OpType::Invoke, op::STOP, json!({"slot": 0}));
        for n in pending {
            if let Some(s) = self.subs.get_mut(n) {
                s.cancelled = true;
            }
        }
        self.notify("session/cancel", json!({"sessionId": sid}))
    }

    fn user_cancel(&mut self, n: u64) {
        self.op(
            process::USER,
            OpType::Invoke,
            op::CANCEL,
            json!({"submission": n}),
        );
        if let Some(s) = self.subs.get_mut(&n) {
            s.cancelled = true;
        }
    }

    fn notify(&mut self, method: &str, params: Value) -> Result<(), Abort> {
        if !self.alive() {
            return Err(self.gone());
        }
        let frame = json!({"jsonrpc": "2.0", "method": method, "params": params});
        self.write(&frame.to_string(), Some(frame.clone()));
        Ok(())
    }

    fn request(&mut self, method: &str, params: Value) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        let frame = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.outstanding.insert((self.conn, id), method.to_string());
        self.write(&frame.to_string(), Some(frame.clone()));
        id
    }

    /// Write one line; log it as sent by the Client and read by the Agent (one observation at
    /// our end of the pipe). A line that is not JSON is logged as a JSON string (as the
    /// simulator logs a raw probe's malformed frame).
    fn write(&mut self, line: &str, frame: Option<Value>) {
        let conn = self.conn;
        let frame = frame.unwrap_or_else(|| Value::String(line.to_string()));
        let ok = match self.proc.as_mut().and_then(|p| p.stdin.as_mut()) {
            Some(w) => w
                .write_all(line.as_bytes())
                .and_then(|_| w.write_all(b"\n"))
                .and_then(|_| w.flush())
                .is_ok(),
            None => false,
        };
        self.sent.insert(line.to_string());
        self.op(
            process::NET,
            OpType::Info,
            op::SEND,
            json!({"conn": conn, "from": "client", "frame": frame}),
        );
        if ok {
            self.op(
                process::NET,
                OpType::Info,
                op::RECV,
                json!({"conn": conn, "from": "client", "frame": frame}),
            );
        } else {
            // What it wrote before it went is still read; the pump sees its end.
            self.stdin_closed = true;
        }
    }

    fn gone(&self) -> Abort {
        format!(
            "the agent process is gone ({})",
            self.exited.clone().unwrap_or_else(|| "not running".into())
        )
    }

    /// Wait for the answer to our request `id` on the current connection.
    pub fn wait_answer(&mut self, id: u64, limit: Duration) -> Result<Option<Value>, Abort> {
        let key = (self.conn, id);
        self.pump_until(limit, |d| d.answers.contains_key(&key))?;
        Ok(self.answers.get(&key).map(|(f, _)| f.clone()))
    }

    /// Read frames until `done` holds, the process ends, or `limit` passes. Returns `done`.
    pub fn pump_until(
        &mut self,
        limit: Duration,
        done: impl Fn(&Driver) -> bool,
    ) -> Result<bool, Abort> {
        let deadline = now() + limit;
        loop {
            if done(self) {
                return Ok(true);
            }
            let left = deadline.saturating_duration_since(now());
            if left.is_zero() || self.exited.is_some() {
                return Ok(done(self));
            }
            let Some(p) = self.proc.as_ref() else {
                return Ok(false);
            };
            match p.rx.recv_timeout(left) {
                Ok(Ev::Line(l)) => {
                    let t = self.ms();
                    self.on_line(l, t)?
                }
                Ok(Ev::Malformed(l)) => {
                    let t = self.ms();
                    self.on_malformed(l, t)?
                }
                Ok(Ev::Eof) | Err(RecvTimeoutError::Disconnected) => self.on_exit(),
                Err(RecvTimeoutError::Timeout) => {}
            }
        }
    }

    /// Read whatever comes for `ms` (a quiet period).
    pub fn pump_for(&mut self, ms: u64) -> Result<(), Abort> {
        self.pump_until(Duration::from_millis(ms), |_| false)?;
        Ok(())
    }

    fn on_exit(&mut self) {
        if self.exited.is_some() {
            return;
        }
        let Some(p) = self.proc.as_mut() else { return };
        let status = p.status();
        let err = p.stderr_text();
        let conn = self.conn;
        let tail = last_line(&err);
        let why = if tail.is_empty() {
            status.clone()
        } else {
            format!("{status}; stderr: {tail}")
        };
        self.op(
            process::AGENT,
            OpType::Info,
            "exit",
            json!({"conn": conn, "status": status, "unexpected": true}),
        );
        self.op(
            process::CLIENT,
            OpType::Info,
            op::CONN_END,
            json!({"conn": conn}),
        );
        self.outstanding.retain(|k, _| k.0 != conn);
        self.exited = Some(why);
    }

    /// A line of the Agent's that is no frame: logged as `not-json` (so no checker reads it
    /// as a message), and noted once with `note`. Before any answer it ends the run: the
    /// command does not speak JSON-RPC.
    fn not_json(&mut self, line: &str, note: &str, t: u64) -> Result<(), Abort> {
        let conn = self.conn;
        self.op_at(
            t,
            "net",
            OpType::Info,
            "not-json",
            json!({"conn": conn, "from": "agent", "line": clip(line, 500)}),
        );
        if self.answers.is_empty() {
            return Err(format!(
                "it wrote a line that is not JSON-RPC before answering initialize: {}",
                clip(line, 120)
            ));
        }
        let n = note.to_string();
        if !self.notes.contains(&n) {
            self.notes.push(n);
        }
        Ok(())
    }

    /// A line the reader refused (`Ev::Malformed`: not UTF-8, or past the bound): not JSON
    /// text (RFC 8259 §8.1 asks for UTF-8), so no frame. A repaired line could read as a valid
    /// answer the Agent never wrote; as no frame, a request it answers stays unanswered.
    fn on_malformed(&mut self, shown: String, t: u64) -> Result<(), Abort> {
        let note = format!(
            "the agent wrote lines that are not UTF-8 or longer than {} MiB on stdout (no frame)",
            AGENT_OUTPUT_MAX_LINE_BYTES >> 20
        );
        self.not_json(&shown, &note, t)
    }

    fn on_line(&mut self, line: String, t: u64) -> Result<(), Abort> {
        let conn = self.conn;
        if line.trim().is_empty() {
            return Ok(());
        }
        if self.sent.contains(&line) {
            return Err(
                "the command echoes what it reads (it wrote our own request back): not an ACP agent"
                    .into(),
            );
        }
        let Ok(frame) = serde_json::from_str::<Value>(&line) else {
            return self.not_json(
                &line,
                "the agent wrote lines that are not JSON on stdout",
                t,
            );
        };
        for f in ["send", "recv"] {
            self.op_at(
                t,
                "net",
                OpType::Info,
                f,
                json!({"conn": conn, "from": "agent", "frame": frame}),
            );
        }
        let method = frame.get("method").and_then(Value::as_str);
        let id = frame.get("id").filter(|i| !i.is_null());
        match (method, id) {
            (Some(m), Some(id)) => {
                let id = id.clone();
                let m = m.to_string();
                self.answer_agent_request(&m, &id, &frame["params"]);
            }
            (Some("session/update"), None) => {
                let u = &frame["params"]["update"];
                let kind = u["sessionUpdate"].as_str().unwrap_or("");
                if kind == "state_update" && u["state"] == "idle" {
                    self.turn_due.remove(&conn);
                } else if kind == "state_update" {
                    if let Some(d) = self.turn_due.get_mut(&conn) {
                        d.1 = true;
                    }
                }
                let replaying = self
                    .outstanding
                    .iter()
                    .any(|((c, _), m)| *c == conn && m == "session/resume");
                if let (true, Some(m)) = (
                    replaying && (kind == "user_message" || kind == "user_message_chunk"),
                    u["messageId"].as_str(),
                ) {
                    self.seen_ids.insert(m.to_string());
                }
                self.updates.push((conn, frame["params"].clone(), t));
            }
            (Some(_), None) => {}
            (None, _) => {
                let Some(id) = frame.get("id").and_then(Value::as_u64) else {
                    if frame.get("id").is_some_and(Value::is_null) {
                        self.null_answers += 1;
                    }
                    return Ok(());
                };
                let key = (conn, id);
                if let Some(m) = frame["result"]["messageId"].as_str() {
                    if self.seen_ids.insert(m.to_string()) {
                        self.turn_due.insert(conn, (t, false));
                    }
                }
                self.outstanding.remove(&key);
                self.answers.entry(key).or_insert((frame.clone(), t));
                self.on_prompt_answer(key, &frame);
            }
        }
        Ok(())
    }

    /// Agent→Client requests: permission is granted with an allow option; anything else is
    /// `-32601`.
    fn answer_agent_request(&mut self, method: &str, id: &Value, params: &Value) {
        let reply = if method == "session/request_permission" {
            let opts = params["options"].as_array().cloned().unwrap_or_default();
            let pick = opts
                .iter()
                .find(|o| o["kind"].as_str().is_some_and(|k| k.starts_with("allow")))
                .or(opts.first())
                .and_then(|o| o["optionId"].as_str())
                .unwrap_or("allow")
                .to_string();
            json!({"jsonrpc": "2.0", "id": id, "result": {"outcome": {"outcome": "selected", "optionId": pick}}})
        } else {
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": code::METHOD_NOT_FOUND, "message": "Method not found"}})
        };
        self.write(&reply.to_string(), Some(reply.clone()));
    }

    /// The probe's Client: what an answer to an attempt means for its submission.
    fn on_prompt_answer(&mut self, key: (u64, u64), frame: &Value) {
        let Some((n, sub)) = self
            .subs
            .iter()
            .find(|(_, s)| s.attempts.contains(&key))
            .map(|(n, s)| (*n, s.clone()))
        else {
            return;
        };
        if sub.settled.is_some() {
            return;
        }
        let (conn, id) = key;
        if let Some(m) = frame["result"]["messageId"].as_str() {
            self.settle(
                n,
                Settled::Acked(m.to_string()),
                json!({"submission": n, "messageId": m, "conn": conn, "id": id}),
            );
            return;
        }
        // Another attempt of it may still answer with the messageId (A7).
        let waiting = sub
            .attempts
            .iter()
            .any(|a| *a != key && self.outstanding.contains_key(a));
        if waiting {
            return;
        }
        let c = frame["error"]["code"].as_i64();
        match c {
            Some(code::REQUEST_CANCELLED) if sub.cancelled => self.settle(
                n,
                Settled::Withdrawn,
                json!({"submission": n, "conn": conn, "id": id}),
            ),
            // A failure before insertion (A2/A3): nothing was inserted, send it again.
            Some(code::INTERNAL_ERROR) if sub.retries < RETRIES_MAX => {
                if let Some(s) = self.subs.get_mut(&n) {
                    s.needs_retry = true;
                }
            }
            _ => {
                let why = match c {
                    Some(c) => format!("error {c}"),
                    None => "a result without messageId".to_string(),
                };
                self.settle(
                    n,
                    Settled::Surfaced,
                    json!({"submission": n, "conn": conn, "id": id, "reason": why}),
                )
            }
        }
    }

    fn settle(&mut self, n: u64, how: Settled, value: Value) {
        let (kind, f) = match how {
            Settled::Acked(_) => (OpType::Ok, "ack"),
            Settled::Surfaced => (OpType::Fail, "surface"),
            Settled::Withdrawn => (OpType::Fail, "withdrawn"),
        };
        if let Some(s) = self.subs.get_mut(&n) {
            s.settled = Some(how);
            s.needs_retry = false;
        }
        self.op("client", kind, f, value);
    }

    /// Kill the whole process group with SIGKILL (what the Agent wrote before it died is read
    /// first, logged at the kill's time).
    pub fn kill(&mut self, why: &str) {
        let t = self.ms();
        let conn = self.conn;
        if let Some(mut p) = self.proc.take() {
            p.kill_group();
            let drain_until = now() + Duration::from_millis(500);
            loop {
                let left = drain_until.saturating_duration_since(now());
                match p.rx.recv_timeout(left) {
                    Ok(ev @ (Ev::Line(_) | Ev::Malformed(_))) => {
                        self.proc = Some(p);
                        let r = match ev {
                            Ev::Line(l) => self.on_line(l, t),
                            Ev::Malformed(l) => self.on_malformed(l, t),
                            Ev::Eof => Ok(()),
                        };
                        p = self.proc.take().expect("put back above");
                        if r.is_err() {
                            break;
                        }
                    }
                    _ => break,
                }
            }
            self.stderr.push_str(&p.stderr_text());
        }
        self.op_at(
            t,
            "nemesis",
            OpType::Info,
            acp_chaos::nemesis::logged::CRASH_AGENT,
            json!({"fault": 0, "spec": why, "host": "agent", "signal": "SIGKILL to the process group"}),
        );
        self.op_at(
            t,
            "nemesis",
            OpType::Info,
            "crash",
            json!({"host": "agent"}),
        );
        for p in ["client", "agent"] {
            self.op_at(
                t,
                p,
                OpType::Info,
                "conn-end",
                json!({"conn": conn, "reason": "SIGKILL"}),
            );
        }
        self.outstanding.retain(|k, _| k.0 != conn);
        self.exited = None;
    }

    /// Settle what is open: resend inputs an error left unsettled (same key), wait for every
    /// answer (bounded), read the whole history once more (`session/resume` with replay on
    /// the live connection), then log the end.
    pub fn finish(&mut self) -> Result<(), Abort> {
        let deadline = now() + self.timeout();
        loop {
            // Inputs left open with no attempt in flight (an error to retry, or attempts lost
            // with a connection) are resent with the same key (C1), at most RETRIES_MAX times.
            let retry = self.resend_due();
            if !retry.is_empty() && self.alive() {
                self.pump_for(20)?;
                for n in retry {
                    if let Some(s) = self.subs.get_mut(&n) {
                        s.retries += 1;
                    }
                    self.attempt(n)?;
                }
            }
            let left = deadline.saturating_duration_since(now());
            self.pump_until(left, |d| {
                d.outstanding.is_empty() || !d.resend_due().is_empty()
            })?;
            let settled = self.outstanding.is_empty() && self.resend_due().is_empty();
            if settled || left.is_zero() || !self.alive() {
                break;
            }
        }
        // Errors still unsettled after the resends: shown to the user as failed (C8).
        let gave_up: Vec<u64> = self
            .subs
            .iter()
            .filter(|(_, s)| s.needs_retry && s.settled.is_none())
            .map(|(n, _)| *n)
            .collect();
        for n in gave_up {
            let retries = self.subs[&n].retries;
            self.settle(
                n,
                Settled::Surfaced,
                json!({"submission": n, "reason": format!("gave up after {retries} resends")}),
            );
        }
        let open: Vec<((u64, u64), String)> = self
            .outstanding
            .iter()
            .map(|(k, m)| (*k, m.clone()))
            .collect();
        for ((_, id), m) in open {
            self.never(&m, id);
        }
        if self.alive() && self.session.is_some() && self.outstanding.is_empty() {
            // The whole history as the Agent keeps it now.
            self.quiesce()?;
            let _ = self.resume(true);
        }
        self.log_pending_at_end();
        let outcome = if self.outstanding.is_empty() {
            "quiescent"
        } else {
            "bound"
        };
        self.op(
            process::WORLD,
            OpType::Info,
            op::END,
            json!({"outcome": outcome, "undelivered": 0, "clock": "wall"}),
        );
        Ok(())
    }

    /// End the run: close stdin, give the process a moment, then SIGKILL its group (children
    /// included) whatever it does.
    pub fn stop(&mut self) {
        if let Some(mut p) = self.proc.take() {
            p.stdin.take();
            let until = now() + Duration::from_millis(200);
            while now() < until {
                if let Ok(Some(_)) = p.child.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            p.kill_group();
            self.stderr.push_str(&p.stderr_text());
        }
    }

    /// Wait (bounded) until every request is answered, the session's last state on this
    /// connection is idle and every new insertion answered on it has had its turn end (an
    /// idle `state_update` after its answer; when the Agent reports states), and nothing
    /// arrives for a quiet period: so a request sent next does not cross a live update in the
    /// pipe (X4 reads what comes between a resume and its answer). A prompt's answer may come
    /// before its turn's `running`: the quiet period that follows sends it back to waiting.
    pub fn quiesce(&mut self) -> Result<(), Abort> {
        let deadline = now() + self.timeout();
        let conn = self.conn;
        let settled = |d: &Driver| {
            let states = d
                .updates
                .iter()
                .filter(|(c, p, _)| *c == conn && p["update"]["sessionUpdate"] == "state_update");
            let reports = states.clone().next().is_some();
            let last = states
                .map(|(_, p, _)| p["update"]["state"].clone())
                .next_back();
            d.outstanding.is_empty()
                && last.is_none_or(|s| s == "idle")
                && !(reports
                    && d.turn_due.get(&conn).is_some_and(|(at, running)| {
                        // No `running` within the grace: no turn is coming (or it came first).
                        *running || d.ms() < at + TURN_GRACE_MS
                    }))
        };
        while now() < deadline && self.alive() {
            if !settled(self) {
                // In slices: the turn's grace runs out with no frame arriving.
                let left = deadline.saturating_duration_since(now());
                self.pump_until(left.min(Duration::from_millis(QUIET_MS)), settled)?;
                continue;
            }
            let before = self.ops.len();
            self.pump_for(QUIET_MS)?;
            if self.ops.len() == before && settled(self) {
                break;
            }
        }
        Ok(())
    }

    /// Open inputs to send again now: not settled, not cancelled by their user, resends left,
    /// no attempt in flight.
    fn resend_due(&self) -> Vec<u64> {
        self.subs
            .iter()
            .filter(|(_, s)| {
                s.settled.is_none()
                    && !s.cancelled
                    && s.retries < RETRIES_MAX
                    && !s.attempts.is_empty()
                    && !s.attempts.iter().any(|a| self.outstanding.contains_key(a))
            })
            .map(|(n, _)| *n)
            .collect()
    }

    /// The mock model's oracle for each input: how many turn requests carried its marker and
    /// the most copies of it in one request (two copies: the model was given a second
    /// insertion). Logged as `mock model-saw` ops, which `checkers::black_box::agent::second_round` judges.
    pub fn model_saw(&mut self, m: &crate::probe::mock_model::MockModel) -> Value {
        let mut out = serde_json::Map::new();
        let subs: Vec<(u64, String)> = self
            .subs
            .iter()
            .map(|(n, s)| (*n, s.marker.clone()))
            .collect();
        for (n, marker) in subs {
            let t = m.marker_tally(&marker);
            let v = json!({"submission": n, "marker": marker, "requests": t.requests,
                "copies_max": t.copies_max, "turns": t.turns});
            // Two copies in one request is judged as P1 (A1) by `checkers::black_box::agent::second_round`.
            self.op("mock", OpType::Info, "model-saw", v.clone());
            out.insert(n.to_string(), v);
        }
        Value::Object(out)
    }

    /// The Client's `pending-at-end` op: submissions not settled (P2 reads it).
    fn log_pending_at_end(&mut self) {
        let pending: Vec<u64> = self
            .subs
            .iter()
            .filter(|(_, s)| s.settled.is_none())
            .map(|(n, _)| *n)
            .collect();
        self.op(
            process::CLIENT,
            OpType::Info,
            op::PENDING_AT_END,
            json!({"submissions": pending}),
        );
    }

    /// Log an aborted run's end (nothing more will come).
    pub fn end_aborted(&mut self, why: &str) {
        self.log_pending_at_end();
        self.op(
            process::WORLD,
            OpType::Info,
            op::END,
            json!({"outcome": "aborted", "reason": why, "undelivered": 0, "clock": "wall"}),
        );
    }

    /// Mark a timing window the trace aimed at as hit or missed.
    pub fn window(&mut self, name: &str, hit: bool) {
        self.windows.push((name.to_string(), hit));
    }

    /// Whether any answer to an attempt of `n` has arrived.
    pub fn answered(&self, n: u64) -> bool {
        self.subs
            .get(&n)
            .is_some_and(|s| s.attempts.iter().any(|a| self.answers.contains_key(a)))
    }
}

/// The last non-empty line of a text, clipped.
pub fn last_line(s: &str) -> String {
    clip(
        s.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or(""),
        200,
    )
}
