//! Order exploration: the races of a run, and the delay that reverses each.
//!
//! A run delivers messages to hosts: frames on connections, and on a cluster the nodes' store
//! ops to the store. Two deliveries to one host **race** when they come on different channels
//! (two connections; two nodes' datagrams), neither happens before the other (the second's
//! send does not follow the first's delivery: vector clocks over every send and delivery, a
//! host's steps in order, and a fault taken to reach every host whose connection then ends or
//! that boots from the event it fired at), and they are **dependent** (they may touch the same state: the same
//! session, or a frame or op that names none; two store `load`s never are). That is the race
//! of dynamic partial-order reduction for message passing (Flanagan and Godefroid; Abdulla et
//! al.'s optimal DPOR): only a race's other order can lead somewhere new.
//!
//! A race is reversed by delaying its first delivery until just after the second, with a
//! fault the simulator already honours, so the reversed run replays from its schedule and
//! shrinks like any other:
//! - a frame: `stall-frame` at the frame's trigger, for the time from its send to the second
//!   delivery;
//! - a node's `insert`: `stall-point` at the node's `after-insert-before-sync` pass (the point
//!   it passes just before sending it), as long.
//!
//! Not reversed (a certificate says so): a race whose first delivery is a store op other than
//! an `insert` (a `load`, an `append`, a `withdraw`, a `stop`: no point precedes them), or a
//! frame the run counted no trigger for. Each race is reversed on its own, over the run it was
//! found in (one reversal per schedule). A delay holds back more than the one delivery (a
//! stalled connection, a stopped node) and moves what waits on time, so a reversal's run is
//! checked ([`Race::reversed_in`]): the certificate counts those that came out reversed.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde_json::Value;

use super::places::{places, Spot};
use crate::history::{op, process, History};
use crate::models::Point;
use crate::nemesis::{fault_line, FaultKind, FaultSpec, Trigger};
use crate::world::trace::{StoreStepKind, Trace};

/// Which way a delivery came.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Channel {
    /// A connection.
    Conn(u64),
    /// A node's datagrams to the store.
    Store(&'static str),
}

/// Which delivery, the same in a run and in its reversal (which runs alike up to the delay):
/// a frame by its connection, line and how many equal lines that connection delivered before
/// it; a store op by its node and the node's number for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivered {
    /// A frame: connection, line, equal lines before it on the connection.
    Frame(u64, String, usize),
    /// A store op: node, the node's `req`, and which op of that number (a node numbers its ops
    /// from 1 again when it restarts).
    Store(&'static str, u64, u64),
}

/// One delivery of a run, as the race finder needs it.
#[derive(Debug, Clone)]
struct Delivery {
    /// Which one.
    id: Delivered,
    /// The host it was delivered to.
    host: usize,
    channel: Channel,
    /// The sender's clock when it sent it.
    sent_clock: Vec<u32>,
    /// The receiver's clock once delivered.
    at_clock: Vec<u32>,
    sent_ms: u64,
    at_ms: u64,
    /// The session it touches (`None`: any, or unknown).
    session: Option<String>,
    /// A store `load` (reads only; two never race).
    read_only: bool,
    /// How to postpone it, if the run gives a way: the trigger and the kind that delays it.
    delay: Option<(FaultKind, Trigger)>,
}

/// One race of a run and the fault that reverses it.
#[derive(Debug, Clone, PartialEq)]
pub struct Race {
    /// The delay placed: the first delivery goes after the second.
    pub delay: FaultSpec,
    /// Whether the deliveries were store ops (else frames).
    pub store: bool,
    /// The delivery delayed.
    pub first: Delivered,
    /// The delivery it is to come after.
    pub second: Delivered,
}

impl Race {
    /// Whether the reversal's run `h`, `t` (the race's schedule plus [`Race::delay`]) came out
    /// reversed: both deliveries came, the second first (a first delivery that never came is
    /// a lost frame, not another order).
    pub fn reversed_in(&self, h: &History, t: &Trace) -> bool {
        let ds = deliveries(h, t);
        let at = |id: &Delivered| ds.iter().position(|d| &d.id == id);
        match (at(&self.first), at(&self.second)) {
            (Some(a), Some(b)) => b < a,
            _ => false,
        }
    }
}

