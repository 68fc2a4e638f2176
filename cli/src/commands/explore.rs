//! `acp-chaos explore`: every schedule of at most k faults over a scenario's fault-free trace
//! (see [`acp_chaos::explore::exhaustive`]), ending with a certificate or the violating schedules.

use std::path::PathBuf;

use clap::Args;

use super::args::{
    check_mutant, jobs, parse_audit, parse_design, parse_shard, scenarios_dir, DirArgs,
};
use super::{CliError, Outcome};
use acp_chaos::explore::certificate;
use acp_chaos::explore::exhaustive::{self, Options};
use acp_chaos::explore::{guided, lineage, needs};
use acp_chaos::models::Design;
use acp_chaos::nemesis::FaultKind;
use acp_chaos::plan::Plan;
use acp_chaos::scenario::{self, Scenario};
use acp_chaos::world;

/// How `explore` chooses its schedules (`--mode`): `exhaustive`, `lineage`, `guided`, `swarm`
/// or `coverage`, each described in the flag's help.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    // Each value is described in `--mode`'s own help (a doc comment here would print a second
    // list under it).
    Exhaustive,
    Lineage,
    Guided,
    Swarm,
    Coverage,
}

impl Mode {
    /// The name `--mode` takes.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Exhaustive => "exhaustive",
            Mode::Lineage => "lineage",
            Mode::Guided => "guided",
            Mode::Swarm => "swarm",
            Mode::Coverage => "coverage",
        }
    }
}

#[derive(Args, Debug, Clone)]
pub(super) struct ExploreArgs {
    /// Scenario name or .toml path (its scripted or drawn faults are removed: the trace is
    /// its fault-free run).
    scenario: String,
    /// Agent design: in-memory, stored, adapter or cluster (default: the scenario's first
    /// design).
    #[arg(long, value_parser = parse_design)]
    agent: Option<Design>,
    /// Most faults per schedule.
    #[arg(long, default_value_t = 2)]
    faults: usize,
    /// Fault kinds to place, comma-separated (default: lose-frame, stall-frame, crash-agent,
    /// restart-client, partition, transient-error, and the proxy's and cluster's kinds the
    /// topology has).
    #[arg(long, value_delimiter = ',')]
    kinds: Vec<String>,
    /// Explore against a mutant (see `acp-chaos list mutants`).
    #[arg(long, env = "ACP_CHAOS_MUTANT")]
    mutant: Option<String>,
    /// The seed the scenario's plan is derived with (its swarm draws, if any).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Worker threads (default: the number of cores).
    #[arg(long, env = "ACP_CHAOS_JOBS", value_parser = super::args::parse_jobs)]
    jobs: Option<usize>,
    /// Run only the K-th of N slices of the last level (`--shard 2/4`); every shard runs the
    /// levels below it. `acp-chaos merge` joins the shards' folders.
    #[arg(long, value_parser = parse_shard)]
    shard: Option<(u64, u64)>,
    /// Also run this many pruned schedules (a seeded sample), or `all` of them, and fail if a
    /// pruned placement changed its parent run's verdicts otherwise than its representative
    /// changed its own parent's (a prefix violation is never counted).
    #[arg(long, default_value = "0", value_parser = parse_audit)]
    audit_pruning: usize,
    /// What two placements must share to be merged: `snapshot` (the protocol state and the
    /// world's snapshot: time, timers, every party's memory, the nemesis's work in force) or
    /// `protocol-state` (the protocol state alone: the unsound key of earlier versions, kept
    /// as the pruning's mutant so `--audit-pruning` can be seen to catch what it merges)
    #[arg(long, default_value = "snapshot", value_parser = ["snapshot", "protocol-state"])]
    merge: String,
    /// How to choose the schedules: `exhaustive` (every schedule, pruned), `lineage` (faults
    /// that cut what each good outcome depended on, weakest window first), `guided` (a swarm
    /// steered by what its runs covered; a `[swarm]` scenario), `swarm` (the plain swarm, seeds
    /// in order, to compare with `guided`), `coverage` (guided against the plain swarm: runs
    /// until every coverage cell the design allows was hit, from `--repeat` base seeds, with
    /// the medians and their ratio). `lineage`, `guided`, `swarm` and `coverage` stop at
    /// `--budget`.
    #[arg(long, value_enum, default_value_t = Mode::Exhaustive)]
    mode: Mode,
    /// Base seeds `--mode coverage` races from (`--seed` onwards).
    #[arg(long, default_value_t = 5)]
    repeat: u64,
    /// Most schedules run in `--mode lineage`, `guided` or `swarm`.
    #[arg(long, default_value_t = 500)]
    budget: usize,
    /// Stop at the first violating schedule (prints how many runs it took).
    #[arg(long)]
    stop_at_first: bool,
    /// Also explore delivery orders (exhaustive mode): over every schedule's run, each race
    /// (two deliveries to one host on different connections, or two nodes' ops at a cluster's
    /// store, neither causing the other, touching the same session) is reversed by delaying
    /// the first just past the second, one run per race. The certificate counts them.
    #[arg(long)]
    orders: bool,
    /// Explore against every mutant that applies to the design, one after the other, each up
    /// to its first catch (its property, status and party): which mutants the trace can show,
    /// in how many runs, with the replay line of the catching schedule.
    #[arg(long, conflicts_with_all = ["mutant", "shard", "audit_pruning"])]
    mutants: bool,
    /// Report folder (default `reports/explore-<scenario>-<design>[-seed<N>][-lineage]-k<faults>[-<mutant>]`;
    /// seed 0 leaves `-seed0` out, so another seed never overwrites its report).
    #[arg(long, env = "ACP_CHAOS_OUT")]
    out: Option<PathBuf>,
    #[command(flatten)]
    dir: DirArgs,
}

