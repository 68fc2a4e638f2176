//! `acp-chaos matrix`: the retry-class conformance matrix (RULES.md "Retry classes", P10).
//!
//! For each method × fault class × Client policy, run the correct model Agent (or a mutant) over
//! N seeds and count what the user ends up with: `ok`, `surfaced-error`, `duplicate-effect` or
//! `silent-drop` (see [`Outcome`]), keeping the first seed of each outcome. From the counts, a
//! verdict per method confirms or refutes the class RULES.md gives it (stated or inferred, as in
//! [`crate::retry_class::audit`]).
//!
//! Sans-IO like the audit: no turmoil. A small discrete-event loop (1 ms per hop, simulated
//! milliseconds, no wall clock) drives [`ModelAgent`] directly and plays a scripted Client:
//! setup without faults, then the op under one fault, then the Client's next op, then quiescence.
//! Every choice comes from the seed ([`Variation`]), so any cell's seed reruns verbosely with
//! `acp-chaos matrix --seed N --method M --fault F --policy P`.
//!
//! The Client (rules C4, C6, C8, C9): every attempt is a new JSON-RPC id (C4); it waits
//! [`TIMEOUT_MS`] for an answer; after a connection ends it reconnects after [`RECONNECT_MS`] with
//! `initialize` and `session/resume` of its session (C6), then resends per policy.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use serde_json::{json, Value};

use crate::models::rpc::{self, Frame};
use crate::models::{
    Action, AgentConfig, AgentInput, AgentModel, AgentMutant, ConnId, Design, DuringTurn, Effect,
    HeldOnDisconnect, ModelAgent, WorkOnDisconnect,
};
use crate::retry_class::audit::Class;

/// How long the Client waits for an answer (or, for a notification, for its effect to show)
/// before its policy acts, in simulated ms.
pub const TIMEOUT_MS: u64 = 100;
/// Attempts the Client makes on timeouts before it gives up and shows the user an error
/// (a reconnect adds one more resend, C6).
pub const MAX_ATTEMPTS: usize = 3;
/// Delay between a connection ending and the Client's reconnect, in simulated ms.
pub const RECONNECT_MS: u64 = 5;
/// One hop, either direction, in simulated ms.
const LATENCY_MS: u64 = 1;
/// A run stops here whatever is still queued (simulated ms); no correct run comes near it.
const CAP_MS: u64 = 20_000;

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
    /// `session/cancel` (a notification) while a turn runs.
    #[serde(rename = "session/cancel")]
    Cancel,
    /// `$/cancel_request` (a notification) naming a held prompt.
    #[serde(rename = "$/cancel_request")]
    CancelRequest,
}

impl Method {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
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
    pub class: Class,
    /// True when RULES.md infers the class; false when the proposal states it. Same as the
    /// audit's table (a test keeps them in step).
    pub inferred: bool,
}

/// The methods of the matrix, in table order, with their classes as in [`crate::retry_class::audit`].
pub const METHODS: [MethodClass; 12] = [
    mc(Method::Initialize, Class::Idempotent, true),
    mc(Method::New, Class::Duplicating, false),
    mc(Method::Fork, Class::Duplicating, false),
    mc(Method::Prompt, Class::Keyed, false),
    mc(Method::Resume, Class::Idempotent, false),
    mc(Method::Close, Class::Idempotent, false),
    mc(Method::Delete, Class::Idempotent, false),
    mc(Method::List, Class::Idempotent, true),
    mc(Method::SetConfigOption, Class::Idempotent, true),
    mc(Method::Status, Class::Idempotent, true),
    mc(Method::Cancel, Class::NotResent, true),
    mc(Method::CancelRequest, Class::NotResent, true),
];

const fn mc(method: Method, class: Class, inferred: bool) -> MethodClass {
    MethodClass {
        method,
        class,
        inferred,
    }
}

/// The class's kebab-case name.
pub fn class_name(c: Class) -> &'static str {
    match c {
        Class::Idempotent => "idempotent",
        Class::Keyed => "keyed",
        Class::Duplicating => "duplicating",
        Class::NotResent => "not-resent",
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

    fn is_crash(self) -> bool {
        matches!(self, Fault::CrashBeforeEffect | Fault::CrashAfterEffect)
    }
}

/// What the Client does when an attempt gets no answer (C9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    /// Send the same request again (new id), up to [`MAX_ATTEMPTS`] on timeouts and once after
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

    fn short(self) -> &'static str {
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
    /// `$/cancel_request`, off for `session/resume` of a closed session).
    pub busy: bool,
    /// Prior prompts (each run to its end) in the session before the op: 0 to 3.
    pub history: u8,
    /// Turns of 150..=300 ms (longer than [`TIMEOUT_MS`]) instead of 10..=40 ms.
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
            _ => {}
        }
        v
    }

    fn turn_ms(&self) -> (u64, u64) {
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

/// One run: what happened and why.
#[derive(Debug, Clone, Serialize)]
pub struct Run {
    /// The seed.
    pub seed: u64,
    /// What the seed drew.
    pub variation: Variation,
    /// The outcome.
    pub outcome: Outcome,
    /// Whether the fault fired (a crash needs the batch that answers the op; a late copy needs
    /// its connection still open).
    pub fired: bool,
    /// One line: why this outcome.
    pub why: String,
    /// Every frame in and out, record, effect, crash and Client decision (verbose runs only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub log: Vec<String>,
}

/// Run one (method, fault, policy, seed); with `verbose`, keep the log.
pub fn run_one(
    method: Method,
    fault: Fault,
    policy: Policy,
    seed: u64,
    mutant: Option<AgentMutant>,
    verbose: bool,
) -> Run {
    let var = Variation::derive(seed, method);
    let mut w = World::new(method, fault, policy, seed, var.clone(), mutant, verbose);
    w.script();
    let (outcome, why) = w.classify();
    if verbose {
        let line = format!("outcome {}: {why}", outcome.as_str());
        w.push_note(line);
    }
    Run {
        seed,
        variation: var,
        outcome,
        fired: w.fired || fault == Fault::None,
        why,
        log: w.log.unwrap_or_default(),
    }
}

/// Outcome counts of one cell.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub struct Counts {
    /// `ok` runs.
    pub ok: u64,
    /// `surfaced-error` runs.
    pub surfaced_error: u64,
    /// `duplicate-effect` runs.
    pub duplicate_effect: u64,
    /// `silent-drop` runs.
    pub silent_drop: u64,
}

impl Counts {
    fn get(&self, o: Outcome) -> u64 {
        match o {
            Outcome::Ok => self.ok,
            Outcome::SurfacedError => self.surfaced_error,
            Outcome::DuplicateEffect => self.duplicate_effect,
            Outcome::SilentDrop => self.silent_drop,
        }
    }

    fn add(&mut self, o: Outcome) {
        match o {
            Outcome::Ok => self.ok += 1,
            Outcome::SurfacedError => self.surfaced_error += 1,
            Outcome::DuplicateEffect => self.duplicate_effect += 1,
            Outcome::SilentDrop => self.silent_drop += 1,
        }
    }
}

/// One cell: a method under one fault and one Client policy, over the seeds.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    /// The method.
    pub method: Method,
    /// Its class.
    pub class: Class,
    /// Whether RULES.md infers the class.
    pub inferred: bool,
    /// The fault.
    pub fault: Fault,
    /// The Client policy.
    pub policy: Policy,
    /// Why the cell is not run (then every count is 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_applicable: Option<&'static str>,
    /// Runs per outcome.
    pub counts: Counts,
    /// Runs in which the fault fired.
    pub fired: u64,
    /// The first seed of each outcome that occurred (ok included, for confirming examples).
    pub first_seed: BTreeMap<Outcome, u64>,
}

impl Cell {
    fn run(m: MethodClass, fault: Fault, policy: Policy, spec: &Spec) -> Cell {
        let mut cell = Cell {
            method: m.method,
            class: m.class,
            inferred: m.inferred,
            fault,
            policy,
            not_applicable: not_applicable(m.method, fault, policy),
            counts: Counts::default(),
            fired: 0,
            first_seed: BTreeMap::new(),
        };
        if cell.not_applicable.is_some() {
            return cell;
        }
        for seed in spec.seed_start..spec.seed_start + spec.seeds {
            let r = run_one(m.method, fault, policy, seed, spec.mutant, false);
            cell.counts.add(r.outcome);
            cell.fired += u64::from(r.fired);
            cell.first_seed.entry(r.outcome).or_insert(seed);
        }
        cell
    }

