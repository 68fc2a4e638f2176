//! The findings page (`docs/findings/spec.md`): one section per claim of [`super::CLAIMS`].

use std::fmt::Write as _;

use super::observe::IGNORED;
use super::{
    Claim, Measured, Of, RetentionTable, Witness, RETENTION_ROWS, RETENTION_SCENARIO, ROWS,
    STALE_COLUMNS,
};
use acp_chaos::checkers::{Status, Verdict};
use acp_chaos::models::{CancelRequest, Design};
use acp_chaos::report::Diagram;
use acp_chaos::scenario::Scenario;

/// What each claim is about, and the wording the evidence suggests: (id, title, what the rules
/// say and what was measured, a suggested wording when the claim was seen).
const TEXT: [(&str, &str, &str, &str); 6] = [
    (
        "stop-withdraws-earlier",
        "A6: a stop also withdraws the input queued before it",
        "`session/cancel` cancels the running turn *and* every earlier prompt not yet inserted \
         (`-32800`). A user who meant \"stop what is running\" also loses what they queued behind \
         it; the spec Client shows each such input as withdrawn by its user (C8), but nothing in \
         the rules says the Client must tell the user which inputs the stop took. Counted per \
         user stop: whether the Client wrote it (it drops a stop with no ready connection), \
         whether the Agent read it while a prompt of the session was held (the only case where \
         it withdraws queued input), and each user prompt it withdrew with how that input ended \
         at the Client. Each withdrawal is paired with the stop the Agent read just before it on \
         that session.",
        "A6, add: \"A Client SHOULD show the user each queued input a `session/cancel` withdrew \
         (they answered `-32800`), so input typed ahead of a stop is never lost unseen.\"",
    ),
    (
        "cancel-request-effect",
        "A5: `$/cancel_request` is a MAY: whether the user's cancel took depends on the Agent",
        "An Agent MAY honour `$/cancel_request`; for a prompt it holds (not inserted yet) it \
         either withdraws it (`-32800`, nothing inserted) or, taking the MAY, lets it be inserted \
         in turn and answers its `messageId`. Only a cancel that reaches the Agent while its \
         prompt is held gives the Agent that choice (one that arrives after insertion can only \
         get the `messageId`; one that is lost cannot be resent, its id died with the \
         connection). Measured on the same seeds twice: with the models' Agent, which honours \
         it, and with the same Agent set to ignore it (`[agent] cancel_request = \"ignore\"`); \
         both are correct, no checker fails on either.",
        "A5, add: \"A Client learns whether a cancel took only from the prompt's answer: \
         `-32800` means withdrawn, a `messageId` means inserted. It MUST show the user which, \
         and MUST NOT show an input as cancelled before that answer.\"",
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

/// What each witness shows (the statement its diagram draws), by claim (and by the A5
/// witness of an Agent that ignores the cancel, [`IGNORED`]).
const SHOWS: [(&str, &str); 7] = [
    (
        "stop-withdraws-earlier",
        "a user stop, its `session/cancel`, the Agent reading it with a prompt of the session held, the prompt withdrawn and answered `-32800`, and the Client showing the input withdrawn",
    ),
    (
        "cancel-request-effect",
        "a user cancel, its `$/cancel_request`, the prompt held, the Agent reading the cancel and withdrawing the prompt, and the Client's outcome",
    ),
    (
        IGNORED,
        "a user cancel, its `$/cancel_request`, the prompt held, the Agent reading the cancel and inserting the prompt in turn (its messageId answered), and the Client's outcome",
    ),
    (
        "stop-reaches-other-nodes",
        "the stop read on one node, and a prompt of its session withdrawn on another",
    ),
    (
        "forgotten-keys",
        "the first insertion and the second one the rules allow (P1's or P12's finding)",
    ),
    (
        "connection-ends-mid-work",
        "a connection's end at the Agent and what became of the work or the held prompt it cut",
    ),
    (
        "resend-before-acceptance",
        "the resend on the same connection and the prompt's acknowledgement",
    ),
];

/// A rendered findings page and the witness schedule files it points at: (file name in the
/// witness folder, contents).
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    /// The page.
    pub page: String,
    /// The witnesses' schedule files.
    pub files: Vec<(String, String)>,
}

/// The page for `m`, measured on scenario `s` (each witness shrunk and drawn again from it),
/// with the retention table's section when `m.retention` is set (its witness re-run on
/// `retention_scenario`) and the matrix's observations when `m.matrix` is. `witnesses` is the
/// folder the witness schedule files go to, as the replay lines name it.
pub fn markdown(
    m: &Measured,
    s: &Scenario,
    retention_scenario: Option<&Scenario>,
    command: &str,
    witnesses: &str,
) -> Rendered {
    let mut out = String::new();
    let mut files = Vec::new();
    let designs: Vec<&str> = m.designs.iter().map(|d| d.as_str()).collect();
    let extra_runs = m.retention.as_ref().map_or(0, |t| {
        t.seeds * (RETENTION_ROWS.len() * STALE_COLUMNS.len()) as u64
    });
    let retention_invalid: u64 = m.retention.as_ref().map_or(0, |t| {
        t.cells.iter().flatten().map(|c| c.invalid_runs).sum()
    });
    let _ = writeln!(
        out,
        "# Findings on the spec\n\n<!-- generated by `{command}`: do not edit; rerun it -->\n\n\
         What the correct models do where the rules leave a choice, say nothing, or have a \
         consequence a spec editor should see. Measured by `{command}`: `{}` seeds 0..{} under \
         {}, {} runs of the scenario as drawn with its raw probes left out (every stop, cancel \
         and prompt counted here is a user's), the same {} runs with an Agent that takes A5's \
         MAY and ignores `$/cancel_request`, {extra_runs} runs of the retention table{}. \
         Violations: {} invalid and {} unknown verdicts in the {} scenario runs, {} runs with \
         an invalid verdict in the retention table (on the correct models any would be our \
         bug, not a finding). Every figure below comes from that command, each with what it is \
         counted out of; every witness is shrunk, replays from its schedule file, and its \
         diagram draws only the ops its statement names. The page is the same bytes on every \
         machine and for any `--jobs`: a test regenerates it.\n",
        m.scenario,
        m.seeds,
        designs.join(", "),
        m.runs,
        m.runs,
        m.matrix
            .as_ref()
            .map(|x| format!(" and the retry-class matrix at {} seeds per cell", x.seeds))
            .unwrap_or_default(),
        m.main.violations + m.ignoring.violations,
        m.main.unknown + m.ignoring.unknown,
        m.main.runs + m.ignoring.runs,
        retention_invalid,
    );
    for (id, rules) in super::CLAIMS {
        let Some((_, title, about, wording)) = TEXT.iter().find(|t| t.0 == id).copied() else {
            continue;
        };
        let _ = writeln!(
            out,
            "## {title}\n\nRules: {}.\n\n{about}\n",
            rules.join(", ")
        );
        let c = m.main.claims.get(id).cloned().unwrap_or_default();
        if id == "cancel-request-effect" {
            let ig = m.ignoring.claims.get(id).cloned().unwrap_or_default();
            table2(&mut out, id, &c, &ig, m);
        } else if !table(&mut out, id, &c, m) {
            let _ = writeln!(out, "**Not seen** in these runs.\n");
            continue;
        }
        let mut shown = false;
        for (key, claim, cancel) in [
            (id, &c, CancelRequest::Honour),
            (
                IGNORED,
                &m.ignoring.claims.get(id).cloned().unwrap_or_default(),
                CancelRequest::Ignore,
            ),
        ] {
            if key == IGNORED && id != "cancel-request-effect" {
                continue;
            }
            let w = if key == IGNORED {
                m.ignoring
                    .claims
                    .get(IGNORED)
                    .and_then(|c| c.witness.clone())
            } else {
                claim.witness.clone()
            };
            if let Some(w) = w {
                if let Some(f) = witness(&mut out, m, s, &w, key, cancel, witnesses) {
                    files.push(f);
                    shown = true;
                }
            }
        }
        if shown && seen(id, &c) {
            let _ = writeln!(out, "Suggested wording: {wording}\n");
        }
    }
    if let Some(x) = &m.matrix {
        matrix(&mut out, x);
    }
    if let (Some(t), Some(rs)) = (&m.retention, retention_scenario) {
        retention(&mut out, t, rs);
    }
    Rendered { page: out, files }
}

/// What a row is counted out of, as the table shows it.
fn out_of(of: Of, c: &Claim, m: &Measured) -> String {
    match of {
        Of::Runs => format!("{} runs", m.runs),
        Of::Design(d) => format!(
            "{} `{}` runs",
            m.main.runs_of.get(&d).copied().unwrap_or(0),
            d.as_str()
        ),
        Of::Row(r) => format!("{} ({r})", c.get(r)),
        Of::Total => "-".to_string(),
    }
}

/// A claim's table: every row of [`ROWS`] it counted (in order), with what each is out of.
/// `false` when the claim counted nothing that is not zero.
fn table(out: &mut String, id: &str, c: &Claim, m: &Measured) -> bool {
    let rows: Vec<&(&str, &str, Of)> = ROWS.iter().filter(|r| r.0 == id).collect();
    if rows.iter().all(|r| c.get(r.1) == 0) {
        return false;
    }
    let _ = writeln!(out, "| measured | count | out of |\n|---|---|---|");
    for (_, row, of) in rows {
        let _ = writeln!(out, "| {row} | {} | {} |", c.get(row), out_of(*of, c, m));
    }
    out.push('\n');
    true
}

/// A5's table: the same rows for an Agent that honours `$/cancel_request` and one that
/// ignores it.
fn table2(out: &mut String, id: &str, honour: &Claim, ignore: &Claim, m: &Measured) {
    let _ = writeln!(
        out,
        "| measured | Agent honours (`cancel_request = \"honour\"`) | Agent ignores (`\"ignore\"`, the MAY) | out of |\n|---|---|---|---|"
    );
    for (_, row, of) in ROWS.iter().filter(|r| r.0 == id) {
        let of_text = match of {
            Of::Row(r) => format!("the row \"{r}\""),
            Of::Runs => format!("{} runs each", m.runs),
            _ => "-".to_string(),
        };
        let _ = writeln!(
            out,
            "| {row} | {} | {} | {of_text} |",
            honour.get(row),
            ignore.get(row)
        );
    }
    out.push('\n');
}

/// The retry-class matrix's observations for a spec editor.
fn matrix(out: &mut String, x: &super::matrix::Observed) {
    let _ = writeln!(
        out,
        "## Retry classes: a late copy of an idempotent request undoes the Client's next op\n\n\
         Rules: R1 (stated: `session/resume`, `session/close` are idempotent), the inferred \
         classes.\n\n\
         `acp-chaos matrix` ([retry-classes.md](retry-classes.md)) sends each method under each \
         fault with a Client that resends as is. An idempotent request is safe to resend while \
         nothing else happened in between; a copy delivered late, after the Client's next op on \
         the same session was answered, runs again and undoes that op. Counted: runs of the \
         `duplicated-late` cell under `resend-as-is`, {} seeds each.\n",
        x.seeds
    );
    let _ = writeln!(
        out,
        "| method | late copy undid the next op | out of |\n|---|---|---|"
    );
    for (m, s) in &x.late_copies {
        let _ = writeln!(out, "| `{m}` | {} | {} runs |", s.count, s.runs);
    }
    let _ = writeln!(
        out,
        "\nHarmless: {}.\n",
        x.late_harmless
            .iter()
            .map(|m| format!("`{m}`"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    if let Some((_, s)) = x.late_copies.first() {
        if let Some(r) = &s.replay {
            let _ = writeln!(out, "Example: `{r}` (its last line is the outcome).\n");
        }
        let _ = writeln!(
            out,
            "Suggested wording: Retry classes, add: \"An idempotent request may be resent only \
             while the Client has sent nothing since that changes the same session; a Client \
             MUST NOT resend `session/close`, `session/resume`, `session/set_config_option`, \
             `session/set_title`, `session/archive` or `session/unarchive` after a later request \
             for that session, and a transport that can deliver a request late (a retrying \
             proxy, a queue) MUST NOT deliver it after a later one.\"\n"
        );
    }
    let _ = writeln!(
        out,
        "## Keyed class: a prompt held behind a turn is inserted twice without its key, with no fault\n\n\
         Rules: C9, K1.\n\n\
         A prompt held behind a running turn stays unanswered longer than a Client's timeout \
         when the turn is long. A Client that resends `session/prompt` without \
         `idempotencyKey` then inserts it twice, with no fault at all; one that does not resend \
         shows the user an error for a prompt that is then inserted. Counted: the matrix's \
         `session/prompt` cells with no fault, {} seeds each.\n",
        x.seeds
    );
    let _ = writeln!(
        out,
        "| measured | count | out of |\n|---|---|---|\n| resent as is: two user messages for one submission | {} | {} runs |\n| not resent: an error shown for a prompt that was then inserted | {} | {} runs |\n",
        x.unkeyed_twice.count,
        x.unkeyed_twice.runs,
        x.unkeyed_error_shown.count,
        x.unkeyed_error_shown.runs
    );
    if let Some(r) = &x.unkeyed_twice.replay {
        let _ = writeln!(out, "Example: `{r}` (its last line is the outcome).\n");
    }
    if x.unkeyed_twice.count > 0 {
        let _ = writeln!(
            out,
            "Suggested wording: C9, add: \"A `session/prompt` without `idempotencyKey` is never \
             resent automatically, also after a timeout on a live connection: an Agent may hold \
             a prompt behind a running turn for longer than any timeout.\"\n"
        );
    }
}

/// The retention table's section: second insertions against (Agent retention, Client
/// staleness limit), from the retention scenario `rs`.
///
/// Long on purpose: a renderer: the section's table and its reading.
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
    if let Some(w) = &t.witness {
        let design = RETENTION_ROWS[w.design_index].1;
        let d = witness_diagram(rs, w.seed, design, &w.named);
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
            w.named.first().copied().unwrap_or(0),
            w.named.last().copied().unwrap_or(0),
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
        "stop-withdraws-earlier" => c.get("queued prompts those stops withdrew") > 0,
        "cancel-request-effect" => {
            c.get("of those, read by the Agent while the prompt they name was held") > 0
        }
        _ => c.witness.is_some(),
    }
}

/// A claim's witness (key `key`: the claim, or [`IGNORED`]): shrunk, drawn cut to the ops
/// it names, and its schedule file (returned: (file name, contents)).
fn witness(
    out: &mut String,
    m: &Measured,
    s: &Scenario,
    w: &Witness,
    key: &str,
    cancel: CancelRequest,
    dir: &str,
) -> Option<(String, String)> {
    let design = m.designs[w.design_index];
    let shrunk = super::witness::shrink(s, w.seed, design, cancel, key)?;
    let what = SHOWS
        .iter()
        .find(|x| x.0 == key)
        .map_or("the claim", |x| x.1);
    let name = format!("{}.toml", key.replace('/', "-"));
    let path = format!("{dir}/{name}");
    let _ = writeln!(
        out,
        "Witness: {what}. `acp-chaos replay --schedule {path}` (the shortest run that shows it, \
         `{}` seed {} under `{}`, shrunk from {} faults and {} submissions to {} and {}: {} \
         ops; the diagram draws the {} ops that show it).\n\n```mermaid\n{}```\n",
        m.scenario,
        w.seed,
        design.as_str(),
        shrunk.before.0,
        shrunk.before.1,
        shrunk.after.0,
        shrunk.after.1,
        shrunk.ops,
        shrunk.named.len(),
        shrunk.diagram.mermaid()
    );
    let file = super::witness::schedule_file(&shrunk, what, &path);
    Some((name, file))
}

/// The diagram of the retention table's witness: the run replayed, its two insertions
/// highlighted, wide enough for both, and no verdict note: a finding here is a count, not a
/// verdict.
fn witness_diagram(s: &Scenario, seed: u64, design: Design, named: &[usize]) -> Diagram {
    let (h, _) = acp_chaos::run::run_one(s, seed, None, design);
    let v = Verdict {
        property: "-".into(),
        status: Status::Finding,
        rules: Vec::new(),
        witnesses: named.to_vec(),
        fault: None,
        party: None,
        message: String::new(),
    };
    let first = named.iter().min().copied().unwrap_or(0);
    let last = named.iter().max().copied().unwrap_or(0);
    let mut d = Diagram::of(&h, Some(&v)).window(last - first + 24, 8);
    d.verdict = None;
    d
}
