//! The checker protocol: a second, capped child grades a reported answer.
//!
//! The checker gets a JSON payload file as `argv[1]` — `problem`,
//! `solution`, `objective`, `solver_status` — and must print as its last
//! stdout line one JSON object `{"status": "accepted"|"rejected"|"error",
//! "errors": [...], "details": {...}}`. Anything else (a non-zero exit, a
//! timeout, a cut-off output, no such line, `accepted` with errors, a
//! duplicate key in the verdict line) is normalised to `error` or
//! `timeout`; a checker never fails the call.
//!
//! Only what the checker wrote before it exited is read (the executor cuts
//! there), and a checker whose tree left processes behind — one that left
//! its session, or output after the exit — is `error` whatever it printed:
//! an escaped process is how a verdict gets forged after the fact.

use std::path::{Path, PathBuf};

use serde_json::{Map, Number, Value, json};
use tempfile::TempDir;
use tokio_util::sync::CancellationToken;

use super::results::{CheckerReport, CheckerStatus, ScriptStatus};
use super::script::{ScriptSource, parent_of, scratch_dir, write};
use super::strict_json::Refusal;
use crate::budget::Budget;
use crate::diagnostics::{Category, ToolError};
use crate::exec::{self, ChildCommand, Ending, Limits};
use crate::sha256_hex;
use crate::userfiles::{off_thread, text_file};
use crate::verdict::Verdict;

/// A checker ready to run.
#[derive(Debug)]
pub struct PreparedChecker {
    _scratch: TempDir,
    script: PathBuf,
    cwd: PathBuf,
    pub sha256: String,
}

impl PreparedChecker {
    /// The checker file that will run (absolute).
    pub fn path(&self) -> &Path {
        &self.script
    }
}

impl ScriptSource {
    /// This source prepared as a checker, on the blocking pool: inline text
    /// into a temp dir, or a validated path run in its own dir.
    pub async fn prepare_checker_async(&self) -> Result<PreparedChecker, ToolError> {
        let source = self.clone();
        off_thread(move || source.prepare_checker()).await
    }

    /// Blocking file I/O: async code calls
    /// [`ScriptSource::prepare_checker_async`].
    fn prepare_checker(&self) -> Result<PreparedChecker, ToolError> {
        let scratch = scratch_dir()?;
        let (script, cwd, text) = match self {
            ScriptSource::Inline(source) => {
                if source.trim().is_empty() {
                    return Err(ToolError::invalid(
                        "checker must not be empty: pass a Python checker or omit it",
                    ));
                }
                let script = scratch.path().join("checker.py");
                write(&script, source.as_bytes())?;
                (script, scratch.path().to_path_buf(), source.clone())
            }
            ScriptSource::File(path) => {
                let (script, text) = text_file("checker_path", path)?;
                let cwd = parent_of(&script);
                (script, cwd, text)
            }
        };
        Ok(PreparedChecker {
            sha256: sha256_hex(text.as_bytes()),
            _scratch: scratch,
            script,
            cwd,
        })
    }
}

/// `problem` as the checker sees it: a string passes through untouched,
/// any other JSON value becomes its canonical compact text.
pub fn canonical_problem(problem: Option<&Value>) -> Option<String> {
    match problem? {
        Value::Null => None,
        Value::String(text) => Some(text.clone()),
        other => Some(other.to_string()),
    }
}

/// What the checker grades.
#[derive(Debug, Clone, Copy)]
pub struct Graded<'a> {
    pub problem: Option<&'a str>,
    pub solution: &'a Map<String, Value>,
    pub objective: Option<&'a Number>,
    pub solver_status: ScriptStatus,
}

