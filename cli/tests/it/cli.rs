//! The binary's contract: exit codes, error messages, the repro line.

use crate::common;

use std::process::Command;

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_acp-chaos"));
    c.env("ACP_CHAOS_SCENARIOS", common::scenarios_dir());
    c
}

/// `run FILE --seeds 1`, asserted to exit 2: its stderr.
fn refused(file: &std::path::Path) -> String {
    let out = bin()
        .args(["run", file.to_str().unwrap(), "--seeds", "1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{err}");
    err
}

#[test]
fn malformed_scenario_exits_2_naming_file_line_and_field() {
    let dir = std::env::temp_dir().join("acp-chaos-bad-scenario");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.toml");
    std::fs::write(&path, "summary = \"x\"\n\n[workload]\nsubmisions = 3\n").unwrap();
    let err = refused(&path);
    assert!(err.contains("bad.toml:4:"), "{err}");
    assert!(err.contains("submisions"), "{err}");

    std::fs::write(&path, "summary = \"x\"\n[[fault]]\nkind = \"stall-frame\"\non = { frame = \"response\", method = \"session/prompt\" }\n").unwrap();
    let err = refused(&path);
    assert!(
        err.contains("bad.toml:2:") && err.contains("stall_ms"),
        "{err}"
    );
}

#[test]
fn unknown_mutant_and_unknown_scenario_exit_2() {
    let out = bin()
        .args(["run", "--mutant", "nope", "--seeds", "1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = bin()
        .args(["replay", "no-such-scenario", "--seed", "1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = bin().args(["run", "--seeds", "x"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn mutant_run_exits_1_and_its_repro_line_replays_identically() {
    let outdir = std::env::temp_dir().join("acp-chaos-cli-mutant");
    let out = bin()
        .args([
            "run",
            "rfd-03-retry-after-agent-restart",
            "--seeds",
            "2",
            "--mutant",
            "record-unsynced",
            "--out",
        ])
        .arg(&outdir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let line = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("repro: "))
        .expect("a repro line")
        .to_string();
    assert!(line.contains("--mutant record-unsynced"), "{line}");
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(outdir.join("summary.json")).unwrap()).unwrap();
    assert!(summary["failures"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["property"] == "P11" && f["party"] == "agent"));
    let seed = line
        .split("--seed ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap();
    let run_dir = outdir.join(format!(
        "rfd-03-retry-after-agent-restart-stored-seed{seed}"
    ));
    assert!(run_dir.join("history.jsonl").exists() && run_dir.join("repro.txt").exists());

    let args: Vec<&str> = line.split_whitespace().skip(1).collect();
    let a = bin().args(&args).output().unwrap();
    let b = bin().args(&args).output().unwrap();
    assert_eq!(a.status.code(), Some(1));
    assert_eq!(a.stdout, b.stdout, "replay is not deterministic");
    let a_text = String::from_utf8_lossy(&a.stdout);
    assert!(
        a_text.contains("verdict P11 durability: invalid (party agent"),
        "{a_text}"
    );

    // `check` re-runs the checkers on the stored history, without simulating.
    let c = bin().arg("check").arg(&run_dir).output().unwrap();
    assert_eq!(c.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&c.stdout).contains("verdict P11 durability: invalid"));
}

#[test]
fn list_names_every_mutant_and_scenario() {
    let out = bin().arg("list").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let t = String::from_utf8_lossy(&out.stdout);
    for m in acp_chaos::models::mutant::MUTANTS {
        assert!(t.contains(m.name), "{t}");
    }
    assert!(t.contains("swarm-basic") && t.contains("rfd-07-retry-inserted-during-active-work"));
}

#[test]
fn out_folder_with_foreign_files_is_refused_and_kept() {
    let dir = std::env::temp_dir().join("acp-chaos-victim");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("notes.txt"), "mine").unwrap();
    let out = bin()
        .args([
            "run",
            "rfd-01-retry-same-connection",
            "--seeds",
            "1",
            "--out",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("notes.txt"));
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.txt")).unwrap(),
        "mine"
    );
}

#[test]
fn a_mutant_whose_designs_are_narrowed_away_is_a_usage_error_not_a_pass() {
    let out = bin()
        .args([
            "--agent",
            "stored",
            "--mutant",
            "cluster-node-local-keys",
            "--seeds",
            "1",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("nothing to run"), "{err}");
}

#[test]
fn a_cluster_only_fault_on_other_designs_is_refused() {
    let dir = std::env::temp_dir().join("acp-chaos-cluster-only");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("store.toml");
    std::fs::write(
        &path,
        "summary = \"x\"\n[[fault]]\nkind = \"crash-store\"\non = { at_ms = 5 }\nrestart_after_ms = 5\n",
    )
    .unwrap();
    let err = refused(&path);
    assert!(
        err.contains("store.toml:2:") && err.contains("cluster"),
        "{err}"
    );
    // The same question (`FaultKind::reach`) for every kind that needs a part of the topology,
    // in a scenario file: a proxy, a single process's log.
    for (name, body, says) in [
        (
            "proxy.toml",
            "summary = \"x\"\n[[fault]]\nkind = \"crash-proxy\"\non = { at_ms = 5 }\nrestart_after_ms = 5\n",
            "crash-proxy needs a proxy; set `topology.proxy = true`",
        ),
        (
            "disk.toml",
            "summary = \"x\"\n[agent]\ndesigns = [\"stored\", \"cluster\"]\n[[fault]]\nkind = \"flip-bit\"\non = { at_ms = 5 }\nrestart_after_ms = 5\n",
            "flip-bit needs a single-process design (the cluster's nodes keep no log), and the scenario runs it under the cluster design",
        ),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, body).unwrap();
        let out = bin()
            .args(["run", path.to_str().unwrap(), "--seeds", "1"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert!(err.contains(says), "{name}: {err}");
    }
    // `replay` and `shrink` under a design the scenario's faults cannot run under: refused,
    // not a run whose schedule file `replay --schedule` would then refuse.
    for cmd in ["replay", "shrink"] {
        let out = bin()
            .args([
                cmd,
                "cluster-03-remote-exchange-lost",
                "--agent",
                "stored",
                "--seed",
                "0",
            ])
            .current_dir(&dir)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{cmd}: {err}");
        assert!(
            err.contains("--agent stored: cluster-03-remote-exchange-lost cannot run under it")
                && err.contains("needs the cluster design")
                && err.contains("its designs: cluster"),
            "{cmd}: {err}"
        );
    }
    // A schedule file asks the same question as a scenario file (`Plan::check`).
    let mut plan = acp_chaos::plan::Plan::derive(
        &common::scenario("cluster-03-remote-exchange-lost"),
        0,
        None,
        acp_chaos::models::Design::Cluster,
    );
    assert_eq!(plan.check(), None);
    plan.agent.design = acp_chaos::models::Design::Stored;
    plan.nodes = 0;
    let e = plan.check().expect("refused");
    assert!(e.contains("lose-exchange needs the cluster design"), "{e}");
}

#[test]
fn shrink_save_adds_a_regression_that_a_campaign_replays_first() {
    let dir = std::env::temp_dir().join("acp-chaos-cli-corpus");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let name = "rfd-03-retry-after-agent-restart";
    std::fs::copy(
        common::scenarios_dir().join(format!("{name}.toml")),
        dir.join(format!("{name}.toml")),
    )
    .unwrap();
    let out = bin()
        .env("ACP_CHAOS_SCENARIOS", &dir)
        .args([
            "shrink", name, "--seed", "0", "--mutant", "no-dedup", "--agent", "stored", "--save",
        ])
        .current_dir(&dir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let saved = acp_chaos::explore::regression::load_dir(&dir.join("regressions")).unwrap();
    assert_eq!(saved.len(), 1, "{text}");
    assert_eq!(saved[0].expect.property.as_deref(), Some("P1"));
    // Its report went to reports/shrunk, not into the corpus folder.
    assert!(dir.join("reports/shrunk").read_dir().unwrap().count() >= 2);
    let run = bin()
        .env("ACP_CHAOS_SCENARIOS", &dir)
        .args(["run", name, "--seeds", "1", "--no-progress", "--out"])
        .arg(dir.join("out"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&run.stdout);
    assert!(text.contains("regression corpus: 1 schedules"), "{text}");
    assert!(text.contains("regressions: 1 of 1 hold"), "{text}");
}

#[test]
fn explore_prints_a_replay_line_that_reproduces_and_refuses_bad_arguments() {
    let out_dir = std::env::temp_dir().join("acp-chaos-cli-explore");
    let _ = std::fs::remove_dir_all(&out_dir);
    let out = bin()
        .args([
            "explore",
            "rfd-02-retry-after-resume-new-connection",
            "--agent",
            "stored",
            "--faults",
            "1",
            "--mutant",
            "record-unsynced",
            "--stop-at-first",
            "--jobs",
            "2",
            "--out",
            out_dir.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("P11"), "{text}");
    let cert: serde_json::Value = serde_json::from_slice(
        &std::fs::read(out_dir.join("certificate.json")).expect("certificate.json written"),
    )
    .unwrap();
    assert_eq!(cert["exit_code"], 1);
    let replay = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("replay: acp-chaos "))
        .expect("a replay line");
    let args: Vec<&str> = replay.split_whitespace().collect();
    let again = bin().args(&args).output().unwrap();
    let again_text = String::from_utf8_lossy(&again.stdout);
    assert_eq!(again.status.code(), Some(1), "{replay}: {again_text}");
    assert!(again_text.contains("P11"), "{again_text}");

    // A mode the scenario cannot draw for is refused before its report folder is made.
    for mode in ["guided", "swarm", "coverage"] {
        let cwd = common::fresh_dir(&format!("acp-chaos-cli-explore-refused-{mode}"));
        let out = bin()
            .current_dir(&cwd)
            .args(["explore", "rfd-02-retry-after-resume-new-connection"])
            .args(["--mode", mode])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "--mode {mode}");
        assert!(
            std::fs::read_dir(&cwd).unwrap().next().is_none(),
            "--mode {mode} left files in its folder"
        );
    }

    // A foreign --out folder is refused before anything runs, and kept.
    let foreign = std::env::temp_dir().join("acp-chaos-cli-explore-foreign");
    std::fs::create_dir_all(&foreign).unwrap();
    std::fs::write(foreign.join("keep.txt"), "mine").unwrap();
    let foreign_arg = foreign.to_str().unwrap().to_string();
    for bad in [
        vec!["--out", foreign_arg.as_str()],
        vec!["--faults", "4"],
        vec!["--kinds", "lose-frame,bogus"],
        vec!["--jobs", "0"],
        vec!["--budget", "0"],
        vec!["--mode", "guided"],
        vec!["--mutants", "--mode", "swarm"],
    ] {
        let out = bin()
            .args(["explore", "rfd-02-retry-after-resume-new-connection"])
            .args(&bad)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {err}");
        assert!(
            !err.is_empty() && !err.contains("panicked"),
            "{bad:?}: {err}"
        );
    }
    assert!(
        foreign.join("keep.txt").exists(),
        "the foreign file was touched"
    );
    let _ = std::fs::remove_dir_all(&foreign);
    let _ = std::fs::remove_dir_all(&out_dir);
}

#[test]
fn absurd_seeds_are_refused_and_jobs_are_capped_at_the_machine() {
    // Each used to panic or abort on an allocation ("capacity overflow", a 24 TB Vec).
    for args in [
        vec!["run", "swarm-basic", "--seeds", "18446744073709551615"],
        vec!["run", "swarm-basic", "--seeds", "1000000000000"],
        vec!["mutants", "--seeds", "1000000000000"],
        vec![
            "mutants",
            "--seeds",
            "10",
            "--baseline-seeds",
            "1000000000000",
        ],
        vec!["matrix", "--seeds", "1000000000000"],
        vec!["bench", "--seeds", "1000000000000"],
    ] {
        let out = bin().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("--") && err.contains("at most"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    // More threads than cores: capped, said so, and the run is the same.
    let out_dir = std::env::temp_dir().join("acp-chaos-cli-jobs-capped");
    let _ = std::fs::remove_dir_all(&out_dir);
    let out = bin()
        .args([
            "run",
            "rfd-01-retry-same-connection",
            "--seeds",
            "2",
            "--jobs",
            "100000",
        ])
        .args([
            "--no-progress",
            "--no-regressions",
            "--out",
            out_dir.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("--jobs 100000 is more than"), "{err}");
    let _ = std::fs::remove_dir_all(&out_dir);
}

#[test]
fn bench_vs_measures_both_builds_in_alternating_pairs_and_refuses_a_bad_binary() {
    // The same binary on both sides: two rounds, the order alternating, one JSON report.
    let me = env!("CARGO_BIN_EXE_acp-chaos");
    let out = bin()
        .args([
            "bench",
            "rfd-01-retry-same-connection",
            "--seeds",
            "2",
            "--rounds",
            "2",
            "--vs",
            me,
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("--vs names this binary"), "{text}");
    assert!(
        text.contains("round 1:") && text.contains("(this first)"),
        "{text}"
    );
    assert!(
        text.contains("round 2:") && text.contains("(other first)"),
        "{text}"
    );
    let report: serde_json::Value =
        serde_json::from_str(text.lines().last().unwrap()).expect("the last line is the report");
    assert_eq!(report["ratios"].as_array().unwrap().len(), 2, "{report}");
    for side in ["this", "other"] {
        let figures = report[side]["seeds_per_s_per_core"].as_array().unwrap();
        assert!(
            figures.iter().all(|f| f.as_f64().unwrap() > 0.0),
            "{report}"
        );
    }
    // Both builds were handed the scenario folder, so they measure the same files.
    assert!(
        report["args"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a == "--scenarios"),
        "{report}"
    );
    // Without `--vs`, rounds in this process and their median; no rounds is a usage error.
    let out = bin()
        .args([
            "bench",
            "rfd-01-retry-same-connection",
            "--seeds",
            "1",
            "--rounds",
            "2",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("median of 2 rounds"), "{text}");
    let summary: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(
        summary["seeds_per_s_per_core_rounds"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let out = bin().args(["bench", "--rounds", "0"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    // A path that is not a binary, and a binary that is not acp-chaos: exit 2, named.
    // A folder; a program that reports no speed (a ratio of it would shift the median).
    let dir = std::env::temp_dir().join("acp-chaos-cli-bench-vs");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let zero = dir.join("zero.sh");
    std::fs::write(&zero, "#!/bin/sh\necho '{\"seeds_per_s\":0}'\n").unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&zero, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let (dir_s, zero_s) = (dir.display().to_string(), zero.display().to_string());
    for (other, says) in [
        ("/no/such/acp-chaos", "no such file"),
        ("/bin/false", "failed"),
        (dir_s.as_str(), "not a file"),
        (zero_s.as_str(), "not a positive number"),
    ] {
        let out = bin()
            .args(["bench", "--seeds", "1", "--vs", other])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{other}: {err}");
        assert!(err.contains(other) && err.contains(says), "{other}: {err}");
        assert!(!err.contains("panicked"), "{other}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
