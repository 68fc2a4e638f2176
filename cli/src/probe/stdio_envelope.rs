//! The stdio Agent's JSON-RPC 2.0 envelope around the model (`acp-chaos agent`): what the
//! sans-IO model, which reads one message per line with `serde_json::Value` ids, cannot do
//! alone.
//!
//! - **Batches.** A line that is a JSON array is a batch: each element goes to the model as
//!   its own line; the answers to its requests go out together as one array once the last is
//!   in, in the batch's order (none for notifications and responses; no array at all when
//!   nothing in it is answered). An element that is not a valid request (not an object, a
//!   bad id or version, `models::rpc::parse_request`) gets its `-32600` in the array. An
//!   empty array is one `-32600` with `id: null`.
//! - **Ids exactly as sent.** An integer id beyond 64 bits would come back from `Value` as a
//!   float (`18446744073709551616` → `1.8446744073709552e19`): the model gets an alias (a
//!   string), and its answer goes out with the id's own text. Batch requests get aliases too,
//!   so their answers are told apart by the alias, not by an id the Client may have reused.
//!   Aliases start with [`ALIAS`]; a Client's own string id that starts so is aliased too,
//!   so an alias never meets a Client's id.
//!
//! Requests the Agent sends and its notifications are not answers: they go out as they come.

use std::collections::BTreeMap;

use serde_json::value::RawValue;
use serde_json::Value;

use acp_chaos::models::rpc::{self, code, Frame};

/// The prefix of the model's aliases for ids (see the module docs).
pub const ALIAS: &str = "acp-chaos-alias:";

/// What one line read becomes: lines for the model, and a line to write at once (the answer
/// to an empty or all-invalid batch).
#[derive(Debug, Default, PartialEq)]
pub struct Incoming {
    /// Lines for the model, in order.
    pub frames: Vec<String>,
    /// A line to write now.
    pub reply: Option<String>,
}

/// One aliased request: the id's text as sent, and its batch slot if it came in a batch.
#[derive(Debug)]
struct Alias {
    raw: String,
    slot: Option<(u64, usize)>,
}

/// The envelope's state: aliases in use and batches waiting for answers.
#[derive(Debug, Default)]
pub struct Envelope {
    next: u64,
    aliases: BTreeMap<String, Alias>,
    /// Batch number → a slot per element that is answered, in order (`None`: not yet).
    batches: BTreeMap<u64, Vec<Option<String>>>,
    next_batch: u64,
}

/// The id's text as sent, when `line` is an object with an `id` member (`None` otherwise).
fn raw_id(line: &str) -> Option<String> {
    let m: BTreeMap<String, Box<RawValue>> = serde_json::from_str(line).ok()?;
    m.get("id").map(|r| r.get().to_string())
}

/// Whether an id needs an alias: an integer `Value` cannot hold, or a string that starts like
/// an alias.
fn needs_alias(id: &Value, raw: &str) -> bool {
    match id {
        Value::Number(n) => !n.is_i64() && !n.is_u64() && is_integer_text(raw),
        Value::String(s) => s.starts_with(ALIAS),
        _ => false,
    }
}

