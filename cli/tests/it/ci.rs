//! What CI reads: `acp-chaos check` on a campaign's `summary.json` (a gate with failing groups,
//! `--github` annotations and step summary), its errors on files it does not read, and the
//! properties and times of `junit.xml`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::common;

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_acp-chaos"));
    c.env("ACP_CHAOS_SCENARIOS", common::scenarios_dir())
        .env("ACP_CHAOS_NO_PROGRESS", "1")
        .env_remove("GITHUB_STEP_SUMMARY");
    c
}

use crate::common::printed as text;

/// A small mutant campaign's report folder (run once for the tests of this file).
fn mutant_report() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let out = std::env::temp_dir().join("acp-chaos-ci-mutant");
        let o = bin()
            .args([
                "rfd-01-retry-same-connection",
                "--seeds",
                "2",
                "--mutant",
                "no-dedup",
                "--out",
            ])
            .arg(&out)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
        out
    })
}

#[test]
fn check_on_a_summary_prints_one_line_per_failing_group_and_exits_as_the_campaign() {
    let dir = mutant_report();
    let o = bin()
        .arg("check")
        .arg(dir.join("summary.json"))
        .output()
        .unwrap();
    let out = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    // rfd-01 runs under every design it lists; P1 fails under each, in one group (one cause).
    let fails: Vec<&str> = out.lines().filter(|l| l.starts_with("FAIL ")).collect();
    let mut titles = fails.clone();
    titles.sort();
    titles.dedup();
    assert_eq!(titles.len(), fails.len(), "one line per group: {out}");
    let p1 = fails
        .iter()
        .find(|l| l.starts_with("FAIL P1 invalid"))
        .unwrap_or_else(|| panic!("{out}"));
    let designs = p1.split(" on ").nth(1).unwrap().split(',').next().unwrap();
    assert!(
        designs.split(' ').count() >= 2,
        "every design in one group: {out}"
    );
    assert_eq!(
        out.matches("\n  repro: acp-chaos replay rfd-01").count(),
        out.lines().filter(|l| l.starts_with("FAIL ")).count(),
        "one repro per group: {out}"
    );
    // The folder works as well as the file.
    let o2 = bin().arg("check").arg(dir).output().unwrap();
    assert_eq!(o2.stdout, o.stdout);
}

#[test]
fn check_github_annotates_each_group_and_appends_the_step_summary() {
    let dir = mutant_report();
    let summary = std::env::temp_dir().join("acp-chaos-ci-step-summary.md");
    std::fs::write(&summary, "before\n").unwrap();
    let o = bin()
        .args(["check", "--github"])
        .arg(dir.join("summary.json"))
        .env("GITHUB_STEP_SUMMARY", &summary)
        .output()
        .unwrap();
    let out = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    let errors: Vec<&str> = out.lines().filter(|l| l.starts_with("::error ")).collect();
    let fails = bin()
        .arg("check")
        .arg(dir)
        .output()
        .unwrap()
        .stdout
        .split(|b| *b == b'\n')
        .filter(|l| l.starts_with(b"FAIL "))
        .count();
    assert_eq!(errors.len(), fails, "{out}");
    for e in &errors {
        // title=...::message, the message on one line with %0A for newlines.
        let (title, message) = e["::error title=".len()..].split_once("::").unwrap();
        assert!(title.starts_with("acp-chaos P"), "{e}");
        assert!(!title.contains(',') && !title.contains(':'), "{e}");
        assert!(message.contains("%0Arepro: acp-chaos replay "), "{e}");
    }
    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(
        md.starts_with("before\n# acp-chaos campaign"),
        "appended: {md}"
    );
    assert!(md.contains("## Failing groups"), "{md}");
    assert_eq!(
        md.lines().filter(|l| l.starts_with("| P")).count(),
        errors.len(),
        "{md}"
    );
}

