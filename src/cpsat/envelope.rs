//! Reading the result envelope a CP-SAT script prints on stdout.
//!
//! The script's contract is to print, as its last stdout line, one JSON
//! object: `{"status": …, "objective": …, "solution": {…},
//! "best_objective_bound": …}`. It may print same-shaped intermediate
//! envelopes before it (a solution callback), and any other text between
//! them. [`last_envelope`] finds the last line that is a JSON object and
//! validates it; [`parse_line`] does the same for one line (for callers that
//! follow the stream as it arrives, or want to look further back);
//! [`validate`] checks an already-parsed object. One optional key beside
//! the contract's is read: `objective_unread`, the reason the `solvergate`
//! helper gives when it could not read the objective.
//!
//! Python's `json.dumps` writes non-finite floats as the bare tokens `NaN`,
//! `Infinity` and `-Infinity`, which are not JSON. Outside string literals,
//! in value position, those tokens are swapped for a private sentinel
//! string before serde_json parses the line, so a line that is otherwise
//! valid JSON still parses and validation can name the exact key path of
//! the non-finite number. The same words inside strings are plain text.
//!
//! What this module does not do:
//! - recover: when the last JSON object is not a valid envelope, the answer
//!   is that object's [`Rejection`], even if an earlier line held a valid
//!   envelope. Whether to fall back to an earlier (intermediate) envelope is
//!   the caller's decision; [`parse_line`] is there for it.
//! - tell a final envelope from an intermediate one: a cut-off last line is
//!   skipped, so the answer may be the last intermediate envelope.
//! - judge the solution: values are kept as the script printed them; only
//!   the envelope's shape and the finiteness of its numbers are checked.
//! - accept a key twice in one object, at any depth: such a line is a
//!   candidate whose [`Rejection`] names the key's path (serde_json alone
//!   would keep the last of the two).
//! - accept numbers serde_json cannot hold (e.g. `1e400`) or nesting deeper
//!   than serde_json's recursion limit (128): such a line does not parse,
//!   so it is skipped like any other non-JSON line.
//!
//! What a maintainer must not break: a sentinel must never be produced from
//! text the script wrote inside a string, and never survive into an
//! [`Envelope`]. The salt chosen in `Sentinels::for_line` guarantees the
//! first (no decoded string of the line equals a sentinel); validation
//! rejects or drops every sentinel it meets for the second. Every input, of
//! any shape or size, must give an answer without panicking — this parser
//! will be fuzzed.

use std::collections::HashSet;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

use super::strict_json::Refusal;

/// A status a script may report: the five words of the contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReportedStatus {
    /// A solution, proven optimal.
    Optimal,
    /// A solution, not proven optimal.
    Feasible,
    /// Proven infeasible.
    Infeasible,
    /// No solution and no proof.
    Unknown,
    /// The script says it failed (CP-SAT's `MODEL_INVALID` included).
    Error,
}

impl ReportedStatus {
    /// Every status, in the order rejections list them.
    pub const ALL: [ReportedStatus; 5] = [
        ReportedStatus::Optimal,
        ReportedStatus::Feasible,
        ReportedStatus::Infeasible,
        ReportedStatus::Unknown,
        ReportedStatus::Error,
    ];

    /// The status as the contract spells it (`optimal`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            ReportedStatus::Optimal => "optimal",
            ReportedStatus::Feasible => "feasible",
            ReportedStatus::Infeasible => "infeasible",
            ReportedStatus::Unknown => "unknown",
            ReportedStatus::Error => "error",
        }
    }

    /// A status word as the script printed it: the five words in any case,
    /// and CP-SAT's own `StatusName()` spellings (`OPTIMAL`, `FEASIBLE`,
    /// `INFEASIBLE`, `UNKNOWN`, and `MODEL_INVALID`, which is an `error`).
    /// `None` for any other word: the envelope is refused, never guessed.
    pub fn from_word(text: &str) -> Option<ReportedStatus> {
        let lower = text.trim().to_ascii_lowercase();
        if lower == "model_invalid" {
            return Some(ReportedStatus::Error);
        }
        ReportedStatus::ALL
            .into_iter()
            .find(|status| status.as_str() == lower)
    }
}

impl std::fmt::Display for ReportedStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A validated envelope.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Envelope {
    /// What the script says of its answer.
    pub status: ReportedStatus,
    /// The objective value; `None` when the script printed `null`.
    pub objective: Option<Number>,
    /// The solution object (possibly empty), values as printed.
    pub solution: Map<String, Value>,
    /// The best bound; `None` when absent, `null`, not a number or non-finite.
    pub best_objective_bound: Option<Number>,
    /// Why the objective could not be read, as the `solvergate` helper
    /// says in `objective_unread` (a non-empty string, cut to
    /// [`MAX_UNREAD_BYTES`]); `None` when absent or not a string.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub objective_unread: Option<String>,
}

/// The longest `objective_unread` reason kept.
pub const MAX_UNREAD_BYTES: usize = 1024;

/// Why the candidate line is not a valid envelope: the first problem found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct Rejection {
    /// `status`, `objective`, `solution`, or a key path inside the solution
    /// such as `solution["tasks"][3]["start"]`.
    pub field: String,
    /// What is wrong with it (`missing`, `must be an object (got ...)`,
    /// `non-finite number NaN`, ...).
    pub reason: String,
}

impl Rejection {
    fn new(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

/// The envelope on the last stdout line that is a JSON object.
///
/// Lines are scanned from the end; each is trimmed. A line is a candidate
/// when it starts with `{` and parses as a JSON object (bare `NaN`,
/// `Infinity`, `-Infinity` allowed in value position). Lines that are not
/// (log text, arrays, numbers, a cut-off last line) are skipped. Both `\n`
/// and `\r` end a line (a JSON line cannot contain a raw `\r`), so CRLF
/// output and `\r` progress redraws are handled.
///
/// `None` when no line is a JSON object; otherwise the validation of the
/// last one, which is a [`Rejection`] even if an earlier line was valid.
pub fn last_envelope(stdout: &str) -> Option<Result<Envelope, Rejection>> {
    stdout.split(['\n', '\r']).rev().find_map(parse_line)
}

/// The envelope on one line: `None` when the (trimmed) line is not a JSON
/// object, otherwise its validation.
pub fn parse_line(line: &str) -> Option<Result<Envelope, Rejection>> {
    let line = line.trim();
    if !line.starts_with('{') {
        return None;
    }
    let scan = scan(line)?;
    let (text, sentinels) = if scan.replacements.is_empty() {
        (std::borrow::Cow::Borrowed(line), None)
    } else {
        let sentinels = Sentinels::for_line(line, &scan.suspicious);
        (
            std::borrow::Cow::Owned(rewrite(line, &scan.replacements, &sentinels)),
            Some(sentinels),
        )
    };
    match super::strict_json::parse(&text) {
        Ok(Value::Object(object)) => Some(check(object, sentinels.as_ref())),
        Err(Refusal::Duplicate(field)) => Some(Err(Rejection::new(
            field,
            "the key appears more than once in the envelope; each key must appear once",
        ))),
        _ => None,
    }
}

/// Validates an already-parsed envelope object (plain JSON, so no
/// non-finite numbers). Same rules and order as [`last_envelope`].
pub fn validate(object: Map<String, Value>) -> Result<Envelope, Rejection> {
    check(object, None)
}

/// A non-finite number as Python prints it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NonFinite {
    NaN,
    Infinity,
    NegInfinity,
}

impl NonFinite {
    const ALL: [NonFinite; 3] = [NonFinite::NaN, NonFinite::Infinity, NonFinite::NegInfinity];

