//! The text part of MCP tool results as a client reads it: the whole text
//! of typical results and of a capped one, pinned as `insta` snapshots per
//! MiniZinc version (times, elapsed and paths filtered), taken from the
//! binary over stdio. The structured content is tested by `tests/mcp/`;
//! here only the words a model reads first.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};

mod common;
use common::{
    limit_filters, per_runtime, regex_escape, snapshot_settings, test_python, test_runtime,
};

/// The text part may hold at most this many bytes (`render::TEXT_LIMIT`).
const TEXT_LIMIT: usize = 16 * 1024;

/// A `solvergate stdio` session with a private home.
struct Session {
    _home: tempfile::TempDir,
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<std::process::ChildStdout>,
    next_id: u64,
}

impl Session {
    fn start() -> Session {
        Session::start_with(&[])
    }

    /// A session whose server gets the variables `env` as well.
    fn start_with(env: &[(&str, &OsStr)]) -> Session {
        Session::start_at("2025-06-18", env)
    }

    /// A session that negotiates MCP `version`.
    fn start_at(version: &str, env: &[(&str, &OsStr)]) -> Session {
        let home = tempfile::tempdir().unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_solvergate"))
            .arg("--runtime-dir")
            .arg(test_runtime())
            .args(["stdio", "--toolset", "full"])
            .env("XDG_CONFIG_HOME", home.path().join("config"))
            .env("XDG_DATA_HOME", home.path().join("data"))
            .env("HOME", home.path())
            .env_remove("SOLVERGATE_RUNTIME_DIR")
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut session = Session {
            _home: home,
            child,
            stdin,
            stdout,
            next_id: 1,
        };
        session.request(
            "initialize",
            serde_json::json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}),
        );
        session.send(&serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        session
    }

    fn send(&mut self, message: &serde_json::Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    fn request(&mut self, method: &str, params: serde_json::Value) -> serde_json::Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(
            &serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        );
        let mut line = String::new();
        loop {
            line.clear();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "the server closed stdout"
            );
            let message: serde_json::Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message;
            }
        }
    }

    /// The one text part of a tool call's result.
    fn text(&mut self, tool: &str, arguments: serde_json::Value) -> String {
        let answer = self.request(
            "tools/call",
            serde_json::json!({"name": tool, "arguments": arguments}),
        );
        let content = answer["result"]["content"].as_array().unwrap();
        // One text part, then at most the link to the whole result, which
        // the text names too.
        assert!(matches!(content.len(), 1 | 2), "{answer}");
        let text = content[0]["text"].as_str().unwrap().to_owned();
        if let Some(link) = content.get(1) {
            assert_eq!(link["type"], "resource_link", "{answer}");
            let uri = link["uri"].as_str().unwrap();
            assert!(text.contains(&format!("Whole result: {uri} (")), "{text}");
        }
        text
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.stdin.take();
        let _ = self.child.wait();
    }
}

fn assert_text(name: &str, text: &str) {
    assert!(text.len() <= TEXT_LIMIT, "{name}: {} bytes", text.len());
    let mut settings = snapshot_settings();
    per_runtime(&mut settings);
    settings.add_filter(r"Elapsed: \d+ ms", "Elapsed: [N] ms");
    settings.add_filter(r"Duration: \d+ ms", "Duration: [N] ms");
    kept_result_filters(&mut settings);
    settings.add_filter(r"\((solver [^,]+), \d+ ms\)", "($1, [N] ms)");
    settings.add_filter(r"(?m)^(  \w*([Tt]ime|Mem)\w*): \S+$", "$1: [filtered]");
    settings.add_filter(r"solve time \S+ s", "solve time [filtered] s");
    settings.bind(|| insta::assert_snapshot!(name, text));
}

/// The kept result's id, size and file, which every run makes anew.
fn kept_result_filters(settings: &mut insta::Settings) {
    settings.add_filter(
        r"solvergate://results/([a-z_]+)-[0-9a-f]{32}",
        "solvergate://results/$1-[ID]",
    );
    settings.add_filter(r"\(\d+ bytes; file [^)]*\)", "([N] bytes; file [PATH])");
}

