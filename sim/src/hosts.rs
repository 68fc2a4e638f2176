//! Thin async drivers that run the sans-IO models as turmoil hosts.
//!
//! Each host has one event loop. Connections are newline-delimited JSON over turmoil TCP with a
//! heartbeat in the frame layer: an idle writer sends an empty line every `heartbeat_ms`, and a
//! reader that hears nothing for `dead_ms` ends the connection (turmoil never ends a partitioned
//! stream by itself). Frame faults are decided per frame by the [`Ledger`].

use std::cell::RefCell;
use std::net::{IpAddr, Ipv4Addr};
use std::rc::Rc;
use std::time::Duration;

use acp_chaos_models::cluster::ClusterStore;
use acp_chaos_models::proxy::{Proxy, ProxyInput};
use acp_chaos_models::watcher::{Watcher, WatcherInput};
use acp_chaos_models::{
    store, Action, AgentInput, AgentModel, ClientInput, ClientModel, ConnId, ModelAgent, Point,
    SpecClient,
};
use indexmap::IndexMap;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio::task::AbortHandle;
use turmoil::fs::shim::std::fs as simfs;
use turmoil::net::{TcpListener, TcpStream, UdpSocket};

use crate::history::{OpType, NODES};
use crate::ledger::Ledger;
use crate::nemesis::FrameDecision;
use crate::plan::{Plan, UserEvent};

/// The Agent's listening port.
pub const AGENT_PORT: u16 = 9000;

/// The cluster store's UDP port (one datagram per op and per reply).
pub const STORE_PORT: u16 = 9100;

/// What a host's event loop reacts to.
enum Ev {
    Accepted(TcpStream),
    Connected(TcpStream, u64),
    ConnectFailed(u64),
    Frame(ConnId, String),
    Closed(ConnId, &'static str),
    Timer(u64),
    /// Remote transport: a request written on this connection was not accepted (X5).
    NotAccepted(ConnId, Value),
}

/// The barrier value an Agent host triggers at each protocol point: the point and the host
/// (`agent` or a cluster node) that passed it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PointHit(pub Point, pub &'static str);

/// Shared by the host factories of one run.
pub struct Ctx {
    /// The ledger.
    pub ledger: Rc<RefCell<Ledger>>,
    /// The plan.
    pub plan: Plan,
    /// Builds the single-process Agent at each start; `None`: the project's [`ModelAgent`]
    /// for `plan.agent` (cluster nodes are always [`ModelAgent`]s).
    pub agent: Option<AgentFactory>,
}

/// What an Agent process starts from, handed to an [`AgentFactory`] at every start (the first
/// one and each restart after a crash).
#[derive(Debug, Clone, Copy)]
pub struct AgentBoot<'a> {
    /// Which start this is: 0 for the first, then 1, 2, ... (put it in the ids you mint, so
    /// they stay unique across restarts).
    pub boot: u32,
    /// The run's seed: derive any randomness of the Agent from it (never from the OS).
    pub seed: u64,
    /// The records the Agent's earlier processes wrote with [`Action::Persist`], in write
    /// order, as they survived on the simulated disk: every synced record, and unsynced ones
    /// only if no crash came before a later sync (a torn tail is cut). Empty at the first
    /// start.
    pub records: &'a [Value],
    /// The run's plan (`plan.agent` holds the design's settings, `plan.seed` the seed).
    pub plan: &'a Plan,
}

