//! The integration tests: one binary (each extra test binary links the whole library and
//! turmoil again), one module per area.
//!
//! - `action`: `action.yml`'s steps run here as GitHub runs them (summary, annotations);
//! - `architecture`: `docs/internals/architecture.md` names every source file, and only those;
//! - `ci`: `check` on a summary (groups, `--github`), its errors, `junit.xml`'s properties;
//! - `cli`: the binary's contract: exit codes, error messages, the repro line;
//! - `determinism`: the same seeds give the same histories across runs, `--jobs` and processes;
//! - `docs`: every command block of the README and `docs/` marked `runnable` runs as shown;
//! - `explore`: exhaustive certificates across jobs and shards, pruning audits, lineage, guided;
//! - `explore_tables`: the result tables of `docs/explore.md` are what their commands print;
//! - `folders`: report folders replaced only when complete, leftovers cleared, write errors;
//! - `inputs`: bad files, variables and flags never crash it; a short fuzz round;
//! - `faults`: every fault kind fires in a shipped scenario and has its effect;
//! - `findings`: `acp-chaos findings` regenerates the committed findings pages;
//! - `package`: what `cargo package` puts in the published crates, the licence files, the
//!   library's dependencies;
//! - `surface`: what a user touches first: the terse output, repro lines, `--help`;
//! - `mutants`: every mutant is caught on its property and party; no false positives;
//! - `orders`: `explore --orders` reverses races (two nodes' store ops, two connections' frames);
//! - `regressions`: the corpus of shrunk schedules keeps its verdicts;
//! - `reports`: report folders, pages, diagrams, sharding and merging;
//! - `pages`: what a page shows (op numbers, expected behaviour, both verdicts, the fault, a
//!   diagram that fits, timelines, `summary.html`), checked without a browser; small reports;
//! - `sdk_author`: an Agent written from scratch against the library, found and shrunk;
//! - `probe` and `mock_model`: real processes and the mock model server;
//! - `probe_client`: a real Client process under test (`probe --client`);
//! - `stdio_agent`: `acp-chaos agent` as a process: the JSON-RPC envelope, lines refused unread (not UTF-8, overlong), its store on start;
//! - `wire_judged`: rules about sent frames judged from the frames (a user's Client, proxy);
//! - `witnesses`: every rule of RULES.md has its row, and the gaps are the known ones;
//! - `unit`: both crates' unit tests, one file per module they test.

mod common;

mod action;
mod architecture;
mod ci;
mod cli;
mod determinism;
mod docs;
mod explore;
mod explore_tables;
mod faults;
mod findings;
mod folders;
mod inputs;
mod mock_model;
mod mutants;
mod orders;
mod package;
mod pages;
mod probe;
mod probe_client;
mod regressions;
mod reports;
mod sdk_author;
mod stdio_agent;
mod surface;
mod unit;
mod wire_judged;
mod witnesses;
