//! Reports: the counterexample pages draw the shrunk run, `junit.xml` is well-formed with one
//! testcase per scenario@design × property, and shards merged give the unsharded summary.

use crate::common;

use std::path::{Path, PathBuf};

use acp_chaos::models::Design;
use acp_chaos::report::{self, Diagram};
use acp_chaos::summary::Summary;
use acp_chaos_cli::campaign::{self, CampaignSpec};

fn spec(scenarios: &[&str], mutant: Option<&str>, seeds: u64, out: &str) -> CampaignSpec {
    common::campaign_spec(scenarios, mutant, seeds, out)
}

fn fresh(s: &CampaignSpec) -> Summary {
    common::fresh(s)
}

/// A summary as JSON with its report folder's path replaced, so two folders compare.
fn normalized(s: &Summary, out: &Path) -> String {
    serde_json::to_string_pretty(s)
        .unwrap()
        .replace(&out.display().to_string(), "OUT")
}

/// Every line of a Mermaid sequence diagram is one this crate means to write: a participant,
/// an arrow, a note, or a highlight block; and every `rect` is closed.
fn assert_mermaid_shape(m: &str) {
    let mut lines = m.lines();
    assert_eq!(lines.next(), Some("sequenceDiagram"));
    let mut depth = 0i32;
    for l in lines {
        let t = l.trim();
        let ok = t.starts_with("participant ")
            || t.starts_with("Note over ")
            || t.starts_with("rect rgb(")
            || t == "end"
            || ["->>", "-->>", "-x", "--x"].iter().any(|a| {
                t.split_once(':')
                    .is_some_and(|(head, _)| head.contains(a) && !head.contains(' '))
            });
        assert!(ok, "not a diagram statement: {t}");
        let bare = t.replace("#35;", "").replace("#59;", "");
        assert!(
            !bare.contains(';'),
            "an unescaped `;` ends a Mermaid statement: {t}"
        );
        if t.starts_with("rect ") {
            depth += 1;
        }
        if t == "end" {
            depth -= 1;
        }
        assert!((0..=1).contains(&depth), "unbalanced rect blocks");
    }
    assert_eq!(depth, 0, "a rect block is not closed");
}

#[test]
fn a_counterexample_folder_draws_its_shrunk_run_as_mermaid_and_svg() {
    let mut s = spec(
        &["rfd-03-retry-after-agent-restart"],
        Some("no-dedup"),
        2,
        "acp-chaos-report-draw",
    );
    s.agent = Some(Design::Stored);
    let sum = fresh(&s);
    let f = sum
        .failures
        .iter()
        .find(|f| f["property"] == "P1" && f["shrunk"].is_object())
        .expect("no-dedup fails P1 and is shrunk");
    let dir = s.out.join(f["folder"].as_str().expect("kept"));
    for file in [
        "history.jsonl",
        "shrunk.jsonl",
        "schedule.toml",
        "report.md",
        "report.html",
    ] {
        assert!(
            dir.join(file).exists(),
            "{file} missing in {}",
            dir.display()
        );
    }
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    let m = md
        .split("```mermaid\n")
        .nth(1)
        .and_then(|r| r.split("```").next())
        .expect("a mermaid block");
    assert_mermaid_shape(m);
    // The witnesses (the two insertions of one key) are highlighted, the crash is drawn, and
    // the rules are quoted from RULES.md.
    assert!(m.matches("rect rgb(255, 205, 210)").count() >= 3, "{m}");
    assert!(
        m.contains("CRASH agent") && m.contains("RESTART agent"),
        "{m}"
    );
    assert!(md.contains("> **A4** MUST NOT. Insert a second message for a recorded key."));
    assert!(md.contains("acp-chaos replay --schedule"));
    // The HTML page is self-contained: inline SVG, no script, nothing fetched.
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    assert!(!html.contains("<script") && !html.contains("src=") && !html.contains("href=\"http"));
    assert_eq!(html.matches("http").count(), 1, "only the SVG namespace");
    // The summary page links the counterexample.
    let page = std::fs::read_to_string(s.out.join("summary.md")).unwrap();
    assert!(page.contains(&format!("({}/report.html)", f["folder"].as_str().unwrap())));
}

