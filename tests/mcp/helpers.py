"""Shared helpers of the MCP integration suite: models, result parsing,
process scans over /proc and a raw JSON-RPC client for the binary.

Nothing here knows how the server is built; it only talks to the binary the
way a client would, and looks at /proc the way an operator would.
"""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

# --------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------

#: Optimum 2*10 + 2 = 22 at x=10, y=2; no output item.
OPT_MODEL = (
    "var 1..10: x; var 1..10: y;\n"
    "constraint x + y <= 12;\n"
    "solve maximize 2*x + y;\n"
)
OPT_OBJECTIVE = 22

#: Three solutions x = 1, 2, 3.
SAT_MODEL = "var 1..3: x;\nsolve satisfy;\n"

UNSAT_MODEL = "var 1..3: x;\nconstraint x > 5;\nsolve satisfy;\n"

#: Missing ';' after the declaration.
SYNTAX_ERROR_MODEL = "var 1..3: x\nsolve satisfy;\n"

#: Compares an int with a string.
TYPE_ERROR_MODEL = 'var 1..3: x;\nconstraint x = "a";\nsolve satisfy;\n'

#: Needs `n` from data.
MISSING_DATA_MODEL = "int: n;\nvar 1..n: x;\nsolve maximize x;\n"

#: Rejects every solution with x = 10 (a constraint-checker).
REJECT_X10_CHECKER = "int: x; int: y;\nconstraint x < 10;\noutput [\"CORRECT\\n\"];\n"

#: Prints a verdict; the server must not interpret it.
TEXT_CHECKER = (
    "int: x; int: y;\n"
    'output [if x < 10 then "CORRECT\\n" else "INCORRECT\\n" endif];\n'
)

#: A checker that does not parse.
BROKEN_CHECKER = "int: x; int: y\nconstraint x < 10;\n"

#: Trivial model whose checker evaluates a 2e9-term sum: MiniZinc ignores its
#: own time limit and SIGTERM while doing it, so only the server's hard kill
#: stops it. Never run this without a kill timeout.
NEVER_MODEL = "var 1..3: x;\nsolve satisfy;\n"
NEVER_CHECKER = (
    "int: x;\n"
    "int: s = sum(i in 1..2000000000)(i mod 3);\n"
    'output ["\\(s)\\n"];\n'
)

#: A million solutions with all_solutions: ~3 MB of output.
PRINTER_MODEL = "array[1..6] of var 0..9: x;\nsolve satisfy;\n"

#: Runs until its time limit (60 queens maximising a weighted sum).
HARD_MODEL = """int: n = 60;
array[1..n] of var 1..n: q;
include "alldifferent.mzn";
constraint alldifferent(q);
constraint alldifferent([q[i]+i | i in 1..n]);
constraint alldifferent([q[i]-i | i in 1..n]);
constraint sum(i in 1..n)(q[i]*i) mod 7 = 3;
solve maximize sum(i in 1..n)(q[i]*q[i] * i);
"""

SOLVER_COMMS = frozenset({"minizinc", "fzn-gecode"})

DIAGNOSTIC_LINE = re.compile(r"^Diagnostic: (?P<category>[a-z_]+) — (?P<message>.+)$")


# --------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------


def result_text(result: Any) -> str:
    """All text parts of a CallToolResult, joined."""
    return "\n".join(
        getattr(part, "text", "") for part in (result.content or []) if getattr(part, "text", None)
    )


@dataclass
class ToolErrorInfo:
    category: str
    message: str
    text: str


def tool_error(result: Any) -> ToolErrorInfo:
    """Parses an is_error result whose first line is the diagnostic line."""
    assert result.is_error, f"expected an error result, got: {result_text(result)[:2000]!r}"
    text = result_text(result)
    first = text.splitlines()[0] if text else ""
    match = DIAGNOSTIC_LINE.match(first)
    assert match, f"error text does not start with 'Diagnostic: <category> — <message>': {text!r}"
    return ToolErrorInfo(match["category"], match["message"], text)


def structured(result: Any) -> dict[str, Any]:
    """The structured content of a successful result."""
    assert not result.is_error, f"unexpected tool error: {result_text(result)[:2000]!r}"
    assert isinstance(result.structured_content, dict), "no structured content"
    return result.structured_content


# --------------------------------------------------------------------------
# Processes
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Proc:
    pid: int
    comm: str
    state: str
    ppid: int
    starttime: int


