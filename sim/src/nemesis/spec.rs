//! One fault: its kind, when it fires ([`Trigger`]) and its settings ([`FaultSpec`], one
//! `[[fault]]` entry of a scenario, or one fault the swarm drew), checked against what its kind
//! takes ([`super::kinds`]), and how one reads as a line ([`fault_line`]).

use acp_chaos_models::{methods, Point};
use serde::{Deserialize, Serialize};

use super::kinds::FaultKind;
use super::kinds::{Fires, Given, Setting};
use super::trigger::{FrameTrigger, Sender, Side, Trigger};

/// One `[[fault]]` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultSpec {
    /// The fault kind.
    pub kind: FaultKind,
    /// When it fires.
    pub on: Trigger,
    /// `lose-frame`: nobody sees the close; both heartbeats must notice.
    #[serde(default)]
    pub silent: bool,
    /// `lose-frame`, `restart-client` on a cluster of two nodes or more: the load balancer
    /// moves the Client, so its next connection goes to another node than the one serving it
    /// when the fault fired (without it the run's routing stream picks, and may pick the same
    /// node). No effect on one node or without a cluster. Left out of a plan's text when
    /// false, so older plans read the same.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reroute: bool,
    /// `stall-frame`: how long the connection stalls.
    pub stall_ms: Option<u64>,
    /// `partition`: when it heals.
    pub heal_after_ms: Option<u64>,
    /// `crash-agent`, `restart-client`: when the process starts again.
    pub restart_after_ms: Option<u64>,
    /// `partition-oneway`: which direction is cut.
    #[serde(default)]
    pub direction: Option<Direction>,
}

/// The cut direction of a one-way partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Direction {
    /// Frames from the Client to its next hop are lost; the other way flows.
    ClientToAgent,
    /// Frames from the next hop to the Client are lost; the other way flows.
    AgentToClient,
}

/// What is wrong with a frame trigger's method, as "field`: reason": `attempt_of` on another
/// method than `session/prompt`, a method its sender does not send, or the response to a
/// notification.
fn frame_wrong(f: &FrameTrigger) -> Option<String> {
    if f.attempt_of.is_some() && f.method != "session/prompt" {
        return Some("on.attempt_of`: goes with `frame` and `method = \"session/prompt\"`".into());
    }
    // A frame trigger names a method its sender sends: the Client's (methods::METHODS) or,
    // with `by = "agent"`, the Agent's (methods::AGENT_METHODS).
    let m = f.method.as_str();
    let (info, table) = match f.by {
        Some(Sender::Agent) => (methods::agent_method(m), methods::AGENT_METHODS),
        _ => (methods::get(m), methods::METHODS),
    };
    let Some(info) = info else {
        let known: Vec<&str> = table.iter().map(|x| x.name).collect();
        return Some(format!(
            "on.method`: unknown method `{m}` (known: {})",
            known.join(", ")
        ));
    };
    (info.notification && f.side == Side::Response)
        .then(|| format!("on.frame`: `{m}` is a notification: it has no response"))
}

impl FaultSpec {
    /// A fault of `kind` fired `on` a trigger, with no settings yet (the caller sets what its
    /// kind takes).
    pub fn new(kind: FaultKind, on: Trigger) -> FaultSpec {
        FaultSpec {
            kind,
            on,
            silent: false,
            reroute: false,
            stall_ms: None,
            heal_after_ms: None,
            restart_after_ms: None,
            direction: None,
        }
    }

    /// A fault of `kind` fired `on` a trigger, each duration it takes at its default
    /// ([`FaultKind::default_ms`]): what exploration places.
    pub fn placed(kind: FaultKind, on: Trigger) -> FaultSpec {
        let ms = |s| kind.default_ms(s);
        FaultSpec {
            stall_ms: ms(Setting::StallMs),
            heal_after_ms: ms(Setting::HealAfterMs),
            restart_after_ms: ms(Setting::RestartAfterMs),
            ..FaultSpec::new(kind, on)
        }
    }

