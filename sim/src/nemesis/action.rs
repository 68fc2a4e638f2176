//! Process-level faults: what the step loop does between steps (crash and restart a host,
//! partition, hold) for a fault that fired.

use super::kinds::{Effect, Setting};
use super::spec::{Direction, FaultSpec};

/// A process-level fault the step loop carries out between steps.
#[derive(Debug, Clone, PartialEq)]
pub enum NemesisAction {
    /// Crash a host (`agent`, `client` or `proxy`) and restart it later.
    Crash {
        /// The host.
        host: &'static str,
        /// Restart delay, ms.
        restart_after_ms: u64,
    },
    /// Partition the Client from its next hop, heal later.
    Partition {
        /// Heal delay, ms.
        heal_after_ms: u64,
    },
    /// Cut one direction between the Client and its next hop, heal later.
    PartitionOneway {
        /// Frames from the Client are lost (else: frames to it).
        from_client: bool,
        /// Heal delay, ms.
        heal_after_ms: u64,
    },
    /// Hold every frame between the Client and its next hop, release later.
    Hold {
        /// Release delay, ms.
        release_after_ms: u64,
    },
    /// Cluster: partition the store from a node, heal later.
    PartitionStore {
        /// Heal delay, ms.
        heal_after_ms: u64,
        /// The node that reached the fault's protocol point (`after-insert-before-sync`);
        /// `None`: the node serving the Client.
        node: Option<&'static str>,
    },
    /// `half-open` at an event other than a frame: every connection the Client opened breaks
    /// for the Client only.
    HalfOpen,
    /// The host that passed a protocol point stops there (`stall-point`).
    Pause {
        /// The host (`agent`: at a point, the one that passed it).
        host: &'static str,
        /// How long, ms.
        stall_ms: u64,
    },
}

impl NemesisAction {
    /// The process-level action of a fault spec, if it has one.
    pub fn of(f: &FaultSpec) -> Option<NemesisAction> {
        let restart_after_ms = f.ms(Setting::RestartAfterMs);
        let heal_after_ms = f.ms(Setting::HealAfterMs);
        Some(match f.kind.effect() {
            // flip-bit, zero-sector, lose-synced-record: the step loop also marks the Agent's
            // log for damage before it restarts.
            Effect::Crash { host, .. } => NemesisAction::Crash {
                host,
                restart_after_ms,
            },
            Effect::Partition => NemesisAction::Partition { heal_after_ms },
            Effect::PartitionOneway => NemesisAction::PartitionOneway {
                from_client: f.direction != Some(Direction::AgentToClient),
                heal_after_ms,
            },
            Effect::Hold => NemesisAction::Hold {
                release_after_ms: heal_after_ms,
            },
            Effect::PartitionStore => NemesisAction::PartitionStore {
                heal_after_ms,
                node: None,
            },
            Effect::Pause => NemesisAction::Pause {
                host: "agent",
                stall_ms: f.ms(Setting::StallMs),
            },
            // At a frame its writer carries it out (`FrameDecision`), at another event the
            // step loop.
            Effect::HalfOpen => NemesisAction::HalfOpen,
            // Frame faults: the connection's writer carries them out (`FrameDecision`).
            Effect::Break
            | Effect::LoseExchange
            | Effect::KillUpdates
            | Effect::Stall
            | Effect::Reorder
            | Effect::RejectPrompt => return None,
        })
    }
}
