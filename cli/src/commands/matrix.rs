//! `acp-chaos matrix`: the retry-class matrix, or one of its cells run verbosely.

use clap::Args;

use super::{CliError, Outcome};
use acp_chaos::exit;
use acp_chaos::models::mutant;

#[derive(Args, Debug, Clone)]
// `--seeds -1` is read as a value and refused as one, not taken for a flag.
#[command(allow_negative_numbers = true)]
pub(super) struct MatrixArgs {
    /// Seeds per cell.
    #[arg(long, value_parser = super::args::seed_count, default_value_t = 200)]
    seeds: u64,
    /// First seed.
    #[arg(long, default_value_t = 0)]
    seed_start: u64,
    /// Print JSON instead of the table.
    #[arg(long)]
    json: bool,
    /// Rerun one cell for this seed and print every frame in and out, every record, effect,
    /// crash and Client decision (needs --method, --fault and --policy).
    #[arg(long, requires_all = ["method", "fault", "policy"])]
    seed: Option<u64>,
    /// The cell's method (`session/prompt` or `prompt`, `$/cancel_request`, ...); without
    /// --seed, only that method's rows and verdict.
    #[arg(long, value_parser = parse_method)]
    method: Option<acp_chaos::retry_class::matrix::Method>,
    /// The cell's fault (none, request-lost, response-lost, duplicated, duplicated-late,
    /// crash-before-effect, crash-after-effect, one-way-partition).
    #[arg(long, requires = "seed", value_parser = parse_fault)]
    fault: Option<acp_chaos::retry_class::matrix::Fault>,
    /// The cell's Client policy (resend-as-is, resend-with-key, do-not-resend).
    #[arg(long, requires = "seed", value_parser = parse_policy)]
    policy: Option<acp_chaos::retry_class::matrix::Policy>,
    /// Run against an Agent mutant (see `acp-chaos list mutants`).
    #[arg(long)]
    mutant: Option<String>,
}

fn parse_method(s: &str) -> Result<acp_chaos::retry_class::matrix::Method, String> {
    acp_chaos::retry_class::matrix::Method::parse(s).ok_or_else(|| {
        let names: Vec<_> = acp_chaos::retry_class::matrix::METHODS
            .iter()
            .map(|m| m.method.as_str())
            .collect();
        format!("unknown method `{s}` (known: {})", names.join(", "))
    })
}

fn parse_fault(s: &str) -> Result<acp_chaos::retry_class::matrix::Fault, String> {
    acp_chaos::retry_class::matrix::Fault::parse(s).ok_or_else(|| {
        let names: Vec<_> = acp_chaos::retry_class::matrix::Fault::ALL
            .iter()
            .map(|f| f.as_str())
            .collect();
        format!("unknown fault `{s}` (known: {})", names.join(", "))
    })
}

fn parse_policy(s: &str) -> Result<acp_chaos::retry_class::matrix::Policy, String> {
    acp_chaos::retry_class::matrix::Policy::parse(s).ok_or_else(|| {
        let names: Vec<_> = acp_chaos::retry_class::matrix::Policy::ALL
            .iter()
            .map(|p| p.as_str())
            .collect();
        format!("unknown policy `{s}` (known: {})", names.join(", "))
    })
}

pub(super) fn exec(a: &MatrixArgs) -> Outcome {
    use acp_chaos::retry_class::matrix;
    let mutant = match a.mutant.as_deref().map(|n| (n, mutant::find(n))) {
        None => None,
        Some((_, Some(m))) => match m.kind {
            mutant::MutantKind::Agent(x) => Some(x),
            _ => {
                return Err(CliError::usage(format!(
                    "`{}` is not an Agent mutant; the matrix drives the model Agents only",
                    m.name
                )));
            }
        },
        Some((n, None)) => {
            return Err(CliError::usage(format!(
                "unknown mutant `{n}` (see `acp-chaos list mutants`)"
            )));
        }
    };
    if let (Some(seed), Some(m), Some(f), Some(p)) = (a.seed, a.method, a.fault, a.policy) {
        if let Some(why) = matrix::not_applicable(m, f, p) {
            return Err(CliError::usage(format!(
                "{} x {} x {} is not run: {why}",
                m.as_str(),
                f.as_str(),
                p.as_str()
            )));
        }
        let r = matrix::run_cell(m, f, p, seed, mutant, true);
        if a.json {
            println!("{}", serde_json::to_string_pretty(&r)?);
        } else {
            for l in &r.log {
                println!("{l}");
            }
        }
        return Ok(exit::VALID);
    }
    if a.seeds == 0 || a.seed_start.checked_add(a.seeds).is_none() {
        return Err(CliError::usage(
            "--seeds must be at least 1 and --seed-start + --seeds below 2^64".to_string(),
        ));
    }
    super::args::check_seeds(a.seeds)?;
    let mx = matrix::sweep(&matrix::Spec {
        seed_start: a.seed_start,
        seeds: a.seeds,
        mutant,
        mutant_name: a.mutant.clone(),
        only: a.method,
    });
    if a.json {
        println!("{}", serde_json::to_string_pretty(&mx)?);
    } else {
        print!("{}", matrix::table_text(&mx));
    }
    Ok(mx.exit)
}
