//! `lose-exchange`: Remote transport (cluster): one exchange is lost while the logical connection lives.

use super::{AtFrames, ByDefault, Drawn, DrawnOn, Effect, Explored, Fires, OnCluster, Placed, Reach, Row, Shapes, Spaced, SpacedOn};

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
        placed: Placed {
            frames: AtFrames::Every,
            submissions: false,
            points: &[],
            shapes: Shapes::One,
            on_cluster: OnCluster::Nothing,
            cluster_points: &[],
        },
    },
};
