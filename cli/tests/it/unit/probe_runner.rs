//! The unit tests of `cli/src/probe/runner.rs`.

use acp_chaos_cli::probe::calibrate::Calibration;
use acp_chaos_cli::probe::{traces, ProbeArgs};
use clap::Parser;

use acp_chaos_cli::probe::runner::{kill_cells, runs_of, sweep_line};
use acp_chaos_cli::probe::Item;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    a: ProbeArgs,
}

fn args(flags: &[&str]) -> ProbeArgs {
    let mut v = vec!["probe"];
    v.extend(flags);
    v.extend(["--", "agent"]);
    Cli::parse_from(v).a
}

fn line(trace: &str, flags: &[&str], persistence_ms: Option<u64>) -> (u32, String) {
    let a = args(flags);
    let t = traces::find(trace).unwrap();
    let cal = Calibration {
        initialize_ms: 5,
        persistence_ms,
        watched_ms: 300,
        still_changing: false,
    };
    let cells = kill_cells(&a, &Item::Trace(t), Some(&cal));
    let runs = runs_of(a.repeat, &cells);
    (
        runs,
        sweep_line(t, &cells, runs, &a, Some(&cal)).unwrap_or_default(),
    )
}

/// A kill trace runs every point at every delay, at least once, and says which ran.
#[test]
fn a_kill_sweep_runs_and_names_every_point_and_delay() {
    assert_eq!(
        line("kill-after-answer", &[], None),
        (
            10,
            "kill point answered; delays 0, 1, 2, 5, 10, 20, 50, 100, 200, 500 ms; 10 cells, each run at least once".into()
        )
    );
    let (runs, l) = line("kill-across-life", &[], Some(40));
    assert_eq!(runs, 6 * 6);
    assert_eq!(
        l,
        "kill points prompt-written, answered, later-prompt-written, later-answered, turn-ended, replay-requested; delays 0, 1, 20, 40, 60, 80 ms (around the measured persistence latency, 40 ms); 36 cells, each run at least once"
    );
    let (runs, l) = line(
        "kill-across-life",
        &[
            "--kill-point",
            "turn-ended",
            "--delay-ms",
            "7",
            "--repeat",
            "4",
        ],
        Some(40),
    );
    assert_eq!(runs, 4);
    assert_eq!(
        l,
        "kill point turn-ended (pinned by --kill-point); delay 7 ms (pinned by --delay-ms); 1 cell, each run at least once"
    );
    // A point another trace has leaves this one's points whole.
    let (runs, _) = line("kill-after-answer", &["--kill-point", "turn-ended"], None);
    assert_eq!(runs, 10);
    assert_eq!(line("key-validation", &[], None), (3, String::new()));
}
