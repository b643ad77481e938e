//! What a MiniZinc solution checker must be, and what its output means.
//!
//! Two jobs, both pure functions of text:
//! - [`lint`] refuses, before anything runs, a "checker" that cannot check:
//!   one that reads nothing of the solution (no declaration left for the
//!   solution to fill in: empty of items, or only comments) and one that is
//!   a model in disguise (its own `var` declarations or `solve` item: it
//!   would search and print `CORRECT` for whatever it found).
//! - [`grade`] turns what the stream says about one solution into a
//!   [`Verdict`], and [`checker_report`] combines the solutions' verdicts
//!   into the solve's.
//!
//! Where we deliberately part from the reference server: it passes the
//! checker's output through "not interpreted", so a checker that stopped
//! with an error, said nothing, or said `incorrect` in lower case counted
//! as a pass. Ours is read, because a pass is what saves, races and the
//! CLI's exit code act on: a solution is accepted only when its checker ran
//! to the end for that solution, with no error, and printed a line that
//! starts with `CORRECT` (any case) and none that starts with `INCORRECT`.
//! The verbatim output stays in the result beside the verdict.

use super::results::{CheckerReport, CheckerStatus, SolutionCheck, SolveStatus};
use super::stream::{self, StreamReport};
use crate::verdict::Verdict;

/// Whether a checker's output rejects: a line that starts (after white
/// space) with `INCORRECT`, in any case.
#[cfg(test)]
fn says_incorrect(output: &str) -> bool {
    output
        .lines()
        .any(|line| starts_with_word(line, "incorrect"))
}

/// Whether a checker's output accepts: a line that starts (after white
/// space) with the word `CORRECT`, in any case (`CORRECTED` is not it).
fn says_correct(output: &str) -> bool {
    output.lines().any(|line| starts_with_word(line, "correct"))
}

/// Whether `line`, leading white space dropped, starts with `word` (ASCII,
/// any case) followed by something that is not part of a word.
fn starts_with_word(line: &str, word: &str) -> bool {
    let line = line.trim_start();
    let Some(head) = line.get(..word.len()) else {
        return false;
    };
    head.eq_ignore_ascii_case(word)
        && !line[word.len()..]
            .chars()
            .next()
            .is_some_and(|next| next.is_alphanumeric() || next == '_')
}

/// The verdict on one solution, and why when it is not a pass.
pub(crate) fn grade(check: &stream::SolutionCheck) -> (Verdict, Option<String>) {
    if let Some(error) = check.errors.first() {
        let more = match check.errors.len() {
            1 => String::new(),
            n => format!(" (and {} more)", n - 1),
        };
        return (
            Verdict::Error,
            Some(format!(
                "the checker stopped with an error: {}{more}",
                error.trim()
            )),
        );
    }
    let incorrect = check
        .output
        .lines()
        .map(str::trim)
        .find(|line| starts_with_word(line, "incorrect"));
    if let Some(line) = incorrect {
        return (Verdict::Rejected, Some(line.to_owned()));
    }
    if check.violation {
        return (
            Verdict::Rejected,
            Some("the checker's constraints failed on this solution".to_owned()),
        );
    }
    if let Some(status) = &check.status {
        return (
            Verdict::Error,
            Some(format!(
                "the checker ended {status} instead of printing a verdict"
            )),
        );
    }
    if says_correct(&check.output) {
        return (Verdict::Accepted, None);
    }
    let reason = if check.output.trim().is_empty() {
        "the checker printed nothing for this solution; it must print CORRECT or INCORRECT: <why>"
    } else {
        "the checker's output has no line starting with CORRECT or INCORRECT"
    };
    (Verdict::NoVerdict, Some(reason.to_owned()))
}

/// The facts of a solve the checker's overall verdict depends on.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RunFacts {
    /// Our own deadline stopped the run.
    pub timed_out: bool,
    /// The output went over the cap: solutions past the cut are lost.
    pub truncated: bool,
    /// The solve's status (`error` when MiniZinc itself failed, e.g. on a
    /// checker that does not compile).
    pub status: SolveStatus,
}

