"""The exact privacy check of a randomized mapping (:mod:`.mapping`): the released pmfs of every
pair, prior (or prior set) and output, from a dense matrix or, for randomized response, from its
two weights in O(k) (:class:`pufferfish.noise.channels.RandomizedResponseChannel`).

For a discriminative pair ``(s_i, s_j)`` and an adversary prior the released value has pmf
``q_i = P_i M``; the mapping is ``(eps, S)``-pufferfish private iff ``|log q_i(w) - log q_j(w)|
<= eps`` for every output ``w``, pair and prior (over prior sets: the largest ``<P, m_w>`` over
one set against the smallest over the other, :func:`pufferfish.priors.sets.set_extremes`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pufferfish.noise.channels import MAPPING_BITS as GRID_BITS
from pufferfish.noise.channels import DenseChannel, RandomizedResponseChannel
from pufferfish.priors.scenario import Scenario
from pufferfish.priors.sets import PriorSet, log_value, point_mass_extremes, set_extremes

_U = 2.0**-53


def on_alphabet(prior: Any, support: NDArray[np.float64]) -> NDArray[np.float64]:
    """The prior's masses on ``support`` (shape (k,), 0 off its support)."""
    return np.asarray(prior.on(support), dtype=np.float64)


# --------------------------------------------------------------------------- the exact check


@dataclass(frozen=True)
class MappingLoss:
    """Exact privacy loss of a matrix.

    Attributes
    ----------
    loss : float
        ``max |log q_i(w) - log q_j(w)|`` over outputs, pairs, priors (or the worst case over the
        prior sets), nats; ``inf`` when an output has positive probability under one secret only.
    error : float
        Rounding bound: the check passes when ``loss + error <= epsilon``.
    output : int
        Index of the worst output.
    prior : str
    pair : tuple of str
    """

    loss: float
    error: float
    output: int
    prior: str
    pair: tuple[str, str]


def mapping_loss(scenario: Scenario, matrix: Any, support: NDArray[np.float64]) -> MappingLoss:
    """The exact privacy loss of a randomized mapping for every pair and prior (or prior set).

    Parameters
    ----------
    scenario : Scenario
        Discrete priors; with prior sets (:attr:`Scenario.robust`) the worst case over the sets.
    matrix : array_like, shape (k, k), DenseChannel or RandomizedResponseChannel
        Row-stochastic, rows and columns in the order of ``support``; a randomized-response
        channel is checked in O(k) per pair (:func:`_rr_point_pair_loss`, :func:`_rr_set_pair_loss`)
        without building the matrix.
    support : numpy.ndarray, shape (k,)
        The alphabet (holding every prior's support).

    Returns
    -------
    MappingLoss

    Notes
    -----
    Point priors: ``q = P M`` by a matrix product of non-negative terms, each entry within a
    relative ``gamma_k = k u / (1 - k u)`` of its exact value (``u = 2^-53``); ``log`` adds a
    relative ``u``, so each log-ratio is within ``2 gamma_k + 2 u max |log q| + 2 u``. An output
    whose exact probability is positive (a positive prior mass times a positive entry, decided on
    the sparsity pattern, exactly) but computes to 0 (underflow) gets an infinite bound.
    Prior sets: each extreme value ``<P*, m_w>`` comes with the bound of
    :func:`pufferfish.priors.sets.log_value`.
    """
    if isinstance(matrix, DenseChannel):
        matrix = matrix.weights / float(2**GRID_BITS)
    rr = matrix if isinstance(matrix, RandomizedResponseChannel) else None
    m = None if rr is not None else np.asarray(matrix, dtype=np.float64)
    k = support.size
    worst = MappingLoss(0.0, 0.0, 0, "", ("", ""))
    best_upper = -math.inf
    for rho, pair, p_i, p_j in scenario.iter_pairs():
        if scenario.robust:
            assert rho.sets is not None
            set_i, set_j = rho.sets[pair[0]], rho.sets[pair[1]]
            if rr is not None:
                found = _rr_set_pair_loss(set_i, set_j, rr, support)
            else:
                assert m is not None
                found = _set_pair_loss(set_i, set_j, m, support)
        elif rr is not None:
            found = _rr_point_pair_loss(on_alphabet(p_i, support), on_alphabet(p_j, support), rr)
        else:
            assert m is not None
            found = _point_pair_loss(on_alphabet(p_i, support), on_alphabet(p_j, support), m, k)
        loss, error, w = found
        if loss + error > best_upper:
            best_upper = loss + error
            worst = MappingLoss(loss, error, w, rho.name, pair)
    return worst


