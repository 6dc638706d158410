"""Helpers shared by the benchmark scripts: median wall time, a line naming the machine, a CLI
command's median time and peak memory in a child process, and the synthetic table the release and
engine benchmarks read."""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path


def median_seconds(fn: Callable[[], object], repeats: int = 5) -> float:
    """Median wall-clock seconds of ``repeats`` calls of ``fn``."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


#: The child process of :func:`cli_runs`: runs the CLI, then prints its peak resident memory.
_CHILD = """
import resource, sys
from pufferfish.cli.app import app
try:
    app(sys.argv[1:], standalone_mode=False)
finally:
    print(f"PEAK_KB {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}", file=sys.stderr)
"""


def cli_runs(args: list[str], repeats: int) -> tuple[float, float, str]:
    """``pufferfish ARGS`` in a fresh process ``repeats`` times: (median wall seconds, largest peak
    resident memory in MiB, the last run's standard output)."""
    times, peaks = [], []
    out = ""
    for _ in range(repeats):
        t0 = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, *args], capture_output=True, text=True, check=False
        )
        times.append(time.perf_counter() - t0)
        if done.returncode != 0:
            raise SystemExit(f"failed: {' '.join(args)}\n{done.stderr[-2000:]}")
        peaks.append(int(done.stderr.split("PEAK_KB")[-1].split()[0]))
        out = done.stdout
    return statistics.median(times), max(peaks) / 1024.0, out


def machine() -> str:
    """``machine: x86_64, 2 cores, Python 3.11.7``."""
    return f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"


def write_table(path: Path, rows: int) -> None:
    """Write the benchmark table to Parquet with DuckDB: ``id``, secret ``s`` in {a, b}, integer
    public ``x`` in 0..10 whose distribution depends on ``s`` (1 row in 11 missing), float ``y``."""
    import duckdb

    con = duckdb.connect()
    con.execute(
        "COPY (SELECT i AS id, CASE WHEN hash(i) % 3 = 0 THEN 'a' ELSE 'b' END AS s, "
        "CASE WHEN i % 11 = 0 THEN NULL "
        "ELSE ((hash(i * 7) % 10) + CASE WHEN hash(i) % 3 = 0 THEN 0 ELSE hash(i * 13) % 2 END)::INTEGER "
        f"END AS x, i * 0.25 AS y FROM range({rows}) t(i)) TO '{path}' (FORMAT parquet)"
    )
    con.close()
