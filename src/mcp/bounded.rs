//! A kept result's structured content held within the response bound
//! (`SOLVERGATE_MAX_RESPONSE_BYTES`, 128 KiB by default). Below it the
//! structured content is the whole result; above it the largest values
//! give way, each to something of the JSON type its output schema allows,
//! and each is named, so a client reads it whole from the kept resource.
//!
//! Whatever the size, a script's envelope line is not repeated in `stdout`
//! beside the solution read from it ([`envelopes_read`]). Past the bound,
//! values give way innermost first (one holding others only once they
//! have), the largest first among them, until the rest fits:
//! - a string (a run's stdout and stderr): its head and tail around a line
//!   saying how much was left out and where;
//! - a value the output schemas leave unconstrained (every value of a
//!   solution, and any object or list an object holds below the result's
//!   own fields, such as a plan card's orders): a marker object,
//!   `{"whole": false, "length": …, "bytes": …, "uri": …}`;
//! - any other list (a field of the result's own, a list in a list): as
//!   many of its first items as fit (of `solutions`, its last: the solution
//!   reported, and an optimisation's best, stay); a list of lists (a
//!   table's rows) is never cut inside a row.

use std::fmt::Write;

use serde_json::{Map, Value};

pub use crate::settings::DEFAULT_RESPONSE_LIMIT;

/// A value under this many bytes is never cut: cutting it saves too little.
const SMALLEST_CUT: usize = 512;

/// The bytes of a string kept before and after its cut.
const STRING_HEAD: usize = 2048;
const STRING_TAIL: usize = 1024;

/// One value that gave way: where it was, and how large it is whole.
#[derive(Debug, Clone, PartialEq)]
pub struct Cut {
    /// Where, as a reader writes it: `solution.x`, `result.stdout`,
    /// `solutions[2].x`.
    pub path: String,
    /// Its size whole, serialized.
    pub bytes: usize,
    /// A list's length, whole.
    pub length: Option<usize>,
}

/// One step of a path into the result.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    Key(String),
    Index(usize),
}

/// What a candidate is, which says what it gives way to.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    /// A string: its head and tail.
    Text,
    /// A value the output schema leaves unconstrained: a marker.
    Value,
    /// A list the output schema types: some of its items.
    List,
}

#[derive(Debug)]
struct Candidate {
    path: Vec<Step>,
    kind: Kind,
    bytes: usize,
}

/// Cuts `result` until it and `text_bytes` of text fit in `limit` bytes;
/// `uri` is the whole result's resource and `value_uri(name)` the one
/// reading a value of its top-level solution. Returns what was cut, in
/// the order it gave way; nothing when it fitted.
pub fn bound(
    result: &mut Value,
    text_bytes: usize,
    limit: usize,
    uri: &str,
    value_uri: &dyn Fn(&str) -> String,
) -> Vec<Cut> {
    let mut size = serialized_len(result) + text_bytes;
    let mut cuts = Vec::new();
    // Innermost first: a value holding others gives way only once they
    // have, so a plan keeps every card and marks the orders inside each.
    for _ in 0..ROUNDS {
        if size <= limit {
            break;
        }
        let mut candidates = Vec::new();
        collect(result, &mut Vec::new(), false, &mut candidates);
        innermost(&mut candidates);
        if candidates.is_empty() {
            break;
        }
        candidates.sort_by_key(|candidate| std::cmp::Reverse(candidate.bytes));
        for candidate in candidates {
            if size <= limit {
                break;
            }
            let pointer = pointer(&candidate.path);
            let Some(value) = result.pointer_mut(&pointer) else {
                continue;
            };
            let length = match &*value {
                Value::Array(items) => Some(items.len()),
                Value::Object(map) => Some(map.len()),
                _ => None,
            };
            let over = size - limit;
            let replacement = match candidate.kind {
                Kind::Text => cut_text(value.as_str().unwrap_or_default(), uri),
                Kind::Value => {
                    let reader = match candidate.path.as_slice() {
                        [Step::Key(solution), Step::Key(name)] if solution == "solution" => {
                            value_uri(name)
                        }
                        [Step::Key(_), Step::Key(solution), Step::Key(name)]
                            if solution == "solution" =>
                        {
                            value_uri(name)
                        }
                        _ => uri.to_owned(),
                    };
                    let mut marker = Map::new();
                    marker.insert("whole".into(), Value::Bool(false));
                    marker.insert("length".into(), length.map_or(Value::Null, Value::from));
                    marker.insert("bytes".into(), Value::from(candidate.bytes));
                    marker.insert("uri".into(), Value::String(reader));
                    Value::Object(marker)
                }
                Kind::List => {
                    let from_end =
                        matches!(candidate.path.last(), Some(Step::Key(key)) if key == "solutions");
                    items_within(value, candidate.bytes.saturating_sub(over), from_end)
                }
            };
            let saved = candidate.bytes.saturating_sub(serialized_len(&replacement));
            if saved == 0 {
                continue;
            }
            *value = replacement;
            size -= saved;
            cuts.push(Cut {
                path: readable(&candidate.path),
                bytes: candidate.bytes,
                length: match candidate.kind {
                    Kind::Text => None,
                    _ => length,
                },
            });
        }
    }
    cuts
}

