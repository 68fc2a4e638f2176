//! `flip-bit`: crash the Agent, flip one bit in a record in the middle of its stored log while it
//! is down, restart it: a damaged disk.

use super::{crash_agent, DiskDamage, Row};

/// `flip-bit`'s row: an Agent crash that damages its log ([`crash_agent::damaging`]).
pub(super) const ROW: Row = crash_agent::damaging(
    "flip-bit",
    "crash the Agent, flip one bit in a record in the middle of its stored log, restart it (a correct Agent refuses to start); only where a scenario lists it",
    DiskDamage::FlipBit,
);
