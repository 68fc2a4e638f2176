//! Scenario validation: every check a parsed scenario must pass, each error naming the file,
//! the line and the field ([`ScenarioError::Parse`]).

use acp_chaos_models::Design;

use super::format::Transport;
use super::{Scenario, ScenarioError};
use crate::bounds;
use crate::nemesis::{Reach, Topology};

/// Where a validation error points: the file and its text (to find the field's line).
struct At<'a> {
    scenario: &'a Scenario,
    text: &'a str,
}

impl At<'_> {
    /// An error at the `nth` line holding `needle`.
    fn err(&self, needle: &str, nth: usize, message: String) -> ScenarioError {
        ScenarioError::Parse {
            path: self.scenario.path.clone(),
            line: find_line(self.text, needle, nth),
            message,
        }
    }
}

impl Scenario {
    /// Check a parsed scenario; `text` is its file's text (for line numbers). The checks run
    /// in this order, and the first that fails is reported.
    pub(super) fn validate(&self, text: &str) -> Result<(), ScenarioError> {
        let at = At {
            scenario: self,
            text,
        };
        self.check_settings(&at)?;
        self.check_references(&at)?;
        self.check_bounds(&at)?;
        self.check_faults(&at)
    }

    /// Settings in range: designs, probabilities, sessions, the disk, the topology, min/max pairs.
    fn check_settings(&self, at: &At<'_>) -> Result<(), ScenarioError> {
        let err = |needle: &str, nth: usize, message: String| at.err(needle, nth, message);
        if self.agent.designs.is_empty() {
            return Err(err(
                "designs",
                0,
                "field `agent.designs`: name at least one design".into(),
            ));
        }
        self.check_rates(at)?;
        self.check_setting_ranges(at)?;
        self.check_topology(at)?;
        self.check_min_max(at)
    }

    /// Every rate a probability.
    fn check_rates(&self, at: &At<'_>) -> Result<(), ScenarioError> {
        let err = |needle: &str, nth: usize, message: String| at.err(needle, nth, message);
        for (v, name) in [
            (self.agent.tool_rate, "tool_rate"),
            (self.agent.permission_rate, "permission_rate"),
            (self.agent.fail_rate, "fail_rate"),
            (self.workload.command_rate, "command_rate"),
            (self.workload.repeat_rate, "repeat_rate"),
            (self.workload.cancel_rate, "cancel_rate"),
            (self.workload.stop_rate, "stop_rate"),
            (self.workload.close_rate, "close_rate"),
            (self.workload.fork_rate, "fork_rate"),
            (self.client.unkeyed_rate, "unkeyed_rate"),
        ] {
            if !bounds::is_rate(v) {
                return Err(err(
                    name,
                    0,
                    format!("field `{name}`: a probability from 0 to 1"),
                ));
            }
        }
        Ok(())
    }

    /// Settings inside their bounds: permission wait, sessions, block size, nodes,
    /// submissions, latency.
    fn check_setting_ranges(&self, at: &At<'_>) -> Result<(), ScenarioError> {
        let err = |needle: &str, nth: usize, message: String| at.err(needle, nth, message);
        for (v, bound, needle, field) in [
            (
                self.client.permission_ms,
                bounds::PERMISSION_MS,
                "permission_ms",
                "client.permission_ms",
            ),
            (
                self.workload.sessions as u64,
                bounds::SESSIONS,
                "sessions",
                "workload.sessions",
            ),
            (
                self.disk.block_size.unwrap_or(bounds::BLOCK_SIZE.min),
                bounds::BLOCK_SIZE,
                "block_size",
                "disk.block_size",
            ),
            (
                self.topology.nodes as u64,
                bounds::NODES,
                "nodes",
                "topology.nodes",
            ),
            (
                u64::from(self.workload.submissions),
                bounds::SUBMISSIONS,
                "submissions",
                "workload.submissions",
            ),
            (
                self.timing.latency_ms_min,
                bounds::LATENCY_MS,
                "latency_ms_min",
                "timing.latency_ms_min",
            ),
            (
                self.timing.latency_ms_max,
                bounds::LATENCY_MS,
                "latency_ms_max",
                "timing.latency_ms_max",
            ),
        ] {
            if let Some(rule) = bound.check(v) {
                return Err(err(needle, 0, format!("field `{field}`: {rule}")));
            }
        }
        Ok(())
    }

