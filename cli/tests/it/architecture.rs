//! `docs/internals/architecture.md` stays a true map of the source: its section "The tree" has
//! one paragraph per source folder (`**`sim/src/explore/`**`), every `.rs` file of the three
//! crates is named (by its file name, in backticks) in the paragraph of the folder nearest
//! above it, and every file name a paragraph gives exists under that folder. A new file, a
//! removed one or a rename fails here until the page changes with it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every `.rs` file under `dir`, relative to the repository root, `/`-separated.
fn sources(dir: &Path, out: &mut Vec<String>) {
    for p in crate::common::files_with_extension(dir, "rs") {
        let rel = p.strip_prefix(root()).unwrap();
        out.push(rel.to_str().unwrap().replace('\\', "/"));
    }
}

/// The paragraphs of "The tree" that map a source folder: (folder with its `/`, text).
fn paragraphs() -> Vec<(String, String)> {
    let page = std::fs::read_to_string(root().join("docs/internals/architecture.md")).unwrap();
    let tree = &page[page.find("## The tree").expect("a section `## The tree`")..];
    let mut out: Vec<(String, String)> = Vec::new();
    for para in tree.split("\n\n") {
        let para = para.trim_start();
        let Some(head) = para.strip_prefix("**`") else {
            continue;
        };
        let folder = head.split('`').next().unwrap();
        if ["sim/src/", "cli/src/", "models/src/"]
            .iter()
            .any(|c| folder.starts_with(c))
        {
            out.push((folder.to_string(), para.to_string()));
        }
    }
    out
}

/// The backticked file names of a paragraph (`ledger.rs`).
fn named_files(text: &str) -> BTreeSet<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|t| {
            t.ends_with(".rs")
                && !t.contains(' ')
                && !t.contains('/')
                && t.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        })
        .map(str::to_string)
        .collect()
}

#[test]
fn the_architecture_page_names_every_source_file_and_no_missing_one() {
    let paras = paragraphs();
    assert!(paras.len() >= 10, "only {} folder paragraphs", paras.len());
    let mut files = Vec::new();
    sources(&root().join("sim/src"), &mut files);
    sources(&root().join("cli/src"), &mut files);
    sources(&root().join("models/src"), &mut files);
    let mut problems = Vec::new();
    for file in &files {
        // The paragraph of the deepest folder holding the file (`sim/src/` and `cli/src/` hold
        // only the files directly in them; elsewhere a folder below without its own paragraph
        // belongs to its parent's).
        let home = paras
            .iter()
            .filter(|(folder, _)| file.starts_with(folder.as_str()))
            .filter(|(folder, _)| {
                !["sim/src/", "cli/src/"].contains(&folder.as_str())
                    || !file[folder.len()..].contains('/')
            })
            .max_by_key(|(folder, _)| folder.len());
        let Some((folder, text)) = home else {
            problems.push(format!("{file}: no paragraph maps its folder"));
            continue;
        };
        let name = file.rsplit('/').next().unwrap();
        if name == "mod.rs" {
            // The folder's own paragraph is its map.
            continue;
        }
        if !named_files(text).contains(name) {
            problems.push(format!("{file}: not named in the paragraph of `{folder}`"));
        }
    }
    for (folder, text) in &paras {
        for name in named_files(text) {
            let exists = files
                .iter()
                .any(|f| f.starts_with(folder.as_str()) && f.ends_with(&format!("/{name}")));
            if !exists {
                problems.push(format!("`{folder}` names `{name}`, which is not under it"));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "docs/internals/architecture.md, \"The tree\":\n{}",
        problems.join("\n")
    );
}

/// A fault kind is one file in `sim/src/nemesis/kinds/` (its row): outside that folder no
/// `match` arm names a kind, so a new kind adds no arm anywhere else (issue 40;
/// `docs/internals/extending.md`, "A fault kind"). A kind named as a value (a steering tool of
/// guided exploration, a logged op's name) is not an arm; an arm is a variant followed by `|`
/// or `=>` on its line, a variant alone on its line (a multi-line pattern or a list of kinds),
/// or an alias of `FaultKind`.
#[test]
fn no_match_arm_names_a_fault_kind_outside_the_kinds_folder() {
    let mut files = Vec::new();
    sources(&root().join("sim/src"), &mut files);
    sources(&root().join("cli/src"), &mut files);
    let mut arms = Vec::new();
    for file in files
        .iter()
        .filter(|f| !f.starts_with("sim/src/nemesis/kinds/"))
    {
        let text = std::fs::read_to_string(root().join(file)).unwrap();
        for (n, line) in text.lines().enumerate() {
            // An alias (`use FaultKind as K`) would hide the arms from the scan below.
            if line.contains("FaultKind as ") {
                arms.push(format!("{file}:{}: {}", n + 1, line.trim()));
            }
            let mut rest = line;
            while let Some(i) = rest.find("FaultKind::") {
                rest = &rest[i + "FaultKind::".len()..];
                let ident: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric())
                    .collect();
                let after = rest[ident.len()..].trim_start();
                let variant =
                    ident.chars().next().is_some_and(|c| c.is_ascii_uppercase()) && ident != "ALL";
                let alone = line.trim_start().starts_with("FaultKind::")
                    && (after.is_empty() || after == ",");
                let pattern = after.starts_with('|')
                    || after.contains("=>")
                    || line.trim_start().starts_with("| FaultKind::")
                    || alone;
                if variant && pattern {
                    arms.push(format!("{file}:{}: {}", n + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        arms.is_empty(),
        "match arms over fault kinds outside sim/src/nemesis/kinds/ (answer from the kind's row instead):\n{}",
        arms.join("\n")
    );
}