const OPTIMISING: &str = "var 1..9: x; var 1..9: y;\nconstraint x + 2 * y <= 14;\nsolve maximize 3 * x + y;\noutput [\"best: x=\\(x), y=\\(y)\\n\"];\n";

const THREE_SOLUTIONS: &str = "var 1..3: x;\noutput [\"x is \\(x)\\n\"];\n";

const UNSATISFIABLE: &str = "var 1..3: x;\nconstraint x > 5;\n";

/// Far more solutions than fit under the 1 MiB cap.
const PRINTER: &str =
    "array[1..6] of var 0..9: x;\nconstraint sum(x) < 40;\noutput [\"x = \\(x)\\n\"];\n";

#[test]
fn text_parts_of_typical_results() {
    let mut session = Session::start();
    let cases = [
        (
            "solve_optimal",
            "solve_minizinc_model",
            serde_json::json!({"model": OPTIMISING, "solver": "gecode"}),
        ),
        (
            "solve_all_solutions",
            "solve_minizinc_model",
            serde_json::json!({"model": THREE_SOLUTIONS, "solver": "gecode", "all_solutions": true}),
        ),
        (
            "solve_unsatisfiable",
            "solve_minizinc_model",
            serde_json::json!({"model": UNSATISFIABLE, "solver": "gecode"}),
        ),
        (
            "check_syntax_error",
            "check_minizinc_model",
            serde_json::json!({"model": "var 1..3: x\nconstraint x > 1;\n", "solver": "gecode"}),
        ),
    ];
    for (name, tool, arguments) in cases {
        let text = session.text(tool, arguments);
        assert_text(name, &text);
    }
}

/// `check_runtime`: both runtimes (and a runtime's known defects), then the limits every run is held to
/// and how each is enforced, with its notes. Under rlimits only, so the
/// mechanisms do not depend on the host's cgroups; root, whom the kernel
/// exempts from RLIMIT_NPROC, is filtered to the words of anyone else.
#[test]
fn text_part_of_check_runtime() {
    let python = test_python();
    let mut session = Session::start_with(&[
        ("SOLVERGATE_CPSAT_PYTHON", python.as_os_str()),
        ("SOLVERGATE_LIMITS", OsStr::new("rlimit")),
        ("SOLVERGATE_MEMORY_LIMIT_MB", OsStr::new("3000")),
        ("SOLVERGATE_MAX_PROCESSES", OsStr::new("64")),
        ("SOLVERGATE_FILE_SIZE_LIMIT_MB", OsStr::new("256")),
        ("SOLVERGATE_SCRATCH_LIMIT_MB", OsStr::new("512")),
    ]);
    let text = session.text("check_runtime", serde_json::json!({}));
    let mut settings = snapshot_settings();
    // Per runtime: Debian 12's warns about its broken `globals.mzn`.
    per_runtime(&mut settings);
    settings.add_filter(&regex_escape(&python.to_string_lossy()), "[PYTHON]");
    settings.add_filter(
        &regex_escape(&test_runtime().to_string_lossy()),
        "[RUNTIME]",
    );
    settings.add_filter(r"version [\d.]+", "version [VERSION]");
    settings.add_filter(r"\d+ solvers listed", "[N] solvers listed");
    settings.add_filter(r"OR-Tools [\d.]+", "OR-Tools [VERSION]");
    limit_filters(&mut settings);
    settings.bind(|| insta::assert_snapshot!("check_runtime_limits", text));
}

/// A load plan: one line per card, the mode reads, the packing and the
/// notes, never the plan's JSON. The cohort is the one `plan --example`
/// prints.
#[test]
fn text_part_of_a_load_plan() {
    let example = Command::new(env!("CARGO_BIN_EXE_solvergate"))
        .args(["plan", "--example"])
        .output()
        .unwrap();
    assert!(example.status.success(), "{example:?}");
    let problem: serde_json::Value = serde_json::from_slice(&example.stdout).unwrap();
    let mut session = Session::start();
    let text = session.text("plan_load", serde_json::json!({"problem": problem}));
    assert_text("plan_load_example", &text);
}

