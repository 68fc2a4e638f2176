//! `acp-chaos findings`: the measurement is a pure function of scenario and seeds (any number
//! of threads), every row is counted out of what it names and its breakdowns add up, its
//! witnesses show what they claim, and the committed pages are their regeneration, byte for
//! byte.

use acp_chaos::history::op;
use acp_chaos_cli::findings::{self, Of, CLAIMS, ROWS};

use super::common;

/// Each row's count is at most what it is counted out of, and the rows that break a total
/// down add up to it.
fn rows_fit(c: &findings::Claim, id: &str) {
    for (_, row, of) in ROWS.iter().filter(|r| r.0 == id) {
        if let Of::Row(total) = of {
            assert!(c.get(row) <= c.get(total), "{id}: {row} > {total}");
        }
    }
    let parts = |prefix: &str| -> u64 {
        ROWS.iter()
            .filter(|r| r.0 == id && r.1.starts_with(prefix))
            .map(|r| c.get(r.1))
            .sum()
    };
    match id {
        "stop-withdraws-earlier" => assert_eq!(
            parts("of the withdrawn"),
            c.get("queued prompts those stops withdrew")
        ),
        "cancel-request-effect" => assert_eq!(
            parts("of the held"),
            c.get("of those, read by the Agent while the prompt they name was held")
        ),
        _ => {}
    }
}

#[test]
fn findings_are_the_same_on_any_threads_and_their_parts_add_up() {
    let s = common::scenario("swarm-basic");
    let a = findings::measure(&s, 30, 1).unwrap();
    let b = findings::measure(&s, 30, 2).unwrap();
    assert_eq!(a, b, "the measurement depends on the thread count");
    for (id, _) in CLAIMS {
        for m in [&a.main, &a.ignoring] {
            if let Some(c) = m.claims.get(id) {
                rows_fit(c, id);
            }
        }
    }
    let honour = &a.main.claims["cancel-request-effect"];
    let ignore = &a.ignoring.claims["cancel-request-effect"];
    let held = "of those, read by the Agent while the prompt they name was held";
    assert!(honour.get(held) > 0, "swarm-basic reaches the MAY's choice");
    // An Agent that honours the cancel withdraws every held prompt it names; one that takes
    // the MAY inserts them in turn.
    assert_eq!(
        honour.get("of the held, withdrawn (-32800, nothing inserted)"),
        honour.get(held)
    );
    assert!(ignore.get("of the held, inserted in turn and answered with its messageId") > 0);
    assert_eq!(
        honour.get("of the held, inserted in turn and answered with its messageId"),
        0
    );
    assert_eq!(a.main.violations + a.ignoring.violations, 0);
    // The stop witness names the stop, the Agent's withdrawal and the Client's `withdrawn`.
    let w = a.main.claims["stop-withdraws-earlier"]
        .witness
        .clone()
        .expect("a stop withdrew a queued prompt in 30 seeds");
    let plan = findings::plan_of(
        &s,
        w.seed,
        a.designs[w.design_index],
        acp_chaos::models::CancelRequest::Honour,
    );
    assert!(plan.raw.is_empty(), "probes are left out");
    let h = acp_chaos::world::run(&plan);
    assert_eq!(h.ops.len(), w.ops);
    let fs: Vec<&str> = w.named.iter().map(|i| h.ops[*i].f.as_str()).collect();
    for f in [op::STOP, op::WITHDRAW, op::WITHDRAWN] {
        assert!(fs.contains(&f), "{fs:?}");
    }
}

#[test]
fn a_stop_read_on_one_node_is_seen_withdrawing_a_prompt_held_on_another() {
    let s = common::scenario("cluster-06-stop-reaches-every-node");
    let m = findings::measure(&s, 3, 2).unwrap();
    let c = &m.main.claims["stop-reaches-other-nodes"];
    assert_eq!(
        c.get("held prompts withdrawn on another node than the one that read the stop"),
        3,
        "one per seed"
    );
    assert!(c.get("stops recorded at the store") >= 3);
}

#[test]
fn the_retention_table_is_the_same_on_any_threads_and_has_duplicates_only_past_the_window() {
    let s = common::scenario(findings::RETENTION_SCENARIO);
    let a = findings::measure_retention(&s, 2, 1).unwrap();
    assert_eq!(a, findings::measure_retention(&s, 2, 2).unwrap());
    let (mut safe, mut past) = (0, 0);
    for (r, (_, _, window)) in findings::RETENTION_ROWS.iter().enumerate() {
        for (c, stale) in findings::STALE_COLUMNS.iter().enumerate() {
            let cell = a.cells[r][c];
            assert_eq!(cell.invalid_runs, 0, "findings only");
            assert_eq!(cell.submissions, 8, "4 submissions x 2 seeds");
            if *window == 0 || (*stale > 0 && stale <= window) {
                safe += cell.duplicates;
            } else {
                past += cell.duplicates;
            }
        }
    }
    assert_eq!(
        safe, 0,
        "no second insertion while the limit is at most the window"
    );
    assert!(past > 0, "a Client with no limit resends past the window");
    let w = a
        .witness
        .expect("the file as written inserts a resend twice");
    let (h, _) =
        acp_chaos::run::run_one(&s, w.seed, None, findings::RETENTION_ROWS[w.design_index].1);
    let (first, second) = (
        &h.ops[*w.named.first().unwrap()],
        &h.ops[*w.named.last().unwrap()],
    );
    assert_eq!(first.f, op::INSERT);
    assert_eq!(second.f, op::INSERT);
}

/// The committed findings pages are what `acp-chaos findings` writes today, byte for byte:
/// the spec page, each witness schedule, and the retry-classes page's generated block. A
/// change to a model, a checker or a diagram that moves any figure fails here until the
/// pages are regenerated (`cargo run --release -- findings`).
#[test]
fn the_findings_pages_equal_their_regeneration() {
    let docs = common::scenarios_dir().join("../docs/findings");
    let g = findings::generate(
        &common::scenarios_dir(),
        "swarm-basic",
        500,
        2,
        "docs/findings/witnesses",
    )
    .expect("findings generate");
    let read = |name: &str| {
        std::fs::read_to_string(docs.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
    };
    let regen = "regenerate: cargo run --release -- findings";
    assert!(
        g.rendered.page == read("spec.md"),
        "docs/findings/spec.md is stale; {regen}"
    );
    for (name, text) in &g.rendered.files {
        assert!(
            *text == read(&format!("witnesses/{name}")),
            "docs/findings/witnesses/{name} is stale; {regen}"
        );
    }
    let classes = read("retry-classes.md");
    assert!(
        findings::matrix::with_block(&classes, &g.retry_classes) == classes,
        "the generated block of docs/findings/retry-classes.md is stale; {regen}"
    );
    // Every witness file the page names is one it wrote, and no other is left behind.
    let mut on_disk: Vec<String> = std::fs::read_dir(docs.join("witnesses"))
        .expect("docs/findings/witnesses")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    let mut written: Vec<String> = g.rendered.files.iter().map(|f| f.0.clone()).collect();
    written.sort();
    assert_eq!(on_disk, written);
}
