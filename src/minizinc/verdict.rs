//! From a finished run to a result: status, diagnostic, text.
//!
//! Pure functions of the run's facts ([`RunOutput`]) and what the stream
//! said ([`StreamReport`]), so every rule here has a unit test.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use super::results::{
    CheckResult, InterfaceType, ModelInspectionResult, ModelInterface, PreflightStatus,
    SolveResult, SolveStatus,
};
use super::stream::{self, StreamError, StreamReport, StreamStatus};
use crate::diagnostics::{Category, Diagnostic};
use crate::exec::{Ending, RunOutput};
use crate::runtime::defects;

/// The status of a solve, first applicable rule wins:
/// timeout > error > unsatisfiable > unbounded > unsat_or_unbounded >
/// unknown > optimal > satisfied.
pub fn solve_status(run: &RunOutput, report: &StreamReport) -> SolveStatus {
    // A limit stopped the tree: what it found is kept, unproven.
    if run.breach.is_some() {
        return SolveStatus::Error;
    }
    if run.timed_out() || minizinc_timed_out(report) && report.solutions.is_empty() {
        return SolveStatus::Timeout;
    }
    // A return code we caused (output cap, a stop) says nothing about the model.
    if !matches!(run.ending, Ending::Capped | Ending::Stopped) && run.return_code != Some(0) {
        return SolveStatus::Error;
    }
    match &report.status {
        Some(StreamStatus::Unsatisfiable) => SolveStatus::Unsatisfiable,
        Some(StreamStatus::Unbounded) => SolveStatus::Unbounded,
        Some(StreamStatus::UnsatOrUnbounded) => SolveStatus::UnsatOrUnbounded,
        // 2.9 reports UNKNOWN when interrupted after solutions: the
        // solutions stand.
        Some(StreamStatus::Unknown) if !report.solutions.is_empty() => SolveStatus::Satisfied,
        Some(StreamStatus::Unknown) => SolveStatus::Unknown,
        Some(StreamStatus::Error) => SolveStatus::Error,
        Some(StreamStatus::OptimalSolution) => SolveStatus::Optimal,
        Some(StreamStatus::AllSolutions | StreamStatus::Other(_)) | None
            if !report.solutions.is_empty() =>
        {
            SolveStatus::Satisfied
        }
        Some(StreamStatus::AllSolutions | StreamStatus::Other(_)) | None
            if !report.errors.is_empty()
                && !matches!(run.ending, Ending::Capped | Ending::Stopped) =>
        {
            SolveStatus::Error
        }
        Some(StreamStatus::AllSolutions | StreamStatus::Other(_)) | None => SolveStatus::Unknown,
    }
}

/// The `resource_limit` diagnostic of a solve a limit stopped, with the
/// solve's facts; solutions found before it are kept, unproven.
pub fn breach_diagnostic(result: &SolveResult, breach: &crate::exec::Breach) -> Diagnostic {
    let mut diagnostic = breach.diagnostic("MiniZinc");
    let found = result.solutions.len();
    if found > 0 {
        diagnostic.message = format!(
            "{}; the {found} solution(s) found before are kept, unproven",
            diagnostic.message
        );
    }
    diagnostic
        .with_detail("return_code", result.return_code)
        .with_detail("timed_out", result.timed_out)
        .with_detail("truncated", result.truncated)
        .with_detail("solver", result.solver.clone())
}

/// MiniZinc stopped itself at `--time-limit` before it finished compiling.
fn minizinc_timed_out(report: &StreamReport) -> bool {
    report.errors.iter().any(|error| error.what == "time out")
}

