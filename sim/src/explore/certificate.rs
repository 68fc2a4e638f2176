//! An exploration's report folder: `certificate.json` (the counts per level, the kinds placed,
//! the order hash, every violation with its schedule file), `summary.md`, and per violating
//! schedule a folder with `schedule.toml` (replay it with `acp-chaos replay --schedule`),
//! `history.jsonl`, `verdicts.json`, `report.md` and `report.html`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use std::collections::{BTreeMap, BTreeSet};

use super::exhaustive::{default_kinds, Exploration, Explored, Level, STORE_FAULT_LONG_MS};
use crate::checkers::{verdict_line, Status};
use crate::folders::{prepare_folder, write_atomic};
use crate::nemesis::fault_line;
use crate::nemesis::kinds::ByDefault;
use crate::nemesis::FaultKind;
use crate::report::{counterexample_html, counterexample_md, Counterexample};
use crate::world;

/// `certificate.json`'s format version (2: the certificate names its [`Scope`]).
pub const CERTIFICATE_FORMAT: u32 = 2;

/// What a certificate covers, read off the exploration itself: the trace (scenario and seed),
/// the design, the bound, the fixed latency, every fault shape placed with how many schedules
/// placed it, the fault kinds it did not place and why, and what no schedule varies. A claim
/// "no schedule breaks the trace" is about these and nothing else.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scope {
    /// The scenario whose fault-free run is the trace.
    pub scenario: String,
    /// The seed its plan was derived with.
    pub seed: u64,
    /// Agent design.
    pub design: String,
    /// Mutant, if any.
    pub mutant: Option<String>,
    /// Most faults per schedule.
    pub faults: usize,
    /// The one latency every frame takes, ms.
    pub latency_ms: u64,
    /// Each shape placed (`kind settings @ frames | point P | submissions`) → how many
    /// schedules placed it (run or pruned).
    pub shapes: BTreeMap<String, usize>,
    /// Fault kinds no schedule placed, each with why (`drop-updates: not in the kinds placed`).
    pub not_placed: Vec<String>,
    /// What no schedule varies.
    pub fixed: Vec<String>,
    /// Whether every run's races were reversed (`--orders`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub orders: bool,
}

impl Scope {
    /// The scope of an exploration.
    pub fn of(x: &Exploration) -> Scope {
        let placed = |k: FaultKind| {
            x.shapes.keys().any(|s| {
                s.strip_prefix(k.as_str())
                    .is_some_and(|r| r.starts_with(' '))
            })
        };
        let not_placed = FaultKind::ALL
            .iter()
            .filter(|k| !placed(**k))
            .map(|k| format!("{} ({})", k.as_str(), not_placed_why(x, *k)))
            .collect();
        let mut fixed = vec![
            format!(
                "latency: every frame takes {} ms",
                x.base.latency_ms_min
            ),
            "durations: only those in the shapes (a stall, heal or restart of another length is not covered)"
                .to_string(),
            if x.orders {
                ORDERS_COVERED.to_string()
            } else {
                "delivery order: the trace's; concurrent deliveries are not reordered".to_string()
            },
            format!(
                "workload and the parties' seeded draws: those of seed {}",
                x.base.seed
            ),
        ];
        if x.base.cluster() {
            fixed.push(format!(
                "a store cut heals after 100 or {STORE_FAULT_LONG_MS} ms and a crashed store restarts after 50 or {STORE_FAULT_LONG_MS} ms (lineage widens a store fault to outlast a later break: other lengths are not covered)"
            ));
        }
        Scope {
            scenario: x.base.scenario.clone(),
            seed: x.base.seed,
            design: x.base.agent.design.as_str().to_string(),
            mutant: x.base.mutant.clone(),
            faults: x.levels.len().saturating_sub(1),
            latency_ms: x.base.latency_ms_min,
            shapes: x.shapes.clone(),
            not_placed,
            fixed,
            orders: x.orders,
        }
    }