    /// The counts as `ok=N err=N@S ...` (non-zero outcomes; `@S` the first seed of a non-ok
    /// outcome), led by `fired=K/N` when the fault fired in fewer than all runs.
    fn text(&self) -> String {
        if self.not_applicable.is_some() {
            return "n/a".into();
        }
        let mut parts = Vec::new();
        let runs: u64 = Outcome::ALL.iter().map(|o| self.counts.get(*o)).sum();
        if self.fired < runs {
            // A fault that did not fire leaves those runs fault-free: say so.
            parts.push(format!("fired={}/{runs}", self.fired));
        }
        for o in Outcome::ALL {
            let n = self.counts.get(o);
            if n == 0 {
                continue;
            }
            match (o, self.first_seed.get(&o)) {
                (Outcome::Ok, _) | (_, None) => parts.push(format!("{}={n}", o.short())),
                (_, Some(s)) => parts.push(format!("{}={n}@{s}", o.short())),
            }
        }
        parts.join(" ")
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct Spec {
    /// First seed.
    pub seed_start: u64,
    /// Seeds per cell.
    pub seeds: u64,
    /// The Agent mutant (`None`: the correct models).
    pub mutant: Option<AgentMutant>,
    /// Its CLI name, for printed commands.
    pub mutant_name: Option<String>,
    /// Only this method's cells and verdict (`None`: every method).
    pub only: Option<Method>,
}

impl Spec {
    fn methods(&self) -> Vec<MethodClass> {
        METHODS
            .into_iter()
            .filter(|m| self.only.is_none_or(|o| o == m.method))
            .collect()
    }
}

/// A seed that shows a verdict, and the command that shows it.
#[derive(Debug, Clone, Serialize)]
pub struct Example {
    /// The seed.
    pub seed: u64,
    /// The cell's fault.
    pub fault: Fault,
    /// The cell's policy.
    pub policy: Policy,
    /// The outcome that seed gives in that cell.
    pub outcome: Outcome,
    /// The command that reruns it verbosely.
    pub command: String,
}

/// Whether the matrix confirms one method's class.
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    /// The method.
    pub method: Method,
    /// Its class.
    pub class: Class,
    /// Whether RULES.md infers the class.
    pub inferred: bool,
    /// What the class claims, as the matrix tests it.
    pub claim: String,
    /// Whether every cell the claim names agrees.
    pub confirmed: bool,
    /// The counts behind it.
    pub evidence: String,
    /// A seed that shows it (the first counter-example when refuted).
    pub example: Option<Example>,
    /// The same seed in the cell that makes the contrast, if the claim has one (keyed: the
    /// duplicating seed again with the key).
    pub contrast: Option<Example>,
}

/// One line per class: its methods' verdicts together.
#[derive(Debug, Clone, Serialize)]
pub struct ClassSummary {
    /// The class.
    pub class: Class,
    /// Every method of the class confirmed.
    pub confirmed: bool,
    /// Methods whose class the proposal states.
    pub stated: Vec<Method>,
    /// Methods whose class RULES.md infers.
    pub inferred: Vec<Method>,
    /// Methods whose verdict is refuted.
    pub refuted: Vec<Method>,
    /// The example of the first refuted method, else of the first stated one, else the first.
    pub example: Option<Example>,
}

/// The whole matrix.
#[derive(Debug, Clone, Serialize)]
pub struct Matrix {
    /// First seed.
    pub seed_start: u64,
    /// Seeds per cell.
    pub seeds: u64,
    /// The mutant, if any.
    pub mutant: Option<String>,
    /// Client timeout in simulated ms.
    pub timeout_ms: u64,
    /// Every cell, methods (all, or [`Spec::only`]) × faults × policies in table order (n/a
    /// cells included).
    pub cells: Vec<Cell>,
    /// One verdict per method.
    pub verdicts: Vec<Verdict>,
    /// One summary per class.
    pub classes: Vec<ClassSummary>,
    /// 0 if every stated class is confirmed, 1 if one is refuted (inferred ones refuted are
    /// findings).
    pub exit: i32,
}

/// Run every cell over the spec's seeds, then the verdicts.
pub fn run(spec: &Spec) -> Matrix {
    use rayon::prelude::*;
    let keys: Vec<(MethodClass, Fault, Policy)> = spec
        .methods()
        .into_iter()
        .flat_map(|m| {
            Fault::ALL
                .into_iter()
                .flat_map(move |f| Policy::ALL.into_iter().map(move |p| (m, f, p)))
        })
        .collect();
    // Cells are independent; collect keeps table order, so output does not depend on threads.
    let cells: Vec<Cell> = keys
        .par_iter()
        .map(|(m, f, p)| Cell::run(*m, *f, *p, spec))
        .collect();
    let verdicts: Vec<Verdict> = spec
        .methods()
        .iter()
        .map(|m| verdict(m, &cells, spec))
        .collect();
    let classes = [
        Class::Idempotent,
        Class::Keyed,
        Class::Duplicating,
        Class::NotResent,
    ]
    .into_iter()
    .filter(|c| verdicts.iter().any(|v| v.class == *c))
    .map(|c| {
        let of: Vec<&Verdict> = verdicts.iter().filter(|v| v.class == c).collect();
        let refuted: Vec<Method> = of
            .iter()
            .filter(|v| !v.confirmed)
            .map(|v| v.method)
            .collect();
        ClassSummary {
            class: c,
            confirmed: refuted.is_empty(),
            stated: of
                .iter()
                .filter(|v| !v.inferred)
                .map(|v| v.method)
                .collect(),
            inferred: of.iter().filter(|v| v.inferred).map(|v| v.method).collect(),
            // The first refuted method's example, else the first stated method's.
            example: of
                .iter()
                .find(|v| !v.confirmed)
                .or(of.iter().find(|v| !v.inferred))
                .or(of.first())
                .and_then(|v| v.example.clone()),
            refuted,
        }
    })
    .collect();
    let stated_refuted = verdicts.iter().any(|v| !v.inferred && !v.confirmed);
    Matrix {
        seed_start: spec.seed_start,
        seeds: spec.seeds,
        mutant: spec.mutant_name.clone(),
        timeout_ms: TIMEOUT_MS,
        cells,
        verdicts,
        classes,
        exit: if stated_refuted {
            crate::exit::INVALID
        } else {
            crate::exit::VALID
        },
    }
}

/// The command that reruns one cell for one seed verbosely.
pub fn command(
    method: Method,
    fault: Fault,
    policy: Policy,
    seed: u64,
    mutant: Option<&str>,
) -> String {
    format!(
        "acp-chaos matrix --seed {seed} --method {} --fault {} --policy {}{}",
        method.as_str(),
        fault.as_str(),
        policy.as_str(),
        mutant.map(|m| format!(" --mutant {m}")).unwrap_or_default()
    )
}

fn example(cell: &Cell, outcome: Outcome, spec: &Spec) -> Option<Example> {
    cell.first_seed.get(&outcome).map(|&seed| Example {
        seed,
        fault: cell.fault,
        policy: cell.policy,
        outcome,
        command: command(
            cell.method,
            cell.fault,
            cell.policy,
            seed,
            spec.mutant_name.as_deref(),
        ),
    })
}

/// The verdict for one method: the class's claim, tested on its cells.
fn verdict(m: &MethodClass, cells: &[Cell], spec: &Spec) -> Verdict {
    let of = |f: Fault, p: Policy| {
        cells
            .iter()
            .find(|c| c.method == m.method && c.fault == f && c.policy == p)
            .expect("every cell is built")
    };
    let run_cells = |p: Policy, faults: &[Fault]| -> Vec<&Cell> {
        faults
            .iter()
            .map(|f| of(*f, p))
            .filter(|c| c.not_applicable.is_none())
            .collect()
    };
    let sum = |cs: &[&Cell], o: Outcome| cs.iter().map(|c| c.counts.get(o)).sum::<u64>();
    let first = |cs: &[&Cell], o: Outcome| cs.iter().find_map(|c| example(c, o, spec));
    let runs = |cs: &[&Cell]| {
        cs.iter()
            .map(|c| {
                c.counts.get(Outcome::Ok)
                    + c.counts.get(Outcome::SurfacedError)
                    + c.counts.get(Outcome::DuplicateEffect)
                    + c.counts.get(Outcome::SilentDrop)
            })
            .sum::<u64>()
    };
    let not_late: Vec<Fault> = Fault::ALL
        .into_iter()
        .filter(|f| *f != Fault::DuplicatedLate)
        .collect();
    let (claim, confirmed, evidence, ex) = match m.class {
        Class::Idempotent => {
            let cs = run_cells(Policy::ResendAsIs, &not_late);
            let dup = sum(&cs, Outcome::DuplicateEffect);
            let late = of(Fault::DuplicatedLate, Policy::ResendAsIs);
            let rl = of(Fault::ResponseLost, Policy::ResendAsIs);
            let evidence = format!(
                "resend-as-is: duplicate-effect in {dup} of {} runs ({} faults); response-lost: ok {} of {}; a late copy after the Client's next op: duplicate-effect {} of {}{}",
                runs(&cs),
                cs.len(),
                rl.counts.ok,
                runs(&[rl]),
                late.counts.duplicate_effect,
                runs(&[late]),
                late.first_seed
                    .get(&Outcome::DuplicateEffect)
                    .map(|s| format!(" (seed {s})"))
                    .unwrap_or_default()
            );
            let ex = if dup > 0 {
                first(&cs, Outcome::DuplicateEffect)
            } else {
                example(rl, Outcome::Ok, spec).or_else(|| first(&cs, Outcome::Ok))
            };
            (
                "resend-as-is never gives duplicate-effect (every fault but a late copy)"
                    .to_string(),
                dup == 0,
                evidence,
                ex,
            )
        }
        Class::Keyed => {
            let keyed = run_cells(Policy::ResendWithKey, &Fault::ALL);
            let bare = run_cells(Policy::ResendAsIs, &Fault::ALL);
            let kdup = sum(&keyed, Outcome::DuplicateEffect);
            let kdrop = sum(&keyed, Outcome::SilentDrop);
            let bdup = sum(&bare, Outcome::DuplicateEffect);
            let by_fault: Vec<String> = bare
                .iter()
                .filter(|c| c.counts.duplicate_effect > 0)
                .map(|c| format!("{} {}", c.fault.as_str(), c.counts.duplicate_effect))
                .collect();
            let evidence = format!(
                "resend-with-key: duplicate-effect {kdup}, silent-drop {kdrop} of {} runs; resend-as-is (no key): duplicate-effect {bdup} of {} ({})",
                runs(&keyed),
                runs(&bare),
                if by_fault.is_empty() { "none".to_string() } else { by_fault.join(", ") }
            );
            // A lost response is the plainest counter-example; any other cell otherwise.
            let ex = if kdup > 0 {
                example(
                    of(Fault::ResponseLost, Policy::ResendWithKey),
                    Outcome::DuplicateEffect,
                    spec,
                )
                .or_else(|| first(&keyed, Outcome::DuplicateEffect))
            } else if kdrop > 0 {
                first(&keyed, Outcome::SilentDrop)
            } else {
                let rl = of(Fault::ResponseLost, Policy::ResendAsIs);
                example(rl, Outcome::DuplicateEffect, spec)
                    .or_else(|| first(&bare, Outcome::DuplicateEffect))
            };
            (
                "resend-with-key never gives duplicate-effect or silent-drop; resend-as-is without the key can duplicate".to_string(),
                kdup == 0 && kdrop == 0 && bdup > 0,
                evidence,
                ex,
            )
        }
        Class::Duplicating => {
            let rl = of(Fault::ResponseLost, Policy::ResendAsIs);
            let quiet: Vec<Fault> = Fault::ALL
                .into_iter()
                .filter(|f| !matches!(f, Fault::Duplicated | Fault::DuplicatedLate))
                .collect();
            let dnr = run_cells(Policy::DoNotResend, &quiet);
            let evidence = format!(
                "response-lost x resend-as-is: duplicate-effect {} of {}; do-not-resend without transport copies: duplicate-effect {} of {}",
                rl.counts.duplicate_effect,
                runs(&[rl]),
                sum(&dnr, Outcome::DuplicateEffect),
                runs(&dnr)
            );
            (
                "resend-as-is after a lost response creates a second resource (so never resent automatically)".to_string(),
                rl.counts.duplicate_effect > 0,
                evidence,
                example(rl, Outcome::DuplicateEffect, spec)
                    .or_else(|| example(rl, Outcome::Ok, spec)),
            )
        }
        Class::NotResent if m.method == Method::Cancel => {
            let late: Vec<&Cell> = Policy::ALL
                .into_iter()
                .map(|p| of(Fault::DuplicatedLate, p))
                .filter(|c| c.not_applicable.is_none())
                .collect();
            let bare = run_cells(Policy::ResendAsIs, &not_late);
            // A6: one cancel never touches later work, so any harm is the repeat's.
            let once: Vec<&Cell> = Policy::ALL
                .into_iter()
                .map(|p| of(Fault::None, p))
                .filter(|c| c.not_applicable.is_none())
                .collect();
            let dup = sum(&late, Outcome::DuplicateEffect);
            let dup_once = sum(&once, Outcome::DuplicateEffect);
            let evidence = format!(
                "a late copy: duplicate-effect {dup} of {}; one cancel, no fault: duplicate-effect {dup_once} of {}; resend-as-is: duplicate-effect {} of {} runs; do-not-resend x request-lost: silent-drop {}",
                runs(&late),
                runs(&once),
                sum(&bare, Outcome::DuplicateEffect),
                runs(&bare),
                of(Fault::RequestLost, Policy::DoNotResend).counts.silent_drop
            );
            let ex = if dup_once > 0 {
                first(&once, Outcome::DuplicateEffect)
            } else {
                first(&late, Outcome::DuplicateEffect).or_else(|| first(&late, Outcome::Ok))
            };
            (
                "a late repeat cancels work the user did not mean to stop; one cancel never does (A6)".to_string(),
                dup > 0 && dup_once == 0,
                evidence,
                ex,
            )
        }
        Class::NotResent => {
            let all: Vec<&Cell> = Policy::ALL
                .into_iter()
                .flat_map(|p| run_cells(p, &Fault::ALL))
                .collect();
            let dup = sum(&all, Outcome::DuplicateEffect);
            let lost = of(Fault::RequestLost, Policy::DoNotResend);
            let evidence = format!(
                "duplicate-effect {dup} of {} runs; a lost one under do-not-resend: silent-drop {} of {}",
                runs(&all),
                lost.counts.silent_drop,
                runs(&[lost])
            );
            let ex = if dup > 0 {
                first(&all, Outcome::DuplicateEffect)
            } else {
                example(of(Fault::Duplicated, Policy::ResendAsIs), Outcome::Ok, spec)
            };
            (
                "a repeat is harmless: it names an answered or unknown id and is ignored"
                    .to_string(),
                dup == 0,
                evidence,
                ex,
            )
        }
    };
    // Keyed: rerun the example seed with the key, to show the key is what makes the difference.
    let contrast = match (m.class, &ex) {
        (Class::Keyed, Some(e)) if e.policy == Policy::ResendAsIs => {
            let r = run_one(
                m.method,
                e.fault,
                Policy::ResendWithKey,
                e.seed,
                spec.mutant,
                false,
            );
            Some(Example {
                seed: e.seed,
                fault: e.fault,
                policy: Policy::ResendWithKey,
                outcome: r.outcome,
                command: command(
                    m.method,
                    e.fault,
                    Policy::ResendWithKey,
                    e.seed,
                    spec.mutant_name.as_deref(),
                ),
            })
        }
        _ => None,
    };
    Verdict {
        method: m.method,
        class: m.class,
        inferred: m.inferred,
        claim,
        confirmed,
        evidence,
        example: ex,
        contrast,
    }
}

/// The matrix as text: the table, then a verdict per method and a line per class.
pub fn table_text(mx: &Matrix) -> String {
    let mut s = format!(
        "acp-chaos matrix: seeds {}..{} per cell, mutant {}, Client timeout {} ms; cell = ok/err(surfaced-error)/dup(duplicate-effect)/drop(silent-drop) counts, @S = first seed\n",
        mx.seed_start,
        mx.seed_start + mx.seeds,
        mx.mutant.as_deref().unwrap_or("none"),
        mx.timeout_ms
    );
    s.push_str(&format!(
        "{:<26} {:<20} {:<30} {:<30} {}\n",
        "method (class)", "fault", "resend-as-is", "resend-with-key", "do-not-resend"
    ));
    // The methods that were run, in table order.
    let run: Vec<MethodClass> = METHODS
        .into_iter()
        .filter(|m| mx.cells.iter().any(|c| c.method == m.method))
        .collect();
    for m in run {
        for f in Fault::ALL {
            let c = |p: Policy| {
                mx.cells
                    .iter()
                    .find(|c| c.method == m.method && c.fault == f && c.policy == p)
                    .map(Cell::text)
                    .unwrap_or_default()
            };
            s.push_str(&format!(
                "{:<26} {:<20} {:<30} {:<30} {}\n",
                m.method.as_str(),
                f.as_str(),
                c(Policy::ResendAsIs),
                c(Policy::ResendWithKey),
                c(Policy::DoNotResend)
            ));
        }
    }
    s.push_str("\nverdicts per method (RULES.md \"Retry classes\", P10):\n");
    for v in &mx.verdicts {
        s.push_str(&format!(
            "  {:<26} {:<12} {:<8} {:<9} {}: {}\n",
            v.method.as_str(),
            class_name(v.class),
            if v.inferred { "inferred" } else { "stated" },
            if v.confirmed { "confirmed" } else { "REFUTED" },
            v.claim,
            v.evidence
        ));
        for (what, e) in [("example", &v.example), ("contrast", &v.contrast)] {
            if let Some(e) = e {
                s.push_str(&format!(
                    "  {:<26} {what}: seed {} {} {} -> {}: {}\n",
                    "",
                    e.seed,
                    e.fault.as_str(),
                    e.policy.as_str(),
                    e.outcome.as_str(),
                    e.command
                ));
            }
        }
    }
    s.push('\n');
    for c in &mx.classes {
        let names = |ms: &[Method]| ms.iter().map(|m| m.as_str()).collect::<Vec<_>>().join(" ");
        s.push_str(&format!(
            "class {:<12} {}: stated [{}] inferred [{}]{}{}\n",
            class_name(c.class),
            if c.confirmed { "confirmed" } else { "REFUTED" },
            names(&c.stated),
            names(&c.inferred),
            if c.refuted.is_empty() {
                String::new()
            } else {
                format!(" refuted by [{}]", names(&c.refuted))
            },
            c.example
                .as_ref()
                .map(|e| format!("; example: {} -> {}", e.command, e.outcome.as_str()))
                .unwrap_or_default()
        ));
    }
    s.push_str(&format!(
        "exit {} ({})\n",
        mx.exit,
        if mx.exit == 0 {
            "every stated class confirmed; refuted inferred classes are findings"
        } else {
            "a stated class is refuted"
        }
    ));
    s
}

// ---------------------------------------------------------------------------------------------
// One run: a discrete-event loop over the model Agent and a scripted Client.

/// How a Client frame is sent.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Tx {
    /// Setup, reconnect and next-op frames: no fault applies (but a partition does).
    Plain,
    /// The op's first frame: the fault applies.
    OpFirst,
    /// A resend of the op.
    OpAgain,
}

