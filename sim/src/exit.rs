//! Exit codes: one table for every command (`acp-chaos run`, `replay`, `check`, `shrink`,
//! `mutants`, `matrix`, `merge`, `probe`, `agent`, ...).
//!
//! | code | meaning |
//! |---|---|
//! | 0 | every property valid (findings allowed) |
//! | 1 | some MUST broken (an invalid verdict, a failed regression, a refuted retry class) |
//! | 2 | usage or input error: a bad flag, a malformed scenario or schedule file (the message names the file, line and field) |
//! | 3 | nondeterminism: the same run gave two different histories |
//! | 4 | liveness failure, unknown verdict, or a vacuous campaign (a `sometimes` event never happened) |
//! | 130 | stopped by Ctrl-C with no failure found so far (the report covers the runs done) |

/// Every property valid (findings allowed).
pub const VALID: i32 = 0;
/// Some MUST broken.
pub const INVALID: i32 = 1;
/// Usage or input error (bad flag, malformed scenario file).
pub const USAGE: i32 = 2;
/// The same run gave two different histories.
pub const NONDETERMINISM: i32 = 3;
/// Liveness failure, unknown verdict, or a vacuous campaign.
pub const LIVENESS: i32 = 4;
/// Stopped by Ctrl-C before every run was done (the report covers the runs done), with no
/// failure found so far.
pub const INTERRUPTED: i32 = 130;

/// Every exit code with its meaning, in the order of the table above (for `--help`).
pub const TABLE: &[(i32, &str)] = &[
    (VALID, "every property valid (findings allowed)"),
    (INVALID, "some MUST broken: an invalid verdict, a failed regression, a refuted retry class"),
    (USAGE, "usage or input error: a bad flag or a malformed file (the message names the file, line and field)"),
    (NONDETERMINISM, "nondeterminism: the same run gave two different histories"),
    (LIVENESS, "liveness failure, unknown verdict, or a vacuous campaign"),
    (INTERRUPTED, "stopped by Ctrl-C with no failure found so far (the report covers the runs done)"),
];
