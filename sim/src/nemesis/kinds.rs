//! Every per-kind answer, each one exhaustive `match` over the kinds (no `_` arm, so a new
//! kind is named by the compiler in each):
//! - where it has something to act on ([`FaultKind::reach`], [`Reach`], [`Topology`]): read by
//!   the swarm's draw, exploration's default kinds and placement, scenario validation,
//!   schedule-file checks, the certificate's "not placed" reasons and the world's remote
//!   transport (guided exploration's coverage cells read it for the cluster's and the disk's
//!   kinds; a proxy there is drawn per seed, so its cells stay);
//! - what carries it out ([`FaultKind::level`], [`Level`]);
//! - the settings it takes ([`FaultKind::settings`], [`Takes`]): required or optional, and a
//!   duration's default (what exploration places) and swarm range; `FaultSpec::check`
//!   validates an entry from these alone;
//! - what may trigger it and at which protocol points ([`FaultKind::fires`],
//!   [`FaultKind::points`]);
//! - the one host it acts on, for a diagram ([`FaultKind::host`]);
//! - what a disk kind does to the log ([`DiskDamage`]) and what a black-box probe does at a
//!   real process's pipe ([`AtPipe`]).

use super::fault::FaultKind;

/// What a fault kind acts on, and so which topologies it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// The Client, the Agent and the frames between them: every topology.
    Everywhere,
    /// The proxy process between the Client and the Agent (`topology.proxy`).
    Proxy,
    /// The cluster's store host (the cluster design).
    Store,
    /// The cluster's remote transport. Behind a proxy the Client's leg is a stream: the fault is
    /// accepted and drawn there (the swarm has always drawn it on every cluster seed) but does
    /// nothing when it fires, so exploration places it only where it acts
    /// ([`Topology::acts`]).
    Remote,
    /// One Agent process's stored log: every design but the cluster (its nodes keep no log).
    /// The in-memory and adapter designs keep none either; there the fault is only the crash
    /// it begins with.
    Log,
}

/// What a disk kind does to the Agent's stored log while the Agent is down (the crash it begins
/// with is a [`super::NemesisAction::Crash`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiskDamage {
    /// One bit of a synced record flipped (`flip-bit`).
    FlipBit,
    /// A sector of the log zeroed (`zero-sector`).
    ZeroSector,
    /// The newest synced record gone (`lose-synced-record`).
    LoseSyncedRecord,
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
        match self {
            DiskDamage::FlipBit => FaultKind::FlipBit,
            DiskDamage::ZeroSector => FaultKind::ZeroSector,
            DiskDamage::LoseSyncedRecord => FaultKind::LoseSyncedRecord,
        }
    }
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

/// The parts a run has that a fault could act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Topology {
    /// A proxy sits between the Client and the Agent.
    pub proxy: bool,
    /// The Agent is a cluster of nodes with a store host.
    pub cluster: bool,
}

impl Topology {
    /// True when the part a fault of reach `r` acts on exists here: the swarm draws such a
    /// fault, and a scripted one is accepted ([`FaultKind::refused_in`]).
    pub fn has(self, r: Reach) -> bool {
        match r {
            Reach::Everywhere => true,
            Reach::Proxy => self.proxy,
            Reach::Store | Reach::Remote => self.cluster,
            Reach::Log => !self.cluster,
        }
    }

    /// True when a fault of reach `r` changes something when it fires here: what exploration
    /// places, and where the world carries out a remote-transport fault.
    pub fn acts(self, r: Reach) -> bool {
        match r {
            Reach::Remote => self.cluster && !self.proxy,
            r => self.has(r),
        }
    }
}

impl Reach {
    /// What a topology needs for this reach, ending a sentence that starts with the kind's
    /// name ("crash-proxy needs a proxy"); `None` for [`Reach::Everywhere`].
    pub fn needs(self) -> Option<&'static str> {
        match self {
            Reach::Everywhere => None,
            Reach::Proxy => Some("needs a proxy"),
            Reach::Store => Some("needs the cluster design (its store host)"),
            Reach::Remote => Some("needs the cluster design (its remote transport)"),
            Reach::Log => Some("needs a single-process design (the cluster's nodes keep no log)"),
        }
    }

    /// Why a trace without this reach has no place for the kind, for the certificate's "not
    /// placed" list; `None` for [`Reach::Everywhere`].
    pub fn missing(self) -> Option<&'static str> {
        match self {
            Reach::Everywhere => None,
            Reach::Proxy => Some("the trace has no proxy"),
            Reach::Store => Some("the trace is not a cluster"),
            Reach::Remote => Some("the trace has no remote transport"),
            Reach::Log => Some("the trace's cluster nodes keep no log"),
        }
    }
}

