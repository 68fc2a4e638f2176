//! One fault kind, whole ([`Row`]): its name and line for `acp-chaos list`, what it acts on,
//! what it does ([`Effect`]), the settings it takes, what may trigger it ([`Fires`]) and at
//! which points, what a black-box probe does for it ([`AtPipe`]), and how each generator draws
//! or places it ([`super::draw`]). Each kind's row is its own file in this folder.

use acp_chaos_models::Point;

use super::draw::{Drawn, Explored, Spaced};
use super::reach::Reach;
use super::setting::Takes;

/// One fault kind, whole. Every per-kind answer ([`super::FaultKind`]'s methods) reads it.
#[derive(Debug)]
pub struct Row {
    /// Its name as scenario files write it (`lose-frame`), and the `f` of the `nemesis` op it
    /// logs when it fires.
    pub name: &'static str,
    /// One line for `acp-chaos list`.
    pub summary: &'static str,
    /// What it acts on, and so which topologies it needs.
    pub reach: Reach,
    /// What it does when it fires: the one thing the world carries out for it.
    pub effect: Effect,
    /// The settings it takes, each required or optional, a duration with its default and
    /// swarm range; a `[[fault]]` entry giving any other is refused.
    pub settings: &'static [Takes],
    /// What may trigger it.
    pub fires: Fires,
    /// The protocol points it may fire at (empty: none).
    pub points: &'static [Point],
    /// What a black-box probe does for it at a real process's pipe; `None`: only the
    /// simulator carries it out (a probe plan with it is refused).
    pub at_pipe: Option<AtPipe>,
    /// How the swarm draws it.
    pub swarm: Drawn,
    /// How a proptest [`crate::explore::strategy::Space`] draws it.
    pub space: Spaced,
    /// How exploration places it at a place of a fault-free run.
    pub explore: Explored,
}

/// What a fault does when it fires: the world's one arm per effect. A new kind that does what
/// an existing one does (another crash, another partition) names its effect and needs no new
/// arm anywhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// The connection breaks at the frame: it and everything after it are lost (a visible
    /// close, or silent with `silent`). Carried out by the connection's writer.
    Break,
    /// Remote transport: one exchange is lost while the logical connection lives (a request
    /// fails before it is accepted; a response is dropped).
    LoseExchange,
    /// Remote transport: the update stream of the frame's connection dies silently.
    KillUpdates,
    /// The connection stalls before the frame for `stall_ms`.
    Stall,
    /// The frame waits until a frame on another connection overtakes it (at most `stall_ms`).
    Reorder,
    /// The Agent rejects the `session/prompt` attempt the request becomes with a transient
    /// `-32603`.
    RejectPrompt,
    /// Crash a process and restart it after `restart_after_ms`; with a `damage`, the Agent's
    /// stored log is damaged while it is down.
    Crash {
        /// The host crashed: `agent` (at a protocol point: the node that passed it), `client`,
        /// `proxy`, `store`.
        host: &'static str,
        /// What is done to the Agent's stored log while it is down.
        damage: Option<DiskDamage>,
    },
    /// Two-way partition Client↔Agent, healed after `heal_after_ms`.
    Partition,
    /// One-way partition (`direction`), healed after `heal_after_ms`.
    PartitionOneway,
    /// Hold every frame between the Client and its next hop, release after `heal_after_ms`.
    Hold,
    /// Cluster: cut the store from a node, healed after `heal_after_ms`.
    PartitionStore,
    /// The host passing a protocol point stops there for `stall_ms`.
    Pause,
    /// The connection breaks at the frame for its connecting end only (the Client's, or the
    /// proxy's toward the Agent): that end sees it close; its close never reaches the other
    /// end, which hears nothing more until its heartbeat gives up (a half-open connection).
    HalfOpen,
}

