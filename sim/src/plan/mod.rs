//! A run's plan: every setting derived from (scenario, seed, mutant), printed first and written
//! to the history header. Each choice draws from its own RNG stream (`stream(seed, label)`), so
//! pinning or disabling one choice does not shift the others.
//!
//! - this file: [`Plan`] (with its [`Submission`]s and [`UserEvent`]s), [`stream`] (one RNG
//!   stream per label), [`Plan::describe`];
//! - `check.rs`: [`Plan::check`], a plan read from a file against [`crate::bounds`] and itself;
//! - `file.rs`: [`file::read`], a schedule file (a plan, unknown fields refused, and an optional
//!   `[expect]` table for the regression corpus);
//! - `derive.rs`: [`Plan::derive`], a scenario and a seed to a plan;
//! - `swarm.rs`: what a `[swarm]` scenario draws per seed ([`DRAWN`] settings, the fault schedule).

mod check;
mod derive;
pub mod expect;
pub mod file;
mod swarm;

pub use swarm::DRAWN;

use acp_chaos_models::{AgentConfig, ClientConfig};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::nemesis::{fault_line, FaultSpec};

/// Transport timing shared by every run (simulated ms). Kept short: wall time grows with
/// simulated time × hosts.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
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
#[serde(deny_unknown_fields)]
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

/// What the user does, at a simulated time.
#[derive(Debug, Clone, PartialEq)]
pub enum UserEvent {
    /// Submit an input to a session slot.
    Submit {
        /// Submission number.
        n: u64,
        /// Session slot.
        slot: usize,
        /// Prompt text.
        text: String,
    },
    /// Cancel that submission (the Client sends `$/cancel_request`).
    Cancel {
        /// Submission number.
        n: u64,
    },
    /// Press stop on a session (the Client sends `session/cancel`).
    Stop {
        /// Session slot.
        slot: usize,
    },
    /// Close a session (the Client sends `session/close`).
    Close {
        /// Session slot.
        slot: usize,
    },
    /// A raw `session/prompt` probe from the scenario's `[[raw]]` (key validation).
    Raw {
        /// Probe number, from 1.
        n: u64,
        /// The line, with `$ID` and `$SESSION` for the Client to fill in.
        line: String,
    },
    /// Fork a session into a new slot (the Client sends `session/fork`).
    Fork {
        /// Session slot forked.
        slot: usize,
        /// The new slot.
        into: usize,
    },
}

/// Everything one run needs.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// Scenario name.
    pub scenario: String,
    /// The seed (a schedule file may write one above 2^63 - 1 as a string: TOML integers are
    /// signed 64-bit; see [`file::to_toml`]).
    #[serde(deserialize_with = "file::seed_of")]
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
    pub fn user_events(&self) -> Vec<(u64, UserEvent)> {
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

    /// The parts of this run a fault could act on ([`crate::nemesis::kinds`]).
    pub fn topology(&self) -> crate::nemesis::Topology {
        crate::nemesis::Topology {
            proxy: self.proxy,
            cluster: self.cluster(),
            stdio: self.stdio,
        }
    }

    /// Read a schedule file: a plan as TOML, written by `acp-chaos shrink` (maybe edited since),
    /// with an optional `[expect]` table (a regression file is a schedule file too), checked
    /// as the regression corpus checks it ([`expect::Expect::check`]) and not used further.
    ///
    /// Errors: the file cannot be read, is not TOML of a plan or has a field the format does
    /// not know (`FILE:LINE: message` naming the field), a field is out of bounds or
    /// inconsistent (`FILE: field `F`: reason`, see [`Plan::check`]), or `[expect]` is
    /// malformed (naming `expect.F`).
    pub fn load(path: &std::path::Path) -> anyhow::Result<Plan> {
        let (plan, expect) = file::read::<expect::Expect>(path)?;
        if let Some(e) = expect {
            e.check(path)?;
        }
        Ok(plan)
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

impl Plan {
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
            .to_lowercase()
                + &if self.agent.retention_ms > 0 {
                    format!(" retention_ms={}", self.agent.retention_ms)
                } else {
                    String::new()
                }
                + &if self.agent.fail_rate > 0.0 {
                    format!(" fail_rate={}", self.agent.fail_rate)
                } else {
                    String::new()
                },
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
            ) + &if self.client.permission_ms > 0 {
                format!(" permission_ms={}", self.client.permission_ms)
            } else {
                String::new()
            },
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
