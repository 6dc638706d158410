"""The optimal Laplace scale of a count, certified over every binary chain of a confidence set
of row balls, by branch and bound.

For two states the set of :mod:`.rowballs` is a rectangle: row ``0`` moves ``p = P(0 -> 1)`` in
``[p^ - r_0 / 2, p^ + r_0 / 2]``, row ``1`` moves ``q = P(1 -> 0)`` likewise (each clipped to
``[0, 1]``), and each chain starts from its own stationary distribution ``pi = (q, p) / (p + q)``.
The scale ``b`` holds for the set when every chain of the rectangle has exact loss ``<= eps``
(SPEC sec 2.1); a chain's loss is non-increasing in ``b``, so the smallest such ``b`` is found by
certifying candidates.

**A bound over a box.** The stationary start is ``pi = (q, p) / (p + q)``; the factor
``1 / (p + q)`` is common to every path and cancels in every conditional below, so a path's weight
is taken as ``exp(theta . n(path))`` with ``theta = (log P00, log P01, log P10, log P11)`` and
``n`` its transition counts, a start in 0 counted as one more ``1 -> 0`` and a start in 1 as one
more ``0 -> 1``. For the secret ``X_i`` and an output ``y`` of the Laplace release ``C + Lap(b)``,
with ``K(u) = e^{-|u| / b}``,

    N_a(y) = sum_{paths, x_i = a} exp(theta . n) K(y - C),   Z_a = sum_{paths, x_i = a} exp(theta . n),

the loss of the ordered pair ``(a, a')`` at ``y`` is
``L = log N_a(y) + log Z_a' - log N_a'(y) - log Z_a``. Each term is a log-sum-exp of functions
affine in ``theta``: convex. Over a box of ``(p, q)`` every coordinate of ``theta`` lies in an
interval (``log p`` in ``[log p_lo, log p_hi]``, ``log(1 - p)`` in ``[log(1 - p_hi), log(1 -
p_lo)]``, ...), and treating the four as free in that product of intervals is a relaxation: the
true ``theta`` of every chain of the box is in it. Replacing the concave part
``-(log N_a'(y) + log Z_a)`` by its tangent at the box's centre ``theta_c`` (its exact gradient:
expected counts, by forward-mode differentiation of the same recursions) gives a convex upper
bound of ``L``, whose maximum over the product of intervals is at one of its 16 vertices. The box
bound is the largest over vertices, times ``i``, ordered pairs and integer outputs
``y = 0..T``: between integers (and outside ``[0, T]``) the log-ratio of two Laplace mixtures on
``0..T`` is monotone, so every chain's loss is attained at one of them (SPEC sec 2.1).

**Branch and bound.** A box whose bound is ``<= eps - margin`` is certified; otherwise the chain
at its centre is checked exactly: above ``eps`` it is a witness (a chain of the set the scale fails
on; the search raises the scale to that chain's own optimum, a lower bound of the set's); else the
box is split in two across its relatively wider side. The bound's excess over the true loss
shrinks with the box (its first-order part by the tangent, its second-order part with the box's
width squared times ``T``), so the boxes near the worst chain are split until they certify.

**Search.** From a lower bound (the optimum over the listed chains, all members of the set) the
scale ``b = lower (1 + gap)`` is certified; a witness raises ``lower`` to the witness chain's
optimum; too many boxes double ``gap`` (up to :data:`MAX_GAP`). The answer is a certified scale and
the interval ``[lower, b]`` that holds the set's true optimum.

Rounding: every quantity is a sum of non-negative terms computed with a relative error of about
``(4 T + 16) u`` (``u = 2^-53``), a log error below ``1e-12`` at ``T <= 1000``; the recursions
are rescaled at each step, and a term dropped by underflow is below ``1e-308`` of the largest at
its step, amplified by at most ``e^{T / b}`` by the kernel, which is refused beyond ``e^600``: the
certificate keeps a margin of :data:`MARGIN` nats.
"""

from __future__ import annotations

import heapq
import itertools
import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pufferfish.markov.counts import CountModel
from pufferfish.markov.rowballs import RowBalls

#: Nats kept between a certified box's bound and epsilon (rounding, module docstring).
MARGIN = 1e-9

#: Largest length certified (a box costs about ``21 T^3`` operations: 16 vertices and a gradient;
#: 9 s at T = 1,000).
MAX_LENGTH = 1000

#: Boxes one certification may split before it gives up at a scale.
MAX_BOXES = 4000

