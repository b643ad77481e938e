//! `solvergate plan` as a person sees it, on the real runtime: the sample
//! cohort, its table and its narration, and bad input — whole transcripts
//! pinned as snapshots (ids and solver names filtered).

use std::path::PathBuf;
use std::process::{Command, Output};

mod common;
use common::{Home, REPLAY_VERSIONS, per_runtime, test_runtime, transcript};

fn snapshot(home: &Home, name: &str, output: &Output) {
    let mut settings = home.snapshot_settings();
    settings.add_filter(r"[0-9a-f]{64}", "[RESULT_ID]");
    settings.add_filter(r"org(\.[a-z-]+)+", "[SOLVER]");
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

/// The bundled checker confirms the policy: a hand-made plan of the sample
/// cohort whose chance of any miss is over it (PO-1002 by sea
/// consolidation, with its 0.05, beside the air 0.03 and the containers'
/// 0.03: 1 − 0.97 × 0.95 × 0.97 ≈ 0.106 > 0.1) is refused for that reason
/// alone, while the same plan passes when the policy bounds nothing.
#[test]
fn the_checker_refuses_a_plan_over_the_policy() {
    let home = Home::new().on_test_runtime();
    let cohort = home.path().join("cohort.json");
    std::fs::write(&cohort, example(&home)).unwrap();
    let output = home.run(&["plan", "--minizinc-data", cohort.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", transcript(&output));
    let data: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        data["miss_budget"], 105_360,
        "-ln(0.9) in millionths, rounded down"
    );
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let minizinc = |files: &[&std::path::Path]| {
        let output = Command::new(test_runtime().join("bin/minizinc"))
            .args(["--solver", "gecode"])
            .args(files)
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", transcript(&output));
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    // The plan, with its costs from the model itself: each order allowed
    // only its hand-picked mode, and no policy.
    let mut pinned = data.clone();
    pinned["allowed"] = serde_json::json!([
        [true, false, false],
        [false, true, false],
        [false, false, true],
        [false, false, true]
    ]);
    pinned["miss_budget"] = serde_json::json!(-1);
    let pinned_path = home.path().join("pinned.json");
    std::fs::write(&pinned_path, pinned.to_string()).unwrap();
    let solved = minizinc(&[&repo.join("models/load_planner/model.mzn"), &pinned_path]);
    // Four orders, four classes of one order each, in input order.
    let compact: String = solved.split_whitespace().collect();
    assert!(
        compact.contains("count=[|1,0,0|0,1,0|0,0,1|0,0,1|];"),
        "{solved}"
    );
    let plan: String = solved
        .lines()
        .filter(|line| !line.starts_with("---") && !line.starts_with("==="))
        .map(|line| format!("{line}\n"))
        .collect();
    let plan_path = home.path().join("plan.dzn");
    std::fs::write(&plan_path, plan).unwrap();
    // The checker as a plain model: data and plan in, verdict out.
    let checker = home.path().join("checker.mzn");
    std::fs::copy(repo.join("checkers/load_planner.mzc.mzn"), &checker).unwrap();
    let data_path = home.path().join("data.json");
    std::fs::write(&data_path, data.to_string()).unwrap();
    let verdict = minizinc(&[&checker, &data_path, &plan_path]);
    assert!(
        verdict.contains("INCORRECT: the plan breaks the policy"),
        "{verdict}"
    );
    assert!(
        !verdict.contains("not allowed") && !verdict.contains("differ"),
        "{verdict}"
    );
    let mut unbounded = data.clone();
    unbounded["miss_budget"] = serde_json::json!(-1);
    std::fs::write(&data_path, unbounded.to_string()).unwrap();
    let verdict = minizinc(&[&checker, &data_path, &plan_path]);
    assert!(
        verdict.contains("CORRECT") && !verdict.contains("INCORRECT"),
        "{verdict}"
    );
}

/// The sample cohort under a policy of 0.02: PO-1001 can only fly, and by
/// air its 6-day deadline is missed with 0.03, so no plan meets the policy;
/// the optimised plan is the least risky one (every other order with no
/// chance of a miss), the cheapest of those, and the table, the narration
/// and the notes say so.
#[test]
fn when_no_plan_meets_the_policy_the_least_risky_is_recommended_in_words() {
    let home = Home::new().on_test_runtime();
    let cohort = example(&home).replace(
        "\"max_miss_probability\": 0.1",
        "\"max_miss_probability\": 0.02",
    );
    assert!(cohort.contains("0.02"), "{cohort}");
    let output = home.run_with_stdin(&["plan"], &cohort);
    snapshot(&home, "plan_least_risky_table", &output);
    assert_eq!(output.status.code(), Some(0));
    let output = home.run_with_stdin(&["plan", "--explain"], &cohort);
    snapshot(&home, "plan_least_risky_explain", &output);
    assert_eq!(output.status.code(), Some(0));
    let output = home.run_with_stdin(&["plan", "--json"], &cohort);
    let result: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let optimised = &result["result"]["cards"][3];
    assert_eq!(optimised["objective"], "least_risky", "{optimised}");
    assert_eq!(optimised["within_policy"], false, "{optimised}");
    assert_eq!(optimised["miss_probability"], 0.03, "{optimised}");
    assert_eq!(result["result"]["recommended"], "optimised");
}

/// The issue's cohort: 30 EUR pallets of 139 cm and 500 kg, which the
/// packer puts 11 to a 20ft and 25 to a 40ft. The containers are one of
/// each (5,700), not the 7,900 of two 20ft and a 40ft that an estimate from
/// the mean fill booked, and the table and the narration show the mix
/// beside each type alone; sea consolidation priced high, so the optimised
/// plan takes the containers too.
#[test]
fn full_containers_are_the_cheapest_mix_in_the_table_and_in_words() {
    let home = Home::new().on_test_runtime();
    let cohort = serde_json::json!({
        "orders": [{"id": "E-1", "deadline_days": 45, "pallets": [
            {"length_cm": 120, "width_cm": 80, "height_cm": 139, "weight_kg": 500, "count": 30}
        ]}],
        "rates": {
            "air": {"per_kg": 4.2, "min_charge": 150, "volumetric_divisor": 6000, "transit_days": 3},
            "lcl": {"per_cbm": 900, "min_cbm": 1, "transit_days": 30},
            "fcl": {"transit_days": 28, "containers": [
                {"type": "20ft", "length_cm": 589, "width_cm": 235, "height_cm": 239, "max_payload_kg": 28000, "price": 2200},
                {"type": "40ft", "length_cm": 1203, "width_cm": 235, "height_cm": 239, "max_payload_kg": 26500, "price": 3500}
            ]}
        }
    })
    .to_string();
    let output = home.run_with_stdin(&["plan"], &cohort);
    snapshot(&home, "plan_cheapest_mix_table", &output);
    assert_eq!(output.status.code(), Some(0));
    let output = home.run_with_stdin(&["plan", "--explain"], &cohort);
    snapshot(&home, "plan_cheapest_mix_explain", &output);
    assert_eq!(output.status.code(), Some(0));
}

/// A plan of 200,000 pallets (the limit) takes seconds: on a terminal its
/// steps show on a status line; on a pipe nothing but the table is
/// printed. The table of a generated cohort is pinned whole.
#[test]
fn a_large_plan_shows_its_steps_on_a_terminal_only() {
    let home = Home::new().on_test_runtime();
    let output = home.run(&["plan", "--example", "--pallets", "200000"]);
    assert_eq!(output.status.code(), Some(0), "{}", transcript(&output));
    let cohort = home.path().join("cohort.json");
    std::fs::write(&cohort, &output.stdout).unwrap();
    let path = cohort.to_str().unwrap();

    let on_a_terminal = home
        .on_a_terminal(&["plan", path])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("util-linux script must be installed");
    let seen = String::from_utf8_lossy(&on_a_terminal.stdout);
    assert!(seen.contains("/4] solving the four plans"), "{seen}");
    assert!(seen.contains("* recommended: optimised"), "{seen}");

    let on_a_pipe = home.run(&["plan", path]);
    assert_eq!(
        on_a_pipe.status.code(),
        Some(0),
        "{}",
        transcript(&on_a_pipe)
    );
    assert!(on_a_pipe.stderr.is_empty(), "{}", transcript(&on_a_pipe));
    // Gecode stops at its failure budget; a MIP solver (2.9's COIN-BC)
    // proves its optimum. The model's estimate of what a container holds
    // leads each to its own plan, whose containers the packer then
    // confirms (or books again): one table per runtime.
    let table = String::from_utf8_lossy(&on_a_pipe.stdout);
    let stopped =
        "note: the free solve stopped at its search limit (90909 failures of Gecode's search)";
    assert_eq!(
        table.contains(stopped),
        table.contains("(solved by org.gecode.gecode)"),
        "{table}"
    );
    let mut settings = home.snapshot_settings();
    settings.add_filter(r"[0-9a-f]{64}", "[RESULT_ID]");
    per_runtime(&mut settings);
    settings.bind(|| insta::assert_snapshot!("plan_generated_200000", transcript(&on_a_pipe)));
}

/// Above the limits the same clear error as ever, naming the limit.
#[test]
fn a_cohort_over_the_limits_is_refused_with_the_limit_named() {
    let home = Home::new().on_test_runtime();
    let output = home.run(&["plan", "--example", "--pallets", "200000"]);
    let mut cohort: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    cohort["orders"][0]["pallets"][0]["count"] = serde_json::json!(21);
    let output = home.run_with_stdin(&["plan"], &cohort.to_string());
    snapshot(&home, "plan_too_many_pallets", &output);
    assert_eq!(output.status.code(), Some(1));
    let output = home.run(&["plan", "--example", "--pallets", "200001"]);
    snapshot(&home, "plan_example_over_the_limit", &output);
    assert_eq!(output.status.code(), Some(2));
}
