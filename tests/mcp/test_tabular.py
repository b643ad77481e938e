"""load_tabular_data and write_tabular_result through the real client:
round trips for .xlsx and .csv, every refusal, paging by rows and by
bytes, formula safety, the no-clobber contract, corrupt and mislabelled
files, and workbooks made by other programs.

Workbooks with dates, formulas and several sheets (and the .ods file) are
built here from their XML with `zipfile`, so no binary fixture is checked
in: each is the smallest file of its format that calamine (and Excel or
LibreOffice) accept, with exactly the cells the test needs.
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
import zipfile
from pathlib import Path
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError

from helpers import call_error, call_ok, result_text

pytestmark = pytest.mark.anyio

MIB = 1024 * 1024


@pytest.fixture(scope="module")
async def server(harness):
    async with harness.open("full") as launched:
        yield launched


@pytest.fixture
def out(harness) -> Path:
    return harness.scratch("tabular")


def listing(directory: Path) -> list[str]:
    return sorted(os.listdir(directory))


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def write(session, headers, rows, target: Path, **extra) -> dict[str, Any]:
    return await call_ok(
        session,
        "write_tabular_result",
        {"headers": headers, "rows": rows, "target_path": str(target), **extra},
    )


async def load(session, path: Path, **extra) -> dict[str, Any]:
    return await call_ok(session, "load_tabular_data", {"path": str(path), **extra})


# --------------------------------------------------------------------------
# Hand-built workbooks
# --------------------------------------------------------------------------

CONTENT_TYPES = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
    '<Default Extension="xml" ContentType="application/xml"/>'
    '<Override PartName="/xl/workbook.xml" '
    'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
    '<Override PartName="/xl/styles.xml" '
    'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml"/>'
    "{sheets}</Types>"
)
ROOT_RELS = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    '<Relationship Id="rId1" '
    'Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" '
    'Target="xl/workbook.xml"/></Relationships>'
)
#: Style 1 is Excel's built-in date format (numFmtId 14).
STYLES = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    '<styleSheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
    '<fonts count="1"><font/></fonts><fills count="1"><fill/></fills>'
    '<borders count="1"><border/></borders>'
    '<cellStyleXfs count="1"><xf numFmtId="0"/></cellStyleXfs>'
    '<cellXfs count="2"><xf numFmtId="0" xfId="0"/>'
    '<xf numFmtId="14" xfId="0" applyNumberFormat="1"/></cellXfs>'
    "</styleSheet>"
)


def text_cell(ref: str, text: str) -> str:
    return f'<c r="{ref}" t="inlineStr"><is><t>{text}</t></is></c>'


def make_xlsx(path: Path, sheets: dict[str, list[list[str]]]) -> Path:
    """A workbook whose sheets hold the given rows of `<c>` elements."""
    names = list(sheets)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as book:
        book.writestr(
            "[Content_Types].xml",
            CONTENT_TYPES.format(
                sheets="".join(
                    f'<Override PartName="/xl/worksheets/sheet{i + 1}.xml" '
                    'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>'
                    for i in range(len(names))
                )
            ),
        )
        book.writestr("_rels/.rels", ROOT_RELS)
        book.writestr(
            "xl/workbook.xml",
            '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
            '<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" '
            'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets>'
            + "".join(
                f'<sheet name="{name}" sheetId="{i + 1}" r:id="rId{i + 1}"/>' for i, name in enumerate(names)
            )
            + "</sheets></workbook>",
        )
        book.writestr(
            "xl/_rels/workbook.xml.rels",
            '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
            '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
            + "".join(
                f'<Relationship Id="rId{i + 1}" '
                'Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" '
                f'Target="worksheets/sheet{i + 1}.xml"/>'
                for i in range(len(names))
            )
            + f'<Relationship Id="rId{len(names) + 1}" '
            'Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" '
            'Target="styles.xml"/></Relationships>',
        )
        book.writestr("xl/styles.xml", STYLES)
        for i, rows in enumerate(sheets.values()):
            body = "".join(f'<row r="{r + 1}">{"".join(cells)}</row>' for r, cells in enumerate(rows))
            book.writestr(
                f"xl/worksheets/sheet{i + 1}.xml",
                '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
                '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
                f"<sheetData>{body}</sheetData></worksheet>",
            )
    return path


def make_ods(path: Path, table: str, rows: list[str]) -> Path:
    """An OpenDocument spreadsheet with one table of `<table:table-row>`s."""
    content = (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
        'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
        'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" office:version="1.2">'
        f'<office:body><office:spreadsheet><table:table table:name="{table}">'
        + "".join(f"<table:table-row>{row}</table:table-row>" for row in rows)
        + "</table:table></office:spreadsheet></office:body></office:document-content>"
    )
    manifest = (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.2">'
        '<manifest:file-entry manifest:full-path="/" '
        'manifest:media-type="application/vnd.oasis.opendocument.spreadsheet"/>'
        '<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/>'
        "</manifest:manifest>"
    )
    with zipfile.ZipFile(path, "w") as book:
        book.writestr("mimetype", "application/vnd.oasis.opendocument.spreadsheet", zipfile.ZIP_STORED)
        book.writestr("META-INF/manifest.xml", manifest, zipfile.ZIP_DEFLATED)
        book.writestr("content.xml", content, zipfile.ZIP_DEFLATED)
    return path


def ods_cell(kind: str, value: str | None = None, text: str = "") -> str:
    attribute = {"float": "office:value", "date": "office:date-value", "boolean": "office:boolean-value"}
    extra = f' {attribute[kind]}="{value}"' if kind in attribute else ""
    return f'<table:table-cell office:value-type="{kind}"{extra}><text:p>{text}</text:p></table:table-cell>'


# --------------------------------------------------------------------------
# Toolsets
# --------------------------------------------------------------------------


async def test_the_tools_are_full_only(harness, server):
    full = {tool.name: tool for tool in (await server.session.list_tools()).tools}
    for name in ("load_tabular_data", "write_tabular_result"):
        assert name in full
        assert full[name].output_schema["type"] == "object"
    assert {"headers", "rows", "sheet_name", "available_sheets", "row_offset", "next_row_offset",
            "total_rows", "truncated", "truncation_reason"} <= set(full["load_tabular_data"].output_schema["properties"])
    assert {"status", "message", "target_path", "sha256", "format", "rows_written"} <= set(
        full["write_tabular_result"].output_schema["properties"]
    )
    load_schema = full["load_tabular_data"].input_schema
    assert set(load_schema["required"]) == {"path"}
    assert set(load_schema["properties"]) == {"path", "sheet", "has_header", "row_offset", "max_rows"}
    write_schema = full["write_tabular_result"].input_schema
    assert set(write_schema["required"]) == {"headers", "rows", "target_path"}
    async with harness.open("core") as core:
        names = {tool.name for tool in (await core.session.list_tools()).tools}
        assert not {"load_tabular_data", "write_tabular_result"} & names
        try:
            reply = await core.session.call_tool("load_tabular_data", {"path": "/nonexistent.csv"})
        except MCPError:
            pass
        else:
            assert reply.is_error, "a full-only tool answered on the core toolset"


# --------------------------------------------------------------------------
# Round trips
# --------------------------------------------------------------------------

MIXED_HEADERS = ["item", "qty", "price", "ok", "note", ""]
MIXED_ROWS = [
    ["bolt", 120, 0.25, True, "=1+1", None],
    ["nut", -7, 1e-9, False, "line one\r\nline two", 9_007_199_254_740_992],
    [None, 0, 12345.678, None, " spaced ", "_x0041_"],
]


async def test_xlsx_round_trip_keeps_types(server, out):
    target = out / "stock.xlsx"
    written = await write(server.session, MIXED_HEADERS, MIXED_ROWS, target)
    assert written["status"] == "written"
    assert written["format"] == "xlsx"
    assert written["rows_written"] == 3
    assert written["target_path"] == str(target)
    assert written["sha256"] == sha256(target)
    page = await load(server.session, target)
    assert page["headers"] == ["item", "qty", "price", "ok", "note", "col_6"]
    assert page["rows"] == MIXED_ROWS
    assert [type(cell) for cell in page["rows"][0][:4]] == [str, int, float, bool]
    assert page["sheet_name"] == "Sheet1"
    assert page["available_sheets"] == ["Sheet1"]
    assert (page["total_rows"], page["truncated"], page["next_row_offset"], page["truncation_reason"]) == (
        3, False, None, None,
    )
    assert listing(out) == ["stock.xlsx"]


async def test_csv_round_trip_is_textual(server, out):
    target = out / "stock.csv"
    rows = [["bolt", 120, 0.25, True, "a,b \"q\"\r\nz", None], ["nut", -7, 2.5, False, "plain", "x"]]
    written = await write(server.session, MIXED_HEADERS, rows, target)
    assert (written["format"], written["rows_written"]) == ("csv", 2)
    assert written["sha256"] == sha256(target)
    # Any CSV reader sees the same table.
    with open(target, newline="", encoding="utf-8") as handle:
        assert list(csv.reader(handle))[1] == ["bolt", "120", "0.25", "true", "a,b \"q\"\r\nz", ""]
    page = await load(server.session, target)
    assert page["headers"] == ["item", "qty", "price", "ok", "note", "col_6"]
    assert page["rows"] == [
        ["bolt", "120", "0.25", "true", "a,b \"q\"\r\nz", ""],
        ["nut", "-7", "2.5", "false", "plain", "x"],
    ]
    assert (page["sheet_name"], page["available_sheets"], page["total_rows"]) == (None, [], 2)


async def test_csv_with_bom_ragged_rows_and_no_header(server, out):
    path = out / "ragged.csv"
    path.write_bytes("\ufeffid,name\n1,x,extra\n2\n".encode())
    page = await load(server.session, path)
    assert page["headers"] == ["id", "name", "col_3"]
    assert page["rows"] == [["1", "x", "extra"], ["2", None, None]]
    bare = await load(server.session, path, has_header=False)
    assert bare["headers"] == ["col_1", "col_2", "col_3"]
    assert bare["rows"][0] == ["id", "name", None]
    assert bare["total_rows"] == 3


# --------------------------------------------------------------------------
# Paging
# --------------------------------------------------------------------------


async def test_three_pages_by_max_rows(server, out):
    target = out / "numbers.xlsx"
    rows = [[i, f"row {i}", i * 0.5 + 0.25] for i in range(25)]
    await write(server.session, ["i", "label", "half"], rows, target)
    seen, offsets = [], []
    offset: int | None = 0
    while offset is not None:
        page = await load(server.session, target, row_offset=offset, max_rows=10)
        offsets.append(offset)
        assert page["headers"] == ["i", "label", "half"]
        assert page["total_rows"] == 25
        assert page["row_offset"] == offset
        if page["next_row_offset"] is not None:
            assert (page["truncated"], page["truncation_reason"]) == (True, "max_rows")
        else:
            assert (page["truncated"], page["truncation_reason"]) == (False, None)
        seen.extend(page["rows"])
        offset = page["next_row_offset"]
    assert offsets == [0, 10, 20]
    assert seen == rows
    past = await load(server.session, target, row_offset=40)
    assert (past["rows"], past["total_rows"], past["next_row_offset"]) == ([], 25, None)


def five_rows_of_40_kb(path: Path) -> None:
    """A CSV of five rows of about 40 kB each, numbered 0 to 4."""
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["n", "blob"])
        for i in range(5):
            writer.writerow([i, chr(ord("a") + i) * 40_000])


async def test_three_pages_by_the_byte_ceiling(server, out):
    path = out / "wide.csv"
    # About 40 kB a row: two rows fit under 96 KiB, three do not.
    five_rows_of_40_kb(path)
    seen, offsets = [], []
    offset: int | None = 0
    while offset is not None:
        page = await load(server.session, path, row_offset=offset)
        offsets.append(offset)
        if page["next_row_offset"] is not None:
            assert page["truncation_reason"] == "max_bytes"
        seen.extend(row[0] for row in page["rows"])
        offset = page["next_row_offset"]
    assert offsets == [0, 2, 4]
    assert seen == ["0", "1", "2", "3", "4"]


async def test_a_raised_response_bound_raises_the_page_ceiling(harness, out):
    path = out / "raised.csv"
    # About 40 kB a row: two to a page under the default bound, all five
    # under a bound of 1 MiB.
    five_rows_of_40_kb(path)
    env = harness.server_env(SOLVERGATE_MAX_RESPONSE_BYTES=str(MIB))
    async with harness.open("full", env=env) as raised:
        page = await load(raised.session, path)
    assert [row[0] for row in page["rows"]] == ["0", "1", "2", "3", "4"]
    assert page["next_row_offset"] is None and page["truncated"] is False


async def test_a_row_over_the_ceiling_names_its_offset(server, out):
    path = out / "huge.csv"
    path.write_text("a,b\n1,2\n" + "x" * (MIB + 10) + ",3\n4,5\n", encoding="utf-8")
    error = await call_error(server.session, "load_tabular_data", {"path": str(path), "row_offset": 1})
    assert error.category == "invalid_request"
    assert "row_offset 1" in error.message
    page = await load(server.session, path, row_offset=2)
    assert page["rows"] == [["4", "5"]]


# --------------------------------------------------------------------------
# Formula safety
# --------------------------------------------------------------------------

FORMULAS = ["=1+1", "+49", "-5 units", "@SUM(A1:A2)", "  =HYPERLINK(\"x\")"]


async def test_formula_like_text_is_literal_in_xlsx(server, out):
    target = out / "formulas.xlsx"
    await write(server.session, ["text"], [[text] for text in FORMULAS], target)
    page = await load(server.session, target)
    assert page["rows"] == [[text] for text in FORMULAS]
    with zipfile.ZipFile(target) as book:
        sheet = book.read("xl/worksheets/sheet1.xml").decode()
    assert "<f>" not in sheet, "a string was written as a formula"


@pytest.mark.parametrize("text", FORMULAS)
async def test_formula_like_text_is_refused_for_csv(server, out, text):
    target = out / "formulas.csv"
    error = await call_error(
        server.session,
        "write_tabular_result",
        {"headers": ["a", "b"], "rows": [[1, "ok"], [2, text]], "target_path": str(target)},
    )
    assert error.category == "invalid_request"
    assert "rows[1][1]" in error.message and "=, +, - or @" in error.message
    assert listing(out) == []


async def test_a_negative_number_is_fine_in_csv_as_a_number(server, out):
    target = out / "negative.csv"
    await write(server.session, ["delta"], [[-5], [-0.5]], target)
    assert target.read_text() == "delta\n-5\n-0.5\n"


# --------------------------------------------------------------------------
# Refusals
# --------------------------------------------------------------------------

WRITE_REFUSALS = [
    ("empty string", "t.xlsx", ["a"], [[""]], "rows[0][0] is an empty string"),
    ("whole float", "t.xlsx", ["a", "b"], [[1, 2.0]], "rows[0][1] is the float 2.0"),
    ("big integer", "t.xlsx", ["a"], [[2**53 + 1]], "beyond ±2^53"),
    ("long text", "t.xlsx", ["a"], [["x" * 32_768]], "32767-character"),
    ("trailing null row", "t.xlsx", ["a"], [[1], [None]], "rows[1] is the last row"),
    ("trailing blank column", "t.xlsx", ["a", ""], [[1, None]], "column 1 (the last)"),
    ("no columns", "t.xlsx", [], [], "headers is empty"),
    ("no columns with rows", "t.csv", [], [[]], "headers is empty but rows are not"),
    ("nested array", "t.csv", ["a"], [[[1, 2]]], "rows[0][0] is an array"),
    ("nested object", "t.xlsx", ["a"], [[{"k": 1}]], "rows[0][0] is an object"),
    ("short row", "t.csv", ["a", "b"], [[1, 2], [3]], "rows[1] has 1 cells but headers has 2"),
    ("long row", "t.xlsx", ["a"], [[1, 2]], "rows[0] has 2 cells"),
    ("formula header", "t.csv", ["=cmd"], [], "headers[0] starts with"),
    ("unknown extension", "t.txt", ["a"], [[1]], "unsupported extension .txt"),
    ("read-only format", "t.ods", ["a"], [[1]], "read-only here"),
]


@pytest.mark.parametrize(
    ("name", "headers", "rows", "expected"),
    [case[1:] for case in WRITE_REFUSALS],
    ids=[case[0] for case in WRITE_REFUSALS],
)
async def test_write_refusals_touch_nothing(server, out, name, headers, rows, expected):
    error = await call_error(
        server.session,
        "write_tabular_result",
        {"headers": headers, "rows": rows, "target_path": str(out / name)},
    )
    assert error.category == "invalid_request", error.text
    assert expected in error.message, error.message
    assert listing(out) == []


async def test_bad_targets_are_invalid_save_targets(server, out):
    (out / "folder.csv").mkdir()
    cases = [
        ("relative/t.csv", "is relative"),
        (str(out / "missing" / "t.csv"), "create it first"),
        (str(out / "folder.csv"), "is a directory"),
    ]
    for target, expected in cases:
        error = await call_error(
            server.session, "write_tabular_result", {"headers": ["a"], "rows": [[1]], "target_path": target}
        )
        assert error.category == "invalid_save_target", error.text
        assert expected in error.message, error.message
    assert listing(out) == ["folder.csv"]
    assert listing(out / "folder.csv") == []


async def test_misspelt_and_mistyped_arguments_are_refused(server, out):
    error = await call_error(
        server.session, "write_tabular_result", {"headers": ["a"], "rows": [[1]], "target": str(out / "t.csv")}
    )
    assert error.category == "invalid_request" and "target" in error.message
    error = await call_error(server.session, "load_tabular_data", {"path": str(out / "t.csv"), "offset": 1})
    assert error.category == "invalid_request" and "offset" in error.message
    error = await call_error(
        server.session, "write_tabular_result", {"headers": [1], "rows": [], "target_path": str(out / "t.csv")}
    )
    assert error.category == "invalid_request"
    assert listing(out) == []


async def test_load_refusals(server, out):
    csv_path = out / "ok.csv"
    csv_path.write_text("a\n1\n")
    book = make_xlsx(out / "two.xlsx", {"Orders": [[text_cell("A1", "x")]], "Lines": [[text_cell("A1", "y")]]})
    cases = [
        ({"path": "ok.csv"}, "is relative"),
        ({"path": str(out / "absent.csv")}, "does not exist"),
        ({"path": str(out)}, "has no extension" if not out.suffix else "not a regular file"),
        ({"path": str(csv_path), "max_rows": 0}, "max_rows must be at least 1"),
        ({"path": str(csv_path), "row_offset": -1}, "row_offset must be 0 or more"),
        ({"path": str(csv_path), "sheet": "Sheet1"}, "has no sheets"),
        ({"path": str(book), "sheet": "Totals"}, 'its sheets are: "Orders", "Lines"'),
        ({"path": str(out / "notes.txt")}, "unsupported extension .txt"),
    ]
    for arguments, expected in cases:
        error = await call_error(server.session, "load_tabular_data", arguments)
        assert error.category == "invalid_request", error.text
        assert expected in error.message, (arguments, error.message)


# --------------------------------------------------------------------------
# The overwrite contract
# --------------------------------------------------------------------------


async def test_an_existing_file_wins_unless_overwrite(server, out):
    target = out / "result.xlsx"
    target.write_bytes(b"precious bytes")
    before = target.stat()
    error = await call_error(
        server.session,
        "write_tabular_result",
        {"headers": ["a"], "rows": [[1]], "target_path": str(target)},
    )
    assert error.category == "invalid_save_target"
    assert "already exists" in error.message and "overwrite" in error.message
    assert target.read_bytes() == b"precious bytes"
    assert target.stat().st_ino == before.st_ino
    assert listing(out) == ["result.xlsx"]

    replaced = await write(server.session, ["a"], [[1], [2]], target, overwrite=True)
    assert replaced["sha256"] == sha256(target)
    assert (await load(server.session, target))["rows"] == [[1], [2]]
    assert listing(out) == ["result.xlsx"], "a staging file was left behind"


async def test_many_writes_leave_only_their_targets(server, out):
    for i in range(5):
        await write(server.session, ["i"], [[i]], out / f"t{i}.csv")
        await write(server.session, ["i"], [[i]], out / f"t{i}.xlsx")
    await write(server.session, ["i"], [[9]], out / "t0.csv", overwrite=True)
    assert listing(out) == sorted([f"t{i}.csv" for i in range(5)] + [f"t{i}.xlsx" for i in range(5)])
    assert not any(name.startswith(".tabular-staging-") for name in listing(out))


# --------------------------------------------------------------------------
# Corrupt, mislabelled and bounded files
# --------------------------------------------------------------------------


async def test_corrupt_and_mislabelled_files_are_invalid_requests(server, out):
    corrupt = out / "corrupt.xlsx"
    corrupt.write_bytes(b"PK\x03\x04 this is not really a zip archive" * 10)
    csv_named_xlsx = out / "table.xlsx"
    csv_named_xlsx.write_text("a,b\n1,2\n")
    not_a_workbook = out / "other.xlsx"
    with zipfile.ZipFile(not_a_workbook, "w") as archive:
        archive.writestr("readme.txt", "a zip, but not a workbook")
    real = out / "real.xlsx"
    await write(server.session, ["a"], [[1]], real)
    xlsx_named_csv = out / "real.csv"
    xlsx_named_csv.write_bytes(real.read_bytes())
    latin1 = out / "latin1.csv"
    latin1.write_bytes("name\ncaf\xe9\n".encode("latin-1"))
    ods_named = out / "table.ods"
    ods_named.write_text("a,b\n")
    cases = [
        (corrupt, "not a zip archive"),
        (csv_named_xlsx, "not a zip archive"),
        (not_a_workbook, "not a readable .xlsx file"),
        (xlsx_named_csv, "not UTF-8"),
        (latin1, "not UTF-8 text at line 2"),
        (ods_named, "not a zip archive"),
    ]
    for path, expected in cases:
        error = await call_error(server.session, "load_tabular_data", {"path": str(path)})
        assert error.category == "invalid_request", error.text
        assert expected in error.message, (path.name, error.message)
        assert str(path) in error.message


async def test_a_zip_bomb_is_refused_from_its_declared_size(server, out):
    bomb = out / "bomb.xlsx"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("xl/worksheets/sheet1.xml", b" " * (129 * MIB))
    assert bomb.stat().st_size < MIB
    error = await call_error(server.session, "load_tabular_data", {"path": str(bomb)})
    assert error.category == "invalid_request"
    assert "over the 134217728-byte (128 MiB) limit" in error.message


async def test_a_file_over_64_mib_is_refused_from_its_size(server, out):
    big = out / "big.csv"
    with open(big, "wb") as handle:
        handle.truncate(64 * MIB + 1)
    error = await call_error(server.session, "load_tabular_data", {"path": str(big)})
    assert error.category == "invalid_request"
    assert "67108865 bytes" in error.message and "64 MiB" in error.message


# --------------------------------------------------------------------------
# Workbooks from elsewhere: dates, formulas, sheets, .ods
# --------------------------------------------------------------------------


async def test_xlsx_dates_formulas_and_sheet_choice(server, out):
    book = make_xlsx(
        out / "orders.xlsx",
        {
            "Orders": [
                [text_cell("A1", "due"), text_cell("B1", "qty"), text_cell("C1", "total"), text_cell("E1", "tag")],
                ['<c r="A2" s="1"><v>45306</v></c>', '<c r="B2"><v>3</v></c>',
                 '<c r="C2"><f>B2*2</f><v>6</v></c>', '<c r="D2" t="b"><v>1</v></c>'],
                ['<c r="A3" s="1"><v>45306.75</v></c>', '<c r="B3"><v>1.5</v></c>',
                 '<c r="C3"><f>B3*2</f></c>', '<c r="E3" t="e"><v>#DIV/0!</v></c>'],
            ],
            "Notes": [[text_cell("B2", "late")]],
        },
    )
    page = await load(server.session, book)
    assert page["sheet_name"] == "Orders"
    assert page["available_sheets"] == ["Orders", "Notes"]
    assert page["headers"] == ["due", "qty", "total", "col_4", "tag"]
    assert page["rows"] == [
        ["2024-01-15T00:00:00", 3, 6, True, None],
        ["2024-01-15T18:00:00", 1.5, None, None, "#DIV/0!"],
    ]
    notes = await load(server.session, book, sheet="Notes", has_header=False)
    # Columns and rows count from A1, as a spreadsheet shows them.
    assert notes["headers"] == ["col_1", "col_2"]
    assert notes["rows"] == [[None, None], [None, "late"]]
    assert notes["sheet_name"] == "Notes"


async def test_ods_is_read(server, out):
    book = make_ods(
        out / "plan.ods",
        "Plan",
        [
            ods_cell("string", text="task") + ods_cell("string", text="hours") + ods_cell("string", text="due")
            + ods_cell("string", text="done"),
            ods_cell("string", text="paint") + ods_cell("float", "3", "3") + ods_cell("date", "2024-01-15", "15/01")
            + ods_cell("boolean", "true", "TRUE"),
            ods_cell("string", text="dry") + ods_cell("float", "0.5", "0.5") + ods_cell("date", "2024-01-16T08:30:00")
            + ods_cell("boolean", "false", "FALSE"),
        ],
    )
    page = await load(server.session, book)
    assert (page["sheet_name"], page["available_sheets"]) == ("Plan", ["Plan"])
    assert page["headers"] == ["task", "hours", "due", "done"]
    assert page["rows"] == [
        ["paint", 3, "2024-01-15", True],
        ["dry", 0.5, "2024-01-16T08:30:00", False],
    ]


async def test_the_text_part_shows_the_pages_cells_while_they_fit(server, out):
    # A client's model may see only the text part: a small page's cells are
    # there, as a table of whole rows.
    target = out / "summary.csv"
    await write(server.session, ["name"], [[f"cell-{i}"] for i in range(50)], target)
    reply = await server.session.call_tool("load_tabular_data", {"path": str(target), "max_rows": 20})
    text = result_text(reply)
    assert "data rows 0–19 of 50" in text
    assert "row_offset 20" in text
    assert [line for line in text.splitlines() if line.startswith("| cell-")] == [f"| cell-{i} |" for i in range(20)]
    # A page too big for the text shows whole rows up to its budget, then
    # names the rows left out; no row is cut.
    wide = out / "wide.csv"
    await write(server.session, ["id", "text"], [[i, "x" * 300] for i in range(100)], wide)
    text = result_text(await server.session.call_tool("load_tabular_data", {"path": str(wide)}))
    rows = [line for line in text.splitlines() if line.startswith("| ") and line.endswith(" |") and "x" * 300 in line]
    assert 10 < len(rows) < 100, text
    assert rows == [f"| {i} | {'x' * 300} |" for i in range(len(rows))]
    assert f"Rows {len(rows)}–99 of this page are not shown here (whole in the result's `rows`)." in text
    assert len(text.encode()) <= 16 * 1024
    written = await server.session.call_tool(
        "write_tabular_result", {"headers": ["a"], "rows": [[1]], "target_path": str(out / "s.xlsx")}
    )
    assert str(out / "s.xlsx") in result_text(written)


async def test_an_ods_repeat_bomb_is_refused_before_it_is_laid_out(server, out):
    bomb = make_ods(
        out / "bomb.ods",
        "Bomb",
        [
            ods_cell("string", text="x"),
            '<table:table-cell table:number-columns-repeated="1000" office:value-type="float" office:value="1"/>',
        ],
    )
    # The second row, repeated: a 300-byte file asking for a billion cells.
    content = zipfile.ZipFile(bomb).read("content.xml").decode()
    content = content.replace(
        "<table:table-row><table:table-cell table:number-columns-repeated",
        '<table:table-row table:number-rows-repeated="1000000"><table:table-cell table:number-columns-repeated',
    )
    with zipfile.ZipFile(bomb, "w") as book:
        book.writestr("mimetype", "application/vnd.oasis.opendocument.spreadsheet", zipfile.ZIP_STORED)
        book.writestr("content.xml", content, zipfile.ZIP_DEFLATED)
    assert bomb.stat().st_size < 2000
    error = await call_error(server.session, "load_tabular_data", {"path": str(bomb)})
    assert error.category == "invalid_request"
    assert "spans 1000001000 cells" in error.message, error.message
    assert "4000000-cell limit" in error.message
    # The server is still there.
    small = make_ods(out / "small.ods", "S", [ods_cell("string", text="a"), ods_cell("float", "1", "1")])
    assert (await load(server.session, small, has_header=False))["rows"] == [["a"], [1]]
