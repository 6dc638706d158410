"""The exact distribution of a statistic of ``n`` rows drawn with share ``theta`` of the property.

Each row has the property with probability ``theta`` and then a per-row value ``f`` drawn from
the table's rows with the property (else from those without), so the rows' values are i.i.d.
from the mixture ``m_theta = theta P(f | with) + (1 - theta) P(f | without)`` and the statistic
``S = sum_i f(row_i)`` has the ``n``-fold convolution ``m_theta^{*n}`` as its distribution (the
binomial mixture of convolutions of SPEC sec 8: ``K ~ Bin(n, theta)`` rows with the property, then
``K`` draws of one group and ``n - K`` of the other, is the same law). A mean is ``S / n``.

How it is computed, exactly and with a stated bound on every log-probability:

* **two integer values** ``a < b`` (every count): ``S = n a + K (b - a)``, ``K ~ Bin(n, q)`` with
  ``q = m_theta(b)``; ``log C(n, k) + k log q + (n - k) log(1 - q)`` by ``scipy.special.gammaln``
  (:func:`binomial_log_pmf`), for any ``n``: no tail underflows (``0.45^100000`` is
  ``e^-79851``, kept as its log).
* **otherwise** :func:`pufferfish.multiuser.convolution.sum_distribution` of ``n`` copies of
  ``m_theta``: direct log-space convolution, or FFT convolution of exponentially tilted copies in
  windows, accurate relatively everywhere (its :attr:`~DiscretePrior.log_error`), refused beyond
  :data:`MAX_SUM_POINTS` points of the sum's lattice (the time grows faster than their number:
  ``python benchmarks/bench_dataset.py``).

FFT convolution of the plain pmfs would not do: its absolute error of about ``1e-17`` swamps a
tail mass of ``1e-148``, and the tails decide the Laplace loss (SPEC sec 2.1).

Rounding of the binomial route: ``q`` is a mixture of two ratios of integer counts, within 4
units in the last place (``u = 2^-53``) relatively; ``gammaln`` is accurate to a few ulps of its
value; the bound ``log_error`` stated is ``32 u (3 gammaln(n + 1) + n (|log q| + |log(1 - q)|) +
n + 4)``, a generous multiple of the sum of these.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from pufferfish.dataset.table import RowValues
from pufferfish.priors.distributions import DiscretePrior, merged_points, to_release_grid
from pufferfish.priors.joint import JointPrior

#: Largest lattice of a sum (``n (max - min) / step + 1`` points) computed by convolution: the two
#: priors of ``mean:age`` of Adult took 31.7 s at 365,001 points (``n = 5000`` rows of a 74-value
#: column; 1.8 s at n = 1000), ``python benchmarks/bench_dataset.py``.
MAX_SUM_POINTS = 400_000

_U = 2.0**-53


class StatisticTooLarge(ValueError):
    """A sum's lattice beyond :data:`MAX_SUM_POINTS`: its exact distribution is not computed."""


def row_mixture(values: RowValues, theta: float) -> DiscretePrior:
    """The per-row value's distribution ``m_theta`` at share ``theta`` (module docstring).

    Parameters
    ----------
    values : RowValues
        The statistic's per-row values in each group (:func:`~pufferfish.dataset.table.read_property_table`).
    theta : float
        The share of rows with the property, in [0, 1].

    Returns
    -------
    DiscretePrior
        On the union of both groups' values; a value of one group only has mass 0 at
        ``theta = 0`` (or 1). Its ``log_error`` bounds the rounding of the ratios (8 ulps).
    """
    support = np.union1d(values.with_support, values.without_support)
    log_pmf = np.full(support.size, -np.inf)
    for part, counts, weight in (
        (values.with_support, values.with_counts, theta),
        (values.without_support, values.without_counts, 1.0 - theta),
    ):
        if weight <= 0.0 or part.size == 0:
            continue
        where = np.searchsorted(support, part)
        logs = math.log(weight) + np.log(counts.astype(np.float64)) - math.log(float(counts.sum()))
        log_pmf[where] = np.logaddexp(log_pmf[where], logs)
    return DiscretePrior.from_log_pmf(support, log_pmf, log_error=8.0 * _U)


