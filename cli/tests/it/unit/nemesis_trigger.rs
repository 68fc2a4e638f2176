//! The unit tests of `sim/src/nemesis/trigger.rs`: the enum behind the same table, read and
//! written field for field, every other shape refused as it is read, naming its entry.

use acp_chaos::models::Point;
use acp_chaos::nemesis::{Exchange, FrameTrigger, Sender, Side, Trigger};
use serde::{Deserialize, Serialize};

#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    on: Trigger,
}

fn read(table: &str) -> Result<Trigger, String> {
    toml::from_str::<Entry>(&format!("on = {table}\n"))
        .map(|e| e.on)
        .map_err(|e| e.message().to_string())
}

/// The JSON a plan writes into its history (the bytes its hash covers).
fn json(t: &Trigger) -> String {
    serde_json::to_string(t).unwrap()
}

#[test]
fn each_shape_reads_as_its_variant_and_writes_the_table_it_was_read_from() {
    let cases = [
        (
            r#"{ frame = "response", method = "session/prompt", nth = 2 }"#,
            Trigger::at_frame(Side::Response, "session/prompt", 2),
            r#"{"frame":"response","method":"session/prompt","point":null,"submission":null,"at_ms":null,"nth":2}"#,
        ),
        (
            r#"{ frame = "request", method = "session/prompt", attempt_of = 3, nth = 2 }"#,
            Trigger::Frame(FrameTrigger {
                side: Side::Request,
                method: "session/prompt".into(),
                nth: 2,
                attempt_of: Some(3),
                by: None,
            }),
            r#"{"frame":"request","method":"session/prompt","point":null,"submission":null,"at_ms":null,"attempt_of":3,"nth":2}"#,
        ),
        (
            r#"{ frame = "request", method = "session/update", by = "agent" }"#,
            Trigger::Frame(FrameTrigger {
                side: Side::Request,
                method: "session/update".into(),
                nth: 1,
                attempt_of: None,
                by: Some(Sender::Agent),
            }),
            r#"{"frame":"request","method":"session/update","point":null,"submission":null,"at_ms":null,"nth":1,"by":"agent"}"#,
        ),
        (
            r#"{ point = "after-receive", nth = 3 }"#,
            Trigger::at_point(Point::AfterReceive, 3),
            r#"{"frame":null,"method":null,"point":"after-receive","submission":null,"at_ms":null,"nth":3}"#,
        ),
        (
            r#"{ submission = 2 }"#,
            Trigger::Submission {
                submission: 2,
                nth: 1,
            },
            r#"{"frame":null,"method":null,"point":null,"submission":2,"at_ms":null,"nth":1}"#,
        ),
        (
            r#"{ at_ms = 40, nth = 0 }"#,
            Trigger::At { at_ms: 40, nth: 0 },
            r#"{"frame":null,"method":null,"point":null,"submission":null,"at_ms":40,"nth":0}"#,
        ),
    ];
    for (table, want, written) in cases {
        let t = read(table).unwrap_or_else(|e| panic!("{table}: {e}"));
        assert_eq!(t, want, "{table}");
        assert_eq!(json(&t), written, "{table}");
        let text = toml::to_string(&Entry { on: t.clone() }).unwrap();
        assert_eq!(read_back(&text), t, "{text}");
    }
    // A drawn time or submission trigger keeps the `nth` of 0 the swarm has always written.
    assert_eq!(
        json(&Trigger::at_time(7)),
        r#"{"frame":null,"method":null,"point":null,"submission":null,"at_ms":7,"nth":0}"#
    );
    assert_eq!(Trigger::at_submission(4).nth(), 0);
}

fn read_back(text: &str) -> Trigger {
    toml::from_str::<Entry>(text).unwrap().on
}

