//! Architecture checks, after rust-analyzer's tidy tests: each test reads
//! the source tree and fails, naming file and line, when an invariant of
//! ARCHITECTURE.md is broken, so the boundaries cannot rot silently.
//!
//! The checks are textual (comments are skipped, string literals are not
//! parsed), deliberately simple and fast: file reads only, no process, no
//! parser. A rule that must bend says so in an exception table here, with
//! the reason next to it; a new exception is a design decision, not a
//! way to make the test pass.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

/// The faces: the only code that speaks MCP, parses a command line or
/// reads argv.
const FACES: &[&str] = &["src/mcp/", "src/cli/", "src/main.rs"];

/// The services, each a directory under `src/`.
const SERVICES: &[&str] = &[
    "minizinc",
    "cpsat",
    "jobs",
    "artifacts",
    "planner",
    "unsat",
    "tabular",
    "equations",
];

/// Which sibling services each service may import (ARCHITECTURE.md,
/// "Service arrows"). `minizinc`, `cpsat` and `tabular` stand alone;
/// `planner`, `unsat` and `equations` build on `minizinc`, `jobs` on both
/// runtimes; `artifacts` saves and replays every
/// kind of result, so it also reads portfolio results (`jobs`) and load
/// plans (`planner`). A service missing here may import no sibling.
const SERVICE_ARROWS: &[(&str, &[&str])] = &[
    ("minizinc", &[]),
    ("cpsat", &[]),
    ("tabular", &[]),
    ("jobs", &["minizinc", "cpsat"]),
    ("planner", &["minizinc"]),
    ("unsat", &["minizinc"]),
    ("equations", &["minizinc"]),
    ("artifacts", &["minizinc", "cpsat", "jobs", "planner"]),
];

/// The foundation: imports neither services nor faces.
const FOUNDATION: &[&str] = &[
    "src/exec/",
    "src/runtime/",
    "src/budget.rs",
    "src/diagnostics.rs",
    "src/kept.rs",
    "src/progress.rs",
    "src/roots.rs",
    "src/settings.rs",
    "src/userfiles.rs",
    "src/verdict.rs",
];

/// The one module that reads the environment.
const SETTINGS: &str = "src/settings.rs";

/// The one module that starts processes.
const EXEC: &str = "src/exec/";

/// Where clap may appear although the CLI is the face that owns it.
/// `Toolset` is the MCP face's own enum and also the CLI's `--toolset`
/// value; both sides are faces, so the derive stays beside the enum.
const CLAP_OUTSIDE_CLI: &[(&str, &str)] = &[("src/mcp/mod.rs", "clap::ValueEnum")];

/// What starts a process. `Command::new` counts only as a whole word
/// (`ChildCommand::new` builds an `exec` command, which is how everyone
/// else asks for one); `.spawn()` with no arguments is `Command::spawn`,
/// while `tokio::spawn(...)` and `JoinSet::spawn(...)` start tasks.
const SPAWNS: &[&str] = &[
    "Command::new",
    "process::Command",
    "tokio::process",
    "CommandWrap",
    ".spawn()",
    "fork(",
    "execv",
    "posix_spawn",
];

/// Reads of configuration from the environment. Not counted, by
/// decision: `env!`/`option_env!` (compile time), `env::current_exe`
/// (where our own binary is, to start the watchdog), `env::temp_dir`
/// (the platform's temp dir, which every `tempfile` call uses too),
/// `env::split_paths` and `env::consts` (no read at all).
const ENV_READS: &[&str] = &[
    "env::var(",
    "env::var_os(",
    "env::vars(",
    "env::vars_os(",
    "env::var;",
    "env::var_os;",
    "env::set_var",
    "env::remove_var",
];

/// argv: only the faces read it.
const ARGV_READS: &[&str] = &["env::args(", "env::args_os(", "env::args;", "env::args_os;"];

/// One source file, its path relative to the crate root (`src/...`).
struct Source {
    path: String,
    text: String,
}

impl Source {
    fn under(&self, prefix: &str) -> bool {
        self.path == prefix || (prefix.ends_with('/') && self.path.starts_with(prefix))
    }

