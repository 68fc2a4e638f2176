//! Thin async drivers that run the sans-IO models as turmoil hosts: each host has one event
//! loop that feeds its model the events of its frame layer ([`super::io`]: connections,
//! frames, timers) and runs the actions the model returns.

use std::net::{IpAddr, Ipv4Addr};
use std::rc::Rc;
use std::time::Duration;

use acp_chaos_models::cluster::ClusterStore;
use acp_chaos_models::proxy::{Proxy, ProxyInput, ProxyModel};
use acp_chaos_models::watcher::{Watcher, WatcherInput};
use acp_chaos_models::{
    AgentInput, AgentModel, ClientInput, ClientModel, ModelAgent, Point, SpecClient,
};
use serde_json::{json, Value};
use turmoil::net::UdpSocket;

use super::io::{Ctx, Ev, Io, PointHit, StoreLink, STORE_PORT};
use super::parties::Boot;
use super::snapshot::of_debug;
use super::trace::StoreStepKind;
use crate::history::{op, process, OpType, NODES};
use crate::nemesis::DiskDamage;
use crate::plan::{Plan, UserEvent};

/// The Agent host: recover the stored sessions, listen, run the model (the Agent of [`Ctx::parties`], or
/// the project's [`ModelAgent`]).
pub async fn agent(ctx: Rc<Ctx>) -> turmoil::Result {
    let boot = ctx.ledger.borrow_mut().boot("agent");
    let (mut io, mut rx) = Io::new("agent", ctx.clone(), "/data/sessions.log");
    let disk_fault = ctx.ledger.borrow_mut().disk_fault.take();
    if let Some(kind) = disk_fault {
        let (f, done) = match kind {
            DiskDamage::FlipBit => (op::FLIPPED, io.flip_bit()?),
            DiskDamage::ZeroSector => (op::ZEROED_SECTOR, io.zero_sector()?),
            DiskDamage::LoseSyncedRecord => (op::LOST_SYNCED_RECORD, io.lose_synced_record()?),
        };
        io.record(OpType::Info, f, done);
    }
    let Some(records) = io.recover(boot)? else {
        // A damaged store: the Agent refuses to start (logged by `recover`) and stays down.
        return Ok(());
    };
    let mut model: Box<dyn AgentModel> = match &ctx.parties.agent {
        Some(build) => build(Boot {
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
        op::RECOVER,
        json!({"boot": boot, "retained": model.retained()}),
    );
    ctx.ledger
        .borrow_mut()
        .idle
        .insert("agent", model.is_idle());
    ctx.digest("agent", || model.state_digest());
    io.listen().await?;
    let mut out = Vec::new();
    while let Some(ev) = rx.recv().await {
        match ev {
            Ev::Accepted(s) => {
                let addr = s.peer_addr().map(|a| a.to_string()).unwrap_or_default();
                let id = io.open(s, addr, None, false);
                model.handle(AgentInput::Connected(id), &mut out);
            }
            Ev::Frame(id, line) if io.conns.contains_key(&id) => {
                let (recv, decoded) = io.log_recv_decoded(id, &line, true);
                if recv.transient_error {
                    model.handle(AgentInput::InjectTransientError, &mut out);
                }
                match decoded {
                    Some(v) => model.handle_decoded(id, line, v, &mut out),
                    None => model.handle(AgentInput::Frame(id, line), &mut out),
                }
            }
            Ev::Closed(id, why) => {
                if io.close(id, why) {
                    model.handle(AgentInput::Disconnected(id), &mut out);
                    if ctx.plan.stdio {
                        // Its stdin/stdout are gone: the process exits (the step loop ends it).
                        io.record(OpType::Info, op::STDIO_EXIT, json!({"conn": id}));
                        ctx.ledger.borrow_mut().stdio_exit = true;
                    }
                }
            }
            Ev::Timer(t) => model.handle(AgentInput::Timer(t), &mut out),
            Ev::Frame(..) | Ev::Connected(..) | Ev::ConnectFailed(_) | Ev::NotAccepted(..) => {}
        }
        ctx.digest("agent", || model.state_digest());
        io.run_agent(&mut *model, &mut out).await?;
        ctx.ledger
            .borrow_mut()
            .idle
            .insert("agent", model.is_idle());
    }
    Ok(())
}

/// The Agent host `name` (a cluster node) is handling an input: not idle until its model says so after.
fn working(ctx: &Ctx, name: &'static str) {
    if let Some(i) = ctx.ledger.borrow_mut().idle.get_mut(name) {
        *i = false;
    }
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
    io.record(OpType::Info, op::BOOT, json!({"boot": boot}));
    ctx.ledger.borrow_mut().idle.insert(name, model.is_idle());
    ctx.digest(name, || model.state_digest());
    io.listen().await?;
    let mut out = Vec::new();
    while let Some(ev) = rx.recv().await {
        // Busy until it has handled this input: a notification, a timer or a close may await
        // the store as a request does (`Ledger::on_recv`), and the run is not quiet meanwhile
        // (a stop it is recording, a connection end still in its inbox).
        working(&ctx, name);
        match ev {
            Ev::Accepted(s) => {
                let addr = s.peer_addr().map(|a| a.to_string()).unwrap_or_default();
                let id = io.open(s, addr, None, false);
                model.handle(AgentInput::Connected(id), &mut out);
            }
            Ev::Frame(id, line) if io.conns.contains_key(&id) => {
                let hello = serde_json::from_str::<Value>(&line)
                    .ok()
                    .and_then(|v| v["logical"].as_str().map(str::to_string));
                if let Some(l) = hello {
                    io.record(OpType::Info, op::LOGICAL, json!({"conn": id, "logical": l}));
                    model.handle(AgentInput::Logical(id, l), &mut out);
                } else {
                    let (recv, decoded) = io.log_recv_decoded(id, &line, true);
                    if recv.transient_error {
                        model.handle(AgentInput::InjectTransientError, &mut out);
                    }
                    if recv.request {
                        // It holds the frame (and what the model decided so far) until the
                        // store answers.
                        ctx.digest(name, || model.state_digest());
                        ctx.busy(name, &("load", &line, &out));
                        let view = io.store_load().await;
                        model.handle(AgentInput::StoreSnapshot(view), &mut out);
                    }
                    match decoded {
                        Some(v) => model.handle_decoded(id, line, v, &mut out),
                        None => model.handle(AgentInput::Frame(id, line), &mut out),
                    }
                }
            }
            Ev::Closed(id, why) => {
                if io.close(id, why) {
                    model.handle(AgentInput::Disconnected(id), &mut out);
                }
            }
            Ev::Timer(t) => model.handle(AgentInput::Timer(t), &mut out),
            Ev::NotAccepted(conn, id) if io.conns.contains_key(&conn) => {
                io.record(
                    OpType::Info,
                    op::NOT_ACCEPTED,
                    json!({"conn": conn, "id": id}),
                );
                model.handle(AgentInput::NotAccepted { conn, id }, &mut out);
            }
            Ev::Frame(..) | Ev::Connected(..) | Ev::ConnectFailed(_) | Ev::NotAccepted(..) => {}
        }
        ctx.digest(name, || model.state_digest());
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
    let Some(records) = io.recover(boot)? else {
        return Ok(());
    };
    let mut st = ClusterStore::recover(&records);
    io.record(
        OpType::Info,
        op::RECOVER,
        json!({"boot": boot, "retained": st.retained()}),
    );
    ctx.digest("store", || Some(of_debug(&st)));
    let sock = UdpSocket::bind((IpAddr::V4(Ipv4Addr::UNSPECIFIED), STORE_PORT)).await?;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let (n, from) = sock.recv_from(&mut buf).await?;
        let Ok(op) = serde_json::from_slice::<Value>(&buf[..n]) else {
            continue;
        };
        if let (Some(node), Some(req)) = (node_of(&ctx.plan, &op), op["req"].as_u64()) {
            ctx.ledger
                .borrow_mut()
                .on_store(StoreStepKind::Applied, node, req, &op);
        }
        let applied = st.handle(&op);
        ctx.digest("store", || Some(of_debug(&st)));
        for e in applied.effects {
            io.record(OpType::Info, e.f, e.value);
        }
        if let Some(r) = &applied.record {
            io.persist(r, true)?;
            if r["t"] == "msg" {
                io.record(
                    OpType::Info,
                    op::DURABLE,
                    json!({"session": r["session"], "messageId": r["messageId"]}),
                );
            }
            if matches!(r["t"].as_str(), Some("msg" | "live")) {
                // It holds the reply (and whom it is for) until the barrier lets it go.
                ctx.busy("store", &(&applied.reply, &op["req"], from));
                ctx.ledger
                    .borrow_mut()
                    .on_point(Point::AfterStoreWrite, "store");
                turmoil::barriers::trigger(PointHit(Point::AfterStoreWrite, "store")).await;
            }
        }
        let mut reply = applied.reply;
        reply["req"] = op["req"].clone();
        let _ = sock
            .send_to(&serde_json::to_vec(&reply).expect("serializes"), from)
            .await;
        ctx.settled("store");
    }
}

/// The node that sent a store op (its `node` field), as the plan names its host.
fn node_of(plan: &Plan, op: &Value) -> Option<&'static str> {
    let name = op["node"].as_str()?;
    plan.agent_hosts().iter().copied().find(|h| *h == name)
}

/// The Client host: recover its store, connect, take the user's submissions when they are due.
///
/// Long on purpose: the Client host's event loop: the user's due actions and each event of its
/// frame layer, one arm each.
pub async fn client(ctx: Rc<Ctx>) -> turmoil::Result {
    let boot = ctx.ledger.borrow_mut().boot("client");
    let (mut io, mut rx) = Io::new("client", ctx.clone(), "/client/store.log");
    let Some(records) = io.recover(boot)? else {
        return Ok(());
    };
    let mut model: Box<dyn ClientModel> = match &ctx.parties.client {
        Some(build) => build(Boot {
            boot,
            seed: ctx.plan.seed,
            records: &records,
            plan: &ctx.plan,
        }),
        None => Box::new(SpecClient::recover(
            ctx.plan.client.clone(),
            boot,
            ctx.plan.seed,
            &records,
        )),
    };
    io.record(
        OpType::Info,
        op::BOOT,
        json!({"boot": boot, "pending": model.pending()}),
    );
    let mut out = Vec::new();
    model.set_clock(ctx.ledger.borrow().now_ms);
    model.handle(ClientInput::Boot, &mut out);
    ctx.digest("client", || model.state_digest());
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
            _ = ctx.wakes.sleep("client", Duration::from_millis(due.unwrap_or(0))), if due.is_some() => None,
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
                                        process::USER,
                                        OpType::Invoke,
                                        op::SUBMIT,
                                        json!({"submission": n, "slot": slot, "text": text}),
                                    ),
                                    UserEvent::Cancel { n } => l.record(
                                        process::USER,
                                        OpType::Invoke,
                                        op::CANCEL,
                                        json!({"submission": n}),
                                    ),
                                    UserEvent::Stop { slot } => l.record(
                                        process::USER,
                                        OpType::Invoke,
                                        op::STOP,
                                        json!({"slot": slot}),
                                    ),
                                    UserEvent::Close { slot } => l.record(
                                        process::USER,
                                        OpType::Invoke,
                                        op::CLOSE,
                                        json!({"slot": slot}),
                                    ),
                                    UserEvent::Fork { slot, into } => l.record(
                                        process::USER,
                                        OpType::Invoke,
                                        op::FORK,
                                        json!({"slot": slot, "into": into}),
                                    ),
                                    UserEvent::Raw { n, line } => l.record(
                                        process::USER,
                                        OpType::Invoke,
                                        op::RAW,
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
                            ctx.digest("client", || model.state_digest());
                            io.execute(&mut out).await?;
                            ctx.ledger.borrow_mut().on_submission(n);
                        }
                        UserEvent::Cancel { n } => {
                            model.handle(ClientInput::Cancel { submission: n }, &mut out);
                            ctx.digest("client", || model.state_digest());
                            io.execute(&mut out).await?;
                        }
                        UserEvent::Stop { slot } => {
                            model.handle(ClientInput::Stop { slot }, &mut out);
                            ctx.digest("client", || model.state_digest());
                            io.execute(&mut out).await?;
                        }
                        UserEvent::Close { slot } => {
                            model.handle(ClientInput::Close { slot }, &mut out);
                            ctx.digest("client", || model.state_digest());
                            io.execute(&mut out).await?;
                        }
                        UserEvent::Fork { slot, into } => {
                            model.handle(ClientInput::Fork { slot, into }, &mut out);
                            ctx.digest("client", || model.state_digest());
                            io.execute(&mut out).await?;
                        }
                        UserEvent::Raw { n, line } => {
                            model.handle(ClientInput::Raw { n, line }, &mut out);
                            ctx.digest("client", || model.state_digest());
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
                let id = io.open(s, addr, hello, true);
                model.handle(ClientInput::Connected(id), &mut out);
            }
            Some(Ev::ConnectFailed(_)) => {
                io.record(OpType::Info, op::CONNECT_FAILED, json!({}));
                model.handle(ClientInput::ConnectFailed, &mut out);
            }
            Some(Ev::Frame(id, line)) if io.conns.contains_key(&id) => {
                match io.log_recv_decoded(id, &line, true).1 {
                    Some(v) => model.handle_decoded(id, line, v, &mut out),
                    None => model.handle(ClientInput::Frame(id, line), &mut out),
                }
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
                    op::NOT_ACCEPTED,
                    json!({"conn": conn, "id": id}),
                );
                model.handle(ClientInput::NotAccepted { conn, id }, &mut out);
            }
            Some(Ev::Frame(..) | Ev::Accepted(_) | Ev::NotAccepted(..)) => {}
        }
        ctx.digest("client", || model.state_digest());
        io.execute(&mut out).await?;
        ctx.ledger.borrow_mut().client_pending = model.pending();
    }
}