#[test]
fn a_table_of_no_one_shape_is_refused_as_it_is_read() {
    for (table, says) in [
        ("{ }", "field `on`: give exactly one of"),
        (
            r#"{ point = "after-receive", at_ms = 5 }"#,
            "give exactly one of",
        ),
        (
            r#"{ frame = "request", method = "session/prompt", submission = 1 }"#,
            "give exactly one of",
        ),
        (
            r#"{ frame = "request", point = "after-receive" }"#,
            "`frame` and `method` go together",
        ),
        (
            r#"{ method = "session/prompt", at_ms = 5 }"#,
            "`frame` and `method` go together",
        ),
        (
            r#"{ at_ms = 5, attempt_of = 1 }"#,
            "field `on.attempt_of`: goes with `frame`",
        ),
        (
            r#"{ point = "after-receive", by = "agent" }"#,
            "field `on.by`: goes with `frame`",
        ),
        (r#"{ at_ms = 5, when = 1 }"#, "unknown field `when`"),
    ] {
        let e = read(table).expect_err(table);
        assert!(e.contains(says), "{table}: {e}");
    }
}

#[test]
fn a_bad_trigger_names_its_fault_entry_and_line_in_a_scenario_and_a_schedule() {
    let text = "summary = \"s\"\n[[fault]]\nkind = \"lose-frame\"\non = { frame = \"request\", method = \"session/prompt\" }\n\n[[fault]]\nkind = \"lose-frame\"\non = { frame = \"request\", point = \"after-receive\" }\n";
    let e = acp_chaos::scenario::Scenario::parse(std::path::Path::new("x.toml"), text)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("x.toml:8: field `fault[1].on`: `frame` and `method` go together"),
        "{e}"
    );
    // The entry is read off the document, whatever its layout.
    for text in [
        "summary = \"s\"\nfault = [\n  { kind = \"lose-frame\", on = { frame = \"request\", method = \"session/prompt\" } },\n  { kind = \"crash-agent\", on = {} },\n]\n",
        "summary = \"s\"\n[[ fault ]]\nkind = \"lose-frame\"\non = { frame = \"request\", method = \"session/prompt\" }\n[[ fault ]]\nkind = \"crash-agent\"\non = {}\n",
        "summary = \"\"\"\n[[fault]]\n\"\"\"\n[[fault]]\nkind = \"lose-frame\"\non = { frame = \"request\", method = \"session/prompt\" }\n[[fault]]\nkind = \"crash-agent\"\non = {}\n",
    ] {
        let e = acp_chaos::scenario::Scenario::parse(std::path::Path::new("x.toml"), text)
            .unwrap_err()
            .to_string();
        assert!(e.contains("field `fault[1].on`: give exactly one of"), "{text}\n{e}");
    }
    let s = acp_chaos::scenario::Scenario::parse(
        std::path::Path::new("y.toml"),
        "summary = \"s\"\n[agent]\ndesigns = [\"stored\"]\n",
    )
    .unwrap();
    let mut plan = acp_chaos::plan::Plan::derive(&s, 1, None, acp_chaos::models::Design::Stored);
    plan.faults.push(acp_chaos::nemesis::FaultSpec {
        restart_after_ms: Some(10),
        ..acp_chaos::nemesis::FaultSpec::new(
            acp_chaos::nemesis::FaultKind::CrashAgent,
            Trigger::at_time(5),
        )
    });
    let schedule = toml::to_string(&plan)
        .unwrap()
        .replace("[faults.on]\n", "[faults.on]\nsubmission = 1\n");
    let line = 1 + schedule.lines().position(|l| l == "[faults.on]").unwrap();
    let e = acp_chaos::plan::file::parse::<toml::Value>(std::path::Path::new("z.toml"), &schedule)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(&format!(
            "z.toml:{line}: field `faults[0].on`: give exactly one of"
        )),
        "{e}"
    );
}

#[test]
fn a_frame_trigger_names_only_its_own_writers_nth_frame() {
    let e = |side, method: &str, nth, of, by| Exchange {
        side,
        method: method.into(),
        nth,
        of,
        by,
    };
    let Trigger::Frame(t) = Trigger::at_frame(Side::Request, "session/prompt", 2) else {
        unreachable!()
    };
    assert!(e(Side::Request, "session/prompt", 2, None, Sender::Client).is(&t));
    assert!(!e(Side::Response, "session/prompt", 2, None, Sender::Client).is(&t));
    assert!(!e(Side::Request, "session/prompt", 1, None, Sender::Client).is(&t));
    assert!(!e(Side::Request, "session/prompt", 2, None, Sender::Agent).is(&t));
    assert!(!e(Side::Request, "session/resume", 2, None, Sender::Client).is(&t));
    // With `attempt_of`, `nth` is the submission's attempt, whatever the method's count.
    let on_attempt = FrameTrigger {
        attempt_of: Some(1),
        ..t.clone()
    };
    assert!(e(
        Side::Request,
        "session/prompt",
        5,
        Some((1, 2)),
        Sender::Client
    )
    .is(&on_attempt));
    assert!(!e(
        Side::Request,
        "session/prompt",
        2,
        Some((2, 2)),
        Sender::Client
    )
    .is(&on_attempt));
}