#[test]
fn check_names_the_file_and_what_it_reads_when_given_another_file() {
    let dir = std::env::temp_dir().join("acp-chaos-ci-wrong-files");
    std::fs::create_dir_all(&dir).unwrap();
    let probe = r#"{"format": 1, "deterministic": false, "agent": "x", "table": {}}"#;
    for (name, body, says) in [
        ("empty.json", "", "empty file"),
        (
            "notes.txt",
            "hello\n",
            "notes.txt:1: neither a history nor a summary",
        ),
        ("broken.json", "{\n  \"format\": 2,\n", "not JSON"),
        (
            "other.json",
            "{\n  \"format\": 7\n}\n",
            "field `format` is 7",
        ),
        ("probe.json", probe, "a probe's summary.json"),
    ] {
        let f = dir.join(name);
        std::fs::write(&f, body).unwrap();
        let o = bin().arg("check").arg(&f).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{name}: {}", text(&o));
        assert!(err.contains(&f.display().to_string()), "{name}: {err}");
        assert!(err.contains(says), "{name}: {err}");
        assert!(!err.contains("panicked"), "{name}: {err}");
        if name != "probe.json" {
            assert!(
                err.contains("check reads a run's history.jsonl"),
                "{name}: {err}"
            );
        }
    }
    let o = bin().arg("check").arg(&dir).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("neither history.jsonl nor summary.json"),
        "{}",
        text(&o)
    );
}

#[test]
fn junit_testcases_carry_time_design_mutant_seed_and_hash() {
    let dir = mutant_report();
    let xml = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    let summary = acp_chaos::summary::read_summary(dir).unwrap();
    // Every row × property testcase is timed and carries its design, mutant and seed range.
    let mut reader = quick_xml::Reader::from_str(&xml);
    let (mut cases, mut timed) = (0usize, 0usize);
    let mut props: Vec<(String, String)> = Vec::new();
    let mut in_row_case = false;
    let mut failing_with_hash = 0usize;
    let mut current: Vec<(String, String)> = Vec::new();
    loop {
        match reader.read_event().expect("well-formed XML") {
            quick_xml::events::Event::Start(e) | quick_xml::events::Event::Empty(e) => {
                let attr = |k: &[u8]| {
                    e.attributes()
                        .flatten()
                        .find(|a| a.key.as_ref() == k)
                        .map(|a| String::from_utf8_lossy(&a.value).into_owned())
                };
                match e.name().as_ref() {
                    b"testcase" => {
                        in_row_case = attr(b"classname").is_some_and(|c| c.contains('@'));
                        if in_row_case {
                            cases += 1;
                            let t: f64 = attr(b"time").expect("time").parse().unwrap();
                            if t > 0.0 {
                                timed += 1;
                            }
                        }
                        current.clear();
                    }
                    b"property" if in_row_case => {
                        current.push((attr(b"name").unwrap(), attr(b"value").unwrap()));
                    }
                    b"failure" if in_row_case => {
                        let has = |k: &str| current.iter().any(|(n, _)| n == k);
                        assert!(has("seed") && has("hash"), "{current:?}");
                        let hash = &current.iter().find(|(n, _)| n == "hash").unwrap().1;
                        let seed = &current.iter().find(|(n, _)| n == "seed").unwrap().1;
                        // The hash is that run's, as summary.json's hashes hold it.
                        let hashes = summary.hashes.to_map().unwrap();
                        assert!(
                            hashes
                                .iter()
                                .any(|(k, v)| k.ends_with(&format!("/{seed}")) && v == hash),
                            "{seed} {hash}"
                        );
                        failing_with_hash += 1;
                    }
                    _ => {}
                }
                props.extend(current.iter().cloned());
            }
            quick_xml::events::Event::Eof => break,
            _ => {}
        }
    }
    let cells: usize = summary.table.values().map(|r| r.len()).sum();
    assert_eq!(cases, cells);
    assert_eq!(timed, cases, "every run spans simulated time");
    assert!(failing_with_hash > 0);
    for want in [
        ("mutant", "no-dedup"),
        ("seeds", "0..2"),
        ("design", "stored"),
    ] {
        assert!(
            props.iter().any(|(n, v)| n == want.0 && v == want.1),
            "{want:?}"
        );
    }
}

