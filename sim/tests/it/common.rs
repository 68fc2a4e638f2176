//! Shared helpers for the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;

use acp_chaos::scenario::{self, Scenario};

/// The repo's scenarios folder.
pub fn scenarios_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("scenarios")
}

/// Load a shipped scenario by name.
pub fn scenario(name: &str) -> Scenario {
    scenario::resolve(&scenarios_dir(), name).expect("shipped scenario parses")
}
