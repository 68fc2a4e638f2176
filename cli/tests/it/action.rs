//! `action.yml`, the composite GitHub Action, run here: each `run:` step's commands in order
//! under bash as GitHub runs them (`bash --noprofile --norc -eo pipefail`), with `${{ inputs.* }}`
//! and `${{ steps.*.outputs.* }}` substituted, `GITHUB_OUTPUT`, `GITHUB_PATH` and
//! `GITHUB_STEP_SUMMARY` as temporary files, and `if:` conditions evaluated. `uses:` steps
//! (the cache, the upload) are skipped; the cache counts as hit, so the install step is skipped
//! and the binary under test stands for the cached one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use yaml_rust2::{Yaml, YamlLoader};

/// The repository root (where `action.yml` is).
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `action.yml`, parsed.
fn action() -> Yaml {
    let text = std::fs::read_to_string(repo().join("action.yml")).unwrap();
    YamlLoader::load_from_str(&text)
        .expect("action.yml is YAML")
        .remove(0)
}

/// One step as it ran (or did not).
#[derive(Debug)]
struct Step {
    id: String,
    /// `None`: skipped (a `uses:` step, or its `if:` was false).
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Step {
    /// A step not run.
    fn skipped(id: String) -> Step {
        Step {
            id,
            code: None,
            stdout: String::new(),
            stderr: String::new(),
        }
    }
}

/// What a run of the action did.
#[derive(Debug)]
struct Ran {
    steps: Vec<Step>,
    outputs: BTreeMap<String, BTreeMap<String, String>>,
    /// What the steps appended to `$GITHUB_STEP_SUMMARY`.
    summary: String,
    /// Every step's stdout, in order (the log GitHub reads workflow commands from).
    log: String,
    /// The action failed: some step exited non-zero.
    failed: bool,
}

impl Ran {
    fn step(&self, id: &str) -> &Step {
        self.steps
            .iter()
            .find(|s| s.id == id)
            .unwrap_or_else(|| panic!("no step {id}"))
    }
}

/// Substitute `${{ inputs.X }}` and `${{ steps.X.outputs.Y }}`; any other expression fails
/// the test (the runner here knows only these).
fn substitute(
    text: &str,
    inputs: &BTreeMap<String, String>,
    outputs: &BTreeMap<String, BTreeMap<String, String>>,
) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("${{") {
        out.push_str(&rest[..i]);
        let j = rest[i..].find("}}").expect("closed expression") + i;
        let expr = rest[i + 3..j].trim();
        out.push_str(&value_of(expr, inputs, outputs));
        rest = &rest[j + 2..];
    }
    out.push_str(rest);
    out
}

fn value_of(
    expr: &str,
    inputs: &BTreeMap<String, String>,
    outputs: &BTreeMap<String, BTreeMap<String, String>>,
) -> String {
    if let Some(name) = expr.strip_prefix("inputs.") {
        return inputs
            .get(name)
            .unwrap_or_else(|| panic!("action.yml uses input {name}, which it does not declare"))
            .clone();
    }
    if let Some(rest) = expr.strip_prefix("steps.") {
        let (id, key) = rest.split_once(".outputs.").expect("steps.ID.outputs.KEY");
        return outputs
            .get(id)
            .and_then(|o| o.get(key))
            .cloned()
            .unwrap_or_default();
    }
    panic!("an expression this runner does not know: {expr}");
}

/// An `if:` condition: `always()`, or `steps.X.outputs.Y == 'V'` / `!= 'V'`.
fn condition(
    expr: &str,
    failed: bool,
    outputs: &BTreeMap<String, BTreeMap<String, String>>,
) -> bool {
    let expr = expr.trim();
    if expr == "always()" {
        return true;
    }
    for (op, want_equal) in [("!=", false), ("==", true)] {
        if let Some((lhs, rhs)) = expr.split_once(op) {
            let got = value_of(lhs.trim(), &BTreeMap::new(), outputs);
            let v = rhs.trim().trim_matches('\'');
            return !failed && ((got == v) == want_equal);
        }
    }
    panic!("an if: this runner does not know: {expr}");
}

