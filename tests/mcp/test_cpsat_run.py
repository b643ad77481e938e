"""run_cpsat_python through the real client: real OR-Tools scripts (optimal,
infeasible), the envelope contract (malformed keys named by path, NaN deep
in the solution, no envelope), timeouts that recover the last valid
incumbent, whole-tree kills (timeout with a grandchild), the 1 MiB output
cap, stdin at EOF with the JSON-RPC stream untouched, a missing runtime and
the core toolset.

The CP-SAT interpreter of every server here is this test run's own Python.
"""

from __future__ import annotations

import json
import sys
import time

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from cpsat_helpers import (
    INFEASIBLE_SCRIPT,
    KNAPSACK_OPTIMUM,
    ONE_MIB,
    PYTHON,
    check_knapsack_answer,
    check_result_shape,
    cpsat_server,
    describe,
    has_python,
    knapsack_script,
    leftover_marked_async,
    marked_procs,
    printer,
    wait_marked_async,
)
from helpers import RawServer, call_error, call_ok, non_jsonrpc_lines

pytestmark = [pytest.mark.anyio, pytest.mark.minizinc_independent]


@pytest.fixture(scope="module")
async def cpsat(harness):
    """One full-toolset server for the stateless run tests."""
    async with cpsat_server(harness) as (launched, _marker):
        yield launched


# ---- real scripts -------------------------------------------------------------------


async def test_optimisation_script_is_optimal_with_objective_and_solution(cpsat):
    result = await call_ok(cpsat.session, "run_cpsat_python", {"source": knapsack_script(), "script_timeout_ms": 20000})
    check_result_shape(result)
    assert result["status"] == "optimal", result
    check_knapsack_answer(result)
    assert result["best_objective_bound"] == KNAPSACK_OPTIMUM, result
    assert result["diagnostic"] is None, result
    assert result["return_code"] == 0
    assert result["timed_out"] is False and result["truncated"] is False
    # The raw stdout is kept, and its last line is the envelope read.
    last = json.loads(result["stdout"].strip().splitlines()[-1])
    assert last["objective"] == result["objective"] and last["solution"] == result["solution"]


async def test_infeasible_script_is_infeasible(cpsat):
    result = await call_ok(cpsat.session, "run_cpsat_python", {"source": INFEASIBLE_SCRIPT, "script_timeout_ms": 20000})
    check_result_shape(result)
    assert result["status"] == "infeasible", result
    assert result["diagnostic"] is not None and result["diagnostic"]["category"] == "infeasible", result
    assert result["objective"] is None
    assert result["solution"] == {}, result
    assert result["return_code"] == 0 and result["timed_out"] is False


# ---- the envelope contract ----------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "canonical"),
    [("OPTIMAL", "optimal"), ("FEASIBLE", "feasible"), ("INFEASIBLE", "infeasible"), ("MODEL_INVALID", "error")],
)
async def test_the_solvers_own_status_names_are_accepted(cpsat, given, canonical):
    """`solver.StatusName(status)` spellings work; results use the lowercase words."""
    solution = "{}" if canonical in ("infeasible", "error") else '{"x": 1}'
    objective = "null" if canonical in ("infeasible", "error") else "13"
    envelope = f'{{"status": "{given}", "objective": {objective}, "solution": {solution}}}'
    result = await call_ok(cpsat.session, "run_cpsat_python", {"source": printer(envelope, "")})
    assert result["status"] == canonical, result

VALID = '{"status": "feasible", "objective": 4, "solution": {"x": 1}}'

MALFORMED = [
    ("missing-solution", '{"status": "optimal", "objective": 3}', "", "solution"),
    ("objective-string", '{"status": "optimal", "objective": "13", "solution": {"x": 1}}', "", "objective"),
    ("status-unknown-word", '{"status": "SOLVED", "objective": 13, "solution": {"x": 1}}', "", "status"),
    ("missing-status", '{"objective": 13, "solution": {"x": 1}}', "", "status"),
    ("solution-list", '{"status": "optimal", "objective": 13, "solution": [1, 2]}', "", "solution"),
    # On a clean exit the last object is the result, even after a valid one.
    ("valid-then-malformed", '{"status": "optimal", "objective": 3}', VALID, "solution"),
]


