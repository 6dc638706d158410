"""Statistics released with product Laplace noise, certified by the exact loss of one row composed
through the binomial count of rows with the property (``row-composition``).

**Setting** (SPEC sec 8). The release is ``Y = f(X) + Z``: ``f(X) = sum_i g(X_i)`` sums a
contribution ``g(x)`` in ``R^d`` of each of the ``n`` rows (a count adds 0 or 1, a sum the value,
a mean the value over ``n``) and ``Z`` is product Laplace, ``Laplace(s_j)`` on statistic ``j``.
Under share ``theta`` the rows are i.i.d.; ``K ~ Bin(n, theta)`` of them have the property and
follow ``D_1`` (the table's rows with it), the others ``D_0``. Given ``K = k`` the law of ``Y`` does
not depend on ``theta`` (a sum ignores the rows' order), so its density is
``p_theta(y) = sum_k Bin(k; n, theta) p_k(y)``.

**Step (i): one row.** ``p_{k+1}`` and ``p_k`` average, over the same law of the other ``n - 1``
rows (``k`` from ``D_1``, ``n - 1 - k`` from ``D_0``, their sum ``s``), the densities
``E_{D_1}[phi(y - s - g(R))]`` and ``E_{D_0}[phi(y - s - g(R))]`` (``phi`` the noise density). With
``c`` the exact pufferfish loss of one row's contribution under the same noise,
``c = sup_z |log E_{D_1} phi(z - g(R)) - log E_{D_0} phi(z - g(R))|``, every pair of these is within
a factor ``e^c``, hence so are their averages: ``e^{-c} <= p_{k+1}(y) / p_k(y) <= e^c`` for every
``y``. ``c`` is computed by the exact product check of one row, ``D_1`` against ``D_0``
(:func:`pufferfish.loss.product.product_laplace_loss`: the supremum over ``R^d`` is at a vertex of
the grid of the rows' values, in log space with a stated rounding bound), a mean's unit times
``n``.

**Step (ii): the binomial.** Fix ``y`` and write ``p_k(y) = p_0(y) e^{t_k}``, ``|t_{k+1} - t_k| <=
c``. Let ``theta_1 > theta_2``. Then ``h_k = e^{t_k - c k}`` is non-increasing in ``k``. Tilting,
``b_i(k) e^{c k} = M_i(c) b'_i(k)`` with ``M_i(c) = (1 - theta_i + theta_i e^c)^n`` the binomial's
moment generating function and ``b'_i = Bin(n, theta'_i)``, ``theta'_i = theta_i e^c / (1 -
theta_i + theta_i e^c)``, still ``theta'_1 > theta'_2``. The larger binomial is stochastically
larger, so ``E'_1[h] <= E'_2[h]`` for the non-increasing ``h``, and::

    p_theta_1(y) / p_theta_2(y) = (M_1(c) / M_2(c)) E'_1[h] / E'_2[h] <= M_1(c) / M_2(c).

The other way round ``t_k + c k`` is non-decreasing, and ``p_theta_2(y) / p_theta_1(y) <=
M_2(-c) / M_1(-c)``. So the release is eps-pufferfish private for the pair when::

    L(c) = n max(log1p(theta_1 expm1(c)) - log1p(theta_2 expm1(c)),
                 log1p(theta_2 expm1(-c)) - log1p(theta_1 expm1(-c))) <= eps

(:func:`composed_loss`). For the count of rows with the property (``g`` = 1 or 0, ``c = 1 / b``)
``L`` is SPEC sec 8's tail formula and the exact loss: the bound is tight there.

**Against the coupling** (:mod:`pufferfish.dataset.coupling`). With ``W = W_inf`` of the two
binomials, ``K_1 <= K_2 + W`` under their quantile coupling, so ``M_1(c) <= e^{c W} M_2(c)`` and
``L(c) <= W c``; and ``c <= d_row / b`` for any coupling of ``D_1`` and ``D_0`` moving a row by at
most ``d_row`` in the metric. So this scale is never larger than ``wasserstein-coupling``'s.

**Monotone in the scale.** ``Laplace(f s) = Laplace(s) + Z`` for ``f >= 1`` (``Z`` zero with
probability ``1 / f^2``, else ``Laplace(f s)``): more noise is post-processing, so ``c`` does not
grow with the scale, and ``L`` grows with ``c`` (``dL/dc = n (theta'_1 - theta'_2) > 0``). The
search (:func:`composition_scales`) brackets, runs SciPy's ``brentq`` on the log scale and keeps
the closest passing scale (as Google's dp_accounting).

**What is checked**: ``L(c + e_c) + e_L <= eps`` with ``e_c`` the product check's rounding bound and
``e_L = 16 u n (|A| + |B| + 1)`` for the two logarithms ``A, B`` of the moment generating
functions (each within ``4 u (|value| + 1)``, :func:`_log_mgf`; ``u = 2^-53``; doubled). Where
the grid of one row's values exceeds the check's memory limit
(:data:`pufferfish.loss.product.MAX_VERTICES`), ``c`` is bounded by ``sum_j r_j / s_j`` instead,
``r_j`` the largest change of statistic ``j``'s contribution when a row changes groups (the
coupling's bound, valid by the argument above).

**Prior sets** (``PropertyModel.prior_set`` ``dkw`` or ``l1``). The adversary's conditionals may
be any pair ``(D_1, D_0)`` in confidence sets around the table's rows with and without the
property (:meth:`~pufferfish.dataset.model.PropertyModel.row_sets`). The theorem holds for each
pair with its own ``c(D_1, D_0)``, and ``L`` grows with ``c``, so ``c`` is replaced by its
supremum over the two sets: for one statistic the exact worst case of the Laplace channel over
them (:func:`pufferfish.loss.robust.worst_case_loss`, with its rounding bound); for several, the
range bound with ``r_j`` the range of the values seen (any conditionals on them).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from pufferfish.dataset.model import PropertyModel, noise_weights
from pufferfish.dataset.table import RowValues
from pufferfish.loss.divergence import MemoryLimitError
from pufferfish.loss.product import product_laplace_loss
from pufferfish.loss.robust import worst_case_loss
from pufferfish.priors.joint import JointPrior, Metric

_U = 2.0**-53

#: Most doublings or halvings of the scale while bracketing the root (a scale ``2^200`` times the
#: first guess: far beyond any release).
MAX_STEPS = 200


def composed_loss(n: int, shares: Sequence[float], c: float) -> float:
    """``max`` over pairs of shares of ``L(c)`` (module docstring) plus its rounding bound.

    Parameters
    ----------
    n : int
        Rows, >= 1.
    shares : sequence of float
        The secrets ``theta`` in [0, 1], at least two.
    c : float
        The loss of one row (nats, >= 0; ``inf`` when a row can tell its group).

    Returns
    -------
    float
        An upper bound on the pufferfish loss of the release (nats). At ``c = inf`` it is the
        loss of the count ``K`` itself, ``n max(log(theta_1 / theta_2), log((1 - theta_2) / (1 -
        theta_1)))``: ``inf`` when a share is 0 or 1.
    """
    worst = 0.0
    for lo, hi in (sorted(p) for p in itertools.combinations(shares, 2)):
        for a, b in ((_log_mgf(hi, c), _log_mgf(lo, c)), (_log_mgf(lo, -c), _log_mgf(hi, -c))):
            if math.isinf(b):  # a share of 0 (or 1) against a positive one, c = inf: K tells them apart
                return math.inf
            value = n * (a - b)
            worst = max(worst, value + 16.0 * _U * n * (abs(a) + abs(b) + 1.0) + _U * abs(value))
    return worst


def _log_mgf(theta: float, t: float) -> float:
    """``log(1 - theta + theta e^t)``, within ``4 u (|value| + 1)``: ``log1p(x)``, ``x = theta
    expm1(t)``, while ``x >= -1/2`` (``x`` within 2 ulps, and ``log1p`` is 1-Lipschitz in ``x /
    (1 + x)`` there); below, ``log((1 - theta) + theta e^t)``, a sum of two positive terms each
    within an ulp (``log1p`` would lose the digits of ``1 + x`` near 0); for ``t > 30`` (where
    ``e^t`` may overflow) ``t + log(theta + (1 - theta) e^{-t})``. At
    ``t = +-inf`` (one row tells its group) the finite part of the limit: ``log theta`` resp.
    ``log(1 - theta)``, ``t`` itself dropped (it cancels in :func:`composed_loss`'s differences):
    ``L(inf)`` is the loss of the count ``K`` itself, ``n log(theta_1 / theta_2)``."""
    if theta == 0.0:
        return 0.0 if t != math.inf else -math.inf
    if t == math.inf:
        return math.log(theta)
    if t == -math.inf:
        return math.log1p(-theta) if theta < 1.0 else -math.inf
    if t > 30.0:
        return t + math.log(theta + (1.0 - theta) * math.exp(-t))
    x = theta * math.expm1(t)
    if x >= -0.5:
        return math.log1p(x)
    return math.log((1.0 - theta) + theta * math.exp(t))


def first_order_weights(
    model: PropertyModel, statistics: Sequence[int], weighting: str = "rows"
) -> tuple[float, ...]:
    """Weights of the scales ``s_j = b w_j`` for the first order of ``L(c)`` in ``1 / s``,
    ``n |theta_1 - theta_2| sum_j a_j / s_j`` (:func:`~pufferfish.dataset.model.noise_weights`).

    ``a_j = sup_z |E_0 |z - g_j| - E_1 |z - g_j||`` over ``z`` in the extended line (``|mu_1 - mu_0|``
    at the ends), statistic ``j``'s contribution ``g_j`` under each group: the first order of one
    row's loss under ``Laplace(s_j)``. The weights only shape the noise; the guarantee is checked.

    Parameters
    ----------
    model : PropertyModel
    statistics : sequence of int
    weighting : {"rows", "l2"}
        As :data:`~pufferfish.dataset.model.WEIGHTINGS`.

    Returns
    -------
    tuple of float
    """
    a = []
    for values in (model.values(k) for k in statistics):
        unit = model.rows if values.statistic.kind == "mean" else 1.0
        a.append(_first_order(values) / unit)
    return noise_weights(model, statistics, a, weighting)


def _first_order(values: RowValues) -> float:
    """``sup_z |E_0 |z - x| - E_1 |z - x||`` over the support points and the two ends (where it is
    ``|mu_1 - mu_0|``), in O(m log m): :func:`_mean_distances` of each group."""
    z = np.union1d(values.with_support, values.without_support)
    (d1, mean_1), (d0, mean_0) = (
        _mean_distances(z, values.with_support, values.with_counts),
        _mean_distances(z, values.without_support, values.without_counts),
    )
    return max(float(np.max(np.abs(d1 - d0))), abs(mean_1 - mean_0))


def _mean_distances(
    z: NDArray[np.float64], support: NDArray[np.float64], counts: NDArray[np.int64]
) -> tuple[NDArray[np.float64], float]:
    """``E |z - X|`` at every ``z`` and ``E X``, ``X`` on the sorted ``support`` with weights
    ``counts``: ``z (2 F(z) - 1) + mu - 2 S(z)`` with ``F``, ``S`` the cumulative mass and first
    moment up to ``z`` (a binary search per ``z``; no ``len(z) x len(support)`` matrix)."""
    p = counts / counts.sum()
    mass = np.concatenate([[0.0], np.cumsum(p)])
    moment = np.concatenate([[0.0], np.cumsum(p * support)])
    mean = float(moment[-1])
    at = np.searchsorted(support, z, side="right")
    return z * (2.0 * mass[at] - 1.0) + mean - 2.0 * moment[at], mean


@dataclass(frozen=True)
class RowComposition:
    """The Laplace scales of statistics released together, certified by ``row-composition``
    (module docstring).

    Attributes
    ----------
    epsilon : float
    scales : tuple of float
        ``s_j = b w_j``: the Laplace scale of each statistic (its unit).
    weights : tuple of float
        ``w_j``: the metric's units given, else :func:`first_order_weights`.
    row_loss : float
        ``c + e_c``: one row's loss at these scales, with its rounding bound (nats).
    row_check : str
        How ``c`` was found: the exact product check (its grid) or the range bound.
    loss : float
        ``L(c + e_c) + e_L`` (<= ``epsilon``), plus :attr:`rounding` for a secure draw.
    rounding : float
        The secure sampler's rounding term ``sum_j g_j / s_j`` included in :attr:`loss` (0 for a
        seeded draw): it rounds each value by at most ``g_j / 2``, so every density ratio moves
        by at most ``e^{g_j / s_j}`` (grids as :func:`~pufferfish.noise.samplers.grid_exponent`).
    """

    epsilon: float
    scales: tuple[float, ...]
    weights: tuple[float, ...]
    row_loss: float
    row_check: str
    loss: float
    rounding: float = 0.0

    def sentence(self) -> str:
        """How the scales were found, in one line."""
        return (
            f"one row's loss {self.row_loss:.6g} nats ({self.row_check}) composed through the binomial "
            f"count of rows with the property (its moment generating function): loss <= {self.loss:.6g}"
        )


def row_loss(model: PropertyModel, statistics: Sequence[int], scales: Sequence[float]) -> tuple[float, str]:
    """``c + e_c``: the exact loss of one row's contributions under ``Laplace(scales)`` (module
    docstring, step (i)), its exact worst case over the prior sets of one statistic, or the range
    bound (the check's grid too large, or several statistics under prior sets).

    Parameters
    ----------
    model : PropertyModel
    statistics : sequence of int
        0-based, distinct; ``scales`` has one entry per statistic (each finite and > 0).
    scales : sequence of float

    Returns
    -------
    (float, str)
        The loss (nats) and how it was found.
    """
    return _row_check(model, statistics)(scales)


def _row_check(
    model: PropertyModel, statistics: Sequence[int]
) -> Callable[[Sequence[float]], tuple[float, str]]:
    """:func:`row_loss` at any scales, with what does not depend on them (the rows' laws, the sets,
    the ranges) computed once: the search of :func:`composition_scales` calls it at every step."""
    cols = list(statistics)
    per_row = [float(model.rows) if model.values(k).statistic.kind == "mean" else 1.0 for k in cols]
    changes = [model.row_change(k) for k in cols]
    sets = model.row_sets(cols[0]) if model.prior_set != "none" and len(cols) == 1 else None
    priors = _row_priors(model, cols) if model.prior_set == "none" else None
    over_sets = (
        ""
        if sets is None
        else (
            f"exact worst case over the {model.prior_set} sets of radius {sets[0].radius:.3g} and "
            f"{sets[1].radius:.3g}"
        )
    )

    def check(scales: Sequence[float]) -> tuple[float, str]:
        units = tuple(s * u for s, u in zip(scales, per_row, strict=True))
        if sets is not None:  # every pair of the two sets, exactly
            worst = worst_case_loss(sets[0], sets[1], units[0])
            return worst.loss + worst.error, over_sets
        why = "any conditionals on the values seen"  # several statistics under a prior set
        if priors is not None:
            try:
                found = product_laplace_loss(priors[0], priors[1], Metric(units), 1.0)
            except MemoryLimitError:
                why = "the exact check's grid is too large"
            else:
                return found.loss + found.error_bound, f"exact product check on {found.vertices:,} vertices"
        bound = math.fsum(r / s for r, s in zip(changes, scales, strict=True)) * (1.0 + 4.0 * len(cols) * _U)
        return bound, f"the range bound ({why})"

    return check


def _noiseless_row_loss(model: PropertyModel, statistics: Sequence[int]) -> float:
    """``c`` without noise: ``max |log P_1(x) - log P_0(x)|`` over the rows' vectors (``inf`` if
    one group has a vector the other has not), with a margin of ``16 u`` times the logs' size
    for the rounding of the counts' ratios and logs; with prior sets, their exact worst case at
    scale 0 for one statistic (``inf`` for several)."""
    cols = list(statistics)
    if model.prior_set != "none":  # one statistic: the sets' exact worst case without noise
        if len(cols) > 1:
            return math.inf
        worst = worst_case_loss(*model.row_sets(cols[0]), 0.0)
        return worst.loss + worst.error
    priors = _row_priors(model, cols)
    if priors[0].support.shape != priors[1].support.shape or not np.array_equal(
        priors[0].support, priors[1].support
    ):
        return math.inf
    a, b = priors[0].log_pmf, priors[1].log_pmf
    assert a is not None and b is not None  # JointPrior always sets them
    return float(np.max(np.abs(a - b) + 16.0 * _U * (np.abs(a) + np.abs(b) + 1.0)))


def _row_priors(model: PropertyModel, cols: list[int]) -> list[JointPrior]:
    """The law of a row's vector of statistics ``cols`` with the property and without it (rows
    whose vectors agree on these columns merged)."""
    vec = model.table.row_vectors
    groups = ((vec.with_support, vec.with_counts), (vec.without_support, vec.without_counts))
    return [_row_prior(support[:, cols], counts) for support, counts in groups]


def _row_prior(support: np.ndarray, counts: np.ndarray) -> JointPrior:
    """One group's law of a row's vector (duplicates after selecting columns merged)."""
    points, where = np.unique(support, axis=0, return_inverse=True)
    summed = np.zeros(points.shape[0], dtype=np.int64)
    np.add.at(summed, where.ravel(), counts)
    return JointPrior(points, summed / summed.sum(), counts=summed)


def composition_scales(
    model: PropertyModel,
    epsilon: float,
    statistics: Sequence[int] | None = None,
    units: Sequence[float] | None = None,
    *,
    weighting: str = "rows",
    rounding: Callable[[Sequence[float]], float] | None = None,
) -> RowComposition:
    """The smallest scales ``b w`` found whose composed loss is at most ``epsilon``.

    Parameters
    ----------
    model : PropertyModel
    epsilon : float
        > 0 (checked at the edge).
    statistics : sequence of int, optional
        Which statistics (0-based; default all, in order).
    units : sequence of float, optional
        The weights ``w_j`` (> 0), one per statistic; default :func:`first_order_weights`.
    weighting : {"rows", "l2"}
        How :func:`first_order_weights` shares the noise when ``units`` is not given
        (:data:`~pufferfish.dataset.model.WEIGHTINGS`; default ``rows``).
    rounding : callable, optional
        ``rounding(scales) -> float``: a term (nats) added to the loss, the secure sampler's
        rounding (:attr:`RowComposition.rounding`); default none.

    Returns
    -------
    RowComposition
        ``b`` within a relative 1e-9 of the root on its passing side; valid by the module
        docstring's theorem for every pair of shares and the model's conditionals (the point
        estimate, or every pair in its prior sets); zero scales when no noise is needed.

    Raises
    ------
    ValueError
        If no scale up to ``2^200`` times the first guess passes (not reached for finite values:
        ``c`` is at most the range bound, which falls to 0 as the scale grows).
    """
    which = tuple(range(len(model.table.values))) if statistics is None else tuple(statistics)
    if units is None:
        weights = first_order_weights(model, which, weighting)
    else:
        weights = tuple(float(w) for w in units)
    c0 = _noiseless_row_loss(model, which)
    if composed_loss(model.rows, model.shares, c0) <= epsilon:  # no noise needed at all
        zero = (0.0,) * len(which)
        how = (
            "no noise: the release tells at most the count of rows with the property, within eps"
            if math.isinf(c0)
            else "no noise: the two groups' laws of a row are within this ratio"
        )
        return RowComposition(epsilon, zero, weights, c0, how, composed_loss(model.rows, model.shares, c0))

    check = _row_check(model, which)

    def loss_at(b: float) -> tuple[float, float, str, float]:
        scales = [b * w for w in weights]
        c, how = check(scales)
        extra = 0.0 if rounding is None else rounding(scales)
        return composed_loss(model.rows, model.shares, c) + extra, c, how, extra

    b = _smallest_passing(lambda b: loss_at(b)[0] - epsilon, _first_guess(model, which, weights, epsilon))
    total, c, how, extra = loss_at(b)
    return RowComposition(epsilon, tuple(b * w for w in weights), weights, c, how, total, extra)


def _first_guess(
    model: PropertyModel, which: Sequence[int], weights: Sequence[float], epsilon: float
) -> float:
    """``b`` at which the range bound's first order ``n gap sum r_j / (b w_j)`` equals ``epsilon``."""
    gap = max(abs(a - b) for a, b in itertools.combinations(model.shares, 2))
    changes = [model.row_change(k) for k in which]
    guess = model.rows * gap * math.fsum(r / w for r, w in zip(changes, weights, strict=True)) / epsilon
    return guess if guess > 0 else 1.0


