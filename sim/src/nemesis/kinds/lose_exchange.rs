//! `lose-exchange`: on the remote transport (cluster): one exchange is lost while the logical
//! connection lives.

use super::{
    ByDefault, Drawn, DrawnOn, Effect, Explored, Fires, Placed, Reach, Row, Spaced, SpacedOn,
};

/// `lose-exchange`'s row.
pub(super) const ROW: Row = Row {
    name: "lose-exchange",
    summary: "remote transport: one request fails before acceptance (X5: resent without reconnecting) or one response is dropped; the connection lives",
    reach: Reach::Remote,
    effect: Effect::LoseExchange,
    settings: &[],
    fires: Fires::AtFrame,
    points: &[],
    at_pipe: None,
    swarm: Drawn {
        on: DrawnOn::Frame,
        settings: &[],
    },
    space: Spaced {
        rank: Some(12),
        on: SpacedOn::Frame,
        settings: &[],
    },
    explore: Explored {
        by_default: ByDefault::Rank(9),
        placed: Placed::AT_FRAMES,
    },
};
