//! # acp-chaos
//!
//! A deterministic fault-injection simulator for the Agent Client Protocol (ACP v2). It runs
//! model Clients and Agents (from `acp-chaos-models`, re-exported as [`models`]) on a simulated
//! network ([turmoil]), drops frames, stalls and partitions connections, crashes and restarts
//! processes with their stored sessions on a simulated disk, and checks over many seeds that
//! every `idempotencyKey` inserts at most one message (P1) and no input silently vanishes (P2).
//!
//! The pieces, in the field's terms:
//! - [`scenario`]: a TOML run description (workload, Agent policies, timing, faults or swarm);
//! - [`plan`]: every setting derived from (scenario, seed), each choice from its own RNG stream;
//! - [`world`]: one run: the hosts, the step loop, the nemesis, safety → heal → liveness;
//! - [`history`]: Jepsen-style ops in JSON Lines, hashed for determinism checks;
//! - [`check`]: checkers, pure functions from history to [`check::Verdict`];
//! - [`campaign`]: many seeds in parallel, the table, reports and exit codes.
//!
//! ```no_run
//! use acp_chaos::{campaign, scenario::Scenario};
//! let s = Scenario::load("scenarios/rfd-03-retry-after-agent-restart.toml".as_ref()).unwrap();
//! let (history, result) = campaign::run_one(&s, 7, Some("no-dedup"), acp_chaos::models::Design::Stored);
//! println!("{} ops, hash {}", history.ops.len(), result.hash);
//! for v in result.verdicts { println!("{} {:?} {}", v.property, v.status, v.message); }
//! ```

#[cfg(not(tokio_unstable))]
compile_error!(
    "acp-chaos needs `--cfg tokio_unstable` (set in .cargo/config.toml) so turmoil seeds tokio; \
     a RUSTFLAGS variable overrides that file: add `--cfg tokio_unstable` to it"
);

pub use acp_chaos_models as models;

pub mod audit;
pub mod bench;
pub mod campaign;
pub mod check;
pub mod cli;
pub mod history;
pub mod hosts;
pub mod ledger;
pub mod matrix;
pub mod plan;
pub mod scenario;
pub mod scoreboard;
pub mod shrink;
pub mod strategy;
pub mod world;