def _stat(pid: int) -> Proc | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # comm may contain spaces and parentheses: split on the last ')'.
    left, _, rest = text.rpartition(")")
    comm = left.partition("(")[2]
    fields = rest.split()
    if len(fields) < 20:
        return None
    return Proc(pid=pid, comm=comm, state=fields[0], ppid=int(fields[1]), starttime=int(fields[19]))


def all_procs() -> list[Proc]:
    procs = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            proc = _stat(int(entry))
            if proc is not None:
                procs.append(proc)
    return procs


def environ_has(pid: int, marker: str) -> bool | None:
    """True/False when the environment is readable, None when it is not."""
    try:
        data = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return None
    if not data:
        return None
    return marker.encode() in data.split(b"\0")


def solver_procs(marker: str | None = None) -> set[Proc]:
    """Live (non-zombie) minizinc / fzn-gecode processes.

    With a marker (an ``NAME=value`` entry the suite put into the server's
    environment, which every descendant inherits) only the ones started on
    behalf of this suite count, so a developer running MiniZinc next to the
    suite does not make it fail. A process whose environment cannot be read
    is counted: better a false alarm than a missed leak.
    """
    found = set()
    unread = []
    for proc in all_procs():
        if proc.comm not in SOLVER_COMMS or proc.state in ("Z", "X"):
            continue
        if marker is not None:
            has = environ_has(proc.pid, marker)
            if has is False:
                continue
            if has is None:
                unread.append(proc)
                continue
        found.add(proc)
    if unread:
        # A process in the middle of exiting (its memory, and so its environment, already
        # gone) reads as unreadable for a moment: another test's solver ending as this scan
        # runs. Look again once it has had time to become a zombie or vanish; one still alive
        # and still unreadable then is counted.
        time.sleep(0.2)
        for proc in unread:
            again = _stat(proc.pid)
            if again is None or again.starttime != proc.starttime or again.state in ("Z", "X"):
                continue
            if environ_has(proc.pid, marker) is not False:
                found.add(proc)
    return found


def wait_for_solver_procs(marker: str, timeout: float = 10.0, comm: str | None = None) -> set[Proc]:
    """Waits until at least one marked solver process (of `comm`) runs."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        procs = {p for p in solver_procs(marker) if comm is None or p.comm == comm}
        if procs:
            return procs
        time.sleep(0.05)
    return set()


def leftover_solver_procs(before: set[Proc], marker: str, timeout: float = 5.0) -> set[Proc]:
    """Polls until no marked solver process exists that was not in `before`;
    returns what is still there after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        left = solver_procs(marker) - before
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.05)


#: A line of the warm forker's source (`src/exec/forker.py`), which its
#: command line carries.
FORKER_TAG = b"solvergate's warm forker"


def is_warm_forker(proc: Proc, procs: dict[int, Proc] | None = None) -> bool:
    """A warm CP-SAT forker: a direct child of a solvergate server running
    the forker source. The children it forks share its command line but not
    its parent, so they still count as scripts."""
    parent = (procs or {}).get(proc.ppid) or _stat(proc.ppid)
    if parent is None or parent.comm != "solvergate":
        return False
    try:
        return FORKER_TAG in Path(f"/proc/{proc.pid}/cmdline").read_bytes()
    except OSError:
        return False


def warm_forkers(marker: str) -> set[Proc]:
    """The live warm forkers carrying `marker`."""
    procs = {p.pid: p for p in all_procs()}
    return {
        p
        for p in procs.values()
        if p.state not in ("Z", "X") and environ_has(p.pid, marker) and is_warm_forker(p, procs)
    }


def marked_procs(marker: str) -> set[Proc]:
    """Live (non-zombie) processes carrying `marker` in their environment,
    except the solvergate server itself and its warm CP-SAT forkers (part of
    the server, kept between calls): the scripts, checkers and whatever they
    started."""
    found = set()
    procs = {p.pid: p for p in all_procs()}
    for proc in procs.values():
        if proc.state in ("Z", "X") or proc.comm == "solvergate" or proc.pid == os.getpid():
            continue
        if environ_has(proc.pid, marker) and not is_warm_forker(proc, procs):
            found.add(proc)
    return found


