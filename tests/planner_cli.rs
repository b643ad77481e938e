//! `solvergate plan` as a person sees it, on the real runtime: the sample
//! cohort, its table and its narration, and bad input — whole transcripts
//! pinned as snapshots (ids and solver names filtered).

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

mod common;
use common::{test_runtime, transcript};

struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Home {
        Home {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn run(&self, args: &[&str], stdin: Option<&str>) -> Output {
        let runtime = test_runtime();
        let mut child = Command::new(env!("CARGO_BIN_EXE_solvergate"))
            .arg("--runtime-dir")
            .arg(&runtime)
            .args(args)
            .env("XDG_CONFIG_HOME", self.dir.path().join("config"))
            .env("XDG_DATA_HOME", self.dir.path().join("data"))
            .env("HOME", self.dir.path())
            .env_remove("SOLVERGATE_RUNTIME_DIR")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut input = child.stdin.take().unwrap();
        if let Some(text) = stdin {
            input.write_all(text.as_bytes()).unwrap();
        }
        drop(input);
        child.wait_with_output().unwrap()
    }
}

fn snapshot(name: &str, output: &Output) {
    insta::with_settings!({
        filters => vec![
            (r"[0-9a-f]{64}", "[RESULT_ID]"),
            (r"org(\.[a-z]+)+", "[SOLVER]"),
        ],
    }, {
        insta::assert_snapshot!(name, transcript(output));
    });
}

fn example(home: &Home) -> String {
    let output = home.run(&["plan", "--example"], None);
    assert_eq!(output.status.code(), Some(0));
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn the_sample_cohort_plans_and_explains() {
    let home = Home::new();
    let cohort = example(&home);
    let output = home.run(&["plan"], Some(&cohort));
    snapshot("plan_table", &output);
    assert_eq!(output.status.code(), Some(0));

    let output = home.run(&["plan", "--explain"], Some(&cohort));
    snapshot("plan_explain", &output);
    assert_eq!(output.status.code(), Some(0));

    let output = home.run(&["plan", "--json"], Some(&cohort));
    let result: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(result["result"]["recommended"], "optimised");
    let stored = home
        .dir
        .path()
        .join("data/solvergate/planner")
        .join(format!("{}.json", result["result_id"].as_str().unwrap()));
    assert!(stored.is_file(), "{}", stored.display());
}

#[test]
fn bad_input_says_what_is_wrong() {
    let home = Home::new();
    let output = home.run(&["plan"], Some(""));
    snapshot("plan_empty_input", &output);
    assert_eq!(output.status.code(), Some(1));

    let cohort = example(&home).replace("\"length_cm\": 120", "\"length_cm\": -120");
    let output = home.run(&["plan"], Some(&cohort));
    snapshot("plan_negative_dimension", &output);
    assert_eq!(output.status.code(), Some(1));
}

#[test]
fn a_saved_plan_replays_from_the_terminal() {
    let home = Home::new();
    let cohort = home.dir.path().join("cohort.json");
    std::fs::write(&cohort, example(&home)).unwrap();
    let target = home.dir.path().join("saved-plan");
    let output = home.run(
        &[
            "plan",
            cohort.to_str().unwrap(),
            "--save",
            target.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(output.status.code(), Some(0), "{}", transcript(&output));
    assert!(target.join(".solvergate-artifact.json").is_file());
    let output = home.run(&["replay", target.to_str().unwrap()], None);
    let home_path = home.dir.path().to_string_lossy().into_owned();
    insta::with_settings!({
        filters => vec![
            (home_path.as_str(), "[HOME]"),
            (r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", "[TIME]"),
            (r"runtime: .* at the save, .* now", "runtime: [VERSION] at the save, [VERSION] now"),
        ],
    }, {
        insta::assert_snapshot!("plan_replay", transcript(&output));
    });
    assert_eq!(output.status.code(), Some(0));
}

#[test]
fn the_bundled_model_runs_with_plain_minizinc() {
    let home = Home::new();
    let cohort = home.dir.path().join("cohort.json");
    std::fs::write(&cohort, example(&home)).unwrap();
    let output = home.run(&["plan", "--minizinc-data", cohort.to_str().unwrap()], None);
    assert_eq!(output.status.code(), Some(0), "{}", transcript(&output));
    let data = home.dir.path().join("data.json");
    std::fs::write(&data, &output.stdout).unwrap();
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let solved = Command::new(test_runtime().join("bin/minizinc"))
        .args(["--solver", "gecode"])
        .arg(repo.join("models/load_planner/model.mzn"))
        .arg(&data)
        .arg(repo.join("checkers/load_planner.mzc.mzn"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&solved.stdout);
    assert!(solved.status.success(), "{stdout}");
    assert!(stdout.contains("% CORRECT"), "{stdout}");
    assert!(stdout.contains("total_cents = 441200;"), "{stdout}");
    assert!(stdout.contains("=========="), "{stdout}");
}
