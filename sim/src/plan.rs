//! A run's plan: every setting derived from (scenario, seed, mutant), printed first and written
//! to the history header. Each choice draws from its own RNG stream (`stream(seed, label)`), so
//! pinning or disabling one choice does not shift the others.

use acp_chaos_models::mutant::{self, MutantKind};
use acp_chaos_models::{
    AgentConfig, ClientConfig, Design, DuringTurn, HeldOnDisconnect, Point, WorkOnDisconnect,
};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::nemesis::{fault_line, FaultKind, FaultSpec, Side, Trigger};
use crate::scenario::{Pinned, Scenario};

/// Transport timing shared by every run (simulated ms). Kept short: wall time grows with
/// simulated time × hosts.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NetTiming {
    /// A connection end writes a heartbeat line after this much idle time.
    pub heartbeat_ms: u64,
    /// A connection end gives up after this much silence.
    pub dead_ms: u64,
    /// A `connect` that has not completed by then fails.
    pub connect_timeout_ms: u64,
    /// Cluster: a node that has no answer from the store by then does not know whether its
    /// op applied.
    pub store_timeout_ms: u64,
}

/// One user submission.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Submission {
    /// Number, from 1.
    pub submission: u64,
    /// When the user submits it.
    pub at_ms: u64,
    /// Session slot it goes to.
    pub slot: usize,
    /// When the user cancels it, if they do.
    pub cancel_at_ms: Option<u64>,
    /// When the user presses stop on its session afterwards, if they do.
    pub stop_at_ms: Option<u64>,
    /// When the user closes its session afterwards, if they do.
    pub close_at_ms: Option<u64>,
    /// When the user forks its session afterwards, and the new slot, if they do.
    pub fork: Option<(u64, usize)>,
    /// Prompt text (sometimes the same text again, on purpose: C2).
    pub text: String,
}

/// Everything one run needs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Plan {
    /// Scenario name.
    pub scenario: String,
    /// The seed.
    pub seed: u64,
    /// Mutant name, if any.
    pub mutant: Option<String>,
    /// Agent settings (with the mutant).
    pub agent: AgentConfig,
    /// Agent retention declared by the design.
    pub retention: acp_chaos_models::Retention,
    /// Client settings (with the mutant).
    pub client: ClientConfig,
    /// Transport timing.
    pub net: NetTiming,
    /// Latency bounds.
    pub latency_ms_min: u64,
    /// Latency bounds.
    pub latency_ms_max: u64,
    /// End of the safety phase.
    pub safety_ms: u64,
    /// Liveness bound after heal.
    pub liveness_ms: u64,
    /// The workload.
    pub workload: Vec<Submission>,
    /// The fault schedule (scripted, or drawn by the swarm).
    pub faults: Vec<FaultSpec>,
    /// Whether the faults were drawn by the swarm.
    pub swarm: bool,
    /// Settings the swarm drew for this seed (`name=value`; [`DRAWN`]), empty when scripted.
    pub drawn: Vec<String>,
    /// Raw `session/prompt` probes (`[[raw]]`, key validation).
    pub raw: Vec<crate::scenario::RawProbe>,
    /// A proxy sits between Client and Agent.
    pub proxy: bool,
    /// The proxy's mutant, if any.
    pub proxy_mutant: Option<acp_chaos_models::proxy::ProxyMutant>,
    /// A second Client watches the session.
    pub watcher: bool,
    /// Cluster: number of Agent nodes (0 for the other designs).
    pub nodes: usize,
    /// Torn-write block size of the simulated disk (`None`: atomic writes).
    pub block_size: Option<u64>,
    /// The Agent is reached over its stdio: when the connection ends the process is gone and
    /// the Client starts it again.
    pub stdio: bool,
}

impl Plan {
    /// The user's submissions and cancels in time order.
    pub fn user_events(&self) -> Vec<(u64, crate::ledger::UserEvent)> {
        use crate::ledger::UserEvent;
        let mut v: Vec<(u64, UserEvent)> = Vec::new();
        for s in &self.workload {
            v.push((
                s.at_ms,
                UserEvent::Submit {
                    n: s.submission,
                    slot: s.slot,
                    text: s.text.clone(),
                },
            ));
            if let Some(c) = s.cancel_at_ms {
                v.push((c, UserEvent::Cancel { n: s.submission }));
            }
            if let Some(t) = s.stop_at_ms {
                v.push((t, UserEvent::Stop { slot: s.slot }));
            }
            if let Some(t) = s.close_at_ms {
                v.push((t, UserEvent::Close { slot: s.slot }));
            }
            if let Some((t, into)) = s.fork {
                v.push((t, UserEvent::Fork { slot: s.slot, into }));
            }
        }
        for (i, r) in self.raw.iter().enumerate() {
            v.push((
                r.at_ms,
                UserEvent::Raw {
                    n: i as u64 + 1,
                    line: r.line(),
                },
            ));
        }
        v.sort_by_key(|e| e.0);
        v
    }

