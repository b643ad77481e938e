//! What every kind of job shares in what a client reads: timestamps, the
//! lifecycle diagnostic, the unknown-id and registry-full errors, and the
//! one-line summary the list tools return.
//!
//! Lists are summaries on purpose: a finished solve can carry a megabyte of
//! output, and a list of 64 of them would be tens of megabytes. `get_*`
//! returns the full result of one job.

use std::time::SystemTime;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Number;

use super::registry::{JobRegistry, JobSnapshot, JobState, RegistryFull};
use crate::cpsat::ScriptStatus;
use crate::diagnostics::{Category, Diagnostic, ToolError};
use crate::minizinc::SolveStatus;
use crate::verdict::RaceStatus;

/// RFC 3339 with milliseconds, UTC.
pub(crate) fn timestamp(time: SystemTime) -> String {
    humantime::format_rfc3339_millis(time).to_string()
}

/// The error for a job id we do not have.
pub(crate) fn unknown_job(kind: &str, id: &str, retained: usize) -> ToolError {
    ToolError::invalid(format!(
        "no {kind} with id {id:?}; ids come from submit, and only the last {retained} finished jobs are kept"
    ))
}

/// The diagnostic a cancelled or failed job carries; `None` otherwise,
/// when the result's own diagnostic speaks.
pub(crate) fn lifecycle_diagnostic(state: JobState, message: Option<&str>) -> Option<Diagnostic> {
    match state {
        JobState::Cancelled => Some(Diagnostic::new(
            Category::Cancelled,
            message.unwrap_or("cancelled"),
        )),
        JobState::Failed => Some(Diagnostic::new(
            Category::JobFailed,
            message.unwrap_or("the job failed"),
        )),
        _ => None,
    }
}

pub(crate) fn full(error: RegistryFull) -> ToolError {
    ToolError::invalid(error.to_string())
}

/// Which tool family a job belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum JobKind {
    Solve,
    Portfolio,
    CpsatPython,
}

/// One job in a list: enough to pick which to `get`, never the full result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct JobSummary {
    pub job_id: String,
    pub kind: JobKind,
    /// `queued`, `running`, `succeeded`, `failed`, `timeout` or `cancelled`.
    pub state: JobState,
    pub submitted_at: String,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    pub elapsed_ms: u64,
    /// The result's status once there is one (a portfolio: `winner` or
    /// `no_winner`).
    pub status: Option<ResultStatus>,
    /// The result's objective (a portfolio: the winner's), when it has one.
    pub objective: Option<Number>,
    /// Why a job failed or was cancelled.
    pub message: Option<String>,
}

/// A finished job's result status, as its own kind spells it: serialised as
/// the bare status (`optimal`, `winner`, `feasible`, ...), the kind is in
/// [`JobSummary::kind`]. Read back, a word two kinds share (`optimal`,
/// `error`, ...) is the first variant's: the kind says which it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ResultStatus {
    /// A solve's status.
    Solve(SolveStatus),
    /// A portfolio's: `winner` or `no_winner`.
    Race(RaceStatus),
    /// A CP-SAT script run's status.
    Script(ScriptStatus),
}

impl ResultStatus {
    /// The status as it reads in the JSON.
    pub fn as_str(&self) -> &'static str {
        match self {
            ResultStatus::Solve(status) => status.as_str(),
            ResultStatus::Race(status) => status.as_str(),
            ResultStatus::Script(status) => status.as_str(),
        }
    }
}

impl std::fmt::Display for ResultStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a list tool returns: every retained job of its kind, oldest first.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct JobList {
    pub jobs: Vec<JobSummary>,
}

/// Summarises a snapshot; `headline` reads status and objective off the
/// result.
fn summary<R, M>(
    kind: JobKind,
    snapshot: &JobSnapshot<R, M>,
    headline: &impl Fn(&R) -> (ResultStatus, Option<Number>),
) -> JobSummary {
    let (status, objective) = snapshot
        .result
        .as_deref()
        .map(headline)
        .map_or((None, None), |(status, objective)| {
            (Some(status), objective)
        });
    JobSummary {
        job_id: snapshot.id.clone(),
        kind,
        state: snapshot.state,
        submitted_at: timestamp(snapshot.submitted_at),
        started_at: snapshot.started_at.map(timestamp),
        finished_at: snapshot.finished_at.map(timestamp),
        elapsed_ms: snapshot.elapsed_ms,
        status,
        objective,
        message: snapshot.message.clone(),
    }
}

/// Every retained job of `registry`, oldest first, as summaries.
pub(crate) fn list_of<R: Send + Sync + 'static, M: Send + Sync + 'static>(
    registry: &JobRegistry<R, M>,
    kind: JobKind,
    headline: impl Fn(&R) -> (ResultStatus, Option<Number>),
) -> JobList {
    JobList {
        jobs: registry
            .list()
            .iter()
            .map(|snapshot| summary(kind, snapshot, &headline))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_status_serialises_as_the_bare_status() {
        let cases = [
            (
                ResultStatus::Solve(SolveStatus::UnsatOrUnbounded),
                "unsat_or_unbounded",
            ),
            (ResultStatus::Race(RaceStatus::NoWinner), "no_winner"),
            (ResultStatus::Script(ScriptStatus::Feasible), "feasible"),
            (ResultStatus::Script(ScriptStatus::Infeasible), "infeasible"),
        ];
        for (status, word) in cases {
            assert_eq!(
                serde_json::to_string(&status).unwrap(),
                format!("\"{word}\"")
            );
            assert_eq!(status.as_str(), word);
            let back: ResultStatus = serde_json::from_str(&format!("\"{word}\"")).unwrap();
            assert_eq!(back, status);
        }
    }
}
