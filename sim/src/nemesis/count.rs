//! Counting exchanges: which frame a frame trigger names. A frame trigger fires on "the nth
//! `method` frame of `side`, written by `by`" ([`super::Trigger`]); this is the one place that
//! numbers frames that way. The world's ledger counts each frame as it is written and fires
//! the trigger that matches; exploration counts the frames of a finished run from its history
//! to place triggers on them (`explore/places.rs`). Both feed the same frames in the same
//! order, so a trigger read off a run fires at the same frame when the run is replayed.
//!
//! The count: a frame with a method is the next of that method by its writer (the Client's
//! requests and notifications; an Agent host's notifications and requests); a response is the
//! frame of the request it answers (same connection, same id), with that request's number.
//! A `session/prompt` request the Client wrote for a submission is also its next attempt
//! ([`AttemptOf`]), for triggers with `attempt_of`.

use indexmap::IndexMap;

use super::trigger::{FrameTrigger, Sender, Side};

/// A prompt attempt's submission and its attempt number (1-based).
pub type AttemptOf = (u32, u32);

/// Where one frame stands among the exchanges of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exchange {
    /// The request, or the response to it.
    pub side: Side,
    /// The request's method.
    pub method: String,
    /// The request's number among its writer's frames of that method (1-based).
    pub nth: u32,
    /// A Client `session/prompt` request: its submission and attempt number.
    pub of: Option<AttemptOf>,
    /// Who wrote the request.
    pub by: Sender,
}

/// The counts of one run so far. Connections are numbered as the world numbers them; ids are
/// a frame's `id` as JSON text (`1`, `"a"`).
#[derive(Debug, Default)]
pub struct ExchangeCount {
    /// (conn, request id) → (method, nth, and for a prompt attempt its submission and number).
    requests: IndexMap<(u64, String), (String, u32, Option<AttemptOf>)>,
    /// Frames with a method the Client wrote, per method (requests and notifications).
    client: IndexMap<String, u32>,
    /// Frames with a method an Agent host wrote, per method (notifications and requests).
    agent: IndexMap<String, u32>,
    /// (conn, request id) of each Agent request → (method, nth of that method).
    agent_requests: IndexMap<(u64, String), (String, u32)>,
    /// The Client's attempts: (conn, request id) → submission (from its `attempt` ops).
    attempt_links: IndexMap<(u64, String), u32>,
    /// Submission → prompt requests written for it so far.
    attempts: IndexMap<u32, u32>,
}

impl Exchange {
    /// Whether frame trigger `t` names this exchange: the same side, method and writer, and
    /// its `nth` frame (with `attempt_of`: that submission's `nth` attempt).
    pub fn is(&self, t: &FrameTrigger) -> bool {
        let counted = match t.attempt_of {
            Some(s) => self.of == Some((s, t.nth)),
            None => t.nth == self.nth,
        };
        t.by.unwrap_or(Sender::Client) == self.by
            && t.side == self.side
            && t.method == self.method
            && counted
    }
}

impl ExchangeCount {
    /// The Client's `attempt` op: request `id` on `conn` is an attempt of `submission`.
    pub fn attempt(&mut self, conn: u64, id: String, submission: u32) {
        self.attempt_links.insert((conn, id), submission);
    }

    /// Count one frame written on `conn` by `from` (`client`, `agent`, a node): its `method`
    /// and `id` (JSON text) if it has them. `None`: a frame no trigger counts (a response to a
    /// request this count never saw, a frame from the proxy's or watcher's side).
    pub fn frame(
        &mut self,
        conn: u64,
        from: &str,
        method: Option<&str>,
        id: Option<&String>,
    ) -> Option<Exchange> {
        let exchange = |side, method: &str, nth, of, by| Exchange {
            side,
            method: method.to_string(),
            nth,
            of,
            by,
        };
        match (method, id) {
            (Some(m), Some(id)) if from == "client" => {
                let n = self.client.entry(m.to_string()).or_insert(0);
                *n += 1;
                let nth = *n;
                let of = self
                    .attempt_links
                    .get(&(conn, id.clone()))
                    .copied()
                    .filter(|_| m == "session/prompt")
                    .map(|s| {
                        let k = self.attempts.entry(s).or_insert(0);
                        *k += 1;
                        (s, *k)
                    });
                self.requests
                    .insert((conn, id.clone()), (m.to_string(), nth, of));
                Some(exchange(Side::Request, m, nth, of, Sender::Client))
            }
            // A Client notification (`session/cancel`, `$/cancel_request`).
            (Some(m), None) if from == "client" => {
                let n = self.client.entry(m.to_string()).or_insert(0);
                *n += 1;
                Some(exchange(Side::Request, m, *n, None, Sender::Client))
            }
            (None, Some(id)) if from != "client" => self
                .requests
                .get(&(conn, id.clone()))
                .map(|(m, n, of)| exchange(Side::Response, m, *n, *of, Sender::Client)),
            // The Agent's own notifications and requests, and the Client's answers to them.
            (Some(m), _) if crate::history::is_agent_host(from) => {
                let n = self.agent.entry(m.to_string()).or_insert(0);
                *n += 1;
                let nth = *n;
                if let Some(id) = id {
                    self.agent_requests
                        .insert((conn, id.clone()), (m.to_string(), nth));
                }
                Some(exchange(Side::Request, m, nth, None, Sender::Agent))
            }
            (None, Some(id)) if from == "client" => self
                .agent_requests
                .get(&(conn, id.clone()))
                .map(|(m, n)| exchange(Side::Response, m, *n, None, Sender::Agent)),
            _ => None,
        }
    }
}
