//! Arbitrary frames to the stdio Agent: `acp-chaos agent` as a child process (stored with a
//! store folder, in-memory and adapter in turn, a fresh process every [`LIFETIME`] batches),
//! fed batches of [`BATCH`] frames (JSON-RPC requests and notifications of every method with
//! odd ids, versions and params, batches, cut and random bytes, deep nesting, prompts whose
//! `idempotencyKey` holds bytes that are not UTF-8, lines past its `--max-line-bytes`), each
//! batch followed by a ping request. The ping must be answered within [`HANG`] (else a hang),
//! the process must not end or panic, every line it writes must be a JSON-RPC 2.0 message (a
//! response with `result` or `error`, or a request or notification with `method`), and every
//! line that is not UTF-8 or is past the bound must be refused unread: one `-32700` or
//! `-32600` with `id: null` saying so each, never executed.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use rand::seq::SliceRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

use super::{picked, Report, Round};
use acp_chaos::plan;

/// Frames per batch (each batch ends with a ping).
pub const BATCH: u64 = 32;
/// Batches one Agent process serves before the next starts.
const LIFETIME: u64 = 250;
/// How long a ping may wait for its answer.
const HANG: Duration = Duration::from_secs(10);
/// The fuzzed Agent's `--max-line-bytes`: small, so a line past it costs little to send.
const MAX_LINE: usize = 64 << 10;

const METHODS: &[&str] = &[
    "initialize",
    "session/new",
    "session/prompt",
    "session/load",
    "session/resume",
    "session/list",
    "session/cancel",
    "$/cancel_request",
    "session/close",
    "session/fork",
    "session/set_mode",
    "authenticate",
    "fs/read_text_file",
    "",
    "session/prompt/",
    "SESSION/NEW",
];

/// A running Agent: its stdin, its stdout lines, its stderr.
struct Agent {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<Option<Vec<u8>>>,
    stderr: std::thread::JoinHandle<String>,
    sessions: Vec<String>,
    _store: Option<TempDir>,
}

/// A store folder removed when dropped.
struct TempDir(std::path::PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Agent {
    fn start(r: &Round, life: u64) -> anyhow::Result<Agent> {
        let design = ["stored", "in-memory", "adapter"][(life % 3) as usize];
        let mut c = Command::new(&r.bin);
        c.args(["agent", "--design", design, "--turn-ms", "0..2"])
            .args(["--tool-rate", "0.5", "--seed", &life.to_string()])
            .args(["--max-line-bytes", &MAX_LINE.to_string()]);
        let store = (design == "stored").then(|| {
            TempDir(std::env::temp_dir().join(format!(
                "acp-chaos-fuzz-{}-{}-{life}",
                std::process::id(),
                r.seed
            )))
        });
        if let Some(s) = &store {
            c.arg("--store").arg(&s.0);
        }
        let mut child = c
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| anyhow::anyhow!("{}: {e}", r.bin.display()))?;
        let stdin = child.stdin.take().expect("piped");
        let stdout = child.stdout.take().expect("piped");
        let mut err = child.stderr.take().expect("piped");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(stdout);
            loop {
                let mut buf = Vec::new();
                match r.read_until(b'\n', &mut buf) {
                    Ok(0) | Err(_) => {
                        let _ = tx.send(None);
                        return;
                    }
                    Ok(_) => {
                        if tx.send(Some(buf)).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            s
        });
        Ok(Agent {
            child,
            stdin,
            lines,
            stderr,
            sessions: Vec::new(),
            _store: store,
        })
    }

    /// Send `frames` and a ping; the lines written before the ping's answer, or what went
    /// wrong.
    fn exchange(&mut self, frames: &[Vec<u8>], ping: &str) -> Result<Vec<Value>, String> {
        let mut out = Vec::new();
        for f in frames {
            out.extend_from_slice(f);
            out.push(b'\n');
        }
        out.extend_from_slice(
            json!({"jsonrpc": "2.0", "id": ping, "method": "fuzz/ping"})
                .to_string()
                .as_bytes(),
        );
        out.push(b'\n');
        self.stdin
            .write_all(&out)
            .and_then(|_| self.stdin.flush())
            .map_err(|e| format!("the Agent stopped reading: {e}"))?;
        let mut got = Vec::new();
        loop {
            match self.lines.recv_timeout(HANG) {
                Err(_) => return Err(format!("hang: no answer to the ping within {HANG:?}")),
                Ok(None) => return Err("the Agent ended".into()),
                Ok(Some(line)) => {
                    let v: Value = serde_json::from_slice(&line).map_err(|e| {
                        format!("wrote a line that is not JSON ({e}): {}", lossy(&line))
                    })?;
                    check_message(&v).map_err(|e| format!("{e}: {}", lossy(&line)))?;
                    if v["id"] == ping {
                        return Ok(got);
                    }
                    if let Some(s) = v["result"]["sessionId"].as_str() {
                        self.sessions.push(s.to_string());
                    }
                    got.push(v);
                }
            }
        }
    }

    /// End the process; its stderr.
    fn stop(mut self) -> String {
        drop(self.stdin);
        let deadline = crate::wall_clock::now() + Duration::from_secs(5);
        while crate::wall_clock::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.stderr.join().unwrap_or_default()
    }
}

/// One line the Agent wrote, as JSON-RPC 2.0: a response (`id` with `result` or `error`),
/// a request or notification (`method`), or a batch of them.
fn check_message(v: &Value) -> Result<(), String> {
    if let Some(items) = v.as_array() {
        if items.is_empty() {
            return Err("an empty batch answer".into());
        }
        return items.iter().try_for_each(check_message);
    }
    let Some(o) = v.as_object() else {
        return Err("not a JSON-RPC object".into());
    };
    if o.get("jsonrpc") != Some(&json!("2.0")) {
        return Err("no `jsonrpc: \"2.0\"`".into());
    }
    if o.contains_key("method") {
        return Ok(());
    }
    if !o.contains_key("id") {
        return Err("a response without `id`".into());
    }
    if o.contains_key("result") == o.contains_key("error") {
        return Err("a response needs exactly one of `result`, `error`".into());
    }
    Ok(())
}

/// Every line of `frames` past the bound or not UTF-8 got its refusal in `got`: `-32600`
/// (past the bound) or `-32700` (not UTF-8), `id: null`, saying why. None of them is executed:
/// a line the model read would have been answered by its id or its own error, not these.
fn refused_unread(frames: &[Vec<u8>], got: &[Value]) -> Result<(), String> {
    let said = |code: i64, what: &str| {
        got.iter()
            .filter(|v| {
                v["id"].is_null()
                    && v["error"]["code"] == code
                    && v["error"]["data"]
                        .as_str()
                        .is_some_and(|d| d.contains(what))
            })
            .count()
    };
    let overlong = frames.iter().filter(|f| f.len() > MAX_LINE).count();
    let not_utf8 = frames
        .iter()
        .filter(|f| f.len() <= MAX_LINE && std::str::from_utf8(f).is_err())
        .count();
    let (a, b) = (
        said(-32600, "longer than the limit"),
        said(-32700, "not UTF-8"),
    );
    if (a, b) != (overlong, not_utf8) {
        return Err(format!(
            "{overlong} lines past --max-line-bytes {MAX_LINE} and {not_utf8} lines not UTF-8, \
             but {a} -32600 and {b} -32700 refusals saying so"
        ));
    }
    Ok(())
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).trim_end().to_string()
}

