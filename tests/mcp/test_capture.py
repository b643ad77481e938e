"""The 1 MiB cap holds solutions, not copies: a solve's stdout is captured
with each solution once (its printed text and its values), and the
structured result is the one MiniZinc's own stream gives."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from helpers import kept_whole, result_text, structured

pytestmark = pytest.mark.anyio

ONE_MIB = 1024 * 1024

#: Far more solutions than fit under the cap, each printed by an output item.
PRINTING_MODEL = """array[1..6] of var 0..9: x;
constraint sum(x) < 40;
output ["x = \\(x)\\n"];
"""


def raw_stream(harness: Any, workdir: Path, model: str, solver: str, limit: int) -> bytes:
    """MiniZinc's own `--json-stream` for `model`, with the flags a solve
    uses, read up to `limit` bytes (the solver is stopped there)."""
    path = workdir / "model.mzn"
    path.write_text(model)
    command = [
        os.path.join(harness.runtime_dir, "bin", "minizinc"),
        "--json-stream",
        "--output-mode",
        "json",
        "--output-objective",
        "--statistics",
        "--solver",
        solver,
        "--all-solutions",
        str(path),
    ]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True
    ) as child:
        assert child.stdout is not None
        data = child.stdout.read(limit)
        child.kill()
    return data


def solution_messages(data: bytes) -> list[dict[str, Any]]:
    """The complete solution messages of a stream."""
    found = []
    for line in data.split(b"\n"):
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if isinstance(message, dict) and message.get("type") == "solution":
            found.append(message)
    return found


async def test_the_cap_keeps_solutions_not_copies(full, harness, workdir):
    with anyio.fail_after(120):
        result = await full.session.call_tool(
            "solve_minizinc_model",
            {"model": PRINTING_MODEL, "all_solutions": True, "timeout_ms": 60000},
        )
    # The response holds 128 KiB; the capture is read whole from the kept result.
    res = await kept_whole(full.session, result)
    assert res["truncated"] is True
    assert res["diagnostic"]["category"] == "output_truncated"
    kept = res["solutions"]
    # Before: what the cap held when it captured MiniZinc's lines as printed
    # (default, raw and json sections): the whole lines in its first MiB.
    stream = raw_stream(harness, workdir, PRINTING_MODEL, res["solver"], 4 * ONE_MIB)
    before = solution_messages(stream[:ONE_MIB])
    assert len(before) > 100
    ratio = len(kept) / len(before)
    print(f"solutions under the cap: {len(before)} as printed, {len(kept)} kept ({ratio:.2f}x)")
    assert ratio >= 2.5, f"{len(kept)} kept vs {len(before)} before"
    # Nothing was lost: the kept solutions are MiniZinc's, values and text.
    reference = solution_messages(stream)
    assert len(reference) >= len(kept)
    assert kept == [m["output"]["json"] for m in reference[: len(kept)]]
    texts = [m["output"]["default"] for m in reference[: len(kept)]]
    assert res["stdout"] == "".join(f"{text}----------\n" for text in texts)
    assert res["solution"] == kept[-1]
    # The text part is a summary: the megabyte lives in the kept result.
    text = result_text(result)
    # One text part, and the link to the whole result.
    assert [block.type for block in result.content] == ["text", "resource_link"]
    assert len(text.encode()) <= 16 * 1024, len(text.encode())
    assert f"Solutions: {len(kept)}" in text.splitlines()


#: An optimisation whose output item prints something other than the values.
OPTIMISING_MODEL = """var 1..9: x; var 1..9: y;
constraint x + 2 * y <= 14;
solve maximize 3 * x + y;
output ["best: x=\\(x), y=\\(y) -> \\(3 * x + y)\\n"];
"""

#: Every solution, printed with a user section beside the default one.
SECTIONS_MODEL = """array[1..3] of var 1..3: q;
include "alldifferent.mzn";
constraint alldifferent(q);
output ["q = \\(q)\\n"];
output :: "extra" ["sum \\(sum(q))\\n"];
"""


@pytest.mark.parametrize("model", [OPTIMISING_MODEL, SECTIONS_MODEL], ids=["optimising", "sections"])
async def test_an_uncapped_result_is_minizincs_own(full, harness, workdir, model):
    with anyio.fail_after(60):
        result = await full.session.call_tool(
            "solve_minizinc_model", {"model": model, "all_solutions": True, "timeout_ms": 30000}
        )
    res = structured(result)
    assert res["truncated"] is False
    reference = solution_messages(raw_stream(harness, workdir, model, res["solver"], 16 * ONE_MIB))
    assert len(reference) >= 2
    values = [dict(m["output"]["json"]) for m in reference]
    objectives = [v.pop("_objective", None) for v in values]
    assert res["solutions"] == values
    assert res["solution"] == values[-1]
    assert res["objective"] == objectives[-1]
    separator = "----------\n"
    closing = "==========\n"
    assert res["stdout"] == "".join(m["output"]["default"] + separator for m in reference) + closing