    /// Whether the Agent is a cluster of nodes with a store host.
    pub fn cluster(&self) -> bool {
        self.nodes > 0
    }

    /// What is wrong with a plan read from a schedule file (written by `acp-chaos shrink`, then
    /// maybe edited), as "field: reason", or `None`. A plan derived from a scenario is always
    /// consistent.
    pub fn check(&self) -> Option<String> {
        let nodes_max = crate::history::NODES.len();
        if self.nodes > nodes_max {
            return Some(format!("nodes`: at most {nodes_max}"));
        }
        if (self.agent.design == Design::Cluster) != (self.nodes > 0) {
            return Some("nodes`: at least 1 for the cluster design, 0 for the others".into());
        }
        if self.latency_ms_min > self.latency_ms_max || self.latency_ms_max == 0 {
            return Some("latency_ms_min`: at most latency_ms_max, which is at least 1".into());
        }
        if self.agent.turn_ms_min > self.agent.turn_ms_max {
            return Some("agent.turn_ms_min`: at most agent.turn_ms_max".into());
        }
        if self.stdio && (self.proxy || self.watcher || self.nodes > 0) {
            return Some("stdio`: not with a proxy, a watcher or cluster nodes".into());
        }
        for (i, f) in self.faults.iter().enumerate() {
            // `nth` counts only frame and point triggers (a drawn time trigger leaves it 0).
            let mut f = f.clone();
            if f.on.frame.is_none() && f.on.point.is_none() {
                f.on.nth = f.on.nth.max(1);
            }
            if let Some(e) = f.check() {
                return Some(format!("faults[{i}].{e}"));
            }
            let cluster_only = matches!(f.kind, FaultKind::CrashStore | FaultKind::PartitionStore);
            if cluster_only && self.nodes == 0 {
                return Some(format!(
                    "faults[{i}].kind`: {} needs cluster nodes",
                    f.kind.as_str()
                ));
            }
            if f.kind == FaultKind::CrashProxy && !self.proxy {
                return Some(format!("faults[{i}].kind`: crash-proxy needs a proxy"));
            }
        }
        None
    }

    /// The Agent hosts: `agent`, or the cluster's nodes.
    pub fn agent_hosts(&self) -> &'static [&'static str] {
        if self.cluster() {
            &crate::history::NODES[..self.nodes]
        } else {
            &["agent"]
        }
    }
}

/// Most forks one workload makes (each adds a session slot).
const FORKS_MAX: usize = 8;

