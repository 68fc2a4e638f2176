//! A run's start, shared by the traces, the conformance kit and the calibration: a fresh
//! temporary `HOME` for the Agent, its launch (command, environment, a mock model for a real
//! agent's profile) and the seed of the run's keys and markers.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::driver::Launch;
use super::{ProbeArgs, Target};

/// Homes made by this process, so each is new.
static HOMES: AtomicU64 = AtomicU64::new(0);

/// `s` with `{home}` and `{cwd}` replaced by the run's folders.
pub(super) fn fill(s: &str, home: &Path, cwd: &Path) -> String {
    s.replace("{home}", &home.display().to_string())
        .replace("{cwd}", &cwd.display().to_string())
}

/// A fresh temporary home (with its workspace folder `work/`) for one run.
pub fn fresh_home(target: &Target) -> anyhow::Result<(PathBuf, PathBuf)> {
    let n = HOMES.fetch_add(1, Ordering::Relaxed);
    let home = std::env::temp_dir().join(format!("acp-chaos-probe-{}-{n}", std::process::id()));
    if home.exists() {
        std::fs::remove_dir_all(&home)?;
    }
    let cwd = home.join("work");
    std::fs::create_dir_all(&cwd)?;
    for (rel, text) in &target.files {
        let p = home.join(rel);
        if let Some(d) = p.parent() {
            std::fs::create_dir_all(d)?;
        }
        std::fs::write(&p, fill(text, &home, &cwd))?;
    }
    Ok((home, cwd))
}

/// The seed of one run's keys and markers, from `--seed`, the trace and the run index.
pub fn run_seed(seed: u64, trace: &str, run: u32) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ seed;
    for b in trace.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h ^ u64::from(run).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// The launch of one run in `home` (working folder `cwd`): the target's command with `{home}`
/// and `{cwd}` filled in, or a real agent's profile with its own mock model (returned, to shut
/// down after the run).
pub fn launch(
    a: &ProbeArgs,
    target: &Target,
    home: &Path,
    cwd: &Path,
) -> anyhow::Result<(Launch, Option<crate::probe::mock_model::MockModel>)> {
    let (home, cwd) = (home.to_path_buf(), cwd.to_path_buf());
    let timeout = Duration::from_millis(a.wait_ms());
    let mut mock = None;
    let launch = match target.real {
        // A real agent: its own mock model server, the profile's launch in this home.
        Some(p) => {
            let m =
                crate::probe::mock_model::MockModel::start(crate::probe::mock_model::MockConfig {
                    delay_ms: a.mock_delay_ms,
                    ..Default::default()
                })?;
            let spec = crate::probe::profile::launch(p, &home, m.port())?;
            spec.write_files()?;
            mock = Some(m);
            let mut env = spec.full_env();
            env.extend(
                target
                    .env
                    .iter()
                    .map(|(k, v)| (k.clone(), fill(v, &home, &cwd))),
            );
            Launch {
                argv: spec.argv(),
                env,
                clear_env: true,
                home: home.clone(),
                cwd: spec.cwd.clone(),
                timeout,
            }
        }
        None => Launch {
            argv: target
                .command
                .iter()
                .map(|s| fill(s, &home, &cwd))
                .collect(),
            env: target
                .env
                .iter()
                .map(|(k, v)| (k.clone(), fill(v, &home, &cwd)))
                .collect(),
            clear_env: false,
            home: home.clone(),
            cwd,
            timeout,
        },
    };
    Ok((launch, mock))
}