#[test]
fn a_lost_frame_is_a_crossed_arrow_and_the_fault_that_lost_it_a_note() {
    let sc = common::scenario("client-02-sdk-auto-retry");
    let (h, r) = acp_chaos::run::run_one(&sc, 0, None, Design::Stored);
    let d = Diagram::of(&h, r.verdicts.iter().find(|v| v.property == "P1"));
    let m = d.mermaid();
    assert_mermaid_shape(&m);
    assert!(
        m.lines()
            .any(|l| l.contains("--xclient") && l.ends_with("[lose-frame, silent] LOST")),
        "no lost frame drawn:\n{m}"
    );
    assert!(d.svg().starts_with("<svg "));
}

#[test]
fn junit_has_one_testcase_per_row_and_property_and_fails_where_the_table_does() {
    let s = spec(
        &["rfd-04-retry-while-held", "rfd-01-retry-same-connection"],
        Some("no-dedup"),
        3,
        "acp-chaos-report-junit",
    );
    let sum = fresh(&s);
    let xml = std::fs::read_to_string(s.out.join("junit.xml")).unwrap();
    let mut reader = quick_xml::Reader::from_str(&xml);
    let (mut cases, mut failures) = (0usize, 0usize);
    loop {
        match reader.read_event().expect("well-formed XML") {
            quick_xml::events::Event::Start(e) | quick_xml::events::Event::Empty(e) => {
                match e.name().as_ref() {
                    b"testcase" => cases += 1,
                    b"failure" => failures += 1,
                    _ => {}
                }
            }
            quick_xml::events::Event::Eof => break,
            _ => {}
        }
    }
    let cells: usize = sum.table.values().map(|r| r.len()).sum();
    let failing: usize = sum
        .table
        .values()
        .flat_map(|r| r.values())
        .filter(|c| c.violations > 0 || c.unknown > 0)
        .count();
    assert_eq!(cases, cells);
    assert!(failing > 0, "no-dedup fails somewhere");
    assert_eq!(failures, failing);
    assert!(xml.contains("repro: acp-chaos replay "));
}