#[derive(Debug, Clone)]
enum Ev {
    ToAgent {
        conn: ConnId,
        line: String,
        op: bool,
    },
    ToClient {
        conn: ConnId,
        line: String,
    },
    AgentTimer {
        boot: u32,
        id: u64,
    },
    Eof {
        conn: ConnId,
    },
    PartitionDrop {
        conn: ConnId,
    },
    OpTimeout {
        attempt: usize,
    },
    NotifyTimeout {
        sent: usize,
    },
    Reconnect,
}

#[derive(Debug, Clone, PartialEq)]
enum OpState {
    NotSent,
    Pending,
    Answered(Result<Value, Value>),
    GaveUp(&'static str),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Recon {
    Init(u64),
    Resume(u64),
}

/// What the Agent state looked like once the op settled and the fault healed.
#[derive(Debug, Clone, Default)]
struct AfterOp {
    active: bool,
    exists: bool,
    autosave: Option<bool>,
    synced: bool,
}

macro_rules! note {
    ($w:expr, $($arg:tt)*) => {
        if $w.log.is_some() {
            let s = format!($($arg)*);
            $w.push_note(s);
        }
    };
}

struct World {
    method: Method,
    fault: Fault,
    policy: Policy,
    var: Variation,
    seed: u64,
    cfg: AgentConfig,
    now: u64,
    seq: u64,
    queue: BTreeMap<(u64, u64), Ev>,
    agent: ModelAgent,
    boot: u32,
    /// Records written, and how many of them are durable (synced).
    disk: Vec<Value>,
    durable: usize,
    crashed: bool,
    agent_conns: BTreeSet<ConnId>,
    client_conn: Option<ConnId>,
    next_conn: ConnId,
    next_id: u64,
    /// Client requests: (conn, id) → (method, params, sent at).
    sent: BTreeMap<(ConnId, u64), (String, Value, u64)>,
    /// First answer per (conn, id) as the Client got it, with the time.
    answers: BTreeMap<(ConnId, u64), (u64, Result<Value, Value>)>,
    /// `session/update` params the Client got: (time, conn, params).
    updates: Vec<(u64, ConnId, Value)>,
    sid: String,
    s_open: bool,
    recon: Option<Recon>,
    session_lost: bool,
    state: OpState,
    attempts: Vec<(ConnId, u64)>,
    notif_sends: usize,
    op_at: u64,
    late_copy: Option<(ConnId, String)>,
    p2: Option<(ConnId, u64)>,
    next: Option<(ConnId, u64)>,
    busy_mid: Option<String>,
    pre_sessions: BTreeSet<String>,
    after_op: AfterOp,
    armed: bool,
    fired: bool,
    partition: Option<(ConnId, u64, u64)>,
    /// Ground truth: every effect the Agent reported, with its boot.
    effects: Vec<(u32, Effect)>,
    /// Sessions active per connection, from `activate`/`deactivate` effects and disconnects.
    active: BTreeSet<(String, ConnId)>,
    /// `autosave` per session, from the Agent's own `set_config_option` answers (config lives
    /// in memory in every design: a crash resets it).
    autosave: BTreeMap<String, bool>,
    log: Option<Vec<String>>,
}

fn text_prompt(sid: &str, text: &str, key: Option<&str>) -> Value {
    let mut p = json!({"sessionId": sid, "prompt": [{"type": "text", "text": text}]});
    if let Some(k) = key {
        p["idempotencyKey"] = json!(k);
    }
    p
}

fn init_params() -> Value {
    json!({"protocolVersion": 2, "info": {"name": "matrix-client", "version": "1"}})
}

/// The op prompt's text (unique in the session: history, busy and next prompts differ).
const OP_TEXT: &str = "op";

impl World {
    fn new(
        method: Method,
        fault: Fault,
        policy: Policy,
        seed: u64,
        var: Variation,
        mutant: Option<AgentMutant>,
        verbose: bool,
    ) -> World {
        let mut cfg = AgentConfig::simple(var.design, var.o1, var.o4, mutant);
        cfg.o2 = var.o2;
        (cfg.turn_ms_min, cfg.turn_ms_max) = var.turn_ms();
        let agent = ModelAgent::recover(cfg.clone(), 0, seed, &[]);
        World {
            method,
            fault,
            policy,
            var,
            seed,
            cfg,
            now: 0,
            seq: 0,
            queue: BTreeMap::new(),
            agent,
            boot: 0,
            disk: Vec::new(),
            durable: 0,
            crashed: false,
            agent_conns: BTreeSet::new(),
            client_conn: None,
            next_conn: 1,
            next_id: 1,
            sent: BTreeMap::new(),
            answers: BTreeMap::new(),
            updates: Vec::new(),
            sid: String::new(),
            s_open: false,
            recon: None,
            session_lost: false,
            state: OpState::NotSent,
            attempts: Vec::new(),
            notif_sends: 0,
            op_at: 0,
            late_copy: None,
            p2: None,
            next: None,
            busy_mid: None,
            pre_sessions: BTreeSet::new(),
            after_op: AfterOp::default(),
            armed: false,
            fired: false,
            partition: None,
            effects: Vec::new(),
            active: BTreeSet::new(),
            autosave: BTreeMap::new(),
            log: verbose.then(Vec::new),
        }
    }

