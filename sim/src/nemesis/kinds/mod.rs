//! The fault kinds, one file each. A kind's file holds its [`Row`]: its name and line for
//! `acp-chaos list`, what it acts on ([`Reach`]), what it does ([`Effect`]: the world's one arm
//! per effect), the settings it takes ([`Takes`]), what may trigger it ([`Fires`]) and at which
//! points, what a black-box probe does for it ([`AtPipe`]), and how the swarm, a proptest space
//! and exploration draw or place it ([`draw`]). Every per-kind answer below reads the row;
//! nothing else in the crate matches on kinds.
//!
//! - [`reach`]: [`Reach`] and [`Topology`], where a kind has something to act on;
//! - [`setting`]: [`Setting`], [`Takes`], [`Given`], [`Durations`];
//! - [`row`]: [`Row`], [`Effect`], [`Level`], [`Fires`], [`DiskDamage`], [`AtPipe`];
//! - [`draw`]: how each generator draws or places a kind;
//! - one file per kind (`lose_frame.rs`, …), listed once in [`FaultKind`] below.
//!
//! Adding a kind: its file, its `mod` line and its entry in the list below, and, if it does
//! something no kind does yet, its [`Effect`] and that effect's arm in the world
//! (`docs/internals/extending.md`).

pub mod draw;
pub mod reach;
pub mod row;
pub mod setting;

pub use draw::{
    AtFrames, ByDefault, Drawn, DrawnOn, Explored, Knob, OnCluster, Placed, Shapes, Spaced,
    SpacedOn,
};
pub use reach::{Reach, Topology};
pub use row::{AtPipe, DiskDamage, Effect, Fires, Level, Row};
pub use setting::{Durations, Given, Setting, Takes};

// One module per kind (declared here, not by the list, so rustfmt reaches each file).
mod crash_agent;
mod crash_proxy;
mod crash_store;
mod drop_updates;
mod flip_bit;
mod half_open;
mod hold;
mod lose_exchange;
mod lose_frame;
mod lose_synced_record;
mod partition;
mod partition_oneway;
mod partition_store;
mod reorder_frame;
mod restart_client;
mod stall_frame;
mod stall_point;
mod transient_error;
mod zero_sector;

