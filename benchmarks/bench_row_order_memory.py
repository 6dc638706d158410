"""Time and peak memory of a secure release against the table's size: 10^6, 10^7 and 3x10^7 rows.

Run: ``python benchmarks/bench_row_order_memory.py [ROWS ...]`` (default 1e6 1e7 3e7). Writes the
table of ``bench_release.py`` (an id, a secret ``s``, a public integer ``x`` with 1 row in 11
missing, a float ``y``) to Parquet, then releases ``x`` at eps 1 to Parquet in a fresh process
(secure noise, the rows in a uniformly random order: :mod:`pufferfish.tables.shuffle`) and prints
the release's wall time and the process's peak resident memory, and the largest peak over the
smallest's. The goal: peak memory flat in rows (<= 1.3x from 10^6 to 3x10^7).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from _timing import machine, write_table

_CHILD = """
import resource, sys, time
from pufferfish import release
t0 = time.perf_counter()
release(sys.argv[1], secret="s", public="x", pairs=[("a", "b")], epsilon=1.0, output=sys.argv[2])
print(time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""


def main() -> None:
    sizes = [int(float(a)) for a in sys.argv[1:]] or [10**6, 10**7, 3 * 10**7]
    print(machine())
    print(f"{'rows':>12} {'release s':>10} {'peak MiB':>9}")
    peaks = []
    with tempfile.TemporaryDirectory() as folder:
        for rows in sizes:
            src, out = Path(folder) / f"in{rows}.parquet", Path(folder) / f"out{rows}.parquet"
            write_table(src, rows)
            done = subprocess.run([sys.executable, "-c", _CHILD, str(src), str(out)], capture_output=True,
                                  text=True, check=True)  # fmt: skip
            seconds, peak = (float(v) for v in done.stdout.split())
            peaks.append(peak)
            print(f"{rows:>12,} {seconds:>10.2f} {peak:>9.0f}", flush=True)
            src.unlink()
            out.unlink()
    print(f"peak memory, largest table over smallest: {peaks[-1] / peaks[0]:.2f}x (goal <= 1.3x)")


if __name__ == "__main__":
    main()
