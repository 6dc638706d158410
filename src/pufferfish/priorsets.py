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
    ``y`` the two sets are optimized separately by :func:`extreme_prior`. O(k) points, each an
    O(k log k) (l1) or O(k^2) (dkw) inner problem.
    """
    b = check_scale(scale)
    a = set_i.alphabet
    if set_j.alphabet.shape != a.shape or np.any(set_j.alphabet != a):
        raise ValueError("set_i and set_j must be on the same alphabet")
    best = SetLoss(b, -math.inf, float(a[0]), 0)
    for y in a:
        dist = np.abs(a - y)
        if b > 0.0:
            lk = -dist / b
        else:
            lk = np.where(dist == 0.0, 0.0, -np.inf)
        with np.errstate(divide="ignore"):
            hi = [_log_value(extreme_prior(s, lk, maximize=True), lk) for s in (set_i, set_j)]
            lo = [_log_value(extreme_prior(s, lk, maximize=False), lk) for s in (set_i, set_j)]
        for side, (h, low) in enumerate(((hi[0], lo[1]), (hi[1], lo[0]))):
            value = h[0] - low[0]
            if math.isnan(value):  # no prior of either set reaches y (b = 0): no evidence there
                continue
            if value > best.loss or (value == best.loss and h[1] + low[1] > best.error):
                best = SetLoss(b, float(value), float(y), side, float(h[1] + low[1]))
    return best


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
