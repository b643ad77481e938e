//! What every tool's text part shares. The structured content is the
//! contract and holds the full data once; the text is what a model or
//! person reads first: a summary that leads with the verdict (status,
//! objective, one solution, statistics, diagnostic) and points to the
//! structured fields for the rest. Raw output is quoted verbatim but in
//! excerpts ([`excerpt`], [`block`]), and [`bounded`] holds every text part
//! to [`TEXT_LIMIT`], whatever a result holds. Each area renders its own
//! results (`minizinc/render.rs`, `cpsat/render.rs`, ...) with these
//! helpers and the few lines and tables more than one area prints.

use std::fmt::Write;

use crate::artifacts::SavedFile;
use crate::diagnostics::Diagnostic;
use crate::jobs::{JobLife, JobList, ResultStatus};

/// `Sandbox: landlock enforced, network enforced`, when it was on.
pub fn sandbox_line(text: &mut String, sandbox: Option<&crate::exec::SandboxReport>) {
    if let Some(sandbox) = sandbox {
        let _ = writeln!(
            text,
            "Sandbox: landlock {}, network {}, reads {}",
            sandbox.landlock, sandbox.network, sandbox.reads
        );
    }
}

/// `Limits: memory 512 MiB (cgroup_v1), …` and each note, when limits are on.
pub fn limits_lines(text: &mut String, limits: Option<&crate::exec::limits::Enforcement>) {
    if let Some(limits) = limits {
        let _ = writeln!(text, "Limits: {}", limits.summary());
        for note in &limits.notes {
            let _ = writeln!(text, "  note: {note}");
        }
    }
}

pub fn diagnostic_line(text: &mut String, diagnostic: Option<&Diagnostic>) {
    if let Some(diagnostic) = diagnostic {
        let _ = writeln!(
            text,
            "Diagnostic: {} — {}",
            diagnostic.category, diagnostic.message
        );
    }
}

/// The most a text part holds, in bytes.
pub const TEXT_LIMIT: usize = 16 * 1024;

/// The most of one quoted output (a solution's text, stderr, ...), in
/// bytes; a handful fit in [`TEXT_LIMIT`] beside the summary lines.
const EXCERPT_LIMIT: usize = 2 * 1024;

/// `text` held to [`TEXT_LIMIT`]: cut at a line end, with a last line that
/// says so.
pub fn bounded(text: String) -> String {
    cut_to(
        text,
        TEXT_LIMIT,
        "[solvergate: the text part ends here at 16 KB; the structured content has the whole result]\n",
    )
}

/// `text`, held to [`TEXT_LIMIT`], with `line` after it: when both do not
/// fit, `text` is cut as [`bounded`] cuts it, never `line`.
pub fn with_last_line(mut text: String, line: &str) -> String {
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    let mut text = cut_to(
        text,
        TEXT_LIMIT.saturating_sub(line.len()),
        "[solvergate: the text part is cut here at 16 KB; the whole result is named below]\n",
    );
    text.push_str(line);
    text
}

/// `text` within `limit` bytes: whole when it fits, else cut at a line end
/// with `note` after it.
fn cut_to(mut text: String, limit: usize, note: &str) -> String {
    if text.len() <= limit {
        return text;
    }
    let keep = head_len(&text, limit.saturating_sub(note.len()));
    text.truncate(keep);
    text.push_str(note);
    text
}

/// How much of `text` to keep within `limit` bytes: up to the last whole
/// line that fits, or a char boundary when not even one line does.
fn head_len(text: &str, limit: usize) -> usize {
    if text.len() <= limit {
        return text.len();
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].rfind('\n').map_or(end, |newline| newline + 1)
}

/// At most [`EXCERPT_LIMIT`] bytes of `body`, and where the rest is.
pub fn excerpt(body: &str, field: &str) -> String {
    let body = body.trim_end();
    if body.len() <= EXCERPT_LIMIT {
        return body.to_owned();
    }
    let keep = head_len(body, EXCERPT_LIMIT);
    format!(
        "{}\n[… {} more bytes in the result's `{field}`]",
        body[..keep].trim_end(),
        body.len() - keep
    )
}

/// A titled excerpt of `body` (the structured result's `field`); nothing
/// when it is blank.
pub fn block(text: &mut String, title: &str, body: &str, field: &str) {
    if body.trim().is_empty() {
        return;
    }
    let _ = writeln!(text, "{title}:\n{}", excerpt(body, field));
}

/// A titled `body` shown whole when it fits in an excerpt; otherwise only
/// its size and where it is, so that no value is cut in the middle (the
/// values themselves are shown above it by `answer::solution`).
pub fn whole_block(text: &mut String, title: &str, body: &str, field: &str) {
    let body = body.trim_end();
    if body.trim().is_empty() {
        return;
    }
    if body.len() <= EXCERPT_LIMIT {
        let _ = writeln!(text, "{title}:\n{body}");
    } else {
        let _ = writeln!(
            text,
            "{title}: {} bytes, too long to show here (whole in the result's `{field}`)",
            body.len()
        );
    }
}

