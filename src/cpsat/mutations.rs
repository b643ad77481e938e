//! The four corruptions of an accepted solution that the checker self-test
//! feeds back to a user's checker.
//!
//! A checker that accepts a solution and all four corruptions of it may be
//! vacuous (it checks nothing). [`mutations`] builds them from the solution
//! object and objective alone — deterministic and domain-agnostic, always
//! four entries in a fixed order:
//! 1. [`OBJECTIVE_PERTURBED`]: the objective plus one;
//! 2. [`ELEMENT_DROPPED`]: the longest top-level list loses its last element;
//! 3. [`ELEMENT_DUPLICATED`]: that list gains a copy of its first element;
//! 4. [`NUMERIC_FIELD_PERTURBED`]: one integer bumped by one (or, with no
//!    integer, one boolean flipped).
//!
//! A rule that finds nothing to corrupt is skipped with a reason, never
//! guessed at.
//!
//! What this module does not do: run the checker, judge its answers, or
//! look deeper than the levels each rule names (top-level values, and the
//! fields of the chosen list's first element). It knows nothing of the
//! problem's domain, so a corruption can happen to be another valid
//! solution; the caller's report must say "may be vacuous", not "is".
//!
//! What a maintainer must not break: determinism. The same solution and
//! objective must always give the same four mutants, in the same order,
//! with the same choices (ties go to the first key in [`Map`]'s sorted
//! order) — the self-test's verdict and its report depend on it. And no
//! input may panic or recurse: the solution is arbitrary JSON.

use serde_json::{Map, Number, Value};

/// Name of mutation 1: the objective plus one.
pub const OBJECTIVE_PERTURBED: &str = "objective_perturbed";
/// Name of mutation 2: the last element of the longest top-level list removed.
pub const ELEMENT_DROPPED: &str = "element_dropped";
/// Name of mutation 3: the first element of that list appended again.
pub const ELEMENT_DUPLICATED: &str = "element_duplicated";
/// Name of mutation 4: one integer bumped, or one boolean flipped.
pub const NUMERIC_FIELD_PERTURBED: &str = "numeric_field_perturbed";

/// One corruption: its name, and the corrupted payload or why it was skipped.
#[derive(Debug, Clone, PartialEq)]
pub struct Mutant {
    /// One of the four `*_PERTURBED` / `ELEMENT_*` names.
    pub name: &'static str,
    /// The corrupted payload, or the reason the rule had nothing to corrupt.
    pub outcome: Result<MutatedPayload, Skipped>,
}

/// Why a rule had nothing to corrupt (the self-test row's
/// `skipped_reason`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Skipped {
    /// Rule 1: the payload carries no objective at all.
    #[error("the solution has no objective")]
    NoObjective,
    /// Rule 1: the objective is JSON `null`.
    #[error("the objective is null")]
    NullObjective,
    /// What the objective is instead (`a string`, ...).
    #[error("the objective is not a number (it is {0})")]
    ObjectiveNotANumber(&'static str),
    /// The objective, as printed.
    #[error("the objective {0} is too large for adding 1 to change it")]
    ObjectiveTooLarge(Number),
    /// Rules 2 and 3: no top-level value is a non-empty list.
    #[error("no top-level value of the solution is a non-empty list")]
    NoList,
    /// The longest list's key.
    #[error(
        "no integer or boolean among the solution's top-level values or in the first element of its longest list {}",
        json_string(.0)
    )]
    NoFieldInList(String),
    /// Rule 4: no integer or boolean at the top level, and no list to
    /// look into.
    #[error("no integer or boolean among the solution's top-level values, and no top-level list")]
    NoField,
}

/// A corrupted solution and objective, ready to hand to the checker.
#[derive(Debug, Clone, PartialEq)]
pub struct MutatedPayload {
    /// The corrupted solution (unchanged for the first mutation).
    pub solution: Map<String, Value>,
    /// Unchanged from the input for every mutation but the first.
    pub objective: Option<Value>,
}

