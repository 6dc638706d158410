"""End-to-end timings of every mechanism on joint priors (issue 17): one registry call
``pufferfish.calibration.calibrate(scenario, 0.5, mechanism)`` per mechanism, with the plan cache
cleared before each, at 100, 1,000 and 5,000 distinct tuples per secret.

Run: ``python benchmarks/bench_joint_mechanisms.py [N ...]`` (default 100 1000 5000). Priors as in
``bench_vector.py``: two integer columns, ``N`` distinct tuples per secret drawn from
0..199 x 0..99 with random counts (the second secret's first column shifted by 3), units (1, 1),
eps = 0.5. Each line: wall-clock seconds of one call (including the plans it needs), the scale,
and the exact loss for the Laplace mechanisms (the eps-MI scale has no numerical check in several
dimensions: "not checked"). Gaussian noise on several columns is refused (issue 31: no exact
check on the joint alphabet), so the Gaussian mechanisms are not timed.
"""

from __future__ import annotations

import sys
import time

from _timing import machine
from bench_vector import synthetic

from pufferfish import Scenario
from pufferfish.calibration import calibrate
from pufferfish.calibration.joint import joint_plan
from pufferfish.priors.joint import Metric

#: Target epsilon.
EPSILON = 0.5

#: (mechanism, delta) in the order printed.
MECHANISMS = (
    ("l1", 0.0),
    ("kantorovich", 0.0),
    ("wasserstein-inf", 0.0),
    ("relaxed", 0.0),
    ("optimal", 0.0),
    ("mi-laplace", 0.0),
)


def run(n: int) -> None:
    scenario = Scenario.single(synthetic(n, 1, 0), synthetic(n, 2, 3), metric=Metric.ones(2))
    print(f"synthetic N = {n:,} tuples per secret, eps {EPSILON}")
    for name, delta in MECHANISMS:
        joint_plan.cache_clear()
        t0 = time.perf_counter()
        c = calibrate(scenario, EPSILON, name, delta=delta)
        seconds = time.perf_counter() - t0
        checked = f"loss {c.checked_loss:.6f}" if c.checked_loss is not None else "not checked"
        print(f"  {name:22s} {seconds:8.2f} s  {c.noise:8s} scale {c.scale:10.6g}  {checked}")


def main() -> None:
    sizes = [int(float(a)) for a in sys.argv[1:]] or [100, 1000, 5000]
    print(machine())
    for n in sizes:
        run(n)


if __name__ == "__main__":
    main()