@pytest.mark.parametrize(("envelope", "before", "field"), [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED])
async def test_malformed_envelope_is_an_error_naming_the_key(cpsat, envelope, before, field):
    result = await call_ok(cpsat.session, "run_cpsat_python", {"source": printer(envelope, before)})
    check_result_shape(result)
    assert result["status"] == "error", result
    assert result["solution"] is None and result["objective"] is None, result
    assert result["return_code"] == 0, result
    diagnostic = result["diagnostic"]
    assert diagnostic is not None and diagnostic["category"] == "child_process_error", result
    details = diagnostic.get("details") or {}
    assert details.get("field") == field, diagnostic
    assert isinstance(details.get("reason"), str) and details["reason"], diagnostic


WELL_TYPED = [
    # (id, script, status, objective, bound, solution)
    ("empty-solution", printer('{"status": "optimal", "objective": null, "solution": {}}'), "optimal", None, None, {}),
    (
        "extra-keys-ignored",
        printer('{"status": "feasible", "objective": 2.5, "solution": {"a": 1}, "result_file": "out.json", "stats": {"t": 1}}'),
        "feasible",
        2.5,
        None,
        {"a": 1},
    ),
    (
        "non-finite-bound-is-null",
        printer('{"status": "feasible", "objective": 3, "solution": {"a": 1}, "best_objective_bound": NaN}'),
        "feasible",
        3,
        None,
        {"a": 1},
    ),
    (
        "text-bound-is-null",
        printer('{"status": "feasible", "objective": 3, "solution": {"a": 1}, "best_objective_bound": "7"}'),
        "feasible",
        3,
        None,
        {"a": 1},
    ),
    (
        "crlf-and-log-lines",
        "import sys\nsys.stdout.write('solving\\r\\n{\"status\": \"optimal\", \"objective\": 4, \"solution\": {\"b\": [1]}, \"best_objective_bound\": 4}\\r\\n')\n",
        "optimal",
        4,
        4,
        {"b": [1]},
    ),
    ("nan-inside-a-string-is-text", printer('{"status": "optimal", "objective": 1, "solution": {"s": "NaN"}}'), "optimal", 1, None, {"s": "NaN"}),
    ("unknown", printer('{"status": "unknown", "objective": null, "solution": {}, "best_objective_bound": 10}'), "unknown", None, 10, {}),
]


@pytest.mark.parametrize(
    ("source", "status", "objective", "bound", "solution"), [w[1:] for w in WELL_TYPED], ids=[w[0] for w in WELL_TYPED]
)
async def test_well_typed_envelopes_are_read(cpsat, source, status, objective, bound, solution):
    result = await call_ok(cpsat.session, "run_cpsat_python", {"source": source})
    assert result["status"] == status, result
    assert result["objective"] == objective, result
    assert result["best_objective_bound"] == bound, result
    assert result["solution"] == solution, result
    if status in ("optimal", "feasible"):
        assert result["diagnostic"] is None, result["diagnostic"]
    else:
        assert result["diagnostic"]["category"] == status, result["diagnostic"]


NON_FINITE = [
    (
        "nan-deep-in-solution",
        'json.dumps({"status": "feasible", "objective": 7, "solution": {"tasks": [{"start": 0}, {"start": 2}, {"start": 4}, {"start": float("nan")}]}})',
        'solution["tasks"][3]["start"]',
        "NaN",
    ),
    (
        "infinity-in-nested-list",
        'json.dumps({"status": "feasible", "objective": 7, "solution": {"grid": [[1, 2], [3, float("inf")]]}})',
        'solution["grid"][1][1]',
        "Infinity",
    ),
    (
        "nan-objective",
        'json.dumps({"status": "feasible", "objective": float("nan"), "solution": {"x": 1}})',
        "objective",
        "NaN",
    ),
]