    fn is_face(&self) -> bool {
        FACES.iter().any(|face| self.under(face))
    }

    /// The service this file belongs to, if any.
    fn service(&self) -> Option<&'static str> {
        SERVICES.iter().copied().find(|service| {
            self.under(&format!("src/{service}/")) || self.path == format!("src/{service}.rs")
        })
    }

    /// `(line number, code)` for every line, with comments blanked.
    fn code_lines(&self) -> impl Iterator<Item = (usize, String)> + '_ {
        self.text
            .lines()
            .enumerate()
            .map(|(index, line)| (index + 1, strip_comment(line)))
    }
}

/// The line without its `//` comment (a `//` inside a string literal, as
/// in a URL, is kept: only quotes before it are counted).
fn strip_comment(line: &str) -> String {
    let mut in_string = false;
    let mut escaped = false;
    let bytes = line.as_bytes();
    for (index, &byte) in bytes.iter().enumerate() {
        match byte {
            _ if escaped => escaped = false,
            b'\\' if in_string => escaped = true,
            b'"' => in_string = !in_string,
            b'/' if !in_string && bytes.get(index + 1) == Some(&b'/') => {
                return line[..index].to_owned();
            }
            _ => {}
        }
    }
    line.to_owned()
}

fn sources() -> Vec<Source> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    collect(&root.join("src"), &mut files);
    files.sort();
    files
        .into_iter()
        .map(|file| {
            let path = file
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let text = fs::read_to_string(&file).unwrap();
            Source { path, text }
        })
        .collect()
}

fn collect(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect(&path, files);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            files.push(path);
        }
    }
}

/// A pattern found on a code line.
struct Hit {
    path: String,
    line: usize,
    code: String,
    pattern: &'static str,
}

impl Hit {
    fn describe(&self) -> String {
        format!(
            "{}:{}: `{}` in `{}`",
            self.path,
            self.line,
            self.pattern,
            self.code.trim()
        )
    }
}

/// Fails with every violation, one `file:line: what` per line.
fn report(rule: &str, violations: Vec<String>) {
    if violations.is_empty() {
        return;
    }
    let mut message = format!("{rule}:\n");
    for violation in &violations {
        let _ = writeln!(message, "  {violation}");
    }
    panic!("{message}");
}