/// The proxy host: accept Clients, open one Agent connection per Client, forward.
pub async fn proxy(ctx: Rc<Ctx>) -> turmoil::Result {
    let boot = ctx.ledger.borrow_mut().boot("proxy");
    let (mut io, mut rx) = Io::new("proxy", ctx.clone(), "/proxy/none");
    io.record(OpType::Info, op::BOOT, json!({"boot": boot}));
    let mut model: Box<dyn ProxyModel> = match &ctx.parties.proxy {
        Some(build) => build(Boot {
            boot,
            seed: ctx.plan.seed,
            records: &[],
            plan: &ctx.plan,
        }),
        None => Box::new(Proxy::new(ctx.plan.proxy_mutant)),
    };
    io.listen().await?;
    let mut out = Vec::new();
    while let Some(ev) = rx.recv().await {
        match ev {
            Ev::Accepted(s) => {
                let addr = s.peer_addr().map(|a| a.to_string()).unwrap_or_default();
                let id = io.open(s, addr, None, false);
                model.handle(ProxyInput::Accepted(id), &mut out);
            }
            Ev::Connected(s, tag) => {
                let addr = s.local_addr().map(|a| a.to_string()).unwrap_or_default();
                let hello = io.hello(format!("proxy-{boot}-{tag}"));
                let id = io.open(s, addr, hello, true);
                model.handle(ProxyInput::DownConnected { tag, conn: id }, &mut out);
            }
            Ev::ConnectFailed(tag) => model.handle(ProxyInput::DownFailed { tag }, &mut out),
            Ev::Frame(id, line) if io.conns.contains_key(&id) => {
                match io.log_recv_decoded(id, &line, true).1 {
                    Some(v) => model.handle_decoded(id, line, v, &mut out),
                    None => model.handle(ProxyInput::Frame(id, line), &mut out),
                }
            }
            Ev::Closed(id, why) => {
                if io.close(id, why) {
                    model.handle(ProxyInput::Disconnected(id), &mut out);
                }
            }
            Ev::Frame(..) | Ev::Timer(_) | Ev::NotAccepted(..) => {}
        }
        ctx.digest("proxy", || model.state_digest());
        io.execute(&mut out).await?;
    }
    Ok(())
}

/// The watcher host: a second Client that resumes the user's session and watches it.
pub async fn watcher(ctx: Rc<Ctx>) -> turmoil::Result {
    let boot = ctx.ledger.borrow_mut().boot("watcher");
    let (mut io, mut rx) = Io::new("watcher", ctx.clone(), "/watcher/none");
    io.record(OpType::Info, op::BOOT, json!({"boot": boot}));
    let mut model = Watcher::new();
    let mut out = Vec::new();
    let mut told = false;
    model.handle(WatcherInput::Boot, &mut out);
    io.execute(&mut out).await?;
    loop {
        let ev = tokio::select! {
            biased;
            ev = rx.recv() => ev,
            _ = ctx.wakes.sleep("watcher", Duration::from_millis(20)), if !told => None,
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
                let id = io.open(s, addr, hello, true);
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
        ctx.digest("watcher", || Some(of_debug(&(&model, told))));
        io.execute(&mut out).await?;
    }
}
