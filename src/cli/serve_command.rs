//! `solvergate serve --http ADDR`: the MCP server over Streamable HTTP
//! (rmcp's server on a hyper HTTP/1.1 listener), with the same tools,
//! prompts and jobs as stdio.
//!
//! Safety rules: only a loopback address is served unless `--allow-remote`
//! is given, and then only with a bearer token (`SOLVERGATE_HTTP_TOKEN`,
//! compared in constant time); when a token is set every request must carry
//! it, whatever the address. Browser `Origin`s other than loopback ones are
//! refused (403) unless named with `--allow-origin`, and on a loopback bind
//! the `Host` header must be a loopback name too (DNS rebinding).
//!
//! Every MCP session gets its own [`SolvergateServer`], so its jobs, their
//! admission bounds and its log level are its own: a session cannot see,
//! poll or cancel another's job, and the job limits apply per session; at
//! most `SOLVERGATE_HTTP_MAX_SESSIONS` sessions are open at once (503
//! beyond), which bounds the whole server. Requests without a session (MCP
//! 2026-07-28 and later: rmcp builds a server per request) keep their jobs
//! in one shared set of registries that outlives every request, under the
//! same bounds as one session's: such a job is reached by its unguessable
//! id alone, and listing is refused (see `mcp::JobPools`). A
//! session that ends (closed by the client, or idle past rmcp's five-minute
//! keep-alive) takes its calls and jobs with it within a sweep interval. SIGTERM or SIGINT cancels every
//! session's calls and jobs and waits until their process trees are gone.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode, header};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use tokio_util::sync::CancellationToken;

use super::args::ServeArgs;
use super::setup::{
    ARTIFACT_JOURNAL, JOB_SHUTDOWN_DEADLINE, JOB_STORE, PLANNER_STORE, backend_choice,
    print_runtimes,
};
use super::terminal::{refuse_error, shutdown_signal};
use crate::jobs::store::{JobScope, JobStoreSetup};
use crate::mcp::{JobPools, ServerSetup, SolvergateServer, Toolset};
use crate::planner::ResultStore;
use crate::runtime::cpsat::CpsatRuntime;
use crate::runtime::{Runtime, UserDirs};
use crate::settings::{HTTP_TOKEN_VAR, Settings};

/// The one path the MCP endpoint answers on.
pub const MCP_PATH: &str = "/mcp";

/// How often ended sessions are looked for (their jobs are then stopped).
const SWEEP_INTERVAL: std::time::Duration = std::time::Duration::from_secs(2);

/// Browser origins always accepted: pages served from this machine.
const LOOPBACK_ORIGINS: &[&str] = &[
    "http://localhost:*",
    "http://127.0.0.1:*",
    "http://[::1]:*",
    "https://localhost:*",
    "https://127.0.0.1:*",
    "https://[::1]:*",
];

