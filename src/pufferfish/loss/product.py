"""Exact privacy loss of a product channel on a tuple, from the vertices of the product grid
(issues 17 and 31; SPEC sec 2.1 in d dimensions).

The release draws each column independently: ``Y_k = X_k + Laplace(b w_k)`` on a numeric column,
and on a categorical column of ``m_k`` labels a randomized response that keeps the label with
probability ``e^a / (e^a + m_k - 1)``, ``a = 1 / (b w_k)``, and else releases one of the other
labels uniformly. Both have noise density ``~ exp(-d_k(y_k, x_k) / (b w_k))`` for the metric
``d`` of :class:`~.joint.Metric` (absolute difference or Hamming), with a normalising constant
that does not depend on ``x_k`` (seed 002 sec 3.3, Thm 1 with this ``d``). The pufferfish loss of
a pair of secrets is ``sup_y |log f_i(y) - log f_j(y)|`` with ``f_s(y) = sum_x P(x | s) prod_k
exp(-d_k(y_k, x_k) / (b w_k))`` (the constants cancel).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from pufferfish.loss.divergence import MemoryLimitError
from pufferfish.loss.laplace_sums import laplace_log_sums
from pufferfish.priors.joint import MISSING_NUMBER, JointPrior, Metric

_EPS = float(np.finfo(np.float64).eps)

#: Largest number of vertices of the product grid one check evaluates (memory: about
#: :data:`BYTES_PER_VERTEX` each, so about 1.6 GiB); beyond it :func:`product_laplace_loss` answers
#: "not run" with the memory it would need.
MAX_VERTICES = 2**24

#: Peak bytes per grid vertex of one check, an upper estimate (68 measured at 3,000 x 3,000
#: vertices by ``python benchmarks/bench_joint_large.py --bytes``).
BYTES_PER_VERTEX = 100

_U = 2.0**-53


@dataclass(frozen=True)
class VectorLoss:
    """The exact loss of product Laplace noise for one pair of joint priors.

    Attributes
    ----------
    scale : float
        ``b > 0``: column ``k`` gets ``Laplace(b w_k)``.
    loss : float
        ``max`` over the vertices of the product grid of ``|log f_i - log f_j|`` (nats), which is
        the supremum over ``R^d`` (:func:`product_laplace_loss`).
    error_bound : float
        Bound on the floating-point error of ``loss``; a scale passes ``eps`` when
        ``loss + error_bound <= eps``.
    worst_vertex : tuple of float
        A vertex ``y`` where the maximum is attained.
    larger : {"i", "j"}
        Which prior's density is the larger there.
    vertices : int
        Number of vertices evaluated.
    """

    scale: float
    loss: float
    error_bound: float
    worst_vertex: tuple[float, ...]
    larger: str
    vertices: int

    def satisfies(self, epsilon: float) -> bool:
        """``loss + error_bound <= epsilon``."""
        return self.loss + self.error_bound <= epsilon


def grid_axes(
    prior_i: JointPrior, prior_j: JointPrior, metric: Metric | None = None
) -> list[NDArray[np.float64]]:
    """The values of each coordinate the supremum is taken over for a pair: the product grid of
    both supports (:func:`axes_of`)."""
    return axes_of([prior_i.support, prior_j.support], metric)


def axes_of(points: list[NDArray[np.float64]], metric: Metric | None = None) -> list[NDArray[np.float64]]:
    """The product grid of some point sets (each (n, d)), per coordinate.

    A numeric column: the sorted distinct values over every set. A categorical column of
    ``m_k`` labels (``metric.categories``): every code ``0, ..., m_k - 1``, as every label can be
    released.

    Raises
    ------
    ValueError
        If a categorical coordinate of a point is not a code ``0, ..., m_k - 1``.
    """
    axes = []
    for k in range(points[0].shape[1]):
        values = np.unique(np.concatenate([p[:, k] for p in points]))
        m = 0 if metric is None else metric.categories[k]
        if m:
            if values[0] < 0 or values[-1] > m - 1 or not np.all(values == np.round(values)):
                raise ValueError(
                    f"column {k} is categorical with {m} labels: its values must be codes 0..{m - 1}"
                )
            values = np.arange(m, dtype=np.float64)
        axes.append(values)
    return axes


def response_log_sums(
    logp: NDArray[np.float64], rate: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``log sum_l exp(logp[..., l] - rate [v != l])`` for every label ``v``, along the last axis,
    with a rounding bound for each entry: one categorical axis of the product channel.

    Parameters
    ----------
    logp : numpy.ndarray, shape (..., m)
        Logs of non-negative weights (``-inf`` allowed), one line per leading index.
    rate : float
        ``a > 0``: the randomized response's largest log ratio.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        The log-sums, shape (..., m), and their rounding bounds.

    Notes
    -----
    ``sum_l p_l e^{-a [v != l]} = e^{-a} S + (1 - e^{-a}) p_v`` with ``S = sum_l p_l``, so
    ``out_v = logaddexp(L - a, c + logp_v)``, ``L = log S``, ``c = log1p(-e^{-a})``: O(m) per
    line. Rounding: ``L`` by ``max + log(sum exp(. - max))`` is within ``eps (m + 4 |L| + 8)``
    (each exponential's argument error ``eps t`` weighs ``e^{-t}``, at most ``eps / e``; the sum
    of ``m`` terms ``m eps`` relative); each operand of the last ``logaddexp`` adds ``eps`` times
    its magnitude, and ``logaddexp`` itself at most ``eps (2 |x| + 4 |out| + 125)``. The bound
    below doubles these terms.
    """
    m = logp.shape[-1]
    a = float(rate)
    c = math.log1p(-math.exp(-a))
    peak = np.max(logp, axis=-1, keepdims=True)
    safe = np.where(np.isfinite(peak), peak, 0.0)
    with np.errstate(divide="ignore"):
        total = safe + np.log(np.sum(np.exp(logp - safe), axis=-1, keepdims=True))
    out = np.logaddexp(total - a, c + logp)
    with np.errstate(invalid="ignore"):
        mag = (
            np.where(np.isfinite(out), np.abs(out), 0.0)
            + np.where(np.isfinite(total), np.abs(total), 0.0)
            + np.where(np.isfinite(logp), np.abs(logp), 0.0)
        )
    return out, 2.0 * _EPS * (m + 8.0 * mag + 4.0 * (a + abs(c)) + 200.0)