/// `-?[0-9]+`: JSON text of an integer (no fraction, no exponent).
fn is_integer_text(raw: &str) -> bool {
    let digits = raw.strip_prefix('-').unwrap_or(raw);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

fn invalid() -> String {
    rpc::err(&Value::Null, code::INVALID_REQUEST, "Invalid Request", None)
}

impl Envelope {
    /// Split one line read from stdin into what the model reads.
    pub fn incoming(&mut self, line: &str) -> Incoming {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            // Not JSON: the model answers -32700.
            return Incoming {
                frames: vec![line.to_string()],
                reply: None,
            };
        };
        if !v.is_array() {
            let frame = match raw_id(line) {
                Some(raw) if v.get("method").is_some() && needs_alias(&v["id"], &raw) => {
                    self.swap(&v, raw, None)
                }
                _ => line.to_string(),
            };
            return Incoming {
                frames: vec![frame],
                reply: None,
            };
        }
        // The elements' own text keeps their ids exactly (`v` holds them as `Value`s).
        let items: Vec<Box<RawValue>> = serde_json::from_str(line).unwrap_or_default();
        if items.is_empty() {
            return Incoming {
                frames: Vec::new(),
                reply: Some(invalid()),
            };
        }
        let batch = self.next_batch;
        self.next_batch += 1;
        let mut slots: Vec<Option<String>> = Vec::new();
        let mut frames = Vec::new();
        for item in &items {
            let text = item.get();
            let v: Value = serde_json::from_str(text).unwrap_or(Value::Null);
            let request = v.get("method").is_some() && v.get("id").is_some();
            if !request {
                match rpc::parse_request(text) {
                    // Notifications and the Client's responses are not answered.
                    Ok(Frame::Notification { .. } | Frame::Response { .. }) => {
                        frames.push(text.to_string())
                    }
                    _ => slots.push(Some(invalid())),
                }
                continue;
            }
            let raw = raw_id(text).unwrap_or_default();
            // Checked as the model would check it, with the id it will see.
            let mut probe = v.clone();
            if needs_alias(&v["id"], &raw) {
                probe["id"] = Value::String(ALIAS.into());
            }
            match rpc::parse_request(&probe.to_string()) {
                Ok(Frame::Request { .. }) => {
                    let slot = (batch, slots.len());
                    slots.push(None);
                    frames.push(self.swap(&v, raw, Some(slot)));
                }
                _ => slots.push(Some(invalid())),
            }
        }
        if slots.iter().all(Option::is_some) {
            let reply = (!slots.is_empty()).then(|| join(&slots));
            return Incoming { frames, reply };
        }
        self.batches.insert(batch, slots);
        Incoming {
            frames,
            reply: None,
        }
    }

    /// `v` with its id swapped for a fresh alias that remembers `raw` and the batch slot.
    fn swap(&mut self, v: &Value, raw: String, slot: Option<(u64, usize)>) -> String {
        let alias = format!("{ALIAS}{}", self.next);
        self.next += 1;
        let mut v = v.clone();
        v["id"] = Value::String(alias.clone());
        self.aliases.insert(alias, Alias { raw, slot });
        v.to_string()
    }

    /// What to write for a line the model wrote: the line with the id as sent, nothing yet
    /// (an answer into a batch still waiting), or the batch's array when this answer
    /// completes it.
    pub fn outgoing(&mut self, line: String) -> Option<String> {
        if self.aliases.is_empty() || !line.contains(ALIAS) {
            return Some(line);
        }
        let Ok(v) = serde_json::from_str::<Value>(&line) else {
            return Some(line);
        };
        // Only answers carry a request's id back; the Agent's own requests have its ids.
        let (Value::String(alias), None) = (&v["id"], v.get("method")) else {
            return Some(line);
        };
        let Some(found) = self.aliases.remove(alias) else {
            return Some(line);
        };
        // The model writes compact JSON: the id member's text is `"id":"<alias>"`.
        let text = line.replacen(
            &format!("\"id\":{}", Value::String(alias.clone())),
            &format!("\"id\":{}", found.raw),
            1,
        );
        let Some((batch, i)) = found.slot else {
            return Some(text);
        };
        let slots = self.batches.get_mut(&batch)?;
        slots[i] = Some(text);
        if slots.iter().all(Option::is_some) {
            let slots = self.batches.remove(&batch)?;
            return Some(join(&slots));
        }
        None
    }
}

/// A batch's answers as one JSON array line.
fn join(slots: &[Option<String>]) -> String {
    let parts: Vec<&str> = slots.iter().flatten().map(String::as_str).collect();
    format!("[{}]", parts.join(","))
}
