//! The matrix's axes: every method with its retry class, the faults, the Client policies,
//! the outcomes, and what each seed varies.

use std::fmt;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;

use crate::models::methods::{self, Direction, RetryClass};
use crate::models::{Design, DuringTurn, HeldOnDisconnect, WorkOnDisconnect};

/// A method of the matrix (its wire name by [`Method::as_str`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Method {
    /// `initialize`, on a new connection.
    #[serde(rename = "initialize")]
    Initialize,
    /// `session/new`.
    #[serde(rename = "session/new")]
    New,
    /// `session/fork` of the Client's session.
    #[serde(rename = "session/fork")]
    Fork,
    /// `session/prompt`.
    #[serde(rename = "session/prompt")]
    Prompt,
    /// `session/resume` with `replayFrom: start`.
    #[serde(rename = "session/resume")]
    Resume,
    /// `session/close`.
    #[serde(rename = "session/close")]
    Close,
    /// `session/delete`.
    #[serde(rename = "session/delete")]
    Delete,
    /// `session/list`.
    #[serde(rename = "session/list")]
    List,
    /// `session/set_config_option` (`autosave` to true).
    #[serde(rename = "session/set_config_option")]
    SetConfigOption,
    /// `session/status`.
    #[serde(rename = "session/status")]
    Status,
    /// `session/options` of the Client's session.
    #[serde(rename = "session/options")]
    Options,
    /// `session/set_title` of the Client's session.
    #[serde(rename = "session/set_title")]
    SetTitle,
    /// `session/archive` of the Client's session.
    #[serde(rename = "session/archive")]
    Archive,
    /// `session/unarchive` of the Client's session, archived in setup.
    #[serde(rename = "session/unarchive")]
    Unarchive,
    /// `session/cancel` (a notification) while a turn runs.
    #[serde(rename = "session/cancel")]
    Cancel,
    /// `$/cancel_request` (a notification) naming a held prompt.
    #[serde(rename = "$/cancel_request")]
    CancelRequest,
}

impl Method {
    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Method::Initialize => "initialize",
            Method::New => "session/new",
            Method::Fork => "session/fork",
            Method::Prompt => "session/prompt",
            Method::Resume => "session/resume",
            Method::Close => "session/close",
            Method::Delete => "session/delete",
            Method::List => "session/list",
            Method::SetConfigOption => "session/set_config_option",
            Method::Status => "session/status",
            Method::Options => "session/options",
            Method::SetTitle => "session/set_title",
            Method::Archive => "session/archive",
            Method::Unarchive => "session/unarchive",
            Method::Cancel => "session/cancel",
            Method::CancelRequest => "$/cancel_request",
        }
    }

    /// Notifications have no response to lose or wait for.
    pub fn is_notification(self) -> bool {
        matches!(self, Method::Cancel | Method::CancelRequest)
    }

    /// The method by wire name (`session/prompt`) or short name (`prompt`).
    pub fn parse(s: &str) -> Option<Method> {
        METHODS.iter().map(|m| m.method).find(|m| {
            m.as_str() == s
                || m.as_str().strip_prefix("session/") == Some(s)
                || m.as_str().strip_prefix("$/") == Some(s)
        })
    }
}

/// One row of the class table: a method, its class and whether RULES.md infers it.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct MethodClass {
    /// The method.
    pub method: Method,
    /// Its retry class (RULES.md "Retry classes").
    pub class: RetryClass,
    /// True when RULES.md infers the class; false when the proposal states it. Same as the
    /// audit's table (a test keeps them in step).
    pub inferred: bool,
}

