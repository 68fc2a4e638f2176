//! Scenario files: TOML in `scenarios/`, one run description per file.
//!
//! Unknown fields are rejected. Every error names the file, the line and the field, and the CLI
//! exits 2 on it. See `scenarios/README.md` for the format.

use std::path::{Path, PathBuf};

use acp_chaos_models::{Design, DuringTurn, HeldOnDisconnect, KeyScheme, WorkOnDisconnect};
use serde::{Deserialize, Serialize};

use crate::nemesis::{FaultKind, FaultSpec};

/// A scenario file could not be used. Displayed as `FILE:LINE: field `F`: reason`.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// Reading the file failed.
    #[error("{path}: cannot read: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// TOML syntax, type or unknown/missing field.
    #[error("{path}:{line}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// What is wrong, naming the field.
        message: String,
    },
    /// No such scenario by name.
    #[error("no scenario named `{0}` (see `acp-chaos list`)")]
    NotFound(String),
}

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
    /// O4: `hold`, `steer` or `seeded`.
    #[serde(default = "o4_default")]
    pub o4: Pinned<DuringTurn>,
    /// Shortest turn, ms.
    #[serde(default = "turn_min")]
    pub turn_ms_min: u64,
    /// Longest turn, ms.
    #[serde(default = "turn_max")]
    pub turn_ms_max: u64,
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
pub struct Disk {
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

/// A parsed scenario.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Name (defaults to the file stem).
    #[serde(default)]
    pub name: String,
    /// What it exercises.
    pub summary: String,
    /// RULES.md ids it concerns.
    #[serde(default)]
    pub rules: Vec<String>,
    /// Verdict on the correct models.
    #[serde(default = "expect_valid")]
    pub expect: Expect,
    /// Per-design override of `expect`, e.g. `{ in-memory = "valid" }`.
    #[serde(default)]
    pub expect_by_design: std::collections::BTreeMap<Design, Expect>,
    /// Events that must happen in at least one seed, or the campaign is vacuous (exit 4).
    #[serde(default)]
    pub sometimes: Vec<String>,
    /// The workload.
    #[serde(default = "workload_default")]
    pub workload: Workload,
    /// The Agent.
    #[serde(default = "agent_default")]
    pub agent: AgentSpec,
    /// Timing.
    #[serde(default = "timing_default")]
    pub timing: Timing,
    /// The simulated disk.
    #[serde(default)]
    pub disk: Disk,
    /// Hosts between Client and Agent.
    #[serde(default)]
    pub topology: Topology,
    /// The spec Client's settings.
    #[serde(default)]
    pub client: ClientSpec,
    /// Scripted faults.
    #[serde(default, rename = "fault")]
    pub faults: Vec<FaultSpec>,
    /// Swarm faults.
    pub swarm: Option<SwarmSpec>,
    /// Raw `session/prompt` probes the Client sends once each (key validation, K2/K3).
    #[serde(default)]
    pub raw: Vec<RawProbe>,
    /// A field case (`../shared/cases/field-cases.md`): the mutant that reproduces the original
    /// bug and the property it must fail.
    #[serde(default)]
    pub field: Option<FieldCase>,
    /// Where it was read from (not in the file).
    #[serde(skip)]
    pub path: PathBuf,
    /// How a repro line names it: its name, or the path it was given by.
    #[serde(skip)]
    pub reference: String,
    /// Settings the file sets (`table.key`, e.g. `topology.proxy`): the swarm never draws
    /// these (not in the file).
    #[serde(skip)]
    pub pinned: std::collections::BTreeSet<String>,
}

