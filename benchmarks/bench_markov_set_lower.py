"""How far the listed-chain optimum is below what the whole confidence set needs: a lower bound of the
set's optimum from a chain of the set, on the shipped ``activity`` and ``mvad`` logs.

Run: ``python benchmarks/bench_markov_set_lower.py [--evaluations N]``.

For each log (``epsilon = 1``, count of the target state, the default 95% ``l1-rows`` set):

1. the optimum over the listed chains (``markov calibrate --mechanism optimal``): NOT a guarantee for
   the set;
2. a worst-chain search (:func:`pufferfish.markov.attack.attack_scale`, ``N`` chains, seed 1) at 1.3x
   that optimum, the issue's goal for a certified scale;
3. the chain it found, checked again alone (:func:`pufferfish.markov.audit.audit_scale`), and that
   chain's own optimum (the library's ``optimal`` search on its count priors): the set's certified
   optimum is at least this (the chain is a member of the set). ``tests/test_markov_set.py``
   checks a chain found here with a recursion written independently of the library.

A chain above epsilon at 1.3x the listed optimum shows that no scale certified over the set is
within 1.3x of it.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import numpy as np
from _timing import machine

from pufferfish.calibration.registry import compare
from pufferfish.markov.attack import attack_scale
from pufferfish.markov.audit import audit_scale
from pufferfish.markov.chain import MarkovChain
from pufferfish.markov.counts import CountModel, count_scenario
from pufferfish.markov.release import SeriesRequest, calibrate_series
from pufferfish.markov.rowballs import in_row_balls

LOGS = {
    "activity": ("day", "slot", "activity", "work"),
    "mvad": ("id", "month", "activity", "joblessness"),
}


def _own_optimum(model: CountModel, chain: np.ndarray, epsilon: float, start: float) -> tuple[float, float]:
    """The chain's exact loss at ``start`` (:func:`~pufferfish.markov.audit.audit_scale`, SPEC sec
    2.1) and its own optimum: the library's ``optimal`` search over its count priors, the smallest
    scale passing the exact check."""
    first = model.chains[0]
    one = replace(model, chains=(MarkovChain(chain, "stationary", first.states),), row_balls=None)
    (optimum,) = compare(count_scenario(one), epsilon, ["optimal"])
    return audit_scale(one, start).loss, float(optimum.scale)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evaluations", type=int, default=200)
    opts = parser.parse_args()
    header = "log        listed opt  x1.3 scale  found loss  recheck  chain's own opt  ratio  seconds"
    print(machine())
    print(header)
    for name, (id_column, time_column, state_column, target) in LOGS.items():
        began = time.monotonic()
        request = SeriesRequest(
            name, id_column, time_column, state_column, target, 1.0, length="longest", mechanisms=("optimal",)
        )
        cal = calibrate_series(request)
        length = max(cal.results)
        (listed,) = [r.scale for r in cal.results[length] if getattr(r, "mechanism", "") == "optimal"]
        balls = cal.row_balls
        assert balls is not None
        model = CountModel(cal.chains, length, target, "count", row_balls=balls)
        goal = 1.3 * listed
        found = attack_scale(model, goal, evaluations=opts.evaluations, rng=1)
        assert in_row_balls(balls, found.transition)
        recheck, own = _own_optimum(model, found.transition, 1.0, goal)
        print(
            f"{name:<10} {listed:>10.4f} {goal:>11.4f} {found.loss:>11.4f} {recheck:>8.4f} {own:>16.4f} "
            f"{own / listed:>6.3f} {time.monotonic() - began:>8.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
