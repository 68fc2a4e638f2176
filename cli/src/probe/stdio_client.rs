//! `acp-chaos client -- AGENT_CMD`: our model Client as a real process, the first Client
//! `acp-chaos probe --client` tests (and, with `--mutant`, its seeded bugs).
//!
//! It starts `AGENT_CMD` as a child on stdio, as an editor does, and plays a small workload
//! in real time with the same sans-IO [`acp_chaos::models::SpecClient`] the simulator runs (the
//! conformance kit's real-time world, `super::realtime`, without faults): one session,
//! `--submissions` prompts with distinct texts, each under its own `idempotencyKey`. When the
//! Agent process ends it starts it again, initializes, resumes the session and resends what
//! is pending (C1, C6).
//!
//! Exit: 1 when a submission was shown to the user as an error or is still pending at the end
//! (what a user would see), else 0; 2 on a bad flag; 4 when the Agent never answered. Each
//! submission's outcome is one line on stderr.

use crate::error::{usage, Outcome};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use clap::Args;

use super::driver::Launch;
use super::realtime;
use acp_chaos::exit;
use acp_chaos::history::op;
use acp_chaos::models::mutant::{self, MutantKind};
use acp_chaos::models::Design;
use acp_chaos::plan::Plan;
use acp_chaos::scenario::Scenario;

/// `acp-chaos client` arguments.
#[derive(Args, Debug, Clone)]
pub struct ClientArgs {
    /// How many prompts the user submits (distinct texts, one session).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=16))]
    pub submissions: u64,
    /// Play a Client mutant (a seeded Client bug, see `acp-chaos list mutants`).
    #[arg(long)]
    pub mutant: Option<String>,
    /// The Client's kind: `spec` (resends pending prompts with their keys after a reconnect)
    /// or `sdk-auto-retry` (an SDK's retry layer: resends by retry class, never an unkeyed
    /// prompt of unknown outcome, C9).
    #[arg(long, default_value = "spec")]
    pub kind: String,
    /// `sdk-auto-retry`: the share of prompts sent without a key (0 to 1).
    #[arg(long, default_value_t = 0.0)]
    pub unkeyed_rate: f64,
    /// Seed of the keys and the workload's timing.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// A workload millisecond lasts this many real ones.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub time_scale: u64,
    /// The Agent command (started again when it ends).
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}

/// The workload: one session, N submissions, no faults (the Agent's end is the only one).
fn scenario(a: &ClientArgs) -> Result<Scenario, String> {
    let text = format!(
        "summary = \"acp-chaos client: one session, {n} prompts\"\nexpect = \"valid\"\n\n[workload]\nsubmissions = {n}\n\n[client]\nkind = {kind:?}\nunkeyed_rate = {rate:?}\n",
        n = a.submissions,
        kind = a.kind,
        rate = a.unkeyed_rate,
    );
    Scenario::parse(Path::new("acp-chaos-client.toml"), &text).map_err(|e| e.to_string())
}

/// Run the Client until its workload settles: the exit code, or a usage error (exit 2).
pub fn main(a: &ClientArgs) -> Outcome {
    // A write to an Agent that died must be an error we handle, not a signal that ends us.
    // SAFETY: setting a signal disposition; no handler code runs.
    #[cfg(unix)]
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
    if let Some(m) = a.mutant.as_deref() {
        match mutant::find(m).map(|m| m.kind) {
            Some(MutantKind::Client(_)) => {}
            Some(_) => return usage(format!("`{m}` is not a Client mutant")),
            None => {
                return usage(format!(
                    "unknown mutant `{m}` (see `acp-chaos list mutants`)"
                ))
            }
        }
    }
    let sc = match scenario(a) {
        Ok(s) => s,
        Err(e) => return usage(e),
    };
    let plan = Plan::derive(&sc, a.seed, a.mutant.as_deref(), Design::Stored);
    let cwd = std::env::current_dir().unwrap_or_else(|_| ".".into());
    let home = std::env::var_os("HOME").map_or_else(|| cwd.clone(), Into::into);
    let launch = Launch {
        argv: a.command.clone(),
        env: Vec::new(),
        clear_env: false,
        home,
        cwd,
        timeout: Duration::from_secs(10),
    };
    let r = realtime::run(&plan, launch, a.time_scale, false);
    if let Some(why) = &r.aborted {
        eprintln!("acp-chaos client: {why}");
        return Ok(exit::LIVENESS);
    }
    // What the Client showed its user about each submission: acknowledged, an error, still
    // pending. A submission the model forgot (a mutant's silent drop) shows nothing, and does
    // not change the exit code: that is the bug `probe --client` must catch from the wire.
    let mut outcome: BTreeMap<u64, (String, bool)> = BTreeMap::new();
    for o in &r.ops {
        if o.f == op::PENDING_AT_END {
            for n in o.value["submissions"].as_array().into_iter().flatten() {
                if let Some(n) = n.as_u64() {
                    outcome.insert(n, ("pending at the end".into(), false));
                }
            }
            continue;
        }
        let n = o.value["submission"].as_u64().unwrap_or(0);
        let said = match o.f.as_str() {
            op::ACK => (format!("acknowledged as {}", o.value["messageId"]), true),
            op::SURFACE => (format!("shown to the user: {}", o.value["error"]), false),
            "withdrawn" => ("withdrawn".to_string(), true),
            _ => continue,
        };
        outcome.insert(n, said);
    }
    let mut code = exit::VALID;
    for (n, (said, fine)) in &outcome {
        eprintln!("acp-chaos client: submission {n} {said}");
        if !fine {
            code = exit::INVALID;
        }
    }
    Ok(code)
}
