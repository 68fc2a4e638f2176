//! X4 resume order, from the frames: [`x4_resume_order`] on a simulated run's history (as the
//! checkers read it, [`super::agent_view`]) and on the histories `acp-chaos probe` records from
//! real Agent processes alike.

use std::collections::{BTreeMap, BTreeSet};

use acp_chaos_models::Party;

use super::facts::Facts;
use super::verdict::{Status, Verdict};
use crate::history::{is_agent_host, op, process, History, Op};
use crate::nemesis::logged;

/// The kind recorded for an update of an open resume's connection that the transport lost.
const LOST: &str = "(lost)";

/// An update on `conn` was lost at op `at`: every resume open there has a gap.
fn lost_update(open: &mut BTreeMap<(u64, u64), Open>, conn: u64, at: usize) {
    for ((c, _), o) in open.iter_mut() {
        if *c == conn {
            o.3.push((LOST.to_string(), at));
        }
    }
}

/// An open resume: (its request's op, its session, with `replayFrom`, the updates seen on
/// its connection since: (kind, op)).
type Open = (usize, String, bool, Vec<(String, usize)>);

/// X4 as a checker of the registry ([`super::CHECKERS`]).
pub fn x4_check(f: &Facts) -> Verdict {
    let mut v = x4_resume_order(f.history);
    if let Some(&w) = v.witnesses.last() {
        v.fault = f.fault_before(w);
    }
    v
}

/// X4 resume order, from the frames on each of the Agent's connections: a `session/resume`
/// written to the Agent (by a Client, a watcher or a proxy) and answered with success got,
/// before its response and for its session, with `replayFrom`: the replayed history, exactly
/// one `replay_complete`, then a `state_update` snapshot; without it: no `replay_complete`
/// and a `state_update` snapshot. A resume never answered on a connection that stayed open
/// (no end logged, no crash of either end) and whose answer no fault lost is unknown (what
/// never came).
pub fn x4_resume_order(h: &History) -> Verdict {
    let mut v = Verdict {
        property: "X4".into(),
        status: Status::Valid,
        rules: vec!["X4".into()],
        witnesses: vec![],
        fault: None,
        party: None,
        message: String::new(),
    };
    let mut resumes = Resumes::new(h);
    for op in &h.ops {
        if let Some((w, message)) = resumes.step(op) {
            v.status = Status::Invalid;
            v.party = Some(Party::Agent);
            v.witnesses = w;
            v.message = message;
            return v;
        }
    }
    if let Some(((_, id), (req, sid, _, _))) = resumes.open.iter().next() {
        v.status = Status::Unknown;
        v.witnesses = vec![*req];
        v.message = format!("session/resume #{id} of {sid} was never answered");
    }
    v
}

/// The resumes open on the Agent's connections, as [`x4_resume_order`] walks the ops.
struct Resumes {
    /// The Agent's connections: a proxy's upstream leg carries the proxy's answers, not the
    /// Agent's (the Agent's order is judged on the leg it writes).
    agent_conns: BTreeSet<u64>,
    /// The hosts at the ends of each connection (its writers, and the one that accepted it):
    /// a crash of one ends the connection without a `conn-end`.
    ends: BTreeMap<u64, BTreeSet<String>>,
    /// (conn, id) → the resume open there.
    open: BTreeMap<(u64, u64), Open>,
}

impl Resumes {
    fn new(h: &History) -> Resumes {
        let agent_conns = h
            .ops
            .iter()
            .filter(|o| o.process == process::NET && o.f == op::SEND)
            .filter(|o| o.value["from"].as_str().is_some_and(is_agent_host))
            .filter_map(|o| o.value["conn"].as_u64())
            .collect();
        Resumes {
            agent_conns,
            ends: BTreeMap::new(),
            open: BTreeMap::new(),
        }
    }

