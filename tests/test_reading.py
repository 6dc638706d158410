"""Issue 33: files as they are published. No header (``--names``), missing-value markers
(``--na``), any delimiter, other encodings; the file's own defects named; a mechanism out of time
says so."""

from __future__ import annotations

import csv
import gzip
import json
from importlib.resources import files
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from pufferfish.cli.app import app
from pufferfish.pipeline.calibrate import calibrate_table
from pufferfish.pipeline.release import release
from pufferfish.tables.source import CsvOptions, DataError, check_csv_options

runner = CliRunner()
ADULT_PAIR = "Married-civ-spouse,Never-married"


def _rows(n: int = 400, seed: int = 3) -> list[tuple[str, str, str]]:
    """(id, group, score) with a score of about 10 to 40, '' where missing (every 23rd row)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        g = "a" if rng.random() < 0.5 else "b"
        score = "" if i % 23 == 0 else str(int(rng.integers(10, 30)) + (8 if g == "a" else 0))
        out.append((f"{i:04d}", g, score))
    return out


def _clean(path: Path, rows: list[tuple[str, str, str]]) -> Path:
    path.write_text("id,group,score\n" + "".join(f"{a},{b},{c}\n" for a, b, c in rows))
    return path


def _written(path: Path, rows, delimiter: str, marker: str, gz: bool) -> Path:
    text = "".join(delimiter.join(v if v else marker for v in r) + "\n" for r in rows)
    if gz:
        path = path.with_name(path.name + ".gz")
        with gzip.open(path, "wt") as f:
            f.write(text)
    else:
        path.write_text(text)
    return path


def _scale(data, **kw) -> float:
    # missing="omit": the rows with a score (a missing number is not yet inside a release's check)
    table = calibrate_table(data, secret="group", public="score", pairs=["a,b"], epsilon=1.0,
                            mechanisms=["optimal"], prior_set="none", missing="omit", **kw)  # fmt: skip
    return table.comparison[0].scale


@pytest.mark.parametrize("delimiter", [";", "\t", ", ", ","])
@pytest.mark.parametrize("marker", ["?", "NA", "-"])
@pytest.mark.parametrize("gz", [False, True])
def test_header_less_files_with_markers_match_the_clean_table(tmp_path, delimiter, marker, gz) -> None:
    rows = _rows()
    expected = _scale(_clean(tmp_path / "clean.csv", rows))
    path = _written(tmp_path / "raw.data", rows, delimiter, marker, gz)
    read = check_csv_options(["id", "group", "score"], [marker])
    table = calibrate_table(path, secret="group", public="score", pairs=["a,b"], epsilon=1.0,
                            mechanisms=["optimal"], prior_set="none", read=read, missing="omit")  # fmt: skip
    assert not table.estimated.categorical  # numbers apart from the markers: numeric
    assert table.estimated.rows_dropped == sum(1 for r in rows if not r[2])
    assert table.comparison[0].scale == expected


def test_a_numeric_column_with_markers_is_refused_before_any_work(tmp_path) -> None:
    """Issue 44: read as text, a column of 96% numbers would become labels in string order; it is
    refused at once, naming the other tokens and the two ways on."""
    path = _written(tmp_path / "raw.csv", [("id", "group", "score"), *_rows()], ",", "?", False)
    with pytest.raises(DataError) as err:
        calibrate_table(path, secret="group", public="score", pairs=["a,b"], epsilon=1.0,
                        mechanisms=["randomized-response"], prior_set="none")  # fmt: skip
    assert str(err.value) == (
        "public column 'score' is read as text, but 96% of its values are numbers; the others are '?' "
        "(18 rows): pass --na '?' to read it as numbers, or --categorical score to read it as labels"
    )
    out = tmp_path / "o.csv"
    res = runner.invoke(app, ["release", str(path), "--secret", "group", "--pair", "a,b", "--public", "score",
                              "--epsilon", "1", "--output", str(out)])  # fmt: skip
    assert res.exit_code != 0 and "--categorical score" in res.output and not out.exists()
    how = dict(secret="group", public="score", pairs=["a,b"], epsilon=1.0, prior_set="none")
    labels = calibrate_table(path, mechanisms=["randomized-response"], categorical=["score"], **how)  # type: ignore[arg-type]
    assert labels.estimated.categorical  # asked for: read as labels
    args = [
        "--secret",
        "group",
        "--pair",
        "a,b",
        "--public",
        "score",
        "--epsilon",
        "1",
        "--prior-set",
        "none",
    ]
    res = runner.invoke(app, ["calibrate", str(path), *args, "--na", "?", "--json", "--missing", "omit"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["columns_read_as"]["score"] == "numeric"


def test_adult_as_published_reads_as_the_shipped_name(tmp_path) -> None:
    """The UCI file's layout: no header, ', ' between fields, '?' for missing. Written here from
    the shipped copy (the network is not used), then read through the public options only."""
    with gzip.open(str(files("pufferfish") / "datasets" / "adult.csv.gz"), "rt", newline="") as f:
        reader = csv.reader(f)
        names = next(reader)
        raw = tmp_path / "adult.data"
        raw.write_text("".join(", ".join(v if v else "?" for v in row) + "\n" for row in reader))
    base = ["--secret", "marital-status", "--pair", ADULT_PAIR, "--epsilon", "0.5", "--json"]
    for public in ("workclass", "age"):
        shipped = runner.invoke(app, ["calibrate", "adult", "--public", public, *base])
        given = runner.invoke(app, ["calibrate", str(raw), "--names", ",".join(names), "--na", "?",
                                    "--public", public, *base])  # fmt: skip
        assert shipped.exit_code == 0 and given.exit_code == 0, given.output
        a, b = json.loads(shipped.output), json.loads(given.output)
        assert a["rows_total"] == b["rows_total"] == 48_842
        assert a["rows_dropped_missing"] == b["rows_dropped_missing"]
        assert a["columns_read_as"] == b["columns_read_as"]
        key = ("mechanism", "scale", "checked_loss", "expected_accuracy")
        assert [[r.get(k) for k in key] for r in a["results"]] == [
            [r.get(k) for k in key] for r in b["results"]
        ]


def test_release_of_a_header_less_file_keeps_the_other_columns_as_written(tmp_path) -> None:
    rows = [(i, g, s, "x?" if i % 5 else "?") for i, (_, g, s) in enumerate(_rows(120))]
    path = tmp_path / "raw.csv"
    path.write_text("".join(f"{i};{g};{s or '?'};{n}\n" for i, g, s, n in rows))
    out = tmp_path / "out.csv"
    how = dict(read=check_csv_options(["id", "group", "score", "note"], ["?"]), keep_unchecked="id,note")
    # a score read as missing ('?') is published as missing, inside the check (issue 41): with 6
    # of 120 rows, the rates' 95% intervals are wide, and 'missing' alone may reveal the secret
    with pytest.raises(
        DataError, match="the missing cells of 'score' alone have privacy loss 3.39159 > epsilon 1"
    ):
        release(
            path,
            secret="group",
            public="score",
            pairs=["a,b"],
            epsilon=1.0,
            output=out,
            rng=1,
            **how,
            keep_order=True,
        )
    assert not out.exists()
    rows = [(i, g, s or "15", n) for i, g, s, n in rows]
    path.write_text("".join(f"{i};{g};{s};{n}\n" for i, g, s, n in rows))
    res = release(path, secret="group", public="score", pairs=["a,b"], epsilon=1.0, output=out, rng=1,
                  **how, keep_order=True)  # fmt: skip
    with out.open(newline="") as f:
        got = list(csv.reader(f, delimiter=";"))
    assert got[0] == ["id", "score", "note"]  # the names given, as the header; the secret left out
    assert [r[2] for r in got[1:]] == [n for *_, n in rows]  # '?' in a kept column stays '?'
    assert all(r[1] != "" for r in got[1:]) and res.rows_missing == 0


def test_other_encodings_are_named_and_read(tmp_path) -> None:
    path = tmp_path / "latin.csv"
    text = "".join(
        f"{'Zoë' if i % 2 else 'Åsa'},{i % 7},{'Ørsted' if i % 3 else 'Müller'}\n" for i in range(60)
    )
    path.write_bytes(("name,x,street\n" + text).encode("latin-1"))
    args = [
        "calibrate",
        str(path),
        "--secret",
        "name",
        "--pair",
        "Zoë,Åsa",
        "--public",
        "x",
        "--epsilon",
        "1",
    ]
    res = runner.invoke(app, args)
    assert res.exit_code == 1 and len(res.output.strip().splitlines()) == 1
    assert "is not utf-8 text: byte b'\\xc5' on line 2; pass --encoding latin-1" in res.output
    res = runner.invoke(app, [*args, "--encoding", "latin-1", "--json", "--mechanism", "optimal"])
    assert res.exit_code == 0, res.output
    assert set(json.loads(res.output)["priors"]) == {"Zoë", "Åsa"}
    out = tmp_path / "out.csv"
    release(path, secret="name", public="x", pairs=["Zoë,Åsa"], epsilon=1.0, output=out, rng=1,
            read=check_csv_options(encoding="latin-1"), keep_unchecked="street", keep_order=True)  # fmt: skip
    assert out.read_text(encoding="utf-8").splitlines()[1].split(",")[1] == "Müller"  # written as UTF-8
    with pytest.raises(ValueError, match="output must differ from every input file"):
        release(path, secret="name", public="x", pairs=["Zoë,Åsa"], epsilon=1.0, output=path, force=True,
                read=check_csv_options(encoding="latin-1"), keep_order=True)  # fmt: skip


@pytest.mark.parametrize(
    ("content", "read", "message"),
    [
        ("s,x,x\na,1,2\nb,3,4\n", CsvOptions(), "column name 'x' repeats in the header of"),
        ("s,x,y\na,1,2\nb,3\nc,4,5\n", CsvOptions(), "line 3 of"),
        ("a,1\nb,2\n", CsvOptions(names=("s", "x", "y")), "names gives 3 column names, but the first line"),
        ("s,x\na,4611686018427387904\nb,4611686018427387905\na,1\n", CsvOptions(),
         "holds integers beyond 2^53 (e.g. 4611686018427387904)"),
    ],
)  # fmt: skip
def test_file_defects_are_named(tmp_path, content, read, message) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(content)
    with pytest.raises(DataError, match=message.replace("(", r"\(").replace(")", r"\)").replace("^", r"\^")):
        calibrate_table(path, secret="s", public="x", pairs=["a,b"], epsilon=1.0, read=read)
    if "line 3" in message:
        with pytest.raises(DataError, match="has 2 fields where the header has 3"):
            calibrate_table(path, secret="s", public="x", pairs=["a,b"], epsilon=1.0, read=read)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"names": ["a", "b", "a"]}, "names must name each column once, got 'a' twice"),
        ({"names": ["a", ""]}, "names must be non-empty column names"),
        ({"na": [""]}, "na markers must be non-empty texts on one line"),
        ({"delimiter": "abcde"}, "delimiter must be 1 to 4 characters"),
        ({"encoding": "klingon"}, "encoding must be a text encoding such as utf-8 or latin-1, got 'klingon'"),
    ],
)
def test_reading_options_are_checked(kwargs, message) -> None:
    with pytest.raises(ValueError, match=message):
        check_csv_options(**kwargs)


def test_a_secret_label_with_a_comma_is_named_by_quoting(tmp_path) -> None:
    path = tmp_path / "q.csv"
    path.write_text("who,x\n" + "".join(f'"{"Doe, Jane" if i % 2 else "Roe"}",{i % 5}\n' for i in range(40)))
    args = ["--secret", "who", "--pair", '"Doe, Jane",Roe', "--public", "x", "--epsilon", "1", "--json"]
    res = runner.invoke(app, ["calibrate", str(path), *args, "--mechanism", "optimal"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["pairs"] == [["Doe, Jane", "Roe"]]


def test_the_time_limit_row_says_did_not_finish(tmp_path) -> None:
    """A 120-label LP with the DKW sets (86,000 variables) and a 1 s limit: its row says it did not
    finish and how to raise the limit, never that it failed the check; the others answer."""
    rng = np.random.default_rng(1)
    lines = [f"{'yes' if i % 2 else 'no'},{int(rng.integers(150, 271))}" for i in range(300)]
    path = tmp_path / "chol.csv"
    path.write_text("disease,chol\n" + "\n".join(lines) + "\n")
    args = ["--secret", "disease", "--pair", "yes,no", "--public", "chol", "--categorical", "chol"]
    res = runner.invoke(app, ["calibrate", str(path), *args, "--epsilon", "1", "--time-limit", "1", "--json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.output)["results"]
    stopped = [r for r in rows if "reason" in r]
    assert [r["mechanism"] for r in stopped] == ["optimal-mapping"]
    assert stopped[0]["reason"].startswith("did not finish: the mapping LP (")
    assert "within 1 s; raise the time limit (--time-limit" in stopped[0]["reason"]
    assert not any("fails" in r.get("reason", "") for r in rows)
    assert {r["mechanism"] for r in rows if "reason" not in r} >= {"randomized-response", "geometric"}


def test_a_marker_that_is_a_secret_value_is_refused(tmp_path) -> None:
    path = tmp_path / "m.csv"
    path.write_text("s,x,x2\n" + "".join(f"{'NA' if i % 2 else 'b'},{i % 4},{i % 3}\n" for i in range(20)))
    for public in ("x", "x,x2"):  # one column and several
        args = ["calibrate", str(path), "--secret", "s", "--pair", "NA,b", "--public", public]
        res = runner.invoke(app, [*args, "--epsilon", "1", "--na", "NA"])
        assert res.exit_code == 1 and len(res.output.strip().splitlines()) == 1
        assert "--na 'NA' is also a secret value of the pair NA,b" in res.output


def test_a_ragged_row_far_into_the_file_names_its_line(tmp_path) -> None:
    rows = [f"{'a' if i % 2 else 'b'},{i % 5},{i % 3}" for i in range(20_000)]
    rows[15_000] = "a,1"  # beyond the first 64 KiB, which resolve_source reads itself
    path = tmp_path / "r.csv"
    path.write_text("s,x,y\n" + "\n".join(rows) + "\n")
    with pytest.raises(DataError, match="line 15002 has 2 fields where the header has 3"):
        calibrate_table(path, secret="s", public="x", pairs=["a,b"], epsilon=1.0, mechanisms=["optimal"])


# --- a CSV's types are sniffed once per process and file (tables.duckdb_read) -------------------


def test_a_file_changed_between_two_opens_is_sniffed_again(tmp_path: Path) -> None:
    import os

    from pufferfish.tables.duckdb_read import connect, open_table, table_columns
    from pufferfish.tables.source import resolve_source

    path = tmp_path / "t.csv"
    path.write_text("g,x\na,1\nb,2\n")
    source = resolve_source(str(path))
    with connect() as con:
        assert [str(t) for t in open_table(con, source).types] == ["VARCHAR", "BIGINT"]
        assert open_table(con, source, text_columns=["x"]).fetchall() == [("a", "1"), ("b", "2")]
        path.write_text("g,x,y\na,one,2.5\nb,two,3.5\n")
        os.utime(path, ns=(1, 1))  # another modification time even within the clock's resolution
        assert table_columns(con, resolve_source(str(path))) == ["g", "x", "y"]
        assert [str(t) for t in open_table(con, resolve_source(str(path))).types] == [
            "VARCHAR", "VARCHAR", "DOUBLE"
        ]  # fmt: skip


def test_dates_in_a_day_first_format_read_the_same_at_every_open(tmp_path: Path) -> None:
    """A type DuckDB reads only with its sniffer's format (a date) is sniffed again at each open,
    never given as a type without its format."""
    from pufferfish.tables.duckdb_read import connect, open_table
    from pufferfish.tables.source import resolve_source

    path = tmp_path / "d.csv"
    path.write_text("g,day,x\n" + "".join(f"{'ab'[i % 2]},{i % 28 + 1:02d}/03/2020,{i}\n" for i in range(60)))
    source = resolve_source(str(path))
    with connect() as con:
        first = open_table(con, source).fetchall()
        again = open_table(con, source).fetchall()
        text = open_table(con, source, text_columns=["g"]).fetchall()
    assert first == again == text and str(first[0][1]) == "2020-03-01"
