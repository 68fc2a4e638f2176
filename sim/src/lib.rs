//! # acp-chaos
//!
//! A deterministic fault-injection simulator for the Agent Client Protocol (ACP v2). It runs
//! model Clients and Agents (from `acp-chaos-models`, re-exported as [`models`]) on a simulated
//! network ([turmoil](https://docs.rs/turmoil)), loses and stalls frames, partitions
//! connections, crashes and restarts processes with their stored sessions on a simulated disk,
//! and checks over many seeds that every `idempotencyKey` inserts at most one message (P1) and
//! no input silently vanishes (P2), and every other rule of `spec/RULES.md`.
//!
//! ## The map
//!
//! A run flows down the pipeline; the side tools reuse its pieces.
//!
//! ```text
//! scenario → plan → world (nemesis) → history → checkers → run → report
//! ```
//!
//! Ground floor (formats and vocabulary everything else imports):
//! - [`history`]: the run's ops (Jepsen invoke/ok/fail/info) in JSON Lines, the process and op
//!   names ([`history::op`]), the hash;
//! - [`summary`]: `summary.json`, a finished campaign; [`exit`]: the exit-code table;
//!   [`bounds`]: the range of every number a user can set (files, flags, environment);
//!   [`folders`]: report folders (what they may hold, atomic writes, `reports/latest`).
//!
//! The pipeline:
//! - [`scenario`]: a TOML run description (workload, Agent policies, timing, faults or swarm);
//! - [`nemesis`]: the fault vocabulary (kinds, triggers, process and frame faults);
//! - [`plan`]: every setting of one run derived from (scenario, seed, mutant, design), one RNG
//!   stream per choice; the swarm's draws;
//! - [`world`]: one run on turmoil: the step loop (safety → heal → liveness), the hosts, the
//!   frame layer, the ledger;
//! - [`checkers`]: one pure function per property (P1..P17, X4) from a history to a verdict;
//! - [`run`]: one (scenario, seed) to its history, verdicts and repro line;
//! - [`report`]: sequence diagrams (Mermaid, SVG), counterexample pages, `summary.md`,
//!   `junit.xml`, the terminal table.
//!
//! Beside it:
//! - [`harness`]: your own Agent, Client or proxy ([`world::Parties`]) through a campaign, a
//!   shrink and the report pages from your own `cargo test`, with the lines that rerun a failure;
//! - [`explore`]: every schedule of at most k faults over a trace with a certificate, lineage-driven
//!   and guided exploration, shrinking a failure, proptest strategies over plans, the regression
//!   corpus;
//! - [`retry_class`]: the retry-class audit and matrix (their own small discrete-event world).
//!
//! The `acp-chaos` command (campaigns over many seeds in parallel, the mutant scoreboard, the
//! probe of real Agent and Client processes with its mock model server, fuzz, findings) is the
//! crate `acp-chaos-cli`, built on this one: this library has no wall clock, no command line,
//! no progress bar and no HTTP server among its dependencies.
//!
//! ```no_run
//! use acp_chaos::{run, scenario::Scenario};
//! let s = Scenario::load("scenarios/rfd-03-retry-after-agent-restart.toml".as_ref()).unwrap();
//! let (history, result) = run::run_one(&s, 7, Some("no-dedup"), acp_chaos::models::Design::Stored);
//! println!("{} ops, hash {}", history.ops.len(), result.hash);
//! for v in result.verdicts { println!("{} {:?} {}", v.property, v.status, v.message); }
//! ```
//!
//! ## Test your own Agent
//!
//! Implement the sans-IO [`models::AgentModel`] (its effects are what the checkers read: the
//! effect contract in its docs and `docs/effects.md` lists them; a property that rests on one
//! your Agent owed and never emitted is reported unknown, "not checked", by
//! [`checkers::contract`]), run a [`plan::Plan`] with it through [`world::run_with`], and judge
//! the history with [`checkers::check_all`]; [`explore::strategy`] draws plans for proptest,
//! which shrinks a failing one. `docs/library.md` walks through it, and
//! `cli/tests/it/sdk_author.rs` is a whole example.
//!
//! ```no_run
//! use acp_chaos::checkers::{self, Status};
//! use acp_chaos::explore::strategy;
//! use acp_chaos::models::{Action, AgentInput, AgentModel, Design};
//! use acp_chaos::world::{self, AgentBoot};
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

#[cfg(not(tokio_unstable))]
compile_error!(
    "acp-chaos needs `--cfg tokio_unstable` so turmoil seeds tokio: a checkout's \
     .cargo/config.toml sets it (run cargo from inside the checkout; a RUSTFLAGS variable \
     overrides that file: add `--cfg tokio_unstable` to it); outside a checkout, e.g. \
     `cargo install acp-chaos-cli`, set RUSTFLAGS=\"--cfg tokio_unstable\""
);

pub use acp_chaos_models as models;

pub mod bounds;
pub mod checkers;
pub mod exit;
pub mod explore;
pub mod folders;
pub mod harness;
pub mod history;
pub mod nemesis;
pub mod plan;
pub mod report;
pub mod retry_class;
pub mod run;
pub mod scenario;
pub mod summary;
pub mod world;
