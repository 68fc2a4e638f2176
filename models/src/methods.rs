//! Every v2 ACP method of the schema crate (`agent-client-protocol-schema` 1.20.0, module `v2`,
//! stable and unstable), both directions, with its retry class (RULES.md "Retry classes"): the
//! one table that the Client, the scenario loader (frame triggers), `acp-chaos audit` and
//! `acp-chaos matrix` read.
//!
//! The proposal's class table was lost; RULES.md states some classes from the proposal's text
//! and infers the others. [`MethodInfo::inferred`] says which. Methods the models do not speak
//! carry the reason in [`MethodInfo::not_spoken`]: the audit and the matrix list them without a
//! measurement.

use serde::{Deserialize, Serialize};

/// A retry class (RULES.md; the proposal's names were lost, these are the working names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RetryClass {
    /// Send again as is; the answer is current state.
    Idempotent,
    /// Send again only with the same key.
    Keyed,
    /// A repeat creates another (cheap, unused) resource.
    Duplicating,
    /// Never sent again automatically.
    NotResent,
}

impl RetryClass {
    /// The class's kebab-case name (`idempotent`, `keyed`, `duplicating`, `not-resent`).
    pub fn as_str(self) -> &'static str {
        match self {
            RetryClass::Idempotent => "idempotent",
            RetryClass::Keyed => "keyed",
            RetryClass::Duplicating => "duplicating",
            RetryClass::NotResent => "not-resent",
        }
    }
}

/// One ACP method: its wire name and retry class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MethodInfo {
    /// The wire name, e.g. `session/prompt`.
    pub name: &'static str,
    /// Its retry class.
    pub class: RetryClass,
    /// True when RULES.md infers the class; false when the proposal states it.
    pub inferred: bool,
    /// A notification (no response to lose or to wait for).
    pub notification: bool,
    /// `None` when the models speak the method (the model Agent answers it, or sends it, and the
    /// model Client sends or answers it); otherwise why they do not.
    pub not_spoken: Option<&'static str>,
}

impl MethodInfo {
    /// The same method, marked as not spoken by the models, for `why`.
    const fn unspoken(self, why: &'static str) -> MethodInfo {
        MethodInfo {
            not_spoken: Some(why),
            ..self
        }
    }

    /// Whether the models speak it.
    pub const fn spoken(&self) -> bool {
        self.not_spoken.is_none()
    }
}

const fn m(name: &'static str, class: RetryClass, inferred: bool) -> MethodInfo {
    MethodInfo {
        name,
        class,
        inferred,
        notification: false,
        not_spoken: None,
    }
}

const fn n(name: &'static str, class: RetryClass, inferred: bool) -> MethodInfo {
    MethodInfo {
        notification: true,
        ..m(name, class, inferred)
    }
}

use RetryClass::{Duplicating, Idempotent, Keyed, NotResent};

const NO_AUTH: &str = "the model Agent advertises no authMethods, so a Client must not call it";
const NO_PROVIDERS: &str =
    "the model Agent has no LLM providers (feature unstable_llm_providers, not enabled)";
const NO_MCP: &str =
    "the models connect no MCP servers over ACP (feature unstable_mcp_over_acp, not enabled)";

/// Every method the Client sends to the Agent, requests first (in the order a frame trigger's
/// error message lists them), then notifications.
pub const METHODS: &[MethodInfo] = &[
    m("initialize", Idempotent, true),
    m("session/new", Duplicating, false),
    m("session/resume", Idempotent, false),
    m("session/prompt", Keyed, false),
    m("session/fork", Duplicating, false),
    m("session/list", Idempotent, true),
    m("session/close", Idempotent, false),
    m("session/delete", Idempotent, false),
    m("session/status", Idempotent, true),
    m("session/set_config_option", Idempotent, true),
    m("session/options", Idempotent, true),
    m("session/set_title", Idempotent, true),
    m("session/archive", Idempotent, true),
    m("session/unarchive", Idempotent, true),
    m("tool_call/cancel", Idempotent, true)
        .unspoken("the model Agent's tool calls advertise no capabilities.cancel"),
    m("terminal/cancel", Idempotent, true).unspoken("the model Agent runs no terminals"),
    m("auth/login", NotResent, true).unspoken(NO_AUTH),
    m("auth/logout", Idempotent, true).unspoken(NO_AUTH),
    m("auth/status", Idempotent, true)
        .unspoken("the model Agent does not advertise auth.status (feature unstable_auth_status, not enabled)"),
    m("providers/list", Idempotent, true).unspoken(NO_PROVIDERS),
    m("providers/set", Idempotent, true).unspoken(NO_PROVIDERS),
    m("providers/disable", Idempotent, true).unspoken(NO_PROVIDERS),
    n("session/cancel", NotResent, true),
    n("$/cancel_request", NotResent, true),
    n("mcp/message", NotResent, true).unspoken(NO_MCP),
];