    /// The shapes, one entry per fault kind: its settings and where it lands
    /// (`lose-frame (silent | visible close) @ frames`).
    pub fn shapes_line(&self) -> String {
        let mut by_kind: BTreeMap<&str, (BTreeSet<&str>, BTreeSet<&str>)> = BTreeMap::new();
        for s in self.shapes.keys() {
            let (fault, at) = s.split_once(" @ ").unwrap_or((s, ""));
            let (kind, settings) = fault.split_once(' ').unwrap_or((fault, ""));
            let e = by_kind.entry(kind).or_default();
            if !settings.is_empty() {
                e.0.insert(settings);
            }
            e.1.insert(at);
        }
        by_kind
            .iter()
            .map(|(k, (settings, at))| {
                let s = if settings.is_empty() {
                    String::new()
                } else {
                    format!(
                        " [{}]",
                        settings.iter().copied().collect::<Vec<_>>().join(" | ")
                    )
                };
                let at: Vec<&str> = at.iter().copied().collect();
                format!("{k}{s} @ {}", at.join(", "))
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// What `--orders` varies of the delivery order, and what it does not.
pub const ORDERS_COVERED: &str = "delivery order: the trace's, and over every run schedule's run (not a pruned one's) each race reversed once (two deliveries to one host on different connections, or two nodes' ops at the store, neither causing the other, touching one session or one of them naming none: the first delayed just past the second, a frame by stall-frame, a node's insert by stall-point at after-insert-before-sync, each delay as long as its race needs; a reversal whose run delivered both, the second first, came out reversed); not reversed: a race whose first delivery is a store op other than an insert or a frame without a trigger, two races in one run, and a reversal that did not come out reversed is not tried again longer";

/// Why exploration `x` placed no fault of kind `k`.
fn not_placed_why(x: &Exploration, k: FaultKind) -> &'static str {
    if x.kinds.contains(&k) {
        // Asked for, but the trace lacks what it acts on (a stdio pipe for half-open).
        let t = x.base.topology();
        return match k.reach().missing() {
            Some(why) if !t.acts(k.reach()) => why,
            _ => "no place of the trace takes it",
        };
    }
    if default_kinds(&x.base).contains(&k) {
        return "left out by --kinds";
    }
    let by_default = k.row().explore.by_default;
    if let ByDefault::LeftOut(why) = by_default {
        return why;
    }
    if !x.base.topology().acts(k.reach()) {
        return k.reach().missing().unwrap_or_default();
    }
    if let ByDefault::Never(why) = by_default {
        return why;
    }
    "not placed by default: --kinds places it"
}

// The certificate line is written here, beside the scope it names (the exploration knows
// nothing of certificates: no import circle).
impl Exploration {
    /// The certificate line: `explored: N schedules of <=k faults over TRACE under DESIGN
    /// (seed S, latency L ms, F fault shapes), M pruned as equivalent, V violations`; the
    /// shapes and what was left out are in [`Scope`].
    pub fn certificate(&self) -> String {
        certificate_line(
            &Scope::of(self),
            self.explored(),
            (self.orders(), self.orders_reversed()),
            self.pruned(),
            self.violations.len(),
        )
    }
}

/// The certificate line ([`Exploration::certificate`]; a merge of shards writes the same);
/// `orders`: (reversals run, reversals that came out in the other order), named with `--orders`.
pub fn certificate_line(
    scope: &Scope,
    explored: usize,
    orders: (usize, usize),
    pruned: usize,
    violations: usize,
) -> String {
    let orders = if scope.orders {
        format!(
            " and {} race reversals ({} came out reversed)",
            orders.0, orders.1
        )
    } else {
        String::new()
    };
    format!(
        "explored: {explored} schedules of <={} faults{orders} over {} under {} (seed {}, latency {} ms, {} fault shapes), {pruned} pruned as equivalent, {violations} violations",
        scope.faults,
        scope.scenario,
        scope.design,
        scope.seed,
        scope.latency_ms,
        scope.shapes.len()
    )
}

/// One violating schedule, as `certificate.json` lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Violation {
    /// Its place in the exploration (`L.I`: the `I`-th schedule of level `L`).
    pub id: String,
    /// Its faults, one line each, in firing order.
    pub faults: Vec<String>,
    /// The verdicts that failed, one line each.
    pub verdicts: Vec<String>,
    /// The properties that failed.
    pub properties: Vec<String>,
    /// Each failure as `property status party` (the first schedule of each gets a folder).
    pub kinds: Vec<String>,
    /// The run's history hash.
    pub hash: String,
    /// Its folder, when kept (the first per property).
    pub folder: Option<String>,
    /// The command that replays it.
    pub replay: Option<String>,
}

/// `certificate.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Certificate {
    /// Format version ([`CERTIFICATE_FORMAT`]).
    pub format: u32,
    /// Scenario.
    pub scenario: String,
    /// Agent design.
    pub design: String,
    /// Mutant, if any.
    pub mutant: Option<String>,
    /// Most faults per schedule.
    pub faults: usize,
    /// The fault kinds placed.
    pub kinds: Vec<String>,
    /// `[K, N]` for shard K of N (the last level is split).
    pub shard: Option<(u64, u64)>,
    /// What the certificate covers.
    pub scope: Scope,
    /// Counts per level (level 0 is the fault-free trace).
    pub levels: Vec<Level>,
    /// Schedules run over every level.
    pub explored: usize,
    /// Schedules pruned as equivalent.
    pub pruned: usize,
    /// Pruned schedules run anyway by `--audit-pruning`, and how many disagreed.
    pub audited: usize,
    /// Audit disagreements (pruning merged schedules whose verdicts differ).
    pub audit_mismatches: usize,
    /// SHA-256 over the schedules run, in order.
    pub order_hash: String,
    /// The certificate line.
    pub line: String,
    /// Every violating schedule.
    pub violations: Vec<Violation>,
    /// Exit code.
    pub exit_code: i32,
}

/// The exit code of an exploration: 1 for an invalid verdict or an audit disagreement, 4 for
/// an unknown one, else 0.
pub fn exit_code(x: &Exploration) -> i32 {
    let statuses = || x.violations.iter().flat_map(|v| v.verdicts.iter());
    if !x.mismatches.is_empty() || statuses().any(|v| v.status == Status::Invalid) {
        crate::exit::INVALID
    } else if statuses().any(|v| v.status == Status::Unknown) {
        crate::exit::LIVENESS
    } else {
        crate::exit::VALID
    }
}

fn failed_lines(e: &Explored) -> Vec<String> {
    e.verdicts
        .iter()
        .filter(|v| matches!(v.status, Status::Invalid | Status::Unknown))
        .map(verdict_line)
        .collect()
}

/// Make `out` ready for an explore report: created, or holding only an earlier one
/// (`certificate.json`, `summary.md`, violation folders); anything else is refused (an
/// error naming the file), before any schedule runs.
pub fn prepare_explore_folder(out: &Path) -> anyhow::Result<()> {
    prepare_folder(out, "an acp-chaos explore artefact", |name, path| {
        matches!(
            name.trim_end_matches(".tmp"),
            "certificate.json" | "summary.md"
        ) || (path.join("schedule.toml").exists() && (name.starts_with('v') || name == "catch"))
    })?;
    Ok(())
}

/// Write the report folder `out` and return the certificate (the first violating schedule of
/// each property gets its own folder).
pub fn write(
    out: &Path,
    x: &Exploration,
    shard: Option<(u64, u64)>,
) -> anyhow::Result<Certificate> {
    prepare_explore_folder(out)?;
    // The first violating schedule of each (property, status, party) gets a folder.
    let mut kept: Vec<String> = Vec::new();
    let mut violations = Vec::new();
    for e in &x.violations {
        let failed: Vec<&crate::checkers::Verdict> = e
            .verdicts
            .iter()
            .filter(|v| matches!(v.status, Status::Invalid | Status::Unknown))
            .collect();
        let props: Vec<String> = failed.iter().map(|v| v.property.clone()).collect();
        let kinds: Vec<String> = failed
            .iter()
            .map(|v| format!("{} {:?} {:?}", v.property, v.status, v.party))
            .collect();
        let new = kinds.iter().any(|k| !kept.contains(k));
        let (folder, replay) = if new {
            kept.extend(kinds.iter().cloned());
            let name = format!("v{}-{}", e.id, props.join("-"));
            let replay = write_violation(&out.join(&name), e)?;
            (Some(name), Some(replay))
        } else {
            (None, None)
        };
        violations.push(Violation {
            id: e.id.clone(),
            faults: e.plan.faults.iter().map(fault_line).collect(),
            verdicts: failed_lines(e),
            properties: props,
            kinds,
            hash: e.hash.clone(),
            folder,
            replay,
        });
    }
    let c = Certificate {
        format: CERTIFICATE_FORMAT,
        scenario: x.base.scenario.clone(),
        design: x.base.agent.design.as_str().to_string(),
        mutant: x.base.mutant.clone(),
        faults: x.levels.len().saturating_sub(1),
        kinds: x.kinds.iter().map(|k| k.as_str().to_string()).collect(),
        shard,
        scope: Scope::of(x),
        levels: x.levels.clone(),
        explored: x.explored(),
        pruned: x.pruned(),
        audited: x.audited,
        audit_mismatches: x.mismatches.len(),
        order_hash: x.order_hash.clone(),
        line: x.certificate(),
        violations,
        exit_code: exit_code(x),
    };
    write_atomic(
        &out.join("certificate.json"),
        &serde_json::to_vec_pretty(&c)?,
    )?;
    write_atomic(&out.join("summary.md"), summary_md(&c).as_bytes())?;
    Ok(c)
}

/// One violating schedule's folder; returns its replay line.
fn write_violation(dir: &Path, e: &Explored) -> anyhow::Result<String> {
    let failed = e
        .verdicts
        .iter()
        .find(|v| matches!(v.status, Status::Invalid | Status::Unknown));
    write_run(dir, e, failed)
}

/// One explored schedule's folder (`schedule.toml`, `history.jsonl`, `verdicts.json`, and
/// with `verdict` its report), e.g. a mutant's catch, which may be a finding; returns the
/// line that replays it.
pub fn write_run(
    dir: &Path,
    e: &Explored,
    verdict: Option<&crate::checkers::Verdict>,
) -> anyhow::Result<String> {
    std::fs::create_dir_all(dir)?;
    let file: PathBuf = dir.join("schedule.toml");
    let replay = format!("acp-chaos replay --schedule {}", file.display());
    let header: String = e
        .plan
        .faults
        .iter()
        .map(|f| format!("# fault: {}\n", fault_line(f)))
        .collect();
    write_atomic(
        &file,
        format!(
            "# found by acp-chaos explore {} (design {})\n{header}# replay: {replay}\n{}",
            e.plan.scenario,
            e.plan.agent.design.as_str(),
            crate::plan::file::to_toml(&e.plan)?
        )
        .as_bytes(),
    )?;
    let h = world::run(&e.plan);
    let mut buf = Vec::new();
    h.write_jsonl(&mut buf)?;
    write_atomic(&dir.join("history.jsonl"), &buf)?;
    write_atomic(
        &dir.join("verdicts.json"),
        &serde_json::to_vec_pretty(&e.verdicts)?,
    )?;
    let schedule =
        std::fs::read_to_string(&file).map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
    if let Some(v) = verdict {
        let c = Counterexample {
            scenario: &e.plan.scenario,
            verdict: v,
            repro: &replay,
            shrunk: None,
            schedule: Some(&schedule),
            history: &h,
        };
        write_atomic(&dir.join("report.md"), counterexample_md(&c).as_bytes())?;
        write_atomic(&dir.join("report.html"), counterexample_html(&c).as_bytes())?;
    }
    Ok(replay)
}

/// `summary.md`: the certificate or the violations, and the counts per level.
pub fn summary_md(c: &Certificate) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# explore {} ({}{})\n",
        c.scenario,
        c.design,
        c.mutant
            .as_deref()
            .map(|m| format!(", mutant {m}"))
            .unwrap_or_default()
    );
    let _ = writeln!(s, "**{}**\n", c.line);
    let _ = writeln!(s, "Shapes placed: {}.\n", c.scope.shapes_line());
    let _ = writeln!(s, "Not placed: {}.\n", c.scope.not_placed.join("; "));
    let _ = writeln!(s, "Fixed: {}.\n", c.scope.fixed.join("; "));
    let _ = writeln!(
        s,
        "Kinds asked for: {}. Order hash `{}`.{}\n",
        c.kinds.join(", "),
        c.order_hash,
        c.shard
            .map(|(k, n)| format!(" Shard {k} of {n} (the last level is split)."))
            .unwrap_or_default()
    );
    let (head, rule) = if c.scope.orders {
        (
            " race reversals | delay not fired | came out reversed |",
            "---|---|---|",
        )
    } else {
        ("", "")
    };
    let _ = writeln!(
        s,
        "| faults | places | explored | pruned | not fired |{head}\n|---|---|---|---|---|{rule}"
    );
    for l in &c.levels {
        let orders = if c.scope.orders {
            format!(
                " {} | {} | {} |",
                l.orders, l.orders_not_fired, l.orders_reversed
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} |{orders}",
            l.faults, l.places, l.explored, l.pruned, l.not_fired
        );
    }
    if c.audited > 0 {
        let _ = writeln!(
            s,
            "\nPruning audited on {} pruned schedules: {} verdicts differed from their representative's.",
            c.audited, c.audit_mismatches
        );
    }
    if !c.violations.is_empty() {
        let _ = writeln!(s, "\n## Violations\n");
        for v in &c.violations {
            let _ = writeln!(s, "- {}", v.faults.join("; "));
            for l in &v.verdicts {
                let _ = writeln!(s, "  - {l}");
            }
            if let (Some(f), Some(r)) = (&v.folder, &v.replay) {
                let _ = writeln!(s, "  - [report]({f}/report.md), `{r}`");
            }
        }
    }
    s
}

