//! The model Client (spec design) and its mutants.
//!
//! One key per submission, created from the seeded RNG and stored with the pending input in a
//! durable client store before the first attempt is written (C1, C8). Each attempt is its own
//! request id (C4). A late response on a live connection is resent on that connection with the
//! same key; after a lost connection the Client reconnects with backoff, `initialize`s,
//! `session/resume`s and then resends every pending prompt with its key (C6). A transient
//! `-32603` or a `-32002` is retried with the same key; any other error is shown to the user.
//!
//! The `sdk-auto-retry` kind ([`ClientKind::SdkAutoRetry`]) is an SDK that resends by itself on
//! transport failure, by each method's retry class (RULES.md "Retry classes", C9): a keyed
//! prompt with its key, idempotent methods (`session/resume`) as they were; never a duplicating
//! method (`session/new`: the failure goes to the application, which decides to create a
//! session again), never a notification, and never a prompt the application sent without a key
//! whose outcome is unknown (it is shown to the user instead). An error answer means nothing was
//! inserted (A2), so even an unkeyed prompt is resent after one.

mod config;
#[cfg(test)]
mod tests;

use agent_client_protocol_schema::v2::{
    ContentBlock, IdempotencyKey, Implementation, InitializeRequest, NewSessionRequest,
    PromptRequest, ResumeSessionRequest,
};
use agent_client_protocol_schema::ProtocolVersion;
use indexmap::IndexMap;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

use crate::action::{effect, Action, ConnId};
use crate::methods::{self, RetryClass};
use crate::op;
use crate::rpc::{self, code, Frame};

pub use config::{ClientConfig, ClientKind, ClientMutant, KeyScheme};

/// What the driver feeds a Client.
#[derive(Debug, Clone, PartialEq)]
pub enum ClientInput {
    /// The process (re)started; connect.
    Boot,
    /// A connection asked for with [`Action::Connect`] is open.
    Connected(ConnId),
    /// A connection attempt failed or timed out.
    ConnectFailed,
    /// One line arrived.
    Frame(ConnId, String),
    /// The connection ended.
    Disconnected(ConnId),
    /// Remote transport: request `id` on `conn` failed before it was accepted; the logical
    /// connection lives (X5).
    NotAccepted { conn: ConnId, id: Value },
    /// A timer fired.
    Timer(u64),
    /// The user cancels a submission: `$/cancel_request` for its pending attempt (A5).
    Cancel { submission: u64 },
    /// The user presses stop on a session slot: `session/cancel` (A6), which withdraws the
    /// prompts the Client sent there and the Agent has not inserted yet.
    Stop { slot: usize },
    /// The user closes a session slot: `session/close` (A15), which withdraws the prompts the
    /// Client sent there and the Agent has not inserted yet; the next input to the slot resumes
    /// the session first.
    Close { slot: usize },
    /// The user forks session slot `slot` into the new slot `into` (`session/fork`; the fork
    /// inherits the history, never the keys: A9).
    Fork { slot: usize, into: usize },
    /// The user submitted an input (numbered by the workload) to session slot `slot`.
    Submit {
        submission: u64,
        slot: usize,
        text: String,
    },
    /// A raw `session/prompt` probe (the key-validation suite, K2/K3): the Client sends
    /// `line` once, on the first ready connection with slot 0's session active, with `$ID`
    /// replaced by [`RAW_ID_BASE`]` + n` and `$SESSION` by the session id; a line naming
    /// `$INACTIVE_SESSION` instead goes once slot 0's session is closed on a ready connection
    /// (X2). Never resent, never persisted: a probe is not user input.
    Raw { n: u64, line: String },
}

/// JSON-RPC ids of raw probes start here (apart from the Client's counters, C4).
pub const RAW_ID_BASE: u64 = 9000;

/// A sans-IO Client.
///
/// # The effect contract (the Client's side)
///
/// The checkers read these effects of a Client (op names of [`crate::op`], each a JSON object;
/// `conn` and `id` are the request's connection and JSON-RPC id, as written). The user's
/// `submit`, `cancel`, `stop` and `close` are logged by the driver from the workload; the
/// Agent's side is in [`crate::AgentModel`]'s docs, and `docs/effects.md` has both.
///
/// | Effect | Fields | Emit it when | Read by (rules) |
/// |---|---|---|---|
/// | `attempt` | `submission, conn, id, key` | an attempt of a submission is written (`key`: `null` when sent without one) | P1, P2, P3 (which submission an insertion or an answer belongs to), P8 (the keys to look for, A8), P10 (C1 C7 C9), P14 (C2 C3 C5) |
/// | `ack` | `submission, messageId` | the Client holds the submission's `messageId` | P2 (C1 C8; A1 A9 C2 when it is not the submission's message) |
/// | `surface` | `submission, error` | the submission is shown to the user as failed | P2 |
/// | `withdrawn` | `submission, local` | the submission is withdrawn by its own user's cancel, stop or close | P2 (C8) |
/// | `pending-at-end` | `submissions` | the run ends with submissions still held | P2 (liveness: unknown, not lost) |
/// | `sdk-resend` | `method, class` | an SDK resends a request by itself | P10 (C9: never a duplicating method) |
/// | `raw-sent` | `n, conn, id, line` | a raw `session/prompt` probe is written | P5 (K1 K2 K3) |
///
/// The driver also logs `not-accepted` `{conn, id}` for the Client when the remote transport
/// refused a request (X5: P10 counts it as failed). A Client that never emits `attempt`
/// leaves P1 to P3 without submissions and P14 without keys; every Client in the simulator is
/// the model's, which emits them all.
pub trait ClientModel {
    /// Handle one input; push the actions to run, in order.
    ///
    /// Long on purpose: the Client's event dispatch, one arm per input.
    fn handle(&mut self, input: ClientInput, out: &mut Vec<Action>);
    /// [`ClientInput::Frame`]`(conn, line)` from a driver that has already decoded the line:
    /// `decoded` is exactly `serde_json::from_str(&line)` (given only when that succeeded), so
    /// a model may read it instead of parsing the same text again. The default hands the line
    /// to [`ClientModel::handle`] as is.
    fn handle_decoded(
        &mut self,
        conn: ConnId,
        line: String,
        decoded: Value,
        out: &mut Vec<Action>,
    ) {
        let _ = decoded;
        self.handle(ClientInput::Frame(conn, line), out);
    }
    /// Submissions the Client still holds pending (neither acknowledged nor shown to the user).
    fn pending(&self) -> Vec<u64>;
    /// The driver's clock (simulated ms), set before each input.
    fn set_clock(&mut self, now_ms: u64);
    /// Everything this model holds that what it does next can depend on, as one number
    /// ([`crate::digest::of`]): exploration merges two placements of a fault only when every
    /// party's digest (and the rest of the world's state) is equal. Default `None`: unknown,
    /// so exploration never merges a placement in a run with this model, it runs each one.
    fn state_digest(&self) -> Option<u64> {
        None
    }
}

