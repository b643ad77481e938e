//! `solvergate stdio`: the MCP server on stdin/stdout, what an MCP client
//! launches. The stdio gate stands between the pipes and rmcp; at the end
//! (stdin closed, SIGTERM or SIGINT) every job is stopped before exit.

use std::process::ExitCode;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::args::{JobBackendArg, StdioArgs};
use super::setup::{
    ARTIFACT_JOURNAL, JOB_SHUTDOWN_DEADLINE, JOB_STORE, PLANNER_STORE, backend_choice,
    print_runtimes,
};
use super::terminal::{refuse_error, shutdown_signal};
use crate::jobs::BackendChoice;
use crate::mcp::{SolvergateServer, Toolset};
use crate::runtime::cpsat::CpsatRuntime;
use crate::runtime::{Runtime, UserDirs};
use crate::settings::{JobBackendKind, Settings};

/// Why the MCP session on stdio did not start or did not end cleanly.
#[derive(Debug, thiserror::Error)]
enum SessionError {
    #[error("MCP session did not start")]
    DidNotStart(#[source] Box<rmcp::service::ServerInitializeError>),
    #[error("MCP session ended with an error")]
    Ended(#[source] tokio::task::JoinError),
}

/// Runs the stdio server with the job backend the flag (else the settings)
/// names; a backend that cannot start is refused first.
pub async fn run(
    runtime: Arc<Runtime>,
    cpsat: Arc<CpsatRuntime>,
    args: StdioArgs,
    settings: &Settings,
    dirs: &UserDirs,
) -> ExitCode {
    let kind = match args.job_backend {
        Some(JobBackendArg::Local) => JobBackendKind::Local,
        Some(JobBackendArg::Slurm) => JobBackendKind::Slurm,
        None => settings.job_backend,
    };
    let backend = match backend_choice(kind, settings, &runtime, &cpsat) {
        Ok(backend) => backend,
        Err(error) => return refuse_error(&error),
    };
    serve_stdio(runtime, cpsat, args.toolset, backend, settings, dirs).await
}

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
        job_store: Some(crate::jobs::store::JobStoreSetup {
            root: dirs.data_dir.join(JOB_STORE),
            scope: crate::jobs::store::JobScope::Stdio,
        }),
        response_limit: settings.response_limit,
    });
    eprintln!("{}", server.job_backend_line());
    server.warm_up();
    server.reattach_slurm_jobs();
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
        Err(error) => return refuse_error(&SessionError::DidNotStart(Box::new(error))),
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
        Err(error) => refuse_error(&SessionError::Ended(error)),
    }
}