/// What the facts of a solve mean for a client, or `None` on a clean success.
pub fn solve_diagnostic(
    result: &SolveResult,
    report: &StreamReport,
    timeout_ms: u64,
    all_solutions: bool,
) -> Option<Diagnostic> {
    let base = |category: Category, message: String| {
        Diagnostic::new(category, message)
            .with_detail("return_code", result.return_code)
            .with_detail("timed_out", result.timed_out)
            .with_detail("truncated", result.truncated)
            .with_detail("solver", result.solver.clone())
    };
    let found = result.solutions.len();
    if result.truncated {
        return Some(base(
            Category::OutputTruncated,
            format!(
                "output went over the 1 MiB cap and was cut; {found} solution(s) parsed before the cut are kept — page with num_solutions or print less"
            ),
        ));
    }
    // A watched run kept one of the solutions it found: count them all.
    let found = found.max(usize::try_from(report.watched).unwrap_or(usize::MAX));
    let diagnostic = match result.status {
        SolveStatus::Timeout if found > 0 => base(
            Category::TimeoutWithIncumbent,
            format!(
                "stopped at the {timeout_ms} ms limit; the best of {found} solution(s) is returned, unproven"
            ),
        ),
        SolveStatus::Timeout => base(
            Category::TimeoutNoIncumbent,
            format!("stopped at the {timeout_ms} ms limit before any solution"),
        ),
        SolveStatus::Error => {
            let (category, message) = classify_error(&report.errors, &result.stderr);
            with_defect(base(category, message), report)
        }
        SolveStatus::Unsatisfiable => base(
            Category::Infeasible,
            "the model is unsatisfiable".to_owned(),
        ),
        SolveStatus::Unbounded => {
            base(Category::Unbounded, "the objective is unbounded".to_owned())
        }
        SolveStatus::UnsatOrUnbounded => base(
            Category::InfeasibleOrUnbounded,
            "the model is unsatisfiable or unbounded; the solver cannot tell which".to_owned(),
        ),
        SolveStatus::Unknown if result.elapsed_ms >= timeout_ms => base(
            Category::TimeoutNoIncumbent,
            format!("the solver reached the {timeout_ms} ms limit without a solution or a proof"),
        ),
        SolveStatus::Unknown => base(
            Category::Unknown,
            "the solver finished without a solution or a verdict".to_owned(),
        ),
        SolveStatus::Optimal | SolveStatus::Satisfied => {
            if let Some(checker) = &result.checker
                && let Some(refusal) = checker.refusal()
            {
                return Some(
                    base(Category::CheckerFailed, refusal)
                        .with_detail("checker_status", checker.status.as_str())
                        .with_detail("checker_verdict", checker.verdict.as_str()),
                );
            }
            let optimising = matches!(report.method(), Some("minimize" | "maximize"));
            if result.status == SolveStatus::Satisfied && optimising && !all_solutions {
                return Some(unproven(result, timeout_ms, base));
            }
            return None;
        }
    };
    Some(diagnostic)
}

/// An optimisation that ended with solutions but no proof: say what
/// stopped it. MiniZinc's own `--time-limit` (the run's time reached the
/// budget) is a time limit; an earlier end is the solver's own, and its
/// output says why.
fn unproven(
    result: &SolveResult,
    timeout_ms: u64,
    base: impl Fn(Category, String) -> Diagnostic,
) -> Diagnostic {
    let found = result.solutions.len();
    let elapsed = result.elapsed_ms;
    if result.timed_out || elapsed >= timeout_ms {
        return base(
            Category::TimeoutWithIncumbent,
            format!(
                "the {timeout_ms} ms time limit stopped the search before it proved optimality; the best of {found} solution(s) is returned, unproven"
            ),
        )
        .with_detail("time_limit_reached", true);
    }
    let said = result
        .stderr
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .map(|line| format!(": {line}"))
        .unwrap_or_default();
    base(
        Category::Unknown,
        format!(
            "the solver ended after {elapsed} ms, before the {timeout_ms} ms time limit, without proving optimality{said}; the best of {found} solution(s) is returned, unproven"
        ),
    )
    .with_detail("time_limit_reached", false)
}

/// Phrases MiniZinc uses when a listed solver cannot run (missing plugin,
/// library or licence), on the stream or on stderr.
const SOLVER_UNUSABLE: &[&str] = &[
    "no solver with tag",
    "config exception",
    "plugin loading error",
    "failed to load plugin",
    "cannot load",
    "could not load",
];