    fn push_note(&mut self, s: String) {
        let now = self.now;
        if let Some(l) = &mut self.log {
            l.push(format!("{now:>6} ms  {s}"));
        }
    }

    fn at(&mut self, t: u64, ev: Ev) {
        self.queue.insert((t, self.seq), ev);
        self.seq += 1;
    }

    /// Process events until `done` holds, nothing is queued, or the cap.
    fn run_until(&mut self, done: impl Fn(&World) -> bool) {
        while !done(self) {
            let Some((&(t, s), _)) = self.queue.first_key_value() else {
                return;
            };
            if t > CAP_MS {
                return;
            }
            let ev = self.queue.remove(&(t, s)).expect("just seen");
            self.now = self.now.max(t);
            self.handle(ev);
        }
    }

    fn run_to(&mut self, t: u64) {
        self.run_until(|w| w.queue.first_key_value().is_none_or(|(k, _)| k.0 > t));
        self.now = self.now.max(t);
    }

    // --- the script -------------------------------------------------------------------------

    fn script(&mut self) {
        note!(self, "seed {}: {}", self.seed, self.var);
        note!(
            self,
            "cell: {} x {} x {}",
            self.method.as_str(),
            self.fault.as_str(),
            self.policy.as_str()
        );
        // Setup, fault-free: a session with history, maybe a running turn.
        self.open_conn();
        let _ = self.call("initialize", init_params());
        let r = self.call("session/new", json!({"cwd": "/w"}));
        self.sid = r
            .ok()
            .and_then(|v| v["sessionId"].as_str().map(String::from))
            .unwrap_or_default();
        self.s_open = true;
        for i in 0..self.var.history {
            let key = format!("k-h{i}");
            let p = text_prompt(&self.sid, &format!("h{i}"), Some(&key));
            let _ = self.call("session/prompt", p);
            self.run_until(|_| false);
        }
        if self.method == Method::Resume && self.var.resume_closed {
            let p = json!({"sessionId": self.sid});
            let _ = self.call("session/close", p);
        }
        if self.var.busy {
            let p = text_prompt(&self.sid, "busy", Some("k-busy"));
            let r = self.call("session/prompt", p);
            self.busy_mid = r
                .ok()
                .and_then(|v| v["messageId"].as_str().map(String::from));
        }
        if self.method == Method::CancelRequest {
            // A held prompt for the op to withdraw (o4 is hold, a turn runs).
            let conn = self.client_conn.expect("connected in setup");
            let p = text_prompt(&self.sid, "p2", Some("k-p2"));
            let id = self.send_request("session/prompt", p, Tx::Plain);
            self.p2 = Some((conn, id));
            self.run_to(self.now + LATENCY_MS);
        }
        if self.method == Method::Initialize {
            // The op opens a new connection.
            self.close_client_conn();
            self.open_conn();
        }
        self.pre_sessions = self.sessions();
        // The op, under the fault.
        self.start_op();
        self.run_until(|w| w.op_settled() && w.fault_over());
        self.after_op = self.observe();
        // The Client's next op, then a late copy, then quiescence.
        if self.client_conn.is_some() {
            self.next_op();
        }
        if self.fault == Fault::DuplicatedLate {
            match self.late_copy.take() {
                Some((conn, line)) if self.agent_conns.contains(&conn) => {
                    note!(self, "late copy of the op's first frame on c{conn}");
                    self.fired = true;
                    self.at(
                        self.now + LATENCY_MS,
                        Ev::ToAgent {
                            conn,
                            line,
                            op: true,
                        },
                    );
                }
                _ => note!(self, "late copy: its connection is gone"),
            }
        }
        self.run_until(|_| false);
    }

