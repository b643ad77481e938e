//! What every tool's arguments share: reading them ([`parse`]) and turning
//! them into a service request ([`IntoRequest`]), the published input
//! [`schema`], the two argument shapes several areas use ([`JobIdArgs`],
//! [`NoArgs`]) and the defaults and field readers more than one area's
//! arguments name. Each area's own argument structs live in its folder
//! (`minizinc/args.rs`, `cpsat/args.rs`, ...). Unknown fields are refused
//! everywhere so a misspelt argument (`timeout` for `timeout_ms`) cannot
//! pass silently.
//!
//! A field several tools take (`model`, `data`, `solver`, `timeout_ms`, the
//! search controls) is declared in each tool's struct rather than shared
//! through `#[serde(flatten)]`: each declaration carries its own tool's
//! description in the published schema, and with a flattened field serde
//! refuses an unknown one without the list of the fields it expected.
//! Where a sibling tool's declaration says the same, `schema::finish`
//! publishes the description once, on the sibling; `limits` is one type,
//! [`CallLimits`], everywhere.

use std::sync::Arc;

use rmcp::model::JsonObject;
use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::budget::{Budget, DEFAULT_TIMEOUT_MS};
use crate::cpsat::{canonical_problem, validate_seed};
use crate::diagnostics::ToolError;
use crate::exec::limits::LimitCaps;

/// Reads a tool's arguments; a malformed one is an `invalid_request` that
/// names the problem and, where it is inside an argument, the argument's
/// path (`limits.memory_mb: invalid type: …`). rmcp's own extractor would
/// answer without our `Diagnostic:` line, and serde alone names no field for
/// a wrong type.
pub fn parse<T: DeserializeOwned>(arguments: JsonObject) -> Result<T, ToolError> {
    serde_path_to_error::deserialize(serde_json::Value::Object(arguments)).map_err(|error| {
        let path = error.path().to_string();
        let problem = error.into_inner().to_string();
        // A reader of our own (`limits_arg`) may have named the path already.
        ToolError::invalid(if path == "." || problem.starts_with(&path) {
            format!("invalid arguments: {problem}")
        } else {
            format!("invalid arguments: {path}: {problem}")
        })
    })
}

/// Arguments that become a service request, or an argument error.
pub trait IntoRequest {
    type Request;
    fn into_request(self) -> Result<Self::Request, ToolError>;

    /// The call's `limits` argument: lower resource limits for what it
    /// runs (none for a tool without the argument).
    fn limits(&self) -> LimitCaps {
        LimitCaps::default()
    }
}

/// The request `args` make and the limit caps the call runs under; a zero
/// cap is refused before anything runs.
pub fn capped_request<A: IntoRequest>(args: A) -> Result<(LimitCaps, A::Request), ToolError> {
    let caps = args.limits();
    caps.validate()?;
    Ok((caps, args.into_request()?))
}

impl IntoRequest for JobIdArgs {
    type Request = String;

    fn into_request(self) -> Result<String, ToolError> {
        Ok(self.job_id)
    }
}

impl IntoRequest for NoArgs {
    type Request = ();

    fn into_request(self) -> Result<(), ToolError> {
        Ok(())
    }
}

/// The input schema published for `T`.
pub fn schema<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    rmcp::handler::server::common::schema_for_input::<T>().unwrap_or_else(|_| {
        Arc::new(JsonObject::from_iter([(
            "type".to_owned(),
            serde_json::Value::String("object".to_owned()),
        )]))
    })
}

pub fn default_timeout_ms() -> i64 {
    DEFAULT_TIMEOUT_MS
}

/// Checks the budget argument `name` whose default is
/// [`default_timeout_ms`] (`timeout_ms`, `script_timeout_ms`, ...).
pub fn checked_budget(name: &str, ms: i64) -> Result<Budget, ToolError> {
    Budget::parse(name, ms, Some(DEFAULT_TIMEOUT_MS))
}

/// Checks `checker_timeout_ms`, whose default follows the script's budget.
pub fn checker_budget(ms: Option<i64>) -> Result<Option<Budget>, ToolError> {
    ms.map(|ms| Budget::parse("checker_timeout_ms", ms, None))
        .transpose()
}

