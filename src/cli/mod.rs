//! The command line: parse once, build one typed configuration, call the
//! library, render. Nothing here holds logic a test could not reach through
//! the library; each command is a few lines.
//!
//! Exit codes: 0 success; 1 a problem before any run (missing runtime, bad
//! argument, a path that does not exist); 2 usage errors (clap); 3 a solve
//! that ran but produced no solution (unsatisfiable, unknown, error,
//! timeout without incumbent).

mod install;
mod render;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Args, Parser, Subcommand};
use tokio_util::sync::CancellationToken;

use crate::diagnostics::ToolError;
use crate::mcp::{SolvergateServer, Toolset};
use crate::minizinc::{DEFAULT_TIMEOUT_MS, MiniZinc, SolveControls, SolveRequest, Sources};
use crate::progress::Progress;
use crate::runtime::{self, Runtime, SolverList, UserDirs, config};
use crate::settings::Settings;

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
    },
    /// Download, verify and install the pinned MiniZinc bundle (the only
    /// command that uses the network).
    InstallRuntime {
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
    /// Adopt an existing MiniZinc install and remember it in install.json.
    ConfigureRuntime,
    /// Say whether the MiniZinc runtime is installed (exit 0) or not (exit 1).
    CheckRuntime {
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
}

#[derive(Debug, Args)]
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
    let settings = match Settings::from_env() {
        Ok(settings) => settings,
        Err(error) => {
            eprintln!("solvergate: {error}");
            return ExitCode::from(1);
        }
    };
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
    code
}

async fn dispatch(cli: Cli, settings: Settings, dirs: UserDirs) -> ExitCode {
    match cli.command {
        Command::ConfigureRuntime => return configure_runtime(cli.runtime_dir, &dirs).await,
        Command::InstallRuntime {
            yes,
            from_archive,
            manifest,
        } => {
            let options = install::InstallOptions {
                runtime_dir: cli.runtime_dir,
                yes,
                from_archive,
                manifest,
            };
            return install::install_runtime(options, &settings, &dirs).await;
        }
        _ => {}
    }
    let (location, warning) =
        runtime::resolve_location(cli.runtime_dir.as_deref(), &settings, &dirs);
    if let Some(warning) = warning {
        eprintln!("solvergate: warning: {warning}");
    }
    let runtime = Arc::new(Runtime::new(location));
    match cli.command {
        Command::Stdio { toolset } => serve_stdio(runtime, toolset).await,
        Command::CheckRuntime { json } => check_runtime(&runtime, json).await,
        Command::ListSolvers { json } => list_solvers(&runtime, json).await,
        Command::Solve(args) => solve(runtime, args).await,
        Command::ConfigureRuntime | Command::InstallRuntime { .. } => ExitCode::from(1),
    }
}

fn fail(error: &ToolError) -> ExitCode {
    eprintln!("solvergate: {error}");
    ExitCode::from(1)
}

async fn configure_runtime(dir: Option<PathBuf>, dirs: &UserDirs) -> ExitCode {
    let Some(dir) = dir else {
        eprintln!(
            "solvergate: configure-runtime needs --runtime-dir PATH (the directory holding bin/minizinc)"
        );
        return ExitCode::from(1);
    };
    let dir = match std::path::absolute(&dir) {
        Ok(dir) => dir,
        Err(error) => {
            eprintln!("solvergate: cannot resolve {}: {error}", dir.display());
            return ExitCode::from(1);
        }
    };
    let runtime = Runtime::new(runtime::RuntimeLocation {
        dir: dir.clone(),
        source: runtime::LocationSource::Flag,
    });
    let version = match runtime.version(&CancellationToken::new()).await {
        Ok(version) => version,
        Err(error) => return fail(&error),
    };
    let config = config::InstallConfig {
        runtime_dir: Some(dir.clone()),
    };
    match config::write(&dirs.config_dir, &config) {
        Ok(path) => {
            println!("Runtime configured: {} ({version})", dir.display());
            println!("Saved in {}", path.display());
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!(
                "solvergate: could not write the config in {}: {error}",
                dirs.config_dir.display()
            );
            ExitCode::from(1)
        }
    }
}

async fn check_runtime(runtime: &Runtime, json: bool) -> ExitCode {
    let status = runtime.status(&CancellationToken::new()).await;
    if json {
        println!("{}", render::json(&status));
    } else {
        print!("{}", render::runtime_status(&status));
    }
    if status.installed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

async fn list_solvers(runtime: &Runtime, json: bool) -> ExitCode {
    let catalog = match runtime.catalog(&CancellationToken::new()).await {
        Ok(catalog) => catalog,
        Err(error) => return fail(&error),
    };
    let list = SolverList::from_catalog(catalog);
    if json {
        println!("{}", render::json(&list));
    } else {
        print!("{}", render::solver_table(&list));
    }
    ExitCode::SUCCESS
}

async fn solve(runtime: Arc<Runtime>, args: SolveArgs) -> ExitCode {
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
    let cancel = CancellationToken::new();
    let on_interrupt = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_interrupt.cancel();
        }
    });
    let service = MiniZinc::new(runtime);
    let result = match service.solve(&request, &Progress::none(), &cancel).await {
        Ok(result) => result,
        Err(error) => return fail(&error),
    };
    if args.json {
        println!("{}", render::json(&result));
    } else {
        print!("{}", render::solve(&result));
    }
    let solved = matches!(result.status.as_str(), "optimal" | "satisfied")
        || (result.status == "timeout" && result.solution.is_some());
    if solved {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(3)
    }
}

async fn serve_stdio(runtime: Arc<Runtime>, toolset: Toolset) -> ExitCode {
    use rmcp::ServiceExt;

    let location = runtime.location();
    eprintln!(
        "solvergate {} — MCP server on stdio, {} toolset",
        env!("CARGO_PKG_VERSION"),
        match toolset {
            Toolset::Core => "core",
            Toolset::Full => "full",
        }
    );
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

    let server = SolvergateServer::new(runtime, toolset);
    let service = match server.serve(rmcp::transport::io::stdio_pipes()).await {
        Ok(service) => service,
        Err(error) => {
            eprintln!("solvergate: MCP session did not start: {error}");
            return ExitCode::from(1);
        }
    };
    let cancel = service.cancellation_token();
    tokio::spawn(async move {
        shutdown_signal().await;
        cancel.cancel();
    });
    match service.waiting().await {
        Ok(_) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("solvergate: MCP session ended with an error: {error}");
            ExitCode::from(1)
        }
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
