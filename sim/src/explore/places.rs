//! Where a fault can land in a run: every frame of every method in both directions (the
//! Client's requests and notifications and the answers to them, the Agent's notifications and
//! requests and the Client's answers), every protocol point a host passed, every submission
//! the Client accepted. Each [`Place`] carries the trigger that fires there when the run is
//! replayed, and the index of the history op it fires before.
//!
//! The counting is the world's own ([`crate::nemesis::count`]): a frame counts when its
//! writer hands it over, whether it is then written (a `send` op) or lost by a fault (the
//! `nemesis` op that lost it); frames on a silently broken connection or a dead update stream
//! never count. So a trigger read off a run fires at the same frame when the run is replayed
//! with one more fault placed after the faults it already has.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::history::{op, process, History};
use crate::models::Point;
use crate::nemesis::{ExchangeCount, FaultKind, FrameTrigger, Sender, Side, Trigger};
use crate::world::Trace;

/// What a place is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Spot {
    /// A frame: who wrote it, which side of its exchange, its method (of the request, for a
    /// response), and the submission it carries when it is a `session/prompt` attempt.
    Frame {
        /// Whose frames the trigger counts.
        by: Sender,
        /// Request (or notification) or response.
        side: Side,
        /// The method.
        method: String,
        /// The submission of a `session/prompt` attempt or its answer.
        submission: Option<u64>,
    },
    /// A protocol point passed by `host`.
    Point {
        /// The point.
        point: Point,
        /// The host that passed it.
        host: &'static str,
    },
    /// The Client accepted a submission.
    Submission(u64),
}

/// One place a fault can land.
#[derive(Debug, Clone, PartialEq)]
pub struct Place {
    /// The trigger that fires here on a replay.
    pub on: Trigger,
    /// What is here.
    pub spot: Spot,
    /// The fault fires after `ops[..at]` of the run it was read from.
    pub at: usize,
    /// The world's state there ([`crate::world::snapshot`]), in a run that took snapshots.
    pub state: Option<u64>,
}

/// Every place of a run, in the order they come.
pub fn places(h: &History, trace: &Trace) -> Vec<Place> {
    let mut out = frames(h, trace);
    let mut nth: BTreeMap<&'static str, u32> = BTreeMap::new();
    for p in &trace.points {
        let n = nth.entry(p.point.as_str()).or_insert(0);
        *n += 1;
        out.push(Place {
            on: Trigger::at_point(p.point, *n),
            spot: Spot::Point {
                point: p.point,
                host: p.host,
            },
            at: p.ops_before,
            state: p.state,
        });
    }
    for a in &trace.accepted {
        out.push(Place {
            on: Trigger::at_submission(a.submission as u32),
            spot: Spot::Submission(a.submission),
            at: a.ops_before,
            state: a.state,
        });
    }
    // In time order; ties keep frames, then points, then submissions.
    out.sort_by_key(|p| p.at);
    out
}

/// The frames of a run, each as the ledger counts it.
fn frames(h: &History, trace: &Trace) -> Vec<Place> {
    let mut out = Vec::new();
    let mut count = ExchangeCount::default();
    let lost_kinds = [
        FaultKind::LoseFrame.as_str(),
        FaultKind::LoseExchange.as_str(),
    ];
    for o in &h.ops {
        let v = &o.value;
        if o.process == process::CLIENT && o.f == op::ATTEMPT {
            if let (Some(c), Some(s)) = (v["conn"].as_u64(), v["submission"].as_u64()) {
                count.attempt(c, v["id"].to_string(), s as u32);
            }
            continue;
        }
        // A frame handed to a writer: written (`send`) or lost by a fault (its nemesis op).
        let sent = (o.process == process::NET && o.f == op::SEND)
            || (o.process == process::NEMESIS
                && lost_kinds.contains(&o.f.as_str())
                && v["detail"]["frame"].is_object());
        if !sent {
            continue;
        }
        let d = if o.process == process::NET {
            v
        } else {
            &v["detail"]
        };
        let (Some(conn), Some(from)) = (d["conn"].as_u64(), d["from"].as_str()) else {
            continue;
        };
        let frame = &d["frame"];
        let method = frame["method"].as_str();
        let id = frame.get("id").map(Value::to_string);
        let place = |by, side, method: &str, nth, submission| Place {
            on: Trigger::Frame(FrameTrigger {
                side,
                method: method.to_string(),
                nth,
                attempt_of: None,
                by: (by == Sender::Agent).then_some(Sender::Agent),
            }),
            spot: Spot::Frame {
                by,
                side,
                method: method.to_string(),
                submission,
            },
            at: o.index,
            state: trace.frame_states.get(&o.index).copied().flatten(),
        };
        if let Some(x) = count.frame(conn, from, method, id.as_ref()) {
            // A prompt attempt's submission, on both frames of its exchange.
            let sub = x.of.map(|(s, _)| u64::from(s));
            out.push(place(x.by, x.side, &x.method, x.nth, sub));
        }
    }
    out
}
