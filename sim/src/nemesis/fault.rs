//! What a fault is: its kind ([`FaultKind`]), when it fires ([`Trigger`]) and its settings
//! ([`FaultSpec`], one `[[fault]]` entry of a scenario, or one fault the swarm drew), and how
//! one reads as a line ([`fault_line`]).

use acp_chaos_models::{methods, Point};
use serde::{Deserialize, Serialize};

use super::kinds::{Fires, Given, Setting};
use super::trigger::{Sender, Side, Trigger};

/// The kinds of fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultKind {
    /// The connection breaks at a frame: it and everything after it are lost.
    LoseFrame,
    /// The connection stalls before a frame for `stall_ms`, then flows again.
    StallFrame,
    /// Frames on different connections swap: the connection waits before this frame until a
    /// frame on another connection has been written (at most `stall_ms`, default 40), so that
    /// frame overtakes it. Each connection stays FIFO.
    ReorderFrame,
    /// Two-way partition client↔agent, healed after `heal_after_ms`.
    Partition,
    /// One-way partition (`direction`), healed after `heal_after_ms`: one end keeps hearing
    /// the other's heartbeats while its own frames are lost.
    PartitionOneway,
    /// Hold every frame between the Client and its next hop, release after `heal_after_ms`
    /// (delivered late, in order; never drawn with a one-way partition on the same link:
    /// turmoil 0.7.2 does not support both).
    Hold,
    /// Crash the Agent (unsynced writes lost), restart after `restart_after_ms`.
    CrashAgent,
    /// Crash and restart the Client.
    RestartClient,
    /// The Agent rejects one `session/prompt` attempt with a transient `-32603`.
    TransientError,
    /// Crash the proxy (both its legs close), restart after `restart_after_ms`.
    CrashProxy,
    /// Cluster: crash the store host, restart after `restart_after_ms` (its synced records
    /// survive).
    CrashStore,
    /// Remote transport (cluster): one exchange is lost while the logical connection lives.
    /// A request: it fails before it is accepted and the Client learns so (X5: it may resend
    /// without reconnecting). A response: dropped, the connection goes on. Ignored on
    /// stream transports (a stream never loses one frame and goes on).
    LoseExchange,
    /// Cluster: partition the store from the node serving the Client, healed after
    /// `heal_after_ms`; at `after-insert-before-sync`, from the node that reached it (it has
    /// decided to insert and its write has not reached the store).
    PartitionStore,
    /// Remote transport (cluster): the update stream of the connection whose frame triggers it
    /// dies silently: `session/update` notifications and Agent requests on it are lost from
    /// then on, while requests and responses still flow (until the Client reconnects).
    DropUpdates,
    /// Crash the Agent as `crash-agent` does, and while it is down flip one bit in a record in
    /// the middle of its stored log (at least one whole record after it; nothing when it holds
    /// fewer than 2), then restart it after `restart_after_ms`: a damaged disk. A correct
    /// recovery refuses to start (`store-corrupt`) rather than cut the records after the
    /// damage. Not drawn by the swarm unless a scenario's `[swarm] faults` lists it; no
    /// effect on a cluster (its nodes keep no log).
    FlipBit,
    /// Crash the Agent as `crash-agent` does, and while it is down zero one 512-byte sector
    /// of its stored log inside the part its watermark says is synced (the sector holding its
    /// middle byte), then restart it: a bad sector. A correct recovery refuses to start
    /// (`store-corrupt`); one that trusts the log alone reads zeros as a torn tail or as
    /// empty records and loses acknowledged ones. Opt-in and cluster-less as `flip-bit`.
    ZeroSector,
    /// Crash the Agent as `crash-agent` does, and while it is down cut its stored log before
    /// its last synced record (a disk that lost an acknowledged write), then restart it. The
    /// log alone reads whole; a correct recovery sees it is shorter than its synced watermark
    /// and refuses to start (`store-corrupt`). Opt-in and cluster-less as `flip-bit`.
    LoseSyncedRecord,
}

impl FaultKind {
    /// Every kind, for `acp-chaos list` and the swarm.
    pub const ALL: [FaultKind; 17] = [
        FaultKind::LoseFrame,
        FaultKind::StallFrame,
        FaultKind::ReorderFrame,
        FaultKind::Partition,
        FaultKind::PartitionOneway,
        FaultKind::Hold,
        FaultKind::CrashAgent,
        FaultKind::RestartClient,
        FaultKind::TransientError,
        FaultKind::CrashProxy,
        FaultKind::CrashStore,
        FaultKind::PartitionStore,
        FaultKind::LoseExchange,
        FaultKind::DropUpdates,
        FaultKind::FlipBit,
        FaultKind::ZeroSector,
        FaultKind::LoseSyncedRecord,
    ];

