//! Where a fault can land in a run: every frame of every method in both directions (the
//! Client's requests and notifications and the answers to them, the Agent's notifications and
//! requests and the Client's answers), every protocol point a host passed, every submission
//! the Client accepted. Each [`Place`] carries the trigger that fires there when the run is
//! replayed, and the index of the history op it fires before.
//!
//! The counting matches the world's ledger exactly (`world::ledger`): a frame counts when its
//! writer hands it over, whether it is then written (a `send` op) or lost by a fault (the
//! `nemesis` op that lost it); frames on a silently broken connection or a dead update stream
//! never count. So a trigger read off a run fires at the same frame when the run is replayed
//! with one more fault placed after the faults it already has.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::history::{is_agent_host, op, process, History};
use crate::models::Point;
use crate::nemesis::{FaultKind, Sender, Side, Trigger};
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
            on: Trigger {
                point: Some(p.point),
                nth: *n,
                ..Trigger::default()
            },
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
            on: Trigger {
                submission: Some(a.submission as u32),
                ..Trigger::default()
            },
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
    let mut client_counts: BTreeMap<String, u32> = BTreeMap::new();
    let mut agent_counts: BTreeMap<String, u32> = BTreeMap::new();
    // (conn, id) → (method, nth, submission) of every request of either side.
    let mut client_reqs: BTreeMap<(u64, String), (String, u32, Option<u64>)> = BTreeMap::new();
    let mut agent_reqs: BTreeMap<(u64, String), (String, u32)> = BTreeMap::new();
    let mut attempts: BTreeMap<(u64, String), u64> = BTreeMap::new();
    let lost_kinds = [
        FaultKind::LoseFrame.as_str(),
        FaultKind::LoseExchange.as_str(),
    ];
    for o in &h.ops {
        let v = &o.value;
        if o.process == process::CLIENT && o.f == op::ATTEMPT {
            if let (Some(c), Some(s)) = (v["conn"].as_u64(), v["submission"].as_u64()) {
                attempts.insert((c, v["id"].to_string()), s);
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
            on: Trigger {
                frame: Some(side),
                method: Some(method.to_string()),
                nth,
                by: (by == Sender::Agent).then_some(Sender::Agent),
                ..Trigger::default()
            },
            spot: Spot::Frame {
                by,
                side,
                method: method.to_string(),
                submission,
            },
            at: o.index,
            state: trace.frame_states.get(&o.index).copied().flatten(),
        };
        match (method, &id) {
            (Some(m), _) if from == "client" => {
                let n = client_counts.entry(m.to_string()).or_insert(0);
                *n += 1;
                let sub = id
                    .as_ref()
                    .and_then(|i| attempts.get(&(conn, i.clone())).copied())
                    .filter(|_| m == "session/prompt");
                if let Some(i) = &id {
                    client_reqs.insert((conn, i.clone()), (m.to_string(), *n, sub));
                }
                out.push(place(Sender::Client, Side::Request, m, *n, sub));
            }
            (None, Some(i)) if from != "client" => {
                if let Some((m, n, sub)) = client_reqs.get(&(conn, i.clone())) {
                    out.push(place(Sender::Client, Side::Response, m, *n, *sub));
                }
            }
            (Some(m), _) if is_agent_host(from) => {
                let n = agent_counts.entry(m.to_string()).or_insert(0);
                *n += 1;
                if let Some(i) = &id {
                    agent_reqs.insert((conn, i.clone()), (m.to_string(), *n));
                }
                out.push(place(Sender::Agent, Side::Request, m, *n, None));
            }
            (None, Some(i)) if from == "client" => {
                if let Some((m, n)) = agent_reqs.get(&(conn, i.clone())) {
                    out.push(place(Sender::Agent, Side::Response, m, *n, None));
                }
            }
            _ => {}
        }
    }
    out
}
