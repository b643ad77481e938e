//! `check-runtime` as a person reads it, for every way a runtime can be
//! chosen: the flag, the environment, the saved config, the default — each
//! label naming the rule that applied (`from SOLVERGATE_CPSAT_PYTHON` for
//! the interpreter, never the MiniZinc variable), a runtime's known defects
//! (per runtime: Debian 12's is warned about) and the limits line.
//! Whole transcripts, with paths and versions filtered.

use std::path::Path;
use std::process::Output;

mod common;
use common::{
    Home, limit_filters, per_runtime, regex_escape, test_python, test_runtime, transcript,
};

/// Runs `solvergate ARGS` in `home` with the variables `env` as well, and
/// limits that do not depend on the host: the values set, rlimits only.
fn run(home: &Home, args: &[&str], env: &[(&str, &Path)]) -> Output {
    home.command(args)
        .envs(env.iter().copied())
        .env("SOLVERGATE_LIMITS", "rlimit")
        .env("SOLVERGATE_MEMORY_LIMIT_MB", "12000")
        .env("SOLVERGATE_MAX_PROCESSES", "256")
        .env("SOLVERGATE_FILE_SIZE_LIMIT_MB", "1024")
        .env("SOLVERGATE_SCRATCH_LIMIT_MB", "4096")
        .output()
        .unwrap()
}

fn snapshot(name: &str, home: &Home, output: &Output) {
    let mut settings = home.snapshot_settings();
    // Per runtime: Debian 12's is warned about (its broken `globals.mzn`).
    per_runtime(&mut settings);
    settings.add_filter(&regex_escape(&test_python().to_string_lossy()), "[PYTHON]");
    settings.add_filter(
        &regex_escape(&test_runtime().to_string_lossy()),
        "[RUNTIME]",
    );
    settings.add_filter(r"version:     .*", "version:     [MINIZINC VERSION]");
    settings.add_filter(r"solvers:     \d+", "solvers:     [N]");
    settings.add_filter(r"ortools:     .*", "ortools:     [ORTOOLS VERSION]");
    limit_filters(&mut settings);
    let transcript = transcript(output);
    settings.bind(|| insta::assert_snapshot!(name, transcript));
}

#[test]
fn check_runtime_names_the_rule_that_chose_each_runtime() {
    let runtime = test_runtime();
    let python = test_python();
    let runtime_flag = runtime.to_str().unwrap();

    // The flag and the interpreter variable.
    let home = Home::new();
    let output = run(
        &home,
        &["--runtime-dir", runtime_flag, "check-runtime"],
        &[("SOLVERGATE_CPSAT_PYTHON", &python)],
    );
    snapshot("check_runtime_flag_and_python_variable", &home, &output);
    assert_eq!(output.status.code(), Some(0));

    // The runtime variable and a saved interpreter.
    let home = Home::new();
    let saved = run(
        &home,
        &["configure-runtime", "--python", python.to_str().unwrap()],
        &[],
    );
    assert!(
        saved.status.success(),
        "{}",
        String::from_utf8_lossy(&saved.stderr)
    );
    let output = run(
        &home,
        &["check-runtime"],
        &[("SOLVERGATE_RUNTIME_DIR", &runtime)],
    );
    snapshot("check_runtime_variable_and_saved_python", &home, &output);
    assert_eq!(output.status.code(), Some(0));

    // Nothing chosen: the default locations, not installed.
    let home = Home::new();
    let output = run(&home, &["check-runtime"], &[]);
    snapshot("check_runtime_defaults_not_installed", &home, &output);
    assert_eq!(output.status.code(), Some(1));
}

#[test]
fn naming_the_bin_directory_suggests_its_parent() {
    let home = Home::new();
    let bin = test_runtime().join("bin");
    let output = run(
        &home,
        &["configure-runtime", "--runtime-dir", bin.to_str().unwrap()],
        &[],
    );
    snapshot("configure_runtime_bin_directory", &home, &output);
    assert_eq!(output.status.code(), Some(1));
    assert!(!home.path().join("config/solvergate/install.json").exists());
}

/// Adopting a runtime says what is known to be broken in it, and still
/// adopts it: Debian 12's is usable with per-global includes.
#[test]
fn adopting_a_runtime_warns_about_its_known_defects() {
    let home = Home::new();
    let runtime = test_runtime();
    let output = run(
        &home,
        &[
            "configure-runtime",
            "--runtime-dir",
            runtime.to_str().unwrap(),
        ],
        &[],
    );
    snapshot("configure_runtime_adopts", &home, &output);
    assert_eq!(output.status.code(), Some(0));
    assert!(home.path().join("config/solvergate/install.json").exists());
}
