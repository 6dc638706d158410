"""Build the shipped ``activity`` series: a SYNTHETIC 8-state activity log of 28 days x 144
ten-minute steps (issue 43: the size of the real log the default confidence set must answer on).

Run from the repository root::

    python scripts/build_activity.py

It draws 28 series (one per day, ``day`` 1..28) of 144 steps (``slot`` 0..143, ten minutes
each) from the fixed transition matrix below, with a seeded generator (seed 43), starting each
day asleep, and writes ``src/pufferfish/datasets/activity.csv.gz``: columns ``day``, ``slot``,
``activity`` (sleep, personal, meal, work, commute, leisure, exercise, chores); 4,032 rows. The
matrix has 38 positive entries, so the default ``l1-rows`` set of ``pufferfish markov`` lists
``1 + 38 x 7 = 267`` chains (if every state occurs). No person's data is in it.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np

OUT = Path("src/pufferfish/datasets/activity.csv.gz")
STATES = ("sleep", "personal", "meal", "work", "commute", "leisure", "exercise", "chores")
# rows: from; columns: to (the order of STATES); 38 positive entries
MATRIX = np.array(
    [
        [0.93, 0.07, 0.00, 0.00, 0.00, 0.00, 0.00, 0.00],  # sleep
        [0.04, 0.63, 0.12, 0.00, 0.10, 0.08, 0.00, 0.03],  # personal
        [0.00, 0.15, 0.59, 0.08, 0.00, 0.12, 0.00, 0.06],  # meal
        [0.00, 0.02, 0.04, 0.88, 0.04, 0.00, 0.00, 0.02],  # work
        [0.00, 0.10, 0.04, 0.40, 0.40, 0.04, 0.02, 0.00],  # commute
        [0.04, 0.06, 0.06, 0.00, 0.00, 0.78, 0.02, 0.04],  # leisure
        [0.00, 0.20, 0.00, 0.00, 0.00, 0.10, 0.70, 0.00],  # exercise
        [0.02, 0.04, 0.04, 0.00, 0.00, 0.08, 0.00, 0.82],  # chores
    ]
)


def main() -> None:
    assert np.allclose(MATRIX.sum(axis=1), 1.0) and int((MATRIX > 0).sum()) == 38
    gen = np.random.default_rng(43)
    lines = ["day,slot,activity"]
    for day in range(1, 29):
        state = 0
        for slot in range(144):
            lines.append(f"{day},{slot},{STATES[state]}")
            state = int(gen.choice(8, p=MATRIX[state]))
    OUT.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode("utf-8"), mtime=0))
    print(f"wrote {OUT}: {len(lines) - 1} rows")


if __name__ == "__main__":
    main()
