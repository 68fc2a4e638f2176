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
    /// What the wire layer writes for every key (`None`: the key itself).
    key_written: Option<&'static str>,
    /// Whether its `attempt` reports say what the wire carried (`false`: they keep the key
    /// the protocol logic chose, a report the frames contradict).
    reports_written: bool,
}

impl ClientModel for WireClient {
    fn handle(&mut self, input: ClientInput, out: &mut Vec<Action>) {
        let from = out.len();
        self.inner.handle(input, out);
        let Some(written) = self.key_written else {
            return;
        };
        for a in &mut out[from..] {
            match a {
                // The frame as written: the key replaced by "undefined".
                Action::Send { line, .. } => {
                    if let Ok(mut v) = serde_json::from_str::<Value>(line) {
                        if v["method"] == "session/prompt"
                            && v["params"]["idempotencyKey"].is_string()
                        {
                            v["params"]["idempotencyKey"] = written.into();
                            *line = v.to_string();
                        }
                    }
                }
                // The attempt as the history records it: the key the wire carried.
                Action::Effect(e)
                    if self.reports_written && e.f == op::ATTEMPT && e.value["key"].is_string() =>
                {
                    e.value["key"] = written.into();
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

/// What the simulator calls at every start of the Client process (`undefined_keys`: the bug).
#[allow(dead_code)] // A test that includes this file may use `wire_client_writing` only.
pub fn wire_client(undefined_keys: bool) -> impl Fn(Boot<'_>) -> Box<dyn ClientModel> {
    wire_client_writing(undefined_keys.then_some("undefined"))
}

/// The same Client whose wire layer writes `key` for every key (`None`: the key itself).
#[allow(dead_code)] // The harness example uses `wire_client` only.
pub fn wire_client_writing(key: Option<&'static str>) -> impl Fn(Boot<'_>) -> Box<dyn ClientModel> {
    move |b: Boot<'_>| -> Box<dyn ClientModel> {
        Box::new(WireClient {
            inner: SpecClient::recover(b.plan.client.clone(), b.boot, b.seed, b.records),
            key_written: key,
            reports_written: true,
        })
    }
}

/// The same Client whose wire layer writes `key` for every key while its `attempt` reports
/// keep the keys it chose: only the frames show what it sent.
#[allow(dead_code)] // Only the wire-judged tests use it.
pub fn wire_client_misreporting(key: &'static str) -> impl Fn(Boot<'_>) -> Box<dyn ClientModel> {
    move |b: Boot<'_>| -> Box<dyn ClientModel> {
        Box::new(WireClient {
            inner: SpecClient::recover(b.plan.client.clone(), b.boot, b.seed, b.records),
            key_written: Some(key),
            reports_written: false,
        })
    }
}