def _point_pair_loss(
    p_i: NDArray[np.float64], p_j: NDArray[np.float64], m: NDArray[np.float64], k: int
) -> tuple[float, float, int]:
    q_i, q_j = p_i @ m, p_j @ m
    pos_i = ((p_i > 0).astype(np.int64) @ (m > 0).astype(np.int64)) > 0
    pos_j = ((p_j > 0).astype(np.int64) @ (m > 0).astype(np.int64)) > 0
    return _log_ratios(q_i, q_j, pos_i, pos_j, k * _U / (1.0 - k * _U))


def _set_pair_loss(
    set_i: PriorSet, set_j: PriorSet, m: NDArray[np.float64], support: NDArray[np.float64]
) -> tuple[float, float, int]:
    rows = np.searchsorted(support, set_i.alphabet)
    sub = m[rows]  # the sets live on their alphabet: other rows have no mass
    with np.errstate(divide="ignore"):
        logm = np.log(sub)
    best = (0.0, 0.0, 0)
    for up_set, down_set in ((set_i, set_j), (set_j, set_i)):
        hi = set_extremes(up_set, sub, maximize=True)
        lo = set_extremes(down_set, sub, maximize=False)
        for w in range(sub.shape[1]):
            v_hi, e_hi = log_value(hi[w], logm[:, w])
            if v_hi == -math.inf:
                continue  # no member of the first set can output w
            v_lo, e_lo = log_value(lo[w], logm[:, w])
            loss = v_hi - v_lo
            err = e_hi + e_lo
            if loss + err > best[0] + best[1]:
                best = (loss, err, w)
    return best


def _log_ratios(
    q_i: NDArray[np.float64],
    q_j: NDArray[np.float64],
    pos_i: NDArray[np.bool_],
    pos_j: NDArray[np.bool_],
    gamma: float,
) -> tuple[float, float, int]:
    """The worst ``|log q_i - log q_j|`` and its bound, given exact positivity patterns and a
    relative error ``gamma`` of every entry (the tail of :func:`_point_pair_loss`)."""
    if np.any((q_i == 0) & pos_i) or np.any((q_j == 0) & pos_j):
        w = int(np.argmax(((q_i == 0) & pos_i) | ((q_j == 0) & pos_j)))
        return math.inf, math.inf, w
    if np.any(pos_i != pos_j):
        return math.inf, 0.0, int(np.argmax(pos_i != pos_j))
    live = pos_i
    if not np.any(live):
        return 0.0, 0.0, 0
    with np.errstate(divide="ignore"):
        li, lj = np.log(np.where(live, q_i, 1.0)), np.log(np.where(live, q_j, 1.0))
    ratio = np.where(live, np.abs(li - lj), -np.inf)
    w = int(np.argmax(ratio))
    big = float(np.max(np.maximum(np.abs(li[live]), np.abs(lj[live]))))
    return float(ratio[w]), 2.0 * gamma + 2.0 * _U * big + 2.0 * _U, w


