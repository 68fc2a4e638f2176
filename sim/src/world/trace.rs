//! What a run did that its history does not hold: every protocol point a host passed and
//! every submission the Client accepted, each placed among the history's ops. Exploration
//! ([`crate::explore`]) reads it to place faults at points and submissions; the history, and so
//! its hash, stays as it was.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::models::Point;

/// One pass of a host through a protocol point.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PointPass {
    /// The point.
    pub point: Point,
    /// The host that passed it (`agent`, `node2`, `store`).
    pub host: &'static str,
    /// How many ops the history held at that moment (the pass comes after `ops[..ops_before]`).
    pub ops_before: usize,
    /// Simulated time, ms.
    pub time_ms: u64,
    /// The world's state then ([`super::snapshot`]; `None` unless the run took snapshots).
    pub state: Option<u64>,
}

/// A submission the Client accepted (where a `submission` trigger fires).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Accepted {
    /// The submission number.
    pub submission: u64,
    /// How many ops the history held at that moment.
    pub ops_before: usize,
    /// Simulated time, ms.
    pub time_ms: u64,
    /// The world's state then ([`super::snapshot`]; `None` unless the run took snapshots).
    pub state: Option<u64>,
}

/// A run's trace beside its history.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Trace {
    /// Protocol points passed, in order (the `nth` pass of a point, over every host, is what a
    /// `point` trigger with that `nth` counts).
    pub points: Vec<PointPass>,
    /// Submissions accepted, in order.
    pub accepted: Vec<Accepted>,
    /// In a snapshotting run: the world's state ([`super::snapshot`]) when each frame was
    /// handed to its writer, by the index of the op that logged it (its `send`, or the
    /// `nemesis` op that lost it).
    pub frame_states: BTreeMap<usize, Option<u64>>,
}
