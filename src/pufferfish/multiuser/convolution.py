"""Sums of independent discrete values, with log-probabilities accurate everywhere (seed 000 sec 3).

Sums of users on a common lattice are computed in log space with relative accuracy everywhere,
including tails far below float64's range (:func:`sum_distribution`): small sums exactly by direct
convolution, large ones by FFT convolution of exponentially tilted distributions in overlapping
windows. Supports off a lattice are summed exactly atom by atom, as integers.

What is computed is the distribution of the sum *as it is released*: the exact sum of the users'
floats, rounded to the nearest float (``math.fsum``), then to the release grid
(:func:`pufferfish.priors.distributions.to_release_grid`). No tolerance merges two sums anywhere (issue 29).
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import scipy.fft
from numpy.typing import NDArray
from scipy.special import logsumexp

from pufferfish.priors.distributions import DiscretePrior, to_release_grid

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


@dataclass(frozen=True)
class _Exact:
    """How a sum was computed, kept so that adding one more summand stays exact.

    Every atom ``K h`` (``K`` in :attr:`ks`, ``h`` = :attr:`step`) stands for exact sums of the
    summands' floats that lie within :attr:`deviation` of it (0: the atom *is* the exact sum).
    """

    step: Fraction
    ks: NDArray[Any]  # strictly increasing integers (int64, or object for Python ints)
    logs: NDArray[np.float64]
    deviation: Fraction
    log_error: float
    summands: tuple[DiscretePrior, ...]  # the primitive summands, to recompute from


#: The exact description of every sum this module returned (weak keys: dropped with the sum).
_EXACT: weakref.WeakKeyDictionary[DiscretePrior, _Exact] = weakref.WeakKeyDictionary()


class _Ambiguous(Exception):
    """A lattice atom whose exact sums do not all round to one released value."""


def sum_distribution(priors: Sequence[DiscretePrior]) -> DiscretePrior:
    """Distribution of the released sum of independent values, exact, with accurate log-probabilities.

    Parameters
    ----------
    priors : sequence of DiscretePrior
        The distributions of the summands (any number, possibly zero: the sum is then 0). A
        summand returned by this function (e.g. the other users' sum ``R_i``) is added exactly,
        from the exact description of how it was computed, not from its rounded support.

    Returns
    -------
    DiscretePrior
        The distribution of the sum **as it is released**: the exact sum of the summands' floats
        (as ``math.fsum`` computes it: the nearest float), rounded to the release grid
        (:func:`pufferfish.priors.distributions.to_release_grid`). Two sums are one atom only when they
        are the
        same released float. :attr:`~DiscretePrior.log_pmf` holds every log-probability (tails far
        below float64's ``1e-308`` included), with :attr:`~DiscretePrior.log_error` bounding its
        absolute error.

    Raises
    ------
    ValueError
        If the exact sum needs more than :data:`MAX_ATOMS` distinct values (supports that share
        no common lattice, e.g. values of very different magnitudes): the message names the cap.

    Notes
    -----
    Seed 000 eq (7)-(9) need the distribution of ``f(D_{-i}) = sum_{j != i} D_j``. Two routes:

    * **a common lattice** ``x ~ k h`` (integers ``k``; ``h = g / 10^d`` found from the supports,
      ``d <= 9``): the log-pmf on the lattice is computed by direct log-space convolution (few or
      small summands: every term positive, a few ulps per summand) or by FFT convolution of
      *exponentially tilted* summands (many summands: ``log r(k) = log s_lambda(k) - lambda k +
      sum_j log M_j(lambda)``, accurate to ``~1e-13`` relatively where ``s_lambda(k) >= 1e-4``;
      tilts chosen by safeguarded Newton so the windows cover every point, else direct). A float
      ``x`` is generally not ``k h`` (``0.1`` is not ``1/10``): the exact deviation ``|x - k h|``
      (rational arithmetic) of each summand is summed into a bound ``E``, and an atom ``K h`` is
      accepted only if every real in ``[K h - E, K h + E]`` has the same released value
      (``to_release_grid`` of its nearest float: both are monotone, so the two ends decide).
    * **exact atoms**: every float is an integer multiple of a power of two ``2^-e``, so the sums
      are Python integers, added atom by atom and merged only when equal. Used off a lattice, on
      wide sparse lattices, and whenever a lattice atom is ambiguous.

    No tolerance merges two sums: atoms meet only as the same released float (issue 29: a
    tolerance of ``4u * reach * (n + 1)`` once merged ``0`` and ``0.001`` beside a user at
    ``1e12`` and gave scale 0 where the true loss was ``log 4.5``).
    """
    priors = list(priors)
    for k, p in enumerate(priors):
        if not isinstance(p, DiscretePrior):
            raise ValueError(f"priors must hold DiscretePrior objects, got {p!r} at index {k}")
    if not priors:
        return DiscretePrior.point(0.0)
    parts = [_EXACT[p] for p in priors if p in _EXACT]
    primitives = [_trim(p) for p in priors if p not in _EXACT]
    try:
        exact = _combine(parts, primitives)
        result = _released(exact)
    except _Ambiguous:
        flat = [q for part in parts for q in part.summands] + primitives
        exact = _atoms([], flat)
        result = _released(exact)
    _EXACT[result] = exact
    return result


def _trim(p: DiscretePrior) -> DiscretePrior:
    """Drop zero-probability points (they do not change a sum)."""
    assert p.log_pmf is not None  # always set by DiscretePrior
    keep = np.isfinite(p.log_pmf)
    if keep.all():
        return p
    return DiscretePrior.from_log_pmf(p.support[keep], p.log_pmf[keep], log_error=p.log_error)


def _combine(parts: Sequence[_Exact], primitives: Sequence[DiscretePrior]) -> _Exact:
    """The exact description of the sum of earlier sums (``parts``) and new summands."""
    summands = tuple(q for part in parts for q in part.summands) + tuple(primitives)
    lattice = _lattice([p.support for p in primitives], [part.step for part in parts])
    if lattice is None:
        return _atoms(parts, primitives)
    step, ints, deviation = lattice
    rows: list[tuple[NDArray[np.int64], NDArray[np.float64]]] = []
    for part in parts:
        factor = int(part.step / step)
        if max(abs(int(part.ks[0])), abs(int(part.ks[-1]))) * factor >= 2**52:
            return _atoms(parts, primitives)  # the lattice is far finer than this sum's
        rows.append((np.asarray(part.ks, dtype=np.int64) * factor, part.logs))
    for p, ks in zip(primitives, ints, strict=True):
        assert p.log_pmf is not None
        rows.append((ks, p.log_pmf))
    span = sum(int(ks[-1] - ks[0]) for ks, _ in rows) + 1
    if math.prod(ks.size for ks, _ in rows) <= min(MAX_ATOMS, span // 4) or span > _MAX_LATTICE:
        return _atoms(parts, primitives)  # few atoms on a wide, sparse lattice: add them exactly
    offsets = [int(ks[0]) for ks, _ in rows]
    logs = []
    for ks, lp in rows:
        arr = np.full(int(ks[-1] - ks[0]) + 1, -np.inf)
        np.logaddexp.at(arr, ks - ks[0], lp)  # accumulate, never overwrite
        logs.append(arr)
    prior_err = sum(part.log_error for part in parts) + sum(p.log_error for p in primitives)
    result = _log_sum_tilted(logs) if _direct_work([a.size for a in logs]) > _DIRECT_WORK else None
    if result is None:
        result = _log_sum_direct(logs)
    log_r, err = result
    keep = np.flatnonzero(np.isfinite(log_r))
    ks = sum(offsets) + keep.astype(np.int64)
    deviation += sum((part.deviation for part in parts), Fraction(0))
    return _Exact(step, ks, log_r[keep], deviation, err + prior_err, summands)


def _lattice(
    supports: Sequence[NDArray[np.float64]], steps: Sequence[Fraction] = ()
) -> tuple[Fraction, list[NDArray[np.int64]], Fraction] | None:
    """A step ``h`` with every support point near an integer multiple ``k h`` and every earlier
    sum's step a multiple of ``h``: ``(h, k of each support, E)`` or None.

    Tries integers, then decimals with up to 9 digits: a point is taken as the decimal
    ``k / 10^digits`` if it is within the rounding of its own float representation and of the
    product (``|x 10^d - k| <= 4 u |k|``); ``h`` is the gcd of the scaled values and of the
    ``steps``. Distinct points of one support keep distinct integers (issue 19). ``E`` is the sum
    over supports of the largest exact ``|x - k h|`` (rational arithmetic): every exact sum lies
    within ``E`` (plus the earlier sums' own deviations) of its lattice atom, which
    :func:`_released` checks.
    """
    if not supports:
        if not steps:
            return None
        step = steps[0]
        for s in steps[1:]:
            step = _fraction_gcd(step, s)
        return step, [], Fraction(0)
    values = np.concatenate(supports)
    for digits in range(10):
        scale = 10.0**digits
        scaled = values * scale
        rounded = np.round(scaled)
        close = np.abs(scaled - rounded) <= 4.0 * _EPS * np.abs(rounded)
        if np.all(close) and np.all(np.abs(rounded) < 2**52):
            nonzero = np.abs(rounded[rounded != 0]).astype(np.int64)
            g = int(np.gcd.reduce(nonzero)) if nonzero.size else 1
            step = Fraction(g, 10**digits)
            for other in steps:
                step = _fraction_gcd(step, other)
            ratio = Fraction(g, 10**digits) / step
            if ratio.denominator != 1:  # pragma: no cover - step divides g / 10^d by construction
                return None
            ints = [np.round(s * scale).astype(np.int64) // g for s in supports]
            if max(1, *(int(np.abs(k).max()) for k in ints)) * ratio.numerator >= 2**52:
                return None  # an earlier sum's step is far finer: the exact route
            ints = [k * ratio.numerator for k in ints]
            if any((np.diff(k) <= 0).any() for k in ints):
                return None  # two points on one lattice point: take the exact route
            if sum(int(k.max() - k.min()) for k in ints) > _MAX_LATTICE:
                return None
            deviation = Fraction(0)
            for support, k in zip(supports, ints, strict=True):
                deviation += _largest_deviation(support, k, step)
            return step, ints, deviation
    return None


def _fraction_gcd(a: Fraction, b: Fraction) -> Fraction:
    """The largest rational ``h`` with ``a / h`` and ``b / h`` integers (``a, b > 0``)."""
    return Fraction(math.gcd(a.numerator * b.denominator, b.numerator * a.denominator),
                    a.denominator * b.denominator)  # fmt: skip


def _largest_deviation(support: NDArray[np.float64], ks: NDArray[np.int64], step: Fraction) -> Fraction:
    """``max |x - k step|`` over a support, in exact rational arithmetic."""
    if step.denominator == 1 and np.array_equal(ks * step.numerator, support) and step.numerator < 2**52:
        if np.all(np.abs(support) < 2**53):
            return Fraction(0)  # integers, exactly
    return max(abs(Fraction(float(x)) - int(k) * step) for x, k in zip(support, ks, strict=True))


def _dyadic(x: float) -> tuple[int, int]:
    """``(n, e)`` with ``x = n 2^-e`` exactly (``e >= 0``)."""
    num, den = float(x).as_integer_ratio()
    return num, den.bit_length() - 1


def _atoms(parts: Sequence[_Exact], primitives: Sequence[DiscretePrior]) -> _Exact:
    """Exact sum atom by atom: every float is ``n 2^-e``, so sums are exact integers.

    Earlier sums are reused when they are exact binary atoms themselves; otherwise their
    primitive summands are added again. Two sums are merged only when equal.
    """
    reuse = [part for part in parts if part.deviation == 0 and _is_power_of_two(part.step.denominator)]
    redo = [q for part in parts if part not in reuse for q in part.summands]
    prims = list(redo) + list(primitives)
    summands = tuple(q for part in reuse for q in part.summands) + tuple(prims)
    exps = [part.step.denominator.bit_length() - 1 for part in reuse]
    prim_ints: list[list[tuple[int, int]]] = []
    for p in prims:
        pairs = [_dyadic(x) for x in p.support.tolist()]
        prim_ints.append(pairs)
        exps.extend(e for _, e in pairs)
    e = max(exps, default=0)
    rows: list[tuple[list[int], NDArray[np.float64]]] = []
    for part in reuse:
        factor = part.step.numerator * (2**e // part.step.denominator)
        rows.append(([int(k) * factor for k in part.ks.tolist()], part.logs))
    for p, pairs in zip(prims, prim_ints, strict=True):
        assert p.log_pmf is not None
        rows.append(([n << (e - ex) for n, ex in pairs], p.log_pmf))
    reach = sum(max(abs(k) for k in ks) for ks, _ in rows)
    dtype: Any = np.int64 if reach < 2**62 else object
    values = np.array([0], dtype=dtype)
    logs = np.array([0.0])
    err = sum(part.log_error for part in reuse) + sum(p.log_error for p in prims)
    for ks, lp in sorted(rows, key=lambda r: len(r[0])):
        if values.size * len(ks) > MAX_ATOMS * 4:
            raise ValueError(_too_many(f"more than {MAX_ATOMS}"))
        v = np.add.outer(values, np.array(ks, dtype=dtype)).ravel()
        w = np.add.outer(logs, lp).ravel()
        order = np.argsort(v, kind="stable")
        v, w = v[order], w[order]
        starts = np.flatnonzero(np.concatenate([[True], np.asarray(np.diff(v) != 0, dtype=bool)]))
        values = v[starts]
        logs, merge_err = _group_logsumexp(w, starts)
        if values.size > MAX_ATOMS:
            raise ValueError(_too_many(str(values.size)))
        err += merge_err
    return _Exact(Fraction(1, 2**e), values, logs, Fraction(0), err, summands)


def _too_many(count: str) -> str:
    return (
        f"the sum of these users has {count} distinct values, above the cap MAX_ATOMS = {MAX_ATOMS} "
        "(pufferfish.multiuser.MAX_ATOMS) of an exact sum off a common lattice; round the supports "
        "to a common grid (e.g. cents) to use the lattice route"
    )


def _is_power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _group_logsumexp(
    logs: NDArray[np.float64], starts: NDArray[np.intp]
) -> tuple[NDArray[np.float64], float]:
    """``logsumexp`` of each run ``logs[starts[j]:starts[j+1]]`` and an absolute error bound."""
    if starts.size == logs.size:
        return logs.copy(), 0.0
    top = np.maximum.reduceat(logs, starts)
    sizes = np.diff(np.append(starts, logs.size))
    shifted = np.exp(logs - np.repeat(top, sizes))
    out = np.log(np.add.reduceat(shifted, starts)) + top
    # each run: m exponentials and m - 1 additions, a few ulps each, relative to the sum >= 1
    err = 4.0 * _EPS * (float(sizes.max()) + float(np.abs(top).max()) + 1.0)
    return out, err


def _released(exact: _Exact) -> DiscretePrior:
    """The released distribution (``to_release_grid`` of the nearest float of each exact sum).

    Raises
    ------
    _Ambiguous
        If a lattice atom's exact sums may round to two released values.
    """
    h, ks = exact.step, exact.ks
    if exact.deviation == 0 and _is_power_of_two(h.denominator):
        e = h.denominator.bit_length() - 1
        if ks.dtype != object and float(np.abs(ks).max()) * h.numerator >= 2.0**62:
            ks = ks.astype(object)  # the products below would overflow int64
        n = ks * h.numerator if h.numerator != 1 else ks
        big = np.abs(n) >= 2**53 if n.dtype != object else np.ones(n.size, dtype=bool)
        centres = np.ldexp(np.asarray(n, dtype=np.float64), -e)
        if big.any():  # correctly rounded conversion of Python integers
            centres[big] = [float(Fraction(int(k), 2**e)) for k in n[big].tolist()]
        tiny = (centres != 0) & (np.abs(centres) < 2.0**-1000)
        if tiny.any():  # below the normal range ldexp may round twice
            centres[tiny] = [float(Fraction(int(k), 2**e)) for k in n[tiny].tolist()]
    else:
        hf = float(h)
        kf = np.asarray(ks, dtype=np.float64)
        centres = kf * hf
        # |K h - centre| <= u |centre| + |K| |hf - h| (+ the float conversion of K, exact below 2^53)
        slack = float(exact.deviation) + float(abs(Fraction(hf) - h)) * float(np.abs(kf).max())
        width = 2.0 * (slack + 4.0 * _EPS * np.abs(centres)) + 2.0**-1070
        if np.abs(kf).max() >= 2**53:
            raise _Ambiguous
        lo = np.nextafter(centres - width, -np.inf)
        hi = np.nextafter(centres + width, np.inf)
        if not np.array_equal(to_release_grid(lo), to_release_grid(hi)):
            raise _Ambiguous
    released = to_release_grid(centres)
    starts = np.flatnonzero(np.concatenate([[True], np.diff(released) != 0]))
    logs, err = _group_logsumexp(exact.logs, starts)
    return DiscretePrior.from_log_pmf(released[starts], logs, log_error=exact.log_error + err)


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
