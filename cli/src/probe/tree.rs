//! A folder's files, walked the one way the probe needs: every entry that is not a folder,
//! with its own metadata (links not followed), unreadable entries skipped.

use std::fs::Metadata;
use std::path::{Path, PathBuf};

/// Call `f` with every entry under `dir` that is not a folder, and its metadata (a link's
/// own, not its target's); an entry or folder that cannot be read is skipped.
pub(super) fn each_file(dir: &Path, mut f: impl FnMut(PathBuf, &Metadata)) {
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let Ok(m) = e.metadata() else { continue };
            if m.is_dir() {
                todo.push(e.path());
            } else {
                f(e.path(), &m);
            }
        }
    }
}
