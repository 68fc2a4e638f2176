//! A mock model server for running real ACP agents offline (`acp-chaos probe`).
//!
//! The agents under probe (`codex-acp`, `claude-agent-acp`, `opencode`) talk to a model over
//! HTTP. [`MockModel`] stands in for it on loopback only (`127.0.0.1`, an OS-chosen port):
//!
//! - `POST /v1/messages`: the **Anthropic Messages** API, streamed as server-sent events
//!   (`message_start` → `content_block_start` → `content_block_delta` (`text_delta`) →
//!   `content_block_stop` → `message_delta` (`stop_reason: end_turn`) → `message_stop`), or one
//!   JSON message when the request says `"stream": false`;
//! - `POST /v1/messages/count_tokens`: `{"input_tokens": N}`;
//! - `POST /v1/responses`: the **OpenAI Responses** API, streamed (`response.created` →
//!   `response.output_item.added` → `response.output_text.delta` → `response.output_item.done`
//!   → `response.completed`, with `usage` including `input_tokens_details.cached_tokens` and
//!   `output_tokens_details.reasoning_tokens`), or one JSON response without `stream`;
//! - anything else: logged, answered `404` with a small JSON error.
//!
//! Every request is logged ([`RequestLog`]: method, path, body size, time since start, the
//! user texts it carried) and optionally written to a folder ([`MockConfig::log_dir`]).
//! A **delay** ([`MockModel::set_delay_ms`], settable while agents run) holds every *turn*
//! response after its first event, so a probe can kill an agent while it waits on the model
//! mid-turn ([`MockModel::in_flight`] tells when a turn stream is open).
//!
//! ## The marker oracle
//!
//! A probe puts a unique marker string in each prompt. [`MockModel::marker_count`] says how many
//! copies of that user message the model was given. The rule:
//!
//! - only **turn requests** count ([`RequestKind::Turn`]); auxiliary ones do not:
//!   - Anthropic: a `/v1/messages` request without `tools` is Claude Code's title / topic
//!     request ([`RequestKind::Title`]); the turn carries `tools`;
//!   - OpenAI: Codex sends one title request on the first prompt: a `/v1/responses` request
//!     without `tools` (the turn always carries tools) is [`RequestKind::Title`];
//! - in a turn request, only **user messages** count (Anthropic `messages[]` with
//!   `role: "user"`, their string content or `text` blocks, not `tool_result`s; OpenAI `input[]`
//!   message items with `role: "user"`, their `input_text` parts or string content);
//! - every request carries the whole conversation, so copies are counted **per request** and
//!   the largest count over all turn requests is the answer: `1` when the message is in the
//!   conversation once, `2` when a retry inserted it again into the same history, `0` when it
//!   never reached the model.
//!
//! A retry that lost the history and started the conversation afresh shows as `1` copy in two
//! different turn requests: [`MockModel::marker_tally`] also counts the turn requests whose
//! *last* user message carries the marker (`turns`: with the mock's text-only replies, one per
//! agent turn) and [`MockModel::requests_with`] lists every turn request carrying it.
//!
//! ## Why axum
//!
//! axum (the tokio project's HTTP framework over hyper) is the most widely used, actively
//! maintained Rust HTTP server; tokio is already a dependency of the simulator, and hyper's
//! HTTP/1.1 handles keep-alive, chunked streaming and request bodies of any size correctly,
//! which the agents' HTTP clients rely on. It runs on its own single-threaded tokio runtime in
//! a plain thread, so the server works from synchronous code and never touches the simulator's
//! (turmoil's) runtimes. Only the `http1` and `tokio` features are compiled.
//!
//! This module reads the wall clock (request times, delays): it is real-time code, never
//! called inside a simulated run.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;
use axum::Router;
use serde::Serialize;
use serde_json::{json, Value};

/// Settings of a [`MockModel`].
#[derive(Clone, Debug)]
pub struct MockConfig {
    /// Delay, in milliseconds, after a turn response's first event before the rest of the
    /// stream (the reply text and the end). Settable later with [`MockModel::set_delay_ms`].
    pub delay_ms: u64,
    /// The assistant's reply to every turn request (streamed as a few deltas).
    pub reply_text: String,
    /// The reply to title requests ([`RequestKind::Title`]), never delayed. Both Claude Code
    /// and Codex ask for a JSON object `{"title": ...}` (a `json_schema` output format).
    pub title_text: String,
    /// When set, every request body is written there as `NNNN-METHOD-path.json`.
    pub log_dir: Option<PathBuf>,
    /// Keep each request's parsed JSON body in its [`RequestLog::body`] (memory grows with
    /// the agents' prompts, tens of kB per request).
    pub keep_bodies: bool,
}

