//! The `solvergate` binary: parse the command line and hand it to the library.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // The watchdog and the confining trampoline are this binary too; they
    // take no part in the CLI.
    let mut args = std::env::args_os().skip(1);
    match args.next() {
        Some(arg) if arg == solvergate::exec::watchdog::WATCHDOG_ARG => {
            return solvergate::exec::watchdog::serve(args.next().map(Into::into));
        }
        Some(arg) if arg == solvergate::exec::confine::CONFINE_ARG => {
            return solvergate::exec::confine::serve(args);
        }
        _ => {}
    }
    solvergate::cli::run(solvergate::cli::Cli::parse())
}