/// Merge the report folders of an exploration's shards (`explore --shard K/N`, every shard
/// read from its `certificate.json`) into `out`: the levels below the last as any shard has
/// them, the last level's runs added up, the violations in shard order, and the first
/// violating schedule of each property, status and party kept as a folder. The result is what
/// the unsharded exploration writes.
///
/// Errors: folders of different explorations, a shard missing or given twice.
pub fn merge(dirs: &[PathBuf], out: &Path) -> anyhow::Result<Certificate> {
    let certs = read_shards(dirs)?;
    let order = shard_order(dirs, &certs)?;
    prepare_explore_folder(out)?;
    let mut m = certs[0].clone();
    m.shard = None;
    let last = m.levels.len() - 1;
    m.levels[last].explored = 0;
    m.levels[last].not_fired = 0;
    m.levels[last].orders = 0;
    m.levels[last].orders_not_fired = 0;
    m.levels[last].orders_reversed = 0;
    m.levels[last].sharded = false;
    m.violations.clear();
    m.audited = 0;
    m.audit_mismatches = 0;
    let mut kept: Vec<String> = Vec::new();
    // The last level's reversals follow its schedules (as the unsharded exploration lists them).
    let mut reversals = Vec::new();
    for &(_, i) in &order {
        let c = &certs[i];
        m.levels[last].explored += c.levels[last].explored;
        m.levels[last].not_fired += c.levels[last].not_fired;
        m.levels[last].orders += c.levels[last].orders;
        m.levels[last].orders_not_fired += c.levels[last].orders_not_fired;
        m.levels[last].orders_reversed += c.levels[last].orders_reversed;
        m.audited += c.audited;
        m.audit_mismatches += c.audit_mismatches;
        for v in &c.violations {
            // Below the last level every shard ran the same schedules: take them once.
            let level: usize =
                v.id.split('.')
                    .next()
                    .and_then(|x| x.parse().ok())
                    .unwrap_or(0);
            if level < last && i != order[0].1 {
                continue;
            }
            if level == last && v.id.contains('o') {
                reversals.push((v, i));
                continue;
            }
            m.violations
                .push(keep_violation(v, &mut kept, &dirs[i], out)?);
        }
    }
    for (v, i) in reversals {
        m.violations
            .push(keep_violation(v, &mut kept, &dirs[i], out)?);
    }
    m.explored = m.levels.iter().map(|l| l.explored).sum();
    let orders = (
        m.levels.iter().map(|l| l.orders).sum(),
        m.levels.iter().map(|l| l.orders_reversed).sum(),
    );
    m.line = certificate_line(&m.scope, m.explored, orders, m.pruned, m.violations.len());
    let invalid = m
        .violations
        .iter()
        .flat_map(|v| &v.verdicts)
        .any(|l| l.contains(" invalid "));
    m.exit_code = if m.audit_mismatches > 0 || invalid {
        crate::exit::INVALID
    } else if !m.violations.is_empty() {
        crate::exit::LIVENESS
    } else {
        crate::exit::VALID
    };
    write_atomic(
        &out.join("certificate.json"),
        &serde_json::to_vec_pretty(&m)?,
    )?;
    write_atomic(&out.join("summary.md"), summary_md(&m).as_bytes())?;
    Ok(m)
}

