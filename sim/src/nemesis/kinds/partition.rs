//! `partition`: two-way partition Client↔Agent, healed after `heal_after_ms`.

use super::{
    ByDefault, Drawn, DrawnOn, Effect, Explored, Fires, Knob, Placed, Reach, Row, Setting, Spaced,
    SpacedOn, Takes,
};

/// `partition`'s row.
pub(super) const ROW: Row = Row {
    name: "partition",
    summary: "two-way partition client<->agent, healed after heal_after_ms",
    reach: Reach::Everywhere,
    effect: Effect::Partition,
    settings: &[Takes::HEAL],
    fires: Fires::AtEvent,
    points: &[],
    at_pipe: None,
    swarm: Drawn {
        on: DrawnOn::Time,
        settings: &[Setting::HealAfterMs],
    },
    space: Spaced {
        rank: Some(2),
        on: SpacedOn::Time,
        settings: &[Knob::Heal],
    },
    explore: Explored {
        by_default: ByDefault::Rank(4),
        placed: Placed::AT_FRAMES_AND_SUBMISSIONS,
    },
};