#: The gap between the certified scale and the lower bound first tried, and the largest.
FIRST_GAP, MAX_GAP = 0.005, 0.32

#: Largest ``T / b`` (the kernel spans ``e^{-T/b}..1``; module docstring).
MAX_SPAN = 600.0


@dataclass(frozen=True)
class SetOptimum:
    """The smallest certified scale over the set, and what the search found.

    Attributes
    ----------
    scale : float
        Certified: every chain of the rectangle has exact loss ``<= epsilon`` at this Laplace scale
        (count units).
    lower : float
        The set's true optimum is at least this (a chain of the set needs it).
    boxes : int
        Boxes bounded in the last, successful certification.
    witnesses : tuple of (float, float)
        The ``(p, q)`` chains found above epsilon at a scale tried (each raised ``lower``).
    seconds : float
        Wall time of the search.
    """

    scale: float
    lower: float
    boxes: int
    witnesses: tuple[tuple[float, float], ...] = field(default=())
    seconds: float = 0.0

    def sentence(self) -> str:
        """One line for a result row."""
        return (
            f"certified over the whole rectangle of chains by branch and bound ({self.boxes} boxes); the "
            f"set's optimum is in [{self.lower:.6g}, {self.scale:.6g}]"
        )


class _Setup:
    """A length, target and scale."""

    def __init__(self, length: int, target: int, scale: float) -> None:
        self.T, self.target, self.b = length, target, scale
        self.decay = math.exp(-1.0 / scale)


def _smooth(counts: NDArray[np.float64], decay: float) -> NDArray[np.float64]:
    """``sum_c counts[..., c] decay^|y - c|`` for ``y = 0..T`` (the Laplace kernel ``K``), by the
    two first-order recursions ``left[y] = decay left[y-1] + counts[y]`` and its mirror (sums of
    non-negative terms)."""
    left = np.empty_like(counts)
    right = np.empty_like(counts)
    n = counts.shape[-1]
    left[..., 0] = counts[..., 0]
    for y in range(1, n):
        left[..., y] = decay * left[..., y - 1] + counts[..., y]
    right[..., n - 1] = counts[..., n - 1]
    for y in range(n - 2, -1, -1):
        right[..., y] = decay * right[..., y + 1] + counts[..., y]
    return left + right - counts


