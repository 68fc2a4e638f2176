//! `acp-chaos merge DIR...`: join the report folders of a campaign's shards.

use std::path::{Path, PathBuf};

use clap::Args;

use super::output::print_summary;
use super::Outcome;
use crate::campaign;

#[derive(Args, Debug, Clone)]
pub(super) struct MergeArgs {
    /// The shards' report folders (each written by `acp-chaos run --shard K/N`).
    #[arg(required = true)]
    dirs: Vec<PathBuf>,
    /// Report folder for the merged campaign (default `reports/<campaign name>`, with
    /// `reports/latest` pointing at it).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Print the whole table and every failure's first seed (as `run --verbose`).
    #[arg(long, short = 'v')]
    verbose: bool,
}

/// `acp-chaos merge DIR...`: join shard reports.
pub(super) fn exec(a: &MergeArgs) -> Outcome {
    // An exploration's shards (`explore --shard K/N`) hold a certificate, a campaign's a summary.
    if a.dirs
        .first()
        .is_some_and(|d| d.join("certificate.json").exists())
    {
        let out = match &a.out {
            Some(o) => o.clone(),
            None => {
                let d = a.dirs[0].display().to_string();
                let base = d.trim_end_matches('/');
                let base = base.rsplit_once("-shard").map_or(base, |(b, _)| b);
                std::path::PathBuf::from(format!("{base}-merged"))
            }
        };
        let c = acp_chaos::explore::certificate::merge(&a.dirs, &out)?;
        println!(
            "merged {} shards of explore {} ({}): {}",
            a.dirs.len(),
            c.scenario,
            c.design,
            c.line
        );
        println!(
            "report: {}/summary.md (certificate.json)  exit {}",
            out.display(),
            c.exit_code
        );
        return Ok(c.exit_code);
    }
    let summaries = a
        .dirs
        .iter()
        .map(|d| acp_chaos::summary::read_summary(d))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let name = summaries
        .first()
        .map(|s| s.name.clone())
        .unwrap_or_default();
    let (out, default_out) = match &a.out {
        Some(o) => (o.clone(), false),
        None => (acp_chaos::folders::default_out(&name, None), true),
    };
    let summary = campaign::merge(&a.dirs, &summaries, &out)?;
    if default_out {
        acp_chaos::folders::point_latest(&out)?;
    }
    println!(
        "merged {} shards of campaign {}: seeds {}..{}",
        a.dirs.len(),
        summary.name,
        summary.seed_start,
        summary.seed_start + summary.seeds
    );
    print_summary(&summary, &out, true, a.verbose);
    sweep_rows(a, &summary, &out)?;
    Ok(summary.exit_code)
}

/// Shards of a sweep (`sweep --shard K/N`: folders `scripted/` or `swarm/` with their
/// `<kind>-rows.md` beside them): write the merged rows page beside the merged folder, as
/// `<out>-rows.md`, as one unsharded sweep writes it.
fn sweep_rows(a: &MergeArgs, summary: &acp_chaos::summary::Summary, out: &Path) -> Outcome {
    let kind_of = |d: &Path| {
        let kind = d.file_name()?.to_str()?;
        (["scripted", "swarm"].contains(&kind)
            && d.parent()?.join(format!("{kind}-rows.md")).exists())
        .then(|| kind.to_string())
    };
    let kinds: Vec<Option<String>> = a.dirs.iter().map(|d| kind_of(d)).collect();
    let (Some(Some(_)), true) = (kinds.first(), kinds.windows(2).all(|w| w[0] == w[1])) else {
        return Ok(0);
    };
    let (Some(parent), Some(name)) = (out.parent(), out.file_name().and_then(|n| n.to_str()))
    else {
        return Ok(0);
    };
    let range = format!(
        "seeds {}..{} per scenario@design, merged from {} shards",
        summary.seed_start,
        summary.seed_start + summary.seeds,
        a.dirs.len()
    );
    super::sweep::write_rows(parent, name, summary, &range)?;
    println!("rows: {}", parent.join(format!("{name}-rows.md")).display());
    Ok(0)
}
