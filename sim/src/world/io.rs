//! The frame layer every host shares: newline-delimited JSON over turmoil TCP with a heartbeat
//! (an idle writer sends an empty line every `heartbeat_ms`; a reader that hears nothing for
//! `dead_ms` ends the connection, since turmoil never ends a partitioned stream by itself);
//! frame faults decided per frame by the [`Ledger`] at the writer; the process's file on the
//! simulated disk (framed records and a synced watermark beside them: a torn tail after the
//! watermark cut on recovery, damage before it refused); a cluster node's datagram link to
//! the store. [`Ctx`] is what every host of one run shares.

use std::cell::{Cell, RefCell};
use std::net::{IpAddr, Ipv4Addr};
use std::rc::Rc;
use std::time::Duration;

use acp_chaos_models::{store, Action, AgentInput, AgentModel, ConnId, Point};
use indexmap::IndexMap;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio::task::AbortHandle;
use turmoil::fs::shim::std::fs as simfs;
use turmoil::net::{TcpListener, TcpStream, UdpSocket};

pub(super) use super::event::Ev;
use super::ledger::Ledger;
use super::parties::Parties;
use super::trace::StoreStepKind;
use super::wakes::Wakes;
use crate::history::{is_agent_host, op, process, OpType};
use crate::nemesis::FrameDecision;
use crate::plan::Plan;

/// The Agent's listening port.
pub const AGENT_PORT: u16 = 9000;

/// The cluster store's UDP port (one datagram per op and per reply).
pub const STORE_PORT: u16 = 9100;

/// The sector the `zero-sector` fault zeroes, bytes.
pub const SECTOR: usize = 512;

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
    /// The parties under test; a `None` factory is the project's model for that party (cluster
    /// nodes are always [`ModelAgent`](acp_chaos_models::ModelAgent)s).
    pub parties: Parties,
    /// The simulated clock and every timer a host has armed (all host timers go through it).
    pub wakes: Rc<Wakes>,
    /// Snapshot the world at every place a fault can land (exploration): hosts hand the
    /// ledger their party's digest after each input ([`super::snapshot`]).
    pub snapshots: bool,
}

impl Ctx {
    /// In a snapshotting run, tell the ledger what `host`'s party holds now.
    pub(super) fn digest(&self, host: &'static str, digest: impl FnOnce() -> Option<u64>) {
        if self.snapshots {
            if let Some(s) = &mut self.ledger.borrow_mut().snapshots {
                s.set_digest(host, digest());
            }
        }
    }

    /// In a snapshotting run, tell the ledger that `host` is about to await in the middle of
    /// an input, holding `what` (its `Debug` form is hashed).
    pub(super) fn busy(&self, host: &'static str, what: &impl std::fmt::Debug) {
        if self.snapshots {
            if let Some(s) = &mut self.ledger.borrow_mut().snapshots {
                s.set_busy(host, Some(super::snapshot::of_debug(what)));
            }
        }
    }

    /// In a snapshotting run, tell the ledger that `host` is done with its input.
    pub(super) fn settled(&self, host: &'static str) {
        if self.snapshots {
            if let Some(s) = &mut self.ledger.borrow_mut().snapshots {
                s.set_busy(host, None);
            }
        }
    }
}

/// What an Agent host must know of a frame it read ([`Io::log_recv`]).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Recv {
    /// The nemesis has a transient error pending for this prompt: answer it with one.
    pub transient_error: bool,
    /// A request (a method and an id).
    pub request: bool,
}