/// The checker's report on a solve: each solution's verdict, and one for
/// the solve (the worst of them, or why there is none to give).
pub(crate) fn checker_report(
    facts: RunFacts,
    report: &StreamReport,
    transcript: String,
) -> CheckerReport {
    let checks: Vec<SolutionCheck> = report
        .solutions
        .iter()
        .map(|solution| {
            let check = solution.check.clone().unwrap_or_default();
            let (verdict, reason) = grade(&check);
            SolutionCheck {
                violation: verdict == Verdict::Rejected,
                output: check.output,
                verdict,
                reason,
            }
        })
        .collect();
    let (verdict, reason) = overall(facts, &checks);
    let status = if facts.timed_out {
        CheckerStatus::Timeout
    } else if checks.iter().any(|check| check.violation) {
        CheckerStatus::Violation
    } else if facts.status == SolveStatus::Error || verdict == Verdict::Error {
        CheckerStatus::Error
    } else if checks.is_empty() {
        CheckerStatus::NoSolution
    } else {
        CheckerStatus::Completed
    };
    CheckerReport {
        status,
        verdict,
        reason,
        checks,
        transcript,
    }
}

/// The solve's verdict from its solutions' and the run's facts.
fn overall(facts: RunFacts, checks: &[SolutionCheck]) -> (Verdict, Option<String>) {
    let count = checks.len();
    let worst = checks
        .iter()
        .enumerate()
        .filter(|(_, check)| !check.verdict.is_accepted())
        .max_by_key(|(index, check)| (check.verdict.severity(), std::cmp::Reverse(*index)));
    if let Some((index, check)) = worst {
        let reason = check.reason.as_deref().unwrap_or("not accepted");
        let which = if count == 1 {
            String::new()
        } else {
            format!("solution {} of {count}: ", index + 1)
        };
        return (check.verdict, Some(format!("{which}{reason}")));
    }
    if facts.status == SolveStatus::Error {
        return (
            Verdict::Error,
            Some("the solve failed (see diagnostic): nothing was checked".to_owned()),
        );
    }
    if facts.truncated {
        return (
            Verdict::Error,
            Some(
                "the output went over the 1 MiB cap: the checker's verdicts past the cut are lost"
                    .to_owned(),
            ),
        );
    }
    if count == 0 {
        return if facts.timed_out {
            (
                Verdict::Timeout,
                Some("the run stopped at its time limit before a solution was checked".to_owned()),
            )
        } else {
            (
                Verdict::NoVerdict,
                Some("there was no solution to check".to_owned()),
            )
        };
    }
    (Verdict::Accepted, None)
}

/// Why a checker cannot check: what [`lint`] refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LintError {
    #[error(
        "the checker declares decision variables (`var`): a checker is not a model — it reads the solution's values as parameters (e.g. `int: x;`) and prints CORRECT or INCORRECT: <why>"
    )]
    DecisionVariables,
    #[error(
        "the checker has a `solve` item: a checker is not a model — it reads the solution's values as parameters (e.g. `int: x;`) and prints CORRECT or INCORRECT: <why>"
    )]
    SolveItem,
    #[error(
        "the checker has no items (only comments or white space): it must declare the output variables it checks as parameters without a value (e.g. `int: x;`), then print CORRECT or INCORRECT: <why>"
    )]
    NoItems,
    #[error(
        "the checker declares nothing for the solution to fill in: it must declare the output variables it checks as parameters without a value (e.g. `int: x;`), then print CORRECT or INCORRECT: <why>"
    )]
    ReadsNothing,
}

/// Refuses a checker that cannot check, naming why; `Ok` for one that may.
///
/// A checker reads the solution as data: each output variable it wants is a
/// parameter declared without a value (`int: x;`). So a checker with no
/// such declaration reads nothing, and one with `var` or `solve` is a model.
/// Comments and string literals are skipped; the text of `\(...)`
/// interpolations is read as code.
pub fn lint(text: &str) -> Result<(), LintError> {
    // One pass, no token kept: the text may be a 16 MiB file.
    let mut scan = Scan::default();
    tokens(text, |token| scan.token(token));
    scan.finish()
}

/// The items that do not open with a keyword that makes them something
/// other than a declaration.
const NOT_DECLARATIONS: &[&str] = &[
    "include",
    "output",
    "constraint",
    "predicate",
    "function",
    "test",
    "annotation",
    "type",
];

/// What [`lint`] has seen so far of a checker's tokens.
#[derive(Debug, Default)]
struct Scan {
    var: bool,
    solve: bool,
    /// Bracket depth over the whole text: a `;` at depth 0 ends an item.
    depth: i32,
    items: usize,
    /// Some item so far is a declaration the solution fills in.
    reads: bool,
    item: Item,
}

