//! Smoke run of one real agent against the mock model: the first end-to-end check of
//! `acp_chaos_cli::probe::profile` and `acp_chaos_cli::probe::mock_model`, and a first look at what a real agent does
//! with a retried `idempotencyKey` after a restart.
//!
//! ```sh
//! cargo run --release --example real_agent_smoke -- codex-acp
//! cargo run --release --example real_agent_smoke -- claude-agent-acp --mid-turn
//! ```
//!
//! Installs the profile when needed (npm registry), starts the mock, then:
//! 1. starts the agent (own process group, fresh `HOME`), `initialize` (v2), `session/new`,
//!    `session/prompt` with a unique marker and an `idempotencyKey`; waits for `{messageId}`
//!    and the idle `state_update` (with `--mid-turn`: the mock holds the turn and the agent is
//!    killed as soon as the model request carrying the marker arrives);
//! 2. SIGKILLs the process group, restarts the agent on the same `HOME`, `session/resume` with
//!    `replayFrom: {type: "start"}`, collects the replay until `replay_complete`, and resends
//!    the same prompt with the same key;
//! 3. kills and restarts once more and replays the session from the start, to see how many
//!    copies of the message the agent kept;
//!
//! printing every frame (truncated), the response ids, the marker counts at the mock after each
//! step, and timings. Options: `--mid-turn`, `--delay-ms N` (mid-turn hold, default 20000),
//! `--keep` (leave the temporary HOME), `--live-retry` (also resend the
//! same key on the same connection before the kill), `--width N` (frame truncation, default 240).

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use acp_chaos_cli::probe::mock_model::{MockConfig, MockModel};
use acp_chaos_cli::probe::profile::{self, LaunchSpec, Profile};
use serde_json::{json, Value};

fn now() -> Instant {
    acp_chaos_cli::wall_clock::now()
}

struct Opts {
    width: usize,
    mid_turn: bool,
    delay_ms: u64,
    keep: bool,
    live_retry: bool,
}

/// One agent process with a line reader.
struct Agent {
    child: Child,
    stdin: ChildStdin,
    rx: Receiver<String>,
    next_id: u64,
    t0: Instant,
    width: usize,
    tag: String,
    frames: Vec<Value>,
    stderr_path: PathBuf,
}

impl Agent {
    fn start(spec: &LaunchSpec, tag: &str, t0: Instant, width: usize, logs: &Path) -> Agent {
        let stderr_path = logs.join(format!("{tag}.stderr"));
        let stderr = std::fs::File::create(&stderr_path).expect("stderr file");
        let mut cmd = spec.command();
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .process_group(0);
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {:?}: {e}", spec.program));
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        println!(
            "[{:7.3}s] {tag}: started pid {} (process group {})",
            t0.elapsed().as_secs_f64(),
            child.id(),
            child.id()
        );
        Agent {
            child,
            stdin,
            rx,
            next_id: 1,
            t0,
            width,
            tag: tag.into(),
            frames: Vec::new(),
            stderr_path,
        }
    }

    fn t(&self) -> f64 {
        self.t0.elapsed().as_secs_f64()
    }

    fn show(&self, dir: &str, line: &str) {
        let mut s: String = line.chars().take(self.width).collect();
        if s.len() < line.len() {
            s.push('…');
        }
        println!("[{:7.3}s] {} {dir} {s}", self.t(), self.tag);
    }

    fn send(&mut self, v: &Value) {
        let line = v.to_string();
        self.show("→", &line);
        let _ = writeln!(self.stdin, "{line}");
        let _ = self.stdin.flush();
    }

    fn request(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// Read frames until `pred` holds for one (returned) or `timeout`; answers the agent's
    /// requests on the way.
    fn until(&mut self, timeout: Duration, mut pred: impl FnMut(&Value) -> bool) -> Option<Value> {
        let deadline = now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(now());
            let line = match self.rx.recv_timeout(left) {
                Ok(l) => l,
                Err(RecvTimeoutError::Timeout) => return None,
                Err(RecvTimeoutError::Disconnected) => {
                    println!("[{:7.3}s] {} stdout closed", self.t(), self.tag);
                    return None;
                }
            };
            self.show("←", &line);
            let Ok(v) = serde_json::from_str::<Value>(&line) else {
                println!("           (not JSON)");
                continue;
            };
            self.frames.push(v.clone());
            if v.get("method").is_some() && v.get("id").is_some() {
                self.answer(&v);
            }
            if pred(&v) {
                return Some(v);
            }
        }
    }

