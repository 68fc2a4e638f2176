//! The matrix as terminal text.

use super::space::*;
use super::*;

/// The matrix as text: the table, then a verdict per method and a line per class.
///
/// Long on purpose: a renderer: the table, then its verdicts in order.
pub fn table_text(mx: &Matrix) -> String {
    let mut s = format!(
        "acp-chaos matrix: seeds {}..{} per cell, mutant {}, Client timeout {} ms; cell = ok/err(surfaced-error)/dup(duplicate-effect)/drop(silent-drop) counts, @S = first seed\n",
        mx.seed_start,
        mx.seed_start + mx.seeds,
        mx.mutant.as_deref().unwrap_or("none"),
        mx.timeout_ms
    );
    s.push_str(&format!(
        "{:<26} {:<20} {:<30} {:<30} {}\n",
        "method (class)", "fault", "resend-as-is", "resend-with-key", "do-not-resend"
    ));
    // The methods that were run, in table order.
    let run: Vec<MethodClass> = METHODS
        .into_iter()
        .filter(|m| mx.cells.iter().any(|c| c.method == m.method))
        .collect();
    for m in run {
        for f in Fault::ALL {
            let c = |p: Policy| {
                mx.cells
                    .iter()
                    .find(|c| c.method == m.method && c.fault == f && c.policy == p)
                    .map(MatrixCell::text)
                    .unwrap_or_default()
            };
            s.push_str(&format!(
                "{:<26} {:<20} {:<30} {:<30} {}\n",
                m.method.as_str(),
                f.as_str(),
                c(Policy::ResendAsIs),
                c(Policy::ResendWithKey),
                c(Policy::DoNotResend)
            ));
        }
    }
    s.push_str("\nverdicts per method (RULES.md \"Retry classes\", P10):\n");
    for v in &mx.verdicts {
        s.push_str(&format!(
            "  {:<26} {:<12} {:<8} {:<9} {}: {}\n",
            v.method.as_str(),
            v.class.as_str(),
            if v.inferred { "inferred" } else { "stated" },
            if v.confirmed { "confirmed" } else { "REFUTED" },
            v.claim,
            v.evidence
        ));
        for (what, e) in [("example", &v.example), ("contrast", &v.contrast)] {
            if let Some(e) = e {
                s.push_str(&format!(
                    "  {:<26} {what}: seed {} {} {} -> {}: {}\n",
                    "",
                    e.seed,
                    e.fault.as_str(),
                    e.policy.as_str(),
                    e.outcome.as_str(),
                    e.command
                ));
            }
        }
    }
    if !mx.not_run.is_empty() {
        s.push_str("\nnot run (both directions of the methods table):\n");
        for n in &mx.not_run {
            s.push_str(&format!(
                "  {:<26} {:<13} {:<12} {:<8} {}\n",
                n.method,
                n.direction.as_str(),
                n.class.as_str(),
                if n.inferred { "inferred" } else { "stated" },
                n.why
            ));
        }
        s.push_str(&format!(
            "  v1 only, not in v2 (no class; a v2 Agent answers -32601): {}\n",
            crate::models::methods::V1_ONLY.join(", ")
        ));
    }
    s.push('\n');
    for c in &mx.classes {
        let names = |ms: &[Method]| ms.iter().map(|m| m.as_str()).collect::<Vec<_>>().join(" ");
        s.push_str(&format!(
            "class {:<12} {}: stated [{}] inferred [{}]{}{}\n",
            c.class.as_str(),
            if c.confirmed { "confirmed" } else { "REFUTED" },
            names(&c.stated),
            names(&c.inferred),
            if c.refuted.is_empty() {
                String::new()
            } else {
                format!(" refuted by [{}]", names(&c.refuted))
            },
            c.example
                .as_ref()
                .map(|e| format!("; example: {} -> {}", e.command, e.outcome.as_str()))
                .unwrap_or_default()
        ));
    }
    s.push_str(&format!(
        "exit {} ({})\n",
        mx.exit,
        if mx.exit == 0 {
            "every stated class confirmed; refuted inferred classes are findings"
        } else {
            "a stated class is refuted"
        }
    ));
    s
}