/// The races of run `h`, `t`, each with the delay that reverses it; one per distinct delay, in
/// the order of their first deliveries. `t` must come from a traced run of the same plan
/// ([`crate::world::Run::traced`]).
pub fn races(h: &History, t: &Trace) -> Vec<Race> {
    let ds = deliveries(h, t);
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for (i, a) in ds.iter().enumerate() {
        let Some((kind, on)) = &a.delay else { continue };
        for b in &ds[i + 1..] {
            if !(b.host == a.host && b.channel != a.channel && concurrent(a, b) && dependent(a, b))
            {
                continue;
            }
            let mut delay = FaultSpec::placed(*kind, on.clone());
            delay.stall_ms = Some(b.at_ms.saturating_sub(a.sent_ms) + 1);
            if seen.insert(fault_line(&delay)) {
                out.push(Race {
                    delay,
                    store: matches!(a.channel, Channel::Store(_)),
                    first: a.id.clone(),
                    second: b.id.clone(),
                });
            }
        }
    }
    out
}

/// `b`'s send does not follow `a`'s delivery: `b`'s sender had not heard, directly or through
/// others, of anything its receiver did from `a` on.
fn concurrent(a: &Delivery, b: &Delivery) -> bool {
    b.sent_clock[a.host] < a.at_clock[a.host]
}

/// Whether the two may touch the same state.
fn dependent(a: &Delivery, b: &Delivery) -> bool {
    if a.read_only && b.read_only {
        return false;
    }
    match (&a.session, &b.session) {
        (Some(x), Some(y)) => x == y,
        _ => true,
    }
}

/// One communication step of a run, in the order they happened.
enum Step<'a> {
    Send {
        host: &'static str,
        key: (u64, String),
        ms: u64,
        /// The index of its `send` op (where its trigger is read).
        op: usize,
    },
    Recv {
        host: &'static str,
        key: (u64, String),
        ms: u64,
        frame: &'a Value,
    },
    Store(&'a crate::world::trace::StoreStep),
    /// A fault fired at an event of `host` (a frame it wrote, a point it passed): what the
    /// fault does to other hosts follows from that event. `None`: the history does not say
    /// where it fired (a process-level fault queued at a frame or a submission): it is taken
    /// to follow everything so far (fewer races, never a false one).
    Fault {
        host: Option<&'static str>,
    },
    /// `host` saw a connection end, or booted: it may be a fault's doing.
    Affected {
        host: &'static str,
    },
}

/// A frame sent and not yet read: the sender's clock, the send's time and its op index.
type Sent = (Vec<u32>, u64, usize);

/// A store op sent and not yet applied: the node's clock, the send's time, the ops before it,
/// and which op of its number it is.
type StoreSent = (Vec<u32>, u64, usize, u64);

