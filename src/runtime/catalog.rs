//! The solver catalog: what the runtime's `minizinc --solvers-json` says it
//! offers, and how a name a user typed maps to one of those solvers.
//!
//! Capabilities are facts read from each solver's declared `stdFlags`, so
//! the gate in front of a solve is as good as the runtime's own config.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::PathBuf;

/// What one solver can be asked to do, from its declared standard flags.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SolverCapabilities {
    /// Declares `-a` (all solutions / improving sequence).
    pub supports_all_solutions: bool,
    /// Declares `-f` (free search).
    pub supports_free_search: bool,
    /// Declares `-p` (parallel threads).
    pub supports_parallel: bool,
    /// Declares `-r` (random seed).
    pub supports_random_seed: bool,
    /// Declares `-n` (solution count cap for satisfaction problems).
    pub supports_num_solutions: bool,
    /// Every standard flag the solver declares (advisory; not a passthrough).
    pub std_flags: Vec<String>,
    /// The names of the solver's own declared flags (`extraFlags`), as the
    /// runtime spells them (`-fail` in Gecode 6.2, `--fail` in 6.3). Only
    /// the load planner uses them, for Gecode's search limit; not shown.
    #[serde(skip)]
    #[schemars(skip)]
    pub extra_flags: Vec<String>,
}

impl SolverCapabilities {
    fn from_flags(std_flags: Vec<String>, extra_flags: Vec<String>) -> Self {
        let has = |flag: &str| std_flags.iter().any(|f| f == flag);
        SolverCapabilities {
            supports_all_solutions: has("-a"),
            supports_free_search: has("-f"),
            supports_parallel: has("-p"),
            supports_random_seed: has("-r"),
            supports_num_solutions: has("-n"),
            std_flags,
            extra_flags,
        }
    }

    /// The solver's own flag called `name` (without dashes), spelled as it
    /// declares it; `None` when it declares no such flag.
    pub fn extra_flag(&self, name: &str) -> Option<&str> {
        self.extra_flags
            .iter()
            .map(String::as_str)
            .find(|flag| flag.trim_start_matches('-') == name)
    }
}

/// One solver the runtime offers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SolverInfo {
    /// Canonical id, e.g. `org.gecode.gecode`.
    pub id: String,
    /// Display name, e.g. `Gecode`; the id when the runtime gives none.
    pub name: String,
    /// Version as the solver's config states it; empty when absent.
    pub version: String,
    /// The tags MiniZinc also accepts as names (`cp`, `mip`, ...).
    pub tags: Vec<String>,
    /// What the declared standard flags allow a solve to ask for.
    pub capabilities: SolverCapabilities,
    /// The runtime marks this solver as its default.
    pub is_default: bool,
    /// A one-variable model solved with it (probed once per process);
    /// `false` for a listed solver that cannot run here, e.g. a MIP solver
    /// whose library is missing or Gecode Gist without a display.
    #[serde(default = "yes")]
    pub available: bool,
    /// What the probe said when the solver could not run.
    #[serde(default)]
    pub unavailable_reason: Option<String>,
}

fn yes() -> bool {
    true
}

impl SolverInfo {
    /// The names MiniZinc itself accepts for this solver: the id, every
    /// dot-separated suffix of it (`gecode`, `gecode.gecode`) and its tags.
    fn answers_to(&self, name: &str) -> bool {
        let name = name.to_ascii_lowercase();
        let id = self.id.to_ascii_lowercase();
        id == name
            || id.ends_with(&format!(".{name}"))
            || self.tags.iter().any(|tag| tag.eq_ignore_ascii_case(&name))
    }

    /// The last id component, the short name people type (`gecode`).
    pub fn short_name(&self) -> &str {
        self.id.rsplit('.').next().unwrap_or(&self.id)
    }
}

/// `--solvers-json` printed something that is not a JSON list.
#[derive(Debug, thiserror::Error)]
#[error("--solvers-json did not print a JSON list")]
pub struct CatalogError(#[source] pub serde_json::Error);

/// The runtime's solvers, in the order it lists them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SolverCatalog {
    /// Every solver with an id, in the runtime's order.
    pub solvers: Vec<SolverInfo>,
}

/// The name the tools prefer when no solver is named.
pub const PREFERRED_SOLVER: &str = "cp-sat";

impl SolverCatalog {
    /// Parses `minizinc --solvers-json` output.
    pub fn parse(json: &str) -> Result<SolverCatalog, CatalogError> {
        let entries: Vec<Value> = serde_json::from_str(json).map_err(CatalogError)?;
        let solvers = entries.iter().filter_map(solver_from_json).collect();
        Ok(SolverCatalog { solvers })
    }

    /// Finds the solver a user means: canonical id first, then the short
    /// names and tags MiniZinc accepts. Among several matches the runtime's
    /// default wins, then the first listed (MiniZinc's own order).
    pub fn resolve(&self, name: &str) -> Option<&SolverInfo> {
        let name = name.trim();
        if let Some(exact) = self.solvers.iter().find(|s| s.id == name) {
            return Some(exact);
        }
        let mut matches = self.solvers.iter().filter(|s| s.answers_to(name));
        let first = matches.next()?;
        if first.is_default {
            return Some(first);
        }
        Some(matches.find(|s| s.is_default).unwrap_or(first))
    }

