//! `WireClient`: a Client under test whose wire layer serialises the `idempotencyKey`, the
//! Client of `examples/harness_client.rs`.
//!
//! It is the project's model Client ([`SpecClient`]: submissions, retries, resumes, its store)
//! behind the layer that writes its frames, the way an editor's protocol logic sits behind its
//! transport. Any Client plugs in the same way: implement [`ClientModel`]'s three methods.
//!
//! One flag plants a bug seen in the field: `undefined_keys` serialises every key as the
//! literal string `"undefined"` (a JavaScript Client that read a missing field), so two
//! different submissions share one key and the Agent answers the second with the first's
//! `messageId`: the second input is silently dropped (P2, C2).

use acp_chaos::models::{op, Action, ClientInput, ClientModel, SpecClient};
use acp_chaos::world::Boot;
use serde_json::Value;

/// The Client under test.
pub struct WireClient {
    inner: SpecClient,
    undefined_keys: bool,
}

impl ClientModel for WireClient {
    fn handle(&mut self, input: ClientInput, out: &mut Vec<Action>) {
        let from = out.len();
        self.inner.handle(input, out);
        if !self.undefined_keys {
            return;
        }
        for a in &mut out[from..] {
            match a {
                // The frame as written: the key replaced by "undefined".
                Action::Send { line, .. } => {
                    if let Ok(mut v) = serde_json::from_str::<Value>(line) {
                        if v["method"] == "session/prompt"
                            && v["params"]["idempotencyKey"].is_string()
                        {
                            v["params"]["idempotencyKey"] = "undefined".into();
                            *line = v.to_string();
                        }
                    }
                }
                // The attempt as the history records it: the key the wire carried.
                Action::Effect(e) if e.f == op::ATTEMPT && e.value["key"].is_string() => {
                    e.value["key"] = "undefined".into();
                }
                _ => {}
            }
        }
    }

    fn pending(&self) -> Vec<u64> {
        self.inner.pending()
    }

    fn set_clock(&mut self, now_ms: u64) {
        self.inner.set_clock(now_ms)
    }
}

/// What the simulator calls at every start of the Client process.
pub fn wire_client(undefined_keys: bool) -> impl Fn(Boot<'_>) -> Box<dyn ClientModel> {
    move |b: Boot<'_>| -> Box<dyn ClientModel> {
        Box::new(WireClient {
            inner: SpecClient::recover(b.plan.client.clone(), b.boot, b.seed, b.records),
            undefined_keys,
        })
    }
}
