"""Exact discrete Laplace noise, vectorised over NumPy arrays, from the OS's cryptographic source.

Canonne, Kamath and Steinke (2020), "The Discrete Gaussian for Differential Privacy", Algorithms
1 and 2, written over whole arrays: every round draws uniform integers for all entries still
running and retires those that finished, so the Python overhead is per round (a few dozen per
call), not per value.

Exactness (every step samples its distribution exactly; no floating point on the random path):

* ``uniform_below(m)``: the low ``b = bit_length(m - 1)`` bits of 1, 2, 4 or 8 OS bytes (the
  smallest that hold them), rejected when ``>= m`` (probability < 1/2), so each accepted value
  is uniform on ``{0, ..., m - 1}``.
* ``Bernoulli(exp(-n / d))`` for integers ``0 <= n <= d`` (Algorithm 1): draw
  ``A_K ~ Bernoulli(n / (d K))`` (a uniform integer below ``d K`` compared with ``n``) for
  ``K = 1, 2, ...`` until ``A_K = 0``; output 1 iff that ``K`` is odd. ``Pr(K > k) =
  gamma^k / k!`` with ``gamma = n / d``, so ``Pr(K odd) = sum_k (-1)^k gamma^k / k! = e^-gamma``.
* Discrete Laplace ``Pr(Z = z) = (1 - e^{-1/t}) / (1 + e^{-1/t}) e^{-|z| / t}`` for an integer
  ``t >= 1`` (Algorithm 2 with ``s = 1``): ``U`` uniform below ``t``, accepted with probability
  ``e^{-U/t}``; ``V`` the number of ``Bernoulli(e^-1)`` successes before the first failure
  (geometric, ``Pr(V = v) = (1 - e^-1) e^-v``); ``X = U + t V`` is then geometric with
  ``Pr(X = x) ~ e^{-x/t}``; a fair sign ``B``, rejecting ``(B = 1, X = 0)``, gives ``Z = (1 - 2B) X``.

Integer bounds: ``t < 2^45`` (checked), so a uniform below ``t K`` needs ``K < 2^18`` for int64
(``Pr(K >= 2^18)`` is below ``1 / (2^18)!``; the loop raises rather than overflow), and
``X = U + t V < 2^62`` while ``V < 2^17`` (``Pr(V >= 2^17) = e^{-2^17}``; checked too).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable

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
    width = next(w for w in (1, 2, 4, 8) if 8 * w >= bits)  # bytes per draw: a NumPy integer type
    dtype = np.dtype(f"<u{width}")
    mask = dtype.type((1 << bits) - 1)
    todo = np.arange(size)
    while todo.size:
        value = np.frombuffer(random_bytes(width * todo.size), dtype=dtype) & mask
        ok = value < m
        out[todo[ok]] = value[ok].astype(np.int64)
        todo = todo[~ok]
    return out


def bernoulli_exp(
    numerator: NDArray[np.int64], denominator: int, random_bytes: RandomBytes = os.urandom
) -> NDArray[np.bool_]:
    """``Bernoulli(exp(-numerator / denominator))`` per entry, for ``0 <= numerator <= denominator``.

    Algorithm 1 of Canonne, Kamath and Steinke (2020), vectorised (module docstring).
    """
    n = np.asarray(numerator, dtype=np.int64)
    result = np.zeros(n.size, dtype=bool)
    active = np.arange(n.size)
    k = 1
    while active.size:
        if denominator * k > 2**62:  # pragma: no cover - probability below 1 / (2^18)!
            raise RuntimeError("Bernoulli(exp(-gamma)) loop ran past its int64 bound")
        a = uniform_below(denominator * k, active.size, random_bytes) < n[active]
        done = ~a
        result[active[done]] = k % 2 == 1
        active = active[a]
        k += 1
    return result


def geometric_exp1(size: int, random_bytes: RandomBytes = os.urandom) -> NDArray[np.int64]:
    """``size`` draws of ``V``: ``Bernoulli(e^-1)`` successes before the first failure."""
    v = np.zeros(size, dtype=np.int64)
    active = np.arange(size)
    one = np.ones(size, dtype=np.int64)
    while active.size:
        success = bernoulli_exp(one[: active.size], 1, random_bytes)
        v[active[success]] += 1
        active = active[success]
        if v.size and int(v.max(initial=0)) >= 2**17:  # pragma: no cover - probability e^(-2^17)
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
    todo = np.arange(size)
    while todo.size:
        n = todo.size
        u = uniform_below(t, n, random_bytes)
        keep = bernoulli_exp(u, t, random_bytes)
        u = u[keep]
        v = geometric_exp1(u.size, random_bytes)
        x = u + t * v
        sign = uniform_below(2, u.size, random_bytes)
        ok = ~((sign == 1) & (x == 0))
        z = np.where(sign == 1, -x, x)[ok]
        placed = todo[np.flatnonzero(keep)[ok]]
        out[placed] = z
        rest = np.ones(n, dtype=bool)
        rest[np.flatnonzero(keep)[ok]] = False
        todo = todo[rest]
    return out


def laplace_pmf(t: int, z: NDArray[np.int64]) -> NDArray[np.float64]:
    """``Pr(Z = z)`` of :func:`discrete_laplace` (for tests and documentation)."""
    q = math.exp(-1.0 / t)
    return (1 - q) / (1 + q) * np.exp(-np.abs(np.asarray(z, dtype=np.float64)) / t)
