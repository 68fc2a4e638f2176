//! The two result tables of `docs/explore.md` ("Results on the seven RFD traces") are what the
//! commands above them print: every figure a run decides (schedules run and pruned, the audit's
//! counts, violations; mutants caught, as findings, that cannot show, not caught, runs to the
//! catch) is rerun here and compared. CPU seconds and peak memory are measurements, not
//! compared; the "before" columns are a past commit's, kept as history.
//!
//! The rows that cost at most a few CPU seconds in a release build run in the default test
//! run, so a changed figure fails CI; every row runs with `--ignored` (about 1,450 CPU seconds
//! in release, the sum of the tables' CPU columns):
//! `cargo test --release -p acp-chaos-cli --test it -- --ignored every_row_of_the_explore`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// One row of a table: its cells, and where it is (`docs/explore.md:164`).
struct Row {
    place: String,
    cells: Vec<String>,
}

fn page() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/explore.md")
}

/// The rows of the table whose header row starts with `header`.
fn table(header: &str) -> Vec<Row> {
    let text = std::fs::read_to_string(page()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with(header))
        .unwrap_or_else(|| panic!("docs/explore.md has no table `{header}`"));
    lines[at + 2..]
        .iter()
        .enumerate()
        .take_while(|(_, l)| l.starts_with('|'))
        .map(|(i, l)| Row {
            place: format!("docs/explore.md:{}", at + 3 + i),
            cells: l
                .trim_matches('|')
                .split('|')
                .map(|c| c.trim().to_string())
                .collect(),
        })
        .collect()
}

/// `rfd-01` → `rfd-01-retry-same-connection` (the scenario whose name starts so).
fn scenario(short: &str) -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().ok()?;
            let stem = name.strip_suffix(".toml")?;
            stem.starts_with(&format!("{short}-"))
                .then(|| stem.to_string())
        })
        .collect();
    names.sort();
    assert_eq!(names.len(), 1, "{short}: {names:?}");
    names.remove(0)
}

/// Runs `acp-chaos explore TRACE --agent DESIGN --faults 2 EXTRA…` in a folder of its own:
/// what it printed (stdout and stderr).
fn explore(trace: &str, design: &str, extra: &[&str]) -> String {
    let dir = std::env::temp_dir().join(format!(
        "acp-chaos-explore-table-{}-{trace}-{design}-{}",
        std::process::id(),
        extra.join("")
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_acp-chaos"))
        .args([
            "explore",
            &scenario(trace),
            "--agent",
            design,
            "--faults",
            "2",
        ])
        .args(extra)
        .args([
            "--scenarios",
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../scenarios")
                .to_str()
                .unwrap(),
        ])
        .current_dir(&dir)
        .env("ACP_CHAOS_JOBS", "2")
        .env("ACP_CHAOS_NO_PROGRESS", "1")
        .env_remove("ACP_CHAOS_MUTANT")
        .env_remove("ACP_CHAOS_OUT")
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "explore {trace} {design} {extra:?}: {text}"
    );
    text
}

/// The number right before `word` in `line` (`"954 pruned"` → 954).
fn before(line: &str, word: &str) -> String {
    let head = &line[..line
        .find(word)
        .unwrap_or_else(|| panic!("no `{word}` in: {line}"))];
    head.trim_end()
        .rsplit(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .to_string()
}

/// The first line of `text` holding `part`.
fn line_with<'a>(text: &'a str, part: &str) -> &'a str {
    text.lines()
        .find(|l| l.contains(part))
        .unwrap_or_else(|| panic!("no line with `{part}` in:\n{text}"))
}

/// The pruning table's decided cells of `row`, rerun: `None` when equal, else what differs.
fn pruning_row(row: &Row) -> Option<String> {
    // trace | design | before: run | pruned | CPU | RSS | after: run | pruned | CPU | RSS |
    // audit: pruned schedules run | differ | CPU | violations
    let c = &row.cells;
    let text = explore(&c[0], &c[1], &["--audit-pruning", "all"]);
    let explored = line_with(&text, "explored:");
    let audited = line_with(&text, "pruning audited on");
    let pruned = before(explored, "pruned as equivalent");
    let got = [
        ("after: run", before(explored, "schedules of")),
        ("after: pruned", pruned.clone()),
        ("audit: run", before(audited, "pruned schedules:")),
        ("differ", before(audited, "differ")),
        ("violations", before(explored, "violations")),
    ];
    let want = [&c[6], &c[7], &c[10], &c[11], &c[13]];
    compare(row, &got, &want)
}

