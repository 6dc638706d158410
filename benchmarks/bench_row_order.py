"""The cost of writing a release's rows in a uniformly random order (issue 54), measured in one
run against the same release in the input order (``keep_order=True``).

Run: ``python benchmarks/bench_row_order.py [ROWS] [--rounds R] [--format parquet|csv]``
(default 10^7 rows, 3 rounds, Parquet). Writes the table of ``bench_release.py`` once, then
releases ``x`` at eps 1 securely R times each way, interleaved, and prints each mode's min /
median / max wall time, the ratio shuffled / input order per round and the process's peak RSS.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import tempfile
import time
from pathlib import Path

from _timing import machine, write_table

from pufferfish import release


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", nargs="?", type=float, default=1e7, help="rows of the table")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--format", choices=("parquet", "csv"), default="parquet")
    opts = parser.parse_args()
    rows, rounds = int(opts.size), opts.rounds
    print(machine())
    with tempfile.TemporaryDirectory() as folder:
        src = Path(folder) / "in.parquet"
        write_table(src, rows)
        times: dict[str, list[float]] = {"shuffled": [], "input order": []}
        for r in range(rounds):
            for mode in times:
                t0 = time.perf_counter()
                release(
                    src, secret="s", public="x", pairs=[("a", "b")], epsilon=1.0,
                    output=Path(folder) / f"out_{r}.{opts.format}", force=True, keep_order=mode != "shuffled",
                )  # fmt: skip
                times[mode].append(time.perf_counter() - t0)
        print(f"rows: {rows:,}; {rounds} interleaved rounds; x released at eps 1 to {opts.format}, securely")
        for mode, ts in times.items():
            mid = statistics.median(ts)
            print(f"{mode:>12}: {min(ts):.2f} / {mid:.2f} / {max(ts):.2f} s (min / median / max)")
        ratios = sorted(a / b for a, b in zip(times["shuffled"], times["input order"], strict=True))
        mid = statistics.median(ratios)
        print(f"  ratio shuffled / input order per round: {ratios[0]:.2f} / {mid:.2f} / {ratios[-1]:.2f}x")
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"peak RSS of the process: {peak:.0f} MiB")


if __name__ == "__main__":
    main()
