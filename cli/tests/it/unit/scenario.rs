//! The unit tests of `sim/src/scenario/mod.rs`.
//! Scenario parsing and validation tests.

mod parse {
    use acp_chaos::scenario::*;
    use std::path::Path;

    fn parse(text: &str) -> Result<Scenario, ScenarioError> {
        Scenario::parse(Path::new("scenarios/x.toml"), text)
    }

    #[test]
    fn a_retention_window_is_in_the_plan_header_only_when_set() {
        let window = "summary = \"s\"\n[agent]\ndesigns = [\"stored\"]\nretention_ms = 500\n";
        for (text, want) in [("summary = \"s\"\n", None), (window, Some(500))] {
            let s = parse(text).unwrap();
            let p = acp_chaos::plan::Plan::derive(&s, 1, None, acp_chaos_models::Design::Stored);
            let v = serde_json::to_value(&p).unwrap();
            assert_eq!(
                v["agent"].get("retention_ms").and_then(|x| x.as_u64()),
                want
            );
            assert_eq!(p.describe()[1].contains("retention_ms=500"), want.is_some());
        }
    }

    #[test]
    fn unknown_field_names_file_line_and_field() {
        let e = parse("summary = \"s\"\n[agent]\nflavour = 1\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("scenarios/x.toml:3:"), "{e}");
        assert!(e.contains("flavour"), "{e}");
    }

    #[test]
    fn bad_fault_names_its_field() {
        let e = parse("summary = \"s\"\n\n[[fault]]\nkind = \"partition\"\non = { at_ms = 5 }\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("scenarios/x.toml:3:"), "{e}");
        assert!(e.contains("heal_after_ms"), "{e}");
        let e = parse("summary = \"s\"\n[[fault]]\nkind = \"explode\"\non = { at_ms = 5 }\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains(":3:") && e.contains("explode"), "{e}");
        // A field given where it does not belong: its own line, in its own entry.
        let text = "summary = \"s\"\n[[fault]]\nkind = \"restart-client\"\non = { at_ms = 5 }\nrestart_after_ms = 10\nreroute = true\n\n[[fault]]\nkind = \"stall-frame\"\non = { frame = \"request\", method = \"session/prompt\", nth = 1 }\nstall_ms = 10\nreroute = true\n";
        let e = parse(text).unwrap_err().to_string();
        assert!(e.starts_with("scenarios/x.toml:12:"), "{e}");
        assert!(e.contains("fault[1].reroute"), "{e}");
    }

    #[test]
    fn bad_settings_are_refused_naming_the_field() {
        for (text, field) in [
            ("summary = \"s\"\nname = \"../up\"\n", "name"),
            ("summary = \"s\"\n[agent]\no4 = \"sideways\"\n", "o4"),
            ("summary = \"s\"\n[workload]\nsubmissions = \"two\"\n", "submissions"),
            ("summary = \"s\"\n[workload]\nsubmissions = 150\n", "safety_ms"),
            ("summary = \"s\"\n[swarm]\nfaults = []\n", "swarm.faults"),
            ("summary = \"s\"\n[swarm]\nper_kind_max = 4000000000\nfaults = [\"partition\"]\n", "per_kind_max"),
            (
                "summary = \"s\"\n[[fault]]\nkind = \"lose-frame\"\non = { frame = \"request\", method = \"session/bogus\" }\n",
                "on.method",
            ),
            (
                "summary = \"s\"\n[[fault]]\nkind = \"lose-frame\"\nstall_ms = 5\non = { frame = \"request\", method = \"session/new\" }\n",
                "stall_ms",
            ),
            ("summary = \"s\"\n[timing]\nsafety_ms = 0\n", "safety_ms"),
            ("summary = \"s\"\n[topology]\nnodes = 9\n", "topology.nodes"),
            ("summary = \"s\"\n[client]\nkind = \"psychic\"\n", "kind"),
            ("summary = \"s\"\n[client]\nunkeyed_rate = 2.0\n", "unkeyed_rate"),
            // A retention window on the default design list, which has `cluster`.
            ("summary = \"s\"\n[agent]\nretention_ms = 500\n", "agent.retention_ms"),
            (
                "summary = \"s\"\n[[fault]]\nkind = \"partition-store\"\nheal_after_ms = 5\non = { point = \"after-receive\" }\n",
                "after-store-write",
            ),
            (
                "summary = \"s\"\n[[fault]]\nkind = \"crash-agent\"\nrestart_after_ms = 5\non = { point = \"after-store-write\" }\n",
                "on.point",
            ),
            (
                "summary = \"s\"\n[[fault]]\nkind = \"crash-store\"\nheal_after_ms = 5\non = { at_ms = 5 }\n",
                "heal_after_ms",
            ),
        ] {
            let e = parse(text).unwrap_err().to_string();
            assert!(e.starts_with("scenarios/x.toml:") && e.contains(field), "{text}: {e}");
        }
        let ok = parse("summary = \"s\"\n[agent]\ndesigns = [\"stored\"]\nretention_ms = 500\n");
        assert_eq!(ok.expect("a window on stored").agent.retention_ms, 500);
        let e = parse("summary = \"s\"\n[agent]\no4 = \"sideways\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("seeded") && e.contains("steer"), "{e}");
    }

    #[test]
    fn defaults_fill_in() {
        let s = parse("summary = \"s\"\n").unwrap();
        assert_eq!(s.name, "x");
        assert_eq!(s.workload.submissions, 1);
        assert_eq!(s.expect, Expect::Valid);
    }
}

mod bad_input {
    use acp_chaos::scenario::Scenario;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 300,
            // Seeded like everything else here, and nothing written to the tree.
            rng_seed: proptest::test_runner::RngSeed::Fixed(0x5EED),
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        /// Arbitrary text to the scenario loader either loads or names the file and a line,
        /// never panics.
        #[test]
        fn arbitrary_text_loads_or_names_file_and_line(text in "\\PC{0,300}") {
            check(&text)?;
        }

        /// Near-valid TOML: real section and field names with arbitrary values.
        #[test]
        fn arbitrary_values_in_real_fields_load_or_name_file_and_line(
            table in prop_oneof![Just("workload"), Just("agent"), Just("timing"), Just("topology"), Just("client"), Just("disk"), Just("swarm")],
            field in prop_oneof![Just("submissions"), Just("gap_ms_max"), Just("designs"), Just("nodes"), Just("transport"), Just("kind"), Just("faults"), Just("block_size"), Just("latency_ms_min"), Just("mix"), Just("repeat_rate")],
            value in prop_oneof![Just("0".to_string()), Just("-1".to_string()), Just("1e400".to_string()), Just("\"x\"".to_string()), Just("[]".to_string()), Just("{}".to_string()), Just("18446744073709551615".to_string()), Just("true".to_string()), any::<i64>().prop_map(|n| n.to_string())],
        ) {
            let text = format!("summary = \"s\"\n[{table}]\n{field} = {value}\n");
            check(&text)?;
        }
    }

    fn check(text: &str) -> Result<(), TestCaseError> {
        match Scenario::parse(std::path::Path::new("fuzz.toml"), text) {
            Ok(_) => Ok(()),
            Err(e) => {
                let m = e.to_string();
                prop_assert!(m.starts_with("fuzz.toml:"), "{}", m);
                Ok(())
            }
        }
    }
}