/// Runs the checker on one answer. Only cancellation is an error.
pub async fn run_checker(
    python: &Path,
    checker: &PreparedChecker,
    graded: Graded<'_>,
    timeout: Budget,
    cancel: &CancellationToken,
) -> Result<CheckerReport, ToolError> {
    let payload_dir = scratch_dir()?;
    let payload = payload_dir.path().join("payload.json");
    let body = json!({
        "problem": graded.problem,
        "solution": graded.solution,
        "objective": graded.objective,
        "solver_status": graded.solver_status,
    });
    write(&payload, body.to_string().as_bytes())?;
    let mut command = ChildCommand::new(python)
        .arg("-u")
        .arg(&checker.script)
        .arg(&payload)
        .cwd(&checker.cwd)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .reads_beside(&checker.script)
        .reads_dir(&checker.cwd)
        .readable(payload_dir.path())
        .scratch_home();
    if let Some(base) = super::script::user_base() {
        command = command.env("PYTHONUSERBASE", base);
    }
    // An inline checker's directory is its own temp dir: writable, as the
    // run's scratch dir is.
    if checker.cwd == checker._scratch.path() {
        command = command.writable(&checker.cwd);
    }
    let run = match exec::run(
        &command,
        Limits::new(timeout.duration()).keep_head_and_tail(),
        cancel,
    )
    .await
    {
        Ok(run) => run,
        Err(error) => {
            return Ok(error_report(format!(
                "the checker could not start: {error}"
            )));
        }
    };
    if run.ending == Ending::Cancelled {
        return Err(ToolError::new(
            Category::Cancelled,
            "cancelled while the checker ran",
        ));
    }
    let mut report = CheckerReport {
        status: CheckerStatus::Error,
        verdict: Verdict::Error,
        errors: Vec::new(),
        details: Map::new(),
        message: None,
        stdout: run.stdout.clone(),
        stderr: run.stderr.clone(),
        return_code: run.return_code,
        timed_out: run.timed_out(),
        truncated: run.truncated,
        duration_ms: run.elapsed_ms,
        breach: None,
    };
    let last = last_line(&run.stdout);
    if let Some(breach) = &run.breach {
        report.message = Some(breach.in_words("the checker"));
        report.breach = Some(breach.clone());
        return Ok(report);
    }
    let verdict = if run.timed_out() {
        report.status = CheckerStatus::Timeout;
        Err(Unread::TimedOut(timeout.as_millis()))
    } else if run.ending == Ending::Capped {
        Err(Unread::Capped)
    } else if run.return_code != Some(0) {
        Err(Unread::Failed(crate::exec::ending_in_words(&run)))
    } else {
        read_verdict(last).map_err(Unread::Line)
    };
    let left = exec::left_behind_in_words(&run);
    match (verdict, &left) {
        (Ok(line), None) => {
            report.status = line.status.into();
            report.errors = line.errors;
            report.details = line.details;
        }
        (verdict, Some(left)) if report.status != CheckerStatus::Timeout => {
            let printed = match verdict {
                Ok(line) => format!(
                    "its verdict before it exited was {:?}",
                    line.status.as_str()
                ),
                Err(why) => why.to_string(),
            };
            report.message = Some(format!(
                "the checker's processes outlived it: {left}; a checker must exit with everything it started, so its verdict is not trusted ({printed})"
            ));
        }
        (Ok(_), Some(_)) => {}
        (Err(why), _) => report.message = Some(why.to_string()),
    }
    // Silence is its own verdict: the checker exited 0, alone, and its
    // last line is not even an attempt at a JSON verdict.
    let silent = run.ending == Ending::Exited
        && run.return_code == Some(0)
        && left.is_none()
        && !last.is_some_and(|line| line.starts_with('{'));
    report.verdict = match report.status {
        CheckerStatus::Accepted => Verdict::Accepted,
        CheckerStatus::Rejected => Verdict::Rejected,
        CheckerStatus::Timeout => Verdict::Timeout,
        CheckerStatus::Error if silent => Verdict::NoVerdict,
        CheckerStatus::Error => Verdict::Error,
    };
    Ok(report)
}

/// A report for a checker that could not run at all.
pub(crate) fn error_report(message: String) -> CheckerReport {
    CheckerReport {
        status: CheckerStatus::Error,
        verdict: Verdict::Error,
        errors: Vec::new(),
        details: Map::new(),
        message: Some(message),
        stdout: String::new(),
        stderr: String::new(),
        return_code: None,
        timed_out: false,
        truncated: false,
        duration_ms: 0,
        breach: None,
    }
}

/// Why a checker's run gave no verdict line to trust (the report's
/// `message`).
#[derive(Debug, thiserror::Error)]
enum Unread {
    #[error("the checker did not finish within {0} ms")]
    TimedOut(u64),
    #[error("the checker's output went over the 1 MiB cap")]
    Capped,
    #[error("the checker failed: {0}")]
    Failed(String),
    #[error(transparent)]
    Line(VerdictError),
}

/// The status a verdict line may give.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineStatus {
    /// `accepted`, with no errors.
    Accepted,
    /// `rejected`.
    Rejected,
    /// `error`: the checker says it could not judge.
    Error,
}

impl LineStatus {
    /// The word as the checker printed it.
    pub fn as_str(self) -> &'static str {
        match self {
            LineStatus::Accepted => "accepted",
            LineStatus::Rejected => "rejected",
            LineStatus::Error => "error",
        }
    }
}

impl From<LineStatus> for CheckerStatus {
    fn from(status: LineStatus) -> CheckerStatus {
        match status {
            LineStatus::Accepted => CheckerStatus::Accepted,
            LineStatus::Rejected => CheckerStatus::Rejected,
            LineStatus::Error => CheckerStatus::Error,
        }
    }
}