def product_laplace_loss(
    prior_i: JointPrior,
    prior_j: JointPrior,
    metric: Metric,
    scale: float,
    *,
    max_vertices: int = MAX_VERTICES,
) -> VectorLoss:
    """Exact pufferfish loss of the product channel of ``scale`` (Laplace ``scale w_k`` on a numeric
    column, randomized response of log ratio ``1 / (scale w_k)`` on a categorical one) for a pair.

    Parameters
    ----------
    prior_i, prior_j : JointPrior
        ``P(. | s_i)`` and ``P(. | s_j)``, same dimension ``d``.
    metric : Metric
        Units ``w_k`` and which columns are categorical (dimension ``d``).
    scale : float
        ``b``, finite and > 0.
    max_vertices : int
        Largest ``prod_k |V_k|`` accepted (default :data:`MAX_VERTICES`), ``|V_k|`` the number of
        distinct values of coordinate ``k``.

    Returns
    -------
    VectorLoss

    Raises
    ------
    ValueError
        If the dimensions differ, ``scale`` is not finite and > 0, or a coordinate is not a code.
    pufferfish.loss.divergence.MemoryLimitError
        If the grid has more than ``max_vertices`` vertices ("not run: ... needs about N GiB",
        before allocating; the message gives the grid and suggests binning).

    Notes
    -----
    *The supremum is at a vertex.* Let ``V_k`` be the distinct values of coordinate ``k`` over
    both supports. Fix every coordinate but ``y_k`` and let ``y_k`` run over an interval between
    consecutive values ``a < a'`` of ``V_k``. Each support point has ``x_k <= a`` or
    ``x_k >= a'``, so ``exp(-|y_k - x_k| / beta) = exp(x_k / beta) e^{-y_k / beta}`` or
    ``exp(-x_k / beta) e^{y_k / beta}`` (``beta = b w_k``), and ``f_s = e^{-y_k / beta}
    (A_s + B_s z)`` with ``z = e^{2 y_k / beta}`` and ``A_s, B_s >= 0`` not depending on ``y_k``.
    The ratio ``(A_i + B_i z) / (A_j + B_j z)`` is a Moebius function of ``z > 0`` with a
    positive denominator, hence monotone on the interval, and so is the log-ratio ``L``: ``|L|``
    on the closed interval is largest at an end. Beyond the last value of ``V_k`` every term has
    ``x_k <= y_k``, so ``f_s = A_s e^{-y_k / beta}`` and ``L`` does not depend on ``y_k``
    (likewise below the first). So moving ``y_1``, then ``y_2``, ..., then ``y_d`` to a suitable
    value of its axis never decreases ``|L|``, and ``sup_{R^d} |L| = max`` over the product grid
    ``V_1 x ... x V_d``. A categorical coordinate takes finitely many values, all of them in
    ``V_k`` (every label code), so the maximum over them is exact; an identity axis (a column
    released as it is) is not contracted, and an output neither prior gives is left out. A
    numeric axis with its missing atom (:attr:`~.joint.Metric.missing`) has the output "missing"
    for the value :data:`~.joint.MISSING_NUMBER` only (its last point): the argument above holds
    on the present values, and the atom's slot is carried as it is (an identity on it).

    *Computation.* ``log f_s`` on the whole grid is a separable contraction: start from the
    tensor ``T = log P(. | s)`` on the grid (``-inf`` off the support) and, for each axis ``k``,
    replace it by ``T'[..., v, ...] = logsumexp_x (T[..., x, ...] - |v - x| / (b w_k))``: a
    Laplace sum along each line of axis ``k``, computed by left and right prefix sums in log
    space (:func:`pufferfish.loss.laplace_sums.laplace_log_sums`, the 1-D release density's own method) in
    ``O(|V_k|)`` per line, so the work is ``d prod |V_k|`` (times ``log |V_k|`` passes) instead of
    ``prod |V_k| sum |V_k|``. A categorical axis is :func:`response_log_sums` (O(``m_k``) per line),
    at the rate ``a = 1 / (b w_k)`` raised by 4 ulps: a larger rate is a less noisy response, and
    a response of smaller rate is the larger one followed by another response (post-processing),
    so rounding the rate up never lowers the loss computed.

    *Rounding bound.* The contraction is 1-Lipschitz in the max norm (a log-sum of the entries
    shifted by fixed kernel values), so the error of ``T`` carries through each step, which adds
    at most the largest bound of :func:`pufferfish.loss.laplace_sums.laplace_log_sums` on that axis.
    The loss adds the two tensors' bounds, ``u max |L|`` for the subtraction, and the priors' own
    ``log_error`` (the starting tensor is their ``log_pmf``, exact to that bound).
    """
    if not prior_i.dimension == prior_j.dimension == metric.dimension:
        raise ValueError(
            "prior_i, prior_j and metric must have the same dimension, got "
            f"{prior_i.dimension}, {prior_j.dimension} and {metric.dimension}"
        )
    if not (isinstance(scale, (int, float)) and math.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be finite and > 0, got {scale!r}")
    axes = grid_axes(prior_i, prior_j, metric)
    shape = tuple(ax.size for ax in axes)
    vertices = math.prod(shape)
    if vertices > max_vertices:
        raise MemoryLimitError(
            f"not run: the exact check needs about {vertices * BYTES_PER_VERTEX / 2**30:.1f} GiB for the "
            f"product grid of {' x '.join(map(str, shape))} = {vertices:,} vertices (more than "
            f"{max_vertices:,}): bin the columns (fewer distinct values)"
        )
    tensors = [_log_density(prior, axes, shape, metric, float(scale)) for prior in (prior_i, prior_j)]
    (t_i, e_i), (t_j, e_j) = tensors
    with np.errstate(invalid="ignore"):  # identity axes: an output neither prior can give
        ratio = np.where(np.isneginf(t_i) & np.isneginf(t_j), 0.0, t_i - t_j)
    flat = int(np.argmax(np.abs(ratio)))
    at = np.unravel_index(flat, shape)
    value = float(abs(ratio[at]))
    return VectorLoss(
        scale=float(scale),
        loss=value,
        error_bound=e_i + e_j + _U * value + prior_i.log_error + prior_j.log_error,
        worst_vertex=tuple(float(axes[k][at[k]]) for k in range(len(axes))),
        larger="i" if ratio[at] >= 0 else "j",
        vertices=vertices,
    )


def _log_density(
    prior: JointPrior, axes: list[NDArray[np.float64]], shape: tuple[int, ...], metric: Metric, scale: float
) -> tuple[NDArray[np.float64], float]:
    """``log f_s`` on the product grid and its rounding bound: the separable contraction of
    :func:`product_laplace_loss` (Notes), one axis at a time."""
    t = np.full(shape, -np.inf)
    where = tuple(np.searchsorted(axes[k], prior.support[:, k]) for k in range(len(axes)))
    assert prior.log_pmf is not None
    t[where] = prior.log_pmf
    err = 0.0
    for k, ax in enumerate(axes):
        if metric.identity[k]:  # released as it is: y_k = x_k, nothing to sum along the axis
            continue
        line = np.moveaxis(t, k, -1)  # logsumexp_x (T[..., x, ...] - d_k(v, x) / (b w_k))
        if metric.categories[k]:
            rate = (1.0 / (scale * metric.units[k])) * (1.0 + 4.0 * _U)
            sums, bounds = response_log_sums(line, rate)
        elif metric.missing[k] and ax[-1] == MISSING_NUMBER:  # the atom: released as missing
            sums, bounds = line.copy(), np.zeros(line.shape)
            if ax.size > 1:
                beta = scale * metric.units[k]
                sums[..., :-1], bounds[..., :-1] = laplace_log_sums(ax[:-1], line[..., :-1], beta)
        else:
            sums, bounds = laplace_log_sums(ax, line, scale * metric.units[k])
        t = np.moveaxis(sums, -1, k)
        finite = np.isfinite(sums)
        err += float(bounds[finite].max()) if finite.any() else 0.0
    return t, err
