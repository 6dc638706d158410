"""Exact discrete Laplace and Gaussian noise, vectorised over NumPy arrays, from cryptographic
randomness (:mod:`pufferfish.noise.randomness`).

After Canonne, Kamath and Steinke (2020), "The Discrete Gaussian for Differential Privacy",
Algorithms 1 to 3, written over blocks of :data:`BLOCK` candidates: each step is a few NumPy
passes over a block, so the Python overhead is per block, not per value, and a block's arrays
stay in the core's cache.

Exactness (every step samples its distribution exactly; no floating point decides a random
outcome it cannot certify):

* ``uniform_below(m)``: the low ``b = bit_length(m - 1)`` bits of ``ceil(b / 8)`` random bytes,
  rejected when ``>= m`` (probability < 1/2), so each accepted value is uniform on
  ``{0, ..., m - 1}``. For ``2^16 < m <= 2^46`` not a power of two: ``x`` uniform on 62 bits,
  rejected when ``x >= floor(2^62 / m) m`` (probability < 2^-16), else ``x mod m``; each
  residue has exactly ``floor(2^62 / m)`` preimages below the limit, so it is uniform too.
* ``Bernoulli(exp(-n / d))`` for integers ``0 <= n <= d`` (Algorithm 1): draw
  ``A_K ~ Bernoulli(n / (d K))`` for ``K = 1, 2, ...`` until ``A_K = 0``; output 1 iff that
  ``K`` is odd. ``Pr(K > k) = gamma^k / k!`` with ``gamma = n / d``, so
  ``Pr(K odd) = sum_k (-1)^k gamma^k / k! = e^-gamma``.
* ``Bernoulli(e^{-x})`` for the few values of ``x`` a sampler uses over and over (``h / 4096``,
  ``g``, ``a 2^m / t``): a 32-bit uniform against a table of exact 32-bit floors of ``e^{-x}``,
  a tie read further (:mod:`pufferfish.noise.thresholds`).
* Discrete Laplace ``Pr(Z = z) = (1 - e^{-1/t}) / (1 + e^{-1/t}) e^{-|z| / t}`` for an integer
  ``t >= 1``: ``|Z|`` geometric, split at a power of two into two independent parts
  (:func:`discrete_laplace`); a fair sign, ``(negative, 0)`` rejected.
* Discrete Gaussian ``Pr(Z = z) ~ e^{-z^2 / (2 s^2)}`` for an integer ``s >= 1`` (Algorithm 3):
  ``Y`` discrete Laplace of scale ``t = s + 1``, accepted with probability
  ``exp(-gamma)``, ``gamma = (|Y| - s^2/t)^2 / (2 s^2) = (|Y| t - s^2)^2 / (2 s^2 t^2)``. Since
  ``-y^2/(2s^2) + |y|/t = -gamma + s^2/(2t^2)``, the accepted ``Y`` has the target pmf, for any
  ``t``. See :func:`discrete_gaussian` for how ``Bernoulli(exp(-gamma))`` is drawn when the
  integers in ``gamma`` exceed 64 bits.

Integer bounds: ``t <= 2^45`` (checked); Algorithm 1's uniform below ``d K`` needs
``d K <= 2^62`` (the loops raise rather than overflow, at probabilities below ``1 / 32!``);
:func:`discrete_laplace` states its own.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pufferfish.noise.randomness import RandomBytes, secure_bytes
from pufferfish.noise.thresholds import (
    FRACTION_BITS,
    WORD_BITS,
    LazyUniform,
    below_exp,
    exp_floor,
    exp_table,
    fraction_table,
)

#: Largest integer scale ``t`` (in grid units) of :func:`discrete_laplace`.
T_MAX = 2**45


def uniform_below(m: int, size: int, random_bytes: RandomBytes = secure_bytes) -> NDArray[np.int64]:
    """``size`` integers uniform on ``{0, ..., m - 1}`` by rejection from random bytes.

    Parameters
    ----------
    m : int
        ``1 <= m <= 2^62``.
    size : int
        >= 0.
    random_bytes : callable
        ``random_bytes(n) -> bytes`` (default
        :func:`pufferfish.noise.randomness.secure_bytes`).

    Returns
    -------
    numpy.ndarray of int64, shape (size,)
    """
    if not 1 <= m <= 2**62:
        raise ValueError(f"m must be in [1, 2^62], got {m}")
    out = np.empty(size, dtype=np.int64)
    if m == 1 or size == 0:
        out[:] = 0
        return out
    bits = (m - 1).bit_length()
    if m != 1 << bits and 16 < bits <= 46:  # 62-bit draws reduced mod m, rejected above a multiple
        limit = np.uint64((2**62 // m) * m)  # of m: Pr(reject) < m / 2^62 <= 2^-16
        value = np.frombuffer(random_bytes(8 * size), dtype="<u8") >> np.uint64(2)
        out[:] = value % np.uint64(m)
        todo = np.flatnonzero(value >= limit)  # about size 2^-16 of them: drawn again
        while todo.size:
            value = np.frombuffer(random_bytes(8 * todo.size), dtype="<u8") >> np.uint64(2)
            ok = value < limit
            out[todo[ok]] = (value[ok] % np.uint64(m)).astype(np.int64)
            todo = todo[~ok]
        return out
    width = (bits + 7) // 8  # bytes per draw
    dtype = np.dtype(f"<u{next(w for w in (1, 2, 4, 8) if w >= width)}")
    mask = dtype.type((1 << bits) - 1)
    todo = np.arange(size)
    while todo.size:
        value = _little_endian(random_bytes(width * todo.size), width, dtype) & mask
        ok = value < m
        out[todo[ok]] = value[ok].astype(np.int64)
        todo = todo[~ok]
    return out


def _little_endian(data: bytes, width: int, dtype: np.dtype[Any]) -> NDArray[Any]:
    """``len(data) / width`` unsigned integers of ``width`` little-endian bytes each, as
    ``dtype`` (1, 2, 4 or 8 bytes, ``>= width``): the missing high bytes are zero."""
    if width == dtype.itemsize:
        return np.frombuffer(data, dtype=dtype)
    raw = np.frombuffer(data, dtype=np.uint8).reshape(-1, width)
    padded = np.zeros((raw.shape[0], dtype.itemsize), dtype=np.uint8)
    padded[:, :width] = raw
    return padded.view(dtype).ravel()


#: Bits of the first digit of :func:`bernoulli_fraction` (one uint16 per entry).
DIGIT_BITS = 16


def bernoulli_fraction(
    numerator: NDArray[np.int64], denominator: int, random_bytes: RandomBytes = secure_bytes
) -> NDArray[np.bool_]:
    """``Bernoulli(numerator / denominator)`` per entry, for ``0 <= numerator <= denominator``,
    ``1 <= denominator <= 2^62``, reading 16 random bits per entry in most cases.

    ``A = [V < n / d]`` for ``V`` uniform on [0, 1), written ``V = (W + V') 2^-16`` with ``W``
    a uniform 16-bit integer and ``V'`` uniform on [0, 1) independent of it. With
    ``c, r = divmod(n 2^16, d)``: ``W < c`` gives ``A = 1``, ``W > c`` gives ``A = 0``, and
    ``W = c`` (probability at most 2^-16) leaves ``A = [V' < r / d]``, drawn as
    ``[uniform below d < r]``. Exact; ``n 2^16 <= 2^78`` is formed
    in Python integers only when it would overflow int64 (``d > 2^46``). For ``d <= 2^46`` the
    comparisons are products (no division): with ``N = n 2^16``, ``W < c`` iff
    ``(W + 1) d <= N`` and ``W = c`` iff ``W d <= N < (W + 1) d``, then ``r = N - W d``
    (every term ``<= 2^62``).
    """
    n = np.asarray(numerator, dtype=np.int64)
    w = np.frombuffer(random_bytes(2 * n.size), dtype="<u2").astype(np.int64)
    if denominator <= 2**46:
        return _below_digit(w, n << DIGIT_BITS, denominator, random_bytes)
    # beyond int64 products: Python integers entry by entry, the rule of _below_exactly
    return np.array(
        [_below_exactly(int(d), int(v), denominator, random_bytes) for d, v in zip(w, n, strict=True)],
        dtype=bool,
    )


def _below_digit(
    w: NDArray[np.int64], big: NDArray[np.int64], d: int, random_bytes: RandomBytes
) -> NDArray[np.bool_]:
    """``[w + V' < big / d]`` per entry for a fresh uniform ``V'`` in [0, 1): ``w < 2^16``,
    ``0 <= big <= 2^62``, ``1 <= d <= 2^46`` (:func:`bernoulli_fraction`, by products)."""
    low = w * np.int64(d)
    out = low + np.int64(d) <= big
    tied = np.flatnonzero(~out & (low <= big))
    if tied.size:
        out[tied] = uniform_below(d, tied.size, random_bytes) < big[tied] - low[tied]
    return out


def bernoulli_exp(
    numerator: NDArray[np.int64], denominator: int, random_bytes: RandomBytes = secure_bytes
) -> NDArray[np.bool_]:
    """``Bernoulli(exp(-numerator / denominator))`` per entry, for ``0 <= numerator <= denominator``.

    Algorithm 1 of Canonne, Kamath and Steinke (2020), vectorised (module docstring).
    """
    n = np.asarray(numerator, dtype=np.int64)
    return _continue_exp(bernoulli_fraction(n, denominator, random_bytes), n, denominator, random_bytes)


def _continue_exp(
    first: NDArray[np.bool_], n: NDArray[np.int64], denominator: int, random_bytes: RandomBytes
) -> NDArray[np.bool_]:
    """Algorithm 1 for ``Bernoulli(exp(-n / denominator))`` given its first comparison
    ``A_1 = first``: ``A_k ~ Bernoulli(n / (denominator k))`` for ``k = 2, 3, ...`` until one is 0,
    output ``[K odd]``."""
    result = ~first
    active = np.flatnonzero(first)
    n = n[active]
    k = 2
    while active.size:
        if denominator * k > 2**62:  # pragma: no cover - probability below 1 / (2^5)!
            raise RuntimeError("Bernoulli(exp(-gamma)) loop ran past its int64 bound")
        a = bernoulli_fraction(n, denominator * k, random_bytes)
        if k % 2 == 1:
            result[active[~a]] = True  # an even k leaves its entries at 0
        active, n = active[a], n[a]
        k += 1
    return result


#: Candidates per block of the vectorised samplers: a block's arrays (about 60 bytes a
#: candidate) stay in the core's cache, where a pass over them costs well under a nanosecond a value.
BLOCK = 2**16


def discrete_laplace(t: int, size: int, random_bytes: RandomBytes = secure_bytes) -> NDArray[np.int64]:
    """``size`` i.i.d. draws of the discrete Laplace distribution of integer scale ``t``.

    Parameters
    ----------
    t : int
        ``1 <= t <= 2^45``: ``Pr(Z = z) ~ exp(-|z| / t)`` on the integers.
    size : int
        >= 0.
    random_bytes : callable
        ``random_bytes(n) -> bytes`` (default
        :func:`pufferfish.noise.randomness.secure_bytes`; tests inject a deterministic source).

    Returns
    -------
    numpy.ndarray of int64, shape (size,)

    Raises
    ------
    ValueError
        If ``t`` is not an int in ``[1, 2^45]`` or ``size < 0``.

    Notes
    -----
    ``|Z|`` is geometric: ``Pr(X = x) ~ q^x``, ``q = e^{-1/t}``. With ``m = bit_length(t) - 1``
    (``2^m <= t < 2^{m+1}``), write ``X = R + 2^m A``, ``0 <= R < 2^m``: ``q^X = q^R (q^{2^m})^A``,
    so ``R`` and ``A`` are independent, ``Pr(R = r) ~ e^{-r/t}`` on ``[0, 2^m)`` and ``A``
    geometric with ratio ``e^{-rho}``, ``rho = 2^m / t`` in ``(1/2, 1]``. (Canonne, Kamath and
    Steinke 2020, Algorithm 2, split ``X = U + t V`` instead; the split at a power of two needs
    no division by ``t`` on the random path.)

    * ``R``: uniform on ``m`` random bits, accepted with probability ``e^{-R/t}``, written
      ``e^{-h/4096} e^{-y}`` with ``h = floor(4096 R / t)`` and ``y = n / (4096 t)``,
      ``n = 4096 R - h t`` in ``[0, t)`` (exact int64: ``4096 R < 2^57``): two independent
      Bernoulli draws. ``Bernoulli(e^{-h/4096})`` compares a 32-bit uniform with the table of
      :func:`pufferfish.noise.thresholds.fraction_table` (ties, probability ``2^-32``, decided by
      more bits: :mod:`pufferfish.noise.thresholds`). ``Bernoulli(e^{-y})`` is Algorithm 1:
      its first comparison ``A_1 = [W' < y]`` reads a 16-bit digit ``d`` of ``W'``; since
      ``y < 2^-12 = 16 / 2^16``, ``d >= 16`` gives ``A_1 = 0``, hence 1. Otherwise
      (probability ``2^-12``) ``A_1`` is decided exactly (``[(d + V') t < 16 n]``, a tie by a
      uniform below ``t``) and Algorithm 1 continues (:func:`bernoulli_exp`).
    * ``A``: by inversion, ``A = #{a >= 1 : W' < e^{-a rho}}`` for a uniform ``W'``, read 32
      bits at a time against the table ``floor(2^32 e^{-a rho})`` (:func:`_ratio_table`; a 32-bit
      ``W`` strictly between two entries decides ``A``, a ``W`` equal to one reads more bits).
    * the sign: a fair bit, ``(negative, X = 0)`` rejected.

    ``R`` (bits 0-44), the sign (bit 47) and ``d`` (bits 48-63) are disjoint bits of one
    64-bit word, so independent. Integer bounds: ``X = R + 2^m A < 2^62`` needs
    ``A < 2^{62 - m}``, at least ``2^17`` (``Pr(A >= 2^17) <= e^{-2^16}``; checked).
    """
    if isinstance(t, bool) or not isinstance(t, (int, np.integer)) or not 1 <= t <= T_MAX:
        raise ValueError(f"t must be an int in [1, 2^45], got {t!r}")
    if size < 0:
        raise ValueError(f"size must be >= 0, got {size}")
    t = int(t)
    m = t.bit_length() - 1
    ratio = _ratio_table(t)
    rho = 2.0**m / t
    rate = -math.expm1(-rho) / rho  # Pr(R accepted), in [0.63, 0.79]
    out = np.empty(size, dtype=np.int64)
    done = 0
    while done < size:
        need = size - done
        z = _laplace_block(t, m, min(_candidates(need, rate * 0.98), BLOCK), ratio, random_bytes)[:need]
        out[done : done + z.size] = z
        done += z.size
    return out


def build_tables(t: int) -> None:
    """Build the tables :func:`discrete_laplace` of scale ``t`` (and :func:`discrete_gaussian` of
    sigma ``t - 1``) read, once per process: callers that draw on several threads call it first,
    so the threads share the tables instead of each building them (about 30 ms).

    Parameters
    ----------
    t : int
        ``1 <= t <= 2^45``.
    """
    fraction_table()
    _ratio_table(int(t))
    _whole_table()


@functools.lru_cache(maxsize=64)
def _ratio_table(t: int) -> NDArray[np.uint32]:
    """``G[a] = floor(2^32 e^{-a rho})``, ``rho = 2^m / t``, for ``a = 0, 1, ..., a_max``, where
    ``G[a_max] = 0`` is the first zero (``G[0] = 2^32 - 1``, capped); at most 46 entries."""
    m = t.bit_length() - 1
    values = [exp_floor(Fraction(0))]
    while values[-1] > 0:
        values.append(exp_floor(Fraction(len(values) << m, t)))
    table = np.array(values, dtype=np.uint32)
    table.setflags(write=False)
    return table


#: Ratio-table entries compared with every draw of ``A`` (:func:`discrete_laplace`); the draws
#: above them (probability ``e^{-5 rho} <= 0.08``) are placed in the whole table by bisection.
_DENSE = 5


def _laplace_block(
    t: int, m: int, count: int, ratio: NDArray[np.uint32], random_bytes: RandomBytes
) -> NDArray[np.int64]:
    """The accepted values among ``count`` candidates of :func:`discrete_laplace` (its Notes)."""
    word = np.frombuffer(random_bytes(8 * count), dtype="<u8")
    w = np.frombuffer(random_bytes(4 * count), dtype="<u4")
    r = (word & np.uint64((1 << m) - 1)).view(np.int64)
    scaled = r << FRACTION_BITS
    h = scaled // t
    threshold = fraction_table()[h]
    digit = word >> np.uint64(48)
    accept = (w < threshold) & (digit >= 16)
    fix = np.flatnonzero(np.greater(w <= threshold, accept))  # a tie, or a small digit
    if fix.size:
        accept[fix] = _laplace_fix(w[fix], threshold[fix], h[fix], scaled[fix], digit[fix], t, random_bytes)
    keep = np.flatnonzero(accept)
    a = _ratio_inverse(np.frombuffer(random_bytes(4 * keep.size), dtype="<u4"), m, t, ratio, random_bytes)
    x = r[keep] + (a << m)
    sign = (word[keep].view(np.int64) << 16) >> 63  # bit 47: 0, or -1 for negative
    x ^= sign
    x -= sign  # two's complement: (x ^ -1) + 1 = -x
    zero = np.flatnonzero(x == 0)
    return np.delete(x, zero[sign[zero] < 0]) if zero.size else x  # (negative, 0) rejected


def _laplace_fix(
    w: NDArray[np.uint32],
    threshold: NDArray[np.uint32],
    h: NDArray[np.int64],
    scaled: NDArray[np.int64],
    digit: NDArray[np.uint64],
    t: int,
    random_bytes: RandomBytes,
) -> NDArray[np.bool_]:
    """``Bernoulli(e^{-h/4096}) Bernoulli(e^{-y})`` of the candidates whose 32-bit draw ``w`` ties
    the table or whose digit is below 16 (about one in 4096; :func:`discrete_laplace`)."""
    table = w < threshold
    for i in np.flatnonzero(w == threshold):  # probability 2^-32: more bits
        table[i] = below_exp(int(w[i]), Fraction(int(h[i]), 2**FRACTION_BITS), random_bytes)
    out = table.copy()
    small = np.flatnonzero(table & (digit < 16))
    if small.size:
        n = scaled[small] - h[small] * t  # y = n / (4096 t) = (16 n / t) 2^-16
        first = _below_digit(digit[small].astype(np.int64), 16 * n, t, random_bytes)
        out[small] = _continue_exp(first, n, t << FRACTION_BITS, random_bytes)
    return out


def _ratio_inverse(
    w: NDArray[np.uint32], m: int, t: int, ratio: NDArray[np.uint32], random_bytes: RandomBytes
) -> NDArray[np.int64]:
    """``A = #{a >= 1 : W' < e^{-a rho}}`` for ``W' = (w + V') 2^-32`` (:func:`discrete_laplace`)."""
    dense = min(_DENSE, ratio.size - 1)
    count = (w < ratio[1]).view(np.uint8)  # counted in bytes: a pass each is cheaper
    for j in range(2, dense + 1):
        np.add(count, w < ratio[j], out=count)
    a = count.astype(np.int64)
    tail = np.flatnonzero(count == dense)
    if tail.size:
        ascending = ratio[1:][::-1]
        a[tail] = (ratio.size - 1) - np.searchsorted(ascending, w[tail], side="right")
    # W strictly between G[a + 1] and G[a] decides A = a; W equal to G[a + 1] needs more bits
    for i in np.flatnonzero(w == ratio[1:][a]):
        lazy = LazyUniform(int(w[i]), WORD_BITS, random_bytes)
        below = int(a[i])
        while lazy.below_exp(Fraction((below + 1) << m, t)):
            below += 1
            if below >= 2 ** (62 - m):  # pragma: no cover - probability below e^(-2^16)
                raise RuntimeError("discrete Laplace: A ran past its int64 bound")
        a[i] = below
    return a


def laplace_pmf(t: int, z: NDArray[np.int64]) -> NDArray[np.float64]:
    """``Pr(Z = z)`` of :func:`discrete_laplace` (for tests and documentation)."""
    q = math.exp(-1.0 / t)
    return (1 - q) / (1 + q) * np.exp(-np.abs(np.asarray(z, dtype=np.float64)) / t)


#: Largest integer sigma ``s`` (in grid units) of :func:`discrete_gaussian` (``t = s + 1 <= T_MAX``).
S_MAX = T_MAX - 1

#: Half-width of the band around a Bernoulli parameter inside which :func:`discrete_gaussian`
#: decides with exact integers instead of its float64 enclosure: 2^11 times the proven error
#: bound 2^-43 of that enclosure.
SCREEN_MARGIN = 2.0**-32

#: Largest ``gamma`` (float enclosure) that :func:`discrete_gaussian` handles over arrays; larger
#: ones (``|Y| > 12 s`` roughly, probability about ``e^-12`` per draw) go to exact integers.
GAMMA_VECTOR = 64.0


def discrete_gaussian(
    s: int, size: int, random_bytes: RandomBytes = secure_bytes, *, margin: float = SCREEN_MARGIN
) -> NDArray[np.int64]:
    """``size`` i.i.d. draws of the discrete Gaussian of integer sigma ``s`` on the integers.

    Parameters
    ----------
    s : int
        ``1 <= s <= S_MAX`` (``2^45 - 1``): ``Pr(Z = z) ~ exp(-z^2 / (2 s^2))``.
    size : int
        >= 0.
    random_bytes : callable
        ``random_bytes(n) -> bytes`` (default
        :func:`pufferfish.noise.randomness.secure_bytes`; tests inject a deterministic source).
    margin : float
        Half-width of the undecided band of the float64 screen, ``2^-40 <= margin``
        (default :data:`SCREEN_MARGIN`). Any value in that range gives the same distribution;
        ``margin >= 1`` sends every comparison to exact integers (the tests use it to exercise
        that path).

    Returns
    -------
    numpy.ndarray of int64, shape (size,)

    Raises
    ------
    ValueError
        If ``s`` is not an int in ``[1, S_MAX]``, ``size < 0`` or ``margin < 2^-40``.

    Notes
    -----
    Canonne, Kamath and Steinke (2020), Algorithm 3 (module docstring): ``Y`` discrete Laplace of
    scale ``t = s + 1`` (:func:`discrete_laplace`), kept with probability ``exp(-gamma)``,
    ``gamma = (|Y| t - s^2)^2 / (2 s^2 t^2) = u^2 / 2``, ``u = |Y|/s - s/t``. On the grid
    ``2^-40 sigma`` of :mod:`pufferfish.noise.samplers` the integers of ``gamma`` have about 170
    bits, so ``Bernoulli(exp(-gamma))`` is drawn as follows, exactly.

    *Split.* ``gamma = g + h / 4096 + gamma_2`` with integers ``g = m >> 12``, ``h = m & 4095``,
    ``m = max(0, floor(4096 fl(gamma_f - 2^-30)))`` and the remainder ``gamma_2``, where
    ``gamma_f = fl(u_f^2) / 2`` is the float64 value below (``|gamma_f - gamma| < 2^-44``). Then
    ``0 < gamma_2 < 2^-12 + 2^-29 < 17 / 2^16`` (the subtraction of ``2^-30`` rounds by at most
    ``2^-47``), and ``exp(-gamma)`` is the product of three independent Bernoulli draws:
    ``e^{-g}`` and ``e^{-h/4096}`` by 32-bit tables (:mod:`pufferfish.noise.thresholds`; a tie,
    probability ``2^-32``, reads more bits), ``e^{-gamma_2}`` by Algorithm 1, whose first
    comparison ``[W' < gamma_2]`` is 0 when the first 16-bit digit of ``W'`` is at least 17.

    *The remaining comparisons* (probability about ``2^-12``): ``A_k ~ Bernoulli(p)``,
    ``p = gamma_2 / k``: a uniform 16-bit ``W`` gives ``A_k = [(W + V') 2^-16 < p]``. With
    ``p_f = fl(gamma_2f / k)``, ``gamma_2f = gamma_f - m 2^-12`` (exact: both are multiples of
    the last place of ``gamma_f`` and the difference is below ``gamma_f``),
    ``|p_f - p| < 2^-44 / k + 2^-53 p < 2^-43``: if ``fl(p_f - margin) >= (W + 1) 2^-16`` then
    ``A_k = 1``; if ``fl(p_f + margin) <= W 2^-16`` then ``A_k = 0`` (sound for
    ``margin >= 2^-40``); otherwise the comparison is made on Python integers:
    ``c, r = divmod(N 2^16, D)`` with ``p = N / D``, ``A_k = [W < c]`` if ``W != c``, else
    ``[uniform below D < r]``. No float decides a comparison it cannot certify.

    *The bound on gamma_f.* Entries with ``|Y| >= 2^53`` or ``gamma_f > GAMMA_VECTOR`` are
    decided on fractions entirely (:class:`pufferfish.noise.thresholds.LazyUniform`), so on the
    array path ``|Y|``, ``s`` and ``t`` are exact in float64 and ``|u| < 11.4``. With unit
    roundoff ``e = 2^-53``, ``u_f = fl(fl(|Y|/s) - fl(s/t))`` has
    ``|u_f - u| <= e (|Y|/s + s/t + |u_f|) <= 2e (|u| + 1)(1 + e) < 25 e``, so
    ``|u_f^2 - u^2| < 25 e (2 |u| + 1) < 600 e`` and ``|gamma_f - gamma| <= (600 e + e u_f^2) / 2
    < 2^9 e = 2^-44``. ``tests/test_discrete_noise.py`` checks the split against fractions on
    random worst cases.
    """
    if isinstance(s, bool) or not isinstance(s, (int, np.integer)) or not 1 <= s <= S_MAX:
        raise ValueError(f"s must be an int in [1, 2^45 - 1], got {s!r}")
    if size < 0:
        raise ValueError(f"size must be >= 0, got {size}")
    if not (isinstance(margin, (int, float)) and margin >= 2.0**-40):
        raise ValueError(f"margin must be a number >= 2^-40, got {margin!r}")
    s = int(s)
    t = s + 1
    out = np.empty(size, dtype=np.int64)
    done = 0
    while done < size:
        need = size - done
        y = discrete_laplace(t, min(_candidates(need, 0.7), BLOCK), random_bytes)  # about 0.76 pass
        z = y[_gaussian_accept(np.abs(y), s, t, random_bytes, float(margin))][:need]
        out[done : done + z.size] = z
        done += z.size
    return out


def _candidates(need: int, rate: float) -> int:
    """How many i.i.d. candidates to draw so that about ``need`` pass a test of pass rate
    ``rate`` in one round. Which candidates are kept depends only on the pass indicators (the
    first ``need`` that pass), so the kept values are i.i.d. from the target."""
    return int(need / rate) + 16


#: Subtracted from ``gamma_f`` before its table part is split off (:func:`discrete_gaussian`):
#: far above its error ``2^-44``, so the remainder ``gamma_2`` is positive.
_SPLIT_SLACK = 2.0**-30

#: First 16-bit digits at or above which ``[W' < gamma_2]`` is 0 (``gamma_2 < 17 / 2^16``).
_SPLIT_DIGIT = 17


def screened_split(y: NDArray[np.int64], s: int, t: int) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """``(m, gamma_2f)``: the table part ``m / 4096`` of ``gamma = (|y| t - s^2)^2 / (2 s^2 t^2)``
    and the float64 value of the remainder ``gamma_2 = gamma - m / 4096``, as
    :func:`discrete_gaussian` computes them (for ``|y| < 2^53`` and ``gamma_f <= 64``; exposed for
    the test of ``0 < gamma_2 < 17 / 2^16`` and ``|gamma_2f - gamma_2| < 2^-44``)."""
    gamma = 0.5 * np.square(_screened_u(np.asarray(y), s, t))
    m = np.maximum(np.floor((gamma - _SPLIT_SLACK) * 2.0**FRACTION_BITS), 0.0).astype(np.int64)
    return m, gamma - m * 2.0**-FRACTION_BITS


def _screened_u(y: NDArray[np.int64], s: int, t: int) -> NDArray[np.float64]:
    """``u_f = fl(fl(|y| / s) - fl(s / t))``, the float64 value of ``u = |y|/s - s/t``."""
    return np.asarray(y.astype(np.float64) / float(s) - float(s) / float(t), dtype=np.float64)


def _gamma_fraction(y: int, s: int, t: int) -> Fraction:
    """``gamma = (y t - s^2)^2 / (2 s^2 t^2)`` as an exact fraction."""
    return Fraction((y * t - s * s) ** 2, 2 * s * s * t * t)


@functools.cache
def _whole_table() -> NDArray[np.uint32]:
    """``floor(2^32 e^{-g})`` for ``g = 0, ..., 64`` (``g = 0``: ``2^32 - 1``)."""
    table = exp_table([Fraction(g) for g in range(int(GAMMA_VECTOR) + 1)])
    table.setflags(write=False)
    return table


def _gaussian_accept(
    y: NDArray[np.int64], s: int, t: int, random_bytes: RandomBytes, margin: float
) -> NDArray[np.bool_]:
    """``Bernoulli(exp(-(y t - s^2)^2 / (2 s^2 t^2)))`` per entry of ``y >= 0``
    (:func:`discrete_gaussian`, Notes)."""
    accept = np.zeros(y.size, dtype=bool)
    u = _screened_u(y, s, t)
    on_arrays = (y < 2**53) & (0.5 * (u * u) <= GAMMA_VECTOR)
    for i in np.flatnonzero(~on_arrays):
        accept[i] = LazyUniform(0, 0, random_bytes).below_exp(_gamma_fraction(int(y[i]), s, t))
    idx = np.flatnonzero(on_arrays)
    y = y[idx]
    m, rest = screened_split(y, s, t)
    whole, part = m >> FRACTION_BITS, m & (2**FRACTION_BITS - 1)
    wa = np.frombuffer(random_bytes(4 * idx.size), dtype="<u4")
    wb = np.frombuffer(random_bytes(4 * idx.size), dtype="<u4")
    ta, tb = _whole_table()[whole], fraction_table()[part]
    ok = (wa < ta) & (wb < tb)
    for i in np.flatnonzero(np.greater((wa <= ta) & (wb <= tb), ok)):  # a tie: more bits
        ok[i] = (wa[i] < ta[i] or below_exp(int(wa[i]), Fraction(int(whole[i])), random_bytes)) and (
            wb[i] < tb[i] or below_exp(int(wb[i]), Fraction(int(part[i]), 2**FRACTION_BITS), random_bytes)
        )
    digit = np.frombuffer(random_bytes(2 * idx.size), dtype="<u2")
    small = np.flatnonzero(ok & (digit < _SPLIT_DIGIT))
    ok[small] = _screened_remainder(
        digit[small].astype(np.int64), rest[small], random_bytes, margin,
        lambda i: _gamma_fraction(int(y[small[i]]), s, t) - Fraction(int(m[small[i]]), 2**FRACTION_BITS),
    )  # fmt: skip
    accept[idx] = ok
    return accept


def _screened_remainder(
    digit: NDArray[np.int64],
    rest: NDArray[np.float64],
    random_bytes: RandomBytes,
    margin: float,
    exact: Callable[[int], Fraction],
) -> NDArray[np.bool_]:
    """``Bernoulli(exp(-gamma_2))`` per entry by Algorithm 1, given the first 16-bit digit of its
    first comparison; ``rest`` is ``gamma_2f`` and ``exact(i)`` the fraction ``gamma_2`` of entry
    ``i`` (comparisons screened in float64: :func:`discrete_gaussian`)."""
    result = np.zeros(digit.size, dtype=bool)
    active = np.arange(digit.size)
    k = 1
    while active.size:
        if k > 2**20:  # pragma: no cover - probability below 1 / (2^20)!
            raise RuntimeError("Bernoulli(exp(-gamma)) loop ran past its bound")
        w = digit if k == 1 else np.frombuffer(random_bytes(2 * active.size), dtype="<u2").astype(np.int64)
        low = w * 2.0**-DIGIT_BITS  # W 2^-16, exact
        p = rest[active] / k
        a = (p - margin) >= low + 2.0**-DIGIT_BITS  # (W + 1) 2^-16 is exact too
        for i in np.flatnonzero(~a & ((p + margin) > low)):
            gamma_2 = exact(int(active[i]))
            a[i] = _below_exactly(int(w[i]), gamma_2.numerator, gamma_2.denominator * k, random_bytes)
        result[active[~a]] = k % 2 == 1
        active = active[a]
        k += 1
    return result


def _below_exactly(w: int, num: int, den: int, random_bytes: RandomBytes) -> bool:
    """``[(w + V') 2^-16 < num / den]`` for a fresh uniform ``V'`` in [0, 1), exactly."""
    c, r = divmod(num << DIGIT_BITS, den)
    if w != c:
        return w < c
    return _uniform_below_int(den, random_bytes) < r


def _uniform_below_int(m: int, random_bytes: RandomBytes) -> int:
    """One Python int uniform on ``{0, ..., m - 1}`` (``m >= 1``, any size) by rejection."""
    if m == 1:
        return 0
    bits = (m - 1).bit_length()
    mask = (1 << bits) - 1
    while True:
        value = int.from_bytes(random_bytes((bits + 7) // 8), "little") & mask
        if value < m:
            return value


def gaussian_pmf(s: int, z: NDArray[np.int64]) -> NDArray[np.float64]:
    """``Pr(Z = z)`` of :func:`discrete_gaussian` (normalised over ``|z| <= 40 s + 40``; for
    tests and documentation)."""
    zz = np.arange(-40 * s - 40, 40 * s + 41, dtype=np.float64)
    norm = float(np.exp(-(zz**2) / (2.0 * s * s)).sum())
    return np.exp(-(np.asarray(z, dtype=np.float64) ** 2) / (2.0 * s * s)) / norm
