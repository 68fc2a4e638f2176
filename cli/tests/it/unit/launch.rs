//! The unit tests of `cli/src/launch.rs`.

use acp_chaos_cli::launch::*;

#[test]
fn a_repro_line_gets_the_launch_program() {
    assert_eq!(program_for(false, false), "acp-chaos");
    assert_eq!(program_for(true, false), "cargo run --release --");
    assert_eq!(program_for(true, true), "cargo run --");
    let line = "acp-chaos replay rfd-02-lost-response --seed 3 --agent stored";
    assert_eq!(
        rewrite(line, "cargo run --release --"),
        "cargo run --release -- replay rfd-02-lost-response --seed 3 --agent stored"
    );
    assert_eq!(rewrite(line, "acp-chaos"), line);
    // Only a leading program name is replaced.
    assert_eq!(
        rewrite("ACP_CHAOS_SEED=3 cargo test", "cargo run --"),
        "ACP_CHAOS_SEED=3 cargo test"
    );
}

#[test]
fn an_error_quotes_its_commands_as_the_user_launched_the_binary() {
    let e = "no scenario named `x` (see `acp-chaos list`); mutants: `acp-chaos list mutants`";
    assert_eq!(
        rewrite_in(e, "cargo run --release --"),
        "no scenario named `x` (see `cargo run --release -- list`); mutants: \
         `cargo run --release -- list mutants`"
    );
    assert_eq!(rewrite_in(e, "acp-chaos"), e);
    // A path or a word that only contains the name is left alone.
    let p = "cannot read /tmp/acp-chaos-run/summary.json";
    assert_eq!(rewrite_in(p, "cargo run --"), p);
    assert_eq!(
        rewrite_in("run `acp-chaos`", "cargo run --"),
        "run `cargo run --`"
    );
}