/// Run the action in `work` with `given` inputs (the others take their defaults).
fn run_action(work: &Path, given: &[(&str, &str)]) -> Ran {
    let a = action();
    let mut inputs: BTreeMap<String, String> = BTreeMap::new();
    for (k, v) in a["inputs"].as_hash().expect("inputs") {
        let name = k.as_str().unwrap().to_string();
        let default = v["default"].as_str().unwrap_or("").to_string();
        inputs.insert(name, default);
    }
    for (k, v) in given {
        assert!(inputs.contains_key(*k), "no input {k}");
        inputs.insert(k.to_string(), v.to_string());
    }
    assert_eq!(a["runs"]["using"].as_str(), Some("composite"));
    let _ = std::fs::remove_dir_all(work);
    let home = work.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let (summary_file, path_file) = (work.join("step-summary.md"), work.join("github-path"));
    std::fs::write(&summary_file, "").unwrap();
    std::fs::write(&path_file, "").unwrap();
    // The binary under test stands for the one the cache restored.
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_acp-chaos")).parent().unwrap();
    let mut outputs: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    outputs.insert("cache".into(), [("cache-hit".into(), "true".into())].into());
    let (mut steps, mut log, mut failed) = (Vec::new(), String::new(), false);
    for (n, s) in a["runs"]["steps"]
        .as_vec()
        .expect("steps")
        .iter()
        .enumerate()
    {
        let id = s["id"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| format!("step{n}"));
        let run = match (&s["run"], &s["uses"]) {
            (Yaml::String(run), _) => run.clone(),
            (_, Yaml::String(_)) => {
                steps.push(Step::skipped(id));
                continue;
            }
            _ => panic!("step {id} has neither run nor uses"),
        };
        assert_eq!(s["shell"].as_str(), Some("bash"), "step {id}: shell");
        let go = match s["if"].as_str() {
            Some(c) => condition(c, failed, &outputs),
            None => !failed,
        };
        if !go {
            steps.push(Step::skipped(id));
            continue;
        }
        let script = work.join(format!("{id}.sh"));
        std::fs::write(&script, substitute(&run, &inputs, &outputs)).unwrap();
        let output_file = work.join(format!("{id}.output"));
        std::fs::write(&output_file, "").unwrap();
        let extra: Vec<String> = std::fs::read_to_string(&path_file)
            .unwrap()
            .lines()
            .rev()
            .map(str::to_string)
            .collect();
        let path = [extra, vec![bin_dir.display().to_string()]]
            .concat()
            .into_iter()
            .chain(std::env::var("PATH").ok())
            .collect::<Vec<_>>()
            .join(":");
        let mut c = Command::new("bash");
        c.args(["--noprofile", "--norc", "-eo", "pipefail"])
            .arg(&script)
            .current_dir(work)
            .env("PATH", path)
            .env("HOME", &home)
            .env("GITHUB_ACTION_PATH", repo())
            .env("GITHUB_WORKSPACE", work)
            .env("GITHUB_OUTPUT", &output_file)
            .env("GITHUB_PATH", &path_file)
            .env("GITHUB_STEP_SUMMARY", &summary_file)
            .env("RUNNER_OS", "Linux")
            .env("RUNNER_ARCH", "X64")
            .env("RUNNER_TEMP", work)
            .env_remove("ACP_CHAOS_SCENARIOS")
            .env("ACP_CHAOS_NO_PROGRESS", "1");
        if let Some(env) = s["env"].as_hash() {
            for (k, v) in env {
                let v = match v {
                    Yaml::String(v) => v.clone(),
                    Yaml::Integer(i) => i.to_string(),
                    other => panic!("step {id}: env value {other:?}"),
                };
                c.env(k.as_str().unwrap(), substitute(&v, &inputs, &outputs));
            }
        }
        let o = c.output().unwrap();
        let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
        log.push_str(&stdout);
        let mut outs = BTreeMap::new();
        for l in std::fs::read_to_string(&output_file).unwrap().lines() {
            if let Some((k, v)) = l.split_once('=') {
                outs.insert(k.to_string(), v.to_string());
            }
        }
        outputs.insert(id.clone(), outs);
        let code = o.status.code().unwrap_or(-1);
        failed |= code != 0;
        steps.push(Step {
            id,
            code: Some(code),
            stdout,
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        });
    }
    Ran {
        steps,
        outputs,
        summary: std::fs::read_to_string(&summary_file).unwrap(),
        log,
        failed,
    }
}

fn work(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("acp-chaos-action-{name}"))
}

#[test]
fn the_install_step_builds_the_checkout_with_cargo_install_locked() {
    let a = action();
    let steps = a["runs"]["steps"].as_vec().unwrap();
    let install = steps
        .iter()
        .find(|s| s["id"].as_str() == Some("install"))
        .expect("an install step");
    let run = install["run"].as_str().unwrap();
    assert!(run.contains("cargo install --locked --path cli"), "{run}");
    assert_eq!(
        install["if"].as_str(),
        Some("steps.cache.outputs.cache-hit != 'true'")
    );
    let cache = steps
        .iter()
        .find(|s| s["id"].as_str() == Some("cache"))
        .unwrap();
    assert!(cache["uses"]
        .as_str()
        .unwrap()
        .starts_with("actions/cache@"));
    assert!(steps.iter().any(|s| s["uses"]
        .as_str()
        .is_some_and(|u| u.starts_with("actions/upload-artifact@"))
        && s["if"].as_str() == Some("always()")));
}