/// The four mutants of `solution` and `objective`, always in the order
/// objective_perturbed, element_dropped, element_duplicated,
/// numeric_field_perturbed.
pub fn mutations(solution: &Map<String, Value>, objective: Option<&Value>) -> Vec<Mutant> {
    let list = longest_list(solution);
    let unchanged = || objective.cloned();
    vec![
        Mutant {
            name: OBJECTIVE_PERTURBED,
            outcome: perturbed_objective(objective).map(|perturbed| MutatedPayload {
                solution: solution.clone(),
                objective: Some(perturbed),
            }),
        },
        Mutant {
            name: ELEMENT_DROPPED,
            outcome: edit_list(solution, list, |items| {
                items.pop();
            })
            .map(|mutated| MutatedPayload {
                solution: mutated,
                objective: unchanged(),
            }),
        },
        Mutant {
            name: ELEMENT_DUPLICATED,
            outcome: edit_list(solution, list, |items| {
                if let Some(first) = items.first().cloned() {
                    items.push(first);
                }
            })
            .map(|mutated| MutatedPayload {
                solution: mutated,
                objective: unchanged(),
            }),
        },
        Mutant {
            name: NUMERIC_FIELD_PERTURBED,
            outcome: perturbed_field(solution, list).map(|mutated| MutatedPayload {
                solution: mutated,
                objective: unchanged(),
            }),
        },
    ]
}

/// What a mutant changed, in a few words: `objective: 41 -> 42`,
/// `loads: 40 -> 39 items`, `loads[0]: 7 -> 8`, `flags[0].on: true ->
/// false`; `None` when nothing differs.
pub fn changed(
    solution: &Map<String, Value>,
    objective: Option<&Value>,
    mutated: &Map<String, Value>,
    mutated_objective: Option<&Value>,
) -> Option<String> {
    if objective != mutated_objective {
        let show = |value: Option<&Value>| value.map_or("none".to_owned(), Value::to_string);
        return Some(format!(
            "objective: {} -> {}",
            show(objective),
            show(mutated_objective)
        ));
    }
    solution
        .iter()
        .find_map(|(key, value)| match mutated.get(key) {
            Some(after) if after == value => None,
            after => Some(difference(key.clone(), value, after?)),
        })
}

/// Where `before` and `after` first differ below `path`.
fn difference(path: String, before: &Value, after: &Value) -> String {
    match (before, after) {
        (Value::Array(a), Value::Array(b)) if a.len() != b.len() => {
            format!("{path}: {} -> {} items", a.len(), b.len())
        }
        (Value::Array(a), Value::Array(b)) => a
            .iter()
            .zip(b)
            .enumerate()
            .find(|(_, (x, y))| x != y)
            .map_or_else(
                || format!("{path}: changed"),
                |(i, (x, y))| difference(format!("{path}[{i}]"), x, y),
            ),
        (Value::Object(a), Value::Object(b)) => a
            .iter()
            .find(|(key, value)| b.get(*key) != Some(*value))
            .and_then(|(key, value)| Some(difference(format!("{path}.{key}"), value, b.get(key)?)))
            .unwrap_or_else(|| format!("{path}: changed")),
        _ => format!("{path}: {before} -> {after}"),
    }
}

/// The key of the longest non-empty top-level list; the first in key order
/// among equals.
fn longest_list(solution: &Map<String, Value>) -> Option<&str> {
    let mut best: Option<(&str, usize)> = None;
    for (key, value) in solution {
        if let Value::Array(items) = value
            && !items.is_empty()
            && best.is_none_or(|(_, length)| items.len() > length)
        {
            best = Some((key.as_str(), items.len()));
        }
    }
    best.map(|(key, _)| key)
}

/// Rule 1: the objective plus one, same kind of number.
fn perturbed_objective(objective: Option<&Value>) -> Result<Value, Skipped> {
    let number = match objective {
        None => return Err(Skipped::NoObjective),
        Some(Value::Null) => return Err(Skipped::NullObjective),
        Some(Value::Number(number)) => number,
        Some(other) => return Err(Skipped::ObjectiveNotANumber(kind(other))),
    };
    if let Some(bumped) = bumped_integer(number) {
        return Ok(Value::Number(bumped));
    }
    let value = number.as_f64().unwrap_or(f64::NAN);
    let plus_one = value + 1.0;
    match Number::from_f64(plus_one) {
        Some(bumped) if plus_one != value => Ok(Value::Number(bumped)),
        _ => Err(Skipped::ObjectiveTooLarge(number.clone())),
    }
}

