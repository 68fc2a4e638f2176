//! The test harness: your own Agent, Client or proxy through a campaign, a shrink, a replay
//! and the same report pages as `acp-chaos run`, from your own `cargo test`.
//!
//! A [`Harness`] is a source of plans (a scenario, or a function from a seed to a plan), a
//! design, the [`Parties`] under test and a range of seeds. [`Harness::run`] runs every seed,
//! judges each history with every checker, and on the first seed with an `invalid` verdict
//! shrinks that run ([`crate::explore::shrink::shrink_with`], with your parties in every run),
//! writes its report folder and prints the lines that rerun it:
//!
//! ```text
//! acp-chaos harness: P2 invalid at seed 3 (party client): submission 2 ... acknowledged with ...
//!   rerun:  ACP_CHAOS_SEED=3 cargo test -p my-crate --test chaos -- my_client --exact --nocapture
//!   shrunk: ACP_CHAOS_SCHEDULE=/tmp/acp-chaos/my_client/seed3/schedule.toml cargo test -p ...
//!   report: /tmp/acp-chaos/my_client/seed3/report.html
//! ```
//!
//! The same test reruns one seed when `ACP_CHAOS_SEED` is set, or the shrunk schedule when
//! `ACP_CHAOS_SCHEDULE` names one; `ACP_CHAOS_OUT` moves the report folders (default:
//! `$TMPDIR/acp-chaos/<name>`). Runs are sequential: factories are `Rc` closures (a party
//! need not be `Send`), and one process per test keeps `cargo test`'s own parallelism.
//!
//! ```no_run
//! use acp_chaos::harness::Harness;
//! use acp_chaos::models::{Design, SpecClient};
//!
//! let outcome = Harness::scenario("field-f20-same-key-other-prompt")
//!     .unwrap()
//!     .design(Design::Stored)
//!     .client(|b| Box::new(SpecClient::recover(b.plan.client.clone(), b.boot, b.seed, b.records)))
//!     .seeds(0..20)
//!     .run()
//!     .unwrap();
//! outcome.assert_valid();
//! ```

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use acp_chaos_models::proxy::ProxyModel;
use acp_chaos_models::{AgentModel, ClientModel, Design};
use anyhow::Context;

use crate::checkers::{self, Status, Verdict};
use crate::explore::shrink::{shrink_with, Shrunk, Target};
use crate::history::History;
use crate::plan::Plan;
use crate::scenario::{self, Scenario};
use crate::world::{self, Boot, Parties};

/// Where plans come from.
#[derive(Clone)]
enum Source {
    /// A scenario, derived per seed ([`Plan::derive`]).
    Scenario(Box<Scenario>),
    /// Your own function from a seed to a plan.
    Plans(Rc<dyn Fn(u64) -> Plan>),
}

/// A campaign over your parties: see the [module docs](self).
#[derive(Clone)]
pub struct Harness {
    source: Source,
    design: Design,
    mutant: Option<String>,
    parties: Parties,
    seeds: Range<u64>,
    name: Option<String>,
    out: Option<PathBuf>,
    shrink: bool,
    quiet: bool,
    expect: Option<Expect>,
}

/// What a test expects of one property ([`Harness::expect`], [`Harness::expect_holds`]):
/// the campaign then stops at, shrinks and reports that property's first `invalid` verdict
/// only (a symptom on another property does not hide the cause the test is about).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expect {
    /// The property must be found `invalid` (a seeded bug the test proves is caught).
    Fails(String),
    /// The property must never be found `invalid`.
    Holds(String),
}

impl Expect {
    /// The property expected of.
    pub fn property(&self) -> &str {
        match self {
            Expect::Fails(p) | Expect::Holds(p) => p,
        }
    }
}

/// How [`Harness::explore`] searches, over the plan of the harness's first seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Every schedule of at most `faults` faults placed over the plan's fault-free trace
    /// ([`crate::explore::exhaustive`]), with the certificate naming its scope. Placements
    /// are merged only where every party gives a state digest (`state_digest`); `audit`
    /// pruned schedules are run anyway and compared (`usize::MAX`: all of them).
    Exhaustive {
        /// Most faults per schedule.
        faults: usize,
        /// Pruned schedules to run anyway.
        audit: usize,
    },
    /// Faults cut from what each good outcome of the trace depended on
    /// ([`crate::explore::lineage`]): at most `budget` schedules of at most `faults` faults.
    Lineage {
        /// Most faults per schedule.
        faults: usize,
        /// Most schedules run.
        budget: usize,
    },
    /// The guided swarm over the scenario's draws from the first seed on
    /// ([`crate::explore::guided`]), at most `runs` runs. Scenario harnesses only.
    Guided {
        /// Most runs.
        runs: usize,
    },
}

