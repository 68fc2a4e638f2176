//! The documented commands run as documented: every fenced block of the README and `docs/`
//! whose info string has the word `runnable` is run here, against the binary under test, in a
//! temporary folder that looks like a checkout (its `scenarios/` is the repository's), and what
//! the block shows is compared with what the command printed. A changed figure fails this test
//! instead of going stale on the page.
//!
//! A block's form:
//! - A `console` block: each `$ ` line is a command, the lines after it (up to the next `$ `
//!   line) its output, stdout and stderr as the terminal shows them. A line that is only `…` or
//!   `...` stands for any number of lines (an excerpt's cut), a `…` inside a line for any
//!   characters of that line (an abbreviated value). A command with no lines after it is run
//!   and its exit status checked.
//! - Any other runnable block (`sh`): every line that is not blank or a comment is a command,
//!   run and its exit status checked.
//! - `exit=N` in the info string: the status every command of the block must end with (0 when
//!   absent); `# exit N` at the end of a command line overrides it for that command.
//!
//! What may differ between two runs of one command is made equal on both sides before the
//! comparison, and only that: wall-clock seconds (`5.3 s`), the worker count (`jobs=2`), and
//! how the binary was launched (`cargo run --release -- X` is the same line as `acp-chaos X`:
//! `acp_chaos_cli::launch::rewrite`, tested in `unit/launch.rs`). Every other character must match.
//!
//! The same command in two blocks (the README's failing campaign and the tutorial's) runs once.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// One fenced block marked `runnable`.
#[derive(Debug)]
struct Block {
    /// `README.md:64`, for messages.
    place: String,
    /// The block's exit status for every command without its own `# exit N`.
    exit: i32,
    /// A `console` block (`$ ` commands with their output) or a script.
    console: bool,
    lines: Vec<String>,
}

/// One command of a block and what the block says it prints.
#[derive(Debug)]
struct Step {
    command: String,
    exit: i32,
    /// `None`: only the exit status is checked (no output shown).
    shown: Option<Vec<String>>,
}

/// The repository root (this crate is `cli/`).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every page the test reads: the README and every Markdown file under `docs/`.
fn pages() -> Vec<PathBuf> {
    let mut out = vec![root().join("README.md")];
    out.extend(crate::common::files_with_extension(
        &root().join("docs"),
        "md",
    ));
    out
}

/// The runnable blocks of one page.
fn blocks(page: &Path) -> Vec<Block> {
    let text = std::fs::read_to_string(page).unwrap();
    let name = page.strip_prefix(root()).unwrap().display().to_string();
    let mut out = Vec::new();
    let mut open: Option<(usize, String, Vec<String>)> = None;
    for (i, line) in text.lines().enumerate() {
        match open.take() {
            None => {
                if let Some(info) = line.strip_prefix("```") {
                    open = Some((i + 1, info.to_string(), Vec::new()));
                }
            }
            Some((at, info, lines)) if line.starts_with("```") => {
                let words: Vec<&str> = info.split_whitespace().collect();
                if words.contains(&"runnable") {
                    let exit = words
                        .iter()
                        .find_map(|w| w.strip_prefix("exit="))
                        .map(|n| n.parse().expect("exit=N"))
                        .unwrap_or(0);
                    out.push(Block {
                        place: format!("{name}:{at}"),
                        exit,
                        console: words.first() == Some(&"console"),
                        lines,
                    });
                }
            }
            Some((at, info, mut lines)) => {
                lines.push(line.to_string());
                open = Some((at, info, lines));
            }
        }
    }
    out
}

/// `line`'s own `# exit N`, if it has one.
fn own_exit(line: &str) -> Option<i32> {
    let (_, comment) = line.rsplit_once('#')?;
    comment.trim().strip_prefix("exit ")?.trim().parse().ok()
}