/// A solve stopped at the output cap: the text is a summary with the last
/// solution, never the megabyte of output.
#[test]
fn text_part_of_a_capped_result() {
    let mut session = Session::start();
    let text = session.text(
        "solve_minizinc_model",
        serde_json::json!({"model": PRINTER, "solver": "gecode", "all_solutions": true, "timeout_ms": 60000}),
    );
    assert_text("solve_capped", &text);
}

/// Large answers: the scalars first and whole, whatever their names, each
/// large value summarised (length or shape, range, first and last items),
/// nothing cut inside a value — for a MiniZinc solution of 20,000 values
/// and a CP-SAT script's 2,000-task assignment (whose scalars sort after
/// its lists).
#[test]
fn text_parts_of_large_answers() {
    let python = test_python();
    let mut session = Session::start_with(&[("SOLVERGATE_CPSAT_PYTHON", python.as_os_str())]);
    let text = session.text(
        "solve_minizinc_model",
        serde_json::json!({"model": LARGE_SOLUTION, "solver": "gecode"}),
    );
    assert_text("solve_large_solution", &text);
    let text = session.text(
        "run_cpsat_python",
        serde_json::json!({"source": MACHINES, "script_timeout_ms": 60000}),
    );
    assert_text("cpsat_large_solution", &text);
}

/// The solver list: a table with what each solver takes, and no words on
/// how to answer.
#[test]
fn text_part_of_the_solver_list() {
    let mut session = Session::start();
    let text = session.text("list_available_solvers", serde_json::json!({}));
    let mut settings = snapshot_settings();
    per_runtime(&mut settings);
    // Why a solver does not run is the probe's own error, which depends on
    // the machine's libraries and display.
    settings.add_filter(r"\| no: [^|]*\|", "| no: [WHY] |");
    settings.bind(|| insta::assert_snapshot!("solver_list", text));
}

/// A small sheet's cells are in the text, as a table.
#[test]
fn text_part_of_a_small_sheet() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("orders.csv");
    std::fs::write(
        &path,
        "order,pallets,note\nA-1,3,fragile | top\nA-2,12.5,\nA-3,0,\"two\nlines\"\n",
    )
    .unwrap();
    let mut session = Session::start();
    let text = session.text(
        "load_tabular_data",
        serde_json::json!({"path": path.to_string_lossy()}),
    );
    assert!(text.len() <= TEXT_LIMIT);
    // No runtime is involved: one snapshot for both.
    let mut settings = snapshot_settings();
    kept_result_filters(&mut settings);
    settings.bind(|| insta::assert_snapshot!("tabular_small_sheet", text));
}

/// A Python checker that fails names its own error: a traceback's
/// exception and the frame it was raised in, the end of a flood of stderr
/// (bounded), or that it wrote nothing — in a checked run and in a save.
#[test]
fn text_parts_of_failing_checkers() {
    let python = test_python();
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("model.py");
    std::fs::write(&script, CHECKED_ANSWER).unwrap();
    let mut session = Session::start_with(&[("SOLVERGATE_CPSAT_PYTHON", python.as_os_str())]);
    let mut settings = snapshot_settings();
    kept_result_filters(&mut settings);
    settings.add_filter(r"Duration: \d+ ms", "Duration: [N] ms");
    settings.add_filter(r"error\(s\), \d+ ms\)", "error(s), [N] ms)");
    settings.add_filter(r"Run: (\w+) in \d+ ms", "Run: $1 in [N] ms");
    for (name, checker) in [
        ("checker_raises", RAISING_CHECKER),
        ("checker_floods_stderr", FLOODING_CHECKER),
        ("checker_fails_silently", SILENT_CHECKER),
    ] {
        let path = dir.path().join(format!("{name}.py"));
        std::fs::write(&path, checker).unwrap();
        let text = session.text(
            "run_cpsat_python_file_checked",
            serde_json::json!({"script_path": script.to_string_lossy(), "checker_path": path.to_string_lossy(), "checker_timeout_ms": 60000}),
        );
        assert!(text.len() <= TEXT_LIMIT, "{name}: {} bytes", text.len());
        settings.bind(|| insta::assert_snapshot!(name, text));
    }
    let text = session.text(
        "save_verified_cpsat_python",
        serde_json::json!({"source": CHECKED_ANSWER, "checker": RAISING_CHECKER, "verify_only": true}),
    );
    settings.bind(|| insta::assert_snapshot!("save_checker_raises", text));
}

