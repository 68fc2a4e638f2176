//! `acp-chaos list`: scenarios, designs, clients, policies, transports, mutants, faults, the
//! swarm's draws, properties and `sometimes` events.

use clap::Args;

use super::args::{scenarios_dir, DirArgs};
use super::Outcome;
use acp_chaos::checkers::CHECKERS;
use acp_chaos::exit;
use acp_chaos::models::{mutant, Design};
use acp_chaos::nemesis::{FaultKind, Setting};
use acp_chaos::scenario;

/// What `acp-chaos list` prints.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListSection {
    /// Scenario files with their rule ids.
    Scenarios,
    /// Agent designs and their retention.
    Designs,
    /// Client kinds.
    Clients,
    /// Agent policies O1, O2, O4.
    Policies,
    /// Transports and topologies.
    Transports,
    /// The mutant zoo.
    Mutants,
    /// Fault kinds and protocol points.
    Faults,
    /// What the swarm draws per seed.
    Swarm,
    /// Properties and their rules.
    Properties,
    /// Every rule of spec/RULES.md with its checkers, mutants and scenarios, and what it lacks
    /// (a Markdown table: docs/rules.md).
    Rules,
    /// `sometimes` events.
    Events,
}

#[derive(Args, Debug, Clone)]
pub(super) struct ListArgs {
    /// Only this section.
    #[arg(value_enum)]
    what: Option<ListSection>,
    #[command(flatten)]
    dir: DirArgs,
}

/// Long on purpose: the command's dispatch, one arm per thing listed.
pub(super) fn exec(a: &ListArgs) -> Outcome {
    let (what, d) = (a.what, &a.dir);
    let want = |w: ListSection| what.is_none_or(|x| x == w);
    if want(ListSection::Scenarios) {
        println!("scenarios ({}):", scenarios_dir(d).display());
        for s in scenario::load_dir(&scenarios_dir(d))? {
            println!("  {:<44} [{}] {}", s.name, s.rules.join(" "), s.summary);
        }
    }
    if want(ListSection::Designs) {
        println!("agent designs (--agent, scenario `designs`):");
        for d in Design::ALL {
            println!("  {:<10} {}", d.as_str(), d.summary());
        }
    }
    if want(ListSection::Clients) {
        println!("clients (scenario [client] kind):");
        for k in acp_chaos_models::ClientKind::ALL {
            println!("  {:<14} {}", k.as_str(), k.summary());
        }
        println!("  {:<14} resumes the user's session with replay, watches, lists; never prompts ([topology] watcher)", "watcher");
    }
    if want(ListSection::Policies) {
        println!("policies (scenario [agent], each pinned or `seeded`):\n  o1 keep|drop      held prompts when their connection ends\n  o2 continue|cancel foreground work when its connection ends\n  o4 hold|steer     prompts that arrive during a turn");
    }
    if want(ListSection::Transports) {
        println!("transports and topology (scenario [topology]; the design picks the transport):\n  stdio-like  in-memory, stored, adapter: one stream connection to the one Agent process at a time; after the Agent dies the Client starts over (reconnect, initialize, resume)\n  remote      cluster: every connection names its logical connection (the remote transport's connection id) and is routed to any of `nodes` nodes (seeded); sessions stay active on the logical connection across connections and nodes (X2); nodes share one store host over datagrams\n  proxy       client -> proxy -> agent; the proxy rewrites JSON-RPC ids and maps $/cancel_request (X1)\n  watcher     a second Client resumes the session with replay and watches it (A8)");
    }
    if want(ListSection::Mutants) {
        println!("mutants:");
        for m in mutant::MUTANTS {
            println!(
                "  {:<30} {:<6} breaks {:<12} caught by {} ({:?}): {}",
                m.name,
                match m.kind {
                    mutant::MutantKind::Agent(_) => "agent",
                    mutant::MutantKind::Client(_) => "client",
                    mutant::MutantKind::Proxy(_) => "proxy",
                },
                m.rules.join(" "),
                m.property,
                m.party,
                m.summary
            );
        }
    }
    if want(ListSection::Faults) {
        println!("faults:");
        let width = FaultKind::ALL.map(|k| k.as_str().len()).into_iter().max();
        for k in FaultKind::ALL {
            println!(
                "  {:<w$} {}",
                k.as_str(),
                k.summary(),
                w = width.unwrap_or(0)
            );
        }
        for (points, kinds) in kinds_by_points() {
            println!("  protocol points of {}: {points}", kinds.join(", "));
        }
        let reroute: Vec<&str> = FaultKind::ALL
            .into_iter()
            .filter(|k| k.takes(Setting::Reroute).is_some())
            .map(FaultKind::as_str)
            .collect();
        println!(
            "  reroute = true ({}; cluster of >= 2 nodes): the Client's next connection goes to another node",
            reroute.join(", ")
        );
    }
    if want(ListSection::Swarm) {
        println!("swarm ([swarm] scenarios; each from its own stream, drawn only when the file does not set it):");
        println!("  fault kinds      each listed kind on in 3 seeds of 5 (mix = \"uniform\": always), 1 to per_kind_max of it");
        println!("  agent.o1/o2/o4   when set to \"seeded\"");
        println!("  disk.block_size  torn writes of 8 to 64-byte blocks in 1 seed of 2");
        for (name, what) in acp_chaos::plan::DRAWN {
            println!("  {name:<24} {what}");
        }
    }
    if want(ListSection::Properties) {
        println!("properties:");
        for c in CHECKERS {
            println!(
                "  {:<4} {:<16} rules {}",
                c.property,
                c.title,
                c.rules.join(" ")
            );
        }
    }
    if want(ListSection::Rules) {
        use acp_chaos::report::witnesses;
        println!("rules (spec/RULES.md; docs/rules.md):\n");
        let dir = scenarios_dir(d);
        let all = scenario::load_dir(&dir)?;
        // The witnesses are runs: each mutant's witness scenario, its first seeds.
        let pool = rayon::ThreadPoolBuilder::new()
            .build()
            .map_err(|e| super::CliError::usage(format!("threads: {e}")))?;
        let shown =
            crate::campaign::witness::shown(&dir, crate::campaign::witness::WITNESS_SEEDS, &pool)?;
        print!(
            "{}",
            witnesses::markdown(&witnesses::witnesses(
                &all,
                &shown,
                &crate::findings::claims()
            ))
        );
    }
    if want(ListSection::Events) {
        println!("sometimes events:");
        for (n, d) in acp_chaos::checkers::EVENTS {
            println!("  {n:<16} {d}");
        }
    }
    Ok(exit::VALID)
}

/// The kinds that fire at protocol points, grouped by their points (each kind's row), in
/// [`FaultKind::ALL`]'s order of first appearance: (the points joined, the kinds).
fn kinds_by_points() -> Vec<(String, Vec<&'static str>)> {
    let mut out: Vec<(String, Vec<&'static str>)> = Vec::new();
    for k in FaultKind::ALL
        .into_iter()
        .filter(|k| !k.points().is_empty())
    {
        let points: Vec<&str> = k.points().iter().map(|p| p.as_str()).collect();
        let points = points.join(", ");
        match out.iter_mut().find(|(p, _)| *p == points) {
            Some((_, kinds)) => kinds.push(k.as_str()),
            None => out.push((points, vec![k.as_str()])),
        }
    }
    out
}
