"""Dataset-level statistics of the UCI Adult table (issue 58): the exact distribution of a statistic
of n rows at a share, and the optimal Laplace scale, against n.

Run: ``python benchmarks/bench_dataset.py [--max-sum-rows N]`` (default 5000).

For the property ``income=>50K`` at shares 0.45 and 0.55: ``count`` (a binomial, any n) at n = 100,
1,000, 48,842 (the table) and 100,000; ``mean:age`` (74 values a row: an n-fold log-space
convolution, :func:`pufferfish.multiuser.convolution.sum_distribution`) at n = 100, 1,000 and
``--max-sum-rows``, and at n = 48,842 and 100,000 where its exact distribution is refused. Each
line: the statistic's points, its stated log-probability error bound, the seconds to build both
priors, the optimal Laplace scale at eps = 1 and the seconds of that search (brackets, exact
checks), ``row-composition``'s scale (:mod:`pufferfish.dataset.composition`: no exact
distribution needed) and its seconds, ``wasserstein-coupling``'s and group DP's scales.
"""

from __future__ import annotations

import argparse
import math
import time

from _timing import machine


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-sum-rows", type=int, default=5000)
    opts = parser.parse_args()
    print(machine())
    from pufferfish.calibration import compare
    from pufferfish.dataset import (
        PropertyModel,
        PropertySpec,
        parse_statistics,
        property_scenario,
        read_property_table,
    )
    from pufferfish.dataset.composition import composition_scales
    from pufferfish.dataset.coupling import vector_scale
    from pufferfish.dataset.statistic import StatisticTooLarge

    prop, statistics = PropertySpec.parse("income=>50K"), parse_statistics("count,mean:age")
    table = read_property_table("adult", prop, statistics)
    print("property income=>50K, shares 0.45 vs 0.55, eps = 1, Laplace")
    print(f"{'query':<10} {'n':>7} {'points':>9} {'log error':>10} {'priors s':>9} {'optimal':>10} "
          f"{'search s':>9} {'row-comp.':>10} {'s':>5} {'coupling':>9} {'group DP':>9}")  # fmt: skip
    cases = [(0, n) for n in (100, 1000, 48_842, 100_000)]
    cases += [(1, n) for n in (100, 1000, opts.max_sum_rows, 48_842, 100_000)]
    for k, n in cases:
        model = PropertyModel(table, (0.45, 0.55), n)
        t0 = time.perf_counter()
        try:
            scenario = property_scenario(model, k)
        except StatisticTooLarge:
            exact = f"{'-':>9} {'-':>10} {'-':>9} {'-':>10} {'-':>9}"
        else:
            t1 = time.perf_counter()
            res = compare(scenario, [1.0], ["optimal"])
            t2 = time.perf_counter()
            prior = scenario.priors[0].conditionals["share=0.45"]
            exact = (
                f"{prior.support.size:>9,} {prior.log_error:>10.1e} {t1 - t0:>9.2f} "
                f"{getattr(res[0], 'scale', math.nan):>10.5g} {t2 - t1:>9.2f}"
            )
        t3 = time.perf_counter()
        mine = composition_scales(model, 1.0, [k], [1.0]).scales[0]
        t4 = time.perf_counter()
        coupling = vector_scale(model, 1.0, [k], [1.0]).scales[0]
        print(
            f"{table.values[k].statistic.text:<10} {n:>7} {exact} {mine:>10.5g} {t4 - t3:>5.2f} "
            f"{coupling:>9.5g} {model.group_dp_sensitivity(k):>9.5g}"
        )


if __name__ == "__main__":
    main()
