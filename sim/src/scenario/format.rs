//! The tables of a scenario file and their defaults (see `scenarios/README.md`). Unknown
//! fields are refused.

use acp_chaos_models::{
    CancelRequest, Design, DuringTurn, HeldOnDisconnect, KeyScheme, WorkOnDisconnect,
};
use serde::{Deserialize, Serialize};

use crate::nemesis::FaultKind;

/// Expected verdict of a scenario on the correct models.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Expect {
    /// Every property holds.
    Valid,
    /// Some property must fail (a scenario that shows a spec gap).
    Invalid,
}

/// A policy that may be pinned or left to the seed (`"seeded"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Pinned<T> {
    /// Pinned value.
    Value(T),
    /// Drawn from the seed (`"seeded"`).
    Seeded(Seeded),
}

impl<'de, T: serde::de::DeserializeOwned> Deserialize<'de> for Pinned<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        if s == "seeded" {
            return Ok(Pinned::Seeded(Seeded::Seeded));
        }
        // The policy's own error names the allowed values; add `seeded`.
        T::deserialize(serde::de::value::StrDeserializer::<serde::de::value::Error>::new(&s))
            .map(Pinned::Value)
            .map_err(|e| serde::de::Error::custom(format!("{e}, or `seeded`")))
    }
}

impl<T: Serialize> std::fmt::Display for Pinned<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let v = serde_json::to_value(self).map_err(|_| std::fmt::Error)?;
        write!(f, "{}", v.as_str().unwrap_or("?"))
    }
}

/// The word `seeded`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Seeded {
    /// Draw from the seed.
    Seeded,
}

/// `[workload]`: what the user submits.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    /// Number of submissions.
    #[serde(default = "one")]
    pub submissions: u32,
    /// Shortest gap between submissions, ms.
    #[serde(default = "gap_min")]
    pub gap_ms_min: u64,
    /// Longest gap between submissions, ms.
    #[serde(default = "gap_max")]
    pub gap_ms_max: u64,
    /// Time of the first submission, ms after start.
    #[serde(default = "start")]
    pub start_ms: u64,
    /// Sessions the Client opens; submissions go to them in turn.
    #[serde(default = "one_usize")]
    pub sessions: usize,
    /// Key scheme of the Client: `uuid` (default) or `session-counter` (`k1`, `k2`, ... per
    /// session: the same strings in every session, exercising A9).
    #[serde(default = "uuid_keys")]
    pub keys: KeyScheme,
    /// Share of submissions that are locally handled commands (`/status`: live-only, A11).
    #[serde(default)]
    pub command_rate: f64,
    /// Share of submissions where the user sends the previous text again on purpose: a new
    /// submission with the same text (C2).
    #[serde(default = "repeat_default")]
    pub repeat_rate: f64,
    /// Share of submissions the user cancels (`$/cancel_request`) `cancel_after_ms` later.
    #[serde(default)]
    pub cancel_rate: f64,
    /// Delay from a submission to its cancel.
    #[serde(default = "cancel_after")]
    pub cancel_after_ms: u64,
    /// Share of submissions after which the user presses stop (`session/cancel`) on the
    /// session `stop_after_ms` later.
    #[serde(default)]
    pub stop_rate: f64,
    /// Delay from a submission to the stop.
    #[serde(default = "cancel_after")]
    pub stop_after_ms: u64,
    /// Share of submissions after which the user closes the session (`session/close`, A15)
    /// `close_after_ms` later; the next input there resumes it first.
    #[serde(default)]
    pub close_rate: f64,
    /// Delay from a submission to the close.
    #[serde(default = "cancel_after")]
    pub close_after_ms: u64,
    /// Share of submissions after which the user forks the session (`session/fork`, A9)
    /// `fork_after_ms` later; the next submission goes to the fork.
    #[serde(default)]
    pub fork_rate: f64,
    /// Delay from a submission to the fork.
    #[serde(default = "cancel_after")]
    pub fork_after_ms: u64,
}