def _path_sums(
    theta: NDArray[np.float64], setup: _Setup, grad: bool
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64] | None]:
    """For weights ``exp(theta[v])`` of each row ``v`` of ``theta`` (shape ``(V, 4)``, the logs of
    ``P00, P01, P10, P11``; the start weights ``(P10, P01)``, the stationary distribution times
    ``p + q``): ``log N[v, i, a, y]`` and ``log Z[v, i, a]`` (module docstring), and with ``grad``
    (``V = 1``) their gradients in ``theta``, ``[i, a, y, 4]`` (the last ``y`` row: ``log Z``'s).

    Forward ``F_t(x, c)``: paths ``x_0..x_t`` ending at ``x`` with ``c`` visits to the target in
    positions ``0..t``; backward ``B_t(x, c)``: paths ``x_{t+1}..x_{T-1}`` from ``x`` with ``c``
    visits; ``N_a^i(c) = sum F_i(a, c1) B_i(a, c - c1)``. Each step is rescaled by its largest
    entry (the log offsets are kept); derivative channels ride along (forward mode)."""
    T, tgt = setup.T, setup.target
    nv = theta.shape[0]
    w = np.exp(theta).reshape(nv, 2, 2)
    start = np.stack([w[:, 1, 0], w[:, 0, 1]], axis=1)  # pi (p + q) = (q, p)
    ch = 5 if grad else 1  # channel 0: the value; 1..4: d / d theta_j
    fwd = np.zeros((T, nv, ch, 2, T + 1))
    f_off = np.zeros((T, nv))
    for x in range(2):
        fwd[0, :, 0, x, int(x == tgt)] = start[:, x]
        if grad:  # the start weight of 0 is P10 (channel 3), of 1 is P01 (channel 2)
            fwd[0, :, 3 if x == 0 else 2, x, int(x == tgt)] = start[:, x]
    for t in range(1, T):
        prev = fwd[t - 1]
        cur = fwd[t]
        for x2 in range(2):
            by = int(x2 == tgt)
            acc = prev[:, :, 0, :] * w[:, None, 0, x2, None] + prev[:, :, 1, :] * w[:, None, 1, x2, None]
            if grad:  # d / d log w[x1, x2]: the value channel times w
                for x1 in range(2):
                    acc[:, 1 + 2 * x1 + x2] += prev[:, 0, x1, :] * w[:, x1, x2, None]
            cur[:, :, x2, by:] = acc[:, :, : T + 1 - by]
        top = np.max(cur[:, 0], axis=(1, 2))
        top[top == 0] = 1.0
        cur /= top[:, None, None, None]
        f_off[t] = f_off[t - 1] + np.log(top)
    bwd = np.zeros((T, nv, ch, 2, T + 1))
    b_off = np.zeros((T, nv))
    bwd[T - 1, :, 0, :, 0] = 1.0
    for t in range(T - 2, -1, -1):
        nxt = bwd[t + 1]
        cur = bwd[t]
        for x2 in range(2):
            by = int(x2 == tgt)
            moved = np.zeros((nv, ch, T + 1))
            moved[:, :, by:] = nxt[:, :, x2, : T + 1 - by]
            for x1 in range(2):
                cur[:, :, x1, :] += moved * w[:, None, x1, x2, None]
                if grad:
                    cur[:, 1 + 2 * x1 + x2, x1, :] += moved[:, 0] * w[:, x1, x2, None]
        top = np.max(cur[:, 0], axis=(1, 2))
        top[top == 0] = 1.0
        cur /= top[:, None, None, None]
        b_off[t] = b_off[t + 1] + np.log(top)
    counts = np.zeros((nv, T, ch, 2, T + 1))
    for v in range(nv):
        for i in range(T):
            for a in range(2):
                # F_i counts positions 0..i (at most i + 1 visits), B_i positions i+1..T-1 (at most
                # T - 1 - i): the cut vectors convolve to exactly T + 1 counts, a sixth of the work
                fa, ba = fwd[i, v, :, a, : i + 2], bwd[i, v, :, a, : T - i]
                counts[v, i, 0, a] = np.convolve(fa[0], ba[0])
                for j in range(1, ch):
                    counts[v, i, j, a] = np.convolve(fa[j], ba[0]) + np.convolve(fa[0], ba[j])
    offset = (f_off + b_off).T[:, :, None]  # [v, i, 1]
    smoothed = _smooth(counts, setup.decay)  # [v, i, ch, a, y]
    totals = counts.sum(axis=4)  # [v, i, ch, a]
    with np.errstate(divide="ignore"):
        log_n = np.log(smoothed[:, :, 0]) + offset[..., None]
        log_z = np.log(totals[:, :, 0]) + offset
    if not grad:
        return log_n, log_z, None
    with np.errstate(divide="ignore", invalid="ignore"):
        g_n = np.moveaxis(smoothed[0, :, 1:] / smoothed[0, :, :1], 1, -1)  # [i, a, y, 6]
        g_z = np.moveaxis(totals[0, :, 1:] / totals[0, :, :1], 1, -1)  # [i, a, 6]
    return log_n, log_z, np.concatenate([g_n, g_z[:, :, None, :]], axis=2)


def _theta(p: float, q: float) -> NDArray[np.float64]:
    with np.errstate(divide="ignore"):
        return np.log(np.array([1 - p, p, q, 1 - q]))


def chain_loss(p: float, q: float, length: int, target: int, scale: float) -> float:
    """The exact loss of ``C + Lap(scale)`` on the stationary binary chain ``P(0 -> 1) = p``,
    ``P(1 -> 0) = q`` (in [0, 1], ``p + q > 0``): the largest over times, ordered pairs of states
    both possible at that time, and ``y = 0..T`` (0 when no time has such a pair)."""
    log_n, log_z, _ = _path_sums(_theta(p, q)[None, :], _Setup(length, target, scale), grad=False)
    both = np.all(np.isfinite(log_z[0]), axis=1)  # [i]: both states possible at time i
    if not both.any():
        return 0.0
    ratio = log_n[0][both] - log_z[0][both][:, :, None]
    return float(np.max(np.abs(ratio[:, 0, :] - ratio[:, 1, :])))