def wait_marked(marker: str, predicate: Callable[[set[Proc]], bool], timeout: float = 15.0) -> set[Proc]:
    """Polls until the marked processes satisfy `predicate`; returns them
    (an empty set when they never did)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        procs = marked_procs(marker)
        if predicate(procs):
            return procs
        time.sleep(0.05)
    return set()


def leftover_marked(marker: str, timeout: float = 2.0) -> set[Proc]:
    """Polls until no marked process is left; returns what is still there
    after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        left = marked_procs(marker)
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.05)


async def wait_marked_async(marker: str, predicate: Callable[[set[Proc]], bool], timeout: float = 15.0) -> set[Proc]:
    return await anyio.to_thread.run_sync(wait_marked, marker, predicate, timeout)


async def leftover_marked_async(marker: str, timeout: float = 2.0) -> set[Proc]:
    return await anyio.to_thread.run_sync(leftover_marked, marker, timeout)


def zombie_children(pid: int) -> list[Proc]:
    return [p for p in all_procs() if p.ppid == pid and p.state == "Z"]


def describe(procs: set[Proc] | list[Proc]) -> str:
    return ", ".join(f"{p.comm}[{p.pid}] state={p.state} ppid={p.ppid}" for p in sorted(procs, key=lambda p: p.pid))


# --------------------------------------------------------------------------
# Raw JSON-RPC over the binary's stdio
# --------------------------------------------------------------------------

PROTOCOL_VERSION = "2025-11-25"


@dataclass
class RawServer:
    """The binary under subprocess.Popen, spoken to with raw JSON-RPC lines.

    Every stdout line is kept (`lines`) so a test can check that nothing but
    JSON-RPC ever reached stdout; stderr goes to a file.
    """

    args: list[str]
    env: dict[str, str]
    stderr_path: Path
    cwd: str | None = None
    lines: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._stderr = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(
            self.args,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=self.env,
            cwd=self.cwd,
        )
        self._messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self._next_id = 1
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            line = raw.decode("utf-8", errors="replace").rstrip("\n")
            self.lines.append(line)
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if isinstance(message, dict):
                self._messages.put(message)

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any] | None = None) -> int:
        request_id = self._next_id
        self._next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return request_id

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def response(self, request_id: int, timeout: float = 30.0) -> dict[str, Any]:
        """Waits for the response to `request_id`, skipping notifications."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no response to request {request_id} within {timeout} s")
            try:
                message = self._messages.get(timeout=remaining)
            except queue.Empty:
                continue
            if message.get("id") == request_id and ("result" in message or "error" in message):
                return message

    def call(self, method: str, params: dict[str, Any] | None = None, timeout: float = 30.0) -> dict[str, Any]:
        return self.response(self.request(method, params), timeout)

    def initialize(self) -> dict[str, Any]:
        reply = self.call(
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "solvergate-tests", "version": "0"},
            },
        )
        self.notify("notifications/initialized")
        return reply

    def call_tool(self, name: str, arguments: dict[str, Any], timeout: float = 30.0) -> dict[str, Any]:
        return self.call("tools/call", {"name": name, "arguments": arguments}, timeout)

    def close_stdin(self) -> None:
        if self.proc.stdin and not self.proc.stdin.closed:
            self.proc.stdin.close()

    def wait(self, timeout: float) -> int | None:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def stderr_text(self) -> str:
        self._stderr.flush()
        return self.stderr_path.read_text(errors="replace")

    def stop(self) -> None:
        """Hard cleanup for teardown; a passing test has already stopped it."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self._reader.join(timeout=5)
        if self.proc.stdin and not self.proc.stdin.closed:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
        self._stderr.close()


def non_jsonrpc_lines(lines: list[str]) -> list[str]:
    """Stdout lines that are not a JSON-RPC 2.0 message."""
    bad = []
    for line in lines:
        try:
            message = json.loads(line)
        except ValueError:
            bad.append(line)
            continue
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            bad.append(line)
    return bad


# --------------------------------------------------------------------------
# Background jobs and portfolios
# --------------------------------------------------------------------------

#: With all_solutions: prints x = 1, then evaluating the output of x = 2
#: runs ~forever and MiniZinc ignores its own time limit while doing it, so
#: only the server's hard wall clock (timeout_ms + grace) stops it:
#: status `timeout` with one solution kept.
HANG_AFTER_FIRST_MODEL = (
    "var 1..3: x;\nsolve satisfy;\n"
    'output [if fix(x) = 1 then "x = 1\\n" else show(sum(i in 1..2000000000)(i mod 3)) endif];\n'
)