impl Default for MockConfig {
    fn default() -> Self {
        MockConfig {
            delay_ms: 0,
            reply_text: "Mock reply.".into(),
            title_text: r#"{"title":"Mock session"}"#.into(),
            log_dir: None,
            keep_bodies: false,
        }
    }
}

/// Which model API a request spoke.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Api {
    /// Anthropic Messages (`/v1/messages`).
    Anthropic,
    /// OpenAI Responses (`/v1/responses`).
    OpenaiResponses,
}

/// What a request was, for the marker oracle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RequestKind {
    /// A model request of an agent's turn: the only kind the marker oracle counts.
    Turn,
    /// An auxiliary model request (session title, topic): no `tools`.
    Title,
    /// A request the mock answers that is not a model turn (`count_tokens`).
    Other,
    /// A request the mock does not know: answered 404.
    Unknown,
}

/// One request the mock received.
#[derive(Clone, Debug, Serialize)]
pub struct RequestLog {
    /// 0-based order of arrival.
    pub seq: usize,
    /// HTTP method.
    pub method: String,
    /// Path and query.
    pub path: String,
    /// Request body size, bytes.
    pub body_bytes: usize,
    /// Arrival, milliseconds since the mock started.
    pub at_ms: u64,
    /// The model API, for the model endpoints.
    pub api: Option<Api>,
    /// Turn, title, other or unknown.
    pub kind: RequestKind,
    /// The request asked for a stream.
    pub stream: bool,
    /// The `model` it named.
    pub model: Option<String>,
    /// The text of each user message, in order (text parts joined with a newline).
    pub user_texts: Vec<String>,
    /// The delay applied to this response, ms.
    pub delay_ms: u64,
    /// HTTP status answered.
    pub status: u16,
    /// The whole response was handed to the connection (false while in flight or when the
    /// agent went away mid-stream).
    pub completed: bool,
    /// The parsed body, with [`MockConfig::keep_bodies`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
}

impl RequestLog {
    /// Copies of `marker` in this request's user messages.
    pub fn marker_copies(&self, marker: &str) -> usize {
        if marker.is_empty() {
            return 0;
        }
        self.user_texts
            .iter()
            .map(|t| t.matches(marker).count())
            .sum()
    }

    /// The last user message carries `marker`.
    pub fn last_user_has(&self, marker: &str) -> bool {
        !marker.is_empty() && self.user_texts.last().is_some_and(|t| t.contains(marker))
    }
}

/// What the model was sent of one marker (see the module docs for the rule).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MarkerTally {
    /// Turn requests carrying the marker anywhere in their user messages.
    pub requests: usize,
    /// The largest number of copies in one turn request: [`MockModel::marker_count`].
    pub copies_max: usize,
    /// Copies in the last turn request that carried it.
    pub copies_last: usize,
    /// Turn requests whose last user message carries it (turns the message started).
    pub turns: usize,
}

struct Inner {
    log: Vec<RequestLog>,
}

struct Shared {
    cfg: MockConfig,
    start: Instant,
    delay_ms: AtomicU64,
    in_flight: AtomicUsize,
    next_id: AtomicU64,
    inner: Mutex<Inner>,
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn elapsed_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }
}

