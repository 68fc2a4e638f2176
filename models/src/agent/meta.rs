//! Session metadata set or read outside a turn: `session/set_title`, `session/archive`,
//! `session/unarchive` and `session/options` (crate features `unstable_session_set_title`,
//! `unstable_session_archive`, `unstable_session_options`).
//!
//! Minimal and as the crate's v2 doc comments say: a session the Agent does not know gets
//! `-32002`; a repeat answers with current state and changes nothing (their class, idempotent);
//! `stored` and `adapter` persist a change before answering it. The Agent does not advertise
//! the capabilities in `initialize`, so the answers every scenario already gets stay as they
//! were: only a Client that sends these anyway (the audit, the matrix) meets them.

use agent_client_protocol_schema::v2::{self, SessionArchiveFilter};
use serde_json::{json, Value};

use super::{to_value, ModelAgent};
use crate::action::{effect, Action, ConnId};
use crate::op;
use crate::rpc::{self, code};

impl ModelAgent {
    fn unknown_session(&self, conn: ConnId, id: &Value, sid: &str, out: &mut Vec<Action>) {
        self.fail(
            conn,
            id,
            code::RESOURCE_NOT_FOUND,
            "Session not found",
            Some(json!({"sessionId": sid})),
            out,
        );
    }

    /// `session/set_title`: stores the trimmed title and answers with it; an empty one gets
    /// `-32602`. The session need not be active on the connection.
    pub(super) fn set_title(
        &mut self,
        conn: ConnId,
        id: Value,
        r: &v2::SetSessionTitleRequest,
        out: &mut Vec<Action>,
    ) {
        let sid = r.session_id.0.to_string();
        let title = r.title.trim().to_string();
        let persists = self.persists();
        let Some(s) = self.sessions.get_mut(&sid) else {
            return self.unknown_session(conn, &id, &sid, out);
        };
        if title.is_empty() {
            return self.fail(
                conn,
                &id,
                code::INVALID_PARAMS,
                "Invalid params",
                Some(json!("title: empty after trimming")),
                out,
            );
        }
        if s.title.as_deref() != Some(title.as_str()) {
            s.title = Some(title.clone());
            if persists {
                out.push(Action::Persist {
                    record: json!({"t": "title", "id": sid, "title": title}),
                    sync: true,
                });
            }
            out.push(effect(
                op::SESSION_META,
                json!({"session": sid, "title": title}),
            ));
        }
        let resp = v2::SetSessionTitleResponse::new(title);
        self.send(conn, rpc::ok(&id, to_value(resp)), out);
    }

    /// `session/archive` (`on`) and `session/unarchive`: archiving closes the session on every
    /// connection where it is active, as `session/close` would, then hides it from the default
    /// `session/list`. Archiving an archived session, or unarchiving one that is not, succeeds
    /// and changes nothing.
    pub(super) fn archive(
        &mut self,
        conn: ConnId,
        id: Value,
        sid: &str,
        on: bool,
        out: &mut Vec<Action>,
    ) {
        let Some(s) = self.sessions.get(sid) else {
            return self.unknown_session(conn, &id, sid, out);
        };
        let was = s.archived;
        if on {
            let active: Vec<ConnId> = self
                .conns
                .iter()
                .filter(|(_, a)| a.contains(sid))
                .map(|(c, _)| *c)
                .collect();
            for c in active {
                self.close_on(c, sid, "archive", out);
            }
        }
        if was != on {
            if let Some(s) = self.sessions.get_mut(sid) {
                s.archived = on;
            }
            if self.persists() {
                out.push(Action::Persist {
                    record: json!({"t": "archive", "id": sid, "on": on}),
                    sync: true,
                });
            }
            out.push(effect(
                op::SESSION_META,
                json!({"session": sid, "archived": on}),
            ));
        }
        let line = if on {
            rpc::ok(&id, to_value(v2::ArchiveSessionResponse::new()))
        } else {
            rpc::ok(&id, to_value(v2::UnarchiveSessionResponse::new()))
        };
        self.send(conn, line, out);
    }

    /// `session/options`: the config options a session starts with (or, with `sessionId`, the
    /// ones it has), changing nothing.
    pub(super) fn options(
        &self,
        conn: ConnId,
        id: Value,
        r: &v2::SessionOptionsRequest,
        out: &mut Vec<Action>,
    ) {
        let autosave = match &r.session_id {
            None => false,
            Some(sid) => {
                let sid = sid.0.to_string();
                let Some(s) = self.sessions.get(&sid) else {
                    return self.unknown_session(conn, &id, &sid, out);
                };
                s.config
                    .get("autosave")
                    .and_then(|v| v["value"].as_bool())
                    .unwrap_or(false)
            }
        };
        let resp = v2::SessionOptionsResponse::new().config_options(vec![
            v2::SessionConfigOption::boolean("autosave", "Autosave", autosave),
        ]);
        self.send(conn, rpc::ok(&id, to_value(resp)), out);
    }

    /// Whether `session/list` with this filter lists a session archived or not.
    pub(super) fn listed(filter: Option<&SessionArchiveFilter>, archived: bool) -> bool {
        match filter {
            None | Some(SessionArchiveFilter::Exclude) => !archived,
            Some(SessionArchiveFilter::Only) => archived,
            Some(_) => true,
        }
    }

    /// The session's title and whether it is archived (for the matrix's ground truth).
    pub fn session_meta(&self, sid: &str) -> Option<(Option<String>, bool)> {
        self.sessions
            .get(sid)
            .map(|s| (s.title.clone(), s.archived))
    }
}