/// What carries a fault of a kind out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// The writer of a connection, at one frame ([`crate::nemesis::FrameDecision`]);
    /// `transient-error` too, at the answer to one request.
    Frame,
    /// The step loop, between steps: a crash, restart, partition, hold or half-open break
    /// ([`crate::nemesis::NemesisAction`]; a half-open break fired at a frame is its
    /// writer's, on that frame's connection).
    Process,
    /// The step loop's crash of the Agent, and the damage done to its log while it is down
    /// ([`DiskDamage`]).
    Disk,
}

impl Effect {
    /// Crash the Agent (at a protocol point: the node that passed it), no damage to its log.
    pub const CRASH_AGENT: Effect = Effect::Crash {
        host: "agent",
        damage: None,
    };
    /// Crash and restart the Client.
    pub const RESTART_CLIENT: Effect = Effect::Crash {
        host: "client",
        damage: None,
    };
    /// Crash the proxy.
    pub const CRASH_PROXY: Effect = Effect::Crash {
        host: "proxy",
        damage: None,
    };
    /// Crash the cluster's store host.
    pub const CRASH_STORE: Effect = Effect::Crash {
        host: "store",
        damage: None,
    };

    /// What carries it out.
    pub fn level(self) -> Level {
        match self {
            Effect::Break
            | Effect::LoseExchange
            | Effect::KillUpdates
            | Effect::Stall
            | Effect::Reorder
            | Effect::RejectPrompt => Level::Frame,
            // Fires at any event, so the step loop's; at a frame the writer breaks that
            // frame's connection itself.
            Effect::HalfOpen => Level::Process,
            Effect::Crash {
                damage: Some(_), ..
            } => Level::Disk,
            Effect::Crash { damage: None, .. }
            | Effect::Partition
            | Effect::PartitionOneway
            | Effect::Hold
            | Effect::PartitionStore
            | Effect::Pause => Level::Process,
        }
    }

    /// The one host it acts on (`agent`, `store`, `proxy`, `client`), for a diagram's
    /// lifeline; `None` for an effect on a link (the network's) or a crash that only begins a
    /// disk's damage (its crash op names the host).
    pub fn host(self) -> Option<&'static str> {
        match self {
            Effect::Crash { host, damage: None } => Some(host),
            Effect::RejectPrompt => Some("agent"),
            Effect::PartitionStore => Some("store"),
            Effect::Crash {
                damage: Some(_), ..
            }
            | Effect::Break
            | Effect::HalfOpen
            | Effect::LoseExchange
            | Effect::KillUpdates
            | Effect::Stall
            | Effect::Reorder
            | Effect::Partition
            | Effect::PartitionOneway
            | Effect::Hold
            | Effect::Pause => None,
        }
    }
}

/// What a disk kind does to the Agent's stored log while the Agent is down (the crash it begins
/// with is a [`crate::nemesis::NemesisAction::Crash`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiskDamage {
    /// One bit of a synced record flipped (`flip-bit`).
    FlipBit,
    /// A sector of the log zeroed (`zero-sector`).
    ZeroSector,
    /// The newest synced record gone (`lose-synced-record`).
    LoseSyncedRecord,
}

/// What a black-box probe does at a real process's stdio pipe for a fault kind (the probe's
/// real-time driver, `acp_chaos_cli::probe::realtime`). The other kinds act on what only the
/// simulator reaches (the network between hosts, the store, a proxy, the disk): a plan with one
/// is refused there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtPipe {
    /// A frame on the pipe is lost (`lose-frame`).
    LoseFrame,
    /// A frame on the pipe is held back (`stall-frame`).
    StallFrame,
    /// The Agent process is killed and started again (`crash-agent`).
    CrashAgent,
    /// The model Client restarts (`restart-client`).
    RestartClient,
}

/// What may trigger a fault of a kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fires {
    /// Only a frame (`frame` and `method`): it acts on that frame.
    AtFrame,
    /// Only the Client's `session/prompt` request: the Agent rejects what it becomes.
    AtPromptRequest,
    /// Any event: a frame, a submission, a time, or one of the kind's protocol points.
    AtEvent,
    /// Only one of the kind's protocol points: it acts on the host that passes it.
    AtPoint,
}
