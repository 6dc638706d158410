"""The exact worst case of the product channel over two DKW bands of joint priors on a declared
domain (issue 41): per vertex of the product grid, a sum over the band's quantile pieces of the
kernel's extreme on a window (:func:`band_loss`, proof in its docstring). The bands are
:class:`pufferfish.priors.bands.JointBand`.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray
from scipy.special import logsumexp

from pufferfish.loss.balls import BallLoss
from pufferfish.loss.divergence import MemoryLimitError
from pufferfish.priors.bands import JointBand, same_domain
from pufferfish.priors.joint import MISSING_NUMBER, Metric
from pufferfish.priors.sets import dkw_pieces, window_best

__all__ = ["MAX_BAND_ENTRIES", "band_loss"]

#: Largest (grid vertices) x (quantile pieces) one worst case over two bands evaluates (a few
#: float64 arrays of one label tuple's vertices at a time); beyond it the check answers "not run".
MAX_BAND_ENTRIES = 400_000_000

_U = 2.0**-53

#: Entries (vertices x pieces) per block (memory: about ten float64 arrays of this size).
_BLOCK = 1_000_000


def band_loss(band_i: JointBand, band_j: JointBand, metric: Metric, scale: float) -> BallLoss:
    """Exact worst-case pufferfish loss of the product channel of ``scale`` over two DKW bands.

    Parameters
    ----------
    band_i, band_j : JointBand
        The sets of ``P(. | s_i)`` and ``P(. | s_j)``, on one declared domain: ``T`` label tuples
        times ``X`` values of the numeric column (``k = T X`` points).
    metric : Metric
        Units, categorical and kept (identity) columns of the product channel
        (:func:`pufferfish.loss.product.product_laplace_loss`).
    scale : float
        ``b``, finite and > 0.

    Returns
    -------
    BallLoss
        The loss (nats), its rounding bound, a worst vertex and the vertices evaluated.

    Raises
    ------
    ValueError
        If the domains differ, the metric does not match them, or ``scale`` is not finite and > 0.
    pufferfish.loss.divergence.MemoryLimitError
        If (vertices) x (pieces) exceeds :data:`MAX_BAND_ENTRIES` ("not run").

    Notes
    -----
    *Where the maximum is.* Every prior of either band lives on the alphabet ``A`` (every label
    tuple times the numeric values). For fixed priors on ``A`` the supremum over released ``y``
    of ``|log f_P(y) - log f_Q(y)|`` is attained on the product grid ``G = A`` (every label per
    categorical column, the values of ``A`` in the numeric one: the vertex argument of
    :func:`pufferfish.loss.product.product_laplace_loss`), so, as for the L1 balls
    (:func:`pufferfish.loss.balls.ball_loss`), the loss is ``max_{y in G} max(log N_i(y) - log
    D_j(y), log N_j(y) - log D_i(y))`` with ``N`` (``D``) the largest (smallest) ``<P, K_y>``
    over the band, ``K_y(x) = exp(-d(y, x) / b)``.

    *The inner problems.* Over a DKW band, ``max <P, v> = sum_q w_q max v[a_q..b_q]`` over the
    pieces of [0, 1] on which the band's quantile window ``[a_q, b_q]`` is constant
    (:func:`pufferfish.priors.sets.set_extremes`, Notes; :func:`~pufferfish.priors.sets.dkw_pieces`),
    and ``min`` likewise. A window runs, in the band's order, from ``(t_a, x_a)`` to ``(t_b,
    x_b)``: the values ``x >= x_a`` of tuple ``t_a``, every value of the tuples strictly between,
    and the values ``x <= x_b`` of ``t_b`` (or ``x_a <= x <= x_b`` when ``t_a = t_b``). On it
    ``log K_y(t, x) = c_u(t) - |x - y_x| / (b w)``, ``u`` the vertex's label tuple and ``c_u(t) =
    -sum_k [t_k != u_k] / (b w_k)`` (``-inf`` on a kept column), so the extreme over a run of
    values ``[x_l, x_h]`` of one tuple is at the value nearest ``y_x`` (max) or at the farther
    end (min), and over the tuples strictly between (whose runs are every value, holding ``y_x``)
    it is ``max_t c_u(t)`` or ``min_t c_u(t) - max(|y_x - x_1|, |y_x - x_X|) / (b w)``: range
    extremes of ``c_u`` from a sparse table (:func:`~pufferfish.priors.sets.window_best`).

    *Rounding.* Each ``log K`` is formed from at most ``d + 2`` roundings of terms no larger than
    ``|log K|`` (``|log K| K <= 1 / e``), so each kernel value is within ``(d + 3) u`` absolutely
    (all are <= 1, the vertex's own point giving 1); the piece widths are differences of the
    band's levels, each level (a cumulative sum of at most ``s`` masses, ``s`` the tuples seen,
    plus or minus ``eta``) within ``(s + 2) u`` of the exact one, and a shift of a level moves
    the extreme value by at most that shift (kernel values <= 1) for each of the at most ``2 s +
    2`` levels; the sum of ``Q`` terms adds ``Q u`` relative. So ``N`` and ``D`` are within
    ``E = (2 (s + 2)^2 + Q (d + 5)) u`` absolutely, each log within ``E / D`` (``D <= N``); the
    bound is ``2 E (1 + 1 / D_least) + u |loss|`` plus both centers' log errors. Categorical
    rates are raised by a relative ``2^-40`` (a stronger response, as in ``ball_loss``).
    """
    if not same_domain(band_i, band_j):
        raise ValueError("band_i and band_j must share one domain")
    if not (isinstance(scale, (int, float)) and math.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be finite and > 0, got {scale!r}")
    if tuple(m > 0 for m in band_i.categories) != metric.categorical:
        raise ValueError("the metric's categorical columns must be the band's")
    values, num = band_i.values, band_i.numeric
    tuples = band_i.tuples
    n_t, n_x = tuples.shape[0], values.size
    rate_x = 1.0 / (float(scale) * metric.units[num])
    atom = bool(metric.missing[num] and values[-1] == MISSING_NUMBER)  # the missing atom, last
    log_c = _tuple_logs(tuples, band_i.categories, metric, float(scale))  # (T, T): [u, t]
    pieces = [_pieces(band, n_x) for band in (band_i, band_j)]
    q_total = sum(p[0].size for p in pieces)
    if n_t * n_x * q_total > MAX_BAND_ENTRIES:
        raise MemoryLimitError(
            f"not run: the worst case over the DKW bands evaluates {n_t * n_x:,} vertices x {q_total:,} "
            f"pieces (more than {MAX_BAND_ENTRIES:,}): bin the columns, or give --prior-set none"
        )
    seen = max(band_i.center.size, band_j.center.size)
    d = len(band_i.categories)
    q = max(p[0].size for p in pieces)
    absolute = (2.0 * (seen + 2) ** 2 + q * (d + 5)) * _U
    block = max(1, _BLOCK // max(q_total, 1))
    best = (-math.inf, 0.0, (0, 0))
    extremes = [_middle_extremes(log_c, p) for p in pieces]
    for u in range(n_t):
        for start in range(0, n_x, block):
            ys = values[start : start + block]
            (n_i, d_i), (n_j, d_j) = (
                _log_extremes(log_c[u], p, m_max[:, u], m_min[:, u], values, ys, rate_x, atom)
                for p, (m_max, m_min) in zip(pieces, extremes, strict=True)
            )
            with np.errstate(invalid="ignore", over="ignore"):
                # a numerator 0 (kept columns: no prior of the band gives y) bounds nothing that way
                forward = np.where(np.isfinite(n_i), n_i - d_j, -np.inf)
                backward = np.where(np.isfinite(n_j), n_j - d_i, -np.inf)
                least = np.minimum(
                    np.where(np.isfinite(n_i), d_j, np.inf), np.where(np.isfinite(n_j), d_i, np.inf)
                )
                loss = np.maximum(forward, backward)
                err = 2.0 * absolute * (1.0 + np.exp(-least)) + _U * np.abs(loss)
            err = np.where(np.isfinite(loss), err, 0.0)  # an infinite loss fails; none is no output
            upper = loss + err
            at = int(np.argmax(upper))
            if upper[at] > best[0] + best[1]:
                best = (float(loss[at]), float(err[at]), (u, start + at))
    value, error, (u, at) = best
    vertex = np.empty(d)
    vertex[[c for c, m in enumerate(band_i.categories) if m]] = tuples[u]
    vertex[num] = values[at]
    error += band_i.center.log_error + band_j.center.log_error
    return BallLoss(value, error, tuple(float(v) for v in vertex), n_t * n_x)


def _tuple_logs(
    tuples: NDArray[np.float64], categories: tuple[int, ...], metric: Metric, scale: float
) -> NDArray[np.float64]:
    """``c_u(t) = -sum_k [t_k != u_k] r_k`` for every pair of label tuples, shape (T, T): the
    log kernel between labels (``-inf`` where a kept column differs)."""
    out = np.zeros((tuples.shape[0], tuples.shape[0]))
    cat_cols = [c for c, m in enumerate(categories) if m]
    for k, c in enumerate(cat_cols):
        differ = tuples[:, None, k] != tuples[None, :, k]
        if metric.identity[c]:
            out = np.where(differ, -np.inf, out)
        else:
            out -= differ * ((1.0 + 2.0**-40) / (scale * metric.units[c]))
    return out


def _pieces(band: JointBand, n_x: int) -> tuple[NDArray[np.float64], ...]:
    """The band's quantile pieces: ``(log width, t_a, j_a, t_b, j_b)`` (tuple index and value
    index of each window's ends)."""
    width, a, b = dkw_pieces(band.mass(), band.radius)
    with np.errstate(divide="ignore"):
        log_w = np.log(width)
    return log_w, *(v.astype(np.intp) for v in (a // n_x, a % n_x, b // n_x, b % n_x))


def _middle_extremes(
    log_c: NDArray[np.float64], pieces: tuple[NDArray[np.float64], ...]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per piece and vertex tuple ``u``: ``max`` and ``min`` of ``c_u(t)`` over the tuples
    strictly inside the window (``nan`` when there are none), shapes (Q, T)."""
    _, ta, _, tb, _ = pieces
    inner = tb - ta >= 2
    lo = np.where(inner, ta + 1, 0)
    hi = np.where(inner, tb - 1, 0)
    key = log_c.T  # (t, u): column u is c_u
    top = window_best(key, lo, hi)
    bottom = window_best(-key, lo, hi)
    cols = np.arange(key.shape[1])[None, :]
    m_max = np.where(inner[:, None], key[top, cols], np.nan)
    m_min = np.where(inner[:, None], key[bottom, cols], np.nan)
    return m_max, m_min


def _log_extremes(
    c_u: NDArray[np.float64],
    pieces: tuple[NDArray[np.float64], ...],
    mid_max: NDArray[np.float64],
    mid_min: NDArray[np.float64],
    values: NDArray[np.float64],
    ys: NDArray[np.float64],
    rate_x: float,
    atom: bool,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``log N(y)`` and ``log D(y)`` over one band for the vertices ``(u, y_x)``, ``y_x`` in
    ``ys`` (shape (len(ys),) each): the Notes of :func:`band_loss`. With the missing ``atom`` (the
    last value, :data:`~pufferfish.priors.joint.MISSING_NUMBER`) a present output has kernel 0 at
    the atom and the output "missing" has kernel ``c_u(t)`` at the atom only."""
    log_w, ta, ja, tb, jb = pieces
    last = values.size - 1
    top_p = last if atom else values.size  # positions 0..top_p-1 hold present values
    y = np.where(ys == MISSING_NUMBER, values[0], ys)[:, None]  # (vertices, 1) against pieces (Q,)
    same = ta == tb
    end_a = np.where(same, jb, last)  # the first run: positions ja..end_a of tuple ta
    with_atom_a = atom & (end_a == last)
    with_atom_b = atom & ~same & (jb == last)
    hi_a = values[np.minimum(end_a, top_p - 1)]
    lo_a, lo_b, hi_b = values[np.minimum(ja, top_p - 1)], values[0], values[np.minimum(jb, top_p - 1)]
    present_a = ja < top_p  # the first run holds a present value
    near_a = np.maximum(np.maximum(lo_a - y, y - hi_a), 0.0)
    far_a = np.maximum(np.abs(y - lo_a), np.abs(y - hi_a))
    near_b = np.maximum(np.maximum(lo_b - y, y - hi_b), 0.0)
    far_b = np.maximum(np.abs(y - lo_b), np.abs(y - hi_b))
    far_all = np.maximum(np.abs(y - values[0]), np.abs(y - values[top_p - 1]))
    top = np.where(present_a, c_u[ta] - near_a * rate_x, -np.inf)
    low = np.where(with_atom_a, -np.inf, c_u[ta] - far_a * rate_x)
    top = np.where(same, top, np.maximum(top, c_u[tb] - near_b * rate_x))
    low = np.where(
        same | ~with_atom_b, np.where(same, low, np.minimum(low, c_u[tb] - far_b * rate_x)), -np.inf
    )
    inner = ~np.isnan(mid_max)
    top = np.where(inner, np.maximum(top, np.where(inner, mid_max, -np.inf)), top)
    inner_low = -np.inf if atom else np.where(inner, mid_min, np.inf) - far_all * rate_x
    low = np.where(inner, np.minimum(low, inner_low), low)
    if atom and (ys == MISSING_NUMBER).any():  # the output "missing": the atoms in the window
        gone = ys == MISSING_NUMBER
        a_top = np.where(with_atom_a, c_u[ta], -np.inf)
        a_top = np.maximum(a_top, np.where(with_atom_b, c_u[tb], -np.inf))
        a_top = np.where(inner, np.maximum(a_top, np.where(inner, mid_max, -np.inf)), a_top)
        only_atom = same & (ja == last)
        a_low = np.where(only_atom, c_u[ta], -np.inf)
        top[gone], low[gone] = a_top, a_low
    with np.errstate(divide="ignore"):
        return logsumexp(top + log_w, axis=1), logsumexp(low + log_w, axis=1)
