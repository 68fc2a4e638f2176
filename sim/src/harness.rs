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
//!   rerun:  ACP_CHAOS_SEED=3 cargo test -p my-crate --test chaos -- my_client --exact
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
}

impl Outcome {
    /// Panics with the first failure's verdict, rerun lines and report path, if there is one:
    /// the assertion a test ends with.
    pub fn assert_valid(&self) {
        if let Some(f) = &self.failure {
            panic!("{}", f.describe());
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
    /// A harness over scenario `name_or_path`: a name from the `scenarios/` folder (the
    /// current directory's, else the project's) or a path to a scenario file. Errors name the
    /// file and field, as the CLI's do.
    pub fn scenario(name_or_path: &str) -> anyhow::Result<Harness> {
        let dir = scenario::find_dir(None);
        let s = scenario::resolve(&dir, name_or_path).map_err(|e| anyhow::anyhow!("{e}"))?;
        Ok(Harness::of_scenario(s))
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
        }
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
        world::run_parties(plan, &self.parties)
    }

    /// Run the campaign: every seed (or only `ACP_CHAOS_SEED`, or only the schedule file
    /// `ACP_CHAOS_SCHEDULE`), stopping at the first `invalid` verdict, which it shrinks,
    /// writes and prints. Errors: an unreadable schedule file or a bad `ACP_CHAOS_SEED`
    /// (naming it), or a report folder that cannot be written.
    pub fn run(&self) -> anyhow::Result<Outcome> {
        let mut outcome = Outcome::default();
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
        for v in &verdicts {
            *outcome
                .counts
                .entry(v.property.clone())
                .or_default()
                .entry(v.status.as_str())
                .or_insert(0) += 1;
        }
        let Some(v) = verdicts.iter().find(|v| v.status == Status::Invalid) else {
            return Ok(false);
        };
        outcome.failing_seeds.push((plan.seed, v.property.clone()));
        let target = Target {
            property: v.property.clone(),
            status: v.status,
            party: v.party,
        };
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
        let root = self.out.clone().unwrap_or_else(|| {
            env_nonempty("ACP_CHAOS_OUT")
                .map(PathBuf::from)
                .unwrap_or_else(|| std::env::temp_dir().join("acp-chaos"))
        });
        let dir = root
            .join(name.clone().unwrap_or_else(exe_name).replace("::", "-"))
            .join(folder);
        // Ours alone: a folder left by an earlier run of this test would mix two runs' files.
        if dir.is_dir() {
            std::fs::remove_dir_all(&dir).with_context(|| format!("{}", dir.display()))?;
        }
        std::fs::create_dir_all(&dir).with_context(|| format!("{}", dir.display()))?;
        let put = |file: &str, bytes: &[u8]| {
            crate::campaign::folders::write_atomic(&dir.join(file), bytes)
        };
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

    /// `ENV=... cargo test -p PKG --test|--example|--lib T -- NAME --exact`, from the running
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
            cmd.push_str(&format!(" -- {n} --exact"));
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
