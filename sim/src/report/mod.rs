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
//!   `report.md` and `report.html` (no network: the SVG is inline): the fault in the header,
//!   op numbers on every diagram row, what should have happened ([`Expected`]) and, for a
//!   shrunk run, the original verdict and why it differs ([`why_they_differ`]);
//!   [`timeline_html`] is a run's `timeline.html`. [`summary_md`], [`summary_html`] and
//!   [`junit_xml`] are a campaign's `summary.md`, `summary.html` and `junit.xml`.
//!
//! Rule text is quoted from `spec/RULES.md`, compiled in ([`rule_text`]).
//!
//! Files: `diagram.rs` (rows from a history), `mermaid.rs` and `svg.rs` (two drawings of it),
//! `pages.rs` (a counterexample's `report.md` and `report.html`), `expected.rs` (what should
//! have happened), `compare.rs` (why a shrunk run's verdict differs from the original's),
//! `timeline.rs` (a run's `timeline.html`), `summary_md.rs`, `summary_html.rs` and
//! `junit.rs` (a campaign's `summary.md`, `summary.html` and `junit.xml`), `table.rs` (the terminal table and
//! coverage map), `rules.rs` (RULES.md quoted), `witnesses.rs` (each rule's checkers, mutants
//! and scenarios: `acp-chaos list rules`, `docs/rules.md`), `text.rs` (clipping and XML
//! escaping).

#[doc(hidden)]
pub mod compare;
#[doc(hidden)]
pub mod diagram;
#[doc(hidden)]
pub mod expected;
mod junit;
mod mermaid;
mod pages;
mod rules;
mod summary_html;
mod summary_md;
mod svg;
mod table;
mod text;
mod timeline;
pub mod witnesses;

pub use compare::why_they_differ;
pub use diagram::{Diagram, Item, Mark, DIAGRAM_ROWS_MAX, NO_OP};
pub use expected::{general as expected_general, Expected};
pub use junit::junit_xml;
pub use pages::{
    counterexample_html, counterexample_html_with, counterexample_md, counterexample_md_with,
    fault_line, Counterexample, PageExtras, PAGE_MAX_WIDTH,
};
pub use rules::{rule_text, rules_quoted};
pub use summary_html::{report_html_link, summary_html};
pub use summary_md::summary_md;
pub use svg::SVG_MIN_SCALE;
pub use table::{coverage_text, table_text};
pub use text::{clip, xml_escape};
pub use timeline::timeline_html;
