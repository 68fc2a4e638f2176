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
//! - [`checkers`]: checkers, pure functions from history to [`checkers::Verdict`];
//! - [`campaign`]: many seeds in parallel, the table, reports and exit codes;
//! - [`explore::strategy`]: proptest strategies for fault schedules, workloads and plans.
//!
//! ```no_run
//! use acp_chaos::{run, scenario::Scenario};
//! let s = Scenario::load("scenarios/rfd-03-retry-after-agent-restart.toml".as_ref()).unwrap();
//! let (history, result) = run::run_one(&s, 7, Some("no-dedup"), acp_chaos::models::Design::Stored);
//! println!("{} ops, hash {}", history.ops.len(), result.hash);
//! for v in result.verdicts { println!("{} {:?} {}", v.property, v.status, v.message); }
//! ```
//!
//! ## Using acp-chaos as a library: test your own Agent
//!
//! The world and the checkers take any Agent written against the sans-IO
//! [`models::AgentModel`] trait, and [`explore::strategy`] draws fault schedules and workloads for
//! [proptest](https://docs.rs/proptest), which shrinks a failing one:
//!
//! 1. Implement [`models::AgentModel`]: `handle` gets connections, JSON-RPC lines and timers
//!    ([`models::AgentInput`]) and pushes [`models::Action`]s: lines to send, records to
//!    persist on the simulated disk (only synced ones survive a crash), protocol points where
//!    the nemesis may crash it, and effects the checkers read (`insert`, `durable`,
//!    `dedup-hit`, `reject`: see the trait's docs); `retained` reports the messages it holds.
//! 2. [`world::run_with`] runs one [`plan::Plan`] with it, building it at every start of the
//!    Agent process from the records its earlier processes wrote ([`world::AgentBoot`]);
//!    [`checkers::check_all`] judges the history (P1 at-most-once, P2 no-silent-drop, ...).
//! 3. [`strategy::plan`] draws plans from a base ([`strategy::base`]: one Client, one session;
//!    its design declares your Agent's retention, `Design::Stored` durable) and a
//!    [`strategy::Space`] (fault kinds, counts, times, protocol points).
//!
//! ```no_run
//! use acp_chaos::checkers::{self, Status};
//! use acp_chaos::models::{Action, AgentInput, AgentModel, Design};
//! use acp_chaos::world::{self, AgentBoot};
//! use acp_chaos::explore::strategy;
//! use proptest::prelude::*;
//!
//! struct MyAgent { /* sessions, the idempotencyKey table, ... */ }
//!
//! impl MyAgent {
//!     fn recover(boot: &AgentBoot<'_>) -> MyAgent {
//!         // Rebuild sessions and keys from `boot.records` (what `Action::Persist` wrote).
//!         MyAgent {}
//!     }
//! }
//!
//! impl AgentModel for MyAgent {
//!     fn handle(&mut self, input: AgentInput, out: &mut Vec<Action>) {
//!         // Answer `AgentInput::Frame(conn, line)` with `Action::Send { conn, line }`, ...
//!     }
//!     fn is_idle(&self) -> bool {
//!         true
//!     }
//!     fn retained(&self) -> serde_json::Value {
//!         serde_json::json!({}) // {sessionId: [messageId, ...]}
//!     }
//! }
//!
//! let base = strategy::base(Design::Stored);
//! let space = strategy::Space::of(&base);
//! let config = ProptestConfig {
//!     cases: 64,
//!     rng_seed: proptest::test_runner::RngSeed::Fixed(1),
//!     failure_persistence: None,
//!     ..ProptestConfig::default()
//! };
//! proptest!(config, |(plan in strategy::plan(&base, &space))| {
//!     let history = world::run_with(&plan, |boot| Box::new(MyAgent::recover(&boot)));
//!     for v in checkers::check_all(&history) {
//!         prop_assert!(v.status != Status::Invalid, "{}: {}", v.property, v.message);
//!     }
//! });
//! ```
//!
//! A failure panics with the shrunk plan; `toml::to_string(&plan)` makes it a schedule file
//! that `toml::from_str` and [`world::run_with`] replay against your Agent (and
//! `acp-chaos replay --schedule FILE` against the model Agent). `sim/tests/sdk_author.rs` is
//! the whole example: a small Agent written from scratch holds every property over drawn
//! plans, and the same Agent with one planted bug (its idempotency keys are not written to
//! disk) is caught on P1 with the schedule shrunk to one crash and one input.

#[cfg(not(tokio_unstable))]
compile_error!(
    "acp-chaos needs `--cfg tokio_unstable` (set in .cargo/config.toml) so turmoil seeds tokio; \
     a RUSTFLAGS variable overrides that file: add `--cfg tokio_unstable` to it"
);

pub use acp_chaos_models as models;

pub mod campaign;
pub mod checkers;
pub mod cli;
pub mod exit;
pub mod explore;
pub mod history;
pub mod nemesis;
pub mod plan;
pub mod probe;
pub mod report;
pub mod retry_class;
pub mod run;
pub mod scenario;
pub mod summary;
pub mod wall_clock;
pub mod world;
