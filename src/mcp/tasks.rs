//! MCP tasks (the `io.modelcontextprotocol/tasks` extension, protocol
//! 2026-07-28): a long tool called by a client that declared the extension
//! on that very request answers at once with a task, and its work goes on
//! in the background; `tasks/get` reads the task's status and, once it is
//! `completed`, the result the plain call would have returned;
//! `tasks/cancel` stops its processes.
//!
//! A task is a job of its own registry ([`Tasks`], beside the job kinds in
//! the [`JobPools`](super::JobPools)), so it has the jobs' bounds, their
//! one cancellation path (processes gone when cancel returns), their
//! sharing over HTTP (a session's tasks are its own; requests without a
//! session reach theirs by id alone) and their journal: a finished task
//! reads the same from a later server, and one its server's end stopped
//! reads `failed`, saying so ([`TaskKind`]).
//!
//! The work is the plain tool call, run on a copy of the server whose
//! shutdown token is the task's own: a per-request server over HTTP ends
//! with its request, the task does not. What the call reports as progress
//! becomes the task's `statusMessage` (see [`StatusSink`]) instead of
//! notifications to a request that has already been answered.
//!
//! What the reference leaves to us, and what we chose: only the tools that
//! run a solver or a script for a while answer with a task ([`TASK_TOOLS`]);
//! a task is kept until `max_retained_terminal` newer ones have ended (in
//! memory, then on disk), not for a fixed time, so its `ttlMs` is `null`;
//! a tool's error result is a `completed` task carrying it (`failed` is for
//! a call that got no result at all), as the extension says.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, CreateTaskResult, DetailedTask,
    JsonObject, Task, TaskPayload,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::SolvergateServer;
use crate::jobs::registry::{JobRegistry, JobSnapshot, JobState, Outcome, Start};
use crate::jobs::status::timestamp;
use crate::jobs::store::{Kept, set};
use crate::settings::JobBounds;

/// The tools that answer with a task when the request asks for one: those
/// that run a solver, a script or a race for as long as their budget.
pub const TASK_TOOLS: &[&str] = &[
    "solve_minizinc_model",
    "solve_minizinc_files",
    "run_cpsat_python",
    "run_cpsat_python_file",
    "run_cpsat_python_file_checked",
    "run_cpsat_python_experiment",
    "find_unsat_core",
    "find_unsat_core_files",
    "plan_load",
    "save_verified_minizinc_model",
    "save_verified_cpsat_python",
    "save_load_plan",
    "replay_artifact",
];

/// How often a client should poll: a task's figures change at most once a
/// second.
const POLL_INTERVAL_MS: u64 = 1000;

/// The tasks of one scope.
pub type Tasks = JobRegistry<TaskEnd, TaskMeta>;

/// A new, empty task registry with the MiniZinc jobs' bounds.
pub fn registry(bounds: JobBounds, shutdown: CancellationToken) -> Tasks {
    JobRegistry::new("task", bounds, shutdown)
}

/// How a task's tool call ended.
#[derive(Debug)]
pub enum TaskEnd {
    /// The tool answered: its result, which may be an error result.
    Answered(JsonObject),
    /// The call got no result, only a JSON-RPC error.
    Refused(ErrorData),
}

/// What a task carries beside its result: the latest status message.
#[derive(Debug)]
pub struct TaskMeta {
    live: Arc<Mutex<Live>>,
}

/// A running task's latest status message and when it was set.
#[derive(Debug)]
struct Live {
    message: Option<String>,
    updated: SystemTime,
}

/// Where a task's progress goes: the call's progress forwarder finds it in
/// the request's extensions and writes each message it would have sent.
#[derive(Debug, Clone)]
pub struct StatusSink(Arc<Mutex<Live>>);

impl StatusSink {
    /// Makes `message` the task's status message.
    pub fn set(&self, message: &str) {
        let mut live = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        live.message = Some(message.to_owned());
        live.updated = SystemTime::now();
    }
}

