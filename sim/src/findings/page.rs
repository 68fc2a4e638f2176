//! The findings page (`docs/findings/spec.md`): one section per claim of [`super::CLAIMS`].

use std::fmt::Write as _;

use super::{
    Claim, Measured, RetentionTable, Witness, RETENTION_ROWS, RETENTION_SCENARIO, STALE_COLUMNS,
};
use crate::checkers::{Status, Verdict};
use crate::report::Diagram;
use crate::scenario::Scenario;

/// What each claim is about, and the wording the evidence suggests: (id, title, what the rules
/// say and what was measured, a suggested wording when the claim was seen).
const TEXT: [(&str, &str, &str, &str); 6] = [
    (
        "stop-withdraws-earlier",
        "A6: a stop also withdraws the input queued before it",
        "`session/cancel` cancels the running turn *and* every earlier prompt not yet inserted \
         (`-32800`). A user who meant \"stop what is running\" also loses what they queued behind \
         it; the spec Client shows each such input as withdrawn by its user (C8), but nothing in \
         the rules says the Client must tell the user which inputs the stop took. (An input shown \
         withdrawn that an attempt of it inserted is a Client violation, P2's C8 clause.)",
        "A6, add: \"A Client SHOULD show the user each queued input a `session/cancel` withdrew \
         (they answered `-32800`), so input typed ahead of a stop is never lost unseen.\"",
    ),
    (
        "cancel-request-effect",
        "A5: `$/cancel_request` is a MAY, and often has no effect",
        "An Agent MAY honour `$/cancel_request`; for a prompt it either withdraws it (`-32800`, \
         nothing inserted) or answers its `messageId` (already inserted). Counted per user cancel \
         of a submission: how it ended (a cancel pressed after the input had already ended does \
         nothing anywhere). A lost `$/cancel_request` cannot be resent (its id died \
         with the connection), so the cancel that never reached the Agent ends the same way as one \
         it ignored.",
        "A5, add: \"A cancel that arrives after insertion is answered with the `messageId`; \
         Clients MUST NOT show such an input as cancelled.\"",
    ),
    (
        "stop-reaches-other-nodes",
        "A6 on a remote transport: a stop must reach prompts held on other nodes",
        "On a cluster a `session/cancel` is read by one node while prompts of the same session \
         may be held on others (the Client reconnected elsewhere). The `cluster` design records \
         the stop in its store and withdraws a held prompt when its release finds a stop newer \
         than its arrival; `cluster-stop-node-local` (the stop kept on the node that read it) \
         inserts them after the stop (P6). The swarm reaches this rarely; \
         `acp-chaos run cluster-06-stop-reaches-every-node` shows it on every seed.",
        "A13, add: \"A stop is session state: on a remote transport it lives where the key \
         records live, so every node honours it.\"",
    ),
    (
        "forgotten-keys",
        "A11 and A16: second insertions the rules allow",
        "A live-only message's key may be forgotten once its session is active nowhere (A11), and \
         any key once its message is gone (A16): a retry after that inserts again and no rule is \
         broken. Counted as findings of P1 and P12 on the correct models.",
        "A11, consider: \"An Agent SHOULD keep a live-only key while any Client may still resend \
         it (its prompt timeout), not only while the session is active.\"",
    ),
    (
        "connection-ends-mid-work",
        "X3: a connection ends with work running or prompts held",
        "When a connection ends its sessions stop being active there; the Agent MAY continue or \
         cancel the foreground work (O2), and what happens to held prompts is unspecified (O1). \
         The swarm draws O1 and O2 per seed; counted here is how often each case arises and how \
         it ended, so the cost of leaving them open can be weighed. Every outcome is allowed: no \
         checker fails on it.",
        "X3, consider: \"Held prompts of a connection that ends are kept and answered like any \
         other (a Client that resends finds the key), or dropped with `-32800` before the \
         connection closes; never dropped silently.\"",
    ),
    (
        "resend-before-acceptance",
        "X5: a resend before acceptance, without reconnecting",
        "On a remote transport a Client MAY resend a request that failed before it was accepted \
         (`202 Accepted`) without reconnecting. Counted: how often the `cluster` design's \
         transport refused a request and the Client resent it on the same connection, and how \
         those prompts ended (a second insertion would be P1's violation).",
        "X5 holds as written: every resent prompt ended once.",
    ),
];

