//! The served Agent's wire log and faults: what `acp-chaos agent --wire-log FILE` writes, and
//! where `--fault-at POINT:N` kills it or holds a response, for `acp-chaos probe --client`.
//!
//! A Client under test spawns our model Agent as its own child process; the probe cannot sit
//! on that pipe, so the Agent itself records the ground truth: every line it read (`in`), every
//! line it wrote (`out`), its effects (`effect`, the simulator's ground truth: `insert`,
//! `dedup-hit`, ...), its starts and ends, and the crash it was told to die at. One JSON object
//! per line, appended and flushed as it happens, so a SIGKILL loses nothing already logged:
//!
//! ```text
//! {"boot":1,"start":true}
//! {"boot":1,"in":{"jsonrpc":"2.0","id":3,"method":"session/prompt",...}}
//! {"boot":1,"effect":"insert","value":{...}}
//! {"boot":1,"in":"a line of 9 bytes that is not UTF-8 (invalid byte at offset 3): ...","refused":true}
//! {"boot":1,"crash":"before-response:1"}
//! {"boot":2,"start":true}
//! ```
//!
//! `boot` is the process's start number (from the store's boot counter): one boot is one
//! process, so one connection. A fault point counts `session/prompt` requests over every boot
//! of the log, and fires once: a restarted Agent reads the log to know which fired.
//!
//! A held response (`stall-response`, and every `session/resume` answer after a restart with
//! `--slow-resume-ms`) waits in [`Pipe`] while the Agent goes on reading, and every line
//! written after it waits behind it, as on a slow pipe; `out` is logged when the line is
//! written. So the log's order is what each side could know: a Client line logged before the
//! `out` of a response was sent before that response reached the Client (C4, C6).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// Where a served Agent kills itself or holds a response, counted in `session/prompt` requests (`nth`, from 1,
/// over every boot of the wire log).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ServedFault {
    /// The point in the nth prompt's life.
    pub point: FaultPoint,
    /// Which `session/prompt` request, from 1.
    pub nth: u32,
}

/// A point in one `session/prompt` request's life at the served Agent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum FaultPoint {
    /// Read, before the model sees it: nothing inserted, the Client's attempt unanswered.
    Receive,
    /// Inserted and synced, the response about to be written: the response is lost.
    BeforeResponse,
    /// The response written: the Client holds its `messageId`, the process dies after.
    AfterResponse,
    /// The response held [`STALL_MS`] (past a Client's prompt timeout), the Agent reading on:
    /// a same-connection retry arrives while the first attempt is still unanswered.
    StallResponse,
}

/// How long `stall-response` holds a response, ms.
pub const STALL_MS: u64 = 600;

impl FaultPoint {
    /// Every point, in the order of a prompt's life.
    pub const ALL: [FaultPoint; 4] = [
        FaultPoint::Receive,
        FaultPoint::BeforeResponse,
        FaultPoint::AfterResponse,
        FaultPoint::StallResponse,
    ];

    fn as_str(self) -> &'static str {
        match self {
            FaultPoint::Receive => "receive",
            FaultPoint::BeforeResponse => "before-response",
            FaultPoint::AfterResponse => "after-response",
            FaultPoint::StallResponse => "stall-response",
        }
    }
}

impl fmt::Display for ServedFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.point.as_str(), self.nth)
    }
}

impl std::str::FromStr for ServedFault {
    type Err = String;

    /// `POINT:N`, e.g. `before-response:1`.
    fn from_str(s: &str) -> Result<ServedFault, String> {
        let (p, n) = s
            .split_once(':')
            .ok_or_else(|| format!("`{s}`: expected POINT:N, e.g. before-response:1"))?;
        let point = FaultPoint::ALL
            .into_iter()
            .find(|c| c.as_str() == p)
            .ok_or_else(|| {
                format!("`{s}`: unknown point `{p}` (receive, before-response, after-response, stall-response)")
            })?;
        let nth = n
            .parse::<u32>()
            .ok()
            .filter(|n| *n >= 1)
            .ok_or_else(|| format!("`{s}`: N must be a whole number from 1"))?;
        Ok(ServedFault { point, nth })
    }
}

