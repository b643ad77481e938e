//! `solvergate plan` as a person sees it, on the real runtime: the sample
//! cohort, its table and its narration, and bad input — whole transcripts
//! pinned as snapshots (ids and solver names filtered).

use std::path::PathBuf;
use std::process::{Command, Output};

mod common;
use common::{Home, REPLAY_VERSIONS, test_runtime, transcript};

fn snapshot(home: &Home, name: &str, output: &Output) {
    let mut settings = home.snapshot_settings();
    settings.add_filter(r"[0-9a-f]{64}", "[RESULT_ID]");
    settings.add_filter(r"org(\.[a-z]+)+", "[SOLVER]");
    settings.bind(|| insta::assert_snapshot!(name, transcript(output)));
}

fn example(home: &Home) -> String {
    let output = home.run(&["plan", "--example"]);
    assert_eq!(output.status.code(), Some(0));
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn the_sample_cohort_plans_and_explains() {
    let home = Home::new().on_test_runtime();
    let cohort = example(&home);
    let output = home.run_with_stdin(&["plan"], &cohort);
    snapshot(&home, "plan_table", &output);
    assert_eq!(output.status.code(), Some(0));

    let output = home.run_with_stdin(&["plan", "--explain"], &cohort);
    snapshot(&home, "plan_explain", &output);
    assert_eq!(output.status.code(), Some(0));

    let output = home.run_with_stdin(&["plan", "--json"], &cohort);
    let result: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(result["result"]["recommended"], "optimised");
    let stored = home
        .path()
        .join("data/solvergate/planner")
        .join(format!("{}.json", result["result_id"].as_str().unwrap()));
    assert!(stored.is_file(), "{}", stored.display());
}

#[test]
fn bad_input_says_what_is_wrong() {
    let home = Home::new().on_test_runtime();
    let output = home.run_with_stdin(&["plan"], "");
    snapshot(&home, "plan_empty_input", &output);
    assert_eq!(output.status.code(), Some(1));

    let cohort = example(&home).replace("\"length_cm\": 120", "\"length_cm\": -120");
    let output = home.run_with_stdin(&["plan"], &cohort);
    snapshot(&home, "plan_negative_dimension", &output);
    assert_eq!(output.status.code(), Some(1));

    // A problem file that cannot be read: what, then why.
    let output = home.run(&["plan", home.path().to_str().unwrap()]);
    snapshot(&home, "plan_unreadable_file", &output);
    assert_eq!(output.status.code(), Some(1));
}

#[test]
fn a_saved_plan_replays_from_the_terminal() {
    let home = Home::new().on_test_runtime();
    let cohort = home.path().join("cohort.json");
    std::fs::write(&cohort, example(&home)).unwrap();
    let target = home.path().join("saved-plan");
    let output = home.run(&[
        "plan",
        cohort.to_str().unwrap(),
        "--save",
        target.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", transcript(&output));
    assert!(target.join(".solvergate-artifact.json").is_file());
    let output = home.run(&["replay", target.to_str().unwrap()]);
    let mut settings = home.snapshot_settings();
    let (versions, replacement) = REPLAY_VERSIONS;
    settings.add_filter(versions, replacement);
    settings.bind(|| insta::assert_snapshot!("plan_replay", transcript(&output)));
    assert_eq!(output.status.code(), Some(0));
}

#[test]
fn the_bundled_model_runs_with_plain_minizinc() {
    let home = Home::new().on_test_runtime();
    let cohort = home.path().join("cohort.json");
    std::fs::write(&cohort, example(&home)).unwrap();
    let output = home.run(&["plan", "--minizinc-data", cohort.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", transcript(&output));
    let data = home.path().join("data.json");
    std::fs::write(&data, &output.stdout).unwrap();
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let solved = Command::new(test_runtime().join("bin/minizinc"))
        .args(["--solver", "gecode"])
        .arg(repo.join("models/load_planner/model.mzn"))
        .arg(&data)
        .arg(repo.join("checkers/load_planner.mzc.mzn"))
        .output()
        .unwrap();
    assert!(solved.status.success(), "{}", transcript(&solved));
    let stdout = String::from_utf8_lossy(&solved.stdout);
    assert!(stdout.contains("% CORRECT"), "{stdout}");
    assert!(stdout.contains("total_cents = 441200;"), "{stdout}");
    assert!(stdout.contains("=========="), "{stdout}");
}
