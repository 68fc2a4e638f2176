//! Every mutant is caught on the property it breaks, with the right party at fault, and the
//! correct models have no violation on the same runs (no false positives; findings allowed).

use crate::common;

use acp_chaos::checkers::Status;
use acp_chaos::models::mutant::MUTANTS;
use acp_chaos::models::Design;
use acp_chaos_cli::campaign::scoreboard::is_catch;

/// (mutant, scenario, design, seed) pinned to detect each mutant beside its registry witness
/// ([`acp_chaos::models::Mutant::witness`]): other designs, and the seeds of other scenarios
/// that show it.
const EXTRA: &[(&str, &str, Design, u64)] = &[
    ("no-dedup", "rfd-04-retry-while-held", Design::InMemory, 1),
    (
        "no-dedup",
        "rfd-01-retry-same-connection",
        Design::Adapter,
        0,
    ),
    (
        "new-key-per-attempt",
        "rfd-07-retry-inserted-during-active-work",
        Design::Adapter,
        2,
    ),
    (
        "error-after-insert",
        "rfd-05-retry-after-error",
        Design::Adapter,
        1,
    ),
    (
        "close-forgets-held",
        "session-01-close-fork-list",
        Design::Stored,
        15,
    ),
    (
        "forgets-live-while-active",
        "swarm-basic",
        Design::Stored,
        30,
    ),
    ("stop-cancels-later", "swarm-basic", Design::Stored, 2),
];

/// Every pinned run: each mutant's registry witness, then [`EXTRA`].
fn pinned() -> Vec<(&'static str, &'static str, Design, u64)> {
    MUTANTS
        .iter()
        .map(|m| (m.name, m.witness.scenario, m.witness.design, m.witness.seed))
        .chain(EXTRA.iter().copied())
        .collect()
}

fn acceptable(s: Status) -> bool {
    matches!(s, Status::Valid | Status::Finding)
}

#[test]
fn every_mutant_is_caught_on_its_property_and_party_on_pinned_seeds() {
    for (name, scen, design, seed) in pinned() {
        let m = MUTANTS.iter().find(|m| m.name == name).unwrap();
        let s = common::scenario(scen);
        let (_, bad) = acp_chaos::run::run_one(&s, seed, Some(name), design);
        let v = bad
            .verdicts
            .iter()
            .find(|v| m.property == v.property)
            .unwrap();
        assert!(is_catch(m, v), "{name} on {scen} seed {seed}: {v:?}");
        assert!(
            !v.witnesses.is_empty() && !v.rules.is_empty(),
            "{name}: {v:?}"
        );
        assert!(
            v.fault.is_some() || !m.needs_fault,
            "{name}: no enabling fault named: {v:?}"
        );
        let (_, good) = acp_chaos::run::run_one(&s, seed, None, design);
        for v in &good.verdicts {
            assert!(
                acceptable(v.status),
                "correct models on {scen} seed {seed}: {v:?}"
            );
        }
    }
}

/// Each mutant's registry witness is a run it applies to, and that run holds what the
/// mutant needs (a witness that lacks a need proves the need wrong: faults add no user
/// action, session or probe).
#[test]
fn every_mutant_witness_applies_and_holds_what_the_mutant_needs() {
    for m in MUTANTS {
        let w = m.witness;
        assert!(
            m.designs.is_empty() || m.designs.contains(&w.design),
            "{}: witness design {:?}",
            m.name,
            w.design
        );
        let s = common::scenario(w.scenario);
        assert!(s.agent.designs.contains(&w.design), "{}", m.name);
        let plan = acp_chaos::plan::Plan::derive(&s, w.seed, None, w.design);
        let h = acp_chaos::world::run(&plan);
        let lacks = acp_chaos::explore::needs::missing(m.name, &plan, &h);
        assert!(lacks.is_empty(), "{}: its witness lacks {lacks:?}", m.name);
    }
}

