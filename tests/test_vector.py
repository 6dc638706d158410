"""Several public columns (issue 17): joint priors, the W1 and W-infinity plans in d
dimensions, and the exact check of product Laplace noise at the vertices of the product grid.

Cross-checks: a dense brute-force evaluation of the log-ratio off the grid (d = 2, 3), 50-digit
mpmath at every vertex, today's 1-D loss and plan, HiGHS for the bottleneck's optimality, and
seed 002 Thm 1 (the plan's largest distance over eps passes the check).
"""

from __future__ import annotations

import mpmath
import numpy as np
import ot
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog
from scipy.special import logsumexp

from pufferfish.calibration import Skipped, calibrate, calibrate_optimal, compare
from pufferfish.loss.divergence import MemoryLimitError
from pufferfish.loss.exact import privacy_loss
from pufferfish.loss.product import product_laplace_loss
from pufferfish.priors.distributions import DiscretePrior
from pufferfish.priors.joint import MAX_TUPLES, JointPrior, Metric
from pufferfish.priors.scenario import Scenario
from pufferfish.transport.line import kantorovich_plan as plan_1d
from pufferfish.transport.plans import bottleneck_plan, kantorovich_plan


def _random_pair(seed: int, d: int, n: int = 6, spread: int = 5) -> tuple[JointPrior, JointPrior]:
    gen = np.random.default_rng(seed)
    xi = gen.integers(0, spread, size=(n, d)).astype(float) + gen.choice([0.0, 0.5], size=(n, d))
    xj = gen.integers(1, spread + 1, size=(n, d)).astype(float)
    return JointPrior.from_rows(xi), JointPrior.from_rows(xj)


def _log_ratio(
    prior_i: JointPrior, prior_j: JointPrior, metric: Metric, scale: float, y: np.ndarray
) -> np.ndarray:
    """Direct ``log f_i(y) - log f_j(y)`` at points ``y`` (N, d): the N x support sum."""
    out = []
    for prior in (prior_i, prior_j):
        d = np.zeros((y.shape[0], prior.size))
        for k, w in enumerate(metric.units):
            d += np.abs(y[:, k, None] - prior.support[None, :, k]) / (scale * w)
        out.append(logsumexp(np.log(prior.pmf)[None, :] - d, axis=1))
    return out[0] - out[1]


@pytest.mark.parametrize(("d", "seed"), [(2, 1), (2, 2), (3, 3), (3, 4)])
def test_sup_is_at_a_vertex_against_a_dense_grid(d: int, seed: int) -> None:
    p_i, p_j = _random_pair(seed, d)
    metric = Metric(tuple(np.random.default_rng(seed).uniform(0.5, 2.0, size=d)))
    scale = 0.9
    res = product_laplace_loss(p_i, p_j, metric, scale)
    gen = np.random.default_rng(100 + seed)
    lo = np.minimum(p_i.support.min(axis=0), p_j.support.min(axis=0)) - 3
    hi = np.maximum(p_i.support.max(axis=0), p_j.support.max(axis=0)) + 3
    y = gen.uniform(lo, hi, size=(200_000, d))
    dense = np.abs(_log_ratio(p_i, p_j, metric, scale, y)).max()
    assert dense <= res.loss + res.error_bound + 1e-12  # nothing off the grid beats the vertices
    at = np.abs(_log_ratio(p_i, p_j, metric, scale, np.array([res.worst_vertex])))[0]
    assert abs(at - res.loss) <= res.error_bound + 1e-13
    assert dense >= res.loss - 0.5  # the random points come close (not a vacuous comparison)