#[derive(Debug, Clone)]
struct PendingInput {
    slot: usize,
    /// `None`: the application sent it without a key (`sdk-auto-retry` only).
    key: Option<String>,
    text: String,
    attempts: u32,
    /// The user asked to cancel it.
    cancel: bool,
    /// It survived a Client restart: an attempt may have been written before it (C1 stores the
    /// input first), so a cancel cannot withdraw it locally (C8).
    recovered: bool,
    /// When the user submitted it (simulated ms).
    at_ms: u64,
}

#[derive(Debug, Clone, PartialEq)]
enum Req {
    Initialize,
    NewSession { slot: usize },
    Resume { slot: usize },
    Fork { slot: usize },
    Close { slot: usize },
    List,
    Prompt { submission: u64 },
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    Init,
    Setup,
    Ready,
}

#[derive(Debug)]
struct Conn {
    id: ConnId,
    next_req: u64,
    phase: Phase,
    /// Session set-up requests still outstanding.
    setting_up: usize,
    reqs: IndexMap<u64, Req>,
}

#[derive(Debug, Clone, Copy)]
enum TimerKind {
    PromptTimeout {
        conn: ConnId,
        req: u64,
    },
    /// `initialize`, `session/new` or `session/resume` unanswered on a live connection (a
    /// remote transport can drop one answer and go on).
    SetupTimeout {
        conn: ConnId,
        req: u64,
    },
    RetrySoon {
        submission: u64,
    },
    /// The user answers the Agent's `session/request_permission` `req` on `conn`.
    PermissionAnswer {
        conn: ConnId,
        req: u64,
    },
}

/// Most session slots a Client keeps (forks add slots).
const SLOTS_MAX: usize = 64;

/// The spec Client.
#[derive(Debug)]
pub struct SpecClient {
    cfg: ClientConfig,
    rng: ChaCha8Rng,
    sessions: Vec<Option<String>>,
    key_counters: Vec<u64>,
    /// Slots made by a fork: the slot they were forked from.
    fork_of: Vec<Option<usize>>,
    /// Slots the user closed on the current connection (resumed before the next prompt).
    closed: Vec<bool>,
    /// The Client lists its sessions once after each start (idempotent, A8 on list results).
    listed: bool,
    /// Closes the user asked for that a lost connection left unanswered (idempotent: sent
    /// again once the new connection is ready).
    reclose: Vec<usize>,
    pending: IndexMap<u64, PendingInput>,
    conn: Option<Conn>,
    backoff_ms: u64,
    next_timer: u64,
    timers: IndexMap<u64, TimerKind>,
    now_ms: u64,
    /// Raw probes waiting for a ready connection.
    raw: Vec<(u64, String)>,
    /// Each slot's newest key: only the `SameKeyNewPrompt` mutant reads it.
    last_key: IndexMap<usize, String>,
}

/// `KeyFromText` mutant: a key derived from the text (FNV-1a), what C5 warns against.
fn text_key(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("text-{h:016x}")
}

impl SpecClient {
    /// Rebuild from the client store's records
    /// (`{"t":"session"|"pending"|"done"|"key-counter", ...}`).
    pub fn recover(cfg: ClientConfig, boot: u32, seed: u64, records: &[Value]) -> Self {
        let n = cfg.sessions.max(1);
        let mut sessions = vec![None; n];
        let mut key_counters = vec![0; n];
        let mut fork_of = vec![None; n];
        let mut pending = IndexMap::new();
        for r in records {
            let slot = r["slot"]
                .as_u64()
                .map(|x| x as usize)
                .filter(|x| *x < SLOTS_MAX)
                .unwrap_or(0);
            if slot >= sessions.len() {
                sessions.resize(slot + 1, None);
                key_counters.resize(slot + 1, 0);
                fork_of.resize(slot + 1, None);
            }
            match r["t"].as_str() {
                Some("fork-slot") => fork_of[slot] = r["from"].as_u64().map(|x| x as usize),
                Some("session") => sessions[slot] = r["id"].as_str().map(str::to_string),
                Some("key-counter") => key_counters[slot] = r["n"].as_u64().unwrap_or(0),
                Some("pending") => {
                    if let Some(s) = r["submission"].as_u64() {
                        let text = r["text"].as_str().unwrap_or_default().to_string();
                        pending.insert(
                            s,
                            PendingInput {
                                slot,
                                key: r["key"].as_str().map(str::to_string),
                                text,
                                // An unkeyed input that survived a restart may have been sent:
                                // its outcome is unknown, so it is never resent (C9).
                                attempts: u32::from(r["key"].is_null()),
                                cancel: false,
                                recovered: true,
                                at_ms: r["at_ms"].as_u64().unwrap_or(0),
                            },
                        );
                    }
                }
                Some("done") => {
                    if let Some(s) = r["submission"].as_u64() {
                        pending.shift_remove(&s);
                    }
                }
                _ => {}
            }
        }
        SpecClient {
            backoff_ms: cfg.backoff_ms_min,
            cfg,
            rng: ChaCha8Rng::seed_from_u64(seed ^ 0xC1 ^ u64::from(boot).wrapping_mul(0x9E37_79B9)),
            closed: vec![false; sessions.len()],
            sessions,
            key_counters,
            fork_of,
            listed: false,
            reclose: Vec::new(),
            pending,
            conn: None,
            next_timer: 0,
            timers: IndexMap::new(),
            now_ms: 0,
            raw: Vec::new(),
            last_key: IndexMap::new(),
        }
    }