/// The round's frames, batch by batch.
pub(super) fn round(r: &Round, report: &mut Report) -> anyhow::Result<()> {
    let batches = r.frames.div_ceil(BATCH);
    let mut agent: Option<Agent> = None;
    for b in 0..batches {
        if b % LIFETIME == 0 {
            if let Some(a) = agent.take() {
                check_stderr(report, b, a.stop());
            }
        }
        if agent.is_none() {
            let mut a = Agent::start(r, b / LIFETIME)?;
            let init = rpc(json!(0), "initialize", init_params());
            if let Err(e) = a.exchange(&[init.into_bytes()], "fuzz-init") {
                report.fail("frames", b, "initialize".into(), e);
                check_stderr(report, b, a.stop());
                continue;
            }
            agent = Some(a);
        }
        let Some(a) = agent.as_mut() else { continue };
        let mut rng = plan::stream(r.seed, &format!("fuzz.frames.{b}"));
        let n = BATCH.min(r.frames - b * BATCH);
        let frames: Vec<Vec<u8>> = (0..n).map(|_| frame(&mut rng, &a.sessions)).collect();
        if !picked(r, b) {
            // `--case`: the earlier batches still run (the Agent keeps state), unchecked.
            let _ = a.exchange(&frames, &format!("fuzz-sentinel-{b}"));
            continue;
        }
        match a
            .exchange(&frames, &format!("fuzz-sentinel-{b}"))
            .and_then(|got| refused_unread(&frames, &got))
        {
            Ok(()) => {
                *report.counts.entry("frames.sent".into()).or_default() += n;
            }
            Err(e) => {
                let input = frames
                    .iter()
                    .map(|f| lossy(f))
                    .collect::<Vec<_>>()
                    .join("\n");
                report.fail("frames", b, input, e);
                if let Some(a) = agent.take() {
                    check_stderr(report, b, a.stop());
                }
            }
        }
        if let Some(a) = agent.as_mut().filter(|a| a.sessions.len() > 256) {
            a.sessions.drain(..192);
        }
    }
    if let Some(a) = agent.take() {
        check_stderr(report, batches, a.stop());
    }
    Ok(())
}

