//! The command line: parse once, build one typed configuration, call the
//! library, render. Nothing here holds logic a test could not reach through
//! the library; each command is a few lines.
//!
//! Exit codes: 0 success; 1 a problem before any run (missing runtime, bad
//! argument, a path that does not exist); 2 usage errors (clap); 3 a solve
//! that ran but produced no solution (unsatisfiable, unknown, error,
//! timeout without incumbent); 4 a replayed artifact whose files changed
//! since the save; 5 a replay that ran but did not reproduce.

mod artifact_commands;
mod cpsat_command;
mod equations_command;
mod install;
mod plan_command;
mod render;
mod runtime_commands;
mod serve_command;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Args, Parser, Subcommand};
use tokio_util::sync::CancellationToken;

use crate::diagnostics::ToolError;
use crate::jobs::{BackendChoice, SlurmConfig};
use crate::mcp::{SolvergateServer, Toolset};
use crate::minizinc::{
    DEFAULT_TIMEOUT_MS, MiniZinc, SolveControls, SolveRequest, Sources, validate_budget,
};
use crate::progress::Progress;
use crate::runtime::cpsat::CpsatRuntime;
use crate::runtime::{self, Runtime, UserDirs};
use crate::settings::{JobBackendKind, SLURM_WORKDIR_VAR, Settings};

#[derive(Debug, Parser)]
#[command(
    name = "solvergate",
    version,
    about = "Check, solve and verify constraint models on a local MiniZinc runtime, as an MCP server or from the terminal."
)]
pub struct Cli {
    /// Use this MiniZinc runtime root (the directory holding bin/minizinc)
    /// instead of SOLVERGATE_RUNTIME_DIR, the saved config or the default.
    #[arg(long, global = true, value_name = "PATH")]
    pub runtime_dir: Option<PathBuf>,

