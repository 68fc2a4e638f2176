//! The unit tests of `cli/src/campaign/paired.rs`.

use acp_chaos_cli::campaign::paired::*;

#[test]
fn the_order_alternates_starting_with_this_build() {
    let firsts: Vec<bool> = (0..4).map(this_first).collect();
    assert_eq!(firsts, [true, false, true, false]);
}

#[test]
fn median_of_odd_and_even_counts() {
    assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
    assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
    assert!(median(&[]).is_nan());
    assert_eq!(spread(&[2.0, 5.0, 1.0]), (1.0, 5.0));
}

#[test]
fn figures_read_the_last_json_line_and_old_builds_too() {
    let now = "bench x\n  per core\n{\"seeds_per_s\":300.0,\"jobs\":2,\"seeds_per_s_per_core\":150.0,\"sim_to_real_per_core\":160.5}\n";
    assert_eq!(figures(now), Some((150.0, Some(160.5))));
    // A build from before the per-core figures: seeds/s over jobs, no simulated:real.
    let old = "{\"seeds_per_s\":300.0,\"jobs\":2}\n";
    assert_eq!(figures(old), Some((150.0, None)));
    assert_eq!(figures("bench printed no json\n"), None);
}
