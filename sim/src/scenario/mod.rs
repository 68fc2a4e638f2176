//! Scenario files: TOML in `scenarios/`, one run description per file.
//!
//! Unknown fields are rejected. Every error names the file, the line and the field, and the CLI
//! exits 2 on it. See `scenarios/README.md` for the format.

//!
//! - this file: [`Scenario`], [`Scenario::parse`] and [`Scenario::load`], [`load_dir`],
//!   [`resolve`], [`ScenarioError`];
//! - `format.rs`: the tables of a scenario file ([`Workload`], [`AgentSpec`], [`Timing`],
//!   [`DiskSpec`], [`ClientSpec`], [`Topology`], [`SwarmSpec`], [`RawProbe`], ...) and their
//!   defaults;
//! - `validate.rs`: every check a parsed scenario must pass.

pub mod builtin;
mod format;
mod validate;

use std::path::{Path, PathBuf};

use acp_chaos_models::Design;
use serde::{Deserialize, Serialize};

pub use format::{
    AgentSpec, ClientSpec, DiskSpec, Expect, FieldCase, Mix, Pinned, RawProbe, Seeded, SwarmSpec,
    Timing, Topology, Transport, Workload,
};

use crate::nemesis::FaultSpec;
use format::{agent_default, expect_valid, timing_default, workload_default};
use validate::line_of;
pub(crate) use validate::{in_entry, key_at};

/// A scenario file could not be used. Displayed as `FILE:LINE: field `F`: reason`.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// Reading the file failed.
    #[error("{path}: cannot read: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// TOML syntax, type or unknown/missing field.
    #[error("{path}:{line}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// What is wrong, naming the field.
        message: String,
    },
    /// No such scenario by name: the name, and the scenarios it may stand for (names that
    /// begin with it, as the docs abbreviate `rfd-02`), said as `; did you mean ...?`.
    #[error("no scenario named `{0}`{1} (see `acp-chaos list`)")]
    NotFound(String, String),
    /// The scenarios folder does not exist.
    #[error("{0}: no such scenarios folder (set by --scenarios or ACP_CHAOS_SCENARIOS; without either, acp-chaos reads ./scenarios or its built-in scenarios)")]
    NoFolder(PathBuf),
}

/// A parsed scenario.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Name (defaults to the file stem).
    #[serde(default)]
    pub name: String,
    /// What it exercises.
    pub summary: String,
    /// RULES.md ids it concerns.
    #[serde(default)]
    pub rules: Vec<String>,
    /// Verdict on the correct models.
    #[serde(default = "expect_valid")]
    pub expect: Expect,
    /// Per-design override of `expect`, e.g. `{ in-memory = "valid" }`.
    #[serde(default)]
    pub expect_by_design: std::collections::BTreeMap<Design, Expect>,
    /// Events that must happen in at least one seed, or the campaign is vacuous (exit 4).
    #[serde(default)]
    pub sometimes: Vec<String>,
    /// The workload.
    #[serde(default = "workload_default")]
    pub workload: Workload,
    /// The Agent.
    #[serde(default = "agent_default")]
    pub agent: AgentSpec,
    /// Timing.
    #[serde(default = "timing_default")]
    pub timing: Timing,
    /// The simulated disk.
    #[serde(default)]
    pub disk: DiskSpec,
    /// Hosts between Client and Agent.
    #[serde(default)]
    pub topology: Topology,
    /// The spec Client's settings.
    #[serde(default)]
    pub client: ClientSpec,
    /// Scripted faults.
    #[serde(default, rename = "fault")]
    pub faults: Vec<FaultSpec>,
    /// Swarm faults.
    pub swarm: Option<SwarmSpec>,
    /// Raw `session/prompt` probes the Client sends once each (key validation, K2/K3).
    #[serde(default)]
    pub raw: Vec<RawProbe>,
    /// A field case (`../shared/cases/field-cases.md`): the mutant that reproduces the original
    /// bug and the property it must fail.
    #[serde(default)]
    pub field: Option<FieldCase>,
    /// Where it was read from (not in the file).
    #[serde(skip)]
    pub path: PathBuf,
    /// How a repro line names it: its name, or the path it was given by.
    #[serde(skip)]
    pub reference: String,
    /// Settings the file sets (`table.key`, e.g. `topology.proxy`): the swarm never draws
    /// these (not in the file).
    #[serde(skip)]
    pub pinned: std::collections::BTreeSet<String>,
}

