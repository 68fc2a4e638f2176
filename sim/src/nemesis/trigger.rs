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

/// When a fault fires: a protocol event, never a step number.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Trigger {
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
    /// submission (`nth` is then its attempt number), so the trigger stays on that
    /// submission when others are removed (`acp-chaos shrink` writes it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt_of: Option<u32>,
    /// Which occurrence, 1-based.
    #[serde(default = "one")]
    pub nth: u32,
    /// With `frame`: whose frames are counted (default: the Client's). `agent` counts the
    /// frames an Agent writes with `method` (`frame = "request"`: its `nth` notification or
    /// request of that method) and, for `frame = "response"`, the Client's answer to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<Sender>,
}

fn one() -> u32 {
    1
}