/// Every delivery of the run, in order, with vector clocks.
fn deliveries(h: &History, t: &Trace) -> Vec<Delivery> {
    let steps = steps(h, t);
    let triggers = frame_triggers(h, t);
    let insert_points = insert_points(t);
    let mut hosts: BTreeMap<&'static str, usize> = BTreeMap::new();
    for s in &steps {
        let name = match s {
            Step::Send { host, .. }
            | Step::Recv { host, .. }
            | Step::Fault { host: Some(host) }
            | Step::Affected { host } => *host,
            Step::Fault { host: None } => continue,
            Step::Store(x) => x.node,
        };
        let n = hosts.len();
        hosts.entry(name).or_insert(n);
    }
    let n = hosts.len();
    hosts.entry("store").or_insert(n);
    let n = hosts.len();
    let mut clock: Vec<Vec<u32>> = vec![vec![0; n]; n];
    let tick = |clock: &mut Vec<Vec<u32>>, h: usize, with: Option<&Vec<u32>>| {
        if let Some(w) = with {
            for (c, x) in clock[h].iter_mut().zip(w) {
                *c = (*c).max(*x);
            }
        }
        clock[h][h] += 1;
        clock[h].clone()
    };
    // Sends waiting for their delivery: frames by (conn, line), store ops by (node, req),
    // each with the sender's clock, the send's time and (frames) its op index.
    let mut frames: BTreeMap<(u64, String), VecDeque<Sent>> = BTreeMap::new();
    let mut store_sent: BTreeMap<(&'static str, u64), StoreSent> = BTreeMap::new();
    // How many ops each (node, req) had before: a node's numbers start again when it restarts.
    let mut reqs_seen: BTreeMap<(&'static str, u64), u64> = BTreeMap::new();
    let mut answers: BTreeMap<(&'static str, u64), Vec<u32>> = BTreeMap::new();
    let mut out = Vec::new();
    let mut seen_lines: BTreeMap<(u64, String), usize> = BTreeMap::new();
    // Every fault so far, as one clock: a host a fault may have acted on (a connection that
    // ended, a boot) is taken to have heard of every event a fault fired at.
    let mut faults: Vec<u32> = vec![0; n];
    for s in steps {
        match s {
            Step::Fault { host: Some(host) } => {
                let c = tick(&mut clock, hosts[host], None);
                for (f, x) in faults.iter_mut().zip(&c) {
                    *f = (*f).max(*x);
                }
            }
            Step::Fault { host: None } => {
                for c in &clock {
                    for (f, x) in faults.iter_mut().zip(c) {
                        *f = (*f).max(*x);
                    }
                }
            }
            Step::Affected { host } => {
                tick(&mut clock, hosts[host], Some(&faults));
            }
            Step::Send { host, key, ms, op } => {
                let c = tick(&mut clock, hosts[host], None);
                frames.entry(key).or_default().push_back((c, ms, op));
            }
            Step::Recv {
                host,
                key,
                ms,
                frame,
                ..
            } => {
                let Some((sent, sent_ms, op)) = frames.get_mut(&key).and_then(VecDeque::pop_front)
                else {
                    continue;
                };
                let r = hosts[host];
                let at = tick(&mut clock, r, Some(&sent));
                let conn = key.0;
                let before = seen_lines.entry(key.clone()).or_insert(0);
                let id = Delivered::Frame(key.0, key.1, *before);
                *before += 1;
                out.push(Delivery {
                    id,
                    host: r,
                    channel: Channel::Conn(conn),
                    sent_clock: sent,
                    at_clock: at,
                    sent_ms,
                    at_ms: ms,
                    session: frame["params"]["sessionId"].as_str().map(str::to_string),
                    read_only: false,
                    delay: triggers
                        .get(&op)
                        .map(|on| (FaultKind::StallFrame, on.clone())),
                });
            }
            Step::Store(x) => {
                let id = (x.node, x.req);
                match x.kind {
                    StoreStepKind::Sent => {
                        let c = tick(&mut clock, hosts[x.node], None);
                        let n = reqs_seen.entry(id).or_insert(0);
                        *n += 1;
                        store_sent.insert(id, (c, x.time_ms, x.ops_before, *n));
                    }
                    StoreStepKind::Applied => {
                        let Some((sent, sent_ms, sent_ops, nth)) = store_sent.remove(&id) else {
                            continue;
                        };
                        let r = hosts["store"];
                        let at = tick(&mut clock, r, Some(&sent));
                        answers.insert(id, at.clone());
                        let delay = (x.op == "insert")
                            .then(|| insert_point(&insert_points, x.node, sent_ops))
                            .flatten()
                            .map(|on| (FaultKind::StallPoint, on));
                        out.push(Delivery {
                            id: Delivered::Store(x.node, x.req, nth),
                            host: r,
                            channel: Channel::Store(x.node),
                            sent_clock: sent,
                            at_clock: at,
                            sent_ms,
                            at_ms: x.time_ms,
                            session: x.session.clone(),
                            read_only: x.op == "load",
                            delay,
                        });
                    }
                    StoreStepKind::Answered => {
                        let with = answers.remove(&id);
                        tick(&mut clock, hosts[x.node], with.as_ref());
                    }
                }
            }
        }
    }
    out
}

/// The run's sends and deliveries of frames and its store steps, in the order they happened
/// (a store step logged before op `i` comes before it).
fn steps<'a>(h: &'a History, t: &'a Trace) -> Vec<Step<'a>> {
    let received: BTreeMap<usize, &'static str> = t.received.iter().copied().collect();
    // The host of each pass of a point, by (point, nth over every host).
    let mut passed: BTreeMap<(&str, u64), &'static str> = BTreeMap::new();
    let mut nth: BTreeMap<&str, u64> = BTreeMap::new();
    for p in &t.points {
        let n = nth.entry(p.point.as_str()).or_insert(0);
        *n += 1;
        passed.insert((p.point.as_str(), *n), p.host);
    }
    let mut store = t.store.iter().peekable();
    let mut out = Vec::new();
    for o in &h.ops {
        while let Some(x) = store.next_if(|x| x.ops_before <= o.index) {
            out.push(Step::Store(x));
        }
        let v = &o.value;
        if [op::CONN_END, op::BOOT].contains(&o.f.as_str()) {
            if let Some(host) = host_name(Some(o.process.as_str())) {
                out.push(Step::Affected { host });
            }
            continue;
        }
        if o.process == process::NEMESIS && v.get("fault").is_some() {
            let d = &v["detail"];
            let at_point = d["point"]
                .as_str()
                .zip(d["nth"].as_u64())
                .and_then(|(p, n)| passed.get(&(p, n)).copied());
            out.push(Step::Fault {
                host: host_name(d["from"].as_str()).or(at_point),
            });
            continue;
        }
        if o.process != process::NET {
            continue;
        }
        let (Some(conn), frame) = (v["conn"].as_u64(), &v["frame"]) else {
            continue;
        };
        let key = (conn, frame.to_string());
        if o.f == op::SEND {
            let Some(host) = host_name(v["from"].as_str()) else {
                continue;
            };
            out.push(Step::Send {
                host,
                key,
                ms: o.time_ms,
                op: o.index,
            });
        } else if o.f == op::RECV {
            if let Some(host) = received.get(&o.index) {
                out.push(Step::Recv {
                    host,
                    key,
                    ms: o.time_ms,
                    frame,
                });
            }
        }
    }
    out.extend(store.map(Step::Store));
    out
}

/// A writer's host name as the world names its hosts (`client`, `agent`, `node2`, `proxy`).
fn host_name(from: Option<&str>) -> Option<&'static str> {
    let from = from?;
    ["client", "agent", "proxy", "watcher"]
        .into_iter()
        .chain(crate::history::NODES)
        .find(|h| *h == from)
}

/// The trigger of each frame send the run counted, by its op index ([`places`]).
fn frame_triggers(h: &History, t: &Trace) -> BTreeMap<usize, Trigger> {
    places(h, t)
        .into_iter()
        .filter(|p| matches!(p.spot, Spot::Frame { .. }))
        .map(|p| (p.at, p.on))
        .collect()
}

/// Each node's `after-insert-before-sync` passes, in order: (ops before the pass, the pass's
/// trigger). A node passes it just before it sends an `insert` to the store.
fn insert_points(t: &Trace) -> BTreeMap<&'static str, Vec<(usize, Trigger)>> {
    let mut out: BTreeMap<&'static str, Vec<(usize, Trigger)>> = BTreeMap::new();
    let mut nth = 0;
    for p in &t.points {
        if p.point == Point::AfterInsertBeforeSync {
            nth += 1;
            out.entry(p.host)
                .or_default()
                .push((p.ops_before, Trigger::at_point(p.point, nth)));
        }
    }
    out
}

/// The trigger of `node`'s last `after-insert-before-sync` pass before its insert sent after
/// `ops_before` ops.
fn insert_point(
    points: &BTreeMap<&'static str, Vec<(usize, Trigger)>>,
    node: &str,
    ops_before: usize,
) -> Option<Trigger> {
    points
        .get(node)?
        .iter()
        .rev()
        .find(|(at, _)| *at <= ops_before)
        .map(|(_, on)| on.clone())
}
