//! `acp-chaos merge`: the report folders of a campaign's shards into the report one unsharded
//! run of the same seeds writes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::write_summary;
use acp_chaos::checkers::CHECKERS;
use acp_chaos::folders::{prepare_out, write_atomic, COUNTEREXAMPLE_FILES};
use acp_chaos::summary::Summary;

/// Merge the summaries of shards 1..=N of one campaign (read from `dirs`) into `out`: counts
/// add up, the first failing seed is the smallest, the first finding and the shrunk schedule
/// of each (row, property) are the lowest seed's, and the kept run folders (the first
/// `kept_per_property` of each) are copied over. The result equals the summary one unsharded
/// run of the same seeds writes (`order`-sorted, with paths under `out`).
///
/// Errors: shards of different campaigns, formats or mutants, a shard missing or repeated.
pub fn merge(dirs: &[PathBuf], shards: &[Summary], out: &Path) -> anyhow::Result<Summary> {
    let Some(first) = shards.first() else {
        anyhow::bail!("nothing to merge");
    };
    let n = match first.shard {
        Some((_, n)) => n,
        None => anyhow::bail!("{}: not a shard (run with --shard K/N)", dirs[0].display()),
    };
    // Paths as given may end in `/`: compare and rewrite them in one form.
    let dirs: Vec<PathBuf> = dirs.iter().map(|d| d.components().collect()).collect();
    let out: PathBuf = out.components().collect();
    let out = out.as_path();
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    };
    if let Some(d) = dirs.iter().find(|d| same(d, out)) {
        anyhow::bail!(
            "--out {}: that is one of the shards; merge into another folder",
            d.display()
        );
    }
    check_shards(&dirs, shards, n)?;
    prepare_out(out)?;
    let mut m = first.clone();
    m.shard = None;
    m.seed_start = shards.iter().map(|s| s.seed_start).min().unwrap_or(0);
    m.seeds = shards.iter().map(|s| s.seeds).sum();
    m.interrupted = shards.iter().any(|s| s.interrupted);
    for s in &shards[1..] {
        add_shard(&mut m, s)?;
    }
    keep_failures(&mut m, &dirs, shards, out)?;
    drop_unkept_pages(&m, out)?;
    m.decide();
    write_summary(out, &m)?;
    Ok(m)
}

/// Every folder is a shard of the same campaign (name, rows, mutant, kept folders), each of
/// the `n` shards exactly once.
fn check_shards(dirs: &[PathBuf], shards: &[Summary], n: u64) -> anyhow::Result<()> {
    let first = &shards[0];
    let mut ks = BTreeSet::new();
    for (d, s) in dirs.iter().zip(shards) {
        let what = |w: &str| anyhow::anyhow!("{}: {w}", d.display());
        if s.name != first.name {
            return Err(what(&format!(
                "campaign `{}`, not `{}`",
                s.name, first.name
            )));
        }
        if s.order != first.order {
            return Err(what(&format!(
                "ran other scenarios or designs than {} (a campaign of the same name over another scenario set)",
                dirs[0].display()
            )));
        }
        if s.mutant != first.mutant || s.kept_per_property != first.kept_per_property {
            return Err(what(
                "another mutant or kept_per_property than the first shard",
            ));
        }
        match s.shard {
            Some((k, m)) if m == n => {
                if !ks.insert(k) {
                    return Err(what(&format!("shard {k}/{n} given twice")));
                }
            }
            _ => return Err(what(&format!("not a shard of {n}"))),
        }
    }
    let missing: Vec<String> = (1..=n)
        .filter(|k| !ks.contains(k))
        .map(|k| k.to_string())
        .collect();
    if !missing.is_empty() {
        anyhow::bail!("shards {} of {n} are missing", missing.join(", "));
    }
    Ok(())
}