    fn call(&mut self, method: &str, params: Value) -> Result<Value, Value> {
        let Some(conn) = self.client_conn else {
            return Err(Value::Null);
        };
        let id = self.send_request(method, params, Tx::Plain);
        self.run_until(|w| w.answers.contains_key(&(conn, id)) || w.client_conn != Some(conn));
        self.answers
            .get(&(conn, id))
            .map(|(_, r)| r.clone())
            .unwrap_or(Err(Value::Null))
    }

    fn op_request(&self) -> (&'static str, Value) {
        let sid = self.sid.as_str();
        let params = match self.method {
            Method::Initialize => init_params(),
            Method::New => json!({"cwd": "/w"}),
            Method::Fork | Method::Resume => {
                let mut p = json!({"sessionId": sid, "cwd": "/w"});
                if self.method == Method::Resume {
                    p["replayFrom"] = json!({"type": "start"});
                }
                p
            }
            Method::Prompt => {
                let key = (self.policy == Policy::ResendWithKey).then_some("k-op");
                text_prompt(sid, OP_TEXT, key)
            }
            Method::Close | Method::Delete | Method::Status | Method::Cancel => {
                json!({"sessionId": sid})
            }
            Method::List => json!({}),
            Method::SetConfigOption => {
                json!({"sessionId": sid, "configId": "autosave", "type": "boolean", "value": true})
            }
            Method::CancelRequest => json!({"requestId": self.p2.map(|p| p.1)}),
        };
        (self.method.as_str(), params)
    }

    fn start_op(&mut self) {
        self.armed = self.fault != Fault::None;
        self.op_at = self.now;
        if self.fault == Fault::OneWayPartition {
            let conn = self.client_conn.expect("connected");
            let from = self.now + u64::from(self.var.partition_after_request);
            let until = from + self.var.partition_ms;
            self.partition = Some((conn, from, until));
            note!(
                self,
                "partition: Client->Agent frames on c{conn} lost from {from} ms, connection drops at {until} ms"
            );
            self.at(until, Ev::PartitionDrop { conn });
        }
        self.state = OpState::Pending;
        self.send_op(Tx::OpFirst);
    }

    fn send_op(&mut self, tx: Tx) {
        let Some(conn) = self.client_conn else { return };
        let (m, p) = self.op_request();
        if self.method.is_notification() {
            self.transmit(conn, rpc::notification(m, p), tx);
            self.notif_sends += 1;
            if self.policy == Policy::ResendAsIs {
                let sent = self.notif_sends;
                self.at(self.now + TIMEOUT_MS, Ev::NotifyTimeout { sent });
            }
        } else {
            let id = self.send_request(m, p, tx);
            self.attempts.push((conn, id));
            let attempt = self.attempts.len();
            self.at(self.now + TIMEOUT_MS, Ev::OpTimeout { attempt });
        }
    }

    fn next_op(&mut self) {
        let sid = self.sid.clone();
        let (m, p) = match self.method {
            Method::Initialize => ("session/resume", json!({"sessionId": sid, "cwd": "/w"})),
            Method::New | Method::Fork | Method::Delete | Method::Status => {
                ("session/list", json!({}))
            }
            Method::List => ("session/status", json!({"sessionId": sid})),
            Method::Prompt | Method::Cancel | Method::CancelRequest => {
                ("session/prompt", text_prompt(&sid, "next", Some("k-next")))
            }
            Method::Resume => ("session/close", json!({"sessionId": sid})),
            Method::Close => ("session/resume", json!({"sessionId": sid, "cwd": "/w"})),
            Method::SetConfigOption => (
                "session/set_config_option",
                json!({"sessionId": sid, "configId": "autosave", "type": "boolean", "value": false}),
            ),
        };
        let conn = self.client_conn.expect("connected");
        note!(self, "client: next op {m}");
        let id = self.send_request(m, p, Tx::Plain);
        self.next = Some((conn, id));
        self.run_until(|w| w.answers.contains_key(&(conn, id)) || w.client_conn != Some(conn));
    }

    /// The op is over from the Client's side: answered or given up (requests); its session
    /// seen idle or lost (`session/cancel`); the named prompt answered or gone
    /// (`$/cancel_request`).
    fn op_settled(&self) -> bool {
        match self.method {
            Method::Cancel => self.session_lost || self.idle_seen(),
            Method::CancelRequest => {
                self.session_lost
                    || self.p2.is_some_and(|p| {
                        self.answers.contains_key(&p) || self.client_conn != Some(p.0)
                    })
            }
            _ => !matches!(self.state, OpState::Pending),
        }
    }

    /// The fault has played out: no partition, no armed crash, the Client connected and done
    /// reconnecting.
    fn fault_over(&self) -> bool {
        self.client_conn.is_some()
            && self.recon.is_none()
            && self.partition.is_none()
            && !(self.armed && self.fault.is_crash())
    }

    fn idle_seen(&self) -> bool {
        self.updates.iter().any(|(t, _, p)| {
            *t >= self.op_at
                && p["sessionId"] == self.sid.as_str()
                && p["update"]["sessionUpdate"] == "state_update"
                && p["update"]["state"] == "idle"
        })
    }

    fn cancelled_seen(&self) -> bool {
        self.updates.iter().any(|(t, _, p)| {
            *t >= self.op_at
                && p["sessionId"] == self.sid.as_str()
                && p["update"]["sessionUpdate"] == "state_update"
                && p["update"]["state"] == "idle"
                && p["update"]["stopReason"] == "cancelled"
        })
    }

    // --- connections and frames --------------------------------------------------------------

    fn open_conn(&mut self) {
        let conn = self.next_conn;
        self.next_conn += 1;
        self.agent_conns.insert(conn);
        self.client_conn = Some(conn);
        note!(self, "client: connects c{conn}");
        self.agent_do(AgentInput::Connected(conn), false);
    }

    fn close_client_conn(&mut self) {
        let Some(conn) = self.client_conn.take() else {
            return;
        };
        note!(self, "client: closes c{conn}");
        if self.agent_conns.remove(&conn) {
            self.active.retain(|(_, c)| *c != conn);
            self.agent_do(AgentInput::Disconnected(conn), false);
        }
    }

