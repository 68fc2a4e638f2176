//! The unit tests of `cli/src/probe/profile.rs`.

use acp_chaos_cli::probe::profile::*;
use std::path::{Path, PathBuf};

#[test]
fn profiles_are_pinned_exactly() {
    for p in ALL {
        for pkg in p.npm_packages {
            assert!(
                pkg.version.chars().all(|c| c.is_ascii_digit() || c == '.'),
                "{} {}",
                p.name,
                pkg.spec()
            );
        }
    }
    assert_eq!(
        get("codex-acp").unwrap().specs(),
        "@agentclientprotocol/codex-acp@2.6.0"
    );
    assert_eq!(
        get("claude-agent-acp").unwrap().specs(),
        "@agentclientprotocol/claude-agent-acp@0.101.0"
    );
    assert_eq!(get("opencode").unwrap().specs(), "opencode-ai@1.18.33");
    assert!(!get("opencode").unwrap().protocol.speaks_v2());
    let e = get("nope").unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert!(e
        .to_string()
        .contains("codex-acp, claude-agent-acp, opencode"));
}

#[test]
fn not_installed_names_the_install_command() {
    let tmp = std::env::temp_dir().join(format!("acp-chaos-profile-test-{}", std::process::id()));
    assert!(!is_installed_in(&CODEX_ACP, &tmp));
    let e = CODEX_ACP.not_installed(tmp.clone());
    assert_eq!(e.exit_code(), 2);
    assert!(
        e.to_string()
            .contains("acp-chaos probe --install codex-acp"),
        "{e}"
    );
    // A complete-looking install without the stamp is not trusted.
    let pkg = tmp.join("node_modules/@agentclientprotocol/codex-acp");
    std::fs::create_dir_all(pkg.join("dist")).unwrap();
    std::fs::write(pkg.join("dist/index.js"), "").unwrap();
    std::fs::write(pkg.join("package.json"), r#"{"version":"2.6.0"}"#).unwrap();
    assert!(!is_installed_in(&CODEX_ACP, &tmp));
    std::fs::write(tmp.join(INSTALLED_STAMP), CODEX_ACP.stamp()).unwrap();
    assert!(is_installed_in(&CODEX_ACP, &tmp));
    std::fs::write(pkg.join("package.json"), r#"{"version":"2.5.0"}"#).unwrap();
    assert!(!is_installed_in(&CODEX_ACP, &tmp));
    std::fs::remove_dir_all(&tmp).unwrap();
}

#[test]
fn launch_specs_follow_the_recipe() {
    let dir = Path::new("/cache/codex-acp");
    let home = Path::new("/tmp/h");
    let s = launch_in(&CODEX_ACP, dir, home, 4242, true);
    assert_eq!(s.program, PathBuf::from("node"));
    assert_eq!(s.argv()[0], "node");
    assert_eq!(s.argv()[1..], s.args[..]);
    let full = s.full_env();
    assert!(full.iter().any(|(k, v)| k == "HOME" && v == "/tmp/h"));
    assert!(!full.iter().any(|(k, _)| k.starts_with("ANTHROPIC")));
    assert_eq!(
        s.args,
        vec!["/cache/codex-acp/node_modules/@agentclientprotocol/codex-acp/dist/index.js"]
    );
    assert_eq!(s.env_var("HOME"), Some("/tmp/h"));
    assert_eq!(s.env_var("CODEX_HOME"), Some("/tmp/h/.codex"));
    assert_eq!(s.env_var("OPENAI_API_KEY"), Some("dummy"));
    assert_eq!(s.cwd, PathBuf::from("/tmp/h/workspace"));
    assert_eq!(s.files[0].0, PathBuf::from("/tmp/h/.codex/config.toml"));
    let cfg: toml::Value = toml::from_str(&s.files[0].1).unwrap();
    assert_eq!(
        cfg["model_providers"]["mock"]["base_url"].as_str(),
        Some("http://127.0.0.1:4242/v1")
    );
    assert_eq!(
        cfg["model_providers"]["mock"]["wire_api"].as_str(),
        Some("responses")
    );

    let c = launch_in(&CLAUDE_AGENT_ACP, dir, home, 4242, true);
    assert_eq!(
        c.env_var("ANTHROPIC_BASE_URL"),
        Some("http://127.0.0.1:4242")
    );
    assert_eq!(c.env_var("CLAUDE_CONFIG_DIR"), Some("/tmp/h/.claude"));
    assert_eq!(c.env_var("IS_SANDBOX"), Some("1"));
    assert_eq!(
        c.env_var("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"),
        Some("1")
    );
    assert!(c.files.is_empty());
    let c = launch_in(&CLAUDE_AGENT_ACP, dir, home, 4242, false);
    assert_eq!(c.env_var("IS_SANDBOX"), None);

    let o = launch_in(&OPENCODE, Path::new("/cache/opencode"), home, 4242, false);
    assert_eq!(
        o.program,
        PathBuf::from("/cache/opencode/node_modules/.bin/opencode")
    );
    assert_eq!(o.args, vec!["acp"]);
    let cfg: serde_json::Value = serde_json::from_str(&o.files[0].1).unwrap();
    assert_eq!(
        cfg["provider"]["anthropic"]["options"]["baseURL"],
        "http://127.0.0.1:4242/v1"
    );
    assert_eq!(
        o.env_var("OPENCODE_CONFIG").map(PathBuf::from),
        Some(o.files[0].0.clone())
    );
    assert_eq!(o.env_var("OPENCODE_DISABLE_AUTOUPDATE"), Some("1"));
}
