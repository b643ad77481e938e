"""find_unsat_core and find_unsat_core_files on the real runtime.

Neither test runtime ships findMUS, so every call here takes the built-in
deletion search; the tests pin that (`method == "deletion"`).
"""

from __future__ import annotations

import anyio
import anyio.to_thread
import pytest

from helpers import (
    SAT_MODEL,
    SYNTAX_ERROR_MODEL,
    describe,
    leftover_solver_procs,
    result_text,
    solver_procs,
    structured,
    tool_error,
    wait_for_solver_procs,
)

pytestmark = pytest.mark.anyio

# Four lectures, four slots. Exactly two constraints conflict: physics must
# come after maths, yet physics is pinned to the first slot. Any other set
# of constraints is satisfiable, so {those two} is the only MUS.
TIMETABLE = """\
% Over-constrained timetable: four lectures, four slots.
enum Lecture = {Maths, Physics, Chemistry, Biology};
array[Lecture] of var 1..4: slot;

include "alldifferent.mzn";
constraint alldifferent(slot);      % one lecture per slot; a ; in a comment
constraint slot[Maths] < slot[Physics];
/* a block comment with constraint slot[Biology] = 1; inside */
constraint
    slot[Physics] = 1;
constraint slot[Chemistry] >= 2;
constraint let { var int: b = slot[Biology]; constraint b != 4; } in true;
output ["slot = \\(slot); done"];
solve satisfy;
"""


def span_of(source: str, text: str) -> dict[str, int]:
    """1-based line/column span of the first occurrence of `text`."""
    start = source.index(text)
    end = start + len(text) - 1
    line = source.count("\n", 0, start) + 1
    column = start - (source.rfind("\n", 0, start) + 1) + 1
    end_line = source.count("\n", 0, end) + 1
    end_column = end - (source.rfind("\n", 0, end) + 1) + 1
    return {"line": line, "column": column, "end_line": end_line, "end_column": end_column, "source": text}


CONFLICT = [
    "constraint slot[Maths] < slot[Physics];",
    "constraint\n    slot[Physics] = 1;",
]


async def test_timetable_core_is_exactly_the_two_conflicting_constraints(full):
    messages: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        messages.append((progress, message))

    result = await full.session.call_tool(
        "find_unsat_core", {"model": TIMETABLE, "timeout_ms": 60000}, progress_callback=on_progress
    )
    res = structured(result)
    assert res["status"] == "mus_found", res
    assert res["method"] == "deletion"
    assert res["minimal"] is True
    assert res["core"] == [span_of(TIMETABLE, text) for text in CONFLICT]
    # One whole-model check plus one per top-level constraint item (5).
    assert res["solver_calls"] == 6
    assert res["solver"] == "org.gecode.gecode"
    assert res["diagnostic"]["category"] == "infeasible"
    assert res["truncated"] is False
    assert res["stdout"].count("\n") == 6, res["stdout"]
    text = result_text(result)
    assert text.startswith("Unsat core: mus_found (method deletion")
    assert "- line 7:1-7:39: constraint slot[Maths] < slot[Physics];" in text
    assert "- line 9:1-10:22: constraint slot[Physics] = 1;" in text
    values = [progress for progress, _ in messages]
    assert values == sorted(values) and len(set(values)) == len(values), messages
    said = [message or "" for _, message in messages]
    assert any("checking candidate 1 of 5" in m for m in said), said
    assert any("checking candidate 5 of 5" in m for m in said), said
    assert "finished: mus_found" in said[-1]


async def test_crlf_model_keeps_its_spans(full):
    model = TIMETABLE.replace("\n", "\r\n")
    res = structured(await full.session.call_tool("find_unsat_core", {"model": model}))
    assert res["status"] == "mus_found", res
    conflict = [text.replace("\n", "\r\n") for text in CONFLICT]
    assert res["core"] == [span_of(model, text) for text in conflict]
    assert [(e["line"], e["end_line"]) for e in res["core"]] == [(7, 7), (9, 10)]


async def test_conflict_outside_constraint_items_is_no_core(full):
    # The empty domain makes the model unsatisfiable whatever the constraint
    # items say: every item is dropped, and the answer says where to look.
    model = "var 1..3: x;\nconstraint x > 1;\nconstraint x < 3;\nvar 1..0: y;\nsolve satisfy;\n"
    res = structured(await full.session.call_tool("find_unsat_core", {"model": model}))
    assert res["status"] == "no_core", res
    assert res["core"] == []
    assert res["diagnostic"]["category"] == "infeasible"
    assert "declarations" in res["message"]
    assert res["solver_calls"] == 3


