"""The exact worst-case loss of a Laplace release over two prior sets, all points in O(k log k).

For fixed priors ``P, Q`` the log-ratio of the two noisy densities peaks at an alphabet point (on
``[a_l, a_{l+1}]`` each density is ``A e^{-y/b} + B e^{y/b}``, so the ratio is a Moebius function of
``e^{2y/b}``, monotone, and it is constant beyond the ends; see :mod:`pufferfish.loss.exact`). Swapping
the suprema, the worst case over two sets ``C_i, C_j`` (:class:`~pufferfish.priors.sets.PriorSet`) is::

    max over y in A of   log max_{P in C_i} <P, k_y>  -  log min_{Q in C_j} <Q, k_y>

(both directions), with ``k_y(x) = exp(-|y - x| / b)``. The optimizers are the closed forms of
:func:`pufferfish.priors.sets.extreme_prior`; :func:`extremes` evaluates them at every point by
range sums (tested against the per-point forms and HiGHS linear programming).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from pufferfish._checks import check_scale
from pufferfish.priors.sets import PriorSet, dkw_band


@dataclass(frozen=True)
class SetLoss:
    """Worst-case privacy loss of a Laplace release over two prior sets.

    Attributes
    ----------
    scale : float
        Laplace scale ``b`` (>= 0).
    loss : float
        ``max_y max(log max_{C_i} <P,k_y> - log min_{C_j} <Q,k_y>, and i <-> j)`` (nats, may be
        ``inf`` at ``b = 0``).
    worst_y : float
        The alphabet point attaining it.
    larger : int
        0 if the first set's maximum is the larger side there, else 1.
    error : float
        Bound on ``|loss - computed loss|`` from floating-point rounding (>= 0, ``inf`` when the
        smaller side's value is too small to certify); a check passes when
        ``loss + error <= epsilon``.
    """

    scale: float
    loss: float
    worst_y: float
    larger: int
    error: float = 0.0


def worst_case_loss(set_i: PriorSet, set_j: PriorSet, scale: float) -> SetLoss:
    """Exact worst-case loss of ``Y = X + Laplace(scale)`` over every ``P in set_i``, ``Q in set_j``.

    Parameters
    ----------
    set_i, set_j : PriorSet
        On the same alphabet.
    scale : float
        Laplace scale ``b`` (>= 0; ``b = 0`` releases ``X`` itself).

    Returns
    -------
    SetLoss

    Raises
    ------
    ValueError
        If the alphabets differ or ``scale`` is negative or not finite.

    Notes
    -----
    See the module docstring: the supremum over ``y`` is attained on the alphabet, and for each
    ``y`` the two sets are optimized separately. :func:`extremes` computes the four extreme
    values at every alphabet point in O(k log k) for the whole scan (the closed forms of
    :func:`extreme_prior`, with range sums instead of a k-term sum per point).
    """
    b = check_scale(scale)
    a = set_i.alphabet
    if set_j.alphabet.shape != a.shape or np.any(set_j.alphabet != a):
        raise ValueError("set_i and set_j must be on the same alphabet")
    ext_i, ext_j = extremes(set_i, b), extremes(set_j, b)
    best = SetLoss(b, -math.inf, float(a[0]), 0)
    for side, (hi, lo) in enumerate(((ext_i, ext_j), (ext_j, ext_i))):
        with np.errstate(invalid="ignore"):
            values = hi.log_max - lo.log_min  # nan where neither set reaches y (b = 0)
        errors = hi.error_max + lo.error_min
        if np.all(np.isnan(values)):
            continue
        top = np.nanmax(values)
        at = np.flatnonzero(values == top)
        q = int(at[np.argmax(errors[at])])
        if top > best.loss or (top == best.loss and errors[q] > best.error):
            best = SetLoss(b, float(top), float(a[q]), side, float(errors[q]))
    return best


@dataclass(frozen=True)
class Extremes:
    """The extreme values of ``<P, k_y>`` over a prior set at every alphabet point ``y``.

    Attributes
    ----------
    log_max, log_min : numpy.ndarray, shape (k,)
        ``log max_{P in C} <P, k_y>`` and ``log min_{P in C} <P, k_y>``, ``k_y(x) = e^{-|y - x| / b}``
        (nats; ``-inf`` at ``b = 0`` where no member puts mass on ``y``).
    error_max, error_min : numpy.ndarray, shape (k,)
        Bounds on their distance to the exact values (nats, >= 0, ``inf`` where not certified).
    """

    log_max: NDArray[np.float64]
    log_min: NDArray[np.float64]
    error_max: NDArray[np.float64]
    error_min: NDArray[np.float64]


def extremes(prior_set: PriorSet, scale: float) -> Extremes:
    """``log max`` and ``log min`` of ``<P, k_y>`` over the set, at every alphabet point ``y``.

    Parameters
    ----------
    prior_set : PriorSet
    scale : float
        Laplace scale ``b >= 0``.

    Returns
    -------
    Extremes

    Raises
    ------
    ValueError
        If ``scale`` is negative or not finite.

    Notes
    -----
    The optimizers are those of :func:`extreme_prior`; only the evaluation differs. Each
    optimizer's pmf is, around ``y = a_q``, a few ranges of fixed weights (``dL``, ``dU`` the
    pmfs of the band's edges, or ``P_hat``) and at most three single points, so ``<P, k_y>`` is
    a few range sums of ``w_l e^{+-a_l / b}`` (a disjoint sparse table of log-sum-exp,
    :class:`_RangeLogSum`: no subtraction) and the scan costs O(k log k):

    * DKW maximum: ``F = L`` left of ``q``, ``U`` from ``q`` on: ``dL`` on ``[0, q)``,
      ``U_q - L_{q-1}`` at ``q``, ``dU`` on ``(q, k)``.
    * DKW minimum: ``F = clip(z, L, U)``; between two consecutive levels the derivative in ``z``
      is ``k(lo) - k(hi)`` (the coefficients telescope over the free indices ``[lo, hi)``), <= 0
      while ``hi <= q``, non-decreasing while ``lo < q < hi`` (``k`` rises to ``q`` and falls
      after it) and >= 0 once ``lo >= q``. So ``<P, k_y>`` falls then rises in ``z``, and the
      optimum is the lowest level whose interval has ``k(lo) > k(hi)`` or ``lo >= q``: a binary
      search over the levels. Its pmf is ``dU`` on ``[0, lo)``, ``z - U_{lo-1}`` at ``lo``, 0 up
      to ``hi``, ``L_hi - z`` at ``hi`` and ``dL`` after.
    * L1 maximum (minimum): ``y`` (the farther end) receives ``beta = min(r / 2, 1 - P_hat)``
      taken from the farthest (nearest) points; the points nearest to ``y`` form a window
      ``[q - s_L, q + s_R]`` found by a binary search over its size, with a binary search for
      the split ``s_L`` inside (two sorted lists of distances).

    Rounding: each pmf entry is within ``(4 k + 8) u`` of the exact optimizer's (``u = 2^-53``;
    cumulative sums of numbers in [0, 1]), which moves ``<P, k_y>`` by at most that times
    ``sum_l k_y(a_l)``; each exponent ``+-a_l / b`` (alphabet centred) is within
    ``3 u max |a / b|`` of its value and each logarithm of a weight within ``750 u`` (weights
    are normal or subnormal doubles); the log-sum-exp chains add ``3 u`` per step, at most
    ``N + 2 log2 N + 8`` steps (``N`` the table's size). The bound in log space is that of
    :func:`pufferfish.priors.sets.log_value`.
    """
    b = check_scale(scale)
    a = prior_set.alphabet
    k = a.size
    p_hat = prior_set.center
    if b == 0.0:
        return _extremes_at_zero(prior_set)
    s = (a - 0.5 * (a[0] + a[-1])) / b  # centred exponents
    dist = _Distances(a, b)
    ones = _KernelSums(np.zeros(k), s)
    log_total = ones.range(np.zeros(k, dtype=np.int64), np.full(k, k), dist.q)
    if prior_set.kind == "none" or prior_set.radius == 0.0:
        sums = _KernelSums(_log(p_hat), s)
        value = sums.range(np.zeros(k, dtype=np.int64), np.full(k, k), dist.q)
        log_max, log_min = value, value.copy()
    elif prior_set.kind == "dkw":
        log_max, log_min = _dkw_scan(p_hat, prior_set.radius, s, dist)
    else:
        log_max, log_min = _l1_scan(p_hat, prior_set.radius, s, dist)
    size = ones.size
    steps = size + 2 * math.log2(size) + 8
    other = _U * (3.0 * float(np.max(np.abs(s))) * 2.0 + 750.0 + 3.0 * steps)
    return Extremes(
        log_max,
        log_min,
        _first_error(log_max, log_total, k) + other,
        _first_error(log_min, log_total, k) + other,
    )


_U = 2.0**-53


def _first_error(value: NDArray[np.float64], log_total: NDArray[np.float64], k: int) -> NDArray[np.float64]:
    """``-log(1 - delta sum k / <p, k>)`` (>= the log-space effect of entries moved by
    ``delta = (4 k + 8) u``), ``inf`` where ``delta sum k >= <p, k> / 2``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        log_ratio = math.log((4 * k + 8) * _U) + log_total - value
        out = -np.log1p(-np.exp(np.minimum(log_ratio, 0.0)))
    return np.where(log_ratio >= -math.log(2.0), np.inf, out)


def _log(w: NDArray[np.float64]) -> NDArray[np.float64]:
    with np.errstate(divide="ignore"):
        return np.log(np.maximum(w, 0.0))


class _Distances:
    """The alphabet's points ``q`` and the distances ``|a_q - a_l|`` the kernel uses."""

    def __init__(self, a: NDArray[np.float64], b: float) -> None:
        self.a = a
        self.b = b
        self.q = np.arange(a.size)

    def log_kernel(self, q: NDArray[np.int64], idx: NDArray[np.int64]) -> NDArray[np.float64]:
        return -np.abs(self.a[q] - self.a[idx]) / self.b

    def nearer(self, q: NDArray[np.int64], i: NDArray[np.int64], j: NDArray[np.int64]) -> NDArray[np.bool_]:
        """Whether ``a_i`` is strictly nearer to ``a_q`` than ``a_j``."""
        return np.abs(self.a[q] - self.a[i]) < np.abs(self.a[q] - self.a[j])


class _RangeLogSum:
    """``log sum_{l in [i, j)} exp(x_l)`` for many ranges at once, without subtraction.

    A disjoint sparse table: at level ``h`` the entries are cut into blocks of ``2^(h+1)``; it
    stores the log-sum from each entry of a block's left half to the half's end, and from the
    right half's start to each entry of that half. A range ``[i, j]`` whose ends first differ
    in bit ``h`` is one left part plus one right part at level ``h``. O(N log N) to build,
    O(1) per range.
    """

    def __init__(self, x: NDArray[np.float64]) -> None:
        n = x.size
        size = 2
        while size < n:
            size *= 2
        pad = np.full(size, -np.inf)
        pad[:n] = x
        levels = []
        half = 1
        while half < size:
            blocks = pad.reshape(-1, 2, half)
            left = np.logaddexp.accumulate(blocks[:, 0, ::-1], axis=1)[:, ::-1]
            right = np.logaddexp.accumulate(blocks[:, 1, :], axis=1)
            levels.append(np.stack([left, right], axis=1).reshape(-1))
            half *= 2
        self.x = pad
        self.levels = np.array(levels)
        self.size = size

    def query(self, i: NDArray[np.int64], j: NDArray[np.int64]) -> NDArray[np.float64]:
        """Log-sums over ``[i, j)`` (``-inf`` for an empty range), elementwise."""
        out = np.full(np.shape(i), -np.inf)
        keep = j > i
        lo, hi = i[keep], j[keep] - 1
        h = np.frexp((lo ^ hi).astype(np.float64))[1] - 1  # highest differing bit; -1 if equal
        hh = np.maximum(h, 0)
        pair = np.logaddexp(self.levels[hh, lo], self.levels[hh, hi])
        out[keep] = np.where(h < 0, self.x[lo], pair)
        return out


class _KernelSums:
    """``log sum_{l in [i, j)} w_l e^{-|a_q - a_l| / b}`` from two range tables (weights in log)."""

    def __init__(self, log_w: NDArray[np.float64], s: NDArray[np.float64]) -> None:
        self.s = s
        self.left = _RangeLogSum(log_w + s)  # l <= q: e^{(a_l - a_q) / b}
        self.right = _RangeLogSum(log_w - s)  # l >= q: e^{(a_q - a_l) / b}
        self.size = self.left.size

    def range(self, i: NDArray[np.int64], j: NDArray[np.int64], q: NDArray[np.int64]) -> NDArray[np.float64]:
        split = np.clip(q + 1, i, np.maximum(i, j))
        left = self.left.query(i, split) - self.s[q]
        right = self.right.query(split, j) + self.s[q]
        return np.logaddexp(left, right)


def _dkw_scan(
    p_hat: NDArray[np.float64], eta: float, s: NDArray[np.float64], dist: _Distances
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    k = p_hat.size
    q = dist.q
    lower, upper = dkw_band(p_hat, eta)
    d_lower = np.maximum(np.diff(lower, prepend=0.0), 0.0)
    d_upper = np.maximum(np.diff(upper, prepend=0.0), 0.0)
    sum_l, sum_u = _KernelSums(_log(d_lower), s), _KernelSums(_log(d_upper), s)
    zero, end = np.zeros(k, dtype=np.int64), np.full(k, k)
    lower_prev = np.concatenate([[0.0], lower[:-1]])
    upper_prev = np.concatenate([[0.0], upper[:-1]])
    # maximum: F = L before q, U from q on
    log_max = np.logaddexp.reduce(
        [sum_l.range(zero, q, q), _log(upper - lower_prev), sum_u.range(q + 1, end, q)], axis=0
    )
    # minimum: F = clip(z, L, U) at the lowest level whose interval has k(lo) > k(hi) or lo >= q
    levels = np.unique(np.concatenate([lower, upper]))
    mids = 0.5 * (levels[:-1] + levels[1:])
    lo_t = np.searchsorted(upper[:-1], mids, side="right")
    hi_t = np.searchsorted(lower[:-1], mids, side="left")
    first, last = np.zeros(k, dtype=np.int64), np.full(k, levels.size - 1)
    while np.any(first < last):
        mid = (first + last) // 2
        t = np.minimum(mid, levels.size - 2)
        found = (lo_t[t] >= q) | dist.nearer(q, lo_t[t], hi_t[t])
        active = first < last
        last = np.where(active & found, mid, last)
        first = np.where(active & ~found, mid + 1, first)
    z = levels[first]
    inner = first < levels.size - 1
    t = np.minimum(first, levels.size - 2)
    lo = np.where(inner, lo_t[t] if levels.size > 1 else k - 1, k - 1)
    hi = np.where(inner, hi_t[t] if levels.size > 1 else k - 1, k - 1)
    free = lo < hi
    w_lo = np.where(free, z - upper_prev[lo], lower[lo] - upper_prev[lo])
    w_hi = np.where(free, lower[hi] - z, 0.0)
    log_min = np.logaddexp.reduce(
        [
            sum_u.range(zero, lo, q),
            _log(w_lo) + dist.log_kernel(q, lo),
            _log(w_hi) + dist.log_kernel(q, hi),
            sum_l.range(hi + 1, end, q),
        ],
        axis=0,
    )
    return log_max, log_min


class _Windows:
    """The ``m`` alphabet points nearest to each ``a_q`` (ties: the right one first): the window
    ``[q - s_L, q + s_R]`` with ``s_L + s_R = m - 1``, and its mass under ``p``."""

    def __init__(self, p: NDArray[np.float64], dist: _Distances) -> None:
        self.cum = np.concatenate([[0.0], np.cumsum(p)])
        self.dist = dist
        self.k = p.size

    def split(self, m: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        q = self.dist.q
        n_left, n_right = q, self.k - 1 - q
        first = np.maximum(0, m - 1 - n_right)
        last = np.minimum(m - 1, n_left)
        while np.any(first < last):
            mid = (first + last) // 2
            s_right = m - 1 - mid
            # one more left point is needed if it is strictly nearer than the last right one
            more = (mid < n_left) & (s_right > 0)
            more &= self.dist.nearer(q, np.maximum(q - mid - 1, 0), np.minimum(q + s_right, self.k - 1))
            active = first < last
            first = np.where(active & more, mid + 1, first)
            last = np.where(active & ~more, mid, last)
        return first, m - 1 - first

    def mass(self, s_left: NDArray[np.int64], s_right: NDArray[np.int64]) -> NDArray[np.float64]:
        """Mass of the windows ``[q - s_left, q + s_right]`` (a :meth:`split`)."""
        return self.cum[self.dist.q + s_right + 1] - self.cum[self.dist.q - s_left]

    def smallest(
        self, lowest: NDArray[np.int64], highest: NDArray[np.int64], need: NDArray[np.float64]
    ) -> NDArray[np.int64]:
        """Smallest ``m`` in ``[lowest, highest]`` whose window mass is ``>= need`` (else ``highest``)."""
        first, last = lowest.copy(), highest.copy()
        while np.any(first < last):
            mid = (first + last) // 2
            enough = self.mass(*self.split(mid)) >= need
            active = first < last
            last = np.where(active & enough, mid, last)
            first = np.where(active & ~enough, mid + 1, first)
        return first


def _l1_scan(
    p_hat: NDArray[np.float64], r: float, s: NDArray[np.float64], dist: _Distances
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    k = p_hat.size
    q = dist.q
    sums = _KernelSums(_log(p_hat), s)
    win = _Windows(p_hat, dist)
    # maximum: y takes beta from the farthest points; the nearest ones keep 1 - p_q - beta
    beta = np.minimum(r / 2.0, 1.0 - p_hat)
    keep = np.maximum(1.0 - p_hat - beta, 0.0)
    m = win.smallest(np.full(k, 2), np.full(k, k), keep + p_hat) if k > 1 else np.ones(k, dtype=np.int64)
    s_left, s_right = win.split(m - 1)
    sl_m, _ = win.split(m)
    edge = np.where(sl_m > s_left, q - sl_m, np.minimum(q + s_right + 1, k - 1))
    kept = keep - (win.mass(s_left, s_right) - p_hat)
    kept = np.where(keep > 0.0, np.clip(kept, 0.0, p_hat[edge]), 0.0)
    log_max = np.logaddexp.reduce(
        [
            _log(p_hat + beta),
            sums.range(q - s_left, q, q),
            sums.range(q + 1, q + s_right + 1, q),
            _log(kept) + dist.log_kernel(q, edge),
        ],
        axis=0,
    )
    if k == 1:
        return log_max, log_max.copy()
    # minimum: the farther end takes beta from the nearest points (it is last in their order)
    far = np.where(np.abs(dist.a[q] - dist.a[0]) >= np.abs(dist.a[-1] - dist.a[q]), 0, k - 1)
    beta = np.minimum(r / 2.0, 1.0 - p_hat[far])
    m = win.smallest(np.ones(k, dtype=np.int64), np.full(k, k - 1), beta)
    sl_m, sr_m = win.split(m)
    left_m1, _ = win.split(np.maximum(m - 1, 1))
    edge = np.where(m == 1, q, np.where(sl_m > left_m1, q - sl_m, q + sr_m))
    rest = np.clip(win.mass(sl_m, sr_m) - beta, 0.0, p_hat[edge])
    start = np.where(far == 0, 1, 0)
    stop = np.where(far == k - 1, k - 1, k)
    log_min = np.logaddexp.reduce(
        [
            sums.range(start, np.maximum(q - sl_m, start), q),
            sums.range(np.minimum(q + sr_m + 1, stop), stop, q),
            _log(rest) + dist.log_kernel(q, edge),
            _log(p_hat[far] + beta) + dist.log_kernel(q, far),
        ],
        axis=0,
    )
    return log_max, log_min


def _extremes_at_zero(prior_set: PriorSet) -> Extremes:
    """``b = 0``: ``<P, k_y> = P(y)``; its extremes over the set in closed form."""
    p_hat, r, k = prior_set.center, prior_set.radius, prior_set.center.size
    if prior_set.kind == "none" or r == 0.0:
        high, low = p_hat, p_hat
    elif prior_set.kind == "dkw":
        lower, upper = dkw_band(p_hat, r)
        high = upper - np.concatenate([[0.0], lower[:-1]])
        low = np.maximum(lower - np.concatenate([[0.0], upper[:-1]]), 0.0)
    else:
        high = p_hat + np.minimum(r / 2.0, 1.0 - p_hat)
        low = np.maximum(p_hat - r / 2.0, 0.0) if k > 1 else p_hat  # the mass must go somewhere
    log_high, log_low = _log(high), _log(low)
    zero = np.zeros(k)
    return Extremes(
        log_high,
        log_low,
        np.where(high > 0, _first_error(log_high, zero, k), 0.0) + 3 * _U,
        np.where(low > 0, _first_error(log_low, zero, k), 0.0) + 3 * _U,
    )