const CHECKED_ANSWER: &str = "import json\nprint(json.dumps({'status': 'optimal', 'objective': 13, 'solution': {'x': [1, 2, 3]}}))\n";

const RAISING_CHECKER: &str = "import json\nimport sys\n\ndef ratio(solution):\n    return solution['x'][0] / 0\n\npayload = json.load(open(sys.argv[1]))\nprint(ratio(payload['solution']))\n";

/// Megabytes of stderr, one line of 300 kB among them, then a crash.
const FLOODING_CHECKER: &str = "import sys\nfor i in range(60000):\n    sys.stderr.write('noise line %06d ' % i + '.' * 70 + '\\n')\nsys.stderr.write('x' * 300000 + '\\n')\nraise RuntimeError('gave up after the noise')\n";

const SILENT_CHECKER: &str = "import sys\nsys.exit(1)\n";

/// The equation tools read as a text-only client's model reads them: the
/// status and the answer first, every value whole, the counts those of the
/// lists below them, each violation with its sides and its unit.
#[test]
fn text_parts_of_the_equation_tools() {
    let mut session = Session::start();
    let cases = [
        (
            "correct_seed",
            "correct_values",
            serde_json::json!({
                "variables": {
                    "gross_amount": {"obs": 500, "confidence": 0.3, "mult_factor": 100, "min": 0, "max": 100000},
                    "quantity": {"obs": 10, "fixed": true},
                    "rate_per_pc": {"obs": 52, "mult_factor": 100, "fixed": true},
                },
                "equations": [{"lhs": "gross_amount", "rhs": "quantity * rate_per_pc", "weight": 1000}],
            }),
        ),
        (
            "correct_unreconciled",
            "correct_values",
            serde_json::json!({
                "variables": {
                    "total": {"obs": 30.5, "mult_factor": 100, "fixed": true},
                    "quantity": {"obs": 3, "fixed": true},
                    "price": {"obs": 9.5, "mult_factor": 100, "fixed": true},
                    "discount": {"obs": 0, "confidence": 0.9, "mult_factor": 100, "min": 0, "max": 100},
                },
                "equations": [
                    {"lhs": "total", "rhs": "quantity * price", "weight": 10},
                    {"lhs": "discount", "rhs": "0", "weight": 1000},
                ],
            }),
        ),
        (
            "correct_invalid",
            "correct_values",
            serde_json::json!({
                "variables": {"a": {"obs": 1}, "b": {"obs": 2}},
                "equations": [{"lhs": "a", "rhs": "-b"}, {"lhs": "a", "rhs": "b * (a"}],
            }),
        ),
        (
            "optimize_soft_violated",
            "optimize_expression",
            serde_json::json!({
                "variables": {
                    "units": {"min": 0, "max": 1000},
                    "price": {"min": 0, "max": 500, "mult_factor": 100},
                },
                "objective": {"expr": "units * price", "direction": "maximize"},
                "hard_constraints": [{"lhs": "units + price", "rhs": "120", "relation": "<="}],
                "soft_constraints": [{"lhs": "price", "rhs": "50", "relation": "<=", "weight": 5}],
            }),
        ),
        (
            "optimize_infeasible",
            "optimize_expression",
            serde_json::json!({
                "variables": {"u": {"min": 0, "max": 10}},
                "objective": {"expr": "u", "direction": "maximize"},
                "hard_constraints": [{"lhs": "u", "rhs": "20", "relation": ">="}],
            }),
        ),
        (
            "validate_mixed",
            "validate_equations",
            serde_json::json!({"equations": [
                {"lhs": "a", "rhs": "b * (c"},
                {"lhs": "x", "rhs": "-y"},
                {"lhs": "a", "rhs": "b"},
            ]}),
        ),
        (
            "evaluate_mixed",
            "evaluate_equations",
            serde_json::json!({
                "values": {"a": 10, "b": 3, "c": 4},
                "equations": [
                    {"lhs": "a", "rhs": "b + c"},
                    {"lhs": "a", "rhs": "b / 0"},
                    {"lhs": "a", "rhs": "d"},
                    {"lhs": "a", "rhs": "b * c - 2"},
                    {"lhs": "a", "rhs": "b * c", "relation": "<="},
                ],
            }),
        ),
    ];
    // Gecode gives the same answers on both runtimes: one snapshot each.
    let mut settings = snapshot_settings();
    kept_result_filters(&mut settings);
    for (name, tool, arguments) in cases {
        let text = session.text(tool, arguments);
        assert!(text.len() <= TEXT_LIMIT, "{name}: {} bytes", text.len());
        settings.bind(|| insta::assert_snapshot!(name, text));
    }
}

