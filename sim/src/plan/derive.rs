//! [`Plan::derive`]: a scenario, a seed, a mutant and a design to every setting of one run.

use acp_chaos_models::mutant::{self, MutantKind};
use acp_chaos_models::{
    AgentConfig, ClientConfig, Design, DuringTurn, HeldOnDisconnect, WorkOnDisconnect,
};
use rand::seq::SliceRandom;
use rand::Rng;

use super::swarm::{draw_settings, draw_swarm};
use super::{stream, NetTiming, Plan, Submission};
use crate::scenario::{Pinned, Scenario};

impl Plan {
    /// Derive the plan for one Agent design. `mutant` must be a known mutant name (checked by
    /// the CLI).
    pub fn derive(s: &Scenario, seed: u64, mutant: Option<&str>, design: Design) -> Plan {
        let m = mutant.and_then(mutant::find);
        // A proxy mutant needs a proxy to live in: pinned on before anything is drawn, so the
        // draws (crash-proxy, transport) see it.
        let forced;
        let s = if matches!(m.map(|m| m.kind), Some(MutantKind::Proxy(_))) && !s.topology.proxy {
            let mut f = s.clone();
            f.topology.proxy = true;
            f.pinned.insert("topology.proxy".into());
            forced = f;
            &forced
        } else {
            s
        };
        let (drawn_scenario, drawn) = draw_settings(s, seed, design);
        let s = &drawn_scenario;
        let (agent_mutant, client_mutant, proxy_mutant) = match m.map(|m| m.kind) {
            Some(MutantKind::Agent(a)) => (Some(a), None, None),
            Some(MutantKind::Client(c)) => (None, Some(c), None),
            Some(MutantKind::Proxy(p)) => (None, None, Some(p)),
            None => (None, None, None),
        };
        let agent = agent_config(s, seed, design, agent_mutant);
        let workload = draw_workload(s, seed);
        let faults = match &s.swarm {
            Some(sw) => draw_swarm(
                s,
                seed,
                &sw.faults,
                sw.per_kind_max,
                design,
                sw.mix == crate::scenario::Mix::Uniform,
            ),
            None => s.faults.clone(),
        };
        Plan {
            scenario: s.name.clone(),
            seed,
            mutant: mutant.map(str::to_string),
            agent,
            retention: design.retention(),
            client: client_config(s, client_mutant),
            net: NetTiming {
                heartbeat_ms: 25,
                dead_ms: 250,
                connect_timeout_ms: 100,
                store_timeout_ms: s.timing.latency_ms_max * 2 + 20,
            },
            latency_ms_min: s.timing.latency_ms_min,
            latency_ms_max: s.timing.latency_ms_max,
            safety_ms: s.timing.safety_ms,
            liveness_ms: s.timing.liveness_ms,
            workload,
            faults,
            swarm: s.swarm.is_some(),
            drawn,
            raw: s.raw.clone(),
            // A proxy mutant needs a proxy to live in.
            proxy: s.topology.proxy || proxy_mutant.is_some(),
            proxy_mutant,
            watcher: s.topology.watcher,
            // Stdio has one Client and one Agent process (a forced or drawn proxy or watcher
            // means a socket).
            stdio: s.topology.transport == crate::scenario::Transport::Stdio
                && design != Design::Cluster
                && !s.topology.proxy
                && !s.topology.watcher,
            // Pinned by `[disk]`, or drawn by the swarm from its own stream.
            block_size: s.disk.block_size.or_else(|| {
                let mut r = stream(seed, "disk.block_size");
                (s.swarm.is_some() && r.gen_bool(0.5)).then(|| r.gen_range(8..=64))
            }),
            nodes: if design == Design::Cluster {
                s.topology.nodes
            } else {
                0
            },
        }
    }
}

