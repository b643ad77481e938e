//! What every integration test needs to reach the real runtimes and read
//! what the binary printed. Each test crate uses only part of it.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Output;

/// The MiniZinc runtime the tests adopt (Debian's lives under /usr).
pub fn test_runtime() -> PathBuf {
    PathBuf::from(std::env::var("SOLVERGATE_TEST_RUNTIME").unwrap_or_else(|_| "/usr".into()))
}

/// A Python that can import ortools (`scripts/test` sets it to the venv's).
pub fn test_python() -> PathBuf {
    PathBuf::from(std::env::var("SOLVERGATE_TEST_PYTHON").unwrap_or_else(|_| "python3".into()))
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The whole transcript a person sees: exit code, stdout, stderr.
pub fn transcript(output: &Output) -> String {
    format!(
        "exit code: {}\n--- stdout\n{}--- stderr\n{}",
        output
            .status
            .code()
            .map_or("signal".to_owned(), |code| code.to_string()),
        text(&output.stdout),
        text(&output.stderr)
    )
}

/// "2.6.4", "2.9.2": the runtime's version, naming the snapshot set.
pub fn minizinc_version() -> String {
    let output = std::process::Command::new(test_runtime().join("bin/minizinc"))
        .arg("--version")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.split("version ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or("unknown")
        .to_owned()
}