def test_every_vertex_against_mpmath() -> None:
    p_i, p_j = _random_pair(7, 2, n=4)
    metric = Metric((1.0, 0.5))
    scale = 0.3  # small: log-ratios of several nats
    res = product_laplace_loss(p_i, p_j, metric, scale)
    mpmath.mp.dps = 50
    axes = [sorted(set(p_i.support[:, k]) | set(p_j.support[:, k])) for k in range(2)]
    best = mpmath.mpf(0)
    for y0 in axes[0]:
        for y1 in axes[1]:
            f = []
            for prior in (p_i, p_j):
                f.append(
                    mpmath.fsum(
                        mpmath.mpf(float(p))
                        * mpmath.exp(
                            -(abs(mpmath.mpf(y0) - x[0]) / 1.0 + abs(mpmath.mpf(y1) - x[1]) / 0.5) / scale
                        )
                        for p, x in zip(prior.pmf, prior.support, strict=True)
                    )
                )
            best = max(best, abs(mpmath.log(f[0]) - mpmath.log(f[1])))
    assert res.loss > 1.0
    assert abs(float(best) - res.loss) <= res.error_bound


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.floats(0.05, 5.0))
@example(seed=1735, scale=1.0)  # a tie-breaking cost once gave the Kantorovich plan 0.8 against 0.7
def test_one_dimension_equals_todays_loss_and_plan(seed: int, scale: float) -> None:
    gen = np.random.default_rng(seed)
    xi = np.round(gen.normal(size=40), 1)
    xj = np.round(gen.normal(0.4, 1.3, size=50), 1)
    p_i, p_j = JointPrior.from_rows(xi), JointPrior.from_rows(xj)
    q_i, q_j = DiscretePrior(p_i.support[:, 0], p_i.pmf), DiscretePrior(p_j.support[:, 0], p_j.pmf)
    ours = product_laplace_loss(p_i, p_j, Metric.ones(1), scale)
    today = privacy_loss(Scenario.single(q_i, q_j), scale)
    assert abs(ours.loss - today.loss) <= ours.error_bound + today.error_bound
    reach = plan_1d(q_i, q_j).max_displacement
    assert kantorovich_plan(p_i, p_j, Metric.ones(1)).max_distance == reach
    assert bottleneck_plan(p_i, p_j, Metric.ones(1)).max_distance == reach


def _feasible(p_i: JointPrior, p_j: JointPrior, allowed: np.ndarray) -> bool:
    """HiGHS: is there a coupling supported on ``allowed``?"""
    n, m = allowed.shape
    a_eq = np.zeros((n + m, n * m))
    for i in range(n):
        a_eq[i, i * m : (i + 1) * m] = 1
    for j in range(m):
        a_eq[n + j, j::m] = 1
    bounds = [(0, None) if ok else (0, 0) for ok in allowed.ravel()]
    res = linprog(
        np.zeros(n * m), A_eq=a_eq, b_eq=np.concatenate([p_i.pmf, p_j.pmf]), bounds=bounds, method="highs"
    )
    return bool(res.status == 0)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from([2, 3]), st.booleans())
def test_plans_are_couplings_and_bottleneck_is_smallest(seed: int, d: int, counts: bool) -> None:
    p_i, p_j = _random_pair(seed, d, n=7)
    if not counts:  # float masses: the flow runs on masses rounded to 2^-30
        p_i = JointPrior(p_i.support, p_i.pmf)
    metric = Metric(tuple(np.random.default_rng(seed).uniform(0.5, 2.0, size=d)))
    k_plan = kantorovich_plan(p_i, p_j, metric)
    b_plan = bottleneck_plan(p_i, p_j, metric)
    for plan in (k_plan, b_plan):
        tol = 1e-15 if plan.exact_masses else 2.0**-20
        row, col = plan.marginals(p_i.size, p_j.size)
        assert np.abs(row - p_i.pmf).max() <= tol + 1e-15 and np.abs(col - p_j.pmf).max() <= tol + 1e-15
    assert b_plan.exact_masses is counts
    w1 = ot.emd2(p_i.pmf, p_j.pmf, metric.distances(p_i.support, p_j.support))
    slack = 1e-9 if counts else 1e-9 + 2.0**-20  # the face's tolerance; masses rounded to 2^-30
    assert k_plan.cost() <= w1 + slack * k_plan.max_distance  # a W1-optimal plan
    assert b_plan.max_distance <= k_plan.max_distance + (0 if counts else 1e-12)
    dist = metric.distances(p_i.support, p_j.support)
    below = dist[dist < b_plan.max_distance]
    if below.size:
        assert not _feasible(p_i, p_j, dist <= below.max())  # no coupling within a smaller distance
    if counts:  # exact masses: W-infinity itself (without counts, a lower bound)
        assert _feasible(p_i, p_j, dist <= b_plan.max_distance)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from([1, 2, 3]), st.floats(0.1, 2.0))
