//! The five optional search controls of a solve, their validation and the
//! capability gate in front of them.
//!
//! A control the selected solver does not declare in its `stdFlags` is
//! refused before any process starts, with an error naming the solver, the
//! control and the flag. With no control set, the command line is exactly
//! the default solve's.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::diagnostics::{Category, ToolError};
use crate::runtime::SolverInfo;

/// Most search threads one solve may ask for (`parallel`). Solvers take
/// more threads than cores without complaint; this bound only keeps a
/// mistyped value from asking a solver for millions of threads.
pub const MAX_PARALLEL: i64 = 256;

/// Optional search controls of a solve.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SolveControls {
    /// `-f`: the solver may ignore the model's search annotations.
    pub free_search: bool,
    /// `-p <n>`: parallel search threads (at least 1).
    pub parallel: Option<i64>,
    /// `-r <n>`: seed for the solver's randomisation.
    pub random_seed: Option<i64>,
    /// `-a`: every solution of a satisfaction problem, or the improving
    /// sequence of an optimisation.
    pub all_solutions: bool,
    /// `-n <n>`: at most n solutions of a satisfaction problem (at least 1).
    pub num_solutions: Option<i64>,
    /// Flags for the solver itself, as its `extraFlags` spell them: the
    /// load planner's limit on Gecode's search (`-fail`) and its memory
    /// (`-c-d`, `-a-d`). Set only by the planner, from the solver's own
    /// declarations; never read from a client, never shown.
    #[serde(skip)]
    #[schemars(skip)]
    pub solver_flags: Vec<String>,
    /// Only the final answer is read (the equation tools): the solve does
    /// not watch each improving solution. A search that improves in many
    /// small steps would print every one of them. Never read from a client.
    #[serde(skip)]
    #[schemars(skip)]
    pub final_only: bool,
}

impl SolveControls {
    /// Range checks that need no runtime.
    pub fn validate(&self) -> Result<(), ToolError> {
        if let Some(threads) = self.parallel
            && threads < 1
        {
            return Err(ToolError::invalid(format!(
                "parallel must be at least 1, got {threads}; omit it for the solver's default"
            )));
        }
        if let Some(threads) = self.parallel
            && threads > MAX_PARALLEL
        {
            return Err(ToolError::invalid(format!(
                "parallel must be at most {MAX_PARALLEL}, got {threads}; ask for about as many threads as the machine has cores"
            )));
        }
        if let Some(count) = self.num_solutions
            && count < 1
        {
            return Err(ToolError::invalid(format!(
                "num_solutions must be at least 1, got {count}; omit it for the solver's default"
            )));
        }
        Ok(())
    }

    /// Refuses a control the solver does not declare.
    pub fn gate(&self, solver: &SolverInfo) -> Result<(), ToolError> {
        let caps = &solver.capabilities;
        let requested = [
            (
                "all_solutions",
                "-a",
                self.all_solutions,
                caps.supports_all_solutions,
            ),
            (
                "free_search",
                "-f",
                self.free_search,
                caps.supports_free_search,
            ),
            (
                "parallel",
                "-p",
                self.parallel.is_some(),
                caps.supports_parallel,
            ),
            (
                "random_seed",
                "-r",
                self.random_seed.is_some(),
                caps.supports_random_seed,
            ),
            (
                "num_solutions",
                "-n",
                self.num_solutions.is_some(),
                caps.supports_num_solutions,
            ),
        ];
        for (control, flag, wanted, supported) in requested {
            if wanted && !supported {
                return Err(ToolError::new(
                    Category::UnsupportedFeature,
                    format!(
                        "solver {} does not support {control} ({flag} is not among its declared flags {:?}); drop {control} or pick a solver that declares {flag} (see list_available_solvers)",
                        solver.id, caps.std_flags
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The MiniZinc flags for the controls that are set.
    pub fn args(&self) -> Vec<String> {
        let mut args = Vec::new();
        if self.all_solutions {
            args.push("-a".to_owned());
        }
        if self.free_search {
            args.push("-f".to_owned());
        }
        if let Some(threads) = self.parallel {
            args.extend(["-p".to_owned(), threads.to_string()]);
        }
        if let Some(seed) = self.random_seed {
            args.extend(["-r".to_owned(), seed.to_string()]);
        }
        if let Some(count) = self.num_solutions {
            args.extend(["-n".to_owned(), count.to_string()]);
        }
        args.extend(self.solver_flags.iter().cloned());
        args
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::SolverCatalog;

    fn cplex_like() -> SolverInfo {
        SolverCatalog::parse(
            r#"[{"id": "org.minizinc.mip.cplex", "name": "CPLEX", "stdFlags": ["-i","-p","-s","-v"], "tags": ["mip"]}]"#,
        )
        .unwrap()
        .solvers
        .remove(0)
    }

    #[test]
    fn no_controls_add_no_flags() {
        assert!(SolveControls::default().args().is_empty());
    }

    #[test]
    fn flags_follow_the_controls() {
        let controls = SolveControls {
            free_search: true,
            parallel: Some(2),
            random_seed: Some(-7),
            all_solutions: true,
            num_solutions: Some(3),
            solver_flags: Vec::new(),
            final_only: false,
        };
        assert_eq!(
            controls.args(),
            ["-a", "-f", "-p", "2", "-r", "-7", "-n", "3"]
        );
        let planner = SolveControls {
            solver_flags: vec!["-fail".to_owned(), "3000".to_owned()],
            ..SolveControls::default()
        };
        assert_eq!(planner.args(), ["-fail", "3000"]);
        // A client cannot set them: they are not part of the arguments.
        let sent: SolveControls =
            serde_json::from_str(r#"{"free_search": false, "parallel": null, "random_seed": null, "all_solutions": false, "num_solutions": null, "solver_flags": ["--rm"]}"#)
                .unwrap();
        assert!(sent.solver_flags.is_empty());
        let schema = serde_json::to_string(&schemars::schema_for!(SolveControls)).unwrap();
        assert!(!schema.contains("solver_flags"), "{schema}");
    }

    #[test]
    fn range_errors_name_the_argument() {
        let parallel = SolveControls {
            parallel: Some(0),
            ..Default::default()
        };
        assert!(
            parallel
                .validate()
                .unwrap_err()
                .to_string()
                .contains("parallel must be at least 1")
        );
        let count = SolveControls {
            num_solutions: Some(-1),
            ..Default::default()
        };
        assert!(
            count
                .validate()
                .unwrap_err()
                .to_string()
                .contains("num_solutions")
        );
    }

    #[test]
    fn gate_names_solver_control_and_flag() {
        let controls = SolveControls {
            num_solutions: Some(2),
            ..Default::default()
        };
        let error = controls.gate(&cplex_like()).unwrap_err();
        assert_eq!(error.category(), Category::UnsupportedFeature);
        let text = error.to_string();
        assert!(text.contains("org.minizinc.mip.cplex"), "{text}");
        assert!(text.contains("num_solutions"), "{text}");
        assert!(text.contains("-n"), "{text}");
        let parallel = SolveControls {
            parallel: Some(2),
            ..Default::default()
        };
        assert!(parallel.gate(&cplex_like()).is_ok());
    }
}
