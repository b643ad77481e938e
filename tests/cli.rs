//! The command line as a person or a script uses it: runtime resolution and
//! config, solver listing and terminal solves, on the real runtime.

use std::path::Path;
use std::process::Output;

mod common;
use common::{Adopt, Home, test_python, test_runtime, text};

/// A home whose config names the test MiniZinc runtime.
fn adopted() -> Home {
    let home = Home::new();
    home.adopt(Adopt::Minizinc);
    home
}

fn code(output: &Output) -> i32 {
    output.status.code().unwrap_or(-1)
}

#[test]
fn check_runtime_without_a_runtime_says_how_to_get_one() {
    let home = Home::new();
    let output = home.run(&["check-runtime", "--only", "minizinc"]);
    assert_eq!(code(&output), 1);
    let stdout = text(&output.stdout);
    assert!(stdout.contains("not installed"), "{stdout}");
    assert!(stdout.contains("install-runtime"), "{stdout}");
    assert!(stdout.contains("default location"), "{stdout}");
}

#[test]
fn configure_runtime_validates_then_persists() {
    let home = Home::new();
    let missing = home.run(&[
        "configure-runtime",
        "--runtime-dir",
        "/nonexistent/minizinc",
    ]);
    assert_eq!(code(&missing), 1);
    assert!(text(&missing.stderr).contains("no MiniZinc runtime at /nonexistent/minizinc"));
    assert!(
        !home.config_file().exists(),
        "a failed configure must not write the config"
    );

    let runtime = test_runtime();
    let adopted = home.run(&[
        "configure-runtime",
        "--runtime-dir",
        runtime.to_str().unwrap(),
    ]);
    assert_eq!(code(&adopted), 0, "{}", text(&adopted.stderr));
    assert!(text(&adopted.stdout).contains("MiniZinc"));
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(home.config_file()).unwrap()).unwrap();
    assert_eq!(saved["runtime_dir"], runtime.to_str().unwrap());

    let status = home.run(&["check-runtime", "--only", "minizinc", "--json"]);
    assert_eq!(code(&status), 0);
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(status["installed"], true);
    assert_eq!(status["source"], "config");
    assert!(
        status["minizinc_version"]
            .as_str()
            .unwrap()
            .contains("version")
    );
}

#[test]
fn resolution_order_flag_beats_env_beats_config() {
    let home = adopted();
    let empty = tempfile::tempdir().unwrap();
    let empty_dir = empty.path().to_str().unwrap();

    let from_env = home
        .command(&["check-runtime", "--only", "minizinc", "--json"])
        .env("SOLVERGATE_RUNTIME_DIR", empty_dir)
        .output()
        .unwrap();
    assert_eq!(code(&from_env), 1);
    let status: serde_json::Value = serde_json::from_slice(&from_env.stdout).unwrap();
    assert_eq!(status["source"], "env");
    assert_eq!(status["runtime_dir"], empty_dir);

    let runtime = test_runtime();
    let from_flag = home
        .command(&[
            "check-runtime",
            "--only",
            "minizinc",
            "--json",
            "--runtime-dir",
            runtime.to_str().unwrap(),
        ])
        .env("SOLVERGATE_RUNTIME_DIR", empty_dir)
        .output()
        .unwrap();
    assert_eq!(code(&from_flag), 0);
    let status: serde_json::Value = serde_json::from_slice(&from_flag.stdout).unwrap();
    assert_eq!(status["source"], "flag");
}

#[test]
fn a_relative_runtime_dir_variable_is_refused_by_name() {
    let home = Home::new();
    let output = home
        .command(&["check-runtime"])
        .env("SOLVERGATE_RUNTIME_DIR", "relative/minizinc")
        .output()
        .unwrap();
    assert_eq!(code(&output), 1);
    assert!(text(&output.stderr).contains("SOLVERGATE_RUNTIME_DIR"));
}

#[test]
fn a_corrupt_config_warns_and_falls_back() {
    let home = Home::new();
    std::fs::create_dir_all(home.config_file().parent().unwrap()).unwrap();
    std::fs::write(home.config_file(), "{\"runtime_dir\": ").unwrap();
    let output = home.run(&["check-runtime"]);
    assert_eq!(code(&output), 1);
    let stderr = text(&output.stderr);
    assert!(stderr.contains("warning"), "{stderr}");
    assert!(stderr.contains("install.json"), "{stderr}");
    assert!(text(&output.stdout).contains("default location"));
}

