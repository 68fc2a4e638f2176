//! # acp-chaos-cli
//!
//! The `acp-chaos` command over the [`acp_chaos`] library: nextest's split of a runner library
//! and its command line. The library runs one simulation and judges it (scenario → plan →
//! world → history → checkers → report, explore, the Harness); this crate holds what a command
//! needs around it, with the dependencies a library user should not compile (clap, indicatif,
//! ctrlc, mimalloc, tracing-subscriber, axum).
//!
//! - [`commands`]: the command line, one file per command (`main`, `parse_from`);
//! - [`campaign`]: many seeds in parallel, the summary files, shards and merge, progress, the
//!   mutant scoreboard and its witnesses, the benchmark;
//! - [`probe`]: real Agent and Client processes under black-box traces, our models as
//!   processes (`acp-chaos agent`, `acp-chaos client`), the mock model server, real-agent
//!   profiles;
//! - [`findings`]: what the correct models do where the rules leave a choice, measured over
//!   seeds (`acp-chaos findings`, `docs/findings/spec.md`);
//! - [`fuzz`]: seeded rounds of bad input (files, command lines, variables, frames to the
//!   stdio Agent), reproducible from their seed (`acp-chaos fuzz`);
//! - [`wall_clock`]: the one wall clock (outside runs only; the library has none);
//! - [`launch`]: how this process was launched, for the rerun lines it prints;
//! - [`error`]: the error every command returns (`CliError`, `Outcome`), the commands' and the
//!   probe's.
//!
//! Public for the binary and the tests; not a library interface (use [`acp_chaos`]). The
//! library's `compile_error!` guards the `tokio_unstable` cfg for both crates.

pub mod campaign;
/// The command line behind the `acp-chaos` binary (one file per command). Public only for the
/// binary and the tests (`main`, `parse_from`, `replay_line`); not a library interface.
pub mod commands;
pub mod error;
pub mod findings;
pub mod fuzz;
pub mod launch;
pub mod probe;
pub mod wall_clock;