/// Builds the Agent under test from its [`AgentBoot`]: the simulator calls it at every start
/// of the single-process Agent host. See [`crate::world::run_with`].
pub type AgentFactory = Rc<dyn Fn(AgentBoot<'_>) -> Box<dyn AgentModel>>;

struct ConnHandle {
    out: UnboundedSender<String>,
    tasks: [AbortHandle; 2],
    /// To drop this writer's queue from the ledger when the connection goes (also by crash).
    ledger: Rc<RefCell<Ledger>>,
    key: (ConnId, &'static str),
}

impl Drop for ConnHandle {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
        if let Ok(mut l) = self.ledger.try_borrow_mut() {
            l.writer_gone(self.key.0, self.key.1);
        }
    }
}

/// A cluster node's line to the store host.
struct StoreLink {
    sock: UdpSocket,
    next: u64,
    /// Receive buffer, reused by every op (a reply holds the store's whole view).
    buf: Vec<u8>,
}

/// A process's I/O: its connections, its store file, its timers.
struct Io {
    process: &'static str,
    ctx: Rc<Ctx>,
    tx: UnboundedSender<Ev>,
    conns: IndexMap<ConnId, ConnHandle>,
    store: String,
    /// Cluster node: persist through the store host instead of a local file.
    link: Option<StoreLink>,
}

impl Io {
    fn new(process: &'static str, ctx: Rc<Ctx>, store: &str) -> (Io, UnboundedReceiver<Ev>) {
        let (tx, rx) = unbounded_channel();
        (
            Io {
                process,
                ctx,
                tx,
                conns: IndexMap::new(),
                store: store.to_string(),
                link: None,
            },
            rx,
        )
    }

    fn record(&self, kind: OpType, f: &str, value: Value) {
        self.ctx
            .ledger
            .borrow_mut()
            .record(self.process, kind, f, value);
    }

    /// Read the store, cutting a torn tail (framed records, A13/D1).
    fn recover(&self) -> std::io::Result<Vec<Value>> {
        let dir = std::path::Path::new(&self.store)
            .parent()
            .expect("absolute path");
        simfs::create_dir_all(dir)?;
        if !simfs::exists(&self.store) {
            return Ok(Vec::new());
        }
        let bytes = simfs::read(&self.store)?;
        let (recs, valid) = store::decode(&bytes);
        if valid < bytes.len() {
            let f = simfs::OpenOptions::new().write(true).open(&self.store)?;
            f.set_len(valid as u64)?;
            f.sync_all()?;
            self.record(
                OpType::Info,
                "truncate-torn-tail",
                json!({"from": bytes.len(), "to": valid}),
            );
        }
        Ok(recs
            .iter()
            .filter_map(|r| serde_json::from_slice(r).ok())
            .collect())
    }

    fn persist(&self, record: &Value, sync: bool) -> std::io::Result<()> {
        use std::io::Write;
        let existed = simfs::exists(&self.store);
        let mut f = simfs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.store)?;
        f.write_all(&store::encode(
            &serde_json::to_vec(record).expect("serializes"),
        ))?;
        if sync {
            f.sync_all()?;
            if !existed {
                simfs::sync_dir(
                    std::path::Path::new(&self.store)
                        .parent()
                        .expect("absolute path"),
                )?;
            }
        }
        Ok(())
    }

    /// Cluster: the first line on a connection to a node names its logical connection (the
    /// remote transport's connection id; a header, not a JSON-RPC frame).
    fn hello(&self, logical: String) -> Option<String> {
        self.ctx
            .plan
            .cluster()
            .then(|| json!({ "logical": logical }).to_string())
    }

    fn open(&mut self, stream: TcpStream, client_addr: String, hello: Option<String>) -> ConnId {
        let plan = &self.ctx.plan;
        let id = self
            .ctx
            .ledger
            .borrow_mut()
            .conn_id(&client_addr, self.process);
        let (r, mut w) = stream.into_split();
        let (otx, mut orx) = unbounded_channel::<String>();
        let dead = Duration::from_millis(plan.net.dead_ms);
        let hb = Duration::from_millis(plan.net.heartbeat_ms);
        let tx = self.tx.clone();
        let reader = tokio::task::spawn_local(async move {
            let mut r = BufReader::new(r);
            let mut buf = String::new();
            loop {
                buf.clear();
                let why = match tokio::time::timeout(dead, r.read_line(&mut buf)).await {
                    Ok(Ok(0)) => "eof",
                    Ok(Ok(_)) => {
                        let l = buf.trim_end();
                        if !l.is_empty() {
                            let _ = tx.send(Ev::Frame(id, l.to_string()));
                        }
                        continue;
                    }
                    Ok(Err(_)) => "reset",
                    Err(_) => "heartbeat timeout",
                };
                let _ = tx.send(Ev::Closed(id, why));
                return;
            }
        });
        let tx = self.tx.clone();
        let ledger = self.ctx.ledger.clone();
        let from = self.process;
        let writer = tokio::task::spawn_local(async move {
            if let Some(h) = hello {
                if w.write_all(format!("{h}\n").as_bytes()).await.is_err() {
                    let _ = tx.send(Ev::Closed(id, "write failed"));
                    return;
                }
            }
            loop {
                let line = match tokio::time::timeout(hb, orx.recv()).await {
                    Ok(Some(l)) => l,
                    Ok(None) => return,
                    Err(_) => {
                        if !ledger.borrow().is_blackholed(id) && w.write_all(b"\n").await.is_err() {
                            let _ = tx.send(Ev::Closed(id, "write failed"));
                            return;
                        }
                        continue;
                    }
                };
                // A line that is not JSON (a raw probe) is logged as the string it is, as the
                // reader logs it, so the two ends match and it counts as in flight.
                let frame: Value =
                    serde_json::from_str(&line).unwrap_or_else(|_| Value::String(line.clone()));
                let decision = ledger.borrow_mut().on_send(id, from, &frame);
                if matches!(decision, FrameDecision::Lose { silent: false }) {
                    ledger.borrow_mut().writer_gone(id, from);
                } else {
                    // Written below, or dropped: either way the writer is done with it (a
                    // stalled frame stays queued until its stall ends).
                    if !matches!(
                        decision,
                        FrameDecision::Stall(_) | FrameDecision::Reorder { .. }
                    ) {
                        ledger.borrow_mut().frame_done(id, from);
                    }
                }
                match decision {
                    FrameDecision::Deliver => {}
                    FrameDecision::Stall(ms) => {
                        tokio::time::sleep(Duration::from_millis(ms)).await;
                        ledger.borrow_mut().record(
                            "net",
                            OpType::Info,
                            "stall-end",
                            json!({"conn": id, "from": from}),
                        );
                        ledger.borrow_mut().frame_done(id, from);
                    }
                    FrameDecision::Reorder { bound_ms, after } => {
                        let mut waited = 0;
                        let by = loop {
                            if let Some(x) = ledger.borrow().overtaken(id, after) {
                                break Some(x);
                            }
                            if waited >= bound_ms {
                                break None;
                            }
                            tokio::time::sleep(Duration::from_millis(1)).await;
                            waited += 1;
                        };
                        ledger.borrow_mut().record(
                            "net",
                            OpType::Info,
                            "reorder-end",
                            json!({"conn": id, "from": from, "waited_ms": waited,
                                   "overtaken_by": by.map(|b| json!({"conn": b.0, "op": b.1}))}),
                        );
                        ledger.borrow_mut().frame_done(id, from);
                    }
                    FrameDecision::Lose { silent: true } => continue,
                    FrameDecision::Drop { not_accepted } => {
                        if not_accepted {
                            let _ = tx.send(Ev::NotAccepted(id, frame["id"].clone()));
                        }
                        continue;
                    }
                    FrameDecision::Lose { silent: false } => {
                        let _ = tx.send(Ev::Closed(id, "connection broke at a lost frame"));
                        return;
                    }
                }
                let mut bytes = line.into_bytes();
                bytes.push(b'\n');
                if w.write_all(&bytes).await.is_err() {
                    let _ = tx.send(Ev::Closed(id, "write failed"));
                    return;
                }
            }
        });
        self.conns.insert(
            id,
            ConnHandle {
                out: otx,
                tasks: [reader.abort_handle(), writer.abort_handle()],
                ledger: self.ctx.ledger.clone(),
                key: (id, self.process),
            },
        );
        id
    }

    /// Listen on the Agent port; accepted connections arrive as `Ev::Accepted`.
    async fn listen(&self) -> std::io::Result<()> {
        let listener = TcpListener::bind((IpAddr::V4(Ipv4Addr::UNSPECIFIED), AGENT_PORT)).await?;
        let tx = self.tx.clone();
        tokio::task::spawn_local(async move {
            while let Ok((s, _)) = listener.accept().await {
                if tx.send(Ev::Accepted(s)).is_err() {
                    return;
                }
            }
        });
        Ok(())
    }

    /// Forget a connection (its tasks are aborted, its halves dropped: the peer sees EOF).
    fn close(&mut self, id: ConnId, why: &str) -> bool {
        if self.conns.shift_remove(&id).is_some() {
            self.ctx.ledger.borrow_mut().on_conn_end(id);
            self.record(OpType::Info, "conn-end", json!({"conn": id, "reason": why}));
            true
        } else {
            false
        }
    }

    fn log_recv(&self, id: ConnId, line: &str) -> Value {
        let frame: Value =
            serde_json::from_str(line).unwrap_or_else(|_| Value::String(line.to_string()));
        self.ctx
            .ledger
            .borrow_mut()
            .on_recv(id, self.process, &frame);
        self.ctx.ledger.borrow_mut().record(
            "net",
            OpType::Info,
            "recv",
            json!({"conn": id, "from": peer(self.process), "frame": frame}),
        );
        frame
    }

    /// Send one op to the store and wait up to the store timeout for its reply (`None`: no
    /// reply; the op may or may not have applied).
    async fn store_call(&mut self, op: &Value) -> Option<Value> {
        let limit = Duration::from_millis(self.ctx.plan.net.store_timeout_ms);
        let link = self.link.as_mut()?;
        link.next += 1;
        let req = link.next;
        let mut msg = op.clone();
        msg["req"] = json!(req);
        msg["node"] = json!(self.process);
        let bytes = serde_json::to_vec(&msg).expect("serializes");
        let (sock, buf) = (&link.sock, &mut link.buf);
        let wait = async {
            // A failed send is a lost datagram: the node waits out its timeout all the same.
            if sock.send_to(&bytes, ("store", STORE_PORT)).await.is_err() {
                return std::future::pending().await;
            }
            loop {
                let Ok((n, _)) = sock.recv_from(buf).await else {
                    return std::future::pending().await;
                };
                // Replies to earlier, timed-out ops are stale: skip them.
                if let Ok(v) = serde_json::from_slice::<Value>(&buf[..n]) {
                    if v["req"] == json!(req) {
                        return v;
                    }
                }
            }
        };
        tokio::time::timeout(limit, wait).await.ok()
    }

    /// Cluster: a write the node cannot continue without. It is sent again until the store
    /// answers (every append is idempotent), so the node never guesses (A2).
    async fn store_append(&mut self, record: &Value) {
        let op = json!({"op": "append", "record": record});
        while self.store_call(&op).await.is_none() {
            self.record(OpType::Info, "store-retry", json!({"record": record}));
        }
    }

    /// Cluster: the store's view, read before each request (retried until it comes).
    async fn store_load(&mut self) -> Value {
        let op = json!({"op": "load"});
        loop {
            if let Some(v) = self.store_call(&op).await {
                return v;
            }
            self.record(OpType::Info, "store-retry", json!({"op": "load"}));
        }
    }

    /// Run the model's actions in order. Points await the nemesis's barrier. Stops after an
    /// [`Action::Store`] and returns it; the actions after it stay in `out`.
    async fn execute(&mut self, out: &mut Vec<Action>) -> std::io::Result<Option<(u64, Value)>> {
        let mut actions = std::mem::take(out).into_iter();
        while let Some(a) = actions.next() {
            match a {
                Action::Store { req, op } => {
                    out.extend(actions);
                    return Ok(Some((req, op)));
                }
                Action::Send { conn, line } => {
                    if let Some(c) = self.conns.get(&conn) {
                        if c.out.send(line).is_ok() {
                            self.ctx
                                .ledger
                                .borrow_mut()
                                .frame_queued(conn, self.process);
                        }
                    }
                }
                Action::Persist { record, sync } => {
                    if self.link.is_some() {
                        self.store_append(&record).await;
                    } else {
                        self.persist(&record, sync)?;
                    }
                }
                Action::Timer { id, after_ms } => {
                    let tx = self.tx.clone();
                    tokio::task::spawn_local(async move {
                        tokio::time::sleep(Duration::from_millis(after_ms)).await;
                        let _ = tx.send(Ev::Timer(id));
                    });
                }
                Action::Point(p) => turmoil::barriers::trigger(PointHit(p, self.process)).await,
                Action::Effect(e) => {
                    // Jepsen types for the Client's view: an attempt is invoked, an ack is ok,
                    // an input shown to the user as failed is fail.
                    let kind = match e.f {
                        "attempt" => OpType::Invoke,
                        "ack" => OpType::Ok,
                        "surface" | "withdrawn" => OpType::Fail,
                        _ => OpType::Info,
                    };
                    if e.f == "session-known" {
                        let mut l = self.ctx.ledger.borrow_mut();
                        if l.known_session.is_none() {
                            l.known_session = e.value["session"].as_str().map(str::to_string);
                        }
                    }
                    self.record(kind, e.f, e.value)
                }
                Action::Connect { after_ms, tag } => {
                    let tx = self.tx.clone();
                    let limit = Duration::from_millis(self.ctx.plan.net.connect_timeout_ms);
                    // The next hop: the Client talks to the proxy if there is one; the Agent is
                    // one host or a cluster node chosen by the run's routing stream.
                    let target = if self.process == "client" && self.ctx.plan.proxy {
                        "proxy"
                    } else {
                        self.ctx.ledger.borrow_mut().route(self.process)
                    };
                    tokio::task::spawn_local(async move {
                        tokio::time::sleep(Duration::from_millis(after_ms)).await;
                        let ev = match tokio::time::timeout(
                            limit,
                            TcpStream::connect((target, AGENT_PORT)),
                        )
                        .await
                        {
                            Ok(Ok(s)) => Ev::Connected(s, tag),
                            _ => Ev::ConnectFailed(tag),
                        };
                        let _ = tx.send(ev);
                    });
                }
                Action::Close { conn } => {
                    self.close(conn, "closed by its own end");
                }
            }
        }
        Ok(None)
    }

    /// Run an Agent's actions; a cluster node's store ops go out one at a time and each reply
    /// goes back to the model before the actions queued behind it.
    async fn run_agent<M: AgentModel + ?Sized>(
        &mut self,
        model: &mut M,
        out: &mut Vec<Action>,
    ) -> std::io::Result<()> {
        while let Some((req, op)) = self.execute(out).await? {
            let reply = self.store_call(&op).await;
            let mut next = Vec::new();
            model.handle(AgentInput::StoreReply { req, reply }, &mut next);
            next.append(out);
            *out = next;
        }
        Ok(())
    }
}

