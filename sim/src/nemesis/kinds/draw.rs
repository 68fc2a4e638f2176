//! How each generator draws or places a fault kind, as data a kind's row gives and the
//! generator reads (none of them matches on kinds):
//! - [`Drawn`]: the swarm (`plan/swarm.rs`), its trigger and the settings it draws, in draw
//!   order (part of every swarm history: the order is the byte stream);
//! - [`Spaced`]: a proptest `Space` (`explore/strategy.rs`), the trigger's options and which
//!   of the space's knobs draws each setting;
//! - [`Explored`]: exhaustive exploration, lineage and guided (`explore/`), whether the kind is
//!   placed by default and the shapes it is placed in at each place of a fault-free run.

use acp_chaos_models::Point;

use super::setting::Setting;

/// How the swarm draws a fault of a kind: its trigger, then its settings in this order.
#[derive(Debug, Clone, Copy)]
pub struct Drawn {
    /// Its trigger. A time is always drawn first (it keeps every other draw where it was).
    pub on: DrawnOn,
    /// The settings drawn after the trigger, in this order: `silent` with probability 0.4,
    /// `direction` even, a duration from its swarm range ([`super::Takes`]).
    pub settings: &'static [Setting],
}

/// What a swarm-drawn trigger may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DrawnOn {
    /// A frame: `session/prompt` 3 in 6, `session/resume`, `initialize`, `session/new`;
    /// either side; the prompt's 1st to (submissions+1)th, another method's 1st or 2nd.
    Frame,
    /// The Client's Nth `session/prompt` request, N in 1..=submissions+1.
    PromptRequest,
    /// A time.
    Time,
    /// A time, or with probability ½ one of the kind's points (a single point is not drawn)
    /// at its 1st to Nth pass.
    TimeOrPoint,
    /// A time, or with probability ½ a submission.
    TimeOrSubmission,
    /// A time, or with probability ½ a frame or (evenly) one of the kind's points: lands in
    /// protocol states a time rarely hits.
    TimeOrFrameOrPoint,
    /// One of the kind's points (a single point is not drawn) at its 1st to Nth pass.
    Point,
}

/// How a proptest `Space` draws a fault of a kind: a trigger, then its settings.
#[derive(Debug, Clone, Copy)]
pub struct Spaced {
    /// Its place in `Space::of`'s kinds (the union shrinks toward the earlier ones); `None`:
    /// not drawn.
    pub rank: Option<u8>,
    /// Its trigger's options.
    pub on: SpacedOn,
    /// The space's knobs drawing its settings, in this order.
    pub settings: &'static [Knob],
}

/// A proptest trigger's options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpacedOn {
    /// A frame of the space's methods.
    Frame,
    /// The Client's Nth `session/prompt` request, N in 1..=submissions+1.
    PromptRequest,
    /// A time.
    Time,
    /// A time or a submission.
    TimeOrSubmission,
    /// A time, one of the space's points other than `after-store-write` (where only the
    /// store's faults fire), or a frame.
    TimeOrAgentPointOrFrame,
    /// A time or one of the kind's own points.
    TimeOrOwnPoint,
}

/// A proptest `Space`'s knob that draws one setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Knob {
    /// `silent`, with the space's probability.
    Silent,
    /// `stall_ms`, from the space's stall range.
    Stall,
    /// `stall_ms` as a reorder's bound, from the space's reorder range.
    ReorderBound,
    /// `heal_after_ms`, from the space's heal range.
    Heal,
    /// `restart_after_ms`, from the space's restart range.
    Restart,
    /// `direction`, either way.
    Direction,
}

/// How exploration treats a kind: placed by default or not, and the shapes it is placed in.
#[derive(Debug, Clone, Copy)]
pub struct Explored {
    /// Whether it is placed without `--kinds`.
    pub by_default: ByDefault,
    /// Where and how it is placed.
    pub placed: Placed,
}

/// Whether exploration places a kind without `--kinds`, and if not why (a certificate's "not
/// placed" reason).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByDefault {
    /// Placed by default, at this rank among the default kinds (the order names every
    /// certificate's schedules: `L.I`).
    Rank(u8),
    /// Placed when `--kinds` names it.
    OnRequest,
    /// Left out by default, for this reason (a certificate says it before any reach).
    LeftOut(&'static str),
    /// Never placed, for this reason (said after a reach the trace lacks).
    Never(&'static str),
}

/// Where exploration places a kind and in what shapes (each at its default durations).
#[derive(Debug, Clone, Copy)]
pub struct Placed {
    /// At which frames.
    pub frames: AtFrames,
    /// At each submission.
    pub submissions: bool,
    /// At which protocol points.
    pub points: &'static [Point],
    /// The shapes at one place.
    pub shapes: Shapes,
    /// On a cluster of two nodes or more (exhaustive and lineage): more shapes.
    pub on_cluster: OnCluster,
    /// On a cluster of two nodes or more, also at these points, in its default shape and its
    /// long one ([`OnCluster::AlsoLong`]).
    pub cluster_points: &'static [Point],
}

impl Placed {
    /// Nowhere (the disk's kinds: the disk-0N scenarios run them).
    pub const NOWHERE: Placed = Placed {
        frames: AtFrames::No,
        submissions: false,
        points: &[],
        shapes: Shapes::One,
        on_cluster: OnCluster::Nothing,
        cluster_points: &[],
    };
    /// At every frame, in its default shape.
    pub const AT_FRAMES: Placed = Placed {
        frames: AtFrames::Every,
        ..Placed::NOWHERE
    };
    /// At every frame and every submission, in its default shape.
    pub const AT_FRAMES_AND_SUBMISSIONS: Placed = Placed {
        submissions: true,
        ..Placed::AT_FRAMES
    };
}

/// At which frames exploration places a kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtFrames {
    /// None.
    No,
    /// Every frame.
    Every,
    /// The Client's `session/prompt` requests.
    PromptRequests,
}

/// The shapes exploration places at one place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shapes {
    /// Its default shape.
    One,
    /// Its default shape, then silent.
    AlsoSilent,
    /// Its default shape, then (on the frames of a prompt's life, `LONG_STALL_METHODS`) a
    /// stall past the Client's prompt timeout.
    AlsoPastTimeout,
    /// One per direction: Client to Agent, then Agent to Client.
    EachDirection,
}

/// The shapes exploration adds on a cluster of two nodes or more.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnCluster {
    /// None.
    Nothing,
    /// A visible one again with `reroute` (the Client's next connection goes to another node).
    AlsoReroute,
    /// Each again with this duration held long (`STORE_FAULT_LONG_MS`); lineage widens this
    /// duration to outlast the break it follows up with.
    AlsoLong(Setting),
}