/// A running mock model server. Dropping it shuts it down.
pub struct MockModel {
    port: u16,
    shared: Arc<Shared>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl MockModel {
    /// Bind `127.0.0.1:0` and serve in a background thread until [`MockModel::shutdown`].
    pub fn start(cfg: MockConfig) -> std::io::Result<MockModel> {
        if let Some(dir) = &cfg.log_dir {
            std::fs::create_dir_all(dir)?;
        }
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
        listener.set_nonblocking(true)?;
        let port = listener.local_addr()?.port();
        let shared = Arc::new(Shared {
            delay_ms: AtomicU64::new(cfg.delay_ms),
            cfg,
            start: crate::wall_clock::now(),
            in_flight: AtomicUsize::new(0),
            next_id: AtomicU64::new(1),
            inner: Mutex::new(Inner { log: Vec::new() }),
            changed: Condvar::new(),
        });
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let app = Router::new()
            .fallback(handle)
            .layer(DefaultBodyLimit::disable())
            .with_state(shared.clone());
        let thread = std::thread::Builder::new()
            .name(format!("mock-model-{port}"))
            .spawn(move || {
                rt.block_on(async move {
                    let listener = match tokio::net::TcpListener::from_std(listener) {
                        Ok(l) => l,
                        Err(e) => {
                            eprintln!("mock model: {e}");
                            return;
                        }
                    };
                    tokio::spawn(async move {
                        if let Err(e) = axum::serve(listener, app).await {
                            eprintln!("mock model: {e}");
                        }
                    });
                    let _ = stop_rx.await;
                });
                // Dropping the runtime cancels the server and every open stream.
                drop(rt);
            })?;
        Ok(MockModel {
            port,
            shared,
            stop: Some(stop_tx),
            thread: Some(thread),
        })
    }

    /// The port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `127.0.0.1:PORT`.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// `http://127.0.0.1:PORT`: an Anthropic base URL (`ANTHROPIC_BASE_URL`).
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// `http://127.0.0.1:PORT/v1`: an OpenAI base URL.
    pub fn v1_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// Set the delay of later turn responses, ms.
    pub fn set_delay_ms(&self, ms: u64) {
        self.shared.delay_ms.store(ms, Ordering::SeqCst);
    }

    /// The current delay, ms.
    pub fn delay_ms(&self) -> u64 {
        self.shared.delay_ms.load(Ordering::SeqCst)
    }

    /// Model responses (turn or title) being streamed now.
    pub fn in_flight(&self) -> usize {
        self.shared.in_flight.load(Ordering::SeqCst)
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<RequestLog> {
        self.shared.lock().log.clone()
    }

    /// How many requests so far.
    pub fn request_count(&self) -> usize {
        self.shared.lock().log.len()
    }

    /// Turn requests carrying `marker` in a user message.
    pub fn requests_with(&self, marker: &str) -> Vec<RequestLog> {
        self.shared
            .lock()
            .log
            .iter()
            .filter(|r| r.kind == RequestKind::Turn && r.marker_copies(marker) > 0)
            .cloned()
            .collect()
    }

    /// The oracle: the largest number of copies of `marker` in the user messages of one turn
    /// request (see the module docs). 0: the message never reached the model.
    pub fn marker_count(&self, marker: &str) -> usize {
        self.marker_tally(marker).copies_max
    }

    /// Every count the mock keeps for `marker`.
    pub fn marker_tally(&self, marker: &str) -> MarkerTally {
        let inner = self.shared.lock();
        let mut t = MarkerTally::default();
        for r in inner.log.iter().filter(|r| r.kind == RequestKind::Turn) {
            let c = r.marker_copies(marker);
            if c > 0 {
                t.requests += 1;
                t.copies_max = t.copies_max.max(c);
                t.copies_last = c;
            }
            if r.last_user_has(marker) {
                t.turns += 1;
            }
        }
        t
    }

    /// Wait until some logged request satisfies `pred` (true) or `timeout` passes (false).
    pub fn wait_for(&self, timeout: Duration, pred: impl Fn(&RequestLog) -> bool) -> bool {
        let deadline = crate::wall_clock::now() + timeout;
        let mut inner = self.shared.lock();
        loop {
            if inner.log.iter().any(&pred) {
                return true;
            }
            let now = crate::wall_clock::now();
            if now >= deadline {
                return false;
            }
            inner = self
                .shared
                .changed
                .wait_timeout(inner, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Wait until a turn request carrying `marker` arrives (true) or `timeout` passes.
    pub fn wait_for_marker(&self, marker: &str, timeout: Duration) -> bool {
        self.wait_for(timeout, |r| {
            r.kind == RequestKind::Turn && r.marker_copies(marker) > 0
        })
    }

    /// Stop serving: open streams and connections are dropped.
    pub fn shutdown(mut self) {
        self.stop_now();
    }

    fn stop_now(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for MockModel {
    fn drop(&mut self) {
        self.stop_now();
    }
}

impl std::fmt::Debug for MockModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockModel")
            .field("port", &self.port)
            .finish_non_exhaustive()
    }
}

// ---- the server --------------------------------------------------------------------------

/// One request: routed, logged, then answered (404 for a route it does not serve).
async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    _headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| uri.path().to_string());
    let bare = uri.path().trim_end_matches('/');
    let parsed: Option<Value> = serde_json::from_slice(&body).ok();
    let at_ms = shared.elapsed_ms();
    let (api, kind) = route(method.as_str(), bare, parsed.as_ref());
    let stream = parsed
        .as_ref()
        .and_then(|v| v.get("stream"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let model = parsed
        .as_ref()
        .and_then(|v| v.get("model"))
        .and_then(Value::as_str)
        .map(String::from);
    let user_texts = match (api, parsed.as_ref()) {
        (Some(Api::Anthropic), Some(v)) => anthropic_user_texts(v),
        (Some(Api::OpenaiResponses), Some(v)) => openai_user_texts(v),
        _ => Vec::new(),
    };
    let delay_ms = if kind == RequestKind::Turn {
        shared.delay_ms.load(Ordering::SeqCst)
    } else {
        0
    };
    let status: u16 = if kind == RequestKind::Unknown {
        404
    } else {
        200
    };
    let seq = {
        let mut inner = shared.lock();
        let seq = inner.log.len();
        inner.log.push(RequestLog {
            seq,
            method: method.to_string(),
            path: path.clone(),
            body_bytes: body.len(),
            at_ms,
            api,
            kind,
            stream,
            model: model.clone(),
            user_texts,
            delay_ms,
            status,
            completed: false,
            body: if shared.cfg.keep_bodies {
                parsed.clone()
            } else {
                None
            },
        });
        seq
    };
    shared.changed.notify_all();
    if let Some(dir) = &shared.cfg.log_dir {
        write_body(dir, seq, &method, &path, parsed.as_ref(), &body);
    }
    let model = model.unwrap_or_else(|| "mock".into());
    let req = Answer {
        seq,
        api,
        kind,
        stream,
        delay_ms,
    };
    answer(&shared, req, &method, &path, &model, body.len())
}

/// Which API a request speaks and what it asks for, from its method and path (a model
/// request with tools is a turn, without them a title).
fn route(method: &str, bare: &str, parsed: Option<&Value>) -> (Option<Api>, RequestKind) {
    let turn_or_title = || {
        if has_tools(parsed) {
            RequestKind::Turn
        } else {
            RequestKind::Title
        }
    };
    match (method, bare) {
        ("POST", "/v1/messages") => (Some(Api::Anthropic), turn_or_title()),
        ("POST", "/v1/messages/count_tokens") => (Some(Api::Anthropic), RequestKind::Other),
        ("POST", "/v1/responses") => (Some(Api::OpenaiResponses), turn_or_title()),
        _ => (None, RequestKind::Unknown),
    }
}

/// `--log-dir`: the request's body as `<seq>-<method>-<path>.json` (pretty when it is JSON).
fn write_body(
    dir: &std::path::Path,
    seq: usize,
    method: &Method,
    path: &str,
    parsed: Option<&Value>,
    body: &[u8],
) {
    let name: String = path
        .trim_start_matches('/')
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let file = dir.join(format!("{seq:04}-{method}-{name}.json"));
    let text = match parsed {
        Some(v) => serde_json::to_string_pretty(v).unwrap_or_default(),
        None => String::from_utf8_lossy(body).into_owned(),
    };
    let _ = std::fs::write(file, text);
}

/// What the answer to a logged request depends on.
struct Answer {
    seq: usize,
    api: Option<Api>,
    kind: RequestKind,
    stream: bool,
    delay_ms: u64,
}

/// The answer to request `r`: in its API's shape, streamed (after its delay) when it asked for
/// a stream; marked completed in the log when it is not a stream (a stream marks itself).
fn answer(
    shared: &Arc<Shared>,
    r: Answer,
    method: &Method,
    path: &str,
    model: &str,
    body_len: usize,
) -> Response {
    let Answer {
        seq,
        api,
        kind,
        stream,
        delay_ms,
    } = r;
    let id = shared.next_id.fetch_add(1, Ordering::SeqCst);
    let text = if kind == RequestKind::Title {
        shared.cfg.title_text.clone()
    } else {
        shared.cfg.reply_text.clone()
    };
    match (api, kind) {
        (None, _) => {
            eprintln!("mock model: unknown request {method} {path} ({body_len} bytes)");
            finish(shared, seq);
            json_response(
                StatusCode::NOT_FOUND,
                json!({"type": "error", "error": {"type": "not_found_error",
                    "message": format!("mock model: no route for {method} {path}")}}),
            )
        }
        (Some(Api::Anthropic), RequestKind::Other) => {
            finish(shared, seq);
            json_response(StatusCode::OK, json!({"input_tokens": 10}))
        }
        (Some(Api::Anthropic), _) if stream => sse_response(
            shared.clone(),
            seq,
            anthropic_events(id, model, &text),
            delay_ms,
        ),
        (Some(Api::Anthropic), _) => {
            finish(shared, seq);
            json_response(StatusCode::OK, anthropic_message(id, model, &text))
        }
        (Some(Api::OpenaiResponses), _) if stream => sse_response(
            shared.clone(),
            seq,
            openai_events(id, model, &text),
            delay_ms,
        ),
        (Some(Api::OpenaiResponses), _) => {
            finish(shared, seq);
            json_response(
                StatusCode::OK,
                openai_response(id, model, &text, "completed"),
            )
        }
    }
}

fn finish(shared: &Shared, seq: usize) {
    if let Some(r) = shared.lock().log.get_mut(seq) {
        r.completed = true;
    }
    shared.changed.notify_all();
}

fn has_tools(body: Option<&Value>) -> bool {
    body.and_then(|v| v.get("tools"))
        .and_then(Value::as_array)
        .is_some_and(|t| !t.is_empty())
}

fn json_response(status: StatusCode, v: Value) -> Response {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "application/json")
        .header("request-id", "req_mock")
        .header("x-request-id", "req_mock")
        .body(Body::from(v.to_string()))
        .unwrap_or_default()
}

/// Marks its request completed when the whole stream was handed over, and leaves the
/// in-flight count when the stream ends or is dropped (the agent went away).
struct StreamGuard {
    shared: Arc<Shared>,
    seq: usize,
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        self.shared.in_flight.fetch_sub(1, Ordering::SeqCst);
        self.shared.changed.notify_all();
    }
}

/// Stream `events` (`(event name, data)`), waiting `delay_ms` after the first one.
fn sse_response(
    shared: Arc<Shared>,
    seq: usize,
    events: Vec<(&'static str, Value)>,
    delay_ms: u64,
) -> Response {
    let mut queue: VecDeque<(u64, Bytes)> = events
        .into_iter()
        .enumerate()
        .map(|(i, (name, data))| {
            let wait = if i == 1 { delay_ms } else { 0 };
            (
                wait,
                Bytes::from(format!("event: {name}\ndata: {data}\n\n")),
            )
        })
        .collect();
    if queue.is_empty() {
        queue.push_back((0, Bytes::new()));
    }
    shared.in_flight.fetch_add(1, Ordering::SeqCst);
    let guard = StreamGuard { shared, seq };
    let stream = futures_util::stream::unfold((queue, guard), |(mut queue, guard)| async move {
        let (wait, chunk) = queue.pop_front()?;
        if wait > 0 {
            tokio::time::sleep(Duration::from_millis(wait)).await;
        }
        if queue.is_empty() {
            finish(&guard.shared, guard.seq);
        }
        Some((Ok::<Bytes, Infallible>(chunk), (queue, guard)))
    });
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .header("request-id", "req_mock")
        .header("x-request-id", "req_mock")
        .body(Body::from_stream(stream))
        .unwrap_or_default()
}

/// The reply in a few deltas (split on spaces, at most 3 pieces).
fn pieces(text: &str) -> Vec<String> {
    let words: Vec<&str> = text.split_inclusive(' ').collect();
    let n = words.len().clamp(1, 3);
    let per = words.len().div_ceil(n).max(1);
    let mut out: Vec<String> = words.chunks(per).map(|c| c.concat()).collect();
    if out.is_empty() {
        out.push(String::new());
    }
    out
}

fn anthropic_usage(output: usize) -> Value {
    json!({"input_tokens": 10, "output_tokens": output,
        "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0})
}

fn anthropic_message(id: u64, model: &str, text: &str) -> Value {
    json!({"id": format!("msg_mock_{id}"), "type": "message", "role": "assistant",
        "model": model, "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn", "stop_sequence": null, "usage": anthropic_usage(pieces(text).len())})
}

/// The Anthropic Messages stream of a text reply.
fn anthropic_events(id: u64, model: &str, text: &str) -> Vec<(&'static str, Value)> {
    let parts = pieces(text);
    let mut ev = vec![
        (
            "message_start",
            json!({"type": "message_start", "message": {"id": format!("msg_mock_{id}"),
                "type": "message", "role": "assistant", "model": model, "content": [],
                "stop_reason": null, "stop_sequence": null, "usage": anthropic_usage(1)}}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "text", "text": ""}}),
        ),
    ];
    for p in &parts {
        ev.push((
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "text_delta", "text": p}}),
        ));
    }
    ev.push((
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    ));
    ev.push((
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null},
            "usage": {"output_tokens": parts.len()}}),
    ));
    ev.push(("message_stop", json!({"type": "message_stop"})));
    ev
}

