"""A runtime's own defects are said as such, not blamed on the model.

Debian 12's `apt-get install minizinc flatzinc` (MiniZinc 2.6.4, Gecode 6.2's
library) cannot compile any model that does `include "globals.mzn"`: the
standard library's inverse_fn.mzn fails to type-check. The server must say
it is the runtime's library, what to do instead, and warn in check_runtime;
a runtime without the defect (2.9.2) must not be warned about.

Whether the runtime under test has the defect is found here independently:
its own `minizinc` compiles the same include, and on 2.6.4 it must fail (so
the test cannot pass both ways by accident).
"""

from __future__ import annotations

import os
import subprocess
import tempfile

import pytest

from helpers import result_text, structured

pytestmark = pytest.mark.anyio

GLOBALS_MODEL = (
    'include "globals.mzn";\n'
    "array[1..3] of var 1..3: x;\n"
    "constraint alldifferent(x);\n"
    "constraint x[1] < x[2];\n"
    "solve satisfy;\n"
)
PER_GLOBAL_MODEL = GLOBALS_MODEL.replace('"globals.mzn"', '"alldifferent.mzn"')
DEFECT = "globals_inverse_fn"


def runtime_minizinc() -> str:
    return os.path.join(os.environ.get("SOLVERGATE_TEST_RUNTIME", "/usr"), "bin", "minizinc")


@pytest.fixture(scope="module")
def broken_globals() -> bool:
    """Whether this runtime's own minizinc fails on `include "globals.mzn"`
    inside its library's inverse_fn.mzn."""
    version = subprocess.run([runtime_minizinc(), "--version"], capture_output=True, text=True).stdout
    with tempfile.TemporaryDirectory() as scratch:
        model = os.path.join(scratch, "probe.mzn")
        with open(model, "w") as handle:
            handle.write(GLOBALS_MODEL)
        run = subprocess.run(
            [runtime_minizinc(), "-c", "--fzn", "/dev/null", "--no-output-ozn", model],
            capture_output=True,
            text=True,
            cwd=scratch,
        )
    broken = run.returncode != 0 and "std/inverse_fn.mzn" in run.stderr
    if "version 2.6.4" in version:
        assert broken, f"Debian 12's 2.6.4 was expected to show the defect: {run.stderr[-2000:]}"
    if "version 2.9" in version:
        assert not broken, run.stderr[-2000:]
    return broken


async def test_a_model_error_in_the_users_file_is_never_the_runtimes(full, broken_globals):
    # The model's own type error comes first: it is the user's, whatever
    # the runtime's library does later.
    model = 'include "alldifferent.mzn";\nvar 1..3: x;\nconstraint x = "a";\nsolve satisfy;\n'
    res = structured(await full.session.call_tool("solve_minizinc_model", {"model": model}))
    assert res["status"] == "error"
    assert res["diagnostic"]["category"] == "type_error", res["diagnostic"]
    assert "runtime_defect" not in (res["diagnostic"].get("details") or {})
    # A model that writes its own `inverse` wrongly is the model's fault.
    own = "array[1..2] of var 1..2: f;\nconstraint inverse(f, 3);\nsolve satisfy;\n"
    res = structured(await full.session.call_tool("solve_minizinc_model", {"model": own}))
    assert res["status"] == "error"
    assert res["diagnostic"]["category"] == "type_error", res["diagnostic"]
    assert "runtime_defect" not in (res["diagnostic"].get("details") or {})


@pytest.mark.parametrize("tool", ["solve_minizinc_model", "check_minizinc_model"])
async def test_the_broken_library_is_said_to_be_the_runtimes(full, broken_globals, tool):
    result = await full.session.call_tool(tool, {"model": GLOBALS_MODEL})
    res = structured(result)
    if not broken_globals:
        assert res["status"] in ("satisfied", "ok"), res
        assert res["diagnostic"] is None
        return
    assert res["status"] == "error"
    diagnostic = res["diagnostic"]
    assert diagnostic["category"] == "solver_unavailable", diagnostic
    assert diagnostic["details"]["runtime_defect"] == DEFECT
    message = diagnostic["message"]
    assert message.startswith("not a mistake in the model:"), message
    for advice in ('include "alldifferent.mzn";', "another solver", "solvergate install-runtime"):
        assert advice in message, message
    # The runtime's own words are kept, once.
    assert res["stderr"].count("inverse_fn.mzn") == 1, res["stderr"]
    assert f"Diagnostic: solver_unavailable — {message}" in result_text(result)


async def test_a_per_global_include_works_where_globals_is_broken(full, broken_globals):
    res = structured(await full.session.call_tool("solve_minizinc_model", {"model": PER_GLOBAL_MODEL}))
    assert res["status"] == "satisfied", res
    x = res["solution"]["x"]
    assert sorted(x) == [1, 2, 3] and x[0] < x[1]


async def test_check_runtime_warns_about_the_defect_up_front(full, broken_globals):
    result = await full.session.call_tool("check_runtime", {})
    res = structured(result)
    if broken_globals:
        assert len(res["warnings"]) == 1, res["warnings"]
        warning = res["warnings"][0]
        assert "globals.mzn" in warning and 'include "alldifferent.mzn";' in warning
        assert f"Warning about this MiniZinc runtime: {warning}" in result_text(result)
    else:
        assert res["warnings"] == []
        assert "Warning about this MiniZinc runtime" not in result_text(result)
