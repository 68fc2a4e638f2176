//! X4 resume order, judged on the histories `acp-chaos probe` records from real Agent
//! processes: [`x4_resume_order`].

use std::collections::BTreeMap;

use acp_chaos_models::Party;

use super::verdict::{Status, Verdict};
use crate::history::{op, process, History};

/// X4 resume order, from the frames on each connection: a `session/resume` answered with
/// success got, before its response and for its session, with `replayFrom`: the replayed
/// history, exactly one `replay_complete`, then a `state_update` snapshot; without it: no
/// `replay_complete` and a `state_update` snapshot. A resume never answered on a connection
/// that stayed open is unknown (what never came).
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
    // (conn, id) → (op, session, replay, updates seen: (kind, op)).
    type Open = (usize, String, bool, Vec<(String, usize)>);
    let mut open: BTreeMap<(u64, u64), Open> = BTreeMap::new();
    let mut unknown: Option<(usize, String)> = None;
    for op in &h.ops {
        let val = &op.value;
        let conn = val["conn"].as_u64().unwrap_or(0);
        match (op.process.as_str(), op.f.as_str()) {
            (process::NET, op::SEND) if val["from"] == "client" => {
                let fr = &val["frame"];
                if let (Some("session/resume"), Some(id)) =
                    (fr["method"].as_str(), fr["id"].as_u64())
                {
                    let sid = fr["params"]["sessionId"].as_str().unwrap_or("").to_string();
                    let replay = fr["params"]["replayFrom"].is_object();
                    open.insert((conn, id), (op.index, sid, replay, Vec::new()));
                }
            }
            (process::NET, op::SEND) if val["from"] == "agent" => {
                let fr = &val["frame"];
                if fr["method"] == "session/update" {
                    let sid = fr["params"]["sessionId"].as_str().unwrap_or("");
                    let kind = fr["params"]["update"]["sessionUpdate"]
                        .as_str()
                        .unwrap_or("")
                        .to_string();
                    for ((c, _), o) in open.iter_mut() {
                        if *c == conn && o.1 == sid {
                            o.3.push((kind.clone(), op.index));
                        }
                    }
                    continue;
                }
                let Some(id) = fr["id"].as_u64() else {
                    continue;
                };
                let Some((req, sid, replay, ups)) = open.remove(&(conn, id)) else {
                    continue;
                };
                if fr.get("error").is_some() {
                    continue;
                }
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
                let bad = if replay && rc.is_empty() {
                    Some((vec![req, op.index], format!("session/resume of {sid} with replayFrom was answered (op {}) without a replay_complete", op.index)))
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
                    Some((vec![req, op.index], format!("session/resume of {sid} was answered (op {}) with no state_update snapshot {}before it", op.index, if replay { "after replay_complete and " } else { "" })))
                } else {
                    None
                };
                if let Some((w, message)) = bad {
                    v.status = Status::Invalid;
                    v.party = Some(Party::Agent);
                    v.witnesses = w;
                    v.message = message;
                    return v;
                }
            }
            (_, op::CONN_END) => open.retain(|k, _| k.0 != conn),
            _ => {}
        }
    }
    if let Some(((_, id), (req, sid, _, _))) = open.iter().next() {
        unknown = Some((
            *req,
            format!("session/resume #{id} of {sid} was never answered"),
        ));
    }
    if let Some((w, m)) = unknown {
        v.status = Status::Unknown;
        v.witnesses = vec![w];
        v.message = m;
    }
    v
}
