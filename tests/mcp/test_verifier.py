"""A verifier that cannot be fooled: every way a MiniZinc checker can fail to
check is a non-pass with its own reason, never "verified".

Table-driven, through the official client, on whichever runtime the suite
runs on (2.6.4 and 2.9.2 print these failures differently: top-level error
lines, nested checker messages, a checker status of UNKNOWN)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cpsat_helpers import cpsat_server
from helpers import call_error, call_ok, result_text, structured, wait_job

GECODE = "org.gecode.gecode"

pytestmark = pytest.mark.anyio

#: One solution, x = 2.
ONE = "var 1..3: x;\nconstraint x = 2;\nsolve satisfy;\n"

#: (name, checker source, expected verdict, a phrase of the reason). Each one
#: was, before, a pass: `completed`, no violation, saved as verified.
VERDICTS = [
    ("out_of_bounds", 'int: x; array[1..1] of int: w = [10];\noutput ["v=\\(w[x])\\n"];\n', "error", "out of bounds"),
    ("division_by_zero", 'int: x; int: y = 10 div (x - 2);\noutput ["CORRECT \\(y)\\n"];\n', "error", "division by zero"),
    ("assert", 'int: x;\nconstraint assert(false, "boom");\noutput ["CORRECT\\n"];\n', "error", "boom"),
    ("abort", 'int: x; int: y = if x > 0 then abort("nope") else 1 endif;\noutput ["CORRECT\\n"];\n', "error", "nope"),
    ("bool_for_an_int", 'bool: x;\noutput ["CORRECT\\n"];\n', "error", "bool"),
    ("lower_case_incorrect", 'int: x;\noutput ["incorrect: x is \\(x)\\n"];\n', "rejected", "incorrect: x is 2"),
    ("title_case_incorrect", 'int: x;\noutput ["Incorrect: x is \\(x)\\n"];\n', "rejected", "Incorrect: x is 2"),
    ("indented_incorrect", 'int: x;\noutput ["  INCORRECT: no\\n"];\n', "rejected", "INCORRECT: no"),
    ("both_words", 'int: x;\noutput ["CORRECT\\nINCORRECT: x\\n"];\n', "rejected", "INCORRECT: x"),
    ("constraint_fails", 'int: x;\nconstraint x = 3;\noutput ["CORRECT\\n"];\n', "rejected", "constraints failed"),
    ("no_output", "int: x;\noutput [];\n", "no_verdict", "printed nothing"),
    ("neither_word", 'int: x;\noutput ["looks fine\\n"];\n', "no_verdict", "no line starting with CORRECT"),
    ("a_longer_word", 'int: x;\noutput ["CORRECTED\\n"];\n', "no_verdict", "no line starting with CORRECT"),
    ("the_word_inside_a_line", 'int: x;\noutput ["this is CORRECT\\n"];\n', "no_verdict", "no line starting with CORRECT"),
    # Passes, to show the table can say yes.
    ("upper_case_correct", 'int: x;\noutput [if x = 2 then "CORRECT\\n" else "INCORRECT: x\\n" endif];\n', "accepted", None),
    ("lower_case_correct", 'int: x;\noutput ["correct: x = \\(x)\\n"];\n', "accepted", None),
    ("trace_then_correct", 'int: x;\noutput [trace("checking\\n", "CORRECT\\n")];\n', "accepted", None),
]


@pytest.mark.parametrize(("name", "checker", "verdict", "reason"), VERDICTS, ids=[case[0] for case in VERDICTS])
async def test_each_way_a_checker_ends_has_its_verdict(full, name, checker, verdict, reason):
    result = await full.session.call_tool(
        "solve_minizinc_model", {"model": ONE, "checker": checker, "solver": "gecode", "timeout_ms": 20000}
    )
    res = structured(result)
    assert res["status"] == "satisfied" and res["solution"] == {"x": 2}, res
    report = res["checker"]
    assert report["verdict"] == verdict, (name, report)
    [check] = report["checks"]
    assert check["verdict"] == verdict, (name, check)
    assert check["violation"] is (verdict == "rejected"), check
    if verdict == "accepted":
        assert report["reason"] is None and check["reason"] is None, report
        assert res["diagnostic"] is None, res["diagnostic"]
        assert report["status"] == "completed"
    else:
        assert reason in report["reason"], (name, report["reason"])
        assert reason in check["reason"], (name, check["reason"])
        assert report["status"] != "completed" or verdict == "no_verdict", report
        diagnostic = res["diagnostic"]
        assert diagnostic["category"] == "checker_failed", diagnostic
        assert diagnostic["details"]["checker_verdict"] == verdict, diagnostic
        assert "Not verified: " in result_text(result)


async def test_an_error_on_one_solution_of_ten_is_an_error_for_the_solve(full):
    # The checker divides by zero on x = 7 only.
    checker = (
        "int: x;\narray[1..10] of int: w = [if i = 7 then 0 else 1 endif | i in 1..10];\n"
        'int: y = 10 div w[x];\noutput ["CORRECT \\(y)\\n"];\n'
    )
    res = await call_ok(
        full.session,
        "solve_minizinc_model",
        {"model": "var 1..10: x;\nsolve satisfy;\n", "checker": checker, "all_solutions": True, "solver": "gecode"},
    )
    assert len(res["solutions"]) == 10, res["solutions"]
    checks = res["checker"]["checks"]
    verdicts = {solution["x"]: check["verdict"] for solution, check in zip(res["solutions"], checks)}
    assert verdicts == {x: ("error" if x == 7 else "accepted") for x in range(1, 11)}, verdicts
    position = [solution["x"] for solution in res["solutions"]].index(7) + 1
    assert res["checker"]["verdict"] == "error"
    assert res["checker"]["reason"].startswith(f"solution {position} of 10: "), res["checker"]["reason"]
    assert "division by zero" in res["checker"]["reason"]


@pytest.mark.parametrize("all_solutions", [False, True])
async def test_an_error_on_the_final_solution_of_an_optimisation_run(full, all_solutions):
    checker = 'int: x; int: y = if x = 5 then abort("the last one") else 1 endif;\noutput ["CORRECT\\n"];\n'
    res = await call_ok(
        full.session,
        "solve_minizinc_model",
        {"model": "var 1..5: x;\nsolve maximize x;\n", "checker": checker, "all_solutions": all_solutions, "solver": "gecode"},
    )
    assert res["status"] == "optimal" and res["objective"] == 5, res
    assert res["checker"]["checks"][-1]["verdict"] == "error"
    assert res["checker"]["verdict"] == "error", res["checker"]
    assert "the last one" in res["checker"]["reason"]


async def test_a_run_that_ends_before_any_check_is_a_timeout(full):
    hang = "var 1..3: x;\nsolve satisfy;\noutput [show(sum(i in 1..2000000000)(i mod 3))];\n"
    res = await call_ok(
        full.session,
        "solve_minizinc_model",
        {"model": hang, "checker": 'int: x;\noutput ["CORRECT\\n"];\n', "timeout_ms": 500, "solver": "gecode"},
    )
    assert res["status"] == "timeout", res
    assert res["checker"]["verdict"] == "timeout", res["checker"]
    assert "time limit" in res["checker"]["reason"]


#: Checkers that cannot check, refused before anything runs.
REFUSED = [
    ("only_a_comment", "% the checker\n/* that checks nothing */\n", "no items"),
    ("output_only", 'output ["CORRECT\\n"];\n', "declares nothing"),
    ("every_parameter_given", 'int: x = 2;\noutput ["CORRECT\\n"];\n', "declares nothing"),
    ("a_model_with_var", 'var 1..3: x;\noutput ["CORRECT\\n"];\n', "`var`"),
    ("a_model_with_solve", 'int: x;\nsolve satisfy;\noutput ["CORRECT\\n"];\n', "`solve`"),
    ("a_whole_model", 'var 1..3: x;\nconstraint x = 1;\nsolve satisfy;\noutput ["CORRECT\\n"];\n', "`var`"),
]


@pytest.mark.parametrize(("name", "checker", "phrase"), REFUSED, ids=[case[0] for case in REFUSED])
async def test_a_checker_that_cannot_check_is_refused(full, workdir: Path, name, checker, phrase):
    error = await call_error(full.session, "solve_minizinc_model", {"model": ONE, "checker": checker})
    assert error.category == "invalid_request", error
    assert "checker is not a usable checker" in error.message and phrase in error.message, error.message
    # The same from a file, and for a portfolio.
    (workdir / "model.mzn").write_text(ONE)
    (workdir / "bad.mzc.mzn").write_text(checker)
    error = await call_error(
        full.session,
        "solve_minizinc_files",
        {"model_path": str(workdir / "model.mzn"), "checker_path": str(workdir / "bad.mzc.mzn")},
    )
    assert error.category == "invalid_request" and phrase in error.message, error.message
    assert "checker_path" in error.message
    error = await call_error(
        full.session, "submit_portfolio_job", {"models": [ONE], "solvers": ["gecode"], "checker": checker}
    )
    assert error.category == "invalid_request" and phrase in error.message, error.message


# ---- Races trust only accepted answers ------------------------------------------------

#: The rule: x <= 6. The checker knows it; the buggy formulation forgot it
#: and is proven optimal at once (x = 10); the right one takes ~2 s to
#: flatten, so it always finishes last.
RULE_CHECKER = 'int: x;\noutput [if x <= 6 then "CORRECT\\n" else "INCORRECT: x = \\(x) breaks x <= 6\\n" endif];\n'
#: Errors (index out of bounds) on the buggy answer instead of rejecting it.
ERRORING_CHECKER = 'int: x;\narray[1..6] of int: ok = [1, 1, 1, 1, 1, 1];\noutput ["CORRECT \\(ok[x])\\n"];\n'
BUGGY = "var 1..10: x;\nsolve maximize x;\n"
RIGHT = "int: s = sum(i in 1..20000000)(i mod 3);\nvar 1..10: x;\nconstraint x <= 6 + s * 0;\nsolve maximize x;\n"


@pytest.mark.parametrize("policy", ["best_objective", "first_decisive"])
@pytest.mark.parametrize("checker", [RULE_CHECKER, ERRORING_CHECKER], ids=["rejected", "errored"])
async def test_the_fastest_attempt_refused_does_not_win_or_stop_the_race(full, policy, checker):
    submitted = await call_ok(
        full.session,
        "submit_portfolio_job",
        {
            "models": [BUGGY, RIGHT],
            "solvers": ["gecode"],
            "checker": checker,
            "winner_policy": policy,
            "per_attempt_timeout_ms": 60000,
        },
    )
    status, _ = await wait_job(full.session, submitted["job_id"], tool="get_portfolio_job", timeout=90)
    result = status["result"]
    assert result["status"] == "winner", result
    assert result["winner_index"] == 1, result["attempts"]
    assert result["winner"]["solution"] == {"x": 6} and result["winner"]["checker"]["verdict"] == "accepted"
    buggy, right = result["attempts"]
    assert buggy["status"] == "optimal" and buggy["objective"] == 10, buggy
    assert buggy["checker_verdict"] == ("rejected" if checker is RULE_CHECKER else "error"), buggy
    assert buggy["refused"].startswith(f"the checker's verdict is {buggy['checker_verdict']}: "), buggy
    assert right["state"] == "succeeded" and right["checker_verdict"] == "accepted", right
    assert right["refused"] is None
    assert result["refused_attempts"] == [0]
    assert buggy["elapsed_ms"] < right["elapsed_ms"], "the refused attempt was the fastest"


async def test_a_race_whose_every_answer_is_refused_has_no_winner(full):
    submitted = await call_ok(
        full.session,
        "submit_portfolio_job",
        {"models": [BUGGY, "var 7..10: x;\nsolve minimize x;\n"], "solvers": ["gecode"], "checker": RULE_CHECKER},
    )
    status, _ = await wait_job(full.session, submitted["job_id"], tool="get_portfolio_job", timeout=60)
    result = status["result"]
    assert result["status"] == "no_winner" and result["winner"] is None, result
    assert result["refused_attempts"] == [0, 1]
    assert status["diagnostic"]["category"] == "no_winner", status["diagnostic"]
    assert "checker accepted" in status["diagnostic"]["message"]
    assert status["diagnostic"]["details"]["refused_attempts"] == [0, 1]


async def test_with_a_checker_an_unsatisfiable_claim_does_not_end_the_race(full):
    # An over-constrained formulation says "unsatisfiable" at once; the right
    # one finds a checked solution later and wins.
    wrong = "var 1..10: x;\nconstraint x > 10;\nsolve maximize x;\n"
    submitted = await call_ok(
        full.session,
        "submit_portfolio_job",
        {"models": [wrong, RIGHT], "solvers": ["gecode"], "checker": RULE_CHECKER, "per_attempt_timeout_ms": 60000},
    )
    status, _ = await wait_job(full.session, submitted["job_id"], tool="get_portfolio_job", timeout=90)
    result = status["result"]
    assert result["attempts"][0]["status"] == "unsatisfiable", result["attempts"]
    assert result["winner_index"] == 1 and result["winner"]["checker"]["verdict"] == "accepted", result
    assert result["refused_attempts"] == []


async def test_a_race_without_a_checker_is_decided_as_before(full):
    submitted = await call_ok(
        full.session,
        "submit_portfolio_job",
        {"models": [BUGGY, RIGHT], "solvers": ["gecode"], "per_attempt_timeout_ms": 60000},
    )
    status, _ = await wait_job(full.session, submitted["job_id"], tool="get_portfolio_job", timeout=90)
    result = status["result"]
    # Without a checker nothing can tell the buggy formulation apart: its
    # proven optimum ends the race.
    assert result["winner_index"] == 0 and result["winner"]["objective"] == 10, result
    assert result["attempts"][1]["state"] == "cancelled"
    assert result["refused_attempts"] == []
    assert result["attempts"][0]["checker_verdict"] is None
    assert result["winner"]["solver"] == GECODE


async def test_a_checker_whose_array_does_not_fit_the_solution_is_an_error(full):
    model = "array[1..3] of var 1..3: q;\nconstraint q[1] = 1;\nsolve satisfy;\n"
    res = await call_ok(
        full.session,
        "solve_minizinc_model",
        {"model": model, "checker": 'array[1..2] of int: q;\noutput ["CORRECT\\n"];\n', "solver": "gecode"},
    )
    assert res["status"] == "satisfied", res
    assert res["checker"]["verdict"] == "error", res["checker"]
    assert "Index set mismatch" in res["checker"]["reason"]


async def test_a_checker_that_needs_what_the_model_does_not_output_fails_the_solve(full):
    res = await call_ok(
        full.session,
        "solve_minizinc_model",
        {"model": ONE, "checker": 'int: x; int: z;\noutput ["CORRECT\\n"];\n', "solver": "gecode"},
    )
    assert res["status"] == "error" and res["solution"] is None, res
    assert res["checker"]["verdict"] == "error", res["checker"]
    assert res["diagnostic"]["category"] == "checker_failed", res["diagnostic"]


async def test_checker_output_cut_at_the_cap_is_not_a_pass(full):
    # 1.6 MB of CORRECT lines: the stream is cut before the solution.
    flood = 'int: x;\noutput [join("", ["CORRECT\\n" | i in 1..200000])];\n'
    res = await call_ok(full.session, "solve_minizinc_model", {"model": ONE, "checker": flood, "solver": "gecode"})
    assert res["truncated"] is True, res["status"]
    assert res["checker"]["verdict"] == "error", res["checker"]["verdict"]
    assert "cap" in res["checker"]["reason"]
    assert res["diagnostic"]["category"] == "output_truncated"


# ---- Saves trust only accepted answers ------------------------------------------------

SAVE_REFUSED = [case for case in VERDICTS if case[2] != "accepted"]


@pytest.mark.parametrize(("name", "checker", "verdict", "reason"), SAVE_REFUSED, ids=[case[0] for case in SAVE_REFUSED])
async def test_a_save_writes_nothing_unless_the_checker_accepted(full, tmp_path, name, checker, verdict, reason):
    target = tmp_path / "saved"
    res = await call_ok(
        full.session,
        "save_verified_minizinc_model",
        {"model": ONE, "checker": checker, "solver": "gecode", "target_dir": str(target)},
    )
    assert res["status"] == "not_verified", res
    assert f"the checker's verdict is {verdict}, not accepted" in res["message"], res["message"]
    assert res["diagnostic"]["category"] == "not_verified"
    assert res["files"] == []
    assert not target.exists() and list(tmp_path.iterdir()) == [], "a save left something behind"


@pytest.mark.parametrize(("name", "checker", "phrase"), REFUSED, ids=[case[0] for case in REFUSED])
async def test_a_save_refuses_a_checker_that_cannot_check(full, tmp_path, name, checker, phrase):
    target = tmp_path / "saved"
    arguments = {"model": ONE, "checker": checker, "solver": "gecode", "target_dir": str(target)}
    result = await full.session.call_tool("save_verified_minizinc_model", arguments)
    if result.is_error:
        assert phrase in result_text(result)
    else:
        res = structured(result)
        assert res["status"] == "not_verified" and phrase in res["message"], res
    assert list(tmp_path.iterdir()) == [], "a save left something behind"


async def test_a_save_with_an_accepting_checker_is_saved_and_replays(full, tmp_path):
    target = tmp_path / "saved"
    checker = VERDICTS[-3][1]
    res = await call_ok(
        full.session,
        "save_verified_minizinc_model",
        {"model": ONE, "checker": checker, "solver": "gecode", "target_dir": str(target)},
    )
    assert res["status"] == "saved", res
    assert res["solve"]["checker"]["verdict"] == "accepted"
    replay = await call_ok(full.session, "replay_artifact", {"target_dir": str(target)})
    assert replay["reproduced"] is True, replay
    assert replay["solve"]["checker"]["verdict"] == "accepted"


# ---- CP-SAT experiments trust only accepted answers -----------------------------------

#: Attempts report x; the rule is x <= 6. The buggy attempt is fast and
#: claims the better objective; the right one sleeps first.
def cpsat_attempt(x: int, delay_s: float) -> str:
    return (
        "import json, time\n"
        f"time.sleep({delay_s})\n"
        f'print(json.dumps({{"status": "optimal", "objective": {x}, "solution": {{"x": {x}}}}}))\n'
    )


CPSAT_CHECKERS = {
    "rejected": (
        "import json, sys\n"
        "x = json.load(open(sys.argv[1]))['solution']['x']\n"
        "ok = x <= 6\n"
        "print(json.dumps({'status': 'accepted' if ok else 'rejected', 'errors': [] if ok else ['x > 6']}))\n"
    ),
    "errored": (
        "import json, sys\n"
        "x = json.load(open(sys.argv[1]))['solution']['x']\n"
        "assert x <= 6, 'the checker crashes on this answer'\n"
        "print(json.dumps({'status': 'accepted', 'errors': []}))\n"
    ),
    "duplicate_key": (
        "import json, sys\n"
        "x = json.load(open(sys.argv[1]))['solution']['x']\n"
        "if x <= 6:\n"
        "    print(json.dumps({'status': 'accepted', 'errors': []}))\n"
        "else:\n"
        "    print('{\"status\": \"rejected\", \"status\": \"accepted\", \"errors\": []}')\n"
    ),
    "silent": (
        "import json, sys\n"
        "x = json.load(open(sys.argv[1]))['solution']['x']\n"
        "print(json.dumps({'status': 'accepted', 'errors': []}) if x <= 6 else 'looks fine to me')\n"
    ),
}

REFUSED_VERDICT = {"rejected": "rejected", "errored": "error", "duplicate_key": "error", "silent": "no_verdict"}


@pytest.fixture(scope="module")
async def cpsat(harness):
    async with cpsat_server(harness) as (launched, _marker):
        yield launched


@pytest.mark.parametrize("kind", list(CPSAT_CHECKERS))
async def test_an_experiment_whose_fastest_attempt_is_refused_picks_the_checked_one(cpsat, kind):
    result = await call_ok(
        cpsat.session,
        "run_cpsat_python_experiment",
        {
            "attempts": [
                {"name": "buggy", "source": cpsat_attempt(10, 0.0)},
                {"name": "right", "source": cpsat_attempt(6, 1.0)},
            ],
            "objective_sense": "maximize",
            "checker": CPSAT_CHECKERS[kind],
            "max_parallel_attempts": 2,
        },
    )
    assert result["status"] == "winner", result
    assert result["winner_name"] == "right", result["attempts"]
    buggy, right = result["attempts"]
    assert buggy["accepted"] is False and buggy["checker_verdict"] == REFUSED_VERDICT[kind], buggy
    assert buggy["rejection"].startswith(f"the checker's verdict is {REFUSED_VERDICT[kind]}"), buggy
    assert right["accepted"] is True and right["checker_verdict"] == "accepted", right
    assert result["winner_checker"]["verdict"] == "accepted"
    assert buggy["duration_ms"] < right["duration_ms"], "the refused attempt was the faster"