/// Events a scenario may list under `sometimes`.
pub const EVENTS: &[(&str, &str)] = &[
    ("fault", "the nemesis applied a fault"),
    ("retry", "some submission had more than one attempt"),
    (
        "dedup-hit",
        "the Agent answered a retry from a recorded key",
    ),
    ("wait-held", "a retry waited for its held original (A7)"),
    ("held", "a prompt was held behind a running turn"),
    (
        "steer",
        "a prompt was inserted into a running turn (O4 steer)",
    ),
    ("agent-restart", "the Agent process restarted"),
    ("client-restart", "the Client process restarted"),
    ("reconnect", "the Client opened a second connection"),
    (
        "transient-error",
        "the Agent rejected an attempt with a transient error",
    ),
    ("surfaced", "an input was shown to the user as failed"),
    (
        "withdrawn",
        "an input was withdrawn by its own user's cancel",
    ),
    ("tool", "a turn ran a tool call with a side effect"),
    ("watched", "a second Client resumed the session to watch it"),
    (
        "raw-probe",
        "the Client sent a raw session/prompt probe ([[raw]])",
    ),
    (
        "id-shared",
        "one JSON-RPC id awaited the Agent's answer on two connections at once (legal)",
    ),
    (
        "reordered",
        "a frame on another connection overtook a held-back frame (reorder-frame)",
    ),
    ("permission", "the Agent asked the Client for permission"),
    ("live-only", "a locally handled command was answered (A11)"),
    (
        "other-node",
        "cluster: attempts of one submission reached different nodes",
    ),
    ("closed", "the user closed a session (session/close, A15)"),
    (
        "torn-tail",
        "a restart found a torn record at the end of a store and cut it",
    ),
    (
        "forked",
        "the user forked a session and prompted in the fork (A9)",
    ),
    (
        "resend-not-accepted",
        "the Client resent a request that failed before acceptance without reconnecting (X5)",
    ),
    (
        "not-resent",
        "the sdk-auto-retry Client did not resend a request its retry class forbids (C9)",
    ),
    (
        "store-retry",
        "cluster: a node sent a store write again after its answer timed out",
    ),
];