/// A block's commands with their shown output.
fn steps(b: &Block) -> Vec<Step> {
    let mut out: Vec<Step> = Vec::new();
    if b.console {
        for line in &b.lines {
            if let Some(command) = line.strip_prefix("$ ") {
                out.push(Step {
                    command: command.to_string(),
                    exit: own_exit(command).unwrap_or(b.exit),
                    shown: Some(Vec::new()),
                });
            } else {
                let step = out
                    .last_mut()
                    .unwrap_or_else(|| panic!("{}: output before the first `$ ` line", b.place));
                step.shown.as_mut().unwrap().push(line.clone());
            }
        }
        for s in &mut out {
            let shown = s.shown.as_mut().unwrap();
            while shown.last().is_some_and(|l| l.is_empty()) {
                shown.pop();
            }
            if shown.is_empty() {
                s.shown = None;
            }
        }
        return out;
    }
    let mut pending = String::new();
    for line in &b.lines {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(head) = line.strip_suffix('\\') {
            pending.push_str(head);
            continue;
        }
        pending.push_str(line);
        out.push(Step {
            exit: own_exit(&pending).unwrap_or(b.exit),
            command: std::mem::take(&mut pending),
            shown: None,
        });
    }
    out
}

/// `line` with what may differ between two runs of one command made equal.
fn normalize(line: &str) -> String {
    let line = line.replace("cargo run --release -- ", "acp-chaos ");
    let mut out = String::with_capacity(line.len());
    let mut rest = line.as_str();
    // `jobs=N` and `N.N s` (wall-clock seconds): the only varying tokens.
    while let Some(c) = rest.chars().next() {
        if let Some(after) = rest.strip_prefix("jobs=") {
            let digits = after.chars().take_while(char::is_ascii_digit).count();
            if digits > 0 {
                out.push_str("jobs=N");
                rest = &after[digits..];
                continue;
            }
        }
        if c.is_ascii_digit() && !out.ends_with(|p: char| p.is_ascii_alphanumeric() || p == '.') {
            let number = rest
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .count();
            let (n, after) = rest.split_at(number);
            if n.contains('.')
                && after.starts_with(" s")
                && !after[2..].starts_with(char::is_alphanumeric)
            {
                out.push_str("T s");
                rest = &after[2..];
                continue;
            }
            out.push_str(n);
            rest = after;
            continue;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out.trim_end().to_string()
}

/// True when `actual` is what `shown` shows: line by line, a `…` line standing for any lines.
fn shows(shown: &[String], actual: &[String]) -> bool {
    match shown.split_first() {
        None => actual.is_empty(),
        Some((cut, rest)) if cut == "…" || cut == "..." => {
            (0..=actual.len()).any(|skip| shows(rest, &actual[skip..]))
        }
        Some((line, rest)) => actual
            .split_first()
            .is_some_and(|(a, more)| line_shows(line, a) && shows(rest, more)),
    }
}

/// True when `actual` is the line `shown` shows: equal, a `…` inside `shown` standing for any
/// characters of the line (an abbreviated value).
fn line_shows(shown: &str, actual: &str) -> bool {
    let mut parts = shown.split('…');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = actual.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.ends_with(last)
}

/// The first shown line that no prefix of the actual output reaches, for the failure message.
fn first_miss(shown: &[String], actual: &[String]) -> String {
    let mut best = 0;
    for n in (0..=shown.len()).rev() {
        let mut head = shown[..n].to_vec();
        head.push("…".into());
        if shows(&head, actual) {
            best = n;
            break;
        }
    }
    shown
        .get(best)
        .map(|l| format!("shown line {} has no match: {l}", best + 1))
        .unwrap_or_else(|| "the output goes on past what is shown".into())
}

/// The folder commands run in: `scenarios/` is the repository's (so a campaign reads its
/// regression corpus as from a checkout), `bin/acp-chaos` the binary under test.
fn workdir() -> &'static Path {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("acp-chaos-docs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("bin")).unwrap();
        std::os::unix::fs::symlink(root().join("scenarios"), dir.join("scenarios")).unwrap();
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_acp-chaos"), dir.join("bin/acp-chaos"))
            .unwrap();
        dir
    })
}

