//! Parser for MiniZinc's `--json-stream` output: one JSON object a line.
//!
//! A pure function of the text, so every version quirk is a unit test here.
//! Lines that are not JSON objects and message types we do not know are
//! skipped (newer MiniZinc adds types; a cut-off last line is expected when
//! the output hit the cap).
//!
//! Checker messages come before the solution they judge, in two shapes:
//! - 2.6/2.7: a top-level `checker` line with `output`; a constraint-style
//!   checker that rejects prints a top-level `status: UNSATISFIABLE` (and a
//!   warning) just before the solution line.
//! - 2.8+: one `checker` line whose `messages` list nests the checker's
//!   solution output, warnings and `UNSATISFIABLE` status.
//!
//! So when a checker is present, a status line followed by a solution
//! belongs to the checker; only a status with no solution after it is the
//! model's verdict.
//!
//! [`compact_solution`] is the filter a solve's stdout goes through before
//! it is captured: a solution line carries the printed text up to three
//! times (`default`, `raw`, user sections) beside the `json` values, so it
//! becomes a *solution record* — a JSON array `[default text or null,
//! json section]`, plus the solution's `time` (milliseconds, with
//! `--output-time`) as a third item when it has one, MiniZinc's whitespace
//! dropped — holding exactly what
//! [`parse`] reads. MiniZinc's own messages are always objects, so a record
//! is never mistaken for one; the record form is ours, and a line of that
//! form is read as a solution whatever wrote it. Must not break: `parse` of the compacted
//! stream equals `parse` of the original (a property test below).
//!
//! A solve that asked for intermediate solutions only to watch them
//! ([`incumbent_filter`]) keeps less: a solution becomes an *incumbent
//! record* `["_incumbent", objective or null, time or null, n]` (n: the
//! solutions so far), and only the latest full record is held, written
//! (with n as a fourth item, so a live count does not count it twice)
//! before the status line or at the end. Incumbent records are
//! themselves thinned as the run goes on (at most one per 50 ms, then one
//! per thousandth of the time so far: about 8,500 in a day), so a run that
//! improves by one a million times cannot fill the cap either; the capture
//! holds the objective's path and the final solution.

use std::collections::BTreeMap;

use serde_json::{Map, Number, Value};

use crate::exec::{EachLine, LineFilter};

/// A `status` word of MiniZinc's stream, in MiniZinc's own spelling.
///
/// Open on purpose: a newer MiniZinc may add words, and a word we do not
/// know is kept verbatim in [`StreamStatus::Other`] (read as no verdict),
/// never dropped or mistaken for one we know. Not serialised: the results
/// carry [`super::results::SolveStatus`], our own closed set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamStatus {
    /// `ALL_SOLUTIONS`: every solution was printed.
    AllSolutions,
    /// `OPTIMAL_SOLUTION`: the last solution is proven optimal.
    OptimalSolution,
    /// `UNSATISFIABLE`.
    Unsatisfiable,
    /// `UNBOUNDED`.
    Unbounded,
    /// `UNSAT_OR_UNBOUNDED`.
    UnsatOrUnbounded,
    /// `UNKNOWN`: no verdict (2.9 also says it when interrupted after
    /// solutions, or when a checker stopped with an error).
    Unknown,
    /// `ERROR`.
    Error,
    /// A word this parser does not know, verbatim.
    Other(String),
}

impl StreamStatus {
    /// Reads one of MiniZinc's words.
    pub fn from_word(word: &str) -> StreamStatus {
        match word {
            "ALL_SOLUTIONS" => StreamStatus::AllSolutions,
            "OPTIMAL_SOLUTION" => StreamStatus::OptimalSolution,
            "UNSATISFIABLE" => StreamStatus::Unsatisfiable,
            "UNBOUNDED" => StreamStatus::Unbounded,
            "UNSAT_OR_UNBOUNDED" => StreamStatus::UnsatOrUnbounded,
            "UNKNOWN" => StreamStatus::Unknown,
            "ERROR" => StreamStatus::Error,
            other => StreamStatus::Other(other.to_owned()),
        }
    }

    /// The word as MiniZinc wrote it.
    pub fn as_str(&self) -> &str {
        match self {
            StreamStatus::AllSolutions => "ALL_SOLUTIONS",
            StreamStatus::OptimalSolution => "OPTIMAL_SOLUTION",
            StreamStatus::Unsatisfiable => "UNSATISFIABLE",
            StreamStatus::Unbounded => "UNBOUNDED",
            StreamStatus::UnsatOrUnbounded => "UNSAT_OR_UNBOUNDED",
            StreamStatus::Unknown => "UNKNOWN",
            StreamStatus::Error => "ERROR",
            StreamStatus::Other(word) => word,
        }
    }
}

impl std::fmt::Display for StreamStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One solution as the stream reported it.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamSolution {
    /// The `json` section without the `_objective` / `_output` / `_checker` keys.
    pub values: Map<String, Value>,
    /// `_objective` from the `json` section.
    pub objective: Option<Number>,
    /// The `default` section, or `name = value;` lines made from `values`.
    pub text: String,
    /// The checker's verdict on this solution, when a checker ran.
    pub check: Option<SolutionCheck>,
    /// When the solver printed it, in milliseconds since MiniZinc started
    /// (`--output-time`).
    pub time_ms: Option<u64>,
}

