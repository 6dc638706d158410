"""Kantorovich plan: paper tables, POT and LP cross-checks, exact marginals, seed 000 Lemma 3."""

from __future__ import annotations

import numpy as np
import ot
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.optimize import linprog

from pufferfish import DiscretePrior, kantorovich_plan, max_displacement_from_cdfs

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
    # cumsum(0.1, 0.2) = 0.30000000000000004 != 0.3: no atom of mass ~1e-17 may appear.
    p = DiscretePrior([0, 1, 2], [0.1, 0.2, 0.7])
    q = DiscretePrior([0, 5], [0.3, 0.7])
    plan = kantorovich_plan(p, q)
    assert plan.mass.min() > 1e-3
    assert plan.max_displacement == 3.0


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
    np.testing.assert_allclose(dense.sum(axis=1), p.pmf, atol=1e-12, rtol=0)
    np.testing.assert_allclose(dense.sum(axis=0), q.pmf, atol=1e-12, rtol=0)
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
