"""Benchmark of the randomized mappings (issue 16): LP time at k = 10, 100, 500 and the secure
categorical sampler's rows/s.

Priors: two Dirichlet(1) pmfs on k labels (one pair), mu their average; eps 0.5; accuracy
utility (``--shares``: the ``shares`` utility, accuracy keeping each label's share, the default of
a release of labels since issue 32). ``--sets`` adds the DKW prior sets (radius 0.02, written into
the LP exactly). Prints
one line per case: k, seconds of the whole calibration (LP, rounding, exact check), the LP size,
accuracy; then the sampler on 10^6 and 10^7 rows (secure, OS randomness) beside NumPy's
``Generator.choice`` per row group for scale.

Run: ``python benchmarks/bench_mapping.py [--sets] [--shares] [k ...]``.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from pufferfish import AdversaryPrior, DiscretePrior, Scenario
from pufferfish.calibration import Utility, calibrate_mapping
from pufferfish.calibration.mapping import dyadic_weights
from pufferfish.noise.samplers import sample_mapping
from pufferfish.priors.sets import PriorSet


def scenario(k: int, sets: bool, seed: int = 0, kind: str = "accuracy") -> tuple[Scenario, Utility]:
    rng = np.random.default_rng(seed)
    a = np.arange(k, dtype=float)
    p, q = rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))
    sc = Scenario.single(DiscretePrior(a, p), DiscretePrior(a, q))
    if sets:
        rho = sc.priors[0]
        ps = {s: PriorSet("dkw", a, pr.pmf, 0.02) for s, pr in rho.conditionals.items()}  # type: ignore[union-attr]
        sc = Scenario(sc.pairs, (AdversaryPrior(rho.name, rho.conditionals, ps),))
    return sc, Utility(kind, (p + q) / 2, a)


def main(argv: list[str]) -> None:
    sets = "--sets" in argv
    kind = "shares" if "--shares" in argv else "accuracy"
    ks = [int(x) for x in argv if x.isdigit()] or [10, 100, 500]
    print(f"optimal-mapping ({kind}), eps 0.5, {'DKW sets radius 0.02' if sets else 'point priors'}")
    for k in ks:
        sc, util = scenario(k, sets, kind=kind)
        t = time.perf_counter()
        res = calibrate_mapping(sc, 0.5, utility=util)
        dt = time.perf_counter() - t
        print(
            f"k={k:4d}  {dt:8.2f} s  LP {res.solver['variables']:8d} variables "
            f"{res.solver['constraints']:8d} rows  "
            f"accuracy {res.expected_accuracy:.4f}  loss {res.checked_loss:.6f}  mix {res.safety_step:g}"
        )
    rng = np.random.default_rng(1)
    w = dyadic_weights(rng.dirichlet(np.ones(8), size=8))
    for n in (10**6, 10**7):
        x = rng.integers(0, 8, size=n)
        t = time.perf_counter()
        sample_mapping(x, w)
        secure = n / (time.perf_counter() - t)
        t = time.perf_counter()
        sample_mapping(x, w, rng=rng)
        seeded = n / (time.perf_counter() - t)
        print(f"sampler n={n:.0e}: secure {secure:,.0f} rows/s; seeded (insecure) {seeded:,.0f} rows/s")


if __name__ == "__main__":
    main(sys.argv[1:])