pub(super) struct ConnHandle {
    out: UnboundedSender<String>,
    tasks: [AbortHandle; 2],
    /// To drop this writer's queue from the ledger when the connection goes (also by crash).
    ledger: Rc<RefCell<Ledger>>,
    key: (ConnId, &'static str),
    /// This host opened the connection (the Client's end, or a proxy's toward the Agent).
    connecting: bool,
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
pub(super) struct StoreLink {
    pub(super) sock: UdpSocket,
    pub(super) next: u64,
    /// Receive buffer, reused by every op (a reply holds the store's whole view).
    pub(super) buf: Vec<u8>,
}

/// A process's I/O: its connections, its store file, its timers.
pub(super) struct Io {
    pub(super) process: &'static str,
    pub(super) ctx: Rc<Ctx>,
    pub(super) tx: UnboundedSender<Ev>,
    pub(super) conns: IndexMap<ConnId, ConnHandle>,
    /// Connections `half-open` broke at this (connecting) end: closed for the host, their
    /// socket kept until the process ends, so the other end never reads their close.
    zombies: Vec<ConnHandle>,
    pub(super) store: String,
    /// Cluster node: persist through the store host instead of a local file.
    pub(super) link: Option<StoreLink>,
    /// The store's length in bytes as this process wrote it (what a sync covers).
    len: Cell<u64>,
    /// The watermark last written beside the store ([`store::Watermark`]).
    mark: Cell<store::Watermark>,
    /// This process's boot number (kept in the watermark).
    boot: Cell<u64>,
    /// Whether the store's directory entry is durable (it existed when this process started,
    /// or a directory sync since made it so): a synced write into a file whose entry is not
    /// would vanish with the file at a crash.
    entry_durable: Cell<bool>,
}

impl Io {
    pub(super) fn new(
        process: &'static str,
        ctx: Rc<Ctx>,
        store: &str,
    ) -> (Io, UnboundedReceiver<Ev>) {
        let (tx, rx) = unbounded_channel();
        (
            Io {
                process,
                ctx,
                tx,
                conns: IndexMap::new(),
                zombies: Vec::new(),
                store: store.to_string(),
                link: None,
                len: Cell::new(0),
                mark: Cell::new(store::Watermark::default()),
                boot: Cell::new(0),
                entry_durable: Cell::new(false),
            },
            rx,
        )
    }

    pub(super) fn record(&self, kind: OpType, f: &str, value: Value) {
        self.ctx
            .ledger
            .borrow_mut()
            .record(self.process, kind, f, value);
    }

    /// The watermark file beside the store (`sessions.log` → `sessions.synced`).
    fn synced_path(&self) -> String {
        let stem = self.store.strip_suffix(".log").unwrap_or(&self.store);
        format!("{stem}.synced")
    }

    /// The store's bytes and its watermark file's bytes, each empty when missing.
    fn read_store(&self) -> std::io::Result<(Vec<u8>, Vec<u8>)> {
        let read = |p: &str| -> std::io::Result<Vec<u8>> {
            if simfs::exists(p) {
                simfs::read(p)
            } else {
                Ok(Vec::new())
            }
        };
        Ok((read(&self.store)?, read(&self.synced_path())?))
    }

    /// Read the store against its watermark, cutting a torn tail after it (framed records,
    /// A13/D1), and write the watermark for boot `boot`. `None`: the store is damaged below
    /// its watermark, or shorter than it ([`store::Damaged`]), or the watermark itself is
    /// damaged; the process refuses to start (logged as `store-corrupt`) rather than lose
    /// acknowledged records.
    pub(super) fn recover(&self, boot: u32) -> std::io::Result<Option<Vec<Value>>> {
        let dir = std::path::Path::new(&self.store)
            .parent()
            .expect("absolute path");
        simfs::create_dir_all(dir)?;
        let (bytes, mark) = self.read_store()?;
        let refuse = |file: &str, value: Value| {
            let mut v = json!({ "file": file });
            v.as_object_mut()
                .expect("an object")
                .extend(value.as_object().cloned().unwrap_or_default());
            self.record(OpType::Info, op::STORE_CORRUPT, v);
        };
        let mark = match store::Watermark::read(&mark) {
            Ok(m) => m,
            Err(at) => {
                refuse(
                    &self.synced_path(),
                    json!({"at": at, "why": "no valid watermark slot"}),
                );
                return Ok(None);
            }
        };
        // The simulated stores always have a watermark once they have a log (it is written at
        // every start, before any record); a log without one counts every byte as synced.
        let found = match store::recover_synced(&bytes, mark.map(|m| m.synced)) {
            Ok(found) => found,
            Err(d) => {
                refuse(
                    &self.store,
                    json!({"at": d.at, "synced": d.synced, "len": d.len}),
                );
                return Ok(None);
            }
        };
        let exists = simfs::exists(&self.store);
        if found.valid < bytes.len() {
            let f = simfs::OpenOptions::new().write(true).open(&self.store)?;
            f.set_len(found.valid as u64)?;
            f.sync_all()?;
            self.record(
                OpType::Info,
                op::TRUNCATE_TORN_TAIL,
                json!({"from": bytes.len(), "to": found.valid}),
            );
        } else if exists {
            // Whole records past the watermark (written, never synced) are kept: sync them
            // before the watermark says so.
            simfs::OpenOptions::new()
                .write(true)
                .open(&self.store)?
                .sync_all()?;
        }
        self.entry_durable.set(exists);
        self.len.set(found.valid as u64);
        self.mark.set(mark.unwrap_or_default());
        self.boot.set(u64::from(boot));
        self.write_mark()?;
        Ok(Some(
            found
                .records
                .iter()
                .filter_map(|r| serde_json::from_slice(r).ok())
                .collect(),
        ))
    }

    /// Write and sync the watermark: the store's whole length as written so far is synced.
    fn write_mark(&self) -> std::io::Result<()> {
        use std::io::{Seek, Write};
        let path = self.synced_path();
        let created = !simfs::exists(&path);
        let next = self.mark.get().next(self.len.get(), self.boot.get());
        let (at, bytes) = next.slot();
        let mut f = simfs::OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(false)
            .open(&path)?;
        f.seek(std::io::SeekFrom::Start(at))?;
        f.write_all(&bytes)?;
        f.sync_all()?;
        if created {
            simfs::sync_dir(std::path::Path::new(&path).parent().expect("absolute path"))?;
        }
        self.mark.set(next);
        Ok(())
    }

    /// The `flip-bit` fault, while the process is down: flip the lowest bit of the middle
    /// byte of a record in the middle of its store (record `(n - 1) / 2` of `n`, so at least
    /// one whole record follows it). Returns `{file, record, of, offset}`, or `{file, of}`
    /// with nothing flipped when the store holds fewer than 2 records.
    pub(super) fn flip_bit(&self) -> std::io::Result<Value> {
        let bytes = if simfs::exists(&self.store) {
            simfs::read(&self.store)?
        } else {
            Vec::new()
        };
        let found = store::recover(&bytes);
        let n = found.records.len();
        if n < 2 {
            return Ok(json!({"file": self.store, "of": n}));
        }
        let k = (n - 1) / 2;
        // Offsets of record k: the lengths of the records before it, 8 header bytes each.
        let start: usize = found.records[..k].iter().map(|r| r.len() + 8).sum();
        let offset = start + 8 + found.records[k].len() / 2;
        let mut bad = bytes;
        bad[offset] ^= 1;
        let mut f = simfs::OpenOptions::new().write(true).open(&self.store)?;
        use std::io::{Seek, Write};
        f.seek(std::io::SeekFrom::Start(offset as u64))?;
        f.write_all(&bad[offset..=offset])?;
        f.sync_all()?;
        Ok(json!({"file": self.store, "record": k, "of": n, "offset": offset}))
    }

    /// The `zero-sector` fault, while the process is down: zero the [`SECTOR`]-byte sector
    /// (aligned, cut at the file's end) that holds the middle byte of the store's synced part,
    /// as a bad sector reads. Returns `{file, synced, from, to}`, or `{file, synced}` with
    /// nothing zeroed when nothing is synced yet.
    pub(super) fn zero_sector(&self) -> std::io::Result<Value> {
        let (bytes, mark) = self.read_store()?;
        let synced = store::Watermark::read(&mark)
            .ok()
            .flatten()
            .map_or(0, |m| m.synced as usize)
            .min(bytes.len());
        if synced == 0 {
            return Ok(json!({"file": self.store, "synced": synced}));
        }
        let from = synced / 2 / SECTOR * SECTOR;
        let to = (from + SECTOR).min(bytes.len());
        let mut f = simfs::OpenOptions::new().write(true).open(&self.store)?;
        use std::io::{Seek, Write};
        f.seek(std::io::SeekFrom::Start(from as u64))?;
        f.write_all(&vec![0; to - from])?;
        f.sync_all()?;
        Ok(json!({"file": self.store, "synced": synced, "from": from, "to": to}))
    }

    /// The `lose-synced-record` fault, while the process is down: cut the store before its
    /// last synced record (the last whole record that ends at or before the watermark), as a
    /// disk that lost its last write after acknowledging the sync. Returns `{file, record,
    /// of, from, to}` (record `record` of `of` whole records; the file cut from `from` bytes
    /// to `to`), or `{file, of}` with nothing cut when no record is synced.
    pub(super) fn lose_synced_record(&self) -> std::io::Result<Value> {
        let (bytes, mark) = self.read_store()?;
        let synced = store::Watermark::read(&mark)
            .ok()
            .flatten()
            .map_or(0, |m| m.synced as usize);
        let found = store::recover(&bytes);
        let n = found.records.len();
        // Record k ends at ends[k + 1].
        let mut ends = vec![0usize];
        for r in &found.records {
            ends.push(ends.last().copied().unwrap_or(0) + r.len() + 8);
        }
        let Some(k) = (0..n).rev().find(|k| ends[k + 1] <= synced) else {
            return Ok(json!({"file": self.store, "of": n}));
        };
        let f = simfs::OpenOptions::new().write(true).open(&self.store)?;
        f.set_len(ends[k] as u64)?;
        f.sync_all()?;
        Ok(json!({"file": self.store, "record": k, "of": n, "from": bytes.len(), "to": ends[k]}))
    }

    /// Append one record to the store; `sync`: sync it (and every earlier write), then the
    /// watermark.
    pub(super) fn persist(&self, record: &Value, sync: bool) -> std::io::Result<()> {
        use std::io::Write;
        let mut f = simfs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.store)?;
        let framed = store::encode(&serde_json::to_vec(record).expect("serializes"));
        f.write_all(&framed)?;
        self.len.set(self.len.get() + framed.len() as u64);
        if let Some(s) = &mut self.ctx.ledger.borrow_mut().snapshots {
            s.persisted(self.process, sync);
        }
        if sync {
            f.sync_all()?;
            if !self.entry_durable.get() {
                simfs::sync_dir(
                    std::path::Path::new(&self.store)
                        .parent()
                        .expect("absolute path"),
                )?;
                self.entry_durable.set(true);
            }
            self.write_mark()?;
        }
        Ok(())
    }

    /// Cluster: the first line on a connection to a node names its logical connection (the
    /// remote transport's connection id; a header, not a JSON-RPC frame).
    pub(super) fn hello(&self, logical: String) -> Option<String> {
        self.ctx
            .plan
            .cluster()
            .then(|| json!({ "logical": logical }).to_string())
    }

    /// A connection on `stream`: its id from the ledger, a reader task sending its frames
    /// (and its close) as events, and a writer task sending `hello` first, then each line the
    /// host queues through the ledger's frame faults, with heartbeats while idle.
    /// `connecting`: this host opened it (`half-open` closes this end only).
    pub(super) fn open(
        &mut self,
        stream: TcpStream,
        client_addr: String,
        hello: Option<String>,
        connecting: bool,
    ) -> ConnId {
        let plan = &self.ctx.plan;
        let id = self
            .ctx
            .ledger
            .borrow_mut()
            .conn_id(&client_addr, self.process);
        let (r, w) = stream.into_split();
        let (otx, orx) = unbounded_channel::<String>();
        let dead = Duration::from_millis(plan.net.dead_ms);
        let hb = Duration::from_millis(plan.net.heartbeat_ms);
        let reader = tokio::task::spawn_local(read_frames(
            r,
            id,
            self.process,
            dead,
            self.tx.clone(),
            self.ctx.wakes.clone(),
        ));
        let end = End {
            id,
            host: self.process,
            tx: self.tx.clone(),
            ledger: self.ctx.ledger.clone(),
            wakes: self.ctx.wakes.clone(),
        };
        let writer = tokio::task::spawn_local(write_frames(w, orx, hello, hb, end));
        self.conns.insert(
            id,
            ConnHandle {
                out: otx,
                tasks: [reader.abort_handle(), writer.abort_handle()],
                ledger: self.ctx.ledger.clone(),
                key: (id, self.process),
                connecting,
            },
        );
        if connecting {
            self.ctx
                .ledger
                .borrow_mut()
                .on_connect(id, self.process, &self.tx);
        }
        id
    }

    /// Listen on the Agent port; accepted connections arrive as `Ev::Accepted`.
    pub(super) async fn listen(&self) -> std::io::Result<()> {
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

    /// Forget a connection (its tasks are aborted, its halves dropped: the peer sees EOF;
    /// at the connecting end of a `half-open` connection they are kept, and it never does).
    pub(super) fn close(&mut self, id: ConnId, why: &str) -> bool {
        if let Some(h) = self.conns.shift_remove(&id) {
            if h.connecting && self.ctx.ledger.borrow().nemesis.is_half_open(id) {
                self.zombies.push(h);
            }
            self.ctx.ledger.borrow_mut().on_conn_end(id);
            self.record(
                OpType::Info,
                op::CONN_END,
                json!({"conn": id, "reason": why}),
            );
            true
        } else {
            false
        }
    }

    /// Log a line this host read (its `recv` op) and say what an Agent host must know of it
    /// (other hosts get [`Recv::default`]); the parsed frame goes into the op, not copied.
    pub(super) fn log_recv(&self, id: ConnId, line: &str) -> Recv {
        self.log_recv_decoded(id, line, false).0
    }

    /// [`Io::log_recv`], and with `want` a copy of the frame for the host's model
    /// (`AgentModel::handle_decoded`) when the line decoded to a JSON object: exactly
    /// `serde_json::from_str(line)`, so the model need not parse the line again. (Anything else
    /// it parses itself: a line that is not JSON is logged as a string, which a JSON string
    /// also decodes to.)
    pub(super) fn log_recv_decoded(
        &self,
        id: ConnId,
        line: &str,
        want: bool,
    ) -> (Recv, Option<Value>) {
        let mut ledger = self.ctx.ledger.borrow_mut();
        let frame: Value = ledger.take_written(line).unwrap_or_else(|| {
            serde_json::from_str(line).unwrap_or_else(|_| Value::String(line.to_string()))
        });
        let decoded = (want && frame.is_object()).then(|| frame.clone());
        // The model acts on this value instead of the line: it must be the line's own parse.
        debug_assert!(
            decoded.is_none() || decoded == serde_json::from_str::<Value>(line).ok(),
            "the frame handed to the model is not what its line decodes to: {line}"
        );
        ledger.on_recv(id, self.process, &frame);
        let recv = if is_agent_host(self.process) {
            Recv {
                transient_error: ledger.nemesis.take_transient(&frame),
                request: frame.get("method").is_some() && frame.get("id").is_some(),
            }
        } else {
            Recv::default()
        };
        ledger.on_read(self.process);
        ledger.record(
            process::NET,
            OpType::Info,
            op::RECV,
            super::ledger::frame_op(id, peer(self.process), frame),
        );
        (recv, decoded)
    }

    /// Send one op to the store and wait up to the store timeout for its reply (`None`: no
    /// reply; the op may or may not have applied).
    pub(super) async fn store_call(&mut self, op: &Value) -> Option<Value> {
        let limit = Duration::from_millis(self.ctx.plan.net.store_timeout_ms);
        let wakes = self.ctx.wakes.clone();
        let link = self.link.as_mut()?;
        link.next += 1;
        let req = link.next;
        let mut msg = op.clone();
        msg["req"] = json!(req);
        msg["node"] = json!(self.process);
        let bytes = serde_json::to_vec(&msg).expect("serializes");
        let (ledger, node) = (&self.ctx.ledger, self.process);
        ledger
            .borrow_mut()
            .on_store(StoreStepKind::Sent, node, req, op);
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
                        ledger
                            .borrow_mut()
                            .on_store(StoreStepKind::Answered, node, req, op);
                        return v;
                    }
                }
            }
        };
        wakes.timeout(self.process, limit, wait).await.ok()
    }

    /// Cluster: a write the node cannot continue without. It is sent again until the store
    /// answers (every append is idempotent), so the node never guesses (A2).
    pub(super) async fn store_append(&mut self, record: &Value) {
        let op = json!({"op": "append", "record": record});
        while self.store_call(&op).await.is_none() {
            self.record(OpType::Info, op::STORE_RETRY, json!({"record": record}));
        }
    }

    /// Cluster: the store's view, read before each request (retried until it comes).
    pub(super) async fn store_load(&mut self) -> Value {
        let op = json!({"op": "load"});
        loop {
            if let Some(v) = self.store_call(&op).await {
                return v;
            }
            self.record(OpType::Info, op::STORE_RETRY, json!({"op": "load"}));
        }
    }

    /// Run the model's actions in order. Points await the nemesis's barrier. Stops after an
    /// [`Action::Store`] and returns it; the actions after it stay in `out`.
    pub(super) async fn execute(
        &mut self,
        out: &mut Vec<Action>,
    ) -> std::io::Result<Option<(u64, Value)>> {
        let mut actions = std::mem::take(out).into_iter();
        while let Some(a) = actions.next() {
            match a {
                Action::Store { req, op } => {
                    out.extend(actions);
                    return Ok(Some((req, op)));
                }
                Action::Send { conn, line } => {
                    if let Some(c) = self.conns.get(&conn) {
                        let queued = self.ctx.snapshots.then(|| super::snapshot::of_hash(&line));
                        if c.out.send(line).is_ok() {
                            self.ctx
                                .ledger
                                .borrow_mut()
                                .frame_queued(conn, self.process, queued);
                        }
                    }
                }
                Action::Persist { record, sync } => {
                    if self.link.is_some() {
                        self.ctx
                            .busy(self.process, &("persist", actions.as_slice()));
                        self.store_append(&record).await;
                    } else {
                        self.persist(&record, sync)?;
                    }
                }
                Action::Timer { id, after_ms } => {
                    let tx = self.tx.clone();
                    let (wakes, host) = (self.ctx.wakes.clone(), self.process);
                    tokio::task::spawn_local(async move {
                        wakes.sleep(host, Duration::from_millis(after_ms)).await;
                        let _ = tx.send(Ev::Timer(id));
                    });
                }
                Action::Point(p) => {
                    self.ctx.busy(self.process, &("point", actions.as_slice()));
                    self.ctx.ledger.borrow_mut().on_point(p, self.process);
                    turmoil::barriers::trigger(PointHit(p, self.process)).await;
                    let pause = self.ctx.ledger.borrow_mut().take_pause(self.process);
                    if let Some(ms) = pause {
                        let wakes = self.ctx.wakes.clone();
                        wakes.sleep(self.process, Duration::from_millis(ms)).await;
                    }
                }
                Action::Effect(e) => {
                    // Jepsen types for the Client's view: an attempt is invoked, an ack is ok,
                    // an input shown to the user as failed is fail.
                    let kind = match e.f {
                        "attempt" => OpType::Invoke,
                        "ack" => OpType::Ok,
                        "surface" | "withdrawn" => OpType::Fail,
                        _ => OpType::Info,
                    };
                    if e.f == op::SESSION_KNOWN {
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
                    let target = if self.process == process::CLIENT && self.ctx.plan.proxy {
                        "proxy"
                    } else {
                        self.ctx.ledger.borrow_mut().route(self.process)
                    };
                    let (wakes, host) = (self.ctx.wakes.clone(), self.process);
                    tokio::task::spawn_local(async move {
                        wakes.sleep(host, Duration::from_millis(after_ms)).await;
                        let ev = match wakes
                            .timeout(host, limit, TcpStream::connect((target, AGENT_PORT)))
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
        self.ctx.settled(self.process);
        Ok(None)
    }

    /// Run an Agent's actions; a cluster node's store ops go out one at a time and each reply
    /// goes back to the model before the actions queued behind it.
    pub(super) async fn run_agent<M: AgentModel + ?Sized>(
        &mut self,
        model: &mut M,
        out: &mut Vec<Action>,
    ) -> std::io::Result<()> {
        while let Some((req, op)) = self.execute(out).await? {
            self.ctx.busy(self.process, &("store", req, &op, &out));
            let reply = self.store_call(&op).await;
            let mut next = Vec::new();
            model.handle(AgentInput::StoreReply { req, reply }, &mut next);
            self.ctx.digest(self.process, || model.state_digest());
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

/// A connection's reader: each non-empty line a frame event, until end of file, a reset or
/// `dead` without a line (a heartbeat timeout), then the close event saying which.
async fn read_frames(
    r: impl tokio::io::AsyncRead + Unpin,
    id: ConnId,
    host: &'static str,
    dead: Duration,
    tx: UnboundedSender<Ev>,
    wakes: Rc<Wakes>,
) {
    let mut r = BufReader::new(r);
    let mut buf = String::new();
    loop {
        buf.clear();
        let why = match wakes.timeout(host, dead, r.read_line(&mut buf)).await {
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
}

/// What a connection's writer shares with the world: which connection, whose end (its host),
/// where its close goes, the ledger that decides each frame's fate, and the host's timers.
struct End {
    id: ConnId,
    host: &'static str,
    tx: UnboundedSender<Ev>,
    ledger: Rc<RefCell<Ledger>>,
    wakes: Rc<Wakes>,
}

/// A connection's writer: `hello` first, then each queued line as the ledger decides
/// (delivered, stalled, reordered, dropped or lost), a heartbeat after `hb` idle (unless the
/// connection is blackholed); a failed write or a lost frame closes the connection.
async fn write_frames(
    mut w: impl tokio::io::AsyncWrite + Unpin,
    mut orx: UnboundedReceiver<String>,
    hello: Option<String>,
    hb: Duration,
    end: End,
) {
    let (id, host, from) = (end.id, end.host, end.host);
    let (tx, ledger, wakes) = (&end.tx, &end.ledger, &end.wakes);
    if let Some(h) = hello {
        if w.write_all(format!("{h}\n").as_bytes()).await.is_err() {
            let _ = tx.send(Ev::Closed(id, "write failed"));
            return;
        }
    }
    loop {
        let line = match wakes.timeout(host, hb, orx.recv()).await {
            Ok(Some(l)) => l,
            Ok(None) => return,
            Err(_) => {
                if !ledger.borrow().nemesis.is_blackholed(id) && w.write_all(b"\n").await.is_err() {
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
        // The frame goes into the send op; only a request the remote transport drops
        // needs its id after.
        let rpc_id = frame.get("id").cloned().unwrap_or(Value::Null);
        let decision = ledger.borrow_mut().on_send(id, from, &line, frame);
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
            FrameDecision::Stall(ms) => stall(&end, ms).await,
            FrameDecision::Reorder { bound_ms, after } => reorder(&end, bound_ms, after).await,
            FrameDecision::Lose { silent: true } => continue,
            FrameDecision::Drop { not_accepted } => {
                if not_accepted {
                    let _ = tx.send(Ev::NotAccepted(id, rpc_id));
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
}

/// A stalled frame: held `ms`, then the stall's end recorded and the frame done.
async fn stall(end: &End, ms: u64) {
    let (id, from) = (end.id, end.host);
    end.wakes.sleep(end.host, Duration::from_millis(ms)).await;
    end.ledger.borrow_mut().record(
        process::NET,
        OpType::Info,
        op::STALL_END,
        json!({"conn": id, "from": from}),
    );
    end.ledger.borrow_mut().frame_done(id, from);
}

/// A reordered frame (send number `after`): held until a later frame overtakes it or
/// `bound_ms` passes, then the reorder's end recorded (with what overtook it) and the frame
/// done.
async fn reorder(end: &End, bound_ms: u64, after: u64) {
    let (id, from, ledger) = (end.id, end.host, &end.ledger);
    let mut waited = 0;
    let by = loop {
        if let Some(x) = ledger.borrow().overtaken(id, after) {
            break Some(x);
        }
        if waited >= bound_ms {
            break None;
        }
        end.wakes.sleep(end.host, Duration::from_millis(1)).await;
        waited += 1;
    };
    ledger.borrow_mut().record(
        process::NET,
        OpType::Info,
        op::REORDER_END,
        json!({"conn": id, "from": from, "waited_ms": waited,
               "overtaken_by": by.map(|b| json!({"conn": b.0, "op": b.1}))}),
    );
    ledger.borrow_mut().frame_done(id, from);
}
