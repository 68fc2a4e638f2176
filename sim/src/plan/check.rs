//! [`Plan::check`]: what is wrong with a plan read from a schedule or regression file (written
//! by `acp-chaos shrink`, maybe edited since): every number against the bounds table
//! ([`crate::bounds`]), then the settings against each other. A plan derived from a scenario
//! always passes.

use acp_chaos_models::Design;

use super::Plan;
use crate::bounds::{self, Bound};
use crate::nemesis::Trigger;

/// Submissions in a plan: a shrunk schedule may keep none.
const PLAN_SUBMISSIONS: Bound = Bound {
    min: 0,
    max: bounds::SUBMISSIONS.max,
};

impl Plan {
    /// What is wrong with a plan read from a schedule file (written by `acp-chaos shrink`, then
    /// maybe edited), as "field: reason", or `None`. A plan derived from a scenario is always
    /// consistent.
    pub fn check(&self) -> Option<String> {
        if let Some(e) = self.check_bounds() {
            return Some(e);
        }
        if (self.agent.design == Design::Cluster) != (self.nodes > 0) {
            return Some("nodes`: at least 1 for the cluster design, 0 for the others".into());
        }
        if self.latency_ms_min > self.latency_ms_max || self.latency_ms_max == 0 {
            return Some("latency_ms_min`: at most latency_ms_max, which is at least 1".into());
        }
        if self.agent.turn_ms_min > self.agent.turn_ms_max {
            return Some("agent.turn_ms_min`: at most agent.turn_ms_max".into());
        }
        if self.client.backoff_ms_min > self.client.backoff_ms_max {
            return Some("client.backoff_ms_min`: at most client.backoff_ms_max".into());
        }
        if self.stdio && (self.proxy || self.watcher || self.nodes > 0) {
            return Some("stdio`: not with a proxy, a watcher or cluster nodes".into());
        }
        for (i, f) in self.faults.iter().enumerate() {
            // `nth` counts only frame and point triggers (a drawn time trigger leaves it 0).
            let mut f = f.clone();
            if let Trigger::Submission { nth, .. } | Trigger::At { nth, .. } = &mut f.on {
                *nth = (*nth).max(1);
            }
            if let Some(e) = f.check() {
                return Some(format!("faults[{i}].{e}"));
            }
            if let Some(needs) = f.kind.refused_in(self.topology()) {
                return Some(format!("faults[{i}].kind`: {needs}"));
            }
        }
        None
    }

    /// Every number of the plan against [`crate::bounds`], as "field`: rule".
    fn check_bounds(&self) -> Option<String> {
        let (a, c, n) = (&self.agent, &self.client, &self.net);
        let fields: [(u64, Bound, &str); 22] = [
            (c.sessions as u64, bounds::SESSIONS, "client.sessions"),
            (
                c.prompt_timeout_ms,
                bounds::PROMPT_TIMEOUT_MS,
                "client.prompt_timeout_ms",
            ),
            (c.backoff_ms_min, bounds::TIMER_MS, "client.backoff_ms_min"),
            (c.backoff_ms_max, bounds::TIMER_MS, "client.backoff_ms_max"),
            (
                u64::from(c.attempts_max),
                bounds::ATTEMPTS,
                "client.attempts_max",
            ),
            (c.stale_ms, bounds::MS, "client.stale_ms"),
            (
                c.permission_ms,
                bounds::PERMISSION_MS,
                "client.permission_ms",
            ),
            (a.turn_ms_min, bounds::MS, "agent.turn_ms_min"),
            (a.turn_ms_max, bounds::MS, "agent.turn_ms_max"),
            (a.retention_ms, bounds::MS, "agent.retention_ms"),
            (n.heartbeat_ms, bounds::TIMER_MS, "net.heartbeat_ms"),
            (n.dead_ms, bounds::TIMER_MS, "net.dead_ms"),
            (
                n.connect_timeout_ms,
                bounds::TIMER_MS,
                "net.connect_timeout_ms",
            ),
            (n.store_timeout_ms, bounds::TIMER_MS, "net.store_timeout_ms"),
            (self.latency_ms_min, bounds::LATENCY_MS, "latency_ms_min"),
            (self.latency_ms_max, bounds::LATENCY_MS, "latency_ms_max"),
            (self.safety_ms, bounds::PHASE_MS, "safety_ms"),
            (self.liveness_ms, bounds::PHASE_MS, "liveness_ms"),
            (self.workload.len() as u64, PLAN_SUBMISSIONS, "workload"),
            (self.faults.len() as u64, bounds::PLAN_FAULTS, "faults"),
            (self.raw.len() as u64, bounds::RAW_PROBES, "raw"),
            (
                self.block_size.unwrap_or(bounds::BLOCK_SIZE.min),
                bounds::BLOCK_SIZE,
                "block_size",
            ),
        ];
        for (v, bound, field) in fields {
            if let Some(rule) = bound.check(v) {
                return Some(format!("{field}`: {rule}"));
            }
        }
        if self.nodes as u64 > bounds::NODES.max {
            return Some(format!("nodes`: {}", bounds::NODES.rule()));
        }
        for (v, field) in [
            (a.tool_rate, "agent.tool_rate"),
            (a.permission_rate, "agent.permission_rate"),
            (a.fail_rate, "agent.fail_rate"),
            (c.unkeyed_rate, "client.unkeyed_rate"),
        ] {
            if !bounds::is_rate(v) {
                return Some(format!("{field}`: a probability from 0 to 1"));
            }
        }
        for (i, s) in self.workload.iter().enumerate() {
            let fields: [(Option<u64>, Bound, &str); 8] = [
                (Some(s.submission), bounds::SUBMISSIONS, "submission"),
                (Some(s.slot as u64), bounds::SLOT, "slot"),
                (Some(s.at_ms), bounds::PLAN_MS, "at_ms"),
                (s.cancel_at_ms, bounds::PLAN_MS, "cancel_at_ms"),
                (s.stop_at_ms, bounds::PLAN_MS, "stop_at_ms"),
                (s.close_at_ms, bounds::PLAN_MS, "close_at_ms"),
                (s.fork.map(|f| f.0), bounds::PLAN_MS, "fork"),
                (s.fork.map(|f| f.1 as u64), bounds::SLOT, "fork"),
            ];
            for (v, bound, field) in fields {
                if let Some(rule) = v.and_then(|v| bound.check(v)) {
                    return Some(format!("workload[{i}].{field}`: {rule}"));
                }
            }
        }
        for (i, r) in self.raw.iter().enumerate() {
            if let Some(rule) = bounds::PLAN_MS.check(r.at_ms) {
                return Some(format!("raw[{i}].at_ms`: {rule}"));
            }
        }
        None
    }
}