/// How many times values are looked for, innermost first: the depth of
/// nesting a result may have.
const ROUNDS: usize = 8;

/// Of `candidates`, those with no other candidate inside them.
fn innermost(candidates: &mut Vec<Candidate>) {
    let mut holders = std::collections::HashSet::new();
    for candidate in candidates.iter() {
        for depth in 0..candidate.path.len() {
            holders.insert(pointer(&candidate.path[..depth]));
        }
    }
    candidates.retain(|candidate| !holders.contains(&pointer(&candidate.path)));
}

/// The most of a script's envelope line left in `stdout` beside the
/// `solution` it was read into.
const ENVELOPE_KEPT: usize = 1024;

/// Below the bound as above it, `stdout` does not repeat a solution whole:
/// in every object holding a `solution` and a `stdout`, the last stdout
/// line that is a JSON object with a `solution` (a CP-SAT script's
/// envelope, already read into the result) gives way to a line naming it,
/// when it is over [`ENVELOPE_KEPT`] bytes. Returns how many gave way.
pub fn envelopes_read(result: &mut Value, uri: &str) -> usize {
    let mut replaced = 0;
    let Value::Object(map) = result else {
        if let Value::Array(items) = result {
            for item in items {
                replaced += envelopes_read(item, uri);
            }
        }
        return replaced;
    };
    if matches!(map.get("solution"), Some(Value::Object(_)))
        && let Some(Value::String(stdout)) = map.get_mut("stdout")
        && let Some(shorter) = without_envelope(stdout, uri)
    {
        *stdout = shorter;
        replaced += 1;
    }
    for inner in map.values_mut() {
        replaced += envelopes_read(inner, uri);
    }
    replaced
}

/// `stdout` with its envelope line named instead of repeated, if it has
/// one over [`ENVELOPE_KEPT`] bytes.
fn without_envelope(stdout: &str, uri: &str) -> Option<String> {
    let line = stdout
        .split('\n')
        .rev()
        .map(|line| line.trim_end_matches('\r'))
        .find(|line| line.trim_start().starts_with('{'))?;
    if line.len() <= ENVELOPE_KEPT {
        return None;
    }
    let parsed: Map<String, Value> = serde_json::from_str(line.trim()).ok()?;
    if !parsed.contains_key("solution") {
        return None;
    }
    let start = stdout.rfind(line)?;
    Some(format!(
        "{}[the JSON envelope, {} bytes, read into status, objective and solution; as printed in {uri}]{}",
        &stdout[..start],
        line.len(),
        &stdout[start + line.len()..]
    ))
}

/// The sentence that names what gave way, for the text part.
pub fn in_words(cuts: &[Cut], limit: usize) -> String {
    let mut line = format!(
        "The structured result was cut to fit {} KiB; whole in the resource:",
        limit / 1024
    );
    for (index, cut) in cuts.iter().enumerate() {
        if index == 8 {
            let _ = write!(line, " and {} more", cuts.len() - index);
            break;
        }
        let _ = write!(line, "{} {} (", if index == 0 { "" } else { "," }, cut.path);
        if let Some(length) = cut.length {
            let _ = write!(line, "{length} items, ");
        }
        let _ = write!(line, "{} bytes)", cut.bytes);
    }
    line.push('.');
    line
}

