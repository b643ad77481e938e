"""run_cpsat_python_experiment through the real client: a winner among
inline variants (by objective, in both senses, with a checker and hashes),
on-disk scripts with args, results in attempt order whatever the completion
order, validation of every attempt before any child runs, the wall-clock
budget gate, the num_workers oversubscription warning, include_winner_stdout
and no winner when the checker rejects everything.
"""

from __future__ import annotations

import json
import re

import pytest

from cpsat_helpers import (
    KNAPSACK,
    KNAPSACK_OPTIMUM,
    REAL_CHECKER,
    REJECT_ALL_CHECKER,
    check_result_shape,
    cpsat_server,
    knapsack_script,
    sha256_bytes,
    sha256_text,
    write,
)
from helpers import call_error, call_ok

pytestmark = [pytest.mark.anyio, pytest.mark.minizinc_independent]

#: With capacity 5 the best value is 8 (item 2 alone).
CAPPED_OPTIMUM = 8


@pytest.fixture(scope="module")
async def cpsat(harness):
    async with cpsat_server(harness) as (launched, _marker):
        yield launched


def canonical(value) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def check_attempt_row(row: dict) -> None:
    for key in (
        "index",
        "name",
        "status",
        "objective",
        "best_objective_bound",
        "accepted",
        "rejection",
        "checker_status",
        "duration_ms",
        "source_sha256",
        "config_sha256",
        "used_script_path",
        "message",
        "stderr_tail",
    ):
        assert key in row, f"attempt row lacks {key}: {row}"
    assert row["accepted"] == (row["rejection"] is None), row


SENSES = [("maximize", "full", 1, KNAPSACK_OPTIMUM), ("minimize", "capped", 0, CAPPED_OPTIMUM)]


@pytest.mark.parametrize(("sense", "winner", "index", "objective"), SENSES, ids=[s[0] for s in SENSES])
async def test_two_inline_variants_have_a_winner(cpsat, sense, winner, index, objective):
    capped = knapsack_script(extra_cap=5)
    full = knapsack_script()
    result = await call_ok(
        cpsat.session,
        "run_cpsat_python_experiment",
        {
            "attempts": [{"name": "capped", "source": capped}, {"name": "full", "source": full}],
            "objective_sense": sense,
            "default_script_timeout_ms": 20000,
            "checker": REAL_CHECKER,
            "problem": KNAPSACK,
        },
    )
    assert result["status"] == "winner", result
    assert result["objective_sense"] == sense
    assert result["diagnostic"] is None
    rows = result["attempts"]
    for row in rows:
        check_attempt_row(row)
    assert [row["index"] for row in rows] == [0, 1]
    assert [row["name"] for row in rows] == ["capped", "full"]
    assert [row["objective"] for row in rows] == [CAPPED_OPTIMUM, KNAPSACK_OPTIMUM]
    assert [row["status"] for row in rows] == ["optimal", "optimal"]
    assert all(row["accepted"] for row in rows), rows
    assert [row["checker_status"] for row in rows] == ["accepted", "accepted"]
    assert [row["used_script_path"] for row in rows] == [False, False]
    assert [row["source_sha256"] for row in rows] == [sha256_text(capped), sha256_text(full)]
    assert result["source_sha256"] == [sha256_text(capped), sha256_text(full)]
    assert result["checker_sha256"] == sha256_text(REAL_CHECKER)
    assert result["problem_sha256"] == sha256_text(canonical(KNAPSACK))

    assert result["winner_name"] == winner
    assert result["winner_index"] == index
    won = result["winner"]
    check_result_shape(won)
    assert won["objective"] == objective
    assert sum(c["value"] for c in won["solution"]["chosen"]) == objective
    assert won["stdout"], "include_winner_stdout defaults to true"
    assert result["winner_checker"]["status"] == "accepted"
    assert result["warnings"], "a winner comes with the reproducibility disclaimer"
    assert result["selection_policy"]


def disk_script(comment: str) -> str:
    """Solves the knapsack in argv[1] (relative to its own directory), with
    an optional extra capacity bound in argv[2]."""
    return (
        f"# {comment}\n"
        "import sys\n"
        "import json\n"
        "from ortools.sat.python import cp_model\n"
        "problem = json.load(open(sys.argv[1]))\n"
        "items = problem['items']\n"
        "model = cp_model.CpModel()\n"
        "take = [model.new_bool_var(f't{i}') for i in range(len(items))]\n"
        "weight = sum(t * it['weight'] for t, it in zip(take, items))\n"
        "model.add(weight <= problem['capacity'])\n"
        "if len(sys.argv) > 2:\n"
        "    model.add(weight <= int(sys.argv[2]))\n"
        "model.maximize(sum(t * it['value'] for t, it in zip(take, items)))\n"
        "solver = cp_model.CpSolver()\n"
        "solver.parameters.num_workers = 1\n"
        "status = solver.solve(model)\n"
        "chosen = [{'item': i, 'weight': it['weight'], 'value': it['value']} for i, it in enumerate(items) if solver.value(take[i])]\n"
        "print(json.dumps({'status': 'optimal' if status == cp_model.OPTIMAL else 'feasible',\n"
        "                  'objective': int(solver.objective_value),\n"
        "                  'solution': {'chosen': chosen, 'argv': sys.argv[1:]}}))\n"
    )


