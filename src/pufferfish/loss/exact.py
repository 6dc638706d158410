"""Exact privacy loss of a Laplace release for discrete priors (SPEC sec 2.1).

For a pair of secrets ``(s_i, s_j)`` and a prior ``rho``, the privacy loss of ``Y = X + N`` with
``N ~ Laplace(scale)`` is ``sup_y |log P(y | s_i) - log P(y | s_j)|``. Between two neighbouring
support points ``P(y | s) = A e^{-y/scale} + B e^{y/scale}``, so the log-ratio of two such densities
is monotone there (a Moebius function of ``e^{2y/scale}``) and constant beyond the ends: the
supremum is attained at a support point. Each ``log P(x_k | s)`` is a left and a right sum that
obey one-step recursions, evaluated here in log space by recursive doubling in O(n).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.special import logsumexp

from pufferfish._checks import check_scale
from pufferfish.loss.laplace_sums import laplace_log_sums
from pufferfish.priors.distributions import RELEASE_GRID, DiscretePrior, to_release_grid, union_support
from pufferfish.priors.scenario import Scenario


@dataclass(frozen=True)
class PairLoss:
    """Privacy loss of one discriminative pair under one prior.

    Attributes
    ----------
    prior : str
        Name of the adversary prior.
    pair : (str, str)
        The secrets ``(s_i, s_j)``.
    loss : float
        ``max_y |log P(y|s_i) - log P(y|s_j)|`` (nats, >= 0, may be ``inf`` at ``scale = 0``).
    worst_y : float
        A released value ``y`` attaining the maximum (a support point).
    larger : str
        The secret whose density is larger at ``worst_y``.
    """

    prior: str
    pair: tuple[str, str]
    loss: float
    worst_y: float
    larger: str


@dataclass(frozen=True)
class PrivacyLoss:
    """Exact privacy loss of a Laplace release over every pair and prior of a scenario.

    Attributes
    ----------
    scale : float
        Laplace scale ``theta`` (``b``) evaluated, >= 0; variance of the noise ``2 theta^2``.
    loss : float
        The maximum over pairs and priors of the pair loss (nats).
    prior, pair, worst_y, larger :
        Where the maximum is attained (see :class:`PairLoss`).
    error_bound : float
        First-order bound on the floating-point error of ``loss`` (nats). A scale is accepted for
        ``epsilon`` only when ``loss + error_bound <= epsilon``.
    pairs : tuple of PairLoss
        The loss of every (prior, pair).
    """

    scale: float
    loss: float
    prior: str
    pair: tuple[str, str]
    worst_y: float
    larger: str
    error_bound: float
    pairs: tuple[PairLoss, ...]

    def satisfies(self, epsilon: float) -> bool:
        """Whether ``loss + error_bound <= epsilon``: the release is eps-PP for these priors."""
        return self.loss + self.error_bound <= epsilon


#: Unit roundoff of float64.
_U = 2.0**-53

#: Machine epsilon of float64 (``2 u``).
_EPS = float(np.finfo(np.float64).eps)


def laplace_log_density(
    prior: DiscretePrior, points: NDArray[np.float64], scale: float
) -> tuple[NDArray[np.float64], float]:
    """``log P(y | s)`` of ``Y = X + Laplace(scale)`` at grid points containing the support.

    Parameters
    ----------
    prior : DiscretePrior
        Distribution of ``X`` given the secret.
    points : numpy.ndarray, shape (N,)
        Strictly increasing grid of released values ``y`` that contains ``prior.support``.
    scale : float
        Laplace scale ``theta > 0``.

    Returns
    -------
    log_density : numpy.ndarray, shape (N,)
        ``log sum_l p_l e^{-|y - x_l| / theta} / (2 theta)`` at each point.
    error_bound : float
        First-order bound on the absolute rounding error of any entry (nats); the bound of each
        entry grows with its magnitude (see Notes).

    Raises
    ------
    ValueError
        If ``scale`` is not finite and > 0, or ``points`` lacks a support point of ``prior``.

    Notes
    -----
    SPEC sec 2.1. ``P(x_k | s) = (L_k + R_k) / (2 theta)`` with the left sums
    ``L_k = sum_{l <= k} p_l e^{-(x_k - x_l)/theta}`` and the strict right sums. ``L`` obeys
    ``L_k = L_{k-1} e^{-(x_k - x_{k-1})/theta} + p_k``, an associative composition of maps, so
    it is computed in log space by recursive doubling: O(N) work in ``2 log2 N`` vectorised passes.
    Every intermediate is the log of a partial sum, and every decay is taken from two grid points
    directly, never accumulated, so huge ``(x_N - x_1)/theta`` costs no precision and the rounding
    error grows with the depth ``log2 N`` of the composition, not with ``N``. See
    :func:`pufferfish.loss.laplace_sums.laplace_log_sums` for the bound.
    """
    log_density, errors = _log_density_and_errors(prior, points, scale)
    return log_density, float(errors.max())


def _log_density_and_errors(
    prior: DiscretePrior, points: NDArray[np.float64], scale: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """:func:`laplace_log_density` with a first-order rounding bound for each entry."""
    if not scale > 0 or not math.isfinite(scale):
        raise ValueError(f"scale must be finite and > 0, got {scale!r}")
    grid = np.asarray(points, dtype=np.float64)
    log_sum, errors = laplace_log_sums(grid, prior.log_on(grid), scale)
    return log_sum - math.log(2.0 * scale), errors + _density_rounding(scale) + prior.log_error


def _density_rounding(scale: float) -> float:
    """The rounding of ``- log(2 scale)`` in a release log-density (beside the sums' own bound)."""
    return 4 * _EPS * (abs(math.log(2.0 * scale)) + 1.0)


def pair_privacy_loss(
    prior_i: DiscretePrior, prior_j: DiscretePrior, scale: float
) -> tuple[float, float, int, float]:
    """Exact privacy loss of a Laplace release for one pair of priors.

    Parameters
    ----------
    prior_i, prior_j : DiscretePrior
        ``P(. | s_i)`` and ``P(. | s_j)``.
    scale : float
        Laplace scale ``theta >= 0``. ``0`` means no noise: the loss is the largest prior
        log-ratio ``max_x |log p_i(x) - log p_j(x)|`` (``inf`` if one prior puts mass where the
        other puts none).

    Returns
    -------
    loss : float
        ``sup_y |log P(y|s_i) - log P(y|s_j)|`` in nats.
    worst_y : float
        A support point attaining it.
    sign : int
        ``+1`` if ``P(worst_y|s_i) >= P(worst_y|s_j)``, else ``-1``.
    error_bound : float
        First-order bound on the rounding error of ``loss``.

    Raises
    ------
    ValueError
        If ``scale`` is not finite and >= 0.

    Notes
    -----
    SPEC sec 2.1 (beyond the seed papers): the supremum over ``y`` is attained on the union
    support, so this is exact up to floating-point rounding. O(n) for ``n`` support points.
    """
    scale = check_scale(scale)
    grid = union_support(prior_i, prior_j)
    if scale == 0.0:
        lp, lq = prior_i.log_on(grid), prior_j.log_on(grid)
        used = np.isfinite(lp) | np.isfinite(lq)
        with np.errstate(invalid="ignore"):
            diff = lp[used] - lq[used]
        size = np.abs(diff)
        k = int(np.argmax(size))
        # log p from a renormalised pmf: 2u relative in p (so 2u absolute in log p), u |log p| for
        # the log, u |diff| for the subtraction; bound = max(|diff| + err) - |diff_k| (as below)
        with np.errstate(invalid="ignore"):
            err0 = 4.0 * _U * (2.0 + np.abs(lp[used]) + np.abs(lq[used]))
        bound = float(np.max(size + err0)) - float(size[k]) if np.isfinite(size).all() else 0.0
        return (
            float(size[k]),
            float(grid[used][k]),
            1 if diff[k] >= 0 else -1,
            bound + prior_i.log_error + prior_j.log_error,
        )
    ld_i, err_i = _log_density_and_errors(prior_i, grid, scale)
    ld_j, err_j = _log_density_and_errors(prior_j, grid, scale)
    return _loss_of_densities(grid, ld_i, err_i, ld_j, err_j)


def _loss_of_densities(
    grid: NDArray[np.float64],
    ld_i: NDArray[np.float64],
    err_i: NDArray[np.float64],
    ld_j: NDArray[np.float64],
    err_j: NDArray[np.float64],
) -> tuple[float, float, int, float]:
    """:func:`pair_privacy_loss` from the two release log-densities on ``grid`` (scale > 0)."""
    diff = ld_i - ld_j
    size = np.abs(diff)
    k = int(np.argmax(size))
    # The true loss is at most max_k(|diff_k| + err_k): the bound is what that adds to the maximum.
    bound = float(np.max(size + err_i + err_j)) - float(size[k])
    return float(size[k]), float(grid[k]), 1 if diff[k] >= 0 else -1, bound


def privacy_loss(scenario: Scenario, scale: float) -> PrivacyLoss:
    """Exact privacy loss of adding ``Laplace(scale)`` noise, over every pair and prior.

    Parameters
    ----------
    scenario : Scenario
        Discriminative pairs and adversary priors (discrete).
    scale : float
        Laplace scale ``theta >= 0`` (same unit as the support).

    Returns
    -------
    PrivacyLoss
        The maximum loss, the prior, pair and released value ``y`` that attain it, a rounding
        error bound, and the loss of every (prior, pair).

    Raises
    ------
    ValueError
        If ``scale`` is not finite and >= 0.

    Notes
    -----
    SPEC sec 2.1. The release is (eps, S)-pufferfish private for these priors (seed 001 eq 1)
    exactly when ``loss <= eps``; :meth:`PrivacyLoss.satisfies` also subtracts the rounding bound.

    Examples
    --------
    >>> from pufferfish.priors.distributions import DiscretePrior
    >>> from pufferfish.priors.scenario import Scenario
    >>> sc = Scenario.single(DiscretePrior([0, 1], [0.52, 0.48]), DiscretePrior([0, 1], [0.5, 0.5]))
    >>> round(privacy_loss(sc, 0.0).loss, 4)
    0.0408
    """
    scale = check_scale(scale)
    results: list[PairLoss] = []
    total_bound = 0.0
    # pairs of one adversary prior whose two priors share one support array (the times and states
    # of a Markov chain: thousands of priors on 0..T) are evaluated together, a batch per prior
    # (:func:`_shared_support_losses`); the others one pair at a time
    batches: dict[tuple[str, int], list[tuple[tuple[str, str], DiscretePrior, DiscretePrior]]] = {}
    for prior, (a, b), p_i, p_j in scenario.iter_pairs():
        if p_i.support is p_j.support:
            batches.setdefault((prior.name, id(p_i.support)), []).append(((a, b), p_i, p_j))
            continue
        loss, y, sign, bound = pair_privacy_loss(p_i, p_j, scale)
        results.append(
            PairLoss(prior=prior.name, pair=(a, b), loss=loss, worst_y=y, larger=a if sign > 0 else b)
        )
        total_bound = max(total_bound, bound)
    for (name, _), items in batches.items():
        losses, bound = _shared_support_losses(name, items, scale)
        results.extend(losses)
        total_bound = max(total_bound, bound)
    worst: PairLoss | None = None
    for item in results:
        if worst is None or item.loss > worst.loss:
            worst = item
    assert worst is not None  # a Scenario always has a pair and a prior
    return PrivacyLoss(
        scale=scale,
        loss=worst.loss,
        prior=worst.prior,
        pair=worst.pair,
        worst_y=worst.worst_y,
        larger=worst.larger,
        error_bound=total_bound,
        pairs=tuple(results),
    )


def _shared_support_losses(
    name: str, items: list[tuple[tuple[str, str], DiscretePrior, DiscretePrior]], scale: float
) -> tuple[list[PairLoss], float]:
    """:func:`pair_privacy_loss` of many pairs of one prior whose priors share one support, as
    array operations, a chunk of pairs at a time (:func:`_chunk_losses`; chunks of about
    :data:`_CHUNK_ENTRIES` entries per array, on two threads when there are many: NumPy's loops
    release the GIL, and each pair's numbers do not depend on the chunk it is in). Returns the pair
    losses (in the order of ``items``) and the largest rounding bound."""
    size = max(items[0][1].support.size, 1)
    step = max(1, _CHUNK_ENTRIES // size)
    chunks = [items[lo : lo + step] for lo in range(0, len(items), step)]
    if len(chunks) < 4:
        done = [_chunk_losses(name, chunk, scale) for chunk in chunks]
    else:
        with ThreadPoolExecutor(max_workers=2) as pool:
            done = list(pool.map(lambda chunk: _chunk_losses(name, chunk, scale), chunks))
    out = [loss for losses, _ in done for loss in losses]
    return out, max(bound for _, bound in done)


#: Entries (pairs x support points) of one chunk of :func:`_shared_support_losses`: arrays of
#: 2 MB, a few of them alive per thread.
_CHUNK_ENTRIES = 250_000


def _chunk_losses(
    name: str, items: list[tuple[tuple[str, str], DiscretePrior, DiscretePrior]], scale: float
) -> tuple[list[PairLoss], float]:
    """The pair losses of one chunk: the release log-densities of every distinct prior of the
    chunk in one call of :func:`~pufferfish.loss.laplace_sums.laplace_log_sums` (the same sums
    and the same per-entry rounding bounds as :func:`_log_density_and_errors`), then every pair's
    maximum; at scale 0 the prior log-ratios with the bound of :func:`pair_privacy_loss`."""
    support = items[0][1].support
    rows: dict[int, int] = {}
    stack: list[NDArray[np.float64]] = []
    log_errors: list[float] = []
    for _, p_i, p_j in items:
        for p in (p_i, p_j):
            if id(p) not in rows:
                rows[id(p)] = len(stack)
                assert p.log_pmf is not None
                stack.append(p.log_pmf)
                log_errors.append(p.log_error)
    logp = np.array(stack)
    extra = np.array(log_errors)
    ii = np.array([rows[id(p_i)] for _, p_i, _ in items])
    jj = np.array([rows[id(p_j)] for _, _, p_j in items])
    if scale > 0.0:
        density, errors = laplace_log_sums(support, logp, scale)
        errors = errors + _density_rounding(scale) + extra[:, None]
        # the constant log(2 scale) cancels in every difference: the densities are used as sums
        diff = density[ii] - density[jj]
        size = np.abs(diff)
        k = np.argmax(size, axis=1)
        at = np.arange(k.size)
        loss = size[at, k]
        bound = np.max(size + errors[ii] + errors[jj], axis=1) - loss
    else:
        lp, lq = logp[ii], logp[jj]
        used = np.isfinite(lp) | np.isfinite(lq)
        with np.errstate(invalid="ignore"):
            diff = np.where(used, lp - lq, 0.0)
        size = np.abs(diff)
        k = np.argmax(size, axis=1)
        at = np.arange(k.size)
        loss = size[at, k]
        with np.errstate(invalid="ignore"):
            err0 = np.where(used, 4.0 * _U * (2.0 + np.abs(lp) + np.abs(lq)), 0.0)
            bound = np.where(np.isfinite(loss), np.max(size + err0, axis=1) - loss, 0.0)
        bound = bound + extra[ii] + extra[jj]
    signs = (diff[at, k] >= 0).tolist()
    out = [
        PairLoss(name, item[0], value, y, item[0][0] if up else item[0][1])
        for item, value, y, up in zip(items, loss.tolist(), support[k].tolist(), signs, strict=True)
    ]
    return out, float(bound.max())


# ---------------------------------------------------------------------------------------------
# Many pairs at once


def padded(priors: Sequence[DiscretePrior]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Support points and log-probabilities of many priors, padded with ``-inf`` mass.

    Parameters
    ----------
    priors : sequence of DiscretePrior, length K

    Returns
    -------
    (numpy.ndarray, numpy.ndarray), each of shape (K, m)
        Support points (padding 0) and log-probabilities (padding ``-inf``), ``m`` the largest
        support size.
    """
    m = max(p.size for p in priors)
    xs = np.zeros((len(priors), m))
    lp = np.full((len(priors), m), -np.inf)
    for k, p in enumerate(priors):
        assert p.log_pmf is not None
        xs[k, : p.size] = p.support
        lp[k, : p.size] = p.log_pmf
    return xs, lp


def own_pair_losses(
    first: Sequence[DiscretePrior], second: Sequence[DiscretePrior], scale: float
) -> NDArray[np.float64]:
    """Exact loss plus rounding bound of many pairs, each with ``Laplace(scale)`` (SPEC sec 2.1).

    Parameters
    ----------
    first, second : sequence of DiscretePrior, length K
        The pairs ``(first[k], second[k])`` (seed 000: each user's own pair).
    scale : float
        Laplace scale (>= 0).

    Returns
    -------
    numpy.ndarray, shape (K,)
        ``loss + error bound`` of each pair; a pair passes eps when its entry is ``<= eps``.

    Notes
    -----
    Small supports are evaluated all at once (dense ``logsumexp`` over (K, points, atoms)); a pair
    with more than 64 atoms goes through :func:`privacy_loss`. The loss is attained at a support
    point (module docstring), so the dense evaluation at every support point is exact up to
    rounding: each log density is a ``logsumexp`` of ``m`` terms whose arguments carry at most
    ``span + max |log p| + 1`` in magnitude, so ``8 eps m (span + max |log p| + 1)`` bounds the
    error of the difference of two of them. A pair whose support is off the release grid adds
    ``RELEASE_GRID / scale`` (see below).
    """
    out = np.empty(len(first))
    small = [k for k in range(len(first)) if first[k].size + second[k].size <= 64]
    large = [k for k in range(len(first)) if first[k].size + second[k].size > 64]
    for k in large:
        check = privacy_loss(Scenario.single(first[k], second[k]), scale)
        out[k] = check.loss + check.error_bound
    if small and scale == 0.0:
        for k in small:
            check = privacy_loss(Scenario.single(first[k], second[k]), scale)
            out[k] = check.loss + check.error_bound
    elif small:
        for chunk in range(0, len(small), 20_000):
            ids = small[chunk : chunk + 20_000]
            xa, la = padded([first[k] for k in ids])
            xb, lb = padded([second[k] for k in ids])
            points = np.concatenate([xa, xb], axis=1)  # every support point (padding repeats)
            da = logsumexp(la[:, None, :] - np.abs(points[:, :, None] - xa[:, None, :]) / scale, axis=2)
            db = logsumexp(lb[:, None, :] - np.abs(points[:, :, None] - xb[:, None, :]) / scale, axis=2)
            loss = np.abs(da - db).max(axis=1)
            span = float(np.abs(points).max()) * 2.0 / scale
            fin = np.concatenate([la[np.isfinite(la)], lb[np.isfinite(lb)]])
            bound = 8.0 * _EPS * points.shape[1] * (span + float(np.abs(fin).max()) + 1.0)
            out[ids] = loss + bound
    if scale > 0.0 and any(
        not np.array_equal(to_release_grid(p.support), p.support) for p in (*first, *second)
    ):
        # the sum is released on the grid (priors.to_release_grid): round(D_i + R) + N is not a
        # post-processing of D_i + N, but it moves every centre by <= RELEASE_GRID / 2, so each log
        # density by <= RELEASE_GRID / (2 scale) and the loss by at most RELEASE_GRID / scale
        out += RELEASE_GRID / scale
    return out
