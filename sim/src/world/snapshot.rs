//! The world's state at a place, as one number: what exploration needs to merge two
//! placements of a fault soundly (`explore::state`). Taken only in runs that
//! exploration places faults over ([`super::Run::snapshots`]); other runs pay nothing.
//!
//! A run's future depends on (and a snapshot holds):
//! - the simulated time (the workload, the end of the safety phase and the run's bound are at
//!   fixed times, so two placements merge only at the same instant);
//! - every timer a host has armed, with its deadline ([`Wakes`]): heartbeats, request and
//!   store timeouts, backoffs, turn ends, stalled frames' releases, connects;
//! - each party's whole memory ([`acp_chaos_models::digest`]: its `Debug` form and its seeded
//!   streams' positions); a party that cannot say (a user's model without `state_digest`)
//!   makes the snapshot `None`, and exploration then never merges there;
//! - the nemesis's work in force with its end times (hosts down, partitions, holds, the store
//!   cut, restarts and heals due), published by the step loop;
//! - the ledger's run state (faults fired, routing stream position and the node serving the
//!   Client, reroutes, armed transient errors, silently broken connections and dead update
//!   streams, requests outstanding, frames queued, boots, the Client's pending list);
//! - each host's records written and not yet synced (a crash loses exactly those);
//! - what each host is in the middle of while it awaits within one input (a point's barrier,
//!   a store call): the actions its party decided and it has not run yet, the store request
//!   it awaits, the frame it holds until the store answers;
//! - the frames a host has queued on a connection and its writer has not taken yet (their
//!   bytes, not only their number).
//!
//! Frames in flight and the protocol state are read off the history itself
//! (`explore::state`). Not in it: the order in which turmoil runs the hosts within
//! one simulated millisecond (its own random stream): hosts only meet through frames and
//! datagrams that take at least a millisecond, so that order moves ops of one millisecond
//! past each other without changing what any host reads.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::rc::Rc;

use indexmap::IndexMap;

use super::wakes::Wakes;

/// What a snapshotting run keeps beside its ledger.
#[derive(Debug)]
pub struct Snapshots {
    wakes: Rc<Wakes>,
    /// Each running party's digest (`None`: the party gives none). A host that is down has
    /// no entry.
    digests: IndexMap<&'static str, Option<u64>>,
    /// The step loop's nemesis state.
    nemesis: u64,
    /// Records written and not synced since, per host.
    unsynced: IndexMap<&'static str, u32>,
    /// What each host is in the middle of while it awaits (a point's barrier, a store call):
    /// the actions its party decided and it has not run yet, the request it awaits, the
    /// frame it holds. Absent when the host waits for its next input.
    busy: IndexMap<&'static str, u64>,
}

impl Snapshots {
    /// Snapshots over the hosts' clock and timers.
    pub fn new(wakes: Rc<Wakes>) -> Snapshots {
        Snapshots {
            wakes,
            digests: IndexMap::new(),
            nemesis: 0,
            unsynced: IndexMap::new(),
            busy: IndexMap::new(),
        }
    }

    /// `host`'s party now holds the state `digest` (after it handled an input).
    pub fn set_digest(&mut self, host: &'static str, digest: Option<u64>) {
        self.digests.insert(host, digest);
    }

    /// The step loop's nemesis state changed to `digest`.
    pub fn set_nemesis(&mut self, digest: u64) {
        self.nemesis = digest;
    }

    /// `host` wrote a record, synced (`true`: everything before it is durable too) or not.
    pub fn persisted(&mut self, host: &'static str, synced: bool) {
        if synced {
            self.unsynced.shift_remove(host);
        } else {
            *self.unsynced.entry(host).or_insert(0) += 1;
        }
    }

    /// `host` awaits in the middle of an input holding `what` (`None`: it is done with the
    /// input and waits for the next one).
    pub fn set_busy(&mut self, host: &'static str, what: Option<u64>) {
        match what {
            Some(d) => {
                self.busy.insert(host, d);
            }
            None => {
                self.busy.shift_remove(host);
            }
        }
    }

    /// `host` crashed: its memory, what it was in the middle of and its unsynced records are
    /// gone.
    pub fn crashed(&mut self, host: &str) {
        self.digests.shift_remove(host);
        self.unsynced.shift_remove(host);
        self.busy.shift_remove(host);
    }

    /// The snapshot, given the ledger's own part (`ledger`, already hashed); `None` when a
    /// party gives no digest.
    pub fn take(&self, ledger: u64) -> Option<u64> {
        let mut h = DefaultHasher::new();
        ledger.hash(&mut h);
        self.nemesis.hash(&mut h);
        self.wakes.hash_armed(&mut h);
        for (host, d) in &self.digests {
            host.hash(&mut h);
            d.as_ref()?.hash(&mut h);
        }
        for (host, n) in &self.unsynced {
            (host, n).hash(&mut h);
        }
        for (host, d) in &self.busy {
            (host, d).hash(&mut h);
        }
        Some(h.finish())
    }
}

/// The hash of anything `Hash` (a frame's bytes: cheaper than its `Debug` form).
pub fn of_hash(x: &impl Hash) -> u64 {
    let mut h = DefaultHasher::new();
    x.hash(&mut h);
    h.finish()
}

/// The hash of anything `Debug` ([`acp_chaos_models::digest::of`] without streams), for the
/// ledger's and the step loop's parts.
pub fn of_debug(x: &impl std::fmt::Debug) -> u64 {
    acp_chaos_models::digest::of(x, &[])
}
