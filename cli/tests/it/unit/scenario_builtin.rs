//! The unit tests of `sim/src/scenario/builtin.rs`.

/// The embedded files are the repository's `scenarios/` folder, byte for byte.
#[test]
fn the_built_in_scenarios_are_the_repository_folder() {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let mut on_disk = Vec::new();
    let mut stack = vec![repo.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "toml") {
                on_disk.push(
                    p.strip_prefix(&repo)
                        .unwrap()
                        .to_string_lossy()
                        .replace('\\', "/"),
                );
            }
        }
    }
    on_disk.sort();
    let embedded: Vec<String> = acp_chaos::scenario::builtin::FILES
        .iter()
        .map(|(p, _)| p.to_string())
        .collect();
    assert_eq!(embedded, on_disk);
    for (rel, text) in acp_chaos::scenario::builtin::FILES {
        assert_eq!(
            *text,
            std::fs::read_to_string(repo.join(rel)).unwrap(),
            "{rel}"
        );
    }
    assert!(
        acp_chaos::scenario::builtin::count() >= 50,
        "{}",
        acp_chaos::scenario::builtin::count()
    );
    let dir = acp_chaos::scenario::builtin::dir().unwrap();
    assert_eq!(
        acp_chaos::scenario::builtin::dir().unwrap(),
        dir,
        "unpacked once, by content"
    );
    assert!(dir.join("swarm-basic.toml").is_file());
}
