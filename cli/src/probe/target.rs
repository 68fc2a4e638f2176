//! What a probe runs against: a built-in profile (our model Agents as processes, or a
//! pinned real agent) or `-- COMMAND`, and how to launch it.

use std::path::Path;

use serde::Serialize;

use acp_chaos::models::Retention;

/// What the probe runs against, and how to launch it.
#[derive(Debug, Clone, Serialize)]
pub struct Target {
    /// Name (report folder `reports/probe-<name>`).
    pub name: String,
    /// Program and arguments; `{home}` is the run's temporary home, `{cwd}` its workspace.
    /// For a real-agent profile, the launch comes from [`crate::probe::profile::launch`] instead.
    pub command: Vec<String>,
    /// Environment on top of `HOME` (same placeholders).
    pub env: Vec<(String, String)>,
    /// The retention the Agent declares.
    pub retention: Retention,
    /// The Agent offers `session/resume` with replay across its restarts (its sessions outlive
    /// the process), so it retains its messages (A10): a `messageId` the Client holds for a
    /// message a restart lost is a violation, whatever `retention` says. False only for an
    /// Agent that keeps its sessions in memory (`acp-chaos-in-memory`,
    /// `--no-resume-after-restart`).
    pub resumes_after_restart: bool,
    /// A real agent ([`crate::probe::profile`]): each run gets its own mock model server
    /// ([`crate::probe::mock_model`]) and the profile's launch (cleared environment, config files
    /// pointing at the mock) with the run's temporary home.
    pub real: Option<&'static crate::probe::profile::Profile>,
    /// Files written under the temporary home before the first start: (relative path,
    /// contents with placeholders).
    pub files: Vec<(String, String)>,
}

/// Our own model Agents as processes (`acp-chaos agent`): built-in profile names.
pub const OURS: &[(&str, &str)] = &[
    ("acp-chaos-stored", "stored"),
    ("acp-chaos-in-memory", "in-memory"),
    ("acp-chaos-adapter", "adapter"),
];

impl Target {
    /// A built-in profile: our own model Agents as processes (`acp-chaos agent`), or a real
    /// agent of [`crate::probe::profile`] (it must be installed: `acp-chaos probe --install NAME`).
    pub fn builtin(name: &str) -> Result<Target, String> {
        let Some((_, design)) = OURS.iter().find(|(n, _)| *n == name) else {
            let real = crate::probe::profile::get(name).map_err(|_| {
                let ours: Vec<&str> = OURS.iter().map(|(n, _)| *n).collect();
                format!(
                    "unknown profile `{name}` (ours: {}; real agents: {})",
                    ours.join(", "),
                    crate::probe::profile::names().join(", ")
                )
            })?;
            crate::probe::profile::require_installed(real).map_err(|e| e.to_string())?;
            return Ok(Target {
                name: name.to_string(),
                command: Vec::new(),
                env: Vec::new(),
                retention: Retention::Process,
                resumes_after_restart: true,
                real: Some(real),
                files: Vec::new(),
            });
        };
        let exe = std::env::current_exe()
            .map_err(|e| format!("cannot find the acp-chaos binary: {e}"))?;
        Ok(Target {
            name: name.to_string(),
            command: vec![
                exe.display().to_string(),
                "agent".into(),
                "--design".into(),
                design.to_string(),
                "--store".into(),
                "{home}/store".into(),
            ],
            env: Vec::new(),
            retention: if *design == "stored" {
                Retention::Durable
            } else {
                Retention::Process
            },
            resumes_after_restart: *design != "in-memory",
            real: None,
            files: Vec::new(),
        })
    }

    /// A target for `-- COMMAND ARGS...`. A relative program path (`./agent`,
    /// `target/release/x`) is made absolute: the Agent runs in the run's workspace folder.
    pub fn command(argv: &[String], name: Option<&str>) -> Target {
        let mut command = argv.to_vec();
        if let Some(p) = command.first_mut() {
            if p.contains('/') && Path::new(p.as_str()).is_relative() {
                if let Ok(cwd) = std::env::current_dir() {
                    *p = cwd.join(p.as_str()).display().to_string();
                }
            }
        }
        Target {
            name: name.map(str::to_string).unwrap_or_else(|| name_of(argv)),
            command,
            env: Vec::new(),
            retention: Retention::Process,
            resumes_after_restart: true,
            real: None,
            files: Vec::new(),
        }
    }

    /// What the output shows as the command.
    pub(super) fn shown(&self) -> String {
        match self.real {
            Some(p) => format!(
                "profile {} ({}; {}, against a mock model server per run)",
                p.name,
                p.specs(),
                p.description
            ),
            None => self
                .command
                .iter()
                .map(|w| shell_quote(w))
                .collect::<Vec<_>>()
                .join(" "),
        }
    }
}

/// A folder-safe name from a command: the program's file name and the plain words after it
/// (`acp-chaos agent --design stored ...` → `acp-chaos-agent-stored`).
pub(super) fn name_of(argv: &[String]) -> String {
    let mut parts: Vec<String> = Vec::new();
    if let Some(p) = argv.first() {
        parts.push(
            Path::new(p)
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_else(|| p.clone()),
        );
    }
    for a in argv.iter().skip(1) {
        if !a.starts_with('-')
            && !a.contains(['/', '{', '=', ' '])
            && !a.is_empty()
            && parts.len() < 4
        {
            parts.push(a.clone());
        }
    }
    parts
        .join("-")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

pub(super) fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@{}+".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}
