//! The regression corpus (`scenarios/regressions/`): every shrunk schedule keeps its verdict,
//! loses it without its mutant (so each one tests a checker, not luck), and a campaign whose
//! corpus regresses exits 1.

use crate::common;

use acp_chaos::checkers::Status;
use acp_chaos::explore::regression;
use acp_chaos_cli::campaign::{self, CampaignSpec};

fn corpus() -> Vec<regression::Regression> {
    regression::load_dir(&common::scenarios_dir().join("regressions")).unwrap()
}

/// The schedule with every mutant removed: the correct models on the same faults and ops.
fn without_mutant(r: &regression::Regression) -> regression::Regression {
    let mut r = r.clone();
    r.plan.mutant = None;
    r.plan.agent.mutant = None;
    r.plan.client.mutant = None;
    r.plan.proxy_mutant = None;
    r
}

#[test]
fn every_schedule_in_the_corpus_keeps_its_verdict() {
    let all = corpus();
    assert!(all.len() >= 10, "the corpus holds {} schedules", all.len());
    for r in &all {
        let o = regression::replay(r);
        assert!(o.ok, "{}: expected {}, got {}", o.file, o.expect, o.got);
    }
}

#[test]
fn without_its_mutant_a_schedule_loses_its_verdict() {
    for r in corpus().iter().filter(|r| r.plan.mutant.is_some()) {
        assert_ne!(r.expect.verdict, Status::Valid);
        let o = regression::replay(&without_mutant(r));
        assert!(
            !o.ok,
            "{}: the correct models also give {}: the schedule pins nothing",
            o.file, o.got
        );
    }
}

#[test]
fn a_regressed_corpus_fails_the_campaign_and_names_the_file() {
    let r = corpus()
        .into_iter()
        .find(|r| r.plan.mutant.as_deref() == Some("record-unsynced"))
        .expect("the corpus pins record-unsynced");
    let broken = without_mutant(&r);
    let out = std::env::temp_dir().join("acp-chaos-regressed");
    let _ = std::fs::remove_dir_all(&out);
    let spec = CampaignSpec {
        scenarios: vec![common::scenario("rfd-01-retry-same-connection")],
        seed_start: 0,
        seeds: 2,
        jobs: 1,
        mutant: None,
        out: out.clone(),
        keep_per_property: 1,
        shrink: false,
        agent: None,
        check_determinism: false,
        name: "regressed".into(),
        shard: None,
        progress: false,
        stop: None,
        regressions: vec![r.clone(), broken],
    };
    let sum = campaign::run(&spec).unwrap();
    assert_eq!(sum.exit_code, acp_chaos::exit::INVALID);
    assert_eq!(
        sum.regressions.iter().map(|o| o.ok).collect::<Vec<_>>(),
        [true, false]
    );
    let junit = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    assert!(junit.contains("type=\"regression\""), "{junit}");
    let page = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(page.contains("**REGRESSION**"), "{page}");
}

#[test]
fn a_regression_file_without_its_expectation_is_refused_naming_the_file() {
    let dir = std::env::temp_dir().join("acp-chaos-bad-corpus");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let src = corpus().remove(0).file;
    let text = std::fs::read_to_string(&src).unwrap();
    let bare = text.split("[expect]").next().unwrap().to_string();
    std::fs::write(dir.join("a.toml"), &bare).unwrap();
    let e = regression::load_dir(&dir).unwrap_err().to_string();
    assert!(e.contains("a.toml") && e.contains("[expect]"), "{e}");
    std::fs::write(
        dir.join("a.toml"),
        format!("{bare}\n[expect]\nverdict = \"invalid\"\nparty = \"agent\"\n"),
    )
    .unwrap();
    let e = regression::load_dir(&dir).unwrap_err().to_string();
    assert!(e.contains("expect.property"), "{e}");
    std::fs::write(
        dir.join("a.toml"),
        format!("{bare}\n[expect]\nverdict = \"sometimes\"\n"),
    )
    .unwrap();
    let e = regression::load_dir(&dir).unwrap_err().to_string();
    assert!(e.contains("a.toml:") && e.contains("sometimes"), "{e}");
}