/// Whether this request is to be answered with a task: a task tool, called
/// under protocol 2026-07-28 or later with the extension declared in the
/// request's own `_meta` (a declaration at an older session's `initialize`
/// does not count).
pub fn wanted(tool: &str, context: &RequestContext<RoleServer>) -> bool {
    TASK_TOOLS.contains(&tool) && declared(context)
}

/// Whether the request declared the tasks extension where it counts.
fn declared(context: &RequestContext<RoleServer>) -> bool {
    super::sessionless(context)
        && context
            .meta
            .client_capabilities()
            .is_some_and(|capabilities| capabilities.supports_tasks())
}

/// The error for a `tasks/*` request whose client did not declare the
/// extension on it.
pub fn check_declared(context: &RequestContext<RoleServer>) -> Result<(), ErrorData> {
    match declared(context) {
        true => Ok(()),
        false => Err(ErrorData::missing_required_client_capability(
            ClientCapabilities::builder().enable_tasks().build(),
        )),
    }
}

/// Starts `request` as a task of `tasks`, run by `server`; answers with
/// the task as created (a `tasks/get` for its id already finds it).
pub fn start(
    server: &SolvergateServer,
    tasks: &Tasks,
    request: CallToolRequestParams,
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResponse, ErrorData> {
    let live = Arc::new(Mutex::new(Live {
        message: Some(format!("{} is starting", request.name)),
        updated: SystemTime::now(),
    }));
    let mut call_context = context.clone();
    // The client follows a task by polling: no progress notifications to
    // a request that is answered, and the call's progress goes to the
    // task instead.
    call_context.meta.remove("progressToken");
    call_context.extensions.insert(StatusSink(live.clone()));
    // The task's own server: ended by the task's token alone, and not
    // counted as a handle of the session it came from.
    let level = *server
        .log_level
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    // A task's answer is kept and bounded as the plain call's is.
    let kept = server.results(context);
    let version = context.protocol_version();
    let tool = request.name.clone();
    let server = SolvergateServer {
        log_level: Arc::new(Mutex::new(level)),
        ..server.clone()
    };
    let start: Start<TaskEnd> = Box::new(move |token| {
        Box::pin(async move {
            let mut server = server;
            server.shutdown = token.clone();
            call_context.ct = token.clone();
            let call =
                rmcp::handler::server::tool::ToolCallContext::new(&server, request, call_context);
            let answer = server.tool_router.call(call).await;
            if token.is_cancelled() {
                return Outcome::Cancelled;
            }
            let answer = match (answer, &kept) {
                (Ok(CallToolResponse::Complete(result)), Some(kept)) => {
                    Ok(CallToolResponse::Complete(
                        super::results::link(kept, &tool, result, version.as_ref()).await,
                    ))
                }
                (answer, _) => answer,
            };
            match answer {
                Ok(CallToolResponse::Complete(result)) => match serde_json::to_value(result) {
                    Ok(Value::Object(result)) => Outcome::Succeeded(TaskEnd::Answered(result)),
                    _ => Outcome::Failed("the tool's result could not be encoded".to_owned()),
                },
                Ok(_) => Outcome::Failed(
                    "the tool answered with something other than a result".to_owned(),
                ),
                Err(error) => Outcome::Succeeded(TaskEnd::Refused(error)),
            }
        })
    });
    match tasks.submit(TaskMeta { live }, start) {
        Ok(admitted) => Ok(CallToolResponse::Task(CreateTaskResult::new(
            detailed(&admitted).task,
        ))),
        Err(full) => {
            super::refuse(&crate::jobs::status::full(full)).map(CallToolResponse::Complete)
        }
    }
}

/// The task a snapshot shows, as `tasks/get` returns it.
pub fn detailed(snapshot: &JobSnapshot<TaskEnd, TaskMeta>) -> DetailedTask {
    let (message, updated) = {
        let live = snapshot
            .meta
            .live
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        (live.message.clone(), live.updated)
    };
    // Never before the task itself (its first message is set just before
    // the registry stamps its submission).
    let updated = updated.max(snapshot.submitted_at);
    let ended = snapshot.finished_at.unwrap_or(updated);
    let (payload, message, updated) = match snapshot.state {
        JobState::Queued => (
            TaskPayload::Working,
            Some("queued: waiting for a free slot".to_owned()),
            snapshot.submitted_at,
        ),
        JobState::Running => (TaskPayload::Working, message, updated),
        JobState::Succeeded | JobState::Timeout => match snapshot.result.as_deref() {
            Some(TaskEnd::Answered(result)) => (
                TaskPayload::Completed {
                    result: result.clone(),
                },
                Some(format!(
                    "answered after {:.1} s",
                    snapshot.elapsed_ms as f64 / 1000.0
                )),
                ended,
            ),
            Some(TaskEnd::Refused(error)) => (
                TaskPayload::Failed {
                    error: error_object(error),
                },
                Some(error.message.to_string()),
                ended,
            ),
            None => failed("the task ended without a result".to_owned(), ended),
        },
        JobState::Failed => failed(
            snapshot
                .message
                .clone()
                .unwrap_or_else(|| "the task failed".to_owned()),
            ended,
        ),
        JobState::Cancelled => (TaskPayload::Cancelled, snapshot.message.clone(), ended),
    };
    let mut task = Task::new(
        snapshot.id.clone(),
        payload.status(),
        timestamp(snapshot.submitted_at),
        timestamp(updated),
    )
    .with_poll_interval_ms(POLL_INTERVAL_MS);
    task.status_message = message;
    DetailedTask::new(task, payload)
}

/// A `failed` payload for `why`, as an internal error.
fn failed(why: String, at: SystemTime) -> (TaskPayload, Option<String>, SystemTime) {
    let error = ErrorData::internal_error(why.clone(), None);
    (
        TaskPayload::Failed {
            error: error_object(&error),
        },
        Some(why),
        at,
    )
}

fn error_object(error: &ErrorData) -> JsonObject {
    match serde_json::to_value(error) {
        Ok(Value::Object(object)) => object,
        _ => JsonObject::new(),
    }
}

/// Tasks as a journal keeps them: the `tasks/get` answer without its
/// `resultType`, under `tasks/`.
pub struct TaskKind;

impl Kept for TaskKind {
    type Result = TaskEnd;
    type Meta = TaskMeta;
    const DIR: &'static str = "tasks";
    const NOUN: &'static str = "task";
    const AGAIN: &'static str = "Call the tool again";

    fn stored(snapshot: JobSnapshot<TaskEnd, TaskMeta>) -> Option<Value> {
        serde_json::to_value(detailed(&snapshot)).ok()
    }

    fn elsewhere(status: &mut Value, why: String) {
        set(status, "statusMessage", Value::from(why));
    }

    fn interrupted(status: &mut Value, why: String) {
        let error = ErrorData::internal_error(why.clone(), None);
        set(status, "status", Value::from("failed"));
        set(status, "statusMessage", Value::from(why));
        set(status, "error", Value::Object(error_object(&error)));
        set(
            status,
            "lastUpdatedAt",
            Value::from(timestamp(SystemTime::now())),
        );
    }
}

/// A stored task, as this version reads it back; `None` when it cannot.
pub fn read_stored(stored: Value) -> Option<DetailedTask> {
    serde_json::from_value(stored).ok()
}

/// Whether `tasks` holds task `id` or its journal keeps it; the error for
/// an unknown id otherwise.
pub fn check_known(tasks: &Tasks, id: &str) -> Result<(), ErrorData> {
    match tasks.get(id).is_some() || tasks.stored(id).is_some() {
        true => Ok(()),
        false => Err(unknown(id, tasks)),
    }
}

/// The error for a task id this server does not know.
pub fn unknown(id: &str, tasks: &Tasks) -> ErrorData {
    ErrorData::invalid_params(
        format!(
            "Failed to retrieve task: no task with id {id:?}; ids come from a tools/call answered with a task, and only the last {} finished tasks are kept",
            tasks.bounds().max_retained_terminal
        ),
        None,
    )
}