pub(super) fn exec(a: &ExploreArgs) -> Outcome {
    check_mutant(&a.mutant)?;
    if !(1..=3).contains(&a.faults) {
        return Err(CliError::usage("--faults: 1, 2 or 3"));
    }
    if a.jobs == Some(0) {
        return Err(CliError::usage("--jobs must be at least 1"));
    }
    if a.budget == 0 {
        return Err(CliError::usage("--budget must be at least 1"));
    }
    if a.orders && a.mode != Mode::Exhaustive {
        return Err(CliError::usage(format!(
            "--orders: exhaustive exploration reverses races, not --mode {}",
            a.mode.as_str()
        )));
    }
    let s = scenario::resolve(&scenarios_dir(&a.dir), &a.scenario)?;
    let design = design_of(a, &s)?;
    if a.mutants {
        if !matches!(a.mode, Mode::Exhaustive | Mode::Lineage) {
            return Err(CliError::usage(format!(
                "--mutants explores a trace: --mode exhaustive or lineage, not {}",
                a.mode.as_str()
            )));
        }
        return every_mutant(a, &s, design);
    }
    let plan = Plan::derive(&s, a.seed, a.mutant.as_deref(), design);
    let kinds = kinds_of(a, &plan)?;
    let jobs = jobs(a.jobs, u64::MAX);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs)
        .build()
        .map_err(|e| CliError::usage(format!("--jobs: {e}")))?;
    let out = out_of(a, &s, design);
    // Refused before its report folder is made.
    if matches!(a.mode, Mode::Guided | Mode::Swarm | Mode::Coverage) && s.swarm.is_none() {
        return Err(CliError::usage(format!(
            "--mode {}: {} has no [swarm] section to draw from",
            a.mode.as_str(),
            s.reference
        )));
    }
    if a.mode == Mode::Coverage && a.repeat == 0 {
        return Err(CliError::usage("--repeat must be at least 1"));
    }
    super::writable::into_folder(&out, "--out")?;
    print_start(a, &s, design, &kinds, jobs);
    let started = crate::wall_clock::now();
    if a.mode == Mode::Coverage {
        return coverage_race(a, &s, design, &pool);
    }
    if matches!(a.mode, Mode::Guided | Mode::Swarm) {
        return steered(a, &s, design, &pool, started);
    }
    // Refuse a foreign --out folder before the exploration, not after it.
    certificate::prepare_explore_folder(&out)?;
    let opts = Options {
        faults: a.faults,
        kinds,
        shard: a.shard,
        audit: a.audit_pruning,
        stop_at_first: a.stop_at_first,
        target: None,
        budget: None,
        merge: if a.merge == "protocol-state" {
            exhaustive::Merge::ProtocolStateOnly
        } else {
            exhaustive::Merge::Snapshot
        },
        orders: a.orders,
    };
    let x = explore_trace(a, &plan, opts, &pool);
    let secs = started.elapsed().as_secs_f64();
    print_levels(&x);
    let c = certificate::write(&out, &x, a.shard)?;
    print_certificate(a, &x, &c, secs);
    println!(
        "report: {}/summary.md (certificate.json)  exit {}",
        out.display(),
        c.exit_code
    );
    Ok(c.exit_code)
}