/// The kinds, each a variant of [`FaultKind`] (its doc), the file holding its row, in
/// [`FaultKind::ALL`]'s order (the swarm's, and `acp-chaos list`'s).
macro_rules! kinds {
    ($($(#[$doc:meta])* $kind:ident => $file:ident,)*) => {
        /// The kinds of fault (each one file in `nemesis/kinds/`).
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
        )]
        #[serde(rename_all = "kebab-case")]
        pub enum FaultKind {
            $($(#[$doc])* $kind,)*
        }

        impl FaultKind {
            /// Every kind, for `acp-chaos list` and the swarm.
            pub const ALL: [FaultKind; [$(FaultKind::$kind),*].len()] = [$(FaultKind::$kind),*];

            /// Its row: every answer about it.
            pub const fn row(self) -> &'static Row {
                match self {
                    $(FaultKind::$kind => &$file::ROW,)*
                }
            }
        }
    };
}

kinds! {
    /// The connection breaks at a frame: it and everything after it are lost.
    LoseFrame => lose_frame,
    /// The connection stalls before a frame for `stall_ms`, then flows again.
    StallFrame => stall_frame,
    /// Frames on different connections swap: the connection waits before this frame until a
    /// frame on another connection has been written (at most `stall_ms`, default 40), so that
    /// frame overtakes it. Each connection stays FIFO.
    ReorderFrame => reorder_frame,
    /// Two-way partition client↔agent, healed after `heal_after_ms`.
    Partition => partition,
    /// One-way partition (`direction`), healed after `heal_after_ms`: one end keeps hearing
    /// the other's heartbeats while its own frames are lost.
    PartitionOneway => partition_oneway,
    /// Hold every frame between the Client and its next hop, release after `heal_after_ms`
    /// (delivered late, in order; never drawn with a one-way partition on the same link:
    /// turmoil 0.7.2 does not support both).
    Hold => hold,
    /// Crash the Agent (unsynced writes lost), restart after `restart_after_ms`.
    CrashAgent => crash_agent,
    /// Crash and restart the Client.
    RestartClient => restart_client,
    /// The Agent rejects one `session/prompt` attempt with a transient `-32603`.
    TransientError => transient_error,
    /// Crash the proxy (both its legs close), restart after `restart_after_ms`.
    CrashProxy => crash_proxy,
    /// Cluster: crash the store host, restart after `restart_after_ms` (its synced records
    /// survive).
    CrashStore => crash_store,
    /// Cluster: partition the store from the node serving the Client, healed after
    /// `heal_after_ms`; at `after-insert-before-sync`, from the node that reached it (it has
    /// decided to insert and its write has not reached the store).
    PartitionStore => partition_store,
    /// Remote transport (cluster): one exchange is lost while the logical connection lives.
    /// A request: it fails before it is accepted and the Client learns so (X5: it may resend
    /// without reconnecting). A response: dropped, the connection goes on. Ignored on
    /// stream transports (a stream never loses one frame and goes on).
    LoseExchange => lose_exchange,
    /// Remote transport (cluster): the update stream of the connection whose frame triggers it
    /// dies silently: `session/update` notifications and Agent requests on it are lost from
    /// then on, while requests and responses still flow (until the Client reconnects).
    DropUpdates => drop_updates,
    /// Crash the Agent as `crash-agent` does, and while it is down flip one bit in a record in
    /// the middle of its stored log (at least one whole record after it; nothing when it holds
    /// fewer than 2), then restart it after `restart_after_ms`: a damaged disk. A correct
    /// recovery refuses to start (`store-corrupt`) rather than cut the records after the
    /// damage. Not drawn by the swarm unless a scenario's `[swarm] faults` lists it; no
    /// effect on a cluster (its nodes keep no log).
    FlipBit => flip_bit,
    /// Crash the Agent as `crash-agent` does, and while it is down zero one 512-byte sector
    /// of its stored log inside the part its watermark says is synced (the sector holding its
    /// middle byte), then restart it: a bad sector. A correct recovery refuses to start
    /// (`store-corrupt`); one that trusts the log alone reads zeros as a torn tail or as
    /// empty records and loses acknowledged ones. Opt-in and cluster-less as `flip-bit`.
    ZeroSector => zero_sector,
    /// Crash the Agent as `crash-agent` does, and while it is down cut its stored log before
    /// its last synced record (a disk that lost an acknowledged write), then restart it. The
    /// log alone reads whole; a correct recovery sees it is shorter than its synced watermark
    /// and refuses to start (`store-corrupt`). Opt-in and cluster-less as `flip-bit`.
    LoseSyncedRecord => lose_synced_record,
    /// The host passing a protocol point stops there for `stall_ms`, then goes on: what it was
    /// about to send goes later (order exploration reverses a cluster node's insertion against
    /// another node's store op with it). Placed by exploration only on request.
    StallPoint => stall_point,
    /// The connection breaks at a frame for its connecting end only (the Client's): that end
    /// sees it close; its close never reaches the Agent, which hears nothing more until its
    /// heartbeat gives up (a half-open connection). Placed by exploration only on request,
    /// and by lineage where the Agent drops a held prompt with its connection (O1 `drop`).
    HalfOpen => half_open,
}

/// The protocol points where the Agent (any node) may be crashed: every Agent point.
const AGENT_POINTS: &[acp_chaos_models::Point] = &acp_chaos_models::Point::AGENT;

impl FaultKind {
    /// The kind named `name` as scenario files write it (`lose-frame`); `None` for no kind.
    pub fn named(name: &str) -> Option<FaultKind> {
        FaultKind::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// Name as written in scenario files, and the `f` of the `nemesis` op a fault of this kind
    /// logs when it fires ([`super::logged`]).
    pub const fn as_str(self) -> &'static str {
        self.row().name
    }

    /// One line for `acp-chaos list`.
    pub fn summary(self) -> &'static str {
        self.row().summary
    }

    /// What this kind acts on ([`Reach`]).
    pub fn reach(self) -> Reach {
        self.row().reach
    }

    /// What it does when it fires ([`Effect`]).
    pub fn effect(self) -> Effect {
        self.row().effect
    }

    /// What carries it out ([`Level`]).
    pub fn level(self) -> Level {
        self.effect().level()
    }

    /// The one host a fault of this kind acts on (`agent`, `store`, `proxy`, `client`), for a
    /// diagram's lifeline; `None` for a kind that acts on a link (the network's kinds) or
    /// whose crash only begins it (the disk's, whose crash op names the host).
    pub fn host(self) -> Option<&'static str> {
        self.effect().host()
    }

    /// What a black-box probe does for this kind at a real process's pipe ([`AtPipe`]); `None`
    /// for a kind only the simulator carries out.
    pub fn at_pipe(self) -> Option<AtPipe> {
        self.row().at_pipe
    }

    /// The kinds that crash the Agent and damage its stored log while it is down (`flip-bit`,
    /// `zero-sector`, `lose-synced-record`): opt-in, and without effect on a cluster.
    pub fn damages_disk(self) -> bool {
        self.reach() == Reach::Log
    }

    /// The damage a disk kind does to the Agent's log before it recovers; `None` for every
    /// kind that leaves the disk alone.
    pub fn disk_damage(self) -> Option<DiskDamage> {
        let Effect::Crash { damage, .. } = self.effect() else {
            return None;
        };
        damage
    }

    /// `None` when a fault of this kind has something to act on in `t`; else what it needs,
    /// as "KIND needs …" (a scripted fault there is refused: scenario validation and schedule
    /// files alike; `replay` and `shrink` refuse an `--agent` whose plan would be refused).
    pub fn refused_in(self, t: Topology) -> Option<String> {
        let r = self.reach();
        if t.has(r) {
            return None;
        }
        Some(format!(
            "{} {}",
            self.as_str(),
            r.needs().unwrap_or_default()
        ))
    }

    /// The settings it takes ([`Takes`]): each required or optional, a duration with its
    /// default and its swarm range; a `[[fault]]` entry giving any other is refused.
    pub fn settings(self) -> &'static [Takes] {
        self.row().settings
    }

    /// How it takes `s` ([`Takes`]), if it does.
    pub fn taken(self, s: Setting) -> Option<&'static Takes> {
        self.settings().iter().find(|t| t.setting == s)
    }

    /// Whether it takes `s`, and how.
    pub fn takes(self, s: Setting) -> Option<Given> {
        self.taken(s).map(|t| t.given)
    }

    /// What may trigger it ([`Fires`]).
    pub fn fires(self) -> Fires {
        self.row().fires
    }

    /// The protocol points it may fire at (empty: none).
    pub fn points(self) -> &'static [acp_chaos_models::Point] {
        self.row().points
    }

    /// The value of a duration setting it takes when the entry does not give it, and the
    /// one exploration places it with ([`Takes::ms`]); `None` for a setting it does not take
    /// or that is no duration.
    pub fn default_ms(self, s: Setting) -> Option<u64> {
        self.taken(s)?.ms.as_ref().map(|d| d.default)
    }

    /// The range the swarm draws a duration setting from ([`Takes::ms`]); `None` for a
    /// setting it does not take or that is no duration.
    pub fn swarm_ms(self, s: Setting) -> Option<std::ops::RangeInclusive<u64>> {
        self.taken(s)?.ms.as_ref().map(|d| d.swarm.clone())
    }

    /// The kinds exploration places by default, in rank order ([`ByDefault::Rank`]), before
    /// any topology leaves some out.
    pub fn explored_by_default() -> Vec<FaultKind> {
        ranked(|k| match k.row().explore.by_default {
            ByDefault::Rank(r) => Some(r),
            ByDefault::OnRequest | ByDefault::LeftOut(_) | ByDefault::Never(_) => None,
        })
    }

    /// The kinds a proptest `Space` draws, in rank order ([`Spaced::rank`]).
    pub fn spaced() -> Vec<FaultKind> {
        ranked(|k| k.row().space.rank)
    }
}

/// The kinds with a rank, in rank order.
fn ranked(rank: impl Fn(FaultKind) -> Option<u8>) -> Vec<FaultKind> {
    let mut out: Vec<(u8, FaultKind)> = FaultKind::ALL
        .into_iter()
        .filter_map(|k| Some((rank(k)?, k)))
        .collect();
    out.sort();
    out.into_iter().map(|(_, k)| k).collect()
}

impl DiskDamage {
    /// Every damage, in [`FaultKind::ALL`]'s order.
    pub const ALL: [DiskDamage; 3] = [
        DiskDamage::FlipBit,
        DiskDamage::ZeroSector,
        DiskDamage::LoseSyncedRecord,
    ];

    /// The fault kind that does it.
    pub fn kind(self) -> FaultKind {
        FaultKind::ALL
            .into_iter()
            .find(|k| k.disk_damage() == Some(self))
            .expect("every damage is some kind's")
    }
}