    fn send_request(&mut self, method: &str, params: Value, tx: Tx) -> u64 {
        let conn = self.client_conn.expect("connected");
        let id = self.next_id;
        self.next_id += 1;
        let line = rpc::request(id, method, params.clone());
        self.sent
            .insert((conn, id), (method.to_string(), params, self.now));
        self.transmit(conn, line, tx);
        id
    }

    fn transmit(&mut self, conn: ConnId, line: String, tx: Tx) {
        let op = tx != Tx::Plain;
        if let Some((c, from, until)) = self.partition {
            if c == conn && self.now >= from && self.now < until {
                self.fired = true;
                note!(self, "C->A c{conn} LOST (partition) {line}");
                return;
            }
        }
        if tx == Tx::OpFirst {
            match self.fault {
                Fault::RequestLost => {
                    self.armed = false;
                    self.fired = true;
                    note!(self, "C->A c{conn} LOST (request-lost) {line}");
                    return;
                }
                Fault::Duplicated => {
                    self.armed = false;
                    self.fired = true;
                    let t = self.now + LATENCY_MS;
                    self.at(
                        t,
                        Ev::ToAgent {
                            conn,
                            line: line.clone(),
                            op,
                        },
                    );
                }
                Fault::DuplicatedLate => {
                    self.armed = false;
                    self.late_copy = Some((conn, line.clone()));
                }
                _ => {}
            }
        }
        self.at(self.now + LATENCY_MS, Ev::ToAgent { conn, line, op });
    }

    fn handle(&mut self, ev: Ev) {
        match ev {
            Ev::ToAgent { conn, line, op } => {
                if !self.agent_conns.contains(&conn) {
                    note!(self, "C->A c{conn} dropped (connection gone) {line}");
                    return;
                }
                note!(self, "C->A c{conn} {line}");
                self.agent_do(AgentInput::Frame(conn, line), op);
            }
            Ev::ToClient { conn, line } => {
                if self.client_conn != Some(conn) {
                    note!(self, "A->C c{conn} dropped (connection gone) {line}");
                    return;
                }
                note!(self, "A->C c{conn} {line}");
                self.client_recv(conn, &line);
            }
            Ev::AgentTimer { boot, id } => {
                if boot == self.boot {
                    self.agent_do(AgentInput::Timer(id), false);
                }
            }
            Ev::Eof { conn } => self.client_lost(conn),
            Ev::PartitionDrop { conn } => {
                self.partition = None;
                self.armed = false;
                self.fired = true;
                note!(self, "partition: c{conn} ends at both ends (healed after)");
                if self.agent_conns.remove(&conn) {
                    self.active.retain(|(_, c)| *c != conn);
                    self.agent_do(AgentInput::Disconnected(conn), false);
                }
                self.client_lost(conn);
            }
            Ev::OpTimeout { attempt } => {
                if self.state != OpState::Pending || self.attempts.len() != attempt {
                    return;
                }
                match self.policy {
                    Policy::DoNotResend => self.give_up("no answer within the timeout"),
                    _ if attempt >= MAX_ATTEMPTS => {
                        self.give_up("no answer after the last attempt")
                    }
                    _ if self.client_conn.is_none() || self.recon.is_some() => {
                        // Reconnecting: the reconnect resends (C6).
                    }
                    _ => {
                        note!(self, "client: timeout of attempt {attempt}, resends");
                        self.send_op(Tx::OpAgain);
                    }
                }
            }
            Ev::NotifyTimeout { sent } => self.notify_timeout(sent),
            Ev::Reconnect => self.reconnect(),
        }
    }

    fn notify_timeout(&mut self, sent: usize) {
        if sent != self.notif_sends || self.notif_sends >= MAX_ATTEMPTS {
            return;
        }
        let confirmed = match self.method {
            Method::Cancel => self.cancelled_seen(),
            _ => self
                .p2
                .is_none_or(|p| self.answers.contains_key(&p) || self.client_conn != Some(p.0)),
        };
        if confirmed {
            return;
        }
        if self.client_conn.is_none() || self.recon.is_some() {
            // Not connected now: look again later.
            self.at(self.now + TIMEOUT_MS, Ev::NotifyTimeout { sent });
            return;
        }
        note!(
            self,
            "client: no sign of the {} taking effect, resends it",
            self.method.as_str()
        );
        self.send_op(Tx::OpAgain);
    }

    fn give_up(&mut self, why: &'static str) {
        note!(self, "client: gives up ({why}), shows the user an error");
        self.state = OpState::GaveUp(why);
    }

    fn client_lost(&mut self, conn: ConnId) {
        if self.client_conn != Some(conn) {
            return;
        }
        note!(self, "client: c{conn} ended");
        self.client_conn = None;
        self.recon = None;
        if self.state == OpState::Pending
            && !self.method.is_notification()
            && self.policy == Policy::DoNotResend
        {
            self.give_up("connection lost");
        }
        self.at(self.now + RECONNECT_MS, Ev::Reconnect);
    }

    fn reconnect(&mut self) {
        if self.client_conn.is_some() {
            return;
        }
        self.open_conn();
        let id = if self.method == Method::Initialize
            && self.state == OpState::Pending
            && self.policy != Policy::DoNotResend
        {
            // The reconnect's initialize is the op's resend.
            self.send_op(Tx::OpAgain);
            self.attempts.last().expect("just sent").1
        } else {
            self.send_request("initialize", init_params(), Tx::Plain)
        };
        self.recon = Some(Recon::Init(id));
    }

    fn finish_reconnect(&mut self) {
        self.recon = None;
        if self.state == OpState::Pending
            && self.policy != Policy::DoNotResend
            && !self.method.is_notification()
        {
            note!(self, "client: reconnected, resends the op (C6)");
            self.send_op(Tx::OpAgain);
        }
    }

    fn client_recv(&mut self, conn: ConnId, line: &str) {
        match rpc::parse(line) {
            Ok(Frame::Response { id, result }) => {
                let Some(id) = id.as_u64() else { return };
                let key = (conn, id);
                if self.answers.contains_key(&key) {
                    // A second answer to one id (a duplicated request): the first one counts.
                    return;
                }
                self.answers.insert(key, (self.now, result.clone()));
                if self.state == OpState::Pending && self.attempts.contains(&key) {
                    self.state = OpState::Answered(result.clone());
                }
                if let Some((m, p, _)) = self.sent.get(&key) {
                    if p["sessionId"] == self.sid.as_str() && result.is_ok() {
                        match m.as_str() {
                            "session/resume" => self.s_open = true,
                            "session/close" | "session/delete" => self.s_open = false,
                            _ => {}
                        }
                    }
                }
                match self.recon {
                    Some(Recon::Init(i)) if i == id => {
                        if self.s_open {
                            let p = json!({"sessionId": self.sid, "cwd": "/w"});
                            let rid = self.send_request("session/resume", p, Tx::Plain);
                            self.recon = Some(Recon::Resume(rid));
                        } else {
                            self.finish_reconnect();
                        }
                    }
                    Some(Recon::Resume(i)) if i == id => {
                        if result.is_err() {
                            note!(self, "client: its session is lost");
                            self.session_lost = true;
                        }
                        self.finish_reconnect();
                    }
                    _ => {}
                }
            }
            Ok(Frame::Notification { method, params }) if method == "session/update" => {
                self.updates.push((self.now, conn, params));
            }
            _ => {}
        }
    }

    // --- the Agent side ----------------------------------------------------------------------

    fn agent_do(&mut self, input: AgentInput, op_frame: bool) {
        let mut out = Vec::new();
        self.agent.handle(input, &mut out);
        let cut = self.crash_cut(&out, op_frame);
        let n = cut.unwrap_or(out.len());
        for a in out.into_iter().take(n) {
            self.exec(a);
        }
        if cut.is_some() {
            self.crash();
        }
    }

    /// The op's own record: the state change it persists.
    fn own_record(&self, r: &Value) -> bool {
        match self.method {
            Method::New => r["t"] == "session",
            Method::Fork => r["t"] == "fork",
            Method::Delete => r["t"] == "delete",
            Method::Prompt => r["t"] == "msg" && r["text"] == OP_TEXT,
            _ => false,
        }
    }