impl FaultKind {
    /// What this kind acts on ([`Reach`]).
    pub fn reach(self) -> Reach {
        match self {
            FaultKind::LoseFrame
            | FaultKind::StallFrame
            | FaultKind::ReorderFrame
            | FaultKind::Partition
            | FaultKind::PartitionOneway
            | FaultKind::Hold
            | FaultKind::CrashAgent
            | FaultKind::RestartClient
            | FaultKind::TransientError => Reach::Everywhere,
            FaultKind::CrashProxy => Reach::Proxy,
            FaultKind::CrashStore | FaultKind::PartitionStore => Reach::Store,
            FaultKind::LoseExchange | FaultKind::DropUpdates => Reach::Remote,
            FaultKind::FlipBit | FaultKind::ZeroSector | FaultKind::LoseSyncedRecord => Reach::Log,
        }
    }

    /// The one host a fault of this kind acts on (`agent`, `store`, `proxy`, `client`), for a
    /// diagram's lifeline; `None` for a kind that acts on a link (the network's kinds) or
    /// whose crash only begins it (the disk's, whose crash op names the host).
    pub fn host(self) -> Option<&'static str> {
        Some(match self {
            FaultKind::CrashAgent | FaultKind::TransientError => "agent",
            FaultKind::CrashStore | FaultKind::PartitionStore => "store",
            FaultKind::CrashProxy => "proxy",
            FaultKind::RestartClient => "client",
            FaultKind::FlipBit | FaultKind::ZeroSector | FaultKind::LoseSyncedRecord => {
                return None
            }
            FaultKind::LoseFrame
            | FaultKind::StallFrame
            | FaultKind::ReorderFrame
            | FaultKind::Partition
            | FaultKind::PartitionOneway
            | FaultKind::Hold
            | FaultKind::LoseExchange
            | FaultKind::DropUpdates => return None,
        })
    }

    /// What a black-box probe does for this kind at a real process's pipe ([`AtPipe`]); `None`
    /// for a kind only the simulator carries out.
    pub fn at_pipe(self) -> Option<AtPipe> {
        match self {
            FaultKind::LoseFrame => Some(AtPipe::LoseFrame),
            FaultKind::StallFrame => Some(AtPipe::StallFrame),
            FaultKind::CrashAgent => Some(AtPipe::CrashAgent),
            FaultKind::RestartClient => Some(AtPipe::RestartClient),
            FaultKind::ReorderFrame
            | FaultKind::Partition
            | FaultKind::PartitionOneway
            | FaultKind::Hold
            | FaultKind::TransientError
            | FaultKind::CrashProxy
            | FaultKind::CrashStore
            | FaultKind::LoseExchange
            | FaultKind::PartitionStore
            | FaultKind::DropUpdates
            | FaultKind::FlipBit
            | FaultKind::ZeroSector
            | FaultKind::LoseSyncedRecord => None,
        }
    }

    /// The kinds that crash the Agent and damage its stored log while it is down (`flip-bit`,
    /// `zero-sector`, `lose-synced-record`): opt-in, and without effect on a cluster.
    pub fn damages_disk(self) -> bool {
        self.reach() == Reach::Log
    }

    /// The damage a disk kind does to the Agent's log before it recovers; `None` for every
    /// kind that leaves the disk alone (the kinds of [`Reach::Log`]).
    pub fn disk_damage(self) -> Option<DiskDamage> {
        DiskDamage::ALL.into_iter().find(|d| d.kind() == self)
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
}

/// What carries a fault of a kind out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// The writer of a connection, at one frame ([`super::FrameDecision`]); `transient-error`
    /// too, at the answer to one request.
    Frame,
    /// The step loop, between steps: a crash, restart, partition or hold
    /// ([`super::NemesisAction`]).
    Process,
    /// The step loop's crash of the Agent, and the damage done to its log while it is down
    /// ([`DiskDamage`]).
    Disk,
}

