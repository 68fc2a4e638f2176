//! What `cargo package` puts in the published crate: everything the build reads. (The whole
//! check is `cargo publish --dry-run -p acp-chaos-models -p acp-chaos`, too slow for a test;
//! this catches the mistake it once caught: an `include` list without `build.rs`.)

use std::path::Path;

#[test]
fn the_package_includes_the_build_script_spec_and_scenarios() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest: toml::Value =
        toml::from_str(&std::fs::read_to_string(dir.join("Cargo.toml")).unwrap()).unwrap();
    let include: Vec<&str> = manifest["package"]["include"]
        .as_array()
        .expect("an include list")
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    for needed in ["src", "spec", "scenarios", "Cargo.toml", "build.rs"] {
        assert!(
            dir.join(needed).exists(),
            "{needed} is not beside the manifest"
        );
        assert!(
            include.contains(&format!("/{needed}").as_str()),
            "`include` in sim/Cargo.toml leaves out {needed}: {include:?}"
        );
    }
}