/// What the checker said about one solution, as the stream carried it
/// (graded into a verdict by [`super::checker`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SolutionCheck {
    /// The checker found the solution inconsistent (its constraints failed;
    /// its text is read by [`super::checker::grade`]).
    pub violation: bool,
    /// What the checker printed, verbatim (e.g. `CORRECT` / `INCORRECT`),
    /// plus the inconsistency message when it rejected.
    pub output: String,
    /// Errors the checker stopped with on this solution (an undefined
    /// result, an assertion, an abort, a type error), rendered.
    pub errors: Vec<String>,
    /// A status of the checker's own other than `UNSATISFIABLE` (2.9 says
    /// `UNKNOWN` when the checker stopped with an error).
    pub status: Option<StreamStatus>,
}

/// An `error` message from the stream.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamError {
    /// MiniZinc's error kind: `syntax error`, `type error`, `time out`, ...
    pub what: String,
    /// The message text, untrimmed.
    pub message: String,
    /// `file:line.column`, when the message has a location.
    pub location: Option<String>,
}

impl StreamError {
    /// One line in MiniZinc's own style, for `stderr`.
    pub fn render(&self) -> String {
        let location = self
            .location
            .as_ref()
            .map(|loc| format!("{loc}: "))
            .unwrap_or_default();
        format!("{location}Error: {}: {}", self.what, self.message.trim())
    }
}

/// Everything the stream said.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StreamReport {
    /// Every `solution` message, in the order printed.
    pub solutions: Vec<StreamSolution>,
    /// The model's final status (`OPTIMAL_SOLUTION`, `UNSATISFIABLE`, ...).
    pub status: Option<StreamStatus>,
    /// Every statistics value, stringified, last write wins.
    pub statistics: BTreeMap<String, String>,
    /// Every `error` message, in the order printed.
    pub errors: Vec<StreamError>,
    /// Warning and trace lines, rendered for `stderr`.
    pub notes: Vec<String>,
    /// The `interface` message of `--model-interface-only`.
    pub interface: Option<Map<String, Value>>,
    /// The objective and time of each solution an [`incumbent_filter`]
    /// kept an incumbent record of, in order (and of the final one).
    pub incumbents: Vec<(Option<Number>, Option<u64>)>,
    /// How many solutions the solver printed in a watched run (0 if not
    /// watched): the filter keeps one of them whole.
    pub watched: u64,
}

impl StreamReport {
    /// The model's objective kind from the flattening statistics:
    /// `satisfy`, `minimize` or `maximize`.
    pub fn method(&self) -> Option<&str> {
        self.statistics.get("method").map(String::as_str)
    }
}

/// Parses a whole `--json-stream` transcript. `checker` says whether a
/// solution checker took part, which decides who owns a status line.
pub fn parse(text: &str, checker: bool) -> StreamReport {
    let mut parser = Parser {
        checker,
        report: StreamReport::default(),
        pending_check: None,
        pending_status: None,
    };
    for line in text.lines() {
        match serde_json::from_str::<Value>(line.trim()) {
            Ok(Value::Object(message)) => parser.message(&message),
            Ok(Value::Array(record)) => {
                if let Some((text, json, time_ms)) = solution_record(&record) {
                    parser.solution(text, Some(json), time_ms);
                    // A held solution past the last incumbent record kept
                    // ends the path.
                    if let Some(count) = held_count(&record)
                        && count > parser.report.watched
                    {
                        if let Some(last) = parser.report.solutions.last() {
                            let point = (last.objective.clone(), last.time_ms);
                            parser.report.incumbents.push(point);
                        }
                        parser.report.watched = count;
                    }
                } else if let Some(incumbent) = incumbent_record(&record) {
                    parser.report.incumbents.push(incumbent);
                    let count = incumbent_count(&record).unwrap_or(0);
                    parser.report.watched = parser.report.watched.max(count);
                }
            }
            _ => {}
        }
    }
    parser.finish()
}

/// The lines of `text` that are not `--json-stream` messages (nor blank):
/// what MiniZinc printed outside its protocol. A message's content is
/// reported where it belongs (warnings and errors in `stderr`), so it is not
/// repeated here.
pub fn plain_lines(text: &str) -> String {
    let mut plain = String::new();
    for line in text.lines() {
        let is_message = serde_json::from_str::<Value>(line.trim())
            .is_ok_and(|message| message.get("type").is_some_and(Value::is_string));
        if !is_message && !line.trim().is_empty() {
            plain.push_str(line);
            plain.push('\n');
        }
    }
    plain
}

/// The stdout filter of a solve without a checker: a `solution` message
/// becomes a solution record (see the module doc); any other line stays.
pub fn compact_solution(line: &str) -> Option<String> {
    Some(Value::Array(solution_record_of(line)?).to_string())
}

/// The solution record of a `solution` message line, not yet written out.
fn solution_record_of(line: &str) -> Option<Vec<Value>> {
    // Cheap test first: most lines of a long run are solutions, the rest
    // are few, and only a solution message can hold this key.
    if !line.contains("\"solution\"") {
        return None;
    }
    let Ok(Value::Object(message)) = serde_json::from_str::<Value>(line.trim()) else {
        return None;
    };
    if message.get("type").and_then(Value::as_str) != Some("solution") {
        return None;
    }
    let output = message.get("output").and_then(Value::as_object)?;
    let json = output.get("json").filter(|json| json.is_object())?;
    let text = output.get("default").filter(|text| text.is_string());
    let mut record = vec![text.cloned().unwrap_or(Value::Null), json.clone()];
    if let Some(time) = message.get("time").filter(|time| time.is_u64()) {
        record.push(time.clone());
    }
    Some(record)
}

/// The stdout filter of a solve without a checker: [`compact_solution`]
/// on each line.
pub fn solution_filter() -> Box<dyn LineFilter> {
    Box::new(EachLine(compact_solution))
}