    /// The solver used when the caller names none: cp-sat when the runtime
    /// has it, else the runtime's default, else the first listed.
    pub fn default_choice(&self) -> Option<&SolverInfo> {
        self.resolve(PREFERRED_SOLVER)
            .or_else(|| self.solvers.iter().find(|s| s.is_default))
            .or_else(|| self.solvers.first())
    }
}

/// What `list_available_solvers` reports.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SolverList {
    /// Every solver the runtime lists, in its order.
    pub solvers: Vec<SolverInfo>,
    /// The solver the tools use when none is named.
    pub default_solver: Option<String>,
    /// How to read `capabilities`.
    pub capability_note: String,
}

impl SolverList {
    /// The report for `catalog`, with its default choice and the note on
    /// capabilities.
    pub fn from_catalog(catalog: &SolverCatalog) -> Self {
        SolverList {
            solvers: catalog.solvers.clone(),
            default_solver: catalog.default_choice().map(|s| s.id.clone()),
            capability_note: "capabilities come from each solver's declared stdFlags: a solve that asks for all_solutions (-a), free_search (-f), parallel (-p), random_seed (-r) or num_solutions (-n) on a solver that does not declare the flag is refused before it runs. std_flags is informational, not a passthrough. available is false for a listed solver that failed a one-variable probe solve here (a MIP solver without its library, a GUI solver without a display); unavailable_reason says why.".to_owned(),
        }
    }
}

/// What the solvers of a `--solvers-json` listing read besides the
/// runtime's own tree: each one's executable (its dir, when that is narrow
/// enough to grant whole), its `mznlib` and the dir of its `.msc` file. A
/// solver configured in `~/.minizinc/solvers` or on `MZN_SOLVER_PATH` may
/// live anywhere; the sandbox's read boundary is told of these once the
/// catalog is read. Relative and unparsable entries are skipped.
pub fn solver_read_roots(json: &str) -> Vec<PathBuf> {
    let Ok(entries) = serde_json::from_str::<Vec<Value>>(json) else {
        return Vec::new();
    };
    let path = |entry: &Value, key: &str| {
        entry
            .pointer(&format!("/extraInfo/{key}"))
            .and_then(Value::as_str)
            .filter(|text| !text.is_empty())
            .map(PathBuf::from)
            .filter(|path| path.is_absolute())
    };
    let mut roots = Vec::new();
    for entry in &entries {
        if let Some(executable) = path(entry, "executable") {
            roots.extend(crate::exec::reads::beside(&executable));
        }
        roots.extend(path(entry, "mznlib"));
        if let Some(config) = path(entry, "configFile") {
            roots.extend(crate::exec::reads::beside(&config));
        }
    }
    roots.sort();
    roots.dedup();
    roots
}

