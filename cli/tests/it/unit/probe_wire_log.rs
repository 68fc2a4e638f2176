//! The unit tests of `cli/src/probe/wire_log.rs`.

use acp_chaos_cli::probe::wire_log::*;

#[test]
fn crash_points_parse_and_print_back() {
    for s in [
        "receive:1",
        "before-response:2",
        "after-response:10",
        "stall-response:1",
    ] {
        assert_eq!(s.parse::<ServedFault>().unwrap().to_string(), s);
    }
    for bad in ["receive", "receive:0", "boom:1", "receive:x"] {
        assert!(bad.parse::<ServedFault>().is_err(), "{bad}");
    }
}

#[test]
fn a_crash_point_fires_once_over_boots() {
    let dir = std::env::temp_dir().join(format!("acp-chaos-wire-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("wire.jsonl");
    let on = vec!["before-response:1".parse().unwrap()];
    let prompt = r#"{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{}}"#;
    let answer = r#"{"jsonrpc":"2.0","id":3,"result":{}}"#;
    let mut w = WireLog::open(&path, 1, on.clone(), 50).unwrap();
    assert!(!w.received(prompt));
    assert_eq!(w.decide(answer), Outgoing::CrashBefore);
    // The restarted Agent reads the retry as prompt 2 and does not die again; its answer
    // to session/resume is held.
    let mut w = WireLog::open(&path, 2, on, 50).unwrap();
    assert!(!w.received(r#"{"jsonrpc":"2.0","id":1,"method":"session/resume","params":{}}"#));
    assert_eq!(
        w.decide(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#),
        Outgoing::Hold(50)
    );
    assert!(!w.received(prompt));
    assert_eq!(w.decide(answer), Outgoing::Write);
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.matches("\"crash\"").count(), 1, "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}