/// Runs `command` (as `acp-chaos …`) once per test process: its exit status and its output.
fn run(command: &str) -> (i32, Vec<String>) {
    static DONE: Mutex<BTreeMap<String, (i32, Vec<String>)>> = Mutex::new(BTreeMap::new());
    let command = match command.strip_prefix("cargo run --release") {
        Some(rest) => format!("acp-chaos{}", rest.strip_prefix(" --").unwrap_or(rest)),
        None => command.to_string(),
    };
    assert!(
        command.starts_with("acp-chaos"),
        "a runnable block runs acp-chaos: {command}"
    );
    if let Some(done) = DONE.lock().unwrap().get(&command) {
        return done.clone();
    }
    let dir = workdir();
    let path = format!(
        "{}:{}",
        dir.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let started = acp_chaos_cli::wall_clock::now();
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("{command} 2>&1"))
        .current_dir(dir)
        .env("PATH", path)
        .env("ACP_CHAOS_JOBS", "2")
        .env("ACP_CHAOS_NO_PROGRESS", "1")
        .env_remove("CARGO")
        .output()
        .unwrap();
    let lines = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    let done = (out.status.code().unwrap_or(-1), lines);
    // What each command costs, for whoever weighs adding a block (`--nocapture`).
    eprintln!("docs: {:.1} s  {command}", started.elapsed().as_secs_f64());
    DONE.lock().unwrap().insert(command, done.clone());
    done
}

#[test]
fn normalizing_makes_only_what_varies_equal() {
    assert_eq!(
        normalize("explored: 6 schedules (6470 runs, 5.3 s), jobs=2, 12 ms, v1.2 s"),
        "explored: 6 schedules (6470 runs, T s), jobs=N, 12 ms, v1.2 s"
    );
    assert_eq!(
        normalize("  repro:  cargo run --release -- replay x --seed 0"),
        "  repro:  acp-chaos replay x --seed 0"
    );
    assert_eq!(normalize("runs in 0.9 s (kill)"), "runs in T s (kill)");
    // a count of seconds without a fraction is a figure the run computes, kept as it is
    assert_eq!(normalize("retention 5 s"), "retention 5 s");
    let lines = |s: &str| s.lines().map(str::to_string).collect::<Vec<_>>();
    assert!(shows(&lines("a\n…\nd"), &lines("a\nb\nc\nd")));
    assert!(shows(&lines("a\n…\nd"), &lines("a\nd")));
    assert!(!shows(&lines("a\n…\nd"), &lines("a\nb\nc")));
    assert!(!shows(&lines("a\nb"), &lines("a\nb\nc")));
    assert!(line_shows(
        "key \"4aa7…\", mode…}",
        "key \"4aa7e9dc\", mode: 1}"
    ));
    assert!(line_shows("op 52→56…57", "op 52→56…57"));
    assert!(!line_shows("key \"4aa7…\"", "key \"4bb7e9dc\""));
    assert!(!line_shows("a…b…c", "a-c-b"));
    assert_eq!(
        first_miss(&lines("a\nx\n…"), &lines("a\nb")),
        "shown line 2 has no match: x"
    );
}

#[test]
fn the_block_reader_finds_commands_output_and_exit_statuses() {
    let b = Block {
        place: "t.md:1".into(),
        exit: 1,
        console: true,
        lines: [
            "$ acp-chaos run x",
            "out 1",
            "…",
            "$ acp-chaos list   # exit 0",
            "",
        ]
        .map(String::from)
        .to_vec(),
    };
    let s = steps(&b);
    assert_eq!(s.len(), 2);
    assert_eq!((s[0].exit, s[0].shown.as_ref().unwrap().len()), (1, 2));
    assert_eq!((s[1].exit, s[1].shown.is_none()), (0, true));
    let sh = Block {
        place: "t.md:9".into(),
        exit: 0,
        console: false,
        lines: [
            "# a comment",
            "acp-chaos a \\",
            "  --b",
            "acp-chaos c  # exit 1",
        ]
        .map(String::from)
        .to_vec(),
    };
    let s = steps(&sh);
    assert_eq!(s[0].command, "acp-chaos a --b");
    assert_eq!((s[1].exit, s[1].shown.is_none()), (1, true));
}

