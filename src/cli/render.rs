//! What a person at a terminal sees. Plain text on stdout; `--json` prints
//! the same result structs the MCP tools return.

use std::fmt::Write;

use serde::Serialize;

use super::args::RuntimeKind;
use crate::artifacts::{ArtifactList, ReplayResult};
use crate::cpsat::CpsatPythonResult;
use crate::diagnostics::Diagnostic;
use crate::exec::limits::Enforcement;
use crate::minizinc::SolveResult;
use crate::planner::PlanResult;
use crate::runtime::{INSTALL_HINT, RuntimeStatus, SolverList};

/// Pretty JSON of any result (cannot fail for our plain structs).
pub fn json<T: Serialize>(value: &T) -> String {
    serde_json::to_string_pretty(value)
        .unwrap_or_else(|error| format!("{{\"error\": \"{error}\"}}"))
}

pub fn runtime_status(status: &RuntimeStatus, only: Option<RuntimeKind>) -> String {
    let mut text = String::new();
    if only != Some(RuntimeKind::Cpsat) {
        text.push_str("MiniZinc\n");
        let _ = writeln!(
            text,
            "  runtime dir: {} ({})",
            status.runtime_dir,
            status.source.describe()
        );
        match &status.minizinc_binary {
            Some(binary) => {
                let _ = writeln!(text, "  minizinc:    {binary}");
                if let Some(version) = &status.minizinc_version {
                    let _ = writeln!(text, "  version:     {version}");
                }
                if let Some(count) = status.solver_count {
                    let _ = writeln!(text, "  solvers:     {count} (solvergate list-solvers)");
                }
                text.push_str("  status:      installed\n");
                for warning in &status.warnings {
                    let _ = writeln!(text, "  warning:     {warning}");
                }
            }
            None => {
                let _ = writeln!(text, "  status:      not installed — {INSTALL_HINT}");
            }
        }
    }
    if only != Some(RuntimeKind::Minizinc) {
        let cpsat = &status.cpsat;
        text.push_str("CP-SAT\n");
        let _ = writeln!(
            text,
            "  python:      {} ({})",
            cpsat.python,
            cpsat.source.describe_python()
        );
        match &cpsat.ortools_version {
            Some(version) => {
                let _ = writeln!(text, "  ortools:     {version}");
                text.push_str("  status:      installed\n");
            }
            None => {
                let _ = writeln!(
                    text,
                    "  status:      not installed — {}; {}",
                    cpsat.problem.as_deref().unwrap_or("unknown problem"),
                    cpsat.hint.as_deref().map_or(
                        "run `solvergate install-runtime --only cpsat` or `solvergate configure-runtime --python <path>`".to_owned(),
                        |hint| format!("{hint}, or run `solvergate install-runtime --only cpsat`"),
                    )
                );
            }
        }
    }
    if let Some(limits) = &status.limits {
        text.push_str(&limits_lines(limits));
    }
    let _ = writeln!(text, "sandbox: {}", status.sandbox);
    if let Some(reads) = status.reads_in_words() {
        let _ = writeln!(text, "reads: {reads}");
    }
    let _ = writeln!(text, "environment: {}", status.environment);
    text
}

/// `limits: memory 512 MiB (cgroup_v1), …` and each note: in
/// `check-runtime` and the servers' start-up banner.
pub fn limits_lines(limits: &Enforcement) -> String {
    let mut text = format!("limits: {}\n", limits.summary());
    for note in &limits.notes {
        let _ = writeln!(text, "  note: {note}");
    }
    text
}

pub fn solver_table(list: &SolverList) -> String {
    let mut rows = vec![["ID", "NAME", "VERSION", "FLAGS"].map(str::to_owned)];
    for solver in &list.solvers {
        let marker = if list.default_solver.as_deref() == Some(solver.id.as_str()) {
            "  (default)".to_owned()
        } else if !solver.available {
            format!(
                "  (cannot run here: {})",
                solver
                    .unavailable_reason
                    .as_deref()
                    .unwrap_or("the probe failed")
            )
        } else {
            String::new()
        };
        rows.push([
            solver.id.clone(),
            solver.name.clone(),
            solver.version.clone(),
            format!("{}{marker}", solver.capabilities.std_flags.join(" ")),
        ]);
    }
    table(&rows, "")
}