fn openai_item(id: u64, text: Option<&str>) -> Value {
    match text {
        None => json!({"id": format!("msg_mock_{id}"), "type": "message", "status": "in_progress",
            "role": "assistant", "content": []}),
        Some(t) => json!({"id": format!("msg_mock_{id}"), "type": "message", "status": "completed",
            "role": "assistant", "content": [{"type": "output_text", "text": t, "annotations": []}]}),
    }
}

fn openai_response(id: u64, model: &str, text: &str, status: &str) -> Value {
    let done = status == "completed";
    let out = pieces(text).len();
    json!({"id": format!("resp_mock_{id}"), "object": "response", "created_at": 0,
        "status": status, "model": model,
        "output": if done { json!([openai_item(id, Some(text))]) } else { json!([]) },
        "usage": if done { json!({"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": out, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 10 + out}) } else { Value::Null }})
}

/// The OpenAI Responses stream of a text reply.
fn openai_events(id: u64, model: &str, text: &str) -> Vec<(&'static str, Value)> {
    let item_id = format!("msg_mock_{id}");
    let mut seq = 0u64;
    let mut next = || {
        seq += 1;
        seq - 1
    };
    let mut ev = vec![
        (
            "response.created",
            json!({"type": "response.created", "sequence_number": next(),
                "response": openai_response(id, model, text, "in_progress")}),
        ),
        (
            "response.output_item.added",
            json!({"type": "response.output_item.added", "sequence_number": next(),
                "output_index": 0, "item": openai_item(id, None)}),
        ),
    ];
    for p in pieces(text) {
        ev.push((
            "response.output_text.delta",
            json!({"type": "response.output_text.delta", "sequence_number": next(),
                "item_id": item_id, "output_index": 0, "content_index": 0, "delta": p}),
        ));
    }
    ev.push((
        "response.output_item.done",
        json!({"type": "response.output_item.done", "sequence_number": next(),
            "output_index": 0, "item": openai_item(id, Some(text))}),
    ));
    ev.push((
        "response.completed",
        json!({"type": "response.completed", "sequence_number": next(),
            "response": openai_response(id, model, text, "completed")}),
    ));
    ev
}

