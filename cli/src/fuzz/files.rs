//! Mutated scenario, schedule and regression files through their loaders. The seed corpus is
//! the scenarios folder: its scenario files, and its regression files (each also read as a
//! plain schedule file, as `replay --schedule` reads it). A case mutates one corpus file one to
//! three times (a value swapped for an extreme one, a line dropped, doubled or swapped, an
//! unknown field, a flipped byte, a cut) and loads it: no panic, a refusal names its file, an
//! unknown field is never accepted; every `run_every`th plan that loads runs in the simulator.

use std::path::{Path, PathBuf};

use rand::seq::SliceRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::{catch, picked, Report, Round};
use acp_chaos::explore::regression;
use acp_chaos::plan::{self, Plan};
use acp_chaos::scenario::Scenario;

/// Values a mutation puts in place of a field's value.
const EXTREMES: &[&str] = &[
    "0",
    "-1",
    "1",
    "2",
    "17",
    "65",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999",
    "1e308",
    "-1e308",
    "0.5",
    "1.5",
    "nan",
    "inf",
    "-inf",
    "\"\"",
    "\"x\"",
    "\"seeded\"",
    "[]",
    "{}",
    "true",
    "[1, 2]",
    "600001",
    "1200001",
];

/// The line an unknown-field mutation inserts.
const UNKNOWN: &str = "fuzz_unknown_field = 1";

#[derive(Clone, Copy)]
enum Kind {
    Scenario,
    Schedule,
    Regression,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Scenario => "scenario",
            Kind::Schedule => "schedule",
            Kind::Regression => "regression",
        }
    }
}

/// The round's file cases.
pub(super) fn round(r: &Round, report: &mut Report) -> anyhow::Result<()> {
    if r.files == 0 {
        return Ok(());
    }
    let scenarios = toml_files(&r.scenarios)?;
    let regressions = toml_files(&r.scenarios.join("regressions"))?;
    if scenarios.is_empty() || regressions.is_empty() {
        anyhow::bail!(
            "{}: no scenario or regression files to mutate",
            r.scenarios.display()
        );
    }
    // Plans loaded since the last one run.
    let mut loaded = 0u64;
    for case in 0..r.files {
        if !picked(r, case) {
            continue;
        }
        let mut rng = plan::stream(r.seed, &format!("fuzz.files.{case}"));
        let kind = [Kind::Scenario, Kind::Schedule, Kind::Regression][(case % 3) as usize];
        let corpus = match kind {
            Kind::Scenario => &scenarios,
            _ => &regressions,
        };
        let (from, text) = corpus.choose(&mut rng).expect("non-empty");
        let text = mutate(text, &mut rng);
        let path = PathBuf::from(format!("fuzz-{}-{case}.toml", kind.name()));
        let input = || {
            format!(
                "{} mutated from {}:\n{text}",
                path.display(),
                from.display()
            )
        };
        match catch(|| load(kind, &path, &text)) {
            Err(panic) => report.fail("files", case, input(), format!("panicked: {panic}")),
            Ok(Err(e)) => {
                report.count(&format!("files.{}.refused", kind.name()));
                if !e.contains(&path.display().to_string()) {
                    report.fail(
                        "files",
                        case,
                        input(),
                        format!("refusal names no file: {e}"),
                    );
                }
            }
            Ok(Ok(plans)) => {
                report.count(&format!("files.{}.loaded", kind.name()));
                if text.lines().any(|l| l.trim() == UNKNOWN) {
                    report.fail(
                        "files",
                        case,
                        input(),
                        "an unknown field was accepted".into(),
                    );
                }
                for p in plans {
                    loaded += 1;
                    if r.run_every > 0 && loaded == r.run_every {
                        loaded = 0;
                        report.count("files.runs");
                        if let Err(panic) = catch(|| acp_chaos::world::run(&p)) {
                            report.fail("files", case, input(), format!("run panicked: {panic}"));
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

/// Load `text` as `kind`; the plans it gives (a scenario's: one per design, seed 0).
fn load(kind: Kind, path: &Path, text: &str) -> Result<Vec<Plan>, String> {
    match kind {
        Kind::Scenario => {
            let s = Scenario::parse(path, text).map_err(|e| e.to_string())?;
            Ok(s.agent
                .designs
                .iter()
                .map(|d| Plan::derive(&s, 0, None, *d))
                .collect())
        }
        Kind::Schedule => plan::file::parse::<plan::expect::Expect>(path, text)
            .and_then(|(p, e)| match e {
                Some(e) => e.check(path).map(|_| vec![p]),
                None => Ok(vec![p]),
            })
            .map_err(|e| format!("{e:#}")),
        Kind::Regression => regression::parse(path, text)
            .map(|r| vec![r.plan])
            .map_err(|e| format!("{e:#}")),
    }
}

/// Every `*.toml` in `dir`, in name order, with its text.
fn toml_files(dir: &Path) -> anyhow::Result<Vec<(PathBuf, String)>> {
    let mut v = Vec::new();
    let rd = std::fs::read_dir(dir).map_err(|e| anyhow::anyhow!("{}: {e}", dir.display()))?;
    for e in rd.flatten() {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "toml") {
            let text =
                std::fs::read_to_string(&p).map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))?;
            v.push((p, text));
        }
    }
    v.sort();
    Ok(v)
}

/// One to three mutations of a file's text.
fn mutate(text: &str, rng: &mut ChaCha8Rng) -> String {
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    for _ in 0..rng.gen_range(1..=3) {
        if lines.is_empty() {
            lines.push(String::new());
        }
        let i = rng.gen_range(0..lines.len());
        match rng.gen_range(0..10) {
            0..=3 => {
                // A value swapped for an extreme one (the lines that assign one).
                let assigns: Vec<usize> = (0..lines.len())
                    .filter(|j| lines[*j].contains(" = "))
                    .collect();
                if let Some(j) = assigns.choose(rng) {
                    let key = lines[*j]
                        .split(" = ")
                        .next()
                        .unwrap_or_default()
                        .to_string();
                    let v = EXTREMES.choose(rng).expect("non-empty");
                    lines[*j] = format!("{key} = {v}");
                }
            }
            4 => {
                lines.remove(i);
            }
            5 => {
                let l = lines[i].clone();
                lines.insert(i, l);
            }
            6 => lines.insert(i + 1, UNKNOWN.to_string()),
            7 => {
                let mut b = lines[i].clone().into_bytes();
                if !b.is_empty() {
                    let k = rng.gen_range(0..b.len());
                    b[k] ^= 1 << rng.gen_range(0..7);
                }
                lines[i] = String::from_utf8_lossy(&b).replace('\n', " ");
            }
            8 => {
                let j = rng.gen_range(0..lines.len());
                lines.swap(i, j);
            }
            _ => lines.truncate(i),
        }
    }
    let mut out = lines.join("\n");
    out.push('\n');
    out
}
