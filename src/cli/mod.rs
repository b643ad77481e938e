//! The command line: parse once, build one typed configuration, call the
//! library, render. Nothing here holds logic a test could not reach through
//! the library; each command is a few lines.
//!
//! Exit codes: 0 success; 1 a problem before any run (missing runtime, bad
//! argument, a path that does not exist); 2 usage errors (clap); 3 a solve
//! that ran but produced no solution (unsatisfiable, unknown, error,
//! timeout without incumbent); 4 a replayed artifact whose files changed
//! since the save; 5 a replay that ran but did not reproduce.

mod args;
mod artifact_commands;
mod cpsat_command;
mod equations_command;
mod install;
mod paths;
mod plan_command;
mod render;
mod runtime_commands;
mod serve_command;
mod setup;
mod solve_command;
mod stdio_command;
mod terminal;

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

pub(crate) use args::Command;
pub use args::{ArtifactsCommand, Cli, JobBackendArg, RuntimeKind};

use crate::runtime::cpsat::CpsatRuntime;
use crate::runtime::{self, Runtime, UserDirs};
use crate::settings::Settings;
use terminal::cancel_on_interrupt;

/// Runs the parsed command line.
pub fn run(cli: Cli) -> ExitCode {
    // Children this process starts die with it, even if it is killed.
    crate::exec::watchdog::enable();
    let settings = match Settings::from_env() {
        Ok(settings) => settings,
        Err(error) => {
            eprintln!("solvergate: {error}");
            return ExitCode::from(1);
        }
    };
    // Children see only the variables that pass, sandboxed or not.
    crate::exec::pass_environment(&settings.pass_env);
    if settings.sandbox && !cli.no_sandbox {
        crate::exec::sandbox::allow_writes(settings.sandbox_writable.clone());
        for dir in &cli.allow_read {
            if !dir.is_absolute() || !dir.is_dir() {
                eprintln!(
                    "solvergate: --allow-read {}: must be an existing directory, by absolute path",
                    dir.display()
                );
                return ExitCode::from(2);
            }
        }
        crate::exec::reads::allow_operator(
            settings
                .read_roots
                .iter()
                .chain(&cli.allow_read)
                .cloned()
                .collect(),
        );
        // Scripts keep the server's PYTHONPATH: what it names is part of
        // their runtime.
        if let Some(pythonpath) = &settings.pythonpath {
            crate::exec::reads::allow(
                std::env::split_paths(pythonpath)
                    .filter(|dir| dir.is_absolute() && crate::exec::reads::may_read_whole(dir)),
            );
        }
        let support = crate::exec::confine::probe_sandbox();
        if support.landlock != "enforced" || support.network != "enforced" {
            eprintln!(
                "solvergate: warning: the sandbox is {}",
                crate::exec::sandbox::state_in_words()
            );
        }
    }
    // Before any other thread starts: on cgroup v2 this process moves into
    // a leaf of its group.
    crate::exec::limits::enable(settings.limits, settings.limits_mode);
    let Some(dirs) = UserDirs::discover() else {
        eprintln!(
            "solvergate: could not find a home directory for the per-user config and data dirs; pass --runtime-dir"
        );
        return ExitCode::from(1);
    };
    let tokio = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(tokio) => tokio,
        Err(error) => {
            eprintln!("solvergate: could not start the async runtime: {error}");
            return ExitCode::from(1);
        }
    };
    let code = tokio.block_on(dispatch(cli, settings, dirs));
    // Drops every task still running (their guards kill child trees) and
    // does not wait for a stdin reader blocked forever.
    tokio.shutdown_timeout(std::time::Duration::from_secs(2));
    // Last line of defence: no child tree outlives the process.
    let left = crate::exec::kill_all_sessions();
    if left > 0 {
        eprintln!("solvergate: {left} child process session(s) could not be emptied before exit");
    }
    code
}

/// Hands the parsed command to the function that runs it; the runtimes are
/// resolved only for the commands that need them.
async fn dispatch(cli: Cli, settings: Settings, dirs: UserDirs) -> ExitCode {
    let flag = cli.runtime_dir;
    let resolve = || resolve_runtimes(flag.as_deref(), &settings, &dirs);
    match cli.command {
        Command::ConfigureRuntime { python } => {
            runtime_commands::configure(flag.clone(), python, &dirs).await
        }
        Command::InstallRuntime(args) => install::run(args, flag.clone(), &settings, &dirs).await,
        Command::Stdio(args) => {
            let (minizinc, cpsat) = resolve();
            stdio_command::run(minizinc, cpsat, args, &settings, &dirs).await
        }
        Command::Worker { dir } => worker(&dir).await,
        Command::Serve(args) => {
            let (minizinc, cpsat) = resolve();
            serve_command::serve_http(minizinc, cpsat, args, &settings, &dirs).await
        }
        Command::CheckRuntime { only, json } => {
            let (minizinc, cpsat) = resolve();
            runtime_commands::check(&minizinc, &cpsat, only, json).await
        }
        Command::ListSolvers { json } => {
            let (minizinc, _) = resolve();
            runtime_commands::list_solvers(&minizinc, json).await
        }
        Command::Solve(args) => solve_command::solve(resolve().0, args).await,
        Command::RunCpsat(args) => cpsat_command::run(args, || resolve().1).await,
        Command::Replay { dir, json } => {
            let (minizinc, cpsat) = resolve();
            artifact_commands::replay(minizinc, cpsat, &settings, &dirs, dir, json).await
        }
        Command::Artifacts {
            command: ArtifactsCommand::Ls { dirs, json },
        } => artifact_commands::list(dirs, json),
        Command::Equations(args) => equations_command::run(resolve().0, args).await,
        Command::Plan(args) => plan_command::run(args, resolve, &settings, &dirs).await,
    }
}

/// The two runtimes `--runtime-dir`, the settings and the user's dirs
/// point to; a warning about the choice goes to stderr.
fn resolve_runtimes(
    flag: Option<&Path>,
    settings: &Settings,
    dirs: &UserDirs,
) -> (Arc<Runtime>, Arc<CpsatRuntime>) {
    let (location, warning) = runtime::resolve_location(flag, settings, dirs);
    if let Some(warning) = warning {
        eprintln!("{}", render::problem(&format!("warning: {warning}")));
    }
    let cpsat = CpsatRuntime::resolve(settings, dirs);
    (Arc::new(Runtime::new(location)), Arc::new(cpsat))
}

/// `solvergate worker DIR`: one background job's task on a cluster node.
async fn worker(dir: &Path) -> ExitCode {
    let cancel = cancel_on_interrupt();
    match crate::jobs::worker::run(dir, &cancel).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(crate::jobs::worker::WorkerError::Cancelled) => {
            eprintln!("solvergate worker: cancelled; no result was written");
            ExitCode::from(130)
        }
        Err(error) => {
            eprintln!(
                "{}",
                render::failure(&format!("solvergate worker: {error}"), &error)
            );
            ExitCode::from(1)
        }
    }
}
