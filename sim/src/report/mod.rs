//! Counterexamples people can read: a run drawn as a sequence diagram, and the report pages.
//!
//! - [`Diagram::of`] turns a [`crate::history::History`] and the [`crate::checkers::Verdict`] it broke into a sequence diagram:
//!   one participant per host (user, client, watcher, proxy, agent or cluster nodes, store);
//!   every frame an arrow from its sender to its receiver (a frame sent and never received is a
//!   lost arrow, `-x`); crashes, restarts, partitions, heals and every fault that fired as
//!   notes; the verdict's witness ops highlighted red and its enabling fault amber.
//! - [`Diagram::mermaid`] writes it as a Mermaid `sequenceDiagram` (GitHub and most Markdown
//!   viewers draw it); [`Diagram::svg`] draws the same diagram as a self-contained SVG.
//! - [`counterexample_md`] and [`counterexample_html`] are a counterexample folder's
//!   `report.md` and `report.html` (no network: the SVG is inline). [`summary_md`] and
//!   [`junit_xml`] are a campaign's `summary.md` and `junit.xml`.
//!
//! Rule text is quoted from `spec/RULES.md`, compiled in ([`rule_text`]).
//!
//! Files: `diagram.rs` (rows from a history), `mermaid.rs` and `svg.rs` (two drawings of it),
//! `pages.rs` (a counterexample's `report.md` and `report.html`), `summary_md.rs` and
//! `junit.rs` (a campaign's `summary.md` and `junit.xml`), `table.rs` (the terminal table and
//! coverage map), `rules.rs` (RULES.md quoted), `witnesses.rs` (each rule's checkers, mutants
//! and scenarios: `acp-chaos list rules`, `docs/rules.md`), `text.rs` (clipping and XML
//! escaping).

mod diagram;
mod junit;
mod mermaid;
mod pages;
mod rules;
mod summary_md;
mod svg;
mod table;
mod text;
pub mod witnesses;

pub use diagram::{Diagram, Item, Mark, DIAGRAM_ROWS_MAX};
pub use junit::junit_xml;
pub use pages::{counterexample_html, counterexample_md, Counterexample};
pub use rules::{rule_text, rules_quoted};
pub use summary_md::summary_md;
pub use table::{coverage_text, table_text};
pub use text::{clip, xml_escape};
