//! What the nemesis has in force between the step loop's steps: hosts down, the partition,
//! the one-way cut, the hold and the store cut, with the time each restart, heal or release
//! is due. [`InForce`] decides whether a process-level fault starts (one partition-like fault
//! at a time; a host already down stays down once), when each ends and what a heal undoes;
//! the step loop carries out what it decides on the simulated network.

use super::action::NemesisAction;
use super::kinds::Topology;

/// Something the step loop does at a simulated time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Timed {
    /// Restart a host that is down.
    Restart(&'static str),
    /// Heal the partition.
    Heal,
    /// Heal the one-way cut.
    HealOneway,
    /// Release the hold.
    Release,
    /// Heal the store's partition from this node.
    HealStore(&'static str),
    /// Fire the time-triggered fault with this index.
    Fire(usize),
}

/// A process-level fault that starts now, for the step loop to carry out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// Crash this host.
    Crash(&'static str),
    /// Cut the Client from its next hops, both ways.
    Partition,
    /// Cut one direction between the Client and its next hops (true: frames from the Client).
    Oneway(bool),
    /// Hold every frame between the Client and its next hops.
    Hold,
    /// Cut the store from this node.
    StoreCut(&'static str),
    /// This host stops at the protocol point it passed for this many ms.
    Pause(&'static str, u64),
    /// Every connection the Client opened breaks for the Client only (`half-open`).
    HalfOpen,
}

/// Something in force that ended at its time, for the step loop to undo.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// Restart this host.
    Restart(&'static str),
    /// Repair the partition.
    Heal,
    /// Repair the one-way cut, if one was in force (true: frames from the Client).
    HealOneway(Option<bool>),
    /// Release the hold.
    Release,
    /// Repair the store's link to this node.
    HealStore(&'static str),
    /// Time-triggered fault `i` is due.
    Fire(usize),
}

/// What a heal undoes, in the order the step loop undoes it.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Healed {
    /// The partition was in force.
    pub partitioned: bool,
    /// The store was cut from this node.
    pub store_cut: Option<&'static str>,
    /// A one-way cut was in force (true: frames from the Client).
    pub oneway: Option<bool>,
    /// The hold was in force.
    pub held: bool,
    /// The hosts that were down, to restart.
    pub down: Vec<&'static str>,
}

/// What the nemesis has in force, and what is due when.
#[derive(Debug, Default)]
pub struct InForce {
    /// Restarts, heals, releases and time-triggered faults, by simulated time (ms).
    pub timed: Vec<(u64, Timed)>,
    /// Hosts crashed and not yet restarted.
    pub down: Vec<&'static str>,
    /// The Client is cut from its next hops.
    pub partitioned: bool,
    /// The store is cut from this node.
    pub store_cut: Option<&'static str>,
    /// One-way cut in force (true: frames from the Client are lost).
    pub oneway: Option<bool>,
    /// Frames between the Client and its next hops are held.
    pub held: bool,
}

impl InForce {
    /// Nothing in force yet; the time-triggered faults `(at_ms, index)` due later.
    pub fn new(times: Vec<(u64, usize)>) -> InForce {
        InForce {
            timed: times
                .into_iter()
                .map(|(at, i)| (at, Timed::Fire(i)))
                .collect(),
            ..InForce::default()
        }
    }

    /// Whether action `a`, due at `now` in topology `t`, starts: a crash of a host that is up
    /// and exists here; a partition, one-way cut or hold when none of the three is in force
    /// (turmoil cannot hold a link that is cut one way, nor the reverse); a store cut on a
    /// cluster when none is in force. "The Agent" of a cluster, and a store cut without a
    /// node, mean `serving`, the node serving the Client. Records what starts and schedules
    /// its end.
    pub fn start(
        &mut self,
        a: NemesisAction,
        now: u64,
        t: Topology,
        serving: &'static str,
    ) -> Option<Start> {
        let link_free = !self.partitioned && self.oneway.is_none() && !self.held;
        if let NemesisAction::Pause { host, stall_ms } = a {
            // Nothing in force and nothing to end: the host sleeps it out itself.
            return Some(Start::Pause(host, stall_ms));
        }
        if a == NemesisAction::HalfOpen {
            // Nothing in force: the broken connections end by their heartbeats.
            return Some(Start::HalfOpen);
        }
        let (start, end) = match a {
            NemesisAction::Crash {
                host,
                restart_after_ms,
            } => {
                let host = if host == "agent" && t.cluster {
                    serving
                } else {
                    host
                };
                let exists = (host != "proxy" || t.proxy) && (host != "store" || t.cluster);
                if self.down.contains(&host) || !exists {
                    return None;
                }
                self.down.push(host);
                (Start::Crash(host), (restart_after_ms, Timed::Restart(host)))
            }
            NemesisAction::Partition { heal_after_ms } if link_free => {
                self.partitioned = true;
                (Start::Partition, (heal_after_ms, Timed::Heal))
            }
            NemesisAction::PartitionOneway {
                from_client,
                heal_after_ms,
            } if link_free => {
                self.oneway = Some(from_client);
                let end = (heal_after_ms, Timed::HealOneway);
                (Start::Oneway(from_client), end)
            }
            NemesisAction::Hold { release_after_ms } if link_free => {
                self.held = true;
                (Start::Hold, (release_after_ms, Timed::Release))
            }
            NemesisAction::PartitionStore {
                heal_after_ms,
                node,
            } if t.cluster && self.store_cut.is_none() => {
                let node = node.unwrap_or(serving);
                self.store_cut = Some(node);
                (
                    Start::StoreCut(node),
                    (heal_after_ms, Timed::HealStore(node)),
                )
            }
            _ => return None,
        };
        self.timed.push((now + end.0, end.1));
        Some(start)
    }

    /// `host` went down outside the schedule (a stdio Agent whose pipe ended), to restart at
    /// `restart_at_ms`; false when it is down already.
    pub fn exit(&mut self, host: &'static str, restart_at_ms: u64) -> bool {
        if self.down.contains(&host) {
            return false;
        }
        self.down.push(host);
        self.timed.push((restart_at_ms, Timed::Restart(host)));
        true
    }

    /// The next thing due by `now`, in time order (the first scheduled first among equals),
    /// taken off the schedule and no longer in force.
    pub fn next_due(&mut self, now: u64) -> Option<Ended> {
        self.timed.sort_by_key(|t| t.0);
        if self.timed.first().is_none_or(|t| t.0 > now) {
            return None;
        }
        Some(match self.timed.remove(0).1 {
            Timed::Restart(h) => {
                self.down.retain(|d| *d != h);
                Ended::Restart(h)
            }
            Timed::HealOneway => Ended::HealOneway(self.oneway.take()),
            Timed::Release => {
                self.held = false;
                Ended::Release
            }
            Timed::HealStore(node) => {
                self.store_cut = None;
                Ended::HealStore(node)
            }
            Timed::Heal => {
                self.partitioned = false;
                Ended::Heal
            }
            Timed::Fire(i) => Ended::Fire(i),
        })
    }

    /// The simulated time the next thing is due, ms.
    pub fn next_at(&self) -> Option<u64> {
        self.timed.iter().map(|t| t.0).min()
    }

    /// Nothing is in force and nothing is due.
    pub fn nothing_left(&self) -> bool {
        self.timed.is_empty()
            && !self.partitioned
            && self.store_cut.is_none()
            && self.oneway.is_none()
            && !self.held
            && self.down.is_empty()
    }

    /// Heal: everything in force ends now and nothing further is due.
    pub fn heal(&mut self) -> Healed {
        self.timed.clear();
        Healed {
            partitioned: std::mem::take(&mut self.partitioned),
            store_cut: self.store_cut.take(),
            oneway: self.oneway.take(),
            held: std::mem::take(&mut self.held),
            down: std::mem::take(&mut self.down),
        }
    }
}
