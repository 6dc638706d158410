"""Kantorovich plan: paper tables, POT and LP cross-checks, exact marginals, seed 000 Lemma 3."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import ot
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.optimize import linprog

from pufferfish import DiscretePrior, kantorovich_plan, marginal_error_bound, max_displacement_from_cdfs
from pufferfish.transport.line import _exact_corner, _positive_cdf

from .conftest import discrete_priors


def test_seed000_example1_table6_plan() -> None:
    """Seed 000 Table 4 priors give the plan of Table 6 and max displacement 2 (Example 1)."""
    p_i = DiscretePrior([1, 2, 3, 4, 5], [0.2, 0.225, 0.5, 0.075, 0.0])
    p_j = DiscretePrior([1, 2, 3, 4, 5], [0.0, 0.075, 0.5, 0.225, 0.2])
    table6 = np.array(
        [
            [0, 0.075, 0.125, 0, 0],
            [0, 0, 0.225, 0, 0],
            [0, 0, 0.15, 0.225, 0.125],
            [0, 0, 0, 0, 0.075],
            [0, 0, 0, 0, 0],
        ]
    )
    plan = kantorovich_plan(p_i, p_j)
    np.testing.assert_allclose(plan.to_dense(p_i.support, p_j.support), table6, atol=1e-15)
    assert plan.max_displacement == 2.0
    assert max_displacement_from_cdfs(p_i, p_j) == 2.0
    # Seed 000 Table 5 prints F_j(4) = 0.925; the CDF of Table 4 is 0.8 there (a typo in the
    # paper: Table 6 and Example 1 agree with 0.8).
    assert p_j.cdf()[3] == pytest.approx(0.8)


def test_seed002_appendix_c_table3_plan() -> None:
    """Song et al. first example (seed 002 appendix C): plan of Table 3, max displacement 1."""
    p_i = DiscretePrior([0, 1, 2, 3], [1 / 3, 1 / 6, 1 / 3, 1 / 6])
    p_j = DiscretePrior([0, 1, 2, 3], [1 / 4, 1 / 4, 1 / 6, 1 / 3])
    table3 = np.array(
        [
            [1 / 4, 1 / 12, 0, 0],
            [0, 1 / 6, 0, 0],
            [0, 0, 1 / 6, 1 / 6],
            [0, 0, 0, 1 / 6],
        ]
    )
    plan = kantorovich_plan(p_i, p_j)
    np.testing.assert_allclose(plan.to_dense(p_i.support, p_j.support), table3, atol=1e-15)
    assert plan.max_displacement == 1.0
    assert max_displacement_from_cdfs(p_i, p_j) == 1.0


def _lemma3_literal(p_i: DiscretePrior, p_j: DiscretePrior) -> float:
    """Seed 000 eq (25) exactly as printed, on the union support (for the finding below)."""
    grid = np.union1d(p_i.support, p_j.support)
    f_i = np.cumsum(p_i.on(grid))
    f_j = np.cumsum(p_j.on(grid))
    best = 0.0
    for k, x in enumerate(grid):
        if np.isclose(f_i[k], f_j[k]):
            continue
        if f_i[k] > f_j[k]:  # min{D > 0 : F_i(x) <= F_j(x + D)}
            d = min(grid[m] - x for m in range(k + 1, grid.size) if f_i[k] <= f_j[m] + 1e-12)
        else:  # min{D > 0 : F_i(x) >= F_j(x - D)}: F_j is 0 below the grid, so D -> 0+ if none
            cands = [x - grid[m] for m in range(k) if f_i[k] >= f_j[m] - 1e-12]
            d = min(cands) if cands else 0.0
        best = max(best, d)
    return best


def test_seed000_lemma3_third_case_finding() -> None:
    """Finding: seed 000 Lemma 3 eq (25) as printed misses leftward moves.

    For P_i = delta_1 and P_j = delta_0 the only plan moves mass 1 from 1 to 0, but the printed
    third case gives 0. Our ``max_displacement_from_cdfs`` uses the symmetric form and gives 1.
    """
    p_i = DiscretePrior([0, 1], [0.0, 1.0])
    p_j = DiscretePrior([0, 1], [1.0, 0.0])
    assert kantorovich_plan(p_i, p_j).max_displacement == 1.0
    assert max_displacement_from_cdfs(p_i, p_j) == 1.0
    assert _lemma3_literal(p_i, p_j) == 0.0  # the paper's formula, as printed
    # It is right when every move is to the right, as in Example 1:
    e_i = DiscretePrior([1, 2, 3, 4, 5], [0.2, 0.225, 0.5, 0.075, 0.0])
    e_j = DiscretePrior([1, 2, 3, 4, 5], [0.0, 0.075, 0.5, 0.225, 0.2])
    assert _lemma3_literal(e_i, e_j) == 2.0


def test_rounding_of_cumulative_sums_makes_no_phantom_atom() -> None:
    """cumsum(0.1, 0.2) = 0.30000000000000004 != 0.3: no atom of mass ~1e-17 may appear.

    The masses are read as the decimals they round from (1/10, 2/10, 7/10 and 3/10, 7/10), whose
    cumulative sums tie exactly at 3/10; as stored floats, 0.1 + 0.2 exceeds 0.3 by 2.8e-17 and a
    plan of the floats would move that much by 4.
    """
    p = DiscretePrior([0, 1, 2], [0.1, 0.2, 0.7])
    q = DiscretePrior([0, 5], [0.3, 0.7])
    plan = kantorovich_plan(p, q)
    assert plan.mass.min() > 1e-3
    assert plan.max_displacement == 3.0 == max_displacement_from_cdfs(p, q)
    assert Fraction(0.1) + Fraction(0.2) - Fraction(0.3) == Fraction(1, 2**55)  # the floats' excess


def test_count_priors_tie_as_their_counts_do() -> None:
    """Priors of 20 and 12 rows: the cumulative counts tie (10/20 = 6/12) where the stored floats'
    exact sums do not (they differ by 4.2e-17); the plan is the one of the counts. A plan of the
    floats would move 4.2e-17 from 1 to 3 and double the largest displacement (2 instead of 1)."""
    c_i, c_j = np.array([2, 8, 8, 2]), np.array([2, 3, 1, 6])
    p = DiscretePrior([0.0, 1.0, 2.0, 3.0], c_i / 20)
    q = DiscretePrior([0.0, 1.0, 2.0, 3.0], c_j / 12)
    float_sums = sum(map(Fraction, p.pmf[:2].tolist())) - sum(map(Fraction, q.pmf[:3].tolist()))
    assert float_sums > 0  # the premise: as floats, F_i(1) > F_j(2)
    plan = kantorovich_plan(p, q)
    dense = plan.to_dense(p.support, q.support)
    assert dense[1, 3] == 0.0 and plan.max_displacement == 1.0 == max_displacement_from_cdfs(p, q)
    bound = marginal_error_bound(plan, p, q)
    assert np.abs(dense.sum(axis=1) - p.pmf).max() <= bound
    assert np.abs(dense.sum(axis=0) - q.pmf).max() <= bound


@given(discrete_priors(), discrete_priors())
def test_plan_matches_pot_emd_1d(p: DiscretePrior, q: DiscretePrior) -> None:
    """Cross-check against POT's 1-D solver (squared cost: the optimal plan is unique)."""
    plan = kantorovich_plan(p, q)
    pot = ot.emd_1d(p.support, q.support, p.pmf, q.pmf, metric="sqeuclidean")
    np.testing.assert_allclose(plan.to_dense(p.support, q.support), pot, atol=1e-9)


