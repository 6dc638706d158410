"""Peak memory and rows per second of a streamed release of a large Parquet file.

Run: ``python benchmarks/bench_release.py [ROWS] [--secure] [--gaussian]``. Writes a Parquet file of ROWS rows
(default 10^7) with DuckDB into a temporary folder: an id, a secret column with two values, an
integer public column 0..10 whose distribution depends on the secret (1 row in 11 missing) and a
float column. Releases it to Parquet with the optimal Laplace scale at eps = 1 and prints wall
time, rows per second and the peak resident memory of the process (``resource.getrusage``). By
default the seeded NumPy sampler is used (the secure sampler is the slower part; see
``bench_noise.py``); ``--secure`` uses the secure one (every core). ``--gaussian`` releases with
the optimal Gaussian sigma at (1, 1e-6) instead. The prior estimate alone is timed first.
"""

from __future__ import annotations

import resource
import sys
import tempfile
import time
from pathlib import Path

from _timing import machine, write_table

from pufferfish import estimate_priors, release


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    rows = int(float(args[0])) if args else 10_000_000
    secure = "--secure" in sys.argv
    gaussian = {"noise": "gaussian", "delta": 1e-6} if "--gaussian" in sys.argv else {}
    print(machine())
    with tempfile.TemporaryDirectory() as folder:
        src, out = Path(folder) / "in.parquet", Path(folder) / "out.parquet"
        t0 = time.perf_counter()
        write_table(src, rows)
        made = time.perf_counter() - t0
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        t0 = time.perf_counter()
        estimate_priors(src, secret="s", public="x", pairs=[("a", "b")])
        estimated = time.perf_counter() - t0
        after_estimate = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        t0 = time.perf_counter()
        res = release(
            src,
            secret="s",
            public="x",
            pairs=[("a", "b")],
            epsilon=1.0,
            output=out,
            rng=None if secure else 0,
            **gaussian,  # type: ignore[arg-type]
        )
        took = time.perf_counter() - t0
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(f"rows: {rows:,} (input {src.stat().st_size / 2**20:.0f} MiB, written in {made:.1f} s)")
        print(f"prior estimate alone: {estimated:.1f} s, peak RSS {after_estimate / 2**20:.2f} GiB")
        print(f"sampler: {res.noise['sampler']}")
        print(f"release: {took:.1f} s, {rows / took:,.0f} rows/s, scale {res.chosen.scale:.6g}")
        print(f"scale drawn: {res.noise['scale']!r} (chosen {res.chosen.scale!r})")
        print(f"peak RSS: {peak / 2**20:.2f} GiB (before the release: {base / 2**20:.2f} GiB)")
        print(f"output: {out.stat().st_size / 2**20:.0f} MiB, {res.rows_released:,} rows with noise")


if __name__ == "__main__":
    main()