pub fn solve(result: &SolveResult) -> String {
    let mut text = String::new();
    let _ = writeln!(text, "status:    {}", result.status);
    let _ = writeln!(text, "solver:    {}", result.solver);
    if let Some(objective) = &result.objective {
        let _ = writeln!(text, "objective: {objective}");
    }
    let _ = writeln!(text, "elapsed:   {} ms", result.elapsed_ms);
    sandbox_line(&mut text, result.sandbox.as_ref());
    if let Some(diagnostic) = &result.diagnostic {
        let _ = writeln!(
            text,
            "note:      {} — {}",
            diagnostic.category, diagnostic.message
        );
    }
    if let Some(checker) = &result.checker {
        // The verdict, then why (naming the solution) or what it printed.
        let why = match &checker.reason {
            Some(reason) => reason.clone(),
            None => checker
                .checks
                .last()
                .map(|check| check.output.trim().replace('\n', " / "))
                .unwrap_or_default(),
        };
        match why.is_empty() {
            true => {
                let _ = writeln!(text, "checker:   {}", checker.verdict);
            }
            false => {
                let _ = writeln!(text, "checker:   {} — {why}", checker.verdict);
            }
        }
    }
    if !result.stdout.is_empty() {
        let _ = write!(text, "\n{}", result.stdout);
    }
    stderr_block(&mut text, &result.stderr, result.diagnostic.as_ref());
    if !result.statistics.is_empty() {
        text.push_str("\nstatistics:\n");
        for (key, value) in &result.statistics {
            let _ = writeln!(text, "  {key}: {value}");
        }
    }
    text
}

/// A replay: recorded beside replayed, then the verdict.
pub fn replay(result: &ReplayResult) -> String {
    let mut text = format!(
        "Replayed {} ({}, saved {})\n",
        result.target_dir,
        result.backend.as_str(),
        result.saved_at
    );
    let objective = |value: &Option<serde_json::Number>| {
        value.as_ref().map_or("-".to_owned(), ToString::to_string)
    };
    let row = |label: &str, record: &crate::artifacts::ReplayOutcome| {
        [
            label.to_owned(),
            record.status.to_string(),
            objective(&record.objective),
            record
                .checker_status
                .clone()
                .unwrap_or_else(|| "-".to_owned()),
            record.level.clone(),
        ]
    };
    let header = ["", "status", "objective", "checker", "verified by"].map(str::to_owned);
    text.push_str(&table(
        &[
            header,
            row("recorded", &result.recorded),
            row("replayed", &result.replayed),
        ],
        "  ",
    ));
    let runtime =
        |version: &Option<String>| version.clone().unwrap_or_else(|| "unknown".to_owned());
    let _ = writeln!(
        text,
        "  runtime: {} at the save, {} now",
        runtime(&result.recorded_runtime_version),
        runtime(&result.runtime_version)
    );
    match &result.reason {
        None => text.push_str("reproduced\n"),
        Some(reason) => {
            let _ = writeln!(text, "not reproduced: {reason}");
        }
    }
    text
}

/// `artifacts ls`: one aligned row per artifact.
pub fn artifact_list(list: &ArtifactList) -> String {
    if list.artifacts.is_empty() {
        return "No solvergate artifacts found.\n".to_owned();
    }
    let header = [
        "DIRECTORY".to_owned(),
        "BACKEND".to_owned(),
        "STATUS".to_owned(),
        "OBJECTIVE".to_owned(),
        "SAVED AT".to_owned(),
        "VERIFIED BY".to_owned(),
    ];
    let mut rows = vec![header];
    for artifact in &list.artifacts {
        rows.push([
            artifact.dir.clone(),
            artifact.backend.as_str().to_owned(),
            artifact.status.to_string(),
            artifact
                .objective
                .as_ref()
                .map_or("-".to_owned(), ToString::to_string),
            artifact.saved_at.clone(),
            artifact.verified_by.clone(),
        ]);
    }
    table(&rows, "")
}

