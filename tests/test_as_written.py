"""Every column kept in clear (``keep_unchecked``) reaches the output as it was written (issue
14); the secret column, last in these tables, never does (issue 41).

The released column comes first in these tables, so each output record is
``<released value><delimiter><the input record's kept fields, byte for byte>``: the tests
rebuild that expectation from the input's raw text and the released values parsed back, and
compare bytes.
"""

from __future__ import annotations

import csv
import datetime as dt
import decimal
import gzip
import io
import math
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pufferfish import release
from pufferfish.tables.model import MISSING_LABEL

# Every field after the released one: secret, code, note, blank, empty (None: an empty field).
RECORDS = [
    ("yes", "007", 'he said "hi", then left', "  lead", ""),
    ("no", "00123", "naïve café, ünïcödé ✓", "trail  ", None),
    ("yes", "", "a\nnewline", " ", "x"),
    ("no", "000", "plain", "", ""),
    ("no", "-0.50", "1;5", "'single'", "TRUE"),
    ("yes", "1e3", "日本語\ttab", "NaN", "null"),
]
RELEASED = ["1", "2", "3", "4", "2", "1"]  # the public column (a missing number is refused, issue 41)
KEPT = ["code", "note", "blank", "empty"]  # written in clear; the secret (last) never is


def _field(value: str | None, delimiter: str) -> str:
    """RFC 4180 text with minimal quoting: quoted iff needed, and "" for an empty string."""
    if value is None:
        return ""
    if value == "" or any(c in value for c in (delimiter, '"', "\n", "\r")):
        return '"' + value.replace('"', '""') + '"'
    return value


def _table(delimiter: str, newline: str) -> tuple[str, list[str]]:
    """The input (pub, the kept columns, the secret last) and the expected output's parts (its
    header and each record's kept fields)."""
    rests = [delimiter.join(_field(v, delimiter) for v in fields[1:]) for fields in RECORDS]
    header = delimiter.join(["pub", *KEPT, "secret"])
    body = "".join(
        f"{v}{delimiter}{rest}{delimiter}{fields[0]}{newline}"
        for v, rest, fields in zip(RELEASED, rests, RECORDS, strict=True)
    )
    return header + newline + body, [delimiter.join(["pub", *KEPT]), *rests]


def _released_values(text: str, delimiter: str) -> list[str]:
    rows = list(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter))
    return [row[0] for row in rows[1:]]


def _expected(parts: list[str], values: list[str], delimiter: str, newline: str) -> str:
    header, rests = parts[0], parts[1:]
    return (
        header + newline + "".join(f"{v}{delimiter}{r}{newline}" for v, r in zip(values, rests, strict=True))
    )


@pytest.mark.parametrize("delimiter", [",", ";", "\t"])
@pytest.mark.parametrize("newline", ["\n", "\r\n"])
@pytest.mark.parametrize("suffix", [".csv", ".csv.gz"])
def test_other_columns_byte_for_byte(tmp_path: Path, delimiter: str, newline: str, suffix: str) -> None:
    text, parts = _table(delimiter, newline)
    src = tmp_path / "in.csv"
    src.write_bytes(text.encode())
    out = tmp_path / f"out{suffix}"
    res = release(
        src,
        secret="secret",
        public="pub",
        pairs=[("yes", "no")],
        epsilon=1.0,
        output=out,
        rng=3,
        keep_unchecked=KEPT,
        keep_order=True,
    )
    raw = out.read_bytes()
    got = (gzip.decompress(raw) if suffix.endswith(".gz") else raw).decode()
    values = _released_values(got, delimiter)
    assert got == _expected(parts, values, delimiter, newline)
    assert all(math.isfinite(float(v)) for v in values)
    assert res.rows_released == 6 and res.rows_missing == 0
    assert src.read_bytes() == text.encode()  # the input is untouched


def test_hash_is_data_not_a_comment(tmp_path: Path) -> None:
    # DuckDB's sniffer alone reads this file as 2 rows: it takes '#' for a comment character,
    # drops the row that starts with it and empties the field '#y'.
    text = "code,secret,pub\n#0,s1,1\n1,s2,#y\n1,s1,z\n"
    src = tmp_path / "in.csv"
    src.write_text(text)
    out = tmp_path / "out.csv"
    res = release(
        src,
        secret="secret",
        public="pub",
        pairs=[("s1", "s2")],
        epsilon=1.0,
        output=out,
        rng=1,
        keep_unchecked="code",
        keep_order=True,
    )
    assert res.calibration.estimated.rows_total == 3
    lines = out.read_text().splitlines()
    assert [line.rsplit(",", 1)[0] for line in lines] == ["code", "#0", "1", "1"]


