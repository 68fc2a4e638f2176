//! Campaign progress on stderr: an indicatif bar (runs, runs/s, failing runs so far, ETA) on a
//! terminal; plain lines at every tenth of the work otherwise (CI logs), so a log never fills
//! with redraws. Wall time here measures the command, never a run.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};

/// Progress of `total` runs.
pub struct Progress {
    bar: Option<ProgressBar>,
    total: u64,
    started: Instant,
    /// The next run count at which a plain line is printed.
    next_line: AtomicU64,
}

impl Progress {
    /// A bar when stderr is a terminal, plain lines otherwise.
    pub fn new(total: u64) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let b = ProgressBar::new(total);
            b.set_style(
                ProgressStyle::with_template(
                    "{elapsed_precise} [{bar:30}] {pos}/{len} runs, {rate} runs/s, {msg}, eta {eta}",
                )
                .expect("a valid template")
                .with_key(
                    "rate",
                    |s: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                        let _ = write!(w, "{:.0}", s.per_sec());
                    },
                )
                .progress_chars("=> "),
            );
            b.set_message("0 failing");
            b
        });
        Progress {
            bar,
            total,
            started: crate::wall_clock::now(),
            next_line: AtomicU64::new(total.div_ceil(10).max(1)),
        }
    }

    /// `done` runs finished, `failing` of them with a violation.
    pub fn update(&self, done: u64, failing: u64) {
        if let Some(b) = &self.bar {
            b.set_position(done);
            if failing > 0 {
                b.set_message(format!("{failing} failing"));
            }
            return;
        }
        let next = self.next_line.load(Ordering::Relaxed);
        if done >= next
            && self
                .next_line
                .compare_exchange(
                    next,
                    next + self.total.div_ceil(10).max(1),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                )
                .is_ok()
        {
            eprintln!("{}", self.line(done, failing));
        }
    }

    fn line(&self, done: u64, failing: u64) -> String {
        let secs = self.started.elapsed().as_secs_f64().max(1e-3);
        let rate = done as f64 / secs;
        let eta = if rate > 0.0 {
            (self.total.saturating_sub(done)) as f64 / rate
        } else {
            0.0
        };
        format!(
            "progress: {done}/{} runs ({}%), {rate:.0} runs/s, {failing} failing, eta {eta:.0} s",
            self.total,
            done * 100 / self.total.max(1)
        )
    }

    /// The campaign ended (all runs done, or stopped by Ctrl-C).
    pub fn finish(&self, done: u64, failing: u64, interrupted: bool) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
        if interrupted {
            eprintln!(
                "interrupted: {}; writing the report for the runs done",
                self.line(done, failing)
            );
        }
    }
}
