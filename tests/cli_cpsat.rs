//! `solvergate run-cpsat` as a person meets it: an answer, an infeasible
//! model, a script that breaks the envelope contract — whole transcripts as
//! snapshots, with the exit codes `run-cpsat --help` documents.

use std::process::Output;

mod common;
use common::{Home, assert_memory_breach, test_python, transcript};

const SCRIPT: &str = r#"import json, sys
from ortools.sat.python import cp_model
cap = int(sys.argv[1])
model = cp_model.CpModel()
x = model.NewIntVar(0, 10, "x")
model.Add(x <= cap)
model.Maximize(x)
solver = cp_model.CpSolver()
status = solver.Solve(model)
if status == cp_model.INFEASIBLE:
    print(json.dumps({"status": "infeasible", "objective": None, "solution": {}}))
else:
    print(json.dumps({"status": "optimal", "objective": solver.ObjectiveValue(), "solution": {"x": solver.Value(x)}}))
"#;

/// A home whose interpreter is the test Python, named by the variable.
fn cpsat_home() -> Home {
    Home::new().with_env("SOLVERGATE_CPSAT_PYTHON", test_python())
}

fn snapshot(name: &str, home: &Home, output: &Output) {
    let transcript = transcript(output);
    home.snapshot_settings()
        .bind(|| insta::assert_snapshot!(name, transcript));
}

#[test]
fn run_cpsat_outcomes() {
    let home = cpsat_home();
    let script = home.path().join("cap.py");
    std::fs::write(&script, SCRIPT).unwrap();
    let broken = home.path().join("broken.py");
    std::fs::write(&broken, "print('no envelope here')\n").unwrap();
    let script = script.to_str().unwrap();
    let cases = [
        ("run_cpsat_optimal", vec!["run-cpsat", script, "--", "4"], 0),
        (
            "run_cpsat_infeasible",
            vec!["run-cpsat", script, "--", "-1"],
            3,
        ),
        (
            "run_cpsat_no_envelope",
            vec!["run-cpsat", broken.to_str().unwrap()],
            4,
        ),
        (
            "run_cpsat_missing_script",
            vec!["run-cpsat", "/nonexistent/model.py"],
            1,
        ),
    ];
    for (name, args, code) in cases {
        let output = home.run(&args);
        snapshot(name, &home, &output);
        assert_eq!(output.status.code(), Some(code), "{name}");
    }
}

/// One checker per verdict, each reading the answer's `x` from the payload.
const CHECKERS: &[(&str, &str, i32)] = &[
    (
        "accepted",
        "import json, sys\nx = json.load(open(sys.argv[1]))['solution']['x']\nprint(json.dumps({'status': 'accepted' if x <= 4 else 'rejected', 'errors': [] if x <= 4 else ['x > 4']}))\n",
        0,
    ),
    (
        "rejected",
        "import json, sys\nprint(json.dumps({'status': 'rejected', 'errors': ['x must be odd']}))\n",
        6,
    ),
    (
        "error",
        "import json, sys\nx = json.load(open(sys.argv[1]))['solution']['y']\n",
        6,
    ),
    ("no_verdict", "print('looks fine to me')\n", 6),
    (
        "duplicate_key",
        "print('{\"status\": \"rejected\", \"status\": \"accepted\", \"errors\": []}')\n",
        6,
    ),
    ("timeout", "import time\ntime.sleep(30)\n", 6),
];

#[test]
fn run_cpsat_with_a_checker_exits_6_unless_it_accepts() {
    let home = cpsat_home();
    let script = home.path().join("cap.py");
    std::fs::write(&script, SCRIPT).unwrap();
    let script = script.to_str().unwrap();
    for (verdict, source, code) in CHECKERS {
        let checker = home.path().join(format!("{verdict}.py"));
        std::fs::write(&checker, source).unwrap();
        let args = vec![
            "run-cpsat",
            script,
            "--timeout-ms",
            "3000",
            "--checker",
            checker.to_str().unwrap(),
            "--",
            "4",
        ];
        let output = home.run(&args);
        let name = format!("run_cpsat_checker_{verdict}");
        snapshot(&name, &home, &output);
        assert_eq!(output.status.code(), Some(*code), "{name}");
    }
}

/// `--memory-limit-mb` lowers the memory limit of the run: a script that
/// allocates 1 GiB ends `resource_limit` at 256 MiB, under whichever
/// mechanism the host offers; a zero is a usage error before anything runs.
#[test]
fn run_cpsat_limit_flags_lower_the_limits() {
    let home = cpsat_home();
    let script = home.path().join("hog.py");
    std::fs::write(
        &script,
        "data = b'x' * (1024 ** 3)\nprint('{\"status\": \"feasible\", \"objective\": null, \"solution\": {}}')\n",
    )
    .unwrap();
    let script = script.to_str().unwrap();
    let output = home.run(&["run-cpsat", script, "--memory-limit-mb", "256", "--json"]);
    assert_eq!(output.status.code(), Some(4), "{}", transcript(&output));
    let result: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_memory_breach(&result, 256);

    let zero = home.run(&["run-cpsat", script, "--max-processes", "0"]);
    snapshot("run_cpsat_zero_limit", &home, &zero);
    assert_eq!(zero.status.code(), Some(2));
}
