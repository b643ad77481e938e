//! The tool metadata clients see in `tools/list`, finished in one place:
//! every tool's title and behaviour annotations (from [`super::titles`]), input schemas made
//! portable, and output schemas made portable and lean.
//!
//! schemars writes what serde means; some of it is legal JSON Schema that
//! strict validators or single-type client dialects refuse: `format`
//! values outside the standard (`uint64`, `int32`, `double`...), `type`
//! arrays for `Option` fields, `true` or `{}` for a `serde_json::Value`.
//! [`portable`] rewrites those into equivalent standard forms (integer
//! bounds, `anyOf` with a `null` branch, an explicit any-JSON union) and
//! closes every input object with `additionalProperties: false`, as the
//! argument parser already does. An input schema keeps a `$defs` entry
//! only for a shape it uses more than once (one used once is written where
//! it is used) and no `default` that leaving the field out implies, and an
//! argument a tool shares with a sibling listed in [`DESCRIBED_IN`] (the
//! files variant of an inline tool, a job of a run) is described on the
//! sibling only.
//!
//! tools/list sits whole in a client model's context on every turn and its
//! size is bounded by a test: every byte here is paid up to forty times
//! over, so a rewrite may shorten what is said, never what is accepted: an
//! input schema validates exactly what it did. [`lean_output`] then inlines each
//! output schema's definitions, drops its prose (the tool description and
//! the field names carry it) and keeps nested structure only to a fixed
//! depth, below which a value is described by its type alone — still
//! true of every result, at a fraction of the size.

use std::collections::HashMap;
use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::JsonObject;
use serde_json::{Map, Value, json};

use super::titles::{TOOLS, annotations};

/// How deep an output schema keeps its structure: the result's own fields
/// (with their types, enums, unions and array item types); an object
/// inside them is described as an object.
const OUTPUT_DEPTH: usize = 1;

/// Tools whose arguments are, in part, another tool's: an argument with
/// the same name and schema as the other tool's, and its description or
/// none, is described on the other tool only, and the first tool's
/// description says so. The other tool describes its own arguments (it
/// is never a first tool here), and it is in every toolset the first is
/// in; where it is not listed, nothing is taken out.
const DESCRIBED_IN: &[(&str, &str)] = &[
    ("check_minizinc_files", "check_minizinc_model"),
    ("inspect_minizinc_model", "check_minizinc_model"),
    ("inspect_minizinc_files", "check_minizinc_model"),
    ("solve_minizinc_files", "solve_minizinc_model"),
    ("submit_solve_job", "solve_minizinc_model"),
    ("submit_portfolio_job", "solve_minizinc_model"),
    ("get_portfolio_job", "get_solve_job"),
    ("find_unsat_core_files", "find_unsat_core"),
    ("run_cpsat_python_file", "run_cpsat_python"),
    ("run_cpsat_python_file_checked", "run_cpsat_python"),
    ("submit_cpsat_python_job", "run_cpsat_python"),
    ("submit_cpsat_python_file_job", "run_cpsat_python"),
    ("run_cpsat_python_experiment", "run_cpsat_python"),
    ("save_verified_cpsat_python", "run_cpsat_python"),
    ("save_load_plan", "plan_load"),
    ("optimize_expression", "correct_values"),
];

/// Sets every tool's title and annotations and rewrites its schemas.
pub fn finish<S>(router: &mut ToolRouter<S>) {
    for route in router.map.values_mut() {
        let tool = &mut route.attr;
        if let Some((_, title, effect)) = TOOLS.iter().find(|(name, ..)| *name == tool.name) {
            tool.title = Some((*title).to_owned());
            tool.annotations = Some(annotations(*effect));
        }
        tool.input_schema = Arc::new(input(&tool.input_schema));
        if let Some(output) = &tool.output_schema {
            tool.output_schema = Some(Arc::new(lean_output(output)));
        }
    }
    let described: HashMap<String, Arc<JsonObject>> = router
        .map
        .values()
        .map(|route| (route.attr.name.to_string(), route.attr.input_schema.clone()))
        .collect();
    for (name, source) in DESCRIBED_IN {
        let (Some(theirs), Some(route)) = (described.get(*source), router.map.get_mut(*name))
        else {
            continue;
        };
        let tool = &mut route.attr;
        let mut ours = tool.input_schema.as_ref().clone();
        if shared_arguments_out(&mut ours, theirs) {
            tool.input_schema = Arc::new(ours);
            let said = tool.description.as_deref().unwrap_or_default();
            tool.description = Some(format!("{said} See {source} for shared arguments.").into());
        }
    }
}