fn peer(process: &str) -> &'static str {
    match process {
        p if p == "agent" || p.starts_with("node") => "client",
        // The proxy hears both; the frame's `conn` tells which leg.
        "proxy" => "peer",
        _ => "agent",
    }
}

/// The Agent host: recover the stored sessions, listen, run the model ([`Ctx::agent`]'s, or
/// the project's [`ModelAgent`]).
pub async fn agent(ctx: Rc<Ctx>) -> turmoil::Result {
    let boot = ctx.ledger.borrow_mut().boot("agent");
    let (mut io, mut rx) = Io::new("agent", ctx.clone(), "/data/sessions.log");
    let records = io.recover()?;
    let mut model: Box<dyn AgentModel> = match &ctx.agent {
        Some(build) => build(AgentBoot {
            boot,
            seed: ctx.plan.seed,
            records: &records,
            plan: &ctx.plan,
        }),
        None => Box::new(ModelAgent::recover(
            ctx.plan.agent.clone(),
            boot,
            ctx.plan.seed,
            &records,
        )),
    };
    io.record(
        OpType::Info,
        "recover",
        json!({"boot": boot, "retained": model.retained()}),
    );
    ctx.ledger
        .borrow_mut()
        .idle
        .insert("agent", model.is_idle());
    io.listen().await?;
    let mut out = Vec::new();
    while let Some(ev) = rx.recv().await {
        match ev {
            Ev::Accepted(s) => {
                let addr = s.peer_addr().map(|a| a.to_string()).unwrap_or_default();
                let id = io.open(s, addr, None);
                model.handle(AgentInput::Connected(id), &mut out);
            }
            Ev::Frame(id, line) if io.conns.contains_key(&id) => {
                let frame = io.log_recv(id, &line);
                if ctx.ledger.borrow_mut().take_transient(&frame) {
                    model.handle(AgentInput::InjectTransientError, &mut out);
                }
                model.handle(AgentInput::Frame(id, line), &mut out);
            }
            Ev::Closed(id, why) => {
                if io.close(id, why) {
                    model.handle(AgentInput::Disconnected(id), &mut out);
                    if ctx.plan.stdio {
                        // Its stdin/stdout are gone: the process exits (the step loop ends it).
                        io.record(OpType::Info, "stdio-exit", json!({"conn": id}));
                        ctx.ledger.borrow_mut().stdio_exit = true;
                    }
                }
            }
            Ev::Timer(t) => model.handle(AgentInput::Timer(t), &mut out),
            Ev::Frame(..) | Ev::Connected(..) | Ev::ConnectFailed(_) | Ev::NotAccepted(..) => {}
        }
        io.run_agent(&mut *model, &mut out).await?;
        ctx.ledger
            .borrow_mut()
            .idle
            .insert("agent", model.is_idle());
    }
    Ok(())
}