async def test_satisfiable_model_has_no_core(full):
    res = structured(await full.session.call_tool("find_unsat_core", {"model": SAT_MODEL}))
    assert res["status"] == "no_core"
    assert "satisfiable" in res["message"]
    assert res["core"] == []
    assert res["solver_calls"] == 1
    assert res["diagnostic"] is None


async def test_syntax_error_is_an_error_result(full):
    res = structured(await full.session.call_tool("find_unsat_core", {"model": SYNTAX_ERROR_MODEL}))
    assert res["status"] == "error"
    assert res["diagnostic"]["category"] == "syntax_or_compile_error"
    assert res["core"] == []
    assert res["solver_calls"] == 1
    assert "line 2" in res["stderr"] or ":2." in res["stderr"], res["stderr"]


# The whole model fails at once (b = 1 and b = 0), but leaving out the
# first constraint leaves b = 0 plus fifteen pigeons in fourteen holes with
# pairwise disequalities: Gecode needs far longer than any budget here to
# prove that unsatisfiable, so the first deletion check always runs out.
PIGEONS = """\
var 0..1: b;
array[1..15] of var 1..14: hole;
constraint b = 1;
constraint b = 0;
constraint forall(i, j in 1..15 where i < j)(hole[i] != hole[j]);
solve satisfy;
"""


async def test_budget_too_small_for_the_shrink_times_out_not_minimal(full):
    result = await full.session.call_tool("find_unsat_core", {"model": PIGEONS, "solver": "gecode", "timeout_ms": 5000})
    res = structured(result)
    assert res["status"] == "timeout", res
    assert res["minimal"] is False
    assert res["method"] == "deletion"
    # The set kept is still unsatisfiable: nothing could be dropped.
    assert [entry["line"] for entry in res["core"]] == [3, 4, 5]
    assert res["solver_calls"] == 2
    assert res["diagnostic"]["category"] == "timeout_no_incumbent"
    assert "NOT minimal" in res["message"]
    assert "Core (NOT minimal):" in result_text(result)


async def test_cancelled_search_stops_its_solver(harness):
    before = await anyio.to_thread.run_sync(solver_procs, harness.marker)
    async with harness.open("full") as launched:
        session = launched.session
        shrinking = anyio.Event()
        holder: dict[str, object] = {}

        async def on_progress(progress, total, message):
            if message and "checking candidate" in message:
                shrinking.set()

        async def search():
            with anyio.CancelScope() as scope:
                holder["scope"] = scope
                holder["result"] = await session.call_tool(
                    "find_unsat_core",
                    {"model": PIGEONS, "solver": "gecode", "timeout_ms": 120000},
                    progress_callback=on_progress,
                )

        with anyio.fail_after(40):
            async with anyio.create_task_group() as tg:
                tg.start_soon(search)
                await shrinking.wait()
                started = await anyio.to_thread.run_sync(wait_for_solver_procs, harness.marker, 10.0, "fzn-gecode")
                assert started, "no fzn-gecode process appeared: the scan would prove nothing"
                holder["scope"].cancel()
        assert "result" not in holder, "the search finished instead of being cancelled"
        left = await anyio.to_thread.run_sync(leftover_solver_procs, before, harness.marker, 5.0)
        assert not left, f"still running after the cancel: {describe(left)}"
        res = structured(await session.call_tool("find_unsat_core", {"model": SAT_MODEL}))
        assert res["status"] == "no_core"


OPT_UNSAT = """\
int: n = 5;
array[1..n] of var 0..10: x;
constraint sum(x) <= 20;
constraint x[1] >= 8;
constraint x[2] >= 3;
constraint x[1] + x[3] <= 6;
solve maximize sum(i in 1..n)(i * x[i]);
"""


async def test_optimisation_model_core_ignores_the_objective(full):
    res = structured(await full.session.call_tool("find_unsat_core", {"model": OPT_UNSAT}))
    assert res["status"] == "mus_found", res
    assert res["core"] == [
        span_of(OPT_UNSAT, "constraint x[1] >= 8;"),
        span_of(OPT_UNSAT, "constraint x[1] + x[3] <= 6;"),
    ]
    assert res["minimal"] is True
    assert res["solver_calls"] == 5