/// Rules 2 and 3: a copy of `solution` with `edit` applied to the chosen list.
fn edit_list(
    solution: &Map<String, Value>,
    list: Option<&str>,
    edit: impl FnOnce(&mut Vec<Value>),
) -> Result<Map<String, Value>, Skipped> {
    let key = list.ok_or(Skipped::NoList)?;
    let mut mutated = solution.clone();
    match mutated.get_mut(key) {
        Some(Value::Array(items)) => {
            edit(items);
            Ok(mutated)
        }
        _ => Err(Skipped::NoList),
    }
}

/// Rule 4: bump an integer or, failing that, flip a boolean; see the module
/// docs for the order of places tried.
fn perturbed_field(
    solution: &Map<String, Value>,
    list: Option<&str>,
) -> Result<Map<String, Value>, Skipped> {
    let mut mutated = solution.clone();

    // The chosen list's first element: its first integer field, or itself.
    if let Some(first) = first_element_mut(&mut mutated, list) {
        let bumped = match first {
            Value::Object(fields) => fields.values_mut().any(bump_in_place),
            other => bump_in_place(other),
        };
        if bumped {
            return Ok(mutated);
        }
    }
    // The first top-level integer.
    if mutated.values_mut().any(bump_in_place) {
        return Ok(mutated);
    }
    // The first boolean: top-level values, then the first element.
    if mutated.values_mut().any(flip_in_place) {
        return Ok(mutated);
    }
    if let Some(first) = first_element_mut(&mut mutated, list) {
        let flipped = match first {
            Value::Object(fields) => fields.values_mut().any(flip_in_place),
            other => flip_in_place(other),
        };
        if flipped {
            return Ok(mutated);
        }
    }

    Err(match list {
        Some(key) => Skipped::NoFieldInList(key.to_owned()),
        None => Skipped::NoField,
    })
}

/// The first element of the top-level list under `key`.
fn first_element_mut<'a>(
    solution: &'a mut Map<String, Value>,
    key: Option<&str>,
) -> Option<&'a mut Value> {
    match solution.get_mut(key?) {
        Some(Value::Array(items)) => items.first_mut(),
        _ => None,
    }
}

/// `value` plus one when it is an integer; `value` minus one when plus one
/// would overflow.
fn bumped_integer(number: &Number) -> Option<Number> {
    if let Some(signed) = number.as_i64() {
        return signed
            .checked_add(1)
            .or_else(|| signed.checked_sub(1))
            .map(Number::from);
    }
    if let Some(unsigned) = number.as_u64() {
        return unsigned
            .checked_add(1)
            .or_else(|| unsigned.checked_sub(1))
            .map(Number::from);
    }
    None
}

/// Bumps `value` if it is an integer; whether it did.
fn bump_in_place(value: &mut Value) -> bool {
    if let Value::Number(number) = value
        && let Some(bumped) = bumped_integer(number)
    {
        *value = Value::Number(bumped);
        return true;
    }
    false
}

