//! [`Wakes`]: the simulated clock as the hosts see it, and the deadline of every timer a host
//! has armed, by host. The step loop reads the earliest deadline to skip the ticks where
//! nothing can happen (`step::idle_ms`), and each host's to leave a host with nothing to do out
//! of a step (turmoil's `Sim::step_by_with`).
//!
//! Every host timer goes through [`Wakes::sleep`] or [`Wakes::timeout`]: a timer armed with
//! `tokio::time` directly would be invisible here, and the step loop could skip past it (a
//! test, `cli/tests/it/unit/world_wakes.rs`, refuses `tokio::time` timers anywhere else in
//! `world/`).

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

/// The simulated time the hosts run at, and the deadlines of the timers they have armed.
#[derive(Debug, Default)]
pub struct Wakes {
    /// The simulated time the hosts run at now, ms (the step loop sets it before each step).
    now: Cell<u64>,
    /// Armed deadlines: (ms of simulated time, host) → how many timers of that host end then.
    armed: RefCell<BTreeMap<(u64, &'static str), u32>>,
}

/// One armed deadline; dropping it (the timer fired, or its future was dropped: cancelled,
/// aborted, or its host crashed) disarms it.
struct Armed<'a> {
    wakes: &'a Wakes,
    at: (u64, &'static str),
}

impl Drop for Armed<'_> {
    fn drop(&mut self) {
        let mut armed = self.wakes.armed.borrow_mut();
        if let Some(n) = armed.get_mut(&self.at) {
            *n -= 1;
            if *n == 0 {
                armed.remove(&self.at);
            }
        }
    }
}

impl Wakes {
    /// Set the simulated time the hosts run at, ms.
    pub fn set_now(&self, ms: u64) {
        self.now.set(ms);
    }

    /// The earliest deadline of a timer armed now, ms of simulated time (`None`: no timer).
    /// A timer ending at `t` wakes its task at the end of the step that reaches `t`; the task
    /// runs in the step that starts at `t`.
    pub fn next(&self) -> Option<u64> {
        self.armed.borrow().keys().next().map(|k| k.0)
    }

    /// Whether `host` has a timer armed that ends at or before `end_ms` (it must tick in the
    /// step that reaches its deadline, for the timer to fire at the end of that step).
    pub fn due(&self, host: &str, end_ms: u64) -> bool {
        self.armed
            .borrow()
            .keys()
            .take_while(|k| k.0 <= end_ms)
            .any(|k| k.1 == host)
    }

    /// How many timers are armed.
    pub fn len(&self) -> usize {
        self.armed.borrow().values().map(|n| *n as usize).sum()
    }

    /// Whether no timer is armed.
    pub fn is_empty(&self) -> bool {
        self.armed.borrow().is_empty()
    }

    /// Feed every armed deadline (ms of simulated time, host, how many) to `h`: part of a
    /// world snapshot ([`super::snapshot`]).
    pub fn hash_armed(&self, h: &mut impl std::hash::Hasher) {
        use std::hash::Hash;
        for (k, n) in self.armed.borrow().iter() {
            (k, n).hash(h);
        }
    }

    fn arm(&self, host: &'static str, after: Duration) -> Armed<'_> {
        // tokio rounds a deadline up to the next millisecond.
        let at = (
            self.now.get() + after.as_nanos().div_ceil(1_000_000) as u64,
            host,
        );
        *self.armed.borrow_mut().entry(at).or_default() += 1;
        Armed { wakes: self, at }
    }

    /// `tokio::time::sleep(after)` on `host` (the turmoil host whose task awaits it), armed
    /// here from its first poll until it ends or is dropped.
    pub async fn sleep(&self, host: &'static str, after: Duration) {
        let _armed = self.arm(host, after);
        tokio::time::sleep(after).await
    }

    /// `tokio::time::timeout(after, f)` on `host` (the turmoil host whose task awaits it),
    /// armed here from its first poll until it ends or is dropped.
    pub async fn timeout<F: Future>(
        &self,
        host: &'static str,
        after: Duration,
        f: F,
    ) -> Result<F::Output, tokio::time::error::Elapsed> {
        let _armed = self.arm(host, after);
        tokio::time::timeout(after, f).await
    }
}
