//! The built-in scenarios: every file of the repository's `scenarios/` folder, embedded in the
//! binary when it was built (`sim/build.rs`), so that an installed `acp-chaos` runs, replays
//! and shrinks them from any folder. They are unpacked once, by content, into the user's
//! cache (`$XDG_CACHE_HOME/acp-chaos/`, else `~/.cache/acp-chaos/`, else the temp folder), so
//! every command reads scenario files as it always does and repro lines stay the same.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

include!(concat!(env!("OUT_DIR"), "/builtin_scenarios.rs"));

/// The number of built-in scenarios (top-level files; the regression corpus not counted).
pub fn count() -> usize {
    FILES.iter().filter(|(p, _)| !p.contains('/')).count()
}

/// The folder holding the built-in scenarios, unpacked on first use: `<cache>/acp-chaos/
/// scenarios-<first 16 hex digits of the SHA-256 of every path and text>`. Two processes
/// unpacking at once each write their own folder and rename it into place; the loser's is
/// removed.
///
/// Errors: the cache folder cannot be written (the error names the path).
pub fn dir() -> std::io::Result<PathBuf> {
    let root = cache_root().join("acp-chaos");
    let dest = root.join(format!("scenarios-{}", digest()));
    if dest.is_dir() {
        return Ok(dest);
    }
    let tmp = root.join(format!(".scenarios-{}-{}", digest(), std::process::id()));
    let at = |p: &Path, e: std::io::Error| {
        std::io::Error::new(e.kind(), format!("{}: {e}", p.display()))
    };
    for (rel, text) in FILES {
        let file = tmp.join(rel);
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent).map_err(|e| at(parent, e))?;
        }
        std::fs::write(&file, text).map_err(|e| at(&file, e))?;
    }
    if std::fs::rename(&tmp, &dest).is_err() {
        // Another process got there first: its copy has the same content.
        let _ = std::fs::remove_dir_all(&tmp);
        if !dest.is_dir() {
            return Err(at(
                &dest,
                std::io::Error::other("could not unpack the built-in scenarios"),
            ));
        }
    }
    Ok(dest)
}

fn digest() -> String {
    let mut h = Sha256::new();
    for (rel, text) in FILES {
        h.update(rel.as_bytes());
        h.update([0]);
        h.update(text.as_bytes());
        h.update([0]);
    }
    h.finalize()
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn cache_root() -> PathBuf {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("XDG_CACHE_HOME")
        .or_else(|| var("HOME").map(|h| h.join(".cache")))
        .unwrap_or_else(std::env::temp_dir)
}
