//! The unit tests of `cli/src/probe/realtime.rs`.

use acp_chaos::history::{op, process, OpType};
use acp_chaos_cli::probe::driver::RawOp;
use acp_chaos_cli::probe::realtime::*;
use serde_json::{json, Value};

fn raw(process: &'static str, f: &str, value: Value) -> RawOp {
    RawOp {
        time_ms: 0,
        process,
        kind: OpType::Info,
        f: f.to_string(),
        value,
    }
}

/// A connection given up before its `initialize` was answered names `--time-scale`; one
/// given up after the answer (a lost prompt, a dead link) does not.
#[test]
fn a_client_that_gives_up_before_initialize_is_answered_names_the_time_scale() {
    let init = raw(
        process::NET,
        op::SEND,
        json!({"conn": 1, "from": "client", "frame": {"id": 0, "method": "initialize"}}),
    );
    let answer = raw(
        process::NET,
        op::SEND,
        json!({"conn": 1, "from": "agent", "frame": {"id": 0, "result": {}}}),
    );
    let give_up = raw(process::CLIENT, op::GIVE_UP_CONNECTION, json!({"conn": 1}));
    let note = slow_setup_note(&[init.clone(), give_up.clone()], 10).expect("a hint");
    assert!(
        note.contains("gave up 1 connection") && note.contains("--time-scale 10"),
        "{note}"
    );
    assert_eq!(slow_setup_note(&[init, answer, give_up], 10), None);
}
