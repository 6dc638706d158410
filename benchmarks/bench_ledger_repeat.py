"""One column released ten times with one ledger (issue 54): each release's wall time and peak
memory, in fresh processes, against the same release without a ledger.

Run: ``python benchmarks/bench_ledger_repeat.py [--releases N]`` (default 10). The README's
ledger example (Adult, secret ``sex``, ``age`` by ``optimal`` at eps 0.5, the point estimate):
its fourth release had built a (405224, 74, 74) float64 kernel (16.5 GiB) in the exact joint
check; the check now counts its size first and answers "not run", the next rule answering.
Prints per release: wall seconds, the rule and epsilon of the ledger's line; the largest peak RSS
of those processes; then the same release without a ledger, 3 times, and the ratio.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _timing import machine

BASE = ["release", "adult", "--secret", "sex", "--public", "age", "--pair", "Male,Female", "--epsilon", "0.5",
        "--mechanism", "optimal", "--prior-set", "none", "--force", "--json"]  # fmt: skip


def run(args: list[str]) -> tuple[float, str]:
    """(wall seconds, stdout) of one CLI process."""
    exe = shutil.which("pufferfish")
    cmd = [exe, *args] if exe else [sys.executable, "-m", "pufferfish.cli.app", *args]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(
            f"failed: {proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else proc.returncode}"
        )
    return wall, proc.stdout


def children_peak() -> float:
    """The largest peak RSS (MiB) of any child process waited for so far."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--releases", type=int, default=10)
    opts = parser.parse_args()
    print(machine())
    import json

    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        led = work / "age.ledger"
        with_ledger = []
        for i in range(opts.releases):
            wall, out = run([*BASE, "--output", str(work / f"age{i}.csv"), "--ledger", str(led)])
            together = json.loads(out)["ledger"]["together"]
            with_ledger.append(wall)
            eps = "none" if together["epsilon"] is None else f"{together['epsilon']:.6g}"
            print(f"release {i + 1:>2}: {wall:.2f} s; together: {together['rule']}, eps {eps}")
        peak = children_peak()
        alone = [run([*BASE, "--output", str(work / "alone.csv")])[0] for _ in range(3)]
    mid = statistics.median(alone)
    print(f"without a ledger: {min(alone):.2f} / {mid:.2f} / {max(alone):.2f} s (min / median / max of 3)")
    worst = max(with_ledger)
    print(f"with the ledger: slowest release {worst:.2f} s = {worst / mid:.2f}x the median alone")
    print(f"largest peak RSS of any release with the ledger: {peak:.0f} MiB")


if __name__ == "__main__":
    main()