/// Takes the descriptions out of each argument of `ours` that `theirs`
/// has with the same schema and describes (each description ours has,
/// theirs has in the same place); whether there was one. An argument
/// with a `$ref` is left alone: its definition is the schema's own.
fn shared_arguments_out(ours: &mut JsonObject, theirs: &JsonObject) -> bool {
    let (Some(Value::Object(ours)), Some(Value::Object(theirs))) =
        (ours.get_mut("properties"), theirs.get("properties"))
    else {
        return false;
    };
    let mut shared = false;
    for (name, argument) in ours.iter_mut() {
        let Some(their) = theirs.get(name) else {
            continue;
        };
        if has_ref(argument) || has_ref(their) {
            continue;
        }
        let bare = without_descriptions(argument);
        let their_bare = without_descriptions(their);
        let described_there = their_bare != *their;
        let same = bare == their_bare && said_there(argument, their);
        if same && described_there {
            *argument = bare;
            shared = true;
        }
    }
    shared
}

/// Whether every description in `ours` is also in `theirs`, in the same
/// place (the two schemas being the same but for descriptions).
fn said_there(ours: &Value, theirs: &Value) -> bool {
    let (Value::Object(ours), Value::Object(theirs)) = (ours, theirs) else {
        return true;
    };
    if ours
        .get("description")
        .is_some_and(|said| theirs.get("description") != Some(said))
    {
        return false;
    }
    let pairs = |key: &str| -> Vec<(&Value, &Value)> {
        match (ours.get(key), theirs.get(key)) {
            (Some(Value::Object(mine)), Some(Value::Object(other))) if MAP.contains(&key) => mine
                .iter()
                .filter_map(|(name, child)| other.get(name).map(|twin| (child, twin)))
                .collect(),
            (Some(Value::Array(mine)), Some(Value::Array(other))) if LIST.contains(&key) => {
                mine.iter().zip(other).collect()
            }
            (Some(mine), Some(other)) if ONE.contains(&key) => vec![(mine, other)],
            _ => Vec::new(),
        }
    };
    MAP.iter()
        .chain(LIST)
        .chain(ONE)
        .flat_map(|key| pairs(key))
        .all(|(mine, other)| said_there(mine, other))
}

/// A copy of a schema without a `description` at any level.
fn without_descriptions(node: &Value) -> Value {
    fn strip(node: &mut Value) {
        if let Value::Object(object) = node {
            object.remove("description");
            each_child(object, strip);
        }
    }
    let mut copy = node.clone();
    strip(&mut copy);
    copy
}

/// Whether a `$ref` appears anywhere in `node`.
fn has_ref(node: &Value) -> bool {
    match node {
        Value::Object(object) => object.contains_key("$ref") || object.values().any(has_ref),
        Value::Array(items) => items.iter().any(has_ref),
        _ => false,
    }
}

/// An input schema made portable, every object closed.
pub fn input(schema: &JsonObject) -> JsonObject {
    let mut value = Value::Object(schema.clone());
    portable(&mut value, true);
    optional_not_null(&mut value);
    variant_docs_out(&mut value);
    if let Value::Object(object) = &mut value {
        // MCP's default dialect is 2020-12 already.
        object.remove("$schema");
        // A definition's own doc comment describes the Rust type; the field
        // that refers to it carries the description a client needs.
        if let Some(Value::Object(defs)) = object.get_mut("$defs") {
            for def in defs.values_mut() {
                if let Value::Object(def) = def {
                    def.remove("description");
                }
            }
        }
    }
    inline_single_use(&mut value);
    implied_defaults_out(&mut value);
    into_object(value)
}