/// The page for `m`, measured on scenario `s` (re-run for each witness's diagram), with the
/// retention table's section when `m.retention` is set (its witness re-run on
/// `retention_scenario`).
pub fn markdown(
    m: &Measured,
    s: &Scenario,
    retention_scenario: Option<&Scenario>,
    command: &str,
) -> String {
    let mut out = String::new();
    let designs: Vec<&str> = m.designs.iter().map(|d| d.as_str()).collect();
    let _ = writeln!(
        out,
        "# Findings on the spec\n\n<!-- generated by `{command}`: do not edit; rerun it -->\n\n\
         What the correct models do where the rules leave a choice, say nothing, or have a \
         consequence a spec editor should see. Measured by `{command}` on `{}` seeds 0..{} under \
         {} ({} runs, no mutant). Every figure below comes from that command, every witness \
         replays with the line under it, and the page is the same bytes on every machine.\n",
        m.scenario,
        m.seeds,
        designs.join(", "),
        m.runs
    );
    for (id, rules) in super::CLAIMS {
        let (_, title, about, wording) = TEXT
            .iter()
            .find(|t| t.0 == id)
            .copied()
            .expect("every claim has its text");
        let c = m.claims.get(id).cloned().unwrap_or_default();
        let _ = writeln!(
            out,
            "## {title}\n\nRules: {}.\n\n{about}\n",
            rules.join(", ")
        );
        if c.counts.is_empty() {
            let _ = writeln!(out, "**Not seen** in these runs.\n");
            continue;
        }
        let _ = writeln!(out, "| measured | count |\n|---|---|");
        for (k, v) in c.ordered() {
            let _ = writeln!(out, "| {k} | {v} |");
        }
        out.push('\n');
        if let Some(w) = c.witness {
            witness(&mut out, m, s, w);
        }
        if seen(id, &c) {
            let _ = writeln!(out, "Suggested wording: {wording}\n");
        }
    }
    if let (Some(t), Some(rs)) = (&m.retention, retention_scenario) {
        retention(&mut out, t, rs);
    }
    out
}

