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

The exact worst case of a Laplace release over two such sets is
:func:`pufferfish.loss.robust.worst_case_loss`; the inner problems are linear programs with the
closed forms of :func:`extreme_prior` (checked against :func:`scipy.optimize.linprog` in the
tests).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.special import logsumexp

from pufferfish._checks import short_text

PRIOR_SET_KINDS = ("dkw", "l1", "none")


def _check_size(n: float, name: str = "n") -> float:
    value = float(n)
    if not math.isfinite(value) or value <= 0.0:
        raise ValueError(f"{name} must be finite and > 0, got {n!r}")
    return value


def _check_confidence(confidence: float) -> float:
    c = float(confidence)
    if not 0.0 < c < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    return c


def _check_alpha(confidence: float, secrets: int) -> float:
    c = _check_confidence(confidence)
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
    confidence : float or None
        The confidence level the radius was computed for (:func:`dkw_radius`,
        :func:`l1_radius`), or None when the radius was given directly.
    """

    kind: str
    alphabet: NDArray[np.float64]
    center: NDArray[np.float64]
    radius: float
    confidence: float | None = None

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
        if self.confidence is not None and not 0.0 < float(self.confidence) < 1.0:
            raise ValueError(f"confidence must be in (0, 1) or None, got {self.confidence!r}")
        object.__setattr__(self, "alphabet", a)
        object.__setattr__(self, "center", p / p.sum())
        object.__setattr__(self, "radius", r)


def check_sets(sets: Mapping[str, PriorSet], conditionals: Mapping[str, Any]) -> dict[str, PriorSet]:
    """The prior sets of one adversary, checked against its discrete conditionals.

    Parameters
    ----------
    sets : mapping of str to PriorSet
        One set per secret, all of one kind on one alphabet.
    conditionals : mapping of str to DiscretePrior
        The point estimates: each set's alphabet must hold its prior's positive support, lie in
        its declared support, and the set must be centred on it (within 1e-9).

    Returns
    -------
    dict of str to PriorSet

    Raises
    ------
    ValueError, TypeError
        If a secret lacks a set, or a set breaks one of the rules above.
    """
    out = dict(sets)
    if set(out) != set(conditionals):
        raise ValueError(
            f"sets must give a prior set for each secret {sorted(conditionals)}, got {sorted(out)}"
        )
    first = next(iter(out.values()))
    for secret, ps in out.items():
        prior = conditionals[secret]
        if not isinstance(ps, PriorSet):
            raise TypeError(f"sets[{secret!r}] must be a PriorSet, got {type(ps).__name__}")
        if ps.kind != first.kind or not np.array_equal(ps.alphabet, first.alphabet):
            raise ValueError("sets must share one kind and one alphabet")
        if np.max(np.abs(mass_on(prior, ps.alphabet) - ps.center)) > 1e-9:
            raise ValueError(f"sets[{secret!r}] must be centred on the prior of {secret!r}")
    return out


def mass_on(prior: Any, alphabet: NDArray[np.float64]) -> NDArray[np.float64]:
    """The pmf of a DiscretePrior on ``alphabet``, shape (k,).

    Raises
    ------
    ValueError
        If ``alphabet`` leaves the prior's declared support or misses a point of positive mass.
    """
    idx = np.minimum(np.searchsorted(prior.support, alphabet), prior.support.size - 1)
    if not np.array_equal(prior.support[idx], alphabet):
        raise ValueError("a prior set's alphabet must lie within its prior's declared support")
    if not np.all(np.isin(prior.positive_support(), alphabet)):
        raise ValueError("a prior set's alphabet must hold every point of positive mass of its prior")
    return np.asarray(prior.pmf[idx], dtype=np.float64)


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
        return _l1_extremes(p_hat, lk[:, None], prior_set.radius, maximize)[0]  # only the order of lk counts
    return _dkw_extreme(p_hat, lk, prior_set.radius, maximize)


def _dkw_extreme(
    p_hat: NDArray[np.float64], lk: NDArray[np.float64], eta: float, maximize: bool
) -> NDArray[np.float64]:
    lower, upper = dkw_band(p_hat, eta)
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


def set_extremes(prior_set: PriorSet, values: Any, *, maximize: bool) -> NDArray[np.float64]:
    """For each column ``v`` of ``values``, a prior of the set maximizing (or minimizing) ``<P, v>``.

    Parameters
    ----------
    prior_set : PriorSet
    values : array_like, shape (k,) or (k, c)
        Non-negative functions on the alphabet (one per column), any shape: unlike
        :func:`extreme_prior` no unimodality is assumed (a column of a randomized mapping).
    maximize : bool

    Returns
    -------
    numpy.ndarray, shape (c, k)
        One pmf of the set per column attaining the extreme value (``(1, k)`` for a 1-D input).

    Notes
    -----
    *L1 ball*: the fractional knapsack of :func:`extreme_prior` holds for any objective: up to
    ``min(r / 2, 1 - P_hat(w*))`` of mass moves to a best point ``w*`` from the worst points first.

    *DKW band* (``L_l <= F_l <= U_l``): write ``P`` through its quantile function
    ``s(t) = min{l : F_l > t}`` for ``t`` in [0, 1), so that ``<P, v> = int_0^1 v[s(t)] dt``. The
    band holds iff ``a(t) <= s(t) <= b(t)`` for every ``t``, with ``a(t) = min{l : U_l > t}`` and
    ``b(t) = min{l : L_l > t}`` (``F >= L`` iff ``s <= b``; ``F <= U`` iff ``s >= a``), and
    ``s`` must be non-decreasing. Pointwise, the best ``s(t)`` is a best point of ``v`` on
    ``[a(t), b(t)]``; taking the *largest* best point gives a non-decreasing ``s`` (``a`` and
    ``b`` are non-decreasing in ``t``: if ``t < t'`` and ``s(t) > s(t')``, both points lie in
    both windows, so ``s(t)`` would be a larger best point of the window of ``t'``). Hence the
    extreme value is ``sum over pieces (t_1 - t_0) best(v on [a, b])`` over the pieces between
    consecutive values of ``{0, 1} U L U U``, where ``a`` and ``b`` are constant; the window
    extremes come from a sparse table, O(k log k) per column. Tested against HiGHS linear
    programming (:func:`scipy.optimize.linprog`) and :func:`extreme_prior` on unimodal kernels.
    """
    v = np.asarray(values, dtype=np.float64)
    if v.ndim == 1:
        v = v[:, None]
    k = prior_set.center.size
    if v.ndim != 2 or v.shape[0] != k:
        raise ValueError(f"values must have shape ({k},) or ({k}, c), got {np.shape(values)}")
    p_hat = prior_set.center
    c = v.shape[1]
    if prior_set.kind == "none" or prior_set.radius == 0.0:
        return np.tile(p_hat, (c, 1))
    if prior_set.kind == "l1":
        return _l1_extremes(p_hat, v, prior_set.radius, maximize)
    return _dkw_extremes(p_hat, v, prior_set.radius, maximize)


def _l1_extremes(
    p_hat: NDArray[np.float64], v: NDArray[np.float64], r: float, maximize: bool
) -> NDArray[np.float64]:
    """The fractional knapsack per column: only the ranking of ``v`` is used (a log kernel
    serves as well as the kernel)."""
    k, c = v.shape
    key = v if maximize else -v
    cols = np.arange(c)
    target = np.argmax(key, axis=0)  # a best point (the first on ties)
    order = np.argsort(key, axis=0, kind="stable")  # donors: worst first
    avail = p_hat[order].copy()  # (k, c)
    avail[order == target[None, :]] = 0.0
    budget = np.minimum(r / 2.0, 1.0 - p_hat[target])
    before = np.cumsum(avail, axis=0) - avail
    take = np.clip(budget[None, :] - before, 0.0, avail)
    pmf = np.tile(p_hat, (c, 1))
    np.subtract.at(pmf, (np.broadcast_to(cols, (k, c)), order), take)
    pmf[cols, target] += take.sum(axis=0)
    return np.maximum(pmf, 0.0)


def _dkw_extremes(
    p_hat: NDArray[np.float64], v: NDArray[np.float64], eta: float, maximize: bool
) -> NDArray[np.float64]:
    k, c = v.shape
    width, a, b = dkw_pieces(p_hat, eta)
    key = v if maximize else -v
    best = window_best(key, a, b)  # (pieces, c)
    pmf = np.zeros((c, k))
    np.add.at(pmf, (np.broadcast_to(np.arange(c), best.shape), best), width[:, None])
    return pmf


def dkw_pieces(
    p_hat: NDArray[np.float64], eta: float
) -> tuple[NDArray[np.float64], NDArray[np.intp], NDArray[np.intp]]:
    """The pieces of [0, 1] on which the DKW band's quantile window is constant.

    Returns
    -------
    (width, a, b) : numpy.ndarray, shape (q,) each
        Piece lengths (> 0, summing to 1) and the window ``[a, b]`` of alphabet positions that a
        quantile of a member of the band may take on the piece (:func:`set_extremes`, Notes):
        for every ``v >= 0``, ``max over the band of <P, v> = sum_q width_q max v[a_q..b_q]``.
    """
    k = p_hat.size
    lower, upper = dkw_band(p_hat, eta)
    t = np.unique(np.concatenate([[0.0, 1.0], lower, upper]))
    t = t[(t >= 0.0) & (t <= 1.0)]
    width = np.diff(t)
    mid = (t[:-1] + t[1:]) / 2.0
    a = np.minimum(np.searchsorted(upper, mid, side="right"), k - 1)
    b = np.minimum(np.searchsorted(lower, mid, side="right"), k - 1)
    keep = width > 0
    return width[keep], a[keep], b[keep]


def window_best(key: NDArray[np.float64], a: NDArray[np.intp], b: NDArray[np.intp]) -> NDArray[np.intp]:
    """Per window ``[a_q, b_q]`` and column, the largest index of the maximum of ``key``.

    Parameters
    ----------
    key : numpy.ndarray, shape (k, c)
        Values per position (rows) and column; ``-inf`` and ``inf`` allowed.
    a, b : numpy.ndarray of int, shape (q,)
        Windows, ``0 <= a_q <= b_q < k``.

    Returns
    -------
    numpy.ndarray of int, shape (q, c)
        The position of each window's maximum per column (the largest on ties), from a sparse
        table: O(k log k) per column to build, O(1) per window.
    """
    k, c = key.shape
    cols = np.arange(c)[None, :]

    def pick(i: NDArray[np.intp], j: NDArray[np.intp]) -> NDArray[np.intp]:
        ki, kj = key[i, cols], key[j, cols]
        take_j = (kj > ki) | ((kj == ki) & (j > i))
        return np.where(take_j, j, i)

    table = [np.broadcast_to(np.arange(k)[:, None], (k, c)).copy()]
    span = 1
    while 2 * span <= k:
        prev = table[-1]
        table.append(pick(prev[: k - 2 * span + 1], prev[span : k - span + 1]))
        span *= 2
    length = b - a + 1
    level = np.floor(np.log2(length)).astype(np.intp)
    out = np.empty((a.size, c), dtype=np.intp)
    for lev in np.unique(level):
        q = level == lev
        tab = table[lev]
        out[q] = pick(tab[a[q]], tab[b[q] - (1 << lev) + 1])
    return out


def dkw_band(p_hat: NDArray[np.float64], eta: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The DKW band ``(L, U)`` of the CDF of ``p_hat`` (shape (k,) each): ``max(F_hat - eta, 0)``
    and ``min(F_hat + eta, 1)``, both 1 at the last point (every CDF ends at 1)."""
    f_hat = np.minimum(np.cumsum(p_hat), 1.0)
    f_hat[-1] = 1.0
    lower = np.maximum(f_hat - eta, 0.0)
    upper = np.minimum(f_hat + eta, 1.0)
    lower[-1] = upper[-1] = 1.0
    return lower, upper