/// The stdout filter of a solve that asked for intermediate solutions only
/// to watch them: see the module doc.
pub fn incumbent_filter() -> Box<dyn LineFilter> {
    Box::new(Incumbents::with_gap(INCUMBENT_GAP))
}

/// The shortest gap between two kept incumbent records.
const INCUMBENT_GAP: std::time::Duration = std::time::Duration::from_millis(50);

/// The tag of an incumbent record.
const INCUMBENT: &str = "_incumbent";

struct Incumbents {
    /// The latest solution's full record, not yet written.
    held: Option<Value>,
    /// Solutions so far.
    seen: u64,
    started: std::time::Instant,
    /// When the last incumbent record was kept.
    last_kept: Option<std::time::Instant>,
    /// The shortest gap between two kept incumbent records.
    gap: std::time::Duration,
}

impl Incumbents {
    fn with_gap(gap: std::time::Duration) -> Self {
        Incumbents {
            held: None,
            seen: 0,
            started: std::time::Instant::now(),
            last_kept: None,
            gap,
        }
    }

    /// Whether an incumbent record is due: the first, or one the gap since
    /// the last allows (`gap`, or a thousandth of the run so far).
    fn due(&mut self) -> bool {
        let now = std::time::Instant::now();
        let gap = self.gap.max(self.started.elapsed() / 1000);
        let due = self.last_kept.is_none_or(|last| now - last >= gap);
        if due {
            self.last_kept = Some(now);
        }
        due
    }
}

impl LineFilter for Incumbents {
    fn line(&mut self, line: &str) -> Option<String> {
        if let Some(mut record) = solution_record_of(line) {
            let objective = record
                .get(1)
                .and_then(|json| json.get("_objective"))
                .filter(|objective| objective.is_number())
                .cloned()
                .unwrap_or(Value::Null);
            let time = record.get(2).cloned().unwrap_or(Value::Null);
            self.seen += 1;
            record.resize(3, Value::Null);
            record.push(Value::from(self.seen));
            self.held = Some(Value::Array(record));
            if !self.due() {
                return Some(String::new());
            }
            let incumbent = vec![
                Value::from(INCUMBENT),
                objective,
                time,
                Value::from(self.seen),
            ];
            return Some(Value::Array(incumbent).to_string());
        }
        // The status ends the solutions: the final one goes before it.
        let is_status = line.contains("\"status\"")
            && serde_json::from_str::<Value>(line.trim())
                .is_ok_and(|message| message["type"] == "status");
        if !is_status {
            return None;
        }
        let held = self.held.take()?;
        Some(format!("{held}\n{line}"))
    }

    fn finish(&mut self) -> Option<String> {
        self.held.take().map(|held| held.to_string())
    }
}

/// What a solution record holds: its printed text, `json` section and time.
type RecordParts<'a> = (Option<&'a str>, &'a Map<String, Value>, Option<u64>);

/// A solution record's parts (a held full record's included).
fn solution_record(record: &[Value]) -> Option<RecordParts<'_>> {
    match record {
        [text @ (Value::String(_) | Value::Null), Value::Object(json)] => {
            Some((text.as_str(), json, None))
        }
        [
            text @ (Value::String(_) | Value::Null),
            Value::Object(json),
            time @ (Value::Number(_) | Value::Null),
        ]
        | [
            text @ (Value::String(_) | Value::Null),
            Value::Object(json),
            time @ (Value::Number(_) | Value::Null),
            Value::Number(_),
        ] => Some((text.as_str(), json, time.as_u64())),
        _ => None,
    }
}

/// An incumbent record's objective and time.
fn incumbent_record(record: &[Value]) -> Option<(Option<Number>, Option<u64>)> {
    match record {
        [Value::String(tag), objective, time, _] if tag == INCUMBENT => {
            Some((objective.as_number().cloned(), time.as_u64()))
        }
        _ => None,
    }
}

/// How many solutions the run had printed by an incumbent record.
fn incumbent_count(record: &[Value]) -> Option<u64> {
    match record {
        [Value::String(tag), _, _, count] if tag == INCUMBENT => count.as_u64(),
        _ => None,
    }
}

/// How many solutions the run had printed by a held full record (its
/// fourth item; read only of a record [`solution_record`] accepts).
fn held_count(record: &[Value]) -> Option<u64> {
    record.get(3).and_then(Value::as_u64)
}

/// For a live count, read once: `Some((objective, so_far))` when the line
/// (a message or a record) is a solution, `so_far` being the solutions
/// the run had printed by then when an incumbent record says so.
pub fn solution_seen(line: &str) -> Option<(Option<Value>, Option<u64>)> {
    match serde_json::from_str::<Value>(line.trim()).ok()? {
        message @ Value::Object(_) if message["type"] == "solution" => {
            Some((message.pointer("/output/json/_objective").cloned(), None))
        }
        Value::Array(record) => {
            if let Some((objective, _)) = incumbent_record(&record) {
                return Some((objective.map(Value::Number), incumbent_count(&record)));
            }
            // A held record was counted as its incumbent record already.
            if record.len() == 4 {
                return None;
            }
            let (_, json, _) = solution_record(&record)?;
            Some((json.get("_objective").cloned(), None))
        }
        _ => None,
    }
}

struct Parser {
    checker: bool,
    report: StreamReport,
    /// Checker output waiting for the solution it judges.
    pending_check: Option<SolutionCheck>,
    /// With a checker: a status not yet known to be the checker's or the model's.
    pending_status: Option<StreamStatus>,
}

