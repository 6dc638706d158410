"""Time of the exact loss and of each calibrator.

Run: ``python benchmarks/bench_calibration.py``. Prints, for the Adult workclass task and for
random priors on n = 10^2 .. 10^5 support points, the median of 3 runs.
"""

from __future__ import annotations

import time

import numpy as np
from _timing import machine, median_seconds

from pufferfish import MECHANISMS, DiscretePrior, Scenario, calibrate, estimate_priors, privacy_loss


def main() -> None:
    print(machine())
    t0 = time.perf_counter()
    est = estimate_priors(
        "adult", secret="marital-status", public="workclass", pairs=[("Married-civ-spouse", "Never-married")]
    )
    print(f"adult: prior estimate from 48,842 rows: {time.perf_counter() - t0:.3f} s")
    for m in MECHANISMS:
        s = median_seconds(lambda m=m: calibrate(est.scenario, 0.5, m), 3)
        print(f"adult: {m:<12} eps=0.5: {s * 1e3:8.2f} ms")
    rng = np.random.default_rng(0)
    for n in (100, 1_000, 10_000, 100_000):
        support = np.arange(n, dtype=float)
        p = DiscretePrior(support, rng.dirichlet(np.ones(n)))
        q = DiscretePrior(support, rng.dirichlet(np.ones(n)))
        sc = Scenario.single(p, q)
        loss = median_seconds(lambda sc=sc, n=n: privacy_loss(sc, n / 10), 3)
        row = [f"n={n:>7}: exact loss {loss * 1e3:9.2f} ms"]
        for m in ("kantorovich", "relaxed", "optimal"):
            row.append(f"{m} {median_seconds(lambda sc=sc, m=m: calibrate(sc, 1.0, m), 1):8.3f} s")
        print(", ".join(row))


if __name__ == "__main__":
    main()