def _box_bound(box: tuple[float, float, float, float], setup: _Setup) -> float:
    """The largest vertex value of the convex bound over ``box = (p_lo, p_hi, q_lo, q_hi)``
    (inside ``(0, 1)``): the 16 vertices of the product of the intervals of the four log-weights.
    An undefined value counts as ``+inf``: the box is split."""
    p_lo, p_hi, q_lo, q_hi = box
    lows = np.log([1 - p_hi, p_lo, q_lo, 1 - q_hi])
    highs = np.log([1 - p_lo, p_hi, q_hi, 1 - q_lo])
    centre = (lows + highs) / 2.0
    c_n, c_z, grads = _path_sums(centre[None, :], setup, grad=True)
    assert grads is not None
    g_n, g_z = grads[:, :, :-1, :], grads[:, :, -1, :]
    corners = np.array(list(itertools.product((0, 1), repeat=4)))
    thetas = np.where(corners == 1, highs, lows)  # [16, 4]
    worst = -math.inf
    for part in np.array_split(np.arange(16), 4):  # four vertices at a time: memory ~ 4 T^2 floats x 8
        steps = thetas[part] - centre
        v_n, v_z, _ = _path_sums(thetas[part], setup, grad=False)  # [v, i, a, y], [v, i, a]
        lin_n = c_n[0][None] + np.einsum("iayj,vj->viay", g_n, steps)  # tangent of log N at the centre
        lin_z = c_z[0][None] + np.einsum("iaj,vj->via", g_z, steps)
        with np.errstate(invalid="ignore"):
            for a, other in ((0, 1), (1, 0)):
                bound = (
                    v_n[:, :, a, :] + v_z[:, :, other, None] - lin_n[:, :, other, :] - lin_z[:, :, a, None]
                )
                worst = max(worst, float(np.max(np.where(np.isnan(bound), np.inf, bound))))
    return worst


def _certify(
    rect: tuple[float, float, float, float], setup: _Setup, epsilon: float, deadline: float
) -> tuple[str, Any]:
    """``("certified", boxes)``, ``("witness", (p, q))`` or ``("unknown", boxes)``."""
    heap: list[tuple[float, tuple[float, float, float, float]]] = [(0.0, rect)]
    boxes = 0
    while heap:
        _, box = heapq.heappop(heap)
        boxes += 1
        if boxes > MAX_BOXES or time.monotonic() > deadline:
            return "unknown", boxes
        if _box_bound(box, setup) <= epsilon - MARGIN:
            continue
        p_lo, p_hi, q_lo, q_hi = box
        p, q = (p_lo + p_hi) / 2, (q_lo + q_hi) / 2
        centre_loss = chain_loss(p, q, setup.T, setup.target, setup.b)
        if centre_loss > epsilon:
            return "witness", (p, q)
        if (p_hi - p_lo) / min(p, 1 - p) >= (q_hi - q_lo) / min(q, 1 - q):
            halves = [(p_lo, p, q_lo, q_hi), (p, p_hi, q_lo, q_hi)]
        else:
            halves = [(p_lo, p_hi, q_lo, q), (p_lo, p_hi, q, q_hi)]
        for half in halves:
            heapq.heappush(heap, (-centre_loss, half))
    return "certified", boxes


def chain_optimum(
    p: float, q: float, length: int, target: int, epsilon: float, start: float
) -> tuple[float, float]:
    """``(fails, passes)``: two scales within a relative ``1e-5`` around the chain's own optimum,
    the first with exact loss above ``epsilon`` (a lower bound of the optimum of any set holding
    the chain), the second at most ``epsilon`` (``inf`` when no scale up to ``1e9`` times ``start``
    passes); searched from ``start > 0``."""
    lo, hi = 0.0, start
    while chain_loss(p, q, length, target, hi) > epsilon:
        lo, hi = hi, hi * 2.0
        if hi > 1e9 * start:
            return lo, math.inf
    while hi - lo > 1e-5 * hi:
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if chain_loss(p, q, length, target, mid) > epsilon else (lo, mid)
    return lo, hi


def _opening(rect: tuple[float, float, float, float], length: int, target: int, epsilon: float) -> float:
    """A lower bound of the set's optimum: the largest own optimum of the rectangle's corners,
    edge midpoints and centre (chains of the set; the loss need not be largest there, which the
    branch and bound settles). A chain that passes at the best so far needs no search."""
    p_lo, p_hi, q_lo, q_hi = rect
    ps, qs = (p_lo, (p_lo + p_hi) / 2, p_hi), (q_lo, (q_lo + q_hi) / 2, q_hi)
    best = 0.0
    for p, q in itertools.product(ps, qs):
        if best > 0 and chain_loss(p, q, length, target, best) <= epsilon:
            continue
        best = max(best, chain_optimum(p, q, length, target, epsilon, max(best, 1e-3))[0])
    return best


