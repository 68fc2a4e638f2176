//! `acp-chaos probe --client`: a real Client process under test, served our model Agent.
//! The model Client as a process (`acp-chaos client`) keeps every Client rule the wire shows
//! under every trial (kills at three points of each prompt, a held response); its mutants,
//! seeded Client bugs, are caught on their rule. Real processes are not deterministic, so
//! each assertion is about a trial these Clients always reach (a kill at a fixed point).

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_acp-chaos");

fn out_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("acp-chaos-probe-client-test-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// `acp-chaos probe --client --repeat 1 --out DIR ARGS -- CLIENT...`; the output and
/// `summary.json`.
fn probe_client(name: &str, args: &[&str], client: &[&str]) -> (Output, Value) {
    let out = out_dir(name);
    let o = Command::new(BIN)
        .args(["probe", "--client", "--repeat", "1", "--out"])
        .arg(&out)
        .args(args)
        .arg("--")
        .args(client)
        .output()
        .unwrap();
    let summary = std::fs::read_to_string(out.join("summary.json"))
        .ok()
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or(Value::Null);
    (o, summary)
}

use crate::common::printed as text;

/// Our model Client: `acp-chaos client [--mutant M] -- {agent}`.
fn model_client(mutant: Option<&str>) -> Vec<&str> {
    let mut v = vec![BIN, "client"];
    if let Some(m) = mutant {
        v.extend(["--mutant", m]);
    }
    v.extend(["--", "{agent}"]);
    v
}

#[test]
fn the_model_client_keeps_every_client_rule_under_every_trial() {
    let (o, s) = probe_client("model", &[], &model_client(None));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let table = s["table"].as_object().expect("a table");
    // The fault-free trial, and four trials for each of the Client's three prompts.
    assert_eq!(table.len(), 13, "{}", text(&o));
    let mut judged = 0;
    for (trial, row) in table {
        for (rule, c) in row.as_object().unwrap() {
            assert_eq!(c["invalid"], 0, "{trial} {rule}: {}", text(&o));
            assert_eq!(c["unknown"], c["vacuous"], "{trial} {rule}: {}", text(&o));
            if rule == "C1" && c["valid"] == 1 {
                judged += 1;
            }
        }
    }
    // Not vacuously: the retries after a kill were judged on C1.
    assert!(judged >= 6, "C1 judged in {judged} trials: {}", text(&o));
    // `probe --client` writes junit.xml too: one suite per trial, each case timed.
    let junit = std::fs::read_to_string(
        std::env::temp_dir().join("acp-chaos-probe-client-test-model/junit.xml"),
    )
    .expect("probe --client writes junit.xml");
    assert_eq!(junit.matches("<testsuite ").count(), 13, "{junit}");
    assert_eq!(
        junit.matches("<testcase ").count(),
        junit.matches("<testcase name=").count()
    );
    assert!(junit.contains(" time=\""), "{junit}");
    assert!(!junit.contains("<failure"), "{junit}");
}

#[test]
fn seeded_client_bugs_are_caught_on_their_rule() {
    // (mutant, trial, rule, status): each trial is one the bug always shows in.
    let cases = [
        ("new-key-per-attempt", "before-response:1", "C1", "invalid"),
        ("client-reuses-id", "stall-response:1", "C4", "invalid"),
        ("resume-only", "receive:2", "C8", "invalid"),
        ("same-key-new-prompt", "no-fault", "C3", "invalid"),
        ("prompts-before-resume", "receive:1", "C6", "finding"),
    ];
    for (m, trial, rule, status) in cases {
        let (o, s) = probe_client(m, &["--trace", trial], &model_client(Some(m)));
        let want = if status == "invalid" { 1 } else { 0 };
        assert_eq!(o.status.code(), Some(want), "{m}: {}", text(&o));
        let hit = s["failures"].as_array().into_iter().flatten().any(|f| {
            f["verdict"]["property"] == rule
                && f["verdict"]["status"] == status
                && f["verdict"]["party"] == "client"
                && f["trace"] == trial
        });
        assert!(hit, "{m}: no {status} {rule} in {trial}: {}", text(&o));
        // Every invalid names a command that runs the trial again.
        if status == "invalid" {
            assert!(
                text(&o).contains(&format!("rerun: acp-chaos probe --client --trace {trial}")),
                "{m}: {}",
                text(&o)
            );
        }
    }
}

#[test]
fn a_client_that_never_starts_its_agent_is_unknown_and_a_command_without_the_placeholder_is_refused(
) {
    let (o, s) = probe_client("never", &["--trace", "no-fault"], &["true", "{agent}"]);
    assert_eq!(o.status.code(), Some(4), "{}", text(&o));
    assert!(text(&o).contains("never started its Agent"), "{}", text(&o));
    assert_eq!(s["exit_code"], 4);
    let (o, _) = probe_client("no-placeholder", &[], &[BIN, "client", "--", "cat"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("{agent}"), "{}", text(&o));
    let (o, _) = probe_client("bad-trace", &["--trace", "boom:1"], &model_client(None));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

#[test]
fn a_client_that_takes_its_agent_as_one_string_gets_the_quoted_line() {
    // The Client runs `sh -c LINE`: the served Agent must start from the one-string form.
    let client = [BIN, "client", "--", "sh", "-c", "exec {agent-line}"];
    let (o, s) = probe_client("line", &["--trace", "before-response:1"], &client);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(
        s["table"]["before-response:1"]["C1"]["valid"],
        1,
        "{}",
        text(&o)
    );
}

/// The TypeScript SDK's client side (`clients/ts-sdk`, @agentclientprotocol/sdk 2.4.0): needs
/// node and npm (it installs the pinned SDK from the registry). Run with `cargo test --release
/// -- --ignored ts_sdk`.
#[test]
#[ignore = "needs node and npm: it installs the pinned TypeScript SDK into clients/ts-sdk"]
fn ts_sdk_client_keeps_its_keys_and_its_seeded_bug_is_caught() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../clients/ts-sdk");
    if !dir.join("node_modules").exists() {
        let st = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(&dir)
            .status()
            .expect("npm");
        assert!(st.success(), "npm ci in {}", dir.display());
    }
    let script = dir.join("client.mjs");
    let script = script.to_str().unwrap();
    let (o, _) = probe_client("ts-sdk", &[], &["node", script, "{agent}"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let (o, s) = probe_client(
        "ts-sdk-bug",
        &["--trace", "before-response:1"],
        &["node", script, "--bug", "new-key", "{agent}"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_eq!(
        s["failures"][0]["verdict"]["property"],
        "C1",
        "{}",
        text(&o)
    );
}

/// `--out` given relative to where the probe runs (as the docs' example does): the Client runs
/// inside its run folder, and the served Agent's store and wire log are still the ones the
/// probe reads. Before, every trial ended "the Client never started its Agent" (exit 4).
#[test]
fn a_relative_out_folder_works_as_an_absolute_one() {
    let base = out_dir("relative-out");
    std::fs::create_dir_all(&base).unwrap();
    let o = Command::new(BIN)
        .current_dir(&base)
        .args([
            "probe", "--client", "--repeat", "1", "--trace", "no-fault", "--out", "rel/out", "--",
        ])
        .args(model_client(None))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let s: Value =
        serde_json::from_str(&std::fs::read_to_string(base.join("rel/out/summary.json")).unwrap())
            .unwrap();
    assert!(!s["runs"].as_array().unwrap().is_empty(), "{s}");
}
