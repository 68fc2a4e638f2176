//! `lose-frame`: the connection breaks at a frame: it and everything after it are lost (visible, or
//! silent).

use super::{
    AtPipe, ByDefault, Drawn, DrawnOn, Effect, Explored, Fires, Knob, OnCluster, Placed, Reach,
    Row, Setting, Shapes, Spaced, SpacedOn, Takes,
};

/// `lose-frame`'s row.
pub(super) const ROW: Row = Row {
    name: "lose-frame",
    summary: "connection breaks at a frame (visible close, or silent: heartbeat notices)",
    reach: Reach::Everywhere,
    effect: Effect::Break,
    settings: &[Takes::SILENT, Takes::REROUTE],
    fires: Fires::AtFrame,
    points: &[],
    at_pipe: Some(AtPipe::LoseFrame),
    swarm: Drawn {
        on: DrawnOn::Frame,
        settings: &[Setting::Silent],
    },
    space: Spaced {
        rank: Some(0),
        on: SpacedOn::Frame,
        settings: &[Knob::Silent],
    },
    explore: Explored {
        by_default: ByDefault::Rank(0),
        placed: Placed {
            shapes: Shapes::AlsoSilent,
            on_cluster: OnCluster::AlsoReroute,
            ..Placed::AT_FRAMES
        },
    },
};
