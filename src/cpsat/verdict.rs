//! From a finished script run to a [`CpsatPythonResult`]: the envelope
//! contract enforced, a timeout's last valid incumbent recovered, the
//! diagnostic chosen. Pure, so every rule has a unit test.
//!
//! The answer is read from what the script printed before it exited (the
//! executor cuts there): a line an escaped process prints afterwards is
//! never it. A run whose processes outlived it says so in its diagnostic
//! (`escaped_processes`, `late_output_bytes`); the answer it printed itself
//! is kept.

use super::envelope::{self, Envelope};
use super::results::{CheckerReport, CpsatPythonResult, ScriptStatus};
use crate::diagnostics::{Category, Diagnostic};
use crate::exec::{self, Ending, RunOutput};

/// Python's report of a script that does not parse: the line number and
/// the error (`SyntaxError: …`, `IndentationError: …`, `TabError: …`), read
/// from the traceback's `File "…", line N` and last line.
fn python_syntax_error(stderr: &str) -> Option<(u64, String)> {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let last = *lines.last()?;
    if !["SyntaxError", "IndentationError", "TabError"]
        .iter()
        .any(|kind| last.starts_with(kind))
    {
        return None;
    }
    let line = lines.iter().rev().find_map(|text| {
        let rest = text.strip_prefix("File \"")?;
        let after = rest.split("\", line ").nth(1)?;
        after
            .split(|c: char| !c.is_ascii_digit())
            .next()?
            .parse::<u64>()
            .ok()
    })?;
    Some((line, last.to_owned()))
}

/// An uncaught Python exception's type and the last lines of its
/// traceback, when stderr ends with one.
fn python_exception(stderr: &str) -> Option<(String, String)> {
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    let start = lines
        .iter()
        .rposition(|line| line.starts_with("Traceback (most recent call last)"))?;
    let last = lines.last()?.trim();
    let exception = last.split(':').next()?.trim();
    if exception.is_empty() || exception.contains(' ') {
        return None;
    }
    let tail = &lines[start.max(lines.len().saturating_sub(6))..];
    Some((exception.to_owned(), tail.join("\n")))
}

/// Turns what the child did into a result.
pub fn script_result(run: RunOutput, timeout_ms: u64) -> CpsatPythonResult {
    let left = exec::left_behind_in_words(&run);
    let (escaped, late) = (run.escaped, run.late_output_bytes);
    let mut result = read_run(run, timeout_ms);
    if let Some(left) = left {
        let note = format!(
            "the script's processes outlived it: {left}; only what the script printed before it exited is read"
        );
        let diagnostic = match result.diagnostic.take() {
            Some(mut diagnostic) => {
                diagnostic.message = format!("{}; {note}", diagnostic.message);
                diagnostic
            }
            None => Diagnostic::new(Category::ChildProcessError, note),
        };
        result.diagnostic = Some(
            diagnostic
                .with_detail("escaped_processes", escaped)
                .with_detail("late_output_bytes", late),
        );
    }
    result
}