    fn new_key(&mut self) -> String {
        // C5: a UUID from the run's seeded RNG (never OS randomness).
        uuid::Builder::from_random_bytes(self.rng.gen())
            .into_uuid()
            .to_string()
    }

    fn timer(&mut self, kind: TimerKind, after_ms: u64, out: &mut Vec<Action>) {
        let id = self.next_timer;
        self.next_timer += 1;
        self.timers.insert(id, kind);
        out.push(Action::Timer { id, after_ms });
    }

    fn send_req(
        &mut self,
        req: Req,
        method: &str,
        params: Value,
        out: &mut Vec<Action>,
    ) -> Option<u64> {
        let c = self.conn.as_mut()?;
        // Mutant: a resend takes the id of the attempt still pending (breaks C4).
        let reused = (self.cfg.mutant == Some(ClientMutant::ReusesIdWhilePending))
            .then(|| c.reqs.iter().find(|(_, r)| **r == req).map(|(id, _)| *id))
            .flatten();
        // C4: counter ids, never reused on a connection.
        let id = reused.unwrap_or_else(|| {
            c.next_req += 1;
            c.next_req
        });
        let conn = c.id;
        // Set-up blocks the prompts behind it; a lost list or close answer blocks nothing.
        let setup = !matches!(req, Req::Prompt { .. } | Req::List | Req::Close { .. });
        c.reqs.insert(id, req);
        out.push(Action::Send {
            conn,
            line: rpc::request(id, method, params),
        });
        if setup {
            self.timer(
                TimerKind::SetupTimeout { conn, req: id },
                self.cfg.prompt_timeout_ms,
                out,
            );
        }
        Some(id)
    }

    fn attempt(&mut self, submission: u64, out: &mut Vec<Action>) {
        self.attempt_in(submission, Phase::Ready, out)
    }

    /// An attempt, if the connection is in `phase` (`Ready`; the mutant
    /// `prompts-before-resume` also sends during set-up).
    fn attempt_in(&mut self, submission: u64, phase: Phase, out: &mut Vec<Action>) {
        if self.conn.as_ref().is_none_or(|c| c.phase != phase) {
            return;
        }
        let fresh =
            (self.cfg.mutant == Some(ClientMutant::NewKeyPerAttempt)).then(|| self.new_key());
        let Some(p) = self.pending.get_mut(&submission) else {
            return;
        };
        let Some(sid) = self.sessions.get(p.slot).cloned().flatten() else {
            return;
        };
        if self.closed[p.slot] {
            // Closed by the user on this connection: resume it first (X2); the prompt follows.
            let slot = p.slot;
            return self.reopen(slot, out);
        }
        if p.attempts >= 2 && self.cfg.mutant == Some(ClientMutant::GivesUpSilently) {
            // Mutant: the input is gone and nobody is told.
            return self.settle(submission, out);
        }
        if p.attempts >= self.cfg.attempts_max {
            // C8: give up visibly, never silently.
            return self.surface(submission, json!({"reason": "too many attempts"}), out);
        }
        let empty = p.attempts > 0 && self.cfg.mutant == Some(ClientMutant::ResendsEmptyPrompt);
        p.attempts += 1;
        let key = fresh.or_else(|| p.key.clone());
        let content = if empty {
            // Mutant: the resend is rebuilt from the cleared input box (breaks A17).
            Vec::new()
        } else {
            vec![ContentBlock::from(p.text.clone())]
        };
        let mut req = PromptRequest::new(sid, content);
        if let Some(k) = &key {
            req = req.idempotency_key(IdempotencyKey::new(k.clone()).expect("uuid keys are valid"));
        }
        let params = serde_json::to_value(req).expect("serializes");
        let conn = self.conn.as_ref().map(|c| c.id).unwrap_or_default();
        if let Some(id) = self.send_req(Req::Prompt { submission }, "session/prompt", params, out) {
            out.push(effect(
                op::ATTEMPT,
                json!({"submission": submission, "conn": conn, "id": id, "key": key}),
            ));
            self.timer(
                TimerKind::PromptTimeout { conn, req: id },
                self.cfg.prompt_timeout_ms,
                out,
            );
            if self.pending.get(&submission).is_some_and(|p| p.cancel) {
                // The user cancelled while no attempt was pending here: resend, then cancel,
                // so the outcome is known (inserted: its messageId; not: -32800).
                out.push(Action::Send {
                    conn,
                    line: rpc::notification("$/cancel_request", json!({"requestId": id})),
                });
            }
        }
    }

    fn stop(&mut self, slot: usize, out: &mut Vec<Action>) {
        let Some(c) = self.conn.as_ref().filter(|c| c.phase == Phase::Ready) else {
            return;
        };
        let Some(sid) = self.sessions.get(slot).cloned().flatten() else {
            return;
        };
        let conn = c.id;
        // Every prompt already sent on this connection is earlier than the cancel (FIFO): the
        // user asked for those to stop, so a -32800 for them is a withdrawal.
        self.withdraw_sent(slot);
        out.push(Action::Send {
            conn,
            line: rpc::notification("session/cancel", json!({"sessionId": sid})),
        });
    }