    /// What the topology cannot hold: stdio with a proxy, a watcher or the cluster; a
    /// retention window on the cluster.
    fn check_topology(&self, at: &At<'_>) -> Result<(), ScenarioError> {
        let err = |needle: &str, nth: usize, message: String| at.err(needle, nth, message);
        if self.topology.transport == Transport::Stdio
            && (self.topology.proxy
                || self.topology.watcher
                || self.agent.designs.contains(&Design::Cluster))
        {
            return Err(err(
                "transport",
                0,
                "field `topology.transport`: stdio has one Client and one Agent process (no proxy, no watcher, not the cluster design)".into(),
            ));
        }
        if self.agent.retention_ms > 0 && self.agent.designs.contains(&Design::Cluster) {
            return Err(err(
                "retention_ms",
                0,
                "field `agent.retention_ms`: a retention window is for in-memory, stored and adapter (a cluster's key records live in its store)".into(),
            ));
        }
        Ok(())
    }

    /// Every min/max pair in order.
    fn check_min_max(&self, at: &At<'_>) -> Result<(), ScenarioError> {
        let err = |needle: &str, nth: usize, message: String| at.err(needle, nth, message);
        for (lo, hi, name) in [
            (
                self.workload.gap_ms_min,
                self.workload.gap_ms_max,
                "workload.gap_ms",
            ),
            (
                self.agent.turn_ms_min,
                self.agent.turn_ms_max,
                "agent.turn_ms",
            ),
            (
                self.timing.latency_ms_min,
                self.timing.latency_ms_max,
                "timing.latency_ms",
            ),
        ] {
            if lo > hi {
                let field = name.rsplit('.').next().unwrap_or(name);
                return Err(err(
                    field,
                    0,
                    format!("field `{name}_min`: larger than `{name}_max`"),
                ));
            }
        }
        Ok(())
    }

    /// Names that must exist: raw probes' forms, the field case's mutant and property, `sometimes` events, a name that can name a folder.
    fn check_references(&self, at: &At<'_>) -> Result<(), ScenarioError> {
        let err = |needle: &str, nth: usize, message: String| at.err(needle, nth, message);
        for (i, r) in self.raw.iter().enumerate() {
            if r.key_json.is_some() && r.line.is_some() {
                return Err(err(
                    "[[raw]]",
                    i,
                    "field `raw`: `key_json` or `line`, not both".into(),
                ));
            }
        }
        if let Some(fc) = &self.field {
            if acp_chaos_models::mutant::find(&fc.mutant).is_none() {
                return Err(err(
                    "mutant",
                    0,
                    format!(
                        "field `field.mutant`: unknown mutant `{}` (see `acp-chaos list mutants`)",
                        fc.mutant
                    ),
                ));
            }
            if !crate::checkers::CHECKERS
                .iter()
                .any(|c| c.property == fc.property)
            {
                return Err(err(
                    "property",
                    0,
                    format!("field `field.property`: unknown property `{}`", fc.property),
                ));
            }
        }
        for e in &self.sometimes {
            if !crate::checkers::EVENTS.iter().any(|(n, _)| n == e) {
                let known: Vec<_> = crate::checkers::EVENTS.iter().map(|(n, _)| *n).collect();
                return Err(err(
                    "sometimes",
                    0,
                    format!(
                        "field `sometimes`: unknown event `{e}` (known: {})",
                        known.join(", ")
                    ),
                ));
            }
        }
        if !self
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
            || self.name.starts_with('.')
        {
            return Err(err(
                "name",
                0,
                "field `name`: letters, digits, `-`, `_` and `.` only (it names report folders)"
                    .into(),
            ));
        }
        Ok(())
    }

