//! Rules about what a party sent, judged from the frames it wrote and read, not from its own
//! report of them (issue 38): a user's Client whose wire layer writes every key as `""` (K3
//! makes it malformed) talks to an Agent that inserts such a prompt anyway. No raw probe is
//! in the plan, so only the frames can show the Agent's part.

use acp_chaos::checkers::{self, Status, Verdict};
use acp_chaos::harness::Harness;
use acp_chaos::models::{Design, Party};

#[path = "../../../sim/examples/parties/undefined_key_client.rs"]
mod wire_client;
use wire_client::{wire_client_misreporting, wire_client_writing};

fn harness(mutant: Option<&str>) -> Harness {
    let h = Harness::scenario("rfd-01-retry-same-connection")
        .expect("the project's scenarios folder")
        .design(Design::Stored)
        .client(wire_client_writing(Some("")));
    match mutant {
        Some(m) => h.mutant(m),
        None => h,
    }
}

fn verdict(h: &Harness, seed: u64, property: &str) -> Verdict {
    let history = h.run_plan(&h.plan(seed));
    checkers::check_all(&history)
        .into_iter()
        .find(|v| v.property == property)
        .expect("every property is judged")
}

#[test]
fn an_agent_that_inserts_a_prompt_sent_with_an_empty_key_is_blamed_from_the_frames() {
    let plan = harness(None).plan(0);
    assert!(
        plan.raw.is_empty(),
        "no raw probe: the frames alone show it"
    );
    // The Agent that treats a malformed key as omitted inserts it: P5 names it, under K3.
    let bad = verdict(&harness(Some("invalid-key-as-omitted")), 0, "P5");
    assert_eq!(
        (bad.status, bad.party, bad.rules.clone()),
        (Status::Invalid, Some(Party::Agent), vec!["K3".to_string()]),
        "{}",
        bad.message
    );
    assert!(bad.message.contains("malformed key"), "{}", bad.message);
    // The correct Agent rejects it: nothing for P5 to blame it for.
    let good = verdict(&harness(None), 0, "P5");
    assert_eq!(good.status, Status::Valid, "{}", good.message);
}

#[path = "../../../sim/examples/parties/relay_proxy.rs"]
mod relay;

/// A proxy that rewrites ids, forwards `$/cancel_request` under the Client's id instead of the
/// one it wrote the request under, and reports nothing of what it forwards: X1 is judged from
/// the frames it read and wrote, the proxy blamed.
#[test]
fn a_proxy_that_reports_nothing_is_judged_on_x1_from_the_frames_it_wrote() {
    let harness = |bug: bool| {
        Harness::scenario("proxy-02-cancel-through-rewritten-ids")
            .expect("the project's scenarios folder")
            .design(Design::Stored)
            .proxy(relay::silent_relay_proxy(bug))
    };
    let caught = (0..20).find_map(|seed| {
        let v = verdict(&harness(true), seed, "P6");
        (v.status == Status::Invalid).then_some((seed, v))
    });
    let (seed, v) = caught.expect("the unmapped cancel is caught within 20 seeds");
    assert_eq!(
        (v.party, v.rules.clone()),
        (Some(Party::Intermediary), vec!["X1".to_string()]),
        "seed {seed}: {}",
        v.message
    );
    let history = harness(true).run_plan(&harness(true).plan(seed));
    assert!(
        !history.ops.iter().any(|o| o.f == "forward"),
        "the proxy reported nothing"
    );
    // The same proxy mapping its cancels: nothing to blame on P6 over those seeds (not
    // checked beyond its frames: it never reported a `forward`).
    for seed in 0..20 {
        let v = verdict(&harness(false), seed, "P6");
        assert_eq!(v.status, Status::Unknown, "seed {seed}: {}", v.message);
        assert!(
            v.message
                .starts_with("not checked: the proxy never emitted `forward`"),
            "seed {seed}: {}",
            v.message
        );
    }
}

/// The effect contract covers every pluggable party: a Client that reports nothing of what it
/// sends (no `attempt`, no `ack`) leaves P2, P10 and P14 unknown, naming the Client's missing
/// effect, never valid on nothing and never invalid for want of a report; a proxy that
/// reports no `forward` leaves P13 unknown the same way, while P6 still judges its cancels
/// from the frames.
#[test]
fn a_client_or_proxy_that_reports_nothing_is_not_checked_never_invalid() {
    use acp_chaos::models::{Action, ClientInput, ClientModel, SpecClient};
    use acp_chaos::world::Boot;
    struct Silent(SpecClient);
    impl ClientModel for Silent {
        fn handle(&mut self, input: ClientInput, out: &mut Vec<Action>) {
            let from = out.len();
            self.0.handle(input, out);
            crate::common::drop_effects_from(out, from);
        }
        fn pending(&self) -> Vec<u64> {
            self.0.pending()
        }
        fn set_clock(&mut self, now_ms: u64) {
            self.0.set_clock(now_ms)
        }
    }
    let silent = Harness::scenario("rfd-03-retry-after-agent-restart")
        .unwrap()
        .design(Design::Stored)
        .client(|b: Boot<'_>| -> Box<dyn ClientModel> {
            Box::new(Silent(SpecClient::recover(
                b.plan.client.clone(),
                b.boot,
                b.seed,
                b.records,
            )))
        });
    for p in ["P2", "P10", "P14"] {
        let v = verdict(&silent, 0, p);
        assert_eq!(v.status, Status::Unknown, "{p}: {}", v.message);
        assert!(
            v.message
                .starts_with("not checked: the Client never emitted `attempt`"),
            "{p}: {}",
            v.message
        );
    }
    assert!(verdict(&silent, 0, "P2").message.contains("`ack`"));
    let proxied = |silent: bool| {
        let h = Harness::scenario("proxy-02-cancel-through-rewritten-ids")
            .unwrap()
            .design(Design::Stored);
        if silent {
            h.proxy(relay::silent_relay_proxy(false))
        } else {
            h.proxy(relay::relay_proxy(false))
        }
    };
    let v = verdict(&proxied(true), 0, "P13");
    assert_eq!(v.status, Status::Unknown, "{}", v.message);
    assert!(
        v.message
            .starts_with("not checked: the proxy never emitted `forward`"),
        "{}",
        v.message
    );
    // The same parties with their reports: checked, and valid.
    assert_eq!(verdict(&proxied(false), 0, "P13").status, Status::Valid);
    // A correct proxy that reports nothing never gets the correct Client or Agent blamed
    // (without `forward` no checker can tell whose attempt the Agent answered).
    let on_proxy_01 = Harness::scenario("proxy-01-retry-through-rewritten-ids")
        .unwrap()
        .design(Design::Stored)
        .proxy(relay::silent_relay_proxy(false));
    for seed in 0..6 {
        let h = on_proxy_01.run_plan(&on_proxy_01.plan(seed));
        for v in checkers::check_all(&h) {
            assert_ne!(
                v.status,
                Status::Invalid,
                "seed {seed}: {} {}",
                v.property,
                v.message
            );
        }
    }
}