/// The design `explore` runs: `--agent`, or the scenario's first; refused when the scenario
/// does not run it, or when `--mutant` changes another design (a certificate under it would be
/// the correct model's, under the mutant's name).
fn design_of(a: &ExploreArgs, s: &Scenario) -> Result<Design, CliError> {
    let design = a
        .agent
        .or(s.agent.designs.first().copied())
        .unwrap_or(Design::Stored);
    if !s.agent.designs.contains(&design) {
        return Err(CliError::usage(format!(
            "--agent {}: {} runs under {}",
            design.as_str(),
            s.reference,
            s.agent
                .designs
                .iter()
                .map(|d| d.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    if let Some(m) = a
        .mutant
        .as_deref()
        .and_then(acp_chaos::models::mutant::find)
    {
        if !(m.designs.is_empty() || m.designs.contains(&design)) {
            return Err(CliError::usage(format!(
                "--mutant {}: it changes the {} design{}, not {}",
                m.name,
                m.designs
                    .iter()
                    .map(|d| d.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                if m.designs.len() > 1 { "s" } else { "" },
                design.as_str()
            )));
        }
    }
    Ok(design)
}

/// The kinds `--kinds` names, or the plan's defaults ([`exhaustive::default_kinds`]).
fn kinds_of(a: &ExploreArgs, plan: &Plan) -> Result<Vec<FaultKind>, CliError> {
    Ok(if a.kinds.is_empty() {
        exhaustive::default_kinds(plan)
    } else {
        let mut v = Vec::new();
        for k in &a.kinds {
            match FaultKind::ALL.iter().find(|x| x.as_str() == k.trim()) {
                Some(x) => v.push(*x),
                None => {
                    let names: Vec<&str> = FaultKind::ALL.iter().map(|x| x.as_str()).collect();
                    return Err(CliError::usage(format!(
                        "--kinds: unknown fault kind `{k}` (known: {})",
                        names.join(", ")
                    )));
                }
            }
        }
        v
    })
}

/// The report folder: `--out`, or one under `reports/` named after the exploration.
fn out_of(a: &ExploreArgs, s: &Scenario, design: Design) -> PathBuf {
    // Lineage's report is not a certificate: it gets its own folder.
    let name = format!(
        "explore-{}-{}{}{}-k{}{}{}",
        s.name,
        design.as_str(),
        seed_part(a.seed),
        if a.mode == Mode::Lineage {
            "-lineage"
        } else {
            ""
        },
        a.faults,
        if a.orders { "-orders" } else { "" },
        a.mutant
            .as_deref()
            .map(|m| format!("-{m}"))
            .unwrap_or_default()
    );
    match (&a.out, a.shard) {
        (Some(o), _) => o.clone(),
        (None, Some((k, n))) => PathBuf::from("reports").join(format!("{name}-shard{k}of{n}")),
        (None, None) => PathBuf::from("reports").join(&name),
    }
}

/// The line `explore` starts with: what it explores, with what faults, mutant and jobs.
fn print_start(a: &ExploreArgs, s: &Scenario, design: Design, kinds: &[FaultKind], jobs: usize) {
    println!(
        "acp-chaos explore {}: design {}, {}, mutant={}, jobs={jobs}{}",
        s.reference,
        design.as_str(),
        match (a.mode, &s.swarm) {
            // The swarm modes draw the scenario's own fault kinds, as many as it draws.
            (Mode::Guided | Mode::Swarm | Mode::Coverage, Some(w)) => format!(
                "the swarm's faults ({})",
                w.faults
                    .iter()
                    .map(|k| k.as_str())
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            _ => format!(
                "<= {} faults of {}",
                a.faults,
                kinds
                    .iter()
                    .map(|k| k.as_str())
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        },
        a.mutant.as_deref().unwrap_or("none"),
        a.shard
            .map(|(k, n)| format!(", shard {k}/{n}"))
            .unwrap_or_default()
    );
}

/// `--mode guided` or `swarm`: the runs, what they covered and their first violations.
fn steered(
    a: &ExploreArgs,
    s: &Scenario,
    design: Design,
    pool: &rayon::ThreadPool,
    started: std::time::Instant,
) -> Outcome {
    let opts = guided::Options {
        runs: a.budget,
        seed_start: a.seed,
        stop_at_first: a.stop_at_first,
        stop_at_full_coverage: false,
        target: None,
    };
    let g = if a.mode == Mode::Guided {
        guided::guided(s, design, a.mutant.as_deref(), &opts, pool)
    } else {
        guided::plain(s, design, a.mutant.as_deref(), &opts, pool)
    };
    let allowed = guided::allowed_cells(s, &[design]);
    println!(
        "{}: {} runs, first failure at run {}, coverage cells {} of {} allowed{}, corpus {} parents  ({:.1} s)",
        a.mode.as_str(),
        g.runs,
        g.first_catch.map_or("-".to_string(), |r| r.to_string()),
        allowed.iter().filter(|c| g.cells.contains_key(*c)).count(),
        allowed.len(),
        g.full_coverage_at
            .map(|r| format!(", every allowed cell by run {r}"))
            .unwrap_or_default(),
        g.corpus,
        started.elapsed().as_secs_f64()
    );
    let mut last: Vec<(&usize, &String)> = g
        .cells
        .iter()
        .filter(|(c, _)| allowed.contains(*c))
        .map(|(c, r)| (r, c))
        .collect();
    last.sort();
    let tail: Vec<String> = last[last.len().saturating_sub(4)..]
        .iter()
        .map(|(r, c)| format!("{c} (run {r})"))
        .collect();
    println!("  cells hit last: {}", tail.join(", "));
    let never: Vec<&str> = allowed
        .iter()
        .filter(|c| !g.cells.contains_key(*c))
        .map(String::as_str)
        .collect();
    if !never.is_empty() {
        println!("  cells never hit: {}", never.join(", "));
    }
    for e in g.violations.iter().take(3) {
        println!("VIOLATION {}", fault_lines(&e.plan));
        for v in e.verdicts.iter().filter(|v| {
            matches!(
                v.status,
                acp_chaos::checkers::Status::Invalid | acp_chaos::checkers::Status::Unknown
            )
        }) {
            println!("  {}", acp_chaos::checkers::verdict_line(v));
        }
    }
    Ok(if g.violations.is_empty() {
        acp_chaos::exit::VALID
    } else {
        acp_chaos::exit::INVALID
    })
}

/// What each level of an exploration ran and pruned.
fn print_levels(x: &exhaustive::Exploration) {
    for l in &x.levels {
        println!(
            "  {} faults: {} places, {} schedules run, {} pruned as equivalent{}{}{}",
            l.faults,
            l.places,
            l.explored,
            l.pruned,
            if l.not_fired > 0 {
                format!(", {} whose fault never fired", l.not_fired)
            } else {
                String::new()
            },
            if x.orders {
                format!(
                    ", {} race reversals ({} came out reversed, {} whose delay never fired)",
                    l.orders, l.orders_reversed, l.orders_not_fired
                )
            } else {
                String::new()
            },
            if l.sharded {
                " (this shard's slice)"
            } else {
                ""
            }
        );
    }
}

/// What an exhaustive or lineage exploration found: each violation with its replay line, the
/// pruning audit, the certificate's line and scope.
fn print_certificate(
    a: &ExploreArgs,
    x: &exhaustive::Exploration,
    c: &certificate::Certificate,
    secs: f64,
) {
    for v in &c.violations {
        println!("VIOLATION {}", v.faults.join("; "));
        for l in &v.verdicts {
            println!("  {l}");
        }
        if let Some(r) = &v.replay {
            println!("  replay: {}", crate::launch::runnable(r));
        }
    }
    if x.audited > 0 {
        println!(
            "pruning audited on {} pruned schedules: {} differ from their representative",
            x.audited,
            x.mismatches.len()
        );
        let show = |d: &[(String, String)]| {
            if d.is_empty() {
                "no change".to_string()
            } else {
                d.iter()
                    .map(|(p, c)| format!("{p} {c}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        };
        for m in &x.mismatches {
            println!(
                "AUDIT pruned [{}] changed {}; its representative [{}] changed {}",
                m.pruned.join("; "),
                show(&m.pruned_delta),
                m.representative.join("; "),
                show(&m.representative_delta)
            );
        }
    }
    println!("{}  ({} runs, {secs:.1} s)", c.line, x.runs);
    println!("  shapes: {}", c.scope.shapes_line());
    println!("  not placed: {}", c.scope.not_placed.join("; "));
    println!("  fixed: {}", c.scope.fixed.join("; "));
    if a.mode == Mode::Lineage {
        println!(
            "  (lineage runs the schedules its cuts propose, at most --budget {}: evidence, not a certificate)",
            a.budget
        );
    }
}

/// Explore `plan`'s trace: by its lineage (`--mode lineage`: the faults, stop and target of
/// `opts`, at most `--budget` runs) or exhaustively as `opts` says.
fn explore_trace(
    a: &ExploreArgs,
    plan: &Plan,
    opts: Options,
    pool: &rayon::ThreadPool,
) -> exhaustive::Exploration {
    if a.mode == Mode::Lineage {
        lineage::lineage(
            plan,
            &lineage::Options {
                faults: opts.faults,
                budget: a.budget,
                stop_at_first: opts.stop_at_first,
                target: opts.target,
            },
        )
    } else {
        exhaustive::explore(plan, &opts, pool)
    }
}

/// A plan's faults, one line each, joined by `; `.
fn fault_lines(plan: &Plan) -> String {
    plan.faults
        .iter()
        .map(acp_chaos::nemesis::fault_line)
        .collect::<Vec<_>>()
        .join("; ")
}

/// `--mode coverage`: the guided swarm against the plain swarm, runs to every allowed coverage
/// cell from each of `--repeat` bases (base b draws seeds from b·2^20), their medians and the ratio (plain / guided).
fn coverage_race(
    a: &ExploreArgs,
    s: &scenario::Scenario,
    design: Design,
    pool: &rayon::ThreadPool,
) -> Outcome {
    let allowed = guided::allowed_cells(s, &[design]);
    println!(
        "runs until all {} allowed coverage cells were hit ({}, budget {} runs; - = not within it)",
        allowed.len(),
        design.as_str(),
        a.budget
    );
    println!("{:>6}  {:>8}  {:>8}", "base", "guided", "swarm");
    let mut g_runs = Vec::new();
    let mut p_runs = Vec::new();
    let show = |r: Option<usize>| r.map_or("-".to_string(), |r| r.to_string());
    for seed in a.seed..a.seed.saturating_add(a.repeat) {
        // Base seeds far apart: the plain swarm from consecutive bases would share draws.
        let opts = guided::Options {
            runs: a.budget,
            seed_start: seed.saturating_mul(1 << 20),
            stop_at_first: false,
            stop_at_full_coverage: true,
            target: None,
        };
        let g = guided::guided(s, design, a.mutant.as_deref(), &opts, pool).full_coverage_at;
        let p = guided::plain(s, design, a.mutant.as_deref(), &opts, pool).full_coverage_at;
        println!("{seed:>6}  {:>8}  {:>8}", show(g), show(p));
        // Not within the budget counts as one past it: a lower bound.
        g_runs.push(g.unwrap_or(a.budget + 1));
        p_runs.push(p.unwrap_or(a.budget + 1));
    }
    let median = |v: &mut Vec<usize>| {
        v.sort_unstable();
        v[v.len() / 2]
    };
    let (gm, pm) = (median(&mut g_runs), median(&mut p_runs));
    println!(
        "median  {gm:>8}  {pm:>8}   swarm/guided = {:.2}",
        pm as f64 / gm as f64
    );
    Ok(acp_chaos::exit::VALID)
}

/// `--mutants`: each mutant that applies to `design`, explored up to its first catch.
fn every_mutant(a: &ExploreArgs, s: &scenario::Scenario, design: Design) -> Outcome {
    use acp_chaos::models::mutant::MUTANTS;
    let jobs = jobs(a.jobs, u64::MAX);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs)
        .build()
        .map_err(|e| CliError::usage(format!("--jobs: {e}")))?;
    let out = mutants_out(a, s, design);
    super::writable::into_folder(&out, "--out")?;
    let applies: Vec<_> = MUTANTS
        .iter()
        .filter(|m| m.designs.is_empty() || m.designs.contains(&design))
        .collect();
    println!(
        "acp-chaos explore {} --mutants: design {}, <= {} faults{}, {} mutants apply{}",
        s.reference,
        design.as_str(),
        a.faults,
        if a.orders {
            " and every race reversed"
        } else {
            ""
        },
        applies.len(),
        if a.mode == Mode::Lineage {
            format!(", lineage (at most {} runs each)", a.budget)
        } else {
            String::new()
        }
    );
    // What the trace holds decides, before any run, which mutants it cannot show: those cost
    // nothing (a fault never adds a user action, a session or a probe).
    let trace_plan = exhaustive::trace_plan(&Plan::derive(s, a.seed, None, design));
    let trace = world::run(&trace_plan);
    let mut tally = Tally::default();
    // One mutant after the other, each exploration parallel inside: explorations side by side
    // would each hold their level's runs at once.
    for m in applies {
        let lacks = needs::missing(m.name, &trace_plan, &trace);
        if !lacks.is_empty() {
            tally.cannot += 1;
            let what: Vec<&str> = lacks.iter().map(|n| n.what()).collect();
            println!(
                "  {:<32} cannot show: the trace has no {} (no schedule run)",
                m.name,
                what.join(", no ")
            );
            continue;
        }
        explore_mutant(a, s, design, m, &pool, &out, &mut tally)?;
    }
    print_mutant_totals(a, &tally, &out);
    Ok(acp_chaos::exit::VALID)
}

/// `--mutants`' report folder: `--out`, or one named by scenario, design, seed, faults and
/// mode.
fn mutants_out(a: &ExploreArgs, s: &scenario::Scenario, design: Design) -> PathBuf {
    a.out.clone().unwrap_or_else(|| {
        PathBuf::from("reports").join(format!(
            "explore-{}-{}{}-k{}{}-mutants{}",
            s.name,
            design.as_str(),
            seed_part(a.seed),
            a.faults,
            if a.orders { "-orders" } else { "" },
            if a.mode == Mode::Lineage {
                "-lineage"
            } else {
                ""
            }
        ))
    })
}

/// Explore the trace with mutant `m` in it until a schedule catches it: the catch written
/// under `<out>/<mutant>` with its replay line, or a line saying no schedule did; counted in
/// `tally`.
fn explore_mutant(
    a: &ExploreArgs,
    s: &scenario::Scenario,
    design: Design,
    m: &'static acp_chaos::models::mutant::Mutant,
    pool: &rayon::ThreadPool,
    out: &std::path::Path,
    tally: &mut Tally,
) -> Result<(), CliError> {
    use acp_chaos::explore::shrink::Target;
    let plan = Plan::derive(s, a.seed, Some(m.name), design);
    let target = Target::of_mutant(m);
    let opts = Options {
        faults: a.faults,
        kinds: exhaustive::default_kinds(&plan),
        shard: None,
        audit: 0,
        stop_at_first: true,
        target: Some(target.clone()),
        budget: None,
        merge: Default::default(),
        orders: a.orders,
    };
    let x = explore_trace(a, &plan, opts, pool);
    match (x.first_catch, &x.caught) {
        (Some(r), Some(e)) => {
            let verdict = e.verdicts.iter().find(|v| target.matches(v));
            let dir = out.join(m.name);
            certificate::prepare_explore_folder(&dir)?;
            let replay = certificate::write_run(&dir.join("catch"), e, verdict)?;
            let faults = if e.plan.faults.is_empty() {
                "the fault-free trace itself".to_string()
            } else {
                fault_lines(&e.plan)
            };
            let how = if m.finding {
                tally.findings += 1;
                "caught (a finding)"
            } else {
                tally.caught += 1;
                "caught"
            };
            println!(
                "  {:<32} {how} at run {r:>5}: {faults}\n  {:<32} {}",
                m.name,
                "",
                crate::launch::runnable(&replay)
            );
        }
        _ => {
            tally.missed.push(m.name);
            // With --orders the race reversals ran too: say so, or the count undersells
            // what was searched.
            let reversals = if a.orders {
                format!(" and {} race reversals", x.orders())
            } else {
                String::new()
            };
            println!(
                "  {:<32} not shown: {} schedules of <= {} faults{reversals}, none caught it",
                m.name,
                x.explored(),
                a.faults
            )
        }
    }
    Ok(())
}

/// The last line of `--mutants`: how many were caught, could not show, or were not caught
/// within the search.
fn print_mutant_totals(a: &ExploreArgs, tally: &Tally, out: &std::path::Path) {
    let searched = if a.mode == Mode::Lineage {
        format!("within {} lineage runs of <= {} faults", a.budget, a.faults)
    } else {
        format!("by any schedule of <= {} faults", a.faults)
    };
    println!(
        "{} mutants caught on this trace ({} as the violation they cause, {} as the finding they cause), {} cannot show on it (it lacks what they need), {} not caught {searched}{}; report: {}",
        tally.caught + tally.findings,
        tally.caught,
        tally.findings,
        tally.cannot,
        tally.missed.len(),
        if tally.missed.is_empty() {
            String::new()
        } else {
            format!(" ({})", tally.missed.join(", "))
        },
        out.display()
    );
}

/// How `--mutants` ended for the mutants that apply.
#[derive(Default)]
struct Tally {
    /// Caught as the violation they cause.
    caught: usize,
    /// Caught as the finding they cause (a SHOULD or an inferred class).
    findings: usize,
    /// The trace lacks what they need.
    cannot: usize,
    /// Not caught by any schedule searched.
    missed: Vec<&'static str>,
}

/// The default report folder's seed part: none for seed 0, `-seed<N>` otherwise (each seed's
/// trace is another trace: its report must not replace another seed's).
fn seed_part(seed: u64) -> String {
    if seed == 0 {
        String::new()
    } else {
        format!("-seed{seed}")
    }
}
