//! What every tool's text part shares. The structured content is the
//! contract and holds the full data once (an answer's is kept whole as a
//! resource, and bounded in the response by `bounded`); the text is what a
//! model or person reads first: a summary that leads with the verdict
//! (status, objective, one solution, statistics, diagnostic) and names the
//! result's fields for the rest. Raw output is quoted verbatim but in
//! excerpts ([`excerpt`], [`block`]), and [`bounded`] holds every text part
//! to [`TEXT_LIMIT`], whatever a result holds. Each area renders its own
//! results (`minizinc/render.rs`, `cpsat/render.rs`, ...) with these
//! helpers and the few lines and tables more than one area prints.

use std::fmt::Write;

pub use crate::diagnostics::error_gist;

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
