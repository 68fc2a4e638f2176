//! `reorder-frame`: a frame waits until a frame on another connection overtakes it (at most
//! `stall_ms`); each connection stays FIFO.

use super::{
    ByDefault, Drawn, DrawnOn, Effect, Explored, Fires, Knob, Placed, Reach, Row, Setting, Spaced,
    SpacedOn, Takes,
};

/// `reorder-frame`'s row.
pub(super) const ROW: Row = Row {
    name: "reorder-frame",
    summary: "a frame waits until a frame on another connection overtakes it (at most stall_ms, default 40); each connection stays FIFO",
    reach: Reach::Everywhere,
    effect: Effect::Reorder,
    settings: &[Takes::REORDER_BOUND],
    fires: Fires::AtFrame,
    points: &[],
    at_pipe: None,
    swarm: Drawn {
        on: DrawnOn::Frame,
        settings: &[Setting::StallMs],
    },
    space: Spaced {
        rank: Some(4),
        on: SpacedOn::Frame,
        settings: &[Knob::ReorderBound],
    },
    explore: Explored {
        by_default: ByDefault::OnRequest,
        placed: Placed::AT_FRAMES,
    },
};