fn merged_equals_unsharded(scenarios: &[&str], mutant: Option<&str>, seeds: u64, n: u64) {
    let tag = mutant.unwrap_or("none");
    let whole = spec(
        scenarios,
        mutant,
        seeds,
        &format!("acp-chaos-merge-{tag}-whole"),
    );
    let a = fresh(&whole);
    let mut dirs: Vec<PathBuf> = Vec::new();
    let mut shards = Vec::new();
    for k in 1..=n {
        let mut s = spec(
            scenarios,
            mutant,
            seeds,
            &format!("acp-chaos-merge-{tag}-{k}"),
        );
        s.shard = Some((k, n));
        shards.push(fresh(&s));
        dirs.push(s.out.clone());
    }
    assert_eq!(
        shards.iter().map(|s| s.hashes.len()).sum::<usize>(),
        a.hashes.len(),
        "the shards cover every run once"
    );
    let out = std::env::temp_dir().join(format!("acp-chaos-merge-{tag}-merged"));
    let _ = std::fs::remove_dir_all(&out);
    let m = campaign::merge(&dirs, &shards, &out).unwrap();
    let (got, want) = (normalized(&m, &out), normalized(&a, &whole.out));
    if got != want {
        let dir = std::env::temp_dir();
        std::fs::write(dir.join(format!("merge-{tag}-got.json")), &got).unwrap();
        std::fs::write(dir.join(format!("merge-{tag}-want.json")), &want).unwrap();
        panic!(
            "merged summary differs: diff {0}/merge-{tag}-got.json {0}/merge-{tag}-want.json",
            dir.display()
        );
    }
    // The merged folder holds the same counterexample folders, with the same histories.
    let listing = |d: &Path| {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    assert_eq!(listing(&out), listing(&whole.out));
    for f in &m.failures {
        if let Some(dir) = f["folder"].as_str() {
            // (A run kept for its verdicts and repro line only has no history.)
            let read = |root: &Path| std::fs::read(root.join(dir).join("history.jsonl")).ok();
            assert_eq!(read(&out), read(&whole.out), "{dir}");
            // The same files, with the same text once the folder's path is the same.
            assert_eq!(
                listing(&out.join(dir)),
                listing(&whole.out.join(dir)),
                "{dir}"
            );
            for name in listing(&out.join(dir)) {
                let text = |root: &Path| {
                    String::from_utf8_lossy(&std::fs::read(root.join(dir).join(&name)).unwrap())
                        .replace(&root.display().to_string(), "OUT")
                };
                assert_eq!(text(&out), text(&whole.out), "{dir}/{name}");
            }
        }
    }
    assert_eq!(
        std::fs::read_to_string(out.join("summary.md"))
            .unwrap()
            .replace(&out.display().to_string(), "OUT"),
        std::fs::read_to_string(whole.out.join("summary.md"))
            .unwrap()
            .replace(&whole.out.display().to_string(), "OUT")
    );
}

#[test]
fn three_shards_merged_give_the_unsharded_summary_with_a_mutant() {
    merged_equals_unsharded(
        &[
            "rfd-04-retry-while-held",
            "rfd-02-retry-after-resume-new-connection",
        ],
        Some("no-dedup"),
        10,
        3,
    );
}

#[test]
fn two_shards_merged_give_the_unsharded_summary_on_the_correct_models() {
    merged_equals_unsharded(&["swarm-basic", "client-01-stale-pending"], None, 24, 2);
}

#[test]
fn merge_refuses_a_missing_or_repeated_shard() {
    let mut dirs = Vec::new();
    let mut shards = Vec::new();
    for k in [1, 1] {
        let mut s = spec(
            &["rfd-01-retry-same-connection"],
            None,
            4,
            &format!("acp-chaos-merge-bad-{}", dirs.len()),
        );
        s.shard = Some((k, 3));
        shards.push(fresh(&s));
        dirs.push(s.out.clone());
    }
    let out = std::env::temp_dir().join("acp-chaos-merge-bad-out");
    let e = campaign::merge(&dirs, &shards, &out)
        .unwrap_err()
        .to_string();
    assert!(e.contains("given twice"), "{e}");
    let e = campaign::merge(&dirs[..1], &shards[..1], &out)
        .unwrap_err()
        .to_string();
    assert!(e.contains("shards 2, 3 of 3 are missing"), "{e}");
}

#[test]
fn every_rule_a_checker_names_is_quoted_from_rules_md() {
    for c in acp_chaos::checkers::CHECKERS {
        // Every property has its row in RULES.md's properties table, ours (P13, P14) too.
        assert!(
            report::rule_text(c.property.as_str()).is_some(),
            "{}: no row in RULES.md's properties table",
            c.property
        );
        for r in c.rules {
            // "Retry classes" and the crate's docs are sections, not numbered rules.
            if r.chars().next().is_some_and(|x| x.is_ascii_uppercase())
                && r.chars().nth(1).is_some_and(|x| x.is_ascii_digit())
            {
                assert!(report::rule_text(r).is_some(), "{}: rule {r}", c.property);
            }
        }
    }
    assert!(report::rule_text("P1")
        .unwrap()
        .starts_with("at-most-once: "));
    assert!(report::rule_text("K3")
        .unwrap()
        .contains("never treated as omitted"));
}

#[test]
fn a_long_unshrunk_run_is_drawn_around_its_witnesses() {
    let sc = common::scenario("swarm-basic");
    let (h, r) = (0..40)
        .map(|seed| acp_chaos::run::run_one(&sc, seed, Some("no-dedup"), Design::Stored))
        .find(|(_, r)| {
            r.verdicts
                .iter()
                .any(|v| v.property == "P1" && !v.witnesses.is_empty())
        })
        .expect("no-dedup fails P1 within 40 swarm seeds");
    let v = r.verdicts.iter().find(|v| v.property == "P1").unwrap();
    let full = Diagram::of(&h, Some(v));
    let d = full.clone().window(60, 20);
    assert!(
        full.items.len() > 60,
        "a long run: {} rows",
        full.items.len()
    );
    assert!(d.items.len() <= 62);
    let m = d.mermaid();
    assert_mermaid_shape(&m);
    assert!(m.contains("rows not drawn (see history.jsonl)"), "{m}");
    assert!(
        m.contains("rect rgb(255, 205, 210)\n    Note over agent"),
        "the first witness is kept:\n{m}"
    );
}

#[test]
fn each_property_a_run_breaks_gets_its_own_schedule_and_page() {
    let mut s = spec(
        &["adapter-01-crash-windows"],
        Some("no-dedup"),
        1,
        "acp-chaos-report-per-property",
    );
    s.agent = Some(Design::Adapter);
    let sum = fresh(&s);
    let shrunk: Vec<&serde_json::Value> = sum
        .failures
        .iter()
        .filter(|f| f["shrunk"].is_object())
        .collect();
    assert!(
        shrunk.len() >= 2,
        "one run breaking two properties: {:#?}",
        sum.failures
    );
    let mut files = std::collections::BTreeSet::new();
    for f in shrunk {
        let file = f["shrunk"]["schedule"].as_str().unwrap();
        assert!(files.insert(file.to_string()), "{file} shared");
        let plan: acp_chaos::plan::Plan =
            toml::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
        let target = acp_chaos::explore::shrink::Target::new(
            f["property"].as_str().unwrap(),
            acp_chaos::checkers::Status::Invalid,
            serde_json::from_value(f["party"].clone()).unwrap(),
        );
        assert!(
            acp_chaos::explore::shrink::failing(&plan, &target).is_some(),
            "{file} does not replay {}",
            target.property
        );
        let page = s.out.join(f["report"].as_str().unwrap());
        let md = std::fs::read_to_string(&page).unwrap();
        assert!(
            md.starts_with(&format!("# {} invalid", target.property)),
            "{}",
            page.display()
        );
    }
}

#[test]
fn seeds_are_listed_in_the_string_order_of_their_digits() {
    for (lo, hi) in [
        (0, 0),
        (0, 1),
        (0, 25),
        (7, 131),
        (95, 1003),
        (999, 1001),
        (100_000, 100_150),
        (u64::MAX - 3, u64::MAX),
    ] {
        let mut got = Vec::new();
        acp_chaos::summary::lex_order(lo, hi, &mut |n| {
            got.push(n);
            Ok(())
        })
        .unwrap();
        let mut want: Vec<u64> = (lo..hi).collect();
        want.sort_by_key(|n| n.to_string());
        assert_eq!(got, want, "[{lo}, {hi})");
    }
}

#[test]
fn the_summary_written_from_the_hash_log_reads_back_as_the_summary_returned() {
    let mut s = spec(&["swarm-basic"], None, 12, "acp-chaos-hash-log");
    s.seed_start = 95;
    let sum = fresh(&s);
    assert_eq!(sum.hashes.len(), 12 * sum.order.len());
    let text = std::fs::read_to_string(s.out.join("summary.json")).unwrap();
    assert_eq!(text, serde_json::to_string_pretty(&sum).unwrap());
    let back = acp_chaos::summary::read_summary(&s.out).unwrap();
    assert_eq!(back, sum);
    let keys: Vec<String> = back.hashes.to_map().unwrap().into_keys().collect();
    assert!(keys.iter().any(|k| k.ends_with("@stored/100")), "{keys:?}");
    // Each run's hash is the one a single run of its seed gives.
    let one = acp_chaos::run::run_one(&s.scenarios[0], 100, None, Design::Stored).0;
    assert_eq!(
        back.hashes.to_map().unwrap()["swarm-basic@stored/100"],
        one.hash()
    );
}