    fn cancel(&mut self, submission: u64, out: &mut Vec<Action>) {
        let Some(p) = self.pending.get_mut(&submission) else {
            return;
        };
        // Mutant `withdraws-recovered`: an input recovered from before a restart counts as
        // never sent.
        let recovered = p.recovered && self.cfg.mutant != Some(ClientMutant::WithdrawsRecovered);
        if p.attempts == 0 && !recovered {
            // Never sent: nothing can have been inserted.
            self.settle(submission, out);
            return out.push(effect(
                op::WITHDRAWN,
                json!({"submission": submission, "local": true}),
            ));
        }
        p.cancel = true;
        let pending_here = self.conn.as_ref().and_then(|c| {
            c.reqs
                .iter()
                .rev()
                .find(|(_, r)| **r == Req::Prompt { submission })
                .map(|(id, _)| (c.id, *id))
        });
        if let Some((conn, id)) = pending_here {
            out.push(Action::Send {
                conn,
                line: rpc::notification("$/cancel_request", json!({"requestId": id})),
            });
        }
    }

    fn settle(&mut self, submission: u64, out: &mut Vec<Action>) {
        self.pending.shift_remove(&submission);
        if self.cfg.mutant != Some(ClientMutant::VolatilePending) {
            out.push(Action::Persist {
                record: json!({"t": "done", "submission": submission}),
                sync: true,
            });
        }
    }

    fn surface(&mut self, submission: u64, error: Value, out: &mut Vec<Action>) {
        self.settle(submission, out);
        out.push(effect(
            op::SURFACE,
            json!({"submission": submission, "error": error}),
        ));
    }

    /// Long on purpose: one arm per kind of request answered.
    fn response(
        &mut self,
        conn: ConnId,
        id: &Value,
        result: Result<Value, Value>,
        out: &mut Vec<Action>,
    ) {
        let Some(c) = self.conn.as_mut().filter(|c| c.id == conn) else {
            return;
        };
        let Some(req) = id.as_u64().and_then(|i| c.reqs.shift_remove(&i)) else {
            return;
        };
        match (req, result) {
            (Req::Initialize, Ok(_)) => {
                c.phase = Phase::Setup;
                for slot in 0..self.sessions.len() {
                    self.set_up(slot, out);
                }
            }
            (Req::NewSession { slot }, Ok(v)) => {
                let ready = c.phase == Phase::Ready;
                let Some(sid) = v["sessionId"].as_str() else {
                    return;
                };
                self.sessions[slot] = Some(sid.to_string());
                out.push(effect(
                    op::SESSION_KNOWN,
                    json!({"slot": slot, "session": sid}),
                ));
                out.push(Action::Persist {
                    record: json!({"t": "session", "slot": slot, "id": sid}),
                    sync: true,
                });
                if ready {
                    self.attempt_slot(slot, out);
                } else {
                    self.set_up_done(out);
                }
            }
            (Req::Resume { slot }, Ok(_)) if c.phase == Phase::Ready => {
                // Reopened after the user's close: its prompts go out now.
                self.closed[slot] = false;
                self.attempt_slot(slot, out);
            }
            (Req::Resume { slot }, Ok(_)) => {
                self.closed[slot] = false;
                self.set_up_done(out)
            }
            (Req::Fork { slot }, Ok(v)) => {
                let ready = c.phase == Phase::Ready;
                if let Some(sid) = v["sessionId"].as_str() {
                    self.sessions[slot] = Some(sid.to_string());
                    out.push(Action::Persist {
                        record: json!({"t": "session", "slot": slot, "id": sid}),
                        sync: true,
                    });
                }
                if ready {
                    self.attempt_slot(slot, out);
                } else {
                    self.set_up_done(out);
                }
            }
            // A15: `-32002` (not active here) counts as closed too.
            (Req::Close { slot }, r)
                if r.as_ref()
                    .err()
                    .is_none_or(|e| e["code"].as_i64() == Some(code::RESOURCE_NOT_FOUND)) =>
            {
                // A15: nothing more comes for it on this connection.
                self.closed[slot] = true;
                if slot == 0 {
                    // A probe of a session not active here (X2) goes now.
                    self.flush_raw(out);
                }
            }
            (Req::List, Ok(v)) => {
                let n = v["sessions"].as_array().map_or(0, Vec::len);
                out.push(effect(op::LISTED, json!({"sessions": n})));
            }
            (Req::Close { .. }, _) | (Req::List, Err(_)) => {}
            (Req::Fork { slot }, Err(_)) => {
                // The source is gone: the user's fork becomes a fresh session.
                if c.phase != Phase::Ready {
                    c.setting_up = c.setting_up.saturating_sub(1);
                }
                self.fork_of[slot] = None;
                self.set_up(slot, out);
            }
            (Req::Resume { slot }, Err(e)) => {
                let ready = c.phase == Phase::Ready;
                self.closed[slot] = false;
                // The session is gone: its pending inputs are shown to the user (C8).
                self.sessions[slot] = None;
                let lost: Vec<u64> = self
                    .pending
                    .iter()
                    .filter(|(_, p)| p.slot == slot)
                    .map(|(s, _)| *s)
                    .collect();
                for s in lost {
                    self.surface(s, json!({"reason": "session lost", "error": e}), out);
                }
                out.push(Action::Persist {
                    record: json!({"t": "session", "slot": slot, "id": null}),
                    sync: true,
                });
                self.set_up(slot, out);
                if !ready {
                    self.set_up_done(out);
                }
            }
            (Req::Prompt { submission }, Ok(v)) => {
                if self.pending.contains_key(&submission) {
                    let mid = v["messageId"].clone();
                    self.settle(submission, out);
                    out.push(effect(
                        op::ACK,
                        json!({"submission": submission, "messageId": mid}),
                    ));
                }
            }
            (Req::Prompt { submission }, Err(e)) => {
                if !self.pending.contains_key(&submission) {
                    return;
                }
                match rpc::error_code(&e) {
                    Some(code::REQUEST_CANCELLED)
                        if self.pending[&submission].cancel
                            || self.cfg.mutant == Some(ClientMutant::AnyCancelWithdraws) =>
                    {
                        // A later attempt still out arrived after this withdrawal and may have
                        // been inserted (A2 lets it): its answer decides, so wait for it (C8).
                        let answered = id.as_u64().unwrap_or_default();
                        let later_out = self.conn.as_ref().is_some_and(|c| {
                            c.reqs
                                .iter()
                                .any(|(i, r)| *i > answered && *r == Req::Prompt { submission })
                        });
                        if later_out {
                            return;
                        }
                        // Withdrawn by its own user's cancel: nothing was inserted (A5).
                        self.settle(submission, out);
                        out.push(effect(op::WITHDRAWN, json!({"submission": submission})));
                    }
                    // A transient error, or a -32800 the user did not ask for (C8): nothing
                    // was inserted, so resend with the same key.
                    Some(code::INTERNAL_ERROR | code::REQUEST_CANCELLED) => {
                        self.timer(TimerKind::RetrySoon { submission }, 5, out)
                    }
                    Some(code::RESOURCE_NOT_FOUND) => {
                        // Not active on this connection: resume again; pending prompts follow.
                        let slot = self.pending[&submission].slot;
                        if let Some(c) = self.conn.as_mut() {
                            c.phase = Phase::Setup;
                        }
                        self.set_up(slot, out);
                    }
                    _ => self.surface(submission, e, out),
                }
            }
            (_, Err(_)) => {
                // initialize or session/new failed: drop this connection's setup and retry later.
                self.timer(
                    TimerKind::RetrySoon {
                        submission: u64::MAX,
                    },
                    5,
                    out,
                );
            }
        }
    }

