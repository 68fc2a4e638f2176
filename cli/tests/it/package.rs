//! What `cargo package` puts in the published crates: everything the build reads. (The whole
//! check is `cargo publish --dry-run -p acp-chaos-models -p acp-chaos -p acp-chaos-cli`, too slow
//! for a test; this catches the mistake it once caught: an `include` list without `build.rs`.)

use std::path::Path;

/// `include` of `folder`'s manifest names each of `needed`, and each is there.
fn includes(folder: &str, needed: &[&str]) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(folder);
    let manifest: toml::Value =
        toml::from_str(&std::fs::read_to_string(dir.join("Cargo.toml")).unwrap()).unwrap();
    let include: Vec<&str> = manifest["package"]["include"]
        .as_array()
        .expect("an include list")
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    for needed in needed {
        assert!(
            dir.join(needed).exists(),
            "{needed} is not beside the manifest"
        );
        assert!(
            include.contains(&format!("/{needed}").as_str()),
            "`include` in {folder}/Cargo.toml leaves out {needed}: {include:?}"
        );
    }
}

#[test]
fn the_package_includes_the_build_script_spec_scenarios_and_licences() {
    let library = [
        "src",
        "examples",
        "spec",
        "scenarios",
        "Cargo.toml",
        "build.rs",
        "LICENSE-MIT",
        "LICENSE-APACHE",
    ];
    includes("sim", &library);
    includes(
        "cli",
        &[
            "src",
            "examples",
            "Cargo.toml",
            "LICENSE-MIT",
            "LICENSE-APACHE",
        ],
    );
}

/// The licence the manifests declare (`MIT OR Apache-2.0`) is the licence the repository and
/// each crate carry: both texts, at the root and beside each manifest.
#[test]
fn both_licence_texts_are_present_as_the_manifests_declare() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = dir.parent().unwrap();
    let ws: toml::Value =
        toml::from_str(&std::fs::read_to_string(root.join("Cargo.toml")).unwrap()).unwrap();
    assert_eq!(
        ws["workspace"]["package"]["license"].as_str(),
        Some("MIT OR Apache-2.0")
    );
    for folder in [root, dir, &root.join("sim"), &root.join("models")] {
        let mit = std::fs::read_to_string(folder.join("LICENSE-MIT")).unwrap();
        assert!(mit.contains("Permission is hereby granted, free of charge"));
        let apache = std::fs::read_to_string(folder.join("LICENSE-APACHE")).unwrap();
        assert!(apache.contains("Apache License") && apache.contains("Version 2.0"));
    }
}

/// Every package `name` depends on, directly or not, as `Cargo.lock` records it (dependencies of
/// every kind and of every feature the workspace turns on: a superset of what a user compiles).
fn locked_closure(name: &str) -> std::collections::BTreeSet<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let lock: toml::Value =
        toml::from_str(&std::fs::read_to_string(root.join("Cargo.lock")).unwrap()).unwrap();
    let packages = lock["package"].as_array().expect("[[package]] entries");
    let deps_of = |n: &str| -> Vec<String> {
        // An entry names a dependency as `name` or, when two versions are locked, `name version`.
        let (n, version) = n.split_once(' ').map_or((n, None), |(a, b)| (a, Some(b)));
        packages
            .iter()
            .filter(|p| p["name"].as_str() == Some(n))
            .filter(|p| version.is_none_or(|v| p["version"].as_str() == Some(v)))
            .flat_map(|p| p.get("dependencies").and_then(|d| d.as_array()).cloned())
            .flatten()
            .filter_map(|d| d.as_str().map(str::to_string))
            .collect()
    };
    // Walked by `name version` where the lock file gives one: each locked version of a crate
    // has its own dependencies.
    let mut seen = std::collections::BTreeSet::new();
    let mut todo = vec![name.to_string()];
    while let Some(n) = todo.pop() {
        for d in deps_of(&n) {
            if seen.insert(d.clone()) {
                todo.push(d);
            }
        }
    }
    seen.into_iter()
        .map(|d| d.split(' ').next().unwrap().to_string())
        .collect()
}

/// Issue 40: a user's `cargo add --dev acp-chaos` compiles no command line, progress bar,
/// signal handler, allocator or HTTP server: those are the crate `acp-chaos-cli`'s.
#[test]
fn the_library_depends_on_no_crate_of_the_command_line() {
    let tool_only = [
        "clap",
        "indicatif",
        "ctrlc",
        "mimalloc",
        "tracing-subscriber",
        "axum",
        "hyper",
    ];
    let cli = locked_closure("acp-chaos-cli");
    let library = locked_closure("acp-chaos");
    assert!(cli.contains("acp-chaos") && library.contains("acp-chaos-models"));
    for name in tool_only {
        // The command does depend on it, so the lock file's walk can see it.
        assert!(
            cli.contains(name),
            "acp-chaos-cli no longer depends on {name}"
        );
        assert!(
            !library.contains(name),
            "the acp-chaos library depends on {name}, directly or not: move what uses it to cli/"
        );
    }
}
