//! What a `[swarm]` scenario draws per seed: the settings its file leaves free ([`DRAWN`]) and
//! the fault schedule, each from its own stream.

use acp_chaos_models::Design;
use rand::seq::SliceRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::stream;
use crate::nemesis::kinds::DrawnOn;
use crate::nemesis::{Direction, FaultKind, FaultSpec, Setting, Side, Topology, Trigger};
use crate::scenario::Scenario;

/// Settings a `[swarm]` scenario draws per seed when its file does not set them, each from its
/// own stream `draw.<name>`: (name, what is drawn). Under `mix = "uniform"` every optional
/// feature is on.
pub const DRAWN: &[(&str, &str)] = &[
    ("topology.proxy", "an id-rewriting proxy: on in 1 seed of 4"),
    (
        "topology.watcher",
        "a second Client watching the session: 1 in 4",
    ),
    (
        "topology.transport",
        "stdio in 1 of 4 seeds without proxy, watcher or cluster",
    ),
    ("topology.nodes", "cluster nodes: 1 to 4"),
    ("timing.latency_ms_max", "one-way latency bound: 1 to 6 ms"),
    ("agent.turn_ms_max", "longest turn: 20 to 80 ms"),
    ("client.kind", "sdk-auto-retry in 1 seed of 4, else spec"),
    (
        "client.unkeyed_rate",
        "sdk-auto-retry: prompts sent without a key, 0.2 in 1 seed of 2",
    ),
    (
        "client.stale_ms",
        "show pending input older than 200 to 600 ms: 1 in 4",
    ),
    (
        "agent.fail_rate",
        "a turn's work fails after insertion (A3): 0.1 to 0.3 in 1 seed of 4",
    ),
    (
        "client.permission_ms",
        "the user takes 50 to 300 ms to answer a permission request (A6's window): 1 in 4",
    ),
    ("workload.sessions", "sessions: 1 or 2"),
    (
        "workload.keys",
        "session-counter keys in 1 seed of 4, else uuid",
    ),
    (
        "raw",
        "1 to 3 raw session/prompt probes with a malformed or boundary key: 1 in 4 (unless the file has [[raw]]), and in 1 of 2 such seeds each (every one from its own stream): one more with 128 to 255 two-byte characters (valid: K2 counts characters), one with a lone surrogate escape (not JSON: K3's -32700), a session/cancel nobody pressed (C8), and a keyed prompt followed 50 to 400 ms later by the same key with another prompt (A4); with session/close drawn too, in 1 of 2 such seeds one more probe to slot 0's session once closed on its connection (X2); and in 1 of 2 seeds with probes, last, a session/close of a session that does not exist or (with closes drawn, 1 in 2) of slot 0's session once closed (A15's SHOULD)",
    ),
    (
        "workload.cancel_after_ms",
        "the user's cancel comes 100 to 400 ms after the input (past a resend) in 1 seed of 2",
    ),
    (
        "workload.close_rate",
        "session/close after 0.1 to 0.3 of inputs: 1 in 3",
    ),
    (
        "workload.fork_rate",
        "session/fork after 0.1 to 0.3 of inputs: 1 in 3",
    ),
];

/// The scenario with the swarm's drawn settings filled in, and one `name=value` per draw.
pub(super) fn draw_settings(s: &Scenario, seed: u64, design: Design) -> (Scenario, Vec<String>) {
    let mut d = s.clone();
    let Some(sw) = &s.swarm else {
        return (d, Vec::new());
    };
    let c = Draws {
        s,
        seed,
        uniform: sw.mix == crate::scenario::Mix::Uniform,
    };
    let mut drawn = Vec::new();
    if c.uniform {
        drawn.push("mix=uniform".to_string());
    }
    // In the order the settings are named (each from its own stream, so no draw moves
    // another).
    draw_topology(&c, design, &mut d, &mut drawn);
    draw_models(&c, &mut d, &mut drawn);
    draw_workload(&c, &mut d, &mut drawn);
    draw_raw_probes(&c, &mut d, &mut drawn);
    draw_cancels(&c, &mut d, &mut drawn);
    draw_inactive_probe(&c, &mut d, &mut drawn);
    draw_close_probe(&c, &mut d, &mut drawn);
    (d, drawn)
}