/// Add one shard's counts to the merged summary `m` (the first shard's, to begin with).
fn add_shard(m: &mut Summary, s: &Summary) -> anyhow::Result<()> {
    for row in &s.order {
        if !m.order.contains(row) {
            m.order.push(row.clone());
        }
    }
    for (row, cells) in &s.table {
        let mine = m.table.entry(row.clone()).or_default();
        for (p, c) in cells {
            let t = mine.entry(p.clone()).or_default();
            // The unsharded rule: the first invalid seed, else the first unknown seed.
            t.first_failing_seed = match (t.violations > 0, c.violations > 0) {
                (true, false) => t.first_failing_seed,
                (false, true) => c.first_failing_seed,
                _ => match (t.first_failing_seed, c.first_failing_seed) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                },
            };
            t.seeds += c.seeds;
            t.violations += c.violations;
            t.findings += c.findings;
            t.unknown += c.unknown;
            t.sim_ms += c.sim_ms;
            t.parties.extend(c.parties.iter().cloned());
        }
    }
    for (row, counts) in &s.classes {
        for (c, k) in counts {
            *m.classes
                .entry(row.clone())
                .or_default()
                .entry(*c)
                .or_default() += k;
        }
    }
    for (row, ev) in &s.events {
        for (e, k) in ev {
            *m.events
                .entry(row.clone())
                .or_default()
                .entry(e.clone())
                .or_default() += k;
        }
    }
    for (kind, cells) in &s.coverage_map {
        for (st, k) in cells {
            *m.coverage_map
                .entry(kind.clone())
                .or_default()
                .entry(st.clone())
                .or_default() += k;
        }
    }
    m.hashes.extend(&s.hashes)?;
    m.findings.extend(s.findings.iter().cloned());
    m.failures.extend(s.failures.iter().cloned());
    for (g, n) in &s.failures_omitted {
        *m.failures_omitted.entry(g.clone()).or_default() += n;
    }
    m.nondeterministic
        .extend(s.nondeterministic.iter().cloned());
    for r in &s.expected_invalid {
        if !m.expected_invalid.contains(r) {
            m.expected_invalid.push(r.clone());
        }
    }
    Ok(())
}

/// Order the failures as the unsharded run lists them, keep the first `kept_per_property` run
/// folders of each row × property (copied from their shard), and keep a shrink only where the
/// unsharded run has it (the row × property's first failure).
fn keep_failures(
    m: &mut Summary,
    dirs: &[PathBuf],
    shards: &[Summary],
    out: &Path,
) -> anyhow::Result<()> {
    order_and_cap(m);
    let mut count: BTreeMap<(String, String), usize> = BTreeMap::new();
    let shard_of = |seed: u64| {
        dirs.iter()
            .zip(shards)
            .find(|(_, s)| (s.seed_start..s.seed_start + s.seeds).contains(&seed))
            .map(|(d, _)| d)
    };
    for f in &mut m.failures {
        let k = count
            .entry((row_of(f), f["property"].to_string()))
            .or_default();
        let folder = f["folder"].as_str().map(str::to_string);
        let src = f["seed"].as_u64().and_then(shard_of);
        // A shard keeps its own first failure of a row × property whole (shrunk, with its
        // pages); when that is not the campaign's first, the unsharded run keeps only its
        // verdicts and repro line there (`drop_unkept_pages` removes the rest).
        if *k > 0 {
            if let Some(o) = f.as_object_mut() {
                o.shift_remove("shrunk");
                o.shift_remove("report");
            }
        }
        if let (Some(dir), Some(src)) = (&folder, src) {
            if *k < m.kept_per_property {
                copy_run_dir(&src.join(dir), &out.join(dir), src, out)?;
            } else if let Some(o) = f.as_object_mut() {
                o.shift_remove("folder");
                o.shift_remove("report");
            }
        }
        if f["shrunk"].is_object() {
            keep_schedule(f, folder.as_deref(), src, out)?;
        }
        *k += 1;
    }
    Ok(())
}

/// A failure's or finding's row, `scenario@design`.
fn row_of(f: &Value) -> String {
    format!(
        "{}@{}",
        f["scenario"].as_str().unwrap_or(""),
        f["design"].as_str().unwrap_or("")
    )
}