    fn token(self) -> &'static str {
        match self {
            NonFinite::NaN => "NaN",
            NonFinite::Infinity => "Infinity",
            NonFinite::NegInfinity => "-Infinity",
        }
    }

    fn reason(self) -> String {
        format!("non-finite number {}", self.token())
    }
}

/// Start of every sentinel. The NUL makes it impossible in a string unless
/// the script wrote the escape `\u0000`; the salt handles even that case.
const SENTINEL_PREFIX: &str = "\u{0}solvergate-non-finite:";

/// The three sentinel strings used for one line.
#[derive(Debug)]
struct Sentinels {
    /// Indexed like [`NonFinite::ALL`].
    values: [String; 3],
}

impl Sentinels {
    fn with_salt(salt: u64) -> Self {
        Self {
            values: NonFinite::ALL.map(|kind| format!("{SENTINEL_PREFIX}{salt}:{}", kind.token())),
        }
    }

    /// Sentinels no string literal of `line` decodes to. Only literals that
    /// contain `\u0000` can decode to something with a NUL in it; each one
    /// rules out at most one salt, so the search ends.
    fn for_line(line: &str, suspicious: &[(usize, usize)]) -> Self {
        let taken: HashSet<String> = suspicious
            .iter()
            .filter_map(|&(start, end)| line.get(start..end))
            .filter_map(|literal| serde_json::from_str::<String>(literal).ok())
            .filter(|decoded| decoded.starts_with(SENTINEL_PREFIX))
            .collect();
        let mut salt: u64 = 0;
        loop {
            let sentinels = Self::with_salt(salt);
            if sentinels.values.iter().all(|value| !taken.contains(value)) {
                return sentinels;
            }
            salt = salt.wrapping_add(1);
        }
    }

    fn for_kind(&self, kind: NonFinite) -> &str {
        let [nan, infinity, neg_infinity] = &self.values;
        match kind {
            NonFinite::NaN => nan,
            NonFinite::Infinity => infinity,
            NonFinite::NegInfinity => neg_infinity,
        }
    }

    fn kind_of(&self, text: &str) -> Option<NonFinite> {
        if !text.starts_with(SENTINEL_PREFIX) {
            return None;
        }
        NonFinite::ALL
            .into_iter()
            .find(|&kind| self.for_kind(kind) == text)
    }
}

/// Which non-finite number, if any, `value` stands for.
fn non_finite(value: &Value, sentinels: Option<&Sentinels>) -> Option<NonFinite> {
    match (value, sentinels) {
        (Value::String(text), Some(sentinels)) => sentinels.kind_of(text),
        _ => None,
    }
}

/// What the tokenizer found on a line.
#[derive(Debug, Default)]
struct Scan {
    /// Byte ranges of bare non-finite tokens, in order.
    replacements: Vec<(usize, usize, NonFinite)>,
    /// Byte ranges (quotes included) of string literals containing `\u0000`.
    suspicious: Vec<(usize, usize)>,
}

/// Tokenizes `line` just enough to find bare non-finite tokens outside
/// string literals. `None` when the line cannot be JSON: an unterminated
/// string, or a bare token where no value can stand (e.g. as a key).
fn scan(line: &str) -> Option<Scan> {
    let bytes = line.as_bytes();
    let mut found = Scan::default();
    // Open containers, `{` or `[`; and the last significant byte outside
    // strings (0 at the start).
    let mut open: Vec<u8> = Vec::new();
    let mut previous: u8 = 0;
    let mut index = 0;
    while let Some(&byte) = bytes.get(index) {
        match byte {
            b'"' => {
                let start = index;
                let mut cursor = index + 1;
                loop {
                    match bytes.get(cursor) {
                        None => return None,
                        Some(b'\\') => cursor += 2,
                        Some(b'"') => break,
                        Some(_) => cursor += 1,
                    }
                }
                let end = cursor + 1;
                if line
                    .get(start..end)
                    .is_some_and(|literal| literal.contains("\\u0000"))
                {
                    found.suspicious.push((start, end));
                }
                previous = b'"';
                index = end;
            }
            b'{' | b'[' => {
                open.push(byte);
                previous = byte;
                index += 1;
            }
            b'}' | b']' => {
                open.pop();
                previous = byte;
                index += 1;
            }
            b'N' | b'I' | b'-' => {
                let rest = line.get(index..).unwrap_or("");
                let kind = NonFinite::ALL
                    .into_iter()
                    .find(|kind| rest.starts_with(kind.token()));
                match kind {
                    Some(kind) => {
                        let in_value_position = previous == b':'
                            || previous == b'['
                            || (previous == b',' && open.last() == Some(&b'['));
                        if !in_value_position {
                            return None;
                        }
                        let end = index + kind.token().len();
                        found.replacements.push((index, end, kind));
                        // Anything may follow a value but a further token.
                        previous = b'0';
                        index = end;
                    }
                    None => {
                        previous = byte;
                        index += 1;
                    }
                }
            }
            b' ' | b'\t' | b'\n' | b'\r' => index += 1,
            _ => {
                previous = byte;
                index += 1;
            }
        }
    }
    Some(found)
}

/// `line` with each replacement swapped for its sentinel, as a JSON string
/// literal.
fn rewrite(
    line: &str,
    replacements: &[(usize, usize, NonFinite)],
    sentinels: &Sentinels,
) -> String {
    let mut text = String::with_capacity(line.len() + replacements.len() * 48);
    let mut copied = 0;
    for &(start, end, kind) in replacements {
        text.push_str(line.get(copied..start).unwrap_or(""));
        push_json_string(&mut text, sentinels.for_kind(kind));
        copied = end;
    }
    text.push_str(line.get(copied..).unwrap_or(""));
    text
}

/// Appends `value` as a JSON string literal (quotes and escapes included).
fn push_json_string(out: &mut String, value: &str) {
    out.push('"');
    for character in value.chars() {
        match character {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            control if u32::from(control) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(control));
            }
            other => out.push(other),
        }
    }
    out.push('"');
}

