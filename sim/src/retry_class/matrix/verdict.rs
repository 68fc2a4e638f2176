//! A verdict per method: does the class RULES.md gives it hold under the counts?

use super::space::*;
use super::*;
use crate::models::RetryClass;
use serde::Serialize;

/// A seed that shows a verdict, and the command that shows it.
#[derive(Debug, Clone, Serialize)]
pub struct Example {
    /// The seed.
    pub seed: u64,
    /// The cell's fault.
    pub fault: Fault,
    /// The cell's policy.
    pub policy: Policy,
    /// The outcome that seed gives in that cell.
    pub outcome: Outcome,
    /// The command that reruns it verbosely.
    pub command: String,
}

/// Whether the matrix confirms one method's class.
#[derive(Debug, Clone, Serialize)]
pub struct ClassVerdict {
    /// The method.
    pub method: Method,
    /// Its class.
    pub class: RetryClass,
    /// Whether RULES.md infers the class.
    pub inferred: bool,
    /// What the class claims, as the matrix tests it.
    pub claim: String,
    /// Whether every cell the claim names agrees.
    pub confirmed: bool,
    /// The counts behind it.
    pub evidence: String,
    /// A seed that shows it (the first counter-example when refuted).
    pub example: Option<Example>,
    /// The same seed in the cell that makes the contrast, if the claim has one (keyed: the
    /// duplicating seed again with the key).
    pub contrast: Option<Example>,
}

/// One line per class: its methods' verdicts together.
#[derive(Debug, Clone, Serialize)]
pub struct ClassSummary {
    /// The class.
    pub class: RetryClass,
    /// Every method of the class confirmed.
    pub confirmed: bool,
    /// Methods whose class the proposal states.
    pub stated: Vec<Method>,
    /// Methods whose class RULES.md infers.
    pub inferred: Vec<Method>,
    /// Methods whose verdict is refuted.
    pub refuted: Vec<Method>,
    /// The example of the first refuted method, else of the first stated one, else the first.
    pub example: Option<Example>,
}