/// Every shard's `certificate.json`; at least one.
fn read_shards(dirs: &[PathBuf]) -> anyhow::Result<Vec<Certificate>> {
    let read = |d: &PathBuf| -> anyhow::Result<Certificate> {
        let p = d.join("certificate.json");
        let text =
            std::fs::read_to_string(&p).map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))?;
        serde_json::from_str(&text).map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))
    };
    let certs: Vec<Certificate> = dirs.iter().map(read).collect::<anyhow::Result<_>>()?;
    anyhow::ensure!(!certs.is_empty(), "nothing to merge");
    Ok(certs)
}

/// The shards in order, (K, index into `certs`), once each are checked to be every shard of
/// one exploration.
fn shard_order(dirs: &[PathBuf], certs: &[Certificate]) -> anyhow::Result<Vec<(u64, usize)>> {
    let first = &certs[0];
    let Some((_, n)) = first.shard else {
        anyhow::bail!("{}: not a shard (explore --shard K/N)", dirs[0].display());
    };
    let mut order: Vec<(u64, usize)> = Vec::new();
    for (i, c) in certs.iter().enumerate() {
        let same = c.scenario == first.scenario
            && c.design == first.design
            && c.mutant == first.mutant
            && c.faults == first.faults
            && c.kinds == first.kinds
            && c.scope.orders == first.scope.orders
            && c.order_hash == first.order_hash;
        anyhow::ensure!(
            same,
            "{}: another exploration than {}",
            dirs[i].display(),
            dirs[0].display()
        );
        match c.shard {
            Some((k, m)) if m == n && !order.iter().any(|(x, _)| *x == k) => order.push((k, i)),
            _ => anyhow::bail!("{}: not a new shard of {n}", dirs[i].display()),
        }
    }
    anyhow::ensure!(
        order.len() as u64 == n,
        "{} of the {n} shards given",
        order.len()
    );
    order.sort();
    Ok(order)
}