/// A load plan as a person reads it: one row per card, then the modes.
pub fn load_plan(result: &PlanResult) -> String {
    let plan = &result.result;
    let number = |value: Option<f64>| {
        value.map_or("-".to_owned(), |v| serde_json::Value::from(v).to_string())
    };
    let mut rows = vec![
        [
            "CARD",
            "FEASIBLE",
            "TOTAL",
            "AIR",
            "LCL",
            "FCL",
            "CONTAINERS",
            "FILL",
            "MISS P",
            "CHECKER",
        ]
        .map(str::to_owned),
    ];
    for card in &plan.cards {
        let cost = card.cost.as_ref();
        let containers: Vec<String> = card
            .containers
            .iter()
            .map(|c| format!("{}×{}", c.count, c.container_type))
            .collect();
        rows.push([
            format!("{}{}", card.name, if card.recommended { " *" } else { "" }),
            if card.feasible { "yes" } else { "no" }.to_owned(),
            number(cost.map(|c| c.total)),
            number(cost.map(|c| c.air)),
            number(cost.map(|c| c.lcl)),
            number(cost.map(|c| c.fcl)),
            if containers.is_empty() {
                "-".to_owned()
            } else {
                containers.join(" ")
            },
            number(card.fill_rate),
            number(card.miss_probability),
            card.checker.clone().unwrap_or_else(|| "-".to_owned()),
        ]);
    }
    let mut text = format!(
        "Load plan {} (solved by {})\n",
        result.result_id, plan.solver
    );
    text.push_str(&table(&rows, ""));
    match &plan.recommended {
        Some(name) => {
            let outside = plan
                .cards
                .iter()
                .any(|card| card.recommended && !card.within_policy);
            let _ = writeln!(
                text,
                "* recommended: {name}{}",
                if outside {
                    " (no card is within the policy: the least risky)"
                } else {
                    ""
                }
            );
        }
        None => text.push_str("No card is feasible.\n"),
    }
    for card in plan.cards.iter().filter(|card| !card.feasible) {
        if let Some(reason) = &card.infeasible_reason {
            let _ = writeln!(text, "{}: {reason}", card.name);
        }
    }
    text.push_str("Transit by mode (ETA days at p50 / p90, mean of the worst tenth of delays):\n");
    for (mode, read) in &plan.modes {
        let _ = writeln!(
            text,
            "  {mode:<4} {} / {}, {} ({} delays)",
            read.eta_p50_days,
            read.eta_p90_days,
            serde_json::Value::from(read.cvar90_delay_days),
            read.delay_source
        );
    }
    for note in &plan.notes {
        let _ = writeln!(text, "note: {note}");
    }
    text
}

/// A CP-SAT script's answer.
pub fn cpsat_run(result: &CpsatPythonResult) -> String {
    let mut text = String::new();
    let _ = writeln!(text, "status:    {}", result.status);
    if let Some(objective) = &result.objective {
        let _ = writeln!(text, "objective: {objective}");
    }
    if let Some(bound) = &result.best_objective_bound {
        let _ = writeln!(text, "bound:     {bound}");
    }
    let _ = writeln!(text, "elapsed:   {} ms", result.duration_ms);
    sandbox_line(&mut text, result.sandbox.as_ref());
    if let Some(diagnostic) = &result.diagnostic {
        let _ = writeln!(
            text,
            "note:      {} — {}",
            diagnostic.category, diagnostic.message
        );
    }
    if let Some(solution) = result.solution.as_ref().filter(|s| !s.is_empty()) {
        let pretty = serde_json::to_string_pretty(&serde_json::Value::Object(solution.clone()))
            .unwrap_or_default();
        let _ = writeln!(text, "\nsolution:\n{pretty}");
    }
    stderr_block(&mut text, &result.stderr, result.diagnostic.as_ref());
    text
}

/// How many `Warning:` lines a terminal is shown before the rest are counted.
const WARNINGS_SHOWN: usize = 3;

/// The `stderr:` section as a person reads it: the diagnostic's message,
/// already printed as the note, is not printed again, and after
/// [`WARNINGS_SHOWN`] warning lines the rest are counted, not listed
/// (`--json` keeps the whole of `stderr`).
fn stderr_block(text: &mut String, stderr: &str, diagnostic: Option<&Diagnostic>) {
    let shown = match diagnostic.map(|d| d.message.trim()) {
        Some(message) if !message.is_empty() => stderr.replacen(message, "", 1),
        _ => stderr.to_owned(),
    };
    let mut lines = Vec::new();
    let mut warnings = 0;
    for line in shown.lines() {
        let is_warning = line.trim_start().starts_with("Warning:") || line.contains(": Warning: ");
        if is_warning {
            warnings += 1;
            if warnings > WARNINGS_SHOWN {
                continue;
            }
        }
        lines.push(line);
    }
    while lines.last().is_some_and(|line| line.trim().is_empty()) {
        lines.pop();
    }
    let first = lines.iter().position(|line| !line.trim().is_empty());
    let Some(first) = first else {
        return;
    };
    text.push_str("\nstderr:\n");
    for line in &lines[first..] {
        text.push_str(line);
        text.push('\n');
    }
    if let Some(more) = warnings
        .checked_sub(WARNINGS_SHOWN)
        .filter(|more| *more > 0)
    {
        let _ = writeln!(
            text,
            "… and {more} more warning line(s) (--json shows the whole of stderr)"
        );
    }
}