    /// The kind named `name` as scenario files write it (`lose-frame`); `None` for no kind.
    pub fn named(name: &str) -> Option<FaultKind> {
        FaultKind::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// Name as written in scenario files, and the `f` of the `nemesis` op a fault of this kind
    /// logs when it fires ([`super::logged`]).
    pub const fn as_str(self) -> &'static str {
        match self {
            FaultKind::LoseFrame => "lose-frame",
            FaultKind::StallFrame => "stall-frame",
            FaultKind::ReorderFrame => "reorder-frame",
            FaultKind::Partition => "partition",
            FaultKind::PartitionOneway => "partition-oneway",
            FaultKind::Hold => "hold",
            FaultKind::CrashAgent => "crash-agent",
            FaultKind::RestartClient => "restart-client",
            FaultKind::TransientError => "transient-error",
            FaultKind::CrashProxy => "crash-proxy",
            FaultKind::CrashStore => "crash-store",
            FaultKind::LoseExchange => "lose-exchange",
            FaultKind::DropUpdates => "drop-updates",
            FaultKind::PartitionStore => "partition-store",
            FaultKind::FlipBit => "flip-bit",
            FaultKind::ZeroSector => "zero-sector",
            FaultKind::LoseSyncedRecord => "lose-synced-record",
        }
    }

    /// One line for `acp-chaos list`.
    pub fn summary(self) -> &'static str {
        match self {
            FaultKind::LoseFrame => {
                "connection breaks at a frame (visible close, or silent: heartbeat notices)"
            }
            FaultKind::StallFrame => {
                "connection stalls before a frame for stall_ms, then flows again"
            }
            FaultKind::ReorderFrame => "a frame waits until a frame on another connection overtakes it (at most stall_ms, default 40); each connection stays FIFO",
            FaultKind::Partition => "two-way partition client<->agent, healed after heal_after_ms",
            FaultKind::PartitionOneway => "one-way partition (direction = client-to-agent | agent-to-client), healed after heal_after_ms",
            FaultKind::Hold => "hold every frame client<->agent, release after heal_after_ms (late, in order)",
            FaultKind::CrashAgent => {
                "crash the Agent (unsynced writes lost), at a time, frame or protocol point"
            }
            FaultKind::RestartClient => "crash and restart the Client process",
            FaultKind::TransientError => {
                "Agent rejects one session/prompt attempt with -32603 before inserting"
            }
            FaultKind::CrashProxy => "crash the proxy (both legs close), restart it later",
            FaultKind::CrashStore => "cluster: crash the store host (synced records survive), restart it later",
            FaultKind::LoseExchange => "remote transport: one request fails before acceptance (X5: resent without reconnecting) or one response is dropped; the connection lives",
            FaultKind::DropUpdates => "remote transport: the update stream dies silently (updates and Agent requests lost) while requests and responses flow",
            FaultKind::PartitionStore => {
                "cluster: partition the store from the node serving the Client (at after-insert-before-sync: the node that reached it), healed after heal_after_ms"
            }
            FaultKind::FlipBit => "crash the Agent, flip one bit in a record in the middle of its stored log, restart it (a correct Agent refuses to start); only where a scenario lists it",
            FaultKind::ZeroSector => "crash the Agent, zero a 512-byte sector inside the synced part of its stored log, restart it (a correct Agent refuses to start); only where a scenario lists it",
            FaultKind::LoseSyncedRecord => "crash the Agent, cut its stored log before its last synced record, restart it (a correct Agent refuses to start); only where a scenario lists it",
        }
    }
}

/// One `[[fault]]` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultSpec {
    /// The fault kind.
    pub kind: FaultKind,
    /// When it fires.
    pub on: Trigger,
    /// `lose-frame`: nobody sees the close; both heartbeats must notice.
    #[serde(default)]
    pub silent: bool,
    /// `lose-frame`, `restart-client` on a cluster of two nodes or more: the load balancer
    /// moves the Client, so its next connection goes to another node than the one serving it
    /// when the fault fired (without it the run's routing stream picks, and may pick the same
    /// node). No effect on one node or without a cluster. Left out of a plan's text when
    /// false, so older plans read the same.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reroute: bool,
    /// `stall-frame`: how long the connection stalls.
    pub stall_ms: Option<u64>,
    /// `partition`: when it heals.
    pub heal_after_ms: Option<u64>,
    /// `crash-agent`, `restart-client`: when the process starts again.
    pub restart_after_ms: Option<u64>,
    /// `partition-oneway`: which direction is cut.
    #[serde(default)]
    pub direction: Option<Direction>,
}

/// The cut direction of a one-way partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Direction {
    /// Frames from the Client to its next hop are lost; the other way flows.
    ClientToAgent,
    /// Frames from the next hop to the Client are lost; the other way flows.
    AgentToClient,
}