    /// Where an armed crash cuts this batch, if it is the batch that answers the op (for a
    /// notification: the one its arrival starts). Before the effect: before any of the batch's
    /// records up to the op's own (or, with no own record, before the whole batch); after: after
    /// the op's own record or a later one, before the response (with no own record: just before
    /// the response, or after the whole batch of a notification).
    fn crash_cut(&mut self, out: &[Action], op_frame: bool) -> Option<usize> {
        if !self.armed || !self.fault.is_crash() {
            return None;
        }
        let r = if self.method.is_notification() {
            if !op_frame {
                return None;
            }
            out.len()
        } else {
            out.iter().position(|a| match a {
                Action::Send { conn, line } if !line.contains("\"method\"") => {
                    match rpc::parse(line) {
                        Ok(Frame::Response { id, .. }) => id
                            .as_u64()
                            .is_some_and(|i| self.attempts.contains(&(*conn, i))),
                        _ => false,
                    }
                }
                _ => false,
            })?
        };
        let records: Vec<usize> = (0..r)
            .filter(|&i| matches!(out[i], Action::Persist { .. }))
            .collect();
        let own = records.iter().position(|&i| match &out[i] {
            Action::Persist { record, .. } => self.own_record(record),
            _ => false,
        });
        let options: Vec<(usize, String)> = match (self.fault, own) {
            (Fault::CrashBeforeEffect, Some(o)) => (0..=o)
                .map(|k| (records[k], format!("after {k} of the batch's {} records, before the op's own", records.len())))
                .collect(),
            (Fault::CrashBeforeEffect, None) => vec![(0, "on arrival, before the batch".into())],
            (_, Some(o)) => (o..records.len())
                .map(|k| {
                    (
                        records[k] + 1,
                        format!("after {} of the batch's {} records (the op's own is #{}), before the response", k + 1, records.len(), o + 1),
                    )
                })
                .collect(),
            (_, None) if self.method.is_notification() => {
                vec![(r, "after the whole batch".into())]
            }
            (_, None) => vec![(r, format!("after {} records, just before the response", records.len()))],
        };
        let (cut, why) = options[self.var.crash_pick as usize % options.len()].clone();
        self.armed = false;
        self.fired = true;
        note!(
            self,
            "crash point chosen: {why} (the batch runs up to it, then the process dies)"
        );
        Some(cut)
    }

    fn crash(&mut self) {
        self.crashed = true;
        self.boot += 1;
        self.disk.truncate(self.durable);
        note!(
            self,
            "AGENT CRASH; restart boot {} from {} durable records",
            self.boot,
            self.disk.len()
        );
        self.agent = ModelAgent::recover(self.cfg.clone(), self.boot, self.seed, &self.disk);
        for conn in std::mem::take(&mut self.agent_conns) {
            // Frames written before the crash arrive first (same time, earlier sequence).
            self.at(self.now + LATENCY_MS, Ev::Eof { conn });
        }
        self.active.clear();
        self.autosave.clear();
    }

    fn exec(&mut self, a: Action) {
        match a {
            Action::Send { conn, line } => {
                // Only responses matter here; most lines are notifications (not parsed).
                let response = !line.contains("\"method\"");
                if let Some(Ok(Frame::Response { id, result })) =
                    response.then(|| rpc::parse(&line))
                {
                    if let Some(id) = id.as_u64() {
                        self.mirror_answer(conn, id, &result);
                        if self.armed
                            && self.fault == Fault::ResponseLost
                            && self.attempts.contains(&(conn, id))
                        {
                            self.armed = false;
                            self.fired = true;
                            note!(self, "A->C c{conn} LOST (response-lost) {line}");
                            return;
                        }
                    }
                }
                self.at(self.now + LATENCY_MS, Ev::ToClient { conn, line });
            }
            Action::Persist { record, sync } => {
                note!(
                    self,
                    "agent persists {record}{}",
                    if sync { " (synced)" } else { " (not synced)" }
                );
                self.disk.push(record);
                if sync {
                    self.durable = self.disk.len();
                }
            }
            Action::Timer { id, after_ms } => {
                let boot = self.boot;
                self.at(self.now + after_ms, Ev::AgentTimer { boot, id });
            }
            Action::Effect(e) => {
                let s = e.value["session"].as_str().unwrap_or_default().to_string();
                let c = e.value["conn"].as_u64().unwrap_or_default();
                match e.f {
                    "activate" => {
                        self.active.insert((s, c));
                    }
                    "deactivate" => {
                        self.active.remove(&(s, c));
                    }
                    "session-delete" => {
                        self.active.retain(|(x, _)| *x != s);
                        self.autosave.remove(&s);
                    }
                    _ => {}
                }
                note!(self, "agent effect {} {}", e.f, e.value);
                self.effects.push((self.boot, e));
            }
            Action::Point(_)
            | Action::Connect { .. }
            | Action::Close { .. }
            | Action::Store { .. } => {}
        }
    }

    /// Ground truth from the Agent's own answers (delivered or not): `autosave` per session.
    fn mirror_answer(&mut self, conn: ConnId, id: u64, result: &Result<Value, Value>) {
        let (Some((m, p, _)), Ok(v)) = (self.sent.get(&(conn, id)), result) else {
            return;
        };
        if m != "session/set_config_option" {
            return;
        }
        let sid = p["sessionId"].as_str().unwrap_or_default().to_string();
        let on = v["configOptions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|o| o["configId"] == "autosave")
            .and_then(|o| o["currentValue"].as_bool());
        if let Some(on) = on {
            self.autosave.insert(sid, on);
        }
    }

    // --- observing ---------------------------------------------------------------------------

    fn sessions(&self) -> BTreeSet<String> {
        self.agent
            .retained()
            .as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    }

    fn s_active(&self) -> bool {
        self.client_conn
            .is_some_and(|c| self.active.contains(&(self.sid.clone(), c)))
    }

    fn observe(&self) -> AfterOp {
        AfterOp {
            active: self.s_active(),
            exists: self.sessions().contains(&self.sid),
            autosave: self.autosave.get(&self.sid).copied(),
            synced: self.resume_synced(),
        }
    }

    /// X4: on the connection of the op's first successful answer, the Client got a
    /// `replay_complete` and then a `state_update` for the session before that answer.
    fn resume_synced(&self) -> bool {
        let Some((conn, at)) = self
            .attempts
            .iter()
            .find_map(|k| match self.answers.get(k) {
                Some((t, Ok(_))) => Some((k.0, *t)),
                _ => None,
            })
        else {
            return false;
        };
        let ups: Vec<&Value> = self
            .updates
            .iter()
            .filter(|(t, c, p)| *c == conn && *t <= at && p["sessionId"] == self.sid.as_str())
            .map(|(_, _, p)| &p["update"]["sessionUpdate"])
            .collect();
        let rc = ups.iter().position(|u| *u == "replay_complete");
        rc.is_some_and(|i| ups[i..].iter().any(|u| *u == "state_update"))
    }

    /// Message ids inserted for any of these (conn, id) attempts, in any process.
    fn mids_of(&self, attempts: &[(ConnId, u64)]) -> Vec<String> {
        self.effects
            .iter()
            .filter(|(_, e)| e.f == "insert")
            .filter(|(_, e)| {
                attempts.iter().any(|(c, i)| {
                    e.value["conn"].as_u64() == Some(*c) && e.value["id"].as_u64() == Some(*i)
                })
            })
            .filter_map(|(_, e)| e.value["messageId"].as_str().map(String::from))
            .collect()
    }

    /// Retained messages of the session whose id is in `mids` (entries, not distinct ids: a
    /// derived id inserted twice counts twice).
    fn retained_count(&self, mids: &[String]) -> usize {
        self.agent.retained()[self.sid.as_str()]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter(|m| m.as_str().is_some_and(|m| mids.iter().any(|x| x == m)))
                    .count()
            })
            .unwrap_or(0)
    }

    /// How a turn for `mid` ended: its first `turn-end` stop reason.
    fn turn_end(&self, mid: &str) -> Option<String> {
        self.effects.iter().find_map(|(_, e)| {
            (e.f == "turn-end" && e.value["messageId"] == mid)
                .then(|| e.value["stopReason"].as_str().unwrap_or("?").to_string())
        })
    }

    fn next_ok(&self) -> bool {
        self.next
            .and_then(|k| self.answers.get(&k))
            .is_some_and(|(_, r)| r.is_ok())
    }

