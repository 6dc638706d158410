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
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from pufferfish._checks import check_scale
from pufferfish.priors.sets import PriorSet, dkw_band

#: From this many alphabet points on, the two sets of a pair are evaluated on two threads.
_TWO_THREADS_FROM = 50_000


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
    if b == 0.0:
        ext_i, ext_j = _extremes_at_zero(set_i), _extremes_at_zero(set_j)
    else:
        total = _kernel_total(a, b)  # the same for both sets
        if a.size < _TWO_THREADS_FROM:
            ext_i, ext_j = _plan(set_i).at(b, total), _plan(set_j).at(b, total)
        else:  # NumPy's loops release the GIL: the two sets on two threads
            with ThreadPoolExecutor(max_workers=1) as pool:
                later = pool.submit(lambda: _plan(set_j).at(b, total))
                ext_i, ext_j = _plan(set_i).at(b, total), later.result()
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

    None of the optimizers depends on ``b`` (only on the order of the distances ``|a_q - a_l|``):
    their ranges and points are found once per set and kept for the last 8 sets, so the ~14 scales
    a calibration tries cost a few ``O(k)`` log-sum-exp passes each.
    """
    b = check_scale(scale)
    if b == 0.0:
        return _extremes_at_zero(prior_set)
    return _plan(prior_set).at(b, _kernel_total(prior_set.alphabet, b))


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

    def __init__(self, a: NDArray[np.float64]) -> None:
        self.a = a
        self.q = np.arange(a.size)

    def nearer(self, q: NDArray[np.int64], i: NDArray[np.int64], j: NDArray[np.int64]) -> NDArray[np.bool_]:
        """Whether ``a_i`` is strictly nearer to ``a_q`` than ``a_j``."""
        return np.abs(self.a[q] - self.a[i]) < np.abs(self.a[q] - self.a[j])


@dataclass(frozen=True)
class _Range:
    """The term ``log sum_{l in [i, j)} w_l e^{-|a_q - a_l| / b}`` of weight vector ``w``."""

    w: int
    i: NDArray[np.int64]
    j: NDArray[np.int64]


@dataclass(frozen=True)
class _Point:
    """The term ``log c + (-|a_q - a_idx| / b)``."""

    log_c: NDArray[np.float64]
    idx: NDArray[np.int64]


class _Plan:
    """What a set's scan is at every scale: the optimizers' pmfs around each point as ranges of
    fixed weight vectors and single points (none of it depends on ``b``); :meth:`at` evaluates
    them at one scale.
    """

    def __init__(
        self,
        a: NDArray[np.float64],
        log_weights: list[NDArray[np.float64]],
        high: list[_Range | _Point],
        low: list[_Range | _Point],
    ) -> None:
        self.a = a
        self.log_weights = log_weights
        self.high, self.low = high, low

    def at(self, b: float, log_total: NDArray[np.float64]) -> Extremes:
        """The extremes at scale ``b > 0``; ``log_total`` is :func:`_kernel_total` (rounding bound)."""
        a, k = self.a, self.a.size
        q = np.arange(k)
        s = (a - 0.5 * (a[0] + a[-1])) / b  # centred exponents
        sums = [_KernelSums(w, s) for w in self.log_weights]

        def value(terms: list[_Range | _Point]) -> NDArray[np.float64]:
            parts = [
                sums[t.w].range(t.i, t.j, q) if isinstance(t, _Range) else t.log_c - np.abs(a - a[t.idx]) / b
                for t in terms
            ]
            return parts[0] if len(parts) == 1 else np.logaddexp.reduce(parts, axis=0)

        log_max, log_min = value(self.high), value(self.low)
        size = sums[0].size
        steps = size + 2 * math.log2(size) + 8
        other = _U * (3.0 * float(np.max(np.abs(s))) * 2.0 + 750.0 + 3.0 * steps)
        return Extremes(
            log_max,
            log_min,
            _first_error(log_max, log_total, k) + other,
            _first_error(log_min, log_total, k) + other,
        )


def _kernel_total(a: NDArray[np.float64], b: float) -> NDArray[np.float64]:
    """``log sum_l e^{-|a_q - a_l| / b}`` at every point ``q`` (the rounding bound's scale)."""
    k = a.size
    s = (a - 0.5 * (a[0] + a[-1])) / b
    return _KernelSums(np.zeros(k), s).range(np.zeros(k, dtype=np.int64), np.full(k, k), np.arange(k))


#: The plans of the sets still alive (by identity; an entry leaves with its set, or when more than
#: :data:`_PLANS_KEPT` are held, the oldest first): a calibration checks the same sets at many
#: scales, and a plan of 10^6 points holds about 128 MB.
_PLANS: dict[int, _Plan] = {}
_PLANS_KEPT = 8
_PLANS_LOCK = threading.Lock()


def _plan(prior_set: PriorSet) -> _Plan:
    key = id(prior_set)
    with _PLANS_LOCK:
        held = _PLANS.get(key)
    if held is not None:
        return held
    a, p_hat, k = prior_set.alphabet, prior_set.center, prior_set.alphabet.size
    dist = _Distances(a)
    if prior_set.kind == "none" or prior_set.radius == 0.0:
        whole: list[_Range | _Point] = [_Range(0, np.zeros(k, dtype=np.int64), np.full(k, k))]
        plan = _Plan(a, [_log(p_hat)], whole, whole)
    elif prior_set.kind == "dkw":
        plan = _dkw_plan(p_hat, prior_set.radius, dist)
    else:
        plan = _l1_plan(p_hat, prior_set.radius, dist)
    with _PLANS_LOCK:
        _PLANS[key] = plan
        while len(_PLANS) > _PLANS_KEPT:
            del _PLANS[next(iter(_PLANS))]
    weakref.finalize(prior_set, _forget_plan, key)  # ids are unique among live objects only
    return plan


def _forget_plan(key: int) -> None:
    with _PLANS_LOCK:
        _PLANS.pop(key, None)


class _RangeLogSum:
    """``log sum_{l in [i, j)} exp(x_l)`` for many ranges at once, without subtraction.

    Three ways, each built only when a query needs it (the scans' queries are mostly prefixes
    ``[0, j)`` and suffixes ``[i, n)``; general ranges are few for a DKW band):

    * a prefix or a suffix is read from one ``np.logaddexp.accumulate`` over the entries (O(N));
    * other ranges whose lengths add up to at most :attr:`direct_limit` times ``N`` are reduced one
      by one (``np.logaddexp.reduceat``, in order);
    * beyond that, a disjoint sparse table: at level ``h`` the entries are cut into blocks of
      ``2^(h+1)``; it stores the log-sum from each entry of a block's left half to the half's end,
      and from the right half's start to each entry of that half. A range ``[i, j]`` whose ends
      first differ in bit ``h`` is one left part plus one right part at level ``h``. O(N log N) to
      build, O(1) per range.

    Rounding: every value is a chain of at most ``N`` ``logaddexp`` steps (a prefix, a suffix, one
    range in order) or of at most ``2 log2 N + 1`` (the sparse table), each within ``3 u``: the
    ``N + 2 log2 N + 8`` steps :func:`extremes` bounds.
    """

    #: General ranges are reduced one by one while their lengths add up to at most this times N.
    direct_limit = 2.0

    def __init__(self, x: NDArray[np.float64]) -> None:
        n = x.size
        size = 2
        while size < n:
            size *= 2
        pad = np.full(size + 1, -np.inf)  # one more -inf: reduceat may point one past the end
        pad[:n] = x
        self.n = n
        self.x = pad[:size]
        self._pad = pad
        self.size = size
        self._prefix: NDArray[np.float64] | None = None
        self._suffix: NDArray[np.float64] | None = None
        self._levels: NDArray[np.float64] | None = None

    def prefix(self) -> NDArray[np.float64]:
        """``prefix()[j] = log sum_{l < j} exp(x_l)``, ``j = 0..size``."""
        if self._prefix is None:
            self._prefix = np.concatenate([[-np.inf], np.logaddexp.accumulate(self.x)])
        return self._prefix

    def suffix(self) -> NDArray[np.float64]:
        """``suffix()[i] = log sum_{l >= i} exp(x_l)``, ``i = 0..size``."""
        if self._suffix is None:
            self._suffix = np.concatenate([np.logaddexp.accumulate(self.x[::-1])[::-1], [-np.inf]])
        return self._suffix

    def levels(self) -> NDArray[np.float64]:
        """The disjoint sparse table, shape ``(log2 size, size)``."""
        if self._levels is None:
            size = self.size
            levels = np.empty((max(size.bit_length() - 1, 1), size))
            half = 1
            for h in range(levels.shape[0]):
                blocks = self.x.reshape(-1, 2, half)
                out = levels[h].reshape(-1, 2, half)
                np.logaddexp.accumulate(blocks[:, 0, ::-1], axis=1, out=out[:, 0, ::-1])
                np.logaddexp.accumulate(blocks[:, 1, :], axis=1, out=out[:, 1, :])
                half *= 2
            self._levels = levels
        return self._levels

    def query(self, i: NDArray[np.int64], j: NDArray[np.int64]) -> NDArray[np.float64]:
        """Log-sums over ``[i, j)`` (``-inf`` for an empty range), elementwise."""
        i, j = np.broadcast_arrays(np.asarray(i, dtype=np.int64), np.asarray(j, dtype=np.int64))
        out = np.full(i.shape, -np.inf)
        keep = j > i
        first = keep & (i == 0)
        if np.any(first):
            out[first] = self.prefix()[j[first]]
        last = keep & ~first & (j >= self.n)
        if np.any(last):
            out[last] = self.suffix()[i[last]]
        rest = keep & ~first & ~last
        if not np.any(rest):
            return out
        lo, hi = i[rest], j[rest]
        if float(np.sum(hi - lo)) <= self.direct_limit * self.size:
            bounds = np.empty(2 * lo.size, dtype=np.int64)
            bounds[0::2], bounds[1::2] = lo, hi
            out[rest] = np.logaddexp.reduceat(self._pad, bounds)[0::2]
            return out
        hi = hi - 1
        h = np.frexp((lo ^ hi).astype(np.float64))[1] - 1  # highest differing bit; -1 if equal
        hh = np.maximum(h, 0)
        levels = self.levels()
        pair = np.logaddexp(levels[hh, lo], levels[hh, hi])
        out[rest] = np.where(h < 0, self.x[lo], pair)
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
        if np.all(split >= j):  # every range ends at or before its point
            return self.left.query(i, split) - self.s[q]
        right = self.right.query(split, j) + self.s[q]
        if np.all(split <= i):  # every range starts after its point
            return right
        return np.logaddexp(self.left.query(i, split) - self.s[q], right)


def _dkw_plan(p_hat: NDArray[np.float64], eta: float, dist: _Distances) -> _Plan:
    k = p_hat.size
    q = dist.q
    lower, upper = dkw_band(p_hat, eta)
    d_lower = np.maximum(np.diff(lower, prepend=0.0), 0.0)
    d_upper = np.maximum(np.diff(upper, prepend=0.0), 0.0)
    zero, end = np.zeros(k, dtype=np.int64), np.full(k, k)
    lower_prev = np.concatenate([[0.0], lower[:-1]])
    upper_prev = np.concatenate([[0.0], upper[:-1]])
    # maximum: F = L before q, U from q on
    high: list[_Range | _Point] = [
        _Range(0, zero, q),
        _Point(_log(upper - lower_prev), q),
        _Range(1, q + 1, end),
    ]
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
    low: list[_Range | _Point] = [
        _Range(1, zero, lo),
        _Point(_log(w_lo), lo),
        _Point(_log(w_hi), hi),
        _Range(0, hi + 1, end),
    ]
    return _Plan(dist.a, [_log(d_lower), _log(d_upper)], high, low)


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


def _l1_plan(p_hat: NDArray[np.float64], r: float, dist: _Distances) -> _Plan:
    k = p_hat.size
    q = dist.q
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
    high: list[_Range | _Point] = [
        _Point(_log(p_hat + beta), q),
        _Range(0, q - s_left, q),
        _Range(0, q + 1, q + s_right + 1),
        _Point(_log(kept), edge),
    ]
    if k == 1:
        return _Plan(dist.a, [_log(p_hat)], high, high)
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
    low: list[_Range | _Point] = [
        _Range(0, start, np.maximum(q - sl_m, start)),
        _Range(0, np.minimum(q + sr_m + 1, stop), stop),
        _Point(_log(rest), edge),
        _Point(_log(p_hat[far] + beta), far),
    ]
    return _Plan(dist.a, [_log(p_hat)], high, low)


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
