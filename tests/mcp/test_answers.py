"""Answers a client's model can read (issue 45), through the real client:
the text part leads with the values asked for, whole, whatever their
names; large values are summarised, never cut inside; whatever a cap cuts
is named as cut, never reported as missing. Scripts report without solving,
so only the reporting is under test."""

from __future__ import annotations

import json
import re

import pytest

from cpsat_helpers import cpsat_server

pytestmark = [pytest.mark.anyio]
independent = pytest.mark.minizinc_independent

TEXT_LIMIT = 16_000
#: A tool result's content, text and structured content together, by default.
RESPONSE_LIMIT = 128 * 1024


def response_bytes(reply) -> int:
    """What a response's content takes: its text parts and its structured
    content as compact JSON."""
    texts = sum(len(block.text.encode()) for block in reply.content if block.type == "text")
    return texts + len(json.dumps(reply.structured_content, separators=(",", ":")).encode())


@pytest.fixture(scope="module")
async def cpsat(harness):
    async with cpsat_server(harness) as (launched, _marker):
        yield launched


def reporting(values: int, modulus: int) -> str:
    return (
        "import json\n"
        f"x = [(7 * i) % {modulus} for i in range({values})]\n"
        "print(json.dumps({'status': 'feasible', 'objective': None, "
        "'solution': {'x': x, 'count': len(x), 'zz_last': x[-1]}}))\n"
    )


async def run(session, source: str):
    reply = await session.call_tool("run_cpsat_python", {"source": source, "script_timeout_ms": 120_000})
    assert not reply.is_error, reply.content
    return reply.content[0].text, reply.structured_content


@independent
async def test_the_values_asked_for_lead_the_text_whatever_their_names(cpsat):
    source = (
        "import json\n"
        "machine_of_task = [(7 * t) % 40 for t in range(2000)]\n"
        "print(json.dumps({'status': 'optimal', 'objective': 2450, 'solution': {"
        "'loads': [2400 + m for m in range(40)], 'lower_bound': 2450, "
        "'machine_of_task': machine_of_task, 'makespan': 2450, 'task_1234_machine': machine_of_task[1234]}}))\n"
    )
    text, result = await run(cpsat.session, source)
    lines = text.splitlines()
    assert result["solution"]["task_1234_machine"] == 38
    start = lines.index("Solution:")
    assert lines[start + 1 : start + 4] == ["  lower_bound = 2450", "  makespan = 2450", "  task_1234_machine = 38"], text
    assert "  machine_of_task = [0, 7, 14, 21, 28, …, 5, 12, 19, 26, 33] (2000 integers, 0 to 39)" in lines, text


@independent
async def test_a_200000_value_solution_is_summarised_with_every_scalar(cpsat):
    # About 600 KB of envelope: within the output cap, over the response bound.
    reply = await cpsat.session.call_tool("run_cpsat_python", {"source": reporting(200_000, 10), "script_timeout_ms": 120_000})
    assert not reply.is_error, reply.content
    text, result = reply.content[0].text, reply.structured_content
    assert len(text.encode()) <= TEXT_LIMIT, len(text.encode())
    assert response_bytes(reply) <= RESPONSE_LIMIT, response_bytes(reply)
    lines = text.splitlines()
    assert "  count = 200000" in lines and f"  zz_last = {(7 * 199_999) % 10}" in lines, text
    summary = [line for line in lines if line.startswith("  x = ")]
    assert summary == ["  x = [0, 7, 4, 1, 8, …, 5, 2, 9, 6, 3] (200000 integers, 0 to 9)"], text
    # The list gave way to a marker whose uri reads it whole; the scalars stay.
    uri = str(reply.content[1].uri)
    assert result["status"] == "feasible" and result["solution"]["count"] == 200_000
    assert result["solution"]["x"] == {"whole": False, "length": 200_000, "bytes": 400_001, "uri": f"{uri}/solution/x"}
    # stdout names the envelope it printed instead of repeating it.
    assert result["stdout"] == f"[the JSON envelope, {len(reporting_line(200_000, 10))} bytes, read into status, objective and solution; as printed in {uri}]\n"
    assert lines[-1] == "The structured result was cut to fit 128 KiB; whole in the resource: solution.x (200000 items, 400001 bytes).", lines[-3:]
    whole = await cpsat.session.read_resource(f"{uri}/solution/x")
    assert json.loads(whole.contents[0].text) == [(7 * i) % 10 for i in range(200_000)]


def reporting_line(values: int, modulus: int) -> str:
    x = [(7 * i) % modulus for i in range(values)]
    return json.dumps({"status": "feasible", "objective": None, "solution": {"x": x, "count": len(x), "zz_last": x[-1]}})