#[test]
fn every_runnable_block_of_the_docs_runs_as_shown() {
    let all: Vec<(Block, Vec<Step>)> = pages()
        .iter()
        .flat_map(|p| blocks(p))
        .map(|b| {
            let s = steps(&b);
            (b, s)
        })
        .collect();
    // Two lanes: the probes mostly wait on processes they started, the rest computes; run
    // side by side they take about as long as the longer lane.
    let (waits, computes): (Vec<&Step>, Vec<&Step>) = all
        .iter()
        .flat_map(|(_, s)| s)
        .partition(|s| s.command.starts_with("acp-chaos probe"));
    std::thread::scope(|scope| {
        scope.spawn(|| waits.iter().for_each(|s| drop(run(&s.command))));
        computes.iter().for_each(|s| drop(run(&s.command)));
    });
    let mut failures = Vec::new();
    let mut ran = 0;
    for (b, steps) in &all {
        {
            for step in steps {
                ran += 1;
                let (exit, output) = run(&step.command);
                let mut actual: Vec<String> = output.iter().map(|l| normalize(l)).collect();
                while actual.last().is_some_and(|l| l.is_empty()) {
                    actual.pop();
                }
                if exit != step.exit {
                    failures.push(format!(
                        "{}: `{}` exited {exit}, the page says {}; it printed:\n{}",
                        b.place,
                        step.command,
                        step.exit,
                        output.join("\n")
                    ));
                    continue;
                }
                let Some(shown) = &step.shown else { continue };
                let shown: Vec<String> = shown.iter().map(|l| normalize(l)).collect();
                if !shows(&shown, &actual) {
                    failures.push(format!(
                        "{}: `{}`: {}; it printed:\n{}",
                        b.place,
                        step.command,
                        first_miss(&shown, &actual),
                        output.join("\n")
                    ));
                }
            }
        }
    }
    assert!(ran >= 10, "only {ran} runnable commands found in the docs");
    // The folder stays for a failure's inspection, and goes when every block ran as shown.
    if failures.is_empty() {
        let _ = std::fs::remove_dir_all(workdir());
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The README's Properties table has one row per checker of `CHECKERS`, in its order, under
/// its id and title: the list a new reader sees is the list the tool runs.
#[test]
fn the_readme_lists_every_checker_as_the_registry_does() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let table = &readme[readme.find("## Properties").expect("a Properties section")..];
    let rows: Vec<(String, String)> = table
        .lines()
        .skip_while(|l| !l.starts_with("| P1 "))
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            (cells[1].to_string(), cells[2].replace(" *(ours)*", ""))
        })
        .collect();
    let registry: Vec<(String, String)> = acp_chaos::checkers::CHECKERS
        .iter()
        .map(|c| (c.property.to_string(), c.title.to_string()))
        .collect();
    assert_eq!(
        rows, registry,
        "README.md's Properties table against CHECKERS"
    );
}

/// docs/probe.md's black-box table is each checker's `black_box` row, word for word (the
/// probe's columns are the rows it judges: `probe::properties`).
#[test]
fn the_probe_page_says_of_each_property_what_its_checker_row_says() {
    use acp_chaos::checkers::CHECKERS;
    let page = std::fs::read_to_string(root().join("docs/probe.md")).unwrap();
    let rows: Vec<(String, String)> = page
        .lines()
        .skip_while(|l| !l.starts_with("| property | black-box |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<&str> = l.split(" | ").collect();
            (
                cells[0].trim_start_matches("| ").to_string(),
                cells[1].trim_end_matches(" |").to_string(),
            )
        })
        .collect();
    let registry: Vec<(String, String)> = CHECKERS
        .iter()
        .map(|c| (format!("{} {}", c.property, c.title), c.black_box.cell()))
        .collect();
    assert_eq!(
        rows, registry,
        "docs/probe.md's black-box table against CHECKERS"
    );
}
