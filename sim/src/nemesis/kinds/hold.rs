//! `hold`: hold every frame between the Client and its next hop, release after `heal_after_ms`.

use super::{
    ByDefault, Drawn, DrawnOn, Effect, Explored, Fires, Knob, Placed, Reach, Row, Setting, Spaced,
    SpacedOn, Takes,
};

/// `hold`'s row.
pub(super) const ROW: Row = Row {
    name: "hold",
    summary: "hold every frame client<->agent, release after heal_after_ms (late, in order)",
    reach: Reach::Everywhere,
    effect: Effect::Hold,
    settings: &[Takes::HEAL],
    fires: Fires::AtEvent,
    points: &[],
    at_pipe: None,
    swarm: Drawn {
        on: DrawnOn::Time,
        settings: &[Setting::HealAfterMs],
    },
    space: Spaced {
        rank: Some(6),
        on: SpacedOn::Time,
        settings: &[Knob::Heal],
    },
    explore: Explored {
        by_default: ByDefault::OnRequest,
        placed: Placed::AT_FRAMES_AND_SUBMISSIONS,
    },
};