    fn answer(&mut self, req: &Value) {
        let id = req["id"].clone();
        let reply = if req["method"] == "session/request_permission" {
            let options = req["params"]["options"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let pick = options
                .iter()
                .find(|o| o["kind"] == "allow_once")
                .or_else(|| options.iter().find(|o| o["kind"] == "allow_always"))
                .or_else(|| options.first());
            match pick {
                Some(o) => json!({"jsonrpc": "2.0", "id": id,
                    "result": {"outcome": {"outcome": "selected", "optionId": o["optionId"]}}}),
                None => json!({"jsonrpc": "2.0", "id": id,
                    "result": {"outcome": {"outcome": "cancelled"}}}),
            }
        } else {
            json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32601, "message": "method not found"}})
        };
        self.send(&reply);
    }

    fn response(&mut self, id: u64, timeout: Duration) -> Option<Value> {
        self.until(timeout, |v| {
            v.get("method").is_none() && v["id"] == json!(id)
        })
    }

    fn kill(&mut self) {
        let pgid = self.child.id() as i32;
        // SAFETY: signalling the process group this program created (process_group(0)).
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
        let _ = self.child.wait();
        println!(
            "[{:7.3}s] {}: SIGKILL to process group {pgid}",
            self.t(),
            self.tag
        );
    }

    fn stderr_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.stderr_path).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(15)..].join("\n")
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            self.kill();
        }
    }
}

fn update_kind(v: &Value) -> Option<&str> {
    if v["method"] != "session/update" {
        return None;
    }
    v["params"]["update"]["sessionUpdate"].as_str()
}

fn is_idle(v: &Value) -> bool {
    update_kind(v) == Some("state_update")
        && v["params"]["update"]["state"]
            .as_str()
            .is_some_and(|s| s == "idle")
}

/// Wait for the prompt's response and an idle state update after it was sent.
fn prompt_outcome(a: &mut Agent, id: u64, timeout: Duration) -> (Option<Value>, bool, f64) {
    let t = now();
    let mut resp = None;
    let mut idle = false;
    let deadline = now() + timeout;
    while resp.is_none() || !idle {
        let left = deadline.saturating_duration_since(now());
        match a.until(left, |v| {
            (v.get("method").is_none() && v["id"] == json!(id)) || is_idle(v)
        }) {
            None => break,
            Some(v) if is_idle(&v) => idle = true,
            Some(v) => resp = Some(v),
        }
    }
    (resp, idle, t.elapsed().as_secs_f64())
}

fn init(a: &mut Agent, timeout: Duration) -> Option<Value> {
    let id = a.request(
        "initialize",
        json!({"protocolVersion": 2, "info": {"name": "acp-chaos-smoke", "version": "0.1.0"},
            "capabilities": {}}),
    );
    a.response(id, timeout)
}

fn tally(mock: &MockModel, marker: &str, step: &str) {
    let t = mock.marker_tally(marker);
    println!(
        "== marker at the mock after {step}: count {} (turn requests with it {}, copies in the last {}, turns it started {}); requests so far {}",
        t.copies_max,
        t.requests,
        t.copies_last,
        t.turns,
        mock.request_count()
    );
}

fn replay_user_messages(frames: &[Value], marker: &str) -> Vec<String> {
    // user_message {messageId} then user_message_chunk with text: collect per messageId.
    let mut out: Vec<(String, String)> = Vec::new();
    for f in frames {
        let u = &f["params"]["update"];
        match update_kind(f) {
            Some("user_message") => out.push((
                u["messageId"].as_str().unwrap_or("?").to_string(),
                content_text(&u["content"]),
            )),
            Some("user_message_chunk") => {
                let text = content_text(&u["content"]);
                let mid = u["messageId"].as_str().map(String::from);
                match out.last_mut() {
                    Some((m, t)) if mid.as_deref().is_none_or(|x| x == m) => t.push_str(&text),
                    _ => out.push((mid.unwrap_or_else(|| "?".into()), text)),
                }
            }
            _ => {}
        }
    }
    out.into_iter()
        .map(|(m, t)| {
            format!(
                "{m} ({} marker copies): {}",
                t.matches(marker).count(),
                t.chars().take(80).collect::<String>()
            )
        })
        .collect()
}