/// Every method the Agent sends to the Client: its notifications and requests.
pub const AGENT_METHODS: &[MethodInfo] = &[
    n("session/update", NotResent, true),
    m("session/request_permission", NotResent, true),
    n("$/cancel_request", NotResent, true),
    m("elicitation/create", NotResent, true).unspoken("the model Agent asks for no user input"),
    n("elicitation/complete", NotResent, true)
        .unspoken("the model Agent starts no URL elicitation"),
    n("auth/status_update", NotResent, true).unspoken(
        "the model Agent has no authentication state (feature unstable_auth_status, not enabled)",
    ),
    m("mcp/message", NotResent, true).unspoken(NO_MCP),
];

/// The Agent's method with this wire name.
pub fn agent_method(name: &str) -> Option<&'static MethodInfo> {
    AGENT_METHODS.iter().find(|m| m.name == name)
}

/// The method with this wire name (a `const fn`, so other tables can be built from this one).
pub const fn get(name: &str) -> Option<&'static MethodInfo> {
    let mut i = 0;
    while i < METHODS.len() {
        if same(METHODS[i].name, name) {
            return Some(&METHODS[i]);
        }
        i += 1;
    }
    None
}

/// The entry of a method in [`METHODS`].
///
/// Panics (at compile time in a `const`) on a name outside the table: the models only speak
/// the table's methods.
pub const fn info(name: &str) -> &'static MethodInfo {
    match get(name) {
        Some(m) => m,
        None => panic!("not in the methods table"),
    }
}

/// The retry class of a method in [`METHODS`] (panics like [`info`]).
pub const fn class_of(name: &str) -> RetryClass {
    info(name).class
}

const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The requests (not notifications), in table order: the methods a frame trigger may name.
const NO_CHAINS: &str = "the models build no proxy chain (feature unstable_proxy_chains, not enabled): ordinary Clients and Agents never send or receive it";

/// Every method between a conductor and the proxies of its chain (`unstable_proxy_chains` in
/// the schema crate, both directions): `proxy/initialize` is the conductor's `initialize` of
/// a proxy, and `proxy/successor` carries a message to or from the next hop, whose own class
/// applies end to end (a hop never resends the envelope: that would deliver the message
/// twice).
pub const PROXY_METHODS: &[MethodInfo] = &[
    m("proxy/initialize", Idempotent, true).unspoken(NO_CHAINS),
    m("proxy/successor", NotResent, true).unspoken(NO_CHAINS),
];

/// Methods of ACP v1 that v2 no longer has, so in no table above: a v2 Agent answers them
/// `-32601` (method not found), and a v2 Client never sends them. `session/load` became
/// `session/resume` with `replayFrom`; `session/set_mode` became a config option;
/// `authenticate` became `auth/login`; the file-system and terminal methods the Agent called
/// on the Client have no v2 counterpart in the schema crate.
pub const V1_ONLY: &[&str] = &[
    "session/load",
    "session/set_mode",
    "authenticate",
    "fs/read_text_file",
    "fs/write_text_file",
    "terminal/create",
    "terminal/output",
    "terminal/release",
    "terminal/wait_for_exit",
    "terminal/kill",
];

pub fn requests() -> impl Iterator<Item = &'static MethodInfo> {
    METHODS.iter().filter(|m| !m.notification)
}

/// Which way a method goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Direction {
    /// The Client sends it to the Agent ([`METHODS`]).
    ClientToAgent,
    /// The Agent sends it to the Client ([`AGENT_METHODS`]).
    AgentToClient,
    /// Between a conductor and a proxy of its chain, either way ([`PROXY_METHODS`]).
    ConductorProxy,
}

impl Direction {
    /// `client->agent` or `agent->client`.
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::ClientToAgent => "client->agent",
            Direction::AgentToClient => "agent->client",
            Direction::ConductorProxy => "conductor<->proxy",
        }
    }
}

