"""DuckDB versus Spark (local mode) on the same Parquet file: prior estimation and release.

Run: ``python benchmarks/bench_engines.py [ROWS] [--secure]`` (needs the ``spark`` extra and
Java). Writes a Parquet file of ROWS rows (default 10^7, the table of ``bench_release.py``), then
for each engine times the prior estimate (median of 3) and one release to Parquet at eps = 1
(seeded NumPy sampler by default, so the engines are compared, not the sampler; ``--secure`` uses
the secure one: every core's worker threads for DuckDB, one sampler per partition for Spark).
Checks that both engines give bit-identical priors. Spark runs ``local[*]``; its start-up time is
printed separately.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _timing import machine, median_seconds, write_table

from pufferfish import estimate_priors, release
from pufferfish.tables.spark_engine import spark_session


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    rows = int(float(args[0])) if args else 10_000_000
    secure = "--secure" in sys.argv
    print(machine())
    t0 = time.perf_counter()
    spark = spark_session()
    spark.sparkContext.setLogLevel("ERROR")
    print(f"spark {spark.version} local[*] session start: {time.perf_counter() - t0:.1f} s")
    with tempfile.TemporaryDirectory() as folder:
        src = Path(folder) / "in.parquet"
        write_table(src, rows)
        print(f"rows: {rows:,} (input {src.stat().st_size / 2**20:.0f} MiB)")
        kw = dict(secret="s", public="x", pairs=[("a", "b")])
        priors = {}
        for engine in ("duckdb", "spark"):
            priors[engine] = estimate_priors(src, engine=engine, **kw)
            took = median_seconds(lambda engine=engine: estimate_priors(src, engine=engine, **kw), 3)
            print(f"{engine:>6}: prior estimate {took:7.2f} s (median of 3)")
        a, b = priors["duckdb"].scenario.priors[0], priors["spark"].scenario.priors[0]
        same = all(np.array_equal(a.conditionals[s].pmf, b.conditionals[s].pmf) for s in ("a", "b"))
        print(f"priors bit-identical: {same}")
        for engine in ("duckdb", "spark"):
            out = Path(folder) / f"out-{engine}.parquet"
            t0 = time.perf_counter()
            res = release(src, output=out, epsilon=1.0, engine=engine, rng=None if secure else 0, **kw)
            took = time.perf_counter() - t0
            kind = "secure" if res.noise["secure"] else "seeded NumPy"
            print(
                f"{engine:>6}: release {took:7.2f} s, {rows / took:>12,.0f} rows/s "
                f"({kind} sampler, scale {res.chosen.scale:.6g})"
            )


if __name__ == "__main__":
    main()