fn content_text(c: &Value) -> String {
    match c {
        Value::Array(a) => a.iter().map(content_text).collect(),
        Value::Object(o) => o
            .get("text")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        Value::String(s) => s.clone(),
        _ => String::new(),
    }
}

/// `session/resume` with a replay from the start: wait for the response (X4: the replay, one
/// `replay_complete` and a `state_update` come before it), then a short grace period.
fn resume(a: &mut Agent, sid: &str, cwd: &str, timeout: Duration) -> (Option<Value>, bool, f64) {
    let t = now();
    let id = a.request(
        "session/resume",
        json!({"sessionId": sid, "cwd": cwd, "mcpServers": [], "replayFrom": {"type": "start"}}),
    );
    let mut complete = false;
    let resp = a.until(timeout, |v| {
        if update_kind(v) == Some("replay_complete") {
            complete = true;
        }
        v.get("method").is_none() && v["id"] == json!(id)
    });
    let secs = t.elapsed().as_secs_f64();
    // Updates after the response (a late replay_complete or state_update).
    a.until(Duration::from_millis(1500), |v| {
        if update_kind(v) == Some("replay_complete") {
            println!("           (replay_complete AFTER the response)");
        }
        false
    });
    (resp, complete, secs)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut opts = Opts {
        width: 240,
        mid_turn: false,
        delay_ms: 20_000,
        keep: false,
        live_retry: false,
    };
    let mut name = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--mid-turn" => opts.mid_turn = true,
            "--keep" => opts.keep = true,
            "--live-retry" => opts.live_retry = true,
            "--delay-ms" => {
                opts.delay_ms = it.next().and_then(|s| s.parse().ok()).unwrap_or(20_000)
            }
            "--width" => opts.width = it.next().and_then(|s| s.parse().ok()).unwrap_or(240),
            s if !s.starts_with('-') => name = Some(s.to_string()),
            s => {
                eprintln!("unknown option {s}");
                std::process::exit(2);
            }
        }
    }
    let Some(name) = name else {
        eprintln!("usage: real_agent_smoke PROFILE [--mid-turn] [--delay-ms N] [--live-retry] [--keep] [--width N]; profiles: {}", profile::names().join(", "));
        std::process::exit(2);
    };
    let p: &Profile = match profile::get(&name) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(e.exit_code());
        }
    };
    if !profile::is_installed(p) {
        println!("installing {} into {} ...", p.specs(), p.dir().display());
        match profile::install(p) {
            Ok(r) => println!(
                "installed in {:.1} s, {} MB",
                r.seconds,
                r.bytes / 1_000_000
            ),
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(e.exit_code());
            }
        }
    }
    let t0 = now();
    let work = std::env::temp_dir().join(format!("acp-smoke-{}-{}", p.name, std::process::id()));
    let home = work.join("home");
    let logs = work.join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let mock = MockModel::start(MockConfig {
        log_dir: Some(logs.join("mock")),
        ..MockConfig::default()
    })
    .expect("mock model");
    println!(
        "mock model on {} (request bodies in {})",
        mock.base_url(),
        logs.join("mock").display()
    );
    let spec = profile::launch(p, &home, mock.port()).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(e.exit_code());
    });
    spec.write_files().unwrap();
    println!(
        "launch: {} {} (cwd {})",
        spec.program.display(),
        spec.args.join(" "),
        spec.cwd.display()
    );
    for (k, v) in &spec.env {
        println!("  env {k}={v}");
    }
    let cwd = spec.cwd.display().to_string();
    let boot = profile::startup_timeout(p);
    let turn = Duration::from_secs(90);
    let marker = format!(
        "MARK{:x}{:x}",
        std::process::id(),
        t0.elapsed().as_nanos() ^ 0x5eed
    );
    let key = format!("a1b2c3d4-0000-4000-8000-{:012x}", std::process::id());
    let prompt_text = format!("Reply with one short sentence. Marker: {marker}");
    let mut summary: Vec<String> = Vec::new();

    // ---- 1. first process: initialize, session/new, prompt ----
    let mut a = Agent::start(&spec, "agent#1", t0, opts.width, &logs);
    let ti = now();
    let Some(init1) = init(&mut a, boot) else {
        println!(
            "no initialize answer within {boot:?}; stderr:\n{}",
            a.stderr_tail()
        );
        std::process::exit(1);
    };
    summary.push(format!(
        "initialize #1: {:.2} s, protocolVersion {}",
        ti.elapsed().as_secs_f64(),
        init1["result"]["protocolVersion"]
    ));
    if init1["result"]["protocolVersion"] != json!(2) {
        println!("the agent does not speak ACP v2 (answered {init1}); stopping");
        std::process::exit(3);
    }
    let tn = now();
    let id = a.request("session/new", json!({"cwd": cwd, "mcpServers": []}));
    let Some(new) = a.response(id, boot) else {
        println!("no session/new answer; stderr:\n{}", a.stderr_tail());
        std::process::exit(1);
    };
    let Some(sid) = new["result"]["sessionId"].as_str().map(String::from) else {
        println!("session/new failed: {new}\nstderr:\n{}", a.stderr_tail());
        std::process::exit(1);
    };
    summary.push(format!(
        "session/new: {:.2} s, sessionId {sid}",
        tn.elapsed().as_secs_f64()
    ));
    let prompt = json!({"sessionId": sid, "prompt": [{"type": "text", "text": prompt_text}],
        "idempotencyKey": key});
    if opts.mid_turn {
        mock.set_delay_ms(opts.delay_ms);
    }
    let id = a.request("session/prompt", prompt.clone());
    let first_id;
    if opts.mid_turn {
        let tw = now();
        // Read frames while waiting for the model request (the agent may answer first).
        let mut resp1 = None;
        while !mock.wait_for_marker(&marker, Duration::from_millis(50)) && tw.elapsed() < turn {
            if let Some(v) = a.until(Duration::from_millis(50), |v| {
                v.get("method").is_none() && v["id"] == json!(id)
            }) {
                resp1 = Some(v);
            }
        }
        // Drain what is already there without waiting.
        if let Some(v) = a.until(Duration::from_millis(100), |v| {
            v.get("method").is_none() && v["id"] == json!(id)
        }) {
            resp1 = Some(v);
        }
        first_id = resp1.as_ref().map(|r| r["result"]["messageId"].clone());
        summary.push(format!(
            "prompt #1 (mid-turn): model request after {:.2} s; response before the kill: {}",
            tw.elapsed().as_secs_f64(),
            resp1
                .map(|r| r.to_string())
                .unwrap_or_else(|| "none".into())
        ));
    } else {
        let (resp, idle, secs) = prompt_outcome(&mut a, id, turn);
        first_id = resp.as_ref().map(|r| r["result"]["messageId"].clone());
        summary.push(format!(
            "prompt #1: {secs:.2} s, response {}, idle state_update {}",
            resp.map(|r| r.to_string()).unwrap_or_else(|| "NONE".into()),
            if idle { "seen" } else { "NOT seen" }
        ));
    }
    tally(&mock, &marker, "prompt #1");
    let c1 = mock.marker_tally(&marker);
    if opts.live_retry {
        // The same key again on the same connection, no restart: does the agent deduplicate
        // at all?
        let id = a.request("session/prompt", prompt.clone());
        let (resp, idle, secs) = prompt_outcome(&mut a, id, turn);
        summary.push(format!(
            "prompt #1 again, same key, same process: {secs:.2} s, response {}, idle state_update {}",
            resp.map(|r| r.to_string()).unwrap_or_else(|| "NONE".into()),
            if idle { "seen" } else { "NOT seen" }
        ));
        tally(&mock, &marker, "the live retry");
        let t = mock.marker_tally(&marker);
        summary.push(format!(
            "marker after the live retry: count {} (turns started {})",
            t.copies_max, t.turns
        ));
    }

    // ---- 2. kill, restart, resume, resend ----
    a.kill();
    mock.set_delay_ms(0);
    // Let the session files settle? No: the kill is the point. Restart at once.
    let mut b = Agent::start(&spec, "agent#2", t0, opts.width, &logs);
    let ti = now();
    if init(&mut b, boot).is_none() {
        println!(
            "no initialize answer after restart; stderr:\n{}",
            b.stderr_tail()
        );
        std::process::exit(1);
    }
    summary.push(format!(
        "initialize #2: {:.2} s",
        ti.elapsed().as_secs_f64()
    ));
    let (resp, complete, secs) = resume(&mut b, &sid, &cwd, Duration::from_secs(30));
    summary.push(format!(
        "resume #2: {secs:.2} s, response {}, replay_complete before it: {}",
        resp.map(|r| r.to_string().chars().take(200).collect::<String>())
            .unwrap_or_else(|| "NONE".into()),
        if complete { "seen" } else { "NOT seen" }
    ));
    let replay2 = replay_user_messages(&b.frames, &marker);
    summary.push(format!("replay #2 user messages: {replay2:?}"));
    tally(&mock, &marker, "resume");
    let id = b.request("session/prompt", prompt.clone());
    let (resp, idle, secs) = prompt_outcome(&mut b, id, turn);
    let second_id = resp.as_ref().map(|r| r["result"]["messageId"].clone());
    summary.push(format!(
        "prompt #2 (same key): {secs:.2} s, response {}, idle state_update {}",
        resp.map(|r| r.to_string()).unwrap_or_else(|| "NONE".into()),
        if idle { "seen" } else { "NOT seen" }
    ));
    tally(&mock, &marker, "the retry");
    let c2 = mock.marker_tally(&marker);
    b.kill();

    // ---- 3. restart again, replay from the start ----
    let mut c = Agent::start(&spec, "agent#3", t0, opts.width, &logs);
    if init(&mut c, boot).is_none() {
        println!(
            "no initialize answer after the second restart; stderr:\n{}",
            c.stderr_tail()
        );
        std::process::exit(1);
    }
    let (resp, complete, secs) = resume(&mut c, &sid, &cwd, Duration::from_secs(30));
    let replay3 = replay_user_messages(&c.frames, &marker);
    summary.push(format!(
        "resume #3: {secs:.2} s, ok {}, replay_complete before it: {}; user messages: {replay3:?}",
        resp.is_some_and(|r| r.get("result").is_some()),
        if complete { "seen" } else { "NOT seen" }
    ));
    c.kill();
    tally(&mock, &marker, "the final replay");

    println!("\n==== SUMMARY {} ({}) ====", p.name, p.specs());
    for s in &summary {
        println!("- {s}");
    }
    println!(
        "- messageId #1 {} / #2 {} ({})",
        first_id.clone().unwrap_or(Value::Null),
        second_id.clone().unwrap_or(Value::Null),
        if first_id.is_some() && first_id == second_id {
            "same: deduplicated"
        } else {
            "different or missing"
        }
    );
    println!(
        "- marker count (max copies in one turn request): after #1 {}, after the retry {}; turns started: {} then {}",
        c1.copies_max, c2.copies_max, c1.turns, c2.turns
    );
    println!("- mock requests:");
    for r in mock.requests() {
        println!(
            "    #{:<3} {:>7} ms {} {} {:?} {} bytes stream={} model={} user msgs={} marker copies={} completed={}",
            r.seq,
            r.at_ms,
            r.method,
            r.path,
            r.kind,
            r.body_bytes,
            r.stream,
            r.model.as_deref().unwrap_or("-"),
            r.user_texts.len(),
            r.marker_copies(&marker),
            r.completed
        );
    }
    println!(
        "- total {:.1} s; logs in {}",
        t0.elapsed().as_secs_f64(),
        logs.display()
    );
    mock.shutdown();
    if !opts.keep {
        let _ = std::fs::remove_dir_all(&home);
    }
}