/// The most of one line of a child's error quoted in a text part, in bytes.
const ERROR_LINE_LIMIT: usize = 300;

/// The most lines of a child's error quoted in a text part.
const ERROR_LINES: usize = 5;

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

/// Runtime messages that are known to be harmless, and what each means.
const KNOWN_NOISE: &[(&str, &str)] = &[
    (
        "--time-out flag has recently been changed",
        "Chuffed prints its --time-out warning on every run; solvergate already passes it the time limit in milliseconds, as the warning asks.",
    ),
    (
        "included file \"count.mzn\" overrides a global constraint file",
        "the count.mzn warning comes from the runtime's own library (Debian 12's MiniZinc package), not from the model; it changes nothing.",
    ),
];

/// `Stderr:` as [`block`] does, then a note for each known harmless
/// message in it, so that the runtime's own noise is not mistaken for a
/// problem of the call.
pub fn stderr_block(text: &mut String, stderr: &str) {
    block(text, "Stderr", stderr, "stderr");
    for (pattern, meaning) in KNOWN_NOISE {
        if stderr.contains(pattern) {
            let _ = writeln!(text, "Note: {meaning}");
        }
    }
}

/// A job run under one budget: `<Kind> job <id>: <state> (<elapsed> ms of
/// a <budget> ms budget)`, its message, then its result's text or,
/// without a result, its diagnostic.
pub fn budgeted_job(kind: &str, job: &JobLife, budget_ms: i64, result: Option<String>) -> String {
    let mut text = format!(
        "{kind} job {}: {} ({} ms of a {budget_ms} ms budget)\n",
        job.job_id,
        job.state.as_str(),
        job.elapsed_ms,
    );
    if let Some(message) = &job.message {
        let _ = writeln!(text, "Message: {message}");
    }
    match result {
        Some(result) => text.push_str(&result),
        None => diagnostic_line(&mut text, job.diagnostic.as_ref()),
    }
    text
}

/// A list tool's table: one row per job, oldest first.
pub fn job_list(kind: &str, list: &JobList) -> String {
    if list.jobs.is_empty() {
        return format!("No {kind} jobs are retained.\n");
    }
    let mut text = format!(
        "{} {kind} job(s), oldest first:\n| job_id | state | elapsed_ms | status | objective |\n| --- | --- | --- | --- | --- |\n",
        list.jobs.len()
    );
    for job in &list.jobs {
        let _ = writeln!(
            text,
            "| {} | {} | {} | {} | {} |",
            job.job_id,
            job.state.as_str(),
            job.elapsed_ms,
            job.status.as_ref().map_or("-", ResultStatus::as_str),
            job.objective
                .as_ref()
                .map_or("-".to_owned(), ToString::to_string)
        );
    }
    text
}

pub fn saved_files(text: &mut String, files: &[SavedFile]) {
    if files.is_empty() {
        return;
    }
    text.push_str("| file | role | sha256 |\n| --- | --- | --- |\n");
    for file in files {
        let _ = writeln!(text, "| {} | {} | {} |", file.name, file.role, file.sha256);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_cuts_at_a_line_and_says_so() {
        let short = "Status: optimal\n".to_owned();
        assert_eq!(bounded(short.clone()), short);
        let long: String = (0..5000).map(|i| format!("line {i}\n")).collect();
        let cut = bounded(long.clone());
        assert!(cut.len() <= TEXT_LIMIT, "{}", cut.len());
        let (kept, note) = cut.trim_end().rsplit_once('\n').unwrap();
        assert!(long.starts_with(&format!("{kept}\n")));
        assert!(note.starts_with("[solvergate: the text part ends here at 16 KB"));
        // One line longer than the limit is cut at a char boundary.
        let wide = "é".repeat(TEXT_LIMIT);
        assert!(bounded(wide).len() <= TEXT_LIMIT);
    }

    #[test]
    fn the_last_line_survives_a_cut() {
        let line = "Whole result: solvergate://results/x\n";
        assert_eq!(with_last_line("a".to_owned(), line), format!("a\n{line}"));
        let long: String = (0..5000).map(|i| format!("line {i}\n")).collect();
        let cut = with_last_line(long.clone(), line);
        assert!(cut.len() <= TEXT_LIMIT, "{}", cut.len());
        let head = cut.strip_suffix(line).unwrap();
        let (kept, note) = head.trim_end().rsplit_once('\n').unwrap();
        assert!(long.starts_with(&format!("{kept}\n")));
        assert!(note.starts_with("[solvergate: the text part is cut here at 16 KB"));
    }

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
    fn an_excerpt_names_the_field_with_the_rest() {
        assert_eq!(excerpt("a\nb\n", "stdout"), "a\nb");
        let long: String = (0..1000).map(|i| format!("{i:04}\n")).collect();
        let short = excerpt(&long, "stderr");
        let (head, pointer) = short.rsplit_once('\n').unwrap();
        assert!(head.len() <= EXCERPT_LIMIT);
        assert!(long.starts_with(head));
        let rest = long.trim_end().len() - head.len() - 1;
        assert_eq!(
            pointer,
            format!("[… {rest} more bytes in the result's `stderr`]")
        );
    }
}
