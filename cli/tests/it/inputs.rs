//! Bad input never crashes the binary (issue 18): schedule and regression files out of the
//! bounds table or with unknown fields, `ACP_CHAOS_*` values, `--jobs`, the stdio Agent's
//! flags and store paths; and a short fixed-seed fuzz round ([`acp_chaos_cli::fuzz`]).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common;

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_acp-chaos"));
    c.env("ACP_CHAOS_SCENARIOS", common::scenarios_dir());
    c
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("acp-chaos-inputs-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A shipped regression file (a schedule file with `[expect]`), as text.
fn regression_text() -> String {
    std::fs::read_to_string(
        common::scenarios_dir().join(
            "regressions/cancel-01-withdraw-every-attempt-stored-seed0-cancel-answers-one.toml",
        ),
    )
    .unwrap()
}

fn edited(dir: &Path, name: &str, from: &str, to: &str) -> PathBuf {
    let text = regression_text();
    assert!(text.contains(from), "{from}");
    let p = dir.join(name);
    std::fs::write(&p, text.replacen(from, to, 1)).unwrap();
    p
}

#[test]
fn schedule_files_out_of_bounds_or_with_unknown_fields_exit_2_naming_file_and_field() {
    let dir = tmp("schedules");
    // sessions = 4294967295 used to abort on a 103 GB allocation; 0 was accepted; a million
    // ran for over a minute; unknown fields were ignored.
    for (name, from, to, field) in [
        (
            "huge.toml",
            "sessions = 1",
            "sessions = 4294967295",
            "client.sessions",
        ),
        (
            "zero.toml",
            "sessions = 1",
            "sessions = 0",
            "client.sessions",
        ),
        (
            "million.toml",
            "sessions = 1",
            "sessions = 1000000",
            "client.sessions",
        ),
        (
            "slot.toml",
            "slot = 0",
            "slot = 4294967295",
            "workload[0].slot",
        ),
        (
            "rate.toml",
            "tool_rate = 0.0",
            "tool_rate = nan",
            "agent.tool_rate",
        ),
        (
            "late.toml",
            "at_ms = 20",
            "at_ms = 18446744073709551615",
            "at_ms",
        ),
        ("top.toml", "seed = 0\n", "seed = 0\nbogus = 1\n", "bogus"),
        (
            "agent.toml",
            "[agent]\n",
            "[agent]\nbogus_agent = 1\n",
            "bogus_agent",
        ),
        (
            "workload.toml",
            "slot = 0\n",
            "slot = 0\nbogus_sub = 1\n",
            "bogus_sub",
        ),
        (
            "expect.toml",
            "[expect]\n",
            "[expect]\nbogus_expect = 1\n",
            "bogus_expect",
        ),
    ] {
        let p = edited(&dir, name, from, to);
        let o = bin()
            .args(["replay", "--schedule"])
            .arg(&p)
            .output()
            .unwrap();
        let e = err(&o);
        assert_eq!(o.status.code(), Some(2), "{name}: {e}");
        assert!(e.contains(&p.display().to_string()), "{name}: {e}");
        assert!(e.contains(field), "{name}: {e}");
        assert!(!e.contains("panicked"), "{name}: {e}");
        // The regression loader reads the same files the same way.
        let r = acp_chaos::explore::regression::load(&p).unwrap_err();
        let r = format!("{r:#}");
        assert!(
            r.contains(&p.display().to_string()) && r.contains(field),
            "{r}"
        );
    }
    // An unknown field's line is named: `bogus` is on line 6 of top.toml.
    let e = err(&bin()
        .args(["replay", "--schedule"])
        .arg(dir.join("top.toml"))
        .output()
        .unwrap());
    assert!(e.contains("top.toml:6:"), "{e}");
    // The file as shipped still loads and replays.
    let p = edited(&dir, "same.toml", "seed = 0", "seed = 0");
    let o = bin()
        .args(["replay", "--schedule"])
        .arg(&p)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn empty_variables_are_unset_and_a_bad_one_breaks_only_the_commands_that_read_it() {
    let out = tmp("env-out");
    let empty = [
        "ACP_CHAOS_MUTANT",
        "ACP_CHAOS_AGENT",
        "ACP_CHAOS_SHARD",
        "ACP_CHAOS_OUT",
        "ACP_CHAOS_SEEDS",
        "ACP_CHAOS_NO_PROGRESS",
    ];
    let mut c = bin();
    for v in empty {
        c.env(v, "");
    }
    let o = c
        .args(["run", "rfd-01-retry-same-connection", "--seeds", "1"])
        .args(["--no-regressions", "--out"])
        .arg(out.join("r"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    // An empty ACP_CHAOS_SCENARIOS is the default folder (here: none in the temp dir).
    let o = bin()
        .env("ACP_CHAOS_SCENARIOS", "")
        .current_dir(common::scenarios_dir().join(".."))
        .args(["list", "scenarios"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    // A bad value of a variable `list` does not read leaves `list` alone ...
    for (var, bad) in [
        ("ACP_CHAOS_SEEDS", "abc"),
        ("ACP_CHAOS_AGENT", "nope"),
        ("ACP_CHAOS_SHARD", "x"),
        ("ACP_CHAOS_NO_PROGRESS", "maybe"),
        ("ACP_CHAOS_JOBS", "-3"),
    ] {
        let o = bin()
            .env(var, bad)
            .args(["list", "designs"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{var}={bad}: {}", err(&o));
        // ... and `run` names it.
        let o = bin()
            .env(var, bad)
            .args(["run", "rfd-01-retry-same-connection", "--no-regressions"])
            .output()
            .unwrap();
        let e = err(&o);
        assert_eq!(o.status.code(), Some(2), "{var}={bad}: {e}");
        assert!(e.contains(&format!("{var}={bad}")), "{e}");
    }
    // `maybe` says what is allowed.
    let o = bin()
        .env("ACP_CHAOS_NO_PROGRESS", "maybe")
        .args(["run", "rfd-01-retry-same-connection"])
        .output()
        .unwrap();
    assert!(err(&o).contains("0, false, no, off"), "{}", err(&o));
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn absurd_jobs_are_refused_and_jobs_are_capped_at_the_work() {
    let o = bin()
        .args([
            "run",
            "rfd-01-retry-same-connection",
            "--jobs",
            "1000000000",
        ])
        .output()
        .unwrap();
    let e = err(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("--jobs") && e.contains("must be 1 to"), "{e}");
    // One run to do: one thread, whatever the machine.
    let out = tmp("jobs");
    let o = bin()
        .args(["run", "rfd-01-retry-same-connection", "--seeds", "1"])
        .args(["--agent", "stored", "--jobs", "64", "--no-progress"])
        .args(["--no-regressions", "--out"])
        .arg(out.join("r"))
        .output()
        .unwrap();
    let e = err(&o);
    assert_eq!(o.status.code(), Some(0), "{e}");
    assert!(e.contains("--jobs 64") && e.contains("using 1"), "{e}");
    assert!(String::from_utf8_lossy(&o.stdout).contains("jobs=1"));
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn the_stdio_agent_refuses_rates_outside_0_to_1_and_names_the_store_path_it_cannot_use() {
    for (flag, v) in [
        ("--tool-rate", "2"),
        ("--tool-rate", "nan"),
        ("--permission-rate", "-0.5"),
        ("--permission-rate", "NaN"),
    ] {
        let o = bin()
            .arg("agent")
            .arg(format!("{flag}={v}"))
            .output()
            .unwrap();
        let e = err(&o);
        assert_eq!(o.status.code(), Some(2), "{flag} {v}: {e}");
        assert!(e.contains(flag) && e.contains("0 to 1"), "{e}");
    }
    // `sessions.log` is a folder: "Is a directory" says which path.
    let dir = tmp("store");
    std::fs::create_dir_all(dir.join("sessions.log")).unwrap();
    let o = bin()
        .arg("agent")
        .arg("--store")
        .arg(&dir)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let e = err(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.contains(&dir.join("sessions.log").display().to_string()),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn parse(args: &[std::ffi::OsString]) -> Result<(), String> {
    acp_chaos_cli::commands::parse_from(args)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

fn round(files: u64, argv: u64, env: u64, frames: u64) -> acp_chaos_cli::fuzz::Round {
    acp_chaos_cli::fuzz::Round {
        seed: 18,
        files,
        run_every: 10,
        argv,
        env,
        frames,
        case: None,
        bin: env!("CARGO_BIN_EXE_acp-chaos").into(),
        scenarios: common::scenarios_dir(),
        command: <acp_chaos_cli::commands::Cli as clap::CommandFactory>::command(),
        parse,
    }
}

#[test]
fn a_short_fuzz_round_finds_no_panic_hang_or_nameless_refusal() {
    // `acp-chaos fuzz` runs long rounds (docs/fuzz.md); this one takes seconds.
    let r = round(600, 1_000, 4, 3_200);
    let report = acp_chaos_cli::fuzz::run(&r).unwrap();
    for f in &report.failures {
        eprintln!(
            "{} case {}: {}\n{}\nrepro: {}",
            f.area,
            f.case,
            f.problem,
            f.input,
            acp_chaos_cli::fuzz::repro(&r, f)
        );
    }
    assert!(report.failures.is_empty(), "{:?}", report.counts);
    // Every area ran, and the files both loaded and were refused.
    for k in [
        "files.scenario.loaded",
        "files.scenario.refused",
        "files.schedule.loaded",
        "files.schedule.refused",
        "files.regression.loaded",
        "files.regression.refused",
        "files.runs",
        "argv.accepted",
        "argv.refused",
        "env.cases",
    ] {
        assert!(
            report.counts.get(k).copied().unwrap_or(0) > 0,
            "{k}: {:?}",
            report.counts
        );
    }
    assert_eq!(report.counts["frames.sent"], 3_200);
}

#[test]
fn the_fuzz_round_reports_a_parser_that_panics_with_its_input_and_repro() {
    fn panics(args: &[std::ffi::OsString]) -> Result<(), String> {
        if args.len() > 2 {
            panic!("planted");
        }
        Ok(())
    }
    let mut r = round(0, 50, 0, 0);
    r.parse = panics;
    let report = acp_chaos_cli::fuzz::run(&r).unwrap();
    let f = report.failures.first().expect("the planted panic is found");
    assert!(f.problem.contains("planted"), "{}", f.problem);
    assert!(f.input.contains("acp-chaos"), "{}", f.input);
    assert!(
        acp_chaos_cli::fuzz::repro(&r, f).contains(&format!(
            "--seed 18 --files 0 --argv 50 --env 0 --frames 0 --case {}",
            f.case
        )),
        "{}",
        acp_chaos_cli::fuzz::repro(&r, f)
    );
}

#[test]
fn check_on_a_file_that_is_not_utf8_names_the_file_and_line() {
    let dir = tmp("not-utf8");
    // A history whose third line holds a byte that is not UTF-8, and a file whose first
    // line does (it was taken for an empty file).
    let history = dir.join("history.jsonl");
    let run = bin()
        .args([
            "replay",
            "cancel-01-withdraw-every-attempt",
            "--seed",
            "0",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", err(&run));
    let mut lines: Vec<Vec<u8>> = run
        .stdout
        .split(|b| *b == b'\n')
        .map(<[u8]>::to_vec)
        .collect();
    lines[2].insert(5, 0xff);
    std::fs::write(&history, lines.join(&b'\n')).unwrap();
    let first = dir.join("first.jsonl");
    std::fs::write(&first, b"\xff\xfe{}\n").unwrap();
    for (file, at) in [(&history, ":3: "), (&first, ":1: ")] {
        let o = bin().arg("check").arg(file).output().unwrap();
        let e = err(&o);
        assert_eq!(o.status.code(), Some(2), "{e}");
        assert!(e.contains(&format!("{}{at}", file.display())), "{e}");
        assert!(e.contains("UTF-8"), "{e}");
    }
}

#[test]
fn replay_schedule_refuses_a_malformed_expect_table_naming_file_and_field() {
    let dir = tmp("expect");
    for (name, from, to, field) in [
        (
            "verdict.toml",
            r#"verdict = "invalid""#,
            r#"verdict = "broken""#,
            "verdict",
        ),
        (
            "property.toml",
            r#"property = "P6""#,
            r#"property = "P99""#,
            "expect.property",
        ),
        ("party.toml", r#"party = "agent""#, "party = 5", "party"),
        ("missing.toml", r#"party = "agent""#, "", "expect.party"),
    ] {
        let f = edited(&dir, name, from, to);
        let o = bin()
            .args(["replay", "--schedule"])
            .arg(&f)
            .output()
            .unwrap();
        let e = err(&o);
        assert_eq!(o.status.code(), Some(2), "{name}: {e}");
        assert!(e.contains(&f.display().to_string()), "{name}: {e}");
        assert!(e.contains(field), "{name}: {e}");
    }
}

#[test]
fn the_last_seed_is_refused_naming_only_the_flag_given() {
    let o = bin()
        .args(["cancel-01-withdraw-every-attempt", "--no-progress"])
        .args(["--seed", "18446744073709551615"])
        .output()
        .unwrap();
    let e = err(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("--seed 18446744073709551615"), "{e}");
    assert!(!e.contains("--seeds") && !e.contains("--seed-start"), "{e}");
}

#[test]
fn output_folders_that_cannot_be_written_are_refused_before_the_work() {
    // A file where a folder must be made: nothing can be written under it, by root either.
    let dir = tmp("unwritable");
    let file = dir.join("a-file");
    std::fs::write(&file, "").unwrap();
    let under = file.join("x");
    for args in [
        vec![
            "cancel-01-withdraw-every-attempt",
            "--no-progress",
            "--seeds",
            "1",
            "--out",
        ],
        vec![
            "findings",
            "cancel-01-withdraw-every-attempt",
            "--seeds",
            "1",
            "--out",
        ],
        vec!["mutants", "swarm-basic", "--seeds", "1", "--out"],
        vec!["explore", "cancel-01-withdraw-every-attempt", "--out"],
    ] {
        let t = acp_chaos_cli::wall_clock::now();
        let o = bin().args(&args).arg(under.join("y")).output().unwrap();
        let e = err(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        assert!(
            e.contains(&format!("--out {}", under.join("y").display())),
            "{args:?}: {e}"
        );
        assert!(
            t.elapsed().as_secs() < 20,
            "{args:?}: took {:?}",
            t.elapsed()
        );
    }
}

/// A negative count is refused as a value of its flag (clap's tip to write `-- -1` would make
/// `-1` a scenario name), and a scenario named as the docs abbreviate it gets the full name.
#[test]
fn a_negative_seed_count_and_an_abbreviated_scenario_get_errors_that_help() {
    for args in [
        vec!["--seeds", "-1"],
        vec!["run", "--seeds", "-1"],
        vec!["mutants", "--seeds", "-1"],
    ] {
        let o = bin().args(&args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", err(&o));
        assert!(
            err(&o).contains("invalid value '-1' for '--seeds")
                && err(&o).contains("a count of seeds is a whole number (got `-1`)")
                && !err(&o).contains("-- -1"),
            "{args:?}: {}",
            err(&o)
        );
    }
    let o = bin().args(["rfd-02", "--seeds", "1"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(
        err(&o).contains(
            "no scenario named `rfd-02`; did you mean `rfd-02-retry-after-resume-new-connection`?"
        ),
        "{}",
        err(&o)
    );
}
