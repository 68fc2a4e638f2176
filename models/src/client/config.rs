//! What distinguishes one model Client from another: its kind (the spec Client or an SDK's
//! auto-retry), its key scheme, its timing, and its mutant if any.

use serde::{Deserialize, Serialize};

/// Client mutants: each a small named difference from the correct model. What each breaks (its
/// rules, property and party) is its row in [`crate::mutant::MUTANTS`], and only there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClientMutant {
    /// A fresh key for every attempt.
    NewKeyPerAttempt,
    /// Pending inputs kept in memory only: a client restart loses them.
    VolatilePending,
    /// A resend on the same connection reuses the pending attempt's JSON-RPC id.
    ReusesIdWhilePending,
    /// The key is derived from the prompt text, so a text the user sends again on purpose gets the
    /// old key.
    KeyFromText,
    /// A new submission reuses the previous submission's key in its session, with a different
    /// prompt.
    SameKeyNewPrompt,
    /// After two attempts the Client forgets the input without telling the user.
    GivesUpSilently,
    /// After a reconnect the Client only resumes: it drops every input it had already sent,
    /// trusting the replay to show what was accepted, and never resends.
    ResumeOnly,
    /// The SDK also resends a prompt sent without a key whose outcome is unknown, as is.
    ResendsUnkeyed,
    /// After a reconnect a pending input older than `stale_ms` is resent like any other, instead of
    /// shown to the user.
    ResendsStale,
    /// A resend is rebuilt from the input box the first send cleared: `prompt: []` under the
    /// pending key.
    ResendsEmptyPrompt,
    /// The user's cancel of an input pending across a Client restart withdraws it at once, as if it
    /// had never been sent, though an attempt may have been written before the restart and
    /// inserted.
    WithdrawsRecovered,
    /// After a reconnect the pending prompts of a session go out right behind its `session/resume`,
    /// without waiting for the resume's response.
    PromptsBeforeResume,
    /// Every `-32800` is taken for the user's own withdrawal, also one nobody asked for (a close or
    /// stop from elsewhere, an Agent shutting down): the input is shown withdrawn instead of
    /// resubmitted.
    AnyCancelWithdraws,
}

/// Which Client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClientKind {
    /// The spec Client (C1–C8): keys every prompt; resume, then resend pending prompts.
    #[default]
    Spec,
    /// An SDK that resends by itself, only what the retry class allows (C9).
    SdkAutoRetry,
}

impl ClientKind {
    /// Every kind, for `acp-chaos list`.
    pub const ALL: [ClientKind; 2] = [ClientKind::Spec, ClientKind::SdkAutoRetry];

    /// Name in scenario files.
    pub fn as_str(self) -> &'static str {
        match self {
            ClientKind::Spec => "spec",
            ClientKind::SdkAutoRetry => "sdk-auto-retry",
        }
    }

    /// One line for `acp-chaos list`.
    pub fn summary(self) -> &'static str {
        match self {
            ClientKind::Spec => "one key per submission in a durable pending store; late prompts resent with their key; after a reconnect initialize, resume, resend (C1-C8)",
            ClientKind::SdkAutoRetry => "resends on transport failure by retry class: keyed prompts with their key, resume as is; never session/new, notifications or unkeyed prompts of unknown outcome (C9)",
        }
    }
}

/// How the Client makes keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KeyScheme {
    /// A UUID per submission from the seeded RNG (C5).
    Uuid,
    /// `k1`, `k2`, ... counted per session slot and kept in the store: unique per session, so
    /// legal, but the same strings recur in every session (exercises A9).
    SessionCounter,
}

/// Settings of the model Client. Times are simulated milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientConfig {
    /// Resend a prompt on the same connection when its response is this late.
    pub prompt_timeout_ms: u64,
    /// First reconnect delay.
    pub backoff_ms_min: u64,
    /// Reconnect delay cap.
    pub backoff_ms_max: u64,
    /// After this many attempts for one submission the input is shown to the user as failed.
    pub attempts_max: u32,
    /// How many sessions the Client opens and prompts (submissions name a slot).
    pub sessions: usize,
    /// How keys are made.
    pub keys: KeyScheme,
    /// A pending input older than this (ms) is shown to the user instead of being resent after
    /// a reconnect (C7); 0 turns it off.
    pub stale_ms: u64,
    /// The mutant, if any.
    pub mutant: Option<ClientMutant>,
    /// Which Client.
    #[serde(default)]
    pub kind: ClientKind,
    /// `sdk-auto-retry`: the share of prompts the application sends without a key.
    #[serde(default)]
    pub unkeyed_rate: f64,
    /// How long the user takes to answer a `session/request_permission`, in simulated ms (0:
    /// at once). A `$/cancel_request` for it meanwhile closes the question, answered with the
    /// `cancelled` outcome (A6).
    /// Left out of the history header when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub permission_ms: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}
