//! The unit tests of `cli/src/probe/calibrate.rs`.

use acp_chaos_cli::probe::calibrate::{delays, time_scale};

#[test]
fn delays_surround_the_measured_latency_within_the_bound() {
    assert_eq!(delays(Some(40), 10_000), [0, 1, 20, 40, 60, 80]);
    assert_eq!(delays(Some(0), 10_000), [0, 1, 10]);
    assert_eq!(delays(None, 10_000), [0, 1, 10]);
    assert_eq!(delays(Some(2000), 3000), [0, 1, 1000, 2000, 3000]);
    assert_eq!(delays(Some(1502), 1500), [0, 1, 751, 1500]);
}

#[test]
fn the_time_scale_gives_initialize_three_times_what_it_took() {
    assert_eq!(time_scale(50, 2000), 1);
    assert_eq!(time_scale(4000, 2000), 6);
    assert_eq!(time_scale(10_000_000, 1), 1000);
}