async def test_on_disk_scripts_with_args(cpsat, workdir):
    (workdir / "data.json").write_text(json.dumps(KNAPSACK))
    first = write(workdir / "solve_a.py", disk_script("variant a"))
    second = write(workdir / "solve_b.py", disk_script("variant b"))
    result = await call_ok(
        cpsat.session,
        "run_cpsat_python_experiment",
        {
            "attempts": [
                {"script_path": str(second), "args": ["data.json", "5"]},
                {"script_path": str(first), "args": ["data.json"]},
            ],
            "objective_sense": "maximize",
            "default_script_timeout_ms": 20000,
        },
    )
    assert result["status"] == "winner", result
    rows = result["attempts"]
    assert [row["name"] for row in rows] == ["attempt-0", "attempt-1"], "default names"
    assert [row["used_script_path"] for row in rows] == [True, True]
    assert [row["objective"] for row in rows] == [CAPPED_OPTIMUM, KNAPSACK_OPTIMUM]
    shas = [sha256_bytes(second.read_bytes()), sha256_bytes(first.read_bytes())]
    assert [row["source_sha256"] for row in rows] == shas
    assert result["source_sha256"] == shas
    assert result["winner_name"] == "attempt-1" and result["winner_index"] == 1
    assert result["winner"]["solution"]["argv"] == ["data.json"]
    assert result["checker_sha256"] is None and result["problem_sha256"] is None


async def server_parallel_cap(session) -> int:
    error = await call_error(
        session,
        "run_cpsat_python_experiment",
        {"attempts": [{"source": "print(1)\n"}], "max_parallel_attempts": 99},
    )
    match = re.search(r"between 1 and (\d+)", error.message)
    assert match, error.message
    return int(match.group(1))


async def test_results_come_in_attempt_order_not_completion_order(cpsat, workdir):
    cap = await server_parallel_cap(cpsat.session)
    slow = (
        "import json, time\n"
        "time.sleep(1.0)\n"
        "print(json.dumps({'status': 'feasible', 'objective': 5, 'solution': {'who': 'slow'}}))\n"
    )
    fast = "import json\nprint(json.dumps({'status': 'feasible', 'objective': 5, 'solution': {'who': 'fast'}}))\n"
    result = await call_ok(
        cpsat.session,
        "run_cpsat_python_experiment",
        {
            "attempts": [{"name": "slow", "source": slow}, {"name": "fast", "source": fast}],
            "objective_sense": "minimize",
            "max_parallel_attempts": min(cap, 2),
            "default_script_timeout_ms": 10000,
        },
    )
    rows = result["attempts"]
    assert [row["name"] for row in rows] == ["slow", "fast"]
    assert rows[0]["duration_ms"] >= 1000, rows[0]
    # Equal objective and status: the shorter run wins.
    assert result["winner_name"] == "fast", result["winner_name"]


