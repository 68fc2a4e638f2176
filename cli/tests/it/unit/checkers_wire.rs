//! The unit tests of `sim/src/checkers/wire.rs`.

use acp_chaos::checkers::wire::*;
use acp_chaos::history::OpType;
use acp_chaos::history::{op, process, Op};
use serde_json::json;
use serde_json::Value;

fn net(f: &str, value: Value) -> Op {
    Op {
        index: 0,
        time_ms: 0,
        process: process::NET.into(),
        kind: OpType::Info,
        f: f.into(),
        value,
    }
}

#[test]
fn reads_a_frame_as_the_checkers_did() {
    let o = net(
        op::SEND,
        json!({"conn": 3, "from": "node1", "frame": {"jsonrpc": "2.0", "id": 7, "result": {}}}),
    );
    let w = WireFrame::of(&o).expect("a send op");
    assert!(w.sent && w.from_agent && !w.has_method && w.has_id());
    assert_eq!((w.key(), w.method), ((3, "7".to_string()), None));
    // A line that was not JSON: no method, no id, keyed as `null`.
    let o = net(
        op::RECV,
        json!({"conn": 1, "from": "client", "frame": "{oops"}),
    );
    let w = WireFrame::of(&o).expect("a recv op");
    assert!(!w.sent && !w.from_agent && !w.has_method && w.id.is_none());
    assert_eq!(w.key(), (1, "null".to_string()));
    // `method` of another type is a method all the same, but not a method name.
    let o = net(
        op::RECV,
        json!({"conn": 1, "from": "client", "frame": {"method": 5, "id": null}}),
    );
    let w = WireFrame::of(&o).expect("a recv op");
    assert!(w.has_method && w.method.is_none() && !w.has_id() && w.id.is_some());
    assert!(WireFrame::of(&net(op::CONN_END, json!({"conn": 1}))).is_none());
}
