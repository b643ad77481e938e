"""A Python checker that fails names its own error in the text part.

A client's model reads only the text parts: "the checker failed: it exited
with code 1" alone leaves it guessing. Each tool that runs a Python checker
(a checked run, a job, a save) puts the end of the checker's stderr in its
text — a traceback's exception and where it was raised — bounded however
much the checker wrote, and says so when it wrote nothing.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cpsat_helpers import cpsat_server, wait_cpsat_job, write
from helpers import result_text, structured

pytestmark = [pytest.mark.anyio, pytest.mark.minizinc_independent]

#: The text part's bound (render::TEXT_LIMIT).
TEXT_LIMIT = 16 * 1024

ANSWER = """
import json
print(json.dumps({"status": "optimal", "objective": 13, "solution": {"x": [1, 2, 3]}}))
"""

#: Reads the payload, then divides by zero in a helper function.
RAISES = """import json
import sys

def ratio(solution):
    return solution["x"][0] / 0

payload = json.load(open(sys.argv[1]))
print(ratio(payload["solution"]))
"""

#: Megabytes of stderr (more than the 1 MiB capture), then a crash.
FLOODS = """
import sys
for i in range(60000):
    sys.stderr.write("noise line %06d ........................................................................\\n" % i)
sys.stderr.write("x" * 300000 + "\\n")
raise RuntimeError("gave up after the noise")
"""

#: A non-zero exit without a word.
SILENT = """
import sys
sys.exit(1)
"""


@pytest.fixture(scope="module")
async def cpsat(harness):
    async with cpsat_server(harness) as (launched, _marker):
        yield launched


def checker_lines(text: str) -> list[str]:
    """The text part's lines from `Checker:` on, up to the kept result's line."""
    lines = text.split("\nWhole result: ")[0].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Checker:"))
    return lines[start:]


async def checked_run(session, workdir: Path, checker: str):
    (workdir / "model").mkdir()
    (workdir / "checker").mkdir()
    script = write(workdir / "model" / "model.py", ANSWER)
    path = write(workdir / "checker" / "checker.py", checker)
    result = await session.call_tool(
        "run_cpsat_python_file_checked",
        {"script_path": str(script), "checker_path": str(path), "checker_timeout_ms": 60000},
    )
    return structured(result), result_text(result)


async def test_a_raising_checker_names_its_exception_and_where(cpsat, workdir):
    res, text = await checked_run(cpsat.session, workdir, RAISES)
    assert res["checker"]["return_code"] == 1, res["checker"]
    assert "ZeroDivisionError" in res["checker"]["stderr"]
    lines = checker_lines(text)
    assert lines[0].startswith("Checker: error (0 error(s), "), lines
    assert lines[0].endswith(" — the checker failed: it exited with code 1"), lines
    # The exception, then the frame it was raised in, by file name only.
    assert lines[1:4] == [
        "Checker's error (the end of its stderr):",
        "  ZeroDivisionError: division by zero",
        '  raised at File "checker.py", line 5, in ratio',
    ], text
    assert str(workdir) not in text.split("Whole result:")[0], "the checker's directory is not repeated"


async def test_a_flood_of_stderr_keeps_the_text_bounded_and_still_names_the_error(cpsat, workdir):
    res, text = await checked_run(cpsat.session, workdir, FLOODS)
    report = res["checker"]
    assert report["verdict"] == "error", report
    assert len(text.encode()) <= TEXT_LIMIT, len(text.encode())
    lines = checker_lines(text)
    assert "Checker's error (the end of its stderr):" in lines, text
    assert "  RuntimeError: gave up after the noise" in lines, text
    # No line of the noise, not even the 300 kB one, is quoted whole.
    assert all(len(line) <= 400 for line in lines), max(map(len, lines))
    assert not re.search(r"noise line \d{6}", text), text[:2000]


async def test_a_silent_failure_says_the_checker_wrote_nothing(cpsat, workdir):
    res, text = await checked_run(cpsat.session, workdir, SILENT)
    assert res["checker"]["stderr"] == "" and res["checker"]["return_code"] == 1, res["checker"]
    lines = checker_lines(text)
    assert lines[1] == "Checker's error: none — it exited with code 1 and wrote nothing to stderr", text


async def test_a_job_and_a_save_name_the_checkers_error_too(cpsat):
    session = cpsat.session
    submitted = structured(
        await session.call_tool(
            "submit_cpsat_python_job", {"source": ANSWER, "checker": RAISES, "script_timeout_ms": 20000}
        )
    )
    job, _states = await wait_cpsat_job(session, submitted["job_id"])
    assert job["checker"]["verdict"] == "error", job
    text = result_text(await session.call_tool("get_cpsat_python_job", {"job_id": submitted["job_id"]}))
    assert "\n  ZeroDivisionError: division by zero\n" in text, text
    assert '\n  raised at File "checker.py", line 5, in ratio\n' in text, text

    result = await session.call_tool(
        "save_verified_cpsat_python", {"source": ANSWER, "checker": RAISES, "verify_only": True}
    )
    res = structured(result)
    assert res["reason"] and res["checker"]["verdict"] == "error", res
    text = result_text(result)
    assert "\n  ZeroDivisionError: division by zero\n" in text, text