def _smallest_passing(excess: Callable[[float], float], guess: float) -> float:
    """The smallest ``b`` found with ``excess(b) <= 0``, for an ``excess`` that does not grow with
    ``b``: bracket by halving or doubling ``guess``, SciPy's ``brentq`` on ``log b`` (relative
    1e-10), then the closest passing value above the root (every value returned passed).

    Raises
    ------
    ValueError
        If no ``b`` up to ``2^200 guess`` passes.
    """
    from scipy.optimize import brentq

    def f(t: float) -> float:
        return min(excess(math.exp(t)), 1e3)  # inf (no finite bound) as a large excess

    lo = hi = math.log(guess)
    step = math.log(2.0)
    if f(hi) <= 0:
        for _ in range(MAX_STEPS):
            if f(lo - step) > 0:
                lo -= step
                break
            lo -= step
            hi = lo
        else:
            return math.exp(hi)
    else:
        for _ in range(MAX_STEPS):
            lo, hi = hi, hi + step
            if f(hi) <= 0:
                break
        else:
            raise ValueError(f"no scale up to {math.exp(hi):.3g} passes the composed check")
    t = max(brentq(f, lo, hi, xtol=1e-12, rtol=1e-10), lo)
    move = 1e-10
    while t < hi and f(t) > 0:  # to the passing side: the closest passing value found
        t += move * max(1.0, abs(t))
        move *= 2.0
    return math.exp(min(t, hi))
