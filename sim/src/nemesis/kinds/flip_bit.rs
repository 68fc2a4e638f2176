//! `flip-bit`: Crash the Agent, flip one bit in a record in the middle of its stored log while it is down, restart it: a damaged disk.

use super::{AtFrames, ByDefault, DiskDamage, Drawn, DrawnOn, Effect, Explored, Fires, Knob, OnCluster, Placed, Reach, Row, Setting, Shapes, Spaced, SpacedOn, Takes};

/// `flip-bit`'s row.
pub(super) const ROW: Row = Row {
    name: "flip-bit",
    summary: "crash the Agent, flip one bit in a record in the middle of its stored log, restart it (a correct Agent refuses to start); only where a scenario lists it",
    reach: Reach::Log,
    effect: Effect::Crash {
        host: "agent",
        damage: Some(DiskDamage::FlipBit),
    },
    settings: &[Takes::RESTART_AGENT],
    fires: Fires::AtEvent,
    points: super::AGENT_POINTS,
    at_pipe: None,
    swarm: Drawn {
        on: DrawnOn::TimeOrPoint,
        settings: &[Setting::RestartAfterMs],
    },
    space: Spaced {
        rank: None,
        on: SpacedOn::TimeOrAgentPointOrFrame,
        settings: &[Knob::Restart],
    },
    explore: Explored {
        by_default: ByDefault::Never("exploration places no disk damage: the disk-0N scenarios run it"),
        placed: Placed {
            frames: AtFrames::No,
            submissions: false,
            points: &[],
            shapes: Shapes::One,
            on_cluster: OnCluster::Nothing,
            cluster_points: &[],
        },
    },
};