/// A checked CP-SAT run: the run, then the checker's verdict and why.
pub fn cpsat_checked(result: &crate::cpsat::CpsatPythonCheckedResult) -> String {
    let mut text = cpsat_run(&result.run);
    match (&result.checker, &result.checker_skipped_reason) {
        (Some(report), _) => {
            let why = match (&report.message, report.errors.is_empty()) {
                (Some(message), _) => format!(" — {message}"),
                (None, false) => format!(
                    " — {}",
                    report
                        .errors
                        .iter()
                        .map(|error| match error {
                            serde_json::Value::String(text) => text.clone(),
                            other => other.to_string(),
                        })
                        .collect::<Vec<_>>()
                        .join("; ")
                ),
                (None, true) => String::new(),
            };
            let _ = writeln!(text, "\nchecker:   {}{why}", report.verdict);
        }
        (None, Some(reason)) => {
            let _ = writeln!(text, "\nchecker:   not run — {reason}");
        }
        (None, None) => {}
    }
    text
}

/// `sandbox:   landlock enforced, network enforced`, when it was on.
fn sandbox_line(text: &mut String, sandbox: Option<&crate::exec::SandboxReport>) {
    if let Some(sandbox) = sandbox {
        let _ = writeln!(
            text,
            "sandbox:   landlock {}, network {}, reads {}",
            sandbox.landlock, sandbox.network, sandbox.reads
        );
    }
}

/// Problem messages on a terminal wrap at its width, but never wider.
const MESSAGE_WIDTH: usize = 100;

/// A problem as a person reads it on stderr: `solvergate: <headline>`, and
/// when the first line goes on after a `; ` (our messages put the remedy
/// there), the rest on a `help:` line. Lines after the first (a cause chain,
/// help already laid out) are kept as they are. Field names of the MCP tools
/// are spelled as this CLI's flags. On a terminal the text wraps at its
/// width (at most 100 columns); on a pipe or in a log it does not.
pub fn problem(message: &str) -> String {
    problem_at(message, &[], stderr_width())
}

/// [`problem`] for an error: `message` (the error's own, or it with a
/// prefix), then each cause in `error`'s `source()` chain on a
/// `  Caused by:` line, as uv prints them, before the `help:` line.
pub fn failure(message: &str, error: &dyn std::error::Error) -> String {
    problem_at(message, &crate::diagnostics::causes(error), stderr_width())
}

/// The width problems wrap at: the terminal's, at most 100 columns; none
/// when stderr is not a terminal.
fn stderr_width() -> Option<usize> {
    use std::io::IsTerminal;
    std::io::stderr()
        .is_terminal()
        .then(|| textwrap::termwidth().min(MESSAGE_WIDTH))
}

/// [`problem`] with `causes`, wrapped at `width` columns, or not at all.
fn problem_at(message: &str, causes: &[String], width: Option<usize>) -> String {
    let message = cli_words(message);
    let (first, rest) = match message.split_once('\n') {
        Some((first, rest)) => (first, Some(rest)),
        None => (message.as_str(), None),
    };
    let (headline, help) = match first.split_once("; ") {
        Some((headline, help)) if !help.trim().is_empty() => (headline, Some(help)),
        _ => (first, None),
    };
    let wrap = |text: String, first_indent: &str, next_indent: &str| match width {
        Some(width) => {
            let options = textwrap::Options::new(width)
                .initial_indent(first_indent)
                .subsequent_indent(next_indent)
                .break_words(false)
                .word_splitter(textwrap::WordSplitter::NoHyphenation);
            textwrap::fill(&text, options)
        }
        None => format!("{first_indent}{text}"),
    };
    let mut text = wrap(format!("solvergate: {headline}"), "", "  ");
    for cause in causes {
        // A cause of several lines (a TOML parse error) stays one block.
        let cause = cli_words(cause.trim_end()).replace('\n', "\n    ");
        text.push_str("\n  Caused by: ");
        text.push_str(&cause);
    }
    if let Some(help) = help {
        text.push('\n');
        text.push_str(&wrap(format!("help: {help}"), "  ", "        "));
    }
    if let Some(rest) = rest {
        text.push('\n');
        text.push_str(rest);
    }
    text
}

/// The MCP tools' argument names, as the CLI spells them.
const CLI_WORDS: &[(&str, &str)] = &[
    ("model_path", "model file"),
    ("data_path", "data file"),
    ("checker_path", "--checker"),
    ("script_path", "script"),
    ("timeout_ms", "--timeout-ms"),
    ("script_timeout_ms", "--timeout-ms"),
    ("all_solutions", "--all-solutions"),
    ("free_search", "--free-search"),
    ("parallel", "--parallel"),
    ("random_seed", "--random-seed"),
    ("num_solutions", "--num-solutions"),
    ("list_available_solvers", "`solvergate list-solvers`"),
];

