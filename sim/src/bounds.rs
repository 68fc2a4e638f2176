//! The one bounds table: the range of every number a user can set, in a scenario file, a
//! schedule or regression file, on the command line or in an `ACP_CHAOS_*` variable. The
//! scenario loader, [`crate::plan::Plan::check`] (schedule and regression files), the nemesis's
//! fault check and the CLI all read these, so a value out of range is refused (exit 2, the
//! message naming the field) before it can ask for absurd memory or time; each bound is wide
//! enough for every shipped scenario and every plan derived from one.

use std::ops::RangeInclusive;

/// An inclusive range of a whole-number field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bound {
    /// Smallest value allowed.
    pub min: u64,
    /// Largest value allowed.
    pub max: u64,
}

impl Bound {
    const fn new(min: u64, max: u64) -> Bound {
        Bound { min, max }
    }

    /// The range, for `clap::value_parser!(u64).range(..)`.
    pub const fn range(self) -> RangeInclusive<u64> {
        self.min..=self.max
    }

    /// Whether `v` is in range.
    pub fn contains(self, v: u64) -> bool {
        (self.min..=self.max).contains(&v)
    }

    /// What the field must be: `at most MAX` (when 0 is allowed) or `must be MIN to MAX`.
    pub fn rule(self) -> String {
        if self.min == 0 {
            format!("at most {}", self.max)
        } else {
            format!("must be {} to {}", self.min, self.max)
        }
    }

    /// `None` when `v` is in range, else [`Bound::rule`].
    pub fn check(self, v: u64) -> Option<String> {
        (!self.contains(v)).then(|| self.rule())
    }
}

/// Longest simulated time a scenario sets (a delay, a phase, a turn), ms.
pub const MS_MAX: u64 = 600_000;

/// A simulated time or delay in a scenario, ms.
pub const MS: Bound = Bound::new(0, MS_MAX);
/// A time in a plan: a scenario time plus a delay after it (a cancel, stop, close or fork).
pub const PLAN_MS: Bound = Bound::new(0, 2 * MS_MAX);
/// The safety phase and the liveness bound, ms.
pub const PHASE_MS: Bound = Bound::new(10, MS_MAX);
/// One-way latency, ms.
pub const LATENCY_MS: Bound = Bound::new(1, 10_000);
/// Sessions the Client opens (`workload.sessions`, a plan's `client.sessions`).
pub const SESSIONS: Bound = Bound::new(1, 16);
/// A session slot in a plan: the sessions opened and the forks made (the model Client keeps
/// at most 64).
pub const SLOT: Bound = Bound::new(0, 63);
/// Submissions in a workload (and a submission's number).
pub const SUBMISSIONS: Bound = Bound::new(1, 10_000);
/// Scripted `[[fault]]` entries in a scenario.
pub const SCRIPTED_FAULTS: Bound = Bound::new(0, 1_000);
/// Faults in a plan: scripted, or drawn by the swarm (`per_kind_max` × the fault kinds).
pub const PLAN_FAULTS: Bound = Bound::new(0, 2_000);
/// Raw `session/prompt` probes in a scenario or plan.
pub const RAW_PROBES: Bound = Bound::new(0, 1_000);
/// `swarm.per_kind_max`: most faults of one kind the swarm draws per seed.
pub const PER_KIND_MAX: Bound = Bound::new(0, 100);
/// Cluster nodes (`topology.nodes`).
pub const NODES: Bound = Bound::new(1, 5);
/// Torn-write block size of the simulated disk, bytes.
pub const BLOCK_SIZE: Bound = Bound::new(1, 1_000_000);
/// How long the user takes to answer a permission request, ms.
pub const PERMISSION_MS: Bound = Bound::new(0, 60_000);
/// The Client's prompt timeout, ms (derived: twice the longest turn, and 40).
pub const PROMPT_TIMEOUT_MS: Bound = Bound::new(1, 2 * MS_MAX + 40);
/// The Client's reconnect backoff and the transport's heartbeat, dead and connect timers, ms.
pub const TIMER_MS: Bound = Bound::new(1, MS_MAX);
/// Attempts per submission before the Client shows it as failed.
pub const ATTEMPTS: Bound = Bound::new(1, 1_000);

/// Seeds one command runs per scenario: a campaign lists its runs before it starts them, so
/// an absurd `--seeds` would ask for more memory than any machine has.
pub const SEEDS: Bound = Bound::new(1, 100_000_000);
/// `--jobs`: worker threads asked for (more than the cores or the work is capped, with a note;
/// above this it is refused as a typo).
pub const JOBS: Bound = Bound::new(1, 1_000_000);

/// A probability (`tool_rate`, `fail_rate`, ...): 0 to 1; NaN is out of range.
pub const RATE: RangeInclusive<f64> = 0.0..=1.0;

/// Whether `v` is a probability ([`RATE`]; NaN is not).
pub fn is_rate(v: f64) -> bool {
    RATE.contains(&v)
}

/// A probability from text (a `--tool-rate` flag): a number from 0 to 1.
///
/// Errors: not a number, NaN, or outside 0..=1 (the message says which).
pub fn parse_rate(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number (a probability from 0 to 1)"))?;
    if !is_rate(v) {
        return Err(format!("`{s}`: a probability from 0 to 1"));
    }
    Ok(v)
}
