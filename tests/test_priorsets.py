"""Prior sets (issue 15): radii, the closed-form inner problems against a linear-programming
oracle, and the worst-case loss against the point-estimate loss and a brute-force scan."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.optimize import linprog

from pufferfish import DiscretePrior, Scenario, privacy_loss
from pufferfish.loss.robust import extremes, worst_case_loss
from pufferfish.priors.sets import PriorSet, dkw_radius, extreme_prior, l1_radius, log_value


def _lp_extreme(ps: PriorSet, kernel: np.ndarray, maximize: bool) -> float:
    """max / min <P, kernel> over the set, by scipy's HiGHS linear programming."""
    k = ps.alphabet.size
    sign = -1.0 if maximize else 1.0
    if ps.kind == "l1":  # variables P (k) and t (k) with t >= |P - P_hat|, sum t <= r
        c = np.concatenate([sign * kernel, np.zeros(k)])
        eye = np.eye(k)
        a_ub = np.vstack(
            [
                np.hstack([eye, -eye]),
                np.hstack([-eye, -eye]),
                np.concatenate([np.zeros(k), np.ones(k)])[None, :],
            ]
        )
        b_ub = np.concatenate([ps.center, -ps.center, [ps.radius]])
        a_eq = np.concatenate([np.ones(k), np.zeros(k)])[None, :]
        bounds = [(0, None)] * (2 * k)
    else:  # F_hat - eta <= cumsum(P) <= F_hat + eta
        c = sign * kernel
        tri = np.tril(np.ones((k, k)))
        f_hat = np.cumsum(ps.center)
        a_ub = np.vstack([tri, -tri])
        b_ub = np.concatenate([f_hat + ps.radius, -(f_hat - ps.radius)])
        a_eq = np.ones((1, k))
        bounds = [(0, None)] * k
    tight = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}
    res = linprog(
        c, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=[1.0], bounds=bounds, method="highs", options=tight
    )
    assert res.status == 0, res.message
    return sign * float(res.fun)


@st.composite
def prior_sets(draw: st.DrawFn, kind: str | None = None) -> PriorSet:
    k = draw(st.integers(1, 7))
    alphabet = np.array(
        sorted(draw(st.lists(st.integers(-4, 4), min_size=k, max_size=k, unique=True))), float
    )
    weights = np.array(
        draw(st.lists(st.sampled_from([0.0, 0.0, 1e-3, 0.2, 1.0, 3.0]), min_size=k, max_size=k))
    )
    if weights.sum() == 0:
        weights[draw(st.integers(0, k - 1))] = 1.0
    radius = draw(st.sampled_from([0.0, 1e-3, 0.05, 0.3, 1.0, 2.5]))
    kind = kind or draw(st.sampled_from(["dkw", "l1"]))
    return PriorSet(kind, alphabet, weights / weights.sum(), radius)


@given(
    ps=prior_sets(), pick=st.integers(0, 6), scale=st.sampled_from([0.5, 1.0, 4.0]), maximize=st.booleans()
)
def test_extreme_prior_matches_linear_programming(
    ps: PriorSet, pick: int, scale: float, maximize: bool
) -> None:
    y = ps.alphabet[pick % ps.alphabet.size]
    lk = -np.abs(ps.alphabet - y) / scale
    p = extreme_prior(ps, lk, maximize=maximize)
    # p is in the set
    assert np.all(p >= 0) and p.sum() == pytest.approx(1.0, abs=1e-12)
    if ps.kind == "l1":
        assert np.abs(p - ps.center).sum() <= ps.radius + 1e-12
    else:
        assert np.max(np.abs(np.cumsum(p) - np.cumsum(ps.center))) <= ps.radius + 1e-12
    # and attains the linear program's optimum
    assert float(p @ np.exp(lk)) == pytest.approx(_lp_extreme(ps, np.exp(lk), maximize), rel=1e-9, abs=1e-12)


