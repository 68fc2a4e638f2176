//! Embeds the scenario files (`scenarios/**/*.toml`) in the binary, so an installed
//! `acp-chaos` (`cargo install --locked --path cli`) runs and replays the built-in scenarios
//! from any folder (`acp_chaos::scenario::builtin`).

use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    // In the repository the scenarios sit beside the crate (read there, so cargo watches the
    // real folder rather than a link to it); in a packaged crate, inside it.
    let dir = [manifest.join("../scenarios"), manifest.join("scenarios")]
        .into_iter()
        .find(|d| d.is_dir());
    let mut files = Vec::new();
    if let Some(dir) = &dir {
        println!("cargo:rerun-if-changed={}", dir.display());
        collect(dir, dir, &mut files);
    }
    files.sort();
    let mut out = String::from("/// Every built-in scenario file: (path inside `scenarios/`, text).\npub const FILES: &[(&str, &str)] = &[\n");
    for (rel, abs) in &files {
        out.push_str(&format!("    ({rel:?}, include_str!({abs:?})),\n"));
    }
    out.push_str("];\n");
    let dest = PathBuf::from(std::env::var_os("OUT_DIR").expect("set by cargo"))
        .join("builtin_scenarios.rs");
    std::fs::write(dest, out).expect("write builtin_scenarios.rs");
}

fn collect(root: &Path, dir: &Path, files: &mut Vec<(String, String)>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        // A link to a folder is not followed: a link back up the tree (`scenarios/scenarios`)
        // would embed the corpus again at every level, until the system's link limit.
        let link = e.file_type().is_ok_and(|t| t.is_symlink());
        if p.is_dir() {
            if !link {
                collect(root, &p, files);
            }
        } else if p.extension().is_some_and(|x| x == "toml") {
            let rel = p
                .strip_prefix(root)
                .expect("under root")
                .to_string_lossy()
                .replace('\\', "/");
            let abs = p.canonicalize().unwrap_or(p.clone()).display().to_string();
            files.push((rel, abs));
        }
    }
}