    /// The duration setting `s` in force: the one given, or the kind's default; 0 for a
    /// setting the kind does not take.
    pub fn ms(&self, s: Setting) -> u64 {
        let given = match s {
            Setting::StallMs => self.stall_ms,
            Setting::RestartAfterMs => self.restart_after_ms,
            Setting::HealAfterMs => self.heal_after_ms,
            Setting::Silent | Setting::Reroute | Setting::Direction => None,
        };
        given.or(self.kind.default_ms(s)).unwrap_or(0)
    }

    /// The duration setting `s` as given (`None`: the kind's default), to set; `None` for a
    /// setting that is no duration.
    pub fn ms_mut(&mut self, s: Setting) -> Option<&mut Option<u64>> {
        match s {
            Setting::StallMs => Some(&mut self.stall_ms),
            Setting::RestartAfterMs => Some(&mut self.restart_after_ms),
            Setting::HealAfterMs => Some(&mut self.heal_after_ms),
            Setting::Silent | Setting::Reroute | Setting::Direction => None,
        }
    }

    /// What is wrong with this fault entry, as "field`: reason", or `None`.
    ///
    /// One check per field, in the order errors are reported.
    pub fn check(&self) -> Option<String> {
        let t = &self.on;
        // The trigger's shape was checked as it was read ([`Trigger`]'s `try_from`).
        if t.nth() == 0 {
            return Some("on.nth`: occurrences count from 1".into());
        }
        let frame = t.frame();
        let attempt_of = frame.and_then(|f| f.attempt_of);
        if t.submission() == Some(0) || attempt_of == Some(0) {
            return Some("on.submission`: submissions count from 1".into());
        }
        if let Some(f) = frame {
            if let Some(wrong) = frame_wrong(f) {
                return Some(wrong);
            }
        }
        if let Some(wrong) = self.settings_wrong() {
            return Some(wrong);
        }
        for (field, v) in [
            ("stall_ms", self.stall_ms),
            ("heal_after_ms", self.heal_after_ms),
            ("restart_after_ms", self.restart_after_ms),
            ("on.at_ms", t.at_ms()),
        ] {
            if let Some(rule) = v.and_then(|v| crate::bounds::MS.check(v)) {
                return Some(format!("{field}`: {rule}"));
            }
        }
        self.trigger_wrong()
    }

    /// Whether the entry gives setting `s`.
    fn gives(&self, s: Setting) -> bool {
        match s {
            Setting::Silent => self.silent,
            Setting::Reroute => self.reroute,
            Setting::StallMs => self.stall_ms.is_some(),
            Setting::Direction => self.direction.is_some(),
            Setting::RestartAfterMs => self.restart_after_ms.is_some(),
            Setting::HealAfterMs => self.heal_after_ms.is_some(),
        }
    }

    /// A setting given that the kind does not take ([`FaultKind::settings`]), in
    /// [`Setting::ALL`]'s order, or a one-way partition without its direction.
    fn settings_wrong(&self) -> Option<String> {
        for s in Setting::ALL {
            let given = self.gives(s);
            match self.kind.takes(s) {
                None if given => {
                    let takers: Vec<&str> = FaultKind::ALL
                        .into_iter()
                        .filter(|k| k.takes(s).is_some())
                        .map(FaultKind::as_str)
                        .collect();
                    return Some(format!("{}`: only for {}", s.field(), takers.join(", ")));
                }
                Some(Given::Required) if !given && s == Setting::Direction => {
                    return Some(format!(
                        "direction`: required for {} (client-to-agent | agent-to-client)",
                        self.kind.as_str()
                    ));
                }
                _ => {}
            }
        }
        None
    }