fn solver_from_json(entry: &Value) -> Option<SolverInfo> {
    let text = |key: &str| entry.get(key).and_then(Value::as_str).map(str::to_owned);
    let strings = |key: &str| -> Vec<String> {
        entry
            .get(key)
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter_map(|item| item.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let id = text("id")?;
    let is_default = entry
        .pointer("/extraInfo/isDefault")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    Some(SolverInfo {
        name: text("name").unwrap_or_else(|| id.clone()),
        version: text("version").unwrap_or_default(),
        tags: strings("tags"),
        capabilities: SolverCapabilities::from_flags(strings("stdFlags"), extra_flag_names(entry)),
        is_default,
        id,
        available: true,
        unavailable_reason: None,
    })
}

/// The names in a solver's `extraFlags` (each entry is `[name, help, type,
/// default]`).
fn extra_flag_names(entry: &Value) -> Vec<String> {
    entry
        .get("extraFlags")
        .and_then(Value::as_array)
        .map(|flags| {
            flags
                .iter()
                .filter_map(|flag| flag.get(0).and_then(Value::as_str).map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOLVERS: &str = r#"[
      {"id": "org.minizinc.mip.cplex", "name": "CPLEX", "version": "<unknown version>",
       "stdFlags": ["-i","-p","-s","-v"], "tags": ["mip","float","api"]},
      {"extraInfo": {"isDefault": true}, "id": "org.gecode.gecode", "name": "Gecode",
       "version": "6.2.0", "stdFlags": ["-a","-f","-n","-p","-r","-s","-t"],
       "tags": ["cp","int","float","set","restart"]},
      {"id": "org.gecode.gist", "name": "Gecode Gist", "version": "6.2.0",
       "stdFlags": ["-a","-n","-s","-p","-r","-f"], "tags": ["cp","int"]},
      {"id": "com.google.ortools.sat", "name": "OR Tools CP-SAT", "version": "9.12",
       "stdFlags": ["-a","-f","-p","-r","-s","-v","-t"], "tags": ["cp","cp-sat","int","lcg"]},
      {"name": "no id here"}
    ]"#;

    #[test]
    fn parses_capabilities_from_std_flags() {
        let catalog = SolverCatalog::parse(SOLVERS).unwrap();
        assert_eq!(catalog.solvers.len(), 4);
        let gecode = &catalog.solvers[1];
        assert!(gecode.is_default);
        assert!(gecode.capabilities.supports_num_solutions);
        let cplex = &catalog.solvers[0];
        assert!(!cplex.capabilities.supports_all_solutions);
        assert!(cplex.capabilities.supports_parallel);
        assert!(!catalog.solvers[3].capabilities.supports_num_solutions);
    }

    #[test]
    fn extra_flags_are_read_as_each_runtime_spells_them() {
        let six_two = r#"[{"id": "org.gecode.gecode", "stdFlags": ["-a"],
            "extraFlags": [["-c-d", "Recomputation commit distance", "int", "8"],
                           ["-fail", "Failure cutoff", "int", "0"], "not a flag", []]}]"#;
        let six_three = six_two
            .replace("\"-c-d\"", "\"--c-d\"")
            .replace("\"-fail\"", "\"--fail\"");
        for (json, fail) in [(six_two.to_owned(), "-fail"), (six_three, "--fail")] {
            let catalog = SolverCatalog::parse(&json).unwrap();
            let capabilities = &catalog.solvers[0].capabilities;
            assert_eq!(capabilities.extra_flag("fail"), Some(fail));
            assert_eq!(capabilities.extra_flag("node"), None);
            assert_eq!(capabilities.extra_flags.len(), 2);
            // Not part of what clients see.
            let shown = serde_json::to_value(&catalog.solvers[0]).unwrap();
            assert!(!shown.to_string().contains("fail"), "{shown}");
        }
        let catalog = SolverCatalog::parse(SOLVERS).unwrap();
        assert!(catalog.solvers[1].capabilities.extra_flags.is_empty());
    }

    /// The CLI prints the serde error as the cause; a tool's text (built
    /// with `with_causes`) still reads as one line, as it always has.
    #[test]
    fn a_catalog_that_is_not_json_keeps_the_parse_error_as_its_cause() {
        let error = SolverCatalog::parse("no solvers here").unwrap_err();
        assert_eq!(
            error.to_string(),
            "--solvers-json did not print a JSON list"
        );
        assert_eq!(
            crate::diagnostics::with_causes(&error),
            "--solvers-json did not print a JSON list: expected ident at line 1 column 2"
        );
    }

    #[test]
    fn resolves_ids_short_names_and_tags() {
        let catalog = SolverCatalog::parse(SOLVERS).unwrap();
        let id = |name: &str| catalog.resolve(name).map(|s| s.id.as_str());
        assert_eq!(id("org.gecode.gecode"), Some("org.gecode.gecode"));
        assert_eq!(id("gecode"), Some("org.gecode.gecode"));
        assert_eq!(id("Gecode"), Some("org.gecode.gecode"));
        assert_eq!(id("gist"), Some("org.gecode.gist"));
        assert_eq!(id("cp-sat"), Some("com.google.ortools.sat"));
        assert_eq!(id("sat"), Some("com.google.ortools.sat"));
        // "cp" is a tag of several; the runtime default wins.
        assert_eq!(id("cp"), Some("org.gecode.gecode"));
        assert_eq!(id("chuffed"), None);
    }

    #[test]
    fn default_choice_prefers_cp_sat_then_the_runtime_default() {
        let catalog = SolverCatalog::parse(SOLVERS).unwrap();
        assert_eq!(
            catalog.default_choice().unwrap().id,
            "com.google.ortools.sat"
        );
        let without_cp_sat = SolverCatalog {
            solvers: catalog
                .solvers
                .iter()
                .filter(|s| s.id != "com.google.ortools.sat")
                .cloned()
                .collect(),
        };
        assert_eq!(
            without_cp_sat.default_choice().unwrap().id,
            "org.gecode.gecode"
        );
    }

    #[test]
    fn a_solver_configured_elsewhere_names_what_it_reads() {
        let opt = tempfile::tempdir().unwrap();
        let root = opt.path();
        for dir in ["bin", "share/mine", "solvers"] {
            std::fs::create_dir_all(root.join(dir)).unwrap();
        }
        let json = serde_json::json!([
            {"id": "a", "extraInfo": {
                "executable": root.join("bin/fzn-mine"),
                "mznlib": root.join("share/mine"),
                "configFile": root.join("solvers/mine.msc")}},
            {"id": "b", "extraInfo": {"executable": "../bin/fzn-b", "mznlib": "", "configFile": ""}},
            {"id": "c"}
        ]);
        assert_eq!(
            solver_read_roots(&json.to_string()),
            ["bin", "share/mine", "solvers"].map(|dir| root.join(dir))
        );
        assert!(solver_read_roots("not json").is_empty());
    }

    #[test]
    fn rejects_output_that_is_not_a_list() {
        assert!(SolverCatalog::parse("Config exception").is_err());
    }
}
