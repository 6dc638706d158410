"""Sums of independent discrete values, with log-probabilities accurate everywhere (seed 000 sec 3).

Sums of users on a common lattice are computed in log space with relative accuracy everywhere,
including tails far below float64's range (:func:`sum_distribution`): small sums exactly by direct
convolution, large ones by FFT convolution of exponentially tilted distributions in overlapping
windows. Supports off a lattice are summed exactly atom by atom.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np
import scipy.fft
from numpy.typing import NDArray
from scipy.special import logsumexp

from ..priors import DiscretePrior

_EPS = float(np.finfo(np.float64).eps)
#: Largest number of atoms of an exact sum of users off a common lattice.
MAX_ATOMS = 2_000_000
#: Direct log-space convolution is used while its work (products of lengths) stays below this.
_DIRECT_WORK = 20_000_000
#: Longest lattice of a sum (points) before the supports are treated as off-lattice.
_MAX_LATTICE = 50_000_000
#: A tilted FFT window is trusted where the tilted probability is at least this.
_WINDOW_FLOOR = 1e-4


# ---------------------------------------------------------------------------------------------
# Sums of independent users


def sum_distribution(priors: Sequence[DiscretePrior]) -> DiscretePrior:
    """Distribution of the sum of independent values, with log-probabilities accurate everywhere.

    Parameters
    ----------
    priors : sequence of DiscretePrior
        The distributions of the summands (any number, possibly zero: the sum is then 0).

    Returns
    -------
    DiscretePrior
        The convolution. :attr:`~DiscretePrior.log_pmf` holds every log-probability (tails far
        below float64's ``1e-308`` included), with :attr:`~DiscretePrior.log_error` bounding its
        absolute error.

    Raises
    ------
    ValueError
        If the supports are not on a common lattice and the exact sum would exceed
        :data:`MAX_ATOMS` atoms.

    Notes
    -----
    Seed 000 eq (7)-(9) need the distribution of ``f(D_{-i}) = sum_{j != i} D_j``. On a common
    lattice ``x = h k`` (integers ``k``; found from the supports) there are two exact routes:

    * few or small summands: direct convolution in log space,
      ``log r(k) = logsumexp_t (log a(k - t) + log b(t))``: every term is positive, so the
      relative error stays at a few ulps per summand;
    * many summands: FFT convolution (a product tree of batched ``scipy.fft.rfft``) of the
      *exponentially tilted* summands ``q_j(k) ~ p_j(k) e^{lambda k}``. The tilted sum is the sum of
      the tilts, ``log r(k) = log s_lambda(k) - lambda k + sum_j log M_j(lambda)``, and its FFT is
      accurate to ``~1e-13`` absolutely, hence relatively where ``s_lambda(k) >= 1e-4``. Tilts
      are chosen (safeguarded Newton on the tilted mean, whose slope is the tilted variance) so
      these windows cover every point of the support.
      If a point stays uncovered (supports with gaps), the direct route is used instead.

    Off a lattice, atoms are added pairwise and equal sums merged.
    """
    priors = [p for p in priors]
    for k, p in enumerate(priors):
        if not isinstance(p, DiscretePrior):
            raise ValueError(f"priors must hold DiscretePrior objects, got {p!r} at index {k}")
    if not priors:
        return DiscretePrior.point(0.0)
    if len(priors) == 1:
        return priors[0]
    trimmed = [_trim(p) for p in priors]
    lattice = _lattice([p.support for p in trimmed])
    if lattice is None:
        return _sum_atoms(trimmed)
    step, ints = lattice
    span = sum(int(k[-1] - k[0]) for k in ints) + 1
    atoms = math.prod(p.size for p in trimmed)
    if atoms <= min(MAX_ATOMS, span // 4):
        return _sum_atoms(trimmed)  # few atoms on a wide, sparse lattice: add them directly (exact)
    offsets = [int(k[0]) for k in ints]
    logs = []
    for p, ks in zip(trimmed, ints, strict=True):
        arr = np.full(int(ks[-1] - ks[0]) + 1, -np.inf)
        assert p.log_pmf is not None
        np.logaddexp.at(arr, ks - ks[0], p.log_pmf)  # accumulate, never overwrite
        logs.append(arr)
    prior_err = max(p.log_error for p in trimmed)
    work = _direct_work([a.size for a in logs])
    result = None
    if work > _DIRECT_WORK:
        result = _log_sum_tilted(logs)
    if result is None:
        result = _log_sum_direct(logs)
    log_r, err = result
    support_k = sum(offsets) + np.arange(log_r.size)
    keep = np.isfinite(log_r)
    support = support_k[keep].astype(np.float64) * step
    return DiscretePrior.from_log_pmf(support, log_r[keep], log_error=err + prior_err * len(priors))


def _trim(p: DiscretePrior) -> DiscretePrior:
    """Drop zero-probability points (they do not change a sum)."""
    assert p.log_pmf is not None  # always set by DiscretePrior
    keep = np.isfinite(p.log_pmf)
    if keep.all():
        return p
    return DiscretePrior.from_log_pmf(p.support[keep], p.log_pmf[keep], log_error=p.log_error)


def _lattice(supports: Sequence[NDArray[np.float64]]) -> tuple[float, list[NDArray[np.int64]]] | None:
    """A step ``h`` with every support point an integer multiple of it, or None.

    Tries integers, then decimals with up to 9 digits; ``h`` is the gcd of the scaled values. A
    point is on the decimal lattice only if it *is* the decimal ``k / 10^digits`` up to the
    rounding of its own float representation and of the product (``|x 10^d - k| <= 4 u |k|``),
    and distinct points must keep distinct integers: two points are never merged (issue 19; a
    tolerance of 1e-7 lattice units once merged 0 and 1e-9 and dropped mass).
    """
    values = np.concatenate(supports)
    for digits in range(10):
        scale = 10.0**digits
        scaled = values * scale
        rounded = np.round(scaled)
        close = np.abs(scaled - rounded) <= 4.0 * _EPS * np.abs(rounded)
        if np.all(close) and np.all(np.abs(rounded) < 2**52):
            nonzero = np.abs(rounded[rounded != 0]).astype(np.int64)
            g = int(np.gcd.reduce(nonzero)) if nonzero.size else 1
            ints = [(np.round(s * scale).astype(np.int64) // g) for s in supports]
            if any((np.diff(k) <= 0).any() for k in ints):
                return None  # two points on one lattice point: take the exact route
            span = sum(int(k.max() - k.min()) for k in ints)
            if span > _MAX_LATTICE:
                return None
            return float(Fraction(g) / Fraction(10**digits)), ints
    return None


def _direct_work(lengths: Sequence[int]) -> int:
    """Work of the direct sequential convolution (smallest summands first into the running sum)."""
    total = 0
    run = 1
    for n in sorted(lengths):
        total += run * n
        run += n - 1
    return total


def _log_sum_direct(logs: Sequence[NDArray[np.float64]]) -> tuple[NDArray[np.float64], float]:
    """Exact sequential log-space convolution; returns the log-pmf and an absolute error bound."""
    order = sorted(range(len(logs)), key=lambda k: logs[k].size)
    acc = np.array([0.0])
    err = 0.0
    for k in order:
        big, small = (acc, logs[k]) if acc.size >= logs[k].size else (logs[k], acc)
        out = np.full(acc.size + logs[k].size - 1, -np.inf)
        for t in np.flatnonzero(np.isfinite(small)):  # loop over the shorter operand
            seg = out[t : t + big.size]
            np.logaddexp(seg, big + small[t], out=seg)
        acc = out
        finite = acc[np.isfinite(acc)]
        # each output gathers <= small.size terms: a few ulps of the largest magnitude per term
        err += 4.0 * _EPS * small.size * (float(np.abs(finite).max()) + 1.0)
    return acc, err


def _tree_convolve(rows: NDArray[np.float64]) -> tuple[NDArray[np.float64], int]:
    """Convolve all rows (probability vectors) by a product tree of batched real FFTs.

    Returns the full convolution and the number of tree levels.
    """
    levels = 0
    while rows.shape[0] > 1:
        if rows.shape[0] % 2:
            delta = np.zeros((1, rows.shape[1]))
            delta[0, 0] = 1.0
            rows = np.vstack([rows, delta])
        n_out = 2 * rows.shape[1] - 1
        nfft = scipy.fft.next_fast_len(n_out, real=True)
        fa = scipy.fft.rfft(rows[0::2], nfft, axis=1)
        fa *= scipy.fft.rfft(rows[1::2], nfft, axis=1)
        rows = scipy.fft.irfft(fa, nfft, axis=1)[:, :n_out]
        levels += 1
    return rows[0], levels


def _log_sum_tilted(logs: Sequence[NDArray[np.float64]]) -> tuple[NDArray[np.float64], float] | None:
    """Log-pmf of a sum of many lattice summands by tilted FFT windows (None: use direct)."""
    m = max(a.size for a in logs)
    n_out = sum(a.size - 1 for a in logs) + 1
    table = np.full((len(logs), m), -np.inf)
    for k, a in enumerate(logs):
        table[k, : a.size] = a
    idx = np.arange(m, dtype=np.float64)
    out_idx = np.arange(n_out, dtype=np.float64)

    def tilted(lam: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        z = table + lam * idx
        log_m = logsumexp(z, axis=1)
        return np.exp(z - log_m[:, None]), log_m

    def moments(lam: float) -> tuple[float, float]:
        q, _ = tilted(lam)
        mu = q @ idx
        return float(mu.sum()), float((q @ (idx * idx) - mu * mu).sum())

    def solve(target: float, lam: float) -> float | None:
        """Tilt whose mean is ``target`` (the tilted mean increases with the tilt; Newton steps)."""
        lo, hi = -math.inf, math.inf
        for _ in range(200):
            mu, var = moments(lam)
            if abs(mu - target) <= 1e-3 * max(1.0, math.sqrt(max(var, 0.0))):
                return lam
            if mu < target:
                lo = lam
            else:
                hi = lam
            step = (target - mu) / max(var, 1e-300)
            trial = lam + step
            if not lo < trial < hi:  # Newton left the bracket: bisect (or expand)
                if math.isinf(lo):
                    trial = hi - max(1.0, abs(hi))
                elif math.isinf(hi):
                    trial = lo + max(1.0, abs(lo))
                else:
                    trial = 0.5 * (lo + hi)
            if abs(trial) > 1e6:
                return None
            lam = trial
        return None

    log_r = np.full(n_out, -np.inf)
    best = np.zeros(n_out)  # tilted probability behind each accepted value
    covered = np.zeros(n_out, dtype=bool)
    err = 0.0
    lam = 0.0
    pending: int | None = None
    ahead = 0.0  # how far past the first uncovered point the next window is centred
    for _ in range(2 * n_out + 2):
        q, log_m = tilted(lam)
        s, levels = _tree_convolve(q)
        s = s[:n_out]
        # FFT convolution error of unit-mass vectors: a few ulps per level and log2(length)
        eta = 16.0 * _EPS * (levels + 1) * math.log2(2 * max(s.size, 2))
        ok = s >= _WINDOW_FLOOR
        if pending is not None and not ok[pending]:
            if ahead == 0.0:
                return None  # the window centred on this point misses it: a gap in the supports
            ahead = 0.0  # retry centred on the point itself
        else:
            better = ok & (s > best)
            total_log_m = math.fsum(log_m.tolist())
            log_r[better] = np.log(s[better]) - lam * out_idx[better] + total_log_m
            best[better] = s[better]
            covered |= ok
            err = max(err, -math.log1p(-eta / (_WINDOW_FLOOR - eta)))
            err = max(err, 8.0 * _EPS * (abs(lam) * n_out + abs(total_log_m) + 1.0))
            width = np.flatnonzero(ok)
            ahead = 0.8 * (width[-1] - width[0]) / 2.0 if width.size else 0.0
        todo = np.flatnonzero(~covered)
        if todo.size == 0:
            return log_r, err
        pending = int(todo[0])
        target = float(min(max(pending + ahead, 0.25), n_out - 1.25))
        new_lam = solve(target, lam)
        if new_lam is None:
            return None
        lam = new_lam
    return None  # pragma: no cover - each window covers at least its centre or we returned


def _sum_atoms(priors: Sequence[DiscretePrior]) -> DiscretePrior:
    """Exact sum of summands off a common lattice: add atoms pairwise, merge equal sums."""
    values = np.array([0.0])
    logs = np.array([0.0])
    err = 0.0
    reach = 0.0  # sum of the largest |value| of the summands so far
    for p in priors:
        assert p.log_pmf is not None
        v = np.add.outer(values, p.support).ravel()
        lp = np.add.outer(logs, p.log_pmf).ravel()
        if v.size > MAX_ATOMS * 4:
            raise ValueError(
                f"the sum of these users has more than {MAX_ATOMS} distinct values off a common "
                "lattice; round the supports to a grid (e.g. cents) to use the lattice route"
            )
        order = np.argsort(v, kind="stable")
        v, lp = v[order], lp[order]
        # merge only sums equal up to the rounding of the float additions that made them: each
        # addition errs by at most u times the magnitudes added, so by the running magnitude
        reach += float(np.abs(p.support).max())
        tol = 4.0 * _EPS * reach * (len(priors) + 1)
        new = np.concatenate([[True], np.diff(v) > tol])
        starts = np.flatnonzero(new)
        values = v[starts]
        logs = np.array(
            [float(logsumexp(lp[a:b])) for a, b in zip(starts, np.append(starts[1:], v.size), strict=True)]
        )
        if values.size > MAX_ATOMS:
            raise ValueError(
                f"the sum of these users has {values.size} distinct values (> {MAX_ATOMS}) off a "
                "common lattice; round the supports to a grid to use the lattice route"
            )
        err += 4.0 * _EPS * (float(np.abs(logs[np.isfinite(logs)]).max()) + 1.0) * p.size
    return DiscretePrior.from_log_pmf(values, logs, log_error=err + sum(p.log_error for p in priors))