/// A setting a `[[fault]]` entry may give besides its kind and trigger.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setting {
    /// `silent`: the break is silent (only heartbeats notice it).
    Silent,
    /// `reroute`: the Client's next connection goes to another cluster node.
    Reroute,
    /// `stall_ms`: how long a frame waits, ms.
    StallMs,
    /// `direction`: which way a one-way partition cuts.
    Direction,
    /// `restart_after_ms`: when a crashed process starts again, ms.
    RestartAfterMs,
    /// `heal_after_ms`: when a partition heals or a hold releases, ms.
    HealAfterMs,
}

impl Setting {
    /// Every setting, in the order a `[[fault]]` entry's settings are checked.
    pub const ALL: [Setting; 6] = [
        Setting::Silent,
        Setting::Reroute,
        Setting::StallMs,
        Setting::Direction,
        Setting::RestartAfterMs,
        Setting::HealAfterMs,
    ];

    /// Its field in a `[[fault]]` entry.
    pub fn field(self) -> &'static str {
        match self {
            Setting::Silent => "silent",
            Setting::Reroute => "reroute",
            Setting::StallMs => "stall_ms",
            Setting::Direction => "direction",
            Setting::RestartAfterMs => "restart_after_ms",
            Setting::HealAfterMs => "heal_after_ms",
        }
    }
}

/// Whether a kind must be given a setting it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Given {
    /// A `[[fault]]` entry without it is refused.
    Required,
    /// Without it the kind uses its default ([`FaultKind::default_ms`]) or `false`.
    Optional,
}

/// One setting a kind takes ([`FaultKind::settings`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Takes {
    /// The setting.
    pub setting: Setting,
    /// Whether an entry must give it.
    pub given: Given,
    /// For a duration: its default and the swarm's range.
    pub ms: Option<Durations>,
}

/// A duration setting's values, ms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Durations {
    /// What an entry without it gets, and what exploration places.
    pub default: u64,
    /// What the swarm draws from.
    pub swarm: std::ops::RangeInclusive<u64>,
}

impl Takes {
    const fn flag(setting: Setting) -> Takes {
        Takes {
            setting,
            given: Given::Optional,
            ms: None,
        }
    }

    const fn ms(setting: Setting, given: Given, default: u64, swarm: (u64, u64)) -> Takes {
        Takes {
            setting,
            given,
            ms: Some(Durations {
                default,
                swarm: swarm.0..=swarm.1,
            }),
        }
    }

    /// `silent`, optional.
    pub const SILENT: Takes = Takes::flag(Setting::Silent);
    /// `reroute`, optional.
    pub const REROUTE: Takes = Takes::flag(Setting::Reroute);
    /// `direction`, required.
    pub const DIRECTION: Takes = Takes {
        setting: Setting::Direction,
        given: Given::Required,
        ms: None,
    };
    /// A stall's `stall_ms`: required; 100 ms placed, 50 to 400 drawn.
    pub const STALL: Takes = Takes::ms(Setting::StallMs, Given::Required, 100, (50, 400));
    /// A reorder's bound (`stall_ms`): optional; 40 ms by default, 10 to 60 drawn.
    pub const REORDER_BOUND: Takes = Takes::ms(Setting::StallMs, Given::Optional, 40, (10, 60));
    /// `heal_after_ms`: required; 100 ms placed, 30 to 400 drawn.
    pub const HEAL: Takes = Takes::ms(Setting::HealAfterMs, Given::Required, 100, (30, 400));
    /// An Agent's `restart_after_ms` (the disk's kinds too): required; 50 ms placed, 10 to
    /// 300 drawn.
    pub const RESTART_AGENT: Takes =
        Takes::ms(Setting::RestartAfterMs, Given::Required, 50, (10, 300));
    /// The Client's, the proxy's or the store's `restart_after_ms`: required; 50 ms placed,
    /// 10 to 200 drawn.
    pub const RESTART: Takes = Takes::ms(Setting::RestartAfterMs, Given::Required, 50, (10, 200));
}

/// What may trigger a fault of a kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fires {
    /// Only a frame (`frame` and `method`): it acts on that frame.
    AtFrame,
    /// Only the Client's `session/prompt` request: the Agent rejects what it becomes.
    AtPromptRequest,
    /// Any event: a frame, a submission, a time, or one of the kind's protocol points
    /// ([`FaultKind::points`]).
    AtEvent,
}

