//! The `solvergate` binary: parse the command line and hand it to the library.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // The watchdog is this binary too; it takes no part in the CLI.
    let mut args = std::env::args_os().skip(1);
    if args
        .next()
        .is_some_and(|arg| arg == solvergate::exec::watchdog::WATCHDOG_ARG)
    {
        return solvergate::exec::watchdog::serve(args.next().map(Into::into));
    }
    solvergate::cli::run(solvergate::cli::Cli::parse())
}
