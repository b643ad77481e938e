//! The result shape of `find_unsat_core` and `find_unsat_core_files`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::diagnostics::Diagnostic;

/// One member of the core: a top-level constraint item of the entry model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct UnsatCoreConstraint {
    /// 1-based line of the item's first character.
    pub line: u32,
    /// 1-based column (in characters) of the item's first character.
    pub column: u32,
    pub end_line: u32,
    /// Column of the item's last character, inclusive.
    pub end_column: u32,
    /// The item's text as written in the model.
    pub source: String,
}

/// Outcome of an unsat-core search.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct UnsatCoreResult {
    /// `mus_found`, `no_core`, `error` or `timeout`.
    pub status: String,
    /// `findmus` (the runtime's findMUS) or `deletion` (solvergate's own
    /// deletion-based search over top-level constraint items).
    pub method: String,
    /// The conflicting constraints of the entry model. With `deletion` and
    /// `minimal: true` removing any one of them makes the rest satisfiable;
    /// with `minimal: false` the set is unsatisfiable but may hold extras.
    /// With `findmus` and `minimal: false` the MUS has members that are not
    /// top-level constraint items of the model (see `stdout`). Constraints
    /// of the data or of included files are never listed.
    pub core: Vec<UnsatCoreConstraint>,
    /// Whether `core` is known to be a whole minimal set; false when the
    /// search was cut short (budget spent, a check without a verdict) or
    /// when findMUS's MUS reaches beyond the model's constraint items.
    pub minimal: bool,
    /// How many solver runs the search made (its cost).
    pub solver_calls: u32,
    /// The solver that made the checks (with `findmus`, findMUS's id).
    pub solver: String,
    /// What happened, in one or two sentences.
    pub message: String,
    /// Some run's output went over the 1 MiB cap and was cut.
    pub truncated: bool,
    /// `findmus`: its raw output, authoritative over `core`. `deletion`: one
    /// line per check saying what was removed and what the solver answered.
    pub stdout: String,
    /// The runtime's diagnostics (the whole-model check's, for `deletion`).
    pub stderr: String,
    /// Wall-clock time of the whole search.
    pub elapsed_ms: u64,
    /// `null` when the model is satisfiable and nothing needs attention.
    pub diagnostic: Option<Diagnostic>,
}
