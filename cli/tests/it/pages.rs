//! What the report pages show, checked on their HTML without a browser (the screenshots of
//! `scripts/screenshots.sh` check the same in Chromium): op numbers on every diagram row, the
//! verdict's ops among them, what should have happened, the original and the shrunk verdict,
//! the fault in the header, a diagram no column of which is cut off, the timeline linked and
//! `summary.html` linking every page; and a campaign's report stays small.

use crate::common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use acp_chaos::models::Design;
use acp_chaos::report::{self, Diagram};
use acp_chaos::summary::Summary;
use acp_chaos_cli::campaign::CampaignSpec;

fn spec(scenario: &str, mutant: &str, design: Design, seeds: u64, out: &str) -> CampaignSpec {
    CampaignSpec {
        agent: Some(design),
        name: "pages-test".into(),
        ..common::campaign_spec(&[scenario], Some(mutant), seeds, out)
    }
}

fn fresh(s: &CampaignSpec) -> Summary {
    common::fresh(s)
}

/// Every `href="..."` of a page.
fn hrefs(html: &str) -> Vec<String> {
    html.split("href=\"")
        .skip(1)
        .filter_map(|r| r.split('"').next())
        .map(str::to_string)
        .collect()
}

/// The `width`, `min-width` of the diagram's SVG (CSS px).
fn svg_widths(html: &str) -> (f64, f64) {
    let svg = html.split("<svg ").nth(1).expect("an inline SVG");
    let attr = |k: &str| -> f64 {
        svg.split(k)
            .nth(1)
            .and_then(|r| r.split(['"', 'p']).next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no {k} in the SVG"))
    };
    (attr("width=\""), attr("min-width:"))
}

/// Checks one shrunk counterexample's page: returns the participants drawn.
fn check_page(out: &Path, f: &serde_json::Value, property: &str) -> Vec<String> {
    let page = out.join(report::report_html_link(f).expect("the first is kept whole"));
    let dir = page.parent().unwrap().to_path_buf();
    let html = std::fs::read_to_string(&page).unwrap();
    // Self-contained: no script, nothing fetched, every link to a file beside it.
    assert!(!html.contains("<script") && !html.contains("src="));
    assert_eq!(html.matches("http").count(), 1, "only the SVG namespace");
    for h in hrefs(&html) {
        assert!(dir.join(&h).is_file(), "{h} linked from {}", page.display());
    }
    // The fault in the header, both verdicts and why they differ.
    let header = html.split("<h2>").next().unwrap();
    assert!(
        header.contains("<b>Fault:</b> enabling fault #"),
        "{header}"
    );
    assert!(header.contains("<b>Original run:</b>"), "{header}");
    assert!(header.contains("Shrinking kept submission"), "{header}");
    assert!(header.contains(&format!(
        "{property} {}",
        acp_chaos::checkers::CHECKERS
            .iter()
            .find(|c| c.property == property)
            .unwrap()
            .title
    )));
    // What should have happened.
    assert!(html.contains("<h2>What should have happened</h2>"));
    assert!(
        html.contains("<b>Expected:</b> answer the retry with "),
        "P1 made concrete"
    );
    assert!(html.contains("insert nothing"));
    // Every row of the diagram starts with its op numbers, and every op the verdict cites
    // is on a row.
    let shrunk = acp_chaos::history::History::read_jsonl(&dir.join("shrunk.jsonl")).unwrap();
    let verdicts = acp_chaos::checkers::check_all(&shrunk);
    let v = verdicts.iter().find(|v| v.property == property).unwrap();
    let d = Diagram::of(&shrunk, Some(v));
    for it in &d.items {
        let tag = it.op_tag().expect("every drawn row has op numbers");
        assert!(html.contains(&format!("{tag} ")), "row {tag} not drawn");
    }
    for w in v.witnesses.iter().chain(v.fault.iter()) {
        assert!(
            d.items.iter().any(|it| it.draws_op(*w)),
            "op {w} cited, on no row"
        );
        assert!(html.contains(&format!("#{w}")), "op {w} not on the page");
    }
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    let mermaid = md.split("```mermaid\n").nth(1).unwrap();
    let closing = acp_chaos::checkers::verdict_line(v);
    for l in mermaid
        .lines()
        .skip(1)
        .take_while(|l| !l.starts_with("```"))
    {
        let t = l.trim();
        let row = t.contains("->>") || t.contains("-x") || t.starts_with("Note over ");
        if !row || t.contains(&closing) {
            continue;
        }
        let body = t.split_once(": ").expect("a row has a text").1;
        let body = body.trim_start_matches("wrap: ").trim_start_matches("⚠ ");
        assert!(body.starts_with("op "), "no op numbers: {t}");
    }
    assert!(md.contains("Original run: ") && md.contains("| op | what happened |"));
    // The diagram fits: scaled down at most to SVG_MIN_SCALE, it is no wider than the page,
    // and it sits in a container that scrolls sideways (never clipped).
    let (width, min) = svg_widths(&html);
    assert!((min - width * report::SVG_MIN_SCALE).abs() < 1.0);
    assert!(html.contains(".diagram{overflow-x:auto"));
    assert!(html.contains("style=\"width:100%;max-width:"));
    if d.participants.len() <= 5 {
        assert!(
            min <= f64::from(report::PAGE_MAX_WIDTH) - 32.0,
            "{} participants: {min} px at the smallest scale, page {}",
            d.participants.len(),
            report::PAGE_MAX_WIDTH
        );
    }
    // The timeline: linked, one column per participant, every op, full frames to open.
    let t = std::fs::read_to_string(dir.join("timeline.html")).unwrap();
    assert!(html.contains("href=\"timeline.html\""));
    for p in &d.participants {
        let title = match p.as_str() {
            "store" => "Store".to_string(),
            "client" => "Client".to_string(),
            n if n.starts_with("node") => n.replacen("node", "Node ", 1),
            n => {
                let mut c = n.chars();
                c.next().unwrap().to_uppercase().chain(c).collect()
            }
        };
        assert!(t.contains(&format!("<th>{title}</th>")), "column {title}");
    }
    assert_eq!(t.matches("<tr id=\"op").count(), shrunk.ops.len());
    assert!(t.contains("<details><summary>") && t.contains("&quot;jsonrpc&quot;"));
    assert!(!t.contains("<script") && !t.contains("src="));
    d.participants
}

#[test]
fn pages_cite_ops_state_the_expected_behaviour_and_fit_three_and_five_participants() {
    let mut widths = Vec::new();
    for (scenario, mutant, design, out) in [
        (
            "rfd-02-retry-after-resume-new-connection",
            "no-dedup",
            Design::Stored,
            "acp-chaos-pages-3",
        ),
        (
            "cluster-01-retry-on-another-node",
            "cluster-node-local-keys",
            Design::Cluster,
            "acp-chaos-pages-5",
        ),
    ] {
        let s = spec(scenario, mutant, design, 2, out);
        let sum = fresh(&s);
        let f = sum
            .failures
            .iter()
            .find(|f| f["property"] == "P1" && f["shrunk"].is_object())
            .expect("the mutant fails P1, shrunk");
        widths.push(check_page(&s.out, f, "P1").len());
        // summary.html links every report.html there is, and nothing that is not there.
        let html = std::fs::read_to_string(s.out.join("summary.html")).unwrap();
        let linked: BTreeSet<String> = hrefs(&html).into_iter().collect();
        for l in &linked {
            assert!(s.out.join(l).is_file(), "summary.html links {l}");
        }
        let mut pages = BTreeSet::new();
        for e in std::fs::read_dir(&s.out).unwrap() {
            let e = e.unwrap();
            if !e.path().is_dir() {
                continue;
            }
            for g in std::fs::read_dir(e.path()).unwrap() {
                let name = g.unwrap().file_name().to_string_lossy().into_owned();
                if name.ends_with("report.html") {
                    pages.insert(format!("{}/{name}", e.file_name().to_string_lossy()));
                }
            }
        }
        assert!(!pages.is_empty());
        for p in &pages {
            assert!(linked.contains(p), "summary.html does not link {p}");
        }
        // It groups the failures as the terminal does: one table row per group.
        let groups = acp_chaos::summary::failure_groups(&sum);
        assert!(
            html.contains(&format!("<p>{} group", groups.len())),
            "{}",
            html
        );
        assert_eq!(html.matches("<tr><td><b>").count(), groups.len());
        // summary.md links the HTML pages too.
        let md = std::fs::read_to_string(s.out.join("summary.md")).unwrap();
        for p in &pages {
            assert!(
                md.contains(&format!("({p})")),
                "summary.md does not link {p}"
            );
        }
    }
    assert_eq!(widths, vec![3, 5], "a 3- and a 5-participant diagram");
}

#[test]
fn a_campaign_keeps_one_whole_counterexample_per_row_and_property_and_lists_few_failures() {
    let s = spec(
        "rfd-02-retry-after-resume-new-connection",
        "no-dedup",
        Design::InMemory,
        12,
        "acp-chaos-pages-small",
    );
    let sum = fresh(&s);
    let cell = &sum.table["rfd-02-retry-after-resume-new-connection@in-memory"]["P1"];
    assert_eq!(cell.violations, 12, "no-dedup fails P1 on every seed");
    let listed = sum
        .failures
        .iter()
        .filter(|f| f["property"] == "P1")
        .count();
    assert_eq!(listed, acp_chaos::summary::FAILURES_LISTED.max(2));
    let omitted =
        sum.failures_omitted["rfd-02-retry-after-resume-new-connection@in-memory P1 invalid"];
    assert_eq!(
        listed as u64 + omitted,
        cell.violations,
        "every one counted"
    );
    // The first is kept whole; the second keeps its verdicts and repro line only; the rest
    // have no folder.
    let folders: Vec<PathBuf> = sum
        .failures
        .iter()
        .filter(|f| f["property"] == "P1")
        .filter_map(|f| f["folder"].as_str().map(|d| s.out.join(d)))
        .collect();
    assert_eq!(folders.len(), 2);
    assert!(folders[0].join("history.jsonl").is_file());
    assert!(folders[0].join("report.html").is_file());
    assert!(folders[0].join("timeline.html").is_file());
    let light: BTreeSet<String> = std::fs::read_dir(&folders[1])
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        light,
        ["repro.txt", "verdicts.json"]
            .iter()
            .map(|x| x.to_string())
            .collect()
    );
    // The summary read back (merge, check) keeps its counts.
    let back = acp_chaos::summary::read_summary(&s.out).unwrap();
    assert_eq!(back.failures_omitted, sum.failures_omitted);
    assert_eq!(back.hashes.len(), 12);
}

/// `acp-chaos shrink` writes the same page as a campaign's shrunk counterexample: the original
/// run's verdict beside the shrunk one, with why they differ, and the shrunk run's timeline.
#[test]
fn the_shrink_command_page_shows_the_original_verdict_and_links_its_timeline() {
    let dir = std::env::temp_dir().join("acp-chaos-pages-shrink");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("x.schedule.toml");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_acp-chaos"))
        .args([
            "shrink",
            "rfd-02-retry-after-resume-new-connection",
            "--seed",
            "0",
            "--agent",
            "stored",
            "--mutant",
            "no-dedup",
            "--scenarios",
        ])
        .arg(common::scenarios_dir())
        .arg("--out")
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let md = std::fs::read_to_string(dir.join("x.report.md")).unwrap();
    let html = std::fs::read_to_string(dir.join("x.report.html")).unwrap();
    assert!(md.contains("Original run: P1"), "{md}");
    assert!(md.contains("Shrinking kept"), "{md}");
    assert!(dir.join("x.timeline.html").exists());
    assert!(
        hrefs(&html).iter().any(|h| h == "x.timeline.html"),
        "{html}"
    );
}
