//! A failed run's last words: whether the runtime said, in its own terminal
//! form, that a limit refused it an allocation, a process or a write.
//!
//! Under rlimits the kernel counts nothing: a refused allocation, fork or
//! write is only an error code handed to the program, which dies of it in
//! its own way. Each runtime has one such way, and only that form at the
//! very end of its output is read here; a word anywhere else (a script that
//! logs "retrying after MemoryError" and then fails of something else, a
//! checker whose message quotes the word, a chained exception whose last
//! link is not the refusal) is not a breach. The forms, each captured from
//! the real runtime under a low rlimit (the tests below hold the texts):
//!
//! | refused | runtime | terminal form |
//! |---|---|---|
//! | memory | Python | a traceback on stderr whose exception line, the last line, is `MemoryError` (or `MemoryError: …`, or numpy's `…._ArrayMemoryError: …`), or `OSError: [Errno 12] Cannot allocate memory` |
//! | memory | C++ (a solver, OR-Tools' threads) | `terminate called after throwing an instance of 'std::bad_alloc'` then `  what():  std::bad_alloc`, ending stderr |
//! | memory | MiniZinc 2.6 / 2.9 | `{"type": "error", "what": "error", "message": "out of memory"}` as the last line of stdout (`--json-stream`); 2.6 otherwise ends stderr with a bare `std::bad_alloc` (json-stream) or `Error: error: out of memory` (plain) |
//! | processes | Python | a traceback ending `…: [Errno 11] Resource temporarily unavailable` (a fork) or `RuntimeError: can't start new thread` |
//! | processes | C++ | `terminate called after throwing an instance of 'std::system_error'` then `  what():  Resource temporarily unavailable` |
//! | file size | Python | a traceback ending `…: [Errno 27] File too large` (Python ignores SIGXFSZ); anything else dies of SIGXFSZ, which [`super::limits`] reads from the exit |
//!
//! What this module does not do: decide whether a limit was in force (the
//! caller reads only the kinds its rlimits bound), or read a run that
//! succeeded. A script that catches its `MemoryError` and exits 0 with an
//! answer was refused an allocation but not stopped by a limit: the run is
//! not a breach, and nothing here says otherwise (see [`super::limits`]).
//!
//! The one thing not to break: a form is matched at the end of its stream,
//! whole, never as a word found somewhere in the text.

/// What a limit refused, as the runtime said it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refused {
    /// An allocation.
    Memory,
    /// A new process or thread.
    Processes,
    /// A write past the file size limit.
    FileSize,
}

/// The runtime's words for what was refused: the line that says it,
/// trimmed and shortened to 200 characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct LastWords {
    pub refused: Refused,
    pub line: String,
}

/// What a failed run's runtime said was refused, read from the ends of its
/// stdout and stderr; `None` when neither ends in a refusal's form.
pub(super) fn read(stdout: &str, stderr: &str) -> Option<LastWords> {
    let said = |refused: Refused, line: &str| LastWords {
        refused,
        line: line.trim().chars().take(200).collect(),
    };
    if let Some((refused, line)) = python_exception(stderr).and_then(python_refusal) {
        return Some(said(refused, line));
    }
    if let Some((refused, line)) = cpp_terminate(stderr) {
        return Some(said(refused, line));
    }
    if let Some(line) = minizinc_out_of_memory(stdout, stderr) {
        return Some(said(Refused::Memory, line));
    }
    None
}

/// The last `count` non-blank lines of `text`, last first.
fn last_lines(text: &str, count: usize) -> Vec<&str> {
    text.lines()
        .rev()
        .filter(|line| !line.trim().is_empty())
        .take(count)
        .collect()
}

/// The exception line that ends a Python traceback at the end of `stderr`:
/// the last line, not indented, below the frames of a `Traceback (most
/// recent call last):` header (each frame line indented). Only the last
/// exception of a chain counts.
fn python_exception(stderr: &str) -> Option<&str> {
    let mut lines = stderr.lines().rev().filter(|line| !line.trim().is_empty());
    let exception = lines.next()?;
    if exception.starts_with(char::is_whitespace) {
        return None;
    }
    for line in lines {
        if line == "Traceback (most recent call last):" {
            return Some(exception);
        }
        if !line.starts_with(char::is_whitespace) {
            return None;
        }
    }
    None
}

/// What a Python exception line says was refused, if anything.
fn python_refusal(line: &str) -> Option<(Refused, &str)> {
    let (name, message) = match line.split_once(": ") {
        Some((name, message)) => (name, message),
        None => (line, ""),
    };
    // A dotted name (`numpy._core._exceptions._ArrayMemoryError`) counts by
    // its last part; a name has no spaces.
    if name.contains(char::is_whitespace) {
        return None;
    }
    let short = name.rsplit('.').next().unwrap_or(name);
    let refused = match (short, message) {
        ("MemoryError" | "_ArrayMemoryError", _) => Refused::Memory,
        (_, "[Errno 12] Cannot allocate memory") => Refused::Memory,
        (_, "[Errno 11] Resource temporarily unavailable") => Refused::Processes,
        ("RuntimeError", "can't start new thread") => Refused::Processes,
        (_, "[Errno 27] File too large") => Refused::FileSize,
        _ => return None,
    };
    Some((refused, line))
}