/// A cluster node: no disk of its own; it reads the store's view before each request and
/// writes through the store (A13).
pub async fn node(ctx: Rc<Ctx>, name: &'static str) -> turmoil::Result {
    let boot = ctx.ledger.borrow_mut().boot(name);
    let (mut io, mut rx) = Io::new(name, ctx.clone(), "/node/none");
    io.link = Some(StoreLink {
        sock: UdpSocket::bind((IpAddr::V4(Ipv4Addr::UNSPECIFIED), STORE_PORT)).await?,
        next: 0,
        buf: vec![0u8; 1 << 20],
    });
    let index = NODES.iter().position(|n| *n == name).unwrap_or(0) as u64;
    let short = format!("n{}", index + 1);
    let mut model = ModelAgent::recover(
        ctx.plan.agent.clone(),
        boot,
        ctx.plan.seed ^ (index + 1).wrapping_mul(0xA076_1D64_78BD_642F),
        &[],
    )
    .node(&short);
    io.record(OpType::Info, "boot", json!({"boot": boot}));
    ctx.ledger.borrow_mut().idle.insert(name, model.is_idle());
    io.listen().await?;
    let mut out = Vec::new();
    while let Some(ev) = rx.recv().await {
        match ev {
            Ev::Accepted(s) => {
                let addr = s.peer_addr().map(|a| a.to_string()).unwrap_or_default();
                let id = io.open(s, addr, None);
                model.handle(AgentInput::Connected(id), &mut out);
            }
            Ev::Frame(id, line) if io.conns.contains_key(&id) => {
                let hello = serde_json::from_str::<Value>(&line)
                    .ok()
                    .and_then(|v| v["logical"].as_str().map(str::to_string));
                if let Some(l) = hello {
                    io.record(OpType::Info, "logical", json!({"conn": id, "logical": l}));
                    model.handle(AgentInput::Logical(id, l), &mut out);
                } else {
                    let frame = io.log_recv(id, &line);
                    if ctx.ledger.borrow_mut().take_transient(&frame) {
                        model.handle(AgentInput::InjectTransientError, &mut out);
                    }
                    if frame.get("method").is_some() && frame.get("id").is_some() {
                        let view = io.store_load().await;
                        model.handle(AgentInput::StoreSnapshot(view), &mut out);
                    }
                    model.handle(AgentInput::Frame(id, line), &mut out);
                }
            }
            Ev::Closed(id, why) => {
                if io.close(id, why) {
                    model.handle(AgentInput::Disconnected(id), &mut out);
                }
            }
            Ev::Timer(t) => model.handle(AgentInput::Timer(t), &mut out),
            Ev::Frame(..) | Ev::Connected(..) | Ev::ConnectFailed(_) | Ev::NotAccepted(..) => {}
        }
        io.run_agent(&mut model, &mut out).await?;
        ctx.ledger.borrow_mut().idle.insert(name, model.is_idle());
    }
    Ok(())
}