/// `[agent]`: the Agent design and its policies.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    /// Agent designs the scenario runs under (default: every design). `--agent` overrides.
    #[serde(default = "all_designs")]
    pub designs: Vec<Design>,
    /// O1: `keep`, `drop` or `seeded`.
    #[serde(default = "o1_default")]
    pub o1: Pinned<HeldOnDisconnect>,
    /// O2: `continue`, `cancel` or `seeded`.
    #[serde(default = "o2_default")]
    pub o2: Pinned<WorkOnDisconnect>,
    /// Chance that a turn makes a tool call with a side effect.
    #[serde(default = "half")]
    pub tool_rate: f64,
    /// Chance that a tool call asks the Client first (`session/request_permission`).
    #[serde(default = "half")]
    pub permission_rate: f64,
    /// Chance that a turn's work fails after insertion (it ends with `stopReason: "error"`,
    /// A3); 0 (default) never.
    #[serde(default)]
    pub fail_rate: f64,
    /// O4: `hold`, `steer` or `seeded`.
    #[serde(default = "o4_default")]
    pub o4: Pinned<DuringTurn>,
    /// Shortest turn, ms.
    #[serde(default = "turn_min")]
    pub turn_ms_min: u64,
    /// Longest turn, ms.
    #[serde(default = "turn_max")]
    pub turn_ms_max: u64,
    /// Retention window, simulated ms: each retained message is discarded with its key this
    /// long after its insertion, and a retry of it may be inserted again (A16). 0 (default):
    /// no window, the design keeps what its retention declares. Not for `cluster`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub retention_ms: u64,
    /// A5's MAY for a `$/cancel_request` naming a held prompt: `honour` (default: withdraw it)
    /// or `ignore` (insert it in turn and answer its `messageId`).
    #[serde(default, skip_serializing_if = "CancelRequest::is_honour")]
    pub cancel_request: CancelRequest,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// `[timing]`: network and phase bounds (simulated ms).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Timing {
    /// Smallest one-way latency.
    #[serde(default = "one_u64")]
    pub latency_ms_min: u64,
    /// Largest one-way latency (equal to min for scripted runs).
    #[serde(default = "one_u64")]
    pub latency_ms_max: u64,
    /// End of the safety phase (faults on).
    #[serde(default = "safety")]
    pub safety_ms: u64,
    /// Bound of the liveness phase after heal.
    #[serde(default = "liveness")]
    pub liveness_ms: u64,
}

/// `[disk]`: the simulated disk (turmoil fs). Only `fsync` makes a write durable; a crash
/// loses the rest.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiskSpec {
    /// Torn writes: an unsynced write a crash interrupts survives as a prefix of whole blocks
    /// of this many bytes (records are framed with length and checksum; recovery cuts a torn
    /// tail). Unset: writes are atomic; under `[swarm]` an unset value is drawn per seed.
    pub block_size: Option<u64>,
}

/// `[client]`: the spec Client's settings.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientSpec {
    /// Show a pending input older than this (ms) to the user instead of resending it after a
    /// reconnect (C7); 0 (default) never does.
    #[serde(default)]
    pub stale_ms: u64,
    /// `spec` (default) or `sdk-auto-retry` (resends by retry class, C9).
    #[serde(default)]
    pub kind: acp_chaos_models::ClientKind,
    /// `sdk-auto-retry`: the share of prompts the application sends without a key (0 to 1).
    #[serde(default)]
    pub unkeyed_rate: f64,
    /// How long the user takes to answer a `session/request_permission`, in simulated ms (0,
    /// the default: at once; at most 60,000).
    #[serde(default)]
    pub permission_ms: u64,
}

/// `[topology]`: which hosts run.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Topology {
    /// A conductor between Client and Agent that rewrites JSON-RPC ids (X1).
    #[serde(default)]
    pub proxy: bool,
    /// A second Client that resumes the session and watches it (never prompts).
    #[serde(default)]
    pub watcher: bool,
    /// Cluster design: the number of Agent nodes (1 to 5, default 3).
    #[serde(default = "default_nodes")]
    pub nodes: usize,
    /// `socket` (default): a broken connection leaves the Agent process running; `stdio`: the
    /// connection is the process's pipe, so when it ends the Agent process is gone and the
    /// Client starts it again (not for `cluster`, a proxy or a watcher).
    #[serde(default)]
    pub transport: Transport,
}

/// How a stdio-like Agent is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Transport {
    /// A stream connection to a long-lived Agent process.
    #[default]
    Socket,
    /// The Agent's stdin/stdout: one connection for the life of the process.
    Stdio,
}

fn default_nodes() -> usize {
    3
}

impl Default for Topology {
    fn default() -> Self {
        Topology {
            proxy: false,
            watcher: false,
            nodes: default_nodes(),
            transport: Transport::Socket,
        }
    }
}

/// `[swarm]`: draw faults from the seed instead of a script.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwarmSpec {
    /// Fault kinds the swarm may enable; each seed enables a random subset.
    pub faults: Vec<FaultKind>,
    /// Most faults of one kind in one run.
    #[serde(default = "three")]
    pub per_kind_max: u32,
    /// `swarm` (default): each seed switches each fault kind and each optional feature (proxy,
    /// watcher, close, fork, ...) on or off from its own stream; `uniform`: every one is on in
    /// every seed (the baseline swarm testing is measured against; stdio stays off, as it
    /// excludes a proxy and a watcher).
    #[serde(default)]
    pub mix: Mix,
}