impl Parser {
    fn message(&mut self, message: &Map<String, Value>) {
        let kind = message.get("type").and_then(Value::as_str).unwrap_or("");
        match kind {
            "solution" => {
                let output = message.get("output").and_then(Value::as_object);
                self.solution(
                    output
                        .and_then(|out| out.get("default"))
                        .and_then(Value::as_str),
                    output
                        .and_then(|out| out.get("json"))
                        .and_then(Value::as_object),
                    message.get("time").and_then(Value::as_u64),
                );
            }
            "checker" => self.checker_message(message),
            "status" => {
                let Some(status) = message.get("status").and_then(Value::as_str) else {
                    return;
                };
                let status = StreamStatus::from_word(status);
                if self.checker {
                    self.pending_status = Some(status);
                } else {
                    self.report.status = Some(status);
                }
            }
            "statistics" => {
                if let Some(Value::Object(stats)) = message.get("statistics") {
                    for (key, value) in stats {
                        self.report.statistics.insert(key.clone(), stringify(value));
                    }
                }
            }
            "error" => {
                let error = StreamError {
                    what: text_field(message, "what").unwrap_or_else(|| "error".to_owned()),
                    message: text_field(message, "message").unwrap_or_default(),
                    location: message.get("location").and_then(render_location),
                };
                // With a checker, an error followed by a solution is the
                // checker's on that solution (the model's own errors end
                // the run): MiniZinc prints it at the top level, often
                // without a location, and goes on.
                if self.checker {
                    self.pending_check
                        .get_or_insert_with(SolutionCheck::default)
                        .errors
                        .push(error.render());
                }
                self.report.errors.push(error);
            }
            "warning" => {
                let note = render_warning(message);
                if self.checker && is_checker_location(message) {
                    self.pending_check
                        .get_or_insert_with(SolutionCheck::default)
                        .output
                        .push_str(&format!("{note}\n"));
                }
                self.report.notes.push(note);
            }
            "trace" => {
                if let Some(text) = text_field(message, "message") {
                    self.report.notes.push(text.trim_end().to_owned());
                }
            }
            "interface" => self.report.interface = Some(message.clone()),
            _ => {}
        }
    }

    /// A solution: its `default` text and its `json` section.
    fn solution(
        &mut self,
        text: Option<&str>,
        json: Option<&Map<String, Value>>,
        time_ms: Option<u64>,
    ) {
        let mut values = json.cloned().unwrap_or_default();
        let objective = match values.remove("_objective") {
            Some(Value::Number(number)) => Some(number),
            _ => None,
        };
        values.remove("_output");
        values.remove("_checker");
        let text = text
            .map(str::to_owned)
            .unwrap_or_else(|| synthesize_text(&values));
        let check = if self.checker {
            let mut check = self.pending_check.take().unwrap_or_default();
            match self.pending_status.take() {
                Some(StreamStatus::Unsatisfiable) => check.violation = true,
                Some(status) => check.status = Some(status),
                None => {}
            }
            Some(check)
        } else {
            None
        };
        self.report.solutions.push(StreamSolution {
            values,
            objective,
            text,
            check,
            time_ms,
        });
    }

    fn checker_message(&mut self, message: &Map<String, Value>) {
        let check = self
            .pending_check
            .get_or_insert_with(SolutionCheck::default);
        match message.get("messages").and_then(Value::as_array) {
            // 2.8+: everything the checker said, nested.
            Some(nested) => {
                for inner in nested.iter().filter_map(Value::as_object) {
                    match inner.get("type").and_then(Value::as_str).unwrap_or("") {
                        "solution" => check.output.push_str(&section_text(inner)),
                        "status" => {
                            if let Some(word) = inner.get("status").and_then(Value::as_str) {
                                match StreamStatus::from_word(word) {
                                    StreamStatus::Unsatisfiable => check.violation = true,
                                    status => check.status = Some(status),
                                }
                            }
                        }
                        "warning" => check
                            .output
                            .push_str(&format!("{}\n", render_warning(inner))),
                        "error" => {
                            let what = text_field(inner, "what").unwrap_or_default();
                            let text = text_field(inner, "message").unwrap_or_default();
                            let rendered = format!("Error: {what}: {}", text.trim());
                            check.output.push_str(&format!("{rendered}\n"));
                            check.errors.push(rendered);
                        }
                        _ => {}
                    }
                }
            }
            // 2.6/2.7: the checker's output sections at the top level.
            None => check.output.push_str(&section_text(message)),
        }
    }

    fn finish(mut self) -> StreamReport {
        if let Some(status) = self.pending_status.take() {
            self.report.status = Some(status);
        }
        self.report
    }
}

/// The readable text of a message's `output`: `default`, else `raw`, else
/// the first text section.
fn section_text(message: &Map<String, Value>) -> String {
    let Some(output) = message.get("output").and_then(Value::as_object) else {
        return String::new();
    };
    ["default", "raw"]
        .iter()
        .find_map(|key| output.get(*key).and_then(Value::as_str))
        .or_else(|| output.values().find_map(Value::as_str))
        .unwrap_or_default()
        .to_owned()
}

/// `name = value;` lines for a model without an output item.
fn synthesize_text(values: &Map<String, Value>) -> String {
    values
        .iter()
        .map(|(name, value)| format!("{name} = {value};\n"))
        .collect()
}

