//! Diagnostic categories: the one stable vocabulary a client branches on.
//!
//! Every result that can go wrong carries `diagnostic: Option<Diagnostic>`;
//! `None` is the clean-success signal. Problems found before any result exists
//! (bad arguments, a missing runtime) travel as a [`ToolError`], whose text
//! starts `Diagnostic: <category> — <message>` so a client can parse the
//! category out of an MCP error too.
//!
//! [`causes`] reads an error's `source()` chain the one way both faces
//! show it: the CLI as `Caused by:` lines, a tool's text joined by `: `.
//! [`error_gist`] is what a failed child said last, bounded, for a message
//! or a text part.
//!
//! Do not rename a category: the snake_case names are a public contract.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// What happened, in a word a client can branch on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// The model did not compile.
    SyntaxOrCompileError,
    /// A parameter the model needs has no value.
    MissingData,
    /// A type or type-inst error.
    TypeError,
    /// The requested solver is unknown or cannot run.
    SolverUnavailable,
    /// The model is unsatisfiable.
    Infeasible,
    /// The objective is unbounded.
    Unbounded,
    /// Unsatisfiable or unbounded; the solver cannot tell which.
    InfeasibleOrUnbounded,
    /// The time limit hit before any solution.
    TimeoutNoIncumbent,
    /// The time limit hit; the best solution so far is returned.
    TimeoutWithIncumbent,
    /// A job was cancelled.
    Cancelled,
    /// A background job failed without a result.
    JobFailed,
    /// A child process failed or broke its output contract.
    ChildProcessError,
    /// The child's output went over the 1 MiB cap and was cut.
    OutputTruncated,
    /// A save target is invalid or occupied.
    InvalidSaveTarget,
    /// A verification gate rejected the result.
    NotVerified,
    /// The solution checker rejected, errored or timed out.
    CheckerFailed,
    /// The MiniZinc runtime is not installed where we look.
    RuntimeMissing,
    /// A requested control or feature is not supported.
    UnsupportedFeature,
    /// Malformed or invalid input, rejected before any run.
    InvalidRequest,
    /// A portfolio or experiment accepted no attempt.
    NoWinner,
    /// The run went over a memory, process, file-size or scratch limit.
    ResourceLimit,
    /// A CP-SAT script's answer has a solution, but the `solvergate` helper
    /// could not tell whether the model solved has an objective, so
    /// `objective` is `null` without meaning "no objective".
    ObjectiveUnread,
    /// Nothing safer to say: read the raw status and stderr.
    Unknown,
}

impl Category {
    /// Every category, in the order of the public table.
    pub const ALL: [Category; 23] = [
        Category::SyntaxOrCompileError,
        Category::MissingData,
        Category::TypeError,
        Category::SolverUnavailable,
        Category::Infeasible,
        Category::Unbounded,
        Category::InfeasibleOrUnbounded,
        Category::TimeoutNoIncumbent,
        Category::TimeoutWithIncumbent,
        Category::Cancelled,
        Category::JobFailed,
        Category::ChildProcessError,
        Category::OutputTruncated,
        Category::InvalidSaveTarget,
        Category::NotVerified,
        Category::CheckerFailed,
        Category::RuntimeMissing,
        Category::UnsupportedFeature,
        Category::InvalidRequest,
        Category::NoWinner,
        Category::ResourceLimit,
        Category::ObjectiveUnread,
        Category::Unknown,
    ];

    /// The snake_case wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Category::SyntaxOrCompileError => "syntax_or_compile_error",
            Category::MissingData => "missing_data",
            Category::TypeError => "type_error",
            Category::SolverUnavailable => "solver_unavailable",
            Category::Infeasible => "infeasible",
            Category::Unbounded => "unbounded",
            Category::InfeasibleOrUnbounded => "infeasible_or_unbounded",
            Category::TimeoutNoIncumbent => "timeout_no_incumbent",
            Category::TimeoutWithIncumbent => "timeout_with_incumbent",
            Category::Cancelled => "cancelled",
            Category::JobFailed => "job_failed",
            Category::ChildProcessError => "child_process_error",
            Category::OutputTruncated => "output_truncated",
            Category::InvalidSaveTarget => "invalid_save_target",
            Category::NotVerified => "not_verified",
            Category::CheckerFailed => "checker_failed",
            Category::RuntimeMissing => "runtime_missing",
            Category::UnsupportedFeature => "unsupported_feature",
            Category::InvalidRequest => "invalid_request",
            Category::NoWinner => "no_winner",
            Category::ResourceLimit => "resource_limit",
            Category::ObjectiveUnread => "objective_unread",
            Category::Unknown => "unknown",
        }
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A categorised note attached to a result: present only when there is
/// something to act on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Diagnostic {
    /// Stable category to branch on.
    pub category: Category,
    /// One-line human summary.
    pub message: String,
    /// Compact machine-readable facts (return_code, timed_out, solver, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Map<String, Value>>,
}