def statistic_prior(values: RowValues, theta: float, n: int) -> DiscretePrior:
    """The distribution of the statistic of ``n`` rows at share ``theta``, as it is released.

    Parameters
    ----------
    values : RowValues
        The statistic and its per-row values (:func:`~pufferfish.dataset.table.read_property_table`).
    theta : float
        Share of rows with the property, in [0, 1].
    n : int
        Rows, >= 1.

    Returns
    -------
    DiscretePrior
        The sum's (or the mean's, ``S / n`` rounded as a release rounds it: to the release grid)
        distribution, with ``log_pmf`` kept in the tails and ``log_error`` bounding it (module
        docstring).

    Raises
    ------
    ValueError
        If ``n`` < 1.
    StatisticTooLarge
        If the sum's lattice exceeds :data:`MAX_SUM_POINTS` (the message gives the count and the
        largest ``n`` that fits).
    """
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1:
        raise ValueError(f"rows must be an integer >= 1, got {n!r}")
    n = int(n)
    row = row_mixture(values, theta)
    if row.support.size == 1:
        total = DiscretePrior.point(float(row.support[0]) * n)
    elif row.support.size == 2 and _integers(row.support, n):
        total = _binomial(row, n)
    else:
        _check_lattice(row.support, n, values.statistic.text)
        from pufferfish.multiuser.convolution import sum_distribution

        total = sum_distribution([row] * n)
    if values.statistic.kind != "mean":
        return total
    return _divided(total, n)


def _integers(support: NDArray[np.float64], n: int) -> bool:
    """Whether every sum of ``n`` of these values is an integer float64 holds exactly."""
    return bool(np.all(support == np.round(support))) and float(np.abs(support).max()) * n < 2.0**53


def _binomial(row: DiscretePrior, n: int) -> DiscretePrior:
    """``S = n a + K (b - a)``, ``K ~ Bin(n, q)`` (module docstring)."""
    assert row.log_pmf is not None
    a, b = (float(x) for x in row.support)
    log_q, log_1q = float(row.log_pmf[1]), float(row.log_pmf[0])
    k = np.arange(n + 1, dtype=np.float64)
    support = n * a + k * (b - a)
    log_pmf, error = binomial_log_pmf(n, log_q, log_1q)
    return DiscretePrior.from_log_pmf(support, log_pmf, log_error=error + row.log_error)


def binomial_log_pmf(n: int, log_q: float, log_1q: float) -> tuple[NDArray[np.float64], float]:
    """``log P(K = k)``, ``k = 0..n``, of ``Bin(n, q)`` given ``log q`` and ``log(1 - q)`` (``-inf``
    for a probability 0), and the bound on each entry's error of the module docstring (the
    caller adds the error of ``q`` itself beyond 4 ulps)."""
    from scipy.special import gammaln

    k = np.arange(n + 1, dtype=np.float64)
    log_choose = gammaln(n + 1.0) - gammaln(k + 1.0) - gammaln(n - k + 1.0)
    with np.errstate(invalid="ignore"):
        a = np.where(k > 0, k * log_q, 0.0)  # 0 log 0 = 0: the point k = 0 when q = 0
        b = np.where(k < n, (n - k) * log_1q, 0.0)
    finite = [abs(v) for v in (log_q, log_1q) if math.isfinite(v)]
    error = 32.0 * _U * (3.0 * float(gammaln(n + 1.0)) + n * sum(finite) + n + 4.0)
    return np.asarray(log_choose + a + b, dtype=np.float64), error