/// Every place where a code line of a file that `applies` contains one of
/// `patterns`.
fn find(applies: impl Fn(&Source) -> bool, patterns: &[&'static str]) -> Vec<Hit> {
    let mut found = Vec::new();
    for source in sources().iter().filter(|source| applies(source)) {
        for (line, code) in source.code_lines() {
            for pattern in patterns {
                if contains_word(&code, pattern) {
                    found.push(Hit {
                        path: source.path.clone(),
                        line,
                        code: code.clone(),
                        pattern,
                    });
                }
            }
        }
    }
    found
}

fn described(hits: Vec<Hit>) -> Vec<String> {
    hits.iter().map(Hit::describe).collect()
}

/// `pattern` in `code`, not as the tail of a longer identifier (so
/// `Command::new` does not match `ChildCommand::new`).
fn contains_word(code: &str, pattern: &str) -> bool {
    code.match_indices(pattern).any(|(index, _)| {
        let starts_word = pattern
            .chars()
            .next()
            .is_some_and(|c| c.is_alphanumeric() || c == '_');
        !starts_word
            || code[..index]
                .chars()
                .next_back()
                .is_none_or(|c| !(c.is_alphanumeric() || c == '_'))
    })
}

#[test]
fn only_exec_starts_processes() {
    report(
        "only src/exec/ may start a process (ARCHITECTURE.md, invariants); ask exec::run",
        described(find(|source| !source.under(EXEC), SPAWNS)),
    );
    // `use std::process::{Command, ...}` (but not `{ExitCode}`).
    let grouped = find(|source| !source.under(EXEC), &["process::{"])
        .into_iter()
        .filter(|hit| {
            hit.code
                .split_once("process::{")
                .is_some_and(|(_, group)| contains_word(group, "Command"))
        })
        .collect();
    report(
        "only src/exec/ may start a process: no `std::process::Command` import elsewhere",
        described(grouped),
    );
}

#[test]
fn no_rmcp_or_clap_below_the_faces() {
    report(
        "rmcp and clap belong to the faces (src/mcp/, src/cli/, src/main.rs)",
        described(find(
            |source| !source.is_face(),
            &[
                "rmcp::",
                "use rmcp",
                "clap::",
                "use clap",
                "#[arg(",
                "#[command(",
            ],
        )),
    );
}

/// Inside the faces, clap is the CLI's; the exceptions say why.
#[test]
fn clap_lives_in_the_cli() {
    let clap_elsewhere = find(
        |source| source.is_face() && !source.under("src/cli/") && source.path != "src/main.rs",
        &["clap::", "use clap"],
    )
    .into_iter()
    .filter(|hit| {
        !CLAP_OUTSIDE_CLI
            .iter()
            .any(|(path, what)| hit.path == *path && hit.code.contains(what))
    })
    .collect();
    report(
        "clap outside src/cli/ needs an entry in CLAP_OUTSIDE_CLI with its reason",
        described(clap_elsewhere),
    );
}

#[test]
fn only_settings_reads_the_environment() {
    report(
        "the environment is read once, in src/settings.rs; take the value from Settings",
        described(find(|source| source.path != SETTINGS, ENV_READS)),
    );
}

#[test]
fn only_the_faces_read_argv() {
    report(
        "argv is read by the faces only",
        described(find(|source| !source.is_face(), ARGV_READS)),
    );
}

#[test]
fn every_module_opens_with_a_doc_comment() {
    let missing = sources()
        .into_iter()
        .filter(|source| !source.text.starts_with("//!"))
        .map(|source| format!("{}:1: no `//!` module doc", source.path))
        .collect();
    report(
        "every module says what it is for in a leading `//!` comment",
        missing,
    );
}

/// Every `crate::<module>` a file names, with its line, including the
/// names inside `use crate::{...}` groups (which may span lines).
fn crate_modules(source: &Source) -> Vec<(usize, String)> {
    let code: Vec<String> = source.code_lines().map(|(_, code)| code).collect();
    let text = code.join("\n");
    let line_of = |offset: usize| text[..offset].matches('\n').count() + 1;
    let mut found = Vec::new();
    for (index, _) in text.match_indices("crate::") {
        if text[..index]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
        {
            continue; // `solvergate_crate::`, not ours
        }
        let rest = &text[index + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            for (offset, name) in group_names(group) {
                found.push((line_of(index + "crate::{".len() + offset), name));
            }
        } else {
            found.push((line_of(index), leading_word(rest)));
        }
    }
    found
}

/// The identifier `text` starts with.
fn leading_word(text: &str) -> String {
    text.chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// The top-level names of a `use` group (the text just after its `{`),
/// each with its offset: the first word of every item at brace depth 0.
fn group_names(group: &str) -> Vec<(usize, String)> {
    let mut names = Vec::new();
    let mut depth = 0;
    let mut start = true;
    for (offset, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => start = true,
            c if start && (c.is_alphanumeric() || c == '_') => {
                start = false;
                names.push((offset, leading_word(&group[offset..])));
            }
            _ => {}
        }
    }
    names
}

#[test]
fn services_import_only_the_siblings_they_build_on() {
    let mut violations = Vec::new();
    for source in sources() {
        let Some(service) = source.service() else {
            continue;
        };
        let allowed = SERVICE_ARROWS
            .iter()
            .find(|(name, _)| *name == service)
            .map_or(&[][..], |(_, allowed)| *allowed);
        for (line, module) in crate_modules(&source) {
            let sibling = SERVICES.contains(&module.as_str()) && module != service;
            if sibling && !allowed.contains(&module.as_str()) {
                violations.push(format!(
                    "{}:{line}: service `{service}` imports `{module}`",
                    source.path
                ));
            }
        }
    }
    report(
        "a service imports only the siblings SERVICE_ARROWS (and ARCHITECTURE.md) allow",
        violations,
    );
}

#[test]
fn arrows_point_down() {
    let mut violations = Vec::new();
    for source in sources() {
        let foundation = FOUNDATION.iter().any(|prefix| source.under(prefix));
        if source.is_face() || source.path == "src/lib.rs" {
            continue;
        }
        for (line, module) in crate_modules(&source) {
            let face = module == "mcp" || module == "cli";
            let service = SERVICES.contains(&module.as_str());
            if face || (foundation && service) {
                violations.push(format!(
                    "{}:{line}: imports `{module}`, which sits above it",
                    source.path
                ));
            }
        }
    }
    report(
        "services import no face, foundation imports neither (ARCHITECTURE.md, bird's-eye view)",
        violations,
    );
}

/// Top-level files that are no layer: the crate root, and proptest
/// strategies compiled into test builds only.
const OUTSIDE_THE_LAYERS: &[&str] = &["src/lib.rs", "src/strategies.rs"];

/// A new module must be placed in a layer (and, if it is a service, in
/// SERVICE_ARROWS), or the other rules would not know what to check.
#[test]
fn every_module_belongs_to_a_layer() {
    let unplaced = sources()
        .into_iter()
        .filter(|source| {
            !(source.is_face()
                || source.service().is_some()
                || FOUNDATION.iter().any(|prefix| source.under(prefix))
                || OUTSIDE_THE_LAYERS.contains(&source.path.as_str()))
        })
        .map(|source| format!("{}:1: in no layer", source.path))
        .collect();
    report(
        "add the module to FACES, SERVICES (with its SERVICE_ARROWS) or FOUNDATION",
        unplaced,
    );
    let missing = SERVICES
        .iter()
        .filter(|service| !SERVICE_ARROWS.iter().any(|(name, _)| name == *service))
        .map(|service| format!("{service}: no row in SERVICE_ARROWS"))
        .collect();
    report("every service has a row of allowed arrows", missing);
}

/// The checks themselves: a broken rule must be seen.
#[test]
fn the_checks_see_what_they_look_for() {
    assert!(contains_word(
        "let c = Command::new(\"sh\");",
        "Command::new"
    ));
    assert!(!contains_word("ChildCommand::new(&binary)", "Command::new"));
    assert!(contains_word("child.spawn()", ".spawn()"));
    assert!(!contains_word("tasks.spawn(async move {})", ".spawn()"));
    assert_eq!(strip_comment("let x = 1; // Command::new"), "let x = 1; ");
    assert_eq!(
        strip_comment("let url = \"https://example.org\";"),
        "let url = \"https://example.org\";"
    );
    let source = Source {
        path: "src/cpsat/x.rs".to_owned(),
        text: "//! x\nuse crate::{\n    diagnostics::ToolError,\n    minizinc::{A, B},\n};\nfn f() { crate::jobs::g(); }\n// crate::unsat\n".to_owned(),
    };
    assert_eq!(source.service(), Some("cpsat"));
    assert_eq!(
        crate_modules(&source),
        [
            (3, "diagnostics".to_owned()),
            (4, "minizinc".to_owned()),
            (6, "jobs".to_owned())
        ]
    );
}

/// The sibling files a file names: `super::<name>` (also inside `use
/// super::{...}` groups) and `crate::<folder>::<name>`, where `<name>` is
/// another non-`mod.rs` file of the same folder. Test modules (from the
/// first `#[cfg(test)]` on) do not count.
fn sibling_imports(source: &Source, siblings: &[String]) -> Vec<String> {
    let code: Vec<String> = source
        .code_lines()
        .map(|(_, code)| code)
        .take_while(|code| code.trim() != "#[cfg(test)]")
        .collect();
    let text = code.join("\n");
    let folder = Path::new(&source.path)
        .parent()
        .and_then(|dir| dir.strip_prefix("src").ok())
        .map(|dir| dir.to_string_lossy().replace('/', "::"))
        .unwrap_or_default();
    let mut prefixes = vec!["super::".to_owned()];
    if !folder.is_empty() {
        prefixes.push(format!("crate::{folder}::"));
    }
    let mut names = Vec::new();
    for prefix in &prefixes {
        for (index, _) in text.match_indices(prefix.as_str()) {
            if text[..index]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':')
            {
                continue; // `super::super::`, `a::super::`
            }
            let rest = &text[index + prefix.len()..];
            match rest.strip_prefix('{') {
                Some(group) => names.extend(group_names(group).into_iter().map(|(_, name)| name)),
                None => names.push(leading_word(rest)),
            }
        }
    }
    let stem = Path::new(&source.path)
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut found: Vec<String> = names
        .into_iter()
        .filter(|name| *name != stem && siblings.contains(name))
        .collect();
    found.sort();
    found.dedup();
    found
}