/// Sorts a failed compile or run into a category with a one-line message.
/// The known runtime defect (see [`defects`]) the errors show, if any: the
/// `runtime_defect` detail of the diagnostic.
pub fn runtime_defect(errors: &[StreamError]) -> Option<&'static str> {
    errors
        .iter()
        .any(|error| {
            error.what == "type error"
                && error
                    .location
                    .as_deref()
                    .is_some_and(|location| defects::is_broken_globals(location, &error.message))
        })
        .then_some(defects::BROKEN_GLOBALS)
}

pub fn classify_error(errors: &[StreamError], stderr: &str) -> (Category, String) {
    let (category, mut message) = classify(errors, stderr);
    let said = errors.iter().map(|error| error.message.as_str());
    if let Some(hint) = std::iter::once(stderr)
        .chain(said)
        .find_map(crate::exec::sandbox::refusal_hint)
    {
        message.push_str(hint);
    }
    (category, message)
}

fn classify(errors: &[StreamError], stderr: &str) -> (Category, String) {
    let unusable = |text: &str| {
        let text = text.to_ascii_lowercase();
        SOLVER_UNUSABLE.iter().any(|phrase| text.contains(phrase))
    };
    if let Some(error) = errors.iter().find(|error| unusable(&error.message)) {
        return (Category::SolverUnavailable, error.render());
    }
    if runtime_defect(errors).is_some() {
        return (
            Category::SolverUnavailable,
            format!(
                "not a mistake in the model: {}",
                defects::BROKEN_GLOBALS_ADVICE
            ),
        );
    }
    if let Some(first) = errors.first() {
        let message = first.render();
        let lower = first.message.to_ascii_lowercase();
        let in_checker = first
            .location
            .as_deref()
            .is_some_and(|location| location.contains(".mzc"));
        let category = match first.what.as_str() {
            _ if in_checker => Category::CheckerFailed,
            "syntax error" => Category::SyntaxOrCompileError,
            "type error"
                if lower.contains("must be defined")
                    || lower.contains("forget to specify a data file") =>
            {
                Category::MissingData
            }
            "type error" => Category::TypeError,
            "time out" => Category::TimeoutNoIncumbent,
            _ if lower.contains("no value") || lower.contains("undefined identifier") => {
                Category::MissingData
            }
            _ => Category::SyntaxOrCompileError,
        };
        return (category, message);
    }
    let first_line = failure_line(stderr)
        .unwrap_or("minizinc failed without a message")
        .to_owned();
    let lower = stderr.to_ascii_lowercase();
    let category = if unusable(stderr) {
        Category::SolverUnavailable
    } else if lower.contains("syntax error") {
        Category::SyntaxOrCompileError
    } else if lower.contains("type error") {
        Category::TypeError
    } else {
        Category::Unknown
    };
    (category, first_line)
}

/// The line of `stderr` that says why a run failed: the first naming an
/// error, exception, failed assertion, abort or crash; else the first that
/// is not a warning (a solver's harmless warning is not its failure); else
/// the first.
fn failure_line(stderr: &str) -> Option<&str> {
    const FAILURE: &[&str] = &[
        "error",
        "exception",
        "assertion",
        "abort",
        "segmentation fault",
        "terminate called",
        "fatal",
        "killed",
    ];
    let lines = || {
        stderr
            .lines()
            .map(str::trim)
            .filter(|line| !line.is_empty())
    };
    let warning = |line: &str| line.to_ascii_lowercase().starts_with("warning");
    lines()
        .find(|line| {
            let lower = line.to_ascii_lowercase();
            !warning(line) && FAILURE.iter().any(|word| lower.contains(word))
        })
        .or_else(|| lines().find(|line| !warning(line)))
        .or_else(|| lines().next())
}

/// The solutions as text, MiniZinc-style: each block then `----------`,
/// and the closing line for a completed search.
pub fn solution_text(report: &StreamReport) -> String {
    let mut text = String::new();
    for solution in &report.solutions {
        text.push_str(&solution.text);
        if !solution.text.is_empty() && !solution.text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str("----------\n");
    }
    let closing = match &report.status {
        Some(StreamStatus::OptimalSolution | StreamStatus::AllSolutions) => "==========\n",
        Some(StreamStatus::Unsatisfiable) => "=====UNSATISFIABLE=====\n",
        Some(StreamStatus::Unbounded) => "=====UNBOUNDED=====\n",
        Some(StreamStatus::UnsatOrUnbounded) => "=====UNSATorUNBOUNDED=====\n",
        Some(StreamStatus::Unknown) => "=====UNKNOWN=====\n",
        Some(StreamStatus::Error) => "=====ERROR=====\n",
        Some(StreamStatus::Other(_)) | None => "",
    };
    text.push_str(closing);
    text
}