def joint_count_prior(classes: NDArray[np.int64], theta: float, n: int) -> JointPrior:
    """The joint distribution of two counts ``(S_1, S_2)`` of ``n`` rows at share ``theta``.

    Each row falls in one of four classes of per-row values ``(f_1, f_2)`` with probabilities
    ``p_c = theta c_with / N_with + (1 - theta) c_without / N_without``; the class counts are
    multinomial, and ``(S_1, S_2) = (n_10 + n_11, n_01 + n_11)``: summed over ``n_11`` in log space
    (``O(n^3)`` terms, every one kept: no tail underflows).

    Parameters
    ----------
    classes : numpy.ndarray of int64, shape (2, 4)
        :attr:`~pufferfish.dataset.table.PropertyTable.pair_classes`.
    theta : float
        In [0, 1].
    n : int
        >= 1.

    Returns
    -------
    JointPrior
        On the pairs ``(a, b)`` of positive probability, with ``log_error`` bounding each entry:
        with ``B = 5 gammaln(n + 1) + n sum_c |log p_c| + n + 8`` (at least every term's and every
        partial sum's magnitude), ``32 u B`` for each term (``gammaln`` to a few ulps of its value,
        the class probabilities to 4 ulps) plus ``2 u (n + 1) (B + 1)`` for the at most ``n + 1``
        terms added one after the other by ``logaddexp`` (each step within ``2 u (|s| + 1)``).
    """
    from scipy.special import gammaln

    counts = classes.astype(np.float64)
    p = np.zeros(4)
    for row, w in ((0, theta), (1, 1.0 - theta)):
        if w > 0:
            p += w * counts[row] / counts[row].sum()
    with np.errstate(divide="ignore"):
        lp = np.log(p)
    k = np.arange(n + 1)
    n11, n10, n01 = np.meshgrid(k, k, k, indexing="ij")
    n00 = n - n11 - n10 - n01
    ok = n00 >= 0
    n11, n10, n01, n00 = n11[ok], n10[ok], n01[ok], n00[ok]
    choose = (
        gammaln(n + 1.0) - gammaln(n11 + 1.0) - gammaln(n10 + 1.0) - gammaln(n01 + 1.0) - gammaln(n00 + 1.0)
    )
    with np.errstate(invalid="ignore"):
        terms = [np.where(m > 0, m * lp[c], 0.0) for m, c in ((n11, 3), (n10, 2), (n01, 1), (n00, 0))]
    term = choose + terms[0] + terms[1] + terms[2] + terms[3]
    grid = np.full((n + 1, n + 1), -np.inf)
    np.logaddexp.at(grid, (n10 + n11, n01 + n11), term)
    a, b = np.nonzero(np.isfinite(grid))
    finite = [abs(float(v)) for v in lp if math.isfinite(float(v))]
    big = 5.0 * float(gammaln(n + 1.0)) + n * sum(finite) + n + 8.0  # >= every |term| and |sum|
    bound = 32.0 * _U * big + 2.0 * _U * (n + 1.0) * (big + 1.0)
    return JointPrior.from_log_pmf(np.column_stack([a, b]).astype(np.float64), grid[a, b], log_error=bound)


def _check_lattice(support: NDArray[np.float64], n: int, name: str) -> None:
    """Refuse a sum whose lattice would exceed :data:`MAX_SUM_POINTS` (before any work)."""
    steps = np.diff(support)
    step = float(steps.min())
    if np.all(support == np.round(support)):
        step = float(np.gcd.reduce(steps.astype(np.int64))) if steps.size else 1.0
    span = float(support[-1] - support[0])
    points = n * span / step + 1.0
    if points > MAX_SUM_POINTS:
        fits = max(1, int((MAX_SUM_POINTS - 1) * step / span))
        raise StatisticTooLarge(
            f"query {name!r}: the sum of {n} rows takes about {points:,.0f} values (each row "
            f"{support.size} values over {span:g} in steps of {step:g}); the exact convolution is "
            f"limited to {MAX_SUM_POINTS:,} (about {fits:,} rows here): use fewer rows, a coarser "
            "column, or a count (a binomial: no limit)"
        )


def _divided(total: DiscretePrior, n: int) -> DiscretePrior:
    """The mean ``S / n`` as released (float division, then the release grid); sums that meet
    are merged (:func:`~pufferfish.priors.distributions.merged_points`)."""
    assert total.log_pmf is not None
    return merged_points(to_release_grid(total.support / float(n)), total.log_pmf, total.log_error)
