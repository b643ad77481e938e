"""Processes that leave their run's session, through the real client: a CP-SAT
checker that prints `rejected` and leaves a `setsid` grandchild to print
`accepted` later is an `error`, never a pass (plain, with a cleared
environment, sandboxed); a script whose escaped grandchild prints a second
envelope after the script exited keeps its own envelope (cold and warm);
a duplicate key in a verdict or an envelope is an error naming the key; and
no escapee is left alive after any of them, nor after a SIGKILL of the
server.

Escapees carry a unique word in their command line (`sh -c … <mark>`), so a
/proc scan finds them even when they cleared the environment marker.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from pathlib import Path

import anyio
import pytest

from cpsat_helpers import cpsat_env, cpsat_server, leftover_marked_async, write
from helpers import RawServer, all_procs, call_ok, describe, zombie_children

pytestmark = pytest.mark.anyio

ANSWER = """
import json
print(json.dumps({"status": "optimal", "objective": 1, "solution": {"x": 1}}))
"""

#: A checker that rejects, and leaves a grandchild in a session of its own
#: that prints an accepting verdict a second later (`{escape}` is the
#: command that starts it).
LATE_ACCEPTING_CHECKER = """
import json, subprocess, time
subprocess.Popen({escape!r}, shell=True)
time.sleep(0.3)
print(json.dumps({{"status": "rejected", "errors": ["x is wrong"]}}), flush=True)
"""

LATE_VERDICT = """echo '{"status": "accepted", "errors": []}'"""

ESCAPES = {
    "setsid": "setsid sh -c 'sleep 1; {late}; sleep 30' {mark} &",
    "cleared env": "setsid env -i /bin/sh -c 'sleep 1; {late}; sleep 30' {mark} &",
    "double fork": "(setsid sh -c 'sleep 1; {late}; sleep 30' {mark} &) ; true",
}


def mark() -> str:
    return f"sgescape{uuid.uuid4().hex[:12]}"


def with_mark(word: str) -> list[int]:
    """Live processes whose command line holds `word`."""
    found = []
    for proc in all_procs():
        if proc.state == "Z":
            continue
        try:
            cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if word.encode() in cmdline:
            found.append(proc.pid)
    return found


async def assert_none_left(launched, word: str, marker: str) -> None:
    """No escapee (by its mark), no process of the server's (by its
    environment marker) and no zombie child of the server is left."""
    # The sweep is over when the call returns; a moment for /proc to agree.
    with anyio.move_on_after(3):
        while with_mark(word) or zombie_children(launched.pid):
            await anyio.sleep(0.05)
    assert with_mark(word) == [], f"an escapee survived: {with_mark(word)}"
    left = await leftover_marked_async(marker, timeout=3)
    assert not left, describe(left)
    assert zombie_children(launched.pid) == [], describe(zombie_children(launched.pid))


async def checked(session, workdir: Path, script: str, checker: str) -> dict:
    script_path = write(workdir / "model.py", script)
    checker_path = write(workdir / "checker.py", checker)
    return await call_ok(
        session,
        "run_cpsat_python_file_checked",
        {"script_path": str(script_path), "checker_path": str(checker_path), "script_timeout_ms": 20000},
    )


@pytest.mark.parametrize("sandbox", ["off", "on"])
@pytest.mark.parametrize("how", list(ESCAPES))
async def test_a_late_accepting_grandchild_never_makes_a_checker_pass(harness, workdir, how, sandbox):
    extra = {"SOLVERGATE_SANDBOX": "1"} if sandbox == "on" else {}
    word = mark()
    escape = ESCAPES[how].format(late=LATE_VERDICT, mark=word)
    async with cpsat_server(harness, **extra) as (launched, marker):
        result = await checked(launched.session, workdir, ANSWER, LATE_ACCEPTING_CHECKER.format(escape=escape))
        report = result["checker"]
        assert report["status"] == "error", report
        assert "outlived it" in report["message"], report
        assert "killed" in report["message"], report
        assert '"rejected"' in report["message"], report
        assert "rejected" in report["stdout"] and "accepted" not in report["stdout"], report
        assert result["diagnostic"]["category"] == "checker_failed", result["diagnostic"]
        await assert_none_left(launched, word, marker)


async def test_a_duplicate_key_in_a_verdict_is_an_error_naming_it(harness, workdir):
    checker = """print('{"status": "rejected", "status": "accepted", "errors": []}')"""
    async with cpsat_server(harness) as (launched, _marker):
        report = (await checked(launched.session, workdir, ANSWER, checker))["checker"]
        assert report["status"] == "error", report
        assert "the key status more than once" in report["message"], report


#: A script that prints its answer and leaves a grandchild in a session of
#: its own that prints a better-looking envelope after the script exited.
LATE_ENVELOPE_SCRIPT = """
import json, subprocess, time
subprocess.Popen({escape!r}, shell=True)
time.sleep(0.3)
print(json.dumps({{"status": "feasible", "objective": 1, "solution": {{"own": True}}}}), flush=True)
"""

LATE_ENVELOPE = """echo '{"status": "optimal", "objective": 99, "solution": {"forged": true}}'"""


@pytest.mark.parametrize("warm", ["cold", "warm"])
@pytest.mark.parametrize("how", list(ESCAPES))
async def test_an_envelope_printed_after_the_script_exited_is_never_its_answer(harness, how, warm):
    extra = {"SOLVERGATE_CPSAT_WARM": "0"} if warm == "cold" else {}
    async with cpsat_server(harness, **extra) as (launched, marker):
        # A warm pool starts on the first run: run until the forkers serve.
        for attempt in range(3 if warm == "warm" else 1):
            word = mark()
            escape = ESCAPES[how].format(late=LATE_ENVELOPE, mark=word)
            result = await call_ok(
                launched.session,
                "run_cpsat_python",
                {"source": LATE_ENVELOPE_SCRIPT.format(escape=escape), "script_timeout_ms": 20000},
            )
            assert result["status"] == "feasible", result
            assert result["solution"] == {"own": True}, result
            assert "forged" not in result["stdout"], result["stdout"]
            diagnostic = result["diagnostic"]
            assert diagnostic is not None and "outlived it" in diagnostic["message"], diagnostic
            assert diagnostic["details"]["escaped_processes"] >= 1, diagnostic
            await assert_none_left(launched, word, marker)


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ('{"status": "infeasible", "status": "optimal", "objective": 1, "solution": {}}', "status"),
        ('{"status": "optimal", "objective": 1, "solution": {"x": 1, "x": 2}}', 'solution["x"]'),
    ],
)
async def test_a_duplicate_key_in_an_envelope_is_an_envelope_error_naming_it(harness, line, field):
    # A valid envelope first: the duplicate line is judged, not skipped.
    valid = '{"status": "optimal", "objective": 1, "solution": {}}'
    source = f"print({valid!r})\nprint({line!r})\n"
    async with cpsat_server(harness) as (launched, _marker):
        result = await call_ok(launched.session, "run_cpsat_python", {"source": source})
        assert result["status"] == "error", result
        diagnostic = result["diagnostic"]
        assert diagnostic["details"]["field"] == field, diagnostic
        assert "more than once" in diagnostic["message"], diagnostic


def test_a_tagged_escapee_dies_with_a_sigkilled_server(harness):
    """SIGKILL gives the server no chance to sweep: its watchdog kills every
    process that carries the server's run-tag prefix, also one that left its
    run's session while the run was still going."""
    word = mark()
    escape = f"setsid sh -c 'sleep 300; true' {word} &"
    script = f"import subprocess, time\nsubprocess.Popen({escape!r}, shell=True)\ntime.sleep(60)\n"
    env, _marker = cpsat_env(harness, SOLVERGATE_CPSAT_WARM="0")
    server = RawServer([harness.binary, "stdio", "--toolset", "full"], env, harness.scratch("escape-kill") / "stderr.txt")
    try:
        server.initialize()
        server.request("tools/call", {"name": "run_cpsat_python", "arguments": {"source": script}})
        deadline = time.monotonic() + 20
        while not with_mark(word) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert with_mark(word), "the escapee never started"
        os.kill(server.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while with_mark(word) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert with_mark(word) == [], "the escapee outlived the server"
    finally:
        server.stop()


#: A checker that rejects and exits, and a grandchild in a session of its
#: own that waits for the checker's exit (the end of a pipe only the checker
#: held), prints an accepting verdict at once and dies: it writes in the
#: moment between the exit and our cut, and is gone before any sweep sees
#: it alive. Only its zombie is left to say it existed.
AT_THE_EXIT_CHECKER = """
import json, os, sys
r, w = os.pipe()
if os.fork() == 0:
    os.close(w)
    os.setsid()
    if os.fork() == 0:
        os.read(r, 1)
        os.write(1, (json.dumps({"status": "accepted", "errors": []}) + "\\n").encode())
        os._exit(0)
    os._exit(0)
os.close(r)
print(json.dumps({"status": "rejected", "errors": ["x is wrong"]}), flush=True)
os._exit(0)
"""


@pytest.mark.parametrize("sandbox", ["off", "on"])
async def test_a_grandchild_that_writes_at_the_exit_and_dies_never_makes_a_checker_pass(harness, workdir, sandbox):
    extra = {"SOLVERGATE_SANDBOX": "1"} if sandbox == "on" else {}
    async with cpsat_server(harness, **extra) as (launched, marker):
        # The write lands before the cut in a few runs of a hundred (before
        # the zombie was counted, 3 of 40 were forged passes): try often.
        for _ in range(25):
            result = await checked(launched.session, workdir, ANSWER, AT_THE_EXIT_CHECKER)
            report = result["checker"]
            assert report["status"] != "accepted" and report["verdict"] != "accepted", report
            assert result["diagnostic"]["category"] == "checker_failed", result["diagnostic"]
        # A killed grandchild is reaped by the server's next pass, not at once: wait for it.
        with anyio.move_on_after(10):
            while zombie_children(launched.pid):
                await anyio.sleep(0.1)
        assert zombie_children(launched.pid) == [], describe(zombie_children(launched.pid))