/// The process's stderr with the stream's errors, warnings and traces folded
/// in, each after what is already there.
///
/// A note is left out only when the process stderr already holds it as a
/// whole line, compared by [`line_key`] (MiniZinc may print a warning on
/// both channels, once with its location and once without). Each stderr line
/// stands for one note: a trace printed twice on the stream is kept twice
/// unless stderr printed it twice too. Lines are compared exactly, never as
/// substrings (`x = 1` is not inside `x = 10`), in time linear in the text.
pub fn merged_stderr(stderr: &str, report: &StreamReport) -> String {
    let mut present: HashMap<&str, usize> = HashMap::new();
    for line in stderr.lines() {
        *present.entry(line_key(line)).or_default() += 1;
    }
    let mut merged = stderr.to_owned();
    let notes = report
        .notes
        .iter()
        .cloned()
        .chain(report.errors.iter().map(StreamError::render));
    for note in notes {
        if take_lines(&mut present, &note) {
            continue;
        }
        if !merged.is_empty() && !merged.ends_with('\n') {
            merged.push('\n');
        }
        merged.push_str(&note);
        merged.push('\n');
    }
    merged
}

/// What two lines must share to be the same message: from the last
/// `Warning: ` (else `Error: `) to the end, so a location prefix or an
/// indent does not matter; otherwise the whole line. Trailing white space
/// never counts.
fn line_key(line: &str) -> &str {
    let line = line.trim_end();
    line.rfind("Warning: ")
        .or_else(|| line.rfind("Error: "))
        .map_or(line, |start| &line[start..])
}

/// Whether every line of `note` is still unclaimed in `present`; if so they
/// are claimed. An empty note counts as present (nothing to add).
fn take_lines(present: &mut HashMap<&str, usize>, note: &str) -> bool {
    let mut wanted: HashMap<&str, usize> = HashMap::new();
    for line in note.lines() {
        *wanted.entry(line_key(line)).or_default() += 1;
    }
    let all_there = wanted
        .iter()
        .all(|(key, count)| present.get(key).is_some_and(|have| have >= count));
    if all_there {
        for (key, count) in wanted {
            if let Some(have) = present.get_mut(key) {
                *have -= count;
            }
        }
    }
    all_there
}

/// Status of a compile check or an inspection.
fn preflight_status(run: &RunOutput, report: &StreamReport) -> PreflightStatus {
    if run.breach.is_some() {
        PreflightStatus::Error
    } else if run.timed_out() || minizinc_timed_out(report) {
        PreflightStatus::Timeout
    } else if run.return_code == Some(0) {
        PreflightStatus::Ok
    } else {
        PreflightStatus::Error
    }
}

fn preflight_diagnostic(
    status: PreflightStatus,
    run: &RunOutput,
    report: &StreamReport,
    stderr: &str,
    timeout_ms: u64,
) -> Option<Diagnostic> {
    if let Some(breach) = &run.breach {
        return Some(
            breach
                .diagnostic("MiniZinc")
                .with_detail("return_code", run.return_code)
                .with_detail("timed_out", run.timed_out())
                .with_detail("truncated", run.truncated),
        );
    }
    let diagnostic = if run.truncated {
        Diagnostic::new(
            Category::OutputTruncated,
            "output went over the 1 MiB cap and was cut",
        )
    } else {
        match status {
            PreflightStatus::Timeout => Diagnostic::new(
                Category::TimeoutNoIncumbent,
                format!("did not finish within {timeout_ms} ms"),
            ),
            PreflightStatus::Error => {
                let (category, message) = classify_error(&report.errors, stderr);
                with_defect(Diagnostic::new(category, message), report)
            }
            PreflightStatus::Ok => return None,
        }
    };
    Some(
        diagnostic
            .with_detail("return_code", run.return_code)
            .with_detail("timed_out", run.timed_out())
            .with_detail("truncated", run.truncated),
    )
}