/// A definition referred to once is written where it is used: a `$defs`
/// entry and its `$ref` cost its name twice and a path, and say nothing a
/// reader of the one place needs. Definitions used more than once (or by
/// themselves) stay shared.
fn inline_single_use(root: &mut Value) {
    let Some(Value::Object(mut defs)) = root.as_object_mut().and_then(|root| root.remove("$defs"))
    else {
        return;
    };
    let mut uses = HashMap::new();
    count_refs(root, &mut uses);
    for def in defs.values() {
        count_refs(def, &mut uses);
    }
    let once: Map<String, Value> = defs
        .iter()
        .filter(|(name, _)| uses.get(name.as_str()) == Some(&1))
        .map(|(name, def)| (name.clone(), def.clone()))
        .collect();
    defs.retain(|name, _| !once.contains_key(name));
    inline_refs(root, &once, 0);
    for def in defs.values_mut() {
        inline_refs(def, &once, 0);
    }
    if let Value::Object(object) = root
        && !defs.is_empty()
    {
        object.insert("$defs".to_owned(), Value::Object(defs));
    }
}

/// The name a `$ref` to a local definition points at.
fn local_ref(object: &Map<String, Value>) -> Option<&str> {
    object
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|path| path.strip_prefix("#/$defs/"))
}

/// Whether a `$ref` can be replaced by its definition: nothing but
/// annotations beside it (a `$ref` with assertions beside it means both
/// hold, which merged keywords could not always say).
fn replaceable(object: &Map<String, Value>) -> bool {
    object.keys().all(|key| key == "$ref" || is_annotation(key))
}

/// Counts, per definition name, the `$ref`s to it under `node`; a `$ref`
/// that is not [`replaceable`] counts twice, so its definition stays.
fn count_refs(node: &Value, uses: &mut HashMap<String, usize>) {
    match node {
        Value::Object(object) => {
            if let Some(name) = local_ref(object) {
                *uses.entry(name.to_owned()).or_default() +=
                    if replaceable(object) { 1 } else { 2 };
            }
            object.values().for_each(|child| count_refs(child, uses));
        }
        Value::Array(items) => items.iter().for_each(|child| count_refs(child, uses)),
        _ => {}
    }
}

/// Replaces each `$ref` to one of `once` by the definition, with the
/// annotations beside the `$ref` (the field's own, such as its
/// description, win over the definition's); `depth` bounds the walk.
fn inline_refs(node: &mut Value, once: &Map<String, Value>, depth: usize) {
    if depth > 64 {
        return;
    }
    match node {
        Value::Object(object) => {
            let target = local_ref(object).and_then(|name| once.get(name));
            if let Some(Value::Object(def)) = target {
                let mut merged = def.clone();
                object.remove("$ref");
                merged.append(object);
                *object = merged;
            }
            object
                .values_mut()
                .for_each(|child| inline_refs(child, once, depth + 1));
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|child| inline_refs(child, once, depth + 1)),
        _ => {}
    }
}

/// Drops a `default` that says no more than leaving the field out does:
/// `false` on a flag (left out, it is off), and an object default each of
/// whose entries is `null` or the default its own field declares.
fn implied_defaults_out(node: &mut Value) {
    let Value::Object(object) = node else {
        return;
    };
    let implied = match object.get("default") {
        Some(Value::Bool(false)) => object.get("type").and_then(Value::as_str) == Some("boolean"),
        Some(Value::Object(entries)) => {
            let fields = object.get("properties").and_then(Value::as_object);
            entries.iter().all(|(name, value)| {
                value.is_null()
                    || fields
                        .and_then(|fields| fields.get(name))
                        .and_then(|field| field.get("default"))
                        == Some(value)
            })
        }
        _ => false,
    };
    if implied {
        object.remove("default");
    }
    each_child(object, implied_defaults_out);
}

/// A Rust enum's variant docs describe the code, as a definition's own doc
/// does; the field that takes the enum carries what a client needs. So an
/// enum of documented unit variants (schemars' `oneOf` of `const`s) is
/// written as the plain `enum` it means, and a union's branches lose their
/// descriptions: the schema accepts exactly what it did, in the form it
/// had before the variants were documented.
fn variant_docs_out(node: &mut Value) {
    let Value::Object(object) = node else {
        return;
    };
    if let Some(Value::Object(compact)) = const_choices(object) {
        object.remove("oneOf");
        object.extend(compact);
    }
    for key in LIST {
        if let Some(Value::Array(branches)) = object.get_mut(*key) {
            for branch in branches.iter_mut() {
                if let Value::Object(branch) = branch {
                    branch.remove("description");
                }
            }
        }
    }
    each_child(object, variant_docs_out);
}