/// The retention table's section: second insertions against (Agent retention, Client
/// staleness limit), from the retention scenario `rs`.
fn retention(out: &mut String, t: &RetentionTable, rs: &Scenario) {
    let per_cell = t.cells[0][0].submissions;
    let _ = writeln!(
        out,
        "## A16 and C7: a Client resends a prompt older than the Agent's retention\n\n\
         Rules: A16, C7, A10.\n\n\
         A16 lets an Agent forget a key once it no longer has the message (a retention discard \
         among others), and a prompt with a forgotten key is a new submission. C7 says a Client \
         SHOULD show a prompt pending for a long time to the user instead of resending it, but \
         names no bound, and nothing tells the Client how long the Agent keeps a key. Measured \
         by the same command on `{}` (the Agent's answers are cut one way for a while, so \
         prompts it inserted stay pending at the Client; the link heals and the Client resends \
         them with their keys after resuming): seeds 0..{} per cell, each cell setting the \
         design and `[agent] retention_ms` (the Agent discards a message with its key that long \
         after inserting it) and `[client] stale_ms` (the Client shows an input pending longer \
         than that instead of resending it) over the file's. Counted: submissions inserted a \
         second time (each a P1 finding, A16), out of {per_cell} per cell. The `process` row \
         has no restart here, so it keeps everything; its losses on a restart are counted under \
         \"A11 and A16\" above.\n",
        t.scenario, t.seeds
    );
    let header = |out: &mut String, corner: &str| {
        let cols: Vec<String> = STALE_COLUMNS
            .iter()
            .map(|c| {
                if *c == 0 {
                    "no limit".to_string()
                } else {
                    format!("{c} ms")
                }
            })
            .collect();
        let _ = writeln!(
            out,
            "| {corner} | {} |\n|---|{}",
            cols.join(" | "),
            "---|".repeat(cols.len())
        );
    };
    header(
        out,
        "second insertions: Agent retention \\ Client staleness limit",
    );
    for (r, (label, _, _)) in RETENTION_ROWS.iter().enumerate() {
        let row: Vec<String> = t.cells[r]
            .iter()
            .map(|c| c.duplicates.to_string())
            .collect();
        let _ = writeln!(out, "| {label} | {} |", row.join(" | "));
    }
    out.push('\n');
    header(out, "shown to the user as stale instead (C7)");
    for (r, (label, _, _)) in RETENTION_ROWS.iter().enumerate() {
        let row: Vec<String> = t.cells[r]
            .iter()
            .map(|c| c.stale_shown.to_string())
            .collect();
        let _ = writeln!(out, "| {label} | {} |", row.join(" | "));
    }
    out.push('\n');
    let invalid: u64 = t.cells.iter().flatten().map(|c| c.invalid_runs).sum();
    let runs = t.seeds * (RETENTION_ROWS.len() * STALE_COLUMNS.len()) as u64;
    // What the table shows, read off it: duplicates only where the Client's limit is off or
    // above the window.
    let (mut safe, mut unsafe_dups) = (0u64, 0u64);
    for (r, (_, _, window)) in RETENTION_ROWS.iter().enumerate() {
        for (c, stale) in STALE_COLUMNS.iter().enumerate() {
            let d = t.cells[r][c].duplicates;
            if *window == 0 || (*stale > 0 && stale <= window) {
                safe += d;
            } else {
                unsafe_dups += d;
            }
        }
    }
    let _ = writeln!(
        out,
        "Violations in these {runs} runs: {invalid}. Second insertions where the Agent keeps \
         everything or the Client's limit is at most the window: {safe}; where the Client has no \
         limit or one above the window: {unsafe_dups}.\n"
    );
    if let Some(w) = t.witness {
        let design = RETENTION_ROWS[w.design_index].1;
        let d = witness_diagram(rs, w.seed, design, w.at);
        let _ = writeln!(
            out,
            "Shortest witness of the file as written (window {} ms, staleness limit {}; {} ops; \
             the two insertions, ops {} and {}, highlighted): `acp-chaos replay {} --seed {} --agent {}`\n\n```mermaid\n{}```\n",
            rs.agent.retention_ms,
            if rs.client.stale_ms == 0 {
                "none".to_string()
            } else {
                format!("{} ms", rs.client.stale_ms)
            },
            w.ops,
            w.at.0,
            w.at.1,
            RETENTION_SCENARIO,
            w.seed,
            design.as_str(),
            d.mermaid()
        );
    }
    if unsafe_dups > 0 && safe == 0 {
        let _ = writeln!(
            out,
            "Suggested wording: A16, add: \"An Agent whose retention is bounded in time \
             advertises the bound (e.g. `sessionCapabilities.retentionMs`).\" C7, make the bound \
             explicit: \"A Client's staleness limit MUST be below the Agent's advertised \
             retention: a prompt pending longer is shown to the user, never resent, since its key \
             may be forgotten (A16) and a resend inserts it again.\"\n"
        );
    }
}

/// Whether the evidence backs the suggested wording.
fn seen(id: &str, c: &Claim) -> bool {
    match id {
        "stop-withdraws-earlier" => c.get("queued prompts withdrawn by a stop") > 0,
        "cancel-request-effect" => {
            c.get("ended acknowledged: inserted, the cancel had no effect") > 0
        }
        _ => c.witness.is_some(),
    }
}

fn witness(out: &mut String, m: &Measured, s: &Scenario, w: Witness) {
    let design = m.designs[w.design_index];
    let d = witness_diagram(s, w.seed, design, w.at);
    let _ = writeln!(
        out,
        "Shortest witness ({} ops; ops {} and {} highlighted): `acp-chaos replay {} --seed {} --agent {}`\n\n```mermaid\n{}```\n",
        w.ops,
        w.at.0,
        w.at.1,
        m.scenario,
        w.seed,
        design.as_str(),
        d.mermaid()
    );
}

/// The diagram of a claim's shortest witness: the run replayed, its two ops `at` highlighted,
/// wide enough for both (a row per op at most), and no verdict note: a finding here is a count,
/// not a verdict.
fn witness_diagram(
    s: &Scenario,
    seed: u64,
    design: acp_chaos_models::Design,
    at: (usize, usize),
) -> Diagram {
    let (h, _) = crate::run::run_one(s, seed, None, design);
    let v = Verdict {
        property: "-".into(),
        status: Status::Finding,
        rules: Vec::new(),
        witnesses: vec![at.0, at.1],
        fault: None,
        party: None,
        message: String::new(),
    };
    let span = at.0.abs_diff(at.1);
    let mut d = Diagram::of(&h, Some(&v)).window(span + 24, 8);
    d.verdict = None;
    d
}