/// `diagnostic` naming the runtime defect the report shows, if any.
fn with_defect(diagnostic: Diagnostic, report: &StreamReport) -> Diagnostic {
    match runtime_defect(&report.errors) {
        Some(defect) => diagnostic.with_detail("runtime_defect", defect),
        None => diagnostic,
    }
}

/// Builds a [`CheckResult`].
pub fn check_result(
    run: RunOutput,
    report: &StreamReport,
    solver: String,
    timeout_ms: u64,
) -> CheckResult {
    let status = preflight_status(&run, report);
    let stderr = merged_stderr(&run.stderr, report);
    let diagnostic = preflight_diagnostic(status, &run, report, &stderr, timeout_ms);
    CheckResult {
        status,
        solver,
        truncated: run.truncated,
        // Warnings and errors arrive as messages on stdout; they are in
        // `stderr` (and the diagnostic) once, not here again.
        stdout: stream::plain_lines(&run.stdout),
        stderr,
        elapsed_ms: run.elapsed_ms,
        diagnostic,
    }
}

/// Builds a [`ModelInspectionResult`].
pub fn inspection_result(
    run: RunOutput,
    report: &StreamReport,
    solver: String,
    timeout_ms: u64,
) -> ModelInspectionResult {
    let mut status = preflight_status(&run, report);
    let interface = if status == PreflightStatus::Ok {
        let interface = report.interface.as_ref().map(model_interface);
        if interface.is_none() {
            status = PreflightStatus::Error;
        }
        interface
    } else {
        None
    };
    let stderr = merged_stderr(&run.stderr, report);
    let mut diagnostic = preflight_diagnostic(status, &run, report, &stderr, timeout_ms);
    if status == PreflightStatus::Error && diagnostic.is_none() {
        diagnostic = Some(Diagnostic::new(
            Category::Unknown,
            "minizinc printed no interface",
        ));
    }
    ModelInspectionResult {
        status,
        solver,
        interface,
        truncated: run.truncated,
        stdout: run.stdout,
        stderr,
        elapsed_ms: run.elapsed_ms,
        diagnostic,
    }
}

fn model_interface(message: &serde_json::Map<String, Value>) -> ModelInterface {
    let types = |key: &str| -> BTreeMap<String, InterfaceType> {
        message
            .get(key)
            .and_then(Value::as_object)
            .map(|entries| {
                entries
                    .iter()
                    .map(|(name, entry)| (name.clone(), interface_type(entry)))
                    .collect()
            })
            .unwrap_or_default()
    };
    let strings = |key: &str| -> Vec<String> {
        message
            .get(key)
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter_map(|item| item.as_str().map(|s| s.trim().to_owned()))
                    .collect()
            })
            .unwrap_or_default()
    };
    ModelInterface {
        method: message
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or("sat")
            .to_owned(),
        required_parameters: types("input"),
        output_variables: types("output"),
        has_output_item: message
            .get("has_output_item")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        globals: strings("globals"),
        included_files: strings("included_files"),
    }
}