@independent
async def test_a_raised_bound_keeps_the_structured_result_whole(harness):
    async with cpsat_server(harness, SOLVERGATE_MAX_RESPONSE_BYTES=str(2 * 1024 * 1024)) as (launched, _marker):
        reply = await launched.session.call_tool("run_cpsat_python", {"source": reporting(200_000, 10), "script_timeout_ms": 120_000})
        assert not reply.is_error, reply.content
        assert reply.structured_content["solution"]["x"] == [(7 * i) % 10 for i in range(200_000)]
        assert "was cut to fit" not in reply.content[0].text


async def test_a_20000_value_minizinc_solution_fits_the_bound_and_reads_whole(harness):
    model = "array[1..20000] of var 0..9: x;\nconstraint forall(i in 1..20000)(x[i] = i mod 10);\nsolve satisfy;\n"
    async with harness.open("full") as full:
        await a_20000_value_minizinc_solution(full, model)


async def a_20000_value_minizinc_solution(full, model: str) -> None:
    reply = await full.session.call_tool("solve_minizinc_model", {"model": model, "timeout_ms": 60_000})
    assert not reply.is_error, reply.content
    text, result = reply.content[0].text, reply.structured_content
    assert result["status"] == "satisfied", text
    assert len(text.encode()) <= TEXT_LIMIT and response_bytes(reply) <= RESPONSE_LIMIT, (len(text), response_bytes(reply))
    assert "  x = [1, 2, 3, 4, 5, …, 6, 7, 8, 9, 0] (20000 integers, 0 to 9)" in text.splitlines(), text
    uri = str(reply.content[1].uri)
    sliced = await full.session.read_resource(f"{uri}/solution/x?offset=1230&limit=10")
    assert json.loads(sliced.contents[0].text) == [i % 10 for i in range(1231, 1241)]
    whole = json.loads((await full.session.read_resource(uri)).contents[0].text)
    assert whole["solution"]["x"] == [i % 10 for i in range(1, 20_001)]


@independent
async def test_an_envelope_cut_at_the_output_cap_is_named_as_cut(cpsat):
    # A 1,000,000-value envelope is one line of about 5 MB, over the
    # 1 MiB output cap: the result must say it was cut, not that the script
    # printed none.
    text, result = await run(cpsat.session, reporting(1_000_000, 1000))
    assert len(text.encode()) <= TEXT_LIMIT
    diagnostic = result["diagnostic"]
    assert diagnostic["category"] == "output_truncated", diagnostic
    assert "could not be read whole" in diagnostic["message"], diagnostic
    assert "no JSON envelope" not in text, text
    assert re.search(r"^Diagnostic: output_truncated — ", text, re.M), text
    json.dumps(result)  # the structured result is plain JSON


@independent
async def test_every_answer_is_a_resource_read_whole_or_by_value(cpsat):
    # Through resources/read, not the tool result: what a client whose
    # model sees only the text part can still fetch.
    reply = await cpsat.session.call_tool("run_cpsat_python", {"source": reporting(200_000, 10), "script_timeout_ms": 120_000})
    assert not reply.is_error, reply.content
    text, link = reply.content
    assert link.type == "resource_link" and link.mime_type == "application/json", link
    uri = str(link.uri)
    assert re.fullmatch(r"solvergate://results/run_cpsat_python-[0-9a-f]{32}", uri), uri
    assert f"Whole result: {uri} (" in text.text, text.text
    whole = await cpsat.session.read_resource(uri)
    [contents] = whole.contents
    kept = json.loads(contents.text)
    # The response gave way to the bound; the kept result is whole, stdout as printed.
    assert kept["solution"]["x"] == [(7 * i) % 10 for i in range(200_000)]
    assert kept["stdout"] == reporting_line(200_000, 10) + "\n"
    assert {k: v for k, v in kept.items() if k not in ("solution", "stdout")} == {
        k: v for k, v in reply.structured_content.items() if k not in ("solution", "stdout")
    }
    sliced = await cpsat.session.read_resource(f"{uri}/solution/x?offset=1230&limit=10")
    assert json.loads(sliced.contents[0].text) == [(7 * i) % 10 for i in range(1230, 1240)]
    scalar = await cpsat.session.read_resource(f"{uri}/solution/count")
    assert json.loads(scalar.contents[0].text) == 200_000
    # Listed newest first; the template is published.
    listed = await cpsat.session.list_resources()
    assert str(listed.resources[0].uri) == uri, listed.resources[:3]
    templates = await cpsat.session.list_resource_templates()
    assert [t.uri_template for t in templates.resource_templates] == [
        "solvergate://results/{id}/solution/{name}{?offset,limit}"
    ]


@independent
async def test_a_uri_that_is_not_a_kept_result_is_refused_by_name(cpsat):
    from mcp.shared.exceptions import MCPError

    for uri, words in [
        ("solvergate://results/run_cpsat_python-" + "0" * 32, "no kept result"),
        ("solvergate://results/../../etc/passwd", "not a kept result's URI"),
        ("file:///etc/passwd", "not a kept result's URI"),
    ]:
        with pytest.raises(MCPError) as refused:
            await cpsat.session.read_resource(uri)
        assert words in refused.value.error.message, refused.value.error.message
