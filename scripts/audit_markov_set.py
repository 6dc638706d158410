"""Audit of issue 55: a release over the 95% set of row balls against brute force on chains inside
the set. ``python scripts/audit_markov_set.py [--tables N] [--seed S]``.

For each random table (2 or 3 states, T = 4..8, 40..400 ids, eps 0.5, 1 or 2) the default
``release_series`` scale (the smallest certified over the set) is read, and chains drawn inside
the set (every row moved at once: the vertices of the product of balls for two states, vertices,
interior points and mass moved to unseen transitions, :func:`tests.test_markov_set.members`) are
checked by the independent brute force of ``tests/test_markov_soundness.py`` (every ``k^T``
sequence). Also at the listed-chain optimum (``optimal``), to show what the list misses. Prints
one line per table and the totals; nothing of the library is used for the truth.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.test_markov_set import _walks, members, radii, stationary
from tests.test_markov_soundness import brute_priors, true_loss

from pufferfish.markov.release import SeriesRequest, calibrate_series, release_series


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=40)
    parser.add_argument("--seed", type=int, default=55)
    opts = parser.parse_args()
    rng = np.random.default_rng(opts.seed)
    checked = above_released = above_listed = 0
    worst_released = 0.0
    used: Counter[str] = Counter()
    ratios = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in range(opts.tables):
            k = 2 if n % 3 else 3
            length = int(rng.integers(4, 9 if k == 2 else 6))
            truth = rng.dirichlet(np.ones(k) * float(rng.choice([0.5, 1.0, 3.0])), size=k)
            df = _walks(rng, truth, int(rng.integers(40, 400)), length)
            eps = float(rng.choice([0.5, 1.0, 2.0]))
            target = "b"
            request = SeriesRequest(df, "person", "time", "state", target, eps)
            rel = release_series(request, Path(tmp) / f"r{n}.csv", rng=n)
            scale = rel.scales[length][0]
            used[rel.mechanism] += 1
            listed = calibrate_series(SeriesRequest(df, "person", "time", "state", target, eps,
                                                    length="longest", mechanisms=("optimal",)))  # fmt: skip
            b_listed = listed.results[length][0].scale
            center, r = rel.calibration.chain.transition, rel.calibration.row_balls.radii
            assert np.allclose(r, radii(_counts(df, rel.calibration.series.states)))
            t_index = list(rel.calibration.series.states).index(target)
            loss_r = loss_l = 0.0
            for m in members(center, r, rng, 24):
                pri = brute_priors(m, stationary(m), length, t_index)
                lr = true_loss([pri], length, scale, k)
                ll = true_loss([pri], length, b_listed, k) if b_listed > 0 else np.inf
                checked += 1
                above_released += lr > eps * (1 + 1e-9)
                above_listed += ll > eps * (1 + 1e-9)
                loss_r, loss_l = max(loss_r, lr), max(loss_l, ll)
            worst_released = max(worst_released, loss_r / eps)
            ratios.append(scale / b_listed if b_listed > 0 else np.inf)
            print(f"table {n:>2}: k {k} T {length} eps {eps:g}: released {rel.mechanism} {scale:.4f} "
                  f"(worst {loss_r:.4f}), listed optimum {b_listed:.4f} (worst {loss_l:.4f})")  # fmt: skip
    print(f"tables {opts.tables}, chains inside the sets checked by brute force {checked}")
    print(f"above eps at the released scale: {above_released} (largest loss / eps {worst_released:.4f})")
    print(f"above eps at the listed-chain optimum: {above_listed}")
    print(f"mechanisms released: {dict(used)}; released / listed scale: median {np.median(ratios):.3f}, "
          f"max {np.max(ratios):.3f}")  # fmt: skip


def _counts(df, states) -> np.ndarray:
    k = len(states)
    counts = np.zeros((k, k))
    for _, g in df.sort_values(["person", "time"]).groupby("person"):
        s = [list(states).index(x) for x in g["state"]]
        for u, v in itertools.pairwise(s):
            counts[u, v] += 1
    return counts


if __name__ == "__main__":
    main()
