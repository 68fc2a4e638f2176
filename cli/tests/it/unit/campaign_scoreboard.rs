//! The unit tests of `cli/src/campaign/scoreboard.rs`.

use acp_chaos_cli::campaign::scoreboard::median_to_detection;

#[test]
fn median_counts_seeds_up_to_and_including_the_catch() {
    assert_eq!(median_to_detection(&[], 10), None);
    // Caught on seed 0 of 1.
    assert_eq!(median_to_detection(&[0], 1), Some(1.0));
    // Caught on seed 3 of 4: from starts 0..=3 it takes 4, 3, 2, 1 seeds.
    assert_eq!(median_to_detection(&[3], 4), Some(2.5));
    // Caught on seed 1 of 4: starts 0, 1, 2, 3 take 2, 1, 4 (wrapping), 3.
    assert_eq!(median_to_detection(&[1], 4), Some(2.5));
    // Every seed catches.
    assert_eq!(median_to_detection(&[0, 1, 2, 3, 4], 5), Some(1.0));
}
