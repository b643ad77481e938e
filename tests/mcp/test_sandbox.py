"""The sandbox, on by default: a CP-SAT script (cold or warm-forked) that
opens a TCP socket, sends UDP and writes to $HOME is denied each, MiniZinc
still solves, and every result says what was enforced; SOLVERGATE_SANDBOX=0
and --no-sandbox turn it off. Whether the kernel can enforce it is probed
here independently of the server."""

from __future__ import annotations

import ctypes
import json
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
    with open(os.path.join(HOME_DIR, "escaped.txt"), "w") as out:
        out.write("x")
    tried["home"] = "written"
except OSError as error:
    tried["home"] = error.errno
with tempfile.NamedTemporaryFile() as scratch:
    scratch.write(b"x")
    tried["tmp"] = "written"
print(json.dumps({"status": "feasible", "objective": None, "solution": tried}))
"""


def attempts(home: Path) -> str:
    """ATTEMPTS aimed at `home`, the server's home (a run's own HOME is its
    scratch dir)."""
    return ATTEMPTS.replace("HOME_DIR", repr(str(home)))


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
        "reads": "enforced" if landlock_abi() >= 1 else "unsupported",
    }


@pytest.mark.parametrize("setting", ["default", "explicit"])
async def test_a_script_is_denied_the_network_and_home_and_says_so(harness, expected, setting):
    extra = {"SOLVERGATE_SANDBOX": "1"} if setting == "explicit" else {}
    env, _marker = cpsat_env(harness, **extra)
    if setting == "default":
        env.pop("SOLVERGATE_SANDBOX", None)
    home = Path(env["HOME"])
    async with harness.open("full", env=env) as launched:
        # Three runs: the first may start cold while the warm pool fills,
        # the later ones are forked from a warm forker, which must confine
        # its child just the same.
        for _ in range(3):
            result = structured(await launched.session.call_tool("run_cpsat_python", {"source": attempts(home)}))
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
    """The test runtime is the Debian 13 chroot wrapper without the binds
    scripts/runtime-debian13 makes once: it would mount per call, which
    Landlock forbids. With the binds in place it only chroots."""
    binary = Path(os.environ.get("SOLVERGATE_TEST_RUNTIME", "/usr")) / "bin" / "minizinc"
    head = binary.read_bytes()[:4096]
    if not (head.startswith(b"#!") and b"unshare --mount" in head):
        return False
    root = next(
        line.split("=", 1)[1].strip("'\"")
        for line in head.decode().splitlines()
        if line.startswith("root=")
    )
    return subprocess.run(["mountpoint", "-q", f"{root}/tmp"]).returncode != 0


async def test_without_the_sandbox_results_carry_no_report(harness):
    env, _marker = cpsat_env(harness, SOLVERGATE_SANDBOX="0")
    async with harness.open("full", env=env) as launched:
        result = structured(
            await launched.session.call_tool("run_cpsat_python", {"source": attempts(Path(env["HOME"]))})
        )
        assert "sandbox" not in result
        assert result["solution"]["home"] == "written"
        os.remove(Path(env["HOME"]) / "escaped.txt")
        solved = structured(await launched.session.call_tool("solve_minizinc_model", {"model": OPT_MODEL}))
        assert "sandbox" not in solved


def test_no_sandbox_on_the_command_line_turns_it_off(tmp_path):
    script = tmp_path / "attempts.py"
    script.write_text(attempts(tmp_path))
    env = dict(os.environ, HOME=str(tmp_path), SOLVERGATE_CPSAT_PYTHON=os.environ["SOLVERGATE_TEST_PYTHON"])
    env.pop("SOLVERGATE_SANDBOX", None)
    binary = os.environ["SOLVERGATE_BIN"]
    runs = {}
    for flags in ([], ["--no-sandbox"]):
        done = subprocess.run(
            [binary, *flags, "run-cpsat", "--json", str(script)], env=env, capture_output=True, text=True, timeout=120
        )
        runs[tuple(flags)] = json.loads(done.stdout)
    assert "sandbox" in runs[()], runs[()]
    assert "sandbox" not in runs[("--no-sandbox",)], runs[("--no-sandbox",)]
    assert runs[("--no-sandbox",)]["solution"]["home"] == "written"


BESIDE = """
import json, os
try:
    with open("out.csv", "w") as out:
        out.write("x,1\\n")
    wrote = "written"
except OSError as error:
    wrote = error.errno
print(json.dumps({"status": "feasible", "objective": None, "solution": {"beside": wrote}}))
"""


async def test_a_file_script_writes_beside_itself_only_where_the_operator_allows(harness, expected, tmp_path):
    if expected["landlock"] != "enforced":
        pytest.skip("Landlock is not enforced on this kernel")
    allowed, denied = tmp_path / "allowed", tmp_path / "denied"
    for directory in (allowed, denied):
        directory.mkdir()
        (directory / "beside.py").write_text(BESIDE)
    env, _marker = cpsat_env(harness, SOLVERGATE_SANDBOX_WRITABLE=str(allowed))
    async with harness.open("full", env=env) as launched:
        wrote = {}
        for directory in (allowed, denied):
            result = structured(
                await launched.session.call_tool("run_cpsat_python_file", {"script_path": str(directory / "beside.py")})
            )
            assert result["sandbox"] == expected, result
            wrote[directory.name] = result["solution"]["beside"]
    assert wrote == {"allowed": "written", "denied": 13}, wrote
    assert (allowed / "out.csv").read_text() == "x,1\n"
    assert not (denied / "out.csv").exists()


def test_a_writable_dir_that_does_not_exist_stops_start_up(harness):
    done = subprocess.run(
        [harness.binary, "stdio"],
        env=harness.server_env(SOLVERGATE_SANDBOX_WRITABLE="/nonexistent/solvergate-allowed"),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode != 0
    assert done.stdout == ""
    assert "SOLVERGATE_SANDBOX_WRITABLE" in done.stderr, done.stderr