/// Runs the HTTP server until SIGTERM or SIGINT.
pub async fn serve_http(
    runtime: Arc<Runtime>,
    cpsat: Arc<CpsatRuntime>,
    args: ServeArgs,
    settings: &Settings,
    dirs: &UserDirs,
) -> ExitCode {
    if let Err(refusal) = check_exposure(&args, settings.http_token.is_some()) {
        return refuse_error(&refusal);
    }
    if let Some(origin) = args.allow_origins.iter().find(|o| !is_origin(o)) {
        return refuse_error(&ServeRefusal::NotAnOrigin(origin.clone()));
    }
    // Remote clients name paths only beneath the operator's roots (none:
    // no path at all); a loopback server is confined only when asked.
    if (args.allow_remote || !args.allow_roots.is_empty())
        && let Err(error) = crate::roots::confine_to(&args.allow_roots)
    {
        return refuse_error(&ServeRefusal::NotARoot(error));
    }
    let job_backend = match backend_choice(settings.job_backend, settings, &runtime, &cpsat) {
        Ok(backend) => backend,
        Err(error) => return refuse_error(&error),
    };
    let listener = match tokio::net::TcpListener::bind(args.http).await {
        Ok(listener) => listener,
        Err(source) => {
            return refuse_error(&ServeRefusal::Listen {
                address: args.http,
                source,
            });
        }
    };
    let address = listener.local_addr().unwrap_or(args.http);

    banner(&runtime, &cpsat, args.toolset, address, settings);
    let journal = dirs.data_dir.join(ARTIFACT_JOURNAL);
    let recovered = crate::artifacts::target::recover_interrupted(&journal);
    if recovered > 0 {
        eprintln!("removed {recovered} staging dir(s) left by interrupted saves");
    }

    let shutdown = CancellationToken::new();
    let template = Template {
        minizinc: runtime,
        cpsat,
        toolset: args.toolset,
        settings: settings.clone(),
        job_backend,
        artifact_journal: journal,
        planner_store: ResultStore::new(
            dirs.data_dir.join(PLANNER_STORE),
            settings.planner_max_results,
        ),
        job_store: dirs.data_dir.join(JOB_STORE),
        sessionless_jobs: None,
    };
    // The server whose job registries every request without a session
    // shares; they end only with the whole server.
    let sessionless = template.build(shutdown.child_token(), JobScope::Sessionless);
    let sessions = Arc::new(Sessions {
        template: Template {
            sessionless_jobs: Some(sessionless.job_pools()),
            ..template
        },
        shutdown: shutdown.clone(),
        live: Mutex::new(Vec::new()),
        sessionless: sessionless.clone(),
    });
    // Probe the runtimes once, not per session.
    sessionless.warm_up();
    // Sessionless jobs are read by id alone, from any later server too:
    // their Slurm jobs an earlier server left running go on here. (A
    // session's ended with its server, and no later session reads them:
    // their Slurm jobs are cancelled instead.)
    sessionless.reattach_slurm_jobs();

    let mut origins: Vec<String> = LOOPBACK_ORIGINS.iter().map(|o| o.to_string()).collect();
    origins.extend(args.allow_origins.iter().cloned());
    let mut config = StreamableHttpServerConfig::default()
        .with_allowed_origins(origins)
        .with_cancellation_token(shutdown.child_token());
    if args.allow_remote {
        // Clients reach a remote bind by names we cannot know; the token
        // guards it instead of the Host check.
        config = config.disable_allowed_hosts();
    }
    let factory = {
        let sessions = sessions.clone();
        move || Ok(sessions.open())
    };
    let gate = Arc::new(Gate {
        mcp: StreamableHttpService::new(factory, Arc::new(LocalSessionManager::default()), config),
        token_digest: settings.http_token.as_deref().map(digest),
        sessions: sessions.clone(),
        max_sessions: settings.http_max_sessions,
    });

    let on_signal = shutdown.clone();
    tokio::spawn(async move {
        shutdown_signal().await;
        on_signal.cancel();
    });
    let mut sweep = tokio::time::interval(SWEEP_INTERVAL);
    loop {
        tokio::select! {
            () = shutdown.cancelled() => break,
            _ = sweep.tick() => sessions.sweep(),
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let gate = gate.clone();
                    tokio::spawn(async move {
                        let service = hyper::service::service_fn(move |request| {
                            let gate = gate.clone();
                            async move { Ok::<_, Infallible>(gate.answer(request).await) }
                        });
                        // A connection that fails mid-way concerns only its client.
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                            .await;
                    });
                }
                Err(error) => {
                    // Out of file descriptors and the like: wait, then go on.
                    eprintln!("solvergate: could not accept a connection: {error}");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
            },
        }
    }
    drop(listener);
    eprintln!("solvergate: stopping; cancelling every session's calls and jobs");
    let unfinished = sessions.shutdown().await;
    if unfinished > 0 {
        eprintln!(
            "solvergate: {unfinished} job(s) had not stopped after {} s; exiting anyway",
            JOB_SHUTDOWN_DEADLINE.as_secs()
        );
    }
    ExitCode::SUCCESS
}

