//! The model Agent side of the matrix world: feeding it inputs, carrying out its actions,
//! its records on disk and crashes (unsynced records lost).

use serde_json::Value;

use super::space::*;
use super::world::note;
use super::world::*;
use super::*;
use crate::models::rpc::{self, Frame};
use crate::models::{Action, AgentInput, AgentModel, ConnId, ModelAgent};

impl EventWorld {
    pub(super) fn agent_do(&mut self, input: AgentInput, op_frame: bool) {
        let mut out = Vec::new();
        self.agent.handle(input, &mut out);
        let cut = self.crash_cut(&out, op_frame);
        let n = cut.unwrap_or(out.len());
        for a in out.into_iter().take(n) {
            self.exec(a);
        }
        if cut.is_some() {
            self.crash();
        }
    }

    /// The op's own record: the state change it persists.
    pub(super) fn own_record(&self, r: &Value) -> bool {
        match self.method {
            Method::New => r["t"] == "session",
            Method::Fork => r["t"] == "fork",
            Method::Delete => r["t"] == "delete",
            Method::Prompt => r["t"] == "msg" && r["text"] == OP_TEXT,
            Method::SetTitle => r["t"] == "title" && r["title"] == OP_TEXT,
            Method::Archive => r["t"] == "archive" && r["on"] == true,
            Method::Unarchive => r["t"] == "archive" && r["on"] == false,
            _ => false,
        }
    }

    /// Where an armed crash cuts this batch, if it is the batch that answers the op (for a
    /// notification: the one its arrival starts). Before the effect: before any of the batch's
    /// records up to the op's own (or, with no own record, before the whole batch); after: after
    /// the op's own record or a later one, before the response (with no own record: just before
    /// the response, or after the whole batch of a notification).
    pub(super) fn crash_cut(&mut self, out: &[Action], op_frame: bool) -> Option<usize> {
        if !self.armed || !self.fault.is_crash() {
            return None;
        }
        let r = if self.method.is_notification() {
            if !op_frame {
                return None;
            }
            out.len()
        } else {
            out.iter().position(|a| match a {
                Action::Send { conn, line } if !line.contains("\"method\"") => {
                    match rpc::parse(line) {
                        Ok(Frame::Response { id, .. }) => id
                            .as_u64()
                            .is_some_and(|i| self.attempts.contains(&(*conn, i))),
                        _ => false,
                    }
                }
                _ => false,
            })?
        };
        let records: Vec<usize> = (0..r)
            .filter(|&i| matches!(out[i], Action::Persist { .. }))
            .collect();
        let own = records.iter().position(|&i| match &out[i] {
            Action::Persist { record, .. } => self.own_record(record),
            _ => false,
        });
        let options: Vec<(usize, String)> = match (self.fault, own) {
            (Fault::CrashBeforeEffect, Some(o)) => (0..=o)
                .map(|k| (records[k], format!("after {k} of the batch's {} records, before the op's own", records.len())))
                .collect(),
            (Fault::CrashBeforeEffect, None) => vec![(0, "on arrival, before the batch".into())],
            (_, Some(o)) => (o..records.len())
                .map(|k| {
                    (
                        records[k] + 1,
                        format!("after {} of the batch's {} records (the op's own is #{}), before the response", k + 1, records.len(), o + 1),
                    )
                })
                .collect(),
            (_, None) if self.method.is_notification() => {
                vec![(r, "after the whole batch".into())]
            }
            (_, None) => vec![(r, format!("after {} records, just before the response", records.len()))],
        };
        let (cut, why) = options[self.var.crash_pick as usize % options.len()].clone();
        self.armed = false;
        self.fired = true;
        note!(
            self,
            "crash point chosen: {why} (the batch runs up to it, then the process dies)"
        );
        Some(cut)
    }

    pub(super) fn crash(&mut self) {
        self.crashed = true;
        self.boot += 1;
        self.disk.crash();
        note!(
            self,
            "AGENT CRASH; restart boot {} from {} durable records",
            self.boot,
            self.disk.records().len()
        );
        self.agent =
            ModelAgent::recover(self.cfg.clone(), self.boot, self.seed, self.disk.records());
        for conn in std::mem::take(&mut self.agent_conns) {
            // Frames written before the crash arrive first (same time, earlier sequence).
            self.at(self.now + LATENCY_MS, Ev::Eof { conn });
        }
        self.active.clear();
        self.autosave.clear();
    }

    pub(super) fn exec(&mut self, a: Action) {
        match a {
            Action::Send { conn, line } => {
                // Only responses matter here; most lines are notifications (not parsed).
                let response = !line.contains("\"method\"");
                if let Some(Ok(Frame::Response { id, result })) =
                    response.then(|| rpc::parse(&line))
                {
                    if let Some(id) = id.as_u64() {
                        self.mirror_answer(conn, id, &result);
                        if self.armed
                            && self.fault == Fault::ResponseLost
                            && self.attempts.contains(&(conn, id))
                        {
                            self.armed = false;
                            self.fired = true;
                            note!(self, "A->C c{conn} LOST (response-lost) {line}");
                            return;
                        }
                    }
                }
                self.at(self.now + LATENCY_MS, Ev::ToClient { conn, line });
            }
            Action::Persist { record, sync } => {
                note!(
                    self,
                    "agent persists {record}{}",
                    if sync { " (synced)" } else { " (not synced)" }
                );
                self.disk.write(record, sync);
            }
            Action::Timer { id, after_ms } => {
                let boot = self.boot;
                self.at(self.now + after_ms, Ev::AgentTimer { boot, id });
            }
            Action::Effect(e) => {
                let s = e.value["session"].as_str().unwrap_or_default().to_string();
                let c = e.value["conn"].as_u64().unwrap_or_default();
                match e.f {
                    "activate" => {
                        self.active.insert((s, c));
                    }
                    "deactivate" => {
                        self.active.remove(&(s, c));
                    }
                    "session-delete" => {
                        self.active.retain(|(x, _)| *x != s);
                        self.autosave.remove(&s);
                    }
                    _ => {}
                }
                note!(self, "agent effect {} {}", e.f, e.value);
                self.effects.push((self.boot, e));
            }
            Action::Point(_)
            | Action::Connect { .. }
            | Action::Close { .. }
            | Action::Store { .. } => {}
        }
    }

    /// Ground truth from the Agent's own answers (delivered or not): `autosave` per session.
    pub(super) fn mirror_answer(&mut self, conn: ConnId, id: u64, result: &Result<Value, Value>) {
        let (Some((m, p, _)), Ok(v)) = (self.sent.get(&(conn, id)), result) else {
            return;
        };
        if m != "session/set_config_option" {
            return;
        }
        let sid = p["sessionId"].as_str().unwrap_or_default().to_string();
        let on = v["configOptions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|o| o["configId"] == "autosave")
            .and_then(|o| o["currentValue"].as_bool());
        if let Some(on) = on {
            self.autosave.insert(sid, on);
        }
    }
}