@pytest.mark.parametrize(("expression", "field", "token"), [n[1:] for n in NON_FINITE], ids=[n[0] for n in NON_FINITE])
async def test_non_finite_numbers_are_rejected_with_their_path(cpsat, expression, field, token):
    source = f"import json\nprint({expression})\n"
    result = await call_ok(cpsat.session, "run_cpsat_python", {"source": source})
    assert token in result["stdout"], "Python's json.dumps should have written a bare non-finite token"
    assert result["status"] == "error", result
    assert result["solution"] is None, result
    diagnostic = result["diagnostic"]
    assert diagnostic["category"] == "child_process_error", diagnostic
    assert diagnostic["details"]["field"] == field, diagnostic
    assert token in diagnostic["details"]["reason"], diagnostic


async def test_no_envelope_at_all_names_the_envelope(cpsat):
    result = await call_ok(cpsat.session, "run_cpsat_python", {"source": "print('solved it, x = 3')\n"})
    assert result["status"] == "error", result
    assert result["solution"] is None
    diagnostic = result["diagnostic"]
    assert diagnostic["category"] == "child_process_error", diagnostic
    assert diagnostic["details"]["field"] == "envelope", diagnostic
    assert result["stdout"] == "solved it, x = 3\n"


async def test_crashing_script_is_an_error_with_its_traceback(cpsat):
    source = "raise ValueError('boom in the model')\n"
    result = await call_ok(cpsat.session, "run_cpsat_python", {"source": source})
    assert result["status"] == "error", result
    assert result["return_code"] == 1, result
    assert "ValueError: boom in the model" in result["stderr"]
    diagnostic = result["diagnostic"]
    assert diagnostic["category"] == "child_process_error", diagnostic
    assert "boom in the model" in diagnostic["message"], diagnostic
    assert "Some(" not in diagnostic["message"]
    assert diagnostic["details"]["exception"] == "ValueError", diagnostic
    assert "ValueError: boom in the model" in diagnostic["details"]["traceback_tail"], diagnostic


async def test_an_answer_printed_before_a_failing_exit_is_kept(cpsat):
    """The rule for a non-zero exit after a valid envelope: the answer is
    kept and the exit is reported in the diagnostic."""
    source = printer(VALID) + "raise ValueError('boom after the answer')\n"
    result = await call_ok(cpsat.session, "run_cpsat_python", {"source": source})
    assert result["status"] == "feasible" and result["objective"] == 4, result
    assert result["solution"] == {"x": 1}
    assert result["return_code"] == 1
    diagnostic = result["diagnostic"]
    assert diagnostic["category"] == "child_process_error", diagnostic
    assert "exit code 1" in diagnostic["message"] and "answer is kept" in diagnostic["message"], diagnostic


async def test_bad_arguments_are_refused(cpsat):
    for arguments, needle in [
        ({"source": "   \n"}, "source"),
        ({"source": printer(VALID), "script_timeout_ms": 0}, "script_timeout_ms"),
        ({"source": printer(VALID), "script_timeout_ms": -5}, "script_timeout_ms"),
        ({"source": printer(VALID), "timeout_ms": 1000}, "timeout_ms"),
        ({"script_timeout_ms": 1000}, "source"),
    ]:
        error = await call_error(cpsat.session, "run_cpsat_python", arguments)
        assert error.category == "invalid_request", (arguments, error)
        assert needle in error.message, (arguments, error)


# ---- timeouts: the last valid incumbent, processes gone --------------------------------

FIRST = {"status": "feasible", "objective": 5, "solution": {"chosen": [0], "step": 1}}
SECOND = {"status": "feasible", "objective": 9, "solution": {"chosen": [0, 1], "step": 2}, "best_objective_bound": 13}