    /// `session/new` or `session/resume` for one slot on the current connection.
    fn set_up(&mut self, slot: usize, out: &mut Vec<Action>) {
        let fork_src = self.fork_of[slot].and_then(|src| self.sessions.get(src).cloned().flatten());
        let (req, method, params) = match self.sessions[slot].clone() {
            None if fork_src.is_some() => (
                Req::Fork { slot },
                "session/fork",
                serde_json::to_value(agent_client_protocol_schema::v2::ForkSessionRequest::new(
                    fork_src.expect("checked"),
                    "/work",
                )),
            ),
            None => (
                Req::NewSession { slot },
                "session/new",
                serde_json::to_value(NewSessionRequest::new("/work")),
            ),
            Some(sid) => (
                Req::Resume { slot },
                "session/resume",
                serde_json::to_value(ResumeSessionRequest::new(sid, "/work")),
            ),
        };
        let resume = matches!(req, Req::Resume { .. });
        if self
            .send_req(req, method, params.expect("serializes"), out)
            .is_some()
        {
            if let Some(c) = self.conn.as_mut().filter(|c| c.phase != Phase::Ready) {
                c.setting_up += 1;
            }
            if resume && self.cfg.mutant == Some(ClientMutant::PromptsBeforeResume) {
                // Mutant: the slot's pending prompts follow the resume at once (C6).
                let due: Vec<u64> = self
                    .pending
                    .iter()
                    .filter(|(_, p)| p.slot == slot && p.attempts > 0)
                    .map(|(s, _)| *s)
                    .collect();
                let phase = self.conn.as_ref().map_or(Phase::Ready, |c| c.phase);
                for s in due {
                    self.attempt_in(s, phase, out);
                }
            }
        }
    }

    fn set_up_done(&mut self, out: &mut Vec<Action>) {
        let Some(c) = self.conn.as_mut() else { return };
        c.setting_up = c.setting_up.saturating_sub(1);
        if c.setting_up == 0 {
            self.ready(out);
        }
    }

    /// Send the raw probes if a connection is ready with slot 0's session active on it; a probe
    /// naming `$INACTIVE_SESSION` waits instead for slot 0's session to be closed on a ready
    /// connection (the user's `session/close`; X2).
    fn flush_raw(&mut self, out: &mut Vec<Action>) {
        let (Some(c), Some(Some(sid))) = (self.conn.as_ref(), self.sessions.first()) else {
            return;
        };
        if !matches!(c.phase, Phase::Ready) || self.raw.is_empty() {
            return;
        }
        let conn = c.id;
        let closed = self.closed[0];
        let (due, wait): (Vec<_>, Vec<_>) = std::mem::take(&mut self.raw)
            .into_iter()
            .partition(|(_, l)| l.contains("$INACTIVE_SESSION") == closed);
        self.raw = wait;
        for (n, line) in due {
            let id = RAW_ID_BASE + n;
            let line = line
                .replace("$ID", &id.to_string())
                .replace("$INACTIVE_SESSION", sid)
                .replace("$SESSION", sid);
            out.push(effect(
                op::RAW_SENT,
                json!({"n": n, "conn": conn, "id": id, "line": line}),
            ));
            out.push(Action::Send { conn, line });
        }
    }

    fn ready(&mut self, out: &mut Vec<Action>) {
        if let Some(c) = self.conn.as_mut() {
            c.phase = Phase::Ready;
        }
        self.flush_raw(out);
        self.backoff_ms = self.cfg.backoff_ms_min;
        if !std::mem::replace(&mut self.listed, true) {
            self.send_req(Req::List, "session/list", json!({}), out);
        }
        for slot in std::mem::take(&mut self.reclose) {
            self.close(slot, out);
        }
        // C6: once resumed, resend every pending prompt at once, with its key; C7: one pending
        // for longer than `stale_ms` is shown to the user instead.
        for s in self.pending.keys().copied().collect::<Vec<_>>() {
            let age = self.now_ms.saturating_sub(self.pending[&s].at_ms);
            let p = &self.pending[&s];
            let stale = self.cfg.stale_ms > 0 && age > self.cfg.stale_ms;
            if stale && self.cfg.mutant != Some(ClientMutant::ResendsStale) {
                self.surface(s, json!({"reason": "stale", "age_ms": age}), out);
            } else if p.attempts > 0 && self.cfg.mutant == Some(ClientMutant::ResumeOnly) {
                // Mutant: whatever was sent is assumed to be in the replay; nobody is told.
                out.push(effect(op::ASSUMED_IN_REPLAY, json!({"submission": s})));
                self.settle(s, out);
            } else if p.key.is_none()
                && p.attempts > 0
                && self.cfg.mutant == Some(ClientMutant::ResendsUnkeyed)
            {
                // Mutant: resent as is, without a key (C9).
                out.push(effect(op::SDK_RESEND,
                    json!({"submission": s, "method": "session/prompt", "class": methods::class_of("session/prompt").as_str(), "key": null}),
                ));
                self.attempt(s, out);
            } else if p.key.is_none() && p.attempts > 0 {
                // C9: sent without a key and its outcome is unknown: a resend could insert it
                // twice, so the user decides.
                out.push(effect(op::NOT_RESENT,
                    json!({"submission": s, "method": "session/prompt", "class": methods::class_of("session/prompt").as_str(), "why": "no key"}),
                ));
                self.surface(
                    s,
                    json!({"reason": "outcome unknown, sent without a key"}),
                    out,
                );
            } else {
                self.attempt(s, out);
            }
        }
    }

