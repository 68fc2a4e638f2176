//! When a fault fires: a protocol event (a frame of a method, a protocol point the Agent
//! reaches, a submission the Client accepts) or a simulated time, never a step number.

use acp_chaos_models::Point;
use serde::{Deserialize, Serialize};

/// Which frame of an exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    /// The request (Client → Agent).
    Request,
    /// The response to it (Agent → Client).
    Response,
}

/// Who writes the frames a frame trigger counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Sender {
    /// The user's Client: its requests and notifications, and the responses to its requests
    /// (what a frame trigger without `by` counts).
    Client,
    /// The Agent (any node of a cluster): its notifications (`session/update`) and requests
    /// (`session/request_permission`), and the Client's responses to its requests.
    Agent,
}

/// When a fault fires: one protocol event or a simulated time, never a step number.
///
/// In a file it is the table `on` with exactly one of `frame` + `method`, `point`,
/// `submission` or `at_ms` ([`TriggerFields`] is that table; `try_from` refuses any other
/// shape while the file is read, naming the field). It writes back the same table, field for
/// field, so a plan read and written again is the same text and hashes the same.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "TriggerFields", into = "TriggerFields")]
pub enum Trigger {
    /// The `nth` frame of an exchange ([`FrameTrigger`]).
    Frame(FrameTrigger),
    /// The Agent reaches `point` for the `nth` time.
    Point {
        /// The protocol point.
        point: Point,
        /// Which time it is reached, 1-based.
        nth: u32,
    },
    /// Right after the Client accepts the user's `submission`-numbered input (1-based).
    Submission {
        /// The submission's number.
        submission: u32,
        /// Counts nothing; kept as the plan gave it (a drawn trigger has 0) so the plan's text
        /// and its history's hash stay the same.
        nth: u32,
    },
    /// A simulated time (swarm schedules use it).
    At {
        /// Simulated ms from the run's start.
        at_ms: u64,
        /// Counts nothing; kept as for [`Trigger::Submission`].
        nth: u32,
    },
}

/// A frame trigger: the `nth` `method` frame on the `side` of an exchange, among the frames
/// `by` writes (the count: [`super::count`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameTrigger {
    /// The request, or the response to it.
    pub side: Side,
    /// JSON-RPC method, e.g. `session/prompt`.
    pub method: String,
    /// Which frame of that method, 1-based (with `attempt_of`: which attempt).
    pub nth: u32,
    /// With `method = "session/prompt"`: count only the attempts of this submission, so the
    /// trigger stays on that submission when others are removed (`acp-chaos shrink` writes
    /// it).
    pub attempt_of: Option<u32>,
    /// Whose frames are counted: `None` is the Client's, as `Some(Client)` is, but writes no
    /// `by` field. `agent` counts the frames an Agent writes with `method` (`frame =
    /// "request"`: its `nth` notification or request of that method) and, for `frame =
    /// "response"`, the Client's answer to it.
    pub by: Option<Sender>,
}

impl Trigger {
    /// The `nth` `method` frame on `side` of the Client's exchanges.
    pub fn at_frame(side: Side, method: &str, nth: u32) -> Trigger {
        Trigger::Frame(FrameTrigger {
            side,
            method: method.to_string(),
            nth,
            attempt_of: None,
            by: None,
        })
    }

    /// The `nth` time the Agent reaches `point`.
    pub fn at_point(point: Point, nth: u32) -> Trigger {
        Trigger::Point { point, nth }
    }

    /// Right after the Client accepts submission `submission` (as drawn: `nth` 0).
    pub fn at_submission(submission: u32) -> Trigger {
        Trigger::Submission { submission, nth: 0 }
    }

    /// At simulated time `at_ms` (as drawn: `nth` 0).
    pub fn at_time(at_ms: u64) -> Trigger {
        Trigger::At { at_ms, nth: 0 }
    }

    /// The frame trigger, if it is one.
    pub fn frame(&self) -> Option<&FrameTrigger> {
        match self {
            Trigger::Frame(f) => Some(f),
            _ => None,
        }
    }

    /// The protocol point, if it is a point trigger.
    pub fn point(&self) -> Option<Point> {
        match self {
            Trigger::Point { point, .. } => Some(*point),
            _ => None,
        }
    }

    /// The submission, if it is a submission trigger.
    pub fn submission(&self) -> Option<u32> {
        match self {
            Trigger::Submission { submission, .. } => Some(*submission),
            _ => None,
        }
    }