#: The output of the very first solution never finishes: only the server's
#: hard wall clock stops it, status `timeout` without a solution.
HANG_AT_FIRST_MODEL = "var 1..3: x;\nsolve satisfy;\noutput [show(sum(i in 1..2000000000)(i mod 3))];\n"

#: With all_solutions: prints x = 1, then the output of x = 2 divides by
#: zero and MiniZinc exits 1: status `error` with one solution.
ERROR_AFTER_FIRST_MODEL = 'var 1..3: x;\nsolve satisfy;\noutput ["x = \\(x)\\n", show(10 div (x - 2))];\n'

#: 13 pigeons in 12 holes with pairwise `!=`: Gecode neither finds a
#: solution nor proves infeasibility within a short limit: status `unknown`.
PIGEONHOLE_MODEL = (
    "array[1..13] of var 1..12: p;\n"
    "constraint forall(i, j in 1..13 where i < j)(p[i] != p[j]);\n"
    "solve satisfy;\n"
)

#: Two formulations of one instance (data `n`) with a shared output `x`:
#: the easy one is optimal at x = n at once, the hard one runs until its
#: time limit. X_CHECKER suits both.
N_DATA = "n = 60;\n"
EASY_N_MODEL = "int: n;\nvar 1..n: x;\nsolve maximize x;\n"
HARD_N_MODEL = HARD_MODEL.replace("int: n = 60;", "int: n;") + "var 1..n: x = q[1];\n"
X_CHECKER = 'int: n;\nint: x;\nconstraint x <= n;\noutput ["CORRECT \\(x)\\n"];\n'

JOB_STATES = frozenset({"queued", "running", "succeeded", "failed", "timeout", "cancelled"})
TERMINAL_STATES = frozenset({"succeeded", "failed", "timeout", "cancelled"})
#: The states whose status carries a `result`.
RESULT_STATES = frozenset({"succeeded", "timeout"})

_RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")


def rfc3339(text: Any) -> "datetime":
    """Parses an RFC 3339 timestamp, failing on anything else."""
    from datetime import datetime

    assert isinstance(text, str) and _RFC3339.match(text), f"not an RFC 3339 timestamp: {text!r}"
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def check_solve_job(job: dict[str, Any]) -> None:
    """The SolveJobStatus contract, for any state."""
    state = job["state"]
    assert state in JOB_STATES, job
    assert isinstance(job["job_id"], str) and job["job_id"], job
    assert isinstance(job["timeout_ms"], int), job
    assert isinstance(job["elapsed_ms"], int) and job["elapsed_ms"] >= 0, job
    # result present exactly for succeeded and timeout
    assert (job["result"] is not None) == (state in RESULT_STATES), f"result vs state {state}: {job}"
    if job["result"] is not None:
        # state timeout exactly when the solve itself says timeout
        assert (state == "timeout") == (job["result"]["status"] == "timeout"), job
    submitted = rfc3339(job["submitted_at"])
    if state == "queued":
        assert job["started_at"] is None and job["elapsed_ms"] == 0, job
    if state in ("running", "succeeded", "timeout", "failed"):
        assert job["started_at"] is not None, job
    assert (job["finished_at"] is not None) == (state in TERMINAL_STATES), job
    # Live figures only while running.
    if state != "running":
        assert job["live"] is None, job
    elif job["live"] is not None:
        assert job["live"]["solutions"] >= 1, job
    if job["started_at"] is not None:
        started = rfc3339(job["started_at"])
        assert submitted <= started, job
        if job["finished_at"] is not None:
            finished = rfc3339(job["finished_at"])
            assert started <= finished, job
            ran_ms = (finished - started).total_seconds() * 1000
            assert abs(job["elapsed_ms"] - ran_ms) <= 50, f"elapsed_ms {job['elapsed_ms']} vs {ran_ms:.0f}: {job}"
    elif job["finished_at"] is not None:
        assert submitted <= rfc3339(job["finished_at"]), job
    if state == "cancelled":
        assert job["diagnostic"] and job["diagnostic"]["category"] == "cancelled", job
    if state == "failed":
        assert job["message"], job
        assert job["diagnostic"] and job["diagnostic"]["category"] == "job_failed", job


