//! The unit tests of `cli/src/commands/sweep.rs`.

use acp_chaos_cli::commands::sweep::*;

#[test]
fn far_ranges_stay_far_and_in_range() {
    for base in [0, 1, 42, u64::MAX, u64::MAX / 3] {
        for which in [1, 2] {
            for seeds in [1, 1_000, u64::MAX / 2] {
                let s = far_start(base, which, seeds);
                assert!(s >= 1 << 32, "{base} {which} {seeds}: {s}");
                assert!(
                    s.checked_add(seeds).is_some(),
                    "{base} {which} {seeds}: {s}"
                );
            }
        }
    }
    assert_ne!(
        far_start(7, 1, 10),
        far_start(7, 2, 10),
        "the two ranges differ"
    );
    assert_ne!(
        far_start(7, 1, 10),
        far_start(8, 1, 10),
        "a new base looks elsewhere"
    );
}

#[test]
fn a_base_is_a_number_commit_or_random() {
    assert_eq!(base_of("12").unwrap().0, 12);
    assert!(base_of("twelve").is_err());
    assert!(base_of("random").is_ok());
}