async def test_every_attempt_is_validated_before_any_child_runs(cpsat, workdir):
    marker = workdir / "ran.txt"
    runs = f"open({str(marker)!r}, 'w').write('ran')\nprint('{{\"status\": \"optimal\", \"objective\": 1, \"solution\": {{\"x\": 1}}}}')\n"
    script = write(workdir / "ok.py", runs)
    good = {"name": "good", "source": runs}
    cases = [
        ("source-and-path", [good, {"name": "both", "source": runs, "script_path": str(script)}], ["attempts[1]", "exactly one"]),
        ("neither", [good, {"name": "neither"}], ["attempts[1]", "exactly one"]),
        ("args-with-source", [good, {"name": "args", "source": runs, "args": ["x"]}], ["attempts[1]", "args"]),
        ("duplicate-names", [good, {"name": "good", "source": runs}], ["attempts[1]", "good"]),
        ("duplicate-default-name", [{"name": "attempt-1", "source": runs}, {"source": runs}], ["attempts[1]", "attempt-1"]),
        ("bad-path-second", [good, {"name": "gone", "script_path": str(workdir / "missing.py")}], ["attempts[1]", "does not exist"]),
        ("empty-source-second", [good, {"name": "blank", "source": "  \n"}], ["attempts[1]"]),
        ("seed-over-i32", [good, {"name": "seeded", "source": runs, "seed": 2**31}], ["attempts[1]", "seed"]),
        ("nul-in-args", [good, {"name": "nul", "script_path": str(script), "args": ["a\0"]}], ["attempts[1]", "NUL"]),
        ("zero-timeout", [good, {"name": "zero", "source": runs, "script_timeout_ms": 0}], ["attempts[1]", "script_timeout_ms"]),
        ("no-attempts", [], ["attempts"]),
    ]
    for case, attempts, needles in cases:
        error = await call_error(cpsat.session, "run_cpsat_python_experiment", {"attempts": attempts})
        assert error.category == "invalid_request", (case, error)
        for needle in needles:
            assert needle in error.message, (case, needle, error.message)
        assert not marker.exists(), f"{case}: a child ran"

    for extra, needle in [
        ({"max_parallel_attempts": 0}, "max_parallel_attempts"),
        ({"max_parallel_attempts": 99}, "max_parallel_attempts"),
        ({"objective_sense": "max"}, "objective_sense"),
        ({"checker_timeout_ms": 1000}, "checker"),
        ({"default_script_timeout_ms": 0}, "default_script_timeout_ms"),
        ({"checker": "   "}, "checker"),
    ]:
        error = await call_error(cpsat.session, "run_cpsat_python_experiment", {"attempts": [good], **extra})
        assert error.category == "invalid_request", (extra, error)
        assert needle in error.message, (extra, error.message)
        assert not marker.exists(), f"{extra}: a child ran"

    # An attempt's own budget is refused in the words of every budget, with
    # the attempt named and the default it gets when omitted (the
    # experiment's default_script_timeout_ms).
    error = await call_error(
        cpsat.session,
        "run_cpsat_python_experiment",
        {"attempts": [good, {"source": runs, "script_timeout_ms": -1}], "default_script_timeout_ms": 20000},
    )
    assert error.category == "invalid_request", error
    assert error.message.startswith(
        'attempts[1] (attempt-1): script_timeout_ms must be strictly positive, got -1; 0 does not mean "no limit"'
    ), error.message
    assert error.message.endswith("omit script_timeout_ms for the 20000 ms default"), error.message
    assert not marker.exists(), "a child ran"

    # The same good attempt does run.
    result = await call_ok(cpsat.session, "run_cpsat_python_experiment", {"attempts": [good]})
    assert result["status"] == "winner" and marker.exists()


async def test_the_budget_gate_refuses_long_experiments(cpsat, workdir):
    marker = workdir / "ran.txt"
    runs = f"open({str(marker)!r}, 'w').write('ran')\n"
    attempts = [{"name": f"a{i}", "source": runs, "script_timeout_ms": 60000} for i in range(10)]
    error = await call_error(cpsat.session, "run_cpsat_python_experiment", {"attempts": attempts})
    assert error.category == "invalid_request", error
    assert "210000" in error.message, error.message
    assert not marker.exists()
    # One long attempt fits.
    error_free = await cpsat.session.call_tool(
        "run_cpsat_python_experiment",
        {"attempts": [{"source": runs + "print('{\"status\": \"optimal\", \"objective\": 1, \"solution\": {\"x\": 1}}')\n", "script_timeout_ms": 60000}]},
    )
    assert not error_free.is_error, error_free
    assert marker.exists()


CONFIG_SCRIPT = """
import json, os
path = os.environ.get("SOLVERGATE_CPSAT_CONFIG")
config = json.load(open(path)) if path else None
print(json.dumps({"status": "optimal", "objective": 1,
                  "solution": {"config": config, "seed": os.environ.get("SOLVERGATE_CPSAT_SEED")}}))
"""


async def test_oversubscription_warning_and_winner_stdout_left_out(cpsat):
    config = {"num_workers": 64}
    result = await call_ok(
        cpsat.session,
        "run_cpsat_python_experiment",
        {
            "attempts": [
                {"name": "wide", "source": CONFIG_SCRIPT, "config": config, "seed": 11},
                {"name": "plain", "source": CONFIG_SCRIPT.replace('"optimal"', '"feasible"'), "config": {}},
            ],
            "include_winner_stdout": False,
        },
    )
    assert result["status"] == "winner", result
    assert result["objective_sense"] is None
    won = result["winner"]
    assert won["stdout"] == "", "include_winner_stdout false leaves stdout out"
    assert won["solution"] == {"config": config, "seed": "11"}, won["solution"]
    assert won["objective"] == 1
    assert result["winner_name"] == "wide", "optimal beats feasible"
    row, plain = result["attempts"]
    assert row["config_sha256"] == sha256_text(canonical(config)), row
    assert plain["config_sha256"] is None, "an empty config is no config"
    assert plain["accepted"] is True
    warned = [w for w in result["warnings"] if "num_workers" in w]
    assert warned, result["warnings"]
    assert "wide" in warned[0] and "64" in warned[0], warned