/// Flips `value` if it is a boolean; whether it did.
fn flip_in_place(value: &mut Value) -> bool {
    if let Value::Bool(flag) = value {
        *flag = !*flag;
        return true;
    }
    false
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `text` as a JSON string literal, for naming a key in a reason.
fn json_string(text: &str) -> String {
    Value::String(text.to_string()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            other => panic!("not an object: {other}"),
        }
    }

    fn run(solution: Value, objective: Option<Value>) -> Vec<Mutant> {
        mutations(&map(solution), objective.as_ref())
    }

    fn payload(mutant: &Mutant) -> &MutatedPayload {
        match &mutant.outcome {
            Ok(payload) => payload,
            Err(reason) => panic!("{} skipped: {reason}", mutant.name),
        }
    }

    fn skipped(mutant: &Mutant) -> String {
        match &mutant.outcome {
            Ok(payload) => panic!("{} not skipped: {payload:?}", mutant.name),
            Err(reason) => reason.to_string(),
        }
    }

    fn solution_of(mutant: &Mutant) -> Value {
        Value::Object(payload(mutant).solution.clone())
    }

    #[test]
    fn each_mutant_says_what_it_changed() {
        let solution = map(json!({"loads": [7, 9], "rows": [{"on": true, "w": 1}], "z": 3}));
        let objective = Some(json!(41));
        let said: Vec<Option<String>> = mutations(&solution, objective.as_ref())
            .iter()
            .map(|mutant| {
                let payload = payload(mutant);
                changed(
                    &solution,
                    objective.as_ref(),
                    &payload.solution,
                    payload.objective.as_ref(),
                )
            })
            .collect();
        assert_eq!(
            said,
            [
                Some("objective: 41 -> 42".to_owned()),
                Some("loads: 2 -> 1 items".to_owned()),
                Some("loads: 2 -> 3 items".to_owned()),
                Some("loads[0]: 7 -> 8".to_owned()),
            ]
        );
        let nested = map(json!({"rows": [{"on": true}, {"on": false}]}));
        let mut flipped = nested.clone();
        flipped["rows"][1]["on"] = json!(true);
        assert_eq!(
            changed(&nested, None, &flipped, None).as_deref(),
            Some("rows[1].on: false -> true")
        );
        assert_eq!(changed(&nested, None, &nested, None), None);
    }

    #[test]
    fn always_four_in_order() {
        for (solution, objective) in [
            (json!({}), None),
            (json!({"x": 1}), Some(json!(3))),
            (json!({"a": [1, 2], "b": true}), Some(json!(null))),
        ] {
            let names: Vec<_> = run(solution, objective).iter().map(|m| m.name).collect();
            assert_eq!(
                names,
                [
                    "objective_perturbed",
                    "element_dropped",
                    "element_duplicated",
                    "numeric_field_perturbed"
                ]
            );
        }
    }

    #[test]
    fn objective_perturbed_integer_and_float() {
        let cases: &[(Value, Value)] = &[
            (json!(41), json!(42)),
            (json!(-1), json!(0)),
            (json!(0), json!(1)),
            (json!(41.5), json!(42.5)),
            (json!(42.0), json!(43.0)),
            (json!(-0.5), json!(0.5)),
            (json!(i64::MAX), json!(i64::MAX - 1)),
            (json!(i64::MIN), json!(i64::MIN + 1)),
            (json!(u64::MAX), json!(u64::MAX - 1)),
            (json!(i64::MAX as u64 + 1), json!(i64::MAX as u64 + 2)),
        ];
        let solution = json!({"x": [1, 2]});
        for (objective, expected) in cases {
            let mutants = run(solution.clone(), Some(objective.clone()));
            let mutant = &mutants[0];
            assert_eq!(
                payload(mutant).objective.as_ref(),
                Some(expected),
                "objective {objective}"
            );
            assert_eq!(solution_of(mutant), solution, "solution unchanged");
        }
        // Integer stays integer, float stays float.
        let mutants = run(json!({}), Some(json!(7)));
        assert!(
            payload(&mutants[0])
                .objective
                .as_ref()
                .is_some_and(Value::is_i64)
        );
        let mutants = run(json!({}), Some(json!(7.0)));
        assert!(
            payload(&mutants[0])
                .objective
                .as_ref()
                .is_some_and(Value::is_f64)
        );
    }

    #[test]
    fn objective_perturbed_skips() {
        let cases: &[(Option<Value>, &str)] = &[
            (None, "no objective"),
            (Some(json!(null)), "objective is null"),
            (Some(json!("12")), "not a number (it is a string)"),
            (Some(json!(true)), "not a number (it is a boolean)"),
            (Some(json!([1])), "not a number (it is an array)"),
            (Some(json!({"v": 1})), "not a number (it is an object)"),
            (Some(json!(1e300)), "too large for adding 1 to change it"),
            (Some(json!(f64::MAX)), "too large"),
        ];
        for (objective, reason) in cases {
            let mutants = run(json!({"x": 1}), objective.clone());
            let got = skipped(&mutants[0]);
            assert!(got.contains(reason), "objective {objective:?}: {got:?}");
        }
    }

    #[test]
    fn objective_passes_through_for_the_other_three() {
        for objective in [None, Some(json!(null)), Some(json!(5)), Some(json!("odd"))] {
            let mutants = run(json!({"xs": [1, 2, 3]}), objective.clone());
            for mutant in &mutants[1..] {
                assert_eq!(payload(mutant).objective, objective, "{}", mutant.name);
            }
        }
    }

    #[test]
    fn list_rules_on_various_element_types() {
        // (solution, after element_dropped, after element_duplicated)
        let cases: &[(Value, Value, Value)] = &[
            (
                json!({"tasks": [{"id": 1}, {"id": 2}], "n": 2}),
                json!({"tasks": [{"id": 1}], "n": 2}),
                json!({"tasks": [{"id": 1}, {"id": 2}, {"id": 1}], "n": 2}),
            ),
            (
                json!({"xs": [3, 1, 2]}),
                json!({"xs": [3, 1]}),
                json!({"xs": [3, 1, 2, 3]}),
            ),
            (
                json!({"names": ["a", "b"]}),
                json!({"names": ["a"]}),
                json!({"names": ["a", "b", "a"]}),
            ),
            (
                json!({"grid": [[1, 2], [3, 4], [5, 6]]}),
                json!({"grid": [[1, 2], [3, 4]]}),
                json!({"grid": [[1, 2], [3, 4], [5, 6], [1, 2]]}),
            ),
            (
                json!({"one": [null]}),
                json!({"one": []}),
                json!({"one": [null, null]}),
            ),
        ];
        for (solution, dropped, duplicated) in cases {
            let mutants = run(solution.clone(), None);
            assert_eq!(
                &solution_of(&mutants[1]),
                dropped,
                "dropped from {solution}"
            );
            assert_eq!(
                &solution_of(&mutants[2]),
                duplicated,
                "duplicated in {solution}"
            );
        }
    }

    #[test]
    fn longest_list_wins_and_ties_go_to_the_first_key() {
        let mutants = run(json!({"a": [1], "b": [1, 2, 3], "c": [1, 2]}), None);
        assert_eq!(
            solution_of(&mutants[1]),
            json!({"a": [1], "b": [1, 2], "c": [1, 2]})
        );
        // Tie between "m" and "z": "m" sorts first, whatever the insertion order.
        let mut solution = Map::new();
        solution.insert("z".to_string(), json!([1, 2]));
        solution.insert("m".to_string(), json!([3, 4]));
        let mutants = mutations(&solution, None);
        assert_eq!(solution_of(&mutants[1]), json!({"m": [3], "z": [1, 2]}));
        assert_eq!(
            solution_of(&mutants[2]),
            json!({"m": [3, 4, 3], "z": [1, 2]})
        );
        assert_eq!(solution_of(&mutants[3]), json!({"m": [4, 4], "z": [1, 2]}));
        // Empty lists never count, even if first in key order.
        let mutants = run(json!({"a": [], "b": [7]}), None);
        assert_eq!(solution_of(&mutants[1]), json!({"a": [], "b": []}));
    }

    #[test]
    fn list_rules_only_look_at_top_level_lists() {
        for solution in [
            json!({}),
            json!({"x": 1, "y": "s"}),
            json!({"empty": []}),
            json!({"nested": {"xs": [1, 2, 3]}}),
        ] {
            let mutants = run(solution.clone(), None);
            for mutant in &mutants[1..3] {
                assert_eq!(
                    skipped(mutant),
                    "no top-level value of the solution is a non-empty list",
                    "{} on {solution}",
                    mutant.name
                );
            }
        }
    }

    #[test]
    fn numeric_field_perturbed_rules() {
        // (solution, expected after numeric_field_perturbed)
        let cases: &[(Value, Value)] = &[
            // First integer field of the first element, in key order.
            (
                json!({"tasks": [{"name": "t", "start": 3, "end": 5}, {"start": 9}], "total": 1}),
                json!({"tasks": [{"name": "t", "start": 3, "end": 6}, {"start": 9}], "total": 1}),
            ),
            // The first element itself is an integer.
            (json!({"xs": [4, 5], "n": 0}), json!({"xs": [5, 5], "n": 0})),
            // Floats and nested values in the element do not count; fall back.
            (
                json!({"tasks": [{"w": 1.5, "sub": {"k": 1}}], "b": "s", "count": 7}),
                json!({"tasks": [{"w": 1.5, "sub": {"k": 1}}], "b": "s", "count": 8}),
            ),
            // Strings in the list: fall back to the first top-level integer.
            (
                json!({"a": 10, "names": ["x"], "z": 20}),
                json!({"a": 11, "names": ["x"], "z": 20}),
            ),
            // Nested lists: the first element is a list, not an integer.
            (
                json!({"grid": [[1]], "n": -3}),
                json!({"grid": [[1]], "n": -2}),
            ),
            // No list at all.
            (json!({"x": 1, "y": 2}), json!({"x": 2, "y": 2})),
            // Flat boolean assignment.
            (
                json!({"x1": true, "x2": false}),
                json!({"x1": false, "x2": false}),
            ),
            // Booleans: top-level first, even when the list element has one.
            (
                json!({"flags": [{"on": true}], "z": false}),
                json!({"flags": [{"on": true}], "z": true}),
            ),
            // Then the first element's fields.
            (
                json!({"flags": [{"name": "a", "on": true}, {"on": false}]}),
                json!({"flags": [{"name": "a", "on": false}, {"on": false}]}),
            ),
            // Or the first element itself.
            (
                json!({"bits": [false, true]}),
                json!({"bits": [true, true]}),
            ),
            // An integer anywhere described beats any boolean.
            (json!({"a": true, "b": 2}), json!({"a": true, "b": 3})),
            // Overflow: subtract instead.
            (json!({"big": i64::MAX}), json!({"big": i64::MAX - 1})),
            (json!({"xs": [u64::MAX]}), json!({"xs": [u64::MAX - 1]})),
            (json!({"small": i64::MIN}), json!({"small": i64::MIN + 1})),
        ];
        for (solution, expected) in cases {
            let mutants = run(solution.clone(), Some(json!(1)));
            assert_eq!(&solution_of(&mutants[3]), expected, "from {solution}");
        }
    }

    #[test]
    fn numeric_field_perturbed_skips() {
        let mutants = run(json!({"names": ["a", "b"], "w": 1.5}), None);
        assert_eq!(
            skipped(&mutants[3]),
            "no integer or boolean among the solution's top-level values or in the first element of its longest list \"names\""
        );
        let mutants = run(json!({"w": 1.5, "s": "x", "o": {"deep": 1}}), None);
        assert_eq!(
            skipped(&mutants[3]),
            "no integer or boolean among the solution's top-level values, and no top-level list"
        );
        // Integers deeper than the described levels are not used.
        let mutants = run(json!({"rows": [[{"v": 1}]], "o": {"v": 2}}), None);
        assert!(skipped(&mutants[3]).contains("\"rows\""));
    }

    #[test]
    fn empty_solution() {
        let mutants = run(json!({}), Some(json!(10)));
        assert_eq!(payload(&mutants[0]).objective, Some(json!(11)));
        assert!(payload(&mutants[0]).solution.is_empty());
        for mutant in &mutants[1..] {
            skipped(mutant);
        }
        let mutants = run(json!({}), None);
        for mutant in &mutants {
            skipped(mutant);
        }
    }

    #[test]
    fn input_is_not_modified_and_output_is_deterministic() {
        let solution = map(json!({"tasks": [{"s": 1}, {"s": 2}], "x": true}));
        let before = solution.clone();
        let first = mutations(&solution, Some(&json!(5)));
        let second = mutations(&solution, Some(&json!(5)));
        assert_eq!(first, second);
        assert_eq!(solution, before);
    }

    #[test]
    fn deeply_nested_input_is_inspected_only_at_the_top() {
        // Deeper than serde_json's parser allows; only the top levels are
        // inspected (copies are serde_json's own clone).
        let mut deep = json!(1);
        for _ in 0..1_000 {
            deep = Value::Array(vec![deep]);
        }
        let mut solution = Map::new();
        solution.insert("deep".to_string(), deep);
        let mutants = mutations(&solution, None);
        assert_eq!(mutants.len(), 4);
        assert_eq!(payload(&mutants[1]).solution["deep"], json!([]));
        assert!(skipped(&mutants[3]).contains("\"deep\""));
    }
}
