"""The exact worst case of the product channel over two L1 balls of joint priors (issue 31): a
fractional knapsack at each vertex of the product grid (:func:`ball_loss`, proof in its
docstring). The balls are :class:`pufferfish.priors.balls.JointBall`.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pufferfish.loss.divergence import MemoryLimitError
from pufferfish.loss.product import axes_of
from pufferfish.priors.balls import JointBall
from pufferfish.priors.joint import Metric, atom_distances

#: Largest (grid vertices) x (alphabet tuples) one worst case over two balls evaluates; each
#: entry is sorted once per check (about 0.1 microsecond of work per entry and log), so a check
#: stays within seconds. Beyond it the check answers "not run".
MAX_BALL_ENTRIES = 50_000_000

#: Entries per block of vertices (memory: a few float64 arrays of this size).
_BLOCK = 2_000_000

_U = 2.0**-53


@dataclass(frozen=True)
class BallLoss:
    """The worst case of the product channel over two balls, for one pair.

    Attributes
    ----------
    loss : float
        ``max`` over the grid's vertices ``y`` and both directions of ``log(max_P f_P(y) /
        min_Q f_Q(y))`` (nats): the supremum over released values and priors in the balls.
    error_bound : float
        Bound on the rounding error of ``loss``.
    worst_vertex : tuple of float
        A vertex where it is attained.
    vertices : int
        Vertices evaluated.
    """

    loss: float
    error_bound: float
    worst_vertex: tuple[float, ...]
    vertices: int


def ball_loss(ball_i: JointBall, ball_j: JointBall, metric: Metric, scale: float) -> BallLoss:
    """Exact worst-case pufferfish loss of the product channel of ``scale`` over two L1 balls.

    Parameters
    ----------
    ball_i, ball_j : JointBall
        The sets of ``P(. | s_i)`` and ``P(. | s_j)``, on one alphabet ``A`` (k tuples).
    metric : Metric
        Units and categorical columns (the channel of
        :func:`pufferfish.loss.product.product_laplace_loss`).
    scale : float
        ``b``, finite and > 0.

    Returns
    -------
    BallLoss

    Raises
    ------
    ValueError
        If the alphabets differ or ``scale`` is not finite and > 0.
    pufferfish.loss.divergence.MemoryLimitError
        If (vertices) x ``k`` exceeds :data:`MAX_BALL_ENTRIES` ("not run").

    Notes
    -----
    *Where the maximum is.* Every prior of either ball is supported on ``A``. For fixed priors
    ``P, Q`` on ``A``, the supremum over released ``y`` of ``|log f_P(y) - log f_Q(y)|`` is
    attained on the product grid ``G`` of the values of ``A`` per numeric column and every label
    per categorical column (the vertex argument of
    :func:`pufferfish.loss.product.product_laplace_loss`, whose grid for ``P, Q`` is a subset of ``G``).
    Hence ``sup_y sup_{P, Q} = sup_{P, Q} max_{y in G} = max_{y in G} sup_{P, Q}``, and for a fixed
    ``y`` the numerator and denominator are optimised separately: the loss is ``max_{y in G}
    max(log N_i(y) - log D_j(y), log N_j(y) - log D_i(y))``.

    *The inner problems are fractional knapsacks.* With ``K(x) = exp(-d(y, x) / b)`` (the channel's
    density up to a constant common to all ``x``), ``N(y) = max <P, K>`` over ``P >= 0``, ``sum P =
    1``, ``||P - P_hat||_1 <= r``. Any feasible ``P`` moves mass ``t <= r / 2`` out of some tuples
    and the same ``t`` into others. Adding the mass to ``x* = argmax K`` and taking it from the
    tuples of smallest ``K`` first (each at most ``P_hat(x)``) is optimal by exchange: moving any
    unit of mass from a tuple of larger ``K`` or to a tuple of smaller ``K`` cannot increase
    ``<P, K>``; and ``t = min(r / 2, 1 - P_hat(x*))`` (larger ``t`` never hurts). The minimum
    ``D(y)`` is the mirror image: add ``t`` to ``argmin K``, take from the largest ``K`` first.

    *Computation and rounding.* Per vertex, ``log K`` is formed in nats and shifted by its maximum
    (so ``K <= 1``); tuples are sorted by ``K`` and the removal is a clipped cumulative sum, so
    every tuple keeps ``P_hat(x)``, 0, or (the one it stops in) a difference of cumulative sums,
    within ``k u`` of the exact mass: at most ``k u`` times the largest ``K`` (1) absolutely. Each
    ``K`` is within ``(d + 2) u |log K| + u`` relative, and ``|log K| K <= 1 / e``, so the
    kernels add at most ``(d + 3) u`` absolutely; the sum of ``k`` non-negative terms is within
    ``k u`` relative. With ``N >= D``, each log is within ``(2 k + d + 4) u (1 + 1 / D)``; the
    bound doubles it for the two logs and adds ``u |loss|`` for the subtraction. The vertex with
    the largest loss plus bound is reported (the certified maximum). A categorical column's rate
    ``1 / (b w_k)`` is raised by a relative ``2^-40``, far above the rounding of the sum and the
    division (a stronger response; its loss is never smaller).

    *The order does not depend on the scale.* ``log K = -D / b`` with ``D = sum_k d_k / w_k``
    (the categorical terms raised as above), and dividing by ``b > 0`` is monotone in floating
    point too, so the tuples are sorted by ``D`` once per pair and vertex
    (:func:`_sorted_blocks`) and every scale the search tries reuses that order (kept for the last
    pair up to :data:`MAX_CACHED_ENTRIES` entries).
    """
    if not np.array_equal(ball_i.alphabet, ball_j.alphabet):
        raise ValueError("ball_i and ball_j must share one alphabet")
    if not (isinstance(scale, (int, float)) and math.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be finite and > 0, got {scale!r}")
    alphabet = ball_i.alphabet
    k = alphabet.shape[0]
    axes = axes_of([alphabet], metric)  # the alphabet holds both centres' supports
    shape = tuple(ax.size for ax in axes)
    vertices = math.prod(shape)
    if vertices * k > MAX_BALL_ENTRIES:
        raise MemoryLimitError(
            f"not run: the worst case over the L1 balls evaluates {vertices:,} vertices x {k:,} tuples "
            f"(more than {MAX_BALL_ENTRIES:,}): bin the columns, or give --prior-set none"
        )
    p_i, p_j = ball_i.mass(), ball_j.mass()
    t_i = min(ball_i.radius / 2.0, 1.0)
    t_j = min(ball_j.radius / 2.0, 1.0)
    best = (-math.inf, 0.0, 0)
    for flat, order, dist in _sorted_blocks(alphabet, metric, axes, shape):
        log_k = dist / -float(scale)  # K ascending along each row: distances descending
        with np.errstate(invalid="ignore"):  # identity axes: K = 0 off the vertex's label
            log_k -= np.where(np.isfinite(log_k[:, -1:]), log_k[:, -1:], 0.0)
        kern = np.exp(log_k)  # ascending, last is 1 (0 when no tuple has the vertex's kept label)
        values = []
        for p, t in ((p_i, t_i), (p_j, t_j)):
            mass = p[order]
            values.append((knapsack(mass, kern, t, up=True), knapsack(mass, kern, t, up=False)))
        (n_i, d_i), (n_j, d_j) = values
        loss, err = bounded_ratios(n_i, d_i, n_j, d_j, 2 * k + len(axes) + 4)
        upper = loss + err
        at = int(np.argmax(upper))
        if upper[at] > best[0] + best[1]:
            best = (float(loss[at]), float(err[at]), int(flat[at]))
    value, error, where = best
    vertex = np.unravel_index(where, shape)
    error += ball_i.center.log_error + ball_j.center.log_error
    return BallLoss(value, error, tuple(float(axes[c][vertex[c]]) for c in range(len(axes))), vertices)


#: Largest (vertices) x (tuples) whose sorted distances are kept for the next check of the same
#: pair (12 bytes each: at most about 384 MB); the optimal search checks one pair at many scales.
MAX_CACHED_ENTRIES = 32_000_000

#: The sorted distances of the last pair: ``[(weak reference to the alphabet, metric, blocks)]``
#: (one entry at most; dropped when the alphabet is freed).
_LAST: list[tuple[Any, Metric, list[tuple[Any, Any, Any]]]] = []


def _drop(ref: Any) -> None:
    """Forget the kept distances of the alphabet behind ``ref`` (it was freed)."""
    if _LAST and _LAST[0][0] is ref:
        _LAST.clear()


def _sorted_blocks(
    alphabet: NDArray[np.float64], metric: Metric, axes: list[NDArray[np.float64]], shape: tuple[int, ...]
) -> Iterator[tuple[NDArray[np.intp], NDArray[np.int32], NDArray[np.float64]]]:
    """Per block of vertices: ``(flat vertex indices, order, distances)``, each row of
    ``distances`` the weighted distances ``D`` from the vertex to every tuple of the alphabet in
    descending order (``order`` the tuples' positions), for :func:`ball_loss`; the last pair's
    are reused when the alphabet (the same array) and the metric are the same."""
    if _LAST and _LAST[0][0]() is alphabet and _LAST[0][1] == metric:
        return iter(_LAST[0][2])
    _LAST.clear()
    k = alphabet.shape[0]
    blocks = _block_distances(alphabet, metric, axes, shape)
    if math.prod(shape) * k > MAX_CACHED_ENTRIES:
        return blocks  # one block at a time, nothing kept
    kept = list(blocks)
    ref = weakref.ref(alphabet)
    weakref.finalize(alphabet, _drop, ref)
    _LAST.append((ref, metric, kept))
    return iter(kept)


def _block_distances(
    alphabet: NDArray[np.float64], metric: Metric, axes: list[NDArray[np.float64]], shape: tuple[int, ...]
) -> Iterator[tuple[NDArray[np.intp], NDArray[np.int32], NDArray[np.float64]]]:
    """The blocks of :func:`_sorted_blocks`, computed one at a time."""
    k = alphabet.shape[0]
    vertices = math.prod(shape)
    scales = np.array(
        [(1.0 + 2.0**-40) / w if m else 1.0 / w for w, m in zip(metric.units, metric.categories, strict=True)]
    )
    block = max(1, _BLOCK // max(k, 1))
    for start in range(0, vertices, block):
        flat = np.arange(start, min(start + block, vertices))
        idx = np.unravel_index(flat, shape)
        y = np.column_stack([axes[c][idx[c]] for c in range(len(axes))])
        dist = _distances(y, alphabet, metric, scales)
        order = np.argsort(dist, axis=1, kind="stable")[:, ::-1].astype(np.int32)
        yield flat, order, np.take_along_axis(dist, order, axis=1)


def _distances(
    y: NDArray[np.float64], alphabet: NDArray[np.float64], metric: Metric, scales: NDArray[np.float64]
) -> NDArray[np.float64]:
    """``sum_c scales_c d_c(y_c, x_c)`` for every vertex (rows of ``y``) and tuple of the alphabet."""
    out = np.zeros((y.shape[0], alphabet.shape[0]))
    for c, cat in enumerate(metric.categorical):
        if metric.identity[c]:  # released as it is: another label is infinitely far
            out += np.where(y[:, c, None] != alphabet[None, :, c], np.inf, 0.0)
        elif cat:
            out += scales[c] * (y[:, c, None] != alphabet[None, :, c])
        else:  # a missing cell (the atom) is infinitely far from a present value
            out += atom_distances(y[:, c, None], alphabet[None, :, c], scales[c], metric.missing[c])
    return out


def bounded_ratios(
    n_i: NDArray[np.float64],
    d_i: NDArray[np.float64],
    n_j: NDArray[np.float64],
    d_j: NDArray[np.float64],
    terms: float,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per vertex: ``max(log N_i - log D_j, log N_j - log D_i)`` and its rounding bound
    ``2 terms u (1 + 1 / D) + u |loss|`` (:func:`ball_loss`, Notes; ``terms`` the count of
    rounding steps of each sum). A numerator 0 (no prior gives the output) bounds nothing that
    way; an infinite loss gets no bound (it fails), ``-inf`` means no such output."""
    with np.errstate(divide="ignore", invalid="ignore"):
        forward = np.where(n_i > 0, np.log(n_i) - np.log(d_j), -np.inf)
        backward = np.where(n_j > 0, np.log(n_j) - np.log(d_i), -np.inf)
        least = np.minimum(np.where(n_i > 0, d_j, np.inf), np.where(n_j > 0, d_i, np.inf))
        loss = np.maximum(forward, backward)
        err = 2.0 * terms * _U * (1.0 + 1.0 / least) + _U * np.abs(loss)
    return loss, np.where(np.isfinite(loss), err, 0.0)


def knapsack(
    mass: NDArray[np.float64], kern: NDArray[np.float64], t: float, *, up: bool
) -> NDArray[np.float64]:
    """Per row: ``max`` (``up``) or ``min`` of ``<P, K>`` over ``||P - mass||_1 <= 2 t``, with each
    row's ``kern`` sorted ascending (``mass`` in the same order): the fractional knapsack of
    :func:`ball_loss`'s Notes."""
    if not up:  # the mirror image: take from the largest K, add to the smallest
        mass, kern = mass[:, ::-1], kern[:, ::-1]
    top = mass[:, -1]  # the tuple that receives (largest K when up, smallest when down)
    moved = np.minimum(t, 1.0 - top)
    before = np.cumsum(mass, axis=1) - mass  # mass strictly before each tuple in the order
    taken = np.clip(moved[:, None] - before, 0.0, mass)
    taken[:, -1] = 0.0  # nothing is taken from the receiving tuple
    kept = mass - taken
    return np.asarray((kept * kern).sum(axis=1) + moved * kern[:, -1], dtype=np.float64)