impl Diagnostic {
    /// A diagnostic with no details; add them with [`Self::with_detail`].
    pub fn new(category: Category, message: impl Into<String>) -> Self {
        Diagnostic {
            category,
            message: message.into(),
            details: None,
        }
    }

    /// Adds one machine-readable fact.
    pub fn with_detail(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.details
            .get_or_insert_with(Map::new)
            .insert(key.to_owned(), value.into());
        self
    }
}

/// A problem found before any result exists: bad arguments, a missing
/// runtime, a binary that would not start.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("Diagnostic: {} — {}", .0.category, .0.message)]
pub struct ToolError(pub Diagnostic);

impl ToolError {
    /// An error of `category` with a one-line `message`, no details.
    pub fn new(category: Category, message: impl Into<String>) -> Self {
        ToolError(Diagnostic::new(category, message))
    }

    /// An [`Category::InvalidRequest`]: the arguments are wrong, and `message`
    /// says which and how.
    pub fn invalid(message: impl Into<String>) -> Self {
        ToolError::new(Category::InvalidRequest, message)
    }

    /// The category a caller branches on (`cancelled`, `not_verified`, ...).
    pub fn category(&self) -> Category {
        self.0.category
    }
}

/// The causes under `error`, outermost first: each `source()` in turn,
/// except one its parent's message already ends with. Some errors say their
/// cause themselves because a tool's text shows only their message
/// (`exec::ExecError`, whose text every service puts in a [`ToolError`]);
/// their cause is not repeated.
pub fn causes(error: &dyn std::error::Error) -> Vec<String> {
    let mut causes = Vec::new();
    let mut parent = error.to_string();
    let mut next = error.source();
    while let Some(cause) = next {
        let text = cause.to_string();
        if !parent.ends_with(&text) {
            causes.push(text.clone());
        }
        parent = text;
        next = cause.source();
    }
    causes
}

/// `error`'s message and its [`causes`] on one line, joined by `: `: what a
/// tool's error text says where the CLI prints `Caused by:` lines.
pub fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    for cause in causes(error) {
        text.push_str(": ");
        text.push_str(&cause);
    }
    text
}

/// The most of one line of a child's error quoted in a message, in bytes.
pub const ERROR_LINE_LIMIT: usize = 300;

/// The most lines of a child's error quoted in a message.
pub const ERROR_LINES: usize = 5;

/// What a failed Python program said last, from its `stderr`: a
/// traceback's exception (its lines after the last frame) and the frame it
/// was raised in (`raised at File "checker.py", line 5, in ratio`, the path
/// cut to its file name), or else its last few non-blank lines. Bounded
/// however much it wrote: at most [`ERROR_LINES`] lines of at most
/// [`ERROR_LINE_LIMIT`] bytes. Empty when it wrote nothing but blanks.
pub fn error_gist(stderr: &str) -> Vec<String> {
    let lines: Vec<&str> = stderr.lines().collect();
    let start = lines
        .iter()
        .rposition(|line| line.starts_with("Traceback (most recent call last):"))
        .map_or(0, |header| header + 1);
    let tail = &lines[start..];
    let frame = tail
        .iter()
        .rposition(|line| line.trim_start().starts_with("File \"") && line.starts_with(' '));
    let gist: Vec<String> = match frame {
        Some(frame) => {
            let after_frames = tail
                .iter()
                .rposition(|line| line.starts_with(char::is_whitespace))
                .map_or(frame + 1, |last| last + 1);
            let mut gist: Vec<String> = tail[after_frames..]
                .iter()
                .filter(|line| !line.trim().is_empty())
                .take(ERROR_LINES - 1)
                .map(|line| line.trim_end().to_owned())
                .collect();
            gist.push(format!("raised at {}", frame_line(tail[frame].trim())));
            gist
        }
        None => {
            let mut gist: Vec<String> = lines
                .iter()
                .rev()
                .filter(|line| !line.trim().is_empty())
                .take(3)
                .map(|line| line.trim_end().to_owned())
                .collect();
            gist.reverse();
            gist
        }
    };
    gist.into_iter()
        .map(|line| cut_line(line, ERROR_LINE_LIMIT))
        .collect()
}

