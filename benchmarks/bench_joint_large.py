"""Time and peak memory of `pufferfish calibrate` on several columns with many distinct tuples
(issue 31: `optimal` and `l1` on 20,000 tuples in <= 5 minutes, 10^5 tuples within 2 GiB; the
transport plans answer "not run: needs N GiB" instead of an out-of-memory kill).

Run: ``python benchmarks/bench_joint_large.py``. Each case runs the command line in a fresh
process (through :data:`pufferfish.cli.app.app`) and prints its wall time and peak resident memory
(``ru_maxrss`` of the child). Cases:

* the shipped Adult table, ``--public fnlwgt,age``, secret ``sex`` (27,239 and 14,630 distinct
  tuples), every default mechanism;
* a synthetic table of 400,000 rows, two integer columns with 400 values each and a secret in
  {a, b} that shifts one column (about 10^5 distinct tuples per secret), ``--mechanism
  l1,optimal``;
* Adult with a categorical column (``workclass,age``, ``workclass,occupation,age``) under the
  default prior set (the L1 balls, :mod:`pufferfish.priors.balls`).

The large cases run on the point estimate (``--prior-set none``); with the default set they answer
"not run" (the worst case over the balls evaluates every grid vertex against every tuple). Under a
set, the best mechanism at the point estimate is listed beside the set's rows (``(estimate
only)``), as for one column.

``--bytes`` also prints the peak bytes per grid vertex of one product-Laplace check (3,000 x
3,000 vertices) and per ``n x m`` entry of each transport plan (2,000 x 2,000 tuples), each in a
fresh process: the figures behind :data:`pufferfish.loss.product.BYTES_PER_VERTEX` and
:data:`pufferfish.transport.plans.PLAN_BYTES_PER_ENTRY`.
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
from pufferfish.cli.app import app
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


_BYTES = """
import resource, sys, numpy as np
from pufferfish.priors.joint import JointPrior, Metric
from pufferfish.transport.plans import bottleneck_plan, kantorovich_plan
from pufferfish.loss.product import product_laplace_loss
what, n = sys.argv[1], int(sys.argv[2])
gen = np.random.default_rng(0)
def prior(values):
    rows = np.column_stack([gen.integers(0, values, 40_000), gen.integers(0, values, 40_000)]).astype(float)
    return JointPrior.from_rows(rows)
if what == "check":
    p, q = prior(n), prior(n)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    product_laplace_loss(p, q, Metric.ones(2), 30.0)
    axes = [np.unique(np.r_[p.support[:, k], q.support[:, k]]) for k in (0, 1)]
    units = axes[0].size * axes[1].size
else:
    p, q = prior(200), prior(200)
    p = JointPrior(p.support[:n], p.pmf[:n] / p.pmf[:n].sum())
    q = JointPrior(q.support[:n], q.pmf[:n] / q.pmf[:n].sum())
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    (kantorovich_plan if what == "kantorovich" else bottleneck_plan)(p, q, Metric.ones(2))
    units = p.size * q.size
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024 / units)
"""


def bytes_per_unit() -> None:
    for what, n, unit in (("check", 3000, "grid vertex"), ("kantorovich", 2000, "plan entry"),
                          ("bottleneck", 2000, "plan entry")):  # fmt: skip
        done = subprocess.run(
            [sys.executable, "-c", _BYTES, what, str(n)], capture_output=True, text=True, check=True
        )
        print(f"{what}: {float(done.stdout):.0f} bytes per {unit}")


def main() -> None:
    print(machine())
    if "--bytes" in sys.argv[1:]:
        bytes_per_unit()
    with tempfile.TemporaryDirectory() as tmp:
        table = Path(tmp) / "large.csv"
        synthetic(table)
        cases = [
            ("adult fnlwgt,age (all, point estimate, units 1)",
             ["calibrate", "adult", "--secret", "sex", "--pair", "Male,Female", "--public", "fnlwgt,age",
              "--epsilon", "1", "--prior-set", "none", "--unit", "fnlwgt=1", "--unit", "age=1", "--json"]),
            ("adult fnlwgt,age (defaults: dkw set, units = ranges)",
             ["calibrate", "adult", "--secret", "sex", "--pair", "Male,Female", "--public", "fnlwgt,age",
              "--epsilon", "1", "--json"]),
            ("synthetic x,y (l1,optimal, point estimate)",
             ["calibrate", str(table), "--secret", "s", "--pair", "a,b", "--public", "x,y", "--epsilon", "1",
              "--mechanism", "l1,optimal", "--prior-set", "none", "--json"]),
            ("adult workclass,age (defaults: dkw set)",
             ["calibrate", "adult", "--secret", "sex", "--pair", "Male,Female", "--public", "workclass,age",
              "--epsilon", "1", "--json"]),
            ("adult workclass,occupation,age (defaults: dkw set)",
             ["calibrate", "adult", "--secret", "sex", "--pair", "Male,Female", "--public",
              "workclass,occupation,age", "--epsilon", "1", "--json"]),
        ]  # fmt: skip
        for name, args in cases:
            seconds, peak, out = run(args)
            payload = json.loads(out)
            rows = payload["results"]
            sizes = payload["tuples"]
            print(f"{name}: {seconds:.1f} s, peak {peak:.0f} MiB; tuples {sizes}")
            under_set = payload["prior_set"]["kind"] != "none"
            for r in rows:
                what = r.get("scale") if r.get("scale") is not None else r.get("reason", "")
                point = under_set and (r.get("prior_set") or {}).get("kind") == "none"
                print(f"  {r.get('mechanism')}{' (estimate only)' if point else ''}: {what}")


if __name__ == "__main__":
    main()