/// Arguments of the get and cancel job tools.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JobIdArgs {
    /// The id a submit returned.
    pub job_id: String,
}

/// Arguments of `get_solve_job` and `get_portfolio_job`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JobPollArgs {
    /// The id a submit returned.
    pub job_id: String,
    /// Add an image part: the objective over time (of every attempt of a race,
    /// the winner marked).
    #[serde(default)]
    pub include_plot: bool,
}

/// Arguments of the tools that take none (the list tools, `check_runtime`,
/// `list_available_solvers`): anything given is refused, as every other tool
/// refuses arguments it does not know.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

pub fn one() -> i64 {
    1
}

/// Reads `problem`: text as it is, a JSON object or array as its canonical
/// text, anything else refused with what was wrong.
pub fn problem_text<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<String>, D::Error> {
    use serde_json::Value;
    let value = Value::deserialize(deserializer)?;
    let kind = match &value {
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        _ => return Ok(canonical_problem(Some(&value))),
    };
    Err(serde::de::Error::custom(format!(
        "problem must be text, a JSON object or a JSON array (or null), got {kind}"
    )))
}

/// The `limits` argument of every tool that runs something: caps that
/// lower the server's resource limits for one call. Sixteen tools take it,
/// so its published shape is [`LimitCaps`]' fields (names, types, bounds)
/// under one short description, without each field's prose: the
/// description says the unit and what a cap does once per tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct CallLimits(LimitCaps);

/// What `limits` is, said once for all its fields.
const CALL_LIMITS: &str = "Caps that lower this call's resource limits (sizes in MiB; \
     processes counts threads); a cap above the server's limit is ignored.";

impl CallLimits {
    /// The caps the call asked for (none: all `None`).
    pub fn caps(self) -> LimitCaps {
        self.0
    }
}

impl<'de> Deserialize<'de> for CallLimits {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        limits_arg(deserializer).map(|caps| CallLimits(caps.unwrap_or_default()))
    }
}

impl JsonSchema for CallLimits {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "CallLimits".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let mut schema = LimitCaps::json_schema(generator);
        if let Some(serde_json::Value::Object(fields)) = schema.get_mut("properties") {
            for field in fields
                .values_mut()
                .filter_map(serde_json::Value::as_object_mut)
            {
                field.remove("description");
            }
        }
        schema.insert("description".to_owned(), CALL_LIMITS.into());
        schema
    }
}

/// Reads `limits`, naming the field a refusal is about (serde's own
/// message for a nested field names only the value: "invalid value:
/// integer `-5`").
fn limits_arg<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<LimitCaps>, D::Error> {
    use serde_json::{Map, Value};
    let Some(value) = Option::<Value>::deserialize(deserializer)? else {
        return Ok(None);
    };
    // serde would read an array as the fields in order.
    let fields = match value {
        Value::Object(fields) => fields,
        other => {
            let kind = match other {
                Value::Array(_) => "an array",
                Value::String(_) => "text",
                Value::Number(_) => "a number",
                _ => "a boolean",
            };
            return Err(serde::de::Error::custom(format!(
                "limits must be an object such as {{\"memory_mb\": 512}}, got {kind}"
            )));
        }
    };
    let read =
        |fields: Map<String, Value>| serde_json::from_value::<LimitCaps>(Value::Object(fields));
    read(fields.clone()).map(Some).map_err(|error| {
        // The first field that is refused on its own is the one to name.
        let culprit = fields.iter().find_map(|(name, field)| {
            read(Map::from_iter([(name.clone(), field.clone())]))
                .is_err()
                .then_some(name)
        });
        let at = culprit.map_or_else(|| "limits".to_owned(), |name| format!("limits.{name}"));
        serde::de::Error::custom(format!("{at}: {error}"))
    })
}

/// The schema `problem_text` accepts, stated exactly.
pub fn problem_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "description": "The instance the checker validates against: text, or JSON (sent as its canonical text).",
        "type": ["string", "object", "array", "null"],
        "default": null
    })
}

/// The seed, once CP-SAT could take it.
pub fn checked_seed(seed: Option<i64>) -> Result<Option<i64>, ToolError> {
    validate_seed(seed).map(|()| seed)
}
