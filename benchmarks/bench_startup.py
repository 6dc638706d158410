"""Start-up of the command line (issue 45): ``pufferfish --help`` and the README's main job, each a
whole process (its wall time and peak memory), in the same run, with the share of the main job
that start-up is.

Then the import time of each library the main job loads (a fresh process each, after NumPy).

The anchor is the main job itself (the README's first command without its install): ``pufferfish
release adult --secret marital-status --pair Married-civ-spouse,Never-married --public workclass
--epsilon 0.5``. The issue's goals: ``--help`` <= 0.3 s, the main job <= 1.5 s.

Run: ``python benchmarks/bench_startup.py [REPEATS]`` (default 7; rounds interleaved).
"""

from __future__ import annotations

import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _timing import machine

MAIN_JOB = ["release", "adult", "--secret", "marital-status", "--pair", "Married-civ-spouse,Never-married",
            "--public", "workclass", "--epsilon", "0.5", "--force"]  # fmt: skip


def _run(args: list[str]) -> tuple[float, float]:
    """Wall seconds and peak resident MiB of ``pufferfish ARGS`` in a fresh process (the console
    script's entry point, as a user runs it)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", "from pufferfish.cli.entry import main; main()", *args],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"failed: pufferfish {' '.join(args)}\n{done.stderr[-2000:]}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return seconds, max(peak, before) / 1024.0


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    print(machine())
    with tempfile.TemporaryDirectory() as tmp:
        job = [*MAIN_JOB, "--output", str(Path(tmp) / "workclass.csv")]
        helps, jobs = [], []
        for _ in range(repeats):  # interleaved, so that both see the same machine
            helps.append(_run(["--help"]))
            jobs.append(_run(job))
    h = sorted(s for s, _ in helps)
    j = sorted(s for s, _ in jobs)
    print(f"pufferfish --help: min {h[0]:.3f} / median {statistics.median(h):.3f} / max {h[-1]:.3f} s")
    print(f"main job:          min {j[0]:.3f} / median {statistics.median(j):.3f} / max {j[-1]:.3f} s, "
          f"peak {max(m for _, m in jobs):.0f} MiB (largest child so far)")  # fmt: skip
    print(f"--help / main job: {statistics.median(h) / statistics.median(j):.0%} (medians)")
    print(f"main job / --help: {statistics.median(j) / statistics.median(h):.1f}x (medians)")
    print("imports the main job needs, each in a fresh process after numpy (median seconds):")
    for module in _IMPORTS:
        took = statistics.median(_import_seconds(module) for _ in range(repeats))
        print(f"  {module:<28} {took:.3f} s")


#: Libraries the main job loads: SciPy (root finding, the mapping LP), pandas (PyArrow loads it at its
#: first conversion between NumPy and Arrow), DuckDB, and the library's release path with all of them.
_IMPORTS = ("scipy.optimize", "scipy.special", "pandas", "duckdb", "pyarrow", "pufferfish.pipeline.release")


def _import_seconds(module: str) -> float:
    """Seconds to import ``module`` in a fresh interpreter that has imported NumPy."""
    code = f"import numpy, time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout)


if __name__ == "__main__":
    main()