def hanging_script(*envelopes: str) -> str:
    lines = ["import json, time"]
    for envelope in envelopes:
        lines.append(f"print({envelope!r})")
        lines.append("print('progress: improving')")
    lines.append("time.sleep(120)")
    return "\n".join(lines) + "\n"


async def run_watched(session, marker, tool, arguments, predicate):
    """Runs one tool call while scanning /proc: returns the result and the
    marked processes seen while it ran (once `predicate` held)."""
    seen: dict[str, set] = {}
    result: dict[str, object] = {}

    async def call() -> None:
        result["value"] = await session.call_tool(tool, arguments)

    async with anyio.create_task_group() as group:
        group.start_soon(call)
        seen["procs"] = await wait_marked_async(marker, predicate, timeout=15)
    return result["value"], seen["procs"]


async def test_timeout_recovers_the_last_valid_incumbent_and_the_script_is_gone(harness):
    source = hanging_script(json.dumps(FIRST), json.dumps(SECOND))
    async with cpsat_server(harness) as (launched, marker):
        reply, during = await run_watched(
            launched.session, marker, "run_cpsat_python", {"source": source, "script_timeout_ms": 1500}, has_python
        )
        assert during, "the script process never showed up in the scan: the scan would prove nothing"
        left = await leftover_marked_async(marker)
        assert not left, f"left running after the call returned: {describe(left)}"
    assert not reply.is_error, reply
    result = reply.structured_content
    check_result_shape(result)
    assert result["status"] == "timeout", result
    assert result["timed_out"] is True
    assert result["return_code"] is None
    assert result["truncated"] is False
    assert result["solution"] == SECOND["solution"], result
    assert result["objective"] == SECOND["objective"]
    assert result["best_objective_bound"] == SECOND["best_objective_bound"]
    assert result["diagnostic"]["category"] == "timeout_with_incumbent", result["diagnostic"]
    assert 1500 <= result["duration_ms"] < 10000, result["duration_ms"]
    # Both intermediate envelopes reached stdout before the kill.
    assert result["stdout"].count('"status": "feasible"') == 2, result["stdout"]


async def test_timeout_with_a_malformed_last_partial_reports_the_rejection(cpsat):
    bad = json.dumps({"status": "feasible", "objective": 9, "solution": [0, 1]})
    source = hanging_script(json.dumps(FIRST), bad)
    result = await call_ok(cpsat.session, "run_cpsat_python", {"source": source, "script_timeout_ms": 1500})
    assert result["status"] == "timeout", result
    assert result["timed_out"] is True and result["return_code"] is None
    assert result["solution"] is None and result["objective"] is None, result
    diagnostic = result["diagnostic"]
    assert diagnostic["category"].startswith("timeout"), diagnostic
    assert diagnostic["category"] != "timeout_with_incumbent", diagnostic
    assert diagnostic["details"]["rejected_partial_field"] == "solution", diagnostic
    assert diagnostic["details"]["rejected_partial_reason"], diagnostic


async def test_timeout_without_any_partial_has_no_rejection_details(cpsat):
    source = "import time\nprint('thinking...')\ntime.sleep(120)\n"
    result = await call_ok(cpsat.session, "run_cpsat_python", {"source": source, "script_timeout_ms": 1200})
    assert result["status"] == "timeout" and result["solution"] is None, result
    details = result["diagnostic"].get("details") or {}
    assert "rejected_partial_field" not in details and "rejected_partial_reason" not in details, details
    assert result["diagnostic"]["category"] != "timeout_with_incumbent"


GRANDCHILDREN = [
    ("sleep", '["sleep", "300"]'),
    ("python", f'[{PYTHON!r}, "-c", "import time; time.sleep(300)"]'),
]


