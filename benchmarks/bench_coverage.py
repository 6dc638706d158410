"""Coverage of the prior sets when the true prior has mass on a value never sampled (issue 41):
the design of ``shared/repro/published/coverage_one_column.py`` (two secrets, one uniform on
0..6, the other with 0.8% of its mass at 100; 300 rows each; eps 1; the default 95% DKW band),
with and without ``--bounds 0,100``. Prints, for each, the fraction of samples whose true prior's
exact loss (at the calibrated scale) exceeds eps, the largest true loss, the median scale and the
time. The fast version is ``tests/test_domain.py::test_coverage_with_declared_bounds_fast``.

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