/// One seed's swarm draws of a scenario's settings.
struct Draws<'a> {
    s: &'a Scenario,
    seed: u64,
    /// `mix = "uniform"`: every feature on.
    uniform: bool,
}

impl Draws<'_> {
    /// The stream of the setting `name`. A feature's coin is always taken, so a value drawn
    /// after it is the same in both mixes.
    fn draw(&self, name: &str) -> ChaCha8Rng {
        stream(self.seed, &format!("draw.{name}"))
    }

    /// The scenario does not pin `name`.
    fn free(&self, name: &str) -> bool {
        !self.s.pinned.contains(name)
    }
}

/// The topology: proxy, watcher, transport, cluster nodes.
fn draw_topology(c: &Draws, design: Design, d: &mut Scenario, drawn: &mut Vec<String>) {
    use crate::scenario::Transport;
    // A pinned stdio transport has one Client and one Agent process: no proxy, no watcher.
    let stdio_pinned = !c.free("topology.transport") && c.s.topology.transport == Transport::Stdio;
    if c.free("topology.proxy") {
        let on = (c.draw("topology.proxy").gen_bool(0.25) || c.uniform) && !stdio_pinned;
        d.topology.proxy = on;
        drawn.push(format!("proxy={on}"));
    }
    if c.free("topology.watcher") {
        let on = (c.draw("topology.watcher").gen_bool(0.25) || c.uniform) && !stdio_pinned;
        d.topology.watcher = on;
        drawn.push(format!("watcher={on}"));
    }
    if c.free("topology.transport") {
        let stdio = c.draw("topology.transport").gen_bool(0.25)
            && !c.uniform
            && !d.topology.proxy
            && !d.topology.watcher
            && design != Design::Cluster;
        d.topology.transport = if stdio {
            Transport::Stdio
        } else {
            Transport::Socket
        };
        drawn.push(format!(
            "transport={}",
            if stdio { "stdio" } else { "socket" }
        ));
    }
    if c.free("topology.nodes") && design == Design::Cluster {
        d.topology.nodes = c.draw("topology.nodes").gen_range(1..=4);
        drawn.push(format!("nodes={}", d.topology.nodes));
    }
}

/// The models' settings: latency, turn length, the Client's kind, unkeyed prompts, staleness,
/// the Agent's failure rate, the permission delay.
fn draw_models(c: &Draws, d: &mut Scenario, drawn: &mut Vec<String>) {
    if c.free("timing.latency_ms_max") {
        let v = c.draw("timing.latency_ms_max").gen_range(1..=6u64);
        d.timing.latency_ms_max = v.max(d.timing.latency_ms_min);
        drawn.push(format!("latency_ms_max={}", d.timing.latency_ms_max));
    }
    if c.free("agent.turn_ms_max") {
        let v = c.draw("agent.turn_ms_max").gen_range(20..=80u64);
        d.agent.turn_ms_max = v.max(d.agent.turn_ms_min);
        drawn.push(format!("turn_ms_max={}", d.agent.turn_ms_max));
    }
    if c.free("client.kind") {
        d.client.kind = if c.draw("client.kind").gen_bool(0.25) {
            acp_chaos_models::ClientKind::SdkAutoRetry
        } else {
            acp_chaos_models::ClientKind::Spec
        };
        drawn.push(format!("client_kind={}", d.client.kind.as_str()));
    }
    if c.free("client.unkeyed_rate") && d.client.kind == acp_chaos_models::ClientKind::SdkAutoRetry
    {
        let on = c.draw("client.unkeyed_rate").gen_bool(0.5) || c.uniform;
        d.client.unkeyed_rate = if on { 0.2 } else { 0.0 };
        drawn.push(format!("unkeyed_rate={}", d.client.unkeyed_rate));
    }
    if c.free("client.stale_ms") {
        let mut r = c.draw("client.stale_ms");
        let on = r.gen_bool(0.25) || c.uniform;
        let v = r.gen_range(200..=600u64);
        d.client.stale_ms = if on { v } else { 0 };
        drawn.push(format!("stale_ms={}", d.client.stale_ms));
    }
    // Later additions name themselves only when on, so the seeds without them keep their
    // histories byte for byte.
    if c.free("agent.fail_rate") {
        let mut r = c.draw("agent.fail_rate");
        let on = r.gen_bool(0.25) || c.uniform;
        let v = f64::from(r.gen_range(1..=3u32)) / 10.0;
        if on {
            d.agent.fail_rate = v;
            drawn.push(format!("fail_rate={v}"));
        }
    }
    if c.free("client.permission_ms") {
        let mut r = c.draw("client.permission_ms");
        let on = r.gen_bool(0.25) || c.uniform;
        let v = r.gen_range(50..=300u64);
        if on {
            d.client.permission_ms = v;
            drawn.push(format!("permission_ms={v}"));
        }
    }
}