def _rr_point_pair_loss(
    p_i: NDArray[np.float64], p_j: NDArray[np.float64], rr: RandomizedResponseChannel
) -> tuple[float, float, int]:
    """:func:`_point_pair_loss` for randomized response in O(k), without the matrix.

    ``q(w) = c T + d P(w)`` with ``c = other / 2^52``, ``d = (keep - other) / 2^52 >= 0`` (both
    exact), ``T = sum_x P(x)`` (``math.fsum``: correctly rounded): non-negative terms, so each
    ``q(w)`` is within a relative ``3 u`` of its exact value (``gamma = 4u / (1 - 4u)`` is used).
    Exact positivity: ``q(w) > 0`` iff ``other > 0`` and some ``x != w`` has ``P(x) > 0``, or
    ``keep > 0`` and ``P(w) > 0``.
    """
    one = float(2**GRID_BITS)
    c, d = rr.other / one, (rr.keep - rr.other) / one

    def push(p: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
        positive = p > 0
        others = int(positive.sum()) - positive.astype(np.int64) > 0
        pos = (others & (rr.other > 0)) | (positive & (rr.keep > 0))
        return c * math.fsum(p.tolist()) + d * p, pos

    q_i, pos_i = push(p_i)
    q_j, pos_j = push(p_j)
    return _log_ratios(q_i, q_j, pos_i, pos_j, 4.0 * _U / (1.0 - 4.0 * _U))


def _rr_set_pair_loss(
    set_i: PriorSet, set_j: PriorSet, rr: RandomizedResponseChannel, support: NDArray[np.float64]
) -> tuple[float, float, int]:
    """:func:`_set_pair_loss` for randomized response in O(k): column ``w`` of the matrix is
    ``c + d e_w``, so ``<P, m_w> = c + d P(w)`` for every member (members sum to 1), and its
    extremes over a set are those of ``P(w)`` (:func:`pufferfish.priors.sets.point_mass_extremes`,
    each within ``delta``). The computed ``V = c + d P*(w)`` is within ``d delta + 3 u V`` of its
    exact value, a relative ``rho = d delta / V + 4 u`` (``inf`` bound when ``rho >= 1/2``), so
    its log is within ``-log(1 - rho) + u |log V| + u``. Outputs outside the sets' alphabet get
    ``c`` under every member: log-ratio 0.
    """
    one = float(2**GRID_BITS)
    c, d = rr.other / one, (rr.keep - rr.other) / one
    low_i, high_i, delta_i = point_mass_extremes(set_i)
    low_j, high_j, delta_j = point_mass_extremes(set_j)
    cols = np.searchsorted(support, set_i.alphabet)
    best = (0.0, 0.0, int(cols[0]))
    for high, delta_h, low, delta_l in ((high_i, delta_i, low_j, delta_j), (high_j, delta_j, low_i, delta_i)):
        top, bottom = c + d * high, c + d * low
        rho_top = np.where(top > 0, d * delta_h / np.where(top > 0, top, 1.0) + 4 * _U, np.inf)
        rho_bottom = np.where(bottom > 0, d * delta_l / np.where(bottom > 0, bottom, 1.0) + 4 * _U, np.inf)
        with np.errstate(divide="ignore", invalid="ignore"):
            loss = np.log(top) - np.log(bottom)
            err = (
                np.where(rho_top < 0.5, -np.log1p(-np.minimum(rho_top, 0.4)), np.inf)
                + np.where(rho_bottom < 0.5, -np.log1p(-np.minimum(rho_bottom, 0.4)), np.inf)
                + _U * (np.abs(np.log(top)) + np.abs(np.log(bottom)))
                + 2 * _U
            )
        # top computed 0: the exact top is at most d delta_h, so this direction only matters
        # when the bottom may be as small (then it cannot be certified); a top exactly 0 (a set
        # of one member: no member can output w) is no loss at all
        clear = (top == 0) & ((delta_h == 0.0) | (bottom > 2.0 * d * (delta_h + delta_l)))
        with np.errstate(invalid="ignore"):
            total = np.where(clear, 0.0, loss + err)
        total = np.where(np.isnan(total), np.inf, total)
        w = int(np.argmax(total))
        if total[w] > best[0] + best[1]:
            found_loss = float(loss[w]) if np.isfinite(loss[w]) else math.inf
            best = (found_loss, float(total[w] - found_loss) if math.isfinite(found_loss) else math.inf,
                    int(cols[w]))  # fmt: skip
    return best
