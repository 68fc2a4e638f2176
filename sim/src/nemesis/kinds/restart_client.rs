//! `restart-client`: crash and restart the Client.

use super::{
    AtPipe, ByDefault, Drawn, DrawnOn, Effect, Explored, Fires, Knob, OnCluster, Placed, Reach,
    Row, Setting, Spaced, SpacedOn, Takes,
};

/// `restart-client`'s row.
pub(super) const ROW: Row = Row {
    name: "restart-client",
    summary: "crash and restart the Client process",
    reach: Reach::Everywhere,
    effect: Effect::RESTART_CLIENT,
    settings: &[Takes::REROUTE, Takes::RESTART],
    fires: Fires::AtEvent,
    points: &[],
    at_pipe: Some(AtPipe::RestartClient),
    swarm: Drawn {
        on: DrawnOn::TimeOrSubmission,
        settings: &[Setting::RestartAfterMs],
    },
    space: Spaced {
        rank: Some(7),
        on: SpacedOn::TimeOrSubmission,
        settings: &[Knob::Restart],
    },
    explore: Explored {
        by_default: ByDefault::Rank(3),
        placed: Placed {
            on_cluster: OnCluster::AlsoReroute,
            ..Placed::AT_FRAMES_AND_SUBMISSIONS
        },
    },
};