def test_needless_quotes_keep_the_values(tmp_path: Path) -> None:
    # R's write.csv quotes every text field; the release writes minimal RFC 4180 quoting, so
    # such a file keeps every value but not its needless quotes.
    src = tmp_path / "in.csv"
    src.write_text('"pub","secret","name"\n1,"yes","Ann"\n2,"no","B, C"\n3,"yes",""\n')
    out = tmp_path / "out.csv"
    release(
        src,
        secret="secret",
        public="pub",
        pairs=[("yes", "no")],
        epsilon=1.0,
        output=out,
        rng=1,
        keep_unchecked="name",
        keep_order=True,
    )
    got = list(csv.reader(io.StringIO(out.read_text(), newline="")))
    assert [r[1:] for r in got] == [["name"], ["Ann"], ["B, C"], [""]]
    assert out.read_text().splitlines()[1].endswith(",Ann")
    assert out.read_text().splitlines()[3].endswith(',""')


def test_quoted_empty_public_value_is_missing(tmp_path: Path) -> None:
    # '""' and an empty field are both a missing cell, in the estimate and in the release: one
    # label of its own, released as any other (issue 41)
    src = tmp_path / "in.csv"
    src.write_text('pub,secret\nu,a\n"",a\nv,b\n,b\n')
    res = release(
        src, secret="secret", public="pub", pairs=[("a", "b")], epsilon=1.0, output=tmp_path / "o.csv", rng=1
    )
    assert res.rows_released == 4 and res.rows_missing == 0
    est = res.calibration.estimated
    assert est.rows_dropped == 0 and est.missing_cells == 2  # type: ignore[union-attr]
    assert [label for label, _ in est.mapping] == ["u", "v", MISSING_LABEL]  # type: ignore[union-attr]
    assert res.noise["counts"]["input"] == [1, 1, 2]


def test_csv_to_parquet_keeps_the_text(tmp_path: Path) -> None:
    text, _ = _table(",", "\n")
    src = tmp_path / "in.csv"
    src.write_text(text)
    out = tmp_path / "out.parquet"
    release(
        src,
        secret="secret",
        public="pub",
        pairs=[("yes", "no")],
        epsilon=1.0,
        output=out,
        rng=3,
        keep_unchecked=KEPT,
        keep_order=True,
    )
    table = pq.read_table(out)
    assert table.column_names == ["pub", *KEPT]
    want = list(csv.reader(io.StringIO(text, newline="")))
    for name in KEPT:
        k = want[0].index(name)
        assert table.schema.field(name).type == pa.string()
        # csv.reader cannot tell "" from an empty field: unquoted empty fields are missing
        got = ["" if v is None else v for v in table.column(name).to_pylist()]
        assert got == [row[k] for row in want[1:]]
    assert table.column("empty").to_pylist()[:2] == ["", None]  # "" stays an empty string


def test_parquet_keeps_its_types(tmp_path: Path) -> None:
    table = pa.table(
        {
            "pub": pa.array([1.0, 2.0, 2.0, 3.0, 1.0]),
            "secret": pa.array(["yes", "no", "yes", "no", "yes"]),
            "code": pa.array(["007", "", None, "ünï", "a,b"]),
            "n": pa.array([1, None, -3, 2**40, 0], type=pa.int64()),
            "flag": pa.array([True, False, None, True, False]),
            "when": pa.array([dt.date(2020, 1, 2)] * 4 + [None], type=pa.date32()),
            "amount": pa.array(
                [decimal.Decimal("1.10"), None, decimal.Decimal("-0.01"), decimal.Decimal("0"), None],
                type=pa.decimal128(6, 2),
            ),
            "tags": pa.array([["a"], [], None, ["b", "c"], ["d"]], type=pa.list_(pa.string())),
        }
    )
    src = tmp_path / "in.parquet"
    pq.write_table(table, src)
    out = tmp_path / "out.parquet"
    kept = [c for c in table.column_names if c not in ("pub", "secret")]
    release(
        src,
        secret="secret",
        public="pub",
        pairs=[("yes", "no")],
        epsilon=1.0,
        output=out,
        rng=3,
        keep_unchecked=kept,
        keep_order=True,
    )
    got = pq.read_table(out)
    assert got.column_names == ["pub", *kept]  # the table's order, the secret left out
    for name in kept:
        assert got.schema.field(name).type == table.schema.field(name).type, name
        assert got.column(name).to_pylist() == table.column(name).to_pylist(), name
    assert got.column("pub").null_count == 0


