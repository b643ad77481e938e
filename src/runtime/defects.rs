//! Known defects of the MiniZinc runtimes people already have, recognised
//! by what the runtime prints (its signature), never by a version string
//! alone: a distribution may patch a version, and another may ship the same
//! mistake under a new one.
//!
//! Today there is one: Debian 12's (and Ubuntu's) `minizinc` 2.6.4 with the
//! `flatzinc` package's Gecode 6.2 library, where `include "globals.mzn"`
//! fails with a type error inside the standard library's `inverse_fn.mzn`.
//! The user's model is not at fault, and a client told "type error" would
//! rewrite a correct model; it is told what the runtime did and what works.
//!
//! What must not break: a signature matches only the runtime's own library
//! file, so an error in a user's model is never blamed on the runtime.

/// The machine-readable name of the broken-`globals.mzn` defect (the
/// `runtime_defect` detail of a diagnostic).
pub const BROKEN_GLOBALS: &str = "globals_inverse_fn";

/// What a person is told about the broken-`globals.mzn` defect.
pub const BROKEN_GLOBALS_ADVICE: &str = "`include \"globals.mzn\";` fails inside this runtime's own library (std/inverse_fn.mzn), for any model that includes it: a defect of Debian 12's minizinc 2.6.4 with Gecode 6.2's library. Include only the globals the model uses (e.g. `include \"alldifferent.mzn\";`), use another solver, or install the pinned runtime with `solvergate install-runtime`";

/// The model a runtime compiles to find the defect before a user does.
pub const GLOBALS_PROBE_MODEL: &str = "include \"globals.mzn\";\nvar 0..1: x;\nsolve satisfy;\n";

/// Whether an error MiniZinc reported at `location` (its file name, or
/// `file:line.column`) with `message` is the broken-`globals.mzn` defect.
pub fn is_broken_globals(location: &str, message: &str) -> bool {
    let file = location.split(':').next().unwrap_or(location);
    let in_library = file.ends_with("/std/inverse_fn.mzn");
    in_library && message.contains("no function or predicate with this signature found: `inverse(")
}

/// Whether a compile's plain `stderr` shows the broken-`globals.mzn`
/// defect. MiniZinc prints the error line (`Error: type error: …`), the
/// candidates it tried, then the location on a line of its own
/// (`…/std/inverse_fn.mzn:18.18-33`).
pub fn stderr_shows_broken_globals(stderr: &str) -> bool {
    let message = stderr.lines().find_map(|line| {
        line.trim()
            .strip_prefix("Error: type error: ")
            .filter(|message| is_broken_globals("/std/inverse_fn.mzn", message))
    });
    let located = stderr
        .lines()
        .any(|line| is_broken_globals(line.trim(), message.unwrap_or_default()));
    message.is_some() && located
}

#[cfg(test)]
mod tests {
    use super::*;

    const MESSAGE: &str = "no function or predicate with this signature found: `inverse(array[int] of var opt int,array[int] of var opt int)'";

    #[test]
    fn the_defect_is_the_library_file_and_its_message() {
        assert!(is_broken_globals(
            "/usr/share/minizinc/std/inverse_fn.mzn:18.18",
            MESSAGE
        ));
        assert!(is_broken_globals(
            "/opt/mzn/share/minizinc/std/inverse_fn.mzn",
            MESSAGE
        ));
        // The same words in the user's own file are the user's.
        assert!(!is_broken_globals("/tmp/x/model.mzn:3.1", MESSAGE));
        assert!(!is_broken_globals("/tmp/x/inverse_fn.mzn:3.1", MESSAGE));
        // Another error in that library file is not this defect.
        assert!(!is_broken_globals(
            "/usr/share/minizinc/std/inverse_fn.mzn:18.18",
            "undefined identifier `foo'"
        ));
    }

    #[test]
    fn stderr_shows_the_defect_with_its_location() {
        let stderr = format!(
            "Warning: included file \"count.mzn\" overrides a global constraint file\n\nError: type error: {MESSAGE}\nCannot use the following functions\n    (requires 1 argument, but 2 given)\n\n/usr/share/minizinc/std/inverse_fn.mzn:18.18-33\n"
        );
        assert!(stderr_shows_broken_globals(&stderr));
        // The same error located in the user's model is the user's.
        assert!(!stderr_shows_broken_globals(&format!(
            "Error: type error: {MESSAGE}\n\n/tmp/model.mzn:1.1-9\n"
        )));
        // The library file named by another error is not the defect.
        assert!(!stderr_shows_broken_globals(
            "Error: type error: undefined identifier `x'\n/usr/share/minizinc/std/inverse_fn.mzn:18.18-33\n"
        ));
        assert!(!stderr_shows_broken_globals(""));
    }
}