/// Every value that may give way, with its size and what it gives way to.
/// A value of an object below the result's own fields (whose output
/// schemas leave them unconstrained) gives way to a marker: every value of
/// a solution (looked no further into), and every object or list held by
/// an object at any depth below the first. Any other list (a field of the
/// result's own, an item of a list) gives way to some of its items, and a
/// list of lists (a table's rows) is never cut inside a row.
fn collect(value: &Value, path: &mut Vec<Step>, in_solution: bool, out: &mut Vec<Candidate>) {
    let bytes = || serialized_len(value);
    let held_by_object = path.len() >= 2 && matches!(path.last(), Some(Step::Key(_)));
    if in_solution {
        let bytes = bytes();
        if bytes >= SMALLEST_CUT {
            out.push(Candidate {
                path: path.clone(),
                kind: Kind::Value,
                bytes,
            });
        }
        return;
    }
    match value {
        Value::String(text) if text.len() >= SMALLEST_CUT => out.push(Candidate {
            path: path.clone(),
            kind: Kind::Text,
            bytes: bytes(),
        }),
        Value::Object(map) => {
            if held_by_object {
                push(out, path, Kind::Value, bytes());
            }
            for (key, inner) in map {
                path.push(Step::Key(key.clone()));
                match (key.as_str(), inner) {
                    ("solution", Value::Object(solution)) => {
                        for (name, value) in solution {
                            path.push(Step::Key(name.clone()));
                            collect(value, path, true, out);
                            path.pop();
                        }
                    }
                    ("solutions", Value::Array(items)) => {
                        push(out, path, Kind::List, serialized_len(inner));
                        for (index, item) in items.iter().enumerate() {
                            let Value::Object(solution) = item else {
                                continue;
                            };
                            path.push(Step::Index(index));
                            for (name, value) in solution {
                                path.push(Step::Key(name.clone()));
                                collect(value, path, true, out);
                                path.pop();
                            }
                            path.pop();
                        }
                    }
                    _ => collect(inner, path, false, out),
                }
                path.pop();
            }
        }
        Value::Array(items) => {
            let kind = if held_by_object {
                Kind::Value
            } else {
                Kind::List
            };
            push(out, path, kind, bytes());
            for (index, item) in items.iter().enumerate() {
                if item.is_array() {
                    continue;
                }
                path.push(Step::Index(index));
                collect(item, path, false, out);
                path.pop();
            }
        }
        _ => {}
    }
}

fn push(out: &mut Vec<Candidate>, path: &[Step], kind: Kind, bytes: usize) {
    if bytes >= SMALLEST_CUT {
        out.push(Candidate {
            path: path.to_vec(),
            kind,
            bytes,
        });
    }
}

/// A string's head and tail, at character boundaries, around a line that
/// says what was left out.
fn cut_text(text: &str, uri: &str) -> Value {
    if text.len() <= STRING_HEAD + STRING_TAIL {
        return Value::String(text.to_owned());
    }
    let mut head = STRING_HEAD;
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len() - STRING_TAIL;
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    Value::String(format!(
        "{}\n[… {} bytes left out here: the whole text is in {uri}]\n{}",
        &text[..head],
        tail - head,
        &text[tail..]
    ))
}

/// A list's first items (or last, `from_end`), in order, as many as fit
/// in `room` bytes (at least none).
fn items_within(value: &Value, room: usize, from_end: bool) -> Value {
    let Value::Array(items) = value else {
        return value.clone();
    };
    let mut kept = Vec::new();
    let mut used = 2;
    let ordered: Box<dyn Iterator<Item = &Value>> = if from_end {
        Box::new(items.iter().rev())
    } else {
        Box::new(items.iter())
    };
    for item in ordered {
        let bytes = serialized_len(item) + 1;
        if used + bytes > room {
            break;
        }
        used += bytes;
        kept.push(item.clone());
    }
    if from_end {
        kept.reverse();
    }
    Value::Array(kept)
}

/// `value`'s size as compact JSON, without keeping the text.
fn serialized_len(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    match serde_json::to_writer(&mut count, value) {
        Ok(()) => count.0,
        Err(_) => usize::MAX / 4,
    }
}