    /// `sdk-auto-retry`: what the SDK does with each request the ended connection left
    /// unanswered, by retry class. Keyed prompts and idempotent set-up are sent again after
    /// the reconnect (by [`Self::ready`] and the set-up); `session/new` is not: the failure
    /// goes to the application.
    fn sdk_retry_decisions(&mut self, c: &Conn, out: &mut Vec<Action>) {
        for r in c.reqs.values() {
            let method = match r {
                Req::Initialize => "initialize",
                Req::Resume { .. } => "session/resume",
                Req::NewSession { .. } => "session/new",
                Req::Fork { .. } => "session/fork",
                Req::Close { .. } => "session/close",
                Req::List => "session/list",
                Req::Prompt { .. } => "session/prompt",
            };
            let class = methods::class_of(method);
            let resent = match (class, r) {
                (RetryClass::Idempotent, _) => true,
                (RetryClass::Keyed, Req::Prompt { submission }) => {
                    let keyed = self
                        .pending
                        .get(submission)
                        .is_some_and(|p| p.key.is_some());
                    if !keyed && self.cfg.mutant == Some(ClientMutant::ResendsUnkeyed) {
                        // Logged by `ready` when it resends.
                        continue;
                    }
                    keyed
                }
                _ => false,
            };
            let f = if resent { "sdk-resend" } else { "not-resent" };
            out.push(effect(
                f,
                json!({"method": method, "class": class.as_str()}),
            ));
            if let Req::NewSession { slot } = r {
                // The application decides to create the session again (a new request, not a
                // resend: the lost one may have created a session nobody uses).
                out.push(effect(op::APP_NEW_SESSION, json!({"slot": slot})));
            }
        }
    }

    /// X5: a request that failed before it was accepted reached nobody: send it again on the
    /// same connection (a prompt as a new attempt with its key, C1/C4).
    fn not_accepted(&mut self, conn: ConnId, id: &Value, out: &mut Vec<Action>) {
        let Some(c) = self.conn.as_mut().filter(|c| c.id == conn) else {
            return;
        };
        let Some(req) = id.as_u64().and_then(|i| c.reqs.shift_remove(&i)) else {
            return;
        };
        out.push(effect(
            op::RESEND_NOT_ACCEPTED,
            json!({"conn": conn, "id": id}),
        ));
        match req {
            Req::Prompt { submission } => self.attempt(submission, out),
            Req::Initialize => {
                let init = InitializeRequest::new(
                    ProtocolVersion::V2,
                    Implementation::new(
                        format!("acp-chaos-{}-client", self.cfg.kind.as_str()),
                        env!("CARGO_PKG_VERSION"),
                    ),
                );
                let p = serde_json::to_value(init).expect("serializes");
                self.send_req(Req::Initialize, "initialize", p, out);
            }
            Req::NewSession { slot } | Req::Resume { slot } | Req::Fork { slot } => {
                if c.phase != Phase::Ready {
                    c.setting_up = c.setting_up.saturating_sub(1);
                }
                self.set_up(slot, out);
            }
            Req::Close { slot } => self.close(slot, out),
            Req::List => {
                self.send_req(Req::List, "session/list", json!({}), out);
            }
        }
    }

    /// Idempotent requests a lost connection left unanswered go out again on the next one
    /// (prompts and set-up are resent by their own paths).
    fn carry_over(&mut self, c: &Conn) {
        for r in c.reqs.values() {
            match r {
                Req::Close { slot } => self.reclose.push(*slot),
                Req::List => self.listed = false,
                _ => {}
            }
        }
    }