#[test]
fn swarm_catches_every_mutant_within_forty_seeds_and_passes_the_correct_models() {
    let s = common::scenario("swarm-basic");
    // Mutants whose window the swarm rarely reaches are pinned by their own scenario (above).
    for m in MUTANTS.iter().filter(|m| m.swarm_finds) {
        let design = m.designs.first().copied().unwrap_or(Design::Stored);
        let caught = (0..40).find(|&seed| {
            let (_, r) = acp_chaos::run::run_one(&s, seed, Some(m.name), design);
            r.verdicts.iter().any(|v| is_catch(m, v))
        });
        assert!(
            caught.is_some(),
            "{} not caught by swarm-basic seeds 0..40",
            m.name
        );
    }
    for design in Design::ALL {
        for seed in 0..40 {
            let (_, r) = acp_chaos::run::run_one(&s, seed, None, design);
            for v in &r.verdicts {
                assert!(
                    acceptable(v.status),
                    "correct {design:?} models, swarm seed {seed}: {v:?}"
                );
            }
        }
    }
}

/// Seeds of `swarm-basic` on which the swarm alone (no scripted schedule) catches the mutants
/// whose windows it reaches only now and then (found by `acp-chaos mutants --seeds 2000`).
const SWARM_PINNED: &[(&str, Design, u64)] = &[
    ("cancel-answers-one", Design::Adapter, 354),
    ("close-forgets-held", Design::Stored, 496),
    ("cluster-check-then-insert", Design::Cluster, 90),
    // 2 catches in seeds 3000..23000 (`run swarm-basic --agent cluster --mutant M`).
    ("cluster-stop-node-local", Design::Cluster, 11838),
    // 7 catches in seeds 0..300 (the swarm's A4 probe pair, stream `draw.raw.rekey`).
    ("inserts-other-prompt", Design::Stored, 21),
    // 5 catches in seeds 600..4600 (the swarm's stop nobody pressed, stream `draw.raw.stop`).
    ("any-cancel-withdraws", Design::Stored, 991),
    ("resends-unkeyed", Design::Stored, 53),
    // 8 catches in seeds 0..3000 (9 before the swarm's A15 close probe, stream
    // `draw.raw.close`, moved seed 29's frames).
    ("cancel-keeps-asking", Design::Stored, 644),
    // 15 catches in seeds 0..1000; 410 is the seed a reviewer found the Client bug on.
    ("withdraws-recovered", Design::Stored, 410),
    // 1 catch (a finding) in seeds 0..2000 from a race (a close of a session no longer active
    // there); with the swarm's A15 close probe (stream `draw.raw.close`), 20 in seeds 0..226
    // over the four designs (`acp-chaos mutants --mutant close-inactive-errors`).
    ("close-inactive-errors", Design::Stored, 97),
];

/// Mutants the swarm has never caught, pinned by their own scenario only (their witness).
/// `drop-held-drops-retries`: 0 catches in `swarm-basic` seeds 0..6400 under each of its
/// designs; its window needs the held original's connection to end at the Agent after its
/// retry arrived on a new connection, while both ends' heartbeats notice a dead connection
/// together (`held-01-retry-becomes-submission` stalls one end and swallows the Client's
/// close to get there).
const SWARM_NEVER: &[&str] = &["drop-held-drops-retries"];

#[test]
fn swarm_alone_catches_the_rare_window_mutants_on_pinned_seeds() {
    let s = common::scenario("swarm-basic");
    for m in MUTANTS
        .iter()
        .filter(|m| !m.swarm_finds && !SWARM_NEVER.contains(&m.name))
    {
        let &(_, design, seed) = SWARM_PINNED
            .iter()
            .find(|p| p.0 == m.name)
            .unwrap_or_else(|| panic!("{} has no pinned swarm seed", m.name));
        let (_, r) = acp_chaos::run::run_one(&s, seed, Some(m.name), design);
        assert!(
            r.verdicts.iter().any(|v| is_catch(m, v)),
            "{} not caught by swarm-basic seed {seed} under {design:?}",
            m.name
        );
        let (_, good) = acp_chaos::run::run_one(&s, seed, None, design);
        assert!(good.verdicts.iter().all(|v| acceptable(v.status)));
    }
}