/// The workload's sessions and key scheme.
fn draw_workload(c: &Draws, d: &mut Scenario, drawn: &mut Vec<String>) {
    if c.free("workload.sessions") {
        d.workload.sessions = c.draw("workload.sessions").gen_range(1..=2);
        drawn.push(format!("sessions={}", d.workload.sessions));
    }
    if c.free("workload.keys") {
        let counter = c.draw("workload.keys").gen_bool(0.25);
        d.workload.keys = if counter {
            acp_chaos_models::KeyScheme::SessionCounter
        } else {
            acp_chaos_models::KeyScheme::Uuid
        };
        drawn.push(format!(
            "keys={}",
            if counter { "session-counter" } else { "uuid" }
        ));
    }
}

/// Raw probes (a scenario without its own): malformed keys, a two-byte key, a line that is not
/// JSON, a stop nobody pressed, a recorded key with another prompt.
fn draw_raw_probes(c: &Draws, d: &mut Scenario, drawn: &mut Vec<String>) {
    if c.s.raw.is_empty() {
        // Key-validation probes (K2/K3), so the swarm reaches P5 too.
        const KEYS: [&str; 8] = ["\"\"", "1", "true", "{}", "[]", "null", "\"a\"", "LONG"];
        let mut r = c.draw("raw");
        let on = r.gen_bool(0.25) || c.uniform;
        let n = r.gen_range(1..=3usize);
        let end =
            d.workload.start_ms + u64::from(d.workload.submissions) * d.workload.gap_ms_min.max(1);
        for _ in 0..n {
            let k = KEYS[r.gen_range(0..KEYS.len())];
            let key_json = if k == "LONG" {
                format!("\"{}\"", "x".repeat(256))
            } else {
                k.to_string()
            };
            let at_ms = r.gen_range(d.workload.start_ms..=end);
            if on {
                d.raw.push(crate::scenario::RawProbe {
                    at_ms,
                    key_json: Some(key_json),
                    line: None,
                    note: "drawn by the swarm".into(),
                });
            }
        }
        // A key valid by characters and too long by bytes (K2), from its own stream, so the
        // probes drawn above are the same with or without it.
        let mut u = c.draw("raw.utf8");
        let utf8 = u.gen_bool(0.5) || c.uniform;
        let (n, at_ms) = (
            u.gen_range(128..=255usize),
            u.gen_range(d.workload.start_ms..=end),
        );
        if on && utf8 {
            d.raw.push(crate::scenario::RawProbe {
                at_ms,
                key_json: Some(format!("\"{}\"", "é".repeat(n))),
                line: None,
                note: "drawn by the swarm: two-byte characters (K2)".into(),
            });
        }
        // A frame that is not JSON, a lone surrogate escape in the key (K3: -32700; a parser
        // like JavaScript's JSON.parse takes it), from its own stream.
        let mut j = c.draw("raw.notjson");
        let notjson = j.gen_bool(0.5) || c.uniform;
        let at_ms = j.gen_range(d.workload.start_ms..=end);
        if on && notjson {
            d.raw.push(crate::scenario::RawProbe {
                at_ms,
                key_json: Some(r#""\ud800""#.into()),
                line: None,
                note: "drawn by the swarm: a lone surrogate, not JSON (K3)".into(),
            });
        }
        // A stop the user never pressed (C8: its -32800s are not the user's withdrawal), from
        // its own stream.
        let mut st = c.draw("raw.stop");
        let stop = st.gen_bool(0.5) || c.uniform;
        let at_ms = st.gen_range(d.workload.start_ms..=end);
        if on && stop {
            d.raw.push(crate::scenario::RawProbe {
                at_ms,
                key_json: None,
                line: Some(STOP_PROBE.into()),
                note: "drawn by the swarm: a stop nobody pressed here (C8)".into(),
            });
        }
        // A recorded key reused with another prompt (A4), from its own stream: a keyed prompt,
        // then the same key with another text in the same session.
        let mut k = c.draw("raw.rekey");
        let rekey = k.gen_bool(0.5) || c.uniform;
        let at_ms = k.gen_range(d.workload.start_ms..=end);
        let later_ms = at_ms + k.gen_range(50..=400u64);
        if on && rekey {
            for (at_ms, text) in [(at_ms, "rekey first"), (later_ms, "rekey other")] {
                d.raw.push(crate::scenario::RawProbe {
                    at_ms,
                    key_json: None,
                    line: Some(REKEY_PROBE.replace("$TEXT", text)),
                    note: "drawn by the swarm: a recorded key with another prompt (A4)".into(),
                });
            }
        }
        drawn.push(format!("raw_probes={}", d.raw.len()));
    }
}

/// When the user's cancels come, and how often sessions are closed and forked.
fn draw_cancels(c: &Draws, d: &mut Scenario, drawn: &mut Vec<String>) {
    if c.free("workload.cancel_after_ms") {
        let mut r = c.draw("workload.cancel_after_ms");
        let late = r.gen_bool(0.5) || c.uniform;
        let v = r.gen_range(100..=400u64);
        if late {
            d.workload.cancel_after_ms = v;
        }
        drawn.push(format!("cancel_after_ms={}", d.workload.cancel_after_ms));
    }
    for (name, rate) in [
        ("workload.close_rate", &mut d.workload.close_rate),
        ("workload.fork_rate", &mut d.workload.fork_rate),
    ] {
        if c.free(name) {
            let mut r = c.draw(name);
            let on = r.gen_bool(1.0 / 3.0) || c.uniform;
            let v = (r.gen_range(1..=3u32) as f64) / 10.0;
            *rate = if on { v } else { 0.0 };
            drawn.push(format!("{}={}", &name["workload.".len()..], *rate));
        }
    }
}

/// A prompt on a session closed on its connection (X2, P16), only where probes and closes were
/// both drawn.
fn draw_inactive_probe(c: &Draws, d: &mut Scenario, drawn: &mut Vec<String>) {
    if c.s.raw.is_empty() && !d.raw.is_empty() && d.workload.close_rate > 0.0 {
        // A prompt on a session closed on its connection (X2, P16): only where probes and
        // closes were both drawn, from its own stream, so no other seed's plan changes.
        let mut r = c.draw("raw.inactive");
        let on = r.gen_bool(0.5) || c.uniform;
        let end =
            d.workload.start_ms + u64::from(d.workload.submissions) * d.workload.gap_ms_min.max(1);
        let at_ms = r.gen_range(d.workload.start_ms..=end);
        if on {
            d.raw.push(crate::scenario::RawProbe {
                at_ms,
                key_json: None,
                line: Some(INACTIVE_PROBE.into()),
                note: "drawn by the swarm: a session closed on this connection".into(),
            });
            drawn.push("inactive_probe=true".into());
        }
    }
}

/// A `session/close` of a session that is not active (A15's SHOULD: it succeeds and changes
/// nothing), only where raw probes were drawn, from its own stream `draw.raw.close` and last,
/// so a seed without it keeps its plan and history byte for byte: a session that does not
/// exist, or, in a seed that also draws closes, in 1 of 2 slot 0's session once the user closed
/// it on a ready connection. The correct Client never sends either, so nothing else reaches
/// that window.
fn draw_close_probe(c: &Draws, d: &mut Scenario, drawn: &mut Vec<String>) {
    if !c.s.raw.is_empty() || d.raw.is_empty() {
        return;
    }
    let mut r = c.draw("raw.close");
    let on = r.gen_bool(0.5) || c.uniform;
    let closed = r.gen_bool(0.5) && d.workload.close_rate > 0.0;
    let end =
        d.workload.start_ms + u64::from(d.workload.submissions) * d.workload.gap_ms_min.max(1);
    let at_ms = r.gen_range(d.workload.start_ms..=end);
    if on {
        let (session, what) = if closed {
            ("$INACTIVE_SESSION", "slot 0's session once closed")
        } else {
            (MISSING_SESSION, "a session that does not exist")
        };
        d.raw.push(crate::scenario::RawProbe {
            at_ms,
            key_json: None,
            line: Some(CLOSE_PROBE.replace("$CLOSED", session)),
            note: format!("drawn by the swarm: session/close of {what} (A15)"),
        });
        drawn.push(format!(
            "close_probe={}",
            if closed { "closed" } else { "missing" }
        ));
    }
}

/// The session id the swarm's A15 probe closes when it names no session.
const MISSING_SESSION: &str = "swarm-no-such-session";

/// The swarm's A15 probe: a `session/close` (`$CLOSED` is filled in when drawn).
const CLOSE_PROBE: &str =
    r#"{"jsonrpc":"2.0","id":$ID,"method":"session/close","params":{"sessionId":"$CLOSED"}}"#;

/// The swarm's C8 probe: a `session/cancel` for slot 0's session that the user did not press.
const STOP_PROBE: &str =
    r#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"$SESSION"}}"#;

/// The swarm's A4 probe pair: one key, two prompts (`$TEXT` is filled in when drawn).
const REKEY_PROBE: &str = r#"{"jsonrpc":"2.0","id":$ID,"method":"session/prompt","params":{"sessionId":"$SESSION","prompt":[{"type":"text","text":"$TEXT"}],"idempotencyKey":"swarm-rekey"}}"#;

/// The swarm's X2 probe: a keyed `session/prompt` for slot 0's session, sent once that
/// session is closed on a ready connection.
const INACTIVE_PROBE: &str = r#"{"jsonrpc":"2.0","id":$ID,"method":"session/prompt","params":{"sessionId":"$INACTIVE_SESSION","prompt":[{"type":"text","text":"probe after close"}],"idempotencyKey":"probe-after-close"}}"#;

/// The swarm's faults: each kind of `kinds` its topology has, on its own stream
/// (`swarm.<kind>`), switched on or off per seed, 1 to `per_kind_max` faults, each a time then
/// the trigger and settings its row says ([`DrawnOn`], [`draw_setting`]).
pub(super) fn draw_swarm(
    s: &Scenario,
    seed: u64,
    kinds: &[FaultKind],
    per_kind_max: u32,
    design: Design,
    uniform: bool,
) -> Vec<FaultSpec> {
    let n_sub = s.workload.submissions.max(1);
    let horizon = s.workload.start_ms
        + u64::from(n_sub) * (s.workload.gap_ms_min + s.workload.gap_ms_max) / 2
        + 100;
    let horizon = horizon
        .min(s.timing.safety_ms * 4 / 5)
        .max(s.workload.start_ms + 1);
    let mut out = Vec::new();
    for &kind in kinds {
        let topology = Topology {
            proxy: s.topology.proxy,
            cluster: design == Design::Cluster,
            stdio: s.topology.transport == crate::scenario::Transport::Stdio,
        };
        if !topology.has(kind.reach()) {
            // Nothing to fault in this topology (its own stream, so no other draw moves).
            continue;
        }
        let mut r = stream(seed, &format!("swarm.{}", kind.as_str()));
        let on = r.gen_bool(0.6);
        if !on && !uniform {
            continue;
        }
        for _ in 0..r.gen_range(1..=per_kind_max.max(1)) {
            let at = Trigger::at_time(r.gen_range(s.workload.start_ms..=horizon));
            let drawn = kind.row().swarm;
            let on = drawn_on(drawn.on, kind, at, n_sub, &mut r);
            let mut f = FaultSpec::new(kind, on);
            for &setting in drawn.settings {
                draw_setting(&mut f, setting, &mut r);
            }
            out.push(f);
        }
    }
    out
}

/// The trigger the swarm draws for a fault of `kind` ([`DrawnOn`]), `at` for a time; a
/// workload of `n_sub` submissions.
fn drawn_on(on: DrawnOn, kind: FaultKind, at: Trigger, n_sub: u32, r: &mut ChaCha8Rng) -> Trigger {
    match on {
        DrawnOn::Frame => frame_trigger(n_sub, r),
        DrawnOn::PromptRequest => {
            Trigger::at_frame(Side::Request, "session/prompt", r.gen_range(1..=n_sub + 1))
        }
        DrawnOn::Time => at,
        DrawnOn::Point => point_trigger(kind, n_sub, r),
        DrawnOn::TimeOrPoint if r.gen_bool(0.5) => point_trigger(kind, n_sub, r),
        DrawnOn::TimeOrSubmission if r.gen_bool(0.5) => {
            Trigger::at_submission(r.gen_range(1..=n_sub))
        }
        DrawnOn::TimeOrFrameOrPoint if r.gen_bool(0.5) => {
            if r.gen_bool(0.5) {
                frame_trigger(n_sub, r)
            } else {
                point_trigger(kind, n_sub, r)
            }
        }
        DrawnOn::TimeOrPoint | DrawnOn::TimeOrSubmission | DrawnOn::TimeOrFrameOrPoint => at,
    }
}

/// A frame trigger: `session/prompt` 3 in 6, `session/resume`, `initialize`, `session/new`;
/// either side; the prompt's 1st to (n_sub+1)th, another method's 1st or 2nd.
fn frame_trigger(n_sub: u32, r: &mut ChaCha8Rng) -> Trigger {
    let method = *[
        "session/prompt",
        "session/prompt",
        "session/prompt",
        "session/resume",
        "initialize",
        "session/new",
    ]
    .choose(r)
    .expect("non-empty");
    let side = if r.gen_bool(0.5) {
        Side::Request
    } else {
        Side::Response
    };
    let nth = if method == "session/prompt" {
        r.gen_range(1..=n_sub + 1)
    } else {
        r.gen_range(1..=2)
    };
    Trigger::at_frame(side, method, nth)
}

/// One of `kind`'s protocol points (a single one is not drawn), at its 1st to `n_sub`th pass.
fn point_trigger(kind: FaultKind, n_sub: u32, r: &mut ChaCha8Rng) -> Trigger {
    let p = match kind.points() {
        [one] => *one,
        points => *points
            .choose(r)
            .expect("a kind drawn at a point has points"),
    };
    Trigger::at_point(p, r.gen_range(1..=n_sub))
}

/// Draws setting `s` of `f`: `silent` with probability 0.4, `reroute` and `direction` even, a
/// duration from its kind's swarm range ([`FaultKind::swarm_ms`]).
fn draw_setting(f: &mut FaultSpec, s: Setting, r: &mut ChaCha8Rng) {
    match s {
        Setting::Silent => f.silent = r.gen_bool(0.4),
        Setting::Reroute => f.reroute = r.gen_bool(0.5),
        Setting::Direction => {
            f.direction = Some(if r.gen_bool(0.5) {
                Direction::ClientToAgent
            } else {
                Direction::AgentToClient
            })
        }
        Setting::StallMs | Setting::RestartAfterMs | Setting::HealAfterMs => {
            let range = f
                .kind
                .swarm_ms(s)
                .expect("drawn only for a duration it takes");
            if let Some(ms) = f.ms_mut(s) {
                *ms = Some(r.gen_range(range));
            }
        }
    }
}
