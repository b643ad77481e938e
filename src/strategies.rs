//! Proptest strategies shared by the parsers' property tests (test builds
//! only): JSON values without floats, so they survive a trip through text
//! unchanged, and text that is certainly not one JSON object; and
//! [`cases`], the one way a property sets how many cases it runs.

use proptest::prelude::*;
use serde_json::{Map, Value};

/// A property's config running `cases` cases when `PROPTEST_CASES` is not
/// set. proptest reads `PROPTEST_CASES` into its default (256) but an
/// explicit count ignores it, so the count is scaled instead: every
/// property runs `cases × PROPTEST_CASES / 256` (at least one), and
/// `PROPTEST_CASES=25600` runs each a hundred times as long.
pub fn cases(cases: u32) -> ProptestConfig {
    let default = ProptestConfig::default();
    let scaled = u64::from(cases) * u64::from(default.cases) / 256;
    ProptestConfig {
        cases: u32::try_from(scaled.max(1)).unwrap_or(u32::MAX),
        ..default
    }
}

/// An object key: short, lowercase, never one of the `_`-prefixed keys
/// MiniZinc reserves.
pub fn key() -> impl Strategy<Value = String> {
    "[a-z]{1,6}"
}

/// A JSON value at most `depth` levels deep: null, booleans, integers,
/// arbitrary strings (quotes, escapes, NUL, non-ASCII), arrays, objects.
pub fn json_value(depth: u32) -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<String>().prop_map(Value::String),
        prop_oneof![
            Just("NaN"),
            Just("Infinity"),
            Just("-Infinity"),
            Just("\u{0}solvergate-non-finite:0:NaN"),
            Just("INCORRECT"),
        ]
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(depth, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(key(), inner, 0..6)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

/// An object of `json_value`s.
pub fn json_object(depth: u32) -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::btree_map(key(), json_value(depth), 0..6)
        .prop_map(|map| map.into_iter().collect())
}

/// One line of text that no JSON parser takes for an object: log output,
/// a bare JSON scalar or array, or anything not starting with `{`.
pub fn not_an_object_line() -> impl Strategy<Value = String> {
    prop_oneof![
        "[^{\n\r]*".prop_filter("not an object", |line| !line.trim_start().starts_with('{')),
        json_value(2)
            .prop_filter("not an object", |value| !value.is_object())
            .prop_map(|value| value.to_string()),
    ]
}

/// JSON nested `depth` deep, as one line: arrays and objects alternating,
/// far beyond serde_json's recursion limit for large `depth`.
pub fn deeply_nested(depth: usize) -> String {
    let mut text = String::with_capacity(depth * 6);
    for level in 0..depth {
        text.push_str(if level % 2 == 0 { "{\"a\":" } else { "[" });
    }
    text.push('1');
    for level in (0..depth).rev() {
        text.push(if level % 2 == 0 { '}' } else { ']' });
    }
    text
}