/// How the swarm enables fault kinds and optional features.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mix {
    /// A random subset per seed (swarm testing).
    #[default]
    Swarm,
    /// Everything on in every seed.
    Uniform,
}

/// `[field]`: which field case a scenario reproduces.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FieldCase {
    /// The case id, e.g. `F19`.
    pub case: String,
    /// The mutant that reproduces the original bug (`acp-chaos list mutants`).
    pub mutant: String,
    /// The property its run must fail.
    pub property: String,
}

/// `[[raw]]`: one raw `session/prompt` the Client sends as written, once, on its first ready
/// connection at or after `at_ms` (P5 reads the Agent's answer). Give `key_json` (the
/// `idempotencyKey` value as JSON text, e.g. `'""'`, `'1'`, `'"k"'`; omit it to send no key)
/// or a whole `line` (`$ID` and `$SESSION` are filled in; it need not be valid JSON).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawProbe {
    /// When the user's Client sends it (ms).
    pub at_ms: u64,
    /// The key as JSON text (exclusive with `line`).
    #[serde(default)]
    pub key_json: Option<String>,
    /// The whole line (exclusive with `key_json`).
    #[serde(default)]
    pub line: Option<String>,
    /// What it probes (for reports).
    #[serde(default)]
    pub note: String,
}

impl RawProbe {
    /// The line the Client sends (`$ID`, `$SESSION` still to fill in).
    pub fn line(&self) -> String {
        if let Some(l) = &self.line {
            return l.clone();
        }
        let key = self
            .key_json
            .as_deref()
            .map(|k| format!(",\"idempotencyKey\":{k}"))
            .unwrap_or_default();
        format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":$ID,\"method\":\"session/prompt\",\"params\":{{\"sessionId\":\"$SESSION\",\"prompt\":[{{\"type\":\"text\",\"text\":\"raw probe\"}}]{key}}}}}"
        )
    }
}

fn one() -> u32 {
    1
}

fn cancel_after() -> u64 {
    15
}

fn one_usize() -> usize {
    1
}

fn uuid_keys() -> KeyScheme {
    KeyScheme::Uuid
}

fn repeat_default() -> f64 {
    0.2
}

fn three() -> u32 {
    3
}

fn one_u64() -> u64 {
    1
}

fn gap_min() -> u64 {
    20
}

fn gap_max() -> u64 {
    80
}

fn start() -> u64 {
    20
}

fn all_designs() -> Vec<Design> {
    Design::ALL.to_vec()
}

fn half() -> f64 {
    0.5
}

fn o2_default() -> Pinned<WorkOnDisconnect> {
    Pinned::Value(WorkOnDisconnect::Continue)
}

fn o1_default() -> Pinned<HeldOnDisconnect> {
    Pinned::Value(HeldOnDisconnect::Keep)
}

fn o4_default() -> Pinned<DuringTurn> {
    Pinned::Value(DuringTurn::Hold)
}

fn turn_min() -> u64 {
    10
}

fn turn_max() -> u64 {
    50
}

fn safety() -> u64 {
    1500
}

fn liveness() -> u64 {
    5000
}

pub fn expect_valid() -> Expect {
    Expect::Valid
}

pub fn workload_default() -> Workload {
    Workload {
        submissions: 1,
        gap_ms_min: gap_min(),
        gap_ms_max: gap_max(),
        start_ms: start(),
        sessions: 1,
        keys: KeyScheme::Uuid,
        command_rate: 0.0,
        repeat_rate: repeat_default(),
        cancel_rate: 0.0,
        cancel_after_ms: cancel_after(),
        stop_rate: 0.0,
        stop_after_ms: cancel_after(),
        close_rate: 0.0,
        close_after_ms: cancel_after(),
        fork_rate: 0.0,
        fork_after_ms: cancel_after(),
    }
}

pub fn agent_default() -> AgentSpec {
    AgentSpec {
        designs: all_designs(),
        o1: o1_default(),
        o2: o2_default(),
        tool_rate: half(),
        permission_rate: half(),
        o4: o4_default(),
        turn_ms_min: turn_min(),
        turn_ms_max: turn_max(),
        retention_ms: 0,
        fail_rate: 0.0,
        cancel_request: CancelRequest::Honour,
    }
}

pub fn timing_default() -> Timing {
    Timing {
        latency_ms_min: 1,
        latency_ms_max: 1,
        safety_ms: safety(),
        liveness_ms: liveness(),
    }
}