/// C++'s default terminate handler on an uncaught `std::bad_alloc` or a
/// thread refused with EAGAIN, ending stderr.
fn cpp_terminate(stderr: &str) -> Option<(Refused, &str)> {
    let last = last_lines(stderr, 2);
    let [what, terminate] = last.as_slice() else {
        return None;
    };
    let thrown = terminate.strip_prefix("terminate called after throwing an instance of ")?;
    let what = what.trim_start().strip_prefix("what():")?.trim();
    let refused = match (thrown, what) {
        ("'std::bad_alloc'", _) => Refused::Memory,
        ("'std::system_error'", "Resource temporarily unavailable") => Refused::Processes,
        _ => return None,
    };
    Some((refused, terminate))
}

/// MiniZinc's report of a failed allocation: its JSON error as the last
/// line of stdout, or (2.6) its bare `std::bad_alloc` or plain-mode error
/// as the last line of stderr.
fn minizinc_out_of_memory<'a>(stdout: &'a str, stderr: &'a str) -> Option<&'a str> {
    if let Some(line) = last_lines(stdout, 1).first()
        && let Ok(serde_json::Value::Object(error)) = serde_json::from_str(line)
        && error.get("type").and_then(|v| v.as_str()) == Some("error")
        && error.get("what").and_then(|v| v.as_str()) == Some("error")
        && error.get("message").and_then(|v| v.as_str()) == Some("out of memory")
    {
        return Some(line);
    }
    let last = *last_lines(stderr, 1).first()?;
    matches!(
        last.trim(),
        "std::bad_alloc" | "Error: error: out of memory"
    )
    .then_some(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Every text below was captured from the real runtime (Python 3.11.7,
    // OR-Tools' CP-SAT, MiniZinc 2.6.4 and 2.9.2) under `prlimit --data=512M`,
    // `--nproc`, `--fsize`; only the script paths are shortened.

    const PYTHON_MEMORY: &str = "Traceback (most recent call last):
  File \"/tmp/mem.py\", line 1, in <module>
    hog = b\"\\x01\" * (2 << 30)
          ~~~~~~~~^~~~~~~~~~~
MemoryError
";

    const NUMPY_MEMORY: &str = "Traceback (most recent call last):
  File \"/tmp/np.py\", line 2, in <module>
    a = numpy.ones((30000, 30000))
        ^^^^^^^^^^^^^^^^^^^^^^^^^^
  File \"/venv/lib/python3.11/site-packages/numpy/_core/numeric.py\", line 232, in ones
    a = empty(shape, dtype, order, device=device)
        ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
numpy._core._exceptions._ArrayMemoryError: Unable to allocate 6.71 GiB for an array with shape (30000, 30000) and data type float64
";

    /// A MemoryError caught and turned into another failure.
    const PYTHON_CHAINED: &str = "Traceback (most recent call last):
  File \"/tmp/memcaught.py\", line 2, in <module>
    hog = b\"\\x01\" * (2 << 30)
          ~~~~~~~~^~~~~~~~~~~
MemoryError

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File \"/tmp/memcaught.py\", line 4, in <module>
    raise ValueError(\"no room\")
ValueError: no room
";

    const PYTHON_FORK: &str = "Traceback (most recent call last):
  File \"/tmp/fork.py\", line 3, in <module>
    if os.fork() == 0:
       ^^^^^^^^^
BlockingIOError: [Errno 11] Resource temporarily unavailable
";

    const PYTHON_THREAD: &str = "Traceback (most recent call last):
  File \"/tmp/thr.py\", line 3, in <module>
    threading.Thread(target=time.sleep, args=(5,), daemon=True).start()
  File \"/usr/lib/python3.11/threading.py\", line 957, in start
    _start_new_thread(self._bootstrap, ())
RuntimeError: can't start new thread
";

    const PYTHON_EFBIG: &str = "Traceback (most recent call last):
  File \"/tmp/efbig.py\", line 3, in <module>
    out.write(b\"\\x01\" * (1 << 20))
OSError: [Errno 27] File too large
";

    /// CP-SAT on 8 workers under `--nproc=8`.
    const CPSAT_THREADS: &str = "terminate called after throwing an instance of 'std::system_error'
  what():  Resource temporarily unavailable
";

    /// MiniZinc 2.9.2 flattening 2,500 × 2,500 variables: both streams.
    const MINIZINC_29_STDOUT: &str =
        "{\"type\": \"error\", \"what\": \"error\", \"message\": \"out of memory\"}\n";
    const MINIZINC_29_STDERR: &str =
        "terminate called after throwing an instance of 'std::bad_alloc'
  what():  std::bad_alloc
";

    /// MiniZinc 2.6.4, `--json-stream`: one of two endings, run to run.
    const MINIZINC_26_WARNING: &str = "{\"type\": \"warning\", \"message\": \"included file \\\"count.mzn\\\" overrides a global constraint file from the standard library. This is deprecated. For a solver-specific redefinition of a global constraint, override \\\"fzn_<global>.mzn\\\" instead.\"}\n";
    const MINIZINC_26_STDERR: &str = "std::bad_alloc\n";
    /// MiniZinc 2.6.4 without `--json-stream`.
    const MINIZINC_26_PLAIN: &str = "Warning: included file \"count.mzn\" overrides a global constraint file from the standard library. This is deprecated. For a solver-specific redefinition of a global constraint, override \"fzn_<global>.mzn\" instead.

Error: error: out of memory
";

    fn refused(stdout: &str, stderr: &str) -> Option<Refused> {
        read(stdout, stderr).map(|words| words.refused)
    }

    #[test]
    fn each_runtime_s_own_form_is_read() {
        let memory = Some(Refused::Memory);
        assert_eq!(refused("", PYTHON_MEMORY), memory);
        assert_eq!(read("", PYTHON_MEMORY).unwrap().line, "MemoryError");
        assert_eq!(refused("", NUMPY_MEMORY), memory);
        assert_eq!(refused(MINIZINC_29_STDOUT, MINIZINC_29_STDERR), memory);
        assert_eq!(refused(MINIZINC_29_STDOUT, ""), memory);
        assert_eq!(refused("", MINIZINC_29_STDERR), memory);
        let json_2_6 = format!("{MINIZINC_26_WARNING}{MINIZINC_29_STDOUT}");
        assert_eq!(refused(&json_2_6, ""), memory);
        assert_eq!(refused(MINIZINC_26_WARNING, MINIZINC_26_STDERR), memory);
        assert_eq!(refused("", MINIZINC_26_PLAIN), memory);
        assert_eq!(refused("", PYTHON_FORK), Some(Refused::Processes));
        assert_eq!(refused("", PYTHON_THREAD), Some(Refused::Processes));
        assert_eq!(refused("", CPSAT_THREADS), Some(Refused::Processes));
        assert_eq!(refused("", PYTHON_EFBIG), Some(Refused::FileSize));
        assert_eq!(
            read("", PYTHON_EFBIG).unwrap().line,
            "OSError: [Errno 27] File too large"
        );
    }

    #[test]
    fn a_word_that_only_mentions_a_refusal_is_not_one() {
        // A chain whose last link is not the refusal.
        assert_eq!(refused("", PYTHON_CHAINED), None);
        // A script that logs the word, then fails of something else.
        let retried = "retrying after MemoryError\nTraceback (most recent call last):\n  File \"/tmp/x.py\", line 9, in <module>\n    raise ValueError(\"no solution\")\nValueError: no solution\n";
        assert_eq!(refused("", retried), None);
        // The word printed last, but by the script, not in a traceback.
        assert_eq!(refused("", "MemoryError\n"), None);
        assert_eq!(refused("", "gave up: MemoryError\n"), None);
        assert_eq!(refused("retrying after MemoryError\n", ""), None);
        // An exception whose message quotes the word.
        let quoted = "Traceback (most recent call last):\n  File \"/tmp/c.py\", line 3, in <module>\nValueError: the model needs more memory than MemoryError allows\n";
        assert_eq!(refused("", quoted), None);
        // A checker's verdict that quotes the words.
        let checker = "{\"status\": \"rejected\", \"errors\": [\"out of memory\", \"std::bad_alloc\", \"[Errno 11] Resource temporarily unavailable\", \"File too large\"]}\n";
        assert_eq!(refused(checker, ""), None);
        // A MiniZinc error about something else, and one that mentions it.
        let other =
            "{\"type\": \"error\", \"what\": \"type error\", \"message\": \"out of memory\"}\n";
        assert_eq!(refused(other, ""), None);
        let trace = "{\"type\": \"error\", \"what\": \"error\", \"message\": \"out of memory\"}\n{\"type\": \"status\", \"status\": \"UNKNOWN\"}\n";
        assert_eq!(refused(trace, ""), None);
        // A terminate for another exception.
        let other_throw = "terminate called after throwing an instance of 'std::system_error'\n  what():  Invalid argument\n";
        assert_eq!(refused("", other_throw), None);
        // The refusal followed by more output of the program.
        assert_eq!(refused("", &format!("{PYTHON_MEMORY}then went on\n")), None);
    }
}