def point_mass_extremes(prior_set: PriorSet) -> tuple[NDArray[np.float64], NDArray[np.float64], float]:
    """``(lowest, highest, bound)``: the smallest and largest ``P(w)`` over the set, per point.

    Parameters
    ----------
    prior_set : PriorSet

    Returns
    -------
    lowest, highest : numpy.ndarray, shape (k,)
        ``min`` and ``max`` of ``P(a_w)`` over the members ``P`` of the set, for each point.
    bound : float
        Every entry is within ``bound = (4 k + 8) u`` of its exact value (the rounding model of
        :func:`log_value`: a cumulative sum and two clipped differences on numbers in [0, 1]); 0
        for a set of one member (kind ``none``, radius 0, or one point), whose entries are exact.

    Notes
    -----
    The extremes of the linear functional ``P -> P(w)`` (a column ``e_w`` of
    :func:`set_extremes`), in closed form and O(k) for all points at once.

    *L1 ball* of radius ``r``: move up to ``r / 2`` of mass onto ``w`` (or off it), as far as the
    simplex allows: ``max = min(1, P_hat(w) + r/2)``, ``min = max(0, P_hat(w) - r/2)`` (one point:
    1).

    *DKW band* ``L_l <= F_l <= U_l`` (:func:`dkw_band`, ``L_{-1} = U_{-1} = 0``): ``max P(w) =
    U_w - L_{w-1}``, attained by ``F_l = L_l`` for ``l < w`` and ``F_l = max(U_w, L_l)`` for
    ``l >= w`` (non-decreasing, inside the band since ``U`` is non-decreasing); ``min P(w) =
    max(0, L_w - U_{w-1})``, attained by ``F_l = U_l`` for ``l < w``, ``F_w = max(L_w, U_{w-1})``
    and ``F_l = max(F_w, L_l)`` after. No CDF of the band does better, as ``P(w) = F_w -
    F_{w-1}``. Tested against :func:`set_extremes` on the columns of the identity.
    """
    p_hat = prior_set.center
    k = p_hat.size
    r = prior_set.radius
    if prior_set.kind == "none" or r == 0.0 or k == 1:  # the set is {P_hat}, or {1} on one point
        return p_hat.copy(), p_hat.copy(), 0.0
    if prior_set.kind == "l1":
        highest = np.minimum(p_hat + r / 2.0, 1.0)
        lowest = np.maximum(p_hat - r / 2.0, 0.0)
    else:
        lower, upper = dkw_band(p_hat, r)
        lower_before = np.concatenate([[0.0], lower[:-1]])
        upper_before = np.concatenate([[0.0], upper[:-1]])
        highest = np.clip(upper - lower_before, 0.0, 1.0)
        lowest = np.clip(lower - upper_before, 0.0, 1.0)
    return lowest, highest, (4 * k + 8) * 2.0**-53


