//! `crash-store`: on a cluster, crash the store host (its synced records survive), restart it after
//! `restart_after_ms`; at `after-store-write`, right after a write and before its reply (the node
//! cannot know).

use acp_chaos_models::Point;

use super::{
    ByDefault, Drawn, DrawnOn, Effect, Explored, Fires, Knob, OnCluster, Placed, Reach, Row,
    Setting, Spaced, SpacedOn, Takes,
};

/// `crash-store`'s row.
pub(super) const ROW: Row = Row {
    name: "crash-store",
    summary: "cluster: crash the store host (synced records survive), restart it later",
    reach: Reach::Store,
    effect: Effect::CRASH_STORE,
    settings: &[Takes::RESTART],
    fires: Fires::AtEvent,
    points: &[Point::AfterStoreWrite],
    at_pipe: None,
    swarm: Drawn {
        on: DrawnOn::TimeOrPoint,
        settings: &[Setting::RestartAfterMs],
    },
    space: Spaced {
        rank: Some(10),
        on: SpacedOn::TimeOrOwnPoint,
        settings: &[Knob::Restart],
    },
    explore: Explored {
        by_default: ByDefault::Rank(7),
        placed: Placed {
            points: &[Point::AfterStoreWrite],
            on_cluster: OnCluster::AlsoLong(Setting::RestartAfterMs),
            ..Placed::NOWHERE
        },
    },
};