HELPERS = """\
predicate early(var int: t) = t <= 2;
constraint b >= 1;  % background: never a core candidate
"""
FILE_MODEL = """\
include "helpers.mzn";
int: n;
var 1..n: a;
var 1..n: b;
constraint early(a);
constraint b != 3;
constraint a > b + 1;
solve satisfy;
"""


async def test_files_variant_with_data_and_relative_include(full, workdir):
    (workdir / "helpers.mzn").write_text(HELPERS)
    (workdir / "model.mzn").write_text(FILE_MODEL)
    (workdir / "data.dzn").write_text("n = 5;\n")
    res = structured(
        await full.session.call_tool(
            "find_unsat_core_files",
            {"model_path": str(workdir / "model.mzn"), "data_path": str(workdir / "data.dzn")},
        )
    )
    assert res["status"] == "mus_found", res
    assert res["method"] == "deletion"
    assert res["core"] == [
        span_of(FILE_MODEL, "constraint early(a);"),
        span_of(FILE_MODEL, "constraint a > b + 1;"),
    ]
    assert res["solver_calls"] == 4
    # Without the data the model does not compile: an error result.
    missing = structured(
        await full.session.call_tool("find_unsat_core_files", {"model_path": str(workdir / "model.mzn")})
    )
    assert missing["status"] == "error"
    assert missing["diagnostic"]["category"] == "missing_data"


async def test_a_model_the_search_cannot_split_is_an_error_not_a_core(full, workdir):
    """The solve item lives in an included file: every candidate would have
    two, so no candidate compiles. That is an error naming the reason, not a
    "core" listing every constraint."""
    (workdir / "search.mzn").write_text("solve satisfy;\n")
    (workdir / "model.mzn").write_text(
        'include "search.mzn";\nvar 1..5: x;\nconstraint x > 3;\nconstraint x < 2;\nconstraint x != 4;\n'
    )
    res = structured(await full.session.call_tool("find_unsat_core_files", {"model_path": str(workdir / "model.mzn")}))
    assert res["status"] == "error", res
    assert res["core"] == []
    assert "does not compile without the constraint at line" in res["message"], res["message"]
    assert res["diagnostic"]["category"] == "syntax_or_compile_error"


async def test_files_variant_refuses_a_missing_model(full, workdir):
    err = tool_error(
        await full.session.call_tool("find_unsat_core_files", {"model_path": str(workdir / "absent.mzn")})
    )
    assert err.category == "invalid_request"
    assert "absent.mzn" in err.message


@pytest.mark.parametrize(
    ("arguments", "needle"),
    [
        ({"model": TIMETABLE, "timeout_ms": 0}, "timeout_ms"),
        ({"model": TIMETABLE, "timeout_ms": -5}, "timeout_ms"),
        ({"model": "   \n"}, "model must not be empty"),
        ({"model": TIMETABLE, "timeout": 5}, "unknown field"),
    ],
    ids=["zero-timeout", "negative-timeout", "empty-model", "misspelt-argument"],
)
async def test_bad_arguments_are_refused(full, arguments, needle):
    err = tool_error(await full.session.call_tool("find_unsat_core", arguments))
    assert err.category == "invalid_request"
    assert needle in err.message


async def test_unknown_solver_is_refused(full):
    err = tool_error(await full.session.call_tool("find_unsat_core", {"model": TIMETABLE, "solver": "nope"}))
    assert err.category == "solver_unavailable"


async def test_tools_are_in_the_full_toolset_only(harness, full):
    names = {tool.name for tool in (await full.session.list_tools()).tools}
    assert {"find_unsat_core", "find_unsat_core_files"} <= names
    async with harness.open("core") as core:
        core_names = {tool.name for tool in (await core.session.list_tools()).tools}
    assert not {"find_unsat_core", "find_unsat_core_files"} & core_names
    tools = {tool.name: tool for tool in (await full.session.list_tools()).tools}
    assert set(tools["find_unsat_core"].input_schema["required"]) == {"model"}
    assert set(tools["find_unsat_core_files"].input_schema["required"]) == {"model_path"}
    fields = set(tools["find_unsat_core"].output_schema["properties"])
    assert {
        "status", "core", "message", "truncated", "stdout", "stderr", "elapsed_ms",
        "method", "minimal", "solver_calls", "solver", "diagnostic",
    } <= fields
