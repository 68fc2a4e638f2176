//! Profiles of real ACP agents for `acp-chaos probe`: what to install (exact npm versions:
//! the adapters change weekly), where it is cached, and how to launch each one offline against
//! the mock model server ([`crate::probe::mock_model`]).
//!
//! | profile | npm packages | ACP | model API |
//! |---|---|---|---|
//! | `codex-acp` | `@agentclientprotocol/codex-acp@2.6.0` | v1 + v2 | OpenAI Responses |
//! | `claude-agent-acp` | `@agentclientprotocol/claude-agent-acp@0.101.0` | v1 + v2 | Anthropic Messages |
//! | `opencode` | `opencode-ai@1.18.33` (`opencode acp`) | v1 only | Anthropic Messages |
//!
//! Nothing is vendored: [`install`] runs `npm install` from the registry into the cache folder
//! ([`cache_root`]: `$ACP_CHAOS_CACHE`, else `$XDG_CACHE_HOME/acp-chaos`, else
//! `~/.cache/acp-chaos`), one folder per profile. The native binaries ship inside the npm
//! packages; nothing downloads at run time. [`launch`] says how to start an installed agent
//! with a fresh `HOME` (its environment, its configuration files, its working folder); a
//! profile not installed is [`ProfileError::NotInstalled`], whose message names the install
//! command (exit code 2, [`ProfileError::exit_code`]).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// An npm package at an exact version.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct NpmPackage {
    /// Package name.
    pub name: &'static str,
    /// Exact version.
    pub version: &'static str,
}

impl NpmPackage {
    /// `name@version`.
    pub fn spec(&self) -> String {
        format!("{}@{}", self.name, self.version)
    }
}

/// The ACP protocol versions an agent speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Protocol {
    /// ACP v1 only: no `idempotencyKey`, no replay; the probe reports it, it does not probe it.
    V1Only,
    /// ACP v1 and v2 (`protocolVersion: 2` in `initialize`).
    V1AndV2,
}

impl Protocol {
    /// The agent answers `initialize` with protocol version 2.
    pub fn speaks_v2(self) -> bool {
        self == Protocol::V1AndV2
    }
}

/// The model API an agent calls (the mock serves both).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ModelApi {
    /// Anthropic Messages, `POST /v1/messages`.
    Anthropic,
    /// OpenAI Responses, `POST /v1/responses`.
    OpenaiResponses,
}

/// How the agent process is started, relative to the profile's folder.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Entry {
    /// `node <dir>/<script> <args>`.
    NodeScript {
        /// Script path under the profile's folder.
        script: &'static str,
        /// Arguments after it.
        args: &'static [&'static str],
    },
    /// `<dir>/<program> <args>` (an npm bin shim).
    Program {
        /// Program path under the profile's folder.
        program: &'static str,
        /// Arguments.
        args: &'static [&'static str],
    },
}

impl Entry {
    fn path(&self) -> &'static str {
        match self {
            Entry::NodeScript { script, .. } => script,
            Entry::Program { program, .. } => program,
        }
    }
}

/// A real agent the probe can run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Profile {
    /// Profile name (`codex-acp`).
    pub name: &'static str,
    /// What it is, one line.
    pub description: &'static str,
    /// npm packages to install, exact versions.
    pub npm_packages: &'static [NpmPackage],
    /// ACP versions it speaks.
    pub protocol: Protocol,
    /// The model API it calls.
    pub model_api: ModelApi,
    /// How to start it.
    pub entry: Entry,
    /// Roughly what the install takes on disk, MB (for the install message).
    pub install_mb: u32,
}

/// `codex-acp`: Zed's Codex adapter with the `@openai/codex` native binary.
pub const CODEX_ACP: Profile = Profile {
    name: "codex-acp",
    description: "Codex CLI behind the ACP adapter (OpenAI Responses API)",
    npm_packages: &[NpmPackage {
        name: "@agentclientprotocol/codex-acp",
        version: "2.6.0",
    }],
    protocol: Protocol::V1AndV2,
    model_api: ModelApi::OpenaiResponses,
    entry: Entry::NodeScript {
        script: "node_modules/@agentclientprotocol/codex-acp/dist/index.js",
        args: &[],
    },
    install_mb: 460,
};

