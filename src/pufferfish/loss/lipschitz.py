"""A certified upper bound on the loss of many releases of one numeric column (issue 54).

The exact joint check (:mod:`pufferfish.loss.composed`) evaluates every released record: ``|V|^S``
of them for ``S`` releases of a column of ``|V|`` values, beyond reach from ``S = 4`` on Adult's
``age``. For Laplace views the kernel of all of them together is log-Lipschitz in the value:
view ``v`` sees ``g_v(x)`` (the release's clamp and grid, non-decreasing in ``x``) and::

    |log K(y | x) - log K(y | x')| <= D(x, x') = sum_v |g_v(x) - g_v(x')| / b_v

for every record ``y``. On the sorted alphabet ``x_1 < ... < x_k`` each ``g_v`` is monotone, so
``D`` adds up along consecutive values: ``D(x_a, x_c) = sum_{a <= j < c} D_j`` with ``D_j =
D(x_j, x_{j+1})``. Every record's kernel ``w(x) = K(y | x)`` therefore lies in the cone::

    C = {w >= 0 : w_{j+1} <= e^{D_j} w_j and w_j <= e^{D_j} w_{j+1}},

and the loss of a pair of priors is at most ``log max_{w in C} <p_i, w> / <p_j, w>`` (and the same
with ``i, j`` swapped). That maximum is a linear program (Charnes-Cooper: ``max <p_i, w>`` over
``C`` with ``<p_j, w> = 1``), solved by SciPy's HiGHS. It is a bound, not the exact loss: it is
attained when some record's kernel is an extreme ray of ``C`` (on Adult's ``age`` at the point
estimate it equals the exact check's figure for one, two and three releases, tested).

*Certificate.* HiGHS answers in floating point with tolerances; its answer is not used as such.
Any ``lambda >= 0`` (one per constraint of ``C``) and ``t`` with ``A^T lambda + t p_j >= p_i``
componentwise bound the ratio by ``t`` (weak duality: ``<p_i, w> <= lambda . A w + t <p_j, w> <=
t``). HiGHS's dual values, clipped at 0, give ``lambda``; the smallest ``t`` that makes them
feasible is computed in exact rational arithmetic (:class:`fractions.Fraction`) from the float
values, with each ``e^{D_j}`` rounded up (a larger cone holds the true one, so the bound stays an
upper bound), and its log is rounded up. A value of ``p_i`` where ``p_j`` is 0 that the dual does
not cover gives ``inf`` (the ratio is unbounded).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np
from numpy.typing import NDArray

from pufferfish.loss.composed import View
from pufferfish.priors.joint import MISSING_NUMBER

__all__ = ["MAX_EXPONENT", "line_ratio_bound", "lipschitz_loss"]

#: Largest ``D_j`` kept as a constraint (``e^{20}`` is about 4.9e8).
MAX_EXPONENT = 20.0


def _up(x: float, steps: int = 2) -> float:
    """``x`` moved ``steps`` floats towards +inf."""
    for _ in range(steps):
        x = math.nextafter(x, math.inf)
    return x


def line_ratio_bound(
    pmf_i: NDArray[np.float64], pmf_j: NDArray[np.float64], edges: NDArray[np.float64]
) -> float:
    """A certified upper bound on ``log max_{w in C} <p_i, w> / <p_j, w>`` (module docstring).

    Parameters
    ----------
    pmf_i, pmf_j : numpy.ndarray, shape (k,)
        Non-negative masses on the sorted alphabet (each summing to 1 up to rounding).
    edges : numpy.ndarray, shape (k - 1,)
        ``D_j >= 0``, the Lipschitz exponent between consecutive values (nats), each an upper
        bound of the true one.

    Returns
    -------
    float
        Nats, ``>= log`` of the true maximum; ``inf`` when the ratio is unbounded on ``C`` or
        HiGHS gives no dual to certify (never a smaller figure).

    Raises
    ------
    ValueError
        On shapes that do not agree, negative masses or edges.
    """
    from scipy.optimize import linprog

    p = np.asarray(pmf_i, dtype=np.float64)
    q = np.asarray(pmf_j, dtype=np.float64)
    d = np.asarray(edges, dtype=np.float64)
    k = p.size
    if q.shape != (k,) or d.shape != (max(k - 1, 0),):
        raise ValueError(f"pmfs must be (k,) and edges (k-1,), got {p.shape}, {q.shape}, {d.shape}")
    if np.any(p < 0) or np.any(q < 0) or np.any(d < 0) or not np.all(np.isfinite(d)):
        raise ValueError("masses and edges must be finite and >= 0")
    # e^{D_j}, rounded up; beyond e^{MAX_EXPONENT} the edge's two constraints are dropped (a larger
    # cone: still an upper bound), as HiGHS refuses coefficients near 1e15
    growth = [_up(math.exp(float(e))) if e <= MAX_EXPONENT else None for e in d]
    rows = []
    for j, g in enumerate(growth):  # w_{j+1} - g w_j <= 0 and w_j - g w_{j+1} <= 0
        if g is not None:
            rows.append((j + 1, j, g))
            rows.append((j, j + 1, g))
    a = np.zeros((len(rows), k))
    for r, (plus, minus, g) in enumerate(rows):
        a[r, plus], a[r, minus] = 1.0, -g
    res = linprog(
        -p, A_ub=a if rows else None, b_ub=np.zeros(len(rows)) if rows else None, A_eq=q[None, :],
        b_eq=[1.0], bounds=[(0, None)] * k, method="highs",
    )  # fmt: skip
    if res.status != 0 or (rows and res.ineqlin is None):  # unbounded, or no dual: no finite bound
        return math.inf
    # scipy's marginals are the sensitivities of the minimised -p.w: lambda = -marginals >= 0
    lam = [Fraction(max(-float(m), 0.0)) for m in (res.ineqlin.marginals if rows else [])]
    cover = [Fraction(0)] * k  # (A^T lambda)_x, exactly
    for (plus, minus, g), weight in zip(rows, lam, strict=True):
        if weight:
            cover[plus] += weight
            cover[minus] -= weight * Fraction(g)
    pi = [Fraction(float(v)) for v in p]
    if not _repair(pi, cover, q, growth):
        return math.inf  # no value of p_j to carry a deficit to
    t = Fraction(0)
    for x in range(k):
        if q[x] > 0:
            t = max(t, (pi[x] - cover[x]) / Fraction(float(q[x])))
    if t <= 0:
        return -math.inf
    return _up(math.log(_up(float(t))), 4)


def _repair(
    pi: list[Fraction], cover: list[Fraction], q: NDArray[np.float64], growth: list[float | None]
) -> bool:
    """Make the dual cover every value where ``p_j`` is 0, exactly: a deficit ``delta`` there is
    moved to the nearest value with ``p_j > 0`` by raising the multipliers of the constraints on
    the way (``w_x <= g w_next`` with multiplier ``delta`` adds ``delta`` to ``x``'s cover and takes
    ``g delta`` from ``next``'s), which keeps ``lambda >= 0``; ``t`` then pays for it. HiGHS's
    floating-point duals leave such deficits of the order of its tolerances. False when ``p_j``
    is 0 on the deficit's whole run (between dropped edges)."""
    k = len(pi)
    part = np.cumsum([0] + [g is None for g in growth])  # the run of each value
    for x in range(k):
        if q[x] > 0 or pi[x] - cover[x] <= 0:
            continue
        support = [j for j in range(k) if q[j] > 0 and part[j] == part[x]]
        if not support:
            return False
        target = min(support, key=lambda j: abs(j - x))
        step = 1 if target > x else -1
        cur = x
        while cur != target:
            delta = pi[cur] - cover[cur]
            nxt = cur + step
            if delta > 0:
                edge = growth[min(cur, nxt)]
                assert edge is not None  # inside one run
                g = Fraction(edge)
                cover[cur] += delta
                cover[nxt] -= delta * g
            cur = nxt
    return True


def lipschitz_loss(
    values: NDArray[np.float64],
    pmf_i: NDArray[np.float64],
    pmf_j: NDArray[np.float64],
    views: Sequence[View],
) -> tuple[float, float]:
    """The bound of the module docstring for Laplace views of one numeric column, with its
    missing atom: ``(bound, error)`` in nats (``error`` 0: the rounding is inside the bound).

    Parameters
    ----------
    values : numpy.ndarray, shape (k,)
        The column's distinct values (the atom :data:`~pufferfish.priors.joint.MISSING_NUMBER`
        among them or not).
    pmf_i, pmf_j : numpy.ndarray, shape (k,)
        The two priors on ``values``.
    views : sequence of View
        ``laplace`` views of this column (coordinate 0, no relabelling).

    Returns
    -------
    (float, float)

    Raises
    ------
    ValueError
        If a view is not a Laplace view of numbers.

    Notes
    -----
    A missing cell is written missing by every view, so a record is all-missing (probability
    ``m_s``) or all-present: the loss is ``max(|log m_i - log m_j|, sup over present records)``,
    the second the bound on the present masses as they are (not renormalised: the LP is
    homogeneous, so ``(1 - m_i) / (1 - m_j)`` is inside it), in both directions.
    """
    if any(v.kind != "laplace" or v.relabel is not None for v in views):
        raise ValueError("the Lipschitz bound reads Laplace views of numbers only")
    x = np.asarray(values, dtype=np.float64)
    order = np.argsort(x)
    x, p, q = x[order], np.asarray(pmf_i, dtype=np.float64)[order], np.asarray(pmf_j, dtype=np.float64)[order]
    gone = x == MISSING_NUMBER
    m_i, m_j = float(p[gone].sum()), float(q[gone].sum())
    if (m_i > 0) != (m_j > 0):
        return math.inf, 0.0
    atom = _up(abs(math.log(m_i) - math.log(m_j)), 4) if m_i > 0 else 0.0
    x, p, q = x[~gone], p[~gone], q[~gone]
    if (p.sum() > 0) != (q.sum() > 0):
        return math.inf, 0.0
    if p.sum() == 0:
        return atom, 0.0
    edges = np.zeros(max(x.size - 1, 0))
    for v in views:
        seen = v.inputs(x)
        step = np.diff(seen) / v.scale
        edges += np.array([_up(float(s)) for s in step])
    edges = np.array([_up(float(e)) for e in edges])
    up = line_ratio_bound(p, q, edges)
    down = line_ratio_bound(q, p, edges)
    return max(atom, up, down, 0.0), 0.0
