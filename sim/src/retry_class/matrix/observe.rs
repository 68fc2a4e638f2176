//! Observing a matrix run: the Agent's sessions and effects, and the run's [`Outcome`].

use std::collections::BTreeSet;

use serde_json::Value;

use super::space::*;
use super::world::*;
use crate::history::op;
use crate::models::rpc;
use crate::models::ConnId;

/// What an op did: (the duplicate effect, if any; whether its effect happened; what was
/// seen, for the outcome's line).
type Effect = (Option<String>, bool, String);

impl EventWorld {
    pub(super) fn sessions(&self) -> BTreeSet<String> {
        self.agent
            .retained()
            .as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    }

    pub(super) fn s_active(&self) -> bool {
        self.client_conn
            .is_some_and(|c| self.active.contains(&(self.sid.clone(), c)))
    }

    pub(super) fn observe(&self) -> AfterOp {
        AfterOp {
            active: self.s_active(),
            exists: self.sessions().contains(&self.sid),
            autosave: self.autosave.get(&self.sid).copied(),
            synced: self.resume_synced(),
            meta: self.agent.session_meta(&self.sid),
        }
    }

    /// X4: on the connection of the op's first successful answer, the Client got a
    /// `replay_complete` and then a `state_update` for the session before that answer.
    pub(super) fn resume_synced(&self) -> bool {
        let Some((conn, at)) = self
            .attempts
            .iter()
            .find_map(|k| match self.answers.get(k) {
                Some((t, Ok(_))) => Some((k.0, *t)),
                _ => None,
            })
        else {
            return false;
        };
        let ups: Vec<&Value> = self
            .updates
            .iter()
            .filter(|(t, c, p)| *c == conn && *t <= at && p["sessionId"] == self.sid.as_str())
            .map(|(_, _, p)| &p["update"]["sessionUpdate"])
            .collect();
        let rc = ups.iter().position(|u| *u == "replay_complete");
        rc.is_some_and(|i| ups[i..].iter().any(|u| *u == "state_update"))
    }

    /// Message ids inserted for any of these (conn, id) attempts, in any process.
    pub(super) fn mids_of(&self, attempts: &[(ConnId, u64)]) -> Vec<String> {
        self.effects
            .iter()
            .filter(|(_, e)| e.f == op::INSERT)
            .filter(|(_, e)| {
                attempts.iter().any(|(c, i)| {
                    e.value["conn"].as_u64() == Some(*c) && e.value["id"].as_u64() == Some(*i)
                })
            })
            .filter_map(|(_, e)| e.value["messageId"].as_str().map(String::from))
            .collect()
    }

