//! The CP-SAT Python path: run a client-written OR-Tools script in a child
//! process, enforce its JSON envelope, verify its answer with a checker.
//!
//! The server never writes, edits or merges a script; it runs what it is
//! given under the executor's limits (timeout, 1 MiB cap, whole-tree kill,
//! stdin from /dev/null) and reports what the script printed. Children are
//! not sandboxed: the limits are a robustness boundary, not a security one.

mod checker;
pub mod envelope;
mod experiment;
mod live;
pub mod mutations;
mod probe;
pub mod results;
mod run;
mod script;
mod strict_json;
mod verdict;
mod warm;

pub use checker::canonical_problem;
/// For `crate::fuzzing` only.
pub(crate) use checker::parse_verdict;
/// What `crate::fuzzing::checker_verdict` answers.
pub use checker::{LineStatus, VerdictError, VerdictLine};
pub use experiment::{
    AttemptRequest, CpsatPythonExperimentResult, ExperimentAttempt, ExperimentRequest,
    attempt_error, config_sha256,
};
pub use results::{
    CheckerReport, CheckerStatus, CheckerTest, CpsatPythonCheckedResult, CpsatPythonResult,
    MutationRow, ScriptStatus,
};
pub(crate) use run::RunChecker;
pub use run::{CheckedRequest, Cpsat};
pub use script::{ScriptRequest, ScriptSource, validate_args, validate_seed};
pub use warm::MAX_WARM;