/// The cluster's store host: sessions, key records and active logical connections, synced to
/// its own disk before each reply (so it is `durable`).
pub async fn store(ctx: Rc<Ctx>) -> turmoil::Result {
    let boot = ctx.ledger.borrow_mut().boot("store");
    let (io, _rx) = Io::new("store", ctx.clone(), "/store/records.log");
    let records = io.recover()?;
    let mut st = ClusterStore::recover(&records);
    io.record(
        OpType::Info,
        "recover",
        json!({"boot": boot, "retained": st.retained()}),
    );
    let sock = UdpSocket::bind((IpAddr::V4(Ipv4Addr::UNSPECIFIED), STORE_PORT)).await?;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let (n, from) = sock.recv_from(&mut buf).await?;
        let Ok(op) = serde_json::from_slice::<Value>(&buf[..n]) else {
            continue;
        };
        let applied = st.handle(&op);
        for e in applied.effects {
            io.record(OpType::Info, e.f, e.value);
        }
        if let Some(r) = &applied.record {
            io.persist(r, true)?;
            if r["t"] == "msg" {
                io.record(
                    OpType::Info,
                    "durable",
                    json!({"session": r["session"], "messageId": r["messageId"]}),
                );
            }
            if matches!(r["t"].as_str(), Some("msg" | "live")) {
                turmoil::barriers::trigger(PointHit(Point::AfterStoreWrite, "store")).await;
            }
        }
        let mut reply = applied.reply;
        reply["req"] = op["req"].clone();
        let _ = sock
            .send_to(&serde_json::to_vec(&reply).expect("serializes"), from)
            .await;
    }
}