/// Replaces each whole-word MCP argument name in `message` by its CLI
/// spelling; words inside paths or longer names are left alone.
fn cli_words(message: &str) -> String {
    let is_word = |c: char| c.is_alphanumeric() || c == '_' || c == '-' || c == '/' || c == '.';
    let mut text = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(start) = rest.find(|c: char| is_word(c)) {
        text.push_str(&rest[..start]);
        rest = &rest[start..];
        let end = rest.find(|c: char| !is_word(c)).unwrap_or(rest.len());
        let (word, after) = rest.split_at(end);
        let name = word.trim_end_matches('.');
        match CLI_WORDS.iter().find(|(known, _)| *known == name) {
            Some((_, spelled)) => {
                text.push_str(spelled);
                text.push_str(&word[name.len()..]);
            }
            None => text.push_str(word),
        }
        rest = after;
    }
    text.push_str(rest);
    text
}

/// Rows of cells laid out in columns two spaces apart, each line indented
/// by `indent` and trimmed at the end. Widths count what a terminal shows,
/// so a name with accents or wide characters does not push its row out.
pub fn table<R: AsRef<[String]>>(rows: &[R], indent: &str) -> String {
    use unicode_width::UnicodeWidthStr;
    let columns = rows.iter().map(|row| row.as_ref().len()).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|column| {
            rows.iter()
                .filter_map(|row| row.as_ref().get(column))
                .map(|cell| cell.width())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut text = String::new();
    for row in rows {
        let mut line = indent.to_owned();
        for (column, cell) in row.as_ref().iter().enumerate() {
            line.push_str(cell);
            let pad = widths[column].saturating_sub(cell.width());
            line.extend(std::iter::repeat_n(' ', pad + 2));
        }
        let _ = writeln!(text, "{}", line.trim_end());
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remedy_after_a_semicolon_becomes_help() {
        assert_eq!(
            problem_at(
                "num_solutions must be at least 1, got 0; omit it for the solver's default",
                &[],
                None
            ),
            "solvergate: --num-solutions must be at least 1, got 0\n  help: omit it for the solver's default"
        );
    }

    #[test]
    fn names_inside_paths_are_left_alone() {
        assert_eq!(
            cli_words("model_path /tmp/model_path/x.mzn (timeout_ms); omit parallel."),
            "model file /tmp/model_path/x.mzn (--timeout-ms); omit --parallel."
        );
    }

    #[test]
    fn long_lines_wrap_and_later_lines_stay() {
        let message = format!(
            "{}; {}\n  Caused by: x",
            "word ".repeat(30),
            "help ".repeat(30)
        );
        let text = problem_at(&message, &[], Some(MESSAGE_WIDTH));
        assert!(
            text.lines().all(|line| line.len() <= MESSAGE_WIDTH),
            "{text}"
        );
        let unwrapped = problem_at(&message, &[], None);
        assert_eq!(unwrapped.lines().count(), 3, "{unwrapped}");
        assert!(
            text.lines()
                .nth(1)
                .is_some_and(|line| line.starts_with("  word"))
        );
        assert!(text.ends_with("\n  Caused by: x"), "{text}");
        assert_eq!(text.matches("help: ").count(), 1);
    }

    #[test]
    fn causes_follow_the_headline_and_precede_the_help() {
        let causes = ["could not read x".to_owned(), "disk full".to_owned()];
        assert_eq!(
            problem_at("the install failed; try again", &causes, None),
            "solvergate: the install failed\n  Caused by: could not read x\n  Caused by: disk full\n  help: try again"
        );
        let parse = ["TOML parse error at line 1\n  |\n1 | x =\n".to_owned()];
        assert_eq!(
            problem_at("m.toml is not a valid manifest", &parse, None),
            "solvergate: m.toml is not a valid manifest\n  Caused by: TOML parse error at line 1\n      |\n    1 | x ="
        );
    }

    #[test]
    fn table_pads_by_displayed_width() {
        let rows = [
            vec!["DIR".to_owned(), "X".to_owned()],
            vec!["/tmp/café".to_owned(), "1".to_owned()],
            vec!["/tmp/日本".to_owned(), "2".to_owned()],
        ];
        assert_eq!(
            table(&rows, ""),
            "DIR        X\n/tmp/café  1\n/tmp/日本  2\n"
        );
    }
}
