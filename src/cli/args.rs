//! The command line as clap reads it: every command, flag and help text in
//! one place. Parsing only: [`super::dispatch`] hands each parsed command to
//! the function that runs it. What a flag means for a run is decided by the
//! library; nothing here reads the environment.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::budget::DEFAULT_TIMEOUT_MS;
use crate::exec::limits::LimitCaps;
use crate::mcp::Toolset;

/// The whole command line: the global options and one subcommand.
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

    /// Do not confine scripts, checkers and solvers. By default (Linux) they
    /// may write only in their run's scratch dir and reach no network;
    /// results say what was enforced. Same as SOLVERGATE_SANDBOX=0.
    #[arg(long, global = true)]
    pub no_sandbox: bool,

    /// Let sandboxed runs read beneath DIR too (repeatable). By default they
    /// read only their runtime, the system's files, their scratch dir and
    /// what the call names. Same as listing DIR in SOLVERGATE_READ_ROOTS.
    #[arg(long, global = true, value_name = "DIR")]
    pub allow_read: Vec<PathBuf>,

    /// The sandbox is on by default; kept so older configurations that
    /// pass it still start.
    #[arg(long, global = true, hide = true, conflicts_with = "no_sandbox")]
    pub sandbox: bool,

    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run the MCP server on stdin/stdout (what an MCP client launches).
    Stdio(StdioArgs),
    /// Runs one background job's task on a cluster node (the Slurm
    /// backend's batch script calls it); not for people.
    #[command(hide = true)]
    Worker {
        /// The job's directory in the shared work directory.
        dir: PathBuf,
    },
    /// Run the MCP server over Streamable HTTP (`serve --http 127.0.0.1:PORT`).
    Serve(ServeArgs),
    /// Download, verify and install the pinned runtimes: the MiniZinc bundle
    /// and a hash-locked CP-SAT venv (the only command that uses the network).
    InstallRuntime(InstallArgs),
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
    /// script failed or broke the contract, 5 no answer in time, 6 the
    /// --checker did not accept the answer, 130 interrupted.
    RunCpsat(RunCpsatArgs),
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
    Plan(PlanArgs),
    /// Check, evaluate, correct and optimise systems of equations (JSON
    /// requests as for the MCP equation tools).
    Equations(EquationsArgs),
    /// Saved artifacts.
    Artifacts {
        #[command(subcommand)]
        command: ArtifactsCommand,
    },
}

/// How `stdio` is asked to run.
#[derive(Debug, Args)]
pub struct StdioArgs {
    /// Which tools to advertise.
    #[arg(long, value_enum, default_value = "core")]
    pub toolset: Toolset,
    /// Where background jobs run (default: SOLVERGATE_JOB_BACKEND, else
    /// local). Synchronous tools always run here.
    #[arg(long, value_enum)]
    pub job_backend: Option<JobBackendArg>,
}

/// What `install-runtime` is asked to install, and from where.
#[derive(Debug, Args)]
pub struct InstallArgs {
    /// Install one runtime only.
    #[arg(long, value_enum)]
    pub only: Option<RuntimeKind>,
    /// Build the CP-SAT venv with this Python (3.10–3.13) instead of the
    /// newest suitable one on PATH.
    #[arg(long, value_name = "PATH")]
    pub python: Option<PathBuf>,
    /// Do not prompt: install where the runtime dir resolves to (or
    /// --runtime-dir) and replace a previous solvergate install there.
    #[arg(short = 'y', long)]
    pub yes: bool,
    /// Install from this local archive instead of downloading (same
    /// SHA256 check).
    #[arg(long, value_name = "FILE")]
    pub from_archive: Option<PathBuf>,
    /// Use this runtime manifest instead of the built-in one (mirrors, tests).
    #[arg(long, value_name = "FILE")]
    pub manifest: Option<PathBuf>,
}

/// The script `run-cpsat` runs, and how.
#[derive(Debug, Args)]
pub struct RunCpsatArgs {
    /// The script; it runs in its own directory.
    pub script: PathBuf,
    /// Arguments for the script (its sys.argv[1:]), after `--`.
    #[arg(last = true)]
    pub args: Vec<String>,
    /// Wall-clock budget in milliseconds.
    #[arg(long, default_value_t = DEFAULT_TIMEOUT_MS, allow_negative_numbers = true)]
    pub timeout_ms: i64,
    /// Replay seed, passed as SOLVERGATE_CPSAT_SEED.
    #[arg(long, allow_negative_numbers = true)]
    pub seed: Option<i64>,
    /// A Python checker run on the answer (it gets the payload file as
    /// argv[1] and prints {"status": "accepted"|"rejected"|"error", ...} as
    /// its last line); exit 6 when its verdict is not accepted.
    #[arg(long, value_name = "CHECKER.py")]
    pub checker: Option<PathBuf>,
    /// The instance the checker validates against (a file, passed as text).
    #[arg(long, value_name = "FILE", requires = "checker")]
    pub problem: Option<PathBuf>,
    /// Lower resource limits for this run.
    #[command(flatten)]
    pub limits: LimitFlags,
    /// Print the full result as JSON.
    #[arg(long)]
    pub json: bool,
}