fn read_run(run: RunOutput, timeout_ms: u64) -> CpsatPythonResult {
    let capped = run.ending == Ending::Capped;
    let breach = run.breach.clone();
    let mut result = CpsatPythonResult {
        status: ScriptStatus::Error,
        solution: None,
        objective: None,
        best_objective_bound: None,
        stdout: run.stdout,
        stderr: run.stderr,
        return_code: run.return_code,
        timed_out: run.ending == Ending::TimedOut,
        truncated: run.truncated,
        duration_ms: run.elapsed_ms,
        diagnostic: None,
        sandbox: run.sandbox,
    };
    let facts = |diagnostic: Diagnostic, result: &CpsatPythonResult| {
        diagnostic
            .with_detail("return_code", result.return_code)
            .with_detail("timed_out", result.timed_out)
            .with_detail("truncated", result.truncated)
    };
    if let Some(breach) = breach {
        // Stopped by a limit: the last answer it printed is kept, unproven,
        // and the status says the run did not finish.
        let mut diagnostic = breach.diagnostic("the script");
        if let Some(Ok(incumbent)) = envelope::last_envelope(&result.stdout) {
            adopt(&mut result, incumbent);
            diagnostic.message = format!(
                "{}; the last solution it printed is kept, unproven",
                diagnostic.message
            );
        }
        result.status = ScriptStatus::Error;
        result.diagnostic = Some(facts(diagnostic, &result));
        return result;
    }
    if result.timed_out {
        result.status = ScriptStatus::Timeout;
        let mut rejected = None;
        let mut unread = None;
        match envelope::last_envelope(&result.stdout) {
            Some(Ok(incumbent)) => {
                unread = incumbent.objective_unread.clone();
                adopt(&mut result, incumbent);
            }
            Some(Err(rejection)) => rejected = Some(rejection),
            None => {}
        }
        let found = result.solution.as_ref().is_some_and(|s| !s.is_empty());
        let mut diagnostic = if found {
            Diagnostic::new(
                Category::TimeoutWithIncumbent,
                format!(
                    "stopped at the {timeout_ms} ms limit; the last reported solution is returned, unproven"
                ),
            )
        } else {
            Diagnostic::new(
                Category::TimeoutNoIncumbent,
                format!("stopped at the {timeout_ms} ms limit before a valid solution was printed"),
            )
        };
        if let Some(rejection) = rejected {
            diagnostic = diagnostic
                .with_detail("rejected_partial_field", rejection.field.clone())
                .with_detail("rejected_partial_reason", rejection.reason.clone());
        }
        if let Some(reason) = unread {
            diagnostic = diagnostic.with_detail("objective_unread", reason);
        }
        result.diagnostic = Some(facts(diagnostic, &result));
        return result;
    }
    // Runs keep a head and a tail of their output rather than being stopped
    // for it, so `truncated` alone does not end the reading; a run that was
    // stopped at the cap (the executor's other mode) does.
    if capped {
        let diagnostic = Diagnostic::new(
            Category::OutputTruncated,
            "the script's output went over the 1 MiB cap and was cut; print less (bound intermediate envelopes)",
        );
        result.diagnostic = Some(facts(diagnostic, &result));
        return result;
    }
    if result.return_code != Some(0) {
        let last = result
            .stderr
            .lines()
            .rfind(|line| !line.trim().is_empty())
            .unwrap_or("no message on stderr")
            .trim()
            .to_owned();
        let ended = match result.return_code {
            Some(code) if code < 0 => format!("killed by signal {}", -code),
            Some(code) => format!("exit code {code}"),
            None => "stopped".to_owned(),
        };
        // An answer printed before a failing exit is kept: the exit is
        // reported, the answer is not thrown away.
        if result.return_code.is_some_and(|code| code > 0)
            && let Some(Ok(answer)) = envelope::last_envelope(&result.stdout)
        {
            adopt(&mut result, answer);
            let diagnostic = Diagnostic::new(
                Category::ChildProcessError,
                format!(
                    "the script printed its answer, then exited with {ended}: {last}; the answer is kept — check why it failed"
                ),
            );
            result.diagnostic = Some(facts(diagnostic, &result));
            return result;
        }
        let diagnostic = match python_syntax_error(&result.stderr) {
            Some((line, what)) => Diagnostic::new(
                Category::SyntaxOrCompileError,
                format!("the script does not parse: {what} at line {line}"),
            )
            .with_detail("line", line),
            None => {
                let hint = crate::exec::sandbox::refusal_hint(&result.stderr).unwrap_or("");
                let diagnostic = Diagnostic::new(
                    Category::ChildProcessError,
                    format!("the script failed ({ended}): {last}{hint}"),
                );
                match python_exception(&result.stderr) {
                    Some((exception, traceback)) => diagnostic
                        .with_detail("exception", exception)
                        .with_detail("traceback_tail", traceback),
                    None => diagnostic,
                }
            }
        };
        result.diagnostic = Some(facts(diagnostic, &result));
        return result;
    }
    match envelope::last_envelope(&result.stdout) {
        // The output kept is a head and a tail: an envelope longer than
        // the cap lost its middle, which is not the same as no envelope.
        None | Some(Err(_)) if result.truncated => {
            let diagnostic = Diagnostic::new(
                Category::OutputTruncated,
                "the script's output went over the 1 MiB cap and was cut, so its envelope could not be read whole; report fewer or smaller values in the envelope (write the rest to a file in the working directory)",
            )
            .with_detail("field", "envelope");
            result.diagnostic = Some(facts(diagnostic, &result));
        }
        None => {
            let diagnostic = Diagnostic::new(
                Category::ChildProcessError,
                "the script printed no JSON envelope; its last stdout line must be {\"status\": ..., \"objective\": ..., \"solution\": {...}}",
            )
            .with_detail("field", "envelope");
            result.diagnostic = Some(facts(diagnostic, &result));
        }
        Some(Err(rejection)) => {
            let diagnostic = Diagnostic::new(
                Category::ChildProcessError,
                format!(
                    "the envelope is invalid at {}: {}",
                    rejection.field, rejection.reason
                ),
            )
            .with_detail("field", rejection.field.clone())
            .with_detail("reason", rejection.reason.clone());
            result.diagnostic = Some(facts(diagnostic, &result));
        }
        Some(Ok(reported)) => {
            let unread = reported.objective_unread.clone();
            adopt(&mut result, reported);
            result.diagnostic = match (result.status, unread) {
                (ScriptStatus::Optimal | ScriptStatus::Feasible, Some(reason)) => Some(
                    Diagnostic::new(
                        Category::ObjectiveUnread,
                        "the script found a solution, but the solvergate helper could not read its objective, so objective is null without meaning the model has none; pass model= to solvergate.report",
                    )
                    .with_detail("reason", reason),
                ),
                (ScriptStatus::Error, Some(reason)) => Some(
                    Diagnostic::new(
                        Category::ChildProcessError,
                        format!("the script reports status error: {reason}"),
                    )
                    .with_detail("reason", reason),
                ),
                (status, _) => unread_free(status),
            };
        }
    }
    result
}

