//! `partition-store`: on a cluster, cut the store from the node serving the Client, healed after
//! `heal_after_ms`; at `after-insert-before-sync`, from the node that reached it (it has decided to
//! insert and its write has not reached the store).

use acp_chaos_models::Point;

use super::{
    ByDefault, Drawn, DrawnOn, Effect, Explored, Fires, Knob, OnCluster, Placed, Reach, Row,
    Setting, Spaced, SpacedOn, Takes,
};

/// `partition-store`'s row.
pub(super) const ROW: Row = Row {
    name: "partition-store",
    summary: "cluster: partition the store from the node serving the Client (at after-insert-before-sync: the node that reached it), healed after heal_after_ms",
    reach: Reach::Store,
    effect: Effect::PartitionStore,
    settings: &[Takes::HEAL],
    fires: Fires::AtEvent,
    points: &[Point::AfterStoreWrite, Point::AfterInsertBeforeSync],
    at_pipe: None,
    swarm: Drawn {
        on: DrawnOn::Time,
        settings: &[Setting::HealAfterMs],
    },
    space: Spaced {
        rank: Some(11),
        on: SpacedOn::Time,
        settings: &[Knob::Heal],
    },
    explore: Explored {
        by_default: ByDefault::Rank(8),
        placed: Placed {
            points: &[Point::AfterStoreWrite],
            on_cluster: OnCluster::AlsoLong(Setting::HealAfterMs),
            cluster_points: &[Point::AfterInsertBeforeSync],
            ..Placed::NOWHERE
        },
    },
};