impl FaultSpec {
    /// A fault of `kind` with no trigger and no settings yet (the caller sets what its kind
    /// takes).
    pub fn new(kind: FaultKind) -> FaultSpec {
        FaultSpec {
            kind,
            on: Default::default(),
            silent: false,
            reroute: false,
            stall_ms: None,
            heal_after_ms: None,
            restart_after_ms: None,
            direction: None,
        }
    }

    /// A fault of `kind` with no trigger yet and each duration it takes at its default
    /// ([`FaultKind::default_ms`]): what exploration places.
    pub fn placed(kind: FaultKind) -> FaultSpec {
        let ms = |s| kind.default_ms(s);
        FaultSpec {
            stall_ms: ms(Setting::StallMs),
            heal_after_ms: ms(Setting::HealAfterMs),
            restart_after_ms: ms(Setting::RestartAfterMs),
            ..FaultSpec::new(kind)
        }
    }

    /// The duration setting `s` in force: the one given, or the kind's default; 0 for a
    /// setting the kind does not take.
    pub fn ms(&self, s: Setting) -> u64 {
        let given = match s {
            Setting::StallMs => self.stall_ms,
            Setting::RestartAfterMs => self.restart_after_ms,
            Setting::HealAfterMs => self.heal_after_ms,
            Setting::Silent | Setting::Reroute | Setting::Direction => None,
        };
        given.or(self.kind.default_ms(s)).unwrap_or(0)
    }

    /// What is wrong with this fault entry, as "field`: reason", or `None`.
    ///
    /// One check per field, in the order errors are reported.
    pub fn check(&self) -> Option<String> {
        let t = &self.on;
        let frame = t.frame.is_some() && t.method.is_some();
        let kinds = [
            frame,
            t.point.is_some(),
            t.submission.is_some(),
            t.at_ms.is_some(),
        ];
        if kinds.iter().filter(|x| **x).count() != 1 {
            return Some(
                "on`: give exactly one of {frame + method}, point, submission, at_ms".into(),
            );
        }
        if t.frame.is_some() != t.method.is_some() {
            return Some("on`: `frame` and `method` go together".into());
        }
        if t.nth == 0 {
            return Some("on.nth`: occurrences count from 1".into());
        }
        if t.submission == Some(0) || t.attempt_of == Some(0) {
            return Some("on.submission`: submissions count from 1".into());
        }
        if t.attempt_of.is_some() && (!frame || t.method.as_deref() != Some("session/prompt")) {
            return Some(
                "on.attempt_of`: goes with `frame` and `method = \"session/prompt\"`".into(),
            );
        }
        if let Some(m) = &t.method {
            // A frame trigger names a method its sender sends: the Client's (methods::METHODS)
            // or, with `by = "agent"`, the Agent's (methods::AGENT_METHODS).
            let (info, table) = match t.by {
                Some(Sender::Agent) => (methods::agent_method(m), methods::AGENT_METHODS),
                _ => (methods::get(m), methods::METHODS),
            };
            let Some(info) = info else {
                let known: Vec<&str> = table.iter().map(|x| x.name).collect();
                return Some(format!(
                    "on.method`: unknown method `{m}` (known: {})",
                    known.join(", ")
                ));
            };
            if info.notification && t.frame == Some(Side::Response) {
                return Some(format!(
                    "on.frame`: `{m}` is a notification: it has no response"
                ));
            }
        } else if t.by.is_some() {
            return Some("on.by`: goes with `frame` and `method`".into());
        }
        if let Some(wrong) = self.settings_wrong() {
            return Some(wrong);
        }
        for (field, v) in [
            ("stall_ms", self.stall_ms),
            ("heal_after_ms", self.heal_after_ms),
            ("restart_after_ms", self.restart_after_ms),
            ("on.at_ms", t.at_ms),
        ] {
            if let Some(rule) = v.and_then(|v| crate::bounds::MS.check(v)) {
                return Some(format!("{field}`: {rule}"));
            }
        }
        self.trigger_wrong()
    }

    /// Whether the entry gives setting `s`.
    fn gives(&self, s: Setting) -> bool {
        match s {
            Setting::Silent => self.silent,
            Setting::Reroute => self.reroute,
            Setting::StallMs => self.stall_ms.is_some(),
            Setting::Direction => self.direction.is_some(),
            Setting::RestartAfterMs => self.restart_after_ms.is_some(),
            Setting::HealAfterMs => self.heal_after_ms.is_some(),
        }
    }

