"""Time and peak memory of `pufferfish calibrate` on several columns with many distinct tuples
(issue 31: `optimal` and `l1` on 20,000 tuples in <= 5 minutes, 10^5 tuples within 2 GiB; the
transport plans answer "not run: needs N GiB" instead of an out-of-memory kill).

Run: ``python benchmarks/bench_joint_large.py``. Each case runs the command line in a fresh
process (through :data:`pufferfish.cli.app`) and prints its wall time and peak resident memory
(``ru_maxrss`` of the child). Cases:

* the shipped Adult table, ``--public fnlwgt,age``, secret ``sex`` (27,239 and 14,630 distinct
  tuples), every default mechanism;
* a synthetic table of 400,000 rows, two integer columns with 400 values each and a secret in
  {a, b} that shifts one column (about 10^5 distinct tuples per secret), ``--mechanism
  l1,optimal``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _timing import machine

_CHILD = """
import resource, sys
from pufferfish.cli import app
try:
    app(sys.argv[1:], standalone_mode=False)
finally:
    print(f"PEAK_KB {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}", file=sys.stderr)
"""


def run(args: list[str]) -> tuple[float, float, str]:
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _CHILD, *args], capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"failed: {' '.join(args)}\n{done.stderr[-2000:]}")
    peak = int(done.stderr.split("PEAK_KB")[-1].split()[0]) / 1024.0
    return seconds, peak, done.stdout


def synthetic(path: Path, rows: int = 400_000, values: int = 400) -> None:
    gen = np.random.default_rng(0)
    secret = gen.choice(np.array(["a", "b"]), rows)
    x = gen.integers(0, values, rows)
    y = np.minimum(gen.integers(0, values, rows) + (secret == "b") * gen.integers(0, 20, rows), values - 1)
    lines = ["s,x,y"] + [f"{s},{a},{b}" for s, a, b in zip(secret, x, y, strict=True)]
    path.write_text("\n".join(lines) + "\n")


def main() -> None:
    print(machine())
    with tempfile.TemporaryDirectory() as tmp:
        table = Path(tmp) / "large.csv"
        synthetic(table)
        cases = [
            ("adult fnlwgt,age (all)", ["calibrate", "adult", "--secret", "sex", "--pair", "Male,Female",
                                        "--public", "fnlwgt,age", "--epsilon", "1", "--json"]),
            ("synthetic x,y (l1,optimal)", ["calibrate", str(table), "--secret", "s", "--pair", "a,b",
                                            "--public", "x,y", "--epsilon", "1", "--mechanism", "l1,optimal",
                                            "--json"]),
        ]  # fmt: skip
        for name, args in cases:
            seconds, peak, out = run(args)
            payload = json.loads(out)
            rows = payload["results"]
            sizes = payload["tuples"]
            print(f"{name}: {seconds:.1f} s, peak {peak:.0f} MiB; tuples {sizes}")
            for r in rows:
                what = r.get("scale") if r.get("scale") is not None else r.get("reason", "")
                print(f"  {r.get('mechanism')}: {what}")


if __name__ == "__main__":
    main()