/// The Client host: recover its store, connect, take the user's submissions when they are due.
pub async fn client(ctx: Rc<Ctx>) -> turmoil::Result {
    let boot = ctx.ledger.borrow_mut().boot("client");
    let (mut io, mut rx) = Io::new("client", ctx.clone(), "/client/store.log");
    let records = io.recover()?;
    let mut model = SpecClient::recover(ctx.plan.client.clone(), boot, ctx.plan.seed, &records);
    io.record(
        OpType::Info,
        "boot",
        json!({"boot": boot, "pending": model.pending()}),
    );
    let mut out = Vec::new();
    model.set_clock(ctx.ledger.borrow().now_ms);
    model.handle(ClientInput::Boot, &mut out);
    io.execute(&mut out).await?;
    ctx.ledger.borrow_mut().client_pending = model.pending();
    loop {
        let due = {
            let l = ctx.ledger.borrow();
            l.workload
                .get(l.delivered)
                .map(|w| w.0.saturating_sub(l.now_ms))
        };
        let ev = tokio::select! {
            biased;
            ev = rx.recv() => ev,
            _ = tokio::time::sleep(Duration::from_millis(due.unwrap_or(0))), if due.is_some() => None,
        };
        model.set_clock(ctx.ledger.borrow().now_ms);
        match ev {
            None => {
                // The user acts on everything that is due. Recorded as the user's invoke, then
                // handed to the Client in the same step (no await in between: no crash there).
                loop {
                    let next = {
                        let mut l = ctx.ledger.borrow_mut();
                        match l.workload.get(l.delivered).cloned() {
                            Some((at, e)) if at <= l.now_ms => {
                                l.delivered += 1;
                                match &e {
                                    UserEvent::Submit { n, slot, text } => l.record(
                                        "user",
                                        OpType::Invoke,
                                        "submit",
                                        json!({"submission": n, "slot": slot, "text": text}),
                                    ),
                                    UserEvent::Cancel { n } => l.record(
                                        "user",
                                        OpType::Invoke,
                                        "cancel",
                                        json!({"submission": n}),
                                    ),
                                    UserEvent::Stop { slot } => l.record(
                                        "user",
                                        OpType::Invoke,
                                        "stop",
                                        json!({"slot": slot}),
                                    ),
                                    UserEvent::Close { slot } => l.record(
                                        "user",
                                        OpType::Invoke,
                                        "close",
                                        json!({"slot": slot}),
                                    ),
                                    UserEvent::Fork { slot, into } => l.record(
                                        "user",
                                        OpType::Invoke,
                                        "fork",
                                        json!({"slot": slot, "into": into}),
                                    ),
                                    UserEvent::Raw { n, line } => l.record(
                                        "user",
                                        OpType::Invoke,
                                        "raw",
                                        json!({"n": n, "line": line}),
                                    ),
                                };
                                Some(e)
                            }
                            _ => None,
                        }
                    };
                    let Some(e) = next else { break };
                    match e {
                        UserEvent::Submit { n, slot, text } => {
                            model.handle(
                                ClientInput::Submit {
                                    submission: n,
                                    slot,
                                    text,
                                },
                                &mut out,
                            );
                            io.execute(&mut out).await?;
                            ctx.ledger.borrow_mut().on_submission(n);
                        }
                        UserEvent::Cancel { n } => {
                            model.handle(ClientInput::Cancel { submission: n }, &mut out);
                            io.execute(&mut out).await?;
                        }
                        UserEvent::Stop { slot } => {
                            model.handle(ClientInput::Stop { slot }, &mut out);
                            io.execute(&mut out).await?;
                        }
                        UserEvent::Close { slot } => {
                            model.handle(ClientInput::Close { slot }, &mut out);
                            io.execute(&mut out).await?;
                        }
                        UserEvent::Fork { slot, into } => {
                            model.handle(ClientInput::Fork { slot, into }, &mut out);
                            io.execute(&mut out).await?;
                        }
                        UserEvent::Raw { n, line } => {
                            model.handle(ClientInput::Raw { n, line }, &mut out);
                            io.execute(&mut out).await?;
                        }
                    }
                }
            }
            Some(Ev::Connected(s, _)) => {
                let addr = s.local_addr().map(|a| a.to_string()).unwrap_or_default();
                // Through a proxy, the proxy's connections to the nodes carry the logical id.
                let hello = if ctx.plan.proxy {
                    None
                } else {
                    io.hello(format!("client-{boot}"))
                };
                let id = io.open(s, addr, hello);
                model.handle(ClientInput::Connected(id), &mut out);
            }
            Some(Ev::ConnectFailed(_)) => {
                io.record(OpType::Info, "connect-failed", json!({}));
                model.handle(ClientInput::ConnectFailed, &mut out);
            }
            Some(Ev::Frame(id, line)) if io.conns.contains_key(&id) => {
                io.log_recv(id, &line);
                model.handle(ClientInput::Frame(id, line), &mut out);
            }
            Some(Ev::Closed(id, why)) => {
                if io.close(id, why) {
                    model.handle(ClientInput::Disconnected(id), &mut out);
                }
            }
            Some(Ev::Timer(t)) => model.handle(ClientInput::Timer(t), &mut out),
            Some(Ev::NotAccepted(conn, id)) if io.conns.contains_key(&conn) => {
                io.record(
                    OpType::Info,
                    "not-accepted",
                    json!({"conn": conn, "id": id}),
                );
                model.handle(ClientInput::NotAccepted { conn, id }, &mut out);
            }
            Some(Ev::Frame(..) | Ev::Accepted(_) | Ev::NotAccepted(..)) => {}
        }
        io.execute(&mut out).await?;
        ctx.ledger.borrow_mut().client_pending = model.pending();
    }
}