/// The top-level item being read.
#[derive(Debug, Default)]
struct Item {
    /// What its first token makes it; `None` while it is empty.
    kind: Option<ItemKind>,
    /// Bracket depth inside the item.
    depth: i32,
    /// A `:` outside the item's brackets.
    colon: bool,
    /// An `=` outside the item's brackets, and one after that `:`.
    equals: bool,
    equals_after_colon: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ItemKind {
    /// `enum E;` reads the solution unless it is defined (`= {...}`).
    Enum,
    /// An include, output, constraint, function, ...: not a declaration.
    Other,
    /// `T: name`, which reads the solution unless it has `= value`.
    Declaration,
}

impl Scan {
    fn token(&mut self, token: &str) {
        match token {
            "var" => self.var = true,
            "solve" => self.solve = true,
            _ => {}
        }
        match token {
            "(" | "[" | "{" => self.depth += 1,
            ")" | "]" | "}" => self.depth -= 1,
            ";" if self.depth <= 0 => {
                self.end_item();
                return;
            }
            _ => {}
        }
        let item = &mut self.item;
        if item.kind.is_none() {
            item.kind = Some(match token {
                "enum" => ItemKind::Enum,
                _ if NOT_DECLARATIONS.contains(&token) => ItemKind::Other,
                _ => ItemKind::Declaration,
            });
        }
        match token {
            "(" | "[" | "{" => item.depth += 1,
            ")" | "]" | "}" => item.depth -= 1,
            ":" if item.depth == 0 => item.colon = true,
            "=" if item.depth == 0 => {
                item.equals = true;
                item.equals_after_colon |= item.colon;
            }
            _ => {}
        }
    }

    fn end_item(&mut self) {
        let item = std::mem::take(&mut self.item);
        let Some(kind) = item.kind else { return };
        self.items += 1;
        self.reads |= match kind {
            ItemKind::Enum => !item.equals,
            ItemKind::Other => false,
            ItemKind::Declaration => item.colon && !item.equals_after_colon,
        };
    }