    /// What the kind needs of its trigger and settings beyond their shapes: a frame for a
    /// frame fault ([`FaultKind::fires`]), each required setting, `transient-error`'s prompt
    /// request, and a protocol point the kind fires at ([`FaultKind::points`]).
    fn trigger_wrong(&self) -> Option<String> {
        let (t, kind) = (&self.on, self.kind);
        if kind.fires() == Fires::AtFrame && t.frame().is_none() {
            return Some("on`: a frame fault needs `frame` and `method`".into());
        }
        if kind.fires() == Fires::AtPoint && t.point().is_none() {
            return Some(format!("on`: {} needs `point`", kind.as_str()));
        }
        for t in kind.settings() {
            if t.given == Given::Required && !self.gives(t.setting) {
                return Some(format!(
                    "{}`: required for {}",
                    t.setting.field(),
                    kind.as_str()
                ));
            }
        }
        let prompt_request = t
            .frame()
            .is_some_and(|f| f.side == Side::Request && f.method == "session/prompt");
        if kind.fires() == Fires::AtPromptRequest && !prompt_request {
            return Some(format!(
                "on`: {} needs frame = \"request\", method = \"session/prompt\"",
                kind.as_str()
            ));
        }
        let p = t.point().filter(|p| !kind.points().contains(p))?;
        let at = |p: Point| -> Vec<&str> {
            FaultKind::ALL
                .into_iter()
                .filter(|k| k.points().contains(&p))
                .map(FaultKind::as_str)
                .collect()
        };
        Some(if kind.points().is_empty() {
            let mut takers: Vec<&str> = FaultKind::ALL
                .into_iter()
                .filter(|k| !k.points().is_empty())
                .map(FaultKind::as_str)
                .collect();
            let last = takers.pop().unwrap_or_default();
            format!(
                "on.point`: only {} and {last} fire at a protocol point",
                takers.join(", ")
            )
        } else if !Point::AGENT.contains(&p) {
            // The store's point: say whose it is.
            let mut kinds = at(p);
            let last = kinds.pop().unwrap_or_default();
            format!(
                "on.point`: `{}` is the store's point: only {} and {last} fire there",
                p.as_str(),
                kinds.join(", ")
            )
        } else {
            let points: Vec<String> = kind
                .points()
                .iter()
                .map(|p| format!("`{}`", p.as_str()))
                .collect();
            format!(
                "on.point`: {} fires only at {}",
                kind.as_str(),
                points.join(" or ")
            )
        })
    }
}

/// A frame trigger in words, lower case: "request of session/prompt #2".
fn frame_words(t: &FrameTrigger) -> String {
    let (side, m, nth) = (t.side, &t.method, t.nth);
    let words = match (t.attempt_of, t.by) {
        (Some(s), _) => format!("{side:?} of {m} of submission {s} attempt #{nth}"),
        (None, Some(Sender::Agent)) => match side {
            Side::Request => format!("{m} #{nth} from the agent"),
            Side::Response => format!("response to the agent's {m} #{nth}"),
        },
        (None, _) => format!("{side:?} of {m} #{nth}"),
    };
    words.to_lowercase()
}

/// A fault as one readable line.
pub fn fault_line(f: &FaultSpec) -> String {
    let on = match &f.on {
        Trigger::Frame(t) => frame_words(t),
        Trigger::Point { point, nth } => format!("point {} #{nth}", point.as_str()),
        Trigger::Submission { submission, .. } => format!("submission {submission}"),
        Trigger::At { at_ms, .. } => format!("at {at_ms}ms"),
    };
    let mut extra = String::new();
    // A kind that may break silently says which way it broke.
    if f.kind.takes(Setting::Silent).is_some() {
        extra = if f.silent {
            " (silent)".into()
        } else {
            " (visible close)".into()
        };
    }
    if f.reroute {
        extra.push_str(" reroute");
    }
    if let Some(d) = f.direction {
        extra.push_str(match d {
            Direction::ClientToAgent => " direction=client-to-agent",
            Direction::AgentToClient => " direction=agent-to-client",
        });
    }
    for (k, v) in [
        ("stall_ms", f.stall_ms),
        ("heal_after_ms", f.heal_after_ms),
        ("restart_after_ms", f.restart_after_ms),
    ] {
        if let Some(v) = v {
            extra.push_str(&format!(" {k}={v}"));
        }
    }
    format!("{} on {on}{extra}", f.kind.as_str())
}
