"""The prior estimate of a large CSV: time and peak memory of ``estimate_priors`` in a fresh process.

Run: ``python benchmarks/bench_csv_prior.py [ROWS] [--repeats N]`` (default 10^7 rows, 3 repeats).
Writes the table of ``bench_release.py`` (an id, a secret ``s``, a public integer ``x`` with 1 row
in 11 missing, a float ``y``) as a CSV once, then estimates the priors of ``x`` given ``s`` in a
fresh process each time and prints the median wall time of the call and the largest peak
resident memory. The prior's queries (row counts, the alphabet, the secrets, the counts per
secret and value, the missing cells) each scan the table: the CSV's used columns are copied once
into DuckDB's own storage, so the file is parsed once, not once per query.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _timing import machine

_CHILD = """
import resource, sys, time
from pufferfish import estimate_priors
t0 = time.perf_counter()
estimate_priors(sys.argv[1], secret="s", public="x", pairs=[("a", "b")])
print(time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", nargs="?", type=float, default=1e7, help="rows of the table")
    parser.add_argument("--repeats", type=int, default=3)
    opts = parser.parse_args()
    rows = int(opts.size)
    print(machine())
    import duckdb
    from _timing import write_table

    with tempfile.TemporaryDirectory() as folder:
        src = Path(folder) / "in.csv"
        parquet = Path(folder) / "in.parquet"
        write_table(parquet, rows)
        con = duckdb.connect()
        con.execute(f"COPY (SELECT * FROM read_parquet('{parquet}')) TO '{src}' (FORMAT csv, HEADER)")
        con.close()
        times, peaks = [], []
        for _ in range(opts.repeats):
            out = subprocess.run(
                [sys.executable, "-c", _CHILD, str(src)], capture_output=True, text=True, check=True
            )
            seconds, peak = (float(v) for v in out.stdout.split())
            times.append(seconds)
            peaks.append(peak)
        size = src.stat().st_size / 2**20
        print(
            f"rows: {rows:,} (CSV, {size:.0f} MiB); estimate_priors of x given s, "
            f"{opts.repeats} fresh processes"
        )
        print(
            f"median {statistics.median(times):.2f} s (min {min(times):.2f}, max {max(times):.2f}), "
            f"peak {max(peaks):.0f} MiB"
        )


if __name__ == "__main__":
    main()