/// The methods the matrix runs, in table order, with their classes from the one methods table
/// ([`crate::models::methods`]): every Client→Agent method the models speak (a test keeps them
/// in step; the table's other methods are listed by [`not_run`]).
pub const METHODS: [MethodClass; 16] = [
    mc(Method::Initialize),
    mc(Method::New),
    mc(Method::Fork),
    mc(Method::Prompt),
    mc(Method::Resume),
    mc(Method::Close),
    mc(Method::Delete),
    mc(Method::List),
    mc(Method::SetConfigOption),
    mc(Method::Status),
    mc(Method::Options),
    mc(Method::SetTitle),
    mc(Method::Archive),
    mc(Method::Unarchive),
    mc(Method::Cancel),
    mc(Method::CancelRequest),
];

/// A method of the table the matrix does not run, with its class and why.
#[derive(Debug, Clone, Serialize)]
pub struct NotRun {
    /// The wire name.
    pub method: &'static str,
    /// Which way it goes.
    pub direction: Direction,
    /// Its retry class.
    pub class: RetryClass,
    /// True when RULES.md infers the class.
    pub inferred: bool,
    /// Why it is not run.
    pub why: String,
}

/// Every method of [`crate::models::methods`] (both directions) that is not in [`METHODS`]:
/// not spoken by the models, or sent by the Agent (the matrix's scripted Client only sends).
pub fn not_run() -> Vec<NotRun> {
    methods::all()
        .filter(|(d, m)| {
            *d == Direction::AgentToClient || METHODS.iter().all(|x| x.method.as_str() != m.name)
        })
        .map(|(direction, m)| NotRun {
            method: m.name,
            direction,
            class: m.class,
            inferred: m.inferred,
            why: match m.not_spoken {
                Some(why) => format!("not spoken by the models: {why}"),
                None => "sent by the Agent; the matrix's scripted Client only sends".into(),
            },
        })
        .collect()
}

pub(super) const fn mc(method: Method) -> MethodClass {
    let m = methods::info(method.as_str());
    MethodClass {
        method,
        class: m.class,
        inferred: m.inferred,
    }
}

/// The fault injected into the op (one per run; setup and the Client's next op see none).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fault {
    /// No fault: the control column.
    None,
    /// The op's first request frame is lost; the connection stays up.
    RequestLost,
    /// The Agent's first response to an attempt of the op is lost (requests only).
    ResponseLost,
    /// The op's first frame is delivered twice, back to back (same JSON-RPC id).
    Duplicated,
    /// The op's first frame is delivered again late: after the Client's next op was answered
    /// (a delayed copy overtaken by the Client's resend and next op).
    DuplicatedLate,
    /// The Agent process crashes after the op arrives, before the op's own record is persisted
    /// (in the batch that would answer it); it restarts with `recover` from the durable records.
    CrashBeforeEffect,
    /// The Agent crashes after persisting the op's record (or, with none, after its in-memory
    /// change), before the response is written; restart as above.
    CrashAfterEffect,
    /// Client→Agent frames are lost from the op on (or from just after it) for
    /// [`Variation::partition_ms`]; then the connection drops at both ends and the Client
    /// reconnects (`initialize`, `session/resume`, C6). Agent→Client frames still flow.
    OneWayPartition,
}

impl Fault {
    /// Every fault, in table order.
    pub const ALL: [Fault; 8] = [
        Fault::None,
        Fault::RequestLost,
        Fault::ResponseLost,
        Fault::Duplicated,
        Fault::DuplicatedLate,
        Fault::CrashBeforeEffect,
        Fault::CrashAfterEffect,
        Fault::OneWayPartition,
    ];

    /// The kebab-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Fault::None => "none",
            Fault::RequestLost => "request-lost",
            Fault::ResponseLost => "response-lost",
            Fault::Duplicated => "duplicated",
            Fault::DuplicatedLate => "duplicated-late",
            Fault::CrashBeforeEffect => "crash-before-effect",
            Fault::CrashAfterEffect => "crash-after-effect",
            Fault::OneWayPartition => "one-way-partition",
        }
    }

    /// By kebab-case name.
    pub fn parse(s: &str) -> Option<Fault> {
        Fault::ALL.into_iter().find(|f| f.as_str() == s)
    }

    pub(super) fn is_crash(self) -> bool {
        matches!(self, Fault::CrashBeforeEffect | Fault::CrashAfterEffect)
    }
}

