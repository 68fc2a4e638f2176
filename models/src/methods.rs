//! Every ACP method the models speak, with its retry class (RULES.md "Retry classes"): the one
//! table that the Client, the scenario loader (frame triggers), `acp-chaos audit` and
//! `acp-chaos matrix` read.
//!
//! The proposal's class table was lost; RULES.md states some classes from the proposal's text
//! and infers the others. [`MethodInfo::inferred`] says which.

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
}

const fn m(name: &'static str, class: RetryClass, inferred: bool) -> MethodInfo {
    MethodInfo {
        name,
        class,
        inferred,
        notification: false,
    }
}

const fn n(name: &'static str, class: RetryClass, inferred: bool) -> MethodInfo {
    MethodInfo {
        name,
        class,
        inferred,
        notification: true,
    }
}

/// Every method the Client sends to the Agent, requests first (in the order a frame trigger's
/// error message lists them), then notifications.
pub const METHODS: &[MethodInfo] = &[
    m("initialize", RetryClass::Idempotent, true),
    m("session/new", RetryClass::Duplicating, false),
    m("session/resume", RetryClass::Idempotent, false),
    m("session/prompt", RetryClass::Keyed, false),
    m("session/fork", RetryClass::Duplicating, false),
    m("session/list", RetryClass::Idempotent, true),
    m("session/close", RetryClass::Idempotent, false),
    m("session/delete", RetryClass::Idempotent, false),
    m("session/status", RetryClass::Idempotent, true),
    m("session/set_config_option", RetryClass::Idempotent, true),
    n("session/cancel", RetryClass::NotResent, true),
    n("$/cancel_request", RetryClass::NotResent, true),
];

/// Every method the Agent sends to the Client: its notifications and requests.
pub const AGENT_METHODS: &[MethodInfo] = &[
    n("session/update", RetryClass::NotResent, true),
    m("session/request_permission", RetryClass::Idempotent, true),
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
pub fn requests() -> impl Iterator<Item = &'static MethodInfo> {
    METHODS.iter().filter(|m| !m.notification)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_method_once_and_the_classes_of_the_proposal() {
        for (i, a) in METHODS.iter().enumerate() {
            assert!(METHODS[..i].iter().all(|b| b.name != a.name), "{}", a.name);
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
    }
}