/// Every cycle of imports among the non-`mod.rs` files of one folder, as
/// the files of each strongly connected group.
fn folder_cycles(sources: &[Source]) -> Vec<Vec<String>> {
    use std::collections::BTreeMap;
    let mut folders: BTreeMap<String, Vec<&Source>> = BTreeMap::new();
    for source in sources {
        let path = Path::new(&source.path);
        if path
            .file_name()
            .is_some_and(|name| name == "mod.rs" || name == "lib.rs" || name == "main.rs")
        {
            continue;
        }
        let folder = path
            .parent()
            .map(|dir| dir.to_string_lossy().into_owned())
            .unwrap_or_default();
        folders.entry(folder).or_default().push(source);
    }
    let mut cycles = Vec::new();
    for (folder, files) in folders {
        let stems: Vec<String> = files
            .iter()
            .filter_map(|source| Path::new(&source.path).file_stem())
            .map(|stem| stem.to_string_lossy().into_owned())
            .collect();
        let edges: BTreeMap<String, Vec<String>> = files
            .iter()
            .zip(&stems)
            .map(|(source, stem)| (stem.clone(), sibling_imports(source, &stems)))
            .collect();
        // Two files are in one cycle when each reaches the other.
        let reaches = |from: &str| -> Vec<String> {
            let mut seen = vec![from.to_owned()];
            let mut stack = vec![from.to_owned()];
            while let Some(at) = stack.pop() {
                for next in edges.get(&at).into_iter().flatten() {
                    if !seen.contains(next) {
                        seen.push(next.clone());
                        stack.push(next.clone());
                    }
                }
            }
            seen
        };
        let mut placed: Vec<String> = Vec::new();
        for stem in &stems {
            if placed.contains(stem) {
                continue;
            }
            let mut group: Vec<String> = reaches(stem)
                .into_iter()
                .filter(|other| other != stem && reaches(other).contains(stem))
                .collect();
            if group.is_empty() {
                continue;
            }
            group.push(stem.clone());
            group.sort();
            placed.extend(group.iter().cloned());
            cycles.push(
                group
                    .iter()
                    .map(|stem| format!("{folder}/{stem}.rs"))
                    .collect(),
            );
        }
    }
    cycles
}