/// The Agent's settings: the scenario's, with each open policy (O1, O2, O4) not pinned drawn
/// from its own stream.
fn agent_config(
    s: &Scenario,
    seed: u64,
    design: Design,
    mutant: Option<acp_chaos_models::AgentMutant>,
) -> AgentConfig {
    let o1 = match s.agent.o1 {
        Pinned::Value(v) => v,
        Pinned::Seeded(_) => *[HeldOnDisconnect::Keep, HeldOnDisconnect::Drop]
            .choose(&mut stream(seed, "policy.o1"))
            .expect("non-empty"),
    };
    let o2 = match s.agent.o2 {
        Pinned::Value(v) => v,
        Pinned::Seeded(_) => *[WorkOnDisconnect::Continue, WorkOnDisconnect::Cancel]
            .choose(&mut stream(seed, "policy.o2"))
            .expect("non-empty"),
    };
    let o4 = match s.agent.o4 {
        Pinned::Value(v) => v,
        Pinned::Seeded(_) => *[DuringTurn::Hold, DuringTurn::Steer]
            .choose(&mut stream(seed, "policy.o4"))
            .expect("non-empty"),
    };
    AgentConfig {
        design,
        o1,
        o2,
        o4,
        turn_ms_min: s.agent.turn_ms_min,
        turn_ms_max: s.agent.turn_ms_max,
        tool_rate: s.agent.tool_rate,
        permission_rate: s.agent.permission_rate,
        mutant,
        retention_ms: s.agent.retention_ms,
        fail_rate: s.agent.fail_rate,
        cancel_request: s.agent.cancel_request,
    }
}

/// The Client's settings: the scenario's, and its fixed timings.
fn client_config(s: &Scenario, mutant: Option<acp_chaos_models::ClientMutant>) -> ClientConfig {
    ClientConfig {
        // Longer than the longest turn, so held prompts rarely cause resends.
        prompt_timeout_ms: s.agent.turn_ms_max * 2 + 40,
        backoff_ms_min: 10,
        backoff_ms_max: 160,
        attempts_max: 40,
        sessions: s.workload.sessions.max(1),
        keys: s.workload.keys,
        stale_ms: s.client.stale_ms,
        mutant,
        kind: s.client.kind,
        unkeyed_rate: s.client.unkeyed_rate,
        permission_ms: s.client.permission_ms,
    }
}

/// Most forks one workload makes (each adds a session slot).
const FORKS_MAX: usize = 8;

/// The user's submissions, each with its cancel, stop, close or fork, from the `workload`
/// stream (and one stream per submission for the stop, close and fork coins).
fn draw_workload(s: &Scenario, seed: u64) -> Vec<Submission> {
    let mut w = stream(seed, "workload");
    let mut at = s.workload.start_ms;
    let (mut forks, mut next_slot) = (0usize, None);
    let mut workload: Vec<Submission> = Vec::new();
    for n in 1..=u64::from(s.workload.submissions) {
        // Now and then the user sends the same text again on purpose: a new submission (C2).
        // Some inputs are locally handled commands (live-only, A11).
        let command = w.gen_bool(s.workload.command_rate.clamp(0.0, 1.0));
        let text = match workload.last() {
            _ if command => "/status".to_string(),
            Some(prev) if w.gen_bool(s.workload.repeat_rate.clamp(0.0, 1.0)) => prev.text.clone(),
            _ => format!("input {n}"),
        };
        // After a fork the next submission goes to the fork.
        let slot = next_slot
            .take()
            .unwrap_or(((n - 1) as usize) % s.workload.sessions.max(1));
        let stop_at_ms = stream(seed, &format!("workload.stop.{n}"))
            .gen_bool(s.workload.stop_rate.clamp(0.0, 1.0))
            .then_some(at + s.workload.stop_after_ms);
        let cancel_at_ms = w
            .gen_bool(s.workload.cancel_rate.clamp(0.0, 1.0))
            .then_some(at + s.workload.cancel_after_ms);
        let close_at_ms = stream(seed, &format!("workload.close.{n}"))
            .gen_bool(s.workload.close_rate.clamp(0.0, 1.0))
            .then_some(at + s.workload.close_after_ms);
        let fork = (forks < FORKS_MAX
            && stream(seed, &format!("workload.fork.{n}"))
                .gen_bool(s.workload.fork_rate.clamp(0.0, 1.0)))
        .then(|| {
            forks += 1;
            let into = s.workload.sessions.max(1) + forks - 1;
            next_slot = Some(into);
            (at + s.workload.fork_after_ms, into)
        });
        workload.push(Submission {
            submission: n,
            at_ms: at,
            slot,
            text,
            cancel_at_ms,
            stop_at_ms,
            close_at_ms,
            fork,
        });
        at += w.gen_range(s.workload.gap_ms_min..=s.workload.gap_ms_max);
        if let Some((t, _)) = fork {
            // The fork is asked for before the submission that goes to it.
            at = at.max(t + 1);
        }
    }
    workload
}
