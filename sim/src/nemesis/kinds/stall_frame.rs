//! `stall-frame`: the connection stalls before a frame for `stall_ms`, then flows again.

use super::{
    AtPipe, ByDefault, Drawn, DrawnOn, Effect, Explored, Fires, Knob, Placed, Reach, Row, Setting,
    Shapes, Spaced, SpacedOn, Takes,
};

/// `stall-frame`'s row.
pub(super) const ROW: Row = Row {
    name: "stall-frame",
    summary: "connection stalls before a frame for stall_ms, then flows again",
    reach: Reach::Everywhere,
    effect: Effect::Stall,
    settings: &[Takes::STALL],
    fires: Fires::AtFrame,
    points: &[],
    at_pipe: Some(AtPipe::StallFrame),
    swarm: Drawn {
        on: DrawnOn::Frame,
        settings: &[Setting::StallMs],
    },
    space: Spaced {
        rank: Some(3),
        on: SpacedOn::Frame,
        settings: &[Knob::Stall],
    },
    explore: Explored {
        by_default: ByDefault::Rank(1),
        placed: Placed {
            shapes: Shapes::AlsoPastTimeout,
            ..Placed::AT_FRAMES
        },
    },
};
