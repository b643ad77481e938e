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
    fixed_limits(home.command(args).envs(env.iter().copied()))
        .output()
        .unwrap()
}

/// `command` with limits that do not depend on the host: the values set,
/// rlimits only.
fn fixed_limits(command: &mut std::process::Command) -> &mut std::process::Command {
    command
        .env("SOLVERGATE_LIMITS", "rlimit")
        .env("SOLVERGATE_MEMORY_LIMIT_MB", "12000")
        .env("SOLVERGATE_MAX_PROCESSES", "256")
        .env("SOLVERGATE_FILE_SIZE_LIMIT_MB", "1024")
        .env("SOLVERGATE_SCRATCH_LIMIT_MB", "4096")
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

/// A Python environment like the one `uv tool install 'solvergate[cpsat]'`
/// or `pip install` makes: a venv with this binary in its `bin`, and (with
/// `ortools`) OR-Tools in its site-packages, here borrowed from the test
/// Python's through a symlink and a `.pth` file.
fn tool_environment(ortools: bool) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let made = std::process::Command::new(test_python())
        .args(["-m", "venv", "--without-pip"])
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(made.success());
    let site = std::process::Command::new(dir.path().join("bin/python"))
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
        ])
        .output()
        .unwrap();
    let site = std::path::PathBuf::from(String::from_utf8(site.stdout).unwrap().trim());
    if ortools {
        let found = std::process::Command::new(test_python())
            .args([
                "-c",
                "import os, ortools; print(os.path.dirname(list(ortools.__path__)[0]))",
            ])
            .output()
            .unwrap();
        let packages = String::from_utf8(found.stdout).unwrap().trim().to_owned();
        std::os::unix::fs::symlink(Path::new(&packages).join("ortools"), site.join("ortools"))
            .unwrap();
        std::fs::write(site.join("borrowed.pth"), format!("{packages}\n")).unwrap();
    }
    let binary = dir.path().join("bin/solvergate");
    std::fs::hard_link(env!("CARGO_BIN_EXE_solvergate"), &binary)
        .or_else(|_| std::fs::copy(env!("CARGO_BIN_EXE_solvergate"), &binary).map(|_| ()))
        .unwrap();
    dir
}

/// `ENV/bin/solvergate ARGS` in `home` (its variables, its removals).
fn tool_command(home: &Home, environment: &Path, args: &[&str]) -> std::process::Command {
    let inside = home.command(&[]);
    let mut command = std::process::Command::new(environment.join("bin/solvergate"));
    command.args(args);
    for (key, value) in inside.get_envs() {
        match value {
            Some(value) => command.env(key, value),
            None => command.env_remove(key),
        };
    }
    command
}

/// Installed as a Python tool with OR-Tools, CP-SAT needs no
/// configuration: the tool's own environment is the interpreter, named as
/// such. Without OR-Tools there, the default location is used and the hint
/// says how to add it to the tool. A saved choice still wins.
#[test]
fn a_solvergate_installed_as_a_python_tool_runs_cp_sat_from_its_own_environment() {
    for (ortools, name) in [
        (true, "check_runtime_tool_environment"),
        (false, "check_runtime_tool_environment_without_ortools"),
    ] {
        let home = Home::new();
        let environment = tool_environment(ortools);
        let output = fixed_limits(&mut tool_command(
            &home,
            environment.path(),
            &["check-runtime", "--only", "cpsat"],
        ))
        .output()
        .unwrap();
        let mut settings = home.snapshot_settings();
        settings.add_filter(
            &regex_escape(&environment.path().to_string_lossy()),
            "[TOOL ENV]",
        );
        settings.add_filter(r"ortools:     .*", "ortools:     [ORTOOLS VERSION]");
        limit_filters(&mut settings);
        let transcript = transcript(&output);
        settings.bind(|| insta::assert_snapshot!(name, transcript));
        assert_eq!(output.status.code(), Some(if ortools { 0 } else { 1 }));
    }
    // A saved interpreter comes before the tool's environment.
    let home = Home::new();
    let environment = tool_environment(true);
    let saved = run(
        &home,
        &[
            "configure-runtime",
            "--python",
            test_python().to_str().unwrap(),
        ],
        &[],
    );
    assert!(saved.status.success());
    let output = tool_command(
        &home,
        environment.path(),
        &["check-runtime", "--only", "cpsat", "--json"],
    )
    .output()
    .unwrap();
    let status: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(status["cpsat"]["source"], "config", "{status}");
}
