//! What kinds of fault there are ([`FaultKind`]): each kind's name and one line for `acp-chaos
//! list`. Everything else about a kind is answered in [`super::kinds`].

use serde::{Deserialize, Serialize};

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
