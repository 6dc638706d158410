"""A column released as it is inside the product check (Metric.identity, groundwork for a checked
--keep, issue 41): the exact loss against a brute-force sum over the released values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pufferfish.loss.product import product_laplace_loss
from pufferfish.priors.joint import JointPrior, Metric


def _brute(pi: dict, pj: dict, b: float, w: float, m: int) -> float:
    """max over kept labels e and a fine grid of y of |log P_i(y, e) - log P_j(y, e)|, where
    P_s(y, e) = sum_x p_s(x, e) Laplace(y - x; b w); outputs neither prior can give left out."""
    ys = np.linspace(-30.0, 40.0, 7001)
    worst = 0.0
    for e in range(m):
        dens = []
        for p in (pi, pj):
            f = np.zeros_like(ys)
            for (x, label), mass in p.items():
                if label == e:
                    f += mass * np.exp(-np.abs(ys - x) / (b * w)) / (2 * b * w)
            dens.append(f)
        if not dens[0].any() and not dens[1].any():
            continue
        if not dens[0].any() or not dens[1].any():
            return math.inf
        worst = max(worst, float(np.max(np.abs(np.log(dens[0]) - np.log(dens[1])))))
    return worst


@pytest.mark.parametrize("seed", range(10))
def test_identity_axis_matches_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    m = 3
    priors = []
    for _ in range(2):
        points = {(float(rng.integers(0, 6)), int(rng.integers(0, m))) for _ in range(6)}
        mass = rng.dirichlet(np.ones(len(points)))
        priors.append(dict(zip(sorted(points), mass, strict=True)))
    metric = Metric((2.0, 1.0), (0, m), (False, True))
    joint = [JointPrior.from_rows(np.array(list(p)), np.array(list(p.values()))) for p in priors]
    b = float(rng.uniform(0.5, 3.0))
    got = product_laplace_loss(joint[0], joint[1], metric, b)
    want = _brute(priors[0], priors[1], b, 2.0, m)
    if math.isinf(want):
        assert math.isinf(got.loss)
    else:
        assert got.loss == pytest.approx(want, rel=1e-9, abs=1e-9)


def test_identity_is_for_categorical_columns_and_infinitely_far() -> None:
    with pytest.raises(ValueError, match="identity must mark 2 columns, categorical ones only"):
        Metric((1.0, 1.0), (0, 3), (True, False))
    metric = Metric((1.0, 1.0), (0, 3), (False, True))
    d = metric.distances(np.array([[0.0, 1.0]]), np.array([[2.0, 1.0], [0.0, 2.0]]))
    assert d.tolist() == [[2.0, math.inf]]
    assert metric.with_units((3.0, 1.0)).identity == (False, True)


def _lp_extreme(center: np.ndarray, kern: np.ndarray, r: float, up: bool) -> float:
    """max (up) or min of <P, K> over P >= 0, sum P = 1, ||P - center||_1 <= r, by HiGHS:
    variables P and slacks u >= |P - center|."""
    from scipy.optimize import linprog

    k = center.size
    c = np.r_[(-kern if up else kern), np.zeros(k)]
    eye = np.eye(k)
    a_ub = np.block([[eye, -eye], [-eye, -eye], [np.zeros((1, k)), np.ones((1, k))]])
    b_ub = np.r_[center, -center, r]
    a_eq = np.r_[np.ones(k), np.zeros(k)][None, :]
    res = linprog(
        c, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=[1.0], bounds=[(0, None)] * (2 * k), method="highs"
    )
    assert res.status == 0
    return float(kern @ res.x[:k])


@pytest.mark.parametrize("seed", range(6))
def test_identity_axis_over_l1_balls_matches_linear_programs(seed: int) -> None:
    from pufferfish.loss.balls import ball_loss
    from pufferfish.priors.balls import JointBall

    rng = np.random.default_rng(100 + seed)
    m = 2
    alphabet = np.array([(float(x), float(e)) for x in range(4) for e in range(m)])
    centers = [rng.dirichlet(np.ones(len(alphabet))) for _ in range(2)]
    r = float(rng.uniform(0.02, 0.2))
    metric = Metric((3.0, 1.0), (0, m), (False, True))
    b = float(rng.uniform(0.5, 2.0))
    balls = [JointBall(alphabet, JointPrior.from_rows(alphabet, c), r) for c in centers]
    got = ball_loss(balls[0], balls[1], metric, b)
    worst = 0.0
    for y in [(float(x), float(e)) for x in range(4) for e in range(m)]:
        kern = np.exp(-np.abs(y[0] - alphabet[:, 0]) / (b * 3.0)) * (alphabet[:, 1] == y[1])
        n = [_lp_extreme(c, kern, r, True) for c in centers]
        d = [_lp_extreme(c, kern, r, False) for c in centers]
        for num, den in ((n[0], d[1]), (n[1], d[0])):
            if num > 0:
                worst = max(worst, math.inf if den <= 0 else math.log(num) - math.log(den))
    if math.isinf(worst):
        assert math.isinf(got.loss)
    else:
        assert got.loss == pytest.approx(worst, rel=1e-7, abs=1e-9)
