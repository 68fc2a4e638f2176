//! The unit tests of `sim/src/report/diagram.rs`.

use acp_chaos::report::diagram::*;

/// `n` arrows (op i at i ms), row `witness` red, a nemesis note in place of row `crash`.
fn long(n: usize, witness: usize, crash: usize) -> Diagram {
    let items = (0..n)
        .map(|i| {
            if i == crash {
                return Item::Note {
                    first: 0,
                    last: 1,
                    text: "crash".into(),
                    time_ms: i as u64,
                    op: i,
                    mark: Mark::None,
                    nemesis: true,
                };
            }
            Item::Arrow {
                from: 0,
                to: 1,
                label: format!("op {i}"),
                reply: false,
                lost: false,
                time_ms: i as u64,
                op: i,
                sent: i,
                last: i,
                mark: if i == witness {
                    Mark::Witness
                } else {
                    Mark::None
                },
            }
        })
        .collect();
    Diagram {
        participants: vec!["client".into(), "agent".into()],
        items,
        verdict: None,
    }
}

#[test]
fn a_long_diagram_folds_what_no_witness_or_fault_touches() {
    let d = long(300, 120, 200).fold(8);
    let drawn: Vec<usize> = d
        .items
        .iter()
        .filter_map(|i| i.ops().first().copied())
        .collect();
    let expect: Vec<usize> = (0..8).chain(112..=128).chain(192..=208).collect();
    assert_eq!(drawn, expect);
    let notes: Vec<&str> = d
        .items
        .iter()
        .filter(|i| matches!(i, Item::Note { op: NO_OP, .. }))
        .map(|i| i.text())
        .collect();
    assert_eq!(
        notes,
        [
            "… 104 rows folded, none a witness or a fault; their ops lie between 8 and 111 (see history.jsonl)",
            "… 63 rows folded, none a witness or a fault; their ops lie between 129 and 191 (see history.jsonl)",
            "… 91 rows folded, none a witness or a fault; their ops lie between 209 and 299 (see history.jsonl)",
        ]
    );
    // A lone row between two kept stretches is drawn, not folded into a note of one.
    let d = long(300, 120, 138).fold(8);
    assert!(d.items.iter().any(|i| i.draws_op(129)));
    // A diagram short enough to read is drawn whole.
    let short = long(FOLD_ROWS_MIN, 40, 60);
    assert_eq!(short.clone().fold(8), short);
}
