"""The opt-in sandbox (SOLVERGATE_SANDBOX=1): a CP-SAT script that opens a
TCP socket, sends UDP and writes to $HOME is denied each, MiniZinc still
solves, and every result says what was enforced. Whether the kernel can
enforce it is probed here independently of the server."""

from __future__ import annotations

import ctypes
import os
import subprocess
from pathlib import Path

import pytest

from cpsat_helpers import cpsat_env
from helpers import OPT_MODEL, structured

pytestmark = pytest.mark.anyio

ATTEMPTS = """
import json, os, socket, tempfile
tried = {}
try:
    socket.create_connection(("127.0.0.1", 9), timeout=2)
    tried["tcp"] = "connected"
except OSError as error:
    tried["tcp"] = error.errno
try:
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("192.0.2.1", 53))
    tried["udp"] = "sent"
except OSError as error:
    tried["udp"] = error.errno
try:
    with open(os.path.join(os.environ["HOME"], "escaped.txt"), "w") as out:
        out.write("x")
    tried["home"] = "written"
except OSError as error:
    tried["home"] = error.errno
with tempfile.NamedTemporaryFile() as scratch:
    scratch.write(b"x")
    tried["tmp"] = "written"
print(json.dumps({"status": "feasible", "objective": None, "solution": tried}))
"""


def landlock_abi() -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.syscall(444, None, 0, 1)  # landlock_create_ruleset(NULL, 0, VERSION)


def network_namespaces() -> bool:
    return subprocess.run(["unshare", "--net", "true"], capture_output=True).returncode == 0 or (
        subprocess.run(["unshare", "--user", "--map-current-user", "--net", "true"], capture_output=True).returncode == 0
    )


@pytest.fixture
def expected() -> dict[str, str]:
    return {
        "landlock": "enforced" if landlock_abi() >= 3 else "unsupported",
        "network": "enforced" if network_namespaces() else "unsupported",
    }


async def test_a_script_is_denied_the_network_and_home_and_says_so(harness, expected):
    env, _marker = cpsat_env(harness, SOLVERGATE_SANDBOX="1")
    home = Path(env["HOME"])
    async with harness.open("full", env=env) as launched:
        result = structured(await launched.session.call_tool("run_cpsat_python", {"source": ATTEMPTS}))
        assert result["sandbox"] == expected, result
        tried = result["solution"]
        assert tried["tmp"] == "written", "the run's own temp dir stays writable"
        if expected["network"] == "enforced":
            assert tried["tcp"] != "connected" and tried["udp"] != "sent", tried
        if expected["landlock"] == "enforced":
            assert tried["home"] == 13, tried  # EACCES
            assert not (home / "escaped.txt").exists()

        if not runtime_needs_mounts():
            solved = structured(await launched.session.call_tool("solve_minizinc_model", {"model": OPT_MODEL}))
            assert solved["status"] == "optimal", solved
            assert solved["sandbox"] == expected, solved
    if runtime_needs_mounts():
        pytest.skip(
            "the script part passed; the solve part needs a real MiniZinc: this runtime is "
            "scripts/runtime-debian13's chroot wrapper, which needs mount(2), and Landlock forbids mounts"
        )


def runtime_needs_mounts() -> bool:
    """The test runtime is the Debian 13 chroot wrapper (a shell script that
    unshares a mount namespace), not a real MiniZinc binary."""
    binary = Path(os.environ.get("SOLVERGATE_TEST_RUNTIME", "/usr")) / "bin" / "minizinc"
    head = binary.read_bytes()[:4096]
    return head.startswith(b"#!") and b"unshare --mount" in head


async def test_without_the_sandbox_results_carry_no_report(harness):
    env, _marker = cpsat_env(harness)
    async with harness.open("full", env=env) as launched:
        result = structured(await launched.session.call_tool("run_cpsat_python", {"source": ATTEMPTS}))
        assert "sandbox" not in result
        assert result["solution"]["home"] == "written"
        os.remove(Path(env["HOME"]) / "escaped.txt")
        solved = structured(await launched.session.call_tool("solve_minizinc_model", {"model": OPT_MODEL}))
        assert "sandbox" not in solved
