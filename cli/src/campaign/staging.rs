//! A report folder in the making: a campaign writes into `<out>.partial/` (its first file the
//! marker [`MARKER`]) and, only once every file is written, puts it in the place of `<out>` by
//! rename. A kill at any moment leaves `<out>` as it was (the old report, whole) or the new one
//! (whole), never an empty or partial folder; the next campaign recognises a leftover
//! `<out>.partial/` by its marker and clears it.

use std::path::{Path, PathBuf};

/// The file a staging folder holds from its creation until just before it replaces `<out>`.
pub const MARKER: &str = ".acp-chaos-partial";

/// A staging folder beside `out`; dropped without [`Staging::commit`], it is removed.
#[derive(Debug)]
pub struct Staging {
    out: PathBuf,
    dir: PathBuf,
    done: bool,
}

impl Staging {
    /// Check `out` can be replaced (absent, or holding only what `ours` claims), clear a
    /// leftover staging folder of an earlier, killed campaign, and create a fresh one with its
    /// marker. `out` must name a folder (`--out .` or `/` cannot be replaced by rename).
    pub fn begin(out: &Path, ours: &dyn Fn(&str, &Path) -> bool) -> anyhow::Result<Staging> {
        let out = resolve(out)?;
        let dir = sibling(&out, "partial")?;
        let io = |p: &Path, e: std::io::Error| anyhow::anyhow!("{}: {e}", p.display());
        check_owned(&out, ours)?;
        // A leftover of an earlier campaign killed mid-way: the marker says it is ours; one
        // killed between the swap and the clean-up holds the old report, whole.
        clear_leftover(&dir, ours)?;
        if let Ok(trash) = sibling(&out, "old") {
            clear_leftover(&trash, ours)?;
        }
        std::fs::create_dir_all(&dir).map_err(|e| io(&dir, e))?;
        let marker = dir.join(MARKER);
        std::fs::write(
            &marker,
            "an acp-chaos report being written; removed when complete\n",
        )
        .map_err(|e| io(&marker, e))?;
        Ok(Staging {
            out,
            dir,
            done: false,
        })
    }

    /// Where files are written now.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the report will be (what paths inside it name).
    pub fn out(&self) -> &Path {
        &self.out
    }

    /// Put the staging folder in the place of `out`: the marker removed, then one atomic
    /// exchange of the two folders (Linux), else the old one renamed aside first; the old
    /// report is deleted last. `ours` is checked again on the old folder just before.
    pub fn commit(mut self, ours: &dyn Fn(&str, &Path) -> bool) -> anyhow::Result<()> {
        let io = |p: &Path, e: std::io::Error| anyhow::anyhow!("{}: {e}", p.display());
        check_owned(&self.out, ours)?;
        let marker = self.dir.join(MARKER);
        std::fs::remove_file(&marker).map_err(|e| io(&marker, e))?;
        if !self.out.exists() {
            std::fs::rename(&self.dir, &self.out).map_err(|e| io(&self.out, e))?;
        } else if exchange(&self.dir, &self.out).is_ok() {
            // The staging path now holds the old report.
            std::fs::remove_dir_all(&self.dir).map_err(|e| io(&self.dir, e))?;
        } else {
            let trash = sibling(&self.out, "old")?;
            std::fs::rename(&self.out, &trash).map_err(|e| io(&self.out, e))?;
            std::fs::rename(&self.dir, &self.out).map_err(|e| io(&self.out, e))?;
            std::fs::remove_dir_all(&trash).map_err(|e| io(&trash, e))?;
        }
        self.done = true;
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.done {
            // Best effort: a campaign that failed leaves `out` as it was.
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// `out` itself, or the folder it links to (`--out reports/latest`).
fn resolve(out: &Path) -> anyhow::Result<PathBuf> {
    match std::fs::symlink_metadata(out) {
        Ok(m) if m.file_type().is_symlink() => {
            let target =
                std::fs::read_link(out).map_err(|e| anyhow::anyhow!("{}: {e}", out.display()))?;
            Ok(out.parent().unwrap_or(Path::new(".")).join(target))
        }
        Ok(m) if !m.is_dir() => anyhow::bail!(
            "{}: a file, not a folder; refusing to write the report there",
            out.display()
        ),
        _ => Ok(out.to_path_buf()),
    }
}

/// `<parent>/<leaf>.<tag>`.
fn sibling(out: &Path, tag: &str) -> anyhow::Result<PathBuf> {
    let leaf = out.file_name().ok_or_else(|| {
        anyhow::anyhow!(
            "--out {}: name the report folder (it is replaced by rename when complete)",
            out.display()
        )
    })?;
    let mut name = leaf.to_os_string();
    name.push(".");
    name.push(tag);
    Ok(out.with_file_name(name))
}

/// Refuse `out` when it holds anything `ours` does not claim (nothing is deleted then).
fn check_owned(out: &Path, ours: &dyn Fn(&str, &Path) -> bool) -> anyhow::Result<()> {
    let Ok(entries) = std::fs::read_dir(out) else {
        return Ok(());
    };
    for e in entries {
        let e = e.map_err(|e| anyhow::anyhow!("{}: {e}", out.display()))?;
        let name = e.file_name().to_string_lossy().into_owned();
        if !ours(&name, &e.path()) {
            anyhow::bail!(
                "{}: holds {name}, which is not an acp-chaos report artefact; refusing to write \
                 the report there",
                out.display()
            );
        }
    }
    Ok(())
}

/// Remove `dir` when it is a staging folder (its marker) or a report (only `ours`); refuse
/// anything else.
fn clear_leftover(dir: &Path, ours: &dyn Fn(&str, &Path) -> bool) -> anyhow::Result<()> {
    if std::fs::symlink_metadata(dir).is_err() {
        return Ok(());
    }
    if !dir.join(MARKER).exists() {
        check_owned(dir, &|n, p| n == MARKER || ours(n, p)).map_err(|e| {
            anyhow::anyhow!("{e} (a leftover of an earlier campaign would hold {MARKER})")
        })?;
    }
    std::fs::remove_dir_all(dir).map_err(|e| anyhow::anyhow!("{}: {e}", dir.display()))
}

/// Swap two folders in one step (`renameat2(RENAME_EXCHANGE)`); an error where the system or
/// the file system cannot.
#[cfg(target_os = "linux")]
fn exchange(a: &Path, b: &Path) -> std::io::Result<()> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &Path| {
        CString::new(p.as_os_str().as_bytes())
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))
    };
    let (ca, cb) = (c(a)?, c(b)?);
    // SAFETY: two NUL-terminated paths that live across the call; no memory is shared.
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            ca.as_ptr(),
            libc::AT_FDCWD,
            cb.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Swap two folders in one step: not available here, so [`Staging::commit`] renames twice.
#[cfg(not(target_os = "linux"))]
fn exchange(_a: &Path, _b: &Path) -> std::io::Result<()> {
    Err(std::io::Error::other("no atomic exchange"))
}
