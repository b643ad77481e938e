//! `check-runtime` as a person reads it, for every way a runtime can be
//! chosen: the flag, the environment, the saved config, the default — each
//! label naming the rule that applied (`from SOLVERGATE_CPSAT_PYTHON` for
//! the interpreter, never the MiniZinc variable). Whole transcripts, with
//! paths and versions filtered.

use std::path::Path;
use std::process::{Command, Output};

mod common;
use common::{test_python, test_runtime, transcript};

fn run(home: &Path, args: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_solvergate"));
    command
        .args(args)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_DATA_HOME", home.join("data"))
        .env("HOME", home)
        .env_remove("SOLVERGATE_RUNTIME_DIR")
        .env_remove("SOLVERGATE_CPSAT_PYTHON");
    for (key, value) in env {
        command.env(key, value);
    }
    command.output().unwrap()
}

fn snapshot(name: &str, home: &Path, output: &Output) {
    let transcript = transcript(output);
    let home = home.to_string_lossy().into_owned();
    let runtime = test_runtime().to_string_lossy().into_owned();
    let python = test_python().to_string_lossy().into_owned();
    insta::with_settings!({
        filters => vec![
            (home.as_str(), "[HOME]"),
            (python.as_str(), "[PYTHON]"),
            (runtime.as_str(), "[RUNTIME]"),
            (r"version:     .*", "version:     [MINIZINC VERSION]"),
            (r"solvers:     \d+", "solvers:     [N]"),
            (r"ortools:     .*", "ortools:     [ORTOOLS VERSION]"),
        ],
    }, {
        insta::assert_snapshot!(name, transcript);
    });
}

#[test]
fn check_runtime_names_the_rule_that_chose_each_runtime() {
    let runtime = test_runtime();
    let python = test_python();
    let runtime_flag = runtime.to_str().unwrap();

    // The flag and the interpreter variable.
    let home = tempfile::tempdir().unwrap();
    let output = run(
        home.path(),
        &["--runtime-dir", runtime_flag, "check-runtime"],
        &[("SOLVERGATE_CPSAT_PYTHON", &python)],
    );
    snapshot(
        "check_runtime_flag_and_python_variable",
        home.path(),
        &output,
    );
    assert_eq!(output.status.code(), Some(0));

    // The runtime variable and a saved interpreter.
    let home = tempfile::tempdir().unwrap();
    let saved = run(
        home.path(),
        &["configure-runtime", "--python", python.to_str().unwrap()],
        &[],
    );
    assert!(
        saved.status.success(),
        "{}",
        String::from_utf8_lossy(&saved.stderr)
    );
    let output = run(
        home.path(),
        &["check-runtime"],
        &[("SOLVERGATE_RUNTIME_DIR", &runtime)],
    );
    snapshot(
        "check_runtime_variable_and_saved_python",
        home.path(),
        &output,
    );
    assert_eq!(output.status.code(), Some(0));

    // Nothing chosen: the default locations, not installed.
    let home = tempfile::tempdir().unwrap();
    let output = run(home.path(), &["check-runtime"], &[]);
    snapshot("check_runtime_defaults_not_installed", home.path(), &output);
    assert_eq!(output.status.code(), Some(1));
}

#[test]
fn naming_the_bin_directory_suggests_its_parent() {
    let home = tempfile::tempdir().unwrap();
    let bin = test_runtime().join("bin");
    let output = run(
        home.path(),
        &["configure-runtime", "--runtime-dir", bin.to_str().unwrap()],
        &[],
    );
    snapshot("configure_runtime_bin_directory", home.path(), &output);
    assert_eq!(output.status.code(), Some(1));
    assert!(!home.path().join("config/solvergate/install.json").exists());
}