/// `File "/a/b/checker.py", line 5, in ratio` with the path cut to its
/// file name; any other line as it is.
fn frame_line(line: &str) -> String {
    let Some((path, rest)) = line
        .strip_prefix("File \"")
        .and_then(|after| after.split_once('"'))
    else {
        return line.to_owned();
    };
    let name = std::path::Path::new(path)
        .file_name()
        .map_or(path.into(), |name| name.to_string_lossy());
    format!("File \"{name}\"{rest}")
}

/// `line` within `limit` bytes, cut at a char boundary with `…` when it is
/// longer.
fn cut_line(mut line: String, limit: usize) -> String {
    if line.len() <= limit {
        return line;
    }
    let mut end = limit;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    line.truncate(end);
    line.push('…');
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gist_of_a_traceback_is_its_exception_and_where_it_was_raised() {
        let stderr = "Traceback (most recent call last):\n  File \"/tmp/x/checker.py\", line 7, in <module>\n    print(ratio(p))\n          ^^^^^^^^\n  File \"/tmp/x/checker.py\", line 5, in ratio\n    return s[0] / 0\n           ~~~~~^~~\nZeroDivisionError: division by zero\n";
        assert_eq!(
            error_gist(stderr),
            [
                "ZeroDivisionError: division by zero",
                "raised at File \"checker.py\", line 5, in ratio"
            ]
        );
        // A chain: the last traceback's exception, its lines all kept.
        let chained = format!(
            "{stderr}\nThe above exception was the direct cause of the following exception:\n\nTraceback (most recent call last):\n  File \"c.py\", line 9, in <module>\nValueError: bad\nsecond line of the message\n"
        );
        assert_eq!(
            error_gist(&chained),
            [
                "ValueError: bad",
                "second line of the message",
                "raised at File \"c.py\", line 9, in <module>"
            ]
        );
        // A syntax error has a frame but no header.
        let syntax = "  File \"/tmp/checker.py\", line 3\n    print(1/\n         ^\nSyntaxError: '(' was never closed\n";
        assert_eq!(
            error_gist(syntax),
            [
                "SyntaxError: '(' was never closed",
                "raised at File \"checker.py\", line 3"
            ]
        );
    }

    #[test]
    fn the_gist_of_other_stderr_is_its_last_lines_bounded() {
        assert!(error_gist("").is_empty());
        assert!(error_gist("\n  \n").is_empty());
        assert_eq!(error_gist("a\nb\n\nc\nd\n\n"), ["b", "c", "d"]);
        let wide = format!("{}\n", "é".repeat(10_000));
        let gist = error_gist(&wide);
        assert_eq!(gist.len(), 1);
        assert!(gist[0].len() <= ERROR_LINE_LIMIT + '…'.len_utf8());
        assert!(gist[0].ends_with('…'));
        // An exception of many lines keeps its first few.
        let long: String = (0..50).map(|i| format!("line {i}\n")).collect();
        let stderr = format!(
            "Traceback (most recent call last):\n  File \"c.py\", line 1, in <module>\nException: {long}"
        );
        let gist = error_gist(&stderr);
        assert_eq!(gist.len(), ERROR_LINES);
        assert_eq!(gist[0], "Exception: line 0");
    }

    #[test]
    fn wire_names_match_serde() {
        for category in Category::ALL {
            let json = serde_json::to_value(category).unwrap();
            assert_eq!(json, Value::String(category.as_str().to_owned()));
        }
    }

    #[test]
    fn all_categories_are_distinct() {
        let mut names: Vec<_> = Category::ALL.iter().map(|c| c.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Category::ALL.len());
    }

    #[test]
    fn tool_error_text_starts_with_the_diagnostic_line() {
        let error = ToolError::invalid("timeout_ms must be strictly positive, got 0");
        assert_eq!(
            error.to_string(),
            "Diagnostic: invalid_request — timeout_ms must be strictly positive, got 0"
        );
    }

    #[derive(Debug, thiserror::Error)]
    #[error("could not load {0}")]
    struct Outer(&'static str, #[source] Middle);

    #[derive(Debug, thiserror::Error)]
    #[error("could not start x: {source}")]
    struct Middle {
        source: std::io::Error,
    }

    #[test]
    fn causes_skip_one_its_parent_already_ends_with() {
        let error = Outer(
            "the model",
            Middle {
                source: std::io::Error::other("no such file"),
            },
        );
        assert_eq!(causes(&error), ["could not start x: no such file"]);
        assert_eq!(
            with_causes(&error),
            "could not load the model: could not start x: no such file"
        );
        let plain = std::io::Error::other("disk full");
        assert!(causes(&plain).is_empty());
        assert_eq!(with_causes(&plain), "disk full");
    }
}