/// What the Client does when an attempt gets no answer (C9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    /// Send the same request again (new id), up to [`super::MAX_ATTEMPTS`] on timeouts and once after
    /// each reconnect. A prompt carries no `idempotencyKey`. For a notification: send it again
    /// when its effect has not shown within the timeout (`session/cancel`: no idle
    /// `stopReason: cancelled`; `$/cancel_request`: the named prompt still unanswered).
    ResendAsIs,
    /// `session/prompt` only: every attempt carries the same `idempotencyKey` (C1); resends as
    /// above. Other methods have no key: n/a.
    ResendWithKey,
    /// Never resend: after the timeout or a lost connection the Client shows the user an error
    /// (a notification is sent once; a prompt carries no key).
    DoNotResend,
}

impl Policy {
    /// Every policy, in table order.
    pub const ALL: [Policy; 3] = [
        Policy::ResendAsIs,
        Policy::ResendWithKey,
        Policy::DoNotResend,
    ];

    /// The kebab-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Policy::ResendAsIs => "resend-as-is",
            Policy::ResendWithKey => "resend-with-key",
            Policy::DoNotResend => "do-not-resend",
        }
    }

    /// By kebab-case name.
    pub fn parse(s: &str) -> Option<Policy> {
        Policy::ALL.into_iter().find(|p| p.as_str() == s)
    }
}

/// Why a (method, fault, policy) cell is not run, if it is not.
pub fn not_applicable(method: Method, fault: Fault, policy: Policy) -> Option<&'static str> {
    if policy == Policy::ResendWithKey && method != Method::Prompt {
        return Some("only session/prompt carries an idempotencyKey");
    }
    if fault == Fault::ResponseLost && method.is_notification() {
        return Some("a notification has no response to lose");
    }
    None
}

/// What the user ends up with after one run, decided in this order:
///
/// 1. `duplicate-effect`: the op's effect happened more than once: two or more sessions created
///    for one `session/new`/`session/fork`, two or more retained user messages for one
///    submission (P1), or a repeat of the op (a resend or a late copy) changed state again after
///    the Client's next op: an `autosave` set back, a session closed again after the Client
///    resumed it or resumed again after it closed it, a later turn cancelled or a later prompt
///    withdrawn (`-32800`) by a repeated cancel.
/// 2. `surfaced-error`: the Client holds an error for the op (an error answer, its own timeout
///    giving up, a connection lost under `do-not-resend`; for a notification: its session lost
///    on reconnect), whether or not the effect happened (C8).
/// 3. `ok`: the effect happened (once) and the Client holds a success (for idempotent methods:
///    the state is as one send leaves it, P10).
/// 4. `silent-drop`: the effect did not happen and the Client has nothing to show the user: a
///    success for a lost effect, or for a notification no sign it was lost (P2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// Effect once, success held.
    Ok,
    /// The user was shown an error.
    SurfacedError,
    /// The effect happened twice (or again after the next op).
    DuplicateEffect,
    /// The effect did not happen, and nothing tells the user.
    SilentDrop,
}

impl Outcome {
    /// Every outcome, in table order.
    pub const ALL: [Outcome; 4] = [
        Outcome::Ok,
        Outcome::SurfacedError,
        Outcome::DuplicateEffect,
        Outcome::SilentDrop,
    ];

    /// The kebab-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::SurfacedError => "surfaced-error",
            Outcome::DuplicateEffect => "duplicate-effect",
            Outcome::SilentDrop => "silent-drop",
        }
    }

    pub(super) fn short(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::SurfacedError => "err",
            Outcome::DuplicateEffect => "dup",
            Outcome::SilentDrop => "drop",
        }
    }
}