/// `claude-agent-acp`: the Claude Agent SDK adapter with the Claude Code native binary.
pub const CLAUDE_AGENT_ACP: Profile = Profile {
    name: "claude-agent-acp",
    description: "Claude Code behind the ACP adapter (Anthropic Messages API)",
    npm_packages: &[NpmPackage {
        name: "@agentclientprotocol/claude-agent-acp",
        version: "0.101.0",
    }],
    protocol: Protocol::V1AndV2,
    model_api: ModelApi::Anthropic,
    entry: Entry::NodeScript {
        script: "node_modules/@agentclientprotocol/claude-agent-acp/dist/index.js",
        args: &[],
    },
    install_mb: 400,
};

/// `opencode`: `opencode acp`, ACP v1 only.
pub const OPENCODE: Profile = Profile {
    name: "opencode",
    description: "opencode's built-in ACP server (ACP v1 only; Anthropic Messages API)",
    npm_packages: &[NpmPackage {
        name: "opencode-ai",
        version: "1.18.33",
    }],
    protocol: Protocol::V1Only,
    model_api: ModelApi::Anthropic,
    entry: Entry::Program {
        program: "node_modules/.bin/opencode",
        args: &["acp"],
    },
    install_mb: 350,
};

/// Every profile.
pub const ALL: &[Profile] = &[CODEX_ACP, CLAUDE_AGENT_ACP, OPENCODE];

/// The file [`install`] writes last, holding the installed package specs: an interrupted
/// install leaves none, and a profile whose pins changed no longer matches it.
pub const INSTALLED_STAMP: &str = ".acp-chaos-installed";

/// Why a profile cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// No such profile.
    #[error("unknown profile {0:?}; profiles: {names}", names = names().join(", "))]
    Unknown(String),
    /// Not installed in the cache folder.
    #[error(
        "profile {profile} is not installed (looked in {}); install it with:\n  acp-chaos probe --install {profile}\n(npm install of {specs}, about {mb} MB from the npm registry)",
        dir.display()
    )]
    NotInstalled {
        /// Profile name.
        profile: &'static str,
        /// Its cache folder.
        dir: PathBuf,
        /// The packages it needs.
        specs: String,
        /// Rough size.
        mb: u32,
    },
    /// `npm` could not be started.
    #[error(
        "cannot run npm ({0}): installing a profile needs Node.js 20 or newer and npm on PATH"
    )]
    NpmMissing(#[source] std::io::Error),
    /// `npm install` failed.
    #[error("npm install of {specs} into {} failed ({status}):\n{output}", dir.display())]
    InstallFailed {
        /// The packages.
        specs: String,
        /// The folder.
        dir: PathBuf,
        /// npm's exit status.
        status: String,
        /// The end of npm's output.
        output: String,
    },
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

impl ProfileError {
    /// The CLI's exit code: 2 for a usage problem (unknown or not installed profile), 1 else.
    pub fn exit_code(&self) -> i32 {
        match self {
            ProfileError::Unknown(_) | ProfileError::NotInstalled { .. } => 2,
            _ => 1,
        }
    }
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> ProfileError + '_ {
    move |source| ProfileError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Profile names.
pub fn names() -> Vec<&'static str> {
    ALL.iter().map(|p| p.name).collect()
}

/// The profile called `name`.
pub fn get(name: &str) -> Result<&'static Profile, ProfileError> {
    ALL.iter()
        .find(|p| p.name == name)
        .ok_or_else(|| ProfileError::Unknown(name.to_string()))
}

/// The cache folder: `$ACP_CHAOS_CACHE`, else `$XDG_CACHE_HOME/acp-chaos`, else
/// `$HOME/.cache/acp-chaos` (empty variables are ignored).
pub fn cache_root() -> PathBuf {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    if let Some(d) = var("ACP_CHAOS_CACHE") {
        return PathBuf::from(d);
    }
    if let Some(d) = var("XDG_CACHE_HOME") {
        return PathBuf::from(d).join("acp-chaos");
    }
    let home = var("HOME").map(PathBuf::from).unwrap_or_else(|| ".".into());
    home.join(".cache").join("acp-chaos")
}

impl Profile {
    /// Its folder under [`cache_root`].
    pub fn dir(&self) -> PathBuf {
        cache_root().join(self.name)
    }

