//! The mutant zoo: each entry names the model it changes, the rule it breaks, and the property
//! and party a verdict must name.

use serde::Serialize;

use crate::proxy::ProxyMutant;
use crate::{AgentMutant, ClientMutant, Design};

/// Who a verdict blames (RULES.md "Verdicts").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Party {
    /// The Agent broke a MUST.
    Agent,
    /// The Client broke a MUST.
    Client,
    /// A proxy or conductor.
    Intermediary,
    /// The fault injector broke a transport guarantee.
    Nemesis,
    /// A gap in the spec.
    Spec,
}

/// Which model a mutant changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum MutantKind {
    /// An Agent mutant.
    Agent(AgentMutant),
    /// A Client mutant.
    Client(ClientMutant),
    /// A proxy mutant (the run gets a proxy).
    Proxy(ProxyMutant),
}

/// One mutant and what catching it means.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Mutant {
    /// CLI name (`--mutant NAME`).
    pub name: &'static str,
    /// The model change.
    pub kind: MutantKind,
    /// RULES.md ids it breaks.
    pub rules: &'static [&'static str],
    /// Property a verdict must name.
    pub property: &'static str,
    /// Party a verdict must blame.
    pub party: Party,
    /// One line: what differs from the correct model.
    pub summary: &'static str,
    /// Agent designs it applies to (empty: every design).
    pub designs: &'static [Design],
    /// Whether the bug needs a fault to show (a lost frame, a crash); a leaked key or a
    /// mistranslated cancel shows without one.
    pub needs_fault: bool,
    /// Whether `swarm-basic` reaches its window within 40 seeds (a test checks it); the others
    /// the swarm catches now and then (`acp-chaos mutants` measures how often), and tests pin
    /// both a swarm seed and a dedicated scenario for them.
    pub swarm_finds: bool,
}

