//! `partition-oneway`: one-way partition (`direction`), healed after `heal_after_ms`.

use super::{
    ByDefault, Drawn, DrawnOn, Effect, Explored, Fires, Knob, Placed, Reach, Row, Setting, Shapes,
    Spaced, SpacedOn, Takes,
};

/// `partition-oneway`'s row.
pub(super) const ROW: Row = Row {
    name: "partition-oneway",
    summary: "one-way partition (direction = client-to-agent | agent-to-client), healed after heal_after_ms",
    reach: Reach::Everywhere,
    effect: Effect::PartitionOneway,
    settings: &[Takes::DIRECTION, Takes::HEAL],
    fires: Fires::AtEvent,
    points: &[],
    at_pipe: None,
    swarm: Drawn {
        on: DrawnOn::Time,
        settings: &[Setting::HealAfterMs, Setting::Direction],
    },
    space: Spaced {
        rank: Some(5),
        on: SpacedOn::Time,
        settings: &[Knob::Heal, Knob::Direction],
    },
    explore: Explored {
        by_default: ByDefault::OnRequest,
        placed: Placed {
            shapes: Shapes::EachDirection,
            ..Placed::AT_FRAMES_AND_SUBMISSIONS
        },
    },
};