/// Every method of the tables with its direction: [`METHODS`], then [`AGENT_METHODS`], then
/// [`PROXY_METHODS`].
pub fn all() -> impl Iterator<Item = (Direction, &'static MethodInfo)> {
    METHODS
        .iter()
        .map(|m| (Direction::ClientToAgent, m))
        .chain(AGENT_METHODS.iter().map(|m| (Direction::AgentToClient, m)))
        .chain(PROXY_METHODS.iter().map(|m| (Direction::ConductorProxy, m)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_method_once_and_the_classes_of_the_proposal() {
        for table in [METHODS, AGENT_METHODS] {
            for (i, a) in table.iter().enumerate() {
                assert!(table[..i].iter().all(|b| b.name != a.name), "{}", a.name);
            }
        }
        assert_eq!(class_of("session/prompt"), RetryClass::Keyed);
        assert!(!get("session/prompt").unwrap().inferred);
        let dup: Vec<_> = METHODS
            .iter()
            .filter(|m| m.class == RetryClass::Duplicating)
            .map(|m| m.name)
            .collect();
        assert_eq!(dup, ["session/new", "session/fork"]);
        assert!(requests().all(|m| !m.name.starts_with("$/") && m.name != "session/cancel"));
        // Only the proposal's own statements are stated; everything the crate added since is
        // inferred.
        let stated: Vec<_> = all()
            .filter(|(_, m)| !m.inferred)
            .map(|(_, m)| m.name)
            .collect();
        assert_eq!(
            stated,
            [
                "session/new",
                "session/resume",
                "session/prompt",
                "session/fork",
                "session/close",
                "session/delete"
            ]
        );
    }

    /// The schema crate's v2 surface, both directions, as its method-name constants spell it
    /// (`AGENT_METHOD_NAMES`, `CLIENT_METHOD_NAMES`, `PROTOCOL_LEVEL_METHOD_NAMES`; the features
    /// the workspace enables; the others' names copied from the crate's source): every one has
    /// a row, and every row is one of them.
    #[test]
    fn the_table_covers_the_schema_crates_v2_methods() {
        use agent_client_protocol_schema::v2::{
            AGENT_METHOD_NAMES as A, CLIENT_METHOD_NAMES as C, PROTOCOL_LEVEL_METHOD_NAMES as P,
        };
        let to_agent = [
            A.initialize,
            A.auth_login,
            A.auth_logout,
            A.session_new,
            A.session_set_config_option,
            A.session_prompt,
            A.session_cancel,
            A.session_list,
            A.session_delete,
            A.session_fork,
            A.session_archive,
            A.session_unarchive,
            A.session_status,
            A.session_options,
            A.session_set_title,
            A.session_resume,
            A.session_close,
            A.tool_call_cancel,
            A.terminal_cancel,
            P.cancel_request,
            // Behind features the workspace does not enable (unstable_auth_status,
            // unstable_llm_providers, unstable_mcp_over_acp).
            "auth/status",
            "providers/list",
            "providers/set",
            "providers/disable",
            "mcp/message",
        ];
        let to_client = [
            C.session_update,
            C.session_request_permission,
            C.elicitation_create,
            C.elicitation_complete,
            P.cancel_request,
            "auth/status_update",
            "mcp/message",
        ];
        // Behind unstable_proxy_chains, not enabled: the crate's `v2/proxy.rs` constants.
        let chain = ["proxy/initialize", "proxy/successor"];
        for (table, names) in [
            (METHODS, &to_agent[..]),
            (AGENT_METHODS, &to_client[..]),
            (PROXY_METHODS, &chain[..]),
        ] {
            for name in names {
                assert!(table.iter().any(|m| m.name == *name), "{name} has no row");
            }
            for m in table {
                assert!(names.contains(&m.name), "{} is not a v2 method", m.name);
            }
        }
    }

    /// The v1-only list names methods of the crate's v1 surface, none of which has a row.
    #[test]
    fn the_v1_only_methods_are_v1_methods_without_a_v2_row() {
        use agent_client_protocol_schema::v1::{
            AGENT_METHOD_NAMES as A1, CLIENT_METHOD_NAMES as C1,
        };
        let v1 = [
            A1.session_load,
            A1.session_set_mode,
            A1.authenticate,
            C1.fs_read_text_file,
            C1.fs_write_text_file,
            C1.terminal_create,
            C1.terminal_output,
            C1.terminal_release,
            C1.terminal_wait_for_exit,
            C1.terminal_kill,
        ];
        assert_eq!(V1_ONLY, v1);
        for name in V1_ONLY {
            assert!(all().all(|(_, m)| m.name != *name), "{name} has a v2 row");
        }
    }
}