def test_theorem_1_scale_of_each_plan_passes_the_check(seed: int, d: int, eps: float) -> None:
    """Seed 002 Thm 1 with the metric: scale ``max d / eps`` over any coupling's support."""
    p_i, p_j = _random_pair(seed, d, n=6)
    metric = Metric(tuple(np.random.default_rng(seed).uniform(0.5, 2.0, size=d)))
    for plan in (kantorovich_plan(p_i, p_j, metric), bottleneck_plan(p_i, p_j, metric)):
        res = product_laplace_loss(p_i, p_j, metric, plan.max_distance / eps)
        assert res.loss <= eps + res.error_bound


def test_bad_input(monkeypatch) -> None:
    with pytest.raises(ValueError, match="units must be finite numbers > 0"):
        Metric((1.0, 0.0))
    with pytest.raises(ValueError, match="distinct tuples"):
        JointPrior(np.array([[0.0, 1.0], [0.0, 1.0]]), [0.5, 0.5])
    with pytest.raises(ValueError, match="pmf must sum to 1"):
        JointPrior(np.array([[0.0], [1.0]]), [0.5, 0.6])
    assert MAX_TUPLES == 10_000_000
    big = JointPrior.from_rows(np.arange(6, dtype=float))
    with monkeypatch.context() as patch:
        patch.setattr("pufferfish.priors.joint.MAX_TUPLES", 5)
        with pytest.raises(ValueError, match="at most 5 distinct tuples, got 6: bin the columns"):
            JointPrior.from_rows(np.arange(6, dtype=float))
    with monkeypatch.context() as patch:
        patch.setattr("pufferfish.transport.plans.MAX_PLAN_ENTRIES", 35)
        for plan, what in ((kantorovich_plan, "Kantorovich"), (bottleneck_plan, "W-infinity")):
            with pytest.raises(
                MemoryLimitError, match=f"not run: the {what} plan needs about .* GiB for 6 x 6"
            ):
                plan(big, big, Metric.ones(1))
    p_i, p_j = _random_pair(1, 2)
    with pytest.raises(ValueError, match="same dimension"):
        product_laplace_loss(p_i, p_j, Metric.ones(3), 1.0)
    with pytest.raises(ValueError, match="scale must be finite and > 0"):
        product_laplace_loss(p_i, p_j, Metric.ones(2), 0.0)
    with pytest.raises(
        MemoryLimitError, match="not run: the exact check needs about .* GiB .* bin the columns"
    ):
        product_laplace_loss(p_i, p_j, Metric.ones(2), 1.0, max_vertices=3)


# ---------------------------------------------------------------------------------------------
# The registry's mechanisms on joint priors (calibration.joint)

