"""Calibration time versus support size, and the O(n) exact loss against the O(n^2) brute force.

Run: ``python benchmarks/bench_calibration.py [--max-n N]``. Prints

1. for the Adult workclass task, the time of each calibrator at eps = 0.5;
2. for two random priors (Dirichlet(1) on the integers 0..n-1, seed 0) at n = 10^3 .. 10^6
   (up to ``--max-n``, default 10^6): the median time of one exact-loss evaluation (at scale
   n / 10), of the Kantorovich, relaxed and optimal calibrations at eps = 1, and the growth
   exponent ``log(t2 / t1) / log(n2 / n1)`` between consecutive sizes (1 = linear);
3. the O(n) exact loss against the O(n^2) brute force (``logsumexp`` over every support point
   for every released value, in blocks of rows) at n = 10^3 .. 2*10^4: times, their ratio, and
   the largest difference of the losses.

Medians of 3 runs (1 run of the brute force at the largest n).
"""

from __future__ import annotations

import math
import sys
import time

import numpy as np
from _timing import machine, median_seconds
from scipy.special import logsumexp

from pufferfish import MECHANISMS, DiscretePrior, Scenario, calibrate, estimate_priors, privacy_loss


def random_pair(n: int, seed: int = 0) -> Scenario:
    """Two Dirichlet(1) priors on 0..n-1."""
    rng = np.random.default_rng(seed)
    support = np.arange(n, dtype=float)
    return Scenario.single(
        DiscretePrior(support, rng.dirichlet(np.ones(n))), DiscretePrior(support, rng.dirichlet(np.ones(n)))
    )


def brute_force_loss(scenario: Scenario, scale: float, block: int = 2000) -> float:
    """``max_y |log P(y|s_i) - log P(y|s_j)|`` on the support by the O(n^2) sum, in row blocks."""
    _, _, p, q = next(iter(scenario.iter_pairs()))
    ys = p.support
    worst = 0.0
    with np.errstate(divide="ignore"):
        lp, lq = np.log(p.pmf), np.log(q.pmf)
    for start in range(0, ys.size, block):
        dist = np.abs(ys[start : start + block, None] - p.support[None, :]) / scale
        diff = logsumexp(lp[None, :] - dist, axis=1) - logsumexp(lq[None, :] - dist, axis=1)
        worst = max(worst, float(np.abs(diff).max()))
    return worst


def main() -> None:
    max_n = 1_000_000
    if "--max-n" in sys.argv:
        max_n = int(float(sys.argv[sys.argv.index("--max-n") + 1]))
    print(machine())
    t0 = time.perf_counter()
    est = estimate_priors(
        "adult", secret="marital-status", public="workclass", pairs=[("Married-civ-spouse", "Never-married")]
    )
    print(f"adult: prior estimate from 48,842 rows: {time.perf_counter() - t0:.3f} s")
    for m in MECHANISMS:
        s = median_seconds(lambda m=m: calibrate(est.scenario, 0.5, m), 3)
        print(f"adult: {m:<12} eps=0.5: {s * 1e3:8.2f} ms")

    print("\nrandom priors on n points, eps = 1 (median of 3; growth = log(t2/t1)/log(n2/n1))")
    header = ["n", "loss eval", "kantorovich", "relaxed", "optimal", "optimal scale", "evaluations"]
    print(" | ".join(f"{h:>13}" for h in header))
    previous: tuple[int, list[float]] | None = None
    for n in (10**3, 10**4, 10**5, 10**6):
        if n > max_n:
            break
        sc = random_pair(n)
        times = [median_seconds(lambda sc=sc, n=n: privacy_loss(sc, n / 10), 3)]
        for m in ("kantorovich", "relaxed", "optimal"):
            times.append(median_seconds(lambda sc=sc, m=m: calibrate(sc, 1.0, m), 3))
        opt = calibrate(sc, 1.0, "optimal")
        assert opt.root is not None
        cells = [f"{n:>13,}"] + [f"{t:>11.4f} s" for t in times]
        cells += [f"{opt.scale:>13.6g}", f"{opt.root.function_calls:>13}"]
        print(" | ".join(cells))
        if previous is not None:
            n0, t0s = previous
            growth = [math.log(t / t_prev) / math.log(n / n0) for t, t_prev in zip(times, t0s, strict=True)]
            print(" | ".join([f"{'growth':>13}"] + [f"{g:>13.2f}" for g in growth]))
        previous = (n, times)

    print("\nexact loss: O(n) scan vs O(n^2) brute force (scale n / 10)")
    for n in (1_000, 5_000, 20_000):
        if n > max_n:
            break
        sc = random_pair(n, seed=1)
        fast = median_seconds(lambda sc=sc, n=n: privacy_loss(sc, n / 10), 3)
        slow = median_seconds(lambda sc=sc, n=n: brute_force_loss(sc, n / 10), 3 if n < 20_000 else 1)
        gap = abs(privacy_loss(sc, n / 10).loss - brute_force_loss(sc, n / 10))
        print(
            f"n = {n:>6,}: O(n) {fast * 1e3:9.2f} ms, O(n^2) {slow * 1e3:10.1f} ms, "
            f"ratio {slow / fast:8.0f}x, |loss difference| {gap:.1e}"
        )


if __name__ == "__main__":
    main()
