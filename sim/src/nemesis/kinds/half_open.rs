//! `half-open`: the connection breaks at a frame for its connecting end only (the Client's, or
//! a proxy's toward the Agent); at another event (a time, a submission, the Agent holding a
//! prompt: `while-held`), every connection the Client has open does. That end sees its
//! connection close and goes on (a Client reconnects and resends); its close never reaches
//! the other end, which hears nothing more,
//! writes into the void and ends the connection only when its heartbeat gives up
//! (`dead_ms` after the last line it read). The TCP half-open connection: a Client whose
//! network changed, a NAT that forgot the flow. What it adds to a visible or silent
//! `lose-frame` is the gap between the two ends' views: a retry on the Client's next
//! connection reaches the Agent while the Agent still counts the old one open (A7 under O1
//! `drop`: a held prompt whose connection ends after its retry began to wait for it). Placed
//! only on request (`--kinds`) and by lineage where the Agent drops a held prompt with its
//! connection; drawn by the swarm only where a scenario's `[swarm] faults` lists it.

use acp_chaos_models::Point;

use super::{
    ByDefault, Drawn, DrawnOn, Effect, Explored, Fires, Placed, Reach, Row, Spaced, SpacedOn,
};

/// `half-open`'s row.
pub(super) const ROW: Row = Row {
    name: "half-open",
    summary: "connection breaks for the Client's end only (at a frame, its connection; at a time, a submission or while-held, every Client connection): its close never reaches the Agent, whose heartbeat notices",
    reach: Reach::Socket,
    effect: Effect::HalfOpen,
    settings: &[],
    fires: Fires::AtEvent,
    points: &[Point::WhileHeld],
    at_pipe: None,
    swarm: Drawn {
        on: DrawnOn::TimeOrFrameOrPoint,
        settings: &[],
    },
    space: Spaced {
        rank: None,
        on: SpacedOn::Frame,
        settings: &[],
    },
    explore: Explored {
        by_default: ByDefault::OnRequest,
        placed: Placed {
            points: &[Point::WhileHeld],
            ..Placed::AT_FRAMES
        },
    },
};