/// The proxy host: accept Clients, open one Agent connection per Client, forward.
pub async fn proxy(ctx: Rc<Ctx>) -> turmoil::Result {
    let boot = ctx.ledger.borrow_mut().boot("proxy");
    let (mut io, mut rx) = Io::new("proxy", ctx.clone(), "/proxy/none");
    io.record(OpType::Info, "boot", json!({"boot": boot}));
    let mut model = Proxy::new(ctx.plan.proxy_mutant);
    io.listen().await?;
    let mut out = Vec::new();
    while let Some(ev) = rx.recv().await {
        match ev {
            Ev::Accepted(s) => {
                let addr = s.peer_addr().map(|a| a.to_string()).unwrap_or_default();
                let id = io.open(s, addr, None);
                model.handle(ProxyInput::Accepted(id), &mut out);
            }
            Ev::Connected(s, tag) => {
                let addr = s.local_addr().map(|a| a.to_string()).unwrap_or_default();
                let hello = io.hello(format!("proxy-{boot}-{tag}"));
                let id = io.open(s, addr, hello);
                model.handle(ProxyInput::DownConnected { tag, conn: id }, &mut out);
            }
            Ev::ConnectFailed(tag) => model.handle(ProxyInput::DownFailed { tag }, &mut out),
            Ev::Frame(id, line) if io.conns.contains_key(&id) => {
                io.log_recv(id, &line);
                model.handle(ProxyInput::Frame(id, line), &mut out);
            }
            Ev::Closed(id, why) => {
                if io.close(id, why) {
                    model.handle(ProxyInput::Disconnected(id), &mut out);
                }
            }
            Ev::Frame(..) | Ev::Timer(_) | Ev::NotAccepted(..) => {}
        }
        io.execute(&mut out).await?;
    }
    Ok(())
}

