"""Exact privacy checks of a release ``Y = X + N`` for any prior and Laplace or Gaussian noise.

For a secret ``s`` the released value has the density ``f_s = P_{X|S}(. | s) * P_N``, a mixture of
kernels (:mod:`pufferfish.loss.density`). Two Gaussian releases have a closed form
(:mod:`pufferfish.loss.gaussian`).

Three quantities are computed for a pair of densities, each with a stated numerical error bound:

* :func:`privacy_loss_sup`: ``sup_y |log f_i(y) - log f_j(y)|`` (pure eps; Laplace noise);
* :func:`hockey_stick`: ``delta = max over both directions of int [f_i - e^eps f_j]_+ dy``, the
  smallest delta of (eps, delta)-indistinguishability (SPEC sec 0);
* :func:`mutual_information`: ``I(S; Y) = sum_s pi_s KL(f_s || sum_t pi_t f_t)`` (seed 004 Def 3).

Each rests on bounding ``log f`` over the intervals of a grid that is refined by vectorised
bisection until every interval is decided or its contribution is within the error budget; the
bounds of undecided intervals and of the far tails are added to the error bound.

* The loss uses a slope bound: a Laplace mixture satisfies ``|f'| <= f / b``, so
  ``g = log f_i - log f_j`` has ``|g'| <= 2/b`` and, on an interval of width ``h`` whose ends have
  values ``u, v``, lies in ``[(u+v)/2 - h/b, (u+v)/2 + h/b]``; beyond the grid a tail bound. Where
  these leave an interval open, tilted kernel bounds (both densities times ``e^{+-y/b}``, which
  leaves ``g`` unchanged; each tilted kernel half is monotone or log-concave with a known mode)
  decide it: they are tight on the long flat stretches of ``g`` in the tails, where the slope
  bound would need ever finer intervals.
* Delta and the information use kernel bounds: every kernel (Laplace, normal-Laplace, Gaussian) is
  log-concave with its mode at its centre, the centres are grid points, so on each interval every
  kernel lies between its values at the two ends, which bounds ``log f`` there. For Laplace
  releases delta also uses the tilted bounds where the kernel bounds leave an interval open.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.special import logsumexp

from pufferfish.loss.density import TAIL_MASS, ReleaseDensity, U, kernel_halves, tail_upper
from pufferfish.loss.information import applies as _atoms_apply
from pufferfish.loss.information import intervals_to_split, laplace_atoms_information

_MAX_LEVELS = 60
_MAX_OPEN = 1_000_000
_ROUNDING = 1e-12


# ---------------------------------------------------------------------------------------------
# Interval machinery


class GridTooFineError(ValueError):
    """The densities vary too fast for the interval grid (a noise scale far below the priors' spread)."""


#: Largest grid the interval machinery builds.
MAX_GRID = 5_000_000

#: Largest (intervals x kernels) array of the kernel bounds of :func:`hockey_stick` and
#: :func:`mutual_information` (2^24 float64 = 128 MiB each; about six are alive at once).
KERNEL_ENTRIES = 2**24


class MemoryLimitError(RuntimeError):
    """A check would need more memory than :data:`KERNEL_ENTRIES` allows; raised before allocating
    (issue 34). Its comparison row says ``not run: needs about N GiB ...``."""


def _kernel_budget(points: int, kernels: int, what: str) -> int:
    """The largest number of intervals whose kernel arrays fit :data:`KERNEL_ENTRIES`.

    Raises
    ------
    MemoryLimitError
        If the first grid of ``points`` points does not fit, naming the memory it would need
        (six float64 arrays of ``points x kernels``).
    """
    if points * kernels > KERNEL_ENTRIES:
        need = 6 * 8 * points * kernels / 2**30
        raise MemoryLimitError(
            f"not run: needs about {need:,.1f} GiB for {what} ({points:,} grid points x {kernels:,} "
            f"prior atoms or components; the limit is {KERNEL_ENTRIES * 48 / 2**30:.2g} GiB)"
        )
    return max(KERNEL_ENTRIES // max(kernels, 1), points)


def _tilted_bounds(
    f: ReleaseDensity, a: NDArray[np.float64], c: NDArray[np.float64], modes: tuple[NDArray[np.float64], ...]
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Bounds on ``log f(y) + (y - a)/b`` and on ``log f(y) - (y - c)/b`` over each ``[a, c]``.

    Returns ``(lo_right, up_right, lo_left, up_left)``, each of shape (len(a),).

    Notes
    -----
    Tilting both densities of a pair by the same ``e^{+-y/b}`` leaves ``log f_i - log f_j``
    unchanged, and in the far tails the tilted densities are nearly constant, so these bounds are
    tight where ``g`` is flat and the slope bound ``2/b`` is not. With the halves of
    :meth:`ReleaseDensity._laplace_halves`: ``L + y/b`` is non-decreasing (``log Phi`` of an
    increasing argument, or for an atom ``(y - |y - x|)/b``) and ``R + y/b`` is log-concave with a
    known mode, so on ``[a, c]`` each lies between its end values, the concave one below its value
    at the mode when the mode is inside. Mirrored for the left tilt (``R - y/b`` non-increasing,
    ``L - y/b`` log-concave; for an atom non-increasing).
    """
    b = f.scale
    right_mode, left_mode = modes
    h = ((c - a) / b)[:, None]
    la, ra = f._laplace_halves(a)
    lc, rc = f._laplace_halves(c)
    # right tilt, reference a: L + (y-a)/b non-decreasing; R + (y-a)/b log-concave, mode right_mode
    rm = right_mode[None, :]
    inside = (a[:, None] < rm) & (rm < c[:, None])
    r_at_mode = kernel_halves(right_mode - f.locs, f.spreads, f.log_weights, b)[1][None, :]
    with np.errstate(invalid="ignore"):  # -inf + inf at modes of -inf, never inside
        r_peak = np.where(inside, r_at_mode + (rm - a[:, None]) / b, np.maximum(ra, rc + h))
    lo_right = logsumexp(np.stack([la, np.minimum(ra, rc + h)]), axis=(0, 2))
    up_right = logsumexp(np.stack([lc + h, r_peak]), axis=(0, 2))
    # left tilt, reference c: R - (y-c)/b non-increasing; L - (y-c)/b log-concave, mode left_mode
    lm = left_mode[None, :]
    inside = (a[:, None] < lm) & (lm < c[:, None])
    l_at_mode = kernel_halves(left_mode - f.locs, f.spreads, f.log_weights, b)[0][None, :]
    with np.errstate(invalid="ignore"):
        l_peak = np.where(inside, l_at_mode + (c[:, None] - lm) / b, np.maximum(la + h, lc))
    lo_left = logsumexp(np.stack([rc, np.minimum(la + h, lc)]), axis=(0, 2))
    up_left = logsumexp(np.stack([ra + h, l_peak]), axis=(0, 2))
    return lo_right, up_right, lo_left, up_left


def _tilted_g_bounds(
    f_i: ReleaseDensity,
    f_j: ReleaseDensity,
    a: NDArray[np.float64],
    c: NDArray[np.float64],
    modes: tuple[tuple[NDArray[np.float64], ...], tuple[NDArray[np.float64], ...]],
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Bounds ``(lower, upper)`` on ``g = log f_i - log f_j`` over each ``[a, c]`` from
    :func:`_tilted_bounds` (the tighter of the two tilts); ``modes`` from
    :meth:`ReleaseDensity._tilted_modes` of ``f_i`` and ``f_j``. NaN bounds become infinite."""
    lower, upper = np.empty(a.size), np.empty(a.size)
    chunk = max(1, 2_000_000 // max(f_i.locs.size + f_j.locs.size, 1))
    for k in range(0, a.size, chunk):
        sl = slice(k, k + chunk)
        li_r, ui_r, li_l, ui_l = _tilted_bounds(f_i, a[sl], c[sl], modes[0])
        lj_r, uj_r, lj_l, uj_l = _tilted_bounds(f_j, a[sl], c[sl], modes[1])
        lower[sl] = np.maximum(li_r - uj_r, li_l - uj_l)
        upper[sl] = np.minimum(ui_r - lj_r, ui_l - lj_l)
    return np.where(np.isnan(lower), -np.inf, lower), np.where(np.isnan(upper), np.inf, upper)


def _laplace_grid(f_i: ReleaseDensity, f_j: ReleaseDensity, lo: float, hi: float) -> NDArray[np.float64]:
    """A sorted grid on ``[lo, hi]`` through every kernel centre with ``L h <= 1/2`` per interval,
    ``L = 1/b_i + 1/b_j`` the slope bound of ``g`` for two Laplace releases (module docstring).

    Raises
    ------
    GridTooFineError
        If that takes more than :data:`MAX_GRID` points.
    """
    centres = np.concatenate([f_i.locs, f_j.locs])
    centres = centres[(centres > lo) & (centres < hi)]
    grid = np.unique(np.concatenate([np.linspace(lo, hi, 2049), centres]))
    lip = 1.0 / f_i.scale + 1.0 / f_j.scale
    for _ in range(40):
        a, c = grid[:-1], grid[1:]
        parts = np.ceil(lip * (c - a) / 0.5)
        wide = parts > 1
        if not wide.any():
            break
        total = float(parts[wide].sum()) + grid.size
        if not math.isfinite(total) or total > MAX_GRID:
            raise GridTooFineError(
                f"the densities vary too fast for a grid of {MAX_GRID} points (noise scale too small "
                "for the priors' spread)"
            )
        k = parts[wide].astype(np.int64)
        starts, widths = a[wide], (c[wide] - a[wide])
        owner = np.repeat(np.arange(k.size), k - 1)
        offset = np.arange(owner.size) - np.repeat(np.cumsum(k - 1) - (k - 1), k - 1) + 1
        extra = starts[owner] + widths[owner] * offset / k[owner]
        grid = np.unique(np.concatenate([grid, extra]))
    return grid


# ---------------------------------------------------------------------------------------------
# Pure eps: sup |log f_i - log f_j|


@dataclass(frozen=True)
class LossBound:
    """Privacy loss ``sup_y |log f_i(y) - log f_j(y)|`` with its numerical error bound.

    Attributes
    ----------
    loss : float
        The largest ``|g|`` found at a released value (a value the supremum attains or exceeds).
    error_bound : float
        The supremum is in ``[loss, loss + error_bound]``.
    worst_y : float
        Where ``loss`` was found.
    evaluations : int
        Density evaluations used.
    """

    loss: float
    error_bound: float
    worst_y: float
    evaluations: int

    @property
    def upper(self) -> float:
        """``loss + error_bound``: a certified upper bound on the privacy loss."""
        return self.loss + self.error_bound


def privacy_loss_sup(
    f_i: ReleaseDensity, f_j: ReleaseDensity, *, tol: float = 1e-9, max_intervals: int = 2_000_000
) -> LossBound:
    """Certified ``sup_y |log f_i(y) - log f_j(y)|`` for two Laplace releases (pure eps check).

    Parameters
    ----------
    f_i, f_j : ReleaseDensity
        Releases of the two secrets with Laplace noise of the same scale ``b > 0``.
    tol : float
        Target of the error bound (nats, > 0).
    max_intervals : int
        Cap on the intervals kept; if reached, the (larger) bound reached is reported.

    Returns
    -------
    LossBound

    Raises
    ------
    ValueError
        If the noise is not Laplace with ``b > 0`` (with Gaussian noise the loss is unbounded
        unless the priors are translates, so it is not computed here).

    Notes
    -----
    Branch and bound on ``[y_lo, y_hi]`` with the slope bound ``2/b`` and, for intervals it
    leaves open, the tilted kernel bounds of :func:`_tilted_bounds` (module docstring). Beyond
    ``y_hi`` (right of every atom and ``12 s_m + s_m^2/b`` right of every Gaussian component)
    ``f(y) e^{(y - y_hi)/b}`` lies in ``[G, G + E]`` (:meth:`ReleaseDensity.tail_log_bounds`), which
    bounds ``g`` on the tail; likewise on the left. The same bound taken at each interval's ends
    prunes intervals on a plateau of ``g`` that a slope bound alone would split without end.
    SPEC sec 4 (the log-ratio is bounded, so pure eps is reachable with finite b).
    """
    if not (f_i.laplace and f_j.laplace and f_i.scale == f_j.scale):
        raise ValueError("privacy_loss_sup needs two Laplace releases with the same scale b > 0")
    b = f_i.scale
    locs = np.concatenate([f_i.locs, f_j.locs])
    sp = np.concatenate([f_i.spreads, f_j.spreads])
    hi = float((locs + 12.0 * sp + sp**2 / b).max())
    lo = float((locs - 12.0 * sp - sp**2 / b).min())
    if hi - lo < b:
        hi, lo = hi + b, lo - b
    grid = _laplace_grid(f_i, f_j, lo, hi)
    li, lj = f_i.log_pdf(grid), f_j.log_pdf(grid)
    vals = np.abs(li - lj)
    # largest |log f_i| + |log f_j| evaluated: the rounding of g is bounded by it (see _g_margin)
    mag = float(np.max(np.abs(li) + np.abs(lj)))
    evals = 2 * grid.size
    k = int(np.argmax(vals))
    best, worst_y = float(vals[k]), float(grid[k])
    tails = max(float(tail_upper(f_i, f_j, hi, 1)[0]), float(tail_upper(f_i, f_j, lo, -1)[0]))
    lip = 2.0 / b

    def _cheap_uppers(
        a: NDArray[np.float64], c: NDArray[np.float64], va: NDArray[np.float64], vc: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        lipschitz = (va + vc) / 2.0 + lip * (c - a) / 2.0
        return np.minimum(lipschitz, np.minimum(tail_upper(f_i, f_j, a, 1), tail_upper(f_i, f_j, c, -1)))

    modes = (f_i._tilted_modes(), f_j._tilted_modes())

    def tilted_uppers(a: NDArray[np.float64], c: NDArray[np.float64]) -> NDArray[np.float64]:
        lower, upper = _tilted_g_bounds(f_i, f_j, a, c, modes)
        return np.maximum(upper, -lower)

    def uppers(
        a: NDArray[np.float64], c: NDArray[np.float64], va: NDArray[np.float64], vc: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        cheap = _cheap_uppers(a, c, va, vc)
        nonlocal evals
        open_ = cheap > max(best, tails) + tol
        if open_.any():
            evals += 4 * int(open_.sum())
            cheap[open_] = np.minimum(cheap[open_], tilted_uppers(a[open_], c[open_]))
        return cheap

    a, c, va, vc = grid[:-1], grid[1:], vals[:-1], vals[1:]
    up = uppers(a, c, va, vc)
    for _ in range(_MAX_LEVELS):
        keep = up > max(best, tails) + tol
        a, c, va, vc, up = a[keep], c[keep], va[keep], vc[keep], up[keep]
        if a.size == 0 or a.size > max_intervals:
            break
        m = (a + c) / 2.0
        lim, ljm = f_i.log_pdf(m), f_j.log_pdf(m)
        vm = np.abs(lim - ljm)
        mag = max(mag, float(np.max(np.abs(lim) + np.abs(ljm))))
        evals += 2 * m.size
        k = int(np.argmax(vm))
        if vm[k] > best:
            best, worst_y = float(vm[k]), float(m[k])
        a, c, va, vc = (
            np.concatenate([a, m]),
            np.concatenate([m, c]),
            np.concatenate([va, vm]),
            np.concatenate([vm, vc]),
        )
        up = uppers(a, c, va, vc)
    inside = float(up.max()) if a.size else best
    upper_all = max(inside, tails, best)
    # rounding of the evaluated g (the _g_margin model at the largest magnitude evaluated, once for
    # the best value and once for the interval bounds built on evaluated values), never below
    # 1e-12 (1 + best)
    rounding = max(_ROUNDING * (1.0 + best), 2.0 * float(_g_margin(mag, f_i, f_j)))
    return LossBound(best, upper_all - best + rounding, worst_y, evals)


# ---------------------------------------------------------------------------------------------
# (eps, delta): the hockey-stick divergence


@dataclass(frozen=True)
class DeltaBound:
    """The smallest delta of (eps, delta)-indistinguishability of two releases, with its bound.

    Attributes
    ----------
    epsilon : float
    delta : float
        ``max(int [f_i - e^eps f_j]_+, int [f_j - e^eps f_i]_+)`` as computed (a lower estimate).
    error_bound : float
        The true value is in ``[delta, delta + error_bound]``.
    forward, backward : float
        The two directions ``i -> j`` and ``j -> i``.
    intervals : int
        Grid intervals used.
    """

    epsilon: float
    delta: float
    error_bound: float
    forward: float
    backward: float
    intervals: int

    @property
    def upper(self) -> float:
        """``delta + error_bound``: a certified upper bound on the hockey-stick divergence."""
        return self.delta + self.error_bound


def _simple_grid(densities: list[ReleaseDensity], lo: float, hi: float, n: int = 2049) -> NDArray[np.float64]:
    """A uniform grid on ``[lo, hi]`` plus every kernel centre inside (so each kernel is monotone
    on every interval: all kernels are log-concave with their mode at their centre)."""
    centres = np.concatenate([d.locs for d in densities])
    centres = centres[(centres > lo) & (centres < hi)]
    return np.unique(np.concatenate([np.linspace(lo, hi, n), centres]))


def _kernels(f: ReleaseDensity, y: NDArray[np.float64]) -> NDArray[np.float64]:
    """``log w_m + log k_m(y)``, shape (len(y), m)."""
    return f._kernel_terms(np.asarray(y, dtype=np.float64))


def _interval_log_bounds(
    ka: NDArray[np.float64], kc: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Bounds on ``log f`` over intervals whose ends have kernel terms ``ka``, ``kc`` (rows).

    Every kernel is log-concave with its mode at its centre, a grid point, so on an interval each
    kernel is monotone and lies between its values at the two ends.
    """
    return logsumexp(np.minimum(ka, kc), axis=1), logsumexp(np.maximum(ka, kc), axis=1)


def hockey_stick(
    f_i: ReleaseDensity,
    f_j: ReleaseDensity,
    epsilon: float,
    *,
    tol: float = 1e-10,
    resolution: float = 1e-17,
    time_limit: float = 30.0,
) -> DeltaBound:
    """Certified hockey-stick divergence ``sup_B P_i(B) - e^eps P_j(B)`` in both directions.

    Parameters
    ----------
    f_i, f_j : ReleaseDensity
        Releases of the two secrets (same noise and scale).
    epsilon : float
        Finite and >= 0.
    tol : float
        An undecided interval whose bound on ``g = log f_i - log f_j`` is narrower than this is
        left to the error bound (default 1e-10).
    resolution : float
        An undecided interval whose contribution bound is below this is retired to the error
        bound (default 1e-17; a check against a target delta can pass a millionth of it).
    time_limit : float
        Seconds (default 30); past it the intervals still open are retired to the error bound,
        so the answer is always certified, only less tight.

    Returns
    -------
    DeltaBound

    Raises
    ------
    ValueError
        If ``epsilon`` is negative or not finite.

    Notes
    -----
    ``int [f_i - e^eps f_j]_+`` is the sum over the intervals where ``g >= eps`` of
    ``(F_i(c) - F_i(a)) - e^eps (F_j(c) - F_j(a))`` (closed-form CDFs). Every kernel is log-concave
    with its mode at its centre, and the centres are grid points, so on an interval each kernel lies
    between its values at the ends; this bounds ``log f_i``, ``log f_j`` and so ``g`` on the
    interval; for Laplace releases the tilted bounds of :func:`_tilted_g_bounds` tighten it where
    it is not decisive. Intervals with ``g >= eps`` or ``g <= eps`` throughout are decided; the others are
    bisected until that bound on their contribution, ``P_i(I) (1 - e^{-(max g - eps)})``, is below
    ``resolution``, the bound on ``g`` is narrower than ``tol``, 60 levels are reached, a million intervals
    are open or the time limit has passed; the contributions of the intervals left undecided and
    the tails beyond the range (at most ``2 * TAIL_MASS``) go to ``error_bound``, with the rounding
    of every decided interval's mass, relative to that mass (:meth:`ReleaseDensity.interval_mass`),
    and decisions on ``g`` only beyond its rounding margin (:func:`_g_margin`). Seed 003 eq (1)-(2), (16);
    SPEC sec 0 and 4.
    """
    eps = float(epsilon)
    if not math.isfinite(eps) or eps < 0.0:
        raise ValueError(f"epsilon must be finite and >= 0, got {epsilon!r}")
    lo_i, hi_i = f_i.range()
    lo_j, hi_j = f_j.range()
    grid = _simple_grid([f_i, f_j], min(lo_i, lo_j), max(hi_i, hi_j))
    max_open = _kernel_budget(grid.size, f_i.locs.size + f_j.locs.size, "the delta check")
    ki, kj = _kernels(f_i, grid), _kernels(f_j, grid)
    state = (grid[:-1], grid[1:], ki[:-1], ki[1:], kj[:-1], kj[1:])
    modes = (f_i._tilted_modes(), f_j._tilted_modes()) if f_i.laplace and f_j.laplace else None
    deadline = time.monotonic() + time_limit / 2.0
    est_f, err_f, n_f = _one_direction(
        f_i, f_j, state, eps, tol, modes, forward=True, deadline=deadline, retire=resolution,
        max_open=max_open // 2,
    )  # fmt: skip
    deadline = time.monotonic() + time_limit / 2.0
    est_b, err_b, n_b = _one_direction(
        f_i, f_j, state, eps, tol, modes, forward=False, deadline=deadline, retire=resolution,
        max_open=max_open // 2,
    )  # fmt: skip
    tail = 2.0 * TAIL_MASS
    delta = max(est_f, est_b, 0.0)
    err = max(est_f + err_f, est_b + err_b) - delta + tail
    return DeltaBound(eps, delta, err, max(est_f, 0.0), max(est_b, 0.0), grid.size - 1 + n_f + n_b)


def _g_margin(mag: Any, f_i: ReleaseDensity, f_j: ReleaseDensity) -> NDArray[np.float64]:
    """Rounding margin of ``g = log f_i - log f_j`` where the ``|log f|`` involved sum to ``mag``
    (the four ends' bounds on an interval, or twice ``|log f_i| + |log f_j|`` at a point).

    A kernel term ``log w + log k`` is computed with an absolute error of at most
    ``16 u (2 + |log w| + |log k|)`` (a few operations on quantities of that size; the
    normal-Laplace exponents' model of :meth:`ReleaseDensity.interval_mass`), and logsumexp's
    error is at most the softmax-weighted error of its terms plus ``4u |result|``; the weighted
    ``|log k|`` is at most ``|log f| + max|log w| + 1``. So each ``log f`` bound is within
    ``16u (4 + |log f| + 2 max|log w|)`` and ``g`` within twice that.
    """
    lw = float(np.max(np.abs(f_i.log_weights))) + float(np.max(np.abs(f_j.log_weights)))
    out = 32.0 * U * (8.0 + np.asarray(mag, dtype=np.float64) + 2.0 * lw)
    return np.where(np.isfinite(out), out, np.inf)


def _one_direction(
    f_i: ReleaseDensity,
    f_j: ReleaseDensity,
    state: tuple[NDArray[np.float64], ...],
    eps: float,
    tol: float,
    modes: tuple[tuple[NDArray[np.float64], ...], tuple[NDArray[np.float64], ...]] | None,
    *,
    forward: bool,
    deadline: float = math.inf,
    retire: float = 1e-17,
    max_open: int = _MAX_OPEN,
) -> tuple[float, float, int]:
    """``int [f_p - e^eps f_q]_+`` (p, q = i, j or j, i) over the grid: (estimate, error, added).

    The error is the sum of the bounds of intervals left undecided and the rounding of every
    decided interval's mass (:meth:`ReleaseDensity.interval_mass`), so it is relative to the
    masses involved. Past ``deadline`` (``time.monotonic()``) the open intervals are retired.

    With ``modes`` (Laplace releases), intervals the kernel bounds leave open are tightened by the
    tilted bounds of :func:`_tilted_g_bounds`, which decide the flat tails of ``g``."""
    e_eps = math.exp(min(eps, 700.0))  # a smaller e^eps gives a larger delta: the safe side
    a, c, kia, kic, kja, kjc = state
    f_p, f_q = (f_i, f_j) if forward else (f_j, f_i)
    parts: list[float] = []
    err = 0.0
    added = 0
    for level in range(_MAX_LEVELS + 1):
        lo_i, hi_i = _interval_log_bounds(kia, kic)
        lo_j, hi_j = _interval_log_bounds(kja, kjc)
        g_lo, g_hi = (lo_i - hi_j, hi_i - lo_j) if forward else (lo_j - hi_i, hi_j - lo_i)
        if modes is not None:
            unsure = ~((g_lo >= eps) | (g_hi <= eps))
            if unsure.any():
                t_lo, t_hi = _tilted_g_bounds(f_i, f_j, a[unsure], c[unsure], modes)
                if not forward:
                    t_lo, t_hi = -t_hi, -t_lo
                g_lo[unsure] = np.maximum(g_lo[unsure], t_lo)
                g_hi[unsure] = np.minimum(g_hi[unsure], t_hi)
        # rounding of the log-density bounds (see _g_margin): decisions only beyond it
        margin = _g_margin(np.abs(lo_i) + np.abs(hi_i) + np.abs(lo_j) + np.abs(hi_j), f_i, f_j)
        above = g_lo - margin >= eps
        below = g_hi + margin <= eps
        if above.any():
            mp_, ep_ = f_p.interval_mass(a[above], c[above])
            mq_, eq_ = f_q.interval_mass(a[above], c[above])
            contrib = mp_ - e_eps * mq_
            parts.extend(contrib.tolist())
            # kernel-mass errors, the product and the difference (each u relative)
            err += float(np.sum(ep_ + e_eps * eq_ + 3.0 * U * (mp_ + e_eps * mq_)))
        open_ = ~(above | below)
        bound = np.zeros(a.size)
        if open_.any():
            m_open, e_open = f_p.interval_mass(a[open_], c[open_])
            gap = np.maximum(g_hi[open_] + margin[open_] - eps, 0.0)
            bound[open_] = (m_open + e_open) * -np.expm1(-gap) * (1.0 + 4.0 * U)
        last = (
            level == _MAX_LEVELS or int(open_.sum()) > min(_MAX_OPEN, max_open) or time.monotonic() > deadline
        )
        done = open_ & ((g_hi - g_lo <= tol) | (bound <= retire) | last)
        err += float(bound[done].sum())
        split = open_ & ~done
        if not split.any():
            break
        a, c, kia, kic, kja, kjc = a[split], c[split], kia[split], kic[split], kja[split], kjc[split]
        m = (a + c) / 2.0
        kim, kjm = _kernels(f_i, m), _kernels(f_j, m)
        added += m.size
        a, c = np.concatenate([a, m]), np.concatenate([m, c])
        kia, kic = np.concatenate([kia, kim]), np.concatenate([kim, kic])
        kja, kjc = np.concatenate([kja, kjm]), np.concatenate([kjm, kjc])
    total = math.fsum(parts)  # correctly rounded sum
    err += U * abs(total)
    return total, err, added


# ---------------------------------------------------------------------------------------------
# Mutual information


@dataclass(frozen=True)
class InformationBound:
    """Mutual information ``I(S; Y)`` between the secret and the release, with its error bound.

    Attributes
    ----------
    information : float
        The estimate (nats), midpoint of the certified bracket.
    error_bound : float
        ``I(S; Y)`` is in ``[information - error_bound, information + error_bound]``.
    intervals : int
        Grid intervals used.
    """

    information: float
    error_bound: float
    intervals: int

    @property
    def upper(self) -> float:
        """``information + error_bound``: a certified upper bound."""
        return self.information + self.error_bound


def mutual_information(
    densities: list[ReleaseDensity], secret_weights: Any, *, tol: float = 1e-5, max_intervals: int = 2_000_000
) -> InformationBound:
    """Certified ``I(S; Y) = sum_s pi_s int f_s log(f_s / fbar)``, ``fbar = sum_s pi_s f_s``.

    Parameters
    ----------
    densities : list of ReleaseDensity, length k >= 2
        ``f_s``, the release given each secret (same noise and scale).
    secret_weights : array_like of float, shape (k,)
        The secret's marginal distribution ``pi_s`` (> 0, summing to 1 within 1e-9).
    tol : float
        Target of the error bound (nats, > 0).
    max_intervals : int
        Cap on the grid size; if reached, the (larger) bound reached is reported.

    Returns
    -------
    InformationBound

    Raises
    ------
    ValueError
        On fewer than two densities, or bad weights.

    Notes
    -----
    Seed 004 Def 3 with ``g(X) = S`` and no public function ``w``. On an interval ``I`` the
    kernel bounds of :func:`hockey_stick` bound ``l_s = log f_s - log fbar``, so
    ``int_I pi_s f_s l_s`` lies in ``pi_s P_s(I) [min l_s, max l_s]`` with ``P_s(I)`` from the
    CDFs and ``l_s <= log(1/pi_s)``. Intervals with the widest brackets are bisected until the
    summed half-width is below ``tol``. Outside the range the integrand
    ``fbar KL(posterior || pi) >= 0`` is at most ``fbar log(1/min pi)``.
    """
    if len(densities) < 2:
        raise ValueError(f"densities needs at least two secrets, got {len(densities)}")
    pi = np.asarray(secret_weights, dtype=np.float64)
    if pi.shape != (len(densities),) or not np.all(np.isfinite(pi)) or (pi <= 0).any():
        raise ValueError(f"secret_weights must be {len(densities)} positive numbers, got {secret_weights!r}")
    if abs(float(pi.sum()) - 1.0) > 1e-9:
        raise ValueError(f"secret_weights must sum to 1 (within 1e-9), got a sum of {float(pi.sum())!r}")
    pi = pi / pi.sum()
    mix = ReleaseDensity(
        np.concatenate([d.log_weights + math.log(p) for d, p in zip(densities, pi, strict=True)]),
        np.concatenate([d.locs for d in densities]),
        np.concatenate([d.spreads for d in densities]),
        densities[0].noise,
        densities[0].scale,
    )
    sizes = np.cumsum([0] + [d.locs.size for d in densities])
    ranges = [d.range() for d in densities]
    grid = _simple_grid([mix], min(r[0] for r in ranges), max(r[1] for r in ranges))
    tail = 2.0 * TAIL_MASS * float(np.log(1.0 / pi.min()))
    if _atoms_apply(densities):  # Laplace on atoms: O(intervals x secrets) memory
        est_a, err_a, n_a = laplace_atoms_information(
            [d.locs for d in densities], [d.log_weights for d in densities], densities[0].scale, pi, grid,
            tol=tol, max_intervals=max_intervals,
        )  # fmt: skip
        info_a = max(est_a, 0.0)
        return InformationBound(info_a, err_a + tail + _ROUNDING * (1.0 + abs(est_a)) + (info_a - est_a), n_a)
    max_intervals = min(max_intervals, _kernel_budget(grid.size, mix.locs.size, "the eps-MI check"))
    cap = np.log(1.0 / pi)[:, None]

    def bracket(
        a: NDArray[np.float64], c: NDArray[np.float64], ka: NDArray[np.float64], kc: NDArray[np.float64]
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        # ka, kc: kernel terms of the mixture (which carry log pi_s); per secret, subtract log pi_s
        lo_m, hi_m = _interval_log_bounds(ka, kc)
        los, his = [], []
        for k, p in enumerate(pi):
            sl = slice(int(sizes[k]), int(sizes[k + 1]))
            lo_s, hi_s = _interval_log_bounds(ka[:, sl], kc[:, sl])
            los.append(lo_s - math.log(p) - hi_m)
            his.append(hi_s - math.log(p) - lo_m)
        lo_b = np.minimum(np.stack(los), cap)
        hi_b = np.minimum(np.stack(his), cap)
        probs = np.maximum(np.stack([d.cdf(c) - d.cdf(a) for d in densities]), 0.0)
        w = pi[:, None] * probs
        return np.sum(w * (lo_b + hi_b) / 2.0, axis=0), np.sum(w * (hi_b - lo_b) / 2.0, axis=0)

    kg = _kernels(mix, grid)
    a, c, ka, kc = grid[:-1], grid[1:], kg[:-1], kg[1:]
    est, err = bracket(a, c, ka, kc)
    while float(err.sum()) > tol and a.size < max_intervals:
        split = intervals_to_split(err, max_intervals - a.size)
        keep = ~split
        sa, sc, ska, skc = a[split], c[split], ka[split], kc[split]
        m = (sa + sc) / 2.0
        km = _kernels(mix, m)
        na, nc = np.concatenate([sa, m]), np.concatenate([m, sc])
        nka, nkc = np.concatenate([ska, km]), np.concatenate([km, skc])
        ne, nr = bracket(na, nc, nka, nkc)
        a, c = np.concatenate([a[keep], na]), np.concatenate([c[keep], nc])
        ka, kc = np.concatenate([ka[keep], nka]), np.concatenate([kc[keep], nkc])
        est, err = np.concatenate([est[keep], ne]), np.concatenate([err[keep], nr])
    done_est, done_err = float(est.sum()), float(err.sum())
    rounding = _ROUNDING * (1.0 + abs(done_est))
    info = max(done_est, 0.0)
    return InformationBound(info, done_err + tail + rounding + (info - done_est), int(a.size))
