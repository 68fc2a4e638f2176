//! `transient-error`: the Agent rejects one `session/prompt` attempt with a transient `-32603`.

use super::{
    AtFrames, ByDefault, Drawn, DrawnOn, Effect, Explored, Fires, Placed, Reach, Row, Spaced,
    SpacedOn,
};

/// `transient-error`'s row.
pub(super) const ROW: Row = Row {
    name: "transient-error",
    summary: "Agent rejects one session/prompt attempt with -32603 before inserting",
    reach: Reach::Everywhere,
    effect: Effect::RejectPrompt,
    settings: &[],
    fires: Fires::AtPromptRequest,
    points: &[],
    at_pipe: None,
    swarm: Drawn {
        on: DrawnOn::PromptRequest,
        settings: &[],
    },
    space: Spaced {
        rank: Some(8),
        on: SpacedOn::PromptRequest,
        settings: &[],
    },
    explore: Explored {
        by_default: ByDefault::Rank(5),
        placed: Placed {
            frames: AtFrames::PromptRequests,
            ..Placed::NOWHERE
        },
    },
};