def log_value(pmf: NDArray[np.float64], lk: NDArray[np.float64]) -> tuple[float, float]:
    """``(log <p, k>, bound)``: the computed value and a bound on its distance to the value at
    the exact optimizer (in nats); ``pmf`` and ``lk`` of shape (k,).

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
    with np.errstate(divide="ignore"):
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


def check_prior_set(
    prior_set: str | None,
    confidence: float,
    prior_radius: float | None,
    *,
    prior_model: tuple[str, int | None],
    delta: float,
    noise: str,
) -> tuple[str, float, float | None]:
    """``(kind, confidence, radius)`` of the prior sets, validated (see :func:`calibrate_table`).

    Raises
    ------
    ValueError
        On an unknown kind, a confidence outside (0, 1), a negative radius, or a set asked for
        fitted priors, ``delta > 0`` or Gaussian noise.
    """
    applies = prior_model[0] == "empirical" and delta == 0.0 and noise == "laplace"
    kind = ("dkw" if applies else "none") if prior_set is None else str(prior_set).strip().lower()
    if kind not in PRIOR_SET_KINDS:
        raise ValueError(f"prior_set must be one of {', '.join(PRIOR_SET_KINDS)}, got {prior_set!r}")
    conf = _check_confidence(confidence)
    radius = None if prior_radius is None else float(prior_radius)
    if radius is not None and not (math.isfinite(radius) and radius >= 0.0):
        raise ValueError(f"prior_radius must be finite and >= 0, got {prior_radius!r}")
    if kind != "none" and not applies:
        raise ValueError(
            f"prior_set {kind!r} needs empirical priors, delta = 0 and Laplace noise (the worst case "
            f"over a set is checked for pure eps); got prior {prior_model[0]}, delta {delta:g}, "
            f"{noise} noise: give prior_set 'none'"
        )
    return kind, conf, radius


def set_summary(sets: Mapping[str, Any] | None) -> dict[str, Any]:
    """``{"kind", "confidence", "radius": {secret: radius}}`` of one adversary's prior sets, the
    form results and reports carry (kind ``"none"``, no radius, for ``None``: the estimates).
    Sets on a joint alphabet (:class:`pufferfish.priors.balls.JointBall`) add ``"requested"``
    (``dkw`` asked for on several columns is the L1 ball) and ``"alphabet"`` (its tuples); a DKW
    band on a declared domain (:class:`pufferfish.priors.bands.JointBand`) adds ``"order"``, the
    order its CDF is taken in."""
    if sets is None:
        return {"kind": "none", "confidence": None, "radius": {}}
    first = next(iter(sets.values()))
    out = {
        "kind": first.kind,
        "confidence": first.confidence,
        "radius": {secret: ps.radius for secret, ps in sets.items()},
    }
    if hasattr(first, "requested"):
        size = first.size if hasattr(first, "order") else first.alphabet.shape[0]
        out.update(requested=first.requested, alphabet=int(size))
    if hasattr(first, "order"):  # a DKW band of a joint CDF (pufferfish.priors.bands)
        out["order"] = first.order
    return out


def set_label(prior_set: Mapping[str, Any] | None) -> str:
    """A short label of a :func:`set_summary` for tables: ``"dkw 95% set"`` or ``"estimate only"``."""
    if prior_set is None or prior_set["kind"] == "none":
        return "estimate only"
    return f"{prior_set['kind']} {_level(prior_set)}set"


def _level(prior_set: Mapping[str, Any]) -> str:
    """``"95% "`` for a set of a confidence level, ``""`` for one given by its radius."""
    return f"{100 * prior_set['confidence']:g}% " if prior_set.get("confidence") is not None else ""


def prior_scope(prior_set: Mapping[str, Any] | None, prior_kind: str = "empirical") -> str:
    """For which adversary priors a check holds, in words.

    Parameters
    ----------
    prior_set : mapping or None
        A calibration's ``prior_set`` (``{"kind", "confidence", "radius": {secret: r}}``), or None.
    prior_kind : str
        Whose prior a check without a set holds for (``"empirical"``, ``"fitted Gaussian"``...).

    Returns
    -------
    str
        One sentence.
    """
    if prior_set is None:
        return f"It holds for adversaries whose prior is the {prior_kind} one."
    ps = prior_set
    shape = "DKW band (sup-distance of the CDFs)" if ps["kind"] == "dkw" else "L1 ball"
    if ps.get("order"):
        shape = f"DKW band of the joint CDF in {ps['order']} order, on the declared domain"
    elif ps.get("requested") == "dkw" and ps["kind"] == "l1":
        shape += " (dkw asked for: on several columns without a declared domain a CDF band has no form)"
    radii = ", ".join(f"{short_text(s)} {r:.4g}" for s, r in ps["radius"].items())
    return (
        f"It holds for every adversary prior within the {_level(ps)}{shape} around the empirical "
        f"estimate of each secret (radius {radii}): the worst case over the set was checked."
    )
