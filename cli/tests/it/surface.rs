//! What a user touches first (issue 19): the terse campaign output grouped by what broke,
//! repro lines that run as printed (`cargo run --release -- …` when cargo started the
//! binary), `ACP_CHAOS_SEED` picking the seed, the built-in scenarios from another folder, a
//! missing scenarios folder named, and `--help` listing the designs and exit codes.

use crate::common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_acp-chaos");

/// The binary as a test starts it: not by `cargo run` (its parent is this test).
fn bin() -> Command {
    let mut c = Command::new(BIN);
    c.env("ACP_CHAOS_SCENARIOS", common::scenarios_dir());
    for v in [
        "ACP_CHAOS_OUT",
        "ACP_CHAOS_SEED",
        "ACP_CHAOS_SEED_START",
        "ACP_CHAOS_SEEDS",
    ] {
        c.env_remove(v);
    }
    c
}

fn fresh_dir(name: &str) -> PathBuf {
    crate::common::fresh_dir(&format!("acp-chaos-surface-{name}"))
}

use crate::common::exit_and_printed as text;

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Under a mutant the output is one group per (property, rules) that failed,
/// each with an example, its repro line and its report page; the table is not printed; with
/// `--verbose` it is, and `summary.md` always has it.
#[test]
fn a_failing_campaign_prints_one_group_per_kind_of_failure() {
    let out = fresh_dir("groups");
    let o = bin()
        .args([
            "run",
            "rfd-02-retry-after-resume-new-connection",
            "crash-01-held-and-unechoed",
            "--seeds",
            "6",
        ])
        .args([
            "--mutant",
            "no-dedup",
            "--no-progress",
            "--no-regressions",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let failures = s["failures"].as_array().unwrap();
    let kinds: BTreeSet<String> = failures
        .iter()
        .map(|f| {
            format!(
                "{} {} {} {}",
                f["property"], f["status"], f["party"], f["rules"]
            )
        })
        .collect();
    let out_text = stdout(&o);
    let fails: Vec<&str> = out_text
        .lines()
        .filter(|l| l.starts_with("FAIL "))
        .collect();
    assert_eq!(fails.len(), kinds.len(), "one FAIL line per kind: {t}");
    assert!(
        failures.len() > fails.len(),
        "the groups fold several failures: {t}"
    );
    assert_eq!(
        out_text
            .lines()
            .filter(|l| l.starts_with("  repro:  acp-chaos replay"))
            .count(),
        kinds.len(),
        "{t}"
    );
    assert!(out_text.contains("  report: "), "{t}");
    assert!(
        !out_text.contains("first failing seed (party)"),
        "no table by default: {t}"
    );
    assert!(out_text.lines().count() < 12 + 6 * kinds.len(), "{t}");
    assert!(out_text.contains("result: INVALID"), "{t}");
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        md.contains("rfd-02-retry-after-resume-new-connection@stored"),
        "summary.md keeps the table"
    );

    let o = bin()
        .args([
            "run",
            "rfd-02-retry-after-resume-new-connection",
            "--seeds",
            "3",
            "--verbose",
        ])
        .args([
            "--mutant",
            "no-dedup",
            "--no-progress",
            "--no-regressions",
            "--out",
        ])
        .arg(fresh_dir("groups-verbose"))
        .output()
        .unwrap();
    assert!(
        stdout(&o).contains("first failing seed (party)"),
        "{}",
        text(&o)
    );
}

/// Started the way `cargo run` starts it (cargo's `CARGO` set, a shell as the parent), the
/// binary prints repro lines that start with `cargo run`; what follows the program is the
/// same command, and it reproduces the failure.
#[test]
fn a_repro_line_names_cargo_run_when_cargo_started_the_binary() {
    let out = fresh_dir("cargo-run");
    let cmd = format!(
        "{BIN} run rfd-02-retry-after-resume-new-connection --seeds 2 --mutant no-dedup --agent stored --no-progress --no-regressions --no-shrink --out {}; exit $?",
        out.display()
    );
    let o = Command::new("sh")
        .args(["-c", &cmd])
        .env("CARGO", "/usr/bin/cargo")
        .env("ACP_CHAOS_SCENARIOS", common::scenarios_dir())
        .output()
        .unwrap();
    let t = text(&o);
    let program = if cfg!(debug_assertions) {
        "cargo run --"
    } else {
        "cargo run --release --"
    };
    let line = stdout(&o)
        .lines()
        .find_map(|l| l.strip_prefix("  repro:  ").map(str::to_string))
        .unwrap_or_else(|| panic!("no repro line: {t}"));
    let rest = line
        .strip_prefix(&format!("{program} "))
        .unwrap_or_else(|| panic!("`{line}` does not start with `{program}`: {t}"));
    let args: Vec<&str> = rest.split_whitespace().collect();
    assert_eq!(args[0], "replay", "{line}");
    let o = bin().args(&args).output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(1),
        "the printed line reproduces: {}",
        text(&o)
    );

    // Without cargo's variable (an installed binary, or a test's child) the line is plain.
    let o = Command::new("sh")
        .args(["-c", &cmd])
        .env_remove("CARGO")
        .env("ACP_CHAOS_SCENARIOS", common::scenarios_dir())
        .output()
        .unwrap();
    assert!(
        stdout(&o).contains("  repro:  acp-chaos replay rfd-02-retry-after-resume-new-connection"),
        "{}",
        text(&o)
    );
}

