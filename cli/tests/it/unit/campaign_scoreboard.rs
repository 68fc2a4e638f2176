//! The unit tests of `cli/src/campaign/scoreboard.rs`.

use std::collections::BTreeMap;

use acp_chaos::models::mutant::MUTANTS;
use acp_chaos::models::Design;
use acp_chaos_cli::campaign::scoreboard::{
    best, best_lines, checker_table, first_catch_cell, header, legend, median_fewest_over_designs,
    median_to_detection, table, witness_cell, Best, Detection, ExploreColumns, FirstCatch,
    MutantRow, WitnessCatch, UNIT,
};

#[test]
fn median_counts_seeds_up_to_and_including_the_catch() {
    assert_eq!(median_to_detection(&[], 10), None);
    // Caught on seed 0 of 1.
    assert_eq!(median_to_detection(&[0], 1), Some(1.0));
    // Caught on seed 3 of 4: from starts 0..=3 it takes 4, 3, 2, 1 seeds.
    assert_eq!(median_to_detection(&[3], 4), Some(2.5));
    // Caught on seed 1 of 4: starts 0, 1, 2, 3 take 2, 1, 4 (wrapping), 3.
    assert_eq!(median_to_detection(&[1], 4), Some(2.5));
    // Every seed catches.
    assert_eq!(median_to_detection(&[0, 1, 2, 3, 4], 5), Some(1.0));
}

#[test]
fn swarm_columns_take_the_fewest_runs_of_one_design_per_start_seed() {
    // Design A catches on seed 3 of 4, design B on seed 1. From start seeds 0, 1, 2, 3:
    // A takes 4, 3, 2, 1 runs; B takes 2, 1, 4 (wrapping), 3; the fewest: 2, 1, 2, 1.
    let (a, b): (&[u64], &[u64]) = (&[3], &[1]);
    assert_eq!(median_fewest_over_designs(&[a, b], 4), Some(1.5));
    // Each design alone reads 2.5: the fewest per start seed is not the fewest median.
    assert_eq!(median_to_detection(a, 4), Some(2.5));
    assert_eq!(median_to_detection(b, 4), Some(2.5));
    // The same number as seeds that each run every design (caught on some design: 1 and 3).
    assert_eq!(median_to_detection(&[1, 3], 4), Some(1.5));
    // A design that never catches it takes no part; none: never caught.
    assert_eq!(median_fewest_over_designs(&[a, &[]], 4), Some(2.5));
    assert_eq!(median_fewest_over_designs(&[&[], &[]], 4), None);
}

#[test]
fn a_detection_keeps_each_designs_catches_and_medians() {
    let by_design = BTreeMap::from([
        (Design::Stored, vec![3]),
        (Design::Cluster, vec![1]),
        (Design::Adapter, vec![]),
    ]);
    let d = Detection::new(4, by_design, BTreeMap::new());
    assert_eq!(d.caught, vec![1, 3]);
    assert_eq!(d.median, Some(1.5));
    assert_eq!(d.design_medians[&Design::Stored], Some(2.5));
    assert_eq!(d.design_medians[&Design::Cluster], Some(2.5));
    assert_eq!(d.design_medians[&Design::Adapter], None);
}

fn row(explore: Option<FirstCatch>) -> MutantRow {
    let m = &MUTANTS[0];
    let by_design = BTreeMap::from([(Design::Stored, vec![0, 2]), (Design::Cluster, vec![1])]);
    let d = Detection::new(3, by_design, BTreeMap::new());
    MutantRow {
        mutant: m.name,
        property: m.property,
        party: m.party,
        designs: vec![Design::Stored, Design::Cluster],
        swarm: d.clone(),
        uniform: d,
        explore: explore.clone(),
        lineage: explore.clone(),
        guided: explore,
        witness: None,
        best: None,
    }
}

fn witness(exhaustive: Option<usize>, lineage: Option<usize>) -> WitnessCatch {
    WitnessCatch {
        scenario: "key-01-recorded-key-other-prompt",
        design: Design::Stored,
        seed: 0,
        exhaustive,
        lineage,
        budget: 300,
    }
}

#[test]
fn the_header_names_the_unit_and_exploring_cells_show_each_base_seed() {
    let cols = ExploreColumns {
        seeds: 3,
        budget: 300,
    };
    let head = header(cols);
    assert!(head.starts_with("unit: runs of one design,"), "{head}");
    assert!(head.contains("the fewest over the designs"), "{head}");
    assert!(legend(cols).starts_with(UNIT), "{}", legend(cols));
    let f = |per_seed: Vec<Option<usize>>, median| FirstCatch {
        per_design: BTreeMap::from([(Design::Stored, per_seed.clone())]),
        per_seed,
        median,
        budget: 300,
    };
    assert_eq!(
        first_catch_cell(&f(vec![Some(8), Some(9), Some(7)], Some(8.0))),
        "8 [8,9,7]"
    );
    assert_eq!(
        first_catch_cell(&f(vec![None, Some(12), None], None)),
        "- [-,12,-]"
    );
    // The widest cells fit their columns: every line is as long as the header's (one catch in
    // 2,000 seeds, halfway: a four-digit half median; the exploring cell the budget allows).
    let widest = f(vec![Some(300); 3], Some(300.0));
    let mut r = row(Some(widest));
    r.uniform = Detection::new(
        2000,
        BTreeMap::from([(Design::Stored, vec![1000])]),
        BTreeMap::new(),
    );
    assert_eq!(r.uniform.median, Some(1000.5));
    r.witness = Some(witness(Some(300), Some(300)));
    let names = head.lines().nth(1).unwrap();
    let t = table(&[r], cols);
    assert!(t.contains("300 [300,300,300]"), "{t}");
    assert!(t.trim_end().ends_with(" 300 x"), "{t}");
    assert!(names.trim_end().ends_with("guided witness"), "{names}");
    for l in t.lines() {
        assert_eq!(l.chars().count(), names.chars().count(), "{names}\n{l}");
    }
    // Without base seeds, no exploring columns.
    let none = ExploreColumns {
        seeds: 0,
        budget: 300,
    };
    assert!(!header(none).contains("explore"), "{}", header(none));
    assert!(!header(none).contains("witness"), "{}", header(none));
    assert!(!table(&[row(None)], none).contains('['));
}

