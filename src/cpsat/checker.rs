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
use std::time::Duration;

use serde_json::{Map, Number, Value, json};
use tempfile::TempDir;
use tokio_util::sync::CancellationToken;

use super::results::CheckerReport;
use super::script::{ScriptSource, parent_of, scratch_dir, write};
use super::strict_json::Refusal;
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
    pub solver_status: &'a str,
}

/// Runs the checker on one answer. Only cancellation is an error.
pub async fn run_checker(
    python: &Path,
    checker: &PreparedChecker,
    graded: Graded<'_>,
    timeout_ms: u64,
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
    let command = ChildCommand::new(python)
        .arg("-u")
        .arg(&checker.script)
        .arg(&payload)
        .cwd(&checker.cwd)
        .env("PYTHONDONTWRITEBYTECODE", "1");
    let run = match exec::run(
        &command,
        Limits::new(Duration::from_millis(timeout_ms)).keep_head_and_tail(),
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
        status: "error".to_owned(),
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
    };
    let verdict = if run.timed_out() {
        report.status = "timeout".to_owned();
        Err(format!("the checker did not finish within {timeout_ms} ms"))
    } else if run.ending == Ending::Capped {
        Err("the checker's output went over the 1 MiB cap".to_owned())
    } else if run.return_code != Some(0) {
        Err(format!(
            "the checker failed: {}",
            crate::exec::ending_in_words(&run)
        ))
    } else {
        parse_verdict(&run.stdout)
    };
    match (verdict, exec::left_behind_in_words(&run)) {
        (Ok((status, errors, details)), None) => {
            report.status = status;
            report.errors = errors;
            report.details = details;
        }
        (verdict, Some(left)) if report.status != "timeout" => {
            let printed = match verdict {
                Ok((status, ..)) => format!("its verdict before it exited was {status:?}"),
                Err(why) => why,
            };
            report.message = Some(format!(
                "the checker's processes outlived it: {left}; a checker must exit with everything it started, so its verdict is not trusted ({printed})"
            ));
        }
        (Ok(_), Some(_)) => {}
        (Err(message), _) => report.message = Some(message),
    }
    // Silence is its own verdict: the checker exited 0, alone, and its
    // last line is not even an attempt at a JSON verdict.
    let silent = run.ending == Ending::Exited
        && run.return_code == Some(0)
        && exec::left_behind_in_words(&run).is_none()
        && !run
            .stdout
            .lines()
            .map(str::trim)
            .rfind(|line| !line.is_empty())
            .is_some_and(|line| line.starts_with('{'));
    report.verdict = match report.status.as_str() {
        "accepted" => Verdict::Accepted,
        "rejected" => Verdict::Rejected,
        "timeout" => Verdict::Timeout,
        _ if silent => Verdict::NoVerdict,
        _ => Verdict::Error,
    };
    Ok(report)
}

/// A report for a checker that could not run at all.
pub(crate) fn error_report(message: String) -> CheckerReport {
    CheckerReport {
        status: "error".to_owned(),
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
    }
}

/// A checker's verdict line: status, errors, details.
pub(crate) type VerdictLine = (String, Vec<Value>, Map<String, Value>);

/// Reads the last non-empty stdout line as the verdict.
pub(crate) fn parse_verdict(stdout: &str) -> Result<VerdictLine, String> {
    let line = stdout
        .lines()
        .map(str::trim)
        .rfind(|line| !line.is_empty())
        .ok_or("the checker printed nothing; its last line must be a JSON verdict")?;
    let mut verdict = match super::strict_json::parse(line) {
        Ok(Value::Object(verdict)) => verdict,
        Err(Refusal::Duplicate(key)) => {
            return Err(format!(
                "the checker's verdict names the key {key} more than once; a verdict must say one thing"
            ));
        }
        _ => return Err("the checker's last line is not a JSON object".to_owned()),
    };
    let status = match verdict.get("status").and_then(Value::as_str) {
        Some(status @ ("accepted" | "rejected" | "error")) => status.to_owned(),
        _ => {
            return Err(
                "the verdict's status must be \"accepted\", \"rejected\" or \"error\"".to_owned(),
            );
        }
    };
    let errors = match verdict.remove("errors") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(errors)) => errors,
        Some(_) => return Err("the verdict's errors must be a list".to_owned()),
    };
    let details = match verdict.remove("details") {
        Some(Value::Object(details)) => details,
        _ => Map::new(),
    };
    if status == "accepted" && !errors.is_empty() {
        return Err("the checker said accepted but listed errors".to_owned());
    }
    Ok((status, errors, details))
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
        assert_eq!(ok.0, "accepted");
        assert_eq!(ok.2["n"], 3);
        let rejected =
            parse_verdict("{\"status\": \"rejected\", \"errors\": [\"task 3 overlaps\"]}").unwrap();
        assert_eq!(rejected.1.len(), 1);
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
    fn a_duplicate_key_names_the_key() {
        let error =
            parse_verdict("{\"status\": \"rejected\", \"status\": \"accepted\"}").unwrap_err();
        assert!(error.contains("the key status more than once"), "{error}");
        let error = parse_verdict("{\"status\": \"accepted\", \"details\": {\"n\": 1, \"n\": 1}}")
            .unwrap_err();
        assert!(error.contains(r#"details["n"]"#), "{error}");
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

    fn verdict_status() -> impl Strategy<Value = &'static str> {
        prop::sample::select(vec!["accepted", "rejected", "error"])
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
            if let Ok((status, errors, _)) = parse_verdict(&stdout) {
                prop_assert!(["accepted", "rejected", "error"].contains(&status.as_str()));
                prop_assert!(status != "accepted" || errors.is_empty());
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
            let errors = if status == "accepted" { Vec::new() } else { errors };
            let mut verdict = extra;
            verdict.insert("status".to_owned(), Value::from(status));
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
            prop_assert_eq!(parsed, Ok((status.to_owned(), errors, details.unwrap_or_default())));
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