async def test_a_checker_that_rejects_everything_leaves_no_winner(cpsat):
    ok = "import json\nprint(json.dumps({'status': 'optimal', 'objective': 3, 'solution': {'x': [1, 2]}}))\n"
    crash = "import sys\nsys.stderr.write('about to fail\\n')\nraise SystemExit('broken attempt')\n"
    result = await call_ok(
        cpsat.session,
        "run_cpsat_python_experiment",
        {
            "attempts": [{"name": "ok", "source": ok}, {"name": "crash", "source": crash}],
            "objective_sense": "minimize",
            "checker": REJECT_ALL_CHECKER,
        },
    )
    assert result["status"] == "no_winner", result
    assert result["diagnostic"]["category"] == "no_winner", result["diagnostic"]
    assert result["winner"] is None and result["winner_index"] is None and result["winner_name"] is None
    assert result["winner_checker"] is None
    first, second = result["attempts"]
    assert first["status"] == "optimal" and first["checker_status"] == "rejected", first
    assert first["accepted"] is False and first["rejection"], first
    assert second["status"] == "error" and second["accepted"] is False, second
    assert second["checker_status"] is None, "an attempt with no answer is not checked"
    assert "broken attempt" in (second["stderr_tail"] or ""), second
    assert not any("re-run" in w or "reproduc" in w.lower() for w in result["warnings"]), result["warnings"]


GATE_ATTEMPTS = [
    {"name": "no-objective", "source": "print('{\"status\": \"feasible\", \"objective\": null, \"solution\": {\"x\": [1]}}')\n"},
    {"name": "empty", "source": "print('{\"status\": \"optimal\", \"objective\": 1, \"solution\": {}}')\n"},
    {
        "name": "timed",
        "source": "import time\nprint('{\"status\": \"feasible\", \"objective\": 100, \"solution\": {\"x\": [3]}}')\ntime.sleep(120)\n",
        "script_timeout_ms": 1000,
    },
    {"name": "optimal-5", "source": "print('{\"status\": \"optimal\", \"objective\": 5, \"solution\": {\"x\": [2]}}')\n"},
]

GATES = [
    # sense, accepted names, winner
    ("maximize", ["timed", "optimal-5"], "timed"),
    (None, ["no-objective", "timed", "optimal-5"], "optimal-5"),
]


@pytest.mark.parametrize(("sense", "accepted", "winner"), GATES, ids=["maximize", "feasibility"])
async def test_acceptance_gates_and_ranking(cpsat, sense, accepted, winner):
    arguments = {"attempts": GATE_ATTEMPTS, "default_script_timeout_ms": 10000}
    if sense is not None:
        arguments["objective_sense"] = sense
    result = await call_ok(cpsat.session, "run_cpsat_python_experiment", arguments)
    rows = {row["name"]: row for row in result["attempts"]}
    assert list(rows) == [a["name"] for a in GATE_ATTEMPTS]
    assert [name for name, row in rows.items() if row["accepted"]] == accepted, result["attempts"]
    assert rows["empty"]["rejection"], rows["empty"]
    assert rows["timed"]["status"] == "timeout", rows["timed"]
    assert result["winner_name"] == winner, result["attempts"]
    assert result["winner"]["status"] == rows[winner]["status"]
    if sense is not None:
        assert "objective" in rows["no-objective"]["rejection"], rows["no-objective"]


def incumbent_script(objective: int, delay_s: float) -> str:
    """A script that reports a `feasible` incumbent after `delay_s` seconds,
    as a budget-stopped CP-SAT search would."""
    return (
        "import json, time\n"
        f"time.sleep({delay_s})\n"
        f"print(json.dumps({{'status': 'feasible', 'objective': {objective}, 'solution': {{'x': {objective}}}}}))\n"
    )


@pytest.mark.parametrize(("sense", "winner"), [("maximize", "late-high"), ("minimize", "early-low")])
async def test_the_best_incumbent_wins_not_the_first_to_finish(cpsat, sense, winner):
    """An attempt that finishes first with a worse objective does not win:
    every attempt runs to its end and objectives are compared."""
    result = await call_ok(
        cpsat.session,
        "run_cpsat_python_experiment",
        {
            "attempts": [
                {"name": "early-low", "source": incumbent_script(10, 0.0)},
                {"name": "late-high", "source": incumbent_script(20, 1.5)},
            ],
            "objective_sense": sense,
            "default_script_timeout_ms": 20000,
        },
    )
    rows = result["attempts"]
    assert [row["status"] for row in rows] == ["feasible", "feasible"], rows
    assert [row["objective"] for row in rows] == [10, 20], rows
    assert all(row["accepted"] for row in rows), rows
    assert rows[0]["duration_ms"] < rows[1]["duration_ms"], rows
    assert result["winner_name"] == winner, rows
    assert result["winner"]["objective"] == (20 if sense == "maximize" else 10)
