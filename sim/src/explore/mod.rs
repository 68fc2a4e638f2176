//! Exploring the space of runs beyond one seed: [`shrink`] a failing run to a minimal schedule,
//! draw plans with proptest [`strategy`] (for a user's own Agent), and replay the
//! [`regression`] corpus of shrunk schedules that must keep their verdicts.

pub mod regression;
pub mod shrink;
pub mod strategy;