/// Every shipped mutant.
pub const MUTANTS: &[Mutant] = &[
    Mutant {
        name: "no-dedup",
        kind: MutantKind::Agent(AgentMutant::NoDedup),
        rules: &["A1", "A4"],
        property: "P1",
        party: Party::Agent,
        summary: "Agent ignores idempotencyKey: a retry inserts a second message",
        needs_fault: true,
        swarm_finds: true,
        designs: &[],
    },
    Mutant {
        name: "record-unsynced",
        kind: MutantKind::Agent(AgentMutant::RecordUnsynced),
        rules: &["D1", "A10", "A13"],
        property: "P11",
        party: Party::Agent,
        summary: "Agent writes message+key without sync_all: a crash loses an acknowledged message",
        needs_fault: true,
        swarm_finds: true,
        designs: &[Design::Stored],
    },
    Mutant {
        name: "error-after-insert",
        kind: MutantKind::Agent(AgentMutant::ErrorAfterInsert),
        rules: &["A3", "A2"],
        property: "P4",
        party: Party::Agent,
        summary: "a failure after insertion is answered -32603 instead of the messageId",
        needs_fault: true,
        swarm_finds: true,
        designs: &[],
    },
    Mutant {
        name: "cancel-answers-one",
        kind: MutantKind::Agent(AgentMutant::CancelAnswersOne),
        rules: &["A5"],
        property: "P6",
        party: Party::Agent,
        summary: "$/cancel_request answers only the attempt it names, not every pending attempt of the key",
        needs_fault: false,
        swarm_finds: false,
        designs: &[],
    },
    Mutant {
        name: "key-in-updates",
        kind: MutantKind::Agent(AgentMutant::KeyInUpdates),
        rules: &["A8"],
        property: "P8",
        party: Party::Agent,
        summary: "the user_message echo carries the idempotencyKey in _meta",
        needs_fault: false,
        swarm_finds: true,
        designs: &[],
    },
    Mutant {
        name: "adapter-no-history-fill",
        kind: MutantKind::Agent(AgentMutant::AdapterNoHistoryFill),
        rules: &["A10", "A1"],
        property: "P1",
        party: Party::Agent,
        summary: "adapter trusts only its in-memory id set after a restart: a retry of a stored message inserts again",
        needs_fault: true,
        swarm_finds: true,
        designs: &[Design::Adapter],
    },
    Mutant {
        name: "cluster-node-local-keys",
        kind: MutantKind::Agent(AgentMutant::ClusterNodeLocalKeys),
        rules: &["A13", "A10", "A1"],
        property: "P1",
        party: Party::Agent,
        summary: "cluster node keeps key records in its own memory: a retry routed to another node inserts again",
        needs_fault: true,
        swarm_finds: true,
        designs: &[Design::Cluster],
    },
    Mutant {
        name: "cluster-check-then-insert",
        kind: MutantKind::Agent(AgentMutant::ClusterCheckThenInsert),
        rules: &["A4", "A13"],
        property: "P1",
        party: Party::Agent,
        summary: "cluster node reads \"key absent\" from the store, then inserts in a second step: two nodes handling one key at once both insert",
        needs_fault: true,
        swarm_finds: false,
        designs: &[Design::Cluster],
    },
    Mutant {
        name: "cluster-error-on-store-timeout",
        kind: MutantKind::Agent(AgentMutant::ClusterErrorOnStoreTimeout),
        rules: &["A2", "A3"],
        property: "P4",
        party: Party::Agent,
        summary: "cluster node whose store write timed out answers with an error although the store may have inserted it",
        needs_fault: true,
        swarm_finds: true,
        designs: &[Design::Cluster],
    },
    Mutant {
        name: "close-forgets-held",
        kind: MutantKind::Agent(AgentMutant::CloseForgetsHeld),
        rules: &["A15", "A5"],
        property: "P7",
        party: Party::Agent,
        summary: "session/close drops held prompts without answering them (A15: -32800)",
        needs_fault: false,
        swarm_finds: false,
        designs: &[],
    },
    Mutant {
        name: "invalid-key-as-omitted",
        kind: MutantKind::Agent(AgentMutant::InvalidKeyAsOmitted),
        rules: &["K3"],
        property: "P5",
        party: Party::Agent,
        summary: "a malformed idempotencyKey is dropped and the prompt handled as unkeyed",
        needs_fault: false,
        swarm_finds: true,
        designs: &[],
    },
    Mutant {
        name: "key-from-text",
        kind: MutantKind::Client(ClientMutant::KeyFromText),
        rules: &["C5", "C2"],
        property: "P14",
        party: Party::Client,
        summary: "Client derives the key from the prompt text: the same text sent again on purpose reuses the old key",
        needs_fault: false,
        swarm_finds: true,
        designs: &[],
    },
    Mutant {
        name: "same-key-new-prompt",
        kind: MutantKind::Client(ClientMutant::SameKeyNewPrompt),
        rules: &["C3"],
        property: "P14",
        party: Party::Client,
        summary: "Client sends a new submission with the previous submission's key and a different prompt",
        needs_fault: false,
        swarm_finds: true,
        designs: &[],
    },
    Mutant {
        name: "keys-across-sessions",
        kind: MutantKind::Agent(AgentMutant::KeysAcrossSessions),
        rules: &["A9"],
        property: "P9",
        party: Party::Agent,
        summary: "key records are looked up in every session: the same key string in another session gets that session's messageId",
        needs_fault: false,
        swarm_finds: true,
        designs: &[],
    },
    Mutant {
        name: "stop-cancels-later",
        kind: MutantKind::Agent(AgentMutant::StopCancelsLater),
        rules: &["A6"],
        property: "P6",
        party: Party::Agent,
        summary: "session/cancel also withdraws the next prompt that arrives for the session",
        needs_fault: false,
        swarm_finds: true,
        designs: &[],
    },
    Mutant {
        name: "gives-up-silently",
        kind: MutantKind::Client(ClientMutant::GivesUpSilently),
        rules: &["C8"],
        property: "P2",
        party: Party::Client,
        summary: "Client forgets an input after two attempts without telling the user",
        needs_fault: true,
        swarm_finds: true,
        designs: &[],
    },
    Mutant {
        name: "key-recorded-on-arrival",
        kind: MutantKind::Agent(AgentMutant::KeyRecordedOnArrival),
        rules: &["A12"],
        property: "P2",
        party: Party::Agent,
        summary: "stored Agent records the key when the prompt arrives; after a crash before insertion a retry gets a messageId no message has",
        needs_fault: true,
        swarm_finds: true,
        designs: &[Design::Stored],
    },
    Mutant {
        name: "forgets-live-while-active",
        kind: MutantKind::Agent(AgentMutant::ForgetsLiveWhileActive),
        rules: &["A11"],
        property: "P1",
        party: Party::Agent,
        summary: "a locally handled command's key is forgotten once answered, while its session is still active",
        needs_fault: true,
        swarm_finds: true,
        designs: &[Design::InMemory, Design::Stored, Design::Adapter],
    },
    Mutant {
        name: "client-reuses-id",
        kind: MutantKind::Client(ClientMutant::ReusesIdWhilePending),
        rules: &["C4"],
        property: "P7",
        party: Party::Client,
        summary: "Client resends on the same connection under the pending attempt's JSON-RPC id",
        needs_fault: true,
        swarm_finds: true,
        designs: &[],
    },
    Mutant {
        name: "proxy-drops-key",
        kind: MutantKind::Proxy(ProxyMutant::DropsKey),
        rules: &["X1"],
        property: "P1",
        party: Party::Intermediary,
        summary: "proxy strips idempotencyKey: a retry through it inserts a second message",
        needs_fault: true,
        swarm_finds: true,
        designs: &[],
    },
    Mutant {
        name: "proxy-unmapped-cancel",
        kind: MutantKind::Proxy(ProxyMutant::UnmappedCancel),
        rules: &["X1", "A5"],
        property: "P6",
        party: Party::Intermediary,
        summary: "proxy forwards $/cancel_request with the Client's id, not the rewritten one",
        needs_fault: false,
        swarm_finds: true,
        designs: &[],
    },
    Mutant {
        name: "proxy-duplicates-prompt",
        kind: MutantKind::Proxy(ProxyMutant::DuplicatesPrompt),
        rules: &["X1", "C4"],
        property: "P13",
        party: Party::Intermediary,
        summary: "proxy writes every session/prompt downstream twice under one rewritten id",
        needs_fault: false,
        swarm_finds: true,
        designs: &[],
    },
    Mutant {
        name: "proxy-reorders-prompt",
        kind: MutantKind::Proxy(ProxyMutant::ReordersPrompt),
        rules: &["X1"],
        property: "P13",
        party: Party::Intermediary,
        summary: "proxy holds a session/prompt and forwards it after the Client's next request on that connection",
        needs_fault: false,
        swarm_finds: true,
        designs: &[],
    },
    Mutant {
        name: "new-key-per-attempt",
        kind: MutantKind::Client(ClientMutant::NewKeyPerAttempt),
        rules: &["C1"],
        property: "P1",
        party: Party::Client,
        summary: "Client makes a fresh key for every retry",
        needs_fault: true,
        swarm_finds: true,
        designs: &[],
    },
    Mutant {
        name: "volatile-pending",
        kind: MutantKind::Client(ClientMutant::VolatilePending),
        rules: &["C1", "C8"],
        property: "P2",
        party: Party::Client,
        summary: "Client keeps pending input in memory only: a client restart loses it",
        needs_fault: true,
        swarm_finds: true,
        designs: &[],
    },
];

/// Look a mutant up by its CLI name.
pub fn find(name: &str) -> Option<&'static Mutant> {
    MUTANTS.iter().find(|m| m.name == name)
}