/// A named RNG stream of the seed.
pub fn stream(seed: u64, label: &str) -> ChaCha8Rng {
    // FNV-1a of the label, mixed into the seed: independent streams per choice.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in label.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    ChaCha8Rng::seed_from_u64(seed ^ h)
}

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
    ("workload.sessions", "sessions: 1 or 2"),
    (
        "workload.keys",
        "session-counter keys in 1 seed of 4, else uuid",
    ),
    (
        "raw",
        "1 to 3 raw session/prompt probes with a malformed or boundary key: 1 in 4 (unless the file has [[raw]])",
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
fn draw_settings(s: &Scenario, seed: u64, design: Design) -> (Scenario, Vec<String>) {
    use crate::scenario::{Mix, Transport};
    let mut d = s.clone();
    let Some(sw) = &s.swarm else {
        return (d, Vec::new());
    };
    let uniform = sw.mix == Mix::Uniform;
    let mut drawn = Vec::new();
    if uniform {
        drawn.push("mix=uniform".to_string());
    }
    // A feature's coin is always taken, so a value drawn after it is the same in both mixes.
    let draw = |name: &str| stream(seed, &format!("draw.{name}"));
    let free = |name: &str| !s.pinned.contains(name);
    // A pinned stdio transport has one Client and one Agent process: no proxy, no watcher.
    let stdio_pinned = !free("topology.transport") && s.topology.transport == Transport::Stdio;
    if free("topology.proxy") {
        let on = (draw("topology.proxy").gen_bool(0.25) || uniform) && !stdio_pinned;
        d.topology.proxy = on;
        drawn.push(format!("proxy={on}"));
    }
    if free("topology.watcher") {
        let on = (draw("topology.watcher").gen_bool(0.25) || uniform) && !stdio_pinned;
        d.topology.watcher = on;
        drawn.push(format!("watcher={on}"));
    }
    if free("topology.transport") {
        let stdio = draw("topology.transport").gen_bool(0.25)
            && !uniform
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
    if free("topology.nodes") && design == Design::Cluster {
        d.topology.nodes = draw("topology.nodes").gen_range(1..=4);
        drawn.push(format!("nodes={}", d.topology.nodes));
    }
    if free("timing.latency_ms_max") {
        let v = draw("timing.latency_ms_max").gen_range(1..=6u64);
        d.timing.latency_ms_max = v.max(d.timing.latency_ms_min);
        drawn.push(format!("latency_ms_max={}", d.timing.latency_ms_max));
    }
    if free("agent.turn_ms_max") {
        let v = draw("agent.turn_ms_max").gen_range(20..=80u64);
        d.agent.turn_ms_max = v.max(d.agent.turn_ms_min);
        drawn.push(format!("turn_ms_max={}", d.agent.turn_ms_max));
    }
    if free("client.kind") {
        d.client.kind = if draw("client.kind").gen_bool(0.25) {
            acp_chaos_models::ClientKind::SdkAutoRetry
        } else {
            acp_chaos_models::ClientKind::Spec
        };
        drawn.push(format!("client_kind={}", d.client.kind.as_str()));
    }
    if free("client.unkeyed_rate") && d.client.kind == acp_chaos_models::ClientKind::SdkAutoRetry {
        let on = draw("client.unkeyed_rate").gen_bool(0.5) || uniform;
        d.client.unkeyed_rate = if on { 0.2 } else { 0.0 };
        drawn.push(format!("unkeyed_rate={}", d.client.unkeyed_rate));
    }
    if free("client.stale_ms") {
        let mut r = draw("client.stale_ms");
        let on = r.gen_bool(0.25) || uniform;
        let v = r.gen_range(200..=600u64);
        d.client.stale_ms = if on { v } else { 0 };
        drawn.push(format!("stale_ms={}", d.client.stale_ms));
    }
    if free("workload.sessions") {
        d.workload.sessions = draw("workload.sessions").gen_range(1..=2);
        drawn.push(format!("sessions={}", d.workload.sessions));
    }
    if free("workload.keys") {
        let counter = draw("workload.keys").gen_bool(0.25);
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
    if s.raw.is_empty() {
        // Key-validation probes (K2/K3), so the swarm reaches P5 too.
        const KEYS: [&str; 8] = ["\"\"", "1", "true", "{}", "[]", "null", "\"a\"", "LONG"];
        let mut r = draw("raw");
        let on = r.gen_bool(0.25) || uniform;
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
        drawn.push(format!("raw_probes={}", d.raw.len()));
    }
    if free("workload.cancel_after_ms") {
        let mut r = draw("workload.cancel_after_ms");
        let late = r.gen_bool(0.5) || uniform;
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
        if free(name) {
            let mut r = draw(name);
            let on = r.gen_bool(1.0 / 3.0) || uniform;
            let v = (r.gen_range(1..=3u32) as f64) / 10.0;
            *rate = if on { v } else { 0.0 };
            drawn.push(format!("{}={}", &name["workload.".len()..], *rate));
        }
    }
    (d, drawn)
}

impl Plan {
    /// Derive the plan for one Agent design. `mutant` must be a known mutant name (checked by
    /// the CLI).
    pub fn derive(s: &Scenario, seed: u64, mutant: Option<&str>, design: Design) -> Plan {
        let m = mutant.and_then(mutant::find);
        // A proxy mutant needs a proxy to live in: pinned on before anything is drawn, so the
        // draws (crash-proxy, transport) see it.
        let forced;
        let s = if matches!(m.map(|m| m.kind), Some(MutantKind::Proxy(_))) && !s.topology.proxy {
            let mut f = s.clone();
            f.topology.proxy = true;
            f.pinned.insert("topology.proxy".into());
            forced = f;
            &forced
        } else {
            s
        };
        let (drawn_scenario, drawn) = draw_settings(s, seed, design);
        let s = &drawn_scenario;
        let (agent_mutant, client_mutant, proxy_mutant) = match m.map(|m| m.kind) {
            Some(MutantKind::Agent(a)) => (Some(a), None, None),
            Some(MutantKind::Client(c)) => (None, Some(c), None),
            Some(MutantKind::Proxy(p)) => (None, None, Some(p)),
            None => (None, None, None),
        };
        let o1 = match s.agent.o1 {
            Pinned::Value(v) => v,
            Pinned::Seeded(_) => *[HeldOnDisconnect::Keep, HeldOnDisconnect::Drop]
                .choose(&mut stream(seed, "policy.o1"))
                .expect("non-empty"),
        };
        let o2 = match s.agent.o2 {
            Pinned::Value(v) => v,
            Pinned::Seeded(_) => *[WorkOnDisconnect::Continue, WorkOnDisconnect::Cancel]
                .choose(&mut stream(seed, "policy.o2"))
                .expect("non-empty"),
        };
        let o4 = match s.agent.o4 {
            Pinned::Value(v) => v,
            Pinned::Seeded(_) => *[DuringTurn::Hold, DuringTurn::Steer]
                .choose(&mut stream(seed, "policy.o4"))
                .expect("non-empty"),
        };
        let mut w = stream(seed, "workload");
        let mut at = s.workload.start_ms;
        let (mut forks, mut next_slot) = (0usize, None);
        let mut workload: Vec<Submission> = Vec::new();
        for n in 1..=u64::from(s.workload.submissions) {
            // Now and then the user sends the same text again on purpose: a new submission (C2).
            // Some inputs are locally handled commands (live-only, A11).
            let command = w.gen_bool(s.workload.command_rate.clamp(0.0, 1.0));
            let text = match workload.last() {
                _ if command => "/status".to_string(),
                Some(prev) if w.gen_bool(s.workload.repeat_rate.clamp(0.0, 1.0)) => {
                    prev.text.clone()
                }
                _ => format!("input {n}"),
            };
            // After a fork the next submission goes to the fork.
            let slot = next_slot
                .take()
                .unwrap_or(((n - 1) as usize) % s.workload.sessions.max(1));
            let stop_at_ms = stream(seed, &format!("workload.stop.{n}"))
                .gen_bool(s.workload.stop_rate.clamp(0.0, 1.0))
                .then_some(at + s.workload.stop_after_ms);
            let cancel_at_ms = w
                .gen_bool(s.workload.cancel_rate.clamp(0.0, 1.0))
                .then_some(at + s.workload.cancel_after_ms);
            let close_at_ms = stream(seed, &format!("workload.close.{n}"))
                .gen_bool(s.workload.close_rate.clamp(0.0, 1.0))
                .then_some(at + s.workload.close_after_ms);
            let fork = (forks < FORKS_MAX
                && stream(seed, &format!("workload.fork.{n}"))
                    .gen_bool(s.workload.fork_rate.clamp(0.0, 1.0)))
            .then(|| {
                forks += 1;
                let into = s.workload.sessions.max(1) + forks - 1;
                next_slot = Some(into);
                (at + s.workload.fork_after_ms, into)
            });
            workload.push(Submission {
                submission: n,
                at_ms: at,
                slot,
                text,
                cancel_at_ms,
                stop_at_ms,
                close_at_ms,
                fork,
            });
            at += w.gen_range(s.workload.gap_ms_min..=s.workload.gap_ms_max);
            if let Some((t, _)) = fork {
                // The fork is asked for before the submission that goes to it.
                at = at.max(t + 1);
            }
        }
        let faults = match &s.swarm {
            Some(sw) => draw_swarm(
                s,
                seed,
                &sw.faults,
                sw.per_kind_max,
                design,
                sw.mix == crate::scenario::Mix::Uniform,
            ),
            None => s.faults.clone(),
        };
        Plan {
            scenario: s.name.clone(),
            seed,
            mutant: mutant.map(str::to_string),
            agent: AgentConfig {
                design,
                o1,
                o2,
                o4,
                turn_ms_min: s.agent.turn_ms_min,
                turn_ms_max: s.agent.turn_ms_max,
                tool_rate: s.agent.tool_rate,
                permission_rate: s.agent.permission_rate,
                mutant: agent_mutant,
            },
            retention: design.retention(),
            client: ClientConfig {
                // Longer than the longest turn, so held prompts rarely cause resends.
                prompt_timeout_ms: s.agent.turn_ms_max * 2 + 40,
                backoff_ms_min: 10,
                backoff_ms_max: 160,
                attempts_max: 40,
                sessions: s.workload.sessions.max(1),
                keys: s.workload.keys,
                stale_ms: s.client.stale_ms,
                mutant: client_mutant,
                kind: s.client.kind,
                unkeyed_rate: s.client.unkeyed_rate,
            },
            net: NetTiming {
                heartbeat_ms: 25,
                dead_ms: 250,
                connect_timeout_ms: 100,
                store_timeout_ms: s.timing.latency_ms_max * 2 + 20,
            },
            latency_ms_min: s.timing.latency_ms_min,
            latency_ms_max: s.timing.latency_ms_max,
            safety_ms: s.timing.safety_ms,
            liveness_ms: s.timing.liveness_ms,
            workload,
            faults,
            swarm: s.swarm.is_some(),
            drawn,
            raw: s.raw.clone(),
            // A proxy mutant needs a proxy to live in.
            proxy: s.topology.proxy || proxy_mutant.is_some(),
            proxy_mutant,
            watcher: s.topology.watcher,
            // Stdio has one Client and one Agent process (a forced or drawn proxy or watcher
            // means a socket).
            stdio: s.topology.transport == crate::scenario::Transport::Stdio
                && design != Design::Cluster
                && !s.topology.proxy
                && !s.topology.watcher,
            // Pinned by `[disk]`, or drawn by the swarm from its own stream.
            block_size: s.disk.block_size.or_else(|| {
                let mut r = stream(seed, "disk.block_size");
                (s.swarm.is_some() && r.gen_bool(0.5)).then(|| r.gen_range(8..=64))
            }),
            nodes: if design == Design::Cluster {
                s.topology.nodes
            } else {
                0
            },
        }
    }

    /// One line per derived value, for printing first (VOPR style).
    pub fn describe(&self) -> Vec<String> {
        let mut v = vec![
            format!("scenario={} seed={} mutant={}", self.scenario, self.seed, self.mutant.as_deref().unwrap_or("none")),
            format!(
                "agent: design={} retention={:?} o1={:?} o2={:?} o4={:?} turn_ms={}..={} tool_rate={} permission_rate={}",
                self.agent.design.as_str(),
                self.retention,
                self.agent.o1,
                self.agent.o2,
                self.agent.o4,
                self.agent.turn_ms_min,
                self.agent.turn_ms_max,
                self.agent.tool_rate,
                self.agent.permission_rate
            )
            .to_lowercase(),
            format!(
                "topology: client -> {}{}{}",
                if self.proxy { "proxy -> " } else { "" },
                if self.stdio {
                    "agent (stdio: a broken pipe ends the process; the Client starts it again)".to_string()
                } else if self.cluster() {
                    format!(
                        "{} nodes (seeded routing per connection) -> store (store_timeout_ms={})",
                        self.nodes, self.net.store_timeout_ms
                    )
                } else {
                    "agent".to_string()
                },
                if self.watcher { "; watcher -> agent" } else { "" }
            ),
            format!(
                "client: kind={} unkeyed_rate={} prompt_timeout_ms={} backoff_ms={}..={} attempts_max={} stale_ms={}",
                self.client.kind.as_str(),
                self.client.unkeyed_rate,
                self.client.prompt_timeout_ms,
                self.client.backoff_ms_min,
                self.client.backoff_ms_max,
                self.client.attempts_max,
                self.client.stale_ms
            ),
            format!(
                "net: latency_ms={}..={} heartbeat_ms={} dead_ms={} | disk: {} | phases: safety_ms={} liveness_ms={}",
                self.latency_ms_min, self.latency_ms_max, self.net.heartbeat_ms, self.net.dead_ms,
                self.block_size.map_or("atomic writes".to_string(), |b| format!("torn writes, block_size={b}")),
                self.safety_ms, self.liveness_ms
            ),
            format!(
                "workload: {} submissions to {} session(s), keys={}, at ms [{}]",
                self.workload.len(),
                self.client.sessions,
                serde_json::to_value(self.client.keys).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default(),
                self.workload.iter().map(|s| s.at_ms.to_string()).collect::<Vec<_>>().join(", ")
            ),
        ];
        if !self.drawn.is_empty() {
            v.push(format!("drawn: {}", self.drawn.join(" ")));
        }
        let src = if self.swarm { "swarm" } else { "scripted" };
        if self.faults.is_empty() {
            v.push(format!("faults ({src}): none"));
        }
        for f in &self.faults {
            v.push(format!("fault ({src}): {}", fault_line(f)));
        }
        v
    }
}

fn draw_swarm(
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
        let store = matches!(
            kind,
            FaultKind::CrashStore
                | FaultKind::PartitionStore
                | FaultKind::LoseExchange
                | FaultKind::DropUpdates
        );
        if (kind == FaultKind::CrashProxy && !s.topology.proxy)
            || (store && design != Design::Cluster)
        {
            // Nothing to fault in this topology (its own stream, so no other draw moves).
            continue;
        }
        let mut r = stream(seed, &format!("swarm.{}", kind.as_str()));
        let on = r.gen_bool(0.6);
        if !on && !uniform {
            continue;
        }
        for _ in 0..r.gen_range(1..=per_kind_max.max(1)) {
            let at = Trigger {
                at_ms: Some(r.gen_range(s.workload.start_ms..=horizon)),
                ..Trigger::default()
            };
            let frame_trigger = |r: &mut ChaCha8Rng| {
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
                Trigger {
                    frame: Some(side),
                    method: Some(method.to_string()),
                    nth,
                    ..Trigger::default()
                }
            };
            let mut f = FaultSpec {
                kind,
                on: at,
                silent: false,
                stall_ms: None,
                heal_after_ms: None,
                restart_after_ms: None,
                direction: None,
            };
            match kind {
                FaultKind::LoseFrame => {
                    f.on = frame_trigger(&mut r);
                    f.silent = r.gen_bool(0.4);
                }
                FaultKind::LoseExchange | FaultKind::DropUpdates => f.on = frame_trigger(&mut r),
                FaultKind::StallFrame => {
                    f.on = frame_trigger(&mut r);
                    f.stall_ms = Some(r.gen_range(50..=400));
                }
                FaultKind::ReorderFrame => {
                    f.on = frame_trigger(&mut r);
                    f.stall_ms = Some(r.gen_range(10..=60));
                }
                FaultKind::Partition | FaultKind::PartitionStore | FaultKind::Hold => {
                    f.heal_after_ms = Some(r.gen_range(30..=400))
                }
                FaultKind::PartitionOneway => {
                    f.heal_after_ms = Some(r.gen_range(30..=400));
                    f.direction = Some(if r.gen_bool(0.5) {
                        crate::nemesis::Direction::ClientToAgent
                    } else {
                        crate::nemesis::Direction::AgentToClient
                    });
                }
                FaultKind::CrashProxy => {
                    if r.gen_bool(0.5) {
                        // At a frame or while the Agent is at a protocol point: lands in
                        // protocol states a time rarely hits.
                        f.on = if r.gen_bool(0.5) {
                            frame_trigger(&mut r)
                        } else {
                            Trigger {
                                point: Some(*Point::AGENT.choose(&mut r).expect("non-empty")),
                                nth: r.gen_range(1..=n_sub),
                                ..Trigger::default()
                            }
                        };
                    }
                    f.restart_after_ms = Some(r.gen_range(10..=200));
                }
                FaultKind::CrashStore => {
                    if r.gen_bool(0.5) {
                        // Right after a write, before its reply: the node cannot know.
                        f.on = Trigger {
                            point: Some(Point::AfterStoreWrite),
                            nth: r.gen_range(1..=n_sub),
                            ..Trigger::default()
                        };
                    }
                    f.restart_after_ms = Some(r.gen_range(10..=200));
                }
                FaultKind::CrashAgent => {
                    if r.gen_bool(0.5) {
                        let p = *Point::AGENT.choose(&mut r).expect("non-empty");
                        f.on = Trigger {
                            point: Some(p),
                            nth: r.gen_range(1..=n_sub),
                            ..Trigger::default()
                        };
                    }
                    f.restart_after_ms = Some(r.gen_range(10..=300));
                }
                FaultKind::RestartClient => {
                    if r.gen_bool(0.5) {
                        f.on = Trigger {
                            submission: Some(r.gen_range(1..=n_sub)),
                            ..Trigger::default()
                        };
                    }
                    f.restart_after_ms = Some(r.gen_range(10..=200));
                }
                FaultKind::TransientError => {
                    f.on = Trigger {
                        frame: Some(Side::Request),
                        method: Some("session/prompt".into()),
                        nth: r.gen_range(1..=n_sub + 1),
                        ..Trigger::default()
                    };
                }
            }
            out.push(f);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(extra: &str) -> Scenario {
        let text = format!(
            "summary = \"t\"\n[workload]\nsubmissions = 4\n{extra}\n[swarm]\nfaults = [\"lose-frame\", \"crash-agent\", \"partition\"]\n"
        );
        Scenario::parse(std::path::Path::new("t.toml"), &text).expect("parses")
    }

    #[test]
    fn swarm_draws_topology_and_features_per_seed_unless_the_file_pins_them() {
        let s = scenario("");
        let plans: Vec<Plan> = (0..64)
            .map(|seed| Plan::derive(&s, seed, None, Design::Stored))
            .collect();
        // Over 64 seeds each feature is on in some and off in others.
        assert!(plans.iter().any(|p| p.proxy) && plans.iter().any(|p| !p.proxy));
        assert!(plans.iter().any(|p| p.watcher) && plans.iter().any(|p| !p.watcher));
        assert!(plans.iter().any(|p| p.stdio) && plans.iter().any(|p| !p.stdio));
        assert!(plans.iter().all(|p| !(p.stdio && (p.proxy || p.watcher))));
        assert!(plans.iter().any(|p| p.latency_ms_max > 1));
        assert!(plans
            .iter()
            .all(|p| p.drawn.iter().any(|d| d.starts_with("proxy="))));
        // Pinned in the file: never drawn, whatever the seed.
        let pinned = scenario("[topology]\nproxy = true\n[timing]\nlatency_ms_max = 2\n");
        for seed in 0..64 {
            let p = Plan::derive(&pinned, seed, None, Design::Stored);
            assert!(p.proxy && p.latency_ms_max == 2, "seed {seed}");
            assert!(!p.drawn.iter().any(|d| d.starts_with("proxy=")));
        }
    }

    #[test]
    fn pinning_one_setting_does_not_move_the_other_draws() {
        let free = scenario("");
        let pinned = scenario("[topology]\nwatcher = false\n");
        for seed in 0..32 {
            let a = Plan::derive(&free, seed, None, Design::Cluster);
            let b = Plan::derive(&pinned, seed, None, Design::Cluster);
            assert_eq!(a.proxy, b.proxy);
            assert_eq!(a.nodes, b.nodes);
            assert_eq!(a.client.stale_ms, b.client.stale_ms);
            assert_eq!(a.latency_ms_max, b.latency_ms_max);
            if a.watcher == b.watcher {
                assert_eq!(a.faults.len(), b.faults.len(), "seed {seed}");
            }
        }
    }

    #[test]
    fn a_pinned_stdio_transport_or_a_proxy_mutant_never_meets_a_drawn_conflict() {
        let mut s =
            scenario("[agent]\ndesigns = [\"stored\"]\n[topology]\ntransport = \"stdio\"\n");
        for mix in [crate::scenario::Mix::Swarm, crate::scenario::Mix::Uniform] {
            s.swarm.as_mut().unwrap().mix = mix;
            for seed in 0..32 {
                let p = Plan::derive(&s, seed, None, Design::Stored);
                assert!(p.stdio && !p.proxy && !p.watcher, "{mix:?} seed {seed}");
            }
        }
        let free = scenario("");
        for seed in 0..32 {
            let p = Plan::derive(&free, seed, Some("proxy-drops-key"), Design::Stored);
            assert!(p.proxy && !p.stdio, "seed {seed}");
        }
    }

    #[test]
    fn uniform_mix_turns_every_fault_kind_and_feature_on() {
        let mut s = scenario("");
        s.swarm.as_mut().unwrap().mix = crate::scenario::Mix::Uniform;
        for seed in 0..16 {
            let p = Plan::derive(&s, seed, None, Design::Stored);
            assert!(p.proxy && p.watcher && !p.stdio, "seed {seed}");
            for k in [
                FaultKind::LoseFrame,
                FaultKind::CrashAgent,
                FaultKind::Partition,
            ] {
                assert!(
                    p.faults.iter().any(|f| f.kind == k),
                    "seed {seed}: no {k:?}"
                );
            }
        }
    }
}