    /// The time, if it is a time trigger.
    pub fn at_ms(&self) -> Option<u64> {
        match self {
            Trigger::At { at_ms, .. } => Some(*at_ms),
            _ => None,
        }
    }

    /// The `nth` the trigger carries (it counts only for a frame or a point).
    pub fn nth(&self) -> u32 {
        match self {
            Trigger::Frame(f) => f.nth,
            Trigger::Point { nth, .. }
            | Trigger::Submission { nth, .. }
            | Trigger::At { nth, .. } => *nth,
        }
    }
}

/// The table `on` as a file writes it: every field optional, in the order plans have always
/// written them (`attempt_of` and `by` only when given).
#[derive(Debug, Clone, Serialize, Deserialize)]
// A type error says what a trigger is, not this table's Rust name.
#[serde(
    deny_unknown_fields,
    expecting = "a trigger table: frame + method, point, submission or at_ms"
)]
pub struct TriggerFields {
    /// With `method`: the `nth` request of that method, or the response to it.
    pub frame: Option<Side>,
    /// JSON-RPC method, e.g. `session/prompt`.
    pub method: Option<String>,
    /// With `point`: the Agent reaches that protocol point for the `nth` time.
    pub point: Option<Point>,
    /// Right after the user's `nth`-numbered submission is accepted by the Client.
    pub submission: Option<u32>,
    /// A simulated time (swarm schedules use it).
    pub at_ms: Option<u64>,
    /// With `frame` and `method = "session/prompt"`: count only the attempts of this
    /// submission (`nth` is then its attempt number).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt_of: Option<u32>,
    /// Which occurrence, 1-based.
    #[serde(default = "one")]
    pub nth: u32,
    /// With `frame`: whose frames are counted (default: the Client's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<Sender>,
}

fn one() -> u32 {
    1
}

impl TryFrom<TriggerFields> for Trigger {
    type Error = String;

    /// Errors (as "field `on...`: reason"): not exactly one of `frame` + `method`, `point`,
    /// `submission`, `at_ms`; `frame` without `method` or the other way; `attempt_of` or `by`
    /// without a frame.
    fn try_from(t: TriggerFields) -> Result<Trigger, String> {
        let frame = t.frame.is_some() && t.method.is_some();
        let given = [
            frame,
            t.point.is_some(),
            t.submission.is_some(),
            t.at_ms.is_some(),
        ];
        // Exactly one, so the last arm below is `at_ms`.
        if given.iter().filter(|x| **x).count() != 1 {
            return Err(
                "field `on`: give exactly one of {frame + method}, point, submission, at_ms".into(),
            );
        }
        if t.frame.is_some() != t.method.is_some() {
            return Err("field `on`: `frame` and `method` go together".into());
        }
        if t.attempt_of.is_some() && !frame {
            return Err(
                "field `on.attempt_of`: goes with `frame` and `method = \"session/prompt\"`".into(),
            );
        }
        if t.by.is_some() && !frame {
            return Err("field `on.by`: goes with `frame` and `method`".into());
        }
        let nth = t.nth;
        if let (Some(side), Some(method)) = (t.frame, t.method) {
            return Ok(Trigger::Frame(FrameTrigger {
                side,
                method,
                nth,
                attempt_of: t.attempt_of,
                by: t.by,
            }));
        }
        Ok(match (t.point, t.submission, t.at_ms) {
            (Some(point), ..) => Trigger::Point { point, nth },
            (_, Some(submission), _) => Trigger::Submission { submission, nth },
            (.., at_ms) => Trigger::At {
                at_ms: at_ms.unwrap_or_default(),
                nth,
            },
        })
    }
}

impl From<Trigger> for TriggerFields {
    fn from(t: Trigger) -> TriggerFields {
        let mut out = TriggerFields {
            frame: None,
            method: None,
            point: None,
            submission: None,
            at_ms: None,
            attempt_of: None,
            nth: t.nth(),
            by: None,
        };
        match t {
            Trigger::Frame(f) => {
                out.frame = Some(f.side);
                out.method = Some(f.method);
                out.attempt_of = f.attempt_of;
                out.by = f.by;
            }
            Trigger::Point { point, .. } => out.point = Some(point),
            Trigger::Submission { submission, .. } => out.submission = Some(submission),
            Trigger::At { at_ms, .. } => out.at_ms = Some(at_ms),
        }
        out
    }
}
