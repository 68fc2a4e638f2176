//! `stall-frame`: The connection stalls before a frame for `stall_ms`, then flows again.

use super::{AtFrames, AtPipe, ByDefault, Drawn, DrawnOn, Effect, Explored, Fires, Knob, OnCluster, Placed, Reach, Row, Setting, Shapes, Spaced, SpacedOn, Takes};

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
            frames: AtFrames::Every,
            submissions: false,
            points: &[],
            shapes: Shapes::AlsoPastTimeout,
            on_cluster: OnCluster::Nothing,
            cluster_points: &[],
        },
    },
};
