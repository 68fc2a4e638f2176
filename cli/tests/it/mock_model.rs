//! The mock model server over real loopback HTTP, with a plain `TcpStream` client: both SSE
//! formats, the JSON forms, 404s, the delay, the request log and the marker oracle.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use acp_chaos_cli::probe::mock_model::{MockConfig, MockModel, RequestKind};
use serde_json::{json, Value};

struct Reply {
    status: u16,
    headers: String,
    body: String,
}

/// One HTTP/1.1 request with `Connection: close`; the body de-chunked.
fn http(port: u16, method: &str, path: &str, body: &str) -> Reply {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8(raw).unwrap();
    let (head, rest) = text.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(rest)
    } else {
        rest.to_string()
    };
    Reply {
        status,
        headers: head.to_ascii_lowercase(),
        body,
    }
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    loop {
        let (size, rest) = s.split_once("\r\n").unwrap();
        let n = usize::from_str_radix(size.trim(), 16).unwrap();
        if n == 0 {
            return out;
        }
        out.push_str(&rest[..n]);
        s = &rest[n + 2..];
    }
}

/// `(event, data)` pairs of an SSE body, checking each `data` names its event in `type`.
fn events(body: &str) -> Vec<(String, Value)> {
    body.split("\n\n")
        .filter(|b| !b.trim().is_empty())
        .map(|block| {
            let mut name = None;
            let mut data = None;
            for line in block.lines() {
                if let Some(n) = line.strip_prefix("event: ") {
                    name = Some(n.to_string());
                } else if let Some(d) = line.strip_prefix("data: ") {
                    data = Some(serde_json::from_str::<Value>(d).unwrap());
                }
            }
            let (name, data) = (name.unwrap(), data.unwrap());
            assert_eq!(data["type"], name.as_str(), "{block}");
            (name, data)
        })
        .collect()
}

fn names(ev: &[(String, Value)]) -> Vec<&str> {
    let mut v: Vec<&str> = ev.iter().map(|(n, _)| n.as_str()).collect();
    v.dedup();
    v
}

fn tool() -> Value {
    json!([{"name": "Bash", "description": "run", "input_schema": {"type": "object"}}])
}

