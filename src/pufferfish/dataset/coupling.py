"""Several statistics released together: the Wasserstein mechanism on a coupling of the two shares.

Seed 002 Thm 1 (the Wasserstein mechanism): if for every discriminative pair there is a coupling
of the released vector's two distributions under which the two vectors are at most ``W`` apart
in a metric ``d``, then noise of density proportional to ``exp(-d(0, z) / (W / eps))`` gives
eps-pufferfish privacy. With the weighted L1 metric ``d(x, x') = sum_k |x_k - x'_k| / w_k`` that
noise is product Laplace, ``Laplace(b w_k)`` on statistic ``k`` with ``b = W / eps``.

**The coupling** (SPEC sec 8 model). Draw the number of rows with the property ``K_1 ~ Bin(n,
theta_1)`` and ``K_2 ~ Bin(n, theta_2)`` by their quantile coupling, then the rows: both data
sets share every row except ``|K_1 - K_2|`` rows that have the property in one and not in the
other (drawn from the table's rows with the property, resp. without). Each data set's rows are
then i.i.d. from its own mixture (the order of rows does not change a sum), so this is a
coupling, and the statistics differ by at most ``W = w_count * D``:

* ``w_count = W_inf(Bin(n, theta_1), Bin(n, theta_2))``, the largest quantile difference
  (:func:`binomial_w_infinity`: about 11 rows at n = 100, 0.45 vs 0.55);
* ``D = sum_k r_k / w_k``, ``r_k`` the largest change of statistic ``k`` when one row without the
  property is replaced by one with it (the largest difference of per-row values across the two
  groups; divided by ``n`` for a mean). For one statistic the replaced and the replacing rows are
  paired by their quantiles (each pair is still a draw of each group), so ``r`` is the
  ``W_inf`` distance of a row's value across the groups (:func:`row_w_infinity`).

The weights ``w_k`` (:func:`~pufferfish.dataset.model.noise_weights` with ``a_k = r_k``) minimise
the squared noise scales for this ``D``, each counted in its statistic's unit (``rows``, default)
or plainly (``l2``: ``w_k = r_k^(1/3)``).

This scale rests on the theorem and the coupling, not on a numerical check: the statistics'
joint distribution under a share has far too many points to enumerate. A single statistic is
checked exactly instead (:mod:`pufferfish.dataset.calibrate`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from pufferfish.dataset.model import PropertyModel, noise_weights
from pufferfish.dataset.statistic import binomial_log_pmf
from pufferfish.dataset.table import RowValues

#: Smallest margin (nats) of the comparisons of two log-CDFs in :func:`binomial_w_infinity`; the
#: margin used is the larger of this and twice the two CDFs' stated rounding bounds
#: (:func:`_log_cdf_and_sf`), so a comparison too close to call counts as failing, which can only
#: raise ``W``.
CDF_MARGIN = 1e-6

_U = 2.0**-53


def binomial_w_infinity(n: int, theta_1: float, theta_2: float) -> int:
    """``W_inf(Bin(n, theta_1), Bin(n, theta_2))``, an upper bound that is exact but at ties.

    Parameters
    ----------
    n : int
        >= 1.
    theta_1, theta_2 : float
        In [0, 1].

    Returns
    -------
    int
        The smallest ``w >= 0`` with ``F_hi(k + w) >= F_lo(k)`` for every ``k`` (``lo`` the smaller
        share: the binomials are stochastically ordered, and this is their ``W_inf``), with each
        comparison of log-CDFs (lower half) or log-survival functions (upper half) made harder to
        pass by a margin above both CDFs' rounding (:data:`CDF_MARGIN`), so rounding can only make
        ``w`` larger. The tails are kept as logs (``0.45^n`` never underflows).
    """
    lo, hi = sorted((float(theta_1), float(theta_2)))
    if lo == hi:
        return 0
    log_f_lo, log_s_lo, err_lo = _log_cdf_and_sf(n, lo)
    log_f_hi, log_s_hi, err_hi = _log_cdf_and_sf(n, hi)
    margin = max(CDF_MARGIN, 2.0 * (err_lo + err_hi))
    k = np.arange(n + 1)
    lower = log_f_lo <= math.log(0.5)
    # first j with log F_hi(j) >= log F_lo(k) + margin (log F_hi is non-decreasing)
    j_f = np.searchsorted(log_f_hi, log_f_lo + margin, side="left")
    # first j with log S_hi(j) <= log S_lo(k) - margin (log S_hi is non-increasing)
    j_s = np.searchsorted(-log_s_hi, -(log_s_lo - margin), side="left")
    j_s = np.where(np.isneginf(log_s_lo), n, j_s)  # S_lo(k) = 0: only S_hi(j) = 0, j = n
    j = np.minimum(np.where(lower, j_f, j_s), n)
    return int(np.max(j - k))


def _log_cdf_and_sf(n: int, theta: float) -> tuple[NDArray[np.float64], NDArray[np.float64], float]:
    """``log P(K <= k)`` and ``log P(K > k)``, ``k = 0..n``, of ``Bin(n, theta)`` in log space,
    and a bound on the error of every entry: each log-probability's (as
    :func:`~pufferfish.dataset.statistic.statistic_prior` states it for a binomial) plus, for the
    running ``logaddexp``, ``2 u (|s| + 1)`` a step summed over the steps (``s`` the partial sums
    as computed)."""
    log_q = math.log(theta) if theta > 0 else -math.inf
    log_1q = math.log1p(-theta) if theta < 1 else -math.inf
    log_pmf, err = binomial_log_pmf(n, log_q, log_1q)
    log_f = np.logaddexp.accumulate(log_pmf)
    tail = np.logaddexp.accumulate(log_pmf[::-1])[::-1]  # log P(K >= k)
    log_s = np.concatenate([tail[1:], [-np.inf]])
    steps = max(_steps_error(log_f), _steps_error(tail))
    return log_f, log_s, err + steps


def _steps_error(partial: NDArray[np.float64]) -> float:
    """``sum 2 u (|s| + 1)`` over the finite partial sums ``s`` of a running ``logaddexp``."""
    finite = partial[np.isfinite(partial)]
    return 2.0 * _U * (float(np.abs(finite).sum()) + finite.size) * (1.0 + 1e-9)


def row_w_infinity(values: RowValues) -> float:
    """``W_inf`` between a row's value with the property and without it, exactly.

    The rows that the coupling changes (module docstring) are drawn from the table's rows without
    the property in one data set and with it in the other; pairing them by their quantiles moves
    each by at most ``sup_u |Q_with(u) - Q_without(u)|``. The quantile functions are step
    functions of the integer counts: their breakpoints ``c / N`` are compared exactly, as
    integers (``c_1 N_2`` against ``c_2 N_1``).

    Parameters
    ----------
    values : RowValues

    Returns
    -------
    float
        >= 0, in the statistic's per-row unit.
    """
    xs = (values.with_support.tolist(), values.without_support.tolist())
    cums = tuple(np.cumsum(c).tolist() for c in (values.with_counts, values.without_counts))
    totals = (int(cums[0][-1]), int(cums[1][-1]))
    i = j = 0
    worst = 0.0
    while i < len(xs[0]) and j < len(xs[1]):
        # on (previous breakpoint, min of the two next breakpoints] both quantiles are constant
        worst = max(worst, abs(xs[0][i] - xs[1][j]))
        a, b = int(cums[0][i]) * totals[1], int(cums[1][j]) * totals[0]  # F_with(x_i) vs F_without(y_j)
        if a <= b:
            i += 1
        if b <= a:
            j += 1
    return worst


@dataclass(frozen=True)
class VectorScale:
    """The Laplace scales of several statistics released together (module docstring).

    Attributes
    ----------
    epsilon : float
    count_w_infinity : int
        ``w_count``: the most rows the coupling changes, over every pair of shares.
    row_changes : tuple of float
        ``r_k`` per statistic (its unit; a mean's divided by ``n``).
    weights : tuple of float
        ``w_k``: the metric's units given, else :func:`~pufferfish.dataset.model.noise_weights`.
    distance : float
        ``W = w_count * sum_k r_k / w_k`` in the weighted metric.
    scales : tuple of float
        ``b w_k`` with ``b = W / epsilon``: the Laplace scale of each statistic.
    """

    epsilon: float
    count_w_infinity: int
    row_changes: tuple[float, ...]
    weights: tuple[float, ...]
    distance: float
    scales: tuple[float, ...]

    def sentence(self) -> str:
        """How the scales were found, in one line."""
        return (
            f"Wasserstein mechanism on the coupling of the shares (seed 002 Thm 1): W_inf of the count of "
            f"rows with the property {self.count_w_infinity}, each such row moving the statistics by at "
            f"most {', '.join(f'{r:g}' for r in self.row_changes)}; W = {self.distance:g} in the weighted L1 "
            f"metric, b = W / eps"
        )


def vector_scale(
    model: PropertyModel,
    epsilon: float,
    statistics: Sequence[int] | None = None,
    units: Sequence[float] | None = None,
    weighting: str = "rows",
) -> VectorScale:
    """The Laplace scales of ``model``'s statistics released together at ``epsilon``.

    Parameters
    ----------
    model : PropertyModel
    epsilon : float
        > 0 (checked at the edge).
    statistics : sequence of int, optional
        Which statistics (0-based; default all of them, in order).
    units : sequence of float, optional
        The metric's weights ``w_k`` (> 0), one per statistic; default
        :func:`~pufferfish.dataset.model.noise_weights` of ``r_k``.
    weighting : {"rows", "l2"}
        When ``units`` is not given (:data:`~pufferfish.dataset.model.WEIGHTINGS`).

    Returns
    -------
    VectorScale
        Valid by seed 002 Thm 1 on the coupling of the module docstring, for every pair of shares
        and the point-estimate conditionals. One statistic: ``r`` is the W-infinity distance of
        the per-row values with and without the property (:func:`row_w_infinity`: the rows that
        change are paired by their quantiles); several: the largest difference across the groups
        of each (a pairing of the rows' whole vectors would need a bottleneck plan).
    """
    n = model.rows
    w_count = max(binomial_w_infinity(n, a, b) for a, b in itertools.combinations(model.shares, 2))
    changes = []
    which = range(len(model.table.values)) if statistics is None else statistics
    for k in which:
        values = model.values(k)
        if len(which) == 1:
            r = row_w_infinity(values)
            changes.append(r / n if values.statistic.kind == "mean" else r)
        else:
            changes.append(model.row_change(k))
    if units is None:
        weights = noise_weights(model, list(which), changes, weighting)
    else:
        weights = tuple(float(w) for w in units)
    distance = w_count * math.fsum(r / wk for r, wk in zip(changes, weights, strict=True))
    b = distance / epsilon
    return VectorScale(epsilon, w_count, tuple(changes), weights, distance, tuple(b * wk for wk in weights))