/// Why `serve --http` does not start serving.
#[derive(Debug, thiserror::Error)]
enum ServeRefusal {
    #[error(
        "refusing to serve on {0}: it is not a loopback address, so other machines could reach the server; use 127.0.0.1, or pass --allow-remote and set {HTTP_TOKEN_VAR} to a secret bearer token"
    )]
    NotLoopback(SocketAddr),
    #[error(
        "--allow-remote needs a bearer token: set {HTTP_TOKEN_VAR} to a long random secret; clients then send `Authorization: Bearer <token>`"
    )]
    NoToken,
    #[error(
        "--allow-origin {0:?} is not an origin: give scheme://host or scheme://host:port, e.g. https://app.example.com"
    )]
    NotAnOrigin(String),
    #[error(transparent)]
    NotARoot(#[from] crate::roots::NotARoot),
    #[error("could not listen on {address}")]
    Listen {
        address: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// The bind rules: loopback, or `--allow-remote` with a token.
fn check_exposure(args: &ServeArgs, has_token: bool) -> Result<(), ServeRefusal> {
    let loopback = args.http.ip().is_loopback();
    if !loopback && !args.allow_remote {
        return Err(ServeRefusal::NotLoopback(args.http));
    }
    if args.allow_remote && !has_token {
        return Err(ServeRefusal::NoToken);
    }
    Ok(())
}

/// `scheme://host[:port]` with an http(s) scheme and nothing after.
fn is_origin(text: &str) -> bool {
    let Some((scheme, rest)) = text.split_once("://") else {
        return false;
    };
    matches!(scheme, "http" | "https")
        && !rest.is_empty()
        && !rest.contains(['/', '?', '#', '@', ' '])
}

fn banner(
    runtime: &Runtime,
    cpsat: &CpsatRuntime,
    toolset: Toolset,
    address: SocketAddr,
    settings: &Settings,
) {
    eprintln!(
        "solvergate {} — MCP server on http://{address}{MCP_PATH}, {} toolset{}",
        env!("CARGO_PKG_VERSION"),
        match toolset {
            Toolset::Core => "core",
            Toolset::Full => "full",
        },
        if settings.http_token.is_some() {
            ", bearer token required"
        } else {
            ""
        }
    );
    print_runtimes(runtime, cpsat);
    if let Some(roots) = crate::roots::confined() {
        eprintln!(
            "paths: clients may name only paths beneath {}",
            match roots {
                [] => "no directory (--allow-remote without --allow-root: the inline tools only)"
                    .to_owned(),
                roots => roots
                    .iter()
                    .map(|root| root.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
            }
        );
    }
}

/// What every session's server is built from.
struct Template {
    minizinc: Arc<Runtime>,
    cpsat: Arc<CpsatRuntime>,
    toolset: Toolset,
    settings: Settings,
    job_backend: crate::jobs::BackendChoice,
    artifact_journal: std::path::PathBuf,
    planner_store: ResultStore,
    /// Where every session's jobs are kept (each in its own scope).
    job_store: std::path::PathBuf,
    /// The job registries of requests without a session.
    sessionless_jobs: Option<JobPools>,
}

impl Template {
    /// A server whose jobs belong to `scope`.
    fn build(&self, shutdown: CancellationToken, scope: JobScope) -> SolvergateServer {
        let server = SolvergateServer::new(ServerSetup {
            minizinc: self.minizinc.clone(),
            cpsat: self.cpsat.clone(),
            toolset: self.toolset,
            jobs: self.settings.jobs,
            cpsat_jobs: self.settings.cpsat_jobs,
            shutdown,
            test_hooks: self.settings.test_hooks,
            artifact_journal: self.artifact_journal.clone(),
            planner_store: self.planner_store.clone(),
            // Each session is a server of its own: warm forkers per session
            // would multiply Python processes by the session count, so
            // scripts over HTTP start cold.
            cpsat_warm: 0,
            job_backend: self.job_backend.clone(),
            job_store: Some(JobStoreSetup {
                root: self.job_store.clone(),
                scope,
            }),
            response_limit: self.settings.response_limit,
        });
        match &self.sessionless_jobs {
            Some(pools) => server.with_sessionless_jobs(pools.clone()),
            None => server,
        }
    }
}

/// One server per session, each under its own child of the shutdown token.
struct Sessions {
    template: Template,
    shutdown: CancellationToken,
    live: Mutex<Vec<Session>>,
    /// Holds the registries of requests without a session.
    sessionless: SolvergateServer,
}

struct Session {
    server: SolvergateServer,
    token: CancellationToken,
}

impl Sessions {
    /// A fresh server for a new session.
    fn open(&self) -> SolvergateServer {
        let token = self.shutdown.child_token();
        let server = self.template.build(token.clone(), JobScope::new_session());
        self.sweep();
        let mut live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        live.push(Session {
            server: server.clone(),
            token,
        });
        server
    }

    /// Sessions whose servers nobody but this list holds any more have
    /// ended (closed or expired): their calls and jobs are cancelled, which
    /// kills their process trees.
    fn sweep(&self) {
        let mut live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        live.retain(|session| {
            let open = session.server.handle_count() > 1;
            if !open {
                session.token.cancel();
            }
            open
        });
    }

    /// How many sessions are open, after a sweep.
    fn live(&self) -> usize {
        self.sweep();
        self.live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Cancels everything and waits for every job's processes to end (up
    /// to the deadline); returns how many jobs had not ended.
    async fn shutdown(&self) -> usize {
        self.shutdown.cancel();
        let servers: Vec<SolvergateServer> = self
            .live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain(..)
            .map(|session| session.server)
            .collect();
        let waits = servers
            .iter()
            .chain([&self.sessionless])
            .map(|server| server.shutdown_jobs(JOB_SHUTDOWN_DEADLINE));
        futures_util::future::join_all(waits)
            .await
            .into_iter()
            .sum()
    }
}

type Body = BoxBody<Bytes, Infallible>;

/// The HTTP front: path and bearer token, then rmcp (which checks Host and
/// Origin and runs the sessions).
struct Gate {
    mcp: StreamableHttpService<SolvergateServer, LocalSessionManager>,
    token_digest: Option<[u8; 32]>,
    sessions: Arc<Sessions>,
    max_sessions: usize,
}

impl Gate {
    async fn answer(&self, request: Request<Incoming>) -> Response<Body> {
        if request.uri().path() != MCP_PATH {
            return plain(
                StatusCode::NOT_FOUND,
                &format!("not found: the MCP endpoint is {MCP_PATH}"),
            );
        }
        if let Some(expected) = &self.token_digest {
            let presented = request
                .headers()
                .get(header::AUTHORIZATION)
                .and_then(|value| value.to_str().ok())
                .and_then(|value| value.strip_prefix("Bearer "))
                .map(digest);
            // Digests have one length, so the comparison time says nothing
            // about the token's length or content.
            let matches = presented.is_some_and(|given| bool::from(given.ct_eq(expected)));
            if !matches {
                let mut response = plain(
                    StatusCode::UNAUTHORIZED,
                    "unauthorized: send the server's token as `Authorization: Bearer <token>`",
                );
                response.headers_mut().insert(
                    header::WWW_AUTHENTICATE,
                    header::HeaderValue::from_static("Bearer"),
                );
                return response;
            }
        }
        let opens_session = request.method() == hyper::Method::POST
            && !request.headers().contains_key("mcp-session-id");
        if opens_session && self.sessions.live() >= self.max_sessions {
            let mut response = plain(
                StatusCode::SERVICE_UNAVAILABLE,
                &format!(
                    "too many MCP sessions: {} are open (SOLVERGATE_HTTP_MAX_SESSIONS); close one (DELETE {MCP_PATH}) or wait until an idle one expires",
                    self.max_sessions
                ),
            );
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, header::HeaderValue::from_static("5"));
            return response;
        }
        self.mcp.handle(request).await
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

fn plain(status: StatusCode, text: &str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(format!("{text}\n"))).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(address: &str, allow_remote: bool) -> ServeArgs {
        ServeArgs {
            http: address.parse().unwrap(),
            toolset: Toolset::Core,
            allow_remote,
            allow_origins: Vec::new(),
            allow_roots: Vec::new(),
        }
    }

    #[test]
    fn exposure_rules() {
        assert!(check_exposure(&args("127.0.0.1:0", false), false).is_ok());
        assert!(check_exposure(&args("[::1]:0", false), false).is_ok());
        let refused = check_exposure(&args("0.0.0.0:0", false), true).unwrap_err();
        assert!(matches!(refused, ServeRefusal::NotLoopback(_)));
        assert!(refused.to_string().contains("--allow-remote"), "{refused}");
        let tokenless = check_exposure(&args("0.0.0.0:0", true), false).unwrap_err();
        assert!(matches!(tokenless, ServeRefusal::NoToken));
        assert!(
            tokenless.to_string().contains(HTTP_TOKEN_VAR),
            "{tokenless}"
        );
        assert!(check_exposure(&args("0.0.0.0:0", true), true).is_ok());
    }

    #[test]
    fn origins() {
        assert!(is_origin("https://app.example.com"));
        assert!(is_origin("http://10.0.0.2:8080"));
        assert!(!is_origin("app.example.com"));
        assert!(!is_origin("https://app.example.com/path"));
        assert!(!is_origin("ftp://x"));
    }
}