    /// Bounds that keep runs finite and arithmetic exact (simulated ms, counts), and every submission inside the safety phase.
    /// Long on purpose: one table of every bounded field (rustfmt gives each row six lines).
    fn check_bounds(&self, at: &At<'_>) -> Result<(), ScenarioError> {
        let err = |needle: &str, nth: usize, message: String| at.err(needle, nth, message);
        let w = &self.workload;
        let bounded: [(u64, bounds::Bound, &str, &str); 16] = [
            (
                w.gap_ms_max,
                bounds::MS,
                "gap_ms_max",
                "workload.gap_ms_max",
            ),
            (w.start_ms, bounds::MS, "start_ms", "workload.start_ms"),
            (
                w.cancel_after_ms,
                bounds::MS,
                "cancel_after_ms",
                "workload.cancel_after_ms",
            ),
            (
                w.stop_after_ms,
                bounds::MS,
                "stop_after_ms",
                "workload.stop_after_ms",
            ),
            (
                w.close_after_ms,
                bounds::MS,
                "close_after_ms",
                "workload.close_after_ms",
            ),
            (
                w.fork_after_ms,
                bounds::MS,
                "fork_after_ms",
                "workload.fork_after_ms",
            ),
            (
                self.agent.turn_ms_max,
                bounds::MS,
                "turn_ms_max",
                "agent.turn_ms_max",
            ),
            (
                self.agent.retention_ms,
                bounds::MS,
                "retention_ms",
                "agent.retention_ms",
            ),
            (
                self.client.stale_ms,
                bounds::MS,
                "stale_ms",
                "client.stale_ms",
            ),
            (
                self.timing.safety_ms,
                bounds::PHASE_MS,
                "safety_ms",
                "timing.safety_ms",
            ),
            (
                self.timing.liveness_ms,
                bounds::PHASE_MS,
                "liveness_ms",
                "timing.liveness_ms",
            ),
            (
                self.swarm
                    .as_ref()
                    .map(|s| u64::from(s.per_kind_max))
                    .unwrap_or(1),
                bounds::PER_KIND_MAX,
                "per_kind_max",
                "swarm.per_kind_max",
            ),
            (
                self.faults.len() as u64,
                bounds::SCRIPTED_FAULTS,
                "[[fault]]",
                "fault",
            ),
            (self.raw.len() as u64, bounds::RAW_PROBES, "[[raw]]", "raw"),
            (
                self.raw.iter().map(|r| r.at_ms).max().unwrap_or(0),
                bounds::MS,
                "at_ms",
                "raw.at_ms",
            ),
            (
                u64::from(w.submissions),
                bounds::SUBMISSIONS,
                "submissions",
                "workload.submissions",
            ),
        ];
        for (v, bound, needle, field) in bounded {
            if let Some(rule) = bound.check(v) {
                return Err(err(needle, 0, format!("field `{field}`: {rule}")));
            }
        }
        self.check_safety_phase(at)
    }

    /// Every submission must fall inside the safety phase, or it is never made.
    fn check_safety_phase(&self, at: &At<'_>) -> Result<(), ScenarioError> {
        let err = |needle: &str, nth: usize, message: String| at.err(needle, nth, message);
        let last = self.workload.start_ms
            + u64::from(self.workload.submissions - 1) * self.workload.gap_ms_max;
        if last >= self.timing.safety_ms {
            return Err(err(
                "safety_ms",
                0,
                format!(
                    "field `timing.safety_ms`: the last submission may come at {last} ms; the safety phase must be longer (start_ms + (submissions - 1) * gap_ms_max)"
                ),
            ));
        }
        Ok(())
    }