LAPLACE = ("l1", "kantorovich", "wasserstein-inf", "relaxed", "optimal")


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.floats(0.2, 2.0))
def test_one_column_as_a_joint_prior_gives_todays_results(seed: int, eps: float) -> None:
    """d = 1: every mechanism's scale equals the one-column result (unit 1), and with unit w the
    scale in units is today's scale / w (the noise on the column, b w, is the same)."""
    gen = np.random.default_rng(seed)
    xi, xj = gen.integers(0, 12, size=9).astype(float), gen.integers(2, 14, size=9).astype(float)
    ji, jj = JointPrior.from_rows(xi[:, None]), JointPrior.from_rows(xj[:, None])
    di = DiscretePrior(ji.support[:, 0], ji.pmf)
    dj = DiscretePrior(jj.support[:, 0], jj.pmf)
    one = Scenario.single(di, dj)
    for w in (1.0, 2.5):
        joint = Scenario.single(ji, jj, metric=Metric((w,)))
        for m in LAPLACE:
            a, b = calibrate(one, eps, m), calibrate(joint, eps, m)
            assert b.checked_loss is not None and b.checked_loss + b.check_error_bound <= eps
            if m == "optimal":  # two implementations of the exact check: equal to the search's tolerance
                assert b.scale * w == pytest.approx(a.scale, rel=1e-8), m
            else:
                assert b.scale * w == pytest.approx(a.scale, rel=1e-12, abs=0.0), m
        for m in ("kantorovich-gaussian", "analytic-gaussian", "mi-gaussian"):
            a = calibrate(one, min(eps, 0.9), m, delta=1e-5)
            b = calibrate(joint, min(eps, 0.9), m, delta=1e-5)
            assert b.scale * w == pytest.approx(a.scale, rel=1e-12), m
    assert calibrate(one, eps, "wasserstein-inf").scale == calibrate(one, eps, "kantorovich").scale


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from([2, 3]), st.floats(0.1, 2.0), st.booleans())
def test_joint_mechanisms_pass_the_exact_check_and_are_ordered(
    seed: int, d: int, eps: float, units: bool
) -> None:
    """Every Laplace mechanism's scale passes the exact product-Laplace check (computed here
    again), and optimal <= relaxed <= wasserstein-inf <= kantorovich <= l1."""
    p_i, p_j = _random_pair(seed, d)
    metric = Metric(tuple(np.random.default_rng(seed).uniform(0.5, 2.0, size=d))) if units else Metric.ones(d)
    sc = Scenario.single(p_i, p_j, metric=metric)
    scales = {}
    for m in LAPLACE:
        c = calibrate(sc, eps, m)
        assert c.numerically_checked and c.criterion == "(eps, delta)-PP"
        loss = product_laplace_loss(p_i, p_j, metric, c.scale)
        assert loss.loss + loss.error_bound <= eps, m
        scales[m] = c.scale
    slack = 1 + 1e-9
    assert scales["optimal"] <= scales["relaxed"] * slack
    assert scales["relaxed"] <= scales["wasserstein-inf"] * slack
    assert scales["wasserstein-inf"] <= scales["kantorovich"] * slack
    assert scales["kantorovich"] <= scales["l1"] * slack
    # with delta > 0, Laplace on joint priors is checked as pure eps (which implies any delta)
    c = calibrate(sc, eps, "optimal", delta=1e-6)
    assert c.checked_delta == 0.0 and c.scale == pytest.approx(scales["optimal"], rel=1e-9)


def test_relaxed_on_both_plans_each_passes() -> None:
    """relaxed proposes the smaller of its two plans' scales; both pass the check (seed 002 Thm 2
    holds for any coupling)."""
    p_i = JointPrior([[0, 3], [2, 3], [2, 2]], [0.4, 0.2, 0.4])
    p_j = JointPrior([[3, 2], [1, 0], [2, 2]], [0.4, 0.2, 0.4])
    sc = Scenario.single(p_i, p_j)
    c = calibrate(sc, 1.0, "relaxed")
    assert c.decided_by.startswith("W-infinity plan") and "(W1 plan: 4)" in c.decided_by
    for scale in (c.scale, 4.0):
        assert product_laplace_loss(p_i, p_j, Metric.ones(2), scale).satisfies(1.0)
    assert calibrate(sc, 1.0, "wasserstein-inf").scale == 3.0
    assert calibrate(sc, 1.0, "kantorovich").scale == 4.0


