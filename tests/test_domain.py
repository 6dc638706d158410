"""Issue 41, declared domains: a numeric column's bounds (pufferfish.tables.domain). Values are
clamped, the prior sets hold priors with mass anywhere in [lo, hi], and the coverage reproducer
(shared/repro/published/coverage_one_column.py, a fast version; the full one is
benchmarks/bench_coverage.py) keeps the true loss <= eps."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.special import logsumexp

from pufferfish import DataError
from pufferfish.calibration import Calibration
from pufferfish.pipeline.calibrate import calibrate_table
from pufferfish.pipeline.release import release
from pufferfish.tables.domain import check_bounds, domain_grid, snapping_margin

XS = np.array([*range(7), 100], dtype=float)
P_A = np.r_[np.full(7, 0.992 / 7), 0.008]  # a little mass on 100, rarely sampled
P_B = np.r_[np.full(7, 1 / 7), 0.0]


def laplace_loss(p: np.ndarray, q: np.ndarray, b: float, xs: np.ndarray) -> float:
    """The reproducer's exact loss of Laplace(b) between priors p and q on the points xs (the log
    density ratio is monotone between support points: its supremum is at one of them)."""
    k = -np.abs(xs[:, None] - xs[None, :]) / b
    with np.errstate(divide="ignore"):
        lp = logsumexp(k + np.log(p)[None, :], axis=1)
        lq = logsumexp(k + np.log(q)[None, :], axis=1)
    return float(np.max(np.abs(lp - lq)))


def _robust_scale(frame: pd.DataFrame, bounds) -> float:
    t = calibrate_table(frame, secret="s", public="x", pairs=["A,B"], epsilon=1.0, mechanisms=["optimal"],
                        bounds=bounds)  # fmt: skip
    return next(c.scale for c in t.comparison if isinstance(c, Calibration) and c.prior_set is not None)


@pytest.mark.slow
def test_coverage_with_declared_bounds_fast() -> None:
    # the reproducer's design, 20 samples of 300 rows per secret (seed 11): with --bounds 0,100 the
    # true prior is in the set and its true loss stays <= eps in every sample
    gen = np.random.default_rng(11)
    worst = 0.0
    for _ in range(20):
        n = 300
        frame = pd.DataFrame({"s": ["A"] * n + ["B"] * n,
                              "x": np.r_[gen.choice(XS, n, p=P_A), gen.choice(XS, n, p=P_B)]})  # fmt: skip
        worst = max(worst, laplace_loss(P_A, P_B, _robust_scale(frame, (0, 100)), XS))
    assert worst <= 1.0


def test_without_bounds_an_unseen_value_is_outside_the_set() -> None:
    # the defect the bounds mend: a sample without the value 100 gives a set without it, and the
    # true prior's loss exceeds eps at that scale
    frame = pd.DataFrame({"s": ["A"] * 300 + ["B"] * 300, "x": np.tile(np.arange(7.0), 100)[:600]})
    assert laplace_loss(P_A, P_B, _robust_scale(frame, None), XS) > 1.0
    assert laplace_loss(P_A, P_B, _robust_scale(frame, (0, 100)), XS) <= 1.0


@pytest.mark.slow
def test_a_prior_of_the_band_off_the_grid_meets_eps(tmp_path: Path) -> None:
    # the snapping bound: members of the DKW band with mass moved to points between the grid's
    # (moving mass m <= eta from u to v changes the CDF by m on [u, v) only) meet eps
    rng = np.random.default_rng(5)
    frame = pd.DataFrame({"s": rng.choice(["A", "B"], 600), "x": rng.integers(0, 20, 600).astype(float)})
    t = calibrate_table(frame, secret="s", public="x", pairs=["A,B"], epsilon=1.0, mechanisms=["optimal"],
                        bounds=(0, 50))  # fmt: skip
    robust = next(c for c in t.comparison if isinstance(c, Calibration) and c.prior_set is not None)
    assert t.domain_margins and robust.epsilon == pytest.approx(1.0 - t.domain_margins[0])
    sets = t.scenario.priors[0].sets
    assert sets is not None
    worst = 0.0
    for trial in range(40):
        mover, other = ("A", "B") if trial % 2 else ("B", "A")
        ps, qs = sets[mover], sets[other]
        p = np.r_[ps.center, 0.0]
        u = int(rng.choice(np.flatnonzero(p[:-1] > 0)))
        target = rng.uniform(0, 50) + 0.37 * 50 / 4096  # between grid points
        moved = min(ps.radius, p[u])
        p[u] -= moved
        p[-1] += moved
        xs = np.r_[ps.alphabet, target]
        q = np.r_[qs.center, 0.0]
        order = np.argsort(xs)
        worst = max(worst, laplace_loss(p[order], q[order], robust.scale, xs[order]))
    assert worst <= 1.0 + 1e-9


def test_values_outside_are_clamped_and_the_report_says_so(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"s": rng.choice(["A", "B"], 400), "x": rng.integers(-5, 30, 400).astype(float)})
    src = tmp_path / "t.csv"
    frame.to_csv(src, index=False)
    res = release(src, secret="s", public="x", pairs=["A,B"], epsilon=1.0, output=tmp_path / "o.csv",
                  bounds="0,25", rng=1, keep_order=True)  # fmt: skip
    domain = res.report["domain"]
    outside = int(((frame["x"] < 0) | (frame["x"] > 25)).sum())
    assert domain["bounds_from"] == "declared" and domain["clamped_rows"] == outside > 0
    assert domain["bounds"] == [0.0, 25.0] and "declared bounds [0, 25]" in domain["text"]
    got = pd.read_csv(tmp_path / "o.csv")["x"].to_numpy()
    noise = got - frame["x"].clip(0, 25).to_numpy()
    assert abs(np.mean(np.abs(noise)) - res.chosen.scale) < 0.15 * res.chosen.scale  # type: ignore[union-attr]
    assert res.calibration.inputs["bounds"] == [0.0, 25.0]
    point = release(src, secret="s", public="x", pairs=["A,B"], epsilon=1.0, output=tmp_path / "p.csv",
                    bounds="0,25", rng=1, prior_set="none", keep_order=True)  # fmt: skip
    assert point.report["domain"]["text"].endswith("no prior set: the guarantee is for the point estimate")


def test_bounds_are_checked_at_the_edge(tmp_path: Path) -> None:
    src = tmp_path / "t.csv"
    pd.DataFrame({"s": ["A", "B"] * 10, "x": range(20), "c": ["u", "v"] * 10, "y": range(20)}).to_csv(
        src, index=False
    )
    for bad in ("1", "2,1", "0,inf", "a,b"):
        with pytest.raises(ValueError, match="bounds must be"):
            check_bounds(bad)
    with pytest.raises(DataError, match="bounds declare a numeric column's domain; 'c' is categorical"):
        calibrate_table(src, secret="s", public="c", pairs=["A,B"], epsilon=1.0, bounds="0,1")
    with pytest.raises(ValueError, match=r"bounds declare the domain of the one numeric column .* 2 numeric"):
        calibrate_table(src, secret="s", public="x,c,y", pairs=["A,B"], epsilon=1.0, bounds="0,1")
    grid = domain_grid(0.0, 1.0)
    assert grid[0] == 0.0 and grid[-1] == 1.0 and grid.size == 4097
    assert snapping_margin(0.5, 0.0) == float("inf") and snapping_margin(0.0, 0.0) == 0.0
