//! `stall-point`: the host that passes a protocol point stops there for `stall_ms`, then goes
//! on. What it was about to do waits: at a cluster node's `after-insert-before-sync`, its
//! insertion reaches the store after what other nodes send meanwhile. Order exploration
//! (`explore --orders`) reverses a race between a node's insertion and another node's store op
//! with it; it is placed as a fault only on request.

use super::{
    ByDefault, Drawn, DrawnOn, Effect, Explored, Fires, Knob, Placed, Reach, Row, Setting, Spaced,
    SpacedOn, Takes,
};

/// `stall-point`'s row.
pub(super) const ROW: Row = Row {
    name: "stall-point",
    summary: "the host passing a protocol point stops there for stall_ms, then goes on (what it was about to send goes later)",
    reach: Reach::Everywhere,
    effect: Effect::Pause,
    settings: &[Takes::STALL],
    fires: Fires::AtPoint,
    points: super::AGENT_POINTS,
    at_pipe: None,
    swarm: Drawn {
        on: DrawnOn::Point,
        settings: &[Setting::StallMs],
    },
    space: Spaced {
        rank: None,
        on: SpacedOn::TimeOrOwnPoint,
        settings: &[Knob::Stall],
    },
    explore: Explored {
        by_default: ByDefault::OnRequest,
        placed: Placed {
            points: super::AGENT_POINTS,
            ..Placed::NOWHERE
        },
    },
};
