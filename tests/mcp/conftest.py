"""Fixtures of the MCP integration suite.

Every test session gets private HOME / XDG_CONFIG_HOME / XDG_DATA_HOME dirs
and adopts the real MiniZinc runtime into them once with
`solvergate configure-runtime --runtime-dir <runtime>`. Servers are then
launched with exactly that environment, plus a marker variable every child
inherits so process scans only count processes this suite started.

A server probes its runtimes in the background as it starts (the CP-SAT
interpreter, MiniZinc's solver catalogue). `Harness.open` waits for those
probes to end before it hands the session over, so a test that watches
processes sees only the ones its own calls started.

Environment knobs:
- SOLVERGATE_BIN: the binary (default /work/main/target/debug/solvergate)
- SOLVERGATE_TEST_RUNTIME: the runtime root to adopt (default /usr)
- SOLVERGATE_TEST_SECOND_RUNTIME=1: this is a pass over a second MiniZinc
  runtime (scripts/test sets it); tests marked `minizinc_independent` skip
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from helpers import all_procs, environ_has, leftover_marked_async
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

#: The checkout's debug build (scripts/test sets SOLVERGATE_BIN to it too).
DEFAULT_BIN = str(Path(__file__).resolve().parents[2] / "target" / "debug" / "solvergate")
NODE_DIR = Path(__file__).resolve().parent.parent / "node"
DEFAULT_RUNTIME = "/usr"

#: How long `Harness.open` waits for a server's start-up probes.
SETTLE_TIMEOUT = 20.0


async def settle(session: ClientSession, tag: str) -> None:
    """Waits until the server's start-up probes are over: asks for the solver
    catalogue (which waits for the catalogue probe, by then the interpreter
    probe has started too), then polls until no process but the server
    carries `tag`. A probe that hangs is left to the test after the timeout."""
    try:
        await session.call_tool("list_available_solvers", {})
    except Exception:  # noqa: BLE001 - a toolset without it, or no runtime
        pass
    await leftover_marked_async(tag, timeout=SETTLE_TIMEOUT)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On scripts/test's pass over a second MiniZinc runtime, tests that
    never run MiniZinc (the CP-SAT script tests) would repeat the first
    pass exactly: they are skipped there, saying so."""
    if not os.environ.get("SOLVERGATE_TEST_SECOND_RUNTIME"):
        return
    skip = pytest.mark.skip(reason="never runs MiniZinc: tested on the first runtime's pass")
    for item in items:
        if item.get_closest_marker("minizinc_independent"):
            item.add_marker(skip)


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Launched:
    """One server session opened through the official SDK client."""

    session: ClientSession
    init: Any
    stderr_path: Path
    logs: list[Any] = field(default_factory=list)
    #: The server process (found by its per-open tag; 0 if not found).
    pid: int = 0

    def stderr_text(self) -> str:
        return self.stderr_path.read_text(errors="replace")


