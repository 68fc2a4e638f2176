//! Checkers: pure functions from a [`History`] to a [`Verdict`], one per property of
//! `spec/RULES.md` (P1 to P12, P15 to P17, and our P13 and P14, each with its row there; see
//! [`CHECKERS`]).
//!
//! Every non-valid verdict names the property, the rule ids, the witnessing op indices, the
//! fault that enabled it (the last nemesis op before the witness) and who is at fault.
//!
//! The checkers read the Agent's effects; [`contract`] says which ones each property cannot
//! be judged without, and [`check_all`] turns a valid verdict into "not checked" (unknown)
//! when the Agent owed one of those and never emitted it (the effect contract:
//! `docs/effects.md`).

pub mod black_box;
pub mod contract;
mod coverage;
pub mod facts;
pub mod p01_at_most_once;
pub mod p02_no_silent_drop;
pub mod p03_same_answer;
pub mod p04_error_means_not_inserted;
pub mod p05_key_validation;
pub mod p06_cancel;
pub mod p07_every_request_answered;
pub mod p08_key_privacy;
pub mod p09_key_scope;
pub mod p10_retry_class;
pub mod p11_durability;
pub mod p12_id_uniqueness;
pub mod p13_forwarding_order;
pub mod p14_client_keys;
pub mod p15_echo;
pub mod p16_active_session;
pub mod p17_turn_stop;
pub mod verdict;
pub mod wire;
pub mod x4_resume_order;

pub use contract::{Dependency, Missing, DEPENDENCIES};
pub use coverage::{
    events, events_in_view, fault_states, fault_states_in_view, protocol_states_at, ProtocolState,
    EVENTS, FAULT_STATES,
};
pub use facts::{agent_view, Facts, Insert, SubmissionClass};
pub use p01_at_most_once::p1_at_most_once;
pub use p02_no_silent_drop::p2_no_silent_drop;
pub use p03_same_answer::p3_same_answer;
pub use p04_error_means_not_inserted::p4_error_means_not_inserted;
pub use p05_key_validation::p5_key_validation;
pub use p05_key_validation::{key_form, null_key_alone, KeyForm};
pub use p06_cancel::p6_cancel;
pub use p07_every_request_answered::p7_every_request_answered;
pub use p08_key_privacy::p8_key_privacy;
pub use p09_key_scope::p9_key_scope;
pub use p10_retry_class::p10_retry_class;
pub use p11_durability::p11_durability;
pub use p12_id_uniqueness::p12_id_uniqueness;
pub use p13_forwarding_order::p13_forwarding_order;
pub use p14_client_keys::p14_client_keys;
pub use p15_echo::p15_echo;
pub use p16_active_session::p16_active_session;
pub use p17_turn_stop::p17_turn_stop;
pub use verdict::{Status, Verdict};
pub use wire::WireFrame;
pub use x4_resume_order::{x4_check, x4_resume_order};

use crate::history::History;
use crate::models::Property;

/// A checker: a property id, its title, and the pure function.
pub struct Checker {
    /// Property id.
    pub property: Property,
    /// Short name.
    pub title: &'static str,
    /// RULES.md ids it enforces.
    pub rules: &'static [&'static str],
    /// The behaviour its rules require, one sentence naming them: what every report page of
    /// a failing verdict quotes beside the diagram (`report::expected`).
    pub expected: &'static str,
    /// The check.
    pub check: fn(&Facts) -> Verdict,
    /// What a black-box history (`probe`: the frames at one real Agent's pipe, its restarts)
    /// decides of the property: the probe's columns are the rows it judges, and
    /// `docs/probe.md`'s table is these rows, word for word (a test holds both).
    pub black_box: BlackBox,
}