/// A checker's verdict line, read.
#[derive(Debug, Clone, PartialEq)]
pub struct VerdictLine {
    /// The `status` word the checker printed.
    pub status: LineStatus,
    /// The `errors` list, verbatim (empty when absent or `null`).
    pub errors: Vec<Value>,
    /// The `details` object, verbatim (empty when absent or not an object).
    pub details: Map<String, Value>,
}

/// Why a checker's last line is not a verdict.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerdictError {
    /// Stdout has no non-empty line.
    #[error("the checker printed nothing; its last line must be a JSON verdict")]
    Nothing,
    /// A key appears twice in the verdict (its path, as the strict parser
    /// names it).
    #[error("the checker's verdict names the key {0} more than once; a verdict must say one thing")]
    DuplicateKey(String),
    /// The last line is not JSON, or JSON but not an object.
    #[error("the checker's last line is not a JSON object")]
    NotAnObject,
    /// `status` is missing or not one of the three words.
    #[error("the verdict's status must be \"accepted\", \"rejected\" or \"error\"")]
    Status,
    /// `errors` is present and neither a list nor `null`.
    #[error("the verdict's errors must be a list")]
    ErrorsNotAList,
    /// `accepted` with a non-empty `errors` list: a verdict that
    /// contradicts itself.
    #[error("the checker said accepted but listed errors")]
    AcceptedWithErrors,
}

/// The last non-empty line of a checker's stdout, trimmed.
fn last_line(stdout: &str) -> Option<&str> {
    stdout.lines().map(str::trim).rfind(|line| !line.is_empty())
}

/// Reads the last non-empty stdout line as the verdict.
pub(crate) fn parse_verdict(stdout: &str) -> Result<VerdictLine, VerdictError> {
    read_verdict(last_line(stdout))
}

