//! Proptest strategies shared by the parsers' property tests (test builds
//! only): JSON values without floats, so they survive a trip through text
//! unchanged, and text that is certainly not one JSON object.

use proptest::prelude::*;
use serde_json::{Map, Value};

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