@dataclass
class Harness:
    """How to launch the binary in this test session's private environment."""

    binary: str
    runtime_dir: str
    root: Path
    env: dict[str, str]
    marker_name: str
    marker_value: str
    _count: int = 0

    @property
    def marker(self) -> str:
        """The `NAME=value` entry found in every process the suite started."""
        return f"{self.marker_name}={self.marker_value}"

    def server_env(self, **extra: str) -> dict[str, str]:
        env = dict(self.env)
        env.update(extra)
        return env

    def tagged_env(self, **extra: str) -> tuple[dict[str, str], str]:
        """A server environment with its own process marker as well, so a
        scan can tell this server's processes from any other's. Returns the
        environment and the marker (`NAME=value`)."""
        value = uuid.uuid4().hex
        env = self.server_env(SGTEST_SERVER_TAG=value, **extra)
        return env, f"SGTEST_SERVER_TAG={value}"

    def scratch(self, prefix: str) -> Path:
        self._count += 1
        path = self.root / f"{prefix}-{self._count}"
        path.mkdir(parents=True)
        return path

    def work(self) -> Path:
        """A fresh directory for a test's scripts, models and checkers, beneath
        the one directory the suite's servers let sandboxed children write to
        (SOLVERGATE_SANDBOX_WRITABLE): the suite's scripts and checkers keep
        logs and markers beside themselves, as users' file scripts do."""
        self._count += 1
        path = self.root / "work" / f"work-{self._count}"
        path.mkdir(parents=True)
        return path

    @asynccontextmanager
    async def open(
        self,
        toolset: str = "full",
        env: dict[str, str] | None = None,
        cwd: str | Path | None = None,
        wrapper: list[str] | None = None,
    ) -> AsyncIterator[Launched]:
        """Launches `solvergate stdio --toolset <toolset>` and initializes.
        `wrapper` is a command that execs the binary as its last arguments
        (e.g. `setpriv --reuid=…`), so the server's comm is still ours."""
        stderr_path = self.scratch("server") / "stderr.txt"
        logs: list[Any] = []

        async def on_log(params: Any) -> None:
            logs.append(params)

        tag = f"SGTEST_OPEN_TAG={uuid.uuid4().hex}"
        server_env = dict(env if env is not None else self.server_env())
        server_env["SGTEST_OPEN_TAG"] = tag.partition("=")[2]
        command = [*(wrapper or []), self.binary, "stdio", "--toolset", toolset]
        params = StdioServerParameters(
            command=command[0],
            args=command[1:],
            env=server_env,
            cwd=str(cwd) if cwd is not None else None,
        )
        with open(stderr_path, "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write, logging_callback=on_log) as session:
                    init = await session.initialize()
                    await settle(session, tag)
                    logs.clear()
                    pid = next(
                        (p.pid for p in all_procs() if p.comm == "solvergate" and environ_has(p.pid, tag)),
                        0,
                    )
                    yield Launched(session=session, init=init, stderr_path=stderr_path, logs=logs, pid=pid)


@pytest.fixture(scope="session")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Harness:
    binary = os.environ.get("SOLVERGATE_BIN", DEFAULT_BIN)
    runtime_dir = os.environ.get("SOLVERGATE_TEST_RUNTIME", DEFAULT_RUNTIME)
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        pytest.fail(f"solvergate binary not found at {binary}: run `cargo build` or set SOLVERGATE_BIN")
    if not os.access(os.path.join(runtime_dir, "bin", "minizinc"), os.X_OK):
        pytest.fail(f"no MiniZinc at {runtime_dir}/bin/minizinc: set SOLVERGATE_TEST_RUNTIME")

    root = tmp_path_factory.mktemp("solvergate")
    home = root / "home"
    config = root / "config"
    data = root / "data"
    work = root / "work"
    for directory in (home, config, data, work):
        directory.mkdir()
    marker_name = "SGTEST_PROCESS_TAG"
    marker_value = uuid.uuid4().hex
    env = {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(config),
        "XDG_DATA_HOME": str(data),
        "LANG": "C.UTF-8",
        "SOLVERGATE_SANDBOX_WRITABLE": str(work),
        # Children see only the variables that pass: the suite's process
        # markers are named so its scans still find every process.
        "SOLVERGATE_PASS_ENV": f"{marker_name},SGTEST_SERVER_TAG",
        marker_name: marker_value,
    }
    adopted = subprocess.run(
        [binary, "configure-runtime", "--runtime-dir", runtime_dir],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert adopted.returncode == 0, f"configure-runtime failed: {adopted.stdout}\n{adopted.stderr}"
    return Harness(
        binary=binary,
        runtime_dir=runtime_dir,
        root=root,
        env=env,
        marker_name=marker_name,
        marker_value=marker_value,
    )


@pytest.fixture(scope="session")
async def full(harness: Harness) -> AsyncIterator[Launched]:
    """One shared full-toolset server for the stateless tool tests."""
    async with harness.open("full") as launched:
        yield launched


@pytest.fixture
def workdir(harness: Harness) -> Path:
    """A fresh directory for a test's files (writable by sandboxed children)."""
    return harness.work()


@pytest.fixture(scope="session")
def node_tools(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/node/ (its pinned packages: the MCP Inspector CLI, the
    TypeScript SDK, Ajv; and its scripts) installed with exact versions and
    no install scripts in a temp dir, once per test session."""
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        pytest.skip("npm/node not on PATH: the Inspector CLI, TypeScript SDK and Ajv checks need Node 20+")
    where = tmp_path_factory.mktemp("node")
    for source in NODE_DIR.iterdir():
        if source.is_file():
            shutil.copy(source, where / source.name)
    done = subprocess.run(
        [npm, "install", "--ignore-scripts", "--no-audit", "--no-fund"],
        cwd=where, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"npm install could not install tests/node (offline?): {done.stderr[-500:]}")
    return where