def set_optimum(
    rect: tuple[float, float, float, float],
    length: int,
    target: int,
    epsilon: float,
    *,
    seconds: float = 120.0,
) -> SetOptimum | str:
    """The smallest certified scale over the rectangle of binary chains (module docstring), or
    the reason it was not found.

    Parameters
    ----------
    rect : (p_lo, p_hi, q_lo, q_hi)
        ``P(0 -> 1)`` and ``P(1 -> 0)`` ranges, inside (0, 1).
    length : int
        ``T``, 1..:data:`MAX_LENGTH`.
    target : {0, 1}
        The counted state.
    epsilon : float
        Finite and > 0.
    seconds : float
        Wall-time budget; past it the search answers with the reason.

    Returns
    -------
    SetOptimum or str
    """
    p_lo, p_hi, q_lo, q_hi = rect
    if not (0.0 < p_lo <= p_hi < 1.0 and 0.0 < q_lo <= q_hi < 1.0):
        return (
            "a transition probability of the set reaches 0 or 1 (a chain that never leaves a state, or "
            "alternates: the bound needs every log-weight finite)"
        )
    if not 1 <= length <= MAX_LENGTH:
        return f"the set's branch and bound runs up to T = {MAX_LENGTH}, got T = {length}"
    began = time.monotonic()
    deadline = began + seconds
    lower = _opening(rect, length, target, epsilon)
    if not lower > 0 or length / lower > MAX_SPAN:
        return f"the scale is too small for the bound's kernel (T / b above {MAX_SPAN:g})"
    gap, witnesses = FIRST_GAP, list[tuple[float, float]]()
    while True:
        scale = lower * (1.0 + gap)
        verdict, found = _certify(rect, _Setup(length, target, scale), epsilon, deadline)
        if verdict == "certified":
            return SetOptimum(scale, lower, int(found), tuple(witnesses), time.monotonic() - began)
        if verdict == "witness":
            p, q = found
            witnesses.append((float(p), float(q)))
            lower = max(lower, chain_optimum(p, q, length, target, epsilon, scale)[0])
            continue
        if time.monotonic() > deadline:
            return f"no certificate within {seconds:g} s (the set's optimum is at least {lower:.6g})"
        gap *= 2.0
        if gap > MAX_GAP:
            return f"no certificate within {MAX_GAP:.0%} of the lower bound {lower:.6g} ({MAX_BOXES} boxes)"


#: Seconds one certified search may take (a row says so past it).
SEARCH_SECONDS = 120.0

_FOUND: dict[tuple[Any, ...], SetOptimum | str] = {}


def set_rectangle(balls: RowBalls) -> tuple[float, float, float, float]:
    """The rectangle ``(p_lo, p_hi, q_lo, q_hi)`` of a binary set of row balls: an L1 ball of radius
    ``r`` in the 2-simplex moves one probability by at most ``r / 2`` (the other moves back)."""
    (p_hat, q_hat), (r0, r1) = (balls.center[0, 1], balls.center[1, 0]), balls.radii
    return (
        max(0.0, float(p_hat - r0 / 2)),
        min(1.0, float(p_hat + r0 / 2)),
        max(0.0, float(q_hat - r1 / 2)),
        min(1.0, float(q_hat + r1 / 2)),
    )


def model_set_optimum(model: CountModel, epsilon: float) -> SetOptimum:
    """:func:`set_optimum` for a count model over a binary set of row balls (computed once per
    set, length, target and epsilon).

    Raises
    ------
    ValueError
        Naming why the set's optimum was not certified (not a binary count over row balls, a
        probability reaching 0 or 1, a length beyond :data:`MAX_LENGTH`, the time budget).
    """
    balls = model.row_balls
    if balls is None or balls.k != 2 or model.query not in ("count", "frequency"):
        raise ValueError(
            "the optimum over a set is certified for a count on a binary chain's set of row balls"
        )
    if not all(c.stationary for c in model.chains):
        raise ValueError("the optimum over a set is certified for chains that start stationary")
    rect = set_rectangle(balls)
    target = model.states.index(model.target)
    key = (rect, model.length, target, float(epsilon))
    if key not in _FOUND:
        if len(_FOUND) > 64:
            _FOUND.clear()
        _FOUND[key] = set_optimum(rect, model.length, target, float(epsilon), seconds=SEARCH_SECONDS)
    found = _FOUND[key]
    if isinstance(found, str):
        raise ValueError(found)
    return found
