"""Prior sets: every prior within a confidence set around an estimate, and the exact worst case.

Pufferfish privacy quantifies over a set of adversary priors (seed 000 sec 2: "more than one
adversary, each with a different prior belief"; seed 001 sec 2). Here that set is, per secret,
the statistical confidence set of the prior estimated from ``n`` rows, on a fixed ordered
alphabet ``A = (a_1 < ... < a_k)``:

* ``dkw``: ``{P on A : max_a |F_P(a) - F_hat(a)| <= eta}``, ``eta = sqrt(ln(2 m / alpha) / (2 n))``
  (Dvoretzky-Kiefer-Wolfowitz with Massart's constant, a union bound over the ``m`` secrets of the
  pairs, ``alpha = 1 - confidence``);
* ``l1``: ``{P on A : ||P - P_hat||_1 <= r}``, ``r = sqrt((2 / n) (ln(2^k - 2) + ln(m / alpha)))``
  (Weissman, Ordentlich, Seroussi, Verdu and Weinberger 2003, Thm 2.1, with the same union bound).

Exact worst-case loss of a Laplace release (scale ``b``)
--------------------------------------------------------
For fixed priors ``P, Q`` the log-ratio of the two noisy densities peaks at an alphabet point (on
``[a_l, a_{l+1}]`` each density is ``A e^{-y/b} + B e^{y/b}``, so the ratio is a Moebius function of
``e^{2y/b}``, monotone, and it is constant beyond the ends; see :mod:`pufferfish.loss`). Swapping
the suprema, the worst case over two sets ``C_i, C_j`` is::

    max over y in A of   log max_{P in C_i} <P, k_y>  -  log min_{Q in C_j} <Q, k_y>

(both directions), with ``k_y(x) = exp(-|y - x| / b)``. The inner problems are linear programs
with closed forms (:func:`extreme_prior`), checked against :func:`scipy.optimize.linprog` in the
tests.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.special import logsumexp

from ._checks import check_scale

PRIOR_SET_KINDS = ("dkw", "l1", "none")


def _check_size(n: float, name: str = "n") -> float:
    value = float(n)
    if not math.isfinite(value) or value <= 0.0:
        raise ValueError(f"{name} must be finite and > 0, got {n!r}")
    return value


def _check_alpha(confidence: float, secrets: int) -> float:
    c = float(confidence)
    if not 0.0 < c < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    if int(secrets) != secrets or secrets < 1:
        raise ValueError(f"secrets must be an int >= 1, got {secrets!r}")
    return 1.0 - c


def dkw_radius(n: float, confidence: float = 0.95, secrets: int = 1) -> float:
    """Half-width ``eta`` of the DKW band around an empirical CDF of ``n`` rows.

    Parameters
    ----------
    n : float
        Rows of the secret's group (> 0), or Kish's effective size ``(sum w)^2 / sum w^2``.
    confidence : float
        In (0, 1); ``alpha = 1 - confidence``.
    secrets : int
        ``m``, the secrets sharing the confidence level (union bound), >= 1.

    Returns
    -------
    float
        ``eta = sqrt(ln(2 m / alpha) / (2 n))``, > 0 (may exceed 1: the band is then every prior).

    Raises
    ------
    ValueError
        If an argument is out of range.

    Notes
    -----
    Dvoretzky-Kiefer-Wolfowitz inequality with Massart's (1990) constant:
    ``Pr(sup_x |F_n(x) - F(x)| > eta) <= 2 exp(-2 n eta^2)``; each of ``m`` secrets at level
    ``alpha / m``.
    """
    alpha = _check_alpha(confidence, secrets)
    return math.sqrt(math.log(2.0 * secrets / alpha) / (2.0 * _check_size(n)))


def l1_radius(n: float, k: int, confidence: float = 0.95, secrets: int = 1) -> float:
    """Radius ``r`` of the L1 ball around an empirical distribution on ``k`` labels from ``n`` rows.

    Parameters
    ----------
    n : float
        Rows (> 0) or Kish's effective size.
    k : int
        Alphabet size, >= 2.
    confidence : float
        In (0, 1).
    secrets : int
        Union bound over ``m`` secrets, >= 1.

    Returns
    -------
    float
        ``r = sqrt((2 / n) (ln(2^k - 2) + ln(m / alpha)))``, > 0.

    Raises
    ------
    ValueError
        If an argument is out of range.

    Notes
    -----
    Weissman et al. (2003), Thm 2.1: ``Pr(||P_n - P||_1 >= r) <= (2^k - 2) exp(-n r^2 / 2)``
    (the bound with ``phi(pi_P) >= 2``). ``ln(2^k - 2) = k ln 2 + ln(1 - 2^(1-k))`` keeps it finite
    for large ``k``.
    """
    alpha = _check_alpha(confidence, secrets)
    if int(k) != k or k < 2:
        raise ValueError(f"k must be an int >= 2, got {k!r}")
    log_count = k * math.log(2.0) + math.log1p(-(2.0 ** (1 - k)))
    return math.sqrt((2.0 / _check_size(n)) * (log_count + math.log(secrets / alpha)))


@dataclass(frozen=True)
class PriorSet:
    """Every prior on an ordered alphabet within ``radius`` of an estimate (one secret).

    Attributes
    ----------
    kind : {"dkw", "l1", "none"}
        The distance: sup-norm of the CDFs (DKW band), L1 norm, or none (the estimate alone).
    alphabet : numpy.ndarray, shape (k,)
        Strictly increasing codes (the union of the labels of the pairs' groups, or ``--order``).
    center : numpy.ndarray, shape (k,)
        The estimate's pmf on ``alphabet`` (>= 0, sums to 1; zero on unseen labels).
    radius : float
        ``eta`` (dkw) or ``r`` (l1), >= 0; 0 for ``none``.
    """

    kind: str
    alphabet: NDArray[np.float64]
    center: NDArray[np.float64]
    radius: float

    def __post_init__(self) -> None:
        if self.kind not in PRIOR_SET_KINDS:
            raise ValueError(f"kind must be one of {', '.join(PRIOR_SET_KINDS)}, got {self.kind!r}")
        a = np.asarray(self.alphabet, dtype=np.float64)
        p = np.asarray(self.center, dtype=np.float64)
        if a.ndim != 1 or a.size == 0 or p.shape != a.shape:
            raise ValueError(f"alphabet and center must be 1-D of one length, got {a.shape} and {p.shape}")
        if not np.all(np.isfinite(a)) or np.any(np.diff(a) <= 0):
            raise ValueError("alphabet must be finite and strictly increasing")
        if not np.all(np.isfinite(p)) or np.any(p < 0) or abs(float(p.sum()) - 1.0) > 1e-9:
            raise ValueError(f"center must be >= 0 and sum to 1, got a sum of {float(p.sum())!r}")
        r = float(self.radius)
        if not math.isfinite(r) or r < 0 or (self.kind == "none" and r != 0.0):
            raise ValueError(f"radius must be finite and >= 0 (0 for kind 'none'), got {self.radius!r}")
        object.__setattr__(self, "alphabet", a)
        object.__setattr__(self, "center", p / p.sum())
        object.__setattr__(self, "radius", r)


def extreme_prior(
    prior_set: PriorSet, log_kernel: NDArray[np.float64], *, maximize: bool
) -> NDArray[np.float64]:
    """The prior of the set that maximizes (or minimizes) ``<P, k>``, for a kernel peaked at a point.

    Parameters
    ----------
    prior_set : PriorSet
    log_kernel : numpy.ndarray, shape (k,)
        ``log k(a)`` on the alphabet, unimodal (non-decreasing then non-increasing), ``-inf``
        allowed: ``-|y - a| / b`` for the Laplace kernel at ``y``.
    maximize : bool

    Returns
    -------
    numpy.ndarray, shape (k,)
        A pmf in the set attaining the extreme value.

    Notes
    -----
    *L1 ball* (``||P - P_hat||_1 <= r``): moving mass ``d`` from one point to another costs ``2 d``
    of L1 distance, and the objective is linear, so the optimum moves up to ``r / 2`` of mass to
    the point of largest (smallest) kernel from the points of smallest (largest) kernel first, a
    fractional knapsack.

    *DKW band* (``L_l <= F_l <= U_l``, ``L = max(F_hat - eta, 0)``, ``U = min(F_hat + eta, 1)``,
    ``F`` non-decreasing, ``F_k = 1``): Abel summation gives
    ``<P, k> = k_k + sum_{l<k} F_l (k_l - k_{l+1})``; the coefficient ``c_l = k_l - k_{l+1}`` is
    <= 0 left of the kernel's peak and >= 0 right of it. To maximize, ``F_l = L_l`` where
    ``c_l < 0`` and ``U_l`` where ``c_l >= 0``: feasible (``L <= U``, both non-decreasing), so it
    is the optimum of the box relaxation. To minimize, any feasible ``F`` with ``z = F`` at the
    peak is improved by ``F_l = clip(z, L_l, U_l)`` (left of the peak ``F_l <= z`` and larger is
    better; right of it ``F_l >= z`` and smaller is better), a feasible non-decreasing family;
    ``<P, k>`` is piecewise linear in ``z`` with breaks at the ``L_l``, ``U_l``, so the best
    breakpoint is the optimum (all are evaluated, in log space).
    """
    p_hat = prior_set.center
    lk = np.asarray(log_kernel, dtype=np.float64)
    if prior_set.kind == "none" or prior_set.radius == 0.0:
        return p_hat.copy()
    if prior_set.kind == "l1":
        return _l1_extreme(p_hat, lk, prior_set.radius, maximize)
    return _dkw_extreme(p_hat, lk, prior_set.radius, maximize)


def _l1_extreme(
    p_hat: NDArray[np.float64], lk: NDArray[np.float64], r: float, maximize: bool
) -> NDArray[np.float64]:
    order = np.argsort(-lk if not maximize else lk, kind="stable")  # donors first
    target = int(np.argmax(lk)) if maximize else int(np.argmin(lk))
    p = p_hat.copy()
    budget = min(r / 2.0, 1.0 - p[target])
    for idx in order:
        if budget <= 0.0:
            break
        if idx == target:
            continue
        take = min(p[idx], budget)
        p[idx] -= take
        p[target] += take
        budget -= take
    return np.maximum(p, 0.0)


def _dkw_extreme(
    p_hat: NDArray[np.float64], lk: NDArray[np.float64], eta: float, maximize: bool
) -> NDArray[np.float64]:
    f_hat = np.minimum(np.cumsum(p_hat), 1.0)
    f_hat[-1] = 1.0
    lower = np.maximum(f_hat - eta, 0.0)
    upper = np.minimum(f_hat + eta, 1.0)
    lower[-1] = upper[-1] = 1.0
    peak = int(np.argmax(lk))  # c_l < 0 for l < peak, >= 0 from the peak on
    if maximize:
        cdf = np.concatenate([lower[:peak], upper[peak:]])
        return _pmf(cdf)
    levels = np.unique(np.concatenate([lower, upper]))
    cdfs = np.clip(levels[:, None], lower[None, :], upper[None, :])
    pmfs = np.diff(np.concatenate([np.zeros((levels.size, 1)), cdfs], axis=1), axis=1)
    with np.errstate(divide="ignore"):
        values = logsumexp(np.log(np.maximum(pmfs, 0.0)) + lk[None, :], axis=1)
    return _pmf(cdfs[int(np.argmin(values))])


def _pmf(cdf: NDArray[np.float64]) -> NDArray[np.float64]:
    p = np.diff(np.concatenate([[0.0], cdf]))
    return np.maximum(p, 0.0)


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
    :func:`_log_value`.
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


def _dkw_band(p_hat: NDArray[np.float64], eta: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    f_hat = np.minimum(np.cumsum(p_hat), 1.0)
    f_hat[-1] = 1.0
    lower = np.maximum(f_hat - eta, 0.0)
    upper = np.minimum(f_hat + eta, 1.0)
    lower[-1] = upper[-1] = 1.0
    return lower, upper


def _dkw_scan(
    p_hat: NDArray[np.float64], eta: float, s: NDArray[np.float64], dist: _Distances
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    k = p_hat.size
    q = dist.q
    lower, upper = _dkw_band(p_hat, eta)
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

    def mass(self, m: NDArray[np.int64]) -> NDArray[np.float64]:
        s_left, s_right = self.split(m)
        return self.cum[self.dist.q + s_right + 1] - self.cum[self.dist.q - s_left]

    def smallest(
        self, lowest: NDArray[np.int64], highest: NDArray[np.int64], need: NDArray[np.float64]
    ) -> NDArray[np.int64]:
        """Smallest ``m`` in ``[lowest, highest]`` whose window mass is ``>= need`` (else ``highest``)."""
        first, last = lowest.copy(), highest.copy()
        while np.any(first < last):
            mid = (first + last) // 2
            enough = self.mass(mid) >= need
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
    kept = keep - (win.mass(m - 1) - p_hat)
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
    rest = np.clip(win.mass(m) - beta, 0.0, p_hat[edge])
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
        lower, upper = _dkw_band(p_hat, r)
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


def _log_value(pmf: NDArray[np.float64], lk: NDArray[np.float64]) -> tuple[float, float]:
    """``(log <p, k>, bound)``: the computed value and a bound on its distance to the value at
    the exact optimizer (in nats).

    Rounding model (unit roundoff ``u = 2^-53``): the closed forms of :func:`extreme_prior` use
    at most ``k`` additions per entry (a cumulative sum, or the knapsack's running budget) on
    numbers in [0, 1] and one clip or difference, so each entry is within
    ``delta = (4 k + 8) u`` of the exact optimizer's; ``<p, k>`` then moves by at most
    ``delta sum_l k_l``. Each ``log k_l = -|y - a_l| / b`` is two roundings of itself
    (relative ``2 u |log k_l|`` after ``exp``), and ``logsumexp`` of ``k`` terms adds a relative
    ``(k + 3) u``. In log space the first term is relative to the smaller of the computed and
    the exact value, bounded below by ``computed - delta sum_l k_l``: when that is not positive
    the bound is ``inf`` (the value cannot be certified, and a check fails).
    """
    u = 2.0**-53
    k = pmf.size
    value = float(logsumexp(np.log(pmf) + lk))
    if not math.isfinite(value):
        return value, 0.0 if value == -math.inf and not np.any(pmf[np.isfinite(lk)] > 0) else math.inf
    delta = (4 * k + 8) * u
    finite = np.isfinite(lk)
    log_total = float(logsumexp(lk[finite]))  # log sum_l k_l
    # delta * sum k / (<p,k> - delta * sum k), in log space
    log_ratio = math.log(delta) + log_total - value
    first = math.inf if log_ratio >= -math.log(2.0) else -math.log1p(-math.exp(log_ratio))  # >= log1p(ratio)
    kernel = 2.0 * u * float(np.max(np.abs(lk[finite]))) + u
    return value, first + kernel + (k + 3) * u
