"""The README's main job, measured: run it (in the input order, ``--keep-order``, so that each
released label can be compared with its row's), then compare the released column with the input.

Usage: ``python scripts/main_job_accuracy.py [OUTPUT.csv]`` (default: a temporary folder). Prints
the wall time, the share of released rows whose label was kept, and the label counts in and out.
The peak memory of the command itself is measured with ``farm-bench`` or ``/usr/bin/time -v``.
"""

from __future__ import annotations

import csv
import gzip
import subprocess
import sys
import tempfile
import time
from collections import Counter
from importlib.resources import files
from pathlib import Path

# --keep-order: the README's command writes the rows in a random order (issue 54); the same
# release in the input order lets each released label be compared with its row's input label
COMMAND = [
    "pufferfish", "release", "adult", "--secret", "marital-status", "--pair",
    "Married-civ-spouse,Never-married", "--public", "workclass", "--epsilon", "0.5", "--force",
    "--keep-order",
]  # fmt: skip


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp()) / "adult-workclass-release.csv"
    start = time.perf_counter()
    subprocess.run([*COMMAND, "--output", str(out)], check=True, stdout=subprocess.DEVNULL)
    seconds = time.perf_counter() - start
    with gzip.open(str(files("pufferfish") / "datasets" / "adult.csv.gz"), "rt", newline="") as f:
        before = [r["workclass"] for r in csv.DictReader(f)]
    with out.open(newline="") as f:  # the output is the workclass column alone (issue 41)
        rows = list(csv.reader(f))  # a missing cell is "" (an empty line before issue 54: [])
    assert rows[0] == ["workclass"], f"the output holds {rows[0]}"
    after = [r[0] if r else "" for r in rows[1:]]
    assert len(before) == len(after), "row counts differ"
    # every row is released: a missing cell is a label of its own (issue 41), "" below
    released = list(zip(before, after, strict=True))
    kept = sum(a == b for a, b in released)
    missing = before.count("")
    print(f"main job: {seconds:.1f} s wall; {len(released)} rows released, {missing} of them missing")
    print(f"labels kept: {kept} of {len(released)} = {kept / len(released):.4f}")
    n_in, n_out = Counter(a for a, _ in released), Counter(b for _, b in released)
    print(f"{'label':<18}{'input':>8}{'output':>8}")
    for label in sorted(n_in | n_out):
        print(f"{label or '(missing)':<18}{n_in[label]:>8}{n_out[label]:>8}")


if __name__ == "__main__":
    main()