@pytest.mark.parametrize("command", [g[1] for g in GRANDCHILDREN], ids=[g[0] for g in GRANDCHILDREN])
async def test_timeout_kills_the_grandchild_too(harness, command):
    source = (
        "import json, subprocess, time\n"
        f"child = subprocess.Popen({command})\n"
        "print(json.dumps({'status': 'feasible', 'objective': 1, 'solution': {'grandchild': child.pid}}))\n"
        "time.sleep(300)\n"
    )
    async with cpsat_server(harness) as (launched, marker):
        reply, during = await run_watched(
            launched.session,
            marker,
            "run_cpsat_python",
            {"source": source, "script_timeout_ms": 2500},
            lambda procs: len(procs) >= 2,
        )
        assert len(during) >= 2, "script and grandchild never both showed up: the scan would prove nothing"
        left = await leftover_marked_async(marker)
        assert not left, f"left running after the timeout: {describe(left)}"
    result = reply.structured_content
    assert result["status"] == "timeout", result
    grandchild = result["solution"]["grandchild"]
    assert grandchild in {p.pid for p in during}, f"grandchild {grandchild} not among {describe(during)}"


# ---- the output cap -------------------------------------------------------------------


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
async def test_a_100_mb_printer_keeps_its_answer(harness, stream):
    """Output past the cap does not cost the answer: the script runs to its
    own end, a bounded head and tail are kept, and the last line is read."""
    source = (
        "import json, sys\n"
        "for _ in range(100):\n"
        f"    sys.{stream}.write('x' * 1000000)\n"
        f"sys.{stream}.write('\\n')\n"
        "print(json.dumps({'status': 'optimal', 'objective': 7, 'solution': {'x': 7}}))\n"
    )
    async with cpsat_server(harness) as (launched, marker):
        reply, during = await run_watched(
            launched.session, marker, "run_cpsat_python", {"source": source, "script_timeout_ms": 60000}, has_python
        )
        assert during, "the printer never showed up in the scan"
        left = await leftover_marked_async(marker)
        assert not left, f"left running: {describe(left)}"
    assert not reply.is_error, reply
    result = reply.structured_content
    check_result_shape(result)
    assert result["truncated"] is True, {k: v for k, v in result.items() if k not in ("stdout", "stderr")}
    assert result["status"] == "optimal" and result["objective"] == 7, result["diagnostic"]
    assert result["solution"] == {"x": 7}
    assert result["timed_out"] is False and result["return_code"] == 0
    kept = result[stream]
    assert len(result["stdout"].encode()) + len(result["stderr"].encode()) <= ONE_MIB
    assert "bytes of output dropped here]" in kept, kept[:200]


async def test_a_flood_after_an_intermediate_envelope_still_recovers_it(harness):
    source = (
        "import json, sys, time\n"
        "print(json.dumps({'status': 'feasible', 'objective': 3, 'solution': {'x': 3}}), flush=True)\n"
        "for _ in range(5):\n"
        "    print('search log ' * 100000)\n"
        "sys.stdout.flush()\n"
        "time.sleep(60)\n"
    )
    async with cpsat_server(harness) as (launched, marker):
        result = await call_ok(launched.session, "run_cpsat_python", {"source": source, "script_timeout_ms": 4000})
        assert not await leftover_marked_async(marker)
    assert result["status"] == "timeout" and result["timed_out"] is True, result["diagnostic"]
    assert result["truncated"] is True
    assert result["objective"] == 3 and result["solution"] == {"x": 3}, result["diagnostic"]
    assert result["diagnostic"]["category"] == "timeout_with_incumbent"


# ---- stdin -------------------------------------------------------------------------------

STDIN_SCRIPT = """
import json, sys
data = sys.stdin.read()
try:
    input()
    line = "line"
except EOFError:
    line = "eof"
print(json.dumps({"status": "feasible", "objective": None, "solution": {"stdin_bytes": len(data), "input": line}}))
"""

