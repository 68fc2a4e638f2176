//! Report folders: a campaign writes into `<out>.partial/` and replaces `<out>` by rename only
//! when complete, so a kill never leaves `reports/latest` at an empty or partial folder; a
//! leftover of a killed campaign is recognised and cleared; a report that cannot be written
//! keeps the verdict's exit code; `mutants` takes `--out`.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};

use acp_chaos_cli::campaign::MARKER;

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_acp-chaos"));
    c.env("ACP_CHAOS_SCENARIOS", common::scenarios_dir());
    c.env_remove("ACP_CHAOS_OUT");
    c
}

use crate::common::fresh_dir;

/// `run rfd-01-retry-same-connection --seeds 2` into `out`.
fn two_seeds_into(out: &Path) -> Output {
    bin()
        .args(["run", "rfd-01-retry-same-connection", "--seeds", "2"])
        .args(["--no-progress", "--no-regressions", "--out"])
        .arg(out)
        .output()
        .unwrap()
}

use crate::common::exit_and_printed as text;

/// The campaign the kill test runs twice: long enough (a few seconds) to be killed mid-way.
const CAMPAIGN: [&str; 6] = [
    "run",
    "swarm-basic",
    "--seeds",
    "40",
    "--no-progress",
    "--no-regressions",
];

#[test]
fn a_rerun_killed_midway_leaves_latest_at_the_whole_old_report_and_the_next_run_clears_it() {
    let cwd = fresh_dir("acp-chaos-folders-kill");
    let reports = cwd.join("reports");
    let first = bin().current_dir(&cwd).args(CAMPAIGN).output().unwrap();
    assert_eq!(first.status.code(), Some(0), "{}", text(&first));
    let latest = reports.join("latest");
    let summary = std::fs::read(latest.join("summary.json")).unwrap();
    let leaf = std::fs::read_link(&latest).unwrap();
    let partial = reports.join(format!("{}.partial", leaf.display()));

    // The rerun, killed as soon as its staging folder is there (the runs have begun).
    let mut child = bin()
        .current_dir(&cwd)
        .args(CAMPAIGN)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut seen = false;
    for _ in 0..20_000 {
        if partial.join(MARKER).exists() {
            seen = true;
            break;
        }
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert!(seen, "the rerun never made its staging folder");
    assert_eq!(status.code(), None, "the rerun ended before the kill");
    // `latest` still names the old report, whole.
    assert_eq!(std::fs::read_link(&latest).unwrap(), leaf);
    assert_eq!(std::fs::read(latest.join("summary.json")).unwrap(), summary);
    assert!(latest.join("junit.xml").is_file() && latest.join("summary.md").is_file());
    assert!(
        partial.join(MARKER).is_file(),
        "the kill left no partial folder to clear"
    );

    // The next run clears the leftover, replaces the report and points `latest` at it.
    let again = bin().current_dir(&cwd).args(CAMPAIGN).output().unwrap();
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    assert!(!partial.exists(), "the leftover staging folder was kept");
    assert_eq!(std::fs::read(latest.join("summary.json")).unwrap(), summary);
    let names: Vec<String> = std::fs::read_dir(&reports)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "reports/ holds {names:?}");
}

#[test]
fn partial_artefacts_left_in_a_report_folder_are_cleared_not_refused() {
    let dir = fresh_dir("acp-chaos-folders-partial");
    let out = dir.join("r");
    // What the campaigns before staging folders left when killed mid-write.
    let run_dir = out.join("rfd-01-retry-same-connection-stored-seed3");
    std::fs::create_dir_all(&run_dir).unwrap();
    std::fs::write(run_dir.join("report.md.tmp"), "half").unwrap();
    std::fs::write(out.join("summary.json.tmp"), "{").unwrap();
    // A staging folder of a killed campaign, and one killed just after its swap (the old
    // report, marker gone).
    std::fs::create_dir_all(dir.join("r.partial")).unwrap();
    std::fs::write(dir.join("r.partial").join(MARKER), "").unwrap();
    std::fs::write(dir.join("r.partial").join("summary.json"), "{}").unwrap();
    let o = two_seeds_into(&out);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(!run_dir.exists() && !out.join("summary.json.tmp").exists());
    assert!(out.join("summary.json").is_file());
    assert!(!dir.join("r.partial").exists());

    // A folder beside it that only looks like a leftover (no marker, a foreign file) is
    // refused and kept.
    std::fs::create_dir_all(dir.join("r.partial")).unwrap();
    std::fs::write(dir.join("r.partial").join("notes.txt"), "mine").unwrap();
    let o = two_seeds_into(&out);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("notes.txt"), "{}", text(&o));
    assert!(dir.join("r.partial").join("notes.txt").is_file());
}

