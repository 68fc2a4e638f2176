//! Arbitrary command lines through the CLI parser (in this process: no panic; a refusal is a
//! message), and arbitrary `ACP_CHAOS_*` values through the binary (a child process each: no
//! panic; `list` is never broken by a variable it does not read; a refused value is named).

use std::ffi::OsString;
use std::process::Command;

use rand::seq::SliceRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::{catch, picked, Report, Round};
use acp_chaos::plan;

/// Values a flag or a variable gets.
const VALUES: &[&str] = &[
    "",
    " ",
    "0",
    "1",
    "-1",
    "2",
    "1/0",
    "0/0",
    "2/1",
    "1/2",
    "3/3",
    "18446744073709551615",
    "18446744073709551616",
    "1000000000000",
    "100000",
    "nan",
    "inf",
    "0.5",
    "maybe",
    "true",
    "false",
    "stored",
    "cluster",
    "no-dedup",
    "swarm-basic",
    "/nonexistent",
    "/dev/null",
    "/",
    "--",
    "-",
    "é\u{0}",
    "1..0",
    "x,y",
];

/// The variables the CLI reads.
const VARS: &[&str] = &[
    "ACP_CHAOS_SEED",
    "ACP_CHAOS_SEEDS",
    "ACP_CHAOS_JOBS",
    "ACP_CHAOS_MUTANT",
    "ACP_CHAOS_AGENT",
    "ACP_CHAOS_SHARD",
    "ACP_CHAOS_OUT",
    "ACP_CHAOS_SCENARIOS",
    "ACP_CHAOS_NO_PROGRESS",
];

/// The round's argument vectors through [`Round::parse`].
pub(super) fn round(r: &Round, report: &mut Report) {
    if r.argv == 0 {
        return;
    }
    let words = vocabulary(&r.command);
    for case in 0..r.argv {
        if !picked(r, case) {
            continue;
        }
        let mut rng = plan::stream(r.seed, &format!("fuzz.argv.{case}"));
        let args = argv(&words, &mut rng);
        let input = || format!("{args:?}");
        match catch(|| (r.parse)(&args)) {
            Err(panic) => report.fail("argv", case, input(), format!("panicked: {panic}")),
            Ok(Ok(())) => report.count("argv.accepted"),
            Ok(Err(e)) => {
                report.count("argv.refused");
                if e.trim().is_empty() {
                    report.fail("argv", case, input(), "refused with no message".into());
                }
            }
        }
    }
}

/// The round's environments: `acp-chaos list designs` (which reads no variable: must
/// succeed) and `acp-chaos run fuzz-no-such-scenario --no-regressions` (reads them all: exit
/// 2, a message, no panic) under random values of the variables.
pub(super) fn env_round(r: &Round, report: &mut Report) -> anyhow::Result<()> {
    for case in 0..r.env {
        if !picked(r, case) {
            continue;
        }
        let mut rng = plan::stream(r.seed, &format!("fuzz.env.{case}"));
        let mut vars: Vec<(&str, &str)> = Vec::new();
        for v in VARS {
            if rng.gen_bool(0.4) {
                let x = *VALUES.choose(&mut rng).expect("non-empty");
                if !x.contains('\0') {
                    vars.push((v, x));
                }
            }
        }
        let input = || {
            vars.iter()
                .map(|(k, v)| format!("{k}={v:?}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        for (args, must_pass) in [
            (&["list", "designs"][..], true),
            (
                &["run", "fuzz-no-such-scenario", "--no-regressions"][..],
                false,
            ),
        ] {
            let mut c = Command::new(&r.bin);
            c.args(args).env_remove("RUST_LOG");
            for v in VARS {
                c.env_remove(v);
            }
            c.envs(vars.iter().copied());
            let out = c
                .output()
                .map_err(|e| anyhow::anyhow!("{}: {e}", r.bin.display()))?;
            let err = String::from_utf8_lossy(&out.stderr);
            let code = out.status.code();
            let what = format!("acp-chaos {}", args.join(" "));
            if err.contains("panicked") || code.is_none() || code == Some(101) {
                report.fail("env", case, input(), format!("{what}: {code:?} {err}"));
            } else if must_pass && code != Some(0) {
                report.fail(
                    "env",
                    case,
                    input(),
                    format!("{what} broken by a variable it does not read: {err}"),
                );
            } else if !must_pass && (code != Some(2) || err.trim().is_empty()) {
                report.fail(
                    "env",
                    case,
                    input(),
                    format!("{what}: want exit 2 and a message, got {code:?}: {err}"),
                );
            } else {
                report.count("env.cases");
            }
        }
    }
    Ok(())
}

/// Every subcommand and long flag of the command line (and some that are not).
fn vocabulary(cmd: &clap::Command) -> Vec<String> {
    let mut words = vec!["--help".to_string(), "--bogus".into(), "nope".into()];
    let push_flags = |c: &clap::Command, words: &mut Vec<String>| {
        for a in c.get_arguments() {
            if let Some(l) = a.get_long() {
                words.push(format!("--{l}"));
            }
        }
    };
    push_flags(cmd, &mut words);
    for sc in cmd.get_subcommands() {
        words.push(sc.get_name().to_string());
        push_flags(sc, &mut words);
    }
    words.sort();
    words.dedup();
    // `--help` and `--version` print and succeed: keep them rare.
    words.retain(|w| w != "--help" && w != "--version");
    words
}

/// One command line: a subcommand or not, then flags and values.
fn argv(words: &[String], rng: &mut ChaCha8Rng) -> Vec<OsString> {
    let mut v: Vec<OsString> = vec!["acp-chaos".into()];
    for _ in 0..rng.gen_range(0..=6) {
        let w = if rng.gen_bool(0.6) {
            words.choose(rng).expect("non-empty").clone()
        } else {
            VALUES.choose(rng).expect("non-empty").to_string()
        };
        v.push(w.into());
    }
    v
}