#[test]
fn anthropic_messages_stream_and_json() {
    let mock = MockModel::start(MockConfig {
        reply_text: "Hello from the mock model.".into(),
        ..MockConfig::default()
    })
    .unwrap();
    let req = json!({"model": "claude-x", "stream": true, "max_tokens": 100, "tools": tool(),
        "system": "be brief",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi M-1"}]}]});
    let r = http(mock.port(), "POST", "/v1/messages", &req.to_string());
    assert_eq!(r.status, 200);
    assert!(
        r.headers.contains("content-type: text/event-stream"),
        "{}",
        r.headers
    );
    let ev = events(&r.body);
    assert_eq!(
        names(&ev),
        [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    let start = &ev[0].1["message"];
    assert_eq!(start["role"], "assistant");
    assert_eq!(start["model"], "claude-x");
    assert_eq!(start["content"], json!([]));
    assert!(start["usage"]["input_tokens"].is_u64());
    assert_eq!(ev[1].1["content_block"]["type"], "text");
    let text: String = ev
        .iter()
        .filter(|(n, _)| n == "content_block_delta")
        .map(|(_, d)| {
            assert_eq!(d["delta"]["type"], "text_delta");
            d["delta"]["text"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(text, "Hello from the mock model.");
    let delta = &ev[ev.len() - 2].1;
    assert_eq!(delta["delta"]["stop_reason"], "end_turn");
    assert!(delta["usage"]["output_tokens"].is_u64());

    // Not streamed: one JSON message.
    let mut plain = req.clone();
    plain["stream"] = json!(false);
    let r = http(mock.port(), "POST", "/v1/messages", &plain.to_string());
    let v: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(v["type"], "message");
    assert_eq!(v["content"][0]["text"], "Hello from the mock model.");
    assert_eq!(v["stop_reason"], "end_turn");

    let r = http(
        mock.port(),
        "POST",
        "/v1/messages/count_tokens",
        &json!({"messages": []}).to_string(),
    );
    assert_eq!(r.status, 200);
    assert!(serde_json::from_str::<Value>(&r.body).unwrap()["input_tokens"].is_u64());

    let log = mock.requests();
    assert_eq!(log.len(), 3);
    assert_eq!(log[0].kind, RequestKind::Turn);
    assert_eq!(log[0].method, "POST");
    assert_eq!(log[0].path, "/v1/messages");
    assert_eq!(log[0].body_bytes, req.to_string().len());
    assert!(log[0].stream && log[0].completed);
    assert_eq!(log[0].user_texts, vec!["hi M-1".to_string()]);
    assert_eq!(log[2].kind, RequestKind::Other);
    mock.shutdown();
}

#[test]
fn openai_responses_stream_and_json() {
    let mock = MockModel::start(MockConfig {
        reply_text: "Mock says hi".into(),
        ..MockConfig::default()
    })
    .unwrap();
    let req = json!({"model": "gpt-mock", "stream": true, "tools": [{"type": "function", "name": "shell"}],
    "instructions": "x",
    "input": [
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "M-2 not a user"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<env>"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "do it M-2"}]}
    ]});
    let r = http(mock.port(), "POST", "/v1/responses", &req.to_string());
    assert_eq!(r.status, 200);
    assert!(r.headers.contains("text/event-stream"));
    let ev = events(&r.body);
    assert_eq!(
        names(&ev),
        [
            "response.created",
            "response.output_item.added",
            "response.output_text.delta",
            "response.output_item.done",
            "response.completed"
        ]
    );
    assert_eq!(ev[0].1["response"]["status"], "in_progress");
    assert_eq!(ev[1].1["item"]["role"], "assistant");
    assert_eq!(ev[1].1["item"]["type"], "message");
    let text: String = ev
        .iter()
        .filter(|(n, _)| n == "response.output_text.delta")
        .map(|(_, d)| d["delta"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(text, "Mock says hi");
    let done = &ev[ev.len() - 2].1["item"];
    assert_eq!(done["content"][0]["type"], "output_text");
    assert_eq!(done["content"][0]["text"], "Mock says hi");
    let completed = &ev[ev.len() - 1].1["response"];
    assert_eq!(completed["status"], "completed");
    let usage = &completed["usage"];
    assert!(usage["input_tokens"].is_u64() && usage["output_tokens"].is_u64());
    assert_eq!(usage["input_tokens_details"]["cached_tokens"], 0);
    assert_eq!(usage["output_tokens_details"]["reasoning_tokens"], 0);
    assert!(usage["total_tokens"].is_u64());
    // sequence numbers increase from 0
    let seqs: Vec<u64> = ev
        .iter()
        .map(|(_, d)| d["sequence_number"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, (0..seqs.len() as u64).collect::<Vec<_>>());

    let mut plain = req.clone();
    plain.as_object_mut().unwrap().remove("stream");
    let r = http(mock.port(), "POST", "/v1/responses", &plain.to_string());
    let v: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(v["status"], "completed");
    assert_eq!(v["output"][0]["content"][0]["text"], "Mock says hi");

    let log = mock.requests();
    assert_eq!(log[0].kind, RequestKind::Turn);
    assert_eq!(
        log[0].user_texts,
        vec!["<env>".to_string(), "do it M-2".to_string()]
    );
    assert_eq!(
        mock.marker_count("M-2"),
        1,
        "developer messages are not counted"
    );
}

#[test]
fn unknown_requests_are_logged_and_404() {
    let mock = MockModel::start(MockConfig::default()).unwrap();
    let r = http(mock.port(), "GET", "/v1/models", "");
    assert_eq!(r.status, 404);
    assert!(serde_json::from_str::<Value>(&r.body).is_ok());
    let log = mock.requests();
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].kind, RequestKind::Unknown);
    assert_eq!(log[0].method, "GET");
    assert_eq!(log[0].path, "/v1/models");
    assert_eq!(log[0].status, 404);
}

#[test]
fn marker_oracle_counts_user_copies_in_turn_requests() {
    let mock = MockModel::start(MockConfig::default()).unwrap();
    let port = mock.port();
    let msg =
        |role: &str, text: &str| json!({"role": role, "content": [{"type": "text", "text": text}]});
    let post = |body: Value| {
        let r = http(port, "POST", "/v1/messages", &body.to_string());
        assert_eq!(r.status, 200);
    };
    assert_eq!(mock.marker_count("MK1"), 0);
    // A title request (no tools) carrying the marker: not counted.
    post(json!({"model": "m", "stream": true, "messages": [msg("user", "title for MK1")]}));
    assert_eq!(mock.requests()[0].kind, RequestKind::Title);
    assert_eq!(mock.marker_count("MK1"), 0);
    // The turn: one copy.
    post(
        json!({"model": "m", "stream": true, "tools": tool(), "messages": [msg("user", "go MK1")]}),
    );
    assert_eq!(mock.marker_count("MK1"), 1);
    // The next prompt carries the history: still one copy of MK1; assistant text is ignored.
    post(
        json!({"model": "m", "stream": true, "tools": tool(), "messages": [
        msg("user", "go MK1"), msg("assistant", "echo MK1"), msg("user", "next MK2")]}),
    );
    let t = mock.marker_tally("MK1");
    assert_eq!(
        (t.copies_max, t.requests, t.turns, t.copies_last),
        (1, 2, 1, 1)
    );
    assert_eq!(mock.marker_count("MK2"), 1);
    // A retry inserted twice: two copies in one request.
    post(
        json!({"model": "m", "stream": true, "tools": tool(), "messages": [
        msg("user", "go MK1"), msg("assistant", "ok"), msg("user", "next MK2"),
        msg("assistant", "ok"), {"role": "user", "content": "go MK1"}]}),
    );
    let t = mock.marker_tally("MK1");
    assert_eq!(
        (t.copies_max, t.requests, t.turns, t.copies_last),
        (2, 3, 2, 2)
    );
    assert_eq!(mock.marker_count("MK1"), 2);
    assert_eq!(mock.requests_with("MK1").len(), 3);
    assert_eq!(mock.requests_with("MK2").len(), 2);
    // tool_result blocks in a user message are not user text.
    post(
        json!({"model": "m", "stream": true, "tools": tool(), "messages": [
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "MK3 MK3"}]}]}),
    );
    assert_eq!(mock.marker_count("MK3"), 0);
    // OpenAI: a title request (no tools) is not counted, the turn is; a fresh conversation
    // after a lost history shows as a second turn with one copy.
    let r = http(port, "POST", "/v1/responses", &json!({"model": "g", "stream": true,
        "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "title MK4"}]}]}).to_string());
    assert_eq!(r.status, 200);
    assert_eq!(mock.marker_count("MK4"), 0);
    for _ in 0..2 {
        http(
            port,
            "POST",
            "/v1/responses",
            &json!({"model": "g", "stream": true, "tools": [{"type": "function", "name": "shell"}],
            "input": [{"role": "user", "content": "please MK4"}]})
            .to_string(),
        );
    }
    let t = mock.marker_tally("MK4");
    assert_eq!((t.copies_max, t.requests, t.turns), (1, 2, 2));
    assert!(mock.wait_for_marker("MK4", Duration::from_millis(10)));
    assert!(!mock.wait_for_marker("MK9", Duration::from_millis(10)));
    assert_eq!(mock.marker_count(""), 0);
}

#[test]
fn delay_holds_turns_after_the_first_event_and_is_settable() {
    let mock = MockModel::start(MockConfig {
        delay_ms: 1500,
        ..MockConfig::default()
    })
    .unwrap();
    let port = mock.port();
    let body = json!({"model": "m", "stream": true, "tools": tool(),
        "messages": [{"role": "user", "content": "slow MK5"}]})
    .to_string();
    // Read the first event before the delay is over: the stream is open and in flight.
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        s,
        "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let t0 = acp_chaos_cli::wall_clock::now();
    let mut buf = [0u8; 4096];
    let mut got = String::new();
    while !got.contains("message_start") {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0);
        got.push_str(std::str::from_utf8(&buf[..n]).unwrap());
    }
    assert!(
        t0.elapsed() < Duration::from_millis(1200),
        "first event not held"
    );
    assert!(mock.wait_for_marker("MK5", Duration::from_secs(5)));
    assert_eq!(mock.in_flight(), 1);
    assert!(!mock.requests()[0].completed);
    let mut rest = String::new();
    s.read_to_string(&mut rest).unwrap();
    assert!(t0.elapsed() >= Duration::from_millis(1450), "rest not held");
    assert!(rest.contains("message_stop"));
    assert!(mock.wait_for(Duration::from_secs(5), |r| r.completed));
    // In flight drops to 0 once the stream is over.
    let t = acp_chaos_cli::wall_clock::now();
    while mock.in_flight() != 0 && t.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(mock.in_flight(), 0);
    assert_eq!(mock.requests()[0].delay_ms, 1500);

    // A client that goes away mid-stream leaves the request incomplete.
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        s,
        "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let n = s.read(&mut buf).unwrap();
    assert!(n > 0);
    drop(s);
    // hyper notices the closed connection while the stream is held and drops it.
    let t = acp_chaos_cli::wall_clock::now();
    while mock.in_flight() != 0 && t.elapsed() < Duration::from_millis(1200) {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(mock.in_flight(), 0, "the held stream was not dropped");
    std::thread::sleep(Duration::from_millis(1600).saturating_sub(t.elapsed()));
    assert!(!mock.requests()[1].completed);

    // Settable at runtime; title requests are never held.
    mock.set_delay_ms(0);
    assert_eq!(mock.delay_ms(), 0);
    let t = acp_chaos_cli::wall_clock::now();
    let r = http(port, "POST", "/v1/messages", &body);
    assert!(r.body.contains("message_stop"));
    assert!(t.elapsed() < Duration::from_millis(1200));
    mock.shutdown();
}

#[test]
fn log_dir_gets_every_body_and_shutdown_frees_the_port() {
    let dir = std::env::temp_dir().join(format!("acp-mock-log-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mock = MockModel::start(MockConfig {
        log_dir: Some(dir.clone()),
        keep_bodies: true,
        ..MockConfig::default()
    })
    .unwrap();
    let port = mock.port();
    assert!(mock.base_url().starts_with("http://127.0.0.1:"));
    assert_eq!(mock.v1_url(), format!("http://127.0.0.1:{port}/v1"));
    http(
        port,
        "POST",
        "/v1/messages",
        r#"{"model":"m","messages":[]}"#,
    );
    http(port, "HEAD", "/", "");
    assert_eq!(mock.requests()[0].body.as_ref().unwrap()["model"], "m");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    files.sort();
    assert_eq!(files, ["0000-POST-v1_messages.json", "0001-HEAD-.json"]);
    mock.shutdown();
    assert!(TcpStream::connect(("127.0.0.1", port)).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}