/// One failing run, shrunk.
#[derive(Debug, Clone)]
pub struct Failure {
    /// The seed it failed at.
    pub seed: u64,
    /// The first `invalid` verdict of the run.
    pub verdict: Verdict,
    /// The run's history.
    pub history: History,
    /// The shrunk schedule (fewest faults, submissions and raw probes that still fail on the
    /// same property, status and party), or `None` when shrinking was off or failed.
    pub shrunk: Option<Shrunk>,
    /// The command that reruns this seed (your test with `ACP_CHAOS_SEED`).
    pub rerun: String,
    /// The command that reruns the shrunk schedule (your test with `ACP_CHAOS_SCHEDULE`).
    pub rerun_shrunk: Option<String>,
    /// The run's report folder (`history.jsonl`, `verdicts.json`, `report.md`, `report.html`,
    /// `schedule.toml`, `repro.txt`).
    pub report: PathBuf,
}

/// What a [`Harness::run`] found.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// Runs made (seeds; one when a seed or schedule was chosen by the environment).
    pub runs: u64,
    /// Verdicts per property and status over every run: `{"P1": {"valid": 20}}`.
    pub counts: BTreeMap<String, BTreeMap<&'static str, u64>>,
    /// Seeds with an `invalid` verdict, in order, with the first such verdict's property.
    pub failing_seeds: Vec<(u64, String)>,
    /// The first failing seed's run, shrunk and written (the campaign stops there).
    pub failure: Option<Failure>,
    /// What the test expects, if it said ([`Harness::expect`]).
    pub expected: Option<Expect>,
    /// [`Harness::explore`]: the 1-based run of the first catch (the expected property's
    /// `invalid` verdict, else any `invalid` or `unknown` one); the trace's run is the first.
    pub first_catch: Option<usize>,
    /// [`Harness::explore`] in [`Mode::Exhaustive`]: the certificate line, naming the parties
    /// that were yours.
    pub certificate: Option<String>,
    /// [`Harness::explore`] in [`Mode::Exhaustive`]: what the certificate covers.
    pub scope: Option<crate::explore::certificate::Scope>,
    /// The runs whose verdicts `counts` holds: every run of [`Harness::run`], the failing
    /// schedules of [`Harness::explore`].
    pub counted: u64,
    /// [`Harness::explore`] in [`Mode::Exhaustive`] with an audit: pruned schedules whose
    /// verdicts differed from their representative's (pruning merged runs whose futures
    /// differ: a party's `state_digest` leaves out something its behaviour depends on). The
    /// assertions fail on any.
    pub audit_mismatches: usize,
}

impl Outcome {
    /// Panics with the first failure's verdict, rerun lines and report path, if there is one:
    /// the assertion a test ends with.
    pub fn assert_valid(&self) {
        self.assert_sound();
        if let Some(f) = &self.failure {
            panic!("{}", f.describe());
        }
    }

    /// Panics when an audit found pruning unsound (see `audit_mismatches`).
    fn assert_sound(&self) {
        assert!(
            self.audit_mismatches == 0,
            "acp-chaos harness: the audit found {} pruned schedules whose verdicts differ from their representative's: a party's state_digest leaves out something its runs depend on",
            self.audit_mismatches
        );
    }

    /// Panics unless the runs met the expectation ([`Harness::expect`]): the expected
    /// property was found `invalid` (`Fails`), or never was (`Holds`); without one, as
    /// [`Outcome::assert_valid`]. The message names the property, the runs and the counts.
    pub fn assert_expected(&self) {
        self.assert_sound();
        match &self.expected {
            Some(Expect::Fails(p)) if self.failure.is_none() => panic!(
                "acp-chaos harness: expected {p} to be found invalid; it was not in {} runs ({p} over the {} runs counted: {})",
                self.runs,
                self.counted,
                self.tally(p)
            ),
            Some(Expect::Fails(_)) => {}
            _ => self.assert_valid(),
        }
    }

