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
