//! `acp-chaos merge DIR...`: join the report folders of a campaign's shards.

use std::path::PathBuf;

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
}

/// `acp-chaos merge DIR...`: join shard reports.
pub(super) fn exec(a: &MergeArgs) -> Outcome {
    let summaries = a
        .dirs
        .iter()
        .map(|d| crate::summary::read_summary(d))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let name = summaries
        .first()
        .map(|s| s.name.clone())
        .unwrap_or_default();
    let (out, default_out) = match &a.out {
        Some(o) => (o.clone(), false),
        None => (campaign::default_out(&name, None), true),
    };
    let summary = campaign::merge(&a.dirs, &summaries, &out)?;
    if default_out {
        campaign::point_latest(&out)?;
    }
    println!(
        "merged {} shards of campaign {}: seeds {}..{}",
        a.dirs.len(),
        summary.name,
        summary.seed_start,
        summary.seed_start + summary.seeds
    );
    print_summary(&summary, &out);
    Ok(summary.exit_code)
}