@given(ps=prior_sets(), scale=st.sampled_from([0.0, 0.05, 0.5, 1.0, 4.0, 50.0]))
def test_scan_matches_the_closed_forms_and_linear_programming(ps: PriorSet, scale: float) -> None:
    # extremes() evaluates the optimizers by range sums (O(k log k) for all points); the
    # reference is extreme_prior's pmf summed directly, and HiGHS where the value is not tiny
    ext = extremes(ps, scale)
    for q, y in enumerate(ps.alphabet):
        dist = np.abs(ps.alphabet - y)
        lk = -dist / scale if scale > 0 else np.where(dist == 0, 0.0, -np.inf)
        for maximize, got, err in ((True, ext.log_max, ext.error_max), (False, ext.log_min, ext.error_min)):
            with np.errstate(divide="ignore"):
                want, want_err = log_value(extreme_prior(ps, lk, maximize=maximize), lk)
            if got[q] != want:
                assert abs(got[q] - want) <= err[q] + want_err
            if scale > 0 and err[q] < 1e-6:
                lp = _lp_extreme(ps, np.exp(lk), maximize)
                assert math.exp(got[q]) == pytest.approx(lp, rel=1e-7, abs=1e-11)


@given(ps=prior_sets(), scale=st.sampled_from([0.5, 1.0, 3.0]))
def test_radius_zero_is_the_point_estimate_loss(ps: PriorSet, scale: float) -> None:
    other = PriorSet(ps.kind, ps.alphabet, ps.center[::-1] if ps.alphabet.size > 1 else ps.center, 0.0)
    got = worst_case_loss(PriorSet(ps.kind, ps.alphabet, ps.center, 0.0), other, scale)
    keep_i, keep_j = ps.center > 0, other.center > 0
    point = privacy_loss(
        Scenario.single(
            DiscretePrior(ps.alphabet[keep_i], ps.center[keep_i]),
            DiscretePrior(other.alphabet[keep_j], other.center[keep_j]),
        ),
        scale,
    ).loss
    assert got.loss == pytest.approx(point, rel=1e-9, abs=1e-12)


@given(ps=prior_sets(), scale=st.sampled_from([0.5, 1.0, 3.0]))
def test_worst_case_loss_bounds_every_member(ps: PriorSet, scale: float) -> None:
    # brute force: the loss of random members of both sets never exceeds the worst case
    other = PriorSet(ps.kind, ps.alphabet, np.full(ps.alphabet.size, 1.0 / ps.alphabet.size), ps.radius)
    worst = worst_case_loss(ps, other, scale).loss
    rng = np.random.default_rng(0)
    grid = np.linspace(ps.alphabet[0] - 2, ps.alphabet[-1] + 2, 401)
    kern = np.exp(-np.abs(grid[:, None] - ps.alphabet[None, :]) / scale)
    for _ in range(30):
        members = []
        for s in (ps, other):
            lk = -np.abs(ps.alphabet - rng.choice(ps.alphabet)) / scale
            a, b = extreme_prior(s, lk, maximize=True), extreme_prior(s, lk, maximize=False)
            u = rng.uniform()
            members.append(u * a + (1 - u) * b)  # the set is convex
        ratio = np.abs(np.log(kern @ members[0]) - np.log(kern @ members[1]))
        assert float(ratio.max()) <= worst + 1e-9


def test_rounding_bound_is_infinite_only_where_the_value_cannot_be_certified() -> None:
    a = np.arange(6.0)
    far = PriorSet("l1", a, np.array([1.0, 0, 0, 0, 0, 0]), 0.0)  # all mass 5 scales from y = 5
    near = PriorSet("l1", a, np.full(6, 1 / 6), 0.0)
    assert worst_case_loss(far, near, 1.0).error < 1e-11  # range sums: chains of 3u per step
    # at b = 0.01 the far prior's density at y = 5 is e^-500 of the near one's: not certifiable
    assert worst_case_loss(far, near, 0.01).error == math.inf