/// A JSON pointer (RFC 6901) to `path`.
fn pointer(path: &[Step]) -> String {
    let mut pointer = String::new();
    for step in path {
        pointer.push('/');
        match step {
            Step::Key(key) => pointer.push_str(&key.replace('~', "~0").replace('/', "~1")),
            Step::Index(index) => {
                let _ = write!(pointer, "{index}");
            }
        }
    }
    pointer
}

/// `path` as a reader writes it: `result.solution.x`, `solutions[2].x`.
fn readable(path: &[Step]) -> String {
    let mut text = String::new();
    for step in path {
        match step {
            Step::Key(key) => {
                if !text.is_empty() {
                    text.push('.');
                }
                text.push_str(key);
            }
            Step::Index(index) => {
                let _ = write!(text, "[{index}]");
            }
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const URI: &str = "solvergate://results/t-1";

    fn value_uri(name: &str) -> String {
        format!("{URI}/solution/{name}")
    }

    #[test]
    fn a_result_within_the_bound_is_left_whole() {
        let mut result =
            json!({"status": "optimal", "solution": {"x": (0..1000).collect::<Vec<_>>()}});
        let before = result.clone();
        assert_eq!(bound(&mut result, 100, 128 * 1024, URI, &value_uri), vec![]);
        assert_eq!(result, before);
    }

    #[test]
    fn the_largest_values_give_way_to_markers_and_cut_strings() {
        let x: Vec<u64> = (0..200_000).map(|i| i % 10).collect();
        let stdout = format!("log\n{}\n", serde_json::to_string(&x).unwrap_or_default());
        let mut result = json!({
            "status": "feasible",
            "solution": {"x": x, "count": 200_000, "small": [1, 2, 3]},
            "stdout": stdout,
            "stderr": "",
        });
        let cuts = bound(&mut result, 8_000, 128 * 1024, URI, &value_uri);
        assert!(serialized_len(&result) + 8_000 <= 128 * 1024);
        assert_eq!(
            cuts.iter().map(|cut| cut.path.as_str()).collect::<Vec<_>>(),
            ["stdout", "solution.x"]
        );
        assert_eq!(
            result["solution"]["x"],
            json!({"whole": false, "length": 200_000, "bytes": 400_001, "uri": value_uri("x")})
        );
        // The scalars and the small values stay.
        assert_eq!(result["solution"]["count"], json!(200_000));
        assert_eq!(result["solution"]["small"], json!([1, 2, 3]));
        let stdout = result["stdout"].as_str().unwrap_or_default();
        assert!(stdout.starts_with("log\n[0,1,2"), "{stdout:.40}");
        assert!(
            stdout.contains("bytes left out here: the whole text is in solvergate://results/t-1]")
        );
        assert_eq!(
            in_words(&cuts, 128 * 1024),
            "The structured result was cut to fit 128 KiB; whole in the resource: stdout (400010 bytes), solution.x (200000 items, 400001 bytes)."
        );
    }

    #[test]
    fn a_jobs_nested_solution_points_at_its_value_and_lists_keep_their_first_items() {
        let x: Vec<u64> = (0..100_000).collect();
        let mut result = json!({"job_id": "j", "result": {"solution": {"x": x}}});
        let cuts = bound(&mut result, 0, 32 * 1024, URI, &value_uri);
        assert_eq!(cuts.len(), 1);
        assert_eq!(
            result["result"]["solution"]["x"]["uri"],
            json!(value_uri("x"))
        );

        // Many small solutions: markers do not help; the list keeps its
        // last, the one reported as `solution` among them.
        let solutions: Vec<Value> = (0..20_000).map(|i| json!({"x": i})).collect();
        let mut result = json!({"solutions": solutions, "solution": {"x": 19_999}});
        let cuts = bound(&mut result, 0, 32 * 1024, URI, &value_uri);
        assert!(serialized_len(&result) <= 32 * 1024);
        let kept = result["solutions"].as_array().map_or(0, Vec::len);
        assert!(kept > 100 && kept < 20_000, "{kept}");
        assert_eq!(result["solutions"][kept - 1], json!({"x": 19_999}));
        assert_eq!(result["solutions"][0], json!({"x": 20_000 - kept}));
        assert_eq!(cuts[0].path, "solutions");
        assert_eq!(cuts[0].length, Some(20_000));

        // Any other list keeps its first items; a table's rows stay whole.
        let rows: Vec<Value> = (0..2_000).map(|i| json!([i, "x".repeat(600)])).collect();
        let mut result = json!({"rows": rows});
        let cuts = bound(&mut result, 0, 32 * 1024, URI, &value_uri);
        assert_eq!(
            cuts.iter().map(|cut| cut.path.as_str()).collect::<Vec<_>>(),
            ["rows"]
        );
        assert_eq!(result["rows"][0], json!([0, "x".repeat(600)]));
    }

    #[test]
    fn lists_inside_lists_give_way_first() {
        // A plan: every card stays, the orders inside each are cut.
        let cards: Vec<Value> = ["all_air", "all_lcl", "all_fcl", "optimised"]
            .iter()
            .map(|name| json!({"name": name, "cost": 1, "modes": (0..10_000).map(|i| json!({"order": i, "mode": "air"})).collect::<Vec<_>>()}))
            .collect();
        let mut result = json!({"result": {"recommended": "optimised", "cards": cards}});
        let cuts = bound(&mut result, 0, 32 * 1024, URI, &value_uri);
        assert!(serialized_len(&result) <= 32 * 1024);
        let names: Vec<&str> = result["result"]["cards"]
            .as_array()
            .map(|cards| {
                cards
                    .iter()
                    .filter_map(|card| card["name"].as_str())
                    .collect()
            })
            .unwrap_or_default();
        assert_eq!(names, ["all_air", "all_lcl", "all_fcl", "optimised"]);
        assert!(
            cuts.iter().all(|cut| cut.path.ends_with(".modes")),
            "{cuts:?}"
        );
        // The same with each card's orders a map of id to mode.
        let modes: Map<String, Value> = (0..5_000)
            .map(|i| (format!("X-{i:05}"), json!("lcl")))
            .collect();
        let cards: Vec<Value> = (0..4).map(|i| json!({"name": i, "modes": modes})).collect();
        let mut result = json!({"result": {"cards": cards}});
        let cuts = bound(&mut result, 0, 32 * 1024, URI, &value_uri);
        assert_eq!(result["result"]["cards"].as_array().map(Vec::len), Some(4));
        assert_eq!(
            result["result"]["cards"][3]["modes"],
            json!({"whole": false, "length": 5_000, "bytes": 80_001, "uri": URI})
        );
        assert_eq!(cuts[0].path, "result.cards[0].modes");
    }

    #[test]
    fn a_read_envelope_is_named_in_stdout_not_repeated() {
        let x: Vec<u64> = (0..1000).collect();
        let envelope = json!({"status": "optimal", "solution": {"x": x}}).to_string();
        let small = json!({"status": "optimal", "solution": {"x": 1}}).to_string();
        let mut result = json!({
            "solution": {"x": x},
            "stdout": format!("log\n{envelope}\nafter\n"),
            "attempts": [
                {"solution": {"x": 1}, "stdout": format!("{small}\n")},
                {"solution": null, "stdout": format!("{envelope}\n")},
            ],
        });
        assert_eq!(envelopes_read(&mut result, URI), 1);
        assert_eq!(
            result["stdout"],
            json!(format!(
                "log\n[the JSON envelope, {} bytes, read into status, objective and solution; as printed in {URI}]\nafter\n",
                envelope.len()
            ))
        );
        // A small envelope stays; one not read into a solution stays.
        assert_eq!(result["attempts"][0]["stdout"], json!(format!("{small}\n")));
        assert_eq!(
            result["attempts"][1]["stdout"],
            json!(format!("{envelope}\n"))
        );
    }

    #[test]
    fn strings_are_cut_at_character_boundaries() {
        let text = "é".repeat(10_000);
        let Value::String(cut) = cut_text(&text, URI) else {
            panic!("not a string");
        };
        assert!(cut.len() < 4_000);
        assert!(cut.starts_with('é') && cut.ends_with('é'));
    }

    #[test]
    fn pointers_escape_and_paths_read() {
        let path = [
            Step::Key("a/b~c".into()),
            Step::Index(3),
            Step::Key("x".into()),
        ];
        assert_eq!(pointer(&path), "/a~1b~0c/3/x");
        assert_eq!(readable(&path), "a/b~c[3].x");
    }
}