/// The cache key hashes every input of the build, so a change to any of them builds anew:
/// the manifests, the sources, the build script and what it compiles in (the spec, the
/// scenarios), and the vendored turmoil patch.
#[test]
fn the_cache_key_covers_every_build_input() {
    let a = action();
    let steps = a["runs"]["steps"].as_vec().unwrap();
    let key = steps
        .iter()
        .find(|s| s["id"].as_str() == Some("key"))
        .expect("a key step");
    let run = key["run"].as_str().unwrap();
    let find = run
        .lines()
        .find(|l| l.contains("find "))
        .expect("the find line");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    for input in [
        "Cargo.lock",
        "Cargo.toml",
        ".cargo",
        "sim/Cargo.toml",
        "sim/build.rs",
        "sim/src",
        "cli/Cargo.toml",
        "cli/src",
        "models",
        "spec",
        "scenarios",
        "vendor",
    ] {
        assert!(
            root.join(input).exists(),
            "{input} is not in the repository"
        );
        assert!(
            find.split_whitespace().any(|w| w == input),
            "the cache key leaves out {input}: {find}"
        );
    }
}

#[test]
fn a_mutant_campaign_fails_the_action_with_one_annotation_per_failing_group() {
    let w = work("mutant");
    let r = run_action(
        &w,
        &[
            ("scenarios", "rfd-01-retry-same-connection"),
            ("seeds", "2"),
            ("agent", "stored"),
            ("mutant", "no-dedup"),
        ],
    );
    let run = r.step("run");
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    assert_eq!(r.outputs["run"]["exit-code"], "1");
    assert_eq!(r.step("install").code, None, "the cache counts as hit");
    let check = r.step("check");
    assert_eq!(check.code, Some(1), "{}\n{}", check.stdout, check.stderr);
    assert!(r.failed);
    let errors: Vec<&str> = r
        .log
        .lines()
        .filter(|l| l.starts_with("::error "))
        .collect();
    assert!(
        errors
            .iter()
            .any(|l| l.starts_with("::error title=acp-chaos P1 invalid (A1 A4 K4) on stored%2C mutant no-dedup::")
                && l.contains("%0Arepro: acp-chaos replay rfd-01-retry-same-connection --seed 0 --agent stored --mutant no-dedup")),
        "{}",
        r.log
    );
    // One annotation per group: no two with the same title.
    let mut titles: Vec<&str> = errors
        .iter()
        .map(|l| l.split("::").nth(1).unwrap())
        .collect();
    let n = titles.len();
    titles.sort();
    titles.dedup();
    assert_eq!(titles.len(), n, "{}", r.log);
    assert!(r.summary.contains("# acp-chaos campaign"), "{}", r.summary);
    assert!(r.summary.contains("INVALID (exit 1)"), "{}", r.summary);
    assert!(r.summary.contains("## Failing groups"), "{}", r.summary);
    assert!(
        r.summary
            .contains("| P1 invalid | A1 A4 K4 | stored | no-dedup |"),
        "{}",
        r.summary
    );
    assert!(w.join("acp-chaos-report/junit.xml").is_file());
    // The upload step would have run (always()); here it is skipped as every `uses:`.
    assert_eq!(r.outputs["run"]["artifact"], "acp-chaos-report");
}

#[test]
fn the_correct_models_pass_the_action_with_a_summary_and_no_annotation() {
    let r = run_action(
        &work("valid"),
        &[
            ("scenarios", "rfd-01-retry-same-connection"),
            ("seeds", "2"),
            ("agent", "stored"),
        ],
    );
    assert!(!r.failed, "{:#?}", r.steps);
    assert_eq!(r.outputs["run"]["exit-code"], "0");
    assert_eq!(r.step("check").code, Some(0));
    assert!(!r.log.contains("::error"), "{}", r.log);
    assert!(r.summary.contains("No failures"), "{}", r.summary);
}

#[test]
fn a_failing_step_command_fails_the_action_and_skips_the_later_steps() {
    let r = run_action(
        &work("usage"),
        &[("seeds", "2"), ("agent", "no-such-design")],
    );
    assert!(r.failed);
    let run = r.step("run");
    assert_eq!(run.code, Some(2), "{}\n{}", run.stdout, run.stderr);
    assert!(run
        .stdout
        .contains("::error title=acp-chaos usage or input error"));
    assert_eq!(r.step("check").code, None, "skipped after a failure");
    assert_eq!(r.outputs["run"]["exit-code"], "2");
}