/// The mutants table's decided cells of `row`, rerun.
fn mutants_row(row: &Row) -> Option<String> {
    // trace | design | apply | caught (as a finding) | cannot show | not caught | median | most | CPU
    let c = &row.cells;
    let text = explore(&c[0], &c[1], &["--mutants"]);
    let last = line_with(&text, "mutants caught on this trace")
        .replace("mutants caught on this trace", "caught");
    let caught: usize = before(&last, "caught").parse().unwrap();
    let findings = before(&last, "as the finding");
    let cannot: usize = before(&last, "cannot show").parse().unwrap();
    let missed: usize = before(&last, "not caught").parse().unwrap();
    let names = last
        .split_once("faults (")
        .map(|(_, n)| {
            n.split_once(')')
                .unwrap()
                .0
                .split(", ")
                .map(|m| format!("`{m}`"))
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_else(|| "-".into());
    let mut runs: Vec<u64> = text
        .lines()
        .filter_map(|l| l.split_once(" at run ").map(|(_, r)| r))
        .map(|r| r.trim_start().split(':').next().unwrap().parse().unwrap())
        .collect();
    runs.sort_unstable();
    assert_eq!(runs.len(), caught, "{}: {text}", row.place);
    let median = match runs.len() {
        0 => "-".to_string(),
        n if n % 2 == 1 => runs[n / 2].to_string(),
        n => {
            let twice = runs[n / 2 - 1] + runs[n / 2];
            if twice.is_multiple_of(2) {
                (twice / 2).to_string()
            } else {
                format!("{}.5", twice / 2)
            }
        }
    };
    let got = [
        ("apply", (caught + cannot + missed).to_string()),
        ("caught (as a finding)", format!("{caught} ({findings})")),
        ("cannot show", cannot.to_string()),
        ("not caught", names),
        ("median runs", median),
        (
            "most runs",
            runs.last().map_or("-".into(), |r| r.to_string()),
        ),
    ];
    let want = [&c[2], &c[3], &c[4], &c[5], &c[6], &c[7]];
    compare(row, &got, &want)
}

fn compare(row: &Row, got: &[(&str, String)], want: &[&String]) -> Option<String> {
    let differ: Vec<String> = got
        .iter()
        .zip(want)
        .filter(|((_, g), w)| g != **w)
        .map(|((name, g), w)| format!("{name}: the page says {w}, the run gives {g}"))
        .collect();
    (!differ.is_empty()).then(|| {
        format!(
            "{} ({} {}): {}",
            row.place,
            row.cells[0],
            row.cells[1],
            differ.join("; ")
        )
    })
}

/// Reruns the rows whose CPU-seconds cell (`cpu_cell`) is at most `cpu_max` (every row when
/// `None`); panics listing every cell that differs.
fn check(header: &str, cpu_cell: usize, cpu_max: Option<f64>, rerun: fn(&Row) -> Option<String>) {
    let rows = table(header);
    assert!(rows.len() >= 28, "{header}: {} rows", rows.len());
    let picked: Vec<&Row> = rows
        .iter()
        .filter(|r| cpu_max.is_none_or(|max| r.cells[cpu_cell].parse::<f64>().unwrap() <= max))
        .collect();
    assert!(
        !picked.is_empty(),
        "{header}: no row under {cpu_max:?} CPU s"
    );
    let differ: Vec<String> = picked.iter().filter_map(|r| rerun(r)).collect();
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

const PRUNING: &str = "| trace | design | before: run |";
const MUTANTS: &str = "| trace | design | apply |";

#[test]
fn the_cheap_rows_of_the_explore_tables_are_what_the_runs_give() {
    // Cell 8 of each: the certificate's CPU seconds (without the audit, which about doubles
    // them) and the `--mutants` command's; a few seconds in release.
    check(PRUNING, 8, Some(2.0), pruning_row);
    check(MUTANTS, 8, Some(6.0), mutants_row);
}

#[test]
#[ignore = "about 1,450 CPU seconds in release: run with --ignored"]
fn every_row_of_the_explore_tables_is_what_the_runs_give() {
    check(PRUNING, 8, None, pruning_row);
    check(MUTANTS, 8, None, mutants_row);
}