/// Reads `line` (a checker's last non-empty line, if any) as the verdict.
fn read_verdict(line: Option<&str>) -> Result<VerdictLine, VerdictError> {
    let line = line.ok_or(VerdictError::Nothing)?;
    let mut verdict = match super::strict_json::parse(line) {
        Ok(Value::Object(verdict)) => verdict,
        Err(Refusal::Duplicate(key)) => return Err(VerdictError::DuplicateKey(key)),
        _ => return Err(VerdictError::NotAnObject),
    };
    let status = match verdict.get("status").and_then(Value::as_str) {
        Some("accepted") => LineStatus::Accepted,
        Some("rejected") => LineStatus::Rejected,
        Some("error") => LineStatus::Error,
        _ => return Err(VerdictError::Status),
    };
    let errors = match verdict.remove("errors") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(errors)) => errors,
        Some(_) => return Err(VerdictError::ErrorsNotAList),
    };
    let details = match verdict.remove("details") {
        Some(Value::Object(details)) => details,
        _ => Map::new(),
    };
    if status == LineStatus::Accepted && !errors.is_empty() {
        return Err(VerdictError::AcceptedWithErrors);
    }
    Ok(VerdictLine {
        status,
        errors,
        details,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_are_read_from_the_last_line() {
        let ok = parse_verdict(
            "checking...\n{\"status\": \"accepted\", \"errors\": [], \"details\": {\"n\": 3}}\n",
        )
        .unwrap();
        assert_eq!(ok.status, LineStatus::Accepted);
        assert_eq!(ok.details["n"], 3);
        let rejected =
            parse_verdict("{\"status\": \"rejected\", \"errors\": [\"task 3 overlaps\"]}").unwrap();
        assert_eq!(rejected.status, LineStatus::Rejected);
        assert_eq!(rejected.errors.len(), 1);
        for garbage in [
            "",
            "all good",
            "{\"status\": \"ok\"}",
            "{\"status\": \"accepted\", \"errors\": [\"but\"]}",
            "{\"status\": \"rejected\", \"errors\": \"x\"}",
            "[1, 2]",
            "{\"status\": \"rejected\", \"status\": \"accepted\", \"errors\": []}",
            "{\"status\": \"accepted\", \"errors\": [], \"details\": {\"a\": 1, \"a\": 2}}",
        ] {
            assert!(parse_verdict(garbage).is_err(), "{garbage:?}");
        }
    }

    #[test]
    fn each_refusal_says_why_in_the_protocols_words() {
        for (stdout, message) in [
            (
                " \n\n",
                "the checker printed nothing; its last line must be a JSON verdict",
            ),
            ("all good", "the checker's last line is not a JSON object"),
            (
                "{\"status\": ",
                "the checker's last line is not a JSON object",
            ),
            (
                "{\"status\": \"ok\"}",
                "the verdict's status must be \"accepted\", \"rejected\" or \"error\"",
            ),
            (
                "{\"status\": \"rejected\", \"errors\": \"x\"}",
                "the verdict's errors must be a list",
            ),
            (
                "{\"status\": \"accepted\", \"errors\": [\"but\"]}",
                "the checker said accepted but listed errors",
            ),
        ] {
            let error = parse_verdict(stdout).unwrap_err();
            assert_eq!(error.to_string(), message, "{stdout:?}");
        }
        assert_eq!(
            Unread::TimedOut(250).to_string(),
            "the checker did not finish within 250 ms"
        );
        assert_eq!(
            Unread::Capped.to_string(),
            "the checker's output went over the 1 MiB cap"
        );
        assert_eq!(
            Unread::Failed("it exited with code 2".to_owned()).to_string(),
            "the checker failed: it exited with code 2"
        );
        assert_eq!(
            Unread::Line(VerdictError::NotAnObject).to_string(),
            "the checker's last line is not a JSON object"
        );
    }

    #[test]
    fn a_duplicate_key_names_the_key() {
        let error =
            parse_verdict("{\"status\": \"rejected\", \"status\": \"accepted\"}").unwrap_err();
        assert_eq!(
            error.to_string(),
            "the checker's verdict names the key status more than once; a verdict must say one thing"
        );
        let error = parse_verdict("{\"status\": \"accepted\", \"details\": {\"n\": 1, \"n\": 1}}")
            .unwrap_err();
        assert_eq!(
            error,
            VerdictError::DuplicateKey(r#"details["n"]"#.to_owned())
        );
    }

    #[test]
    fn problems_become_text() {
        assert_eq!(canonical_problem(None), None);
        assert_eq!(canonical_problem(Some(&Value::Null)), None);
        assert_eq!(
            canonical_problem(Some(&json!("{\"n\": 3}"))).unwrap(),
            "{\"n\": 3}"
        );
        assert_eq!(
            canonical_problem(Some(&json!({"n": 3, "a": [1]}))).unwrap(),
            "{\"a\":[1],\"n\":3}"
        );
    }
}

#[cfg(test)]
mod properties {
    use super::*;
    use crate::strategies::{deeply_nested, json_object, json_value};
    use proptest::prelude::*;

    fn verdict_status() -> impl Strategy<Value = LineStatus> {
        prop::sample::select(vec![
            LineStatus::Accepted,
            LineStatus::Rejected,
            LineStatus::Error,
        ])
    }

    /// Log lines a checker may print before its verdict (never blank, so
    /// the verdict stays the last non-empty line).
    fn log_line() -> impl Strategy<Value = String> {
        prop_oneof!["[^\n]*", json_value(2).prop_map(|value| value.to_string())]
    }

    proptest! {
        #![proptest_config(crate::strategies::cases(256))]

        /// Any output gets an answer; an accepted verdict has a known status
        /// and no errors when it is `accepted`.
        #[test]
        fn any_output_gives_an_answer(stdout in any::<String>()) {
            if let Ok(line) = parse_verdict(&stdout) {
                prop_assert!(line.status != LineStatus::Accepted || line.errors.is_empty());
            }
        }

        /// The verdict line a checker prints is what we read, whatever it
        /// logged before and however many blank lines follow.
        #[test]
        fn verdicts_round_trip(
            log in prop::collection::vec(log_line(), 0..5),
            status in verdict_status(),
            errors in prop::collection::vec(json_value(2), 0..4),
            details in proptest::option::of(json_object(2)),
            extra in json_object(1),
            blank in "[ \t\r\n]{0,6}",
        ) {
            let errors = if status == LineStatus::Accepted { Vec::new() } else { errors };
            let mut verdict = extra;
            verdict.insert("status".to_owned(), Value::from(status.as_str()));
            verdict.insert("errors".to_owned(), Value::Array(errors.clone()));
            if let Some(details) = &details {
                verdict.insert("details".to_owned(), Value::Object(details.clone()));
            } else {
                verdict.remove("details");
            }
            let mut stdout = log.join("\n");
            stdout.push('\n');
            stdout.push_str(&Value::Object(verdict).to_string());
            stdout.push_str(&blank);
            let parsed = parse_verdict(&stdout);
            prop_assert_eq!(parsed, Ok(VerdictLine { status, errors, details: details.unwrap_or_default() }));
        }

        /// `accepted` with errors is never taken at its word.
        #[test]
        fn accepted_with_errors_is_refused(errors in prop::collection::vec(json_value(1), 1..4)) {
            let line = serde_json::json!({"status": "accepted", "errors": errors}).to_string();
            prop_assert!(parse_verdict(&line).is_err());
        }
    }

    proptest! {
        #![proptest_config(crate::strategies::cases(16))]

        #[test]
        fn deep_nesting_is_an_error_not_a_crash(depth in 150usize..20_000) {
            prop_assert!(parse_verdict(&deeply_nested(depth)).is_err());
        }
    }
}
