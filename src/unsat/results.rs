//! The result shape of `find_unsat_core` and `find_unsat_core_files`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::diagnostics::Diagnostic;

/// How an unsat-core search ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum UnsatStatus {
    /// The model is unsatisfiable and a conflicting set was found.
    MusFound,
    /// No core: the model is satisfiable, or the conflict lies outside the
    /// constraint items (the message says which).
    NoCore,
    /// The model or the search failed.
    Error,
    /// The budget ran out.
    Timeout,
}

impl UnsatStatus {
    /// The status as it reads in the JSON (`mus_found`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            UnsatStatus::MusFound => "mus_found",
            UnsatStatus::NoCore => "no_core",
            UnsatStatus::Error => "error",
            UnsatStatus::Timeout => "timeout",
        }
    }
}

impl std::fmt::Display for UnsatStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One member of the core: a top-level constraint item of the entry model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct UnsatCoreConstraint {
    /// 1-based line of the item's first character.
    pub line: u32,
    /// 1-based column (in characters) of the item's first character.
    pub column: u32,
    /// 1-based line of the item's last character (its `;`).
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
    pub status: UnsatStatus,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_serialise_in_snake_case() {
        for status in [
            UnsatStatus::MusFound,
            UnsatStatus::NoCore,
            UnsatStatus::Error,
            UnsatStatus::Timeout,
        ] {
            let text = serde_json::to_string(&status).unwrap();
            assert_eq!(text, format!("\"{status}\""));
            assert_eq!(serde_json::from_str::<UnsatStatus>(&text).unwrap(), status);
        }
        assert_eq!(UnsatStatus::MusFound.as_str(), "mus_found");
    }
}