    /// Count one run's verdicts in `counts` (and the run in `counted`).
    fn count_run(&mut self, verdicts: &[Verdict]) {
        self.counted += 1;
        for v in verdicts {
            *self
                .counts
                .entry(v.property.clone())
                .or_default()
                .entry(v.status.as_str())
                .or_insert(0) += 1;
        }
    }

    /// `valid 20, unknown 1`: the statuses of `property` over the runs counted.
    fn tally(&self, property: &str) -> String {
        match self.counts.get(property) {
            Some(m) if !m.is_empty() => m
                .iter()
                .map(|(s, n)| format!("{s} {n}"))
                .collect::<Vec<_>>()
                .join(", "),
            _ => "never judged".to_string(),
        }
    }

    /// Runs whose verdict on `property` was `status`.
    pub fn count(&self, property: &str, status: Status) -> u64 {
        self.counts
            .get(property)
            .and_then(|m| m.get(status.as_str()))
            .copied()
            .unwrap_or(0)
    }
}

impl Failure {
    /// The failure as the lines the harness prints.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "acp-chaos harness: {}\n  rerun:  {}",
            found(&self.verdict, self.seed),
            self.rerun
        );
        if let (Some(sh), Some(line)) = (&self.shrunk, &self.rerun_shrunk) {
            let (f, o, r) = sh.after;
            s.push_str(&format!(
                "\n  shrunk: {line}\n          ({f} faults, {o} submissions, {r} raw probes; from {} faults, {} submissions in {} runs)",
                sh.before.0, sh.before.1, sh.runs
            ));
        }
        s.push_str(&format!(
            "\n  report: {}",
            self.report.join("report.html").display()
        ));
        s
    }
}

impl Harness {
    /// A harness over scenario `name_or_path`: a path to a scenario file, or a name looked up
    /// first in your crate's own `scenarios/` folder (the current directory's, which
    /// `cargo test` sets to your crate's root), then among the built-in scenarios
    /// (`acp-chaos list`); a scenario of yours shadows a built-in one of the same name.
    /// Errors name the file and field, as the CLI's do, or the two places looked in.
    pub fn scenario(name_or_path: &str) -> anyhow::Result<Harness> {
        let own = Path::new("scenarios");
        if own.is_dir()
            || Path::new(name_or_path)
                .extension()
                .is_some_and(|x| x == "toml")
        {
            match scenario::resolve(own, name_or_path) {
                Ok(s) => return Ok(Harness::of_scenario(s)),
                Err(scenario::ScenarioError::NotFound(..)) => {}
                Err(e) => anyhow::bail!("{e}"),
            }
        }
        let builtin = scenario::builtin::dir().context("cannot unpack the built-in scenarios")?;
        match scenario::resolve(&builtin, name_or_path) {
            Ok(s) => Ok(Harness::of_scenario(s)),
            Err(scenario::ScenarioError::NotFound(..)) => anyhow::bail!(
                "no scenario named `{name_or_path}` in {} nor among the {} built-in scenarios (`acp-chaos list`)",
                std::env::current_dir()
                    .map(|d| d.join("scenarios").display().to_string())
                    .unwrap_or_else(|_| "./scenarios".into()),
                scenario::builtin::count()
            ),
            Err(e) => anyhow::bail!("{e}"),
        }
    }

    /// A harness over a loaded scenario.
    pub fn of_scenario(s: Scenario) -> Harness {
        Harness::new(Source::Scenario(Box::new(s)))
    }

