//! The regression corpus: `scenarios/regressions/*.toml`, shrunk schedules that must keep
//! their verdict. Every campaign replays them first, and so does `cargo test`.
//!
//! A regression file is a schedule file ([`crate::plan::file`]: a [`Plan`] as TOML, as `acp-chaos shrink` writes it,
//! so `acp-chaos replay --schedule FILE` runs it) with one more table, `[expect]`:
//!
//! ```toml
//! [expect]
//! verdict = "invalid"   # or "finding": some checker must give exactly this ...
//! property = "P1"       # ... on this property ...
//! party = "agent"       # ... blaming this party
//! # verdict = "valid"   # a fixed bug: no checker may be invalid or unknown
//! ```
//!
//! A schedule with a mutant pins that a checker still catches it on a minimal run; one without
//! pins a fixed model bug (`valid`) or a known spec gap. `acp-chaos shrink --save` adds one.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::checkers::{self, Status};
use crate::plan::Plan;

pub use crate::plan::expect::Expect;
pub use crate::summary::regression::Outcome;

/// One regression file, loaded.
#[derive(Debug, Clone)]
pub struct Regression {
    /// The file.
    pub file: PathBuf,
    /// Its schedule.
    pub plan: Plan,
    /// What its run must show.
    pub expect: Expect,
}

/// Load one regression file. Errors name the file, the line and the field.
pub fn load(path: &Path) -> anyhow::Result<Regression> {
    let text =
        std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    parse(path, &text)
}

/// [`load`] on a file's text (`path` names it in errors and in the [`Regression`]).
///
/// Errors: as [`load`], but for reading the file.
pub fn parse(path: &Path, text: &str) -> anyhow::Result<Regression> {
    let (plan, expect) = crate::plan::file::parse::<Expect>(path, text)?;
    let expect = expect.ok_or_else(|| {
            anyhow::anyhow!(
                "{}: missing table `[expect]` (verdict, property, party): a regression says what it must show",
                path.display()
            )
        })?;
    expect.check(path)?;
    Ok(Regression {
        file: path.to_path_buf(),
        plan,
        expect,
    })
}

/// Load every `*.toml` in `dir`, in name order; a missing folder is an empty corpus.
pub fn load_dir(dir: &Path) -> anyhow::Result<Vec<Regression>> {
    if !dir.exists() {
        return Ok(Vec::new());
    }
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| anyhow::anyhow!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    paths.sort();
    paths.iter().map(|p| load(p)).collect()
}

/// Run a regression's schedule and compare its verdicts with `[expect]`.
pub fn replay(r: &Regression) -> Outcome {
    let h = crate::world::run(&r.plan);
    let verdicts = checkers::check_all(&h);
    let line = |v: &checkers::Verdict| crate::checkers::verdict_line(v);
    let (ok, got) = match r.expect.verdict {
        Status::Valid => match verdicts
            .iter()
            .find(|v| matches!(v.status, Status::Invalid | Status::Unknown))
        {
            Some(v) => (false, line(v)),
            None => (true, "valid".to_string()),
        },
        status => {
            let hit = verdicts.iter().find(|v| {
                Some(&v.property) == r.expect.property.as_ref()
                    && v.status == status
                    && v.party == r.expect.party
            });
            match hit {
                Some(v) => (true, line(v)),
                None => {
                    let other = verdicts
                        .iter()
                        .find(|v| Some(&v.property) == r.expect.property.as_ref())
                        .map(line)
                        .unwrap_or_else(|| "no such verdict".into());
                    (false, other)
                }
            }
        }
    };
    Outcome {
        file: r.file.display().to_string(),
        expect: r.expect.line(),
        got,
        ok,
        hash: h.hash(),
        replay: format!("acp-chaos replay --schedule {}", r.file.display()),
    }
}

/// A regression file's text: `header` (comment lines), the plan, then `[expect]`.
pub fn file_text(header: &str, plan: &Plan, expect: &Expect) -> anyhow::Result<String> {
    #[derive(Serialize)]
    struct E<'a> {
        expect: &'a Expect,
    }
    Ok(format!(
        "{header}{}\n{}",
        crate::plan::file::to_toml(plan)?,
        toml::to_string(&E { expect })?
    ))
}