    /// `[swarm]` or `[[fault]]`, and every fault entry valid for the scenario's designs.
    fn check_faults(&self, at: &At<'_>) -> Result<(), ScenarioError> {
        let err = |needle: &str, nth: usize, message: String| at.err(needle, nth, message);
        if let Some(sw) = &self.swarm {
            if !self.faults.is_empty() {
                return Err(err("[swarm]", 0, "field `swarm`: a scenario has either `[swarm]` or `[[fault]]` entries, not both".into()));
            }
            if sw.faults.is_empty() {
                return Err(err(
                    "faults",
                    0,
                    "field `swarm.faults`: name at least one fault kind".into(),
                ));
            }
        }
        for (i, f) in self.faults.iter().enumerate() {
            if let Some(m) = f.check() {
                // The line of the field named, inside this fault's entry.
                let field = m.split('`').next().unwrap_or_default();
                return Err(ScenarioError::Parse {
                    path: self.path.clone(),
                    line: fault_field_line(at.text, i, field),
                    message: format!("field `fault[{i}].{m}"),
                });
            }
            // Every design the scenario runs must have what the fault acts on (the schedule
            // file's check asks the same question: `Plan::check`).
            let refused = self.agent.designs.iter().find_map(|d| {
                let t = Topology {
                    proxy: self.topology.proxy,
                    cluster: *d == Design::Cluster,
                    stdio: self.topology.transport == super::Transport::Stdio,
                };
                f.kind.refused_in(t).map(|needs| (d, needs))
            });
            if let Some((d, needs)) = refused {
                // The design is the cause only for the kinds that depend on it.
                let under = if f.kind.reach() == Reach::Proxy {
                    "; set `topology.proxy = true`".to_string()
                } else if f.kind.reach() == Reach::Socket {
                    ", and the scenario sets `topology.transport = \"stdio\"`".to_string()
                } else {
                    format!(", and the scenario runs it under the {} design", d.as_str())
                };
                return Err(err(
                    "[[fault]]",
                    i,
                    format!("field `fault[{i}].kind`: {needs}{under}"),
                ));
            }
        }
        Ok(())
    }
}

/// The key assigned on a line (`key = ...`, also inside an inline table `on = { key = ... }`).
pub fn key_at(text: &str, line: usize) -> Option<String> {
    let l = text.lines().nth(line.checked_sub(1)?)?;
    let key = l.split('=').next()?.trim();
    let key = key.trim_start_matches('[').trim_end_matches(']').trim();
    (!key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.'))
    .then(|| key.to_string())
}

/// A trigger's shape error ("field `on...`: reason", from [`crate::nemesis::Trigger`]'s
/// `try_from`), named with its entry of the array of tables `array` (`fault` in a scenario,
/// `faults` in a schedule file): "field `fault[2].on...`: reason". The entry is the first whose
/// `on` does not read as a trigger, found in the document itself (so an inline array, spaced
/// brackets or a `[[fault]]` inside a string do not mislead it). Any other message, or a
/// document where no entry is found, is returned as it is.
pub fn in_entry(message: String, text: &str, array: &str) -> String {
    let Some(rest) = message.strip_prefix("field `on") else {
        return message;
    };
    let Ok(doc) = text.parse::<toml::Table>() else {
        return message;
    };
    let entries = doc.get(array).and_then(toml::Value::as_array);
    let bad = entries.into_iter().flatten().position(|e| {
        e.get("on")
            .is_some_and(|on| on.clone().try_into::<crate::nemesis::Trigger>().is_err())
    });
    match bad {
        Some(i) => format!("field `{array}[{i}].on{rest}"),
        None => message,
    }
}

pub fn line_of(text: &str, byte: usize) -> usize {
    text[..byte.min(text.len())]
        .bytes()
        .filter(|b| *b == b'\n')
        .count()
        + 1
}

/// Line of the `nth` (0-based) line containing `needle`, or 1.
pub(super) fn find_line(text: &str, needle: &str, nth: usize) -> usize {
    text.lines()
        .enumerate()
        .filter(|(_, l)| {
            l.trim_start().starts_with(needle) || (needle.starts_with('[') && l.contains(needle))
        })
        .nth(nth)
        .map(|(i, _)| i + 1)
        .unwrap_or(1)
}

/// The line of field `field` (`reroute`, `on.point`: its first part) in the `nth` `[[fault]]`
/// entry of a scenario's text: `field = ...`, or its `[fault.field]` table; the entry's header
/// line if neither is there (a default, an inline table written elsewhere).
pub(super) fn fault_field_line(text: &str, nth: usize, field: &str) -> usize {
    let header = find_line(text, "[[fault]]", nth);
    let key = field.split('.').next().unwrap_or(field);
    let lines: Vec<&str> = text.lines().collect();
    for (i, l) in lines.iter().enumerate().skip(header) {
        let t = l.trim_start();
        if t.starts_with("[[") {
            break;
        }
        let assigns = t
            .strip_prefix(key)
            .is_some_and(|rest| rest.trim_start().starts_with('='));
        if assigns || t.starts_with(&format!("[fault.{key}]")) {
            return i + 1;
        }
    }
    header
}
