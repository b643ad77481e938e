//! JSON text to a `serde_json::Value`, refusing an object that names a key
//! twice at any depth.
//!
//! serde_json keeps the last of duplicate keys, so `{"status": "rejected",
//! "status": "accepted"}` would read as accepted: a line that means two
//! things to two readers. A checker verdict and a script envelope are read
//! through [`parse`], which builds the same `Value` serde_json would through
//! a `DeserializeSeed` that fails on the second occurrence of a key. Depth,
//! numbers and strings are serde_json's own (its recursion limit stands).
//!
//! What it does not do: parse JSON itself. serde_json's deserializer does;
//! this module only assembles the values.

use std::cell::RefCell;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// Why a text is not strict JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Not JSON at all (serde_json's message).
    Malformed(String),
    /// An object names a key twice: its path, e.g. `status` or
    /// `solution["x"][2]["y"]`.
    Duplicate(String),
}

/// Parses `text` as one JSON value with no duplicate key anywhere.
pub(crate) fn parse(text: &str) -> Result<Value, Refusal> {
    let duplicate = RefCell::new(None);
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let seed = Strict {
        path: String::new(),
        duplicate: &duplicate,
    };
    let parsed = seed
        .deserialize(&mut deserializer)
        .and_then(|value| deserializer.end().map(|()| value));
    match (parsed, duplicate.into_inner()) {
        (_, Some(path)) => Err(Refusal::Duplicate(path)),
        (Ok(value), None) => Ok(value),
        (Err(error), None) => Err(Refusal::Malformed(error.to_string())),
    }
}

/// One value at `path`; the first duplicate found is written to `duplicate`.
struct Strict<'a> {
    path: String,
    duplicate: &'a RefCell<Option<String>>,
}

impl<'a> Strict<'a> {
    fn child(&self, step: String) -> Strict<'a> {
        Strict {
            path: step,
            duplicate: self.duplicate,
        }
    }

    /// The path of `key` inside this object: `key` at the top, else
    /// `path["key"]`.
    fn key_path(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_owned()
        } else {
            format!("{}[{}]", self.path, Value::String(key.to_owned()))
        }
    }
}

impl<'de> DeserializeSeed<'de> for Strict<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict<'_> {
    type Value = Value;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Value, E> {
        Ok(Value::from(value))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Value, E> {
        Ok(Value::from(value))
    }

    fn visit_f64<E>(self, value: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(value).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_owned()))
    }

    fn visit_string<E>(self, value: String) -> Result<Value, E> {
        Ok(Value::String(value))
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        loop {
            let step = self.child(format!("{}[{}]", self.path, items.len()));
            match seq.next_element_seed(step)? {
                Some(item) => items.push(item),
                None => return Ok(Value::Array(items)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let path = self.key_path(&key);
            if object.contains_key(&key) {
                *self.duplicate.borrow_mut() = Some(path);
                return Err(de::Error::custom("duplicate key"));
            }
            let value = map.next_value_seed(self.child(path))?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_values_as_serde_json() {
        for text in [
            r#"{"a": [1, -2, 3.5, 1e300, null, true, "x\u00e9"], "b": {"c": {}}}"#,
            "[]",
            "12345678901234567890",
            r#""just a string""#,
            " {\"k\": -0.0} ",
        ] {
            let expected: Value = serde_json::from_str(text).unwrap();
            assert_eq!(parse(text), Ok(expected), "{text}");
        }
    }

    #[test]
    fn a_duplicate_key_at_any_depth_is_named_by_its_path() {
        let cases = [
            (r#"{"status": "rejected", "status": "accepted"}"#, "status"),
            (r#"{"solution": {"x": 1, "x": 2}}"#, r#"solution["x"]"#),
            (
                r#"{"a": [0, {"b": [{"c": 1, "d": 2, "c": 3}]}]}"#,
                r#"a[1]["b"][0]["c"]"#,
            ),
            // The same key after an escape is still the same key.
            (r#"{"status": 1, "st\u0061tus": 2}"#, "status"),
        ];
        for (text, path) in cases {
            assert_eq!(
                parse(text),
                Err(Refusal::Duplicate(path.to_owned())),
                "{text}"
            );
        }
        // The same key in two different objects is fine.
        assert!(parse(r#"{"a": {"x": 1}, "b": {"x": 1}}"#).is_ok());
    }

    #[test]
    fn malformed_text_and_deep_nesting_are_refused_not_a_crash() {
        for text in ["", "{", "{\"a\": 1} trailing", "{a: 1}", "[1,]"] {
            assert!(matches!(parse(text), Err(Refusal::Malformed(_))), "{text}");
        }
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(matches!(parse(&deep), Err(Refusal::Malformed(_))));
    }
}