def test_gaussian_on_several_columns_is_refused_and_mi_is_never_called_checked() -> None:
    """Issue 31: Gaussian noise on d >= 2 columns has no exact check on the joint alphabet, so it
    is refused with one line; eps-MI (Laplace) is returned but never called checked."""
    p_i, p_j = _random_pair(7, 2)
    sc = Scenario.single(p_i, p_j)
    for m, delta in (("kantorovich-gaussian", 1e-5), ("analytic-gaussian", 1e-5), ("mi-gaussian", 0.0)):
        with pytest.raises(ValueError, match="Gaussian noise on several columns has no exact"):
            calibrate(sc, 0.5, m, delta=delta)
    c = calibrate(sc, 0.5, "mi-laplace")
    assert not c.numerically_checked and c.not_checked
    assert c.checked_loss is None and c.checked_information is None
    assert "NOT numerically checked" in c.guarantee() and c.to_dict()["numerically_checked"] is False
    out = compare(
        sc, 0.5, ["mi-gaussian-entropy", "optimal", "monge", "optimal-mapping"], delta=1e-5, noise="gaussian"
    )
    reasons = {o.mechanism: o.reason for o in out if isinstance(o, Skipped)}
    assert set(reasons) == {"mi-gaussian-entropy", "optimal", "monge", "optimal-mapping"}
    assert "Gaussian noise on several columns" in reasons["optimal"]
    with pytest.raises(ValueError, match="Gaussian noise on several columns"):
        calibrate_optimal(sc, 0.5, delta=1e-5, noise="gaussian")
    cat = Scenario.single(p_i, p_j, metric=Metric((1.0, 1.0), (0, 5)))  # a categorical column
    with pytest.raises(ValueError, match="reads numeric variances"):
        calibrate(cat, 0.5, "mi-laplace")


def test_joint_scenario_bad_input() -> None:
    p_i, p_j = _random_pair(3, 2)
    with pytest.raises(ValueError, match="metric must be a Metric of dimension 2"):
        Scenario.single(p_i, p_j, metric=Metric.ones(3))
    with pytest.raises(ValueError, match="metric is for joint priors"):
        Scenario.single(
            DiscretePrior([0, 1], [0.5, 0.5]), DiscretePrior([0, 1], [0.4, 0.6]), metric=Metric.ones(1)
        )
    with pytest.raises(ValueError, match="one dimension"):
        Scenario.single(p_i, JointPrior([[0, 0, 0]], [1.0]))
    with pytest.raises(TypeError, match="one kind"):
        Scenario.single(p_i, DiscretePrior([0, 1], [0.5, 0.5]))
    with pytest.raises(ValueError, match="joint priors"):
        list(Scenario.single(p_i, p_j).iter_prior_pairs())


def test_identical_joint_priors_need_no_noise() -> None:
    p = JointPrior([[0, 1], [2, 3]], [0.3, 0.7])
    q = JointPrior([[0, 1], [2, 3]], [0.3, 0.7])
    c = calibrate(Scenario.single(p, q), 0.5, "optimal")
    assert c.scale == 0.0 and c.noiseless and c.checked_loss == 0.0


def test_l1_scale_by_sign_vectors_equals_every_distance() -> None:
    # calibration.joint.l1_scale takes max_s (max_x s.x/w - min_x' s.x'/w) over sign vectors s;
    # it must equal the largest of all n x m weighted L1 distances
    from pufferfish.calibration.joint import l1_scale
    from pufferfish.priors.scenario import AdversaryPrior, Scenario

    gen = np.random.default_rng(4)
    for d in (1, 2, 3, 4):
        for seed in range(5):
            p_i, p_j = _random_pair(seed, d, n=12, spread=9)
            units = gen.uniform(0.3, 3.0, size=d)
            metric = Metric(tuple(units))
            scenario = Scenario([("a", "b")], [AdversaryPrior("rho", {"a": p_i, "b": p_j})], metric)
            every = float(metric.distances(p_i.support, p_j.support).max())
            assert l1_scale(scenario, 2.0).scale == pytest.approx(every / 2.0, rel=1e-14)