/// Run `args` with file writes capped at 4 KiB (`ulimit -f`, SIGXFSZ ignored): every larger
/// file fails with "File too large", as on a full disk.
fn run_with_small_disk(args: &[&str], out: &Path) -> Output {
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg("trap '' XFSZ; ulimit -f 8 && exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_acp-chaos"))
        .args(args)
        .arg("--out")
        .arg(out)
        .env("ACP_CHAOS_SCENARIOS", common::scenarios_dir())
        .env_remove("ACP_CHAOS_OUT");
    c.output().unwrap()
}

#[test]
fn a_report_that_cannot_be_written_keeps_the_invalid_verdict_and_the_old_report() {
    let dir = fresh_dir("acp-chaos-folders-full");
    let out = dir.join("r");
    let args = [
        "run",
        "rfd-02-retry-after-resume-new-connection",
        "--agent",
        "stored",
        "--mutant",
        "no-dedup",
        "--seeds",
        "1",
        "--no-progress",
        "--no-regressions",
        "--no-shrink",
    ];
    // On a full disk, with no report before: exit 1 (the verdict), the FAIL line and its
    // repro printed, what could not be written named, nothing left behind.
    let o = run_with_small_disk(&args, &out);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(
        t.contains("FAIL P") && t.contains("repro:  acp-chaos replay rfd-02"),
        "{t}"
    );
    assert!(t.contains("the report could not be written"), "{t}");
    assert!(t.contains("File too large"), "{t}");
    assert!(t.contains("report: not written"), "{t}");
    assert!(!out.exists(), "{t}");
    assert!(!dir.join("r.partial").exists(), "{t}");

    // With a whole report there before: it is kept as it was.
    let o = bin().args(args).arg("--out").arg(&out).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let before = std::fs::read(out.join("summary.json")).unwrap();
    let o = run_with_small_disk(&args, &out);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_eq!(std::fs::read(out.join("summary.json")).unwrap(), before);
    assert!(!dir.join("r.partial").exists());
}

#[test]
fn a_valid_campaign_whose_report_cannot_be_written_exits_2() {
    let dir = fresh_dir("acp-chaos-folders-full-valid");
    let o = run_with_small_disk(
        &[
            "run",
            "swarm-basic",
            "--seeds",
            "3",
            "--no-progress",
            "--no-regressions",
        ],
        &dir.join("r"),
    );
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(
        t.contains("the verdict was valid, the report is missing"),
        "{t}"
    );
}

#[test]
fn an_out_that_cannot_be_a_folder_is_refused_before_any_run_naming_it() {
    let dir = fresh_dir("acp-chaos-folders-file");
    let file = dir.join("a-file");
    std::fs::write(&file, "x").unwrap();
    for out in [file.join("r"), file.clone()] {
        let o = bin()
            .args(["run", "rfd-01-retry-same-connection", "--seeds", "1"])
            .args(["--no-progress", "--out"])
            .arg(&out)
            .output()
            .unwrap();
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{t}");
        assert!(t.contains(&file.display().to_string()), "{t}");
        assert!(!t.contains("report:"), "ran before refusing: {t}");
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "x");
}

#[test]
fn mutants_writes_its_report_to_out_and_leaves_reports_alone() {
    let cwd = fresh_dir("acp-chaos-folders-mutants");
    let out = cwd.join("board");
    let o = bin()
        .current_dir(&cwd)
        .args(["mutants", "--mutant", "no-dedup", "--seeds", "2"])
        .args(["--explore-seeds", "0", "--baseline-seeds", "2", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let t = text(&o);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{t}");
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(md.contains("no-dedup"), "no scoreboard in summary.md: {md}");
    assert!(
        !cwd.join("reports").exists(),
        "mutants wrote into ./reports"
    );
    assert!(
        t.contains(&format!("report: {}/summary.md", out.display())),
        "{t}"
    );
}