/// What `plan` reads, and what it prints or saves.
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// The cohort as JSON; stdin when omitted.
    pub file: Option<PathBuf>,
    /// Print the full result (with result_id) as JSON.
    #[arg(long, conflicts_with = "explain")]
    pub json: bool,
    /// Print the narration of the result.
    #[arg(long)]
    pub explain: bool,
    /// Print a valid sample cohort to start from, and exit.
    #[arg(long, conflicts_with_all = ["json", "explain", "file", "save"])]
    pub example: bool,
    /// With --example: a generated cohort of this many pallets instead (20
    /// to an order, six kinds of pallet, deadlines over 6 to 60 days), to
    /// try the planner at scale.
    #[arg(long, requires = "example", value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=crate::planner::problem::MAX_PALLETS as i64))]
    pub pallets: Option<u32>,
    /// Print the MiniZinc data of the optimised solve instead of
    /// planning, to run models/load_planner/model.mzn with plain minizinc.
    #[arg(long, conflicts_with_all = ["json", "explain", "save", "example"])]
    pub minizinc_data: bool,
    /// Also save the plan as an artifact in this directory (replay it
    /// with `solvergate replay DIR`).
    #[arg(long, value_name = "DIR")]
    pub save: Option<PathBuf>,
    /// With --save: replace a previous solvergate save there.
    #[arg(long, requires = "save")]
    pub overwrite: bool,
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
pub(crate) struct SolveArgs {
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
    /// Lower resource limits for this run.
    #[command(flatten)]
    pub limits: LimitFlags,
    /// Print the full result as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `solve` and `run-cpsat`'s limit flags: each may only lower the value
/// its variable gives every run (`SOLVERGATE_MEMORY_LIMIT_MB`, ...).
#[derive(Debug, Args)]
pub struct LimitFlags {
    /// Lower the memory limit for this run, in MiB.
    #[arg(long, value_name = "MIB", value_parser = at_least_one)]
    pub memory_limit_mb: Option<u64>,
    /// Lower the limit on processes and threads for this run.
    #[arg(long, value_name = "N", value_parser = at_least_one)]
    pub max_processes: Option<u64>,
    /// Lower the largest file the run may write, in MiB.
    #[arg(long, value_name = "MIB", value_parser = at_least_one)]
    pub file_size_limit_mb: Option<u64>,
    /// Lower what the run's scratch dir may hold, in MiB.
    #[arg(long, value_name = "MIB", value_parser = at_least_one)]
    pub scratch_limit_mb: Option<u64>,
}

/// A limit flag's value: a whole number, at least 1.
fn at_least_one(text: &str) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(0) => Err("must be at least 1".to_owned()),
        Ok(value) => Ok(value),
        Err(error) => Err(error.to_string()),
    }
}

impl LimitFlags {
    /// The flags as a call's limit caps.
    pub fn caps(&self) -> LimitCaps {
        LimitCaps {
            memory_mb: self.memory_limit_mb,
            processes: self.max_processes,
            file_size_mb: self.file_size_limit_mb,
            scratch_mb: self.scratch_limit_mb,
        }
    }
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

/// How `serve` is asked to listen.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Serve MCP over Streamable HTTP at this address, on path /mcp
    /// (e.g. 127.0.0.1:8765; port 0 picks a free port, printed on stderr).
    #[arg(long, value_name = "ADDR")]
    pub http: SocketAddr,
    /// Which tools to advertise.
    #[arg(long, value_enum, default_value = "core")]
    pub toolset: Toolset,
    /// Allow an address other than loopback; needs the bearer token in
    /// SOLVERGATE_HTTP_TOKEN.
    #[arg(long)]
    pub allow_remote: bool,
    /// Also accept requests from this browser origin, as
    /// scheme://host[:port] (repeatable). Loopback origins are always accepted.
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    pub allow_origins: Vec<String>,
    /// Let clients name paths beneath DIR (repeatable): every path a tool
    /// reads or writes must resolve beneath one. With --allow-remote and
    /// none given, no path is admitted (clients use the inline tools).
    #[arg(long = "allow-root", value_name = "DIR")]
    pub allow_roots: Vec<PathBuf>,
}

/// `equations --help`'s table of exit codes (the meanings of `solve`'s).
const EQUATIONS_EXIT_CODES: &str = "\
Exit codes:
  0    correct/optimize: OPTIMAL or FEASIBLE; validate: every equation is valid;
       evaluate: every equation holds
  1    a problem before solving: a missing runtime, a file that is not there, JSON
       that does not match the contract, a value out of range
  2    the command line itself is wrong
  3    INFEASIBLE: the hard constraints contradict each other
  4    INVALID_EQUATION: an expression does not parse or cannot be compiled
       (validate: at least one is invalid; evaluate: one could not be computed)
  5    UNKNOWN: no answer in time, or the solver failed
  6    evaluate: the values break an equation, or some are missing
  130  interrupted (Ctrl-C, SIGTERM or SIGHUP)

The JSON is what the MCP tools of the same name take (correct_values,
validate_equations, evaluate_equations, optimize_expression); see the README.";

/// Check, evaluate, correct and optimise systems of equations.
#[derive(Debug, Args)]
#[command(after_long_help = EQUATIONS_EXIT_CODES)]
pub struct EquationsArgs {
    #[command(subcommand)]
    pub command: EquationsCommand,
}

#[derive(Debug, Subcommand)]
pub enum EquationsCommand {
    /// Correct observed values so they satisfy the equations (correct_values).
    #[command(after_long_help = EQUATIONS_EXIT_CODES)]
    Correct(FileArgs),
    /// Check the syntax of each equation, with positions (validate_equations).
    #[command(after_long_help = EQUATIONS_EXIT_CODES)]
    Validate(FileArgs),
    /// Compute both sides of each equation from given values (evaluate_equations).
    #[command(after_long_help = EQUATIONS_EXIT_CODES)]
    Evaluate(FileArgs),
    /// Maximise or minimise an expression under constraints (optimize_expression).
    #[command(after_long_help = EQUATIONS_EXIT_CODES)]
    Optimize(FileArgs),
}

#[derive(Debug, Args)]
pub struct FileArgs {
    /// The request as JSON.
    pub file: PathBuf,
    /// Print the structured result as JSON.
    #[arg(long)]
    pub json: bool,
}