/// The diagnostic of a clean run's reported status, when the helper had
/// nothing to add.
fn unread_free(status: ScriptStatus) -> Option<Diagnostic> {
    match status {
        ScriptStatus::Infeasible => Some(Diagnostic::new(
            Category::Infeasible,
            "the script reports the model infeasible",
        )),
        ScriptStatus::Unknown => Some(Diagnostic::new(
            Category::Unknown,
            "the script reports unknown: no solution and no proof",
        )),
        ScriptStatus::Error => Some(Diagnostic::new(
            Category::ChildProcessError,
            "the script reports status error",
        )),
        ScriptStatus::Optimal | ScriptStatus::Feasible | ScriptStatus::Timeout => None,
    }
}

fn adopt(result: &mut CpsatPythonResult, reported: Envelope) {
    // A timeout stays one: the recovered incumbent is unproven.
    if result.status != ScriptStatus::Timeout {
        result.status = reported.status.into();
    }
    result.solution = Some(reported.solution);
    result.objective = reported.objective;
    result.best_objective_bound = reported.best_objective_bound;
}

/// The diagnostic of a checked run: a run timeout wins, else a checker
/// whose verdict is not `accepted`, else the run's own.
pub fn checked_diagnostic(
    run: &CpsatPythonResult,
    checker: Option<&CheckerReport>,
) -> Option<Diagnostic> {
    if run.status == ScriptStatus::Timeout {
        return run.diagnostic.clone();
    }
    if let Some(report) = checker
        && let Some(breach) = &report.breach
    {
        return Some(
            breach
                .diagnostic("the checker")
                .with_detail("checker_status", report.status.as_str())
                .with_detail("checker_verdict", report.verdict.as_str()),
        );
    }
    match checker.and_then(|report| Some((report, report.refusal()?))) {
        Some((report, refusal)) => Some(
            Diagnostic::new(Category::CheckerFailed, refusal)
                .with_detail("checker_status", report.status.as_str())
                .with_detail("checker_verdict", report.verdict.as_str()),
        ),
        None => run.diagnostic.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpsat::results::CheckerStatus;

    fn run(ending: Ending, return_code: Option<i32>, stdout: &str) -> RunOutput {
        RunOutput {
            ending,
            return_code,
            truncated: ending == Ending::Capped,
            elapsed_ms: 5,
            stdout: stdout.to_owned(),
            stderr: "Traceback...\nValueError: boom\n".to_owned(),
            sandbox: None,
            late_output_bytes: 0,
            escaped: 0,
            breach: None,
        }
    }

    const GOOD: &str = "{\"status\": \"optimal\", \"objective\": 3, \"solution\": {\"x\": 1}}\n";

    #[test]
    fn processes_that_outlived_the_script_are_reported_and_its_answer_kept() {
        let mut escaped = run(Ending::Exited, Some(0), GOOD);
        escaped.escaped = 2;
        escaped.late_output_bytes = 61;
        let result = script_result(escaped, 1000);
        assert_eq!(result.status, ScriptStatus::Optimal);
        assert_eq!(result.solution.unwrap()["x"], 1);
        let diagnostic = result.diagnostic.unwrap();
        assert_eq!(diagnostic.category, Category::ChildProcessError);
        assert!(
            diagnostic
                .message
                .contains("2 processes that left its session were killed"),
            "{}",
            diagnostic.message
        );
        let details = diagnostic.details.unwrap();
        assert_eq!(details["escaped_processes"], 2);
        assert_eq!(details["late_output_bytes"], 61);
    }

    #[test]
    fn a_clean_envelope_is_the_result() {
        let result = script_result(run(Ending::Exited, Some(0), GOOD), 1000);
        assert_eq!(result.status, ScriptStatus::Optimal);
        assert_eq!(result.objective.unwrap().as_i64(), Some(3));
        assert!(result.diagnostic.is_none());
    }

    #[test]
    fn contract_breaches_are_errors_with_a_field() {
        let result = script_result(
            run(
                Ending::Exited,
                Some(0),
                "{\"status\": \"optimal\", \"objective\": 1}\n",
            ),
            1000,
        );
        assert_eq!(result.status, ScriptStatus::Error);
        let diagnostic = result.diagnostic.unwrap();
        assert_eq!(diagnostic.category, Category::ChildProcessError);
        assert_eq!(diagnostic.details.unwrap()["field"], "solution");

        let result = script_result(run(Ending::Exited, Some(0), "no json here\n"), 1000);
        assert_eq!(
            result.diagnostic.unwrap().details.unwrap()["field"],
            "envelope"
        );

        let crashed = script_result(run(Ending::Exited, Some(1), "no json here\n"), 1000);
        assert_eq!(crashed.status, ScriptStatus::Error);
        assert!(
            crashed
                .diagnostic
                .unwrap()
                .message
                .contains("ValueError: boom")
        );
    }

    #[test]
    fn an_answer_printed_before_a_failing_exit_is_kept_with_a_diagnostic() {
        let result = script_result(run(Ending::Exited, Some(1), GOOD), 1000);
        assert_eq!(result.status, ScriptStatus::Optimal);
        assert_eq!(result.solution.unwrap()["x"], 1);
        let diagnostic = result.diagnostic.unwrap();
        assert_eq!(diagnostic.category, Category::ChildProcessError);
        assert!(diagnostic.message.contains("ValueError: boom"));
        assert!(diagnostic.message.contains("the answer is kept"));
    }

    #[test]
    fn a_timeout_recovers_the_last_valid_incumbent() {
        let partial = format!("{GOOD}{{\"status\": \"feas");
        let result = script_result(run(Ending::TimedOut, None, &partial), 1000);
        assert_eq!(result.status, ScriptStatus::Timeout);
        assert_eq!(result.solution.unwrap()["x"], 1);
        assert_eq!(
            result.diagnostic.unwrap().category,
            Category::TimeoutWithIncumbent
        );

        let malformed = "{\"status\": \"feasible\", \"objective\": 1, \"solution\": []}\n";
        let result = script_result(run(Ending::TimedOut, None, malformed), 1000);
        assert_eq!(result.status, ScriptStatus::Timeout);
        assert!(result.solution.is_none());
        let diagnostic = result.diagnostic.unwrap();
        assert_eq!(diagnostic.category, Category::TimeoutNoIncumbent);
        assert_eq!(
            diagnostic.details.unwrap()["rejected_partial_field"],
            "solution"
        );
    }

    /// The helper's `objective_unread` reason is never dropped: a clean
    /// answer says it in an `objective_unread` diagnostic, an `error` in
    /// its message, a timeout's incumbent in its details; an answer
    /// without it stays clean.
    #[test]
    fn an_unread_objective_is_a_diagnostic_not_a_silent_null() {
        let unread = "{\"status\": \"optimal\", \"objective\": null, \"solution\": {\"x\": 0}, \"objective_unread\": \"its solve was not seen\"}\n";
        let result = script_result(run(Ending::Exited, Some(0), unread), 1000);
        assert_eq!(result.status, ScriptStatus::Optimal);
        assert!(result.objective.is_none());
        let diagnostic = result.diagnostic.unwrap();
        assert_eq!(diagnostic.category, Category::ObjectiveUnread);
        assert!(
            diagnostic.message.contains("model="),
            "{}",
            diagnostic.message
        );
        assert_eq!(
            diagnostic.details.unwrap()["reason"],
            "its solve was not seen"
        );

        let never = "{\"status\": \"error\", \"objective\": null, \"solution\": {}, \"objective_unread\": \"this CpSolver has not solved a model\"}\n";
        let result = script_result(run(Ending::Exited, Some(0), never), 1000);
        assert_eq!(result.status, ScriptStatus::Error);
        let diagnostic = result.diagnostic.unwrap();
        assert_eq!(diagnostic.category, Category::ChildProcessError);
        assert!(
            diagnostic.message.contains("has not solved a model"),
            "{}",
            diagnostic.message
        );

        let partial = unread.replace("optimal", "feasible");
        let result = script_result(run(Ending::TimedOut, None, &partial), 1000);
        let diagnostic = result.diagnostic.unwrap();
        assert_eq!(diagnostic.category, Category::TimeoutWithIncumbent);
        assert_eq!(
            diagnostic.details.unwrap()["objective_unread"],
            "its solve was not seen"
        );

        let null_clean =
            "{\"status\": \"optimal\", \"objective\": null, \"solution\": {\"x\": 0}}\n";
        let result = script_result(run(Ending::Exited, Some(0), null_clean), 1000);
        assert!(result.diagnostic.is_none(), "{:?}", result.diagnostic);
    }

    /// A status word outside the contract is never passed through: the
    /// envelope is refused (status `error`, the field and the allowed
    /// words named), and on a timeout the partial is dropped and named.
    #[test]
    fn a_status_word_outside_the_contract_is_refused_not_passed_through() {
        let solved = "{\"status\": \"solved\", \"objective\": 3, \"solution\": {\"x\": 1}}\n";
        let result = script_result(run(Ending::Exited, Some(0), solved), 1000);
        assert_eq!(result.status, ScriptStatus::Error);
        assert!(result.solution.is_none() && result.objective.is_none());
        let diagnostic = result.diagnostic.unwrap();
        assert_eq!(diagnostic.category, Category::ChildProcessError);
        let reason = r#"must be one of "optimal", "feasible", "infeasible", "unknown", "error" (got the string "solved")"#;
        assert_eq!(
            diagnostic.message,
            format!("the envelope is invalid at status: {reason}")
        );
        let details = diagnostic.details.unwrap();
        assert_eq!(details["field"], "status");
        assert_eq!(details["reason"], reason);

        let timed_out = script_result(run(Ending::TimedOut, None, solved), 1000);
        assert_eq!(timed_out.status, ScriptStatus::Timeout);
        assert!(timed_out.solution.is_none());
        let diagnostic = timed_out.diagnostic.unwrap();
        assert_eq!(diagnostic.category, Category::TimeoutNoIncumbent);
        assert_eq!(
            diagnostic.details.unwrap()["rejected_partial_field"],
            "status"
        );

        // CP-SAT's own MODEL_INVALID is the contract's `error`, not a word
        // of its own.
        let invalid = "{\"status\": \"MODEL_INVALID\", \"objective\": null, \"solution\": {}}\n";
        let result = script_result(run(Ending::Exited, Some(0), invalid), 1000);
        assert_eq!(result.status, ScriptStatus::Error);
        assert_eq!(
            result.diagnostic.unwrap().message,
            "the script reports status error"
        );
    }

    #[test]
    fn the_cap_is_an_output_truncated_error() {
        let result = script_result(run(Ending::Capped, None, GOOD), 1000);
        assert_eq!(result.status, ScriptStatus::Error);
        assert_eq!(
            result.diagnostic.unwrap().category,
            Category::OutputTruncated
        );
    }

    #[test]
    fn an_envelope_cut_at_the_cap_is_named_as_cut_not_missing() {
        // What the executor keeps of a 7 MB envelope line: a head and a tail.
        let head = "{\"status\": \"optimal\", \"objective\": 1, \"solution\": {\"x\": [0, 1, 2, 3";
        let tail = "999997, 999998, 999999]}}\n";
        let mut cut = run(
            Ending::Exited,
            Some(0),
            &format!("{head}\n[… 6888890 bytes cut]\n{tail}"),
        );
        cut.truncated = true;
        let result = script_result(cut, 1000);
        assert_eq!(result.status, ScriptStatus::Error);
        let diagnostic = result.diagnostic.unwrap();
        assert_eq!(diagnostic.category, Category::OutputTruncated);
        assert!(
            diagnostic.message.contains("could not be read whole"),
            "{}",
            diagnostic.message
        );
        // Uncut, the same missing envelope is reported as missing.
        let missing = script_result(run(Ending::Exited, Some(0), "no envelope\n"), 1000);
        assert!(
            missing
                .diagnostic
                .unwrap()
                .message
                .starts_with("the script printed no JSON envelope")
        );
    }

    #[test]
    fn checker_verdicts_compose() {
        let clean = script_result(run(Ending::Exited, Some(0), GOOD), 1000);
        let report = |status: CheckerStatus, verdict: crate::verdict::Verdict| CheckerReport {
            status,
            verdict,
            ..super::super::checker::error_report(String::new())
        };
        let accepted = report(CheckerStatus::Accepted, crate::verdict::Verdict::Accepted);
        let rejected = report(CheckerStatus::Rejected, crate::verdict::Verdict::Rejected);
        assert!(checked_diagnostic(&clean, Some(&accepted)).is_none());
        let refused = checked_diagnostic(&clean, Some(&rejected)).unwrap();
        assert_eq!(refused.category, Category::CheckerFailed);
        let details = refused.details.unwrap();
        assert_eq!(details["checker_status"], "rejected");
        assert_eq!(details["checker_verdict"], "rejected");
        let timeout = script_result(run(Ending::TimedOut, None, GOOD), 1000);
        assert_eq!(
            checked_diagnostic(&timeout, Some(&rejected))
                .unwrap()
                .category,
            Category::TimeoutWithIncumbent
        );
    }

    #[test]
    fn python_syntax_errors_are_read_with_their_line() {
        let stderr = "  File \"/tmp/x/script.py\", line 7\n    x = = 1\n        ^\nSyntaxError: invalid syntax\n";
        assert_eq!(
            python_syntax_error(stderr),
            Some((7, "SyntaxError: invalid syntax".to_owned()))
        );
        let indentation =
            "  File \"/tmp/x/script.py\", line 3\n    y = 2\nIndentationError: unexpected indent\n";
        assert_eq!(
            python_syntax_error(indentation).map(|(line, _)| line),
            Some(3)
        );
        let runtime = "Traceback (most recent call last):\n  File \"/tmp/x/script.py\", line 2, in <module>\nZeroDivisionError: division by zero\n";
        assert_eq!(python_syntax_error(runtime), None);
    }
}