/// A property under `probe` ([`Checker::black_box`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlackBox {
    /// The probe reports it: what the wire lets it judge.
    Judged(&'static str),
    /// The probe does not report it: why.
    NotReported(&'static str),
}

impl BlackBox {
    /// Its cell in `docs/probe.md`'s table: the text, "not reported: " before a reason.
    pub fn cell(self) -> String {
        match self {
            BlackBox::Judged(what) => what.to_string(),
            BlackBox::NotReported(why) => format!("not reported: {why}"),
        }
    }
}

/// The properties `probe` reports, in report order: the rows a black box judges.
pub fn black_box_properties() -> Vec<Property> {
    CHECKERS
        .iter()
        .filter(|c| matches!(c.black_box, BlackBox::Judged(_)))
        .map(|c| c.property)
        .collect()
}

/// Every checker, in report order.
pub const CHECKERS: &[Checker] = &[
    Checker {
        property: Property::P1,
        title: "at-most-once",
        expected: "insert a submission's message once: a retry with a recorded key is answered from the key's record with the first insertion's messageId, and nothing is inserted, no work started (A1, A4, A10)",
        rules: &[
            "A1", "A4", "A10", "A11", "A13", "A16", "C1", "C9", "D1", "K4", "X1",
        ],
        check: p1_at_most_once,
        black_box: BlackBox::Judged("meaningful, from the frames and the inferred insertions"),
    },
    Checker {
        property: Property::P2,
        title: "no-silent-drop",
        expected: "every submission ends acknowledged with its messageId or shown to the user (failed, withdrawn, pending); the Client never forgets an input silently (C8, C1, C6)",
        rules: &["C1", "C2", "C3", "C6", "C8", "A1", "A2", "A9", "A12"],
        check: p2_no_silent_drop,
        black_box: BlackBox::Judged("meaningful for the Agent's side: an input never answered within the bound is `unknown` (\"still pending\")"),
    },
    Checker {
        property: Property::P3,
        title: "same-answer",
        expected: "every attempt of one submission is answered with the same messageId, the original's; a retry that arrives while the original is held gets the original's outcome, never an error (A1, A7)",
        rules: &["A1", "A7", "A9", "A11", "A14", "A16", "C1", "C9", "X1"],
        check: p3_same_answer,
        black_box: BlackBox::Judged("meaningful, from the frames and the inferred insertions"),
    },
    Checker {
        property: Property::P4,
        title: "error-means-not-inserted",
        expected: "an error answer means nothing was inserted: an attempt whose prompt was inserted is answered with its messageId (A2, A3)",
        rules: &["A2", "A3"],
        check: p4_error_means_not_inserted,
        black_box: BlackBox::Judged("meaningful, from the frames and the inferred insertions"),
    },
    Checker {
        property: Property::P5,
        title: "key-validation",
        expected: "a key of 1 to 255 characters is honoured, a null or absent key means no key, a malformed key is answered -32602 and nothing is inserted (K1, K2, K3)",
        rules: &["K1", "K2", "K3"],
        check: p5_key_validation,
        black_box: BlackBox::Judged("meaningful, from the frames and the inferred insertions"),
    },
    Checker {
        property: Property::P6,
        title: "cancel",
        expected: "$/cancel_request answers every pending attempt of the key with -32800 and nothing is inserted after; session/cancel withdraws the prompts not yet inserted, and no later one (A5, A6)",
        rules: &["A2", "A5", "A6", "A15", "X1"],
        check: p6_cancel,
        black_box: BlackBox::Judged("the A5 clause and A6's \"never a later prompt\"; not A6's \"every earlier held prompt\" (holding is invisible from outside); A6's stop reason is the probe's own verdict in this column (below)"),
    },
    Checker {
        property: Property::P7,
        title: "every-request-answered",
        expected: "every request read is answered exactly once while its connection is open; a $/cancel_request naming an unknown or answered id is ignored (A5, A15, C4)",
        rules: &["A5", "A7", "A15", "C4"],
        check: p7_every_request_answered,
        black_box: BlackBox::Judged("a request answered twice and an answer to a request never read, from the frames; \"never answered\" only as `unknown`: from outside it looks the same as slower than the bound"),
    },
    Checker {
        property: Property::P8,
        title: "key-privacy",
        expected: "the key travels only in the Client's session/prompt: no update, response or other frame carries it (A8)",
        rules: &["A8"],
        check: p8_key_privacy,
        black_box: BlackBox::Judged("meaningful, from the frames and the inferred insertions"),
    },
    Checker {
        property: Property::P9,
        title: "key-scope",
        expected: "key records are per session: the same key string in another session is a new key (A9)",
        rules: &["A9"],
        check: p9_key_scope,
        black_box: BlackBox::NotReported("it reads the Agent's key records (its `dedup-hit` ops), which the wire does not show"),
    },
    Checker {
        property: Property::P10,
        title: "retry-class",
        expected: "after a reconnect a keyed input is resent with its key; an unkeyed or stale one is shown to the user, not resent; a resume of an active session synchronises it again (C6, C7, C9, X3, X4)",
        rules: &["C1", "C7", "C9", "R1"],
        check: p10_retry_class,
        black_box: BlackBox::NotReported("its rules are mostly the Client's (C1 C7 C9), and the probe's Client is ours"),
    },
    Checker {
        property: Property::P11,
        title: "durability",
        expected: "a message the Agent acknowledged or made visible survives a crash of a durable Agent (D1, A13)",
        rules: &["D1", "A16"],
        check: p11_durability,
        black_box: BlackBox::Judged("D1 with `--retention durable` (the Agent's declared promise; a command defaults to `process`), and A10 whatever the declared retention (the probe's own verdicts, below)"),
    },
    Checker {
        property: Property::P12,
        title: "id-uniqueness",
        expected: "a messageId names one user message in its session (A1)",
        rules: &["A1", "A11", "A16"],
        check: p12_id_uniqueness,
        black_box: BlackBox::NotReported("the probe keys the user messages it sees by their messageId, so two under one id are one to it"),
    },
    Checker {
        property: Property::P13,
        title: "forwarding-order",
        expected: "an intermediary forwards each frame once, in its connection's order, with ids rewritten both ways (X1)",
        rules: &["X1", "C4"],
        check: p13_forwarding_order,
        black_box: BlackBox::NotReported("a probe has no proxy"),
    },
    Checker {
        property: Property::P14,
        title: "client-keys",
        expected: "a new submission gets a new key; a resend keeps its submission's key and prompt, never an empty prompt (C1, C2, C3, C5, A17)",
        rules: &["C2", "C3", "C5", "A17"],
        check: p14_client_keys,
        black_box: BlackBox::NotReported("it judges the Client's keys, and the probe's Client is ours"),
    },
    Checker {
        property: Property::P15,
        title: "echo",
        expected: "a held prompt is echoed (user_message) only once it is inserted (A14)",
        rules: &["A14"],
        check: p15_echo,
        black_box: BlackBox::NotReported("not yet one of the probe's columns, though its `messageId` clause could be judged from the wire; its order clause cannot be, from outside, where the insertions are inferred from the echoes themselves"),
    },
    Checker {
        property: Property::P16,
        title: "active-session",
        expected: "a request for a session not active on its connection is answered -32002 with data.sessionId; a Client resends only after the resume response (X2, C6)",
        rules: &["X2", "C6"],
        check: p16_active_session,
        black_box: BlackBox::NotReported("judged from the wire alone (X2), but not yet one of the probe's columns"),
    },
    Checker {
        property: Property::P17,
        title: "turn-stop",
        expected: "a turn ends with the stopReason that fits (cancelled after a stop, error after a failure) and its work ends before session/close is answered (A3, A6, A15)",
        rules: &["A3", "A6", "A15"],
        check: p17_turn_stop,
        black_box: BlackBox::NotReported("A3 reads the Agent's `work-failed` effect, which the wire does not show; A6's stop reason is the probe's own verdict in the P6 column; its A15 clause, judged from the wire, is not yet one of the probe's columns"),
    },
    Checker {
        property: Property::X4,
        title: "resume-order",
        expected: "a session/resume answered with success sends, before its response and for its session, the replayed history, exactly one replay_complete and then a state_update snapshot when replayFrom is set, and a snapshot without replay_complete when it is not (X4)",
        rules: &["X4"],
        check: x4_check,
        black_box: BlackBox::Judged("the probe's own check, from the frames between a resume and its answer (a `state_update` before the first replayed item may have crossed the request in the pipe and is not judged); `unknown`, **vacuous**, when no `session/resume` with `replayFrom` was answered with success (every resume after the restart failed): nothing was judged"),
    },
];

/// Run every checker, then the effect contract ([`contract::apply`]): a property that rests
/// on an effect the Agent owed and never emitted is not checked (unknown), never valid.
pub fn check_all(h: &History) -> Vec<Verdict> {
    let view = agent_view(h);
    check_view(&Facts::of(&view))
}

/// [`check_all`] given the [`Facts`] of a history already as the checkers read it
/// ([`agent_view`]), for a caller that reads them for more than the verdicts (one pass, not one
/// per use).
pub fn check_view(facts: &Facts) -> Vec<Verdict> {
    let mut verdicts: Vec<Verdict> = CHECKERS.iter().map(|c| (c.check)(facts)).collect();
    contract::apply_to_view(facts, &mut verdicts);
    verdicts
}

/// One line naming a verdict: `P1 at-most-once invalid (party agent, rules A1 A4): ...`.
pub fn verdict_line(v: &Verdict) -> String {
    let title = CHECKERS
        .iter()
        .find(|c| c.property == v.property)
        .map(|c| c.title)
        .unwrap_or("");
    let party = v
        .party
        .map(|p| format!("party {}, ", format!("{p:?}").to_lowercase()))
        .unwrap_or_default();
    format!(
        "{} {title} {} ({party}rules {}): {}",
        v.property,
        Status::as_str(v.status),
        v.rules.join(" "),
        v.message
    )
}
