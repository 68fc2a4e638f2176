//! Output paths checked before a long command's work: a folder that cannot be written fails at
//! once (exit 2, naming the flag and the folder), not after minutes of runs.

use std::path::Path;

use super::CliError;

/// Create `dir` (and its parents) and write and remove an empty file in it: the only sure test
/// that files can be made there (permissions, a read-only mount, `/proc`). Errors (exit 2)
/// name `flag`, the path the user gave (`given`) and the folder that failed.
fn folder(dir: &Path, flag: &str, given: &Path) -> Result<(), CliError> {
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let fail = |e: std::io::Error| {
        CliError::usage(format!(
            "{flag} {}: cannot write in {}: {e}",
            given.display(),
            dir.display()
        ))
    };
    std::fs::create_dir_all(dir).map_err(fail)?;
    let probe = dir.join(format!(".acp-chaos-write-check-{}", std::process::id()));
    std::fs::write(&probe, b"").map_err(fail)?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// A report folder that a campaign puts in place by rename (its `<out>.partial` is made beside
/// it, see `campaign::staging`): a file there is refused, and its parent folder must be
/// writable.
pub(super) fn report_folder(out: &Path, flag: &str) -> Result<(), CliError> {
    if out.is_file() {
        return Err(CliError::usage(format!(
            "{flag} {}: a file, not a folder",
            out.display()
        )));
    }
    folder(out.parent().unwrap_or(Path::new("/")), flag, out)
}

/// A folder the command writes into (created if missing).
pub(super) fn into_folder(out: &Path, flag: &str) -> Result<(), CliError> {
    folder(out, flag, out)
}

/// An output file: a folder there is refused, and its folder must be writable.
pub(super) fn file(path: &Path, flag: &str) -> Result<(), CliError> {
    if path.is_dir() {
        return Err(CliError::usage(format!(
            "{flag} {}: a folder; give a file's path",
            path.display()
        )));
    }
    folder(path.parent().unwrap_or(Path::new(".")), flag, path)
}