/// The protocol points where the Agent (any node) may be crashed: every Agent point.
const AGENT_POINTS: &[acp_chaos_models::Point] = &acp_chaos_models::Point::AGENT;

impl FaultKind {
    /// What carries it out ([`Level`]).
    pub fn level(self) -> Level {
        match self {
            FaultKind::LoseFrame
            | FaultKind::StallFrame
            | FaultKind::ReorderFrame
            | FaultKind::TransientError
            | FaultKind::LoseExchange
            | FaultKind::DropUpdates => Level::Frame,
            FaultKind::Partition
            | FaultKind::PartitionOneway
            | FaultKind::Hold
            | FaultKind::CrashAgent
            | FaultKind::RestartClient
            | FaultKind::CrashProxy
            | FaultKind::CrashStore
            | FaultKind::PartitionStore => Level::Process,
            FaultKind::FlipBit | FaultKind::ZeroSector | FaultKind::LoseSyncedRecord => Level::Disk,
        }
    }

    /// The settings it takes ([`Takes`]): each required or optional, a duration with its
    /// default and its swarm range; a `[[fault]]` entry giving any other is refused.
    pub fn settings(self) -> &'static [Takes] {
        match self {
            FaultKind::LoseFrame => &[Takes::SILENT, Takes::REROUTE],
            FaultKind::StallFrame => &[Takes::STALL],
            FaultKind::ReorderFrame => &[Takes::REORDER_BOUND],
            FaultKind::Partition | FaultKind::Hold | FaultKind::PartitionStore => &[Takes::HEAL],
            FaultKind::PartitionOneway => &[Takes::DIRECTION, Takes::HEAL],
            FaultKind::RestartClient => &[Takes::REROUTE, Takes::RESTART],
            FaultKind::CrashProxy | FaultKind::CrashStore => &[Takes::RESTART],
            FaultKind::CrashAgent
            | FaultKind::FlipBit
            | FaultKind::ZeroSector
            | FaultKind::LoseSyncedRecord => &[Takes::RESTART_AGENT],
            FaultKind::TransientError | FaultKind::LoseExchange | FaultKind::DropUpdates => &[],
        }
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
        match self {
            FaultKind::LoseFrame
            | FaultKind::StallFrame
            | FaultKind::ReorderFrame
            | FaultKind::LoseExchange
            | FaultKind::DropUpdates => Fires::AtFrame,
            FaultKind::TransientError => Fires::AtPromptRequest,
            FaultKind::Partition
            | FaultKind::PartitionOneway
            | FaultKind::Hold
            | FaultKind::CrashAgent
            | FaultKind::RestartClient
            | FaultKind::CrashProxy
            | FaultKind::CrashStore
            | FaultKind::PartitionStore
            | FaultKind::FlipBit
            | FaultKind::ZeroSector
            | FaultKind::LoseSyncedRecord => Fires::AtEvent,
        }
    }

    /// The protocol points it may fire at (empty: none). An Agent crash (and a proxy crash
    /// while the Agent waits) at any Agent point; the store's faults where a node's write
    /// meets the store: `after-store-write`, and for `partition-store` also
    /// `after-insert-before-sync`, where a node has decided to insert and its write has not
    /// reached the store.
    pub fn points(self) -> &'static [acp_chaos_models::Point] {
        use acp_chaos_models::Point;
        match self {
            FaultKind::CrashAgent
            | FaultKind::CrashProxy
            | FaultKind::FlipBit
            | FaultKind::ZeroSector
            | FaultKind::LoseSyncedRecord => AGENT_POINTS,
            FaultKind::CrashStore => &[Point::AfterStoreWrite],
            FaultKind::PartitionStore => &[Point::AfterStoreWrite, Point::AfterInsertBeforeSync],
            FaultKind::LoseFrame
            | FaultKind::StallFrame
            | FaultKind::ReorderFrame
            | FaultKind::Partition
            | FaultKind::PartitionOneway
            | FaultKind::Hold
            | FaultKind::RestartClient
            | FaultKind::TransientError
            | FaultKind::LoseExchange
            | FaultKind::DropUpdates => &[],
        }
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
}