fn check_stderr(report: &mut Report, batch: u64, stderr: String) {
    if stderr.contains("panicked") {
        report.fail(
            "frames",
            batch,
            "(the batches before)".into(),
            format!("the Agent panicked: {stderr}"),
        );
    }
}

fn rpc(id: Value, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

fn init_params() -> Value {
    acp_chaos_models::rpc::initialize_params("acp-chaos-fuzz", "0")
}

/// One frame: mostly a JSON-RPC message with something odd about it, sometimes not JSON.
fn frame(rng: &mut ChaCha8Rng, sessions: &[String]) -> Vec<u8> {
    match rng.gen_range(0..20) {
        0 => (0..rng.gen_range(0..48))
            .map(|_| rng.gen::<u8>())
            .filter(|b| *b != b'\n')
            .collect(),
        1 => {
            let f = message(rng, sessions).to_string();
            let cut = rng.gen_range(0..=f.len());
            f.as_bytes()[..cut].to_vec()
        }
        2 => {
            let n = rng.gen_range(0..4);
            Value::Array((0..n).map(|_| message(rng, sessions)).collect())
                .to_string()
                .into_bytes()
        }
        3 => {
            let depth = rng.gen_range(1..400);
            format!("{}{}", "[".repeat(depth), "]".repeat(depth)).into_bytes()
        }
        4 => Vec::new(),
        // A prompt whose key holds a byte that is not UTF-8 (a repair would make two such
        // keys one).
        5 => {
            let bad = [0x80u8, 0xc0, 0xed, 0xfe, 0xff][rng.gen_range(0..5)];
            let s = sessions.choose(rng).map_or("s1.0", |s| s.as_str());
            let p = acp_chaos_models::rpc::prompt_params(s, "hi", Some(json!("k\u{1}")));
            let mut f = rpc(id(rng), "session/prompt", p).into_bytes();
            let at = f
                .windows(6)
                .position(|w| w == b"\\u0001")
                .unwrap_or(f.len());
            f.splice(at..(at + 6).min(f.len()), [bad]);
            f
        }
        // A line past the Agent's bound: a valid request padded, or plain bytes.
        6 => {
            let pad = "x".repeat(rng.gen_range(MAX_LINE..MAX_LINE * 4));
            let p = json!({"sessionId": sessions.choose(rng), "cwd": pad});
            rpc(id(rng), "session/new", p).into_bytes()
        }
        _ => message(rng, sessions).to_string().into_bytes(),
    }
}

/// A JSON-RPC message: a known method (mostly) with plausible or odd params, id and version.
fn message(rng: &mut ChaCha8Rng, sessions: &[String]) -> Value {
    let method = *METHODS.choose(rng).expect("non-empty");
    let session = match (rng.gen_range(0..4), sessions.choose(rng)) {
        (0, _) | (_, None) => odd_value(rng),
        (_, Some(s)) => json!(s),
    };
    let params = match (method, rng.gen_range(0..6)) {
        (_, 0) => odd_value(rng),
        ("initialize", _) => init_params(),
        ("session/new", _) => json!({"cwd": "/tmp", "mcpServers": []}),
        ("session/prompt", _) => {
            let key = match rng.gen_range(0..5) {
                0 => None,
                1 => Some(odd_value(rng)),
                _ => Some(json!(format!("k{}", rng.gen_range(0..8)))),
            };
            let text = if rng.gen_bool(0.1) {
                "x".repeat(rng.gen_range(0..5000))
            } else {
                format!("input {}", rng.gen_range(0..10))
            };
            let s = session.as_str().unwrap_or("s1.0").to_string();
            acp_chaos_models::rpc::prompt_params(&s, &text, key)
        }
        ("$/cancel_request", _) => json!({"requestId": id(rng)}),
        _ => json!({"sessionId": session, "cwd": "/tmp", "mcpServers": []}),
    };
    let mut m = serde_json::Map::new();
    match rng.gen_range(0..12) {
        0 => {}
        1 => {
            m.insert("jsonrpc".into(), json!("1.0"));
        }
        2 => {
            m.insert("jsonrpc".into(), json!(2));
        }
        _ => {
            m.insert("jsonrpc".into(), json!("2.0"));
        }
    }
    if rng.gen_range(0..5) > 0 {
        m.insert("id".into(), id(rng));
    }
    if rng.gen_range(0..20) > 0 {
        m.insert("method".into(), json!(method));
    }
    if rng.gen_range(0..10) > 0 {
        m.insert("params".into(), params);
    }
    if rng.gen_range(0..20) == 0 {
        m.insert("result".into(), json!({}));
    }
    Value::Object(m)
}

/// An id: mostly a small number, sometimes a string or something no id may be.
fn id(rng: &mut ChaCha8Rng) -> Value {
    match rng.gen_range(0..12) {
        0 => json!(null),
        1 => json!(-1),
        2 => serde_json::from_str("18446744073709551616").unwrap_or(json!(0)),
        3 => json!(1.5),
        4 => json!([]),
        5 => json!({}),
        6 => json!(true),
        7 => json!(format!("id-{}", rng.gen_range(0..100))),
        8 => json!(u64::MAX),
        _ => json!(rng.gen_range(1..1000)),
    }
}

/// A JSON value of an unexpected kind.
fn odd_value(rng: &mut ChaCha8Rng) -> Value {
    match rng.gen_range(0..9) {
        0 => json!(null),
        1 => json!(""),
        2 => json!(-1),
        3 => json!([1, "a", null]),
        4 => json!({"sessionId": {}, "prompt": "no"}),
        5 => json!("s1.0\u{0}"),
        6 => json!("\u{fffd}".repeat(rng.gen_range(0..300))),
        7 => json!(1e308),
        _ => json!(true),
    }
}

/// The same frames to the sans-IO model Agent the simulator runs, in process, for every design
/// (the cluster's node too, which has no stdio form): no panic, and every line it writes is
/// JSON. Its timers fire at once; a cluster node's store requests go unanswered (its parsing
/// and validation are what is fuzzed here, not its store exchange).
pub(super) fn model_round(r: &Round, report: &mut Report) {
    use acp_chaos::models::agent::{AgentConfig, AgentInput, AgentModel, ModelAgent};
    use acp_chaos::models::{Action, Design, DuringTurn, HeldOnDisconnect, WorkOnDisconnect};
    let designs = [
        Design::Stored,
        Design::InMemory,
        Design::Adapter,
        Design::Cluster,
    ];
    let batches = r.frames.div_ceil(BATCH);
    for (d, design) in designs.into_iter().enumerate() {
        let cfg = AgentConfig {
            design,
            o1: HeldOnDisconnect::Keep,
            o2: WorkOnDisconnect::Continue,
            o4: DuringTurn::Hold,
            turn_ms_min: 0,
            turn_ms_max: 2,
            tool_rate: 0.5,
            permission_rate: 0.5,
            mutant: None,
            retention_ms: 0,
            fail_rate: 0.0,
            cancel_request: Default::default(),
        };
        let mut model = ModelAgent::recover(cfg.clone(), 1, r.seed, &[]);
        let mut out = Vec::new();
        model.handle(AgentInput::Connected(1), &mut out);
        let mut sessions: Vec<String> = Vec::new();
        for b in (0..batches).filter(|b| picked(r, *b)) {
            // A fresh Agent every LIFETIME batches, as the stdio round starts a new process:
            // state that only grows would make a long round quadratic.
            if b % LIFETIME == 0 && b > 0 {
                model = ModelAgent::recover(cfg.clone(), 1, r.seed, &[]);
                model.handle(AgentInput::Connected(1), &mut out);
                out.clear();
                sessions.clear();
            }
            let mut rng = plan::stream(r.seed, &format!("fuzz.model-frames.{}.{b}", d));
            let n = BATCH.min(r.frames - b * BATCH);
            for _ in 0..n {
                let f = frame(&mut rng, &sessions);
                let line = String::from_utf8_lossy(&f).into_owned();
                let mut inputs = vec![AgentInput::Frame(1, line.clone())];
                while let Some(input) = inputs.pop() {
                    let step = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        model.handle(input, &mut out)
                    }));
                    if let Err(p) = step {
                        let why = p
                            .downcast_ref::<String>()
                            .cloned()
                            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                            .unwrap_or_default();
                        report.fail(
                            "frames",
                            b,
                            format!("{} model: {line}", design.as_str()),
                            format!("the model Agent panicked: {why}"),
                        );
                        return;
                    }
                    for a in out.drain(..) {
                        match a {
                            Action::Send { line: sent, .. } => {
                                match serde_json::from_str::<Value>(&sent) {
                                    Ok(v) => {
                                        if let Some(s) = v["result"]["sessionId"].as_str() {
                                            sessions.push(s.to_string());
                                        }
                                    }
                                    Err(e) => report.fail(
                                        "frames",
                                        b,
                                        format!("{} model: {line}", design.as_str()),
                                        format!("the model Agent wrote a line that is not JSON ({e}): {sent}"),
                                    ),
                                }
                            }
                            Action::Timer { id, .. } => inputs.push(AgentInput::Timer(id)),
                            _ => {}
                        }
                    }
                }
                *report.counts.entry("frames.model".into()).or_default() += 1;
            }
            if sessions.len() > 256 {
                sessions.drain(..192);
            }
        }
    }
}