/// An optional input field (`Option<T>` with a serde default) is written
/// as plain `T`: leaving it out means the same as `null`, and a `null`
/// branch is what single-type client dialects cannot express. The schema
/// then accepts a subset of what the parser does, never more.
fn optional_not_null(node: &mut Value) {
    let Value::Object(object) = node else {
        return;
    };
    let required: Vec<String> = object
        .get("required")
        .and_then(Value::as_array)
        .map(|names| {
            names
                .iter()
                .filter_map(|name| name.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    if let Some(Value::Object(properties)) = object.get_mut("properties") {
        for (name, property) in properties.iter_mut() {
            if !required.contains(name) {
                drop_null_branch(property);
            }
        }
    }
    each_child(object, optional_not_null);
}

/// Calls `visit` on every subschema directly under `object`: the values
/// of the [`MAP`] keywords, then the [`ONE`] keywords, then the items of
/// the [`LIST`] keywords.
fn each_child(object: &mut Map<String, Value>, mut visit: impl FnMut(&mut Value)) {
    for key in MAP {
        if let Some(Value::Object(children)) = object.get_mut(*key) {
            children.values_mut().for_each(&mut visit);
        }
    }
    for key in ONE {
        if let Some(child) = object.get_mut(*key) {
            visit(child);
        }
    }
    for key in LIST {
        if let Some(Value::Array(children)) = object.get_mut(*key) {
            children.iter_mut().for_each(&mut visit);
        }
    }
}

/// `{"anyOf": [X, {"type": "null"}], ...notes}` → `{...X, ...notes}`.
fn drop_null_branch(property: &mut Value) {
    let Some(object) = property.as_object_mut() else {
        return;
    };
    let Some(Value::Array(branches)) = object.get("anyOf") else {
        return;
    };
    let null = json!({"type": "null"});
    let rest: Vec<&Value> = branches.iter().filter(|branch| **branch != null).collect();
    if rest.len() != 1 || rest.len() == branches.len() {
        return;
    }
    let Some(Value::Object(kept)) = rest.first().map(|kept| (*kept).clone()) else {
        return;
    };
    object.remove("anyOf");
    for (key, value) in kept {
        object.entry(key).or_insert(value);
    }
}

/// An output schema made portable, inlined, without prose, depth-bounded.
pub fn lean_output(schema: &JsonObject) -> JsonObject {
    let mut value = Value::Object(schema.clone());
    portable(&mut value, false);
    let defs = value
        .get("$defs")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut lean = slim(&value, &defs, 0, 0);
    if let Value::Object(object) = &mut lean {
        object.remove("$defs");
        object.remove("$schema");
    }
    // The one prose an output schema keeps: what a solution value may be
    // in place of itself (`bounded`).
    if let Some(Value::Object(solution)) = lean.pointer_mut("/properties/solution") {
        solution.insert("description".into(), Value::String(SOLUTION_MARKER.into()));
    }
    into_object(lean)
}

/// How a `solution` reads past the response bound.
const SOLUTION_MARKER: &str =
    "Past 128 KiB, a large value is {whole: false, length, bytes, uri}: uri reads it whole.";

fn into_object(value: Value) -> JsonObject {
    match value {
        Value::Object(object) => object,
        _ => JsonObject::new(),
    }
}

/// Any JSON value, spelled so that every branch names one type.
fn any_json() -> Value {
    json!({"anyOf": [
        {"type": "object"}, {"type": "array"}, {"type": "string"},
        {"type": "number"}, {"type": "boolean"}, {"type": "null"}
    ]})
}

/// Keywords that hold one subschema.
const ONE: &[&str] = &[
    "items",
    "additionalProperties",
    "not",
    "contains",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
    "if",
    "then",
    "else",
];
/// Keywords that hold a list of subschemas.
const LIST: &[&str] = &["anyOf", "oneOf", "allOf", "prefixItems"];
/// Keywords that hold a map of subschemas.
const MAP: &[&str] = &["properties", "$defs", "patternProperties"];

/// Rewrites a schema in place into the portable forms (see the module
/// doc); `close` adds `additionalProperties: false` to objects that lack it.
fn portable(node: &mut Value, close: bool) {
    let Value::Object(object) = node else {
        return;
    };
    integer_bounds(object);
    // Doc comments wrap at 80 columns; a wrapped line is one sentence.
    if let Some(Value::String(text)) = object.get_mut("description") {
        *text = text.replace('\n', " ");
    }
    if object.get("default") == Some(&Value::Null) {
        object.remove("default");
    }
    if object
        .get("format")
        .and_then(Value::as_str)
        .is_some_and(|format| matches!(format, "double" | "float"))
    {
        object.remove("format");
    }
    // `additionalProperties: true` is what leaving it out means, unless
    // `properties` or `patternProperties` would make it the one keyword
    // left to stop `close` from closing the object.
    if object.get("additionalProperties") == Some(&Value::Bool(true))
        && !object.contains_key("properties")
        && !object.contains_key("patternProperties")
    {
        object.remove("additionalProperties");
    }
    if close
        && object.get("type").and_then(Value::as_str) == Some("object")
        && object.contains_key("properties")
        && !object.contains_key("additionalProperties")
    {
        object.insert("additionalProperties".to_owned(), Value::Bool(false));
    }
    for key in ONE {
        if let Some(child) = object.get_mut(*key) {
            match child {
                // `true` under additionalProperties is a keyword value, not
                // a schema position the portability rules object to.
                Value::Bool(true) if *key != "additionalProperties" => *child = any_json(),
                Value::Object(inner) if inner.is_empty() => *child = any_json(),
                _ => portable(child, close),
            }
        }
    }
    for key in LIST {
        if let Some(Value::Array(children)) = object.get_mut(*key) {
            for child in children {
                portable(child, close);
            }
        }
    }
    for key in MAP {
        if let Some(Value::Object(children)) = object.get_mut(*key) {
            for child in children.values_mut() {
                if child == &Value::Bool(true)
                    || child.as_object().is_some_and(|inner| {
                        inner.is_empty() || inner.keys().all(|key| is_annotation(key))
                    })
                {
                    let mut any = any_json();
                    if let (Value::Object(any), Value::Object(notes)) = (&mut any, &*child) {
                        any.extend(notes.clone());
                    }
                    *child = any;
                } else {
                    portable(child, close);
                }
            }
        }
    }
    split_type_union(object);
}

fn is_annotation(key: &str) -> bool {
    matches!(
        key,
        "description" | "title" | "default" | "examples" | "deprecated" | "readOnly" | "writeOnly"
    )
}

/// Replaces a non-standard integer `format` with the bounds it means.
fn integer_bounds(object: &mut Map<String, Value>) {
    let Some(format) = object.get("format").and_then(Value::as_str) else {
        return;
    };
    let (low, high): (Value, Value) = match format {
        "uint8" => (0.into(), u8::MAX.into()),
        "uint16" => (0.into(), u16::MAX.into()),
        // 64-bit bounds lie beyond what a JavaScript client can represent
        // (2^53), and a 32-bit one only says which Rust type holds the
        // value (the argument parser refuses what does not fit): the type
        // already says integer, so only the sign is kept. tools/list is
        // bounded, and `u32::MAX` repeated on every such field is bytes
        // no client acts on.
        "uint32" | "uint" | "uint64" | "uint128" | "usize" => {
            object.remove("format");
            object.entry("minimum").or_insert(0.into());
            return;
        }
        "int64" | "int128" | "isize" => {
            object.remove("format");
            return;
        }
        "int8" => (i8::MIN.into(), i8::MAX.into()),
        "int16" => (i16::MIN.into(), i16::MAX.into()),
        "int32" | "int" => (i32::MIN.into(), i32::MAX.into()),
        _ => return,
    };
    object.remove("format");
    object.entry("minimum").or_insert(low);
    object.entry("maximum").or_insert(high);
}

/// The keywords that only constrain values of one type.
fn keyword_type(key: &str) -> Option<&'static str> {
    Some(match key {
        "minLength" | "maxLength" | "pattern" | "format" => "string",
        "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" | "multipleOf" => "number",
        "items" | "prefixItems" | "minItems" | "maxItems" | "uniqueItems" | "contains" => "array",
        "properties"
        | "required"
        | "additionalProperties"
        | "patternProperties"
        | "propertyNames"
        | "minProperties"
        | "maxProperties" => "object",
        _ => return None,
    })
}

/// `{"type": ["T", "null"], ...}` becomes `{"anyOf": [{"type": "T", ...},
/// {"type": "null"}]}`: each branch one type, carrying the keywords that
/// constrain that type; annotations and `enum`/`const` stay outside.
fn split_type_union(object: &mut Map<String, Value>) {
    let Some(Value::Array(types)) = object.get("type") else {
        return;
    };
    let types: Vec<String> = types
        .iter()
        .filter_map(|kind| kind.as_str().map(str::to_owned))
        .collect();
    object.remove("type");
    let typed: Vec<String> = object
        .keys()
        .filter(|key| keyword_type(key).is_some())
        .cloned()
        .collect();
    let mut moved = Map::new();
    for key in typed {
        if let Some(value) = object.remove(&key) {
            moved.insert(key, value);
        }
    }
    let branches: Vec<Value> = types
        .iter()
        .map(|kind| {
            let mut branch = Map::new();
            branch.insert("type".to_owned(), Value::String(kind.clone()));
            for (key, value) in &moved {
                let applies = keyword_type(key)
                    .is_some_and(|owner| owner == kind || (owner == "number" && kind == "integer"));
                if applies {
                    branch.insert(key.clone(), value.clone());
                }
            }
            Value::Object(branch)
        })
        .collect();
    match object.remove("anyOf") {
        // Already a union: require both (rare; schemars does not emit it).
        Some(existing) => {
            object.insert(
                "allOf".to_owned(),
                json!([{"anyOf": existing}, {"anyOf": branches}]),
            );
        }
        None => {
            object.insert("anyOf".to_owned(), Value::Array(branches));
        }
    }
}

/// A copy of an output schema with `$ref`s inlined, prose dropped, and
/// structure below `OUTPUT_DEPTH` object levels reduced to the type.
/// `hops` bounds `$ref` chains so a recursive definition cannot loop.
fn slim(node: &Value, defs: &Map<String, Value>, depth: usize, hops: usize) -> Value {
    let Value::Object(object) = node else {
        return node.clone();
    };
    if let Some(target) = object
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|path| path.strip_prefix("#/$defs/"))
        .and_then(|name| defs.get(name))
        && hops < 16
    {
        return slim(target, defs, depth, hops + 1);
    }
    let nested = object.get("type").and_then(Value::as_str) == Some("object");
    if nested && depth >= OUTPUT_DEPTH {
        return json!({"type": "object"});
    }
    if let Some(compact) = const_choices(object) {
        return without_enum_type(compact);
    }
    let mut lean = Map::new();
    for (key, value) in object {
        // `required` would repeat each field name; without it the schema
        // only loosens, so it stays true of every result.
        let noise = key == "required" && nested;
        // Bounds of a result's integers say what Rust type holds them, not
        // anything a client can act on.
        let bound = matches!(key.as_str(), "minimum" | "maximum");
        if noise || bound || is_annotation(key) || key == "$defs" {
            continue;
        }
        let deeper = if nested { depth + 1 } else { depth };
        let value = if ONE.contains(&key.as_str()) {
            slim(value, defs, deeper, hops)
        } else if LIST.contains(&key.as_str()) {
            match value {
                Value::Array(children) => Value::Array(
                    children
                        .iter()
                        .map(|child| slim(child, defs, depth, hops))
                        .collect(),
                ),
                other => other.clone(),
            }
        } else if MAP.contains(&key.as_str()) {
            match value {
                Value::Object(children) => Value::Object(
                    children
                        .iter()
                        .map(|(name, child)| (name.clone(), slim(child, defs, deeper, hops)))
                        .collect(),
                ),
                other => other.clone(),
            }
        } else {
            value.clone()
        };
        lean.insert(key.clone(), value);
    }
    without_enum_type(Value::Object(lean))
}

/// An output's string `enum` without its `"type": "string"`: the list
/// alone says as much (JSON Schema's `enum` holds only those values), and
/// tools/list is bounded while every status field carries one.
fn without_enum_type(mut node: Value) -> Value {
    if let Value::Object(object) = &mut node
        && object.get("type").and_then(Value::as_str) == Some("string")
        && object
            .get("enum")
            .and_then(Value::as_array)
            .is_some_and(|values| values.iter().all(Value::is_string))
    {
        object.remove("type");
    }
    node
}

/// `{"oneOf": [{"const": "a", "type": "string"}, ...]}` (an enum whose
/// variants carry doc comments) as the equivalent `{"type": "string",
/// "enum": ["a", ...]}`.
fn const_choices(object: &Map<String, Value>) -> Option<Value> {
    let Some(Value::Array(choices)) = object.get("oneOf") else {
        return None;
    };
    let mut kind = None;
    let mut values = Vec::new();
    for choice in choices {
        let choice = choice.as_object()?;
        let value = choice.get("const")?;
        let this = choice.get("type")?.as_str()?;
        if kind.is_some_and(|kind| kind != this)
            || choice
                .keys()
                .any(|key| !matches!(key.as_str(), "const" | "type") && !is_annotation(key))
        {
            return None;
        }
        kind = Some(this);
        values.push(value.clone());
    }
    Some(json!({"type": kind?, "enum": values}))
}

#[cfg(test)]
mod tests {
    use super::super::FULL_ONLY;
    use super::*;

    #[test]
    fn input_schemas_keep_variant_docs_out() {
        let mut schema = json!({
            "type": "object",
            "properties": {
                "relation": {"$ref": "#/$defs/Relation", "description": "How the sides relate."},
                "cell": {"anyOf": [
                    {"type": "null", "description": "An empty cell."},
                    {"type": "integer", "description": "An integer."}
                ]}
            },
            "$defs": {"Relation": {"oneOf": [
                {"type": "string", "const": "==", "description": "Both sides equal."},
                {"type": "string", "const": "<=", "description": "At most."}
            ]}}
        });
        variant_docs_out(&mut schema);
        assert_eq!(
            schema,
            json!({
                "type": "object",
                "properties": {
                    "relation": {"$ref": "#/$defs/Relation", "description": "How the sides relate."},
                    "cell": {"anyOf": [{"type": "null"}, {"type": "integer"}]}
                },
                "$defs": {"Relation": {"type": "string", "enum": ["==", "<="]}}
            })
        );
    }

    #[test]
    fn shared_arguments_are_described_on_the_other_tool_only() {
        let theirs = into_object(json!({
            "type": "object",
            "properties": {
                "model": {"type": "string", "description": "The model."},
                "solver": {"type": "string", "description": "A solver."},
                "timeout_ms": {"type": "integer", "description": "Budget."},
                "seed": {"type": "integer"},
                "problem": {
                    "type": "object",
                    "description": "The cohort.",
                    "properties": {"rate": {"type": "number", "description": "Per kg."}}
                },
                "policy": {"$ref": "#/$defs/Policy", "description": "The policy."}
            }
        }));
        let mut ours = into_object(json!({
            "type": "object",
            "properties": {
                "model_path": {"type": "string", "description": "A path."},
                "solver": {"type": "string", "description": "A solver."},
                "timeout_ms": {"type": "integer", "description": "The whole search's budget."},
                "seed": {"type": "integer", "description": "A seed."},
                "problem": {
                    "type": "object",
                    "properties": {"rate": {"type": "number", "description": "Per kg."}}
                },
                "policy": {"$ref": "#/$defs/Policy", "description": "The policy."}
            }
        }));
        assert!(shared_arguments_out(&mut ours, &theirs));
        assert_eq!(
            Value::Object(ours),
            json!({
                "type": "object",
                "properties": {
                    "model_path": {"type": "string", "description": "A path."},
                    "solver": {"type": "string"},
                    "timeout_ms": {"type": "integer", "description": "The whole search's budget."},
                    "seed": {"type": "integer", "description": "A seed."},
                    "problem": {"type": "object", "properties": {"rate": {"type": "number"}}},
                    "policy": {"$ref": "#/$defs/Policy", "description": "The policy."}
                }
            })
        );
        let mut alone = into_object(json!({
            "type": "object",
            "properties": {"seed": {"type": "integer", "description": "A seed."}}
        }));
        assert!(!shared_arguments_out(&mut alone, &theirs));
    }

    #[test]
    fn arguments_are_described_one_step_away() {
        let named = |name: &str| TOOLS.iter().any(|(tool, ..)| *tool == name);
        for (tool, source) in DESCRIBED_IN {
            assert!(
                named(tool) && named(source),
                "{tool} -> {source}: not a tool"
            );
            assert!(
                DESCRIBED_IN.iter().all(|(first, _)| first != source),
                "{tool} -> {source}: {source} refers on in turn"
            );
            assert!(
                !FULL_ONLY.contains(source) || FULL_ONLY.contains(tool),
                "{tool} -> {source}: {source} is not in every toolset {tool} is in"
            );
        }
    }

    #[test]
    fn a_definition_used_once_is_written_where_it_is_used() {
        let mut schema = json!({
            "type": "object",
            "properties": {
                "policy": {"$ref": "#/$defs/Policy", "description": "The policy."},
                "hard": {"type": "array", "items": {"$ref": "#/$defs/Equation"}},
                "soft": {"type": "array", "items": {"$ref": "#/$defs/Equation"}},
                "bounded": {"$ref": "#/$defs/Bound", "maximum": 3}
            },
            "$defs": {
                "Policy": {"type": "object", "properties": {"rate": {"$ref": "#/$defs/Rate"}}},
                "Rate": {"type": "number"},
                "Equation": {"type": "object", "properties": {"lhs": {"type": "string"}}},
                "Bound": {"type": "integer"}
            }
        });
        inline_single_use(&mut schema);
        assert_eq!(
            schema,
            json!({
                "type": "object",
                "properties": {
                    "policy": {
                        "type": "object",
                        "description": "The policy.",
                        "properties": {"rate": {"type": "number"}}
                    },
                    "hard": {"type": "array", "items": {"$ref": "#/$defs/Equation"}},
                    "soft": {"type": "array", "items": {"$ref": "#/$defs/Equation"}},
                    "bounded": {"$ref": "#/$defs/Bound", "maximum": 3}
                },
                "$defs": {
                    "Equation": {"type": "object", "properties": {"lhs": {"type": "string"}}},
                    "Bound": {"type": "integer"}
                }
            })
        );
    }

    #[test]
    fn only_defaults_that_leaving_a_field_out_implies_are_dropped() {
        let mut schema = json!({
            "type": "object",
            "properties": {
                "overwrite": {"type": "boolean", "default": false},
                "keep": {"type": "boolean", "default": true},
                "count": {"type": "integer", "default": 0},
                "delays": {
                    "type": "object",
                    "default": {"air": null},
                    "properties": {"air": {"type": "object"}}
                },
                "policy": {
                    "type": "object",
                    "default": {"risk": 0.1},
                    "properties": {"risk": {"type": "number", "default": 0.1}}
                },
                "other": {
                    "type": "object",
                    "default": {"risk": 0.2},
                    "properties": {"risk": {"type": "number", "default": 0.1}}
                }
            }
        });
        implied_defaults_out(&mut schema);
        assert_eq!(
            schema,
            json!({
                "type": "object",
                "properties": {
                    "overwrite": {"type": "boolean"},
                    "keep": {"type": "boolean", "default": true},
                    "count": {"type": "integer", "default": 0},
                    "delays": {"type": "object", "properties": {"air": {"type": "object"}}},
                    "policy": {
                        "type": "object",
                        "properties": {"risk": {"type": "number", "default": 0.1}}
                    },
                    "other": {
                        "type": "object",
                        "default": {"risk": 0.2},
                        "properties": {"risk": {"type": "number", "default": 0.1}}
                    }
                }
            })
        );
    }

    #[test]
    fn formats_become_bounds_and_unions_become_any_of() {
        let mut schema = json!({
            "type": "object",
            "properties": {
                "count": {"type": "integer", "format": "uint32", "minimum": 0},
                "ratio": {"type": ["number", "null"], "format": "double", "minimum": 0.5},
                "rows": {"type": "array", "items": true},
                "anything": {},
                "config": {"type": "object", "additionalProperties": true}
            }
        });
        portable(&mut schema, true);
        assert_eq!(
            schema,
            json!({
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "count": {"type": "integer", "minimum": 0},
                    "ratio": {"anyOf": [{"type": "number", "minimum": 0.5}, {"type": "null"}]},
                    "rows": {"type": "array", "items": any_json()},
                    "anything": any_json(),
                    "config": {"type": "object"}
                }
            })
        );
    }
}