@given(discrete_priors(), discrete_priors())
def test_plan_marginals_exact_and_size(p: DiscretePrior, q: DiscretePrior) -> None:
    plan = kantorovich_plan(p, q)
    dense = plan.to_dense(p.support, q.support)
    bound = marginal_error_bound(plan, p, q)  # the bound the docstring states
    assert np.abs(dense.sum(axis=1) - p.pmf).max() <= bound
    assert np.abs(dense.sum(axis=0) - q.pmf).max() <= bound
    assert plan.mass.size <= int((p.pmf > 0).sum() + (q.pmf > 0).sum()) - 1
    assert np.all(np.diff(plan.source) >= 0) and np.all(np.diff(plan.target) >= 0)
    assert max_displacement_from_cdfs(p, q) == pytest.approx(plan.max_displacement, abs=1e-12)


@given(discrete_priors(max_size=5), discrete_priors(max_size=5), st.sampled_from([1.0, 2.0]))
def test_plan_is_optimal_against_brute_force_lp(p: DiscretePrior, q: DiscretePrior, power: float) -> None:
    """Brute force: the transport LP over all n*m couplings has the plan's cost (|x-x'|^power)."""
    n, m = p.size, q.size
    cost = np.abs(p.support[:, None] - q.support[None, :]) ** power
    a_eq = np.zeros((n + m, n * m))
    for i in range(n):
        a_eq[i, i * m : (i + 1) * m] = 1.0
    for j in range(m):
        a_eq[n + j, j::m] = 1.0
    res = linprog(
        cost.ravel(),
        A_eq=a_eq,
        b_eq=np.concatenate([p.pmf, q.pmf]),
        bounds=(0, None),
        method="highs",
        options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10},
    )
    assert res.status == 0
    cost_plan = kantorovich_plan(p, q).cost(power)
    # HiGHS meets the constraints to its feasibility tolerance (1e-10 here, times the cost scale).
    assert cost_plan == pytest.approx(res.fun, abs=1e-8)
    if power == 1.0:  # and exactly against W1 = integral |F_p - F_q| (1-D closed form)
        grid = np.union1d(p.support, q.support)
        gap = np.abs(np.cumsum(p.on(grid)) - np.cumsum(q.on(grid)))[:-1]
        assert cost_plan == pytest.approx(float(np.dot(gap, np.diff(grid))), abs=1e-12)


