"""Coverage of the prior sets when the true prior has mass on a value never sampled (issue 41).

One column: the design of ``shared/repro/published/coverage_one_column.py`` (two secrets, one
uniform on 0..6, the other with 0.8% of its mass at 100; 300 rows each; eps 1; the default 95% DKW
band), with and without ``--bounds 0,100``. Several columns: the "outlier" design of
``shared/repro/published/coverage_sim.py`` (a label of 4 and a number: two secrets uniform on the
28 tuples of 4 labels x 0..6, one with 0.8% of its mass at (a, 100); 300 rows each; eps 1; the
default set: the L1 ball on the tuples seen without bounds, the DKW band of the joint CDF in
lexicographic order on the declared domain with ``--bounds 0,100``). Prints, for each, the
fraction of samples whose true prior's exact loss (at the calibrated scale, by the exact formulas
below, independent of the library's checks) exceeds eps, the largest true loss, the median scale
and the time. The fast versions are ``tests/test_domain.py::test_coverage_with_declared_bounds_fast``
and ``tests/test_joint_bounds.py::test_coverage_of_two_columns_with_declared_bounds``.

Run: ``python benchmarks/bench_coverage.py [REPS]`` (default 100).
"""

from __future__ import annotations

import sys
import time

import numpy as np
import pandas as pd
from scipy.special import logsumexp

from pufferfish.calibration import Calibration
from pufferfish.pipeline.calibrate import calibrate_table

XS = np.array([*range(7), 100], dtype=float)
P_A = np.r_[np.full(7, 0.992 / 7), 0.008]
P_B = np.r_[np.full(7, 1 / 7), 0.0]


def laplace_loss(p: np.ndarray, q: np.ndarray, b: float) -> float:
    """Exact loss of Laplace(b) between p and q on XS (supremum at a support point)."""
    k = -np.abs(XS[:, None] - XS[None, :]) / b
    with np.errstate(divide="ignore"):
        return float(
            np.max(
                np.abs(logsumexp(k + np.log(p)[None, :], axis=1) - logsumexp(k + np.log(q)[None, :], axis=1))
            )
        )


LABELS = ["a", "b", "c", "d"]
GRID = np.array([(lab, x) for lab in range(4) for x in XS], dtype=float)  # (label code, x)
Q_A = np.where(GRID[:, 1] < 100, 0.992 / 28, 0.0)
Q_A[(GRID[:, 0] == 0) & (GRID[:, 1] == 100)] = 0.008
Q_B = np.where(GRID[:, 1] < 100, 1 / 28, 0.0)


def product_loss(p: np.ndarray, q: np.ndarray, b: float, units: tuple[float, float]) -> float:
    """Exact loss of the product channel (randomized response on the 4 labels with log ratio
    ``1 / (b w_c)``, Laplace(b w_x) on x) between p and q on GRID: the supremum over y_x is at a
    value of the support, every output label is enumerated."""
    a = 1.0 / (b * units[0])
    keep = np.exp(a) / (np.exp(a) + 3.0)
    rr = np.where(GRID[None, :, 0] == np.arange(4)[:, None], keep, (1.0 - keep) / 3.0)  # (y_c, x)
    lap = np.exp(-np.abs(XS[:, None] - GRID[None, :, 1]) / (b * units[1]))  # (y_x, x)
    dens = rr[:, None, :] * lap[None, :, :]  # (y_c, y_x, x)
    with np.errstate(divide="ignore"):
        return float(np.max(np.abs(np.log(dens @ p) - np.log(dens @ q))))


def several_columns(reps: int, n: int = 300) -> None:
    for bounds in (None, (0.0, 100.0)):
        gen = np.random.default_rng(11)  # the reproducer's seed
        losses, scales = [], []
        start = time.perf_counter()
        for _ in range(reps):
            rows = []
            for s, p in (("A", Q_A), ("B", Q_B)):
                idx = gen.choice(GRID.shape[0], n, p=p)
                rows += [(s, LABELS[int(GRID[i, 0])], GRID[i, 1]) for i in idx]
            frame = pd.DataFrame(rows, columns=["s", "c", "x"])
            t = calibrate_table(frame, secret="s", public="c,x", pairs=["A,B"], epsilon=1.0,
                                mechanisms=["optimal"], bounds=bounds)  # fmt: skip
            assert list(t.labels[0]) == LABELS, "every label is seen at 300 rows per secret"
            b = next(c.scale for c in t.comparison if isinstance(c, Calibration) and c.prior_set is not None)
            scales.append(b)
            losses.append(product_loss(Q_A, Q_B, b, (t.units[0], t.units[1])))
        seconds = time.perf_counter() - start
        above = sum(v > 1.0 for v in losses) / reps
        print(
            f"several columns (c, x), bounds={bounds}: {reps} samples of {n} rows per secret; "
            f"true loss > eps in {above:.2%}; max true loss {max(losses):.4g}; "
            f"median scale {np.median(scales):.4g}; {seconds:.1f} s"
        )


def main(reps: int, n: int = 300) -> None:
    for bounds in (None, (0.0, 100.0)):
        gen = np.random.default_rng(11)  # the reproducer's seed
        losses, scales = [], []
        start = time.perf_counter()
        for _ in range(reps):
            x = np.r_[gen.choice(XS, n, p=P_A), gen.choice(XS, n, p=P_B)]
            frame = pd.DataFrame({"s": ["A"] * n + ["B"] * n, "x": x})
            t = calibrate_table(frame, secret="s", public="x", pairs=["A,B"], epsilon=1.0,
                                mechanisms=["optimal"], bounds=bounds)  # fmt: skip
            b = next(c.scale for c in t.comparison if isinstance(c, Calibration) and c.prior_set is not None)
            scales.append(b)
            losses.append(laplace_loss(P_A, P_B, b))
        seconds = time.perf_counter() - start
        above = sum(v > 1.0 for v in losses) / reps
        print(
            f"bounds={bounds}: {reps} samples of {n} rows per secret; true loss > eps in {above:.2%}; "
            f"max true loss {max(losses):.4g}; median scale {np.median(scales):.4g}; {seconds:.1f} s"
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100)
    several_columns(int(sys.argv[1]) if len(sys.argv) > 1 else 100)