    /// A setting given that the kind does not take ([`FaultKind::settings`]), in
    /// [`Setting::ALL`]'s order, or a one-way partition without its direction.
    fn settings_wrong(&self) -> Option<String> {
        for s in Setting::ALL {
            let given = self.gives(s);
            match self.kind.takes(s) {
                None if given => {
                    let takers: Vec<&str> = FaultKind::ALL
                        .into_iter()
                        .filter(|k| k.takes(s).is_some())
                        .map(FaultKind::as_str)
                        .collect();
                    return Some(format!("{}`: only for {}", s.field(), takers.join(", ")));
                }
                Some(Given::Required) if !given && s == Setting::Direction => {
                    return Some(format!(
                        "direction`: required for {} (client-to-agent | agent-to-client)",
                        self.kind.as_str()
                    ));
                }
                _ => {}
            }
        }
        None
    }

    /// What the kind needs of its trigger and settings beyond their shapes: a frame for a
    /// frame fault ([`FaultKind::fires`]), each required setting, `transient-error`'s prompt
    /// request, and a protocol point the kind fires at ([`FaultKind::points`]).
    fn trigger_wrong(&self) -> Option<String> {
        let (t, kind) = (&self.on, self.kind);
        let frame = t.frame.is_some() && t.method.is_some();
        if kind.fires() == Fires::AtFrame && !frame {
            return Some("on`: a frame fault needs `frame` and `method`".into());
        }
        for (s, given) in kind.settings() {
            if *given == Given::Required && !self.gives(*s) {
                return Some(format!("{}`: required for {}", s.field(), kind.as_str()));
            }
        }
        let prompt_request =
            t.frame == Some(Side::Request) && t.method.as_deref() == Some("session/prompt");
        if kind.fires() == Fires::AtPromptRequest && !prompt_request {
            return Some(format!(
                "on`: {} needs frame = \"request\", method = \"session/prompt\"",
                kind.as_str()
            ));
        }
        let p = t.point.filter(|p| !kind.points().contains(p))?;
        let at = |p: Point| -> Vec<&str> {
            FaultKind::ALL
                .into_iter()
                .filter(|k| k.points().contains(&p))
                .map(FaultKind::as_str)
                .collect()
        };
        Some(if kind.points().is_empty() {
            let mut takers: Vec<&str> = FaultKind::ALL
                .into_iter()
                .filter(|k| !k.points().is_empty())
                .map(FaultKind::as_str)
                .collect();
            let last = takers.pop().unwrap_or_default();
            format!(
                "on.point`: only {} and {last} fire at a protocol point",
                takers.join(", ")
            )
        } else if !Point::AGENT.contains(&p) {
            // The store's point: say whose it is.
            format!(
                "on.point`: `{}` is the point of {} only",
                p.as_str(),
                at(p).join(", ")
            )
        } else {
            let points: Vec<String> = kind
                .points()
                .iter()
                .map(|p| format!("`{}`", p.as_str()))
                .collect();
            format!(
                "on.point`: {} fires only at {}",
                kind.as_str(),
                points.join(" or ")
            )
        })
    }
}

/// A fault as one readable line.
pub fn fault_line(f: &FaultSpec) -> String {
    let t = &f.on;
    let on = if let (Some(side), Some(m), Some(s)) = (t.frame, &t.method, t.attempt_of) {
        format!("{side:?} of {m} of submission {s} attempt #{}", t.nth).to_lowercase()
    } else if let (Some(side), Some(m), Some(Sender::Agent)) = (t.frame, &t.method, t.by) {
        let what = match side {
            Side::Request => format!("{m} #{} from the agent", t.nth),
            Side::Response => format!("response to the agent's {m} #{}", t.nth),
        };
        what.to_lowercase()
    } else if let (Some(side), Some(m)) = (t.frame, &t.method) {
        format!("{side:?} of {m} #{}", t.nth).to_lowercase()
    } else if let Some(p) = t.point {
        format!("point {} #{}", p.as_str(), t.nth)
    } else if let Some(s) = t.submission {
        format!("submission {s}")
    } else {
        format!("at {}ms", t.at_ms.unwrap_or(0))
    };
    let mut extra = String::new();
    if f.kind == FaultKind::LoseFrame {
        extra = if f.silent {
            " (silent)".into()
        } else {
            " (visible close)".into()
        };
    }
    if f.reroute {
        extra.push_str(" reroute");
    }
    if let Some(d) = f.direction {
        extra.push_str(match d {
            Direction::ClientToAgent => " direction=client-to-agent",
            Direction::AgentToClient => " direction=agent-to-client",
        });
    }
    for (k, v) in [
        ("stall_ms", f.stall_ms),
        ("heal_after_ms", f.heal_after_ms),
        ("restart_after_ms", f.restart_after_ms),
    ] {
        if let Some(v) = v {
            extra.push_str(&format!(" {k}={v}"));
        }
    }
    format!("{} on {on}{extra}", f.kind.as_str())
}
