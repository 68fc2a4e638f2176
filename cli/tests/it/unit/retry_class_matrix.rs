//! The unit tests of `sim/src/retry_class/matrix/mod.rs`.
//! Matrix tests: the class table against the audit, determinism, every correct cell, mutants.

use acp_chaos::retry_class::matrix::table_text;
use acp_chaos::retry_class::matrix::{not_run, Fault, Method, Outcome, Policy, METHODS};

use acp_chaos::retry_class::matrix::*;

fn spec(seeds: u64, mutant: Option<&str>) -> Spec {
    Spec {
        only: None,
        seed_start: 0,
        seeds,
        mutant: mutant.map(
            |m| match acp_chaos::models::mutant::find(m).map(|x| x.kind) {
                Some(acp_chaos::models::mutant::MutantKind::Agent(a)) => a,
                _ => panic!("not an agent mutant: {m}"),
            },
        ),
        mutant_name: mutant.map(String::from),
    }
}

/// Every method of the models' table (both directions) is in the matrix once: run, if it goes
/// Client→Agent and the models speak it, else listed as not run; with the table's class.
#[test]
fn every_method_of_the_table_is_run_or_listed() {
    use acp_chaos::models::methods::{self, Direction};
    let listed = not_run();
    for (d, m) in methods::all() {
        let run = METHODS.iter().filter(|x| x.method.as_str() == m.name);
        let run: Vec<_> = run.filter(|_| d == Direction::ClientToAgent).collect();
        let not: Vec<_> = listed
            .iter()
            .filter(|n| n.method == m.name && n.direction == d)
            .collect();
        assert_eq!(run.len() + not.len(), 1, "{} {d:?}", m.name);
        let should_run = d == Direction::ClientToAgent && m.spoken();
        assert_eq!(run.len() == 1, should_run, "{} {d:?}", m.name);
        if let Some(r) = run.first() {
            assert_eq!((r.class, r.inferred), (m.class, m.inferred));
        }
        if let Some(n) = not.first() {
            assert_eq!((n.class, n.inferred), (m.class, m.inferred));
        }
    }
    let mx = sweep(&spec(1, None));
    assert_eq!(mx.not_run.len(), listed.len());
    let text = table_text(&mx);
    for n in &listed {
        assert!(text.contains(n.method), "{}", n.method);
    }
}

/// The class table matches the audit's (method, class, stated/inferred).
#[test]
fn classes_match_the_audit() {
    let rows = acp_chaos::retry_class::audit::audit();
    for m in METHODS {
        let row = rows
            .iter()
            .find(|r| r.method == m.method.as_str() && r.not_measured.is_none())
            .unwrap_or_else(|| panic!("{} not in the audit", m.method.as_str()));
        assert_eq!(row.class, m.class, "{}", m.method.as_str());
        assert_eq!(row.inferred, m.inferred, "{}", m.method.as_str());
    }
}

/// Same seeds, same JSON.
#[test]
fn deterministic() {
    let a = serde_json::to_string(&sweep(&spec(10, None))).unwrap();
    let b = serde_json::to_string(&sweep(&spec(10, None))).unwrap();
    assert_eq!(a, b);
    let r1 = run_cell(
        Method::Prompt,
        Fault::CrashAfterEffect,
        Policy::ResendAsIs,
        3,
        None,
        true,
    );
    let r2 = run_cell(
        Method::Prompt,
        Fault::CrashAfterEffect,
        Policy::ResendAsIs,
        3,
        None,
        true,
    );
    assert_eq!(
        serde_json::to_string(&r1).unwrap(),
        serde_json::to_string(&r2).unwrap()
    );
}

/// Every stated class is confirmed on the correct models, and every example reruns to its
/// outcome.
#[test]
fn stated_classes_confirmed_on_the_correct_models() {
    let mx = sweep(&spec(50, None));
    for v in &mx.verdicts {
        if !v.inferred {
            assert!(
                v.confirmed,
                "{} {:?}: {}",
                v.method.as_str(),
                v.class,
                v.evidence
            );
        }
        if let Some(e) = &v.example {
            let r = run_cell(v.method, e.fault, e.policy, e.seed, None, false);
            assert_eq!(r.outcome, e.outcome, "{}", e.command);
        }
    }
    assert_eq!(mx.exit, 0);
    let keyed = mx
        .verdicts
        .iter()
        .find(|v| v.method == Method::Prompt)
        .unwrap();
    assert_eq!(
        keyed.contrast.as_ref().map(|c| c.outcome),
        Some(Outcome::Ok)
    );
    // The control column: without a fault nothing is dropped, and only a prompt held
    // behind a turn longer than the Client's timeout is resent (inserted twice without a
    // key) or given up on.
    let control = mx.cells.iter().filter(|c| c.fault == Fault::None);
    for c in control.filter(|c| c.not_applicable.is_none()) {
        assert_eq!(c.counts.silent_drop, 0, "{c:?}");
        if c.method != Method::Prompt || c.policy == Policy::ResendWithKey {
            assert_eq!(c.counts.ok, 50, "{c:?}");
        }
    }
}

/// The matrix can fail: with the `no-dedup` mutant a keyed resend inserts twice, so the
/// stated keyed class is refuted and the exit code is 1.
#[test]
fn no_dedup_refutes_the_keyed_class() {
    let (spec, v) = prompt_refuted_by("no-dedup");
    let e = v.example.as_ref().unwrap();
    assert_eq!(e.policy, Policy::ResendWithKey);
    assert_eq!(e.outcome, Outcome::DuplicateEffect);
    assert!(e.command.ends_with("--mutant no-dedup"));
    let r = run_cell(v.method, e.fault, e.policy, e.seed, spec.mutant, false);
    assert_eq!(r.outcome, Outcome::DuplicateEffect);
}

/// The matrix's `session/prompt` verdict under `mutant` (20 seeds), asserted refuted with exit 1.
fn prompt_refuted_by(mutant: &str) -> (Spec, ClassVerdict) {
    let spec = Spec {
        only: Some(Method::Prompt),
        ..spec(20, Some(mutant))
    };
    let mx = sweep(&spec);
    assert_eq!(mx.exit, 1);
    let v = mx
        .verdicts
        .into_iter()
        .find(|v| v.method == Method::Prompt)
        .unwrap();
    assert!(!v.confirmed, "{}", v.evidence);
    (spec, v)
}

/// A key recorded on arrival (A12) answers a retry after a crash with a messageId no
/// message has: a silent drop under resend-with-key, so the keyed class is refuted too.
#[test]
fn key_recorded_on_arrival_refutes_the_keyed_class_by_a_silent_drop() {
    let (_, v) = prompt_refuted_by("key-recorded-on-arrival");
    let e = v.example.as_ref().unwrap();
    assert_eq!(
        (e.policy, e.outcome),
        (Policy::ResendWithKey, Outcome::SilentDrop)
    );
}