# -- hypothesis: random tables of text and numbers ----------------------------------------------

TRICKY = [
    "yes",
    "no",
    "007",
    "",
    " a",
    "b ",
    'say "x"',
    "1,5",
    "ünï",
    "NaN",
    "null",
    "TRUE",
    "01/02/2020",
    "#",
    "#x",
]
field = st.one_of(
    st.sampled_from(TRICKY),
    st.integers(-(10**12), 10**12).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=8),
)


@pytest.mark.slow
@given(
    rows=st.lists(
        st.tuples(st.sampled_from(["s1", "s2"]), st.integers(0, 3), field, field), min_size=2, max_size=30
    ),
    seed=st.integers(0, 2**32 - 1),
)
def test_random_tables_keep_every_other_column_and_the_row_order(rows, seed: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        _round_trip(Path(folder), rows, seed)


def _round_trip(tmp_path: Path, rows, seed: int) -> None:
    rows = [("s1", 0, "x", "y"), ("s2", 1, "x", "y"), *rows]  # both secrets present
    buf = io.StringIO(newline="")
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["pub", "a", "b", "secret"])
    for secret, pub, a, b in rows:
        writer.writerow([pub, a, b, secret])
    text = buf.getvalue()
    src = tmp_path / "in.csv"
    src.write_text(text, encoding="utf-8", newline="")
    out = tmp_path / "out.csv"
    release(
        src,
        secret="secret",
        public="pub",
        pairs=[("s1", "s2")],
        epsilon=1.0,
        output=out,
        rng=seed,
        keep_unchecked="a,b",
        keep_order=True,
    )
    got = out.read_bytes().decode("utf-8")
    # no field holds a line break, so a record is a line: the released value, then the input
    # line's kept fields byte for byte, in the input's order; the secret (last) is left out
    lines_in, lines_out = text.split("\n"), got.split("\n")
    assert lines_out[0] == "pub,a,b" and len(lines_out) == len(lines_in)
    for line_in, line_out in zip(lines_in[1:-1], lines_out[1:-1], strict=True):
        value, rest = line_out.split(",", 1)
        assert rest == line_in.rsplit(",", 1)[0].split(",", 1)[1]
        assert math.isfinite(float(value))


def test_layout_changes_are_stated(tmp_path) -> None:
    """Issue 44: a UTF-8 byte-order mark and a header-less input are not kept by the output; the
    report (output_layout) and the CLI say so."""
    import json

    from typer.testing import CliRunner

    from pufferfish.cli.app import app

    body = "".join(f"{'AB'[i % 2]},{i % 5}\n" for i in range(80))
    (tmp_path / "bom.csv").write_bytes(b"\xef\xbb\xbf" + ("s,x\n" + body).encode())
    (tmp_path / "plain.data").write_text(body)
    base = ["--secret", "s", "--public", "x", "--pair", "A,B", "--epsilon", "1", "--prior-set", "none"]
    run = CliRunner().invoke(
        app, ["release", str(tmp_path / "bom.csv"), *base, "--output", str(tmp_path / "o.csv")]
    )
    assert run.exit_code == 0, run.output
    assert "layout: the input starts with a UTF-8 byte-order mark; the output does not" in " ".join(
        run.output.split()
    )
    report = json.loads((tmp_path / "o.report.json").read_text())
    assert report["output_layout"] == ["the input starts with a UTF-8 byte-order mark; the output does not"]
    run = CliRunner().invoke(app, ["release", str(tmp_path / "plain.data"), *base, "--names", "s,x",
                                   "--output", str(tmp_path / "p.csv")])  # fmt: skip
    assert run.exit_code == 0, run.output
    report = json.loads((tmp_path / "p.report.json").read_text())
    assert report["output_layout"] == [
        "the input has no header row; the output's first line names the columns (s, x)"
    ]
    assert (tmp_path / "p.csv").read_text().splitlines()[0] == "x"
