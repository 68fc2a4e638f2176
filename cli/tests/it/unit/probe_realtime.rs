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

/// The pipe carries out exactly the kinds `FaultKind::at_pipe` names: a plan with any other
/// kind is refused before it runs, never run as if the fault had not fired.
#[test]
fn a_black_box_runs_the_pipe_kinds_and_refuses_every_other_kind() {
    use acp_chaos::models::Design;
    use acp_chaos::nemesis::{FaultKind, FaultSpec, Side, Trigger};
    use acp_chaos::plan::Plan;
    let s = crate::common::scenario("rfd-01-retry-same-connection");
    let base = Plan::derive(&s, 0, None, Design::Stored);
    assert_eq!(unsupported(&base), None, "the base plan runs at a pipe");
    for kind in FaultKind::ALL {
        let mut plan = base.clone();
        plan.faults = vec![FaultSpec::new(
            kind,
            Trigger::at_frame(Side::Request, "session/prompt", 1),
        )];
        let refused = unsupported(&plan);
        assert_eq!(
            refused.is_none(),
            kind.at_pipe().is_some(),
            "{kind:?}: {refused:?}"
        );
    }
}