    /// Take one op in; the witnesses and message of an answer out of order.
    fn step(&mut self, op: &Op) -> Option<(Vec<usize>, String)> {
        let val = &op.value;
        let conn = val["conn"].as_u64().unwrap_or(0);
        if op.process == process::NET {
            for host in [&val["from"], &val["seen_by"]] {
                if let Some(host) = host.as_str() {
                    self.ends.entry(conn).or_default().insert(host.to_string());
                }
            }
        }
        let from_agent = val["from"].as_str().map(is_agent_host);
        match (op.process.as_str(), op.f.as_str()) {
            (process::NET, op::SEND)
                if from_agent == Some(false) && self.agent_conns.contains(&conn) =>
            {
                self.sent_resume(op, conn);
            }
            (process::NET, op::SEND) if from_agent == Some(true) => {
                return self.agent_wrote(op, conn);
            }
            // The Agent read the resume (a simulated run logs it; a probe's wire log from the
            // Client's side does not): what it wrote before was written before it knew of
            // the request, live updates crossing it in the pipe.
            (process::NET, op::RECV)
                if from_agent == Some(false) && val["frame"]["method"] == "session/resume" =>
            {
                if let Some(id) = val["frame"]["id"].as_u64() {
                    if let Some(o) = self.open.get_mut(&(conn, id)) {
                        o.3.clear();
                    }
                }
            }
            // The Agent takes the resume up (a simulated Agent logs `activate` right before its
            // replay): what it wrote on the connection before, it wrote as live updates of a
            // session already active there (a cluster's logical connection keeps it active
            // across a reconnect), not inside the replay.
            (process::AGENT, op::ACTIVATE) => {
                let sid = val["session"].as_str().unwrap_or_default();
                for ((c, _), o) in self.open.iter_mut() {
                    if *c == conn && o.1 == sid {
                        o.3.clear();
                    }
                }
            }
            (_, op::CONN_END) => self.open.retain(|k, _| k.0 != conn),
            (process::NEMESIS, _) => self.fault(op),
            (process::NET, op::DROPPED) if val["method"] == "session/update" => {
                lost_update(&mut self.open, conn, op.index);
            }
            _ => {}
        }
        None
    }

    /// A writer other than the Agent sent a frame on one of the Agent's connections: a
    /// `session/resume` opens.
    fn sent_resume(&mut self, op: &Op, conn: u64) {
        let fr = &op.value["frame"];
        if let (Some("session/resume"), Some(id)) = (fr["method"].as_str(), fr["id"].as_u64()) {
            let sid = fr["params"]["sessionId"].as_str().unwrap_or("").to_string();
            let replay = fr["params"]["replayFrom"].is_object();
            self.open
                .insert((conn, id), (op.index, sid, replay, Vec::new()));
        }
    }

    /// The Agent wrote a frame: an update of an open resume's session, or the answer that
    /// closes a resume (judged here).
    fn agent_wrote(&mut self, op: &Op, conn: u64) -> Option<(Vec<usize>, String)> {
        let fr = &op.value["frame"];
        if fr["method"] == "session/update" {
            let sid = fr["params"]["sessionId"].as_str().unwrap_or("");
            let kind = fr["params"]["update"]["sessionUpdate"]
                .as_str()
                .unwrap_or("")
                .to_string();
            for ((c, _), o) in self.open.iter_mut() {
                if *c == conn && o.1 == sid {
                    o.3.push((kind.clone(), op.index));
                }
            }
            return None;
        }
        // A request of the Agent's (`session/request_permission #4`) shares the id
        // space of nothing the Client sent: only a response answers a resume.
        let id = fr["id"].as_u64().filter(|_| fr.get("method").is_none())?;
        let (req, sid, replay, ups) = self.open.remove(&(conn, id))?;
        // An update the transport lost (a dead update stream, a lost exchange): what the
        // Agent wrote cannot be read off the wire, so its order is not judged.
        if fr.get("error").is_some() || ups.iter().any(|(k, _)| k == LOST) {
            return None;
        }
        misordered(req, op.index, &sid, replay, &ups)
    }