impl Scenario {
    /// Parse scenario text; `path` is used for messages and the default name.
    pub fn parse(path: &Path, text: &str) -> Result<Scenario, ScenarioError> {
        let mut s: Scenario = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|r| line_of(text, r.start)).unwrap_or(1);
            let mut message = e.message().trim().to_string();
            // serde's type errors do not say which field: take it from the line.
            if !message.contains("field") {
                if let Some(key) = key_at(text, line) {
                    message = format!("field `{key}`: {message}");
                }
            }
            ScenarioError::Parse {
                path: path.to_path_buf(),
                line,
                message,
            }
        })?;
        s.path = path.to_path_buf();
        if s.name.is_empty() {
            s.name = path
                .file_stem()
                .map(|x| x.to_string_lossy().into_owned())
                .unwrap_or_default();
        }
        s.reference = s.name.clone();
        // The typed parse succeeded, so the text is a TOML table.
        if let Ok(raw) = text.parse::<toml::Table>() {
            for (table, v) in &raw {
                if let Some(t) = v.as_table() {
                    s.pinned.extend(t.keys().map(|k| format!("{table}.{k}")));
                }
            }
        }
        s.validate(text)?;
        Ok(s)
    }

    /// The expected verdict for a design.
    pub fn expect_for(&self, d: Design) -> Expect {
        self.expect_by_design
            .get(&d)
            .copied()
            .unwrap_or(self.expect)
    }

    /// Read and parse one file.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let text = std::fs::read_to_string(path).map_err(|source| ScenarioError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Scenario::parse(path, &text)
    }

    fn validate(&self, text: &str) -> Result<(), ScenarioError> {
        let err = |needle: &str, nth: usize, message: String| ScenarioError::Parse {
            path: self.path.clone(),
            line: find_line(text, needle, nth),
            message,
        };
        if self.agent.designs.is_empty() {
            return Err(err(
                "designs",
                0,
                "field `agent.designs`: name at least one design".into(),
            ));
        }
        for (v, name) in [
            (self.agent.tool_rate, "tool_rate"),
            (self.agent.permission_rate, "permission_rate"),
            (self.workload.command_rate, "command_rate"),
            (self.workload.repeat_rate, "repeat_rate"),
            (self.workload.cancel_rate, "cancel_rate"),
            (self.workload.stop_rate, "stop_rate"),
            (self.workload.close_rate, "close_rate"),
            (self.workload.fork_rate, "fork_rate"),
            (self.client.unkeyed_rate, "unkeyed_rate"),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return Err(err(
                    name,
                    0,
                    format!("field `{name}`: a probability from 0 to 1"),
                ));
            }
        }
        if self.workload.sessions == 0 || self.workload.sessions > 16 {
            return Err(err(
                "sessions",
                0,
                "field `workload.sessions`: must be 1 to 16".into(),
            ));
        }
        if self
            .disk
            .block_size
            .is_some_and(|b| !(1..=1_000_000).contains(&b))
        {
            return Err(err(
                "block_size",
                0,
                "field `disk.block_size`: must be 1 to 1000000 bytes".into(),
            ));
        }
        if self.topology.transport == Transport::Stdio
            && (self.topology.proxy
                || self.topology.watcher
                || self.agent.designs.contains(&Design::Cluster))
        {
            return Err(err(
                "transport",
                0,
                "field `topology.transport`: stdio has one Client and one Agent process (no proxy, no watcher, not the cluster design)".into(),
            ));
        }
        if !(1..=crate::history::NODES.len()).contains(&self.topology.nodes) {
            return Err(err(
                "nodes",
                0,
                format!(
                    "field `topology.nodes`: must be 1 to {}",
                    crate::history::NODES.len()
                ),
            ));
        }
        if self.workload.submissions == 0 {
            return Err(err(
                "submissions",
                0,
                "field `workload.submissions`: must be at least 1".into(),
            ));
        }
        for (lo, hi, name) in [
            (
                self.workload.gap_ms_min,
                self.workload.gap_ms_max,
                "workload.gap_ms",
            ),
            (
                self.agent.turn_ms_min,
                self.agent.turn_ms_max,
                "agent.turn_ms",
            ),
            (
                self.timing.latency_ms_min,
                self.timing.latency_ms_max,
                "timing.latency_ms",
            ),
        ] {
            if lo > hi {
                let field = name.rsplit('.').next().unwrap_or(name);
                return Err(err(
                    field,
                    0,
                    format!("field `{name}_min`: larger than `{name}_max`"),
                ));
            }
        }
        if self.timing.latency_ms_min == 0 {
            return Err(err(
                "latency_ms_min",
                0,
                "field `timing.latency_ms_min`: must be at least 1".into(),
            ));
        }
        for (i, r) in self.raw.iter().enumerate() {
            if r.key_json.is_some() && r.line.is_some() {
                return Err(err(
                    "[[raw]]",
                    i,
                    "field `raw`: `key_json` or `line`, not both".into(),
                ));
            }
        }
        if let Some(fc) = &self.field {
            if acp_chaos_models::mutant::find(&fc.mutant).is_none() {
                return Err(err(
                    "mutant",
                    0,
                    format!(
                        "field `field.mutant`: unknown mutant `{}` (see `acp-chaos list mutants`)",
                        fc.mutant
                    ),
                ));
            }
            if !crate::checkers::CHECKERS
                .iter()
                .any(|c| c.property == fc.property)
            {
                return Err(err(
                    "property",
                    0,
                    format!("field `field.property`: unknown property `{}`", fc.property),
                ));
            }
        }
        for e in &self.sometimes {
            if !EVENTS.iter().any(|(n, _)| n == e) {
                let known: Vec<_> = EVENTS.iter().map(|(n, _)| *n).collect();
                return Err(err(
                    "sometimes",
                    0,
                    format!(
                        "field `sometimes`: unknown event `{e}` (known: {})",
                        known.join(", ")
                    ),
                ));
            }
        }
        if !self
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
            || self.name.starts_with('.')
        {
            return Err(err(
                "name",
                0,
                "field `name`: letters, digits, `-`, `_` and `.` only (it names report folders)"
                    .into(),
            ));
        }
        // Bounds keep runs finite and arithmetic exact (simulated ms, counts).
        const MS_MAX: u64 = 600_000;
        let bounded: [(u64, u64, &str, &str); 10] = [
            (
                u64::from(self.workload.submissions),
                10_000,
                "submissions",
                "workload.submissions",
            ),
            (
                self.workload.gap_ms_max,
                MS_MAX,
                "gap_ms_max",
                "workload.gap_ms_max",
            ),
            (
                self.workload.start_ms,
                MS_MAX,
                "start_ms",
                "workload.start_ms",
            ),
            (
                self.workload.cancel_after_ms,
                MS_MAX,
                "cancel_after_ms",
                "workload.cancel_after_ms",
            ),
            (
                self.agent.turn_ms_max,
                MS_MAX,
                "turn_ms_max",
                "agent.turn_ms_max",
            ),
            (
                self.timing.latency_ms_max,
                10_000,
                "latency_ms_max",
                "timing.latency_ms_max",
            ),
            (
                self.timing.safety_ms,
                MS_MAX,
                "safety_ms",
                "timing.safety_ms",
            ),
            (
                self.timing.liveness_ms,
                MS_MAX,
                "liveness_ms",
                "timing.liveness_ms",
            ),
            (
                self.swarm
                    .as_ref()
                    .map(|s| u64::from(s.per_kind_max))
                    .unwrap_or(1),
                100,
                "per_kind_max",
                "swarm.per_kind_max",
            ),
            (self.faults.len() as u64, 1_000, "[[fault]]", "fault"),
        ];
        for (v, max, needle, field) in bounded {
            if v > max {
                return Err(err(needle, 0, format!("field `{field}`: at most {max}")));
            }
        }
        if self.timing.safety_ms < 10 || self.timing.liveness_ms < 10 {
            let f = if self.timing.safety_ms < 10 {
                "safety_ms"
            } else {
                "liveness_ms"
            };
            return Err(err(f, 0, format!("field `timing.{f}`: at least 10")));
        }
        // Every submission must fall inside the safety phase, or it is never made.
        let last = self.workload.start_ms
            + u64::from(self.workload.submissions - 1) * self.workload.gap_ms_max;
        if last >= self.timing.safety_ms {
            return Err(err(
                "safety_ms",
                0,
                format!(
                    "field `timing.safety_ms`: the last submission may come at {last} ms; the safety phase must be longer (start_ms + (submissions - 1) * gap_ms_max)"
                ),
            ));
        }
        if let Some(sw) = &self.swarm {
            if !self.faults.is_empty() {
                return Err(err("[swarm]", 0, "field `swarm`: a scenario has either `[swarm]` or `[[fault]]` entries, not both".into()));
            }
            if sw.faults.is_empty() {
                return Err(err(
                    "faults",
                    0,
                    "field `swarm.faults`: name at least one fault kind".into(),
                ));
            }
        }
        for (i, f) in self.faults.iter().enumerate() {
            if let Some(m) = f.check() {
                return Err(err("[[fault]]", i, format!("field `fault[{i}].{m}")));
            }
            let cluster_only = matches!(
                f.kind,
                FaultKind::CrashStore
                    | FaultKind::PartitionStore
                    | FaultKind::LoseExchange
                    | FaultKind::DropUpdates
            );
            if cluster_only && self.agent.designs.iter().any(|d| *d != Design::Cluster) {
                return Err(err(
                    "[[fault]]",
                    i,
                    format!(
                        "field `fault[{i}].kind`: {} needs the cluster design (its store or its remote transport); set `agent.designs = [\"cluster\"]`",
                        f.kind.as_str()
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// Every `*.toml` in `dir`, sorted by file name.
pub fn load_dir(dir: &Path) -> Result<Vec<Scenario>, ScenarioError> {
    let rd = std::fs::read_dir(dir).map_err(|source| ScenarioError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut paths: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    paths.sort();
    paths.iter().map(|p| Scenario::load(p)).collect()
}

/// Find a scenario by name (file stem in `dir`) or by path to a `.toml` file.
pub fn resolve(dir: &Path, name_or_path: &str) -> Result<Scenario, ScenarioError> {
    let p = Path::new(name_or_path);
    if p.extension().is_some_and(|x| x == "toml") {
        // Named by path: repro lines name it by the same path.
        let mut s = Scenario::load(p)?;
        s.reference = name_or_path.to_string();
        return Ok(s);
    }
    let file = dir.join(format!("{name_or_path}.toml"));
    if file.exists() {
        return Scenario::load(&file);
    }
    Err(ScenarioError::NotFound(name_or_path.to_string()))
}

/// The key assigned on a line (`key = ...`, also inside an inline table `on = { key = ... }`).
fn key_at(text: &str, line: usize) -> Option<String> {
    let l = text.lines().nth(line.checked_sub(1)?)?;
    let key = l.split('=').next()?.trim();
    let key = key.trim_start_matches('[').trim_end_matches(']').trim();
    (!key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.'))
    .then(|| key.to_string())
}

fn line_of(text: &str, byte: usize) -> usize {
    text[..byte.min(text.len())]
        .bytes()
        .filter(|b| *b == b'\n')
        .count()
        + 1
}

/// Line of the `nth` (0-based) line containing `needle`, or 1.
fn find_line(text: &str, needle: &str, nth: usize) -> usize {
    text.lines()
        .enumerate()
        .filter(|(_, l)| {
            l.trim_start().starts_with(needle) || (needle.starts_with('[') && l.contains(needle))
        })
        .nth(nth)
        .map(|(i, _)| i + 1)
        .unwrap_or(1)
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
fn expect_valid() -> Expect {
    Expect::Valid
}
fn workload_default() -> Workload {
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
fn agent_default() -> AgentSpec {
    AgentSpec {
        designs: all_designs(),
        o1: o1_default(),
        o2: o2_default(),
        tool_rate: half(),
        permission_rate: half(),
        o4: o4_default(),
        turn_ms_min: turn_min(),
        turn_ms_max: turn_max(),
    }
}
fn timing_default() -> Timing {
    Timing {
        latency_ms_min: 1,
        latency_ms_max: 1,
        safety_ms: safety(),
        liveness_ms: liveness(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Scenario, ScenarioError> {
        Scenario::parse(Path::new("scenarios/x.toml"), text)
    }

    #[test]
    fn unknown_field_names_file_line_and_field() {
        let e = parse("summary = \"s\"\n[agent]\nflavour = 1\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("scenarios/x.toml:3:"), "{e}");
        assert!(e.contains("flavour"), "{e}");
    }

    #[test]
    fn bad_fault_names_its_field() {
        let e = parse("summary = \"s\"\n\n[[fault]]\nkind = \"partition\"\non = { at_ms = 5 }\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("scenarios/x.toml:3:"), "{e}");
        assert!(e.contains("heal_after_ms"), "{e}");
        let e = parse("summary = \"s\"\n[[fault]]\nkind = \"explode\"\non = { at_ms = 5 }\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains(":3:") && e.contains("explode"), "{e}");
    }

    #[test]
    fn bad_settings_are_refused_naming_the_field() {
        for (text, field) in [
            ("summary = \"s\"\nname = \"../up\"\n", "name"),
            ("summary = \"s\"\n[agent]\no4 = \"sideways\"\n", "o4"),
            ("summary = \"s\"\n[workload]\nsubmissions = \"two\"\n", "submissions"),
            ("summary = \"s\"\n[workload]\nsubmissions = 150\n", "safety_ms"),
            ("summary = \"s\"\n[swarm]\nfaults = []\n", "swarm.faults"),
            ("summary = \"s\"\n[swarm]\nper_kind_max = 4000000000\nfaults = [\"partition\"]\n", "per_kind_max"),
            (
                "summary = \"s\"\n[[fault]]\nkind = \"lose-frame\"\non = { frame = \"request\", method = \"session/bogus\" }\n",
                "on.method",
            ),
            (
                "summary = \"s\"\n[[fault]]\nkind = \"lose-frame\"\nstall_ms = 5\non = { frame = \"request\", method = \"session/new\" }\n",
                "stall_ms",
            ),
            ("summary = \"s\"\n[timing]\nsafety_ms = 0\n", "safety_ms"),
            ("summary = \"s\"\n[topology]\nnodes = 9\n", "topology.nodes"),
            ("summary = \"s\"\n[client]\nkind = \"psychic\"\n", "kind"),
            ("summary = \"s\"\n[client]\nunkeyed_rate = 2.0\n", "unkeyed_rate"),
            (
                "summary = \"s\"\n[[fault]]\nkind = \"partition-store\"\nheal_after_ms = 5\non = { point = \"after-receive\" }\n",
                "after-store-write",
            ),
            (
                "summary = \"s\"\n[[fault]]\nkind = \"crash-agent\"\nrestart_after_ms = 5\non = { point = \"after-store-write\" }\n",
                "on.point",
            ),
            (
                "summary = \"s\"\n[[fault]]\nkind = \"crash-store\"\nheal_after_ms = 5\non = { at_ms = 5 }\n",
                "heal_after_ms",
            ),
        ] {
            let e = parse(text).unwrap_err().to_string();
            assert!(e.starts_with("scenarios/x.toml:") && e.contains(field), "{text}: {e}");
        }
        let e = parse("summary = \"s\"\n[agent]\no4 = \"sideways\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("seeded") && e.contains("steer"), "{e}");
    }

    #[test]
    fn defaults_fill_in() {
        let s = parse("summary = \"s\"\n").unwrap();
        assert_eq!(s.name, "x");
        assert_eq!(s.workload.submissions, 1);
        assert_eq!(s.expect, Expect::Valid);
    }
}

#[cfg(test)]
mod bad_input {
    use super::Scenario;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 300,
            // Seeded like everything else here, and nothing written to the tree.
            rng_seed: proptest::test_runner::RngSeed::Fixed(0x5EED),
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        /// Arbitrary text to the scenario loader either loads or names the file and a line,
        /// never panics.
        #[test]
        fn arbitrary_text_loads_or_names_file_and_line(text in "\\PC{0,300}") {
            check(&text)?;
        }

        /// Near-valid TOML: real section and field names with arbitrary values.
        #[test]
        fn arbitrary_values_in_real_fields_load_or_name_file_and_line(
            table in prop_oneof![Just("workload"), Just("agent"), Just("timing"), Just("topology"), Just("client"), Just("disk"), Just("swarm")],
            field in prop_oneof![Just("submissions"), Just("gap_ms_max"), Just("designs"), Just("nodes"), Just("transport"), Just("kind"), Just("faults"), Just("block_size"), Just("latency_ms_min"), Just("mix"), Just("repeat_rate")],
            value in prop_oneof![Just("0".to_string()), Just("-1".to_string()), Just("1e400".to_string()), Just("\"x\"".to_string()), Just("[]".to_string()), Just("{}".to_string()), Just("18446744073709551615".to_string()), Just("true".to_string()), any::<i64>().prop_map(|n| n.to_string())],
        ) {
            let text = format!("summary = \"s\"\n[{table}]\n{field} = {value}\n");
            check(&text)?;
        }
    }

    fn check(text: &str) -> Result<(), TestCaseError> {
        match Scenario::parse(std::path::Path::new("fuzz.toml"), text) {
            Ok(_) => Ok(()),
            Err(e) => {
                let m = e.to_string();
                prop_assert!(m.starts_with("fuzz.toml:"), "{}", m);
                Ok(())
            }
        }
    }
}