#[test]
fn shards_then_a_merge_give_one_report() {
    let w = work("shards");
    let mut dirs = Vec::new();
    for k in 1..=2 {
        let shard = format!("{k}/2");
        let out = w.join(format!("shard-{k}"));
        let r = run_action(
            &w.join(format!("job{k}")),
            &[
                ("scenarios", "rfd-01-retry-same-connection"),
                ("seeds", "2"),
                ("agent", "stored"),
                ("shard", &shard),
                ("out", out.to_str().unwrap()),
            ],
        );
        assert!(!r.failed, "{:#?}", r.steps);
        assert_eq!(
            r.outputs["run"]["artifact"],
            format!("acp-chaos-shard-{k}-of-2")
        );
        dirs.push(out.display().to_string());
    }
    let r = run_action(&w.join("merge"), &[("merge", &dirs.join(" "))]);
    assert!(!r.failed, "{:#?}", r.steps);
    let m = acp_chaos::summary::read_summary(&w.join("merge/acp-chaos-report")).unwrap();
    assert_eq!((m.seeds, m.shard), (2, None));
    assert!(r.summary.contains("No failures"), "{}", r.summary);
}

#[test]
fn a_probe_writes_its_summary_and_fails_the_action_on_a_broken_agent() {
    let agent = format!("{} agent --design stored", env!("CARGO_BIN_EXE_acp-chaos"));
    let args = "--trace retry-after-answer --repeat 1";
    let r = run_action(&work("probe"), &[("probe", &agent), ("probe-args", args)]);
    assert!(!r.failed, "{:#?}", r.steps);
    assert_eq!(r.outputs["run"]["artifact"], "acp-chaos-probe");
    assert!(r.summary.contains("retry-after-answer"), "{}", r.summary);
    assert!(!r.log.contains("::error"), "{}", r.log);

    let broken = format!("{agent} --mutant no-dedup");
    let w = work("probe-mutant");
    let r = run_action(&w, &[("probe", &broken), ("probe-args", args)]);
    assert!(r.failed);
    assert_eq!(r.outputs["run"]["exit-code"], "1", "{:#?}", r.steps);
    assert_eq!(r.step("check").code, Some(1));
    assert!(
        r.log.contains("::error title=acp-chaos probe exit 1::"),
        "{}",
        r.log
    );
    assert!(w.join("acp-chaos-report/junit.xml").is_file());
}

/// The release workflow (`.github/workflows/release.yml`): it builds on a pushed `v*` tag
/// with the locked dependencies, and its package step, run here under bash as GitHub runs it
/// with the binary under test in the build's place, makes a tarball whose checksum verifies
/// and whose binary runs from the unpacked folder.
#[test]
fn the_release_workflow_packages_a_binary_that_runs_from_its_tarball() {
    let text = std::fs::read_to_string(repo().join(".github/workflows/release.yml")).unwrap();
    let wf = YamlLoader::load_from_str(&text)
        .expect("release.yml is YAML")
        .remove(0);
    assert_eq!(wf["on"]["push"]["tags"][0].as_str(), Some("v*"));
    let job = &wf["jobs"]["linux-x86_64"];
    let target = job["env"]["TARGET"].as_str().expect("TARGET").to_string();
    let steps = job["steps"].as_vec().expect("steps");
    let step = |name: &str| {
        steps
            .iter()
            .find(|s| s["name"].as_str() == Some(name))
            .and_then(|s| s["run"].as_str())
            .unwrap_or_else(|| panic!("a `{name}` step"))
            .to_string()
    };
    assert!(
        step("build")
            .contains("cargo build --release --locked --target \"$TARGET\" -p acp-chaos-cli"),
        "{}",
        step("build")
    );
    let dir = work("release");
    let _ = std::fs::remove_dir_all(&dir);
    let bin = dir.join(format!("target/{target}/release"));
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::copy(env!("CARGO_BIN_EXE_acp-chaos"), bin.join("acp-chaos")).unwrap();
    for f in ["LICENSE-MIT", "LICENSE-APACHE", "README.md"] {
        std::fs::copy(repo().join(f), dir.join(f)).unwrap();
    }
    let bash = |script: &str| {
        Command::new("bash")
            .args(["--noprofile", "--norc", "-eo", "pipefail", "-c", script])
            .current_dir(&dir)
            .env("GITHUB_REF_NAME", "v0.0.0-test")
            .env("TARGET", &target)
            .output()
            .unwrap()
    };
    let o = bash(&step("package"));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let name = format!("acp-chaos-v0.0.0-test-{target}");
    let o = bash(&format!(
        "sha256sum -c {name}.tar.gz.sha256 && rm -rf {name} && tar xzf {name}.tar.gz && {name}/acp-chaos list mutants > /dev/null && ls {name}"
    ));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let listed = String::from_utf8_lossy(&o.stdout).to_string();
    for f in ["acp-chaos", "LICENSE-MIT", "LICENSE-APACHE", "README.md"] {
        assert!(
            listed.lines().any(|l| l == f),
            "{f} not in the tarball: {listed}"
        );
    }
}
