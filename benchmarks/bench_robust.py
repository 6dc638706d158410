"""Time of the robust optimal scale (issue 15): the worst case over DKW and L1 prior sets.

Run: ``python benchmarks/bench_robust.py [k ...]``. For k = 10^3, 10^5 and 10^6 alphabet points (two random
Dirichlet(1) priors on 0..k-1, as from n = 10 k rows, radius at confidence 0.95 with m = 2), and
for the shipped Adult pair of the README, prints the wall time of one worst-case loss evaluation
(median of 3), of the whole robust ``optimal`` calibration at eps = 1 (brentq on the log scale,
then the closest passing scale), the number of loss evaluations it made, and the ratios of its
time and of its scale to those of the point-estimate ``optimal`` at the same k (3 interleaved rounds;
the time ratio of each round, min / median / max). Issue 45's goal: the default (DKW) set within
4x of the point estimate at 10^6 points.
"""

from __future__ import annotations

import statistics
import sys
import time

import numpy as np
from _timing import machine, median_seconds

from pufferfish import AdversaryPrior, DiscretePrior, Scenario
from pufferfish.calibration import calibrate
from pufferfish.loss.robust import worst_case_loss
from pufferfish.priors.sets import PriorSet, dkw_radius, l1_radius
from pufferfish.tables import estimate_priors
from pufferfish.tables.estimate import with_prior_sets


def _scenario(k: int, kind: str, seed: int = 0) -> Scenario:
    rng = np.random.default_rng(seed)
    a = np.arange(k, dtype=np.float64)
    n = 10 * k
    conds, sets = {}, {}
    for s in ("a", "b"):
        p = rng.dirichlet(np.ones(k))
        conds[s] = DiscretePrior(a, p)
        if kind != "none":
            r = dkw_radius(n, 0.95, 2) if kind == "dkw" else l1_radius(n, k, 0.95, 2)
            sets[s] = PriorSet(kind, a, p, r, 0.95)
    rho = AdversaryPrior("empirical", conds, sets or None)
    return Scenario([("a", "b")], [rho])


def _calibrate(scenario: Scenario) -> tuple[float, float, int]:
    """(seconds, scale, loss evaluations) of the optimal calibration at eps = 1."""
    from pufferfish.calibration import check as check_module

    calls = 0
    original = check_module.worst_case_loss

    def counted(*args: object, **kw: object) -> object:
        nonlocal calls
        calls += 1
        return original(*args, **kw)  # type: ignore[arg-type]

    check_module.worst_case_loss = counted  # type: ignore[assignment]
    try:
        t0 = time.perf_counter()
        cal = calibrate(scenario, 1.0, "optimal")
        return time.perf_counter() - t0, cal.scale, calls
    finally:
        check_module.worst_case_loss = original


def _line(case: str, one: str, seconds: str, evals: str, scale: float, ratio: str, t_ratio: str = "") -> None:
    print(f"{case:<34} {one:>12} {seconds:>12} {evals:>6} {scale:>10.4g} {ratio:>8} {t_ratio:>34}")


def main() -> None:
    ks = [int(float(v)) for v in sys.argv[1:]] or [1_000, 100_000, 1_000_000]
    rounds = 3
    print(machine())
    print(f"rounds: {rounds}, interleaved (point, dkw, l1); times are medians, ratios min / median / max")
    print(
        f"{'case':<34} {'one loss (s)':>12} {'optimal (s)':>12} {'evals':>6} {'scale':>10} {'/ point':>8} "
        f"{'time / point (min / median / max)':>34}"
    )
    for k in ks:
        scenarios = {kind: _scenario(k, kind) for kind in ("none", "dkw", "l1")}
        runs: dict[str, list[tuple[float, float, int]]] = {kind: [] for kind in scenarios}
        for _ in range(rounds):
            for kind, sc in scenarios.items():
                runs[kind].append(_calibrate(sc))
        t_point = [r[0] for r in runs["none"]]
        b_point = runs["none"][0][1]
        _line(f"k = {k}, none (point estimate)", "", f"{statistics.median(t_point):.2f}", "", b_point, "")
        for kind in ("dkw", "l1"):
            sets = scenarios[kind].priors[0].sets
            assert sets is not None
            one = median_seconds(lambda sets=sets: worst_case_loss(sets["a"], sets["b"], 5.0), repeats=3)
            times = [r[0] for r in runs[kind]]
            ratios = sorted(t / tp for t, tp in zip(times, t_point, strict=True))
            _line(
                f"k = {k}, {kind}",
                f"{one:.3f}",
                f"{statistics.median(times):.2f}",
                str(runs[kind][0][2]),
                runs[kind][0][1],
                f"{runs[kind][0][1] / b_point:.3f}",
                f"{ratios[0]:.1f} / {statistics.median(ratios):.1f} / {ratios[-1]:.1f}",
            )
    est = estimate_priors(
        "adult", secret="marital-status", public="workclass", pairs=[("Married-civ-spouse", "Never-married")]
    )
    t_point, b_point, _ = _calibrate(est.scenario)
    for kind in ("dkw", "l1"):
        t, b, evals = _calibrate(with_prior_sets(est, kind).scenario)
        _line(
            f"Adult workclass (k = 8), {kind}",
            "",
            f"{t:.3f}",
            str(evals),
            b,
            f"{b / b_point:.3f}",
            f"{t / t_point:.1f}",
        )


if __name__ == "__main__":
    main()