    /// `pkg@ver pkg@ver`.
    pub fn specs(&self) -> String {
        self.npm_packages
            .iter()
            .map(NpmPackage::spec)
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The command that installs it.
    pub fn install_command(&self) -> String {
        format!("acp-chaos probe --install {}", self.name)
    }

    pub fn stamp(&self) -> String {
        self.npm_packages
            .iter()
            .map(|p| format!("{}\n", p.spec()))
            .collect()
    }

    pub fn not_installed(&self, dir: PathBuf) -> ProfileError {
        ProfileError::NotInstalled {
            profile: self.name,
            dir,
            specs: self.specs(),
            mb: self.install_mb,
        }
    }
}

/// The profile is installed in `dir` at its pinned versions: [`install`] finished there
/// (its stamp lists exactly these packages), every package's `package.json` has its pinned
/// version, and the entry point exists.
pub fn is_installed_in(profile: &Profile, dir: &Path) -> bool {
    let stamp = std::fs::read_to_string(dir.join(INSTALLED_STAMP)).unwrap_or_default();
    if stamp != profile.stamp() || !dir.join(profile.entry.path()).exists() {
        return false;
    }
    profile.npm_packages.iter().all(|p| {
        let manifest = dir.join("node_modules").join(p.name).join("package.json");
        std::fs::read_to_string(manifest)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .is_some_and(|v| v["version"] == p.version)
    })
}

/// The profile is installed in its cache folder.
pub fn is_installed(profile: &Profile) -> bool {
    is_installed_in(profile, &profile.dir())
}

/// `Ok` when installed, else [`ProfileError::NotInstalled`] (exit 2, names the install command).
pub fn require_installed(profile: &Profile) -> Result<PathBuf, ProfileError> {
    let dir = profile.dir();
    if is_installed_in(profile, &dir) {
        Ok(dir)
    } else {
        Err(profile.not_installed(dir))
    }
}

/// What [`install`] did.
#[derive(Clone, Debug, serde::Serialize)]
pub struct InstallReport {
    /// Profile name.
    pub profile: &'static str,
    /// The folder.
    pub dir: PathBuf,
    /// It was installed already: nothing ran.
    pub already: bool,
    /// Wall time of `npm install`.
    pub seconds: f64,
    /// Size of the folder afterwards, bytes.
    pub bytes: u64,
}

/// The npm command [`install`] runs: `npm install --prefix DIR --no-audit --no-fund
/// --save-exact PKG@VER...`.
pub fn npm_install_command(profile: &Profile, dir: &Path) -> Command {
    let mut cmd = Command::new("npm");
    cmd.arg("install")
        .arg("--prefix")
        .arg(dir)
        .args(["--no-audit", "--no-fund", "--save-exact"])
        .args(profile.npm_packages.iter().map(NpmPackage::spec));
    cmd
}

/// Install the profile's pinned packages from the npm registry into its cache folder
/// (nothing runs when it is installed already). npm's output goes to stderr.
pub fn install(profile: &Profile) -> Result<InstallReport, ProfileError> {
    install_in(profile, &profile.dir())
}

/// [`install`] into `dir`.
pub fn install_in(profile: &Profile, dir: &Path) -> Result<InstallReport, ProfileError> {
    if is_installed_in(profile, dir) {
        return Ok(InstallReport {
            profile: profile.name,
            dir: dir.to_path_buf(),
            already: true,
            seconds: 0.0,
            bytes: dir_size(dir),
        });
    }
    std::fs::create_dir_all(dir).map_err(io_err(dir))?;
    let stamp = dir.join(INSTALLED_STAMP);
    match std::fs::remove_file(&stamp) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io_err(&stamp)(e)),
        _ => {}
    }
    let t0 = crate::wall_clock::now();
    let out = npm_install_command(profile, dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .map_err(ProfileError::NpmMissing)?;
    let seconds = t0.elapsed().as_secs_f64();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprint!("{text}");
    if !out.status.success() {
        let lines: Vec<&str> = text.lines().collect();
        let tail = lines[lines.len().saturating_sub(20)..].join("\n");
        return Err(ProfileError::InstallFailed {
            specs: profile.specs(),
            dir: dir.to_path_buf(),
            status: out.status.to_string(),
            output: tail,
        });
    }
    std::fs::write(&stamp, profile.stamp()).map_err(io_err(&stamp))?;
    if !is_installed_in(profile, dir) {
        return Err(ProfileError::InstallFailed {
            specs: profile.specs(),
            dir: dir.to_path_buf(),
            status: "exit 0".into(),
            output: format!(
                "npm finished but {} or a pinned package.json is missing",
                profile.entry.path()
            ),
        });
    }
    Ok(InstallReport {
        profile: profile.name,
        dir: dir.to_path_buf(),
        already: false,
        seconds,
        bytes: dir_size(dir),
    })
}

