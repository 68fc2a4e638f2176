//! Shared helpers for the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Output;

use acp_chaos::scenario::{self, Scenario};
use acp_chaos::summary::Summary;
use acp_chaos_cli::campaign::{self, CampaignSpec};

/// The repo's scenarios folder.
pub fn scenarios_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("scenarios")
}

/// Load a shipped scenario by name.
pub fn scenario(name: &str) -> Scenario {
    scenario::resolve(&scenarios_dir(), name).expect("shipped scenario parses")
}

/// A campaign of shipped scenarios for a test: 2 jobs, shrinking on, 2 runs kept per property,
/// no regression corpus, its report in the temp folder `out`.
pub fn campaign_spec(
    scenarios: &[&str],
    mutant: Option<&str>,
    seeds: u64,
    out: &str,
) -> CampaignSpec {
    CampaignSpec {
        scenarios: scenarios.iter().map(|s| scenario(s)).collect(),
        seed_start: 0,
        seeds,
        jobs: 2,
        mutant: mutant.map(str::to_string),
        out: std::env::temp_dir().join(out),
        keep_per_property: 2,
        shrink: true,
        agent: None,
        check_determinism: false,
        name: "merge-test".into(),
        shard: None,
        progress: false,
        stop: None,
        regressions: Vec::new(),
    }
}

/// Run a campaign into an emptied report folder.
pub fn fresh(s: &CampaignSpec) -> Summary {
    let _ = std::fs::remove_dir_all(&s.out);
    campaign::run(s).unwrap()
}

/// Every file under `dir` whose extension is `ext`, in sorted path order (folders walked
/// depth-first), for the tests that hold a page or a map against the tree.
pub fn files_with_extension(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    let mut out = Vec::new();
    for p in entries {
        if p.is_dir() {
            out.extend(files_with_extension(&p, ext));
        } else if p.extension().is_some_and(|e| e == ext) {
            out.push(p);
        }
    }
    out
}

/// An emptied folder `name` in the temp folder.
pub fn fresh_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A finished command's stdout then stderr, for assertions on what it printed.
pub fn printed(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A finished command's exit status, stdout and stderr, labelled: an assertion's message.
pub fn exit_and_printed(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Removes the `Action::Effect`s at or after `out[from]`: a party that reports nothing to the
/// history, the same frames on the wire.
pub fn drop_effects_from(out: &mut Vec<acp_chaos::models::Action>, from: usize) {
    let mut i = 0;
    out.retain(|a| {
        i += 1;
        i <= from || !matches!(a, acp_chaos::models::Action::Effect(_))
    });
}
