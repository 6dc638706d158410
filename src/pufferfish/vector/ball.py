"""Prior sets on the joint alphabet of several columns: an L1 ball around each secret's empirical
joint distribution, and the exact worst case of the product channel over two balls (issue 31).

The adversary may hold any prior ``P`` on the alphabet ``A`` (the distinct tuples of the rows of
the pairs' secrets) with ``||P - P_hat||_1 <= r``, ``r`` the radius of Weissman, Ordentlich,
Seroussi, Verdu and Weinberger (2003), Thm 2.1, at the stated confidence
(:func:`pufferfish.priorsets.l1_radius` with ``k = |A|``). A CDF band (``dkw``) has no form on a
product of columns, so on several columns both ``--prior-set dkw`` and ``l1`` give this ball (the
result says which was asked for).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pufferfish.divergence import MemoryLimitError
from pufferfish.priors import to_grid
from pufferfish.priorsets import l1_radius
from pufferfish.vector.joint import JointPrior, Metric
from pufferfish.vector.loss import grid_axes

#: Largest (grid vertices) x (alphabet tuples) one worst case over two balls evaluates; each
#: entry is sorted once per check (about 0.1 microsecond of work per entry and log), so a check
#: stays within seconds. Beyond it the check answers "not run".
MAX_BALL_ENTRIES = 50_000_000

#: Entries per block of vertices (memory: a few float64 arrays of this size).
_BLOCK = 2_000_000

_U = 2.0**-53


@dataclass(frozen=True, eq=False)
class JointBall:
    """Every prior on the alphabet ``A`` within L1 distance ``radius`` of a joint prior.

    Attributes
    ----------
    alphabet : numpy.ndarray, shape (k, d)
        Distinct tuples, sorted lexicographically, holding the center's support.
    center : JointPrior
        The estimate (the empirical joint distribution of the secret's rows).
    radius : float
        ``r >= 0``, the L1 radius (``r / 2`` of the mass may move).
    confidence : float or None
        The confidence the radius was computed for, or None when given directly.
    requested : {"l1", "dkw"}
        The prior set asked for (``dkw`` on several columns is this L1 ball).

    Raises
    ------
    ValueError
        If the alphabet is not distinct tuples of the center's dimension holding its support, or
        the radius is not finite and >= 0.
    """

    alphabet: NDArray[np.float64]
    center: JointPrior
    radius: float
    confidence: float | None = None
    requested: str = "l1"

    def __post_init__(self) -> None:
        a = np.unique(np.asarray(self.alphabet, dtype=np.float64), axis=0)
        if a.ndim != 2 or a.shape[1] != self.center.dimension or a.shape[0] != len(self.alphabet):
            raise ValueError(f"alphabet must be distinct tuples of {self.center.dimension} columns")
        pos = _rows_in(a, self.center.support)
        if (pos < 0).any():
            raise ValueError("alphabet must hold every tuple of the center's support")
        r = float(self.radius)
        if not (math.isfinite(r) and r >= 0):
            raise ValueError(f"radius must be finite and >= 0, got {self.radius!r}")
        if self.requested not in ("l1", "dkw"):
            raise ValueError(f"requested must be 'l1' or 'dkw', got {self.requested!r}")
        a.setflags(write=False)
        object.__setattr__(self, "alphabet", a)
        object.__setattr__(self, "radius", r)

    @property
    def kind(self) -> str:
        """``"l1"``: the distance of the set (as :attr:`pufferfish.priorsets.PriorSet.kind`)."""
        return "l1"

    def mass(self) -> NDArray[np.float64]:
        """The center's pmf on :attr:`alphabet`, shape (k,)."""
        out = np.zeros(self.alphabet.shape[0])
        out[_rows_in(self.alphabet, self.center.support)] = self.center.pmf
        return out

    def on_grid(self, exponents: tuple[int, ...]) -> JointBall:
        """The ball of the same radius around the center rounded to the sampler grids
        (:func:`pufferfish.priors.to_grid` per column, tuples that meet merged): rounding pushes
        every prior of this ball into that ball (a push-forward never increases L1 distance)."""
        moved = np.column_stack([to_grid(self.alphabet[:, k], e) for k, e in enumerate(exponents)])
        center = self.center.support
        centre = np.column_stack([to_grid(center[:, k], e) for k, e in enumerate(exponents)])
        pushed = JointPrior.from_rows(centre, self.center.pmf)
        return JointBall(np.unique(moved, axis=0), pushed, self.radius, self.confidence, self.requested)


def _rows_in(alphabet: NDArray[np.float64], rows: NDArray[np.float64]) -> NDArray[np.intp]:
    """Index of each row of ``rows`` in the sorted distinct ``alphabet`` (-1 when absent)."""
    both = np.concatenate([alphabet, rows])
    _, inverse = np.unique(both, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    lookup = np.full(alphabet.shape[0] + rows.shape[0], -1, dtype=np.intp)
    lookup[inverse[: alphabet.shape[0]]] = np.arange(alphabet.shape[0])
    return lookup[inverse[alphabet.shape[0] :]]


def joint_balls(
    conditionals: Mapping[str, JointPrior],
    sizes: Mapping[str, float],
    *,
    confidence: float = 0.95,
    requested: str = "l1",
    radius: float | None = None,
) -> dict[str, JointBall]:
    """One L1 ball per secret on the union of the supports, at ``confidence``.

    Parameters
    ----------
    conditionals : mapping of str to JointPrior
        The empirical joint prior of each secret of the pairs (``m`` secrets).
    sizes : mapping of str to float
        Rows of each secret's group (> 0), or Kish's effective size with weights.
    confidence : float
        In (0, 1): each radius is :func:`pufferfish.priorsets.l1_radius` ``(n, |A|, confidence,
        m)`` (union bound over the ``m`` secrets).
    requested : {"l1", "dkw"}
        What was asked for (both give this ball on several columns).
    radius : float, optional
        A radius for every secret instead (then no confidence is stated).

    Returns
    -------
    dict of str to JointBall

    Raises
    ------
    ValueError
        If a secret lacks a size, or an argument is out of range.
    """
    alphabet = np.unique(np.concatenate([p.support for p in conditionals.values()]), axis=0)
    k = max(alphabet.shape[0], 2)
    out = {}
    for s, p in conditionals.items():
        if s not in sizes:
            raise ValueError(f"sizes must give the rows of secret {s!r}")
        r = radius if radius is not None else l1_radius(sizes[s], k, confidence, len(conditionals))
        out[s] = JointBall(alphabet, p, r, None if radius is not None else confidence, requested)
    return out


def check_balls(balls: Mapping[str, Any], conditionals: Mapping[str, Any]) -> dict[str, JointBall]:
    """The balls of one adversary, checked against its joint conditionals: one per secret, one
    alphabet, each centred on its secret's prior.

    Raises
    ------
    ValueError, TypeError
        If a secret lacks a ball or a ball breaks a rule above.
    """
    out = dict(balls)
    if set(out) != set(conditionals):
        raise ValueError(f"sets must give a ball for each secret {sorted(conditionals)}, got {sorted(out)}")
    first = next(iter(out.values()))
    for s, ball in out.items():
        if not isinstance(ball, JointBall):
            raise TypeError(f"sets[{s!r}] must be a JointBall, got {type(ball).__name__}")
        if not np.array_equal(ball.alphabet, first.alphabet):
            raise ValueError("joint balls must share one alphabet")
        prior = conditionals[s]
        same = ball.center.support.shape == prior.support.shape and np.array_equal(
            ball.center.support, prior.support
        )
        if not same or np.max(np.abs(ball.center.pmf - prior.pmf)) > 1e-9:
            raise ValueError(f"sets[{s!r}] must be centred on the prior of {s!r}")
    return out


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
        :func:`pufferfish.vector.product_laplace_loss`).
    scale : float
        ``b``, finite and > 0.

    Returns
    -------
    BallLoss

    Raises
    ------
    ValueError
        If the alphabets differ or ``scale`` is not finite and > 0.
    pufferfish.divergence.MemoryLimitError
        If (vertices) x ``k`` exceeds :data:`MAX_BALL_ENTRIES` ("not run").

    Notes
    -----
    *Where the maximum is.* Every prior of either ball is supported on ``A``. For fixed priors
    ``P, Q`` on ``A``, the supremum over released ``y`` of ``|log f_P(y) - log f_Q(y)|`` is
    attained on the product grid ``G`` of the values of ``A`` per numeric column and every label
    per categorical column (the vertex argument of
    :func:`pufferfish.vector.product_laplace_loss`, whose grid for ``P, Q`` is a subset of ``G``).
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
    ``1 / (b w_k)`` is raised by 4 ulps, as in the point-estimate check (a stronger response; its
    loss is never smaller).
    """
    if not np.array_equal(ball_i.alphabet, ball_j.alphabet):
        raise ValueError("ball_i and ball_j must share one alphabet")
    if not (isinstance(scale, (int, float)) and math.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be finite and > 0, got {scale!r}")
    alphabet = ball_i.alphabet
    k = alphabet.shape[0]
    axes = grid_axes(ball_i.center, ball_j.center, metric)
    axes = [
        ax if metric.categories[c] else np.unique(alphabet[:, c]) for c, ax in enumerate(axes)
    ]  # numeric axes: every value of the alphabet
    shape = tuple(ax.size for ax in axes)
    vertices = math.prod(shape)
    if vertices * k > MAX_BALL_ENTRIES:
        raise MemoryLimitError(
            f"not run: the worst case over the L1 balls evaluates {vertices:,} vertices x {k:,} tuples "
            f"(more than {MAX_BALL_ENTRIES:,}): bin the columns, or give --prior-set none"
        )
    rates = np.array(
        [
            (1.0 / (scale * w)) * (1.0 + 4.0 * _U) if m else 1.0 / (scale * w)
            for w, m in zip(metric.units, metric.categories, strict=True)
        ]
    )
    p_i, p_j = ball_i.mass(), ball_j.mass()
    t_i = min(ball_i.radius / 2.0, 1.0)
    t_j = min(ball_j.radius / 2.0, 1.0)
    best = (-math.inf, 0.0, 0)
    block = max(1, _BLOCK // max(k, 1))
    for start in range(0, vertices, block):
        flat = np.arange(start, min(start + block, vertices))
        idx = np.unravel_index(flat, shape)
        y = np.column_stack([axes[c][idx[c]] for c in range(len(axes))])
        log_k = _log_kernel(y, alphabet, metric, rates)
        log_k -= log_k.max(axis=1, keepdims=True)
        order = np.argsort(log_k, axis=1, kind="stable")
        kern = np.exp(np.take_along_axis(log_k, order, axis=1))  # ascending, last is 1
        values = []
        for p, t in ((p_i, t_i), (p_j, t_j)):
            mass = p[order]
            values.append((_knapsack(mass, kern, t, up=True), _knapsack(mass, kern, t, up=False)))
        (n_i, d_i), (n_j, d_j) = values
        with np.errstate(divide="ignore"):
            forward = np.log(n_i) - np.log(d_j)
            backward = np.log(n_j) - np.log(d_i)
        loss = np.maximum(forward, backward)
        with np.errstate(divide="ignore"):
            err = 2.0 * (2 * k + len(axes) + 4) * _U * (1.0 + 1.0 / np.minimum(d_i, d_j)) + _U * np.abs(loss)
        upper = loss + err
        at = int(np.argmax(upper))
        if upper[at] > best[0] + best[1]:
            best = (float(loss[at]), float(err[at]), int(flat[at]))
    value, error, where = best
    vertex = np.unravel_index(where, shape)
    error += ball_i.center.log_error + ball_j.center.log_error
    return BallLoss(value, error, tuple(float(axes[c][vertex[c]]) for c in range(len(axes))), vertices)


def _log_kernel(
    y: NDArray[np.float64], alphabet: NDArray[np.float64], metric: Metric, rates: NDArray[np.float64]
) -> NDArray[np.float64]:
    """``-sum_c rate_c d_c(y_c, x_c)`` for every vertex (rows of ``y``) and tuple of the alphabet."""
    out = np.zeros((y.shape[0], alphabet.shape[0]))
    for c, cat in enumerate(metric.categorical):
        if cat:
            out -= rates[c] * (y[:, c, None] != alphabet[None, :, c])
        else:
            out -= rates[c] * np.abs(y[:, c, None] - alphabet[None, :, c])
    return out


def _knapsack(
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