#[test]
fn the_checker_table_names_each_checker_once() {
    // P4 and X4 share a number: rows that break them in either order still give one column each.
    let with = |props: &[&str]| {
        let mut r = row(None);
        r.swarm.by_checker = props.iter().map(|p| (p.to_string(), 1)).collect();
        r
    };
    let t = checker_table(&[with(&["P4", "X4"]), with(&["X4"]), with(&["P4", "P1"])]);
    let head: Vec<&str> = t.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(head[3..], ["P1", "P4", "X4"], "{t}");
}

#[test]
fn the_witness_cell_is_the_fewer_of_its_two_modes() {
    assert_eq!(witness_cell(&witness(Some(1), Some(1))), "1 x");
    assert_eq!(witness_cell(&witness(Some(35), Some(9))), "9 l");
    assert_eq!(witness_cell(&witness(Some(4), Some(9))), "4 x");
    assert_eq!(witness_cell(&witness(None, Some(9))), "9 l");
    assert_eq!(witness_cell(&witness(Some(7), None)), "7 x");
    assert_eq!(witness_cell(&witness(None, None)), "-");
    // The header says what it counts, and the legend how.
    let cols = ExploreColumns {
        seeds: 3,
        budget: 300,
    };
    let unit = header(cols).lines().next().unwrap().to_string();
    assert!(unit.starts_with(UNIT), "{unit}");
    assert!(
        unit.contains("witness: on the mutant's own witness scenario"),
        "{unit}"
    );
    assert!(
        legend(cols).contains("\nwitness: runs to the first catch"),
        "{}",
        legend(cols)
    );
}

#[test]
fn the_best_cell_is_the_fewest_runs_over_the_columns_and_the_count_is_truthful() {
    let f = |median: Option<f64>| FirstCatch {
        per_design: BTreeMap::new(),
        per_seed: vec![median.map(|m| m as usize)],
        median,
        budget: 300,
    };
    // Swarm and uniform: median 2.5 (caught on seed 3 of 4); the exploring columns 8; the
    // witness 9 l.
    let mut r = row(Some(f(Some(8.0))));
    r.swarm = Detection::new(
        4,
        BTreeMap::from([(Design::Stored, vec![3])]),
        BTreeMap::new(),
    );
    r.uniform = r.swarm.clone();
    r.witness = Some(witness(Some(35), Some(9)));
    let b = best(&r, "swarm-basic").unwrap();
    assert_eq!(
        b,
        Best {
            column: "swarm",
            mode: "swarm",
            scenario: "swarm-basic".to_string(),
            runs: 2.5,
        }
    );
    // The witness column wins on its own scenario when it is the fewest.
    r.witness = Some(witness(Some(1), Some(1)));
    let b = best(&r, "swarm-basic").unwrap();
    assert_eq!(
        (b.column, b.mode, b.scenario.as_str(), b.runs),
        (
            "witness",
            "exhaustive",
            "key-01-recorded-key-other-prompt",
            1.0
        )
    );
    // A tie keeps the earlier column; the lineage column wins over a slower swarm.
    let never = Detection::new(
        10,
        BTreeMap::from([(Design::Stored, vec![])]),
        BTreeMap::new(),
    );
    let mut slow = row(None);
    slow.swarm = never.clone();
    slow.uniform = never.clone();
    slow.lineage = Some(f(Some(9.0)));
    slow.witness = Some(witness(None, Some(9)));
    let b = best(&slow, "swarm-basic").unwrap();
    assert_eq!((b.column, b.mode, b.runs), ("lineage", "lineage", 9.0));
    // Nothing caught it: no best.
    let mut none = row(None);
    none.swarm = never.clone();
    none.uniform = never;
    none.witness = Some(witness(None, None));
    assert_eq!(best(&none, "swarm-basic"), None);
    // The lines under the table: each row's best, and how many are within 20 runs.
    let mut far = row(None);
    far.mutant = MUTANTS[1].name;
    far.swarm = Detection::new(
        100,
        BTreeMap::from([(Design::Stored, vec![50])]),
        BTreeMap::new(),
    );
    far.uniform = far.swarm.clone();
    far.best = best(&far, "swarm-basic");
    assert_eq!(far.best.as_ref().unwrap().runs, 50.5);
    r.best = best(&r, "swarm-basic");
    none.mutant = MUTANTS[2].name;
    none.best = None;
    let text = best_lines(&[r, far, none]);
    assert!(
        text.contains("1 of 3 mutants caught in <= 20 runs by some mode"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "not in <= 20 runs by any mode: {}, {}",
            MUTANTS[1].name, MUTANTS[2].name
        )),
        "{text}"
    );
    assert!(
        text.contains("1 exhaustive key-01-recorded-key-other-prompt (witness)"),
        "{text}"
    );
}
