//! The unit tests of `cli/src/commands/github.rs`.

use acp_chaos_cli::commands::github::*;

#[test]
fn workflow_commands_escape_what_github_parses() {
    assert_eq!(
        error_line("P1 invalid (A1, A4): x", "50% of runs\nrepro: a"),
        "::error title=P1 invalid (A1%2C A4)%3A x::50%25 of runs%0Arepro: a"
    );
}