    /// The outcome (see [`Outcome`] for the order) and one line why.
    fn classify(&self) -> (Outcome, String) {
        let client_error: Option<String> = match (&self.state, self.method.is_notification()) {
            (_, true) => self
                .session_lost
                .then(|| "its session was lost on reconnect".into()),
            (OpState::Answered(Ok(_)), _) => None,
            (OpState::Answered(Err(e)), _) => Some(format!(
                "error answer {}",
                rpc::error_code(e)
                    .map(|c| c.to_string())
                    .unwrap_or_default()
            )),
            (OpState::GaveUp(why), _) => Some(format!("gave up: {why}")),
            (s, _) => Some(format!("no answer at the end ({s:?})")),
        };
        // (duplicate, happened, what)
        let (dup, happened, what): (Option<String>, bool, String) = match self.method {
            Method::Initialize | Method::List | Method::Status => (
                None,
                matches!(self.state, OpState::Answered(Ok(_))),
                "the answer".into(),
            ),
            Method::New | Method::Fork => {
                let n = self.sessions().difference(&self.pre_sessions).count();
                (
                    (n >= 2).then(|| format!("{n} sessions created for one request")),
                    n >= 1,
                    format!("{n} session(s) created"),
                )
            }
            Method::Prompt => {
                let n = self.retained_count(&self.mids_of(&self.attempts));
                (
                    (n >= 2).then(|| format!("{n} user messages retained for one submission")),
                    n >= 1,
                    format!("{n} user message(s) retained"),
                )
            }
            Method::Resume => (
                (self.next_ok() && self.s_active())
                    .then(|| "the session is active again after the Client's close".into()),
                self.after_op.active && self.after_op.synced,
                format!(
                    "session active {}, replay_complete + snapshot before the answer {}",
                    self.after_op.active, self.after_op.synced
                ),
            ),
            Method::Close => (
                (self.next_ok() && !self.s_active())
                    .then(|| "the session is closed again after the Client resumed it".into()),
                !self.after_op.active,
                format!("session active after the op {}", self.after_op.active),
            ),
            Method::Delete => (
                None,
                !self.after_op.exists,
                format!("session exists after the op {}", self.after_op.exists),
            ),
            Method::SetConfigOption => (
                (self.next_ok() && self.autosave.get(&self.sid) == Some(&true))
                    .then(|| "autosave is true again after the Client set it false".into()),
                self.after_op.autosave == Some(true),
                format!("autosave after the op {:?}", self.after_op.autosave),
            ),
            Method::Cancel => {
                let busy = self.busy_mid.as_deref().and_then(|m| self.turn_end(m));
                let happened = match busy.as_deref() {
                    Some("cancelled") => true,
                    Some(_) => false,
                    // The process died with the turn: stopped, though not by the cancel.
                    None => self.crashed,
                };
                (
                    self.next_harmed(),
                    happened,
                    format!(
                        "the running turn ended {}",
                        busy.unwrap_or_else(|| "with the process".into())
                    ),
                )
            }
            Method::CancelRequest => {
                let n = self.p2.map(|p| self.mids_of(&[p]).len()).unwrap_or(0);
                (
                    self.next_harmed(),
                    n == 0,
                    format!("the named prompt inserted {n} time(s)"),
                )
            }
        };
        if let Some(d) = dup {
            return (Outcome::DuplicateEffect, d);
        }
        if let Some(e) = client_error {
            return (
                Outcome::SurfacedError,
                format!("the Client shows an error ({e}); {what}"),
            );
        }
        if happened {
            (Outcome::Ok, format!("success; {what}"))
        } else {
            (
                Outcome::SilentDrop,
                format!("the effect did not happen and the Client has no error; {what}"),
            )
        }
    }

    /// The Client's next prompt was withdrawn (`-32800`) or its turn cancelled.
    fn next_harmed(&self) -> Option<String> {
        let next = self.next?;
        if let Some((_, Err(e))) = self.answers.get(&next) {
            if rpc::error_code(e) == Some(rpc::code::REQUEST_CANCELLED) {
                return Some("the Client's next prompt was withdrawn (-32800)".into());
            }
        }
        self.mids_of(&[next]).iter().find_map(|m| {
            (self.turn_end(m).as_deref() == Some("cancelled"))
                .then(|| "the turn of the Client's next prompt was cancelled".into())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(seeds: u64, mutant: Option<&str>) -> Spec {
        Spec {
            only: None,
            seed_start: 0,
            seeds,
            mutant: mutant.map(|m| match crate::models::mutant::find(m).map(|x| x.kind) {
                Some(crate::models::mutant::MutantKind::Agent(a)) => a,
                _ => panic!("not an agent mutant: {m}"),
            }),
            mutant_name: mutant.map(String::from),
        }
    }

    /// The class table matches the audit's (method, class, stated/inferred).
    #[test]
    fn classes_match_the_audit() {
        let rows = crate::retry_class::audit::audit();
        for m in METHODS {
            let row = rows
                .iter()
                .find(|r| r.method == m.method.as_str())
                .unwrap_or_else(|| panic!("{} not in the audit", m.method.as_str()));
            assert_eq!(row.class, m.class, "{}", m.method.as_str());
            assert_eq!(row.inferred, m.inferred, "{}", m.method.as_str());
        }
    }

    /// Same seeds, same JSON.
    #[test]
    fn deterministic() {
        let a = serde_json::to_string(&run(&spec(10, None))).unwrap();
        let b = serde_json::to_string(&run(&spec(10, None))).unwrap();
        assert_eq!(a, b);
        let r1 = run_one(
            Method::Prompt,
            Fault::CrashAfterEffect,
            Policy::ResendAsIs,
            3,
            None,
            true,
        );
        let r2 = run_one(
            Method::Prompt,
            Fault::CrashAfterEffect,
            Policy::ResendAsIs,
            3,
            None,
            true,
        );
        assert_eq!(
            serde_json::to_string(&r1).unwrap(),
            serde_json::to_string(&r2).unwrap()
        );
    }

    /// Every stated class is confirmed on the correct models, and every example reruns to its
    /// outcome.
    #[test]
    fn stated_classes_confirmed_on_the_correct_models() {
        let mx = run(&spec(50, None));
        for v in &mx.verdicts {
            if !v.inferred {
                assert!(
                    v.confirmed,
                    "{} {:?}: {}",
                    v.method.as_str(),
                    v.class,
                    v.evidence
                );
            }
            if let Some(e) = &v.example {
                let r = run_one(v.method, e.fault, e.policy, e.seed, None, false);
                assert_eq!(r.outcome, e.outcome, "{}", e.command);
            }
        }
        assert_eq!(mx.exit, 0);
        let keyed = mx
            .verdicts
            .iter()
            .find(|v| v.method == Method::Prompt)
            .unwrap();
        assert_eq!(
            keyed.contrast.as_ref().map(|c| c.outcome),
            Some(Outcome::Ok)
        );
        // The control column: without a fault nothing is dropped, and only a prompt held
        // behind a turn longer than the Client's timeout is resent (inserted twice without a
        // key) or given up on.
        let control = mx.cells.iter().filter(|c| c.fault == Fault::None);
        for c in control.filter(|c| c.not_applicable.is_none()) {
            assert_eq!(c.counts.silent_drop, 0, "{c:?}");
            if c.method != Method::Prompt || c.policy == Policy::ResendWithKey {
                assert_eq!(c.counts.ok, 50, "{c:?}");
            }
        }
    }

    /// The matrix can fail: with the `no-dedup` mutant a keyed resend inserts twice, so the
    /// stated keyed class is refuted and the exit code is 1.
    #[test]
    fn no_dedup_refutes_the_keyed_class() {
        let spec = Spec {
            only: Some(Method::Prompt),
            ..spec(20, Some("no-dedup"))
        };
        let mx = run(&spec);
        let v = mx
            .verdicts
            .iter()
            .find(|v| v.method == Method::Prompt)
            .unwrap();
        assert!(!v.confirmed, "{}", v.evidence);
        let e = v.example.as_ref().unwrap();
        assert_eq!(e.policy, Policy::ResendWithKey);
        assert_eq!(e.outcome, Outcome::DuplicateEffect);
        assert!(e.command.ends_with("--mutant no-dedup"));
        let r = run_one(v.method, e.fault, e.policy, e.seed, spec.mutant, false);
        assert_eq!(r.outcome, Outcome::DuplicateEffect);
        assert_eq!(mx.exit, 1);
    }

    /// A key recorded on arrival (A12) answers a retry after a crash with a messageId no
    /// message has: a silent drop under resend-with-key, so the keyed class is refuted too.
    #[test]
    fn key_recorded_on_arrival_refutes_the_keyed_class_by_a_silent_drop() {
        let spec = Spec {
            only: Some(Method::Prompt),
            ..spec(20, Some("key-recorded-on-arrival"))
        };
        let mx = run(&spec);
        let v = mx
            .verdicts
            .iter()
            .find(|v| v.method == Method::Prompt)
            .unwrap();
        assert!(!v.confirmed, "{}", v.evidence);
        let e = v.example.as_ref().unwrap();
        assert_eq!(
            (e.policy, e.outcome),
            (Policy::ResendWithKey, Outcome::SilentDrop)
        );
        assert_eq!(mx.exit, 1);
    }
}
