//! The original run beside its shrunk run: why their verdicts name other submissions, ids and
//! ops ([`why_they_differ`]).

use crate::checkers::Verdict;
use crate::history::History;

/// The submission numbers a plan (a history's header `plan`) schedules.
fn submissions(h: &History) -> Vec<u64> {
    h.header["plan"]["workload"]
        .as_array()
        .map(|w| w.iter().filter_map(|x| x["submission"].as_u64()).collect())
        .unwrap_or_default()
}

fn count(h: &History, key: &str) -> usize {
    h.header["plan"][key].as_array().map_or(0, Vec::len)
}

/// The submission numbers a verdict's message names (`submission 2`, `submissions [3]`).
pub fn named_submissions(message: &str) -> Vec<String> {
    let mut out = Vec::new();
    let words: Vec<&str> = message.split_whitespace().collect();
    for w in words.windows(2) {
        if w[0] == "submission" {
            let n: String = w[1].chars().take_while(char::is_ascii_digit).collect();
            if !n.is_empty() && !out.contains(&n) {
                out.push(n);
            }
        }
    }
    out
}

fn list(v: &[u64]) -> String {
    let v: Vec<String> = v.iter().map(u64::to_string).collect();
    v.join(", ")
}

/// One paragraph on why the shrunk run's verdict differs from the original's: what shrinking
/// dropped (submissions, faults, raw probes, each counted from the two histories' plans), and
/// that the shrunk run is a run of its own, so its op numbers, times and messageIds are its
/// own; and, when the two messages name other submissions, which.
pub fn why_they_differ(original: (&Verdict, &History), shrunk: (&Verdict, &History)) -> String {
    let (ov, oh) = original;
    let (sv, sh) = shrunk;
    if oh.ops == sh.ops {
        return "Shrinking changed nothing: no smaller plan kept the verdict, so this is the original run, op for op.".into();
    }
    let (os, ss) = (submissions(oh), submissions(sh));
    let mut s = format!(
        "Shrinking kept submission{} {} of {} (a kept submission keeps its number), {} of {} faults and {} of {} raw probes. ",
        if ss.len() == 1 { "" } else { "s" },
        list(&ss),
        list(&os),
        count(sh, "faults"),
        count(oh, "faults"),
        count(sh, "raw"),
        count(oh, "raw"),
    );
    s.push_str(&format!(
        "The shrunk run is a run of its own ({} ops, not {}): its op numbers, times and messageIds (assigned in insertion order, per node and boot in a cluster) are its own, and a fault it keeps fires on the first op that matches its trigger there, which can be another submission's. ",
        sh.ops.len(),
        oh.ops.len()
    ));
    let (on, sn) = (
        named_submissions(&ov.message),
        named_submissions(&sv.message),
    );
    if on != sn && !on.is_empty() && !sn.is_empty() {
        s.push_str(&format!(
            "So the original names submission {} where the shrunk run names submission {}.",
            on.join(", "),
            sn.join(", ")
        ));
    } else if ov.message == sv.message {
        s.push_str("Here both verdicts read the same.");
    } else {
        s.push_str("Here the verdicts name the same submissions with other ids.");
    }
    s
}