def test_loss_grows_with_the_radius_and_is_infinite_at_scale_zero() -> None:
    a = np.arange(5.0)
    p, q = np.array([0.4, 0.3, 0.2, 0.1, 0.0]), np.array([0.1, 0.2, 0.3, 0.2, 0.2])
    for kind in ("dkw", "l1"):
        losses = [
            worst_case_loss(PriorSet(kind, a, p, r), PriorSet(kind, a, q, r), 1.0).loss
            for r in (0, 0.05, 0.2)
        ]
        assert losses[0] < losses[1] < losses[2]
        # at b = 0 a member of one set puts mass where a member of the other puts none
        assert worst_case_loss(PriorSet(kind, a, p, 0.05), PriorSet(kind, a, q, 0.05), 0.0).loss == math.inf
    # the point estimates share no zero ... except label 4: infinite already
    assert worst_case_loss(PriorSet("none", a, p, 0.0), PriorSet("none", a, q, 0.0), 0.0).loss == math.inf


def test_radii() -> None:
    assert dkw_radius(100, 0.95, 1) == pytest.approx(math.sqrt(math.log(2 / 0.05) / 200))
    assert l1_radius(100, 3, 0.95, 2) == pytest.approx(math.sqrt(0.02 * (math.log(6) + math.log(2 / 0.05))))
    assert math.isfinite(l1_radius(10, 5000))  # 2^5000 overflows a float; its log does not
    with pytest.raises(ValueError, match=r"confidence must be in \(0, 1\), got 1.0"):
        dkw_radius(10, 1.0)
    with pytest.raises(ValueError, match="n must be finite and > 0, got 0"):
        l1_radius(0, 3)
    with pytest.raises(ValueError, match="radius must be finite and >= 0"):
        PriorSet("dkw", np.arange(2.0), np.array([0.5, 0.5]), -0.1)


@pytest.mark.parametrize(
    ("kind", "expected"),
    [("none", (2.379, 0.7821, 0.3386)), ("dkw", (3.578, 1.085, 0.665)), ("l1", (4.17, 1.258, 0.768))],
)
def test_adult_robust_optimal_scales(kind: str, expected: tuple[float, ...]) -> None:
    # Issue 15's reference values: workclass given marital-status, Married-civ-spouse vs
    # Never-married, '?' missing, 8 labels sorted, m = 2 secrets, confidence 0.95.
    from scipy.optimize import brentq

    from pufferfish import estimate_priors

    est = estimate_priors(
        "adult",
        secret="marital-status",
        public="workclass",
        pairs=[("Married-civ-spouse", "Never-married")],
        missing="omit",  # the 8 labels: the rows with '?' left out
    )
    alphabet = np.arange(8.0)
    rows = {g.secret: g.rows for g in est.groups}
    sets = []
    for secret in ("Married-civ-spouse", "Never-married"):
        d = est.scenario.priors[0].conditionals[secret]
        center = np.zeros(8)
        center[d.support.astype(int)] = d.pmf
        radius = {
            "none": 0.0,
            "dkw": dkw_radius(rows[secret], 0.95, 2),
            "l1": l1_radius(rows[secret], 8, 0.95, 2),
        }
        sets.append(PriorSet(kind, alphabet, center, radius[kind]))
    for eps, want in zip((0.1, 0.5, 1.0), expected, strict=True):
        scale = brentq(
            lambda b, eps=eps: worst_case_loss(sets[0], sets[1], b).loss - eps, 1e-3, 100.0, xtol=1e-9
        )
        assert scale == pytest.approx(want, rel=6e-4)
        checked = worst_case_loss(sets[0], sets[1], scale)
        assert checked.error < 1e-10 and checked.loss == pytest.approx(eps, abs=1e-8)


def test_range_log_sums_agree_with_a_direct_sum_on_every_path() -> None:
    # prefixes, suffixes, ranges reduced one by one and the sparse table: all equal a direct sum
    from pufferfish.loss import robust

    rng = np.random.default_rng(3)
    for n in (1, 2, 3, 5, 8, 17, 100, 1000):
        x = rng.normal(size=n) * 30
        x[rng.random(n) < 0.2] = -np.inf
        i = np.concatenate([rng.integers(0, n + 1, 400), np.zeros(5, np.int64), rng.integers(0, n + 1, 5)])
        j = np.concatenate([rng.integers(0, n + 1, 400), rng.integers(0, n + 1, 5), np.full(5, n)])
        want = np.array(
            [np.logaddexp.reduce(x[a:b]) if b > a else -np.inf for a, b in zip(i, j, strict=True)]
        )
        for limit in (0.0, 2.0, math.inf):  # 0: sparse table; inf: one by one
            table = robust._RangeLogSum(x)
            table.direct_limit = limit
            got = table.query(i, j)
            assert np.array_equal(np.isfinite(got), np.isfinite(want)), (n, limit)
            fin = np.isfinite(want)
            assert np.allclose(got[fin], want[fin], rtol=0, atol=1e-9), (n, limit)


