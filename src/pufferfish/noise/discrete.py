"""Exact discrete Laplace and Gaussian noise, vectorised over NumPy arrays, from the OS's
cryptographic source.

Canonne, Kamath and Steinke (2020), "The Discrete Gaussian for Differential Privacy", Algorithms
1 and 2, written over whole arrays: every round draws uniform integers for all entries still
running and retires those that finished, so the Python overhead is per round (a few dozen per
call), not per value.

Exactness (every step samples its distribution exactly; no floating point on the random path):

* ``uniform_below(m)``: the low ``b = bit_length(m - 1)`` bits of ``ceil(b / 8)`` OS bytes,
  rejected when ``>= m`` (probability < 1/2), so each accepted value is uniform on
  ``{0, ..., m - 1}``. For ``2^16 < m <= 2^46`` not a power of two (the scales of the
  samplers, where that rejection costs up to half the draws): ``x`` uniform on 62 bits,
  rejected when ``x >= floor(2^62 / m) m`` (probability < 2^-16), else ``x mod m``; each
  residue has exactly ``floor(2^62 / m)`` preimages below the limit, so it is uniform too.
* ``Bernoulli(exp(-n / d))`` for integers ``0 <= n <= d`` (Algorithm 1): draw
  ``A_K ~ Bernoulli(n / (d K))`` (a uniform integer below ``d K`` compared with ``n``) for
  ``K = 1, 2, ...`` until ``A_K = 0``; output 1 iff that ``K`` is odd. ``Pr(K > k) =
  gamma^k / k!`` with ``gamma = n / d``, so ``Pr(K odd) = sum_k (-1)^k gamma^k / k! = e^-gamma``.
* Discrete Laplace ``Pr(Z = z) = (1 - e^{-1/t}) / (1 + e^{-1/t}) e^{-|z| / t}`` for an integer
  ``t >= 1`` (Algorithm 2 with ``s = 1``): ``U`` uniform below ``t``, accepted with probability
  ``e^{-U/t}``; ``V`` the number of ``Bernoulli(e^-1)`` successes before the first failure
  (geometric, ``Pr(V = v) = (1 - e^-1) e^-v``); ``X = U + t V`` is then geometric with
  ``Pr(X = x) ~ e^{-x/t}``; a fair sign ``B``, rejecting ``(B = 1, X = 0)``, gives ``Z = (1 - 2B) X``.

* Discrete Gaussian ``Pr(Z = z) ~ e^{-z^2 / (2 s^2)}`` for an integer ``s >= 1`` (Algorithm 3):
  ``Y`` discrete Laplace of scale ``t = s + 1``, accepted with probability
  ``exp(-gamma)``, ``gamma = (|Y| - s^2/t)^2 / (2 s^2) = (|Y| t - s^2)^2 / (2 s^2 t^2)``. Since
  ``-y^2/(2s^2) + |y|/t = -gamma + s^2/(2t^2)``, the accepted ``Y`` has the target pmf, for any
  ``t``. See :func:`discrete_gaussian` for how ``Bernoulli(exp(-gamma))`` is drawn when the
  integers in ``gamma`` exceed 64 bits.

Integer bounds: ``t < 2^45`` (checked), so a uniform below ``t K`` needs ``K < 2^18`` for int64
(``Pr(K >= 2^18)`` is below ``1 / (2^18)!``; the loop raises rather than overflow), and
``X = U + t V < 2^62`` while ``V < 2^17`` (``Pr(V >= 2^17) = e^{-2^17}``; checked too).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

#: Largest integer scale ``t`` (in grid units) of :func:`discrete_laplace`.
T_MAX = 2**45

RandomBytes = Callable[[int], bytes]


def uniform_below(m: int, size: int, random_bytes: RandomBytes = os.urandom) -> NDArray[np.int64]:
    """``size`` integers uniform on ``{0, ..., m - 1}`` by rejection from random bytes.

    Parameters
    ----------
    m : int
        ``1 <= m <= 2^62``.
    size : int
        >= 0.
    random_bytes : callable
        ``random_bytes(n) -> bytes`` (default :func:`os.urandom`).

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