    /// A fault of the nemesis's that ends resumes or loses an update.
    fn fault(&mut self, op: &Op) {
        let val = &op.value;
        match op.f.as_str() {
            // A crash of either end (the Agent, the Client, a proxy or a node) ends its
            // connections unlogged: a resume open there can never be answered.
            op::CRASH => {
                let host = val["host_was"].as_str().or(val["host"].as_str());
                let ends = &self.ends;
                self.open.retain(|k, _| {
                    !host.is_some_and(|h| ends.get(&k.0).is_some_and(|e| e.contains(h)))
                });
            }
            // A fault lost the answer (a remote transport's lost exchange keeps the
            // connection): nothing more can come for it. A lost update leaves a gap.
            // A lost frame breaks its connection there (visibly or silently, as P7 reads
            // it): nothing after it is delivered, so a resume open there is not judged.
            logged::LOSE_FRAME => {
                let c = val["detail"]["conn"].as_u64().unwrap_or(0);
                self.open.retain(|k, _| k.0 != c);
            }
            // Only a fault that loses the frame: a stall or reorder delays it (X4 judges the
            // order frames were written in), a transient error is an answer.
            logged::LOSE_EXCHANGE => {
                let d = &val["detail"];
                let c = d["conn"].as_u64().unwrap_or(0);
                if d["frame"]["method"] == "session/update" {
                    lost_update(&mut self.open, c, op.index);
                } else if let Some(id) = d["frame"]["id"].as_u64() {
                    if d["frame"].get("method").is_none() {
                        self.open.remove(&(c, id));
                    }
                }
            }
            _ => {}
        }
    }
}

/// What is out of order in the answer (op `answer`) to the resume of `sid` written at op
/// `req` (`replay`: with `replayFrom`), given the updates `ups` seen on its connection since:
/// a `replay_complete` missing, doubled or where none belongs; a `state_update` inside the
/// replay; no `state_update` snapshot before the answer. The witnesses and the message.
fn misordered(
    req: usize,
    answer: usize,
    sid: &str,
    replay: bool,
    ups: &[(String, usize)],
) -> Option<(Vec<usize>, String)> {
    let rc: Vec<usize> = ups
        .iter()
        .filter(|(k, _)| k == "replay_complete")
        .map(|(_, i)| *i)
        .collect();
    let after = rc.first().copied().unwrap_or(req);
    let snapshot = ups.iter().any(|(k, i)| k == "state_update" && *i > after);
    // A state_update between replayed items: a live update inside the replay. (One
    // before the first replayed item may have crossed the request in the pipe.)
    let first_item = ups
        .iter()
        .find(|(k, _)| k != "state_update" && k != "replay_complete")
        .map(|(_, i)| *i);
    let early_state = ups.iter().find(|(k, i)| {
        k == "state_update"
            && first_item.is_some_and(|f| *i > f)
            && rc.first().is_some_and(|r| i < r)
    });
    if replay && rc.is_empty() {
        Some((vec![req, answer], format!("session/resume of {sid} with replayFrom was answered (op {}) without a replay_complete", answer)))
    } else if replay && rc.len() > 1 {
        Some((
            vec![req, rc[0], rc[1]],
            format!(
                "session/resume of {sid} got {} replay_complete updates (exactly one)",
                rc.len()
            ),
        ))
    } else if !replay && !rc.is_empty() {
        Some((vec![req, rc[0]], format!("session/resume of {sid} without replayFrom got a replay_complete (never without replayFrom)")))
    } else if let (true, Some((_, i))) = (replay, early_state) {
        Some((vec![req, *i, rc[0]], format!("session/resume of {sid}: a state_update (op {i}) came inside the replay, before replay_complete (live updates wait during the replay)")))
    } else if !snapshot {
        Some((vec![req, answer], format!("session/resume of {sid} was answered (op {}) with no state_update snapshot {}before it", answer, if replay { "after replay_complete and " } else { "" })))
    } else {
        None
    }
}