fn interface_type(entry: &Value) -> InterfaceType {
    let flag = |key: &str| entry.get(key).and_then(Value::as_bool).unwrap_or(false);
    InterfaceType {
        base_type: entry
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("unknown")
            .to_owned(),
        dim: entry
            .get("dim")
            .and_then(Value::as_u64)
            .and_then(|dim| u32::try_from(dim).ok())
            .unwrap_or(0),
        is_set: flag("set"),
        is_optional: flag("optional"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_is_named_by_its_own_line_not_a_warning() {
        let stderr = "WARNING: the --time-out flag has recently been changed.\nfzn-chuffed: int-var.cpp:42: IntVar::IntVar(int, int): Assertion `min <= max' failed.\n";
        assert_eq!(
            failure_line(stderr),
            Some(
                "fzn-chuffed: int-var.cpp:42: IntVar::IntVar(int, int): Assertion `min <= max' failed."
            )
        );
        assert_eq!(
            failure_line("Warning: slow\nsomething went wrong\n"),
            Some("something went wrong")
        );
        assert_eq!(
            failure_line("warning: only this\n"),
            Some("warning: only this")
        );
        assert_eq!(failure_line("\n  \n"), None);
    }

    fn run(ending: Ending, return_code: Option<i32>) -> RunOutput {
        RunOutput {
            ending,
            return_code,
            truncated: ending == Ending::Capped,
            elapsed_ms: 10,
            stdout: String::new(),
            stderr: String::new(),
            sandbox: None,
            late_output_bytes: 0,
            escaped: 0,
            breach: None,
        }
    }

    const ONE_SOLUTION: &str = r#"{"type": "solution", "output": {"json": {"x": 1}}}"#;

    #[test]
    fn status_precedence() {
        let solved = stream::parse(ONE_SOLUTION, false);
        let optimal = stream::parse(
            &format!("{ONE_SOLUTION}\n{{\"type\": \"status\", \"status\": \"OPTIMAL_SOLUTION\"}}"),
            false,
        );
        let unsat = stream::parse(r#"{"type": "status", "status": "UNSATISFIABLE"}"#, false);
        let nothing = StreamReport::default();
        let compile_timeout = stream::parse(
            r#"{"type": "error", "what": "time out", "message": "time limit reached"}"#,
            false,
        );
        let cases = [
            (run(Ending::TimedOut, None), &solved, "timeout"),
            (run(Ending::Exited, Some(1)), &solved, "error"),
            (run(Ending::Exited, Some(1)), &compile_timeout, "timeout"),
            (run(Ending::Exited, Some(0)), &unsat, "unsatisfiable"),
            (run(Ending::Exited, Some(0)), &optimal, "optimal"),
            (run(Ending::Exited, Some(0)), &solved, "satisfied"),
            (run(Ending::Exited, Some(0)), &nothing, "unknown"),
            (run(Ending::Capped, None), &solved, "satisfied"),
            (run(Ending::Capped, None), &nothing, "unknown"),
            (run(Ending::Capped, None), &optimal, "optimal"),
        ];
        for (run, report, expected) in cases {
            assert_eq!(solve_status(&run, report).as_str(), expected, "{run:?}");
        }
    }

    #[test]
    fn errors_are_classified() {
        let parse = |line: &str| stream::parse(line, false).errors;
        let syntax =
            parse(r#"{"type": "error", "what": "syntax error", "message": "unexpected item"}"#);
        assert_eq!(
            classify_error(&syntax, "").0,
            Category::SyntaxOrCompileError
        );
        let missing = parse(
            r#"{"type": "error", "what": "type error", "message": "  symbol error: variable `n' must be defined (did you forget to specify a data file?)"}"#,
        );
        assert_eq!(classify_error(&missing, "").0, Category::MissingData);
        let typing = parse(
            r#"{"type": "error", "what": "type error", "message": "type-inst variable $T instantiated with different types"}"#,
        );
        assert_eq!(classify_error(&typing, "").0, Category::TypeError);
        assert_eq!(
            classify_error(&[], "Config exception: no solver with tag foo found").0,
            Category::SolverUnavailable
        );
        let plugin = parse(
            r#"{"type": "error", "what": "Error", "message": "plugin loading error: Failed to load plugin libscip"}"#,
        );
        assert_eq!(classify_error(&plugin, "").0, Category::SolverUnavailable);
        let dll = parse(
            r#"{"type": "error", "what": "Error", "message": "cannot load cplex dll, specify --cplex-dll"}"#,
        );
        assert_eq!(classify_error(&dll, "").0, Category::SolverUnavailable);
        let checker = parse(
            r#"{"type": "error", "what": "syntax error", "location": {"filename": "/tmp/x/checker.mzc.mzn", "firstLine": 1, "firstColumn": 1}, "message": "unexpected"}"#,
        );
        assert_eq!(classify_error(&checker, "").0, Category::CheckerFailed);
        assert_eq!(classify_error(&[], "").0, Category::Unknown);
    }

    #[test]
    fn stream_notes_join_stderr_once() {
        let report = stream::parse(
            r#"{"type": "warning", "message": "included file \"count.mzn\" overrides a global"}
{"type": "error", "what": "syntax error", "message": "unexpected item"}"#,
            false,
        );
        let merged = merged_stderr(
            "Warning: included file \"count.mzn\" overrides a global\n",
            &report,
        );
        assert_eq!(merged.matches("count.mzn").count(), 1);
        assert!(merged.ends_with("Error: syntax error: unexpected item\n"));
    }

    fn with_notes(notes: &[&str]) -> StreamReport {
        StreamReport {
            notes: notes.iter().map(|note| (*note).to_owned()).collect(),
            ..StreamReport::default()
        }
    }

    #[test]
    fn a_note_inside_a_longer_line_is_kept() {
        let merged = merged_stderr("", &with_notes(&["x = 10", "x = 1"]));
        assert_eq!(merged, "x = 10\nx = 1\n");
        let merged = merged_stderr("x = 10\n", &with_notes(&["x = 1"]));
        assert_eq!(merged, "x = 10\nx = 1\n");
        let merged = merged_stderr("x = 1", &with_notes(&["x = 10"]));
        assert_eq!(merged, "x = 1\nx = 10\n");
    }

    #[test]
    fn a_line_already_on_stderr_is_not_repeated() {
        let merged = merged_stderr("x = 1\nWarning: w\n", &with_notes(&["x = 1", "Warning: w"]));
        assert_eq!(merged, "x = 1\nWarning: w\n");
        // The same warning with a location on one side only.
        let merged = merged_stderr("  Warning: w\n", &with_notes(&["/m.mzn:3.1: Warning: w"]));
        assert_eq!(merged, "  Warning: w\n");
        // One stderr line stands for one note: a second trace is kept.
        let merged = merged_stderr("x = 1\n", &with_notes(&["x = 1", "x = 1"]));
        assert_eq!(merged, "x = 1\nx = 1\n");
        // A multi-line trace is present only when all its lines are.
        let merged = merged_stderr("a\nb\n", &with_notes(&["a\nb", "a\nc"]));
        assert_eq!(merged, "a\nb\na\nc\n");
        // A warning's text is not the same line as an error's.
        let merged = merged_stderr("Error: w\n", &with_notes(&["Warning: w"]));
        assert_eq!(merged, "Error: w\nWarning: w\n");
    }

    #[test]
    fn twenty_thousand_notes_merge_in_linear_time() {
        let notes: Vec<String> = (0..20_000).map(|i| format!("x = {i}")).collect();
        let stderr: String = (0..20_000)
            .step_by(2)
            .map(|i| format!("x = {i}\n"))
            .collect();
        let report = StreamReport {
            notes,
            ..StreamReport::default()
        };
        let merged = merged_stderr(&stderr, &report);
        assert_eq!(merged.lines().count(), 20_000);
        assert!(merged.ends_with("x = 19999\n"));
    }

    #[test]
    fn solution_text_uses_minizinc_separators() {
        let report = stream::parse(
            &format!("{ONE_SOLUTION}\n{{\"type\": \"status\", \"status\": \"OPTIMAL_SOLUTION\"}}"),
            false,
        );
        assert_eq!(solution_text(&report), "x = 1;\n----------\n==========\n");
    }

    #[test]
    fn interface_types() {
        let report = stream::parse(
            r#"{"type": "interface", "input": {"w": {"type" : "int", "dim" : 1}, "o": {"type": "int", "optional": true}}, "output": {"s": {"type" : "int", "set" : true}}, "method": "min", "has_output_item": true, "included_files": [], "globals": [    "alldifferent"]}"#,
            false,
        );
        let interface = model_interface(report.interface.as_ref().unwrap());
        assert_eq!(interface.method, "min");
        assert_eq!(interface.required_parameters["w"].dim, 1);
        assert!(interface.required_parameters["o"].is_optional);
        assert!(interface.output_variables["s"].is_set);
        assert_eq!(interface.globals, ["alldifferent"]);
    }
}
