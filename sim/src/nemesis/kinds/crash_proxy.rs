//! `crash-proxy`: crash the proxy (both its legs close), restart it after `restart_after_ms`; at a
//! protocol point, while the Agent waits there.

use super::{
    ByDefault, Drawn, DrawnOn, Effect, Explored, Fires, Knob, Placed, Reach, Row, Setting, Spaced,
    SpacedOn, Takes,
};

/// `crash-proxy`'s row.
pub(super) const ROW: Row = Row {
    name: "crash-proxy",
    summary: "crash the proxy (both legs close), restart it later",
    reach: Reach::Proxy,
    effect: Effect::CRASH_PROXY,
    settings: &[Takes::RESTART],
    fires: Fires::AtEvent,
    points: super::AGENT_POINTS,
    at_pipe: None,
    swarm: Drawn {
        on: DrawnOn::TimeOrFrameOrPoint,
        settings: &[Setting::RestartAfterMs],
    },
    space: Spaced {
        rank: Some(9),
        on: SpacedOn::TimeOrAgentPointOrFrame,
        settings: &[Knob::Restart],
    },
    explore: Explored {
        by_default: ByDefault::Rank(6),
        placed: Placed {
            points: super::AGENT_POINTS,
            ..Placed::AT_FRAMES
        },
    },
};
