//! `acp-chaos agent` as a process: the JSON-RPC envelope it checks (ids, version, batches,
//! ids beyond 64 bits as sent) and what it does with its store folder on start (a torn tail
//! cut, damage in the middle refused with exit 2, the boot counter derived from the log).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_acp-chaos");

const INIT: &str = r#"{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":2,"info":{"name":"t","version":"1"}}}"#;

/// A `session/new` line with `id` as JSON text.
fn new_session(id: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"session/new","params":{{"cwd":"/","mcpServers":[]}}}}"#
    )
}

const LIST: &str = r#"{"jsonrpc":"2.0","id":"list","method":"session/list","params":{}}"#;

/// A fresh store folder for one test.
fn store(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("acp-chaos-stdio-agent-test-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// Run the stored Agent on `store` with `lines` on stdin: (stdout lines, stderr, exit code).
fn serve(store: &Path, lines: &[String]) -> (Vec<String>, String, Option<i32>) {
    serve_with(store, &[], lines)
}

/// [`serve`] with more arguments.
fn serve_with(store: &Path, args: &[&str], lines: &[String]) -> (Vec<String>, String, Option<i32>) {
    let mut c = Command::new(BIN)
        .args(["agent", "--store", store.to_str().unwrap()])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut w = c.stdin.take().unwrap();
    for l in lines {
        // The Agent may have exited at start (a damaged store): a broken pipe is its answer.
        let _ = writeln!(w, "{l}");
    }
    drop(w);
    let o = c.wait_with_output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    (
        out,
        String::from_utf8_lossy(&o.stderr).into_owned(),
        o.status.code(),
    )
}

fn json(l: &str) -> Value {
    serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}"))
}

/// The session ids a `session/list` answer among `out` names.
fn listed(out: &[String]) -> Vec<String> {
    let l = out
        .iter()
        .map(|l| json(l))
        .find(|v| v["id"] == "list")
        .expect("a session/list answer");
    l["result"]["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["sessionId"].as_str().unwrap().to_string())
        .collect()
}

/// The `sessionId`s handed out among `out`.
fn created(out: &[String]) -> Vec<String> {
    out.iter()
        .filter_map(|l| json(l)["result"]["sessionId"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn bad_ids_and_versions_are_refused_and_not_executed() {
    let dir = store("envelope");
    let mut lines = vec![INIT.to_string()];
    for id in ["[]", "{}", "true", "[1]", "1.5"] {
        lines.push(new_session(id));
    }
    lines.push(new_session("7").replace(r#""jsonrpc":"2.0","#, r#""jsonrpc":"1.0","#));
    lines.push(new_session("8").replace(r#""jsonrpc":"2.0","#, ""));
    lines.push(LIST.to_string());
    let (out, err, code) = serve(&dir, &lines);
    assert_eq!(code, Some(0), "{err}");
    let answers: Vec<Value> = out.iter().map(|l| json(l)).collect();
    // One -32600 per bad line: id null for a bad id, the id for a bad version.
    let refused: Vec<&Value> = answers
        .iter()
        .filter(|a| a["error"]["code"] == -32600)
        .map(|a| &a["id"])
        .collect();
    let null = Value::Null;
    assert_eq!(
        refused,
        [&null, &null, &null, &null, &null, &json("7"), &json("8")],
        "{out:?}"
    );
    // None of them created a session.
    assert_eq!(listed(&out), Vec::<String>::new(), "{out:?}");
}

#[test]
fn batches_are_answered_with_an_array_and_big_ids_as_sent() {
    let dir = store("batch");
    let big = "18446744073709551616";
    let lines = vec![
        INIT.to_string(),
        new_session(big),
        "[]".to_string(),
        format!(
            r#"[{},{{"jsonrpc":"2.0","method":"nope"}},{},1]"#,
            new_session("2"),
            new_session("[]")
        ),
        r#"[{"jsonrpc":"2.0","method":"nope"}]"#.to_string(),
        LIST.to_string(),
    ];
    let (out, err, code) = serve(&dir, &lines);
    assert_eq!(code, Some(0), "{err}");
    // The big id comes back as the same digits, not as a float.
    assert!(
        out[1].contains(&format!(r#""id":{big},"result""#)),
        "{}",
        out[1]
    );
    // The empty batch: one -32600, id null, not an array.
    let empty = json(&out[2]);
    assert_eq!(
        (&empty["id"], &empty["error"]["code"]),
        (&Value::Null, &json("-32600"))
    );
    // The batch: its request answered, the two bad elements refused, the notification not.
    let batch = json(&out[3]);
    let arr = batch.as_array().expect("an array");
    assert_eq!(arr.len(), 3, "{batch}");
    assert_eq!(arr[0]["id"], 2);
    assert!(arr[0]["result"]["sessionId"].is_string());
    assert!(arr[1..]
        .iter()
        .all(|a| a["error"]["code"] == -32600 && a["id"].is_null()));
    // The notification-only batch has no answer: the next line is the list's.
    assert_eq!(json(&out[4])["id"], "list");
    assert_eq!(out.len(), 5, "{out:?}");
}

/// Three sessions, one start each: the log holds boot and session records.
fn three_sessions(dir: &Path) -> Vec<String> {
    let mut ids = Vec::new();
    for n in 0..3 {
        let (out, err, code) = serve(dir, &[INIT.to_string(), new_session(&n.to_string())]);
        assert_eq!(code, Some(0), "{err}");
        ids.extend(created(&out));
    }
    assert_eq!(ids.len(), 3);
    ids
}

/// Byte offsets where each framed record of `log` starts (`[len u32 LE][crc u32 LE][payload]`).
fn record_starts(log: &[u8]) -> Vec<usize> {
    let mut at = 0;
    let mut out = Vec::new();
    while at + 8 <= log.len() {
        out.push(at);
        at += 8 + u32::from_le_bytes(log[at..at + 4].try_into().unwrap()) as usize;
    }
    out
}

#[test]
fn a_flipped_bit_in_the_middle_of_the_log_is_reported_not_erased() {
    let dir = store("flip");
    three_sessions(&dir);
    let path = dir.join("sessions.log");
    let mut log = std::fs::read(&path).unwrap();
    let starts = record_starts(&log);
    assert_eq!(starts.len(), 6, "a boot and a session record per start");
    // A bit in the payload of the second session record (record 3 of 6).
    let at = starts[3];
    log[at + 12] ^= 0x10;
    std::fs::write(&path, &log).unwrap();
    let (out, err, code) = serve(&dir, &[INIT.to_string(), LIST.to_string()]);
    assert_eq!(code, Some(2), "{err} {out:?}");
    assert!(out.is_empty(), "{out:?}");
    assert!(
        err.contains(&path.display().to_string()) && err.contains(&format!("byte {at}")),
        "{err}"
    );
    // Nothing cut: the file is as the damage left it.
    assert_eq!(std::fs::read(&path).unwrap(), log);
}

#[test]
fn a_torn_tail_is_cut_and_the_rest_served() {
    let dir = store("torn");
    let ids = three_sessions(&dir);
    let path = dir.join("sessions.log");
    let whole = std::fs::read(&path).unwrap();
    // Half a record after the last one, as a crash mid-write leaves it.
    let mut torn = whole.clone();
    torn.extend_from_slice(&whole[..whole.len().min(20)]);
    torn.truncate(whole.len() + 13);
    std::fs::write(&path, &torn).unwrap();
    let (out, err, code) = serve(&dir, &[INIT.to_string(), LIST.to_string()]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("torn tail"), "{err}");
    assert_eq!(listed(&out), ids);
    // Cut back to the whole records, then this start's boot record appended.
    let now = std::fs::read(&path).unwrap();
    assert_eq!(&now[..whole.len()], &whole[..]);
    assert_eq!(record_starts(&now).len(), 7);
}

#[test]
fn a_deleted_or_damaged_boots_file_does_not_reuse_ids() {
    let dir = store("boots");
    let mut seen = three_sessions(&dir);
    // A store from before boot records counted starts in `boots`; damage or delete it.
    for damage in [Some("garbage\n"), Some(""), None] {
        match damage {
            Some(text) => std::fs::write(dir.join("boots"), text).unwrap(),
            None => {
                let _ = std::fs::remove_file(dir.join("boots"));
            }
        }
        let (out, err, code) = serve(&dir, &[INIT.to_string(), new_session("9")]);
        assert_eq!(code, Some(0), "{err}");
        let ids = created(&out);
        assert_eq!(ids.len(), 1);
        assert!(
            !seen.contains(&ids[0]),
            "{} handed out again ({seen:?})",
            ids[0]
        );
        seen.extend(ids);
    }
    // Without boot records (an older log), the ids in the records still count.
    let path = dir.join("sessions.log");
    let log = std::fs::read(&path).unwrap();
    let mut kept = Vec::new();
    let starts = record_starts(&log);
    for (i, at) in starts.iter().enumerate() {
        let end = starts.get(i + 1).copied().unwrap_or(log.len());
        if !String::from_utf8_lossy(&log[at + 8..end]).contains(r#""t":"boot""#) {
            kept.extend_from_slice(&log[*at..end]);
        }
    }
    std::fs::write(&path, kept).unwrap();
    let _ = std::fs::remove_file(dir.join("boots"));
    // Without its watermark too, only `--salvage` reads it (with it, the shorter log is refused).
    let _ = std::fs::remove_file(dir.join("sessions.synced"));
    let (out, err, _) = serve_with(&dir, &["--salvage"], &[INIT.to_string(), new_session("10")]);
    let ids = created(&out);
    assert!(
        !ids.is_empty() && !seen.contains(&ids[0]),
        "{ids:?} {seen:?} {err}"
    );
}

/// The three defects a user found, through the real binary: a zeroed record whose length is a
/// multiple of 8 (once read as empty records and dropped), a flipped bit in the last record
/// (once cut as a torn tail), a log cut before its last synced record (once read as whole, and
/// its boot's ids handed out again). Each stops the start with exit 2 naming the file and the
/// byte offset; `--salvage` keeps what comes before the damage, says what it dropped, and
/// hands out no id of a lost boot again.
#[test]
fn damage_below_the_watermark_is_refused_and_salvage_says_what_it_drops() {
    let path_of = |dir: &Path| dir.join("sessions.log");
    let refused = |dir: &Path, at: usize, what: &str| {
        let (out, err, code) = serve(dir, &[INIT.to_string(), LIST.to_string()]);
        assert_eq!(code, Some(2), "{what}: {err} {out:?}");
        assert!(out.is_empty(), "{what}: {out:?}");
        assert!(
            err.contains(&path_of(dir).display().to_string())
                && err.contains(&format!("byte {at}")),
            "{what}: {err}"
        );
    };
    // A zeroed middle record (the whole record: 8-byte multiples read as empty ones before).
    let dir = store("zeroed");
    three_sessions(&dir);
    let mut log = std::fs::read(path_of(&dir)).unwrap();
    let starts = record_starts(&log);
    log[starts[3]..starts[4]].fill(0);
    std::fs::write(path_of(&dir), &log).unwrap();
    refused(&dir, starts[3], "zeroed record");
    assert_eq!(std::fs::read(path_of(&dir)).unwrap(), log, "nothing cut");
    // A flipped bit in the last record, synced and acknowledged.
    let dir = store("last-flip");
    three_sessions(&dir);
    let mut log = std::fs::read(path_of(&dir)).unwrap();
    let last = *record_starts(&log).last().unwrap();
    log[last + 10] ^= 0x04;
    std::fs::write(path_of(&dir), &log).unwrap();
    refused(&dir, last, "flipped last record");
    // The log cut before its last record (the third start's session).
    let dir = store("cut");
    let seen = three_sessions(&dir);
    let log = std::fs::read(path_of(&dir)).unwrap();
    let last = *record_starts(&log).last().unwrap();
    std::fs::write(path_of(&dir), &log[..last]).unwrap();
    refused(&dir, last, "cut before the last record");
    // The same cut with the watermark deleted or emptied: nothing else could tell the cut.
    for (what, mark) in [("deleted", None), ("emptied", Some(&b""[..]))] {
        let dir = store(&format!("cut-mark-{what}"));
        three_sessions(&dir);
        let log = std::fs::read(path_of(&dir)).unwrap();
        let last = *record_starts(&log).last().unwrap();
        std::fs::write(path_of(&dir), &log[..last]).unwrap();
        let mark_path = dir.join("sessions.synced");
        match mark {
            None => std::fs::remove_file(&mark_path).unwrap(),
            Some(b) => std::fs::write(&mark_path, b).unwrap(),
        }
        let (out, err, code) = serve(&dir, &[INIT.to_string(), LIST.to_string()]);
        assert_eq!(code, Some(2), "watermark {what}: {err} {out:?}");
        assert!(
            out.is_empty() && err.contains(&mark_path.display().to_string()),
            "watermark {what}: {err} {out:?}"
        );
    }
    // --salvage: starts with what came before the cut, says what was lost, reuses no id.
    let (out, err, code) = serve_with(
        &dir,
        &["--salvage"],
        &[INIT.to_string(), new_session("7"), LIST.to_string()],
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("--salvage")
            && err.contains(&format!("byte {last}"))
            && err.contains("kept 5 records"),
        "{err}"
    );
    let ids = created(&out);
    assert_eq!(ids.len(), 1, "{out:?}");
    assert!(
        !seen.contains(&ids[0]),
        "{} handed out again ({seen:?})",
        ids[0]
    );
    assert_eq!(
        listed(&out),
        vec![seen[0].clone(), seen[1].clone(), ids[0].clone()]
    );
    // And the salvaged store opens again without a word of damage.
    let (_, err, code) = serve(&dir, &[INIT.to_string()]);
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains("damaged"), "{err}");
}

/// A store from before the watermark (payload-only CRCs, no `sessions.synced`) is read in its
/// framing and rewritten in the new one; damage in it stops the start.
#[test]
fn a_store_from_before_the_watermark_is_migrated_and_its_damage_refused() {
    let (dir, log) = legacy_store("legacy");
    let mut torn = log.clone();
    torn.extend([1, 0, 0]);
    std::fs::write(dir.join("sessions.log"), &torn).unwrap();
    let (_, err, code) = serve(&dir, &[INIT.to_string()]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains(&format!("byte {}", log.len())), "{err}");
    std::fs::write(dir.join("sessions.log"), &log).unwrap();
    let (out, err, code) = serve(&dir, &[INIT.to_string(), new_session("1")]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("rewrote 2 records"), "{err}");
    assert_eq!(created(&out), vec!["s2.0".to_string()]);
    assert!(dir.join("sessions.synced").exists());
}

/// A store folder `name` in the framing from before the watermark (payload-only CRCs, no
/// `sessions.synced`): a boot record and session `s1.0`. Returns the folder and the log.
fn legacy_store(name: &str) -> (PathBuf, Vec<u8>) {
    let old = |p: &[u8]| {
        let mut out = (p.len() as u32).to_le_bytes().to_vec();
        out.extend(crc32fast_hash(p).to_le_bytes());
        out.extend(p);
        out
    };
    let dir = store(name);
    std::fs::create_dir_all(&dir).unwrap();
    let log: Vec<u8> = [
        &br#"{"t":"boot","boot":1}"#[..],
        br#"{"t":"session","id":"s1.0","cwd":"/"}"#,
    ]
    .iter()
    .flat_map(|p| old(p))
    .collect();
    std::fs::write(dir.join("sessions.log"), &log).unwrap();
    (dir, log)
}

/// CRC-32 (IEEE), bitwise: the framing before the watermark, without a dependency.
fn crc32fast_hash(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for b in bytes {
        crc ^= u32::from(*b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// A `session/prompt` line in session `s1.0` with `key` as raw bytes inside its JSON string.
fn prompt_bytes(id: u64, key: &[u8]) -> Vec<u8> {
    let mut l = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"session/prompt","params":{{"sessionId":"s1.0","prompt":[{{"type":"text","text":"hi {id}"}}],"idempotencyKey":""#
    )
    .into_bytes();
    l.extend_from_slice(key);
    l.extend_from_slice(b"\"}}\n");
    l
}

/// The peak resident memory of process `pid` in KiB (`VmHWM`), where `/proc` tells it.
fn peak_kib(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let l = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    l.split_whitespace().nth(1)?.parse().ok()
}

#[test]
fn lines_not_utf8_overlong_or_too_deep_are_refused_unexecuted_and_memory_stays_bounded() {
    let dir = store("strict-lines");
    let wire = dir.with_extension("wire.jsonl");
    let _ = std::fs::remove_file(&wire);
    let mut c = Command::new(BIN)
        .args(["agent", "--turn-ms", "1", "--store", dir.to_str().unwrap()])
        .arg("--wire-log")
        .arg(&wire)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = c.id();
    let mut w = c.stdin.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = c.stdout.take().unwrap();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for l in std::io::BufReader::new(stdout).lines() {
            let Ok(l) = l else { return };
            if tx.send(l).is_err() {
                return;
            }
        }
    });
    let next = |want: &dyn Fn(&Value) -> bool| -> Vec<Value> {
        let mut got = Vec::new();
        loop {
            let l = rx
                .recv_timeout(std::time::Duration::from_secs(20))
                .unwrap_or_else(|_| panic!("no answer; so far {got:?}"));
            let v = json(&l);
            let done = want(&v);
            got.push(v);
            if done {
                return got;
            }
        }
    };
    writeln!(w, "{INIT}").unwrap();
    writeln!(w, "{}", new_session("1")).unwrap();
    next(&|v| v["id"] == 1);
    // Two keys that differ only in bytes that are not UTF-8 (a repair made them one key), a
    // 50 MB line, 200 nested arrays (past serde_json's 128), then a valid prompt whose key is
    // what the repair made of the first two.
    w.write_all(&prompt_bytes(2, b"k\xffA")).unwrap();
    w.write_all(&prompt_bytes(3, b"k\xfeA")).unwrap();
    let big = vec![b'x'; 50 << 20];
    w.write_all(&big).unwrap();
    w.write_all(b"\n").unwrap();
    drop(big);
    writeln!(w, "{}{}", "[".repeat(200), "]".repeat(200)).unwrap();
    w.write_all(&prompt_bytes(4, "k\u{fffd}A".as_bytes()))
        .unwrap();
    w.flush().unwrap();
    let got = next(&|v| v["id"] == 4);
    let peak = peak_kib(pid);
    drop(w);
    let status = c.wait().unwrap();
    assert!(status.success(), "{status}");
    let refused: Vec<(i64, &Value)> = got
        .iter()
        .filter(|v| v.get("error").is_some())
        .map(|v| (v["error"]["code"].as_i64().unwrap(), &v["id"]))
        .collect();
    let null = Value::Null;
    assert_eq!(
        refused,
        [
            (-32700, &null),
            (-32700, &null),
            (-32600, &null),
            (-32700, &null)
        ],
        "{got:?}"
    );
    // Neither refused prompt was answered or executed: the valid one is the only insertion.
    assert!(got.iter().all(|v| v["id"] != 2 && v["id"] != 3), "{got:?}");
    assert!(got.last().unwrap()["result"].is_object(), "{got:?}");
    let log = std::fs::read_to_string(&wire).unwrap();
    let inserts = log.lines().filter(|l| l.contains(r#""effect":"insert""#));
    assert_eq!(inserts.count(), 1, "{log}");
    assert_eq!(log.matches(r#""refused":true"#).count(), 3, "{log}");
    // The 50 MB line was never held whole.
    if let Some(kib) = peak {
        assert!(kib < 40 << 10, "peak resident memory {kib} KiB");
    }
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&wire);
}

/// States a crash leaves are never refused as damage: the first watermark only (its slot 0
/// never written) is no damaged slot; a migrated store killed before its first watermark
/// opens; a torn first watermark write beside boot records only opens. A missing watermark
/// beside an acknowledged record is still refused.
#[test]
fn what_a_crash_leaves_around_the_first_watermark_opens_without_a_word_of_damage() {
    let dir = store("first-mark");
    for _ in 0..2 {
        let (_, err, code) = serve(&dir, &[INIT.to_string()]);
        assert_eq!(code, Some(0), "{err}");
        assert!(!err.contains("damaged"), "{err}");
    }
    // A torn first watermark write (slot 1 half written) beside a boot record only.
    let dir = store("torn-first-mark");
    let (_, err, code) = serve(&dir, &[INIT.to_string()]);
    assert_eq!(code, Some(0), "{err}");
    let mark = dir.join("sessions.synced");
    let bytes = std::fs::read(&mark).unwrap();
    std::fs::write(&mark, &bytes[..48]).unwrap();
    let (_, err, code) = serve(&dir, &[INIT.to_string()]);
    assert_eq!(code, Some(0), "torn first write: {err}");
    assert!(err.contains("torn first write"), "{err}");
    // And the same beside an acknowledged session: refused.
    let dir = store("torn-mark-acked");
    three_sessions(&dir);
    std::fs::write(dir.join("sessions.synced"), vec![7u8; 48]).unwrap();
    let (_, err, code) = serve(&dir, &[INIT.to_string()]);
    assert_eq!(code, Some(2), "{err}");
}

/// A store migrated from the old framing and killed before its first watermark was written
/// opens (its old records came from a store without one); what it acknowledged after the
/// first watermark is still refused without it.
#[test]
fn a_migrated_store_killed_before_its_first_watermark_opens() {
    let (dir, _) = legacy_store("migrated-kill");
    let (out, err, code) = serve(&dir, &[INIT.to_string(), new_session("1")]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(created(&out), vec!["s2.0".to_string()]);
    let path = dir.join("sessions.log");
    let migrated = std::fs::read(&path).unwrap();
    let starts = record_starts(&migrated);
    // Records: boot 1, s1.0, migrated, boot 2, s2.0. Without the watermark, the whole log
    // (s2.0 was acknowledged after it) is refused...
    assert_eq!(starts.len(), 5, "{starts:?}");
    std::fs::remove_file(dir.join("sessions.synced")).unwrap();
    let (_, err, code) = serve(&dir, &[INIT.to_string()]);
    assert_eq!(code, Some(2), "{err}");
    // ... and what a kill right after the migration leaves (no s2.0, no watermark) opens.
    std::fs::write(&path, &migrated[..starts[3]]).unwrap();
    let (out, err, code) = serve(&dir, &[INIT.to_string(), LIST.to_string()]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(listed(&out), vec!["s1.0".to_string()]);
}