/// A sweep run as shards (a CI matrix, an indexed job) and merged gives the rows page one
/// unsharded sweep writes: `merge` of the shards' `scripted/` folders writes
/// `scripted-rows.md` beside the merged folder, with the same rows.
#[test]
fn merged_sweep_shards_write_the_rows_page_of_the_unsharded_sweep() {
    let root = std::env::temp_dir().join("acp-chaos-ci-sweep-shards");
    let _ = std::fs::remove_dir_all(&root);
    let scenarios = root.join("scenarios");
    std::fs::create_dir_all(&scenarios).unwrap();
    let one = "rfd-01-retry-same-connection.toml";
    std::fs::copy(common::scenarios_dir().join(one), scenarios.join(one)).unwrap();
    let sweep = |out: &Path, shard: Option<&str>| {
        let mut c = bin();
        c.env("ACP_CHAOS_SCENARIOS", &scenarios)
            .args(["sweep", "--seeds", "4", "--jobs", "1", "--out"])
            .arg(out);
        if let Some(s) = shard {
            c.args(["--shard", s]);
        }
        let o = c.output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    };
    let rows = |page: &Path| -> Vec<String> {
        let text = std::fs::read_to_string(page).unwrap_or_else(|e| panic!("{page:?}: {e}"));
        text.lines()
            .filter(|l| l.starts_with("| ") && !l.starts_with("| row"))
            .map(str::to_string)
            .collect()
    };
    sweep(&root.join("whole"), None);
    sweep(&root.join("a"), Some("1/2"));
    sweep(&root.join("b"), Some("2/2"));
    let merged = root.join("merged").join("scripted");
    let o = bin()
        .arg("merge")
        .arg(root.join("a").join("scripted"))
        .arg(root.join("b").join("scripted"))
        .arg("--out")
        .arg(&merged)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let want = rows(&root.join("whole").join("scripted-rows.md"));
    assert!(!want.is_empty());
    assert_eq!(rows(&root.join("merged").join("scripted-rows.md")), want);
    assert!(
        rows(&root.join("a").join("scripted-rows.md")) != want,
        "a shard's page holds half the runs"
    );
}

/// Every failure group's `report:` line opens its own property's page: a run failing three
/// properties has a page per property, and each group names the one whose title is its own.
#[test]
fn each_failure_groups_report_line_opens_its_own_propertys_page() {
    let out = std::env::temp_dir().join("acp-chaos-ci-report-lines");
    let o = bin()
        .args([
            "cancel-01-withdraw-every-attempt",
            "--seeds",
            "1",
            "--agent",
            "in-memory",
            "--mutant",
            "no-dedup",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    let stdout = text(&o);
    assert_eq!(o.status.code(), Some(1), "{stdout}");
    let mut groups = 0;
    let mut property = String::new();
    for line in stdout.lines() {
        if let Some(rest) = line.strip_prefix("FAIL ") {
            property = rest.split(' ').next().unwrap().to_string();
        } else if let Some(page) = line.strip_prefix("  report: ") {
            groups += 1;
            let html = std::fs::read_to_string(page).unwrap_or_else(|e| panic!("{page}: {e}"));
            let title = html
                .split("<title>")
                .nth(1)
                .and_then(|t| t.split("</title>").next())
                .unwrap_or_default();
            assert!(
                title.contains(&format!("{property} ")),
                "the {property} group's page {page} is titled {title:?}"
            );
        }
    }
    assert!(
        groups >= 2,
        "a run failing more than one property: {stdout}"
    );
}

/// `check` read from another folder than the campaign ran in prints `shrunk:` lines whose
/// schedule files exist from where it runs (the campaign wrote them relative to its own).
#[test]
fn check_from_another_folder_prints_shrunk_lines_that_run_from_there() {
    let root = std::env::temp_dir().join("acp-chaos-ci-check-elsewhere");
    let _ = std::fs::remove_dir_all(&root);
    let elsewhere = root.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let o = bin()
        .current_dir(&root)
        .args([
            "rfd-01-retry-same-connection",
            "--seeds",
            "1",
            "--mutant",
            "no-dedup",
            "--out",
            "rel/report",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let o = bin()
        .current_dir(&elsewhere)
        .arg("check")
        .arg(root.join("rel/report/summary.json"))
        .output()
        .unwrap();
    let out = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    let schedules: Vec<&str> = out
        .lines()
        .filter_map(|l| l.strip_prefix("  shrunk: acp-chaos replay --schedule "))
        .collect();
    assert!(!schedules.is_empty(), "{out}");
    for s in schedules {
        assert!(elsewhere.join(s).exists(), "{s} from {elsewhere:?}: {out}");
    }
}