/// The verdict for one method: the class's claim, tested on its cells.
///
/// Long on purpose: one arm per retry class, each a claim, its counts and an example, sharing the
/// counting closures above them.
pub fn verdict(m: &MethodClass, cells: &[MatrixCell], spec: &Spec) -> ClassVerdict {
    let of = |f: Fault, p: Policy| {
        cells
            .iter()
            .find(|c| c.method == m.method && c.fault == f && c.policy == p)
            .expect("every cell is built")
    };
    let run_cells = |p: Policy, faults: &[Fault]| -> Vec<&MatrixCell> {
        faults
            .iter()
            .map(|f| of(*f, p))
            .filter(|c| c.not_applicable.is_none())
            .collect()
    };
    let sum = |cs: &[&MatrixCell], o: Outcome| cs.iter().map(|c| c.counts.get(o)).sum::<u64>();
    let first = |cs: &[&MatrixCell], o: Outcome| cs.iter().find_map(|c| example(c, o, spec));
    let runs = |cs: &[&MatrixCell]| {
        cs.iter()
            .map(|c| {
                c.counts.get(Outcome::Ok)
                    + c.counts.get(Outcome::SurfacedError)
                    + c.counts.get(Outcome::DuplicateEffect)
                    + c.counts.get(Outcome::SilentDrop)
            })
            .sum::<u64>()
    };
    let not_late: Vec<Fault> = Fault::ALL
        .into_iter()
        .filter(|f| *f != Fault::DuplicatedLate)
        .collect();
    let (claim, confirmed, evidence, ex) = match m.class {
        RetryClass::Idempotent => {
            let cs = run_cells(Policy::ResendAsIs, &not_late);
            let dup = sum(&cs, Outcome::DuplicateEffect);
            let late = of(Fault::DuplicatedLate, Policy::ResendAsIs);
            let rl = of(Fault::ResponseLost, Policy::ResendAsIs);
            let evidence = format!(
                "resend-as-is: duplicate-effect in {dup} of {} runs ({} faults); response-lost: ok {} of {}; a late copy after the Client's next op: duplicate-effect {} of {}{}",
                runs(&cs),
                cs.len(),
                rl.counts.ok,
                runs(&[rl]),
                late.counts.duplicate_effect,
                runs(&[late]),
                late.first_seed
                    .get(&Outcome::DuplicateEffect)
                    .map(|s| format!(" (seed {s})"))
                    .unwrap_or_default()
            );
            let ex = if dup > 0 {
                first(&cs, Outcome::DuplicateEffect)
            } else {
                example(rl, Outcome::Ok, spec).or_else(|| first(&cs, Outcome::Ok))
            };
            (
                "resend-as-is never gives duplicate-effect (every fault but a late copy)"
                    .to_string(),
                dup == 0,
                evidence,
                ex,
            )
        }
        RetryClass::Keyed => {
            let keyed = run_cells(Policy::ResendWithKey, &Fault::ALL);
            let bare = run_cells(Policy::ResendAsIs, &Fault::ALL);
            let kdup = sum(&keyed, Outcome::DuplicateEffect);
            let kdrop = sum(&keyed, Outcome::SilentDrop);
            let bdup = sum(&bare, Outcome::DuplicateEffect);
            let by_fault: Vec<String> = bare
                .iter()
                .filter(|c| c.counts.duplicate_effect > 0)
                .map(|c| format!("{} {}", c.fault.as_str(), c.counts.duplicate_effect))
                .collect();
            let evidence = format!(
                "resend-with-key: duplicate-effect {kdup}, silent-drop {kdrop} of {} runs; resend-as-is (no key): duplicate-effect {bdup} of {} ({})",
                runs(&keyed),
                runs(&bare),
                if by_fault.is_empty() { "none".to_string() } else { by_fault.join(", ") }
            );
            // A lost response is the plainest counter-example; any other cell otherwise.
            let ex = if kdup > 0 {
                example(
                    of(Fault::ResponseLost, Policy::ResendWithKey),
                    Outcome::DuplicateEffect,
                    spec,
                )
                .or_else(|| first(&keyed, Outcome::DuplicateEffect))
            } else if kdrop > 0 {
                first(&keyed, Outcome::SilentDrop)
            } else {
                let rl = of(Fault::ResponseLost, Policy::ResendAsIs);
                example(rl, Outcome::DuplicateEffect, spec)
                    .or_else(|| first(&bare, Outcome::DuplicateEffect))
            };
            (
                "resend-with-key never gives duplicate-effect or silent-drop; resend-as-is without the key can duplicate".to_string(),
                kdup == 0 && kdrop == 0 && bdup > 0,
                evidence,
                ex,
            )
        }
        RetryClass::Duplicating => {
            let rl = of(Fault::ResponseLost, Policy::ResendAsIs);
            let quiet: Vec<Fault> = Fault::ALL
                .into_iter()
                .filter(|f| !matches!(f, Fault::Duplicated | Fault::DuplicatedLate))
                .collect();
            let dnr = run_cells(Policy::DoNotResend, &quiet);
            let evidence = format!(
                "response-lost x resend-as-is: duplicate-effect {} of {}; do-not-resend without transport copies: duplicate-effect {} of {}",
                rl.counts.duplicate_effect,
                runs(&[rl]),
                sum(&dnr, Outcome::DuplicateEffect),
                runs(&dnr)
            );
            (
                "resend-as-is after a lost response creates a second resource (so never resent automatically)".to_string(),
                rl.counts.duplicate_effect > 0,
                evidence,
                example(rl, Outcome::DuplicateEffect, spec)
                    .or_else(|| example(rl, Outcome::Ok, spec)),
            )
        }
        RetryClass::NotResent if m.method == Method::Cancel => {
            let late: Vec<&MatrixCell> = Policy::ALL
                .into_iter()
                .map(|p| of(Fault::DuplicatedLate, p))
                .filter(|c| c.not_applicable.is_none())
                .collect();
            let bare = run_cells(Policy::ResendAsIs, &not_late);
            // A6: one cancel never touches later work, so any harm is the repeat's.
            let once: Vec<&MatrixCell> = Policy::ALL
                .into_iter()
                .map(|p| of(Fault::None, p))
                .filter(|c| c.not_applicable.is_none())
                .collect();
            let dup = sum(&late, Outcome::DuplicateEffect);
            let dup_once = sum(&once, Outcome::DuplicateEffect);
            let evidence = format!(
                "a late copy: duplicate-effect {dup} of {}; one cancel, no fault: duplicate-effect {dup_once} of {}; resend-as-is: duplicate-effect {} of {} runs; do-not-resend x request-lost: silent-drop {}",
                runs(&late),
                runs(&once),
                sum(&bare, Outcome::DuplicateEffect),
                runs(&bare),
                of(Fault::RequestLost, Policy::DoNotResend).counts.silent_drop
            );
            let ex = if dup_once > 0 {
                first(&once, Outcome::DuplicateEffect)
            } else {
                first(&late, Outcome::DuplicateEffect).or_else(|| first(&late, Outcome::Ok))
            };
            (
                "a late repeat cancels work the user did not mean to stop; one cancel never does (A6)".to_string(),
                dup > 0 && dup_once == 0,
                evidence,
                ex,
            )
        }
        RetryClass::NotResent => {
            let all: Vec<&MatrixCell> = Policy::ALL
                .into_iter()
                .flat_map(|p| run_cells(p, &Fault::ALL))
                .collect();
            let dup = sum(&all, Outcome::DuplicateEffect);
            let lost = of(Fault::RequestLost, Policy::DoNotResend);
            let evidence = format!(
                "duplicate-effect {dup} of {} runs; a lost one under do-not-resend: silent-drop {} of {}",
                runs(&all),
                lost.counts.silent_drop,
                runs(&[lost])
            );
            let ex = if dup > 0 {
                first(&all, Outcome::DuplicateEffect)
            } else {
                example(of(Fault::Duplicated, Policy::ResendAsIs), Outcome::Ok, spec)
            };
            (
                "a repeat is harmless: it names an answered or unknown id and is ignored"
                    .to_string(),
                dup == 0,
                evidence,
                ex,
            )
        }
    };
    // Keyed: rerun the example seed with the key, to show the key is what makes the difference.
    let contrast = match (m.class, &ex) {
        (RetryClass::Keyed, Some(e)) if e.policy == Policy::ResendAsIs => {
            let r = run_cell(
                m.method,
                e.fault,
                Policy::ResendWithKey,
                e.seed,
                spec.mutant,
                false,
            );
            Some(Example {
                seed: e.seed,
                fault: e.fault,
                policy: Policy::ResendWithKey,
                outcome: r.outcome,
                command: command(
                    m.method,
                    e.fault,
                    Policy::ResendWithKey,
                    e.seed,
                    spec.mutant_name.as_deref(),
                ),
            })
        }
        _ => None,
    };
    ClassVerdict {
        method: m.method,
        class: m.class,
        inferred: m.inferred,
        claim,
        confirmed,
        evidence,
        example: ex,
        contrast,
    }
}