#[test]
fn no_folder_has_an_import_cycle_between_its_files() {
    let cycles: Vec<String> = folder_cycles(&sources())
        .into_iter()
        .map(|cycle| cycle.join(" <-> "))
        .collect();
    report(
        "the files of a folder import each other in one direction only (no cycle)",
        cycles,
    );
}

#[test]
fn the_cycle_check_sees_a_cycle() {
    let file = |path: &str, text: &str| Source {
        path: path.to_owned(),
        text: format!("//! x\n{text}"),
    };
    let sources = [
        file("src/a/one.rs", "use super::two::X;\n"),
        file("src/a/two.rs", "use crate::a::{three::Y, one};\n"),
        file(
            "src/a/three.rs",
            "fn f() { super::one::g(); }\n#[cfg(test)]\nmod tests { use super::two; }\n",
        ),
        file("src/a/four.rs", "use super::one::Z;\n"),
        file("src/b/one.rs", "use super::two::X;\n"),
        file(
            "src/b/two.rs",
            "#[cfg(test)]\nmod tests { use super::one; }\n",
        ),
    ];
    assert_eq!(
        folder_cycles(&sources),
        [vec![
            "src/a/one.rs".to_owned(),
            "src/a/three.rs".to_owned(),
            "src/a/two.rs".to_owned()
        ]]
    );
}