/// A Client that let a submission go (C9: an unkeyed prompt not resent, shown to the user)
/// owes no `ack` for the late answer it reads: every one-fault schedule of the SDK Client's
/// trace leaves the model Client checked, and nothing fails.
#[test]
fn the_model_client_owes_no_ack_for_an_answer_after_it_let_the_submission_go() {
    use acp_chaos::explore::exhaustive;
    let h = Harness::scenario("client-03-sdk-unkeyed-restart").unwrap();
    let plan = h.clone().design(Design::Stored).plan(0);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    let opts = exhaustive::Options {
        faults: 1,
        kinds: exhaustive::default_kinds(&plan),
        shard: None,
        audit: 0,
        stop_at_first: false,
        target: None,
        budget: None,
        merge: exhaustive::Merge::Snapshot,
        orders: false,
    };
    let x = exhaustive::explore(&plan, &opts, &pool);
    assert!(x.explored() > 50);
    let failed: Vec<String> = x
        .violations
        .iter()
        .flat_map(|e| {
            e.verdicts
                .iter()
                .filter(|v| v.status != Status::Valid && v.status != Status::Finding)
        })
        .map(|v| format!("{} {}", v.property, v.message))
        .collect();
    assert!(failed.is_empty(), "{failed:#?}");
}

/// C3 from the frames: a Client whose wire layer writes one key for every submission while its
/// `attempt` reports keep the keys it chose. Its reports alone look clean; the frames it wrote
/// show one key with two prompts, and P14 blames the Client under C3.
#[test]
fn a_client_whose_reports_hide_a_reused_key_is_blamed_on_c3_from_its_frames() {
    let h = Harness::scenario("swarm-basic")
        .unwrap()
        .design(Design::Stored)
        .client(wire_client_misreporting("undefined"));
    let caught = (0..10).find_map(|seed| {
        let v = verdict(&h, seed, "P14");
        (v.status == Status::Invalid).then_some((seed, v))
    });
    let (seed, v) = caught.expect("a reused key with another prompt within 10 seeds");
    assert_eq!(
        (v.party, v.rules.clone()),
        (Some(Party::Client), vec!["C3".to_string()]),
        "seed {seed}: {}",
        v.message
    );
    assert!(
        v.message.contains("judged from its frames"),
        "{}",
        v.message
    );
    // Its reports never named the key it wrote.
    let history = h.run_plan(&h.plan(seed));
    assert!(!history
        .ops
        .iter()
        .any(|o| o.f == "attempt" && o.value["key"] == "undefined"));
    // The same Client writing the keys it chose: P14 holds on those seeds.
    let honest = Harness::scenario("swarm-basic")
        .unwrap()
        .design(Design::Stored)
        .client(wire_client_writing(None));
    for seed in 0..10 {
        assert_eq!(
            verdict(&honest, seed, "P14").status,
            Status::Valid,
            "seed {seed}"
        );
    }
}

/// A8 from the frames: the keys P8 looks for in what the Agent sends include every key the
/// Client wrote, not only those its `attempt` reports name. A Client whose reports keep the
/// keys it chose while its wire layer writes another, and an Agent that echoes keys in its
/// updates (`key-in-updates`): P8 blames the Agent for the key on the wire.
#[test]
fn an_agent_that_leaks_a_key_its_client_never_reported_is_blamed_on_a8() {
    let h = |mutant: Option<&str>| {
        let h = Harness::scenario("rfd-01-retry-same-connection")
            .unwrap()
            .design(Design::Stored)
            .client(wire_client_misreporting("written-key"));
        match mutant {
            Some(m) => h.mutant(m),
            None => h,
        }
    };
    let v = verdict(&h(Some("key-in-updates")), 0, "P8");
    assert_eq!(
        (v.status, v.party, v.rules.clone()),
        (Status::Invalid, Some(Party::Agent), vec!["A8".to_string()]),
        "{}",
        v.message
    );
    assert!(v.message.contains("\"written-key\""), "{}", v.message);
    assert_eq!(verdict(&h(None), 0, "P8").status, Status::Valid);
}
