//! `drop-updates`: on the remote transport (cluster): the update stream of the connection whose
//! frame triggers it dies silently.

use super::{
    ByDefault, Drawn, DrawnOn, Effect, Explored, Fires, Placed, Reach, Row, Spaced, SpacedOn,
};

/// `drop-updates`'s row.
pub(super) const ROW: Row = Row {
    name: "drop-updates",
    summary: "remote transport: the update stream dies silently (updates and Agent requests lost) while requests and responses flow",
    reach: Reach::Remote,
    effect: Effect::KillUpdates,
    settings: &[],
    fires: Fires::AtFrame,
    points: &[],
    at_pipe: None,
    swarm: Drawn {
        on: DrawnOn::Frame,
        settings: &[],
    },
    space: Spaced {
        rank: Some(13),
        on: SpacedOn::Frame,
        settings: &[],
    },
    explore: Explored {
        by_default: ByDefault::LeftOut(
            "left out by default: a request on a dead update stream waits forever, a gap of the proposal; --kinds drop-updates places it",
        ),
        placed: Placed::AT_FRAMES,
    },
};
