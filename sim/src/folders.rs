//! The report folder: its name (`reports/<campaign>/`), preparing it without deleting anything
//! that is not ours, atomic writes, and the `reports/latest` link.

use std::path::{Path, PathBuf};

use acp_chaos_models::Design;

/// Make the report folder in place (`acp-chaos merge`): create it, or clear the report
/// artefacts of an earlier campaign in it (see [`is_artefact`]). A folder holding anything else
/// is refused, and nothing but our own artefacts is ever deleted.
pub fn prepare_out(out: &Path) -> anyhow::Result<()> {
    prepare_folder(out, "an acp-chaos report artefact", is_artefact)
}

/// Whether the entry `name` (at `path`) of a report folder is a campaign's artefact:
/// `summary.json`, `summary.md`, `summary.html`, `junit.xml` (or their `.tmp`), or a run folder
/// (`<scenario>-<design>-seed<N>/`) holding only a run folder's files, whole or partly written
/// (an earlier, killed campaign's).
pub fn is_artefact(name: &str, path: &Path) -> bool {
    let file = matches!(
        name.trim_end_matches(".tmp"),
        "summary.json" | "summary.md" | "summary.html" | "junit.xml"
    );
    file || (name.contains("-seed") && path.is_dir() && holds_only_run_files(path))
}

/// A kept counterexample's files in its run folder, each `[P<n>.]`-prefixed per property
/// after the first.
pub const COUNTEREXAMPLE_FILES: [&str; 5] = [
    "report.md",
    "report.html",
    "schedule.toml",
    "shrunk.jsonl",
    "timeline.html",
];

/// A run folder's files: `history.jsonl`, `verdicts.json`, `repro.txt`, and per property
/// `[P<n>.]report.md`, `report.html`, `schedule.toml`, `shrunk.jsonl`, `timeline.html` (or
/// their `.tmp`).
fn holds_only_run_files(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.into_iter().all(|e| {
        let Ok(e) = e else { return false };
        let name = e.file_name().to_string_lossy().into_owned();
        let name = name.trim_end_matches(".tmp");
        let plain = ["history.jsonl", "verdicts.json", "repro.txt"].contains(&name);
        let page = COUNTEREXAMPLE_FILES.iter().any(|b| {
            name.strip_suffix(b)
                .is_some_and(|p| p.is_empty() || p.starts_with('P'))
        });
        e.path().is_file() && (plain || page)
    })
}

/// Create `out`, or empty it of the entries `ours(name, path)` claims; any other entry is
/// refused (named as not being `what`) before anything is deleted.
pub fn prepare_folder(
    out: &Path,
    what: &str,
    ours: impl Fn(&str, &Path) -> bool,
) -> anyhow::Result<()> {
    let io = |e: std::io::Error| anyhow::anyhow!("{}: {e}", out.display());
    if out.exists() {
        let mut mine = Vec::new();
        for e in std::fs::read_dir(out).map_err(io)? {
            let e = e.map_err(io)?;
            let name = e.file_name().to_string_lossy().into_owned();
            if ours(&name, &e.path()) {
                mine.push(e.path());
            } else {
                anyhow::bail!(
                    "{}: holds {name}, which is not {what}; refusing to write the report there",
                    out.display()
                );
            }
        }
        for p in mine {
            if p.is_dir() {
                std::fs::remove_dir_all(&p).map_err(io)?;
            } else {
                std::fs::remove_file(&p).map_err(io)?;
            }
        }
    }
    std::fs::create_dir_all(out).map_err(io)?;
    Ok(())
}

/// Write `bytes` to `path` through `path.tmp` and a rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, bytes).map_err(|e| anyhow::anyhow!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    Ok(())
}

/// A campaign's name, from what it runs: `all-seeds0-200`, `swarm-basic-seeds0-2000-no-dedup`,
/// `rfd-01-...-and-2-more-seeds5-10-stored`. Shards of one campaign share it.
pub fn campaign_name(
    scenarios: &[String],
    seed_start: u64,
    seeds: u64,
    mutant: Option<&str>,
    agent: Option<Design>,
) -> String {
    let stem = |n: &String| {
        Path::new(n)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| n.clone())
    };
    let scope = match scenarios {
        [] => "all".to_string(),
        [one] => stem(one),
        [first, rest @ ..] => format!("{}-and-{}-more", stem(first), rest.len()),
    };
    let mut name = format!(
        "{scope}-seeds{seed_start}-{}",
        seed_start.saturating_add(seeds)
    );
    for part in [mutant, agent.map(|d| d.as_str())].into_iter().flatten() {
        name.push('-');
        name.push_str(part);
    }
    // Keep it a plain folder name whatever a scenario path held.
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// `reports/<name>`, or `reports/<name>-shard<K>of<N>` for a shard.
pub fn default_out(name: &str, shard: Option<(u64, u64)>) -> PathBuf {
    let leaf = match shard {
        Some((k, n)) => format!("{name}-shard{k}of{n}"),
        None => name.to_string(),
    };
    Path::new("reports").join(leaf)
}

/// Point `latest` beside `out` (e.g. `reports/latest`) at `out`: a relative symlink on Unix.
/// A real folder there (the layout before campaigns were named) is cleared first, if it holds
/// only report artefacts.
pub fn point_latest(out: &Path) -> anyhow::Result<()> {
    let Some(leaf) = out.file_name() else {
        return Ok(());
    };
    let parent = out.parent().unwrap_or(Path::new("."));
    let latest = parent.join("latest");
    if leaf == "latest" {
        return Ok(());
    }
    match std::fs::symlink_metadata(&latest) {
        Ok(m) if m.file_type().is_symlink() => std::fs::remove_file(&latest)?,
        Ok(m) if m.is_dir() => {
            prepare_out(&latest)?;
            std::fs::remove_dir(&latest)?;
        }
        Ok(_) => anyhow::bail!("{}: not a folder or a link; leaving it", latest.display()),
        Err(_) => {}
    }
    #[cfg(unix)]
    std::os::unix::fs::symlink(leaf, &latest)
        .map_err(|e| anyhow::anyhow!("{}: {e}", latest.display()))?;
    Ok(())
}