QUICK = printer('{"status": "optimal", "objective": 2, "solution": {"x": 2}}')


def response_in_lines(server: RawServer, request_id: int, timeout: float = 30.0) -> dict:
    """The response to `request_id` from every line the server wrote, in
    whatever order responses arrive (RawServer.response drops the others)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in list(server.lines):
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if isinstance(message, dict) and message.get("id") == request_id and ("result" in message or "error" in message):
                return message
        time.sleep(0.05)
    raise TimeoutError(f"no response to request {request_id} within {timeout} s")


def test_stdin_is_at_eof_and_the_stream_is_untouched(harness, tmp_path):
    env, marker = harness.tagged_env(SOLVERGATE_CPSAT_PYTHON=PYTHON)
    server = RawServer([harness.binary, "stdio", "--toolset", "full"], env, tmp_path / "stderr.txt")
    try:
        server.initialize()
        # Request 2 is on the server's stdin while the script runs: a script
        # sharing that stdin would block on it or eat it.
        first = server.request(
            "tools/call", {"name": "run_cpsat_python", "arguments": {"source": STDIN_SCRIPT, "script_timeout_ms": 10000}}
        )
        second = server.request("tools/call", {"name": "run_cpsat_python", "arguments": {"source": QUICK}})
        reply = response_in_lines(server, first)
        assert "result" in reply and not reply["result"].get("isError"), reply
        result = reply["result"]["structuredContent"]
        assert result["status"] == "feasible", result
        assert result["solution"] == {"stdin_bytes": 0, "input": "eof"}, result
        assert result["timed_out"] is False and result["return_code"] == 0
        assert result["duration_ms"] < 9000

        reply = response_in_lines(server, second)
        assert not reply["result"].get("isError"), reply
        assert reply["result"]["structuredContent"]["status"] == "optimal"
        assert reply["result"]["structuredContent"]["solution"] == {"x": 2}

        # The session keeps working afterwards.
        reply = server.call_tool("run_cpsat_python", {"source": QUICK})
        assert reply["result"]["structuredContent"]["objective"] == 2, reply
        listed = server.call("tools/list", {})
        assert any(tool["name"] == "run_cpsat_python" for tool in listed["result"]["tools"])
        assert server.proc.poll() is None, "the server exited"
        assert non_jsonrpc_lines(server.lines) == [], "a child wrote to the server's stdout"
        assert not marked_procs(marker), "a script outlived its call"
    finally:
        server.stop()


# ---- runtime -----------------------------------------------------------------------------


@pytest.mark.parametrize("python", ["/bin/false", "/nonexistent/solvergate-test/python3"])
async def test_missing_runtime_is_runtime_missing_with_the_install_hint(harness, workdir, python):
    script = workdir / "model.py"
    script.write_text(QUICK)
    env, _ = harness.tagged_env(SOLVERGATE_CPSAT_PYTHON=python)
    async with harness.open("full", env=env) as launched:
        for tool, arguments in [
            ("run_cpsat_python", {"source": QUICK}),
            ("run_cpsat_python_file", {"script_path": str(script)}),
        ]:
            error = await call_error(launched.session, tool, arguments)
            assert error.category == "runtime_missing", (tool, error)
            assert "install-runtime" in error.message, (tool, error)
        # check_runtime says why; the MiniZinc side is unaffected.
        runtime = await call_ok(launched.session, "check_runtime", {})
        assert runtime["cpsat"]["installed"] is False, runtime["cpsat"]
        assert runtime["cpsat"]["python"] == python and runtime["cpsat"]["problem"], runtime["cpsat"]
        assert runtime["installed"] is True


# ---- toolsets ----------------------------------------------------------------------------

CPSAT_CORE = {"run_cpsat_python", "run_cpsat_python_file"}
CPSAT_FULL_ONLY = {
    "run_cpsat_python_file_checked",
    "run_cpsat_python_experiment",
    "submit_cpsat_python_job",
    "submit_cpsat_python_file_job",
    "get_cpsat_python_job",
    "cancel_cpsat_python_job",
    "list_cpsat_python_jobs",
}


async def test_core_toolset_has_the_two_run_tools_only(harness):
    async with cpsat_server(harness, toolset="core") as (launched, _):
        tools = {tool.name: tool for tool in (await launched.session.list_tools()).tools}
        assert CPSAT_CORE <= set(tools), sorted(tools)
        assert not (CPSAT_FULL_ONLY & set(tools)), sorted(CPSAT_FULL_ONLY & set(tools))
        for name in CPSAT_CORE:
            assert tools[name].output_schema and tools[name].output_schema.get("type") == "object"
        # The core run tool works, and a full-only one cannot be called.
        result = await call_ok(launched.session, "run_cpsat_python", {"source": QUICK})
        assert result["status"] == "optimal"
        try:
            reply = await launched.session.call_tool("list_cpsat_python_jobs", {})
        except MCPError as error:
            assert "list_cpsat_python_jobs" in str(error) or "not found" in str(error).lower(), error
        else:
            assert reply.is_error, "a full-only tool answered on the core toolset"
        assert (await call_ok(launched.session, "run_cpsat_python", {"source": QUICK}))["objective"] == 2


async def test_full_toolset_has_every_cpsat_tool(cpsat):
    names = {tool.name for tool in (await cpsat.session.list_tools()).tools}
    assert CPSAT_CORE | CPSAT_FULL_ONLY <= names, sorted((CPSAT_CORE | CPSAT_FULL_ONLY) - names)


async def test_interpreter_is_this_python(cpsat):
    status = await call_ok(cpsat.session, "check_runtime", {})
    assert status["cpsat"]["python"] == sys.executable, status["cpsat"]
    assert status["cpsat"]["installed"] is True, status["cpsat"]
    import ortools

    assert status["cpsat"]["ortools_version"] == ortools.__version__, status["cpsat"]


@pytest.mark.parametrize(
    ("source", "line", "kind"),
    [
        ("import json\nx = = 1\n", 2, "SyntaxError"),
        ("import json\nif True:\nprint(1)\n", 3, "IndentationError"),
    ],
)
async def test_a_script_that_does_not_parse_is_a_syntax_error_with_its_line(cpsat, source, line, kind):
    result = await call_ok(cpsat.session, "run_cpsat_python", {"source": source})
    assert result["status"] == "error", result
    diagnostic = result["diagnostic"]
    assert diagnostic["category"] == "syntax_or_compile_error", diagnostic
    assert kind in diagnostic["message"] and f"line {line}" in diagnostic["message"], diagnostic
    assert diagnostic["details"]["line"] == line, diagnostic
    assert "Some(" not in diagnostic["message"]


async def test_inline_scripts_take_args_seed_and_config_like_file_scripts(cpsat):
    """run_cpsat_python accepts what run_cpsat_python_file does (the
    reference's inline tool takes only source and budget; the extra
    arguments are optional and change nothing for a client that omits them)."""
    source = (
        "import json, os, sys\n"
        "config = json.load(open(os.environ['SOLVERGATE_CPSAT_CONFIG']))\n"
        "seed = int(os.environ['SOLVERGATE_CPSAT_SEED'])\n"
        "value = seed + config['offset'] + int(sys.argv[1])\n"
        "print(json.dumps({'status': 'feasible', 'objective': value, 'solution': {'v': value}}))\n"
    )
    result = await call_ok(
        cpsat.session,
        "run_cpsat_python",
        {"source": source, "args": ["100"], "seed": 7, "config": {"offset": 30}},
    )
    assert result["status"] == "feasible" and result["objective"] == 137, result
    error = await call_error(cpsat.session, "run_cpsat_python", {"source": source, "seed": 2**40})
    assert error.category == "invalid_request" and "32-bit" in error.message, error.text