/// Total size of the files under `dir` (symlinks not followed, a hard-linked file once).
pub fn dir_size(dir: &Path) -> u64 {
    let mut total = 0;
    #[cfg(unix)]
    let mut seen = std::collections::BTreeSet::new();
    super::tree::each_file(dir, |_, m| {
        if !m.is_file() {
            return;
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            if m.nlink() > 1 && !seen.insert((m.dev(), m.ino())) {
                return;
            }
        }
        total += m.len();
    });
    total
}

/// How to start one agent process.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct LaunchSpec {
    /// Program (`node` is found on `PATH`).
    pub program: PathBuf,
    /// Arguments.
    pub args: Vec<String>,
    /// The environment, complete but for the variables passed through from the parent
    /// ([`PASS_THROUGH_ENV`]): [`LaunchSpec::command`] clears everything else, so no real key
    /// or base URL of the machine reaches the agent.
    pub env: Vec<(String, String)>,
    /// Working folder (absolute, inside `HOME`): the `cwd` for `session/new`.
    pub cwd: PathBuf,
    /// Files to write before the start: (absolute path, contents).
    pub files: Vec<(PathBuf, String)>,
}

/// Variables [`LaunchSpec::command`] passes through from the parent environment.
pub const PASS_THROUGH_ENV: &[&str] = &["PATH", "LANG", "LC_ALL", "TZ", "TMPDIR"];

