//! Measuring the agent before the traces: how long it takes to answer `initialize`, and how
//! long after answering a prompt its files stop changing (its persistence latency). Kill
//! sweeps scale their delays to the second ([`delays`]); the conformance suite's time scale,
//! unless `--time-scale` pins it, to the first ([`time_scale`]).
//!
//! Persistence is watched from outside, as a kill sees it: the run's temporary `HOME` (where
//! an agent keeps its sessions, `{home}` in its command) is listed every few ms from the
//! answer on, and the latency is the last change seen, once nothing changed for twice that
//! long (at least [`QUIET_MS`], and the watch lasts at least [`WATCH_MIN_MS`]) or the wait
//! bound ran out.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::Serialize;

use super::driver::Driver;
use super::start::{fresh_home, launch, run_seed};
use super::{ProbeArgs, Target};
use crate::wall_clock::now;

/// Quiet needed after the last change before the watch ends, ms.
pub const QUIET_MS: u64 = 300;

/// The shortest watch, ms (within the wait bound): an agent that writes its session a second
/// after answering (a debounced flush) is seen.
pub const WATCH_MIN_MS: u64 = 2_000;

/// How often the home is listed, ms.
const POLL_MS: u64 = 5;

/// What one calibration run measured.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Calibration {
    /// Wall ms from writing `initialize` to its answer.
    pub initialize_ms: u64,
    /// Wall ms from the prompt's answer to the last change of the agent's files; `None` when
    /// the prompt got no answer (nothing to time).
    pub persistence_ms: Option<u64>,
    /// How long the files were watched after the answer, ms.
    pub watched_ms: u64,
    /// The files still changed when the wait bound ran out (the latency is a floor).
    pub still_changing: bool,
}

impl Calibration {
    /// The line the probe prints: what was measured and how.
    pub fn line(&self) -> String {
        let persistence = match (self.persistence_ms, self.still_changing) {
            (None, _) => "no answer to its prompt, persistence not measured".to_string(),
            (Some(0), _) => format!(
                "its files did not change after the prompt's answer (watched {} ms)",
                self.watched_ms
            ),
            (Some(l), false) => format!(
                "its files last changed {l} ms after the prompt's answer (watched {} ms)",
                self.watched_ms
            ),
            (Some(l), true) => format!(
                "its files still changed {l} ms after the prompt's answer, at the wait bound"
            ),
        };
        format!(
            "calibration: initialize answered in {} ms; {persistence}",
            self.initialize_ms
        )
    }
}

/// Kill delays scaled to a persistence latency `l` (ms), at most `bound_ms`: right at the
/// point, 1 ms after it, and around the latency (half, at, one and a half times, twice),
/// where a write not yet on disk is lost or a second write (a key after its message) is
/// missing. `0, 1` and `10` when nothing was written after the answer.
pub fn delays(l: Option<u64>, bound_ms: u64) -> Vec<u64> {
    let mut v = vec![0, 1];
    match l {
        Some(l) if l > 1 => v.extend([l / 2, l, l + l / 2, 2 * l]),
        _ => v.push(10),
    }
    // A delay past the bound is the bound: a latency measured at the bound is a floor.
    for d in v.iter_mut() {
        *d = (*d).min(bound_ms);
    }
    v.sort_unstable();
    v.dedup();
    v
}

/// The smallest time scale at which the model Client waits for `initialize` at least three
/// times as long as the agent took: `ceil(3 * initialize_ms / setup_timeout_ms)`, at least 1,
/// at most 1,000 (the flag's bound).
pub fn time_scale(initialize_ms: u64, setup_timeout_ms: u64) -> u64 {
    (3 * initialize_ms)
        .div_ceil(setup_timeout_ms.max(1))
        .clamp(1, 1000)
}

/// One calibration run: start the agent in a fresh home, time `initialize`, open a session,
/// send one prompt and watch the home from its answer on. `Err` when the agent could not be
/// started or answered nothing (the traces will say why).
pub fn measure(a: &ProbeArgs, target: &Target) -> anyhow::Result<Calibration> {
    let (home, cwd) = fresh_home(target)?;
    let (launch, mock) = launch(a, target, &home, &cwd)?;
    let mut d = Driver::new(launch, run_seed(a.seed, "calibration", 0));
    let result = watch(&mut d, &home, a.wait_ms());
    d.stop();
    if let Some(m) = mock {
        m.shutdown();
    }
    let _ = std::fs::remove_dir_all(&home);
    result.map_err(|why| anyhow::anyhow!(why))
}

fn watch(d: &mut Driver, home: &Path, bound_ms: u64) -> Result<Calibration, String> {
    let t0 = now();
    d.start()?;
    let initialize_ms = t0.elapsed().as_millis() as u64;
    d.new_session()?;
    d.submit(1);
    d.attempt(1)?;
    let answered = d.pump_until(d.timeout(), |d| d.answered(1))?;
    let mut c = Calibration {
        initialize_ms,
        persistence_ms: None,
        watched_ms: 0,
        still_changing: false,
    };
    if !answered {
        return Ok(c);
    }
    let at = now();
    let mut seen = files(home);
    let mut last = 0u64;
    loop {
        d.pump_for(POLL_MS)?;
        let t = at.elapsed().as_millis() as u64;
        let f = files(home);
        if f != seen {
            seen = f;
            last = t;
        }
        if t >= (last + QUIET_MS.max(2 * last)).max(WATCH_MIN_MS.min(bound_ms)) {
            break;
        }
        if t >= bound_ms {
            c.still_changing = last + POLL_MS * 4 >= t;
            break;
        }
    }
    c.persistence_ms = Some(last);
    c.watched_ms = at.elapsed().as_millis() as u64;
    Ok(c)
}

/// Every file under `dir` with its length and modification time (a change to either is a
/// write). Unreadable entries are skipped: they change nothing a kill could lose.
fn files(dir: &Path) -> BTreeMap<PathBuf, (u64, Option<SystemTime>)> {
    let mut out = BTreeMap::new();
    super::tree::each_file(dir, |p, m| {
        out.insert(p, (m.len(), m.modified().ok()));
    });
    out
}
