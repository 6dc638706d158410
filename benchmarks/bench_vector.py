"""Timings of the d-dimensional building blocks of issue 17: the W1 plan (POT's
exact emd, then the optimal plan of smallest largest distance on its zero-reduced-cost pairs),
the W-infinity plan (bisection and maximum flow) and the exact product-Laplace
check at the product grid's vertices, at 100, 1,000 and 5,000 distinct tuples per secret, and
on Adult's (age, hours-per-week) given sex (Male, Female).

Run: ``python benchmarks/bench_vector.py [N ...]`` (default 100 1000 5000). Synthetic priors:
two integer columns, ``N`` distinct tuples per secret drawn from 0..199 x 0..99 with random
counts, units (1, 1). Each line: seconds of one call (wall clock), the plan's largest distance
and the check's loss at scale ``max d / eps``, eps = 1.
"""

from __future__ import annotations

import sys
import time

import numpy as np
import pandas as pd
from _timing import machine

from pufferfish.loss.product import product_laplace_loss
from pufferfish.priors.joint import JointPrior, Metric
from pufferfish.tables.source import dataset_path
from pufferfish.transport.plans import bottleneck_plan, kantorovich_plan


def synthetic(n: int, seed: int, shift: int) -> JointPrior:
    gen = np.random.default_rng(seed)
    cells = gen.choice(200 * 100, size=n, replace=False)
    support = np.stack([cells // 100 + shift, cells % 100], axis=1).astype(float)
    counts = gen.integers(1, 30, size=n)
    return JointPrior(support, counts / counts.sum(), counts)


def timed(label: str, p_i: JointPrior, p_j: JointPrior, metric: Metric) -> None:
    t0 = time.perf_counter()
    k_plan = kantorovich_plan(p_i, p_j, metric)
    t1 = time.perf_counter()
    b_plan = bottleneck_plan(p_i, p_j, metric)
    t2 = time.perf_counter()
    k_loss = product_laplace_loss(p_i, p_j, metric, k_plan.max_distance)
    t3 = time.perf_counter()
    b_loss = product_laplace_loss(p_i, p_j, metric, b_plan.max_distance)
    print(
        f"{label}: tuples {p_i.size:,} / {p_j.size:,}, grid vertices {k_loss.vertices:,}\n"
        f"  W1 plan (emd + face) {t1 - t0:8.2f} s, max d {k_plan.max_distance:.6g}, W1 {k_plan.cost():.6g}\n"
        f"  W-inf plan (flow)    {t2 - t1:8.2f} s, max d {b_plan.max_distance:.6g} "
        f"(exact masses: {b_plan.exact_masses})\n"
        f"  exact check          {t3 - t2:8.2f} s; loss at eps 1: {k_loss.loss:.6f} (W1 plan), "
        f"{b_loss.loss:.6f} (W-inf plan)"
    )


def adult() -> None:
    df = pd.read_csv(dataset_path("adult"), usecols=["age", "hours-per-week", "sex"], dtype={"sex": str})
    df = df.dropna()
    cols = ["age", "hours-per-week"]
    priors = {s: JointPrior.from_rows(g[cols].to_numpy(float)) for s, g in df.groupby("sex")}
    timed("Adult (age, hours-per-week) | sex", priors["Male"], priors["Female"], Metric.ones(2))


def main() -> None:
    sizes = [int(float(a)) for a in sys.argv[1:]] or [100, 1000, 5000]
    print(machine())
    for n in sizes:
        timed(f"synthetic N = {n:,}", synthetic(n, 1, 0), synthetic(n, 2, 3), Metric.ones(2))
    adult()


if __name__ == "__main__":
    main()
