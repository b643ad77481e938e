//! The `solvergate` binary: parse the command line and hand it to the library.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // The watchdog and the sandbox trampoline are this binary too; they
    // take no part in the CLI.
    let mut args = std::env::args_os().skip(1);
    match args.next() {
        Some(arg) if arg == solvergate::exec::watchdog::WATCHDOG_ARG => {
            return solvergate::exec::watchdog::serve(args.next().map(Into::into));
        }
        Some(arg) if arg == solvergate::exec::sandbox::SANDBOX_ARG => {
            return solvergate::exec::sandbox::serve(args);
        }
        _ => {}
    }
    solvergate::cli::run(solvergate::cli::Cli::parse())
}
