//! Exploring the space of runs beyond one seed.
//!
//! - [`shrink`]: a failing run to a minimal schedule;
//! - [`strategy`]: proptest strategies over plans (for a user's own Agent);
//! - [`regression`]: the corpus of shrunk schedules that must keep their verdicts;
//! - [`exhaustive`]: every schedule of at most k faults over a trace's `places`, pruned by
//!   abstract `state`, with a [`certificate`];
//! - [`lineage`]: faults chosen from what each good outcome of a passing run depended on;
//! - [`guided`]: a swarm that steers itself by what its runs covered;
//! - [`runner`]: the schedules of a level run in parallel with the models, in order with a
//!   user's parties;
//! - [`needs`]: what a trace must hold before a fault can show a mutant (a cancel, a close);
//! - [`orders`]: the races of a run (concurrent, dependent deliveries to one host) and the
//!   delay that reverses each (`explore --orders`).

pub mod certificate;
pub mod exhaustive;
pub mod guided;
pub mod lineage;
pub mod needs;
pub mod orders;
pub(crate) mod places;
pub mod regression;
pub mod runner;
pub mod shrink;
pub(crate) mod state;
pub mod strategy;