impl LaunchSpec {
    /// Create `HOME`'s folders, the working folder and the configuration files.
    pub fn write_files(&self) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.cwd)?;
        for (path, text) in &self.files {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(path, text)?;
        }
        for (k, v) in &self.env {
            if matches!(
                k.as_str(),
                "HOME"
                    | "CODEX_HOME"
                    | "CLAUDE_CONFIG_DIR"
                    | "XDG_CONFIG_HOME"
                    | "XDG_DATA_HOME"
                    | "XDG_CACHE_HOME"
                    | "XDG_STATE_HOME"
            ) {
                std::fs::create_dir_all(v)?;
            }
        }
        Ok(())
    }

    /// Program and arguments as one vector (`argv[0]` the program).
    pub fn argv(&self) -> Vec<String> {
        std::iter::once(self.program.display().to_string())
            .chain(self.args.iter().cloned())
            .collect()
    }

    /// The agent's whole environment: [`PASS_THROUGH_ENV`] from this process, then
    /// [`LaunchSpec::env`]. A launcher that spawns itself should `env_clear()` and set these,
    /// so no model key, base URL or provider switch of the machine reaches the agent.
    pub fn full_env(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = PASS_THROUGH_ENV
            .iter()
            .filter(|k| !self.env.iter().any(|(e, _)| e == *k))
            .filter_map(|k| std::env::var(k).ok().map(|v| ((*k).to_string(), v)))
            .collect();
        out.extend(self.env.iter().cloned());
        out
    }

    /// The command: program, arguments, a cleared environment with [`LaunchSpec::env`] and
    /// [`PASS_THROUGH_ENV`], the working folder. Stdio, the process group and the spawn are
    /// the caller's (the probe pipes stdin/stdout and starts it with `process_group(0)`).
    pub fn command(&self) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.args)
            .current_dir(&self.cwd)
            .env_clear()
            .envs(self.full_env());
        cmd
    }

    /// The value of an environment variable of the spec.
    pub fn env_var(&self, key: &str) -> Option<&str> {
        self.env
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

#[cfg(unix)]
fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

#[cfg(not(unix))]
fn is_root() -> bool {
    false
}

/// How long a launched agent needs to answer `initialize` on this kind of machine, with a
/// margin (codex-acp about 1 s, claude-agent-acp about 1.5 s, opencode several seconds).
pub fn startup_timeout(profile: &Profile) -> Duration {
    match profile.name {
        "opencode" => Duration::from_secs(60),
        _ => Duration::from_secs(30),
    }
}

/// How to launch the installed `profile` with `home` as its fresh `HOME` (an absolute path;
/// the probe makes a new temporary folder per start, or reuses it to restart the same agent
/// with its stored sessions) against the mock model on `127.0.0.1:mock_port`. Errors when
/// the profile is not installed ([`ProfileError::NotInstalled`]). Nothing is written: call
/// [`LaunchSpec::write_files`].
pub fn launch(profile: &Profile, home: &Path, mock_port: u16) -> Result<LaunchSpec, ProfileError> {
    let dir = require_installed(profile)?;
    Ok(launch_in(profile, &dir, home, mock_port, is_root()))
}

/// [`launch`] for a profile installed in `dir`, `root` telling whether the agent runs as root
/// (pure: for tests and for showing the settings).
pub fn launch_in(
    profile: &Profile,
    dir: &Path,
    home: &Path,
    mock_port: u16,
    root: bool,
) -> LaunchSpec {
    let home_s = home.display().to_string();
    let base = format!("http://127.0.0.1:{mock_port}");
    let mut env: Vec<(String, String)> = vec![("HOME".into(), home_s.clone())];
    let mut files = Vec::new();
    let mut push = |k: &str, v: String| env.push((k.to_string(), v));
    match profile.name {
        "codex-acp" => {
            let codex_home = home.join(".codex");
            push("CODEX_HOME", codex_home.display().to_string());
            push("OPENAI_API_KEY", "dummy".into());
            push("NO_BROWSER", "1".into());
            files.push((codex_home.join("config.toml"), codex_config(mock_port)));
        }
        "claude-agent-acp" => {
            push(
                "CLAUDE_CONFIG_DIR",
                home.join(".claude").display().to_string(),
            );
            push("ANTHROPIC_BASE_URL", base);
            push("ANTHROPIC_API_KEY", "dummy".into());
            push("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".into());
            push("DISABLE_TELEMETRY", "1".into());
            push("DISABLE_AUTOUPDATER", "1".into());
            push("DISABLE_ERROR_REPORTING", "1".into());
            if root {
                // Claude Code refuses to bypass permissions as root outside a sandbox:
                // `session/new` fails with -32603 "bypass_root" without it.
                push("IS_SANDBOX", "1".into());
            }
        }
        "opencode" => {
            let config = home.join(".config").join("opencode").join("opencode.json");
            push("OPENCODE_CONFIG", config.display().to_string());
            for (k, sub) in [
                ("XDG_CONFIG_HOME", ".config"),
                ("XDG_DATA_HOME", ".local/share"),
                ("XDG_CACHE_HOME", ".cache"),
                ("XDG_STATE_HOME", ".local/state"),
            ] {
                push(k, home.join(sub).display().to_string());
            }
            push("ANTHROPIC_API_KEY", "dummy".into());
            push("OPENCODE_DISABLE_AUTOUPDATE", "1".into());
            push("OPENCODE_DISABLE_MODELS_FETCH", "1".into());
            push("OPENCODE_DISABLE_LSP_DOWNLOAD", "1".into());
            push("OPENCODE_DISABLE_SHARE", "1".into());
            files.push((config, opencode_config(mock_port)));
        }
        _ => {}
    }
    let (program, args) = match profile.entry {
        Entry::NodeScript { script, args } => (
            PathBuf::from("node"),
            std::iter::once(dir.join(script).display().to_string())
                .chain(args.iter().map(|a| a.to_string()))
                .collect(),
        ),
        Entry::Program { program, args } => (
            dir.join(program),
            args.iter().map(|a| a.to_string()).collect(),
        ),
    };
    LaunchSpec {
        program,
        args,
        env,
        cwd: home.join("workspace"),
        files,
    }
}

/// `$CODEX_HOME/config.toml`: the mock as the only provider, no retries (a probe counts every
/// request), no approvals, a read-only sandbox.
pub fn codex_config(mock_port: u16) -> String {
    format!(
        r#"model = "gpt-mock"
model_provider = "mock"
approval_policy = "never"
sandbox_mode = "read-only"

[model_providers.mock]
name = "mock"
base_url = "http://127.0.0.1:{mock_port}/v1"
wire_api = "responses"
env_key = "OPENAI_API_KEY"
request_max_retries = 0
stream_max_retries = 0
"#
    )
}

/// opencode's JSON configuration: the Anthropic provider pointed at the mock.
pub fn opencode_config(mock_port: u16) -> String {
    let v = serde_json::json!({
        "$schema": "https://opencode.ai/config.json",
        "model": "anthropic/claude-sonnet-4-5",
        "small_model": "anthropic/claude-sonnet-4-5",
        "autoupdate": false,
        "share": "disabled",
        "provider": {
            "anthropic": {
                "options": {
                    "baseURL": format!("http://127.0.0.1:{mock_port}/v1"),
                    "apiKey": "dummy"
                }
            }
        }
    });
    serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
}