/// The text of a content value: a string, or the `text` / `input_text` parts of an array.
fn content_text(content: &Value) -> Option<String> {
    match content {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter(|p| {
                    matches!(
                        p.get("type").and_then(Value::as_str),
                        Some("text") | Some("input_text")
                    )
                })
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect();
            Some(texts.join("\n"))
        }
        _ => None,
    }
}

/// The user messages of an Anthropic Messages request (`tool_result` blocks left out).
pub fn anthropic_user_texts(body: &Value) -> Vec<String> {
    body.get("messages")
        .and_then(Value::as_array)
        .map(|msgs| {
            msgs.iter()
                .filter(|m| m.get("role").and_then(Value::as_str) == Some("user"))
                .filter_map(|m| m.get("content").and_then(content_text))
                .collect()
        })
        .unwrap_or_default()
}

/// The user messages of an OpenAI Responses request (`input` as a string is one user message).
pub fn openai_user_texts(body: &Value) -> Vec<String> {
    match body.get("input") {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) => items
            .iter()
            .filter(|i| {
                i.get("role").and_then(Value::as_str) == Some("user")
                    && i.get("type").and_then(Value::as_str).unwrap_or("message") == "message"
            })
            .filter_map(|i| i.get("content").and_then(content_text))
            .collect(),
        _ => Vec::new(),
    }
}