/// Failures and findings in unsharded order (rows as they ran, then seeds, then checkers),
/// one finding per row × property, and as many failures listed per group as one unsharded
/// run lists (the rest counted).
fn order_and_cap(m: &mut Summary) {
    let rank = |f: &Value| {
        let row = m
            .order
            .iter()
            .position(|r| *r == row_of(f))
            .unwrap_or(usize::MAX);
        let prop = CHECKERS
            .iter()
            .position(|c| f["property"] == c.property.as_str())
            .unwrap_or(usize::MAX);
        (row, f["seed"].as_u64().unwrap_or(0), prop)
    };
    m.findings.sort_by_key(|f| rank(f));
    let mut seen = BTreeSet::new();
    m.findings
        .retain(|f| seen.insert((row_of(f), f["property"].to_string())));
    m.failures.sort_by_key(|f| rank(f));
    // As many listed per group as one unsharded run lists; the rest counted.
    let cap = acp_chaos::summary::FAILURES_LISTED.max(m.kept_per_property);
    let mut listed: BTreeMap<String, usize> = BTreeMap::new();
    let mut omitted = std::mem::take(&mut m.failures_omitted);
    m.failures.retain(|f| {
        let g = acp_chaos::summary::failure_group(f);
        let n = listed.entry(g.clone()).or_default();
        *n += 1;
        if *n > cap {
            *omitted.entry(g).or_default() += 1;
        }
        *n <= cap
    });
    m.failures_omitted = omitted;
}

/// A failure's shrunk schedule, copied from its shard `src` when its run folder was not, and
/// pointed at (with its replay line) under `out`.
fn keep_schedule(
    f: &mut Value,
    folder: Option<&str>,
    src: Option<&PathBuf>,
    out: &Path,
) -> anyhow::Result<()> {
    let dir = format!(
        "{}-{}-seed{}",
        f["scenario"].as_str().unwrap_or(""),
        f["design"].as_str().unwrap_or(""),
        f["seed"]
    );
    let leaf = f["shrunk"]["schedule"]
        .as_str()
        .and_then(|p| Path::new(p).file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "schedule.toml".into());
    let file = out.join(&dir).join(leaf);
    if folder.is_none() {
        if let Some(src) = src {
            copy_run_dir(&src.join(&dir), &out.join(&dir), src, out)?;
        }
    }
    f["shrunk"]["schedule"] = json!(file.display().to_string());
    f["shrunk"]["replay"] = json!(format!("acp-chaos replay --schedule {}", file.display()));
    Ok(())
}

/// A shard keeps pages for failures the whole campaign does not keep whole (its own first of
/// each row × property): drop every property's files the merged failures do not point at, and
/// the history of a folder no page is drawn from.
fn drop_unkept_pages(m: &Summary, out: &Path) -> anyhow::Result<()> {
    let mut pages: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &m.failures {
        let Some(dir) = f["folder"].as_str() else {
            continue;
        };
        let keep = pages.entry(dir.to_string()).or_default();
        if let Some(page) = f["report"].as_str() {
            let prefix = page
                .rsplit('/')
                .next()
                .unwrap_or("")
                .trim_end_matches("report.md");
            keep.insert(prefix.to_string());
        }
    }
    for (dir, keep) in &pages {
        if !out.join(dir).is_dir() {
            continue;
        }
        for e in std::fs::read_dir(out.join(dir))? {
            let name = e?.file_name().to_string_lossy().into_owned();
            let prefix = COUNTEREXAMPLE_FILES
                .iter()
                .find_map(|b| name.strip_suffix(b));
            let drop = match prefix {
                Some(p) => !keep.contains(p),
                None => name == "history.jsonl" && keep.is_empty(),
            };
            if drop {
                std::fs::remove_file(out.join(dir).join(&name))?;
            }
        }
    }
    Ok(())
}

/// Copy one run folder from a shard's report into the merged one, pointing the paths its text
/// files name at the merged folder.
fn copy_run_dir(from: &Path, to: &Path, from_root: &Path, to_root: &Path) -> anyhow::Result<()> {
    let io = |p: &Path, e: std::io::Error| anyhow::anyhow!("{}: {e}", p.display());
    std::fs::create_dir_all(to).map_err(|e| io(to, e))?;
    let (a, b) = (
        format!("{}/", from_root.display()),
        format!("{}/", to_root.display()),
    );
    for e in std::fs::read_dir(from).map_err(|e| io(from, e))? {
        let e = e.map_err(|e| io(from, e))?;
        let p = e.path();
        let Some(name) = p.file_name() else { continue };
        let bytes = std::fs::read(&p).map_err(|e| io(&p, e))?;
        let text_file = matches!(
            p.extension().and_then(|x| x.to_str()),
            Some("toml" | "md" | "html" | "txt")
        );
        let bytes = match String::from_utf8(bytes) {
            Ok(t) if text_file => t.replace(&a, &b).into_bytes(),
            Ok(t) => t.into_bytes(),
            Err(e) => e.into_bytes(),
        };
        write_atomic(&to.join(name), &bytes)?;
    }
    Ok(())
}