def check_portfolio_job(job: dict[str, Any]) -> None:
    """The PortfolioJobStatus contract, for any state."""
    state = job["state"]
    assert state in ("running", "succeeded", "failed", "cancelled"), job
    assert isinstance(job["job_id"], str) and job["job_id"], job
    assert (job["result"] is not None) == (state == "succeeded"), f"result vs state {state}: {job}"
    assert (job["finished_at"] is not None) == (state != "running"), job
    rfc3339(job["submitted_at"])
    if job["finished_at"] is not None:
        assert rfc3339(job["submitted_at"]) <= rfc3339(job["finished_at"]), job
    assert len(set(job["attempt_job_ids"])) == len(job["attempt_job_ids"]) > 0, job
    if state == "cancelled":
        assert job["diagnostic"] and job["diagnostic"]["category"] == "cancelled", job


async def call_ok(session: Any, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return structured(await session.call_tool(tool, arguments))


async def kept_whole(session: Any, result: Any) -> dict[str, Any]:
    """The whole result behind a tool result: what its `resource_link`
    reads. A response holds at most 128 KiB, its largest values giving way
    to markers past it; tests of what a run captured read it whole."""
    structured(result)
    [link] = [block for block in result.content if block.type == "resource_link"]
    read = await session.read_resource(str(link.uri))
    return json.loads(read.contents[0].text)


async def call_error(session: Any, tool: str, arguments: dict[str, Any]) -> ToolErrorInfo:
    return tool_error(await session.call_tool(tool, arguments))


async def wait_job(
    session: Any, job_id: str, tool: str = "get_solve_job", timeout: float = 30.0, interval: float = 0.05
) -> tuple[dict[str, Any], list[str]]:
    """Polls until the job is terminal; returns the status and every state
    seen on the way (each status checked against its contract)."""
    import anyio

    check = check_solve_job if tool == "get_solve_job" else check_portfolio_job
    seen: list[str] = []
    with anyio.fail_after(timeout):
        while True:
            job = await call_ok(session, tool, {"job_id": job_id})
            check(job)
            seen.append(job["state"])
            if job["state"] in TERMINAL_STATES:
                return job, seen
            await anyio.sleep(interval)


SUMMARY_KEYS = frozenset(
    {"job_id", "kind", "state", "submitted_at", "started_at", "finished_at", "elapsed_ms", "status", "objective", "message"}
)


def check_job_summary(job: dict[str, Any], kind: str) -> None:
    """One row of a list tool: a summary, never the full result."""
    assert set(job) == SUMMARY_KEYS, f"a list row is a summary: {sorted(job)}"
    assert job["kind"] == kind, job
    state = job["state"]
    assert state in JOB_STATES, job
    assert isinstance(job["job_id"], str) and job["job_id"], job
    assert isinstance(job["elapsed_ms"], int) and job["elapsed_ms"] >= 0, job
    rfc3339(job["submitted_at"])
    assert (job["finished_at"] is not None) == (state in TERMINAL_STATES), job
    if kind == "portfolio":
        assert (job["status"] is not None) == (state == "succeeded"), job
    else:
        assert (job["status"] is not None) == (state in RESULT_STATES), job
    if job["objective"] is not None:
        assert isinstance(job["objective"], (int, float)), job
    if state in ("failed", "cancelled"):
        assert job["message"], job


async def list_jobs(session: Any, tool: str, kind: str) -> list[dict[str, Any]]:
    """The rows of a list tool, each checked as a summary."""
    jobs = (await call_ok(session, tool, {}))["jobs"]
    for job in jobs:
        check_job_summary(job, kind)
    return jobs


async def solve_job_ids(session: Any) -> list[str]:
    return [job["job_id"] for job in await list_jobs(session, "list_solve_jobs", "solve")]


async def portfolio_job_ids(session: Any) -> list[str]:
    return [job["job_id"] for job in await list_jobs(session, "list_portfolio_jobs", "portfolio")]


def sha256_hex(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()


def declare_wrapped(root, runtime_dir: str) -> None:
    """A runtime at `root` whose bin/minizinc execs the one at `runtime_dir`
    names, for the sandbox's read boundary, what else it reads: that
    runtime, and what that one names in turn (solvergate-read-roots)."""
    from pathlib import Path

    declared = Path(runtime_dir) / "solvergate-read-roots"
    extra = declared.read_text() if declared.exists() else ""
    (Path(root) / "solvergate-read-roots").write_text(f"{runtime_dir}\n{extra}")