def fair_bits(size: int, random_bytes: RandomBytes = os.urandom) -> NDArray[np.bool_]:
    """``size`` independent fair bits, eight from each random byte."""
    data = np.frombuffer(random_bytes((size + 7) // 8), dtype=np.uint8)
    return np.unpackbits(data, count=size).astype(bool)


#: Bits of the first digit of :func:`bernoulli_fraction` (one uint16 per entry).
DIGIT_BITS = 16


def bernoulli_fraction(
    numerator: NDArray[np.int64], denominator: int, random_bytes: RandomBytes = os.urandom
) -> NDArray[np.bool_]:
    """``Bernoulli(numerator / denominator)`` per entry, for ``0 <= numerator <= denominator``,
    ``1 <= denominator <= 2^62``, reading 16 random bits per entry in most cases.

    ``A = [V < n / d]`` for ``V`` uniform on [0, 1), written ``V = (W + V') 2^-16`` with ``W``
    a uniform 16-bit integer and ``V'`` uniform on [0, 1) independent of it. With
    ``c, r = divmod(n 2^16, d)``: ``W < c`` gives ``A = 1``, ``W > c`` gives ``A = 0``, and
    ``W = c`` (probability at most 2^-16) leaves ``A = [V' < r / d]``, drawn as
    ``[uniform below d < r]`` (:func:`uniform_below`). Exact; ``n 2^16 <= 2^78`` is formed
    in Python integers only when it would overflow int64 (``d > 2^46``). For ``d <= 2^46`` the
    comparisons are products (no division): with ``N = n 2^16``, ``W < c`` iff
    ``(W + 1) d <= N`` and ``W = c`` iff ``W d <= N < (W + 1) d``, then ``r = N - W d``
    (every term ``<= 2^62``).
    """
    n = np.asarray(numerator, dtype=np.int64)
    w = np.frombuffer(random_bytes(2 * n.size), dtype="<u2").astype(np.int64)
    if denominator <= 2**46:
        big = n << DIGIT_BITS
        low = w * np.int64(denominator)
        out = low + np.int64(denominator) <= big
        tied = np.flatnonzero(~out & (low <= big))
        r = big[tied] - low[tied]
    else:
        pairs = [divmod(int(v) << DIGIT_BITS, denominator) for v in n]
        c = np.array([q for q, _ in pairs], dtype=np.int64)
        out = w < c
        tied = np.flatnonzero(w == c)
        r = np.array([pairs[i][1] for i in tied.tolist()], dtype=np.int64)
    if tied.size:
        out[tied] = uniform_below(denominator, tied.size, random_bytes) < r
    return out


def bernoulli_exp(
    numerator: NDArray[np.int64], denominator: int, random_bytes: RandomBytes = os.urandom
) -> NDArray[np.bool_]:
    """``Bernoulli(exp(-numerator / denominator))`` per entry, for ``0 <= numerator <= denominator``.

    Algorithm 1 of Canonne, Kamath and Steinke (2020), vectorised (module docstring).
    """
    n = np.asarray(numerator, dtype=np.int64)
    a = bernoulli_fraction(n, denominator, random_bytes)  # k = 1: those with A_1 = 0 output 1
    result = ~a
    active = np.flatnonzero(a)
    n = n[active]
    k = 2
    while active.size:
        if denominator * k > 2**62:  # pragma: no cover - probability below 1 / (2^18)!
            raise RuntimeError("Bernoulli(exp(-gamma)) loop ran past its int64 bound")
        a = bernoulli_fraction(n, denominator * k, random_bytes)
        if k % 2 == 1:
            result[active[~a]] = True  # an even k leaves its entries at 0
        active, n = active[a], n[a]
        k += 1
    return result


def _exp1_table() -> NDArray[np.int8]:
    """For each 16-bit ``W``: 1 or 0 if every ``V`` in ``[W, W + 1) 2^-16`` gives the same
    answer of :func:`bernoulli_exp1` (:func:`_exp1_decide` at ``b = 16``), else -1."""
    w = np.arange(2**DIGIT_BITS, dtype=np.int64)
    k_lo = np.full(w.size, 0)
    k_hi = np.full(w.size, 0)
    for k in range(9, 1, -1):  # the smallest k wins: go down
        f = math.factorial(k)
        k_lo = np.where(w * f >= 2**DIGIT_BITS, k, k_lo)
        k_hi = np.where((w + 1) * f > 2**DIGIT_BITS, k, k_hi)
    decided = (k_lo == k_hi) & (k_lo > 0)
    return np.where(decided, k_lo % 2, -1).astype(np.int8)


def _exp1_decide(m: int, b: int) -> int | None:
    """``[K odd]`` if every ``V`` in ``[m, m + 1) 2^-b`` has the same ``K = min{k >= 2 :
    V k! >= 1}``, else None."""
    if m == 0:
        return None
    k_lo = 2
    while m * math.factorial(k_lo) < 2**b:
        k_lo += 1
    k_hi = 2
    while (m + 1) * math.factorial(k_hi) <= 2**b:
        k_hi += 1
    return k_lo % 2 if k_lo == k_hi else None


_EXP1 = _exp1_table()


def bernoulli_exp1(size: int, random_bytes: RandomBytes = os.urandom) -> NDArray[np.bool_]:
    """``size`` draws of ``Bernoulli(e^-1)``, 16 random bits each in most cases.

    Algorithm 1 with ``gamma = 1`` stops at the first ``k >= 2`` with ``A_k = 0``,
    ``A_k ~ Bernoulli(1/k)``, so ``Pr(K > k) = 1/k!``, and outputs ``[K odd]``. Only the law of
    ``K`` matters, so ``K`` is drawn by inversion from one uniform ``V`` in [0, 1):
    ``K = min{k >= 2 : V >= 1/k!}`` has ``Pr(K > k) = Pr(V < 1/k!) = 1/k!``. ``V`` is read 16
    bits at a time: a table (:func:`_exp1_table`) answers for the 16-bit cells that contain no
    ``1/k!`` (all but 7 of 65,536); in the others more bits are read, with exact integer
    comparisons ``m k! >= 2^b``, until the cell is decided. Exact.
    """
    w = np.frombuffer(random_bytes(2 * size), dtype="<u2")
    out = _EXP1[w]
    for i in np.flatnonzero(out < 0):
        m, b = int(w[i]), DIGIT_BITS
        answer = _exp1_decide(m, b)
        while answer is None:
            m = (m << DIGIT_BITS) | int.from_bytes(random_bytes(2), "little")
            b += DIGIT_BITS
            answer = _exp1_decide(m, b)
        out[i] = answer
    return out.astype(bool)


def geometric_exp1(size: int, random_bytes: RandomBytes = os.urandom) -> NDArray[np.int64]:
    """``size`` draws of ``V``: ``Bernoulli(e^-1)`` successes before the first failure."""
    v = np.zeros(size, dtype=np.int64)
    active = np.arange(size)
    rounds = 0
    while active.size:
        success = bernoulli_exp1(active.size, random_bytes)
        active = active[success]
        v[active] += 1
        rounds += 1
        if rounds >= 2**17:  # pragma: no cover - probability e^(-2^17)
            raise RuntimeError("geometric loop ran past its int64 bound")
    return v


def discrete_laplace(t: int, size: int, random_bytes: RandomBytes = os.urandom) -> NDArray[np.int64]:
    """``size`` i.i.d. draws of the discrete Laplace distribution of integer scale ``t``.

    Parameters
    ----------
    t : int
        ``1 <= t <= 2^45``: ``Pr(Z = z) ~ exp(-|z| / t)`` on the integers.
    size : int
        >= 0.
    random_bytes : callable
        ``random_bytes(n) -> bytes`` (default :func:`os.urandom`; tests inject a deterministic
        source).

    Returns
    -------
    numpy.ndarray of int64, shape (size,)

    Raises
    ------
    ValueError
        If ``t`` is not an int in ``[1, 2^45]`` or ``size < 0``.

    Notes
    -----
    Canonne, Kamath and Steinke (2020), Algorithm 2 with ``s = 1`` (module docstring for the
    proof sketch and the integer bounds).
    """
    if isinstance(t, bool) or not isinstance(t, (int, np.integer)) or not 1 <= t <= T_MAX:
        raise ValueError(f"t must be an int in [1, 2^45], got {t!r}")
    if size < 0:
        raise ValueError(f"size must be >= 0, got {size}")
    t = int(t)
    out = np.empty(size, dtype=np.int64)
    done = 0
    while done < size:
        need = size - done
        u = uniform_below(t, _candidates(need, 0.6), random_bytes)  # 1 - 1/e or more of them pass
        u = u[bernoulli_exp(u, t, random_bytes)]
        v = geometric_exp1(u.size, random_bytes)
        x = u + t * v
        negative = fair_bits(u.size, random_bytes)
        z = np.where(negative, -x, x)[~(negative & (x == 0))][:need]
        out[done : done + z.size] = z
        done += z.size
    return out


def laplace_pmf(t: int, z: NDArray[np.int64]) -> NDArray[np.float64]:
    """``Pr(Z = z)`` of :func:`discrete_laplace` (for tests and documentation)."""
    q = math.exp(-1.0 / t)
    return (1 - q) / (1 + q) * np.exp(-np.abs(np.asarray(z, dtype=np.float64)) / t)


#: Largest integer sigma ``s`` (in grid units) of :func:`discrete_gaussian` (``t = s + 1 <= T_MAX``).
S_MAX = T_MAX - 1

#: Half-width of the band around a Bernoulli parameter inside which :func:`discrete_gaussian`
#: decides with exact integers instead of its float64 enclosure: 2^12 times the proven error
#: bound 2^-44 of that enclosure.
SCREEN_MARGIN = 2.0**-32

#: Largest ``gamma`` (float enclosure) that :func:`discrete_gaussian` handles over arrays; larger
#: ones (``|Y| > 12 s`` roughly, probability about ``e^-12`` per draw) go to exact integers.
GAMMA_VECTOR = 64.0


def discrete_gaussian(
    s: int, size: int, random_bytes: RandomBytes = os.urandom, *, margin: float = SCREEN_MARGIN
) -> NDArray[np.int64]:
    """``size`` i.i.d. draws of the discrete Gaussian of integer sigma ``s`` on the integers.

    Parameters
    ----------
    s : int
        ``1 <= s <= S_MAX`` (``2^45 - 1``): ``Pr(Z = z) ~ exp(-z^2 / (2 s^2))``.
    size : int
        >= 0.
    random_bytes : callable
        ``random_bytes(n) -> bytes`` (default :func:`os.urandom`; tests inject a deterministic
        source).
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
    ``2^-40 sigma`` of :mod:`pufferfish.noise.samplers` the integers of ``gamma`` have about 170 bits, so
    ``Bernoulli(exp(-gamma))`` is drawn as follows, exactly.

    *Split.* For ``J >= gamma`` an integer, ``exp(-gamma) = exp(-gamma/J)^J``: ``J`` independent
    ``Bernoulli(exp(-gamma/J))`` draws, each by Algorithm 1 (``gamma/J <= 1``), all must be 1.
    ``J = floor(gamma_f + 2^-20) + 1``, where ``gamma_f`` is the float64 value below, whose error
    is < 2^-42; so ``J > gamma``.

    *Each comparison.* Algorithm 1 needs ``A_k ~ Bernoulli(p)``, ``p = gamma / (J k)``. Draw a
    uniform 16-bit integer ``W`` (2 OS bytes); ``A_k = 1`` iff ``(W + V') 2^-16 < p`` for an
    implicit uniform ``V'`` in [0, 1), which has probability ``p``. With ``p_f`` the float64
    value of ``p`` and ``|p_f - p| <= E``: if ``fl(p_f - margin) >= (W + 1) 2^-16`` then
    ``A_k = 1``; if ``fl(p_f + margin) <= W 2^-16`` then ``A_k = 0`` (both sound when
    ``margin > E + 2^-53``: the rounding of the sum is at most 2^-53; ``W 2^-16`` and
    ``(W + 1) 2^-16`` are exact). Otherwise (probability about ``2^-16 + 2 margin``) the
    comparison is made exactly on Python integers: ``c, r = divmod(N 2^16, D)`` with
    ``p = N / D``; ``A_k = [W < c]`` if ``W != c``, else ``[uniform below D < r]``. No float
    ever decides a comparison it cannot certify, so the output distribution is exactly the
    discrete Gaussian.

    *The bound E.* Entries with ``|Y| >= 2^53`` or ``gamma_f > GAMMA_VECTOR`` go to exact
    integers entirely (Algorithm 1 on ``N / D`` with the integer part split off), so on the
    array path ``|Y|``, ``s`` and ``t`` are exact in float64 and ``|u| < 11.4``. With unit
    roundoff ``e = 2^-53``, ``u_f = fl(fl(|Y|/s) - fl(s/t))`` has
    ``|u_f - u| <= e (|Y|/s + s/t + |u_f|) <= 2e (|u| + 1)(1 + e) < 25 e``, so
    ``|u_f^2 - u^2| < 25 e (2 |u| + 1) < 600 e``; ``p_f = fl(fl(u_f^2) / (2 J k))`` (``2 J k``
    exact) then has ``|p_f - p| <= (600 e + 2.1 e u_f^2) / (2 J k) < 2^9 e = 2^-44`` because
    ``2 J k >= 2``. ``tests/test_discrete_noise.py`` checks ``|p_f - p| <= 2^-44`` against
    fractions on random worst cases.
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
        y = discrete_laplace(t, _candidates(need, 0.7), random_bytes)  # about 0.76 of them pass
        z = y[_gaussian_accept(np.abs(y), s, t, random_bytes, float(margin))][:need]
        out[done : done + z.size] = z
        done += z.size
    return out


def _candidates(need: int, rate: float) -> int:
    """How many i.i.d. candidates to draw so that about ``need`` pass a test of pass rate
    ``rate`` in one round. Which candidates are kept depends only on the pass indicators (the
    first ``need`` that pass), so the kept values are i.i.d. from the target."""
    return int(need / rate) + 16


def screened_parameter(
    y: NDArray[np.int64], s: int, t: int, j: NDArray[np.int64], k: int
) -> NDArray[np.float64]:
    """``p_f``: the float64 enclosure of ``p = (|y| t - s^2)^2 / (2 s^2 t^2 j k)`` used by
    :func:`discrete_gaussian` (``|p_f - p| <= 2^-44`` where it is used; exposed for the test)."""
    return _parameter(_screened_u(np.asarray(y), s, t), np.asarray(j), k)


def _screened_u(y: NDArray[np.int64], s: int, t: int) -> NDArray[np.float64]:
    """``u_f = fl(fl(|y| / s) - fl(s / t))``, the float64 value of ``u = |y|/s - s/t``."""
    return np.asarray(y.astype(np.float64) / float(s) - float(s) / float(t), dtype=np.float64)


def _parameter(u: NDArray[np.float64], j: NDArray[np.int64], k: int) -> NDArray[np.float64]:
    """``p_f = fl(fl(u_f^2) / (2 j k))``, the screened Bernoulli parameter ``gamma / (j k)``."""
    return np.asarray((u * u) / (2.0 * j.astype(np.float64) * k), dtype=np.float64)


def _gamma_fraction(y: int, s: int, t: int) -> tuple[int, int]:
    """``gamma = (y t - s^2)^2 / (2 s^2 t^2)`` as Python integers ``(numerator, denominator)``."""
    return (y * t - s * s) ** 2, 2 * s * s * t * t


def _gaussian_accept(
    y: NDArray[np.int64], s: int, t: int, random_bytes: RandomBytes, margin: float
) -> NDArray[np.bool_]:
    """``Bernoulli(exp(-(y t - s^2)^2 / (2 s^2 t^2)))`` per entry of ``y >= 0``."""
    accept = np.zeros(y.size, dtype=bool)
    u = _screened_u(y, s, t)
    gamma = 0.5 * (u * u)
    on_arrays = (y < 2**53) & (gamma <= GAMMA_VECTOR)
    for i in np.flatnonzero(~on_arrays):
        accept[i] = _bernoulli_exp_exact(*_gamma_fraction(int(y[i]), s, t), random_bytes)
    idx = np.flatnonzero(on_arrays)
    j = np.floor(gamma[idx] + 2.0**-20).astype(np.int64) + 1
    owner = np.repeat(np.arange(idx.size), j)
    ok = _screened_bernoulli_exp(y[idx][owner], u[idx][owner], j[owner], s, t, random_bytes, margin)
    accept[idx] = np.bincount(owner[~ok], minlength=idx.size) == 0
    return accept


def _screened_bernoulli_exp(
    y: NDArray[np.int64],
    u: NDArray[np.float64],
    j: NDArray[np.int64],
    s: int,
    t: int,
    random_bytes: RandomBytes,
    margin: float,
) -> NDArray[np.bool_]:
    """``Bernoulli(exp(-gamma / j))`` per entry, ``gamma = (y t - s^2)^2 / (2 s^2 t^2) <= j``, ``u``
    its :func:`_screened_u` (Algorithm 1, comparisons screened in float64: :func:`discrete_gaussian`)."""
    result = np.zeros(y.size, dtype=bool)
    active = np.arange(y.size)
    k = 1
    while active.size:
        if k > 2**20:  # pragma: no cover - probability below 1 / (2^20)!
            raise RuntimeError("Bernoulli(exp(-gamma)) loop ran past its bound")
        w = np.frombuffer(random_bytes(2 * active.size), dtype="<u2")
        low = w.astype(np.float64) * 2.0**-DIGIT_BITS  # W 2^-16, exact
        p = _parameter(u[active], j[active], k)
        a = (p - margin) >= low + 2.0**-DIGIT_BITS  # (W + 1) 2^-16 is exact too
        unsure = np.flatnonzero(~a & ((p + margin) > low))
        for i in unsure:
            num, den = _gamma_fraction(int(y[active[i]]), s, t)
            a[i] = _below_exactly(int(w[i]), num, den * int(j[active[i]]) * k, random_bytes)
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


def _bernoulli_exp_exact(num: int, den: int, random_bytes: RandomBytes) -> bool:
    """``Bernoulli(exp(-num / den))`` for Python ints ``num >= 0``, ``den >= 1`` (Algorithm 1,
    integer part split off as ``Bernoulli(e^-1)`` draws)."""
    while num > den:
        if not bernoulli_exp1(1, random_bytes)[0]:
            return False
        num -= den
    k = 1
    while _uniform_below_int(den * k, random_bytes) < num:
        k += 1
    return k % 2 == 1


def gaussian_pmf(s: int, z: NDArray[np.int64]) -> NDArray[np.float64]:
    """``Pr(Z = z)`` of :func:`discrete_gaussian` (normalised over ``|z| <= 40 s + 40``; for
    tests and documentation)."""
    zz = np.arange(-40 * s - 40, 40 * s + 41, dtype=np.float64)
    norm = float(np.exp(-(zz**2) / (2.0 * s * s)).sum())
    return np.exp(-(np.asarray(z, dtype=np.float64) ** 2) / (2.0 * s * s)) / norm