/// Every field case (`[field]` in `scenarios/field-*.toml`) is valid on the correct models and
/// invalid, on the property it names, with the mutant that reproduces the original bug, under
/// every design both the scenario and the mutant run on (a finding, for a mutant that breaks a
/// SHOULD: RULES.md makes those findings, never violations).
#[test]
fn field_cases_are_valid_on_the_correct_models_and_caught_with_their_mutant() {
    let all = acp_chaos::scenario::load_dir(&common::scenarios_dir()).expect("scenarios load");
    let fields: Vec<_> = all.iter().filter(|s| s.field.is_some()).collect();
    assert!(!fields.is_empty(), "no field-case scenarios");
    for s in fields {
        let fc = s.field.as_ref().unwrap();
        assert!(
            s.name.starts_with("field-f"),
            "{}: name it field-fNN-...",
            s.name
        );
        let m = acp_chaos::models::mutant::find(&fc.mutant).unwrap();
        for &design in &s.agent.designs {
            let (_, good) = acp_chaos::run::run_one(s, 0, None, design);
            for v in &good.verdicts {
                assert!(acceptable(v.status), "{} {design:?}: {v:?}", s.name);
            }
            if !m.designs.is_empty() && !m.designs.contains(&design) {
                continue;
            }
            let (_, bad) = acp_chaos::run::run_one(s, 0, Some(&fc.mutant), design);
            let v = bad
                .verdicts
                .iter()
                .find(|v| v.property == fc.property)
                .unwrap();
            let want = if m.finding {
                Status::Finding
            } else {
                Status::Invalid
            };
            assert_eq!(
                (v.status, v.party),
                (want, Some(m.party)),
                "{} {design:?} with {}: {v:?}",
                s.name,
                fc.mutant
            );
        }
    }
}

/// Every mutant's pinned failing run shrinks (ddmin at fixed latency) to a handful of faults
/// and ops that still fail on the mutant's property with its party; the schedule round-trips
/// through its TOML file to the same verdict; and shrinking is deterministic.
#[test]
fn every_mutant_shrinks_to_a_handful_of_faults_and_ops() {
    use acp_chaos::explore::shrink::{self, Target};
    use acp_chaos::plan::Plan;
    let mut seen = std::collections::BTreeSet::new();
    for (name, scen, design, seed) in pinned() {
        if !seen.insert(name) {
            continue;
        }
        let m = MUTANTS.iter().find(|m| m.name == name).unwrap();
        let s = common::scenario(scen);
        let plan = Plan::derive(&s, seed, Some(name), design);
        let target = Target::of_mutant(m);
        let out = shrink::shrink(&plan, &target).unwrap_or_else(|e| panic!("{name}: {e}"));
        let (f, o, r) = out.after;
        assert!(
            f + o + r <= 6,
            "{name} on {scen} seed {seed}: {f} faults, {o} ops, {r} raw probes left"
        );
        assert!(f + o + r <= out.before.0 + out.before.1 + out.before.2);
        let text = toml::to_string(&out.plan).unwrap();
        let back: Plan = toml::from_str(&text).unwrap();
        assert_eq!(back.check(), None, "{name}: the schedule file is refused");
        let v = shrink::failing(&back, &target);
        assert!(v.is_some(), "{name}: the schedule file does not fail again");
        // Its report draws the shrunk run with the witnesses highlighted.
        let h = acp_chaos::world::run(&back);
        let d = acp_chaos::report::Diagram::of(&h, v.as_ref());
        let mermaid = d.mermaid();
        use acp_chaos::report::{Item, Mark};
        let witnessed = d.items.iter().any(|i| {
            matches!(
                i,
                Item::Arrow {
                    mark: Mark::Witness,
                    ..
                } | Item::Note {
                    mark: Mark::Witness,
                    ..
                }
            )
        });
        assert!(
            mermaid.starts_with("sequenceDiagram\n    participant ") && witnessed,
            "{name}: no highlighted witness in\n{mermaid}"
        );
        let again = shrink::shrink(&plan, &target).unwrap();
        assert_eq!(
            again.kept, out.kept,
            "{name}: shrinking is not deterministic"
        );
    }
}