fn stringify(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

fn text_field(message: &Map<String, Value>, key: &str) -> Option<String> {
    message.get(key).and_then(Value::as_str).map(str::to_owned)
}

fn render_location(location: &Value) -> Option<String> {
    let file = location.get("filename").and_then(Value::as_str)?;
    let line = location
        .get("firstLine")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let column = location
        .get("firstColumn")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    Some(format!("{file}:{line}.{column}"))
}

fn render_warning(message: &Map<String, Value>) -> String {
    let location = message
        .get("location")
        .and_then(render_location)
        .map(|loc| format!("{loc}: "))
        .unwrap_or_default();
    let text = text_field(message, "message").unwrap_or_default();
    format!("{location}Warning: {}", text.trim())
}

fn is_checker_location(message: &Map<String, Value>) -> bool {
    message
        .get("location")
        .and_then(|location| location.get("filename"))
        .and_then(Value::as_str)
        .is_some_and(|file| file.ends_with(".mzc") || file.ends_with(".mzc.mzn"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A live count's objective of `line` alone.
    fn solution_objective(line: &str) -> Option<Option<Value>> {
        solution_seen(line).map(|(objective, _)| objective)
    }

    #[test]
    fn plain_lines_are_what_is_not_a_message() {
        let text = concat!(
            "{\"type\": \"warning\", \"message\": \"deprecated\"}\n",
            "printed outside the protocol\n",
            "{\"no_type\": 1}\n",
            "  {\"type\": \"error\", \"message\": \"x\"}  \n",
            "{\"type\": 3}\n",
            "\n  \n",
        );
        assert_eq!(
            plain_lines(text),
            "printed outside the protocol\n{\"no_type\": 1}\n{\"type\": 3}\n"
        );
        assert_eq!(plain_lines(""), "");
    }

    #[test]
    fn stream_statuses_read_and_print_minizincs_words() {
        for word in [
            "ALL_SOLUTIONS",
            "OPTIMAL_SOLUTION",
            "UNSATISFIABLE",
            "UNBOUNDED",
            "UNSAT_OR_UNBOUNDED",
            "UNKNOWN",
            "ERROR",
            "SOMETHING_NEW",
        ] {
            assert_eq!(StreamStatus::from_word(word).to_string(), word);
        }
        assert_eq!(
            StreamStatus::from_word("UNSAT_OR_UNBOUNDED"),
            StreamStatus::UnsatOrUnbounded
        );
        assert_eq!(
            StreamStatus::from_word("SOMETHING_NEW"),
            StreamStatus::Other("SOMETHING_NEW".to_owned())
        );
    }
    use serde_json::json;

    /// MiniZinc 2.6.4's line for one solution of a model with an output
    /// item: the text twice, the values once, with MiniZinc's spacing.
    const SOLUTION_LINE: &str = r#"{"type": "solution", "output": {"default": "q = [5, 2]\n", "raw": "q = [5, 2]\n", "json": {  "q" : [5, 2],  "_objective" : 7}}, "sections": ["default", "raw", "json"]}"#;

    #[test]
    fn a_solution_line_becomes_a_record_of_text_and_values() {
        let record = compact_solution(SOLUTION_LINE).unwrap();
        assert_eq!(record, r#"["q = [5, 2]\n",{"_objective":7,"q":[5,2]}]"#);
        assert_eq!(parse(&record, false), parse(SOLUTION_LINE, false));
        // Without an output item there is no text to keep.
        let bare =
            r#"{"type": "solution", "output": {"json": {  "b" : true}}, "sections": ["json"]}"#;
        assert_eq!(compact_solution(bare).unwrap(), r#"[null,{"b":true}]"#);
        // Everything else stays as it was printed.
        for line in [
            r#"{"type": "status", "status": "OPTIMAL_SOLUTION"}"#,
            r#"{"type": "statistics", "statistics": {"solutions": 3}}"#,
            r#"{"type": "solution", "output": {"default": "no json\n"}}"#,
            r#"{"type": "trace", "message": "\"solution\""}"#,
            r#"{"type": "solution", "output": {"default": "cut"#,
            "not json",
        ] {
            assert_eq!(compact_solution(line), None, "{line}");
        }
    }

    /// What an `Incumbents` filter whose records are `gap` apart makes of
    /// `lines`, as the capture holds it.
    fn through_incumbents(lines: &[&str], gap: std::time::Duration) -> String {
        let mut filter = Incumbents::with_gap(gap);
        let mut kept = String::new();
        for line in lines {
            match filter.line(line) {
                Some(text) if text.is_empty() => continue,
                Some(text) => kept.push_str(&text),
                None => kept.push_str(line),
            }
            kept.push('\n');
        }
        if let Some(held) = filter.finish() {
            kept.push_str(&held);
            kept.push('\n');
        }
        kept
    }

    const IMPROVING: [&str; 4] = [
        r#"{"type": "solution", "output": {"default": "x=1\n", "json": {  "x" : 1,  "_objective" : 1}}, "sections": ["default", "json"], "time": 5}"#,
        r#"{"type": "trace", "message": "between\n"}"#,
        r#"{"type": "solution", "output": {"default": "x=2\n", "json": {  "x" : 2,  "_objective" : 4}}, "sections": ["default", "json"], "time": 9}"#,
        r#"{"type": "status", "status": "OPTIMAL_SOLUTION", "time": 9}"#,
    ];

    #[test]
    fn watched_incumbents_keep_their_path_and_only_the_last_solution() {
        let kept = through_incumbents(&IMPROVING, std::time::Duration::ZERO);
        assert_eq!(
            kept,
            concat!(
                "[\"_incumbent\",1,5,1]\n",
                "{\"type\": \"trace\", \"message\": \"between\\n\"}\n",
                "[\"_incumbent\",4,9,2]\n",
                "[\"x=2\\n\",{\"_objective\":4,\"x\":2},9,2]\n",
                "{\"type\": \"status\", \"status\": \"OPTIMAL_SOLUTION\", \"time\": 9}\n",
            )
        );
        let report = parse(&kept, false);
        let full = parse(&IMPROVING.join("\n"), false);
        assert_eq!(report.solutions, full.solutions[1..]);
        assert_eq!(report.status, Some(StreamStatus::OptimalSolution));
        assert_eq!(
            report.incumbents,
            [
                (Some(Number::from(1)), Some(5)),
                (Some(Number::from(4)), Some(9))
            ]
        );
        // The live count sees each solution once.
        let counted = kept
            .lines()
            .filter_map(solution_objective)
            .collect::<Vec<_>>();
        assert_eq!(counted, [Some(json!(1)), Some(json!(4))]);
        assert_eq!(report.watched, 2);
    }

    #[test]
    fn incumbents_that_come_too_fast_are_counted_not_kept() {
        let kept = through_incumbents(&IMPROVING, std::time::Duration::from_secs(3600));
        assert_eq!(
            kept,
            concat!(
                "[\"_incumbent\",1,5,1]\n",
                "{\"type\": \"trace\", \"message\": \"between\\n\"}\n",
                "[\"x=2\\n\",{\"_objective\":4,\"x\":2},9,2]\n",
                "{\"type\": \"status\", \"status\": \"OPTIMAL_SOLUTION\", \"time\": 9}\n",
            )
        );
        let report = parse(&kept, false);
        // The held final solution still ends the path.
        assert_eq!(
            report.incumbents,
            [
                (Some(Number::from(1)), Some(5)),
                (Some(Number::from(4)), Some(9))
            ]
        );
        assert_eq!(report.watched, 2);
        assert_eq!(
            solution_seen(kept.lines().next().unwrap()),
            Some((Some(json!(1)), Some(1)))
        );
    }

    #[test]
    fn a_run_cut_off_before_its_status_still_keeps_its_incumbent() {
        let kept = through_incumbents(&IMPROVING[..3], std::time::Duration::ZERO);
        let report = parse(&kept, false);
        assert_eq!(report.solutions.len(), 1);
        assert_eq!(report.solutions[0].objective, Some(Number::from(4)));
        assert_eq!(report.solutions[0].time_ms, Some(9));
        assert_eq!(report.status, None);
    }

    #[test]
    fn the_live_count_reads_messages_and_records() {
        let objective = Some(json!(7));
        assert_eq!(solution_objective(SOLUTION_LINE), Some(objective.clone()));
        let record = compact_solution(SOLUTION_LINE).unwrap();
        assert_eq!(solution_objective(&record), Some(objective));
        assert_eq!(solution_objective(r#"[null,{"b":true}]"#), Some(None));
        assert_eq!(solution_objective(r#"{"type": "status"}"#), None);
        assert_eq!(solution_objective("[1, 2]"), None);
    }

    #[test]
    fn optimisation_run_with_output_item() {
        let text = r#"{"type": "warning", "message": "included file \"count.mzn\" overrides a global constraint file"}
{"type": "statistics", "statistics": {"paths": 0, "method": "maximize", "flatTime": 0.04}}
{"type": "solution", "output": {"default": "x=9 y=1\n", "raw": "x=9 y=1\n", "json": {  "x" : 9,  "y" : 1,  "_objective" : 19}}, "sections": ["default", "raw", "json"]}
{"type": "solution", "output": {"default": "x=10 y=2\n", "raw": "x=10 y=2\n", "json": {  "x" : 10,  "y" : 2,  "_objective" : 22}}, "sections": ["default", "raw", "json"]}
{"type": "status", "status": "OPTIMAL_SOLUTION"}
{"type": "statistics", "statistics": {"nodes": 21, "solveTime": 0.000126}}"#;
        let report = parse(text, false);
        assert_eq!(report.solutions.len(), 2);
        let best = &report.solutions[1];
        assert_eq!(best.text, "x=10 y=2\n");
        assert_eq!(best.objective, Some(Number::from(22)));
        assert_eq!(Value::Object(best.values.clone()), json!({"x": 10, "y": 2}));
        assert_eq!(report.status, Some(StreamStatus::OptimalSolution));
        assert_eq!(report.method(), Some("maximize"));
        assert_eq!(report.statistics["nodes"], "21");
        assert_eq!(report.statistics["flatTime"], "0.04");
        assert_eq!(report.notes.len(), 1);
        assert!(best.check.is_none());
    }

    #[test]
    fn model_without_output_item_gets_synthesized_text() {
        let text = r#"{"type": "solution", "output": {"json": {  "q" : [1, 3, 2],  "b" : false}}, "sections": ["json"]}"#;
        let report = parse(text, false);
        assert_eq!(report.solutions[0].text, "b = false;\nq = [1,3,2];\n");
        assert_eq!(report.status, None);
    }

    #[test]
    fn unknown_types_and_broken_lines_are_skipped() {
        let text = "{\"type\": \"time\", \"time\": 48}\n{\"type\": \"progress\", \"progress\": 0.5}\nnot json\n{\"type\": \"solution\", \"output\": {\"json\": {\"x\": 1}}}\n{\"type\": \"solution\", \"output\": {\"js";
        let report = parse(text, false);
        assert_eq!(report.solutions.len(), 1);
    }

    #[test]
    fn errors_keep_kind_message_and_location() {
        let text = r#"{"type": "error", "what": "syntax error", "location": {"filename": "/tmp/m.mzn", "firstLine": 2, "firstColumn": 1, "lastLine": 2, "lastColumn": 5}, "message": "unexpected item, expecting ';' or end of file"}"#;
        let report = parse(text, false);
        assert_eq!(
            report.errors[0].render(),
            "/tmp/m.mzn:2.1: Error: syntax error: unexpected item, expecting ';' or end of file"
        );
    }

    /// MiniZinc 2.6.4, a constraint checker that rejects the last two solutions.
    #[test]
    fn old_style_checker_status_belongs_to_the_next_solution() {
        let text = r#"{"type": "checker", "output": {"default": "ok\n", "raw": "ok\n"}, "sections": ["default", "raw"]}
{"type": "solution", "output": {"default": "x=9 y=1\n", "json": {"x": 9, "y": 1, "_objective": 19}}}
{"type": "warning", "location": {"filename": "checker.mzc", "firstLine": 5, "firstColumn": 12, "lastLine": 5, "lastColumn": 17}, "stack": [], "message": "model inconsistency detected: expression evaluated to false"}
{"type": "status", "status": "UNSATISFIABLE"}
{"type": "solution", "output": {"default": "x=10 y=1\n", "json": {"x": 10, "y": 1, "_objective": 21}}}
{"type": "warning", "location": {"filename": "checker.mzc", "firstLine": 5, "firstColumn": 12, "lastLine": 5, "lastColumn": 17}, "stack": [], "message": "model inconsistency detected: expression evaluated to false"}
{"type": "status", "status": "UNSATISFIABLE"}
{"type": "solution", "output": {"default": "x=10 y=2\n", "json": {"x": 10, "y": 2, "_objective": 22}}}
{"type": "status", "status": "OPTIMAL_SOLUTION"}"#;
        let report = parse(text, true);
        let checks: Vec<_> = report
            .solutions
            .iter()
            .map(|s| s.check.clone().unwrap())
            .collect();
        assert_eq!(checks.len(), 3);
        assert!(!checks[0].violation);
        assert_eq!(checks[0].output, "ok\n");
        assert!(checks[1].violation);
        assert!(checks[1].output.contains("model inconsistency detected"));
        assert!(checks[2].violation);
        assert_eq!(report.status, Some(StreamStatus::OptimalSolution));
    }

    #[test]
    fn with_a_checker_a_trailing_status_is_the_models() {
        let text = r#"{"type": "status", "status": "UNSATISFIABLE"}"#;
        let report = parse(text, true);
        assert!(report.solutions.is_empty());
        assert_eq!(report.status, Some(StreamStatus::Unsatisfiable));
    }

    /// MiniZinc 2.8+: the checker's messages nested in one line.
    #[test]
    fn nested_checker_messages() {
        let text = r#"{"type": "checker", "messages": [{"type": "solution", "output": {"default": "CORRECT\n", "raw": "CORRECT\n"}, "sections": ["default", "raw"]}], "output": {"default": "CORRECT\n"}, "sections": ["default"]}
{"type": "solution", "output": {"json": {"x": 1}}}
{"type": "checker", "messages": [{"type": "warning", "location": {"filename": "checker.mzc.mzn", "firstLine": 3, "firstColumn": 1}, "message": "model inconsistency detected"}, {"type": "status", "status": "UNSATISFIABLE"}]}
{"type": "solution", "output": {"json": {"x": 2}}}
{"type": "status", "status": "ALL_SOLUTIONS"}"#;
        let report = parse(text, true);
        let first = report.solutions[0].check.clone().unwrap();
        assert_eq!(
            first,
            SolutionCheck {
                violation: false,
                output: "CORRECT\n".into(),
                ..SolutionCheck::default()
            }
        );
        let second = report.solutions[1].check.clone().unwrap();
        assert!(second.violation);
        assert!(second.output.contains("model inconsistency detected"));
        assert_eq!(report.status, Some(StreamStatus::AllSolutions));
    }

    #[test]
    fn reads_the_interface_message() {
        let text = r#"{"type": "interface", "input": {"n": {"type" : "int"}}, "output": {"x": {"type" : "int"}}, "method": "sat", "has_output_item": false, "included_files": [], "globals": []}
{"type": "time", "time": 48}"#;
        let report = parse(text, false);
        let interface = report.interface.unwrap();
        assert_eq!(interface["method"], "sat");
    }
}

#[cfg(test)]
mod properties {
    use super::*;
    use crate::strategies::{deeply_nested, json_object, json_value, key, not_an_object_line};
    use proptest::prelude::*;
    use serde_json::json;

    /// A message MiniZinc could print, as the line it prints.
    fn message_line() -> impl Strategy<Value = String> {
        let solution = (
            json_object(2),
            proptest::option::of(any::<i64>()),
            proptest::option::of(any::<String>()),
        )
            .prop_map(|(mut values, objective, default)| {
                if let Some(objective) = objective {
                    values.insert("_objective".to_owned(), json!(objective));
                }
                let mut output = json!({"json": values});
                if let Some(default) = default {
                    output["default"] = json!(default);
                }
                json!({"type": "solution", "output": output})
            });
        let status = prop_oneof![
            Just("OPTIMAL_SOLUTION"),
            Just("SATISFIED"),
            Just("UNSATISFIABLE"),
            Just("UNKNOWN"),
            Just("ERROR"),
        ]
        .prop_map(|status| json!({"type": "status", "status": status}));
        let statistics =
            json_object(1).prop_map(|stats| json!({"type": "statistics", "statistics": stats}));
        let note = (
            prop_oneof![
                Just("error".to_owned()),
                Just("warning".to_owned()),
                Just("trace".to_owned()),
                Just("checker".to_owned()),
                Just("interface".to_owned()),
                key()
            ],
            json_object(2),
        )
            .prop_map(|(kind, mut body)| {
                body.insert("type".to_owned(), json!(kind));
                Value::Object(body)
            });
        prop_oneof![solution, status, statistics, note, json_value(3)]
            .prop_map(|value| value.to_string())
    }

    /// A line that is neither a message (an object) nor a solution record
    /// (`[text or null, object]`, the form our capture filter writes).
    fn noise_line() -> impl Strategy<Value = String> {
        not_an_object_line().prop_filter("a solution record is not noise", |line| {
            !matches!(
                serde_json::from_str::<Value>(line.trim()),
                Ok(Value::Array(record)) if solution_record(&record).is_some()
            )
        })
    }

    proptest! {
        #![proptest_config(crate::strategies::cases(128))]

        #[test]
        fn any_text_gives_a_report(text in any::<String>(), checker in any::<bool>()) {
            let _ = parse(&text, checker);
        }

        #[test]
        fn any_messages_give_a_report(lines in prop::collection::vec(message_line(), 0..12), checker in any::<bool>()) {
            let _ = parse(&lines.join("\n"), checker);
        }

        /// Lines that are not JSON objects, and a cut-off last line, are
        /// skipped: the report is the one of the messages alone.
        #[test]
        fn noise_and_a_cut_off_tail_change_nothing(
            lines in prop::collection::vec(message_line(), 0..10),
            noise in prop::collection::vec((any::<prop::sample::Index>(), noise_line()), 0..6),
            tail in message_line(),
            cut in any::<prop::sample::Index>(),
            checker in any::<bool>(),
        ) {
            let clean = parse(&lines.join("\n"), checker);
            let mut noisy = lines.clone();
            for (at, line) in noise {
                noisy.insert(at.index(noisy.len() + 1), line);
            }
            // A strict prefix of a one-line object is never an object.
            let mut end = cut.index(tail.len());
            while !tail.is_char_boundary(end) {
                end -= 1;
            }
            noisy.push(tail[..end].to_owned());
            prop_assert_eq!(parse(&noisy.join("\n"), checker), clean);
        }

        /// Without a checker, every solution comes back with its values and
        /// objective, and the last status line is the status.
        #[test]
        fn solutions_and_status_round_trip(
            solutions in prop::collection::vec((json_object(3), proptest::option::of(any::<i64>())), 0..5),
            status in proptest::option::of("[A-Z_]{1,20}"),
        ) {
            let mut text = String::new();
            for (values, objective) in &solutions {
                let mut json = values.clone();
                if let Some(objective) = objective {
                    json.insert("_objective".to_owned(), json!(objective));
                }
                text.push_str(&json!({"type": "solution", "output": {"json": json}}).to_string());
                text.push('\n');
            }
            if let Some(status) = &status {
                text.push_str(&json!({"type": "status", "status": status}).to_string());
            }
            let report = parse(&text, false);
            prop_assert_eq!(report.solutions.len(), solutions.len());
            for (parsed, (values, objective)) in report.solutions.iter().zip(&solutions) {
                prop_assert_eq!(&parsed.values, values);
                prop_assert_eq!(parsed.objective.as_ref().and_then(Number::as_i64), *objective);
                prop_assert!(parsed.check.is_none());
            }
            prop_assert_eq!(report.status.as_ref().map(StreamStatus::as_str), status.as_deref());
        }

        /// The capture filter loses nothing the parser reads, with or
        /// without a checker, and never lengthens a line.
        #[test]
        fn compacting_keeps_the_report(
            lines in prop::collection::vec(prop_oneof![message_line(), full_solution_line()], 0..12),
            checker in any::<bool>(),
        ) {
            let compacted: Vec<String> = lines
                .iter()
                .map(|line| compact_solution(line).unwrap_or_else(|| line.clone()))
                .collect();
            for (before, after) in lines.iter().zip(&compacted) {
                prop_assert!(after.len() <= before.len(), "{before} -> {after}");
            }
            prop_assert_eq!(parse(&compacted.join("\n"), checker), parse(&lines.join("\n"), checker));
        }
    }

    /// A solution line as MiniZinc prints it for a model with an output
    /// item: `default` and `raw` alike, user sections, spaced `json`.
    fn full_solution_line() -> impl Strategy<Value = String> {
        (json_object(3), any::<String>(), proptest::option::of(any::<String>())).prop_map(
            |(values, text, section)| {
                let json = serde_json::to_string_pretty(&values).unwrap_or_default();
                let mut output = format!(
                    "{{\"default\": {text}, \"raw\": {text}, \"json\": {json}",
                    text = json!(text)
                );
                if let Some(section) = section {
                    output.push_str(&format!(", \"mine\": {}", json!(section)));
                }
                format!("{{\"type\": \"solution\", \"output\": {output}}}, \"sections\": [\"default\", \"raw\", \"json\"]}}")
                    .replace('\n', " ")
            },
        )
    }

    proptest! {
        #![proptest_config(crate::strategies::cases(16))]

        /// Nesting far past serde_json's limit neither overflows the stack
        /// nor hides the lines after it.
        #[test]
        fn deep_nesting_is_skipped(depth in 1usize..20_000) {
            let text = format!("{}\n{}\n", deeply_nested(depth), json!({"type": "status", "status": "UNKNOWN"}));
            let report = parse(&text, false);
            prop_assert_eq!(report.status, Some(StreamStatus::Unknown));
        }
    }
}