impl Scenario {
    /// Parse scenario text; `path` is used for messages and the default name.
    pub fn parse(path: &Path, text: &str) -> Result<Scenario, ScenarioError> {
        let mut s: Scenario = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|r| line_of(text, r.start)).unwrap_or(1);
            let mut message = e.message().trim().to_string();
            // serde's type errors do not say which field: take it from the line.
            if !message.contains("field") {
                if let Some(key) = key_at(text, line) {
                    message = format!("field `{key}`: {message}");
                }
            }
            let message = in_entry(message, text, "fault");
            ScenarioError::Parse {
                path: path.to_path_buf(),
                line,
                message,
            }
        })?;
        s.path = path.to_path_buf();
        if s.name.is_empty() {
            s.name = path
                .file_stem()
                .map(|x| x.to_string_lossy().into_owned())
                .unwrap_or_default();
        }
        s.reference = s.name.clone();
        // The typed parse succeeded, so the text is a TOML table.
        if let Ok(raw) = text.parse::<toml::Table>() {
            for (table, v) in &raw {
                if let Some(t) = v.as_table() {
                    s.pinned.extend(t.keys().map(|k| format!("{table}.{k}")));
                }
            }
        }
        s.validate(text)?;
        Ok(s)
    }

    /// The expected verdict for a design.
    pub fn expect_for(&self, d: Design) -> Expect {
        self.expect_by_design
            .get(&d)
            .copied()
            .unwrap_or(self.expect)
    }

    /// Read and parse one file.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let text = std::fs::read_to_string(path).map_err(|source| ScenarioError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Scenario::parse(path, &text)
    }
}

/// The scenarios folder: `explicit` (`--scenarios DIR`, `ACP_CHAOS_SCENARIOS`) when given,
/// else `./scenarios` when it is a folder, else the built-in scenarios ([`builtin::dir`],
/// unpacked on first use; a note on stderr says so once). A missing explicit folder is
/// returned as it is: loading from it fails naming it ([`ScenarioError::NoFolder`]).
pub fn find_dir(explicit: Option<&Path>) -> PathBuf {
    if let Some(dir) = explicit {
        return dir.to_path_buf();
    }
    let here = PathBuf::from("scenarios");
    if here.is_dir() {
        return here;
    }
    static NOTE: std::sync::Once = std::sync::Once::new();
    match builtin::dir() {
        Ok(dir) => {
            NOTE.call_once(|| {
                eprintln!(
                    "acp-chaos: no ./scenarios folder here: using the {} built-in scenarios \
                     ({}); --scenarios DIR for others",
                    builtin::count(),
                    dir.display()
                )
            });
            dir
        }
        Err(e) => {
            NOTE.call_once(|| eprintln!("acp-chaos: cannot unpack the built-in scenarios: {e}"));
            here
        }
    }
}

/// Every `*.toml` in `dir`, sorted by file name.
pub fn load_dir(dir: &Path) -> Result<Vec<Scenario>, ScenarioError> {
    if !dir.exists() {
        return Err(ScenarioError::NoFolder(dir.to_path_buf()));
    }
    let rd = std::fs::read_dir(dir).map_err(|source| ScenarioError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut paths: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    paths.sort();
    paths.iter().map(|p| Scenario::load(p)).collect()
}

/// Find a scenario by name (file stem in `dir`) or by path to a `.toml` file.
pub fn resolve(dir: &Path, name_or_path: &str) -> Result<Scenario, ScenarioError> {
    let p = Path::new(name_or_path);
    if p.extension().is_some_and(|x| x == "toml") {
        // Named by path: repro lines name it by the same path.
        let mut s = Scenario::load(p)?;
        s.reference = name_or_path.to_string();
        return Ok(s);
    }
    let file = dir.join(format!("{name_or_path}.toml"));
    if file.exists() {
        return Scenario::load(&file);
    }
    if !dir.exists() {
        return Err(ScenarioError::NoFolder(dir.to_path_buf()));
    }
    Err(ScenarioError::NotFound(
        name_or_path.to_string(),
        did_you_mean(dir, name_or_path),
    ))
}

/// `; did you mean `rfd-02-retry-after-resume-new-connection`?` for the scenarios of `dir`
/// whose name begins with `name` (at most three named); empty when none does.
fn did_you_mean(dir: &Path, name: &str) -> String {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return String::new();
    };
    let mut hits: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let p = e.path();
            let stem = p.file_stem()?.to_str()?.to_string();
            (p.extension().is_some_and(|x| x == "toml") && stem.starts_with(name)).then_some(stem)
        })
        .collect();
    hits.sort();
    match hits.len() {
        0 => String::new(),
        1..=3 => format!(
            "; did you mean {}?",
            hits.iter()
                .map(|h| format!("`{h}`"))
                .collect::<Vec<_>>()
                .join(" or ")
        ),
        n => format!("; {n} scenarios begin with `{name}`"),
    }
}
