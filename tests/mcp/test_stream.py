"""The --json-stream parser against messages newer MiniZinc versions send.

A wrapper runtime (bin/minizinc that execs the real one) prepends message
types 2.6.4 never prints; the server must ignore them and answer as usual.
"""

from __future__ import annotations

import os
import stat

import pytest

from helpers import OPT_MODEL, OPT_OBJECTIVE, SAT_MODEL, declare_wrapped, structured

pytestmark = pytest.mark.anyio

UNKNOWN_MESSAGES = [
    '{"type": "future-message", "payload": {"nested": [1, 2, {"x": null}]}}',
    '{"type": "progress", "value": 0.5}',
    '{"type": "checkpoint"}',
]


@pytest.fixture
def wrapped_runtime(harness):
    root = harness.scratch("wrapped-runtime")
    (root / "bin").mkdir()
    real = os.path.join(harness.runtime_dir, "bin", "minizinc")
    lines = "\n".join(f"    printf '%s\\n' '{message}'" for message in UNKNOWN_MESSAGES)
    script = (
        "#!/bin/sh\n"
        'for arg in "$@"; do\n'
        '  if [ "$arg" = "--json-stream" ]; then\n'
        f"{lines}\n"
        "    break\n"
        "  fi\n"
        "done\n"
        f'exec {real} "$@"\n'
    )
    wrapper = root / "bin" / "minizinc"
    wrapper.write_text(script)
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    declare_wrapped(root, harness.runtime_dir)
    return root


async def test_unknown_stream_messages_are_ignored(harness, wrapped_runtime):
    env = harness.server_env(SOLVERGATE_RUNTIME_DIR=str(wrapped_runtime))
    async with harness.open("full", env=env) as launched:
        status = structured(await launched.session.call_tool("check_runtime", {}))
        assert status["installed"] is True and status["runtime_dir"] == str(wrapped_runtime)

        res = structured(await launched.session.call_tool("solve_minizinc_model", {"model": OPT_MODEL}))
        assert res["status"] == "optimal"
        assert res["objective"] == OPT_OBJECTIVE
        assert res["solution"] == {"x": 10, "y": 2}
        assert res["solutions"][-1] == res["solution"]
        assert res["diagnostic"] is None
        assert "future-message" not in res["stdout"]

        every = structured(
            await launched.session.call_tool("solve_minizinc_model", {"model": SAT_MODEL, "all_solutions": True})
        )
        assert sorted(s["x"] for s in every["solutions"]) == [1, 2, 3]

        checked = structured(await launched.session.call_tool("check_minizinc_model", {"model": OPT_MODEL}))
        assert checked["status"] == "ok" and checked["diagnostic"] is None

        inspected = structured(await launched.session.call_tool("inspect_minizinc_model", {"model": OPT_MODEL}))
        assert inspected["status"] == "ok"
        assert inspected["interface"]["method"] == "max"
