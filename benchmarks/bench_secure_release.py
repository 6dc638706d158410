"""A secure release against a seeded one of the same table, measured in one run (issue 45).

Run: ``python benchmarks/bench_secure_release.py [ROWS] [--rounds R]`` (default 10^7 rows, 5
rounds). Writes the table of ``bench_release.py`` (an id, a secret ``s``, a public integer ``x``
with 1 row in 11 missing, a float ``y``) to Parquet once, then releases ``x`` at eps 1 to Parquet
R times each way, interleaved: with the exact secure sampler (OS randomness, every core) and with
NumPy's seeded generator (insecure, the anchor). Prints each mode's min / median / max wall time
and the ratio secure / seeded of each round, min / median / max. Issue 45's goal: <= 1.3x.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from _timing import machine, write_table

from pufferfish import release


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", nargs="?", type=float, default=1e7, help="rows of the table")
    parser.add_argument("--rounds", type=int, default=5)
    opts = parser.parse_args()
    rows, rounds = int(opts.size), opts.rounds
    print(machine())
    with tempfile.TemporaryDirectory() as folder:
        src = Path(folder) / "in.parquet"
        write_table(src, rows)
        times: dict[str, list[float]] = {"secure": [], "seeded": []}
        sampler = ""
        for r in range(rounds):
            for mode in ("secure", "seeded"):
                t0 = time.perf_counter()
                res = release(
                    src, secret="s", public="x", pairs=[("a", "b")], epsilon=1.0,
                    output=Path(folder) / f"out_{mode}_{r}.parquet", rng=None if mode == "secure" else r,
                )  # fmt: skip
                times[mode].append(time.perf_counter() - t0)
                sampler = res.noise["sampler"] if mode == "secure" else sampler
        print(f"rows: {rows:,}; {rounds} interleaved rounds; released x at eps 1 to Parquet")
        print(f"secure sampler: {sampler}")
        for mode, ts in times.items():
            mid = statistics.median(ts)
            print(f"{mode:>7}: {min(ts):.2f} / {mid:.2f} / {max(ts):.2f} s (min / median / max)")
        ratios = sorted(s / n for s, n in zip(times["secure"], times["seeded"], strict=True))
        print(
            f"  ratio secure / seeded per round: {ratios[0]:.2f} / {statistics.median(ratios):.2f} / "
            f"{ratios[-1]:.2f}x (min / median / max; goal <= 1.3x)"
        )


if __name__ == "__main__":
    main()