/// A shard's violation as the merge lists it: its folder copied from the shard's `dir` into
/// `out` when it is the first of a kind not `kept` yet, else without a folder.
fn keep_violation(
    v: &Violation,
    kept: &mut Vec<String>,
    dir: &Path,
    out: &Path,
) -> anyhow::Result<Violation> {
    let mut v = v.clone();
    let kinds = v.kinds.clone();
    let new = kinds.iter().any(|k| !kept.contains(k));
    match (&v.folder, new) {
        (Some(f), true) => {
            kept.extend(kinds);
            copy_dir(&dir.join(f), &out.join(f), dir, out)?;
            v.replay = Some(format!(
                "acp-chaos replay --schedule {}",
                out.join(f).join("schedule.toml").display()
            ));
        }
        (None, true) => kept.extend(kinds),
        _ => {
            v.folder = None;
            v.replay = None;
        }
    }
    Ok(v)
}

/// Copy a violation's folder, its schedule file's paths rewritten to the new folder.
fn copy_dir(from: &Path, to: &Path, src: &Path, out: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        let bytes =
            std::fs::read(e.path()).map_err(|x| anyhow::anyhow!("{}: {x}", e.path().display()))?;
        let bytes = match String::from_utf8(bytes) {
            Ok(text) => text
                .replace(&src.display().to_string(), &out.display().to_string())
                .into_bytes(),
            Err(e) => e.into_bytes(),
        };
        write_atomic(&to.join(e.file_name()), &bytes)?;
    }
    Ok(())
}