/// A plan derived from any shipped scenario, under any design and a few seeds, passes the checks
/// a schedule file gets (so `replay --schedule` never refuses what `shrink` wrote).
#[test]
fn derived_plans_pass_the_schedule_checks() {
    use acp_chaos::plan::Plan;
    let all = acp_chaos::scenario::load_dir(&common::scenarios_dir()).expect("scenarios load");
    for s in &all {
        for &d in &s.agent.designs {
            for seed in 0..5 {
                let p = Plan::derive(s, seed, None, d);
                assert_eq!(p.check(), None, "{} {d:?} seed {seed}", s.name);
            }
        }
    }
}

/// A verdict blames the party whose frames broke the rule: under `no-dedup`, the Agent
/// answered one attempt of a withdrawn prompt `-32800` while it held another, which it then
/// inserted. The Client showed the input withdrawn, as the `-32800` told it (A5: every pending
/// attempt of a withdrawn key gets it): P6 blames the Agent, and P2 does not blame the Client.
#[test]
fn an_insertion_after_the_agent_withdrew_the_key_is_the_agents() {
    let s = common::scenario("cancel-01-withdraw-every-attempt");
    let plan = acp_chaos::plan::Plan::derive(&s, 0, Some("no-dedup"), Design::InMemory);
    let verdicts = acp_chaos::checkers::check_all(&acp_chaos::world::run(&plan));
    let of = |p: &str| verdicts.iter().find(|v| v.property.starts_with(p)).unwrap();
    assert_eq!(of("P6").status, Status::Invalid);
    assert_eq!(of("P6").party, Some(acp_chaos::models::Party::Agent));
    assert_eq!(of("P2").status, Status::Valid, "{}", of("P2").message);
}

/// Blame goes to the party whose frames broke the rule: under a mutant of the Agent alone, the
/// Client and the proxy are the correct models, so no verdict may call either of them invalid.
/// Every Agent mutant, on every design it applies to, over `swarm-basic` seeds 0..24, its
/// registry witness, and the run where a reviewer found the Client blamed for believing the
/// Agent's `-32800` to a retry routed to another connection while the original was held
/// (`no-dedup`, cluster, seed 126: P2 C8 on the Client, where P3 A7 blames the Agent).
#[test]
fn under_every_agent_mutant_no_verdict_blames_the_client_or_the_proxy() {
    use acp_chaos::models::mutant::{MutantKind, Party};
    use rayon::prelude::*;
    let swarm = common::scenario("swarm-basic");
    let mut runs: Vec<(&str, acp_chaos::scenario::Scenario, Design, u64)> = Vec::new();
    for m in MUTANTS
        .iter()
        .filter(|m| matches!(m.kind, MutantKind::Agent(_)))
    {
        for d in Design::ALL
            .into_iter()
            .filter(|d| m.designs.is_empty() || m.designs.contains(d))
        {
            runs.extend((0..24).map(|seed| (m.name, swarm.clone(), d, seed)));
        }
        let w = &m.witness;
        runs.push((m.name, common::scenario(w.scenario), w.design, w.seed));
    }
    runs.push(("no-dedup", swarm.clone(), Design::Cluster, 126));
    let blamed: Vec<String> = runs
        .par_iter()
        .flat_map_iter(|(m, s, d, seed)| {
            let (_, r) = acp_chaos::run::run_one(s, *seed, Some(m), *d);
            r.verdicts
                .into_iter()
                .filter(|v| {
                    v.status == Status::Invalid
                        && matches!(v.party, Some(Party::Client | Party::Intermediary))
                })
                .map(move |v| format!("{m} {} {d:?} seed {seed}: {v:?}", s.name))
        })
        .collect();
    assert!(blamed.is_empty(), "{}", blamed.join("\n"));
}

