//! `zero-sector`: crash the Agent, zero one 512-byte sector inside the synced part of its stored
//! log while it is down, restart it: a bad sector.

use super::{crash_agent, DiskDamage, Row};

/// `zero-sector`'s row: an Agent crash that damages its log ([`crash_agent::damaging`]).
pub(super) const ROW: Row = crash_agent::damaging(
    "zero-sector",
    "crash the Agent, zero a 512-byte sector inside the synced part of its stored log, restart it (a correct Agent refuses to start); only where a scenario lists it",
    DiskDamage::ZeroSector,
);