/// What the served Agent does with a line it is about to write.
#[derive(Debug, PartialEq, Eq)]
pub enum Outgoing {
    /// Write it.
    Write,
    /// Hold it this many ms (and every line after it behind it).
    Hold(u64),
    /// Die without writing it.
    CrashBefore,
    /// Write it, then die.
    CrashAfter,
}

/// The open wire log of one served Agent process.
pub struct WireLog {
    file: std::fs::File,
    boot: u32,
    crash_on: Vec<ServedFault>,
    fired: BTreeSet<String>,
    /// `session/prompt` requests read over every boot so far.
    prompts: u32,
    /// This boot's unanswered prompts: request id (as JSON text) → which prompt.
    pending: BTreeMap<String, u32>,
    /// This boot's unanswered `session/resume` requests (ids as JSON text).
    resumes: BTreeSet<String>,
    /// Hold `session/resume` answers this long on every boot after the first, ms.
    slow_resume_ms: u64,
}

impl WireLog {
    /// Open (append) the log at `path` for boot `boot`, reading what earlier boots logged.
    ///
    /// Errors: the file cannot be read or opened for appending.
    pub fn open(
        path: &Path,
        boot: u32,
        crash_on: Vec<ServedFault>,
        slow_resume_ms: u64,
    ) -> std::io::Result<WireLog> {
        let (mut prompts, mut fired) = (0, BTreeSet::new());
        if let Ok(text) = std::fs::read_to_string(path) {
            for v in text
                .lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            {
                if is_prompt(&v["in"]) {
                    prompts += 1;
                }
                if let Some(c) = v["crash"].as_str() {
                    fired.insert(c.to_string());
                }
            }
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        let mut w = WireLog {
            file,
            boot,
            crash_on,
            fired,
            prompts,
            pending: BTreeMap::new(),
            resumes: BTreeSet::new(),
            slow_resume_ms,
        };
        w.write(json!({"boot": boot, "start": true}));
        Ok(w)
    }

    fn write(&mut self, mut v: Value) {
        v["boot"] = json!(self.boot);
        // One write per line: a SIGKILL cuts between lines, never inside one we wrote.
        let mut line = v.to_string();
        line.push('\n');
        let _ = self.file.write_all(line.as_bytes());
    }

    fn fires(&mut self, point: FaultPoint, nth: u32) -> bool {
        let hit = self
            .crash_on
            .iter()
            .find(|c| c.point == point && c.nth == nth)
            .map(|c| c.to_string());
        match hit {
            Some(spec) if !self.fired.contains(&spec) => {
                self.write(json!({"crash": spec}));
                self.fired.insert(spec);
                true
            }
            _ => false,
        }
    }

    /// A line read from the Client; `true` when the Agent dies here (a `receive` point).
    pub fn received(&mut self, line: &str) -> bool {
        let v = parsed(line);
        self.write(json!({"in": v}));
        if v["method"] == "session/resume" {
            self.resumes.insert(v["id"].to_string());
        }
        if is_prompt(&v) {
            self.prompts += 1;
            let n = self.prompts;
            self.pending.insert(v["id"].to_string(), n);
            return self.fires(FaultPoint::Receive, n);
        }
        false
    }

    /// A line read from the Client and refused unread (not UTF-8, or past the bound), as
    /// `shown`: the model never saw it, so it counts as no request.
    pub fn refused(&mut self, shown: &str) {
        self.write(json!({"in": shown, "refused": true}));
    }

    /// What to do with a line the model wants written (decided once, when it is produced).
    pub fn decide(&mut self, line: &str) -> Outgoing {
        let v = parsed(line);
        let response = v.get("method").is_none();
        let id = v["id"].to_string();
        if response && self.resumes.remove(&id) && self.slow_resume_ms > 0 && self.boot > 1 {
            return Outgoing::Hold(self.slow_resume_ms);
        }
        let Some(n) = response.then(|| self.pending.remove(&id)).flatten() else {
            return Outgoing::Write;
        };
        if self.fires(FaultPoint::BeforeResponse, n) {
            Outgoing::CrashBefore
        } else if self.fires(FaultPoint::AfterResponse, n) {
            Outgoing::CrashAfter
        } else if self.fires(FaultPoint::StallResponse, n) {
            Outgoing::Hold(STALL_MS)
        } else {
            Outgoing::Write
        }
    }

    /// A line written to the Client.
    pub fn wrote(&mut self, line: &str) {
        self.write(json!({"out": parsed(line)}));
    }

    /// One of the model's effects (the simulator's ground truth).
    pub fn effect(&mut self, f: &str, value: &Value) {
        self.write(json!({"effect": f, "value": value}));
    }

    /// The Client's end of the pipe closed.
    pub fn eof(&mut self) {
        self.write(json!({"eof": true}));
    }
}

/// The served Agent's stdout: lines written at once, or held behind a held one, logged to the
/// wire log (if any) as they are written.
pub struct Pipe {
    /// The wire log, with `--wire-log`.
    pub log: Option<WireLog>,
    /// Lines waiting: (release at, line, die after writing it).
    held: VecDeque<(Instant, String, bool)>,
}

impl Pipe {
    /// A pipe logging to `log`.
    pub fn new(log: Option<WireLog>) -> Pipe {
        Pipe {
            log,
            held: VecDeque::new(),
        }
    }