fn replay_hash(o: &Output) -> String {
    let t = stdout(o);
    t.lines()
        .find_map(|l| {
            l.split("hash ")
                .nth(1)
                .map(|h| h.split_whitespace().next().unwrap().to_string())
        })
        .unwrap_or_else(|| panic!("no hash in {}", text(o)))
}

/// `ACP_CHAOS_SEED` picks the seed of `replay` and `shrink` (the flag wins), and the one seed
/// a campaign runs; `ACP_CHAOS_SEED_START` starts a campaign's range.
#[test]
fn acp_chaos_seed_picks_the_seed() {
    let by_flag = bin()
        .args(["replay", "swarm-basic", "--seed", "3", "--agent", "stored"])
        .output()
        .unwrap();
    let by_env = bin()
        .args(["replay", "swarm-basic", "--agent", "stored"])
        .env("ACP_CHAOS_SEED", "3")
        .output()
        .unwrap();
    let other = bin()
        .args(["replay", "swarm-basic", "--seed", "4", "--agent", "stored"])
        .output()
        .unwrap();
    assert_eq!(replay_hash(&by_flag), replay_hash(&by_env));
    assert_ne!(replay_hash(&by_flag), replay_hash(&other));
    let flag_wins = bin()
        .args(["replay", "swarm-basic", "--seed", "4", "--agent", "stored"])
        .env("ACP_CHAOS_SEED", "3")
        .output()
        .unwrap();
    assert_eq!(replay_hash(&flag_wins), replay_hash(&other));

    let bad = bin()
        .args(["replay", "swarm-basic"])
        .env("ACP_CHAOS_SEED", "x7")
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad));
    assert!(text(&bad).contains("ACP_CHAOS_SEED=x7"), "{}", text(&bad));
    let none = bin().args(["replay", "swarm-basic"]).output().unwrap();
    assert_eq!(none.status.code(), Some(2), "{}", text(&none));
    assert!(text(&none).contains("ACP_CHAOS_SEED"), "{}", text(&none));

    // A campaign: ACP_CHAOS_SEED runs that one seed, ACP_CHAOS_SEED_START starts the range.
    let one = fresh_dir("seed-one");
    let o = bin()
        .args([
            "run",
            "swarm-basic",
            "--agent",
            "stored",
            "--no-progress",
            "--no-regressions",
            "--out",
        ])
        .arg(&one)
        .env("ACP_CHAOS_SEED", "3")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(one.join("summary.json")).unwrap()).unwrap();
    assert_eq!(
        (s["seed_start"].as_u64(), s["seeds"].as_u64()),
        (Some(3), Some(1))
    );
    let start = fresh_dir("seed-start");
    let o = bin()
        .args([
            "run",
            "swarm-basic",
            "--agent",
            "stored",
            "--seeds",
            "2",
            "--no-progress",
            "--no-regressions",
            "--out",
        ])
        .arg(&start)
        .env("ACP_CHAOS_SEED_START", "9")
        .output()
        .unwrap();
    assert!(stdout(&o).contains("seeds 9..11"), "{}", text(&o));
}

/// From a folder with no `scenarios/`, the built-in scenarios are used (and said so); a
/// scenarios folder named but missing is an error naming it.
#[test]
fn another_folder_uses_the_built_in_scenarios_and_a_missing_folder_is_named() {
    let here = fresh_dir("elsewhere");
    let cache = fresh_dir("elsewhere-cache");
    let o = Command::new(BIN)
        .current_dir(&here)
        .env_remove("ACP_CHAOS_SCENARIOS")
        .env_remove("ACP_CHAOS_SEED")
        .env("XDG_CACHE_HOME", &cache)
        .args(["replay", "swarm-basic", "--seed", "3", "--agent", "stored"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("built-in scenarios"), "{}", text(&o));
    let by_repo = bin()
        .args(["replay", "swarm-basic", "--seed", "3", "--agent", "stored"])
        .output()
        .unwrap();
    assert_eq!(
        replay_hash(&o),
        replay_hash(&by_repo),
        "the built-in scenario is the repository's"
    );

    let missing = Path::new("/nonexistent/acp-chaos-scenarios");
    for args in [
        vec!["replay", "swarm-basic", "--seed", "3"],
        vec!["list", "scenarios"],
        vec!["run", "--seeds", "1"],
    ] {
        let o = Command::new(BIN)
            .current_dir(&here)
            .env("ACP_CHAOS_SCENARIOS", missing)
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(
            text(&o).contains("/nonexistent/acp-chaos-scenarios: no such scenarios folder"),
            "{args:?}: {}",
            text(&o)
        );
    }
}

/// `--help` lists every Agent design and every exit code.
#[test]
fn help_lists_the_designs_and_the_exit_codes() {
    let o = bin().arg("--help").output().unwrap();
    let t = stdout(&o);
    assert_eq!(o.status.code(), Some(0));
    for d in acp_chaos::models::Design::ALL {
        assert!(t.contains(d.as_str()), "{} missing: {t}", d.as_str());
    }
    for (code, meaning) in acp_chaos::exit::TABLE {
        assert!(
            t.contains(&format!("{code:>3}  {meaning}")),
            "exit {code} missing: {t}"
        );
    }
    let o = bin().args(["replay", "--help"]).output().unwrap();
    assert!(
        stdout(&o).contains("in-memory, stored, adapter or cluster"),
        "{}",
        text(&o)
    );
}