    /// Confine scripts, checkers and solvers (Linux): they may write only in
    /// their run's temp dir and reach no network; results say what was
    /// enforced. Same as SOLVERGATE_SANDBOX=1.
    #[arg(long, global = true)]
    pub sandbox: bool,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the MCP server on stdin/stdout (what an MCP client launches).
    Stdio {
        /// Which tools to advertise.
        #[arg(long, value_enum, default_value = "core")]
        toolset: Toolset,
        /// Where background jobs run (default: SOLVERGATE_JOB_BACKEND, else
        /// local). Synchronous tools always run here.
        #[arg(long, value_enum)]
        job_backend: Option<JobBackendArg>,
    },
    /// Runs one background job's task on a cluster node (the Slurm
    /// backend's batch script calls it); not for people.
    #[command(hide = true)]
    Worker {
        /// The job's directory in the shared work directory.
        dir: PathBuf,
    },
    /// Run the MCP server over Streamable HTTP (`serve --http 127.0.0.1:PORT`).
    Serve(serve_command::ServeArgs),
    /// Download, verify and install the pinned runtimes: the MiniZinc bundle
    /// and a hash-locked CP-SAT venv (the only command that uses the network).
    InstallRuntime {
        /// Install one runtime only.
        #[arg(long, value_enum)]
        only: Option<RuntimeKind>,
        /// Build the CP-SAT venv with this Python (3.10–3.13) instead of the
        /// newest suitable one on PATH.
        #[arg(long, value_name = "PATH")]
        python: Option<PathBuf>,
        /// Do not prompt: install where the runtime dir resolves to (or
        /// --runtime-dir) and replace a previous solvergate install there.
        #[arg(short = 'y', long)]
        yes: bool,
        /// Install from this local archive instead of downloading (same
        /// SHA256 check).
        #[arg(long, value_name = "FILE")]
        from_archive: Option<PathBuf>,
        /// Use this runtime manifest instead of the built-in one (mirrors, tests).
        #[arg(long, value_name = "FILE")]
        manifest: Option<PathBuf>,
    },
    /// Adopt an existing MiniZinc (--runtime-dir) and/or a Python that can
    /// import ortools (--python), and remember them in install.json.
    ConfigureRuntime {
        /// A Python interpreter that can import ortools, for the CP-SAT tools.
        #[arg(long, value_name = "PATH")]
        python: Option<PathBuf>,
    },
    /// Report both runtimes; exit 0 when what you asked about is installed, 1 otherwise.
    CheckRuntime {
        /// Ask about one runtime only.
        #[arg(long, value_enum)]
        only: Option<RuntimeKind>,
        /// Print the status as JSON.
        #[arg(long)]
        json: bool,
    },
    /// List the solvers the runtime offers.
    ListSolvers {
        /// Print the list as JSON, with capabilities.
        #[arg(long)]
        json: bool,
    },
    /// Solve a model file and print the status, solution and statistics.
    Solve(SolveArgs),
    /// Run an OR-Tools CP-SAT Python script under the same contract as the
    /// MCP tools: its last stdout line is a JSON envelope {"status",
    /// "objective", "solution"}. Exit 0 optimal/feasible, 3 infeasible, 4 the
    /// script failed or broke the contract, 5 no answer in time, 130
    /// interrupted.
    RunCpsat {
        /// The script; it runs in its own directory.
        script: PathBuf,
        /// Arguments for the script (its sys.argv[1:]), after `--`.
        #[arg(last = true)]
        args: Vec<String>,
        /// Wall-clock budget in milliseconds.
        #[arg(long, default_value_t = DEFAULT_TIMEOUT_MS, allow_negative_numbers = true)]
        timeout_ms: i64,
        /// Replay seed, passed as SOLVERGATE_CPSAT_SEED.
        #[arg(long, allow_negative_numbers = true)]
        seed: Option<i64>,
        /// Print the full result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Check a saved artifact's files against its manifest and run it again
    /// as it was verified. Exit 0 reproduced, 4 files changed since the
    /// save, 5 ran but did not reproduce.
    Replay {
        /// The directory a save wrote.
        dir: PathBuf,
        /// Print the recorded and replayed results as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Plan a cohort of orders (JSON from FILE or stdin): air, LCL or full
    /// containers per order, four priced plans with a risk read, one
    /// recommended. Exit 0 with a recommendation, 3 when no plan is feasible.
    Plan {
        /// The cohort as JSON; stdin when omitted.
        file: Option<PathBuf>,
        /// Print the full result (with result_id) as JSON.
        #[arg(long, conflicts_with = "explain")]
        json: bool,
        /// Print the narration of the result.
        #[arg(long)]
        explain: bool,
        /// Print a valid sample cohort to start from, and exit.
        #[arg(long, conflicts_with_all = ["json", "explain", "file", "save"])]
        example: bool,
        /// Print the MiniZinc data of the optimised solve instead of
        /// planning, to run models/load_planner/model.mzn with plain minizinc.
        #[arg(long, conflicts_with_all = ["json", "explain", "save", "example"])]
        minizinc_data: bool,
        /// Also save the plan as an artifact in this directory (replay it
        /// with `solvergate replay DIR`).
        #[arg(long, value_name = "DIR")]
        save: Option<PathBuf>,
        /// With --save: replace a previous solvergate save there.
        #[arg(long, requires = "save")]
        overwrite: bool,
    },
    /// Check, evaluate, correct and optimise systems of equations (JSON
    /// requests as for the MCP equation tools).
    Equations(equations_command::EquationsArgs),
    /// Saved artifacts.
    Artifacts {
        #[command(subcommand)]
        command: ArtifactsCommand,
    },
}

/// What to do with saved artifacts.
#[derive(Debug, Subcommand)]
pub enum ArtifactsCommand {
    /// List the artifacts in each DIR (or DIR itself when it is one): backend,
    /// status, objective, when it was saved and what verified it.
    Ls {
        /// Directories to look in.
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        /// Print the list as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Where background jobs run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum JobBackendArg {
    /// In this process (the default).
    Local,
    /// One Slurm batch job per job (see SOLVERGATE_SLURM_*).
    Slurm,
}

/// One of the two runtimes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RuntimeKind {
    /// MiniZinc and its solvers.
    Minizinc,
    /// Python with OR-Tools CP-SAT.
    Cpsat,
}

#[derive(Debug, Args)]
#[command(after_long_help = SOLVE_EXIT_CODES)]
pub struct SolveArgs {
    /// The MiniZinc model (.mzn).
    pub model: PathBuf,
    /// Optional data file (.dzn or .json).
    pub data: Option<PathBuf>,
    /// Solution checker (.mzc or .mzc.mzn) run on every solution.
    #[arg(long, value_name = "FILE")]
    pub checker: Option<PathBuf>,
    /// Solver id, short name or tag (default: cp-sat if present, else the runtime's default).
    #[arg(long)]
    pub solver: Option<String>,
    /// Solving budget in milliseconds.
    #[arg(long, default_value_t = DEFAULT_TIMEOUT_MS, allow_negative_numbers = true)]
    pub timeout_ms: i64,
    /// Every solution (satisfaction) or the improving sequence (optimisation).
    #[arg(short = 'a', long)]
    pub all_solutions: bool,
    /// Let the solver ignore the model's search annotations.
    #[arg(short = 'f', long)]
    pub free_search: bool,
    /// Parallel search threads.
    #[arg(short = 'p', long, allow_negative_numbers = true)]
    pub parallel: Option<i64>,
    /// Random seed.
    #[arg(short = 'r', long, allow_negative_numbers = true)]
    pub random_seed: Option<i64>,
    /// At most this many solutions (satisfaction problems, solvers with -n).
    #[arg(short = 'n', long, allow_negative_numbers = true)]
    pub num_solutions: Option<i64>,
    /// Print the full result as JSON.
    #[arg(long)]
    pub json: bool,
}

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
    if cli.sandbox || settings.sandbox {
        crate::exec::sandbox::enable();
    }
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

async fn dispatch(cli: Cli, settings: Settings, dirs: UserDirs) -> ExitCode {
    let flag = cli.runtime_dir;
    let resolve = || {
        let (location, warning) = runtime::resolve_location(flag.as_deref(), &settings, &dirs);
        if let Some(warning) = warning {
            eprintln!("{}", render::problem(&format!("warning: {warning}")));
        }
        let cpsat = CpsatRuntime::resolve(&settings, &dirs);
        (Arc::new(Runtime::new(location)), Arc::new(cpsat))
    };
    match cli.command {
        Command::ConfigureRuntime { python } => {
            runtime_commands::configure(flag.clone(), python, &dirs).await
        }
        Command::InstallRuntime {
            only,
            python,
            yes,
            from_archive,
            manifest,
        } => {
            let options = install::InstallOptions {
                runtime_dir: flag.clone(),
                yes,
                from_archive,
                manifest,
                only,
                python,
            };
            install::install_runtime(options, &settings, &dirs).await
        }
        Command::Stdio {
            toolset,
            job_backend,
        } => {
            let (minizinc, cpsat) = resolve();
            let kind = match job_backend {
                Some(JobBackendArg::Local) => JobBackendKind::Local,
                Some(JobBackendArg::Slurm) => JobBackendKind::Slurm,
                None => settings.job_backend,
            };
            let backend = match backend_choice(kind, &settings, &minizinc, &cpsat) {
                Ok(backend) => backend,
                Err(problem) => return refuse(problem),
            };
            serve_stdio(minizinc, cpsat, toolset, backend, &settings, &dirs).await
        }
        Command::Worker { dir } => {
            let cancel = cancel_on_interrupt();
            match crate::jobs::worker::run(&dir, &cancel).await {
                Ok(()) => ExitCode::SUCCESS,
                Err(crate::jobs::worker::WorkerError::Cancelled) => {
                    eprintln!("solvergate worker: cancelled; no result was written");
                    ExitCode::from(130)
                }
                Err(error) => refuse(format!("solvergate worker: {error}")),
            }
        }
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
        Command::Solve(args) => {
            let (minizinc, _) = resolve();
            solve(minizinc, args).await
        }
        Command::RunCpsat {
            script,
            args,
            timeout_ms,
            seed,
            json,
        } => {
            if let Err(error) =
                validate_budget("--timeout-ms", timeout_ms, Some(DEFAULT_TIMEOUT_MS))
            {
                return fail(&error);
            }
            let (_, cpsat) = resolve();
            cpsat_command::run_cpsat(cpsat, script, args, timeout_ms, seed, json).await
        }
        Command::Replay { dir, json } => {
            let (minizinc, cpsat) = resolve();
            artifact_commands::replay(minizinc, cpsat, &settings, &dirs, dir, json).await
        }
        Command::Artifacts {
            command: ArtifactsCommand::Ls { dirs, json },
        } => artifact_commands::list(dirs, json),
        Command::Equations(args) => equations_command::run(resolve().0, args).await,
        Command::Plan { example: true, .. } => plan_command::example(),
        Command::Plan {
            minizinc_data: true,
            file,
            ..
        } => plan_command::minizinc_data(file),
        Command::Plan {
            file,
            json,
            explain,
            save,
            overwrite,
            ..
        } => {
            let (minizinc, cpsat) = resolve();
            let output = match (json, explain) {
                (true, _) => plan_command::PlanOutput::Json,
                (_, true) => plan_command::PlanOutput::Explain,
                _ => plan_command::PlanOutput::Table,
            };
            let save = save.map(|dir| plan_command::SaveTo { dir, overwrite });
            plan_command::plan(minizinc, cpsat, &settings, &dirs, file, output, save).await
        }
    }
}

/// The job backend `kind` names, with what it needs resolved; a Slurm
/// backend without a work directory is refused before the server starts.
pub(crate) fn backend_choice(
    kind: JobBackendKind,
    settings: &Settings,
    runtime: &Runtime,
    cpsat: &CpsatRuntime,
) -> Result<BackendChoice, String> {
    match kind {
        JobBackendKind::Local => Ok(BackendChoice::Local),
        JobBackendKind::Slurm => {
            let Some(workdir) = settings.slurm.workdir.clone() else {
                return Err(format!(
                    "the Slurm job backend needs {SLURM_WORKDIR_VAR}: an absolute path to a directory every node mounts at the same path"
                ));
            };
            let worker = std::env::current_exe().map_err(|error| {
                format!("the Slurm job backend needs this binary's path for the nodes to run, and it is unknown: {error}")
            })?;
            Ok(BackendChoice::Slurm(Box::new(SlurmConfig {
                settings: settings.slurm.clone(),
                workdir,
                worker,
                search_path: settings.search_path.clone(),
                runtime_dir: runtime.location().dir.clone(),
                cpsat_python: cpsat.python.clone(),
                pythonpath: settings
                    .pythonpath
                    .as_ref()
                    .map(|path| path.to_string_lossy().into_owned()),
            })))
        }
    }
}

/// Prints a problem on stderr (headline, then `help:`) and returns exit
/// code 1.
pub(crate) fn refuse(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("{}", render::problem(&message.to_string()));
    ExitCode::from(1)
}

/// A service's refusal: its message, without the MCP diagnostic prefix.
pub(crate) fn fail(error: &ToolError) -> ExitCode {
    refuse(&error.0.message)
}

async fn solve(runtime: Arc<Runtime>, args: SolveArgs) -> ExitCode {
    if let Err(error) = validate_budget("--timeout-ms", args.timeout_ms, Some(DEFAULT_TIMEOUT_MS)) {
        return fail(&error);
    }
    let path = |p: PathBuf| p.to_string_lossy().into_owned();
    let request = SolveRequest {
        sources: Sources::Files {
            model_path: path(args.model),
            data_path: args.data.map(path),
            checker_path: args.checker.map(path),
        },
        solver: args.solver,
        timeout_ms: args.timeout_ms,
        controls: SolveControls {
            free_search: args.free_search,
            parallel: args.parallel,
            random_seed: args.random_seed,
            all_solutions: args.all_solutions,
            num_solutions: args.num_solutions,
        },
    };
    // The first Ctrl-C, SIGTERM or SIGHUP stops the solver the way Ctrl-C
    // at a `minizinc` prompt does (what it found is kept and printed); a
    // second one kills the tree at once.
    let stop = CancellationToken::new();
    let cancel = CancellationToken::new();
    let (on_stop, on_cancel) = (stop.clone(), cancel.clone());
    tokio::spawn(async move {
        interrupt_signal().await;
        on_stop.cancel();
        interrupt_signal().await;
        on_cancel.cancel();
    });
    let service = MiniZinc::new(runtime);
    // On a terminal, a status line fed by the solver's stream as it
    // arrives; nothing of it on a pipe or with --json.
    let spinner = (!args.json && std::io::stderr().is_terminal()).then(solve_spinner);
    let (progress, mut updates) = match &spinner {
        Some(_) => {
            let (progress, updates) = Progress::channel();
            (progress, Some(updates))
        }
        None => (Progress::none(), None),
    };
    if let (Some(bar), Some(mut updates)) = (spinner.clone(), updates.take()) {
        tokio::spawn(async move {
            while let Some(update) = updates.recv().await {
                bar.set_message(update.message);
            }
        });
    }
    let outcome = service
        .solve_stoppable(&request, &progress, &cancel, &stop)
        .await;
    if let Some(bar) = &spinner {
        bar.finish_and_clear();
    }
    let result = match outcome {
        Ok(result) => result,
        Err(error) => return fail(&error),
    };
    let interrupted = stop.is_cancelled();
    if args.json {
        out(&format!("{}\n", render::json(&result)));
    } else {
        out(&render::solve(&result));
    }
    if interrupted {
        eprintln!("solvergate: interrupted; the output above is what the solver had found by then");
        return ExitCode::from(SOLVE_INTERRUPTED);
    }
    ExitCode::from(solve_exit_code(&result))
}

/// The status line of a solve on a terminal: elapsed time and what the
/// solver has reported so far.
fn solve_spinner() -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new_spinner();
    if let Ok(style) = indicatif::ProgressStyle::with_template("{spinner} {elapsed} {msg}") {
        bar.set_style(style);
    }
    bar.set_message("starting");
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    bar
}

/// `solve --help`'s table of exit codes.
const SOLVE_EXIT_CODES: &str = "\
Exit codes:
  0    a solution was found (optimal, satisfied, or the best one when the time ran out)
  1    a problem before solving: a missing runtime, a bad flag value, a file that is not there
  2    the command line itself is wrong
  3    no solution exists (unsatisfiable or unbounded)
  4    the model is broken (syntax, type or missing data error)
  5    no answer in time (timeout or unknown, nothing found)
  6    the checker did not accept a solution (it rejected it, stopped with an error,
       printed no verdict or ran out of time)
  130  interrupted (Ctrl-C, SIGTERM or SIGHUP); what the solver had found is printed

Ctrl-C, SIGTERM or SIGHUP once: the solver stops and its best solution so far is printed.
Twice: every process is killed at once.";

/// `solve`'s exit codes (also in `solve --help` and the README).
const SOLVE_NO_SOLUTION_EXISTS: u8 = 3;
const SOLVE_MODEL_ERROR: u8 = 4;
const SOLVE_NO_ANSWER_IN_TIME: u8 = 5;
const SOLVE_CHECKER_REJECTED: u8 = 6;
const SOLVE_INTERRUPTED: u8 = 130;

/// What a finished solve's result means for the exit code.
fn solve_exit_code(result: &crate::minizinc::SolveResult) -> u8 {
    let rejected = result
        .checker
        .as_ref()
        .is_some_and(|checker| !checker.verdict.is_accepted());
    match result.status.as_str() {
        _ if rejected && result.solution.is_some() => SOLVE_CHECKER_REJECTED,
        "optimal" | "satisfied" => 0,
        "timeout" if result.solution.is_some() => 0,
        "unsatisfiable" | "unbounded" | "unsat_or_unbounded" => SOLVE_NO_SOLUTION_EXISTS,
        "error" => SOLVE_MODEL_ERROR,
        _ => SOLVE_NO_ANSWER_IN_TIME,
    }
}

/// A token cancelled by the first Ctrl-C, SIGTERM or SIGHUP, for commands
/// that have nothing worth keeping from a cut-short run.
pub(crate) fn cancel_on_interrupt() -> CancellationToken {
    let cancel = CancellationToken::new();
    let on_interrupt = cancel.clone();
    tokio::spawn(async move {
        interrupt_signal().await;
        on_interrupt.cancel();
    });
    cancel
}

/// Says a command was interrupted and returns exit code 130.
pub(crate) fn interrupted() -> ExitCode {
    eprintln!("solvergate: interrupted; every process it started was stopped");
    ExitCode::from(130)
}

/// The start-up banner's runtime lines (stdio and HTTP servers), on stderr.
pub(crate) fn print_runtimes(runtime: &Runtime, cpsat: &CpsatRuntime) {
    let location = runtime.location();
    eprintln!(
        "runtime dir: {} ({})",
        location.dir.display(),
        location.source.describe()
    );
    if runtime.is_installed() {
        eprintln!("minizinc: installed at {}", runtime.binary().display());
    } else {
        eprintln!("minizinc: not installed — {}", runtime::INSTALL_HINT);
    }
    eprintln!(
        "cp-sat python: {} ({}); probed on first use",
        cpsat.python.display(),
        cpsat.source.describe_python()
    );
}

/// Resolves on SIGINT, SIGTERM or SIGHUP.
pub(crate) async fn interrupt_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term), Ok(mut hup)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = int.recv() => {}
        _ = term.recv() => {}
        _ = hup.recv() => {}
    }
}