    fn finish(mut self) -> Result<(), LintError> {
        self.end_item();
        if self.var {
            Err(LintError::DecisionVariables)
        } else if self.solve {
            Err(LintError::SolveItem)
        } else if self.reads {
            Ok(())
        } else if self.items == 0 {
            Err(LintError::NoItems)
        } else {
            Err(LintError::ReadsNothing)
        }
    }
}

/// Hands `each` MiniZinc text's tokens in order: identifiers and keywords,
/// `::` and `==` as one token each, every other symbol a token of its own.
/// Comments and string literals give no tokens; an interpolation's code
/// does.
fn tokens<'a>(text: &'a str, mut each: impl FnMut(&'a str)) {
    let mut at = 0;
    // Open interpolations: the bracket depth at which each one closes.
    let mut interpolations: Vec<i32> = Vec::new();
    let mut depth: i32 = 0;
    while let Some(c) = text[at..].chars().next() {
        let width = c.len_utf8();
        let next = text[at + width..].chars().next();
        match c {
            '%' => at = text[at..].find('\n').map_or(text.len(), |line| at + line),
            '/' if next == Some('*') => {
                at = text[at + 2..]
                    .find("*/")
                    .map_or(text.len(), |close| at + 2 + close + 2);
            }
            '"' => at = skip_string(text, at + 1, &mut interpolations, depth),
            ')' if interpolations.last() == Some(&depth) => {
                // The end of an interpolation: back inside its string.
                interpolations.pop();
                at = skip_string(text, at + 1, &mut interpolations, depth);
            }
            '\'' => {
                // A quoted identifier: one token, whatever it spells.
                let start = at;
                let close = text[at + 1..]
                    .find(['\'', '\n'])
                    .map_or(text.len(), |close| at + 1 + close + 1);
                at = close.min(text.len());
                each(&text[start..at]);
            }
            c if c.is_alphabetic() || c == '_' => {
                let start = at;
                at += text[at..]
                    .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .unwrap_or(text.len() - at);
                each(&text[start..at]);
            }
            c if c.is_whitespace() => at += width,
            ':' | '=' if next == Some(c) => {
                each(&text[at..at + 2]);
                at += 2;
            }
            c => {
                match c {
                    '(' | '[' | '{' => depth += 1,
                    ')' | ']' | '}' => depth -= 1,
                    _ => {}
                }
                each(&text[at..at + width]);
                at += width;
            }
        }
    }
}

/// Skips a string literal's text from `at` (just past the opening quote or
/// an interpolation's `)`): to just past its closing quote, or into the
/// code of an interpolation `\(`, which is then recorded as open. Every
/// delimiter is ASCII, so bytes are compared and each returned offset is
/// a character boundary.
fn skip_string(text: &str, mut at: usize, interpolations: &mut Vec<i32>, depth: i32) -> usize {
    let bytes = text.as_bytes();
    while at < bytes.len() {
        match bytes[at] {
            b'\\' if bytes.get(at + 1) == Some(&b'(') => {
                interpolations.push(depth);
                return at + 2;
            }
            // An escape: the next character is text, whatever it is (a
            // multibyte one's other bytes are skipped as text too).
            b'\\' => at += 2,
            b'"' | b'\n' => return at + 1,
            _ => at += 1,
        }
    }
    text.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdict_words_in_any_case() {
        for accepted in [
            "CORRECT",
            "correct",
            "Correct: all good",
            "  CORRECT\n",
            "x\nCORRECT.",
        ] {
            assert!(says_correct(accepted), "{accepted:?}");
            assert!(!says_incorrect(accepted), "{accepted:?}");
        }
        for rejected in ["INCORRECT", "incorrect: x", "Incorrect", "\tINCORRECT: w"] {
            assert!(says_incorrect(rejected), "{rejected:?}");
            assert!(!says_correct(rejected), "{rejected:?}");
        }
        for neither in [
            "",
            "ok",
            "CORRECTED",
            "the answer is CORRECT",
            "correctly",
            "INCORRECTLY",
        ] {
            assert!(!says_correct(neither), "{neither:?}");
            assert!(!says_incorrect(neither), "{neither:?}");
        }
    }

    fn check(output: &str) -> stream::SolutionCheck {
        stream::SolutionCheck {
            output: output.to_owned(),
            ..Default::default()
        }
    }

    #[test]
    fn grades_each_way_a_checker_can_end() {
        assert_eq!(grade(&check("CORRECT\n")).0, Verdict::Accepted);
        assert_eq!(grade(&check("incorrect: x\n")).0, Verdict::Rejected);
        assert_eq!(
            grade(&check("CORRECT\nINCORRECT: y\n")).0,
            Verdict::Rejected
        );
        assert_eq!(grade(&check("")).0, Verdict::NoVerdict);
        assert_eq!(grade(&check("looks fine\n")).0, Verdict::NoVerdict);
        let errored = stream::SolutionCheck {
            errors: vec!["Error: result of evaluation is undefined: division by zero".into()],
            ..check("CORRECT\n")
        };
        let (verdict, reason) = grade(&errored);
        assert_eq!(verdict, Verdict::Error);
        assert!(reason.unwrap().contains("division by zero"));
        let unknown = stream::SolutionCheck {
            status: Some(stream::StreamStatus::Unknown),
            ..check("CORRECT\n")
        };
        assert_eq!(grade(&unknown).0, Verdict::Error);
    }

    #[test]
    fn the_worst_solution_decides_and_is_named() {
        let report = stream::parse(
            r#"{"type": "checker", "output": {"default": "CORRECT\n"}}
{"type": "solution", "output": {"json": {"x": 1}}}
{"type": "checker", "output": {"default": "nothing to say\n"}}
{"type": "solution", "output": {"json": {"x": 2}}}
{"type": "checker", "output": {"default": "CORRECT\n"}}
{"type": "solution", "output": {"json": {"x": 3}}}"#,
            true,
        );
        let facts = RunFacts {
            timed_out: false,
            truncated: false,
            status: SolveStatus::Satisfied,
        };
        let report = checker_report(facts, &report, String::new());
        assert_eq!(report.verdict, Verdict::NoVerdict);
        assert_eq!(report.status, CheckerStatus::Completed);
        assert!(report.reason.unwrap().starts_with("solution 2 of 3: "));
    }

    #[test]
    fn real_checkers_pass_the_lint() {
        let cases = [
            "int: x; output [if x = 2 then \"CORRECT\" else \"INCORRECT: x is \\(x)\" endif];",
            "array[1..3] of int: q; constraint forall(i in 1..3)(q[i] > 0); output [\"CORRECT\"];",
            "enum COLOUR; array[1..2] of COLOUR: c; output [\"CORRECT\"];",
            "int: n; array[1..n] of int: w = [i | i in 1..n]; int: x :: add_to_output; output [\"CORRECT\"];",
            "tuple(int, bool): t; output [\"CORRECT\"];",
            include_str!("../../checkers/load_planner.mzc.mzn"),
        ];
        for text in cases {
            assert_eq!(lint(text), Ok(()), "{text}");
        }
    }

    #[test]
    fn checkers_that_cannot_check_are_refused() {
        let cases = [
            ("", "no items"),
            ("% only a comment\n/* and another */", "no items"),
            ("output [\"CORRECT\"];", "declares nothing"),
            ("int: x = 3; output [\"CORRECT\"];", "declares nothing"),
            ("var 1..3: x; output [\"CORRECT\"];", "`var`"),
            ("int: x; solve satisfy; output [\"CORRECT\"];", "`solve`"),
            ("array[1..2] of var int: q; output [\"CORRECT\"];", "`var`"),
        ];
        for (text, expected) in cases {
            let error = lint(text).unwrap_err().to_string();
            assert!(error.contains(expected), "{text}: {error}");
        }
    }

    #[test]
    fn words_inside_comments_and_strings_do_not_count() {
        let text =
            "% var x; solve satisfy;\nint: x; /* var */ output [\"solve var \\(x) \\(\"var\")\"];";
        assert_eq!(lint(text), Ok(()));
        // Code inside an interpolation is code.
        let text = "int: x; output [\"\\(let { var int: y } in x)\"];";
        assert!(lint(text).is_err());
    }

    /// Both ways a checker rejects count: unsatisfiable constraints and a
    /// text verdict, on 2.6's top-level lines and 2.8+'s nested ones.
    #[test]
    fn an_incorrect_text_verdict_is_a_rejection() {
        let top_level = r#"{"type": "checker", "output": {"default": "INCORRECT: over capacity\n"}, "sections": ["default"]}
{"type": "solution", "output": {"json": {"x": 1}}}
{"type": "checker", "output": {"default": "CORRECT\n"}, "sections": ["default"]}
{"type": "solution", "output": {"json": {"x": 2}}}"#;
        let nested = r#"{"type": "checker", "messages": [{"type": "solution", "output": {"default": "INCORRECT: over capacity\n"}, "sections": ["default"]}]}
{"type": "solution", "output": {"json": {"x": 1}}}
{"type": "checker", "messages": [{"type": "solution", "output": {"default": "CORRECT\n"}, "sections": ["default"]}]}
{"type": "solution", "output": {"json": {"x": 2}}}"#;
        let facts = RunFacts {
            timed_out: false,
            truncated: false,
            status: SolveStatus::Satisfied,
        };
        for text in [top_level, nested] {
            let report = checker_report(facts, &stream::parse(text, true), String::new());
            let checks = &report.checks;
            assert!(checks[0].violation, "{text}");
            assert_eq!(checks[0].verdict, Verdict::Rejected, "{text}");
            assert_eq!(
                checks[0].reason.as_deref(),
                Some("INCORRECT: over capacity")
            );
            assert_eq!(checks[1].verdict, Verdict::Accepted, "{text}");
            assert!(!checks[1].violation, "{text}");
        }
    }
}

#[cfg(test)]
mod properties {
    use super::*;
    use proptest::prelude::*;

