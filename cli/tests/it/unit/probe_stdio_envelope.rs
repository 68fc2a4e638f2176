//! The unit tests of `cli/src/probe/stdio_envelope.rs`.

use acp_chaos::models::rpc::{self};
use acp_chaos_cli::probe::stdio_envelope::*;
use serde_json::json;
use serde_json::Value;

/// The model's answer to a line it read: `ok` with the id it saw.
fn answer(frame: &str) -> String {
    let v: Value = serde_json::from_str(frame).unwrap();
    rpc::ok(&v["id"], json!({}))
}

#[test]
fn an_id_beyond_64_bits_comes_back_as_sent() {
    let mut e = Envelope::default();
    let line = r#"{"jsonrpc":"2.0","id":18446744073709551616,"method":"session/list"}"#;
    let read = e.incoming(line);
    assert_eq!(read.reply, None);
    let out = e.outgoing(answer(&read.frames[0])).unwrap();
    assert_eq!(
        out,
        r#"{"jsonrpc":"2.0","id":18446744073709551616,"result":{}}"#
    );
    // A 64-bit id and a fraction go to the model untouched (it refuses the fraction).
    for id in ["18446744073709551615", "1.5"] {
        let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"m"}}"#);
        assert_eq!(e.incoming(&line).frames, vec![line.clone()]);
    }
}

#[test]
fn a_client_id_that_looks_like_an_alias_is_aliased_too() {
    let mut e = Envelope::default();
    // A big id takes alias 0; the Client then sends that alias's text as its own id.
    let big = e.incoming(r#"{"jsonrpc":"2.0","id":18446744073709551616,"method":"m"}"#);
    let line = format!(r#"{{"jsonrpc":"2.0","id":"{ALIAS}0","method":"m"}}"#);
    let own = e.incoming(&line);
    assert_ne!(own.frames, big.frames);
    // Each answer goes back to its own request, with its own id.
    let out = e.outgoing(answer(&own.frames[0])).unwrap();
    assert_eq!(
        out,
        format!(r#"{{"jsonrpc":"2.0","id":"{ALIAS}0","result":{{}}}}"#)
    );
    let out = e.outgoing(answer(&big.frames[0])).unwrap();
    assert_eq!(
        out,
        r#"{"jsonrpc":"2.0","id":18446744073709551616,"result":{}}"#
    );
}

#[test]
fn a_batch_is_answered_with_one_array_in_its_order() {
    let mut e = Envelope::default();
    let line = r#"[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"n"},1,{"jsonrpc":"2.0","id":[],"method":"b"},{"jsonrpc":"2.0","id":1,"method":"c"}]"#;
    let read = e.incoming(line);
    assert_eq!(read.reply, None);
    assert_eq!(read.frames.len(), 3, "two requests and the notification");
    assert_eq!(read.frames[1], r#"{"jsonrpc":"2.0","method":"n"}"#);
    // Answered out of order; the array keeps the batch's order, ids as sent.
    assert_eq!(e.outgoing(answer(&read.frames[2])), None);
    let out: Value = serde_json::from_str(&e.outgoing(answer(&read.frames[0])).unwrap()).unwrap();
    let arr = out.as_array().unwrap();
    assert_eq!(arr.len(), 4);
    assert_eq!(
        (arr[0]["id"].clone(), arr[3]["id"].clone()),
        (json!(1), json!(1))
    );
    for bad in &arr[1..3] {
        assert_eq!(
            (bad["id"].clone(), bad["error"]["code"].clone()),
            (Value::Null, json!(-32600))
        );
    }
    // Lines that are not answers to an alias pass as they are.
    let update = rpc::notification("session/update", json!({}));
    assert_eq!(e.outgoing(update.clone()), Some(update));
}

#[test]
fn empty_and_notification_only_batches() {
    let mut e = Envelope::default();
    let read = e.incoming("[]");
    let v: Value = serde_json::from_str(&read.reply.unwrap()).unwrap();
    assert_eq!(
        (v["id"].clone(), v["error"]["code"].clone()),
        (Value::Null, json!(-32600))
    );
    assert!(read.frames.is_empty());
    let read = e.incoming(r#"[{"jsonrpc":"2.0","method":"n"}]"#);
    assert_eq!((read.frames.len(), read.reply), (1, None));
    let read = e.incoming("[1,2]");
    let v: Value = serde_json::from_str(&read.reply.unwrap()).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 2);
    // A version other than "2.0" in a batch is refused there, not run.
    let read = e.incoming(r#"[{"jsonrpc":"1.0","id":3,"method":"session/new"}]"#);
    assert!(read.frames.is_empty());
    assert!(read.reply.unwrap().contains("-32600"));
}