const LARGE_SOLUTION: &str = "array[1..20000] of var 0..9: x;\nconstraint forall(i in 1..20000)(x[i] = i mod 10);\nvar 0..200000: total;\nconstraint total = sum(x);\nvar 1..20000: nines;\nconstraint nines = count(i in 1..20000)(x[i] = 9);\nsolve satisfy;\n";

/// The 2,000-task assignment of issue 45, reported without a solve: the
/// scalars the user asked for sort after the lists.
const MACHINES: &str = "import json\nmachine_of_task = [(7 * t) % 40 for t in range(2000)]\nloads = [2400 + m for m in range(40)]\nprint(json.dumps({'status': 'optimal', 'objective': 2450, 'solution': {'loads': loads, 'lower_bound': 2450, 'machine_of_task': machine_of_task, 'makespan': 2450, 'task_1234_machine': machine_of_task[1234]}}))\n";

/// A client older than 2025-06-18 has no `resource_link`: the kept
/// result is named in the text alone, and reads back whole.
#[test]
fn an_older_client_reads_the_kept_result_from_the_text() {
    let mut session = Session::start_at("2025-03-26", &[]);
    let answer = session.request(
        "tools/call",
        serde_json::json!({"name": "solve_minizinc_model", "arguments": {"model": OPTIMISING, "solver": "gecode"}}),
    );
    let content = answer["result"]["content"].as_array().unwrap();
    assert_eq!(content.len(), 1, "{answer}");
    let text = content[0]["text"].as_str().unwrap();
    let uri = text
        .lines()
        .find_map(|line| line.strip_prefix("Whole result: "))
        .and_then(|rest| rest.split_once(' '))
        .map(|(uri, _)| uri.to_owned())
        .unwrap();
    let read = session.request("resources/read", serde_json::json!({"uri": uri}));
    let whole: serde_json::Value =
        serde_json::from_str(read["result"]["contents"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(whole, answer["result"]["structuredContent"], "{read}");
}

/// The whole `tools/list` of the full toolset, schemas included, pinned: a
/// change to any tool's name, description or input or output schema is a
/// reviewed diff. It does not depend on the runtime, so it has no version
/// suffix.
#[test]
fn the_full_tools_list_is_pinned() {
    let mut session = Session::start();
    let answer = session.request("tools/list", serde_json::json!({}));
    let tools = &answer["result"]["tools"];
    assert!(
        tools.as_array().is_some_and(|tools| tools.len() == 40),
        "{answer}"
    );
    let text = serde_json::to_string_pretty(tools).unwrap();
    insta::assert_snapshot!("tools_list_full", text);
}

/// An id no registry has is refused in its kind's words, by get and
/// cancel alike; the wording is shared, only the kind differs.
#[test]
fn unknown_job_ids_are_refused_in_each_kinds_words() {
    let mut session = Session::start();
    let cases = [
        ("get_solve_job", "solve job"),
        ("cancel_solve_job", "solve job"),
        ("get_portfolio_job", "portfolio job"),
        ("cancel_portfolio_job", "portfolio job"),
        ("get_cpsat_python_job", "CP-SAT job"),
        ("cancel_cpsat_python_job", "CP-SAT job"),
    ];
    for (tool, kind) in cases {
        let text = session.text(tool, serde_json::json!({"job_id": "no-such-job"}));
        assert_eq!(
            text,
            format!(
                "Diagnostic: invalid_request — no {kind} with id \"no-such-job\"; ids come from submit, and only the last 64 finished jobs are kept"
            ),
            "{tool}"
        );
    }
}