/// The validation rules, in order; the first problem found is the answer.
fn check(
    mut object: Map<String, Value>,
    sentinels: Option<&Sentinels>,
) -> Result<Envelope, Rejection> {
    let status = match object.get("status") {
        None => return Err(Rejection::new("status", "missing")),
        // A sentinel is never one of the five, so it is refused.
        Some(value) => match value.as_str().and_then(ReportedStatus::from_word) {
            Some(status) => status,
            None => {
                let allowed = ReportedStatus::ALL
                    .iter()
                    .map(|status| format!("\"{status}\""))
                    .collect::<Vec<_>>()
                    .join(", ");
                return Err(Rejection::new(
                    "status",
                    format!(
                        "must be one of {allowed} (got {})",
                        describe(value, sentinels)
                    ),
                ));
            }
        },
    };

    let objective = match object.get("objective") {
        None => return Err(Rejection::new("objective", "missing")),
        Some(Value::Null) => None,
        Some(Value::Number(number)) => Some(number.clone()),
        Some(other) => {
            let reason = match non_finite(other, sentinels) {
                Some(kind) => kind.reason(),
                None => format!(
                    "must be a number or null (got {})",
                    describe(other, sentinels)
                ),
            };
            return Err(Rejection::new("objective", reason));
        }
    };

    let solution = match object.remove("solution") {
        None => return Err(Rejection::new("solution", "missing")),
        Some(Value::Object(solution)) => solution,
        Some(other) => {
            return Err(Rejection::new(
                "solution",
                format!("must be an object (got {})", describe(&other, sentinels)),
            ));
        }
    };
    if let Some(sentinels) = sentinels {
        find_non_finite(&solution, sentinels)?;
    }

    let best_objective_bound = match object.get("best_objective_bound") {
        Some(Value::Number(number)) => Some(number.clone()),
        _ => None,
    };

    // A bare `NaN` there became a sentinel string: it is no reason.
    let objective_unread = match object.get("objective_unread") {
        Some(value @ Value::String(reason))
            if !reason.trim().is_empty() && non_finite(value, sentinels).is_none() =>
        {
            Some(shortened(reason.trim(), MAX_UNREAD_BYTES))
        }
        _ => None,
    };

    Ok(Envelope {
        status,
        objective,
        solution,
        best_objective_bound,
        objective_unread,
    })
}

/// `text` cut at a character boundary to at most `limit` bytes, marked.
fn shortened(text: &str, limit: usize) -> String {
    if text.len() <= limit {
        return text.to_owned();
    }
    let mut cut = limit;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}…", &text[..cut])
}

/// A short description of an unexpected value, for a rejection reason.
fn describe(value: &Value, sentinels: Option<&Sentinels>) -> String {
    if let Some(kind) = non_finite(value, sentinels) {
        return format!("non-finite number {}", kind.token());
    }
    match value {
        Value::Null => "null".to_string(),
        Value::Bool(flag) => flag.to_string(),
        Value::Number(number) => format!("the number {number}"),
        Value::String(text) => {
            const SHOWN: usize = 40;
            let mut shown = String::new();
            let mut chars = text.chars();
            for character in chars.by_ref().take(SHOWN) {
                shown.push(character);
            }
            let ellipsis = if chars.next().is_some() { "…" } else { "" };
            let mut literal = String::new();
            push_json_string(&mut literal, &shown);
            format!("the string {literal}{ellipsis}")
        }
        Value::Array(_) => "an array".to_string(),
        Value::Object(_) => "an object".to_string(),
    }
}

