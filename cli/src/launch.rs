//! How this process was launched, so that a line it prints to rerun something runs as
//! printed: `acp-chaos replay …` for an installed binary, `cargo run --release -- replay …`
//! when `cargo run` started it (on a fresh clone there is no `acp-chaos` on the `PATH`).
//!
//! Read outside every run (like [`crate::wall_clock`]); nothing a run records depends on it.
//! Files the campaign writes (`summary.json`, `summary.md`, schedule headers) keep the
//! canonical `acp-chaos …` form, so a report reads the same however it was made.

/// The command that starts this binary as the user launched it: `"acp-chaos"`, or
/// `"cargo run --release --"` (`"cargo run --"` for a debug build) when `cargo run` started
/// it.
pub fn program() -> &'static str {
    static PROGRAM: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();
    PROGRAM.get_or_init(|| program_for(started_by_cargo_run(), cfg!(debug_assertions)))
}

/// [`program`] for a given launch: `by_cargo` (the parent is `cargo run`), `debug` (a debug
/// build, run without `--release`).
pub fn program_for(by_cargo: bool, debug: bool) -> &'static str {
    match (by_cargo, debug) {
        (false, _) => "acp-chaos",
        (true, false) => "cargo run --release --",
        (true, true) => "cargo run --",
    }
}

/// `line` as it runs from the user's shell: a leading `acp-chaos ` becomes [`program`];
/// any other line is returned as it is.
pub fn runnable(line: &str) -> String {
    rewrite(line, program())
}

/// `line` with a leading `acp-chaos ` replaced by `program` (pure; [`runnable`] is this with
/// the launch's program).
pub fn rewrite(line: &str, program: &str) -> String {
    match line.strip_prefix("acp-chaos ") {
        Some(rest) if program != "acp-chaos" => format!("{program} {rest}"),
        _ => line.to_string(),
    }
}

/// `text` (an error message) with every command it quotes, `` `acp-chaos …` ``, as it runs from
/// the user's shell ([`program`]): "see `acp-chaos list`" reads "see `cargo run --release --
/// list`" under `cargo run`.
pub fn runnable_in(text: &str) -> String {
    rewrite_in(text, program())
}

/// [`runnable_in`] for a given program (pure).
pub fn rewrite_in(text: &str, program: &str) -> String {
    if program == "acp-chaos" {
        return text.to_string();
    }
    text.replace("`acp-chaos ", &format!("`{program} "))
        .replace("`acp-chaos`", &format!("`{program}`"))
}

/// True when `cargo run` started this process. On Unix cargo `exec`s the binary, so the
/// process keeps cargo's `CARGO` variable and has the user's shell as its parent; a binary a
/// test starts (`cargo test` sets `CARGO` too) has the test (under `target/*/deps/`) or
/// another `acp-chaos` as its parent. Linux only (`/proc`); elsewhere lines keep `acp-chaos`.
fn started_by_cargo_run() -> bool {
    if std::env::var_os("CARGO").is_none() {
        return false;
    }
    #[cfg(target_os = "linux")]
    {
        let ppid = std::os::unix::process::parent_id();
        let Ok(parent) = std::fs::read_link(format!("/proc/{ppid}/exe")) else {
            return false;
        };
        let in_deps = parent.components().any(|c| c.as_os_str() == "deps");
        let ourselves = std::env::current_exe().is_ok_and(|me| me == parent);
        !in_deps && !ourselves
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}