    /// Text made of what the scanner treats specially (quotes, escapes,
    /// interpolations, comments, brackets, multibyte letters), in any order.
    fn minizincish() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            Just("\"".to_owned()),
            Just("\\".to_owned()),
            Just("\\(".to_owned()),
            Just(")".to_owned()),
            Just("(".to_owned()),
            Just("'".to_owned()),
            Just("%".to_owned()),
            Just("/*".to_owned()),
            Just("*/".to_owned()),
            Just("\n".to_owned()),
            Just(";".to_owned()),
            Just(":".to_owned()),
            Just("=".to_owned()),
            Just("é".to_owned()),
            Just("∀".to_owned()),
            Just("int: x".to_owned()),
            Just("var".to_owned()),
            "[a-z_]{1,4}",
        ];
        prop::collection::vec(piece, 0..40).prop_map(|pieces| pieces.concat())
    }

    proptest! {
        #![proptest_config(crate::strategies::cases(256))]

        /// The scanner never slices inside a character, whatever the text.
        #[test]
        fn any_text_lints_without_a_panic(text in minizincish(), noise in any::<String>()) {
            let _ = lint(&text);
            let _ = lint(&noise);
            let _ = lint(&format!("{text}{noise}"));
        }

        /// Words inside a comment never count.
        #[test]
        fn a_var_inside_a_comment_does_not_make_a_model(text in "[a-z ]{0,20}") {
            let commented = format!("% var {text}\nint: x;\noutput [\"CORRECT\"];\n");
            prop_assert_eq!(lint(&commented), Ok(()));
        }
    }
}
