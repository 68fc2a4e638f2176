//! `lose-synced-record`: crash the Agent, cut its stored log before its last synced record while it
//! is down, restart it: a disk that lost an acknowledged write.

use super::{crash_agent, DiskDamage, Row};

/// `lose-synced-record`'s row: an Agent crash that damages its log ([`crash_agent::damaging`]).
pub(super) const ROW: Row = crash_agent::damaging(
    "lose-synced-record",
    "crash the Agent, cut its stored log before its last synced record, restart it (a correct Agent refuses to start); only where a scenario lists it",
    DiskDamage::LoseSyncedRecord,
);