def _random_sets(kind: str, k: int, seed: int) -> list[PriorSet]:
    rng = np.random.default_rng(seed)
    a = np.sort(rng.choice(10 * k, size=k, replace=False)).astype(float)
    return [PriorSet(kind, a, rng.dirichlet(np.ones(k)), r) for r in (0.02, 0.05)]


@pytest.mark.parametrize("kind", ["dkw", "l1"])
def test_large_scans_are_the_same_on_one_or_two_threads_and_every_table(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pufferfish.loss import robust

    sets = _random_sets(kind, 60_000, 7)
    threaded = worst_case_loss(*sets, 300.0)
    monkeypatch.setattr(robust, "_TWO_THREADS_FROM", 10**9)
    assert worst_case_loss(*sets, 300.0) == threaded  # one thread: the same numbers
    # every general range by the sparse table, or (few for a DKW band) one by one
    for limit in (0.0, math.inf) if kind == "dkw" else (0.0,):
        monkeypatch.setattr(robust._RangeLogSum, "direct_limit", limit)
        robust._PLANS.clear()
        assert worst_case_loss(*sets, 300.0).loss == pytest.approx(threaded.loss, rel=0, abs=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["dkw", "l1"])
@pytest.mark.parametrize("limit", [0.0, 2.0])
def test_larger_scans_match_the_closed_forms(
    kind: str, limit: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pufferfish.loss import robust

    monkeypatch.setattr(robust._RangeLogSum, "direct_limit", limit)
    ps = _random_sets(kind, 2_000, 5)[1]
    for scale in (3.0, 300.0):
        ext = extremes(ps, scale)
        for q in np.random.default_rng(1).choice(ps.alphabet.size, size=8, replace=False):
            lk = -np.abs(ps.alphabet - ps.alphabet[q]) / scale
            for maximize, got, err in (
                (True, ext.log_max, ext.error_max),
                (False, ext.log_min, ext.error_min),
            ):
                want, want_err = log_value(extreme_prior(ps, lk, maximize=maximize), lk)
                assert abs(got[q] - want) <= err[q] + want_err


def test_a_set_is_evaluated_at_many_scales_from_one_plan() -> None:
    # the scale-free plan is kept per set: a later scale equals a fresh computation
    from pufferfish.loss import robust

    rng = np.random.default_rng(11)
    a = np.arange(50.0)
    sets = [PriorSet("dkw", a, rng.dirichlet(np.ones(50)), 0.1) for _ in range(10)]
    kept = [extremes(s, 2.0) for s in sets] + [extremes(s, 7.0) for s in sets]
    robust._PLANS.clear()
    fresh = [extremes(s, 2.0) for s in sets] + [extremes(s, 7.0) for s in sets]
    for x, y in zip(kept, fresh, strict=True):
        assert np.array_equal(x.log_max, y.log_max) and np.array_equal(x.log_min, y.log_min)


def test_a_plan_leaves_with_its_set() -> None:
    # the kept plans hold arrays of the set's size: none outlives its set, and at most 8 are held
    import gc

    from pufferfish.loss import robust

    ps = PriorSet("dkw", np.arange(40.0), np.full(40, 1 / 40), 0.1)
    extremes(ps, 3.0)
    key = id(ps)
    assert key in robust._PLANS
    del ps
    gc.collect()
    assert key not in robust._PLANS
    many = [PriorSet("l1", np.arange(5.0), np.full(5, 0.2), 0.1) for _ in range(12)]
    for s in many:
        extremes(s, 1.0)
    assert len(robust._PLANS) <= robust._PLANS_KEPT