    /// A harness over your own plans: `plans(seed)` is the run at that seed (e.g. one drawn
    /// from [`crate::explore::strategy`]); its `seed` field should be `seed`.
    pub fn plans<F: Fn(u64) -> Plan + 'static>(plans: F) -> Harness {
        Harness::new(Source::Plans(Rc::new(plans)))
    }

    fn new(source: Source) -> Harness {
        Harness {
            source,
            design: Design::Stored,
            mutant: None,
            parties: Parties::default(),
            seeds: 0..100,
            name: None,
            out: None,
            shrink: true,
            quiet: false,
            expect: None,
        }
    }

    /// Expect `property` (`"P9"`) to be found `invalid`: the campaign stops at, shrinks and
    /// reports that property's first `invalid` verdict, whoever it blames, and
    /// [`Outcome::assert_expected`] panics if no run found it. Other properties' verdicts are
    /// counted, not acted on.
    pub fn expect(mut self, property: &str) -> Harness {
        self.expect = Some(Expect::Fails(property.to_string()));
        self
    }

    /// Expect `property` never to be found `invalid`: the campaign stops at, shrinks and
    /// reports only that property's failures ([`Outcome::assert_expected`] panics on one).
    pub fn expect_holds(mut self, property: &str) -> Harness {
        self.expect = Some(Expect::Holds(property.to_string()));
        self
    }

    /// The Agent design the plan declares (default `stored`): with your own Agent it declares
    /// your Agent's retention to the checkers (`stored`: durable, `in-memory`: process).
    pub fn design(mut self, d: Design) -> Harness {
        self.design = d;
        self
    }

    /// A built-in mutant of the model parties (`acp-chaos list mutants`), e.g. to check that
    /// your Agent survives a faulty Client.
    pub fn mutant(mut self, m: &str) -> Harness {
        self.mutant = Some(m.to_string());
        self
    }

    /// Your Agent, built at every start of the Agent process.
    pub fn agent<F>(mut self, f: F) -> Harness
    where
        F: Fn(Boot<'_>) -> Box<dyn AgentModel> + 'static,
    {
        self.parties = self.parties.agent(f);
        self
    }

    /// Your Client, built at every start of the Client process.
    pub fn client<F>(mut self, f: F) -> Harness
    where
        F: Fn(Boot<'_>) -> Box<dyn ClientModel> + 'static,
    {
        self.parties = self.parties.client(f);
        self
    }

    /// Your proxy, built at every start of the proxy process (scenarios with `proxy = true`).
    pub fn proxy<F>(mut self, f: F) -> Harness
    where
        F: Fn(Boot<'_>) -> Box<dyn ProxyModel> + 'static,
    {
        self.parties = self.parties.proxy(f);
        self
    }

    /// The seeds to run (default `0..100`).
    pub fn seeds(mut self, seeds: Range<u64>) -> Harness {
        self.seeds = seeds;
        self
    }

    /// The name of the report folder and the test filter of the rerun lines (default: the
    /// running test's name, which `cargo test` gives its thread).
    pub fn name(mut self, name: &str) -> Harness {
        self.name = Some(name.to_string());
        self
    }

    /// Where report folders go (default `$ACP_CHAOS_OUT`, else `$TMPDIR/acp-chaos`).
    pub fn out(mut self, dir: impl Into<PathBuf>) -> Harness {
        self.out = Some(dir.into());
        self
    }

    /// Shrink the first failure (default on).
    pub fn shrink(mut self, on: bool) -> Harness {
        self.shrink = on;
        self
    }

    /// Print nothing (the [`Outcome`] still holds everything).
    pub fn quiet(mut self, on: bool) -> Harness {
        self.quiet = on;
        self
    }

    /// The plan at `seed`.
    pub fn plan(&self, seed: u64) -> Plan {
        match &self.source {
            Source::Scenario(s) => Plan::derive(s, seed, self.mutant.as_deref(), self.design),
            Source::Plans(f) => f(seed),
        }
    }

    /// Run one plan with the parties under test and return its history.
    pub fn run_plan(&self, plan: &Plan) -> History {
        world::Run::new(plan).parties(&self.parties).history()
    }

    /// Run the campaign: every seed (or only `ACP_CHAOS_SEED`, or only the schedule file
    /// `ACP_CHAOS_SCHEDULE`), stopping at the first `invalid` verdict, which it shrinks,
    /// writes and prints. Errors: an unreadable schedule file or a bad `ACP_CHAOS_SEED`
    /// (naming it), or a report folder that cannot be written.
    pub fn run(&self) -> anyhow::Result<Outcome> {
        self.known_property()?;
        let mut outcome = Outcome {
            expected: self.expect.clone(),
            ..Outcome::default()
        };
        if let Some(file) = env_nonempty("ACP_CHAOS_SCHEDULE") {
            let plan = Plan::load(Path::new(&file)).context("ACP_CHAOS_SCHEDULE")?;
            let folder = format!("schedule-seed{}", plan.seed);
            let rerun = self.command(
                self.test_name().as_deref(),
                &format!("ACP_CHAOS_SCHEDULE={}", shell_quote(&file)),
            );
            self.judge(&mut outcome, plan, self.shrink, &folder, Some(rerun))?;
            return Ok(outcome);
        }
        let seeds: Box<dyn Iterator<Item = u64>> = match env_nonempty("ACP_CHAOS_SEED") {
            Some(s) => {
                let seed: u64 = s.parse().with_context(|| {
                    format!("ACP_CHAOS_SEED: `{s}` is not a seed (an integer 0..2^64)")
                })?;
                Box::new(std::iter::once(seed))
            }
            None => Box::new(self.seeds.clone()),
        };
        for seed in seeds {
            let folder = format!("seed{seed}");
            if self.judge(&mut outcome, self.plan(seed), self.shrink, &folder, None)? {
                break;
            }
        }
        Ok(outcome)
    }

    /// Explore your parties' runs beyond seeds ([`Mode`]) over the plan of the first seed
    /// (`Harness::seeds`), one run at a time on this thread. The first failing schedule (of
    /// the expected property, if [`Harness::expect`] named one) is shrunk, written and printed
    /// as [`Harness::run`] does, with a rerun line naming the schedule file (`explored.toml`):
    /// with `ACP_CHAOS_SCHEDULE` set, the test reruns that one run instead of the exploration
    /// (`ACP_CHAOS_SEED` does not apply: an exploration's schedules are not seeds). With `expect` (`Fails`) the search stops at the first catch and
    /// writes no certificate (it did not explore everything); `counts` hold the failing
    /// schedules' verdicts. Errors: [`Mode::Guided`] on a harness of plans (it draws from a
    /// scenario), an expected property no checker judges, a failing schedule that does not fail
    /// again when rerun (a party that depends on something outside the seed), and as
    /// [`Harness::run`].
    pub fn explore(&self, mode: Mode) -> anyhow::Result<Outcome> {
        self.known_property()?;
        // A rerun line of an exploration names its schedule file: run that one run.
        if env_nonempty("ACP_CHAOS_SCHEDULE").is_some() {
            return self.run();
        }
        let mut outcome = Outcome {
            expected: self.expect.clone(),
            ..Outcome::default()
        };
        let (violations, runs, first_catch) = self.search(mode, &mut outcome)?;
        outcome.runs = runs as u64;
        outcome.first_catch = first_catch;
        for e in &violations {
            outcome.count_run(&e.verdicts);
            if let Some(v) = e.verdicts.iter().find(|v| self.acts_on(v)) {
                outcome
                    .failing_seeds
                    .push((e.plan.seed, v.property.clone()));
            }
        }
        if !self.quiet {
            if let Some(c) = &outcome.certificate {
                eprintln!("acp-chaos harness: {c}");
            }
        }
        let Some(e) = violations
            .iter()
            .find(|e| e.verdicts.iter().any(|v| self.acts_on(v)))
        else {
            return Ok(outcome);
        };
        outcome.failure = self.replay(e)?.failure;
        Ok(outcome)
    }

    /// The search `mode` names over the first seed's plan, one run at a time: its failing
    /// schedules, its runs and the run of its first catch. An exhaustive search that explored
    /// everything leaves its certificate and scope in `outcome`.
    fn search(
        &self,
        mode: Mode,
        outcome: &mut Outcome,
    ) -> anyhow::Result<(
        Vec<crate::explore::exhaustive::Explored>,
        usize,
        Option<usize>,
    )> {
        use crate::explore::{certificate::Scope, exhaustive, guided, lineage};
        let plan = self.plan(self.seeds.start);
        let target = self.expect.as_ref().map(|e| Target::invalid(e.property()));
        let stop_at_first = matches!(self.expect, Some(Expect::Fails(_)));
        // One thread: with your parties runs are sequential anyway, and with the models it
        // keeps `cargo test`'s own parallelism.
        let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build()?;
        let yours = match self.parties.replaced() {
            r if r.is_empty() => "none (every party the project's model)".to_string(),
            r => r.join(", "),
        };
        Ok(match mode {
            Mode::Exhaustive { faults, audit } => {
                let opts = exhaustive::Options {
                    faults,
                    kinds: exhaustive::default_kinds(&plan),
                    shard: None,
                    audit,
                    stop_at_first,
                    target,
                    budget: None,
                    merge: exhaustive::Merge::Snapshot,
                    orders: false,
                };
                let x = exhaustive::explore_with(&plan, &opts, &pool, &self.parties);
                outcome.audit_mismatches = x.mismatches.len();
                if !stop_at_first {
                    outcome.certificate = Some(format!(
                        "{}; {} pruned audited, {} disagreed; parties yours: {yours}",
                        x.certificate(),
                        x.audited,
                        x.mismatches.len()
                    ));
                    outcome.scope = Some(Scope::of(&x));
                }
                (x.violations, x.runs, x.first_catch)
            }
            Mode::Lineage { faults, budget } => {
                let opts = lineage::Options {
                    faults,
                    budget,
                    stop_at_first,
                    target,
                };
                let x = lineage::lineage_with(&plan, &opts, &self.parties);
                (x.violations, x.runs, x.first_catch)
            }
            Mode::Guided { runs } => {
                let Source::Scenario(sc) = &self.source else {
                    anyhow::bail!(
                        "Harness::explore(Mode::Guided) draws runs from a scenario: build the harness with Harness::scenario or Harness::of_scenario"
                    );
                };
                let opts = guided::Options {
                    runs,
                    seed_start: self.seeds.start,
                    stop_at_first,
                    target,
                    stop_at_full_coverage: false,
                };
                let g = guided::guided_with(
                    sc,
                    self.design,
                    self.mutant.as_deref(),
                    &opts,
                    &pool,
                    &self.parties,
                );
                (g.violations, g.runs, g.first_catch)
            }
        })
    }

    /// Run an exploration's failing schedule `e` again as [`Harness::run`] does (shrunk,
    /// written, printed, with a rerun line naming `explored.toml`, written beside it); an
    /// error when it passes this time.
    fn replay(&self, e: &crate::explore::exhaustive::Explored) -> anyhow::Result<Outcome> {
        // `1.48` (exhaustive, lineage) or `run 12` (guided): one word for a folder name.
        let folder = format!("explore-{}", e.id.replace(['.', ' '], "-"));
        let file = self.report_dir(&folder).join("explored.toml");
        let rerun = self.command(
            self.test_name().as_deref(),
            &format!(
                "ACP_CHAOS_SCHEDULE={}",
                shell_quote(&file.display().to_string())
            ),
        );
        let mut one = Outcome {
            expected: self.expect.clone(),
            ..Outcome::default()
        };
        self.judge(
            &mut one,
            e.plan.clone(),
            self.shrink,
            &folder,
            Some(rerun.clone()),
        )?;
        if one.failure.is_none() {
            anyhow::bail!(
                "schedule {} of the exploration failed ({}) but passed when run again: a party's behaviour depends on something outside the run's seed (the OS's randomness, a clock, a global); its faults: {}",
                e.id,
                e.verdicts
                    .iter()
                    .filter(|v| self.acts_on(v))
                    .map(|v| v.property.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                e.plan
                    .faults
                    .iter()
                    .map(crate::nemesis::fault_line)
                    .collect::<Vec<_>>()
                    .join("; ")
            );
        }
        {
            let body = format!(
                "# schedule {} of the exploration ({} faults); rerun: {rerun}\n{}",
                e.id,
                e.plan.faults.len(),
                crate::plan::file::to_toml(&e.plan)?
            );
            crate::folders::write_atomic(&file, body.as_bytes())
                .with_context(|| format!("{}", file.display()))?;
        }
        Ok(one)
    }

    /// An error when the expected property ([`Harness::expect`]) is not one a checker judges:
    /// `"P99"` or `"p2"` would otherwise hold vacuously.
    fn known_property(&self) -> anyhow::Result<()> {
        let Some(e) = &self.expect else {
            return Ok(());
        };
        let known: Vec<&str> = checkers::CHECKERS
            .iter()
            .map(|c| c.property.as_str())
            .collect();
        if known.contains(&e.property()) {
            return Ok(());
        }
        anyhow::bail!(
            "Harness::expect: no checker judges `{}` (the properties: {})",
            e.property(),
            known.join(" ")
        )
    }

    /// The report folder `folder` of this test: under [`Harness::out`], else
    /// `$ACP_CHAOS_OUT`, else `$TMPDIR/acp-chaos`, then the test's name.
    fn report_dir(&self, folder: &str) -> PathBuf {
        let root = self.out.clone().unwrap_or_else(|| {
            env_nonempty("ACP_CHAOS_OUT")
                .map(PathBuf::from)
                .unwrap_or_else(|| std::env::temp_dir().join("acp-chaos"))
        });
        root.join(self.test_name().unwrap_or_else(exe_name).replace("::", "-"))
            .join(folder)
    }

    /// Run and judge one plan; on an `invalid` verdict shrink (if `shrink`), write the report
    /// folder `folder`, print, and return true. `rerun`: the line that reran this plan, when
    /// it did not come from a seed.
    fn judge(
        &self,
        outcome: &mut Outcome,
        plan: Plan,
        shrink: bool,
        folder: &str,
        rerun: Option<String>,
    ) -> anyhow::Result<bool> {
        let h = self.run_plan(&plan);
        let verdicts = checkers::check_all(&h);
        outcome.runs += 1;
        outcome.count_run(&verdicts);
        let Some(v) = verdicts.iter().find(|v| self.acts_on(v)) else {
            return Ok(false);
        };
        outcome.failing_seeds.push((plan.seed, v.property.clone()));
        let target = Target::of_verdict(v);
        let shrunk = shrink
            .then(|| shrink_with(&plan, &target, &self.parties).ok())
            .flatten();
        // Said before the report is written: a folder that cannot be written must not hide
        // what the campaign found.
        let found = found(v, plan.seed);
        let failure = self
            .write(&plan, v.clone(), h, shrunk, &verdicts, folder, rerun)
            .with_context(|| {
                format!("found {found}, but could not write its report folder (ACP_CHAOS_OUT or Harness::out)")
            })?;
        if !self.quiet {
            eprintln!("{}", failure.describe());
        }
        outcome.failure = Some(failure);
        Ok(true)
    }

    /// Whether the campaign stops at, shrinks and reports verdict `v`: an `invalid` one, of
    /// the expected property if the test named one.
    fn acts_on(&self, v: &Verdict) -> bool {
        v.status == Status::Invalid
            && self
                .expect
                .as_ref()
                .is_none_or(|e| e.property() == v.property)
    }

    /// Write the failing run's folder and build its [`Failure`].
    #[allow(clippy::too_many_arguments)] // the run's parts, each used once
    fn write(
        &self,
        plan: &Plan,
        verdict: Verdict,
        history: History,
        shrunk: Option<Shrunk>,
        verdicts: &[Verdict],
        folder: &str,
        rerun: Option<String>,
    ) -> anyhow::Result<Failure> {
        let name = self.test_name();
        let dir = self.report_dir(folder);
        // Ours alone: a folder left by an earlier run of this test would mix two runs' files.
        if dir.is_dir() {
            std::fs::remove_dir_all(&dir).with_context(|| format!("{}", dir.display()))?;
        }
        std::fs::create_dir_all(&dir).with_context(|| format!("{}", dir.display()))?;
        let put = |file: &str, bytes: &[u8]| crate::folders::write_atomic(&dir.join(file), bytes);
        let mut buf = Vec::new();
        history.write_jsonl(&mut buf)?;
        put("history.jsonl", &buf)?;
        put("verdicts.json", &serde_json::to_vec_pretty(verdicts)?)?;
        put("plan.toml", toml::to_string(plan)?.as_bytes())?;
        let rerun = rerun.unwrap_or_else(|| {
            self.command(name.as_deref(), &format!("ACP_CHAOS_SEED={}", plan.seed))
        });
        put("repro.txt", format!("{rerun}\n").as_bytes())?;
        let mut rerun_shrunk = None;
        let mut shrunk_run = None;
        if let Some(sh) = &shrunk {
            let file = dir.join("schedule.toml");
            let line = self.command(
                name.as_deref(),
                &format!(
                    "ACP_CHAOS_SCHEDULE={}",
                    shell_quote(&file.display().to_string())
                ),
            );
            put(
                "schedule.toml",
                format!(
                    "# shrunk from seed {} ({}); keeps {}: {}\n# rerun: {line}\n{}",
                    plan.seed,
                    self.parties.replaced().join(", "),
                    sh.verdict.property,
                    sh.verdict.message,
                    crate::plan::file::to_toml(&sh.plan)?
                )
                .as_bytes(),
            )?;
            let h = self.run_plan(&sh.plan);
            let mut buf = Vec::new();
            h.write_jsonl(&mut buf)?;
            put("shrunk.jsonl", &buf)?;
            let (f, o, r) = sh.after;
            shrunk_run = Some((
                h,
                line.clone(),
                format!("{f} faults, {o} submissions, {r} raw probes"),
            ));
            rerun_shrunk = Some(line);
        }
        let schedule = std::fs::read_to_string(dir.join("schedule.toml")).ok();
        let scenario = match &self.source {
            Source::Scenario(s) => s.name.clone(),
            Source::Plans(_) => "plan".to_string(),
        };
        let (drawn, shown) = match (&shrunk_run, &shrunk) {
            (Some((h, line, size)), Some(sh)) => {
                (h, (&sh.verdict, Some((line.clone(), size.clone()))))
            }
            _ => (&history, (&verdict, None)),
        };
        let c = crate::report::Counterexample {
            scenario: &scenario,
            verdict: shown.0,
            repro: &rerun,
            shrunk: shown.1,
            schedule: schedule.as_deref(),
            history: drawn,
        };
        put("report.md", crate::report::counterexample_md(&c).as_bytes())?;
        put(
            "report.html",
            crate::report::counterexample_html(&c).as_bytes(),
        )?;
        Ok(Failure {
            seed: plan.seed,
            verdict,
            history,
            shrunk,
            rerun,
            rerun_shrunk,
            report: dir,
        })
    }

    /// The running test's name: [`Harness::name`], else the thread's name as `cargo test`
    /// gives it (`None` on the main thread, e.g. in an example's `main`).
    fn test_name(&self) -> Option<String> {
        self.name.clone().or_else(|| {
            std::thread::current()
                .name()
                .filter(|n| *n != "main")
                .map(str::to_string)
        })
    }

    /// `ENV=... cargo test -p PKG --test|--example|--lib T -- NAME --exact --nocapture`, from the running
    /// executable (`target/debug/deps/T-HASH`, `target/debug/examples/T-HASH`).
    fn command(&self, name: Option<&str>, env: &str) -> String {
        let exe = std::env::current_exe().unwrap_or_default();
        let (target, hashed) = exe_target();
        let target = target.as_str();
        let in_examples = exe
            .parent()
            .and_then(|p| p.file_name())
            .is_some_and(|p| p == "examples");
        let pkg = std::env::var("CARGO_PKG_NAME").unwrap_or_default();
        let mut cmd = format!("{env} cargo {}", if hashed { "test" } else { "run" });
        if !pkg.is_empty() {
            cmd.push_str(&format!(" -p {pkg}"));
        }
        // Cargo turns `-` into `_` in binary names: find the target's own spelling.
        let spelled = |folder: &str| {
            let root = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
            let dir = Path::new(&root).join(folder);
            [target.to_string(), target.replace('_', "-")]
                .into_iter()
                .find(|t| {
                    dir.join(format!("{t}.rs")).is_file() || dir.join(t).join("main.rs").is_file()
                })
                .unwrap_or_else(|| target.to_string())
        };
        if in_examples {
            cmd.push_str(&format!(" --example {}", spelled("examples")));
        } else if target == pkg.replace('-', "_") {
            cmd.push_str(" --lib");
        } else if !target.is_empty() {
            cmd.push_str(&format!(" --test {}", spelled("tests")));
        }
        if let (Some(n), true) = (name, hashed) {
            // `--nocapture`: a rerun that passes still shows what the harness printed.
            cmd.push_str(&format!(" -- {n} --exact --nocapture"));
        } else if !hashed {
            // `cargo run`: the program's own arguments, as given.
            let args: Vec<String> = std::env::args().skip(1).map(|a| shell_quote(&a)).collect();
            if !args.is_empty() {
                cmd.push_str(&format!(" -- {}", args.join(" ")));
            }
        }
        cmd
    }
}

/// `P2 invalid at seed 3 (party client): MESSAGE`.
fn found(v: &Verdict, seed: u64) -> String {
    let party = v
        .party
        .map(|p| format!(" (party {})", format!("{p:?}").to_lowercase()))
        .unwrap_or_default();
    format!(
        "{} {} at seed {seed}{party}: {}",
        v.property,
        v.status.as_str(),
        v.message
    )
}

/// The running program's name without cargo's hash (`harness_agent`), for its report folder.
fn exe_name() -> String {
    let (target, _) = exe_target();
    if target.is_empty() {
        "harness".into()
    } else {
        target
    }
}

/// The running program's target name and whether cargo hashed it: a test binary is `T-HASH`
/// (16 hex digits); `cargo run --example T` builds plain `T`.
fn exe_target() -> (String, bool) {
    let exe = std::env::current_exe().unwrap_or_default();
    let stem = exe.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
    match stem.rsplit_once('-') {
        Some((t, h)) if h.len() == 16 && h.bytes().all(|b| b.is_ascii_hexdigit()) => {
            (t.to_string(), true)
        }
        _ => (stem.to_string(), false),
    }
}

/// `s` as one shell word: as is when it is plain, else in single quotes.
fn shell_quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// An environment variable, `None` when unset or empty.
fn env_nonempty(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}