/// A mutant's rules, property and party are its `MUTANTS` row, and only there: no variant's
/// doc comment says again what it breaks (a second copy drifts from the row; issue 40).
#[test]
fn a_mutants_rules_property_and_party_are_written_once() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/src");
    for (file, e) in [
        ("agent/config.rs", "AgentMutant"),
        ("client/config.rs", "ClientMutant"),
        ("proxy.rs", "ProxyMutant"),
    ] {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        let start = text
            .find(&format!("pub enum {e} {{"))
            .unwrap_or_else(|| panic!("{file}: no enum {e}"));
        let body = &text[start..start + text[start..].find("\n}\n").unwrap()];
        let docs: String = body
            .lines()
            .filter_map(|l| l.trim().strip_prefix("///"))
            .collect::<Vec<_>>()
            .join(" ");
        assert!(body.lines().count() > 5, "{file}: {e} read no variants");
        for said in ["Breaks ", "at fault)", "intermediary)"] {
            assert!(
                !docs.contains(said),
                "{file}: a {e} doc comment repeats what its MUTANTS row says ({said:?})"
            );
        }
    }
}

/// The scoreboard's witness column on two mutants the swarm-basic columns miss within 20 runs
/// (issue 41): their own witness scenarios catch them at once, and a column's runs are runs to
/// the first catch (a budget one short of them misses, the budget of exactly them catches).
#[test]
fn the_witness_column_explores_each_mutants_own_scenario_within_its_budget() {
    use acp_chaos_cli::campaign::scoreboard::{witness_catch, witness_cell};
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    // A finding (A15's SHOULD): caught on its witness's fault-free trace, the first run.
    let m = acp_chaos::models::mutant::find("close-inactive-errors").unwrap();
    let w = witness_catch(&common::scenario(m.witness.scenario), m, 3, &pool);
    assert_eq!(w.scenario, "session-03-close-while-running");
    assert_eq!((w.exhaustive, witness_cell(&w).as_str()), (Some(1), "1 x"));
    // Lineage needs a restart placed before the user's cancel: some runs, none of them free.
    let m = acp_chaos::models::mutant::find("withdraws-recovered").unwrap();
    let s = common::scenario(m.witness.scenario);
    let w = witness_catch(&s, m, 12, &pool);
    let n = w
        .lineage
        .expect("lineage on client-04 within 12 runs (9 when this was written)");
    assert!(n > 1, "{w:?}");
    assert_eq!(witness_catch(&s, m, n, &pool).lineage, Some(n));
    assert_eq!(witness_catch(&s, m, n - 1, &pool).lineage, None);
}

/// `acp-chaos mutants` prints the witness column, the best per mutant and the count under the
/// table, and names the witness scenario in `--json`.
#[test]
fn the_scoreboard_prints_the_witness_column_and_each_mutants_best() {
    let dir = common::fresh_dir("acp-chaos-mutants-witness");
    let json = dir.join("rows.json");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_acp-chaos"))
        .env("ACP_CHAOS_SCENARIOS", common::scenarios_dir())
        .args([
            "mutants",
            "--mutant",
            "inserts-other-prompt",
            "--seeds",
            "1",
        ])
        .args([
            "--catches",
            "1",
            "--baseline-seeds",
            "0",
            "--explore-seeds",
            "1",
        ])
        .args(["--explore-budget", "4", "--jobs", "2", "--json"])
        .arg(&json)
        .arg("--out")
        .arg(dir.join("board"))
        .output()
        .unwrap();
    let t = common::exit_and_printed(&o);
    let names = t
        .lines()
        .find(|l| l.starts_with("mutant "))
        .unwrap_or_else(|| panic!("{t}"));
    assert!(names.trim_end().ends_with("guided witness"), "{t}");
    let row = t
        .lines()
        .find(|l| l.starts_with("inserts-other-prompt "))
        .unwrap_or_else(|| panic!("{t}"));
    assert!(row.ends_with(" 1 x"), "{t}");
    assert_eq!(row.chars().count(), names.chars().count(), "{t}");
    assert!(
        t.contains("1 exhaustive key-01-recorded-key-other-prompt (witness)"),
        "{t}"
    );
    assert!(
        t.contains("1 of 1 mutants caught in <= 20 runs by some mode"),
        "{t}"
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let w = &doc["rows"][0]["witness"];
    assert_eq!(w["scenario"], "key-01-recorded-key-other-prompt", "{doc}");
    assert_eq!(w["exhaustive"], 1, "{doc}");
    assert_eq!(doc["rows"][0]["best"]["column"], "witness", "{doc}");
}
