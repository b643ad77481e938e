//! The `solvergate` binary: parse the command line and hand it to the library.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    solvergate::cli::run(solvergate::cli::Cli::parse())
}