/// Everything a seed decides, drawn in this order from `StdRng::seed_from_u64(seed)` (the same
/// draws for every cell, so cells of one seed compare), then adjusted per method where marked.
#[derive(Debug, Clone, Serialize)]
pub struct Variation {
    /// Agent design (`in-memory` loses everything on a crash: its declared `process` retention).
    pub design: Design,
    /// O1: held prompts when their connection ends.
    pub o1: HeldOnDisconnect,
    /// O2: foreground work when its connection ends.
    pub o2: WorkOnDisconnect,
    /// O4: prompts during a turn (forced `hold` for `$/cancel_request`: it needs a held prompt).
    pub o4: DuringTurn,
    /// Whether a turn runs when the op is sent (forced on for `session/cancel` and
    /// `$/cancel_request`, off for `session/resume` of a closed session and for
    /// `session/unarchive`, whose session setup archived).
    pub busy: bool,
    /// Prior prompts (each run to its end) in the session before the op: 0 to 3.
    pub history: u8,
    /// Turns of 150..=300 ms (longer than [`super::TIMEOUT_MS`]) instead of 10..=40 ms.
    pub long_turns: bool,
    /// `session/resume` only: the session was closed before the op (else it is active).
    pub resume_closed: bool,
    /// `one-way-partition`: it starts just after the op's first frame (which gets through)
    /// instead of with it.
    pub partition_after_request: bool,
    /// `one-way-partition`: how long Client→Agent frames are lost before the drop, in ms
    /// (50..=250).
    pub partition_ms: u64,
    /// Crash faults: picks the crash point among the admissible ones (modulo their number):
    /// after how many of the batch's persisted records the crash falls.
    pub crash_pick: u32,
}

impl Variation {
    /// The variation of `seed` for `method`.
    pub fn derive(seed: u64, method: Method) -> Variation {
        let mut r = StdRng::seed_from_u64(seed);
        let design = [Design::InMemory, Design::Stored, Design::Adapter][r.gen_range(0..3)];
        let o1 = if r.gen_bool(0.5) {
            HeldOnDisconnect::Keep
        } else {
            HeldOnDisconnect::Drop
        };
        let o2 = if r.gen_bool(0.5) {
            WorkOnDisconnect::Continue
        } else {
            WorkOnDisconnect::Cancel
        };
        let o4 = if r.gen_bool(0.5) {
            DuringTurn::Hold
        } else {
            DuringTurn::Steer
        };
        let mut v = Variation {
            design,
            o1,
            o2,
            o4,
            busy: r.gen_bool(0.5),
            history: r.gen_range(0..=3),
            long_turns: r.gen_bool(0.5),
            resume_closed: r.gen_bool(0.5),
            partition_after_request: r.gen_bool(0.5),
            partition_ms: r.gen_range(50..=250),
            crash_pick: r.gen_range(0..64),
        };
        match method {
            Method::Cancel => v.busy = true,
            Method::CancelRequest => {
                v.busy = true;
                v.o4 = DuringTurn::Hold;
            }
            // A closed session runs no turn.
            Method::Resume if v.resume_closed => v.busy = false,
            Method::Unarchive => v.busy = false,
            _ => {}
        }
        v
    }

    pub(super) fn turn_ms(&self) -> (u64, u64) {
        if self.long_turns {
            (150, 300)
        } else {
            (10, 40)
        }
    }
}

fn kebab<T: Serialize>(v: T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default()
}

impl fmt::Display for Variation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (lo, hi) = self.turn_ms();
        write!(
            f,
            "design={} o1={} o2={} o4={} busy={} history={} turns={lo}..={hi}ms resume_closed={} partition={} {}ms crash_pick={}",
            self.design.as_str(),
            kebab(self.o1),
            kebab(self.o2),
            kebab(self.o4),
            self.busy,
            self.history,
            self.resume_closed,
            if self.partition_after_request {
                "after-request"
            } else {
                "with-request"
            },
            self.partition_ms,
            self.crash_pick
        )
    }
}
