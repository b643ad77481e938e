//! The arguments of the two unsat-core tools (inline model and on disk).

use schemars::JsonSchema;
use serde::Deserialize;

use crate::diagnostics::ToolError;
use crate::exec::limits::LimitCaps;
use crate::mcp::args::{CallLimits, IntoRequest, checked_budget, default_timeout_ms};
use crate::minizinc::Sources;
use crate::unsat::UnsatCoreRequest;

/// Arguments of `find_unsat_core`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UnsatModelArgs {
    /// The complete MiniZinc model that proved unsatisfiable.
    pub model: String,
    /// Inline data (`.dzn` text): the same data the unsatisfiable solve used.
    #[serde(default)]
    pub data: Option<String>,
    /// Solver of the deletion search (id, short name or tag;
    /// `org.minizinc.findmus` runs findMUS). Omitted: findMUS when the runtime
    /// has it, else a deletion search with the solve tools' default.
    #[serde(default)]
    pub solver: Option<String>,
    /// Budget of the whole search in milliseconds, shared by all its solver
    /// runs; above 0.
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: i64,
    #[serde(default)]
    pub limits: CallLimits,
}

impl IntoRequest for UnsatModelArgs {
    type Request = UnsatCoreRequest;

    fn limits(&self) -> LimitCaps {
        self.limits.caps()
    }

    fn into_request(self) -> Result<UnsatCoreRequest, ToolError> {
        Ok(UnsatCoreRequest {
            sources: Sources::Inline {
                model: self.model,
                data: self.data,
                checker: None,
            },
            solver: self.solver,
            timeout_ms: checked_budget("timeout_ms", self.timeout_ms)?,
        })
    }
}

/// Arguments of `find_unsat_core_files`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UnsatFilesArgs {
    /// Path of a local `.mzn` file, preferably absolute; it runs in its
    /// directory, so relative includes resolve.
    pub model_path: String,
    /// Path of a `.dzn` or `.json` data file.
    #[serde(default)]
    pub data_path: Option<String>,
    /// Solver of the deletion search (id, short name or tag;
    /// `org.minizinc.findmus` runs findMUS). Omitted: findMUS when the runtime
    /// has it, else a deletion search with the solve tools' default.
    #[serde(default)]
    pub solver: Option<String>,
    /// Budget of the whole search in milliseconds, shared by all its solver
    /// runs; above 0.
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: i64,
    #[serde(default)]
    pub limits: CallLimits,
}

impl IntoRequest for UnsatFilesArgs {
    type Request = UnsatCoreRequest;

    fn limits(&self) -> LimitCaps {
        self.limits.caps()
    }

    fn into_request(self) -> Result<UnsatCoreRequest, ToolError> {
        Ok(UnsatCoreRequest {
            sources: Sources::Files {
                model_path: self.model_path,
                data_path: self.data_path,
                checker_path: None,
            },
            solver: self.solver,
            timeout_ms: checked_budget("timeout_ms", self.timeout_ms)?,
        })
    }
}