    /// The model wants `line` written (at `now`).
    pub fn send(&mut self, line: String, now: Instant, w: &mut impl Write) {
        let d = self
            .log
            .as_mut()
            .map_or(Outgoing::Write, |l| l.decide(&line));
        let behind = self.held.back().map(|h| h.0);
        match d {
            Outgoing::CrashBefore => die(),
            Outgoing::Hold(ms) => {
                let at = (now + Duration::from_millis(ms)).max(behind.unwrap_or(now));
                self.held.push_back((at, line, false));
            }
            d => match behind {
                Some(at) => self.held.push_back((at, line, d == Outgoing::CrashAfter)),
                None => self.write(&line, d == Outgoing::CrashAfter, w),
            },
        }
    }

    fn write(&mut self, line: &str, crash_after: bool, w: &mut impl Write) {
        if let Some(l) = self.log.as_mut() {
            l.wrote(line);
        }
        // A reader that went away ends us at the next read of stdin.
        let _ = w.write_all(line.as_bytes());
        let _ = w.write_all(b"\n");
        let _ = w.flush();
        if crash_after {
            die();
        }
    }

    /// Write the held lines whose time came, in order.
    pub fn release(&mut self, now: Instant, w: &mut impl Write) {
        while self.held.front().is_some_and(|h| h.0 <= now) {
            let (_, line, crash) = self.held.pop_front().expect("checked");
            self.write(&line, crash, w);
        }
    }

    /// When the next held line is due.
    pub fn next_due(&self) -> Option<Instant> {
        self.held.front().map(|h| h.0)
    }
}

/// SIGKILL to this process (as a crash would end it: no destructor, no flush).
pub fn die() -> ! {
    #[cfg(unix)]
    // SAFETY: kill(2) on our own pid.
    unsafe {
        libc::kill(libc::getpid(), libc::SIGKILL);
    }
    std::process::abort()
}

fn parsed(line: &str) -> Value {
    serde_json::from_str(line).unwrap_or_else(|_| Value::String(line.to_string()))
}

fn is_prompt(v: &Value) -> bool {
    v["method"] == "session/prompt" && v.get("id").is_some_and(|id| !id.is_null())
}