/// The watcher host: a second Client that resumes the user's session and watches it.
pub async fn watcher(ctx: Rc<Ctx>) -> turmoil::Result {
    let boot = ctx.ledger.borrow_mut().boot("watcher");
    let (mut io, mut rx) = Io::new("watcher", ctx.clone(), "/watcher/none");
    io.record(OpType::Info, "boot", json!({"boot": boot}));
    let mut model = Watcher::new();
    let mut out = Vec::new();
    let mut told = false;
    model.handle(WatcherInput::Boot, &mut out);
    io.execute(&mut out).await?;
    loop {
        let ev = tokio::select! {
            biased;
            ev = rx.recv() => ev,
            _ = tokio::time::sleep(Duration::from_millis(20)), if !told => None,
        };
        if !told {
            let known = ctx.ledger.borrow().known_session.clone();
            if let Some(sid) = known {
                told = true;
                model.handle(WatcherInput::Watch(sid), &mut out);
            }
        }
        match ev {
            Some(Ev::Connected(s, _)) => {
                let addr = s.local_addr().map(|a| a.to_string()).unwrap_or_default();
                let hello = io.hello(format!("watcher-{boot}"));
                let id = io.open(s, addr, hello);
                model.handle(WatcherInput::Connected(id), &mut out);
            }
            Some(Ev::ConnectFailed(_)) => model.handle(WatcherInput::ConnectFailed, &mut out),
            Some(Ev::Frame(id, line)) if io.conns.contains_key(&id) => {
                io.log_recv(id, &line);
                model.handle(WatcherInput::Frame(id, line), &mut out);
            }
            Some(Ev::Closed(id, why)) => {
                if io.close(id, why) {
                    model.handle(WatcherInput::Disconnected(id), &mut out);
                }
            }
            Some(Ev::Timer(t)) => model.handle(WatcherInput::Timer(t), &mut out),
            Some(Ev::Frame(..) | Ev::Accepted(_) | Ev::NotAccepted(..)) | None => {}
        }
        io.execute(&mut out).await?;
    }
}

/// A bare host for the benchmark baseline: same hosts and tick, no models.
pub async fn idle_host() -> turmoil::Result {
    loop {
        tokio::time::sleep(Duration::from_secs(3600)).await;
    }
}