def test_mass_below_cdf_rounding_still_gets_an_atom() -> None:
    """Found by hypothesis: a mass of 2.4e-252 at x' = 1 vanishes from the CDF (1 - 2.4e-252 == 1).

    It must still be transported, else the Kantorovich scale is 0 and the release is not private
    (the loss at scale 0 is infinite). The exact check caught this before the fix.
    """
    p = DiscretePrior([0, 1], [1.0, 0.0])
    q = DiscretePrior([0, 1], [1.0, 2.44143701e-252])
    plan = kantorovich_plan(p, q)
    assert plan.max_displacement == 1.0 and plan.mass.min() == pytest.approx(2.44143701e-252)
    assert max_displacement_from_cdfs(p, q) == 1.0
    assert max_displacement_from_cdfs(q, p) == 1.0


def test_near_tie_of_levels_sends_no_mass_to_the_wrong_point() -> None:
    """Issue 29.4: a mass below the rounding of the CDF once chained two levels 0.5 apart.

    The old tolerance merge chained the levels 0.5 - 2.5e-15, 0.5 and 0.5 + 2.5e-15 and sent 0.5 of the
    mass from 2 to 8: row sums off by 0.5. The exact route keeps the monotone plan.
    """
    p = DiscretePrior([2, 8], [0.5, 0.5])
    q = DiscretePrior([1, 4, 8], [0.5, 5e-15, 0.5])
    plan = kantorovich_plan(p, q)
    dense = plan.to_dense(p.support, q.support)
    bound = marginal_error_bound(plan, p, q)
    assert np.abs(dense.sum(axis=1) - p.pmf).max() <= bound
    assert np.abs(dense.sum(axis=0) - q.pmf).max() <= bound
    assert dense[0, 0] == q.pmf[0] and dense[1, 2] == q.pmf[2]  # 2 -> 1 and 8 -> 8
    # the tiny mass at 4 comes from both points: 2 -> 4 (what 2 has left after 1) and 8 -> 4
    assert dense[0, 1] > 0 and dense[1, 1] > 0
    assert dense[0, 1] + dense[1, 1] == pytest.approx(q.pmf[1], rel=1e-12, abs=0)
    assert dense[0, 1] == float(Fraction(0.5) - Fraction(q.pmf[0]))  # what 2 has left after 1
    assert plan.max_displacement == 4.0 == max_displacement_from_cdfs(p, q)


def _tiny_mass_priors(draw: st.DrawFn) -> DiscretePrior:
    n = draw(st.integers(1, 6))
    points = draw(st.lists(st.integers(-20, 20), min_size=n, max_size=n, unique=True))
    support = np.array(sorted(points), dtype=float)
    weights = draw(
        st.lists(
            st.one_of(
                st.just(0.5),
                st.just(0.25),
                st.floats(1e-300, 1e-12),
                st.floats(1e-16, 1e-14),
                st.floats(0.01, 1.0),
            ),
            min_size=n,
            max_size=n,
        )
    )
    w = np.asarray(weights)
    return DiscretePrior(support, w / w.sum())


tiny_mass_priors = st.composite(_tiny_mass_priors)


@given(tiny_mass_priors(), tiny_mass_priors())
def test_plan_with_tiny_masses_and_near_ties_meets_its_bound(p: DiscretePrior, q: DiscretePrior) -> None:
    """Masses below the CDF rounding and levels within it: marginals within marginal_error_bound,
    every point of positive mass has an atom, the plan is monotone, and the float and exact routes
    give the same plan (cross-check of two independent constructions)."""
    plan = kantorovich_plan(p, q)
    dense = plan.to_dense(p.support, q.support)
    bound = marginal_error_bound(plan, p, q)
    assert np.abs(dense.sum(axis=1) - p.pmf).max() <= bound
    assert np.abs(dense.sum(axis=0) - q.pmf).max() <= bound
    assert np.all((dense.sum(axis=1) > 0) == (p.pmf > 0)) and np.all((dense.sum(axis=0) > 0) == (q.pmf > 0))
    assert plan.mass.size <= int((p.pmf > 0).sum() + (q.pmf > 0).sum()) - 1
    assert np.all(np.diff(plan.source) >= 0) and np.all(np.diff(plan.target) >= 0)
    x_i, p_i, _ = _positive_cdf(p)
    x_j, p_j, _ = _positive_cdf(q)
    exact = _exact_corner(x_i, p_i, x_j, p_j)
    np.testing.assert_allclose(
        exact.to_dense(p.support, q.support), dense, rtol=0, atol=bound + marginal_error_bound(exact, p, q)
    )
    assert max_displacement_from_cdfs(p, q) == plan.max_displacement == exact.max_displacement
