//! The answer first: a solution's values as the text part shows them.
//!
//! A client's model often sees only the text part, so the values it asked
//! for must be there whole, whatever their names. Values are shown in
//! three passes: every scalar (number, bool, null, short string) in full,
//! then every small list or object in full, then each large value as a
//! summary a person can act on (its length or shape, its range, its first
//! and last items). Nothing is cut inside a value: a value is shown whole,
//! summarised, or — when even the scalars overrun the section's budget —
//! counted and named on the last line with where the whole result is.

use std::fmt::Write;

use serde_json::{Map, Value};

/// The most the solution's lines take, in bytes; the rest of the text part
/// (status, statistics, excerpts) fits beside it in `render::TEXT_LIMIT`.
const BUDGET: usize = 8 * 1024;

/// A value whose compact JSON is at most this long is shown whole.
const SMALL: usize = 120;

/// A summary's first and last items.
const ENDS: usize = 5;

/// An item of a summary longer than this is itself summarised.
const ITEM: usize = 40;

/// Where an answer's whole solution is: the kept result whose URI its
/// text's last lines name (see `results::link`). The structured result
/// may hold a marker in place of a large value (`bounded`).
pub const WHOLE_SOLUTION: &str = "the kept result named on the last lines";

/// `Solution:` and one line per value, within [`BUDGET`]; `whole` says
/// where the whole solution is (e.g. [`WHOLE_SOLUTION`]).
pub fn solution(text: &mut String, values: &Map<String, Value>, whole: &str) {
    if values.is_empty() {
        return;
    }
    let mut shown: Vec<String> = Vec::new();
    let mut skipped: Vec<&str> = Vec::new();
    let mut used = 0;
    let mut summarised = false;
    for pass in [Pass::Scalar, Pass::Small, Pass::Large] {
        for (name, value) in values {
            let compact = value.to_string();
            if Pass::of(value, &compact) != pass {
                continue;
            }
            let line = match pass {
                Pass::Scalar | Pass::Small => format!("  {name} = {compact}\n"),
                Pass::Large => {
                    summarised = true;
                    format!("  {name} = {}\n", summary(value))
                }
            };
            if skipped.is_empty() && used + line.len() <= BUDGET {
                used += line.len();
                shown.push(line);
            } else {
                skipped.push(name);
            }
        }
    }
    text.push_str("Solution:\n");
    for line in shown {
        text.push_str(&line);
    }
    if !skipped.is_empty() {
        let mut names = String::new();
        for (i, name) in skipped.iter().enumerate() {
            if names.len() + name.len() > 1024 {
                let _ = write!(names, ", … ({} more)", skipped.len() - i);
                break;
            }
            if i > 0 {
                names.push_str(", ");
            }
            names.push_str(name);
        }
        let _ = writeln!(
            text,
            "  … {} more value(s) not shown here: {names} (whole in {whole})",
            skipped.len()
        );
    } else if summarised {
        let _ = writeln!(text, "  (summarised values are whole in {whole})");
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Pass {
    Scalar,
    Small,
    Large,
}

impl Pass {
    fn of(value: &Value, compact: &str) -> Pass {
        match value {
            Value::Array(_) | Value::Object(_) if compact.len() <= SMALL => Pass::Small,
            Value::Array(_) | Value::Object(_) => Pass::Large,
            Value::String(_) if compact.len() > SMALL => Pass::Large,
            _ => Pass::Scalar,
        }
    }
}

/// A large value in a line: `[6, 17, …, 28] (2000 integers, 0 to 39)`,
/// `40 × 50 array of integers, 0 to 1; first row […]`, `{12 keys: a, b, …}`,
/// `"head…" (a string of 3000 characters)`.
fn summary(value: &Value) -> String {
    match value {
        Value::Array(items) => list(items),
        Value::Object(map) => object(map),
        Value::String(s) => {
            let head: String = s.chars().take(ITEM).collect();
            format!(
                "{}… (a string of {} characters)",
                Value::String(head),
                s.chars().count()
            )
        }
        other => other.to_string(),
    }
}

fn list(items: &[Value]) -> String {
    let shape = shape(items);
    let leaves = Leaves::of(items);
    let what = match shape.as_slice() {
        [length] => format!("{length} {}", leaves.kind(*length)),
        dims => format!(
            "{} array of {}",
            dims.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(" × "),
            leaves.kind(2)
        ),
    };
    let range = leaves.range().map(|r| format!(", {r}")).unwrap_or_default();
    let shown: Vec<String> = if items.len() <= 2 * ENDS {
        items.iter().map(item).collect()
    } else {
        items[..ENDS]
            .iter()
            .map(item)
            .chain(std::iter::once("…".to_owned()))
            .chain(items[items.len() - ENDS..].iter().map(item))
            .collect()
    };
    format!("[{}] ({what}{range})", shown.join(", "))
}

fn object(map: &Map<String, Value>) -> String {
    let mut names: Vec<&str> = map.keys().map(String::as_str).take(2 * ENDS).collect();
    if map.len() > names.len() {
        names.push("…");
    }
    format!("{{{} keys: {}}}", map.len(), names.join(", "))
}

/// One item of a summarised list: whole when short, else its own summary
/// in brief.
fn item(value: &Value) -> String {
    let compact = value.to_string();
    if compact.len() <= ITEM {
        return compact;
    }
    match value {
        Value::Array(items) => format!("[… {} items]", items.len()),
        Value::Object(map) => format!("{{… {} keys}}", map.len()),
        Value::String(s) => {
            let head: String = s.chars().take(ITEM / 2).collect();
            format!("{}…", Value::String(head))
        }
        other => other.to_string(),
    }
}

/// The dimensions of a rectangular nested list (`[40, 50]`), or just its
/// length when it is not rectangular.
fn shape(items: &[Value]) -> Vec<usize> {
    let mut dims = vec![items.len()];
    let mut level: Vec<&Value> = items.iter().collect();
    while let Some(Value::Array(first)) = level.first() {
        let width = first.len();
        let rows: Option<Vec<&Vec<Value>>> = level
            .iter()
            .map(|v| match v {
                Value::Array(row) if row.len() == width => Some(row),
                _ => None,
            })
            .collect();
        let Some(rows) = rows else {
            break;
        };
        if width == 0 {
            break;
        }
        dims.push(width);
        level = rows.into_iter().flatten().collect();
    }
    dims
}

/// What the scalars inside a nested list are, and their range.
struct Leaves {
    integers: bool,
    numbers: bool,
    bools: bool,
    strings: bool,
    other: bool,
    min: f64,
    max: f64,
    min_text: String,
    max_text: String,
}

impl Leaves {
    fn of(items: &[Value]) -> Leaves {
        let mut leaves = Leaves {
            integers: true,
            numbers: true,
            bools: true,
            strings: true,
            other: false,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            min_text: String::new(),
            max_text: String::new(),
        };
        let mut stack: Vec<&Value> = items.iter().rev().collect();
        let mut seen = false;
        while let Some(value) = stack.pop() {
            match value {
                Value::Array(inner) => stack.extend(inner.iter().rev()),
                Value::Number(n) => {
                    seen = true;
                    leaves.bools = false;
                    leaves.strings = false;
                    leaves.integers &= n.is_i64() || n.is_u64();
                    if let Some(x) = n.as_f64() {
                        if x < leaves.min {
                            leaves.min = x;
                            leaves.min_text = n.to_string();
                        }
                        if x > leaves.max {
                            leaves.max = x;
                            leaves.max_text = n.to_string();
                        }
                    }
                }
                Value::Bool(_) => {
                    seen = true;
                    leaves.integers = false;
                    leaves.numbers = false;
                    leaves.strings = false;
                }
                Value::String(_) => {
                    seen = true;
                    leaves.integers = false;
                    leaves.numbers = false;
                    leaves.bools = false;
                }
                Value::Null | Value::Object(_) => {
                    seen = true;
                    leaves.other = true;
                }
            }
        }
        if !seen || leaves.other {
            leaves.integers = false;
            leaves.numbers = false;
            leaves.bools = false;
            leaves.strings = false;
        }
        leaves
    }

    fn kind(&self, count: usize) -> &'static str {
        let one = count == 1;
        match (self.integers, self.numbers, self.bools, self.strings) {
            (true, ..) => {
                if one {
                    "integer"
                } else {
                    "integers"
                }
            }
            (_, true, ..) => {
                if one {
                    "number"
                } else {
                    "numbers"
                }
            }
            (_, _, true, _) => {
                if one {
                    "boolean"
                } else {
                    "booleans"
                }
            }
            (.., true) => {
                if one {
                    "string"
                } else {
                    "strings"
                }
            }
            _ => {
                if one {
                    "value"
                } else {
                    "values"
                }
            }
        }
    }

    fn range(&self) -> Option<String> {
        (self.numbers && self.min.is_finite())
            .then(|| format!("{} to {}", self.min_text, self.max_text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn render(values: Value) -> String {
        let mut text = String::new();
        let Value::Object(map) = values else {
            panic!("an object")
        };
        solution(&mut text, &map, "the structured result's `solution`");
        text
    }

    #[test]
    fn scalars_come_first_and_whole_whatever_their_names() {
        let machine_of_task: Vec<u32> = (0..2000).map(|i| (i * 7) % 40).collect();
        let loads: Vec<u32> = (0..40).map(|i| 2400 + i).collect();
        let text = render(json!({
            "loads": loads,
            "lower_bound": 2450,
            "machine_of_task": machine_of_task,
            "makespan": 2450,
            "task_1234_machine": 28,
        }));
        assert_eq!(
            text,
            "Solution:\n  lower_bound = 2450\n  makespan = 2450\n  task_1234_machine = 28\n  \
             loads = [2400, 2401, 2402, 2403, 2404, …, 2435, 2436, 2437, 2438, 2439] (40 integers, 2400 to 2439)\n  \
             machine_of_task = [0, 7, 14, 21, 28, …, 5, 12, 19, 26, 33] (2000 integers, 0 to 39)\n  \
             (summarised values are whole in the structured result's `solution`)\n"
        );
    }

    #[test]
    fn small_values_are_whole_and_shapes_are_named() {
        let grid: Vec<Vec<bool>> = (0..30)
            .map(|r| (0..20).map(|c| (r + c) % 3 == 0).collect())
            .collect();
        let text =
            render(json!({"x": [1, 2, 3], "grid": grid, "name": "a".repeat(300), "cost": 1.5}));
        assert_eq!(
            text,
            format!(
                "Solution:\n  cost = 1.5\n  x = [1,2,3]\n  grid = [[… 20 items], [… 20 items], [… 20 items], [… 20 items], [… 20 items], …, [… 20 items], [… 20 items], [… 20 items], [… 20 items], [… 20 items]] (30 × 20 array of booleans)\n  name = \"{}\"… (a string of 300 characters)\n  (summarised values are whole in the structured result's `solution`)\n",
                "a".repeat(40)
            )
        );
    }

    #[test]
    fn too_many_scalars_are_counted_and_named_never_cut() {
        let values: Map<String, Value> = (0..2000)
            .map(|i| (format!("v{i:04}"), json!(i * 1_000_003)))
            .collect();
        let mut text = String::new();
        solution(&mut text, &values, "W");
        assert!(text.len() <= BUDGET + 1200, "{}", text.len());
        let last = text.lines().last().unwrap_or_default();
        assert!(last.starts_with("  … "), "{last}");
        assert!(last.ends_with("(whole in W)"), "{last}");
        // Every line above the last is one whole value.
        let shown = text
            .lines()
            .skip(1)
            .filter(|l| !l.starts_with("  …"))
            .count();
        for line in text.lines().skip(1).take(shown) {
            let (name, value) = line.trim().split_once(" = ").unwrap_or_default();
            assert_eq!(values[name], value.parse::<Value>().unwrap_or_default());
        }
        let counted: usize = last["  … ".len()..]
            .split(' ')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or_default();
        assert_eq!(shown + counted, 2000);
    }

    #[test]
    fn ragged_and_mixed_lists_say_so() {
        assert_eq!(
            summary(&json!([
                [1, 2],
                [3],
                [4, 5, 6],
                7,
                8,
                9,
                10,
                11,
                12,
                13,
                "x"
            ])),
            "[[1,2], [3], [4,5,6], 7, 8, …, 10, 11, 12, 13, \"x\"] (11 values)"
        );
        assert_eq!(
            summary(&json!([0.5, 2, -1.25])),
            "[0.5, 2, -1.25] (3 numbers, -1.25 to 2)"
        );
    }
}