    /// Retained messages of the session whose id is in `mids` (entries, not distinct ids: a
    /// derived id inserted twice counts twice).
    pub(super) fn retained_count(&self, mids: &[String]) -> usize {
        self.agent.retained()[self.sid.as_str()]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter(|m| m.as_str().is_some_and(|m| mids.iter().any(|x| x == m)))
                    .count()
            })
            .unwrap_or(0)
    }

    /// How a turn for `mid` ended: its first `turn-end` stop reason.
    pub(super) fn turn_end(&self, mid: &str) -> Option<String> {
        self.effects.iter().find_map(|(_, e)| {
            (e.f == op::TURN_END && e.value["messageId"] == mid)
                .then(|| e.value["stopReason"].as_str().unwrap_or("?").to_string())
        })
    }

    pub(super) fn next_ok(&self) -> bool {
        self.next
            .and_then(|k| self.answers.get(&k))
            .is_some_and(|(_, r)| r.is_ok())
    }

    /// The outcome (see [`Outcome`] for the order) and one line why.
    pub(super) fn classify(&self) -> (Outcome, String) {
        let (dup, happened, what) = self.effect();
        if let Some(d) = dup {
            return (Outcome::DuplicateEffect, d);
        }
        if let Some(e) = self.client_error() {
            return (
                Outcome::SurfacedError,
                format!("the Client shows an error ({e}); {what}"),
            );
        }
        if happened {
            (Outcome::Ok, format!("success; {what}"))
        } else {
            (
                Outcome::SilentDrop,
                format!("the effect did not happen and the Client has no error; {what}"),
            )
        }
    }

    /// The error the Client shows for the op, if any.
    fn client_error(&self) -> Option<String> {
        match (&self.state, self.method.is_notification()) {
            (_, true) => self
                .session_lost
                .then(|| "its session was lost on reconnect".into()),
            (OpState::Answered(Ok(_)), _) => None,
            (OpState::Answered(Err(e)), _) => Some(format!(
                "error answer {}",
                rpc::error_code(e)
                    .map(|c| c.to_string())
                    .unwrap_or_default()
            )),
            (OpState::GaveUp(why), _) => Some(format!("gave up: {why}")),
            (s, _) => Some(format!("no answer at the end ({s:?})")),
        }
    }

    /// What the op did, by method.
    fn effect(&self) -> Effect {
        match self.method {
            Method::Initialize | Method::List | Method::Status | Method::Options => (
                None,
                matches!(self.state, OpState::Answered(Ok(_))),
                "the answer".into(),
            ),
            Method::New | Method::Fork => {
                let n = self.sessions().difference(&self.pre_sessions).count();
                (
                    (n >= 2).then(|| format!("{n} sessions created for one request")),
                    n >= 1,
                    format!("{n} session(s) created"),
                )
            }
            Method::Prompt => {
                let n = self.retained_count(&self.mids_of(&self.attempts));
                (
                    (n >= 2).then(|| format!("{n} user messages retained for one submission")),
                    n >= 1,
                    format!("{n} user message(s) retained"),
                )
            }
            Method::Resume => (
                (self.next_ok() && self.s_active())
                    .then(|| "the session is active again after the Client's close".into()),
                self.after_op.active && self.after_op.synced,
                format!(
                    "session active {}, replay_complete + snapshot before the answer {}",
                    self.after_op.active, self.after_op.synced
                ),
            ),
            Method::Close => (
                (self.next_ok() && !self.s_active())
                    .then(|| "the session is closed again after the Client resumed it".into()),
                !self.after_op.active,
                format!("session active after the op {}", self.after_op.active),
            ),
            Method::Delete => (
                None,
                !self.after_op.exists,
                format!("session exists after the op {}", self.after_op.exists),
            ),
            Method::SetConfigOption => (
                (self.next_ok() && self.autosave.get(&self.sid) == Some(&true))
                    .then(|| "autosave is true again after the Client set it false".into()),
                self.after_op.autosave == Some(true),
                format!("autosave after the op {:?}", self.after_op.autosave),
            ),
            Method::SetTitle => self.title_effect(),
            Method::Archive | Method::Unarchive => self.archive_effect(),
            Method::Cancel => self.cancel_effect(),
            Method::CancelRequest => {
                let n = self.p2.map(|p| self.mids_of(&[p]).len()).unwrap_or(0);
                (
                    self.next_harmed(),
                    n == 0,
                    format!("the named prompt inserted {n} time(s)"),
                )
            }
        }
    }

    fn title_effect(&self) -> Effect {
        let op_title = |m: &Option<(Option<String>, bool)>| {
            m.as_ref().and_then(|x| x.0.as_deref()) == Some(OP_TEXT)
        };
        (
            (self.next_ok() && op_title(&self.agent.session_meta(&self.sid)))
                .then(|| "the title is the op's again after the Client retitled".into()),
            op_title(&self.after_op.meta),
            format!("title after the op {:?}", self.after_op.meta),
        )
    }

    fn archive_effect(&self) -> Effect {
        let on = self.method == Method::Archive;
        let now = self.agent.session_meta(&self.sid).map(|m| m.1);
        (
            (self.next_ok() && now == Some(on)).then(|| {
                format!(
                    "the session is {} again after the Client's {}",
                    if on { "archived" } else { "unarchived" },
                    if on { "unarchive" } else { "archive" }
                )
            }),
            self.after_op.meta.as_ref().map(|m| m.1) == Some(on),
            format!("(title, archived) after the op {:?}", self.after_op.meta),
        )
    }

    fn cancel_effect(&self) -> Effect {
        let busy = self.busy_mid.as_deref().and_then(|m| self.turn_end(m));
        let happened = match busy.as_deref() {
            Some("cancelled") => true,
            Some(_) => false,
            // The process died with the turn: stopped, though not by the cancel.
            None => self.crashed,
        };
        (
            self.next_harmed(),
            happened,
            format!(
                "the running turn ended {}",
                busy.unwrap_or_else(|| "with the process".into())
            ),
        )
    }

    /// The Client's next prompt was withdrawn (`-32800`) or its turn cancelled.
    pub(super) fn next_harmed(&self) -> Option<String> {
        let next = self.next?;
        if let Some((_, Err(e))) = self.answers.get(&next) {
            if rpc::error_code(e) == Some(rpc::code::REQUEST_CANCELLED) {
                return Some("the Client's next prompt was withdrawn (-32800)".into());
            }
        }
        self.mids_of(&[next]).iter().find_map(|m| {
            (self.turn_end(m).as_deref() == Some("cancelled"))
                .then(|| "the turn of the Client's next prompt was cancelled".into())
        })
    }
}