#[test]
fn list_solvers_prints_a_table_and_json() {
    let home = adopted();
    let table = home.run(&["list-solvers"]);
    assert_eq!(code(&table), 0);
    let table = text(&table.stdout);
    assert!(table.starts_with("ID"), "{table}");
    assert!(table.contains("org.gecode.gecode"), "{table}");
    assert!(table.contains("(default)"), "{table}");

    let json = home.run(&["list-solvers", "--json"]);
    let list: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let gecode = list["solvers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == "org.gecode.gecode")
        .unwrap();
    assert_eq!(gecode["capabilities"]["supports_num_solutions"], true);
    assert!(list["default_solver"].is_string());
}

#[test]
fn list_solvers_without_a_runtime_fails_clearly() {
    let home = Home::new();
    let output = home.run(&["list-solvers"]);
    assert_eq!(code(&output), 1);
    assert!(text(&output.stderr).contains("no MiniZinc runtime at"));
}

#[test]
fn solve_prints_status_solution_objective_and_statistics() {
    let home = adopted();
    let model = home.write(
        "knapsack.mzn",
        "int: cap; var 0..10: a; var 0..10: b;\n\
         constraint 3*a + 4*b <= cap;\n\
         solve maximize 5*a + 7*b;\n\
         output [\"a=\\(a) b=\\(b)\\n\"];\n",
    );
    let data = home.write("knapsack.dzn", "cap = 20;\n");
    let output = home.run(&["solve", &model, &data, "--solver", "gecode"]);
    assert_eq!(code(&output), 0, "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    assert!(stdout.contains("status:    optimal"), "{stdout}");
    assert!(stdout.contains("solver:    org.gecode.gecode"), "{stdout}");
    assert!(stdout.contains("objective: 35"), "{stdout}");
    assert!(stdout.contains("=========="), "{stdout}");
    assert!(stdout.contains("statistics:"), "{stdout}");

    let json = home.run(&["solve", &model, &data, "--json"]);
    let result: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(result["objective"], 35);
    assert_eq!(result["status"], "optimal");
}

#[test]
fn solve_exit_codes() {
    let home = adopted();
    let unsat = home.write(
        "unsat.mzn",
        "var 1..3: x; constraint x > 5; solve satisfy;\n",
    );
    let output = home.run(&["solve", &unsat]);
    assert_eq!(code(&output), 3);
    assert!(text(&output.stdout).contains("unsatisfiable"));

    let missing = home.run(&["solve", "/nonexistent/model.mzn"]);
    assert_eq!(code(&missing), 1);
    assert!(text(&missing.stderr).contains("model file /nonexistent/model.mzn does not exist"));

    let zero = home.run(&["solve", &unsat, "--timeout-ms", "0"]);
    assert_eq!(code(&zero), 1);
    assert!(text(&zero.stderr).contains("--timeout-ms must be strictly positive"));

    let usage = home.run(&["solve"]);
    assert_eq!(code(&usage), 2);
}

#[test]
fn solve_runs_in_the_models_directory() {
    let home = adopted();
    let dir = home.path().join("project");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("helpers.mzn"), "int: limit = 4;\n").unwrap();
    std::fs::write(
        dir.join("main.mzn"),
        "include \"helpers.mzn\";\nvar 1..10: x; constraint x <= limit;\nsolve maximize x;\n",
    )
    .unwrap();
    let output = home
        .command(&["solve", "main.mzn", "--json"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert_eq!(code(&output), 0, "{}", text(&output.stderr));
    let result: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(result["objective"], 4);
    assert!(Path::new(&dir).join("main.mzn").exists());
}

/// MiniZinc knows a checker only by its `.mzc.mzn` name: a checker that is a
/// (relative) symlink to a plain `.mzn` file must still run as the checker,
/// not join the model as a second one.
#[test]
fn a_symlinked_checker_runs_as_the_checker() {
    let home = adopted();
    let root = home.path();
    for dir in ["models", "checks", "links"] {
        std::fs::create_dir(root.join(dir)).unwrap();
    }
    std::fs::write(
        root.join("models/m.mzn"),
        "var 1..3: x; constraint x >= 2; solve satisfy;\n",
    )
    .unwrap();
    std::fs::write(
        root.join("checks/rejects.mzn"),
        "int: x;\nconstraint x == 1;\noutput [\"CORRECT\\n\"];\n",
    )
    .unwrap();
    std::fs::write(
        root.join("checks/accepts.mzn"),
        "int: x;\noutput [if x >= 2 then \"CORRECT\" else \"INCORRECT\" endif ++ \"\\n\"];\n",
    )
    .unwrap();
    // Relative links, named relative to the CLI's working directory, which
    // is neither the links' directory nor the model's (MiniZinc's).
    std::os::unix::fs::symlink("../checks/rejects.mzn", root.join("links/no.mzc.mzn")).unwrap();
    std::os::unix::fs::symlink("../checks/accepts.mzn", root.join("links/yes.mzc.mzn")).unwrap();
    let solve = |checker: &str| -> serde_json::Value {
        let output = home
            .command(&[
                "solve",
                "models/m.mzn",
                "--checker",
                checker,
                "--solver",
                "gecode",
                "--json",
            ])
            .current_dir(root)
            .output()
            .unwrap();
        serde_json::from_slice(&output.stdout)
            .unwrap_or_else(|error| panic!("{error}: {}", text(&output.stderr)))
    };

    let rejected = solve("links/no.mzc.mzn");
    assert_eq!(rejected["status"], "satisfied", "{rejected:#}");
    assert_eq!(rejected["solution"]["x"], 2, "{rejected:#}");
    assert_eq!(rejected["checker"]["status"], "violation", "{rejected:#}");
    assert_eq!(
        rejected["checker"]["checks"][0]["violation"], true,
        "{rejected:#}"
    );
    assert_eq!(
        rejected["diagnostic"]["category"], "checker_failed",
        "{rejected:#}"
    );

    let accepted = solve("links/yes.mzc.mzn");
    assert_eq!(accepted["status"], "satisfied", "{accepted:#}");
    assert_eq!(accepted["checker"]["status"], "completed", "{accepted:#}");
    let output = accepted["checker"]["checks"][0]["output"].as_str().unwrap();
    assert!(output.contains("CORRECT"), "{accepted:#}");
    assert!(accepted["diagnostic"].is_null(), "{accepted:#}");
}

#[test]
fn configure_runtime_adopts_a_python_with_ortools() {
    let home = adopted();
    let missing_cpsat = home.run(&["check-runtime"]);
    assert_eq!(
        code(&missing_cpsat),
        1,
        "both runtimes are asked about by default"
    );
    assert!(text(&missing_cpsat.stdout).contains("install-runtime --only cpsat"));

    let no_ortools = home.run(&["configure-runtime", "--python", "/bin/sh"]);
    assert_eq!(code(&no_ortools), 1);
    assert!(
        text(&no_ortools.stderr).contains("ortools"),
        "{}",
        text(&no_ortools.stderr)
    );

    let python = test_python();
    let adopted = home.run(&["configure-runtime", "--python", python.to_str().unwrap()]);
    assert_eq!(code(&adopted), 0, "{}", text(&adopted.stderr));
    assert!(text(&adopted.stdout).contains("OR-Tools"));

    let both = home.run(&["check-runtime", "--json"]);
    assert_eq!(code(&both), 0, "{}", text(&both.stdout));
    let status: serde_json::Value = serde_json::from_slice(&both.stdout).unwrap();
    assert_eq!(status["installed"], true, "the MiniZinc setting survived");
    assert_eq!(status["cpsat"]["installed"], true);
    assert_eq!(status["cpsat"]["source"], "config");
    assert_eq!(status["cpsat"]["python"], python.to_str().unwrap());
    assert!(
        status["cpsat"]["ortools_version"]
            .as_str()
            .unwrap()
            .contains('.')
    );

    let only = home.run(&["check-runtime", "--only", "cpsat"]);
    assert_eq!(code(&only), 0);
    assert!(!text(&only.stdout).contains("MiniZinc"));
}