    /// Submissions with a prompt attempt out on the current connection.
    fn prompts_out(&self) -> Vec<u64> {
        self.conn
            .as_ref()
            .map(|c| {
                c.reqs
                    .values()
                    .filter_map(|r| match r {
                        Req::Prompt { submission } => Some(*submission),
                        _ => None,
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The user's stop or close withdraws the prompts of `slot` already sent on this connection
    /// (all earlier than it, FIFO): a `-32800` for them is a withdrawal, not a failure.
    fn withdraw_sent(&mut self, slot: usize) {
        let sent: Vec<u64> = self.prompts_out();
        for s in sent {
            if let Some(p) = self.pending.get_mut(&s).filter(|p| p.slot == slot) {
                p.cancel = true;
            }
        }
    }

    /// Send the pending prompts of `slot` that have no attempt out on this connection.
    fn attempt_slot(&mut self, slot: usize, out: &mut Vec<Action>) {
        let out_here: Vec<u64> = self.prompts_out();
        let todo: Vec<u64> = self
            .pending
            .iter()
            .filter(|(s, p)| p.slot == slot && !out_here.contains(s))
            .map(|(s, _)| *s)
            .collect();
        for s in todo {
            self.attempt(s, out);
        }
    }

    /// Resume a slot the user closed (once: prompts queue behind it).
    fn reopen(&mut self, slot: usize, out: &mut Vec<Action>) {
        let resuming = self
            .conn
            .as_ref()
            .is_some_and(|c| c.reqs.values().any(|r| *r == Req::Resume { slot }));
        if resuming {
            return;
        }
        if let Some(sid) = self.sessions[slot].clone() {
            let p = ResumeSessionRequest::new(sid, "/work");
            let p = serde_json::to_value(p).expect("serializes");
            self.send_req(Req::Resume { slot }, "session/resume", p, out);
        }
    }

    fn ensure_slot(&mut self, slot: usize) {
        if slot >= self.sessions.len() && slot < SLOTS_MAX {
            self.sessions.resize(slot + 1, None);
            self.key_counters.resize(slot + 1, 0);
            self.fork_of.resize(slot + 1, None);
            self.closed.resize(slot + 1, false);
        }
    }

    fn close(&mut self, slot: usize, out: &mut Vec<Action>) {
        if self.conn.as_ref().is_none_or(|c| c.phase != Phase::Ready) {
            return;
        }
        let Some(sid) = self.sessions.get(slot).cloned().flatten() else {
            return;
        };
        if self.closed[slot] {
            return;
        }
        // Prompts already sent there are withdrawn by the user's close, as by a stop.
        self.withdraw_sent(slot);
        let p = json!({ "sessionId": sid });
        self.send_req(Req::Close { slot }, "session/close", p, out);
    }

    fn fork(&mut self, slot: usize, into: usize, out: &mut Vec<Action>) {
        if into >= SLOTS_MAX || slot >= self.sessions.len() {
            return;
        }
        self.ensure_slot(into);
        if self.sessions[into].is_some() || self.fork_of[into].is_some() {
            return;
        }
        self.fork_of[into] = Some(slot);
        out.push(Action::Persist {
            record: json!({"t": "fork-slot", "slot": into, "from": slot}),
            sync: true,
        });
        // Before `initialize` is answered the set-up covers every slot; after it, this one
        // is set up now (also mid set-up, which already listed the slots it knew).
        if self.conn.as_ref().is_some_and(|c| c.phase != Phase::Init) {
            self.set_up(into, out);
        }
    }

    /// Set-up failed or went unanswered: close this connection and start over on a new one.
    fn give_up_connection(&mut self, out: &mut Vec<Action>) {
        if let Some(c) = self.conn.take() {
            out.push(effect(op::GIVE_UP_CONNECTION, json!({"conn": c.id})));
            self.carry_over(&c);
            if self.cfg.kind == ClientKind::SdkAutoRetry {
                self.sdk_retry_decisions(&c, out);
            }
            out.push(Action::Close { conn: c.id });
        }
        self.reconnect(out);
    }

    fn reconnect(&mut self, out: &mut Vec<Action>) {
        let jitter = self.rng.gen_range(0..=self.backoff_ms / 2);
        out.push(Action::Connect {
            after_ms: self.backoff_ms + jitter,
            tag: 0,
        });
        self.backoff_ms = (self.backoff_ms * 2).min(self.cfg.backoff_ms_max);
    }

    /// One line read on `conn`, decoded ([`rpc::parse`], or the driver's value through
    /// [`ClientModel::handle_decoded`]).
    fn frame(
        &mut self,
        conn: ConnId,
        parsed: Result<Frame, rpc::ParseError>,
        out: &mut Vec<Action>,
    ) {
        match parsed {
            // The answer to a raw probe, or to a frame that was not valid JSON (id
            // null): the checkers read it from the wire; the Client has nothing to do.
            Ok(Frame::Response { id, .. })
                if id.is_null() || id.as_u64().is_some_and(|i| i >= RAW_ID_BASE) => {}
            Ok(Frame::Response { id, result }) => self.response(conn, &id, result, out),
            Ok(Frame::Request { id, method, .. }) => {
                // The user approves tool calls (after `permission_ms`); every Agent
                // request gets one answer.
                let asked = method == "session/request_permission";
                match id.as_u64() {
                    Some(req) if asked && self.cfg.permission_ms > 0 => self.timer(
                        TimerKind::PermissionAnswer { conn, req },
                        self.cfg.permission_ms,
                        out,
                    ),
                    _ if asked => out.push(Action::Send {
                        conn,
                        line: permission_allowed(&id),
                    }),
                    _ => out.push(Action::Send {
                        conn,
                        line: rpc::err(&id, code::METHOD_NOT_FOUND, "Method not found", None),
                    }),
                }
            }
            // A6: the Agent withdrew a question the user has not answered yet: close
            // it, and answer it with the `cancelled` outcome (the schema's
            // `RequestPermissionOutcome::Cancelled`).
            Ok(Frame::Notification { method, params }) if method == "$/cancel_request" => {
                let asked = |k: &TimerKind| {
                    matches!(k, TimerKind::PermissionAnswer { conn: c, req }
                        if *c == conn && params["requestId"].as_u64() == Some(*req))
                };
                if self.timers.values().any(asked) {
                    self.timers.retain(|_, k| !asked(k));
                    let line = rpc::ok(
                        &params["requestId"],
                        json!({"outcome": {"outcome": "cancelled"}}),
                    );
                    out.push(Action::Send { conn, line });
                }
            }
            // Updates are shown; `$/cancel_request` for a permission we already
            // answered is ignored.
            _ => {}
        }
    }
}

impl ClientModel for SpecClient {
    fn handle_decoded(
        &mut self,
        conn: ConnId,
        line: String,
        decoded: Value,
        out: &mut Vec<Action>,
    ) {
        let _ = line;
        self.frame(conn, Ok(rpc::decode(decoded)), out);
    }

    // `handle_decoded` skips `handle`: anything that must run before every input would have
    // to run in both (nothing does today). Long on purpose: the Client's dispatch, one arm per
    // input.
    fn handle(&mut self, input: ClientInput, out: &mut Vec<Action>) {
        match input {
            ClientInput::Boot => out.push(Action::Connect {
                after_ms: 0,
                tag: 0,
            }),
            ClientInput::Connected(id) => {
                self.closed.iter_mut().for_each(|c| *c = false);
                self.conn = Some(Conn {
                    id,
                    next_req: 0,
                    phase: Phase::Init,
                    setting_up: 0,
                    reqs: IndexMap::new(),
                });
                let init = InitializeRequest::new(
                    ProtocolVersion::V2,
                    Implementation::new(
                        format!("acp-chaos-{}-client", self.cfg.kind.as_str()),
                        env!("CARGO_PKG_VERSION"),
                    ),
                );
                let p = serde_json::to_value(init).expect("serializes");
                self.send_req(Req::Initialize, "initialize", p, out);
            }
            ClientInput::ConnectFailed => self.reconnect(out),
            ClientInput::NotAccepted { conn, id } => self.not_accepted(conn, &id, out),
            ClientInput::Disconnected(id) => {
                if self.conn.as_ref().is_some_and(|c| c.id == id) {
                    let c = self.conn.take().expect("checked");
                    self.carry_over(&c);
                    if self.cfg.kind == ClientKind::SdkAutoRetry {
                        self.sdk_retry_decisions(&c, out);
                    }
                    self.reconnect(out);
                }
            }
            ClientInput::Frame(conn, line) => self.frame(conn, rpc::parse(&line), out),
            ClientInput::Timer(t) => match self.timers.shift_remove(&t) {
                Some(TimerKind::PromptTimeout { conn, req }) => {
                    let live = self.conn.as_ref().filter(|c| c.id == conn);
                    if let Some(Req::Prompt { submission }) =
                        live.and_then(|c| c.reqs.get(&req)).cloned()
                    {
                        // Late on a live connection: resend on it with the same key (an
                        // unkeyed prompt is never resent: it waits for its answer or the end of
                        // the connection, C9).
                        let slot = self
                            .pending
                            .get(&submission)
                            .map(|p| (p.slot, p.key.is_some()));
                        if let Some((_, false)) = slot {
                            // C9: no key and no answer in time: the outcome is unknown and a
                            // resend could insert it twice, so the user decides (C8).
                            out.push(effect(op::NOT_RESENT,
                                json!({"submission": submission, "method": "session/prompt", "class": methods::class_of("session/prompt").as_str(), "why": "no key"}),
                            ));
                            self.surface(
                                submission,
                                json!({"reason": "outcome unknown, sent without a key"}),
                                out,
                            );
                        }
                        if let Some((slot, true)) = slot {
                            if self.closed[slot] {
                                // Its session was closed meanwhile: the resend follows the
                                // resume, so this attempt stops counting as out (a late answer
                                // is matched by key on the resend).
                                if let Some(c) = self.conn.as_mut() {
                                    c.reqs.shift_remove(&req);
                                }
                            }
                            self.attempt(submission, out);
                        }
                    }
                }
                Some(TimerKind::SetupTimeout { conn, req }) => {
                    let late = self
                        .conn
                        .as_ref()
                        .is_some_and(|c| c.id == conn && c.reqs.contains_key(&req));
                    if late {
                        self.give_up_connection(out);
                    }
                }
                Some(TimerKind::RetrySoon { submission }) if submission == u64::MAX => {
                    self.give_up_connection(out);
                }
                Some(TimerKind::RetrySoon { submission }) => self.attempt(submission, out),
                Some(TimerKind::PermissionAnswer { conn, req })
                    if self.conn.as_ref().is_some_and(|c| c.id == conn) =>
                {
                    let line = permission_allowed(&Value::from(req));
                    out.push(Action::Send { conn, line });
                }
                // The connection it was asked on ended: that question is gone with it.
                Some(TimerKind::PermissionAnswer { .. }) => {}
                None => {}
            },
            ClientInput::Cancel { submission } => self.cancel(submission, out),
            ClientInput::Stop { slot } => self.stop(slot, out),
            ClientInput::Close { slot } => self.close(slot, out),
            ClientInput::Fork { slot, into } => self.fork(slot, into, out),
            ClientInput::Raw { n, line } => {
                self.raw.push((n, line));
                self.flush_raw(out);
            }
            ClientInput::Submit {
                submission,
                slot,
                text,
            } => {
                // C1: the key is made at submission and stored before the first attempt.
                self.ensure_slot(slot);
                let slot = slot.min(self.sessions.len() - 1);
                let unkeyed = self.cfg.kind == ClientKind::SdkAutoRetry
                    && self.rng.gen_bool(self.cfg.unkeyed_rate.clamp(0.0, 1.0));
                let key = match self.cfg.keys {
                    _ if unkeyed => None,
                    KeyScheme::Uuid => Some(self.new_key()),
                    KeyScheme::SessionCounter => {
                        self.key_counters[slot] += 1;
                        let n = self.key_counters[slot];
                        out.push(Action::Persist {
                            record: json!({"t": "key-counter", "slot": slot, "n": n}),
                            sync: true,
                        });
                        Some(format!("k{n}"))
                    }
                };
                let key = match (self.cfg.mutant, &key, self.last_key.get(&slot)) {
                    (Some(ClientMutant::KeyFromText), Some(_), _) => Some(text_key(&text)),
                    (Some(ClientMutant::SameKeyNewPrompt), Some(_), Some(k)) => Some(k.clone()),
                    _ => key,
                };
                if let Some(k) = &key {
                    self.last_key.insert(slot, k.clone());
                }
                if self.cfg.mutant != Some(ClientMutant::VolatilePending) {
                    out.push(Action::Persist {
                        record: json!({"t": "pending", "submission": submission, "slot": slot, "key": key, "text": text, "at_ms": self.now_ms}),
                        sync: true,
                    });
                }
                self.pending.insert(
                    submission,
                    PendingInput {
                        slot,
                        key,
                        text,
                        attempts: 0,
                        cancel: false,
                        recovered: false,
                        at_ms: self.now_ms,
                    },
                );
                self.attempt(submission, out);
            }
        }
    }

    fn set_clock(&mut self, now_ms: u64) {
        self.now_ms = now_ms;
    }

    fn pending(&self) -> Vec<u64> {
        self.pending.keys().copied().collect()
    }

    fn state_digest(&self) -> Option<u64> {
        Some(crate::digest::of(self, &[self.rng.get_word_pos()]))
    }
}

/// The user's approval of a tool call: the answer to `session/request_permission` `id`.
fn permission_allowed(id: &Value) -> String {
    rpc::ok(
        id,
        json!({"outcome": {"outcome": "selected", "optionId": "allow"}}),
    )
}
