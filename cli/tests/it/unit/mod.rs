//! Both crates' unit tests, one file per module they test (`checkers_wire` for
//! `sim/src/checkers/wire.rs`, `probe_infer` for `cli/src/probe/infer.rs`). They live here
//! rather than in `#[cfg(test)]` modules because a unit-test target compiles its crate a second
//! time in every test build (about 100 CPU-s for the library; `docs/internals/performance.md`,
//! "Building"): `sim/Cargo.toml` and `cli/Cargo.toml` set `test = false`.
//! What they reach is public; modules only they reach are `#[doc(hidden)]`.

mod bounds;
mod campaign_paired;
mod campaign_scoreboard;
mod checkers;
mod checkers_black_box_agent;
mod checkers_black_box_client_wire;
mod checkers_p05_key_validation;
mod checkers_retention;
mod checkers_wire;
mod commands_github;
mod commands_sweep;
mod explore_needs;
mod explore_shrink;
mod explore_strategy;
mod harness;
mod launch;
mod nemesis_kinds;
mod nemesis_trigger;
mod plan_swarm;
mod probe_calibrate;
mod probe_infer;
mod probe_line_reader;
mod probe_profile;
mod probe_realtime;
mod probe_runner;
mod probe_stdio_envelope;
mod probe_wire_log;
mod report_compare;
mod report_diagram;
mod report_expected;
mod retry_class_audit;
mod retry_class_matrix;
mod scenario;
mod scenario_builtin;
mod summary;
mod summary_groups;
#[cfg(target_os = "linux")]
mod summary_hashes;
mod world_snapshot;
mod world_wakes;