/// The first sentinel inside `solution`, depth first, keys in map order and
/// array indices ascending, as a rejection naming its key path. Iterative:
/// the depth is bounded by serde_json's parser, but the walk does not rely
/// on it.
fn find_non_finite(solution: &Map<String, Value>, sentinels: &Sentinels) -> Result<(), Rejection> {
    enum Children<'a> {
        Object(serde_json::map::Iter<'a>),
        Array(std::iter::Enumerate<std::slice::Iter<'a, Value>>),
    }

    let mut path = String::from("solution");
    // Each frame: the children still to visit, and the path length before
    // any child's segment.
    let mut stack: Vec<(Children<'_>, usize)> =
        vec![(Children::Object(solution.iter()), path.len())];
    while let Some((children, base)) = stack.last_mut() {
        let base = *base;
        let child = match children {
            Children::Object(entries) => entries.next().map(|(key, value)| {
                path.truncate(base);
                path.push('[');
                push_json_string(&mut path, key);
                path.push(']');
                value
            }),
            Children::Array(items) => items.next().map(|(index, value)| {
                path.truncate(base);
                let _ = write!(path, "[{index}]");
                value
            }),
        };
        let Some(value) = child else {
            stack.pop();
            continue;
        };
        if let Some(kind) = non_finite(value, Some(sentinels)) {
            return Err(Rejection::new(path, kind.reason()));
        }
        match value {
            Value::Object(map) => stack.push((Children::Object(map.iter()), path.len())),
            Value::Array(items) => {
                stack.push((Children::Array(items.iter().enumerate()), path.len()))
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ok(stdout: &str) -> Envelope {
        match last_envelope(stdout) {
            Some(Ok(envelope)) => envelope,
            other => panic!("expected an envelope from {stdout:?}, got {other:?}"),
        }
    }

    fn rejected(stdout: &str) -> Rejection {
        match last_envelope(stdout) {
            Some(Err(rejection)) => rejection,
            other => panic!("expected a rejection from {stdout:?}, got {other:?}"),
        }
    }

    fn solution(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            other => panic!("not an object: {other}"),
        }
    }

    const VALID: &str = r#"{"status": "optimal", "objective": 42.0, "solution": {"x": 3, "y": 7}, "best_objective_bound": 42.0}"#;

    #[test]
    fn a_duplicate_key_is_a_rejection_naming_it_not_a_skipped_line() {
        let earlier = format!("{VALID}\n");
        let cases = [
            (
                r#"{"status": "infeasible", "status": "optimal", "objective": 1, "solution": {}}"#,
                "status",
            ),
            (
                r#"{"status": "optimal", "objective": 1, "solution": {"x": 1, "x": 2}}"#,
                r#"solution["x"]"#,
            ),
            (
                r#"{"status": "optimal", "objective": NaN, "objective": 2, "solution": {}}"#,
                "objective",
            ),
            (
                r#"{"status": "optimal", "objective": 1, "solution": {"t": [{"s": 1, "s": 1}]}}"#,
                r#"solution["t"][0]["s"]"#,
            ),
        ];
        for (line, field) in cases {
            let rejection = rejected(&format!("{earlier}{line}\n"));
            assert_eq!(rejection.field, field, "{line}");
            assert!(rejection.reason.contains("more than once"), "{rejection}");
        }
    }

    #[test]
    fn happy_path() {
        let envelope = ok(VALID);
        assert_eq!(envelope.status, ReportedStatus::Optimal);
        assert_eq!(envelope.objective, Number::from_f64(42.0));
        assert_eq!(envelope.solution, solution(json!({"x": 3, "y": 7})));
        assert_eq!(envelope.best_objective_bound, Number::from_f64(42.0));
    }

    #[test]
    fn the_solvers_own_status_names_are_accepted() {
        for (given, canonical) in [
            ("OPTIMAL", ReportedStatus::Optimal),
            ("FEASIBLE", ReportedStatus::Feasible),
            ("INFEASIBLE", ReportedStatus::Infeasible),
            ("UNKNOWN", ReportedStatus::Unknown),
            ("MODEL_INVALID", ReportedStatus::Error),
            ("Optimal", ReportedStatus::Optimal),
        ] {
            let line = format!(r#"{{"status": "{given}", "objective": null, "solution": {{}}}}"#);
            assert_eq!(ok(&line).status, canonical, "{given}");
        }
        for word in ["solved", "timeout", "model invalid", ""] {
            assert_eq!(ReportedStatus::from_word(word), None, "{word:?}");
        }
    }

    #[test]
    fn every_status_is_accepted() {
        for status in ReportedStatus::ALL {
            let line = format!(r#"{{"status": "{status}", "objective": null, "solution": {{}}}}"#);
            assert_eq!(ok(&line).status, status);
        }
    }

    #[test]
    fn reported_statuses_round_trip_through_serde_as_the_contracts_words() {
        let words = ["optimal", "feasible", "infeasible", "unknown", "error"];
        for (status, word) in ReportedStatus::ALL.into_iter().zip(words) {
            assert_eq!(status.as_str(), word);
            assert_eq!(serde_json::to_value(status).unwrap(), json!(word));
            let back: ReportedStatus = serde_json::from_value(json!(word)).unwrap();
            assert_eq!(back, status);
        }
        assert!(serde_json::from_value::<ReportedStatus>(json!("model_invalid")).is_err());
    }

    #[test]
    fn intermediate_envelopes_then_final() {
        let stdout = concat!(
            "{\"status\": \"feasible\", \"objective\": 10, \"solution\": {\"x\": 1}}\n",
            "{\"status\": \"feasible\", \"objective\": 20, \"solution\": {\"x\": 2}}\n",
            "{\"status\": \"optimal\", \"objective\": 30, \"solution\": {\"x\": 3}}\n",
        );
        let envelope = ok(stdout);
        assert_eq!(envelope.status, ReportedStatus::Optimal);
        assert_eq!(envelope.objective, Some(Number::from(30)));
        assert_eq!(envelope.solution, solution(json!({"x": 3})));
    }

    #[test]
    fn trailing_partial_line_falls_back_to_previous_object() {
        let stdout = concat!(
            "{\"status\": \"feasible\", \"objective\": 20, \"solution\": {\"x\": 2}}\n",
            "{\"status\": \"fea",
        );
        let envelope = ok(stdout);
        assert_eq!(envelope.status, ReportedStatus::Feasible);
        assert_eq!(envelope.objective, Some(Number::from(20)));
    }

    #[test]
    fn interleaved_log_lines_and_other_json_are_skipped() {
        let stdout = concat!(
            "Starting CP-SAT solver v9.10\n",
            "{\"status\": \"feasible\", \"objective\": 5, \"solution\": {\"x\": 1}}\n",
            "#1 0.01s best:5 next:[6,10]\n",
            "{\"status\": \"optimal\", \"objective\": 6, \"solution\": {\"x\": 2}}\n",
            "[1, 2, 3]\n",
            "42\n",
            "\"a string\"\n",
            "CpSolverResponse summary:\n",
            "{not json at all}\n",
            "\n",
        );
        let envelope = ok(stdout);
        assert_eq!(envelope.objective, Some(Number::from(6)));
    }

    #[test]
    fn no_envelope() {
        for stdout in [
            "",
            "\n\n\n",
            "   ",
            "hello\nworld\n",
            "[{\"status\": \"optimal\"}]",
            "42",
            "{\"status\": \"optimal\"",
            "{",
            "}",
            "{{}}",
        ] {
            assert_eq!(last_envelope(stdout), None, "stdout {stdout:?}");
        }
    }

    #[test]
    fn last_object_is_judged_even_if_an_earlier_one_was_valid() {
        let stdout = concat!(
            "{\"status\": \"feasible\", \"objective\": 20, \"solution\": {\"x\": 2}}\n",
            "{\"status\": \"optimal\", \"objective\": 30}\n",
        );
        assert_eq!(rejected(stdout), Rejection::new("solution", "missing"));
    }

    #[test]
    fn an_unrelated_json_object_last_is_still_the_candidate() {
        let stdout = concat!(
            "{\"status\": \"optimal\", \"objective\": 30, \"solution\": {}}\n",
            "{\"event\": \"done\"}\n",
        );
        assert_eq!(rejected(stdout), Rejection::new("status", "missing"));
    }

    #[test]
    fn rejections_in_order() {
        // (line, field, a piece of the reason)
        let cases: &[(&str, &str, &str)] = &[
            (r#"{}"#, "status", "missing"),
            (r#"{"objective": 1, "solution": {}}"#, "status", "missing"),
            (
                r#"{"status": "SOLVED", "objective": 1, "solution": {}}"#,
                "status",
                "\"optimal\", \"feasible\", \"infeasible\", \"unknown\", \"error\"",
            ),
            (
                r#"{"status": "SOLVED", "objective": 1, "solution": {}}"#,
                "status",
                "got the string \"SOLVED\"",
            ),
            (
                r#"{"status": 1, "objective": 1, "solution": {}}"#,
                "status",
                "got the number 1",
            ),
            (
                r#"{"status": null, "objective": 1, "solution": {}}"#,
                "status",
                "got null",
            ),
            (
                r#"{"status": NaN, "objective": 1, "solution": {}}"#,
                "status",
                "got non-finite number NaN",
            ),
            (
                r#"{"status": "optimal", "solution": {}}"#,
                "objective",
                "missing",
            ),
            (
                r#"{"status": "optimal", "objective": "12", "solution": {}}"#,
                "objective",
                "got the string \"12\"",
            ),
            (
                r#"{"status": "optimal", "objective": true, "solution": {}}"#,
                "objective",
                "got true",
            ),
            (
                r#"{"status": "optimal", "objective": [1], "solution": {}}"#,
                "objective",
                "got an array",
            ),
            (
                r#"{"status": "optimal", "objective": {"v": 1}, "solution": {}}"#,
                "objective",
                "got an object",
            ),
            (
                r#"{"status": "optimal", "objective": NaN, "solution": {}}"#,
                "objective",
                "non-finite number NaN",
            ),
            (
                r#"{"status": "optimal", "objective": Infinity, "solution": {}}"#,
                "objective",
                "non-finite number Infinity",
            ),
            (
                r#"{"status": "optimal", "objective": -Infinity, "solution": {}}"#,
                "objective",
                "non-finite number -Infinity",
            ),
            (
                r#"{"status": "optimal", "objective": 1}"#,
                "solution",
                "missing",
            ),
            (
                r#"{"status": "optimal", "objective": 1, "solution": []}"#,
                "solution",
                "must be an object (got an array)",
            ),
            (
                r#"{"status": "optimal", "objective": 1, "solution": null}"#,
                "solution",
                "got null",
            ),
            (
                r#"{"status": "optimal", "objective": 1, "solution": "x=1"}"#,
                "solution",
                "got the string",
            ),
            (
                r#"{"status": "optimal", "objective": 1, "solution": NaN}"#,
                "solution",
                "got non-finite number NaN",
            ),
            // Status is checked before objective, objective before solution.
            (
                r#"{"status": "done", "objective": "x", "solution": []}"#,
                "status",
                "must be one of",
            ),
            (
                r#"{"status": "optimal", "objective": "x", "solution": []}"#,
                "objective",
                "must be a number or null",
            ),
        ];
        for &(line, field, reason) in cases {
            let rejection = rejected(line);
            assert_eq!(rejection.field, field, "line {line}");
            assert!(
                rejection.reason.contains(reason),
                "line {line}: reason {:?} lacks {reason:?}",
                rejection.reason
            );
        }
    }

    #[test]
    fn long_status_string_is_shortened_in_the_reason() {
        let status = "x".repeat(10_000);
        let line = format!(r#"{{"status": "{status}", "objective": 1, "solution": {{}}}}"#);
        let rejection = rejected(&line);
        assert!(rejection.reason.len() < 200, "{}", rejection.reason);
        assert!(rejection.reason.ends_with("…)"), "{}", rejection.reason);
    }

    #[test]
    fn objective_unread_is_read_only_as_a_reason() {
        let line = |value: &str| {
            format!(
                r#"{{"status": "optimal", "objective": null, "solution": {{}}, "objective_unread": {value}}}"#
            )
        };
        assert_eq!(
            ok(&line(r#"" its solve was not seen ""#)).objective_unread,
            Some("its solve was not seen".to_owned())
        );
        for value in ["null", "3", r#""  ""#, "NaN", "[\"x\"]"] {
            assert_eq!(ok(&line(value)).objective_unread, None, "{value}");
        }
        let long = ok(&line(&format!("\"{}\"", "é".repeat(MAX_UNREAD_BYTES))))
            .objective_unread
            .unwrap();
        assert!(long.len() <= MAX_UNREAD_BYTES + "…".len(), "{}", long.len());
        assert!(long.ends_with('…'));
        assert_eq!(ok(VALID).objective_unread, None);
    }

    #[test]
    fn objective_null_is_fine() {
        let envelope =
            ok(r#"{"status": "feasible", "objective": null, "solution": {"x": [1, 2]}}"#);
        assert_eq!(envelope.objective, None);
    }

    #[test]
    fn objective_integer_and_negative_and_exponent() {
        for (text, expected) in [
            ("7", json!(7)),
            ("-7", json!(-7)),
            ("1.5e3", json!(1500.0)),
            ("18446744073709551615", json!(18446744073709551615u64)),
        ] {
            let line = format!(r#"{{"status": "optimal", "objective": {text}, "solution": {{}}}}"#);
            assert_eq!(
                ok(&line).objective.map(Value::Number),
                Some(expected),
                "objective {text}"
            );
        }
    }

    #[test]
    fn empty_solution_is_fine() {
        assert!(
            ok(r#"{"status": "infeasible", "objective": null, "solution": {}}"#)
                .solution
                .is_empty()
        );
    }

    #[test]
    fn extra_top_level_keys_are_ignored_even_non_finite() {
        let envelope = ok(
            r#"{"status": "optimal", "objective": 1, "solution": {}, "wall_time": NaN, "extra": {"a": [Infinity]}}"#,
        );
        assert_eq!(envelope.status, ReportedStatus::Optimal);
    }

    #[test]
    fn best_objective_bound_variants() {
        let cases: &[(&str, Option<Value>)] = &[
            ("", None),
            (r#", "best_objective_bound": null"#, None),
            (r#", "best_objective_bound": NaN"#, None),
            (r#", "best_objective_bound": Infinity"#, None),
            (r#", "best_objective_bound": -Infinity"#, None),
            (r#", "best_objective_bound": "12""#, None),
            (r#", "best_objective_bound": true"#, None),
            (r#", "best_objective_bound": [1]"#, None),
            (r#", "best_objective_bound": 12"#, Some(json!(12))),
            (r#", "best_objective_bound": 12.5"#, Some(json!(12.5))),
        ];
        for (extra, expected) in cases {
            let line =
                format!(r#"{{"status": "optimal", "objective": 1, "solution": {{}}{extra}}}"#);
            assert_eq!(
                ok(&line).best_objective_bound.map(Value::Number),
                *expected,
                "line {line}"
            );
        }
    }

    #[test]
    fn non_finite_deep_in_solution_names_the_key_path() {
        let cases: &[(&str, &str, &str)] = &[
            (
                r#"{"tasks": [{"start": 0}, {"start": 1}, {"start": 2}, {"start": NaN, "end": 4}]}"#,
                r#"solution["tasks"][3]["start"]"#,
                "non-finite number NaN",
            ),
            (
                r#"{"x": Infinity}"#,
                r#"solution["x"]"#,
                "non-finite number Infinity",
            ),
            (
                r#"{"x": -Infinity}"#,
                r#"solution["x"]"#,
                "non-finite number -Infinity",
            ),
            (
                r#"{"m": [[1, 2], [3, -Infinity]]}"#,
                r#"solution["m"][1][1]"#,
                "non-finite number -Infinity",
            ),
            (
                r#"{"a\"b": NaN}"#,
                r#"solution["a\"b"]"#,
                "non-finite number NaN",
            ),
            (
                r#"{"a\\b": NaN}"#,
                r#"solution["a\\b"]"#,
                "non-finite number NaN",
            ),
            (
                r#"{"line\nbreak": NaN}"#,
                r#"solution["line\nbreak"]"#,
                "non-finite number NaN",
            ),
            (
                r#"{"ünï": {"k": [NaN]}}"#,
                r#"solution["ünï"]["k"][0]"#,
                "non-finite number NaN",
            ),
            // First in key order wins, whatever the text order.
            (
                r#"{"b": NaN, "a": Infinity}"#,
                r#"solution["a"]"#,
                "non-finite number Infinity",
            ),
            // Depth first: a["z"] comes before b.
            (
                r#"{"b": NaN, "a": {"z": -Infinity}}"#,
                r#"solution["a"]["z"]"#,
                "non-finite number -Infinity",
            ),
            // Spacing and containers around the tokens.
            (
                r#"{"v":[NaN,Infinity,-Infinity]}"#,
                r#"solution["v"][0]"#,
                "non-finite number NaN",
            ),
            (
                r#"{"v" : [ 1 , Infinity ] }"#,
                r#"solution["v"][1]"#,
                "non-finite number Infinity",
            ),
        ];
        for &(solution_text, field, reason) in cases {
            let line =
                format!(r#"{{"status": "optimal", "objective": 1, "solution": {solution_text}}}"#);
            assert_eq!(
                rejected(&line),
                Rejection::new(field, reason),
                "line {line}"
            );
        }
    }

    #[test]
    fn non_finite_words_inside_strings_are_plain_text() {
        let line = r#"{"status": "optimal", "objective": 1, "solution": {"a": "NaN", "b": "Infinity", "c": "-Infinity", "NaN": 1, "d": ["x NaN y"]}}"#;
        let envelope = ok(line);
        assert_eq!(
            envelope.solution,
            solution(
                json!({"a": "NaN", "b": "Infinity", "c": "-Infinity", "NaN": 1, "d": ["x NaN y"]})
            )
        );
    }

    #[test]
    fn escaped_quotes_and_backslashes_before_a_token() {
        // The string ends at the unescaped quote; the NaN after it is bare.
        let cases: &[(&str, &str)] = &[
            (r#"{"s": "say \"hi\"", "v": NaN}"#, r#"solution["v"]"#),
            (
                r#"{"s": "ends in backslash \\", "v": NaN}"#,
                r#"solution["v"]"#,
            ),
            (r#"{"s": "\\\"NaN\\\"", "v": Infinity}"#, r#"solution["v"]"#),
            (
                r#"{"s": "\\", "t": "\"", "v": [-Infinity]}"#,
                r#"solution["v"][0]"#,
            ),
        ];
        for &(solution_text, field) in cases {
            let line =
                format!(r#"{{"status": "optimal", "objective": 1, "solution": {solution_text}}}"#);
            assert_eq!(rejected(&line).field, field, "line {line}");
        }
        // And a NaN inside a string that contains escaped quotes stays text.
        let envelope =
            ok(r#"{"status": "optimal", "objective": 1, "solution": {"s": "\" NaN \""}}"#);
        assert_eq!(envelope.solution, solution(json!({"s": "\" NaN \""})));
    }

    #[test]
    fn bare_tokens_where_no_value_can_stand_make_the_line_not_json() {
        for line in [
            r#"{NaN: 1, "status": "optimal", "objective": 1, "solution": {}}"#,
            r#"{"status": "optimal", "objective": 1, "solution": {Infinity: 1}}"#,
            r#"{"status": "optimal", "objective": 1, "solution": {"a": 1, NaN: 2}}"#,
            r#"{"status": "optimal", "objective": 1, "solution": {"a": NaN NaN}}"#,
            r#"{"status": "optimal", "objective": 1, "solution": {"a": NaNx}}"#,
            r#"{"status": "optimal", "objective": 1, "solution": {"a": 1NaN}}"#,
            r#"{"status": "optimal", "objective": 1, "solution": {"a": +Infinity}}"#,
            r#"{"status": "optimal", "objective": 1, "solution": {"a": nan}}"#,
            r#"{"status": "optimal", "objective": 1, "solution": {"a": inf}}"#,
            r#"{"status": "optimal", "objective": 1, "solution": {"a": 1e400}}"#,
        ] {
            assert_eq!(parse_line(line), None, "line {line}");
        }
    }

    #[test]
    fn a_string_that_looks_like_a_sentinel_is_just_a_string() {
        // The script cannot fake a sentinel, even spelling one out with \u0000.
        for salt in 0..3 {
            let fake = format!(r#"\u0000solvergate-non-finite:{salt}:NaN"#);
            let line = format!(
                r#"{{"status": "optimal", "objective": 1, "solution": {{"fake": "{fake}", "real": Infinity}}}}"#
            );
            assert_eq!(
                rejected(&line),
                Rejection::new(r#"solution["real"]"#, "non-finite number Infinity")
            );
        }
        // Many fakes covering the first salts at once.
        let fakes: Vec<String> = (0..5)
            .flat_map(|salt| {
                ["NaN", "Infinity", "-Infinity"]
                    .map(|token| format!(r#""\u0000solvergate-non-finite:{salt}:{token}""#))
            })
            .collect();
        let line = format!(
            r#"{{"status": "optimal", "objective": 1, "solution": {{"fakes": [{}], "z": NaN}}}}"#,
            fakes.join(", ")
        );
        assert_eq!(
            rejected(&line),
            Rejection::new(r#"solution["z"]"#, "non-finite number NaN")
        );
        // Without any real token the fake survives as the string it is.
        let line = r#"{"status": "optimal", "objective": 1, "solution": {"fake": "\u0000solvergate-non-finite:0:NaN"}}"#;
        assert_eq!(
            ok(line).solution,
            solution(json!({"fake": "\u{0}solvergate-non-finite:0:NaN"}))
        );
        // Not as the objective either.
        let line = r#"{"status": "optimal", "objective": "\u0000solvergate-non-finite:0:NaN", "solution": {}, "x": NaN}"#;
        let rejection = rejected(line);
        assert_eq!(rejection.field, "objective");
        assert!(
            rejection.reason.contains("must be a number or null"),
            "{rejection}"
        );
    }

    #[test]
    fn crlf_and_carriage_return_line_endings() {
        let stdout = "log line\r\n{\"status\": \"feasible\", \"objective\": 1, \"solution\": {\"x\": 1}}\r\n{\"status\": \"optimal\", \"objective\": 2, \"solution\": {\"x\": 2}}\r\n";
        assert_eq!(ok(stdout).objective, Some(Number::from(2)));
        let redraw = "progress 10%\rprogress 100%\r{\"status\": \"optimal\", \"objective\": 3, \"solution\": {}}";
        assert_eq!(ok(redraw).objective, Some(Number::from(3)));
    }

    #[test]
    fn surrounding_whitespace_is_trimmed() {
        let stdout = format!("  \t{VALID}  \n   \n");
        assert_eq!(ok(&stdout).status, ReportedStatus::Optimal);
    }

    #[test]
    fn huge_line() {
        let count = 200_000;
        let values: Vec<String> = (0..count).map(|i| i.to_string()).collect();
        let line = format!(
            r#"{{"status": "optimal", "objective": 1, "solution": {{"xs": [{}], "s": "{}"}}}}"#,
            values.join(","),
            "NaN ".repeat(100_000)
        );
        let envelope = ok(&format!("log\n{line}\n"));
        assert_eq!(
            envelope.solution["xs"].as_array().map(Vec::len),
            Some(count)
        );

        let mut with_nan = values.clone();
        with_nan[count - 1] = "NaN".to_string();
        let line = format!(
            r#"{{"status": "optimal", "objective": 1, "solution": {{"xs": [{}]}}}}"#,
            with_nan.join(",")
        );
        assert_eq!(
            rejected(&line),
            Rejection::new(
                format!(r#"solution["xs"][{}]"#, count - 1),
                "non-finite number NaN"
            )
        );
    }

    #[test]
    fn deep_nesting_is_skipped_not_a_panic() {
        let depth = 100_000;
        let line = format!(
            r#"{{"status": "optimal", "objective": 1, "solution": {{"a": {}1{}}}}}"#,
            "[".repeat(depth),
            "]".repeat(depth)
        );
        assert_eq!(parse_line(&line), None);
        let stdout = format!("{VALID}\n{line}");
        // The deep line is not JSON to us, so the valid one before it counts.
        assert_eq!(ok(&stdout).status, ReportedStatus::Optimal);
    }

    #[test]
    fn moderately_deep_non_finite_path() {
        let depth = 100;
        let line = format!(
            r#"{{"status": "optimal", "objective": 1, "solution": {{"a": {}NaN{}}}}}"#,
            "[".repeat(depth),
            "]".repeat(depth)
        );
        let expected = format!(r#"solution["a"]{}"#, "[0]".repeat(depth));
        assert_eq!(
            rejected(&line),
            Rejection::new(expected, "non-finite number NaN")
        );
    }

    #[test]
    fn validate_plain_object() {
        let object =
            solution(json!({"status": "unknown", "objective": null, "solution": {"x": 1}}));
        let envelope = validate(object);
        assert_eq!(envelope.map(|e| e.status), Ok(ReportedStatus::Unknown));
        let object = solution(json!({"status": "unknown", "objective": null}));
        assert_eq!(validate(object), Err(Rejection::new("solution", "missing")));
    }

    #[test]
    fn parse_line_answers_for_one_line() {
        assert_eq!(parse_line("hello"), None);
        assert_eq!(
            parse_line(&format!("  {VALID}\r")).map(|r| r.is_ok()),
            Some(true)
        );
    }

    #[test]
    fn rejection_display() {
        let rejection = Rejection::new(r#"solution["x"]"#, "non-finite number NaN");
        assert_eq!(
            rejection.to_string(),
            r#"solution["x"]: non-finite number NaN"#
        );
    }

    #[test]
    fn envelope_serializes() {
        let value = serde_json::to_value(ok(VALID));
        assert_eq!(
            value.ok(),
            Some(
                json!({"status": "optimal", "objective": 42.0, "solution": {"x": 3, "y": 7}, "best_objective_bound": 42.0})
            )
        );
    }

    /// A tiny deterministic generator (xorshift), so the no-panic sweep is
    /// reproducible without a dependency.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, bound: usize) -> usize {
            (self.next() % bound as u64) as usize
        }
    }

    #[test]
    fn never_panics_on_truncations_of_a_valid_envelope() {
        let full = r#"{"status": "optimal", "objective": -Infinity, "solution": {"tasks": [{"start": NaN, "name": "a\"b\\c NaN"}, [1, 2.5e3, Infinity]], "ü": "\u0000x", "e": "\ud83d\ude00"}, "best_objective_bound": NaN}"#;
        for end in 0..=full.len() {
            let Some(prefix) = full.get(..end) else {
                continue;
            };
            let _ = last_envelope(prefix);
            let _ = last_envelope(&format!("{VALID}\n{prefix}"));
        }
        // Byte-level truncations, made valid UTF-8 lossily.
        for end in 0..=full.len() {
            let lossy = String::from_utf8_lossy(&full.as_bytes()[..end]).into_owned();
            let _ = last_envelope(&lossy);
            let suffix = String::from_utf8_lossy(&full.as_bytes()[end..]).into_owned();
            let _ = last_envelope(&suffix);
        }
    }

    #[test]
    fn never_panics_on_random_inputs() {
        const ALPHABET: &[&str] = &[
            "{",
            "}",
            "[",
            "]",
            ":",
            ",",
            "\"",
            "\\",
            "\\\"",
            "\\\\",
            "\\u0000",
            "\\u",
            "NaN",
            "Infinity",
            "-Infinity",
            "-",
            "N",
            "I",
            "Na",
            "Infin",
            "1",
            "0",
            "-1",
            "2.5",
            "e",
            "1e400",
            "true",
            "null",
            " ",
            "\n",
            "\r",
            "\t",
            "\"status\"",
            "\"optimal\"",
            "\"objective\"",
            "\"solution\"",
            "\"best_objective_bound\"",
            "ü",
            "😀",
            "\u{0}",
            "\u{1f}",
            "\u{0}solvergate-non-finite:0:NaN",
        ];
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for _ in 0..20_000 {
            let mut text = String::from("{");
            for _ in 0..rng.below(40) {
                text.push_str(ALPHABET[rng.below(ALPHABET.len())]);
            }
            let _ = last_envelope(&text);
            let _ = parse_line(&text);
        }
        // Raw random bytes, lossily decoded.
        for _ in 0..5_000 {
            let bytes: Vec<u8> = (0..rng.below(64)).map(|_| rng.next() as u8).collect();
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let _ = last_envelope(&text);
            let _ = last_envelope(&format!("{{{text}"));
        }
        // Mutations of a valid envelope: one byte replaced at every offset.
        let base = format!("{VALID}\n{VALID}");
        for offset in 0..base.len() {
            for replacement in ["\"", "\\", "{", "NaN", "", "\n"] {
                let mut text = base.clone();
                if text.is_char_boundary(offset) && text.is_char_boundary(offset + 1) {
                    text.replace_range(offset..offset + 1, replacement);
                    let _ = last_envelope(&text);
                }
            }
        }
    }

    #[test]
    fn random_valid_envelopes_round_trip() {
        // Generated envelopes with non-finite numbers at known places: the
        // rejection names the first one in key order; without any, accepted.
        let mut rng = Rng(12345);
        for _ in 0..500 {
            let keys = ["a", "b", "c", "d"];
            let mut first_bad: Option<(String, &str)> = None;
            let mut parts = Vec::new();
            for key in keys {
                let choice = rng.below(5);
                let (text, bad) = match choice {
                    0 => ("NaN", Some("NaN")),
                    1 => ("-Infinity", Some("-Infinity")),
                    2 => ("\"NaN\"", None),
                    3 => ("[1, 2]", None),
                    _ => ("{\"k\": 1.5}", None),
                };
                if let (Some(token), None) = (bad, &first_bad) {
                    first_bad = Some((format!("solution[\"{key}\"]"), token));
                }
                parts.push(format!("\"{key}\": {text}"));
            }
            let line = format!(
                r#"{{"status": "feasible", "objective": 3, "solution": {{{}}}}}"#,
                parts.join(", ")
            );
            match first_bad {
                Some((field, token)) => assert_eq!(
                    rejected(&line),
                    Rejection::new(field, format!("non-finite number {token}"))
                ),
                None => assert_eq!(ok(&line).status, ReportedStatus::Feasible),
            }
        }
    }
}

#[cfg(test)]
mod properties {
    use super::*;
    use crate::strategies::{deeply_nested, json_object, json_value, not_an_object_line};
    use proptest::prelude::*;
    use serde_json::json;

    /// Stands in for a non-finite token until the line is written.
    const PLACEHOLDER: &str = "\u{1}non-finite\u{1}";

    /// A status as a script may spell it, and its canonical form.
    fn status() -> impl Strategy<Value = (String, ReportedStatus)> {
        let spelled = prop_oneof![
            Just(("optimal", ReportedStatus::Optimal)),
            Just(("feasible", ReportedStatus::Feasible)),
            Just(("infeasible", ReportedStatus::Infeasible)),
            Just(("unknown", ReportedStatus::Unknown)),
            Just(("error", ReportedStatus::Error)),
            Just(("MODEL_INVALID", ReportedStatus::Error)),
        ];
        (spelled, any::<bool>(), any::<bool>()).prop_map(|((text, canonical), upper, padded)| {
            let text = if upper {
                text.to_ascii_uppercase()
            } else {
                text.to_owned()
            };
            let text = if padded { format!(" {text} ") } else { text };
            (text, canonical)
        })
    }

    fn non_finite() -> impl Strategy<Value = NonFinite> {
        prop::sample::select(NonFinite::ALL.to_vec())
    }

    /// Every leaf's key path, `solution[...]` style, in no particular order.
    fn leaves(value: &Value, path: String, out: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                for (key, child) in map {
                    let mut next = path.clone();
                    next.push('[');
                    push_json_string(&mut next, key);
                    next.push(']');
                    leaves(child, next, out);
                }
            }
            Value::Array(items) => {
                for (index, child) in items.iter().enumerate() {
                    leaves(child, format!("{path}[{index}]"), out);
                }
            }
            _ => out.push(path),
        }
    }

    /// The leaf at `path` (as `leaves` names it) replaced by the placeholder.
    fn replace_leaf(value: &mut Value, path: &str, here: &str) -> bool {
        if path == here {
            *value = json!(PLACEHOLDER);
            return true;
        }
        match value {
            Value::Object(map) => map.iter_mut().any(|(key, child)| {
                let mut next = here.to_owned();
                next.push('[');
                push_json_string(&mut next, key);
                next.push(']');
                replace_leaf(child, path, &next)
            }),
            Value::Array(items) => items
                .iter_mut()
                .enumerate()
                .any(|(index, child)| replace_leaf(child, path, &format!("{here}[{index}]"))),
            _ => false,
        }
    }

    /// The line as Python's `json.dumps` would print it: the placeholder
    /// becomes the bare token.
    fn python_line(value: &Value, token: NonFinite) -> String {
        let mut placeholder = String::new();
        push_json_string(&mut placeholder, PLACEHOLDER);
        value.to_string().replace(&placeholder, token.token())
    }

    proptest! {
        #![proptest_config(crate::strategies::cases(256))]

        #[test]
        fn any_text_gives_an_answer(text in any::<String>()) {
            // Never a panic; a known status is the type's to guarantee.
            let _ = last_envelope(&text);
        }

        /// Lines built from JSON pieces and the bare non-finite tokens in
        /// every position: an accepted envelope has the one status word the
        /// soup holds, never a sentinel.
        #[test]
        fn token_soup_gives_an_answer(parts in prop::collection::vec(prop_oneof![
            Just("{".to_owned()), Just("}".to_owned()), Just("[".to_owned()), Just("]".to_owned()),
            Just(",".to_owned()), Just(":".to_owned()), Just("NaN".to_owned()),
            Just("Infinity".to_owned()), Just("-Infinity".to_owned()),
            Just("\"status\"".to_owned()), Just("\"optimal\"".to_owned()),
            Just("\"objective\"".to_owned()), Just("\"solution\"".to_owned()),
            Just("\"\\u0000solvergate-non-finite:0:NaN\"".to_owned()),
            Just("\"\\\"".to_owned()), Just("1".to_owned()), Just("null".to_owned()),
            Just(" ".to_owned()),
        ], 0..40)) {
            let line = parts.concat();
            if let Some(Ok(envelope)) = parse_line(&line) {
                // "optimal" is the soup's only status word.
                prop_assert_eq!(envelope.status, ReportedStatus::Optimal);
            }
        }

        /// What a script prints is what the envelope holds, strings that
        /// look like sentinels or non-finite words included.
        #[test]
        fn envelopes_round_trip(
            (spelled, canonical) in status(),
            objective in proptest::option::of(any::<i64>()),
            solution in json_object(3),
            bound in proptest::option::of(any::<i64>()),
        ) {
            let mut object = json!({"status": spelled, "objective": objective, "solution": solution});
            if let Some(bound) = bound {
                object["best_objective_bound"] = json!(bound);
            }
            let expected = Envelope {
                status: canonical,
                objective: objective.map(Number::from),
                solution,
                best_objective_bound: bound.map(Number::from),
                objective_unread: None,
            };
            prop_assert_eq!(parse_line(&object.to_string()), Some(Ok(expected.clone())));
            prop_assert_eq!(validate(object.as_object().cloned().unwrap_or_default()), Ok(expected));
        }

        /// A bare NaN or ±Infinity anywhere in the solution is refused with
        /// the key path of that value.
        #[test]
        fn a_non_finite_value_is_named_by_its_path(
            solution in json_object(3).prop_filter("has a leaf", |s| !s.is_empty()),
            pick in any::<prop::sample::Index>(),
            token in non_finite(),
        ) {
            let mut solution = Value::Object(solution);
            let mut paths = Vec::new();
            leaves(&solution, "solution".to_owned(), &mut paths);
            prop_assume!(!paths.is_empty());
            let path = paths[pick.index(paths.len())].clone();
            prop_assert!(replace_leaf(&mut solution, &path, "solution"));
            let object = json!({"status": "feasible", "objective": 1, "solution": solution});
            let line = python_line(&object, token);
            prop_assert_eq!(
                parse_line(&line),
                Some(Err(Rejection::new(path, token.reason())))
            );
        }

        /// A non-finite objective is refused by name; as a bound it is
        /// dropped, never kept as a sentinel.
        #[test]
        fn non_finite_objectives_and_bounds(
            token in non_finite(),
            solution in json_object(2),
        ) {
            let object = json!({"status": "optimal", "objective": PLACEHOLDER, "solution": solution});
            prop_assert_eq!(
                parse_line(&python_line(&object, token)),
                Some(Err(Rejection::new("objective", token.reason())))
            );
            let object = json!({"status": "optimal", "objective": 3, "solution": solution, "best_objective_bound": PLACEHOLDER});
            let parsed = parse_line(&python_line(&object, token));
            prop_assert!(matches!(&parsed, Some(Ok(envelope)) if envelope.best_objective_bound.is_none()), "{:?}", parsed);
        }

        /// Log lines, arrays, scalars after the envelope, and a cut-off
        /// last line, are skipped, whichever line ending the script used.
        #[test]
        fn trailing_noise_is_ignored(
            (spelled, _) in status(),
            solution in json_object(2),
            noise in prop::collection::vec(not_an_object_line(), 0..4),
            cut_tail in json_value(2),
            cut in any::<prop::sample::Index>(),
            ending in prop::sample::select(vec!["\n", "\r\n", "\r"]),
        ) {
            let line = json!({"status": spelled, "objective": null, "solution": solution}).to_string();
            let tail = json!({"status": "optimal", "objective": 1, "solution": {"x": cut_tail}}).to_string();
            let mut end = cut.index(tail.len());
            while !tail.is_char_boundary(end) {
                end -= 1;
            }
            let mut stdout = format!("started{ending}{line}{ending}");
            for noise in &noise {
                stdout.push_str(noise);
                stdout.push_str(ending);
            }
            stdout.push_str(&tail[..end]);
            prop_assert_eq!(last_envelope(&stdout), parse_line(&line));
        }
    }

    proptest! {
        #![proptest_config(crate::strategies::cases(16))]

        #[test]
        fn deep_nesting_is_skipped(depth in 1usize..20_000) {
            let envelope = r#"{"status": "unknown", "objective": null, "solution": {}}"#;
            let nested = deeply_nested(depth);
            let stdout = format!("{envelope}\n{nested}");
            // Within serde_json's limit (128) the nested line is the last
            // object; far past it, it is skipped like any non-JSON line.
            if depth <= 100 {
                prop_assert_eq!(last_envelope(&stdout), parse_line(&nested));
            } else if depth >= 200 {
                prop_assert_eq!(last_envelope(&stdout), parse_line(envelope));
            }
            let in_solution = format!(
                r#"{{"status": "unknown", "objective": null, "solution": {{"deep": {nested}, "x": NaN}}}}"#
            );
            let _ = parse_line(&in_solution);
        }
    }
}