/// Writes to stdout; a reader that went away (`| head`) ends the process
/// quietly instead of a panic.
pub(crate) fn out(text: &str) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    if let Err(error) = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        if error.kind() == std::io::ErrorKind::BrokenPipe {
            crate::exec::kill_all_sessions();
            std::process::exit(0);
        }
        eprintln!("solvergate: could not write to stdout: {error}");
    }
}

/// The per-user data dir's folder of planner results.
pub(crate) const PLANNER_STORE: &str = "planner";

/// The per-user data dir's folder recording in-progress saves.
pub(crate) const ARTIFACT_JOURNAL: &str = "saves-in-progress";

/// How long the server waits at exit for its jobs to stop.
const JOB_SHUTDOWN_DEADLINE: std::time::Duration = std::time::Duration::from_secs(10);

async fn serve_stdio(
    runtime: Arc<Runtime>,
    cpsat: Arc<CpsatRuntime>,
    toolset: Toolset,
    job_backend: BackendChoice,
    settings: &Settings,
    dirs: &UserDirs,
) -> ExitCode {
    use rmcp::ServiceExt;

    eprintln!(
        "solvergate {} — MCP server on stdio, {} toolset",
        env!("CARGO_PKG_VERSION"),
        match toolset {
            Toolset::Core => "core",
            Toolset::Full => "full",
        }
    );
    print_runtimes(&runtime, &cpsat);

    let journal = dirs.data_dir.join(ARTIFACT_JOURNAL);
    let recovered = crate::artifacts::target::recover_interrupted(&journal);
    if recovered > 0 {
        eprintln!("removed {recovered} staging dir(s) left by interrupted saves");
    }
    let shutdown = CancellationToken::new();
    let server = SolvergateServer::new(crate::mcp::ServerSetup {
        minizinc: runtime,
        cpsat,
        toolset,
        jobs: settings.jobs,
        cpsat_jobs: settings.cpsat_jobs,
        shutdown: shutdown.clone(),
        test_hooks: settings.test_hooks,
        artifact_journal: journal,
        planner_store: crate::planner::ResultStore::new(
            dirs.data_dir.join(PLANNER_STORE),
            settings.planner_max_results,
        ),
        cpsat_warm: settings.cpsat_warm,
        job_backend,
    });
    eprintln!("{}", server.job_backend_line());
    server.warm_up();
    let jobs = server.clone();
    let (stdin, stdout) = rmcp::transport::io::stdio_pipes();
    // The gate answers the lines rmcp would drop (oversized, not JSON) and
    // stops running calls the moment stdin ends; rmcp's own cap sits above
    // the gate's so it never drops a line the gate let through.
    let (reader, writer) = crate::mcp::stdio_gate::open(stdin, stdout, shutdown.clone());
    let transport = rmcp::transport::async_rw::AsyncRwTransport::new_server(reader, writer)
        .with_max_line_length(crate::mcp::stdio_gate::MAX_MESSAGE_BYTES + 1);
    let service = match server.serve(transport).await {
        Ok(service) => service,
        Err(error) => {
            eprintln!("solvergate: MCP session did not start: {error}");
            return ExitCode::from(1);
        }
    };
    let cancel = service.cancellation_token();
    let on_signal = shutdown.clone();
    tokio::spawn(async move {
        shutdown_signal().await;
        on_signal.cancel();
        cancel.cancel();
    });
    let ended = service.waiting().await;
    // Jobs outlive requests but not the server: kill every tree first.
    shutdown.cancel();
    let unfinished = jobs.shutdown_jobs(JOB_SHUTDOWN_DEADLINE).await;
    if unfinished > 0 {
        eprintln!(
            "solvergate: {unfinished} job(s) had not stopped after {} s; exiting anyway",
            JOB_SHUTDOWN_DEADLINE.as_secs()
        );
    }
    match ended {
        Ok(_) => ExitCode::SUCCESS,
        Err(error) => refuse(format!("MCP session ended with an error: {error}")),
    }
}

/// Resolves on SIGTERM or SIGINT.
pub(crate) async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}
