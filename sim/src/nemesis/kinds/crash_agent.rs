//! `crash-agent`: Crash the Agent (unsynced writes lost), restart it after `restart_after_ms`.

use super::{AtFrames, AtPipe, ByDefault, Drawn, DrawnOn, Effect, Explored, Fires, Knob, OnCluster, Placed, Reach, Row, Setting, Shapes, Spaced, SpacedOn, Takes};

/// `crash-agent`'s row.
pub(super) const ROW: Row = Row {
    name: "crash-agent",
    summary: "crash the Agent (unsynced writes lost), at a time, frame or protocol point",
    reach: Reach::Everywhere,
    effect: Effect::Crash {
        host: "agent",
        damage: None,
    },
    settings: &[Takes::RESTART_AGENT],
    fires: Fires::AtEvent,
    points: super::AGENT_POINTS,
    at_pipe: Some(AtPipe::CrashAgent),
    swarm: Drawn {
        on: DrawnOn::TimeOrPoint,
        settings: &[Setting::RestartAfterMs],
    },
    space: Spaced {
        rank: Some(1),
        on: SpacedOn::TimeOrAgentPointOrFrame,
        settings: &[Knob::Restart],
    },
    explore: Explored {
        by_default: ByDefault::Rank(2),
        placed: Placed {
            frames: AtFrames::No,
            submissions: true,
            points: super::AGENT_POINTS,
            shapes: Shapes::One,
            on_cluster: OnCluster::Nothing,
            cluster_points: &[],
        },
    },
};
