"""Sums of a Laplace kernel over sorted points, in log space and in linear time: the core of the
exact check (SPEC sec 2.1) in one and in several dimensions.

``laplace_log_sums(x, logp, b)[k] = log sum_l exp(logp_l - |x_k - x_l| / b)``: the release
density of ``X + Laplace(b)`` at the support points (times ``2 b``) for
:func:`pufferfish.loss.exact.laplace_log_density`, and one axis of the product-Laplace contraction of
:func:`pufferfish.loss.product.product_laplace_loss`. Nothing here imports the rest of the package.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

#: Machine epsilon of float64 (the rounding bounds below are in its units).
_EPS = float(np.finfo(np.float64).eps)


def laplace_log_sums(
    points: NDArray[np.float64], logp: NDArray[np.float64], scale: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``log sum_l exp(logp[..., l] - |points_k - points_l| / scale)`` for every ``k``, along the
    last axis, in O(N) per line, with a rounding bound for each entry.

    Parameters
    ----------
    points : numpy.ndarray, shape (N,)
        Strictly increasing.
    logp : numpy.ndarray, shape (..., N)
        Logs of non-negative weights summing to at most 1 along the last axis (``-inf`` allowed):
        one line per leading index.
    scale : float
        ``> 0``.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        The log-sums, shape (..., N), and their first-order rounding bounds (same shape).

    Notes
    -----
    The left sums ``L_k`` and the strict right sums (``R_{k+1} e^{-(x_{k+1} - x_k)/scale}``) by
    :func:`_log_prefix_sums`, added in log space; :func:`_prefix_error` bounds each entry. The
    1-D release density of :func:`pufferfish.loss.exact.laplace_log_density` and the product-Laplace
    contraction of
    :func:`pufferfish.loss.product.product_laplace_loss` (one axis at a time) are both this sum.
    """
    left = _log_prefix_sums(points, logp, scale)
    right = _log_prefix_sums(-points[::-1], logp[..., ::-1], scale)[..., ::-1]
    # Strict right sums: R_{k+1} e^{-(x_{k+1} - x_k)/theta}; nothing to the right of the last point.
    strict_right = np.full_like(right, -np.inf)
    strict_right[..., :-1] = right[..., 1:] - np.diff(points) / scale
    log_sum = np.logaddexp(left, strict_right)
    return log_sum, _prefix_error(log_sum, points.size)


def _log_prefix_sums(x: NDArray[np.float64], logp: NDArray[np.float64], scale: float) -> NDArray[np.float64]:
    """``log sum_{l <= k} exp(logp_l - (x_k - x_l)/scale)`` for every k, by recursive doubling.

    Parameters
    ----------
    x : numpy.ndarray, shape (N,)
        Strictly increasing points.
    logp : numpy.ndarray, shape (..., N)
        ``log p_l <= 0`` (``-inf`` allowed), along the last axis.
    scale : float
        ``theta > 0``.

    Returns
    -------
    numpy.ndarray, shape (..., N)

    Notes
    -----
    The step ``l -> logaddexp(l - (x_k - x_{k-1})/theta, log p_k)`` is a map ``f_k``; maps of
    adjacent ranges compose by ``(range a, range b) -> logaddexp(B_a - (x_b - x_a)/theta, B_b)``
    with ``B`` the log-sum of a range and ``x_a, x_b`` the ranges' last points. Pairs are
    composed level by level (each level halves the array), then the prefixes are filled back
    down: the odd entries of a level are the prefixes of the level above, the even ones one step
    from their left neighbour. Each output is a tree of at most ``2 ceil(log2 N) + 2`` such
    operations whose operands are weighted by their share ``w <= 1`` of the output. An operation
    with inputs ``a, b`` and output ``c`` rounds by at most ``eps (2|a| + 4|c| + 125)``; a
    share ``w = e^{-t}`` of the output comes from an operand at least ``out - t`` and at most
    ``log N`` (a log of at most ``N`` probabilities), so the weighted rounding of one level is at
    most ``eps (6 (|S| + log N + 15) + 125)`` for the output log-sum ``S``. :func:`_prefix_error`
    states this bound, with margin.
    """
    stack = []
    xe, b = x, logp
    while b.shape[-1] > 1:  # every operation is along the last axis: one line per leading index
        h = b.shape[-1] // 2
        stack.append((xe, b))
        x_odd = xe[1 : 2 * h : 2]
        b = np.logaddexp(b[..., 0 : 2 * h : 2] - (x_odd - xe[0 : 2 * h : 2]) / scale, b[..., 1 : 2 * h : 2])
        xe = x_odd
    prefix = b
    while stack:
        xe, b = stack.pop()
        out = np.empty_like(b)
        out[..., 0] = b[..., 0]
        out[..., 1::2] = prefix
        if b.shape[-1] > 2:
            out[..., 2::2] = np.logaddexp(out[..., 1:-1:2] - (xe[2::2] - xe[1:-1:2]) / scale, b[..., 2::2])
        prefix = out
    return prefix


def _prefix_error(log_sum: NDArray[np.float64], n: int) -> NDArray[np.float64]:
    """First-order rounding bound of each ``log(L_k + R_k)`` from :func:`_log_prefix_sums`.

    ``(2 (2 ceil(log2 n) + 2) + 4)`` levels (left and right scans, plus their sum), each at most
    ``eps (8 (|S_k| + log n + 15) + 200)`` (the bound of :func:`_log_prefix_sums` with margin).
    """
    depth = 2 * (2 * math.ceil(math.log2(max(n, 2))) + 2) + 4
    return depth * _EPS * (8.0 * (np.abs(log_sum) + math.log(max(n, 2)) + 15.0) + 200.0)
