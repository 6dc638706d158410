"""Exact comparisons of a uniform number with ``e^{-x}``: tables of 32-bit floors and lazy bits.

The exact samplers of :mod:`pufferfish.noise.discrete` decide ``Bernoulli(e^{-x})`` for rational
``x >= 0`` as ``[W' < e^{-x}]`` with ``W'`` uniform on [0, 1), read 32 bits at a time:
``W' = (W + V') 2^-32`` with ``W`` a uniform 32-bit integer and ``V'`` uniform on [0, 1),
independent. With ``T = floor(2^32 e^{-x})`` (capped at ``2^32 - 1``, the value at ``x = 0``):

* ``W < T``: ``W' < W + 1 <= T <= 2^32 e^{-x}`` (scaled), so the answer is 1;
* ``W > T``: ``W' >= W >= T + 1 > 2^32 e^{-x}``, so the answer is 0 (for ``x > 0``
  ``2^32 e^{-x}`` is not an integer: ``e^{-x}`` is irrational for rational ``x != 0``);
* ``W = T`` (probability ``2^-32``): undecided; :class:`LazyUniform` reads more bits of ``W'``
  and compares them with ever closer enclosures of ``e^{-x}`` until the cell of ``W'`` lies on
  one side. An irrational threshold is never equal to a dyadic cell's end, so this ends with
  probability 1 (each further 32 bits leave it undecided with probability about ``2^-32``).

So the vectorised samplers compare 32-bit integers with a table, and only a tie (one draw in
about four billion) runs Python code. The tables and the enclosures come from :mod:`decimal`,
whose ``exp`` is correctly rounded (Python documentation, ``decimal.Decimal.exp``); the bound
below turns that into a certified interval.

*The enclosure.* At precision ``P`` digits, with ``rho = 10^{1-P}``, the correctly rounded
quotient ``x_d`` of ``x``'s numerator and denominator has ``|x_d - x| <= rho x`` and the correctly
rounded ``v = exp(-x_d)`` has ``|v - e^{-x_d}| <= rho v`` (half a unit in the last place is at
most ``rho / 2`` of the value). So ``e^{-x} = e^{-x_d} e^{x_d - x}`` lies in
``[v (1 - rho) e^{-rho x}, v (1 + rho) e^{rho x}]``; with ``eps = rho max(1, x) <= 1/2``
(``e^{-eps} >= 1 - eps``, ``e^{eps} <= 1 + 2 eps``) that is inside ``[v (1 - 2 eps), v (1 + 4 eps)]``.
:func:`exp_enclosure` returns ``[v (1 - 2 eps), v (1 + 5 eps)]`` exactly (integers over one
denominator), with ``P``
chosen so that the width ``7 eps v <= 2^{-(bits + 8)}``.
"""

from __future__ import annotations

import decimal
import functools
import math
from fractions import Fraction

import numpy as np
from numpy.typing import NDArray

from pufferfish.noise.randomness import RandomBytes, secure_bytes

#: Bits of the uniform integers compared with the tables.
WORD_BITS = 32

#: Largest table value: ``2^32 - 1`` (``floor(2^32 e^0) = 2^32`` is capped; the tie is exact).
WORD_MAX = 2**WORD_BITS - 1

#: Bits of the fraction table: ``e^{-h / 4096}`` for ``h = 0, ..., 4095``.
FRACTION_BITS = 12


def exp_enclosure(x: Fraction, bits: int) -> tuple[int, int, int]:
    """``(low, high, den)`` with ``low / den <= e^{-x} <= high / den`` and
    ``(high - low) / den <= 2^{-(bits + 8)}``, in integers.

    Parameters
    ----------
    x : fractions.Fraction
        ``x >= 0``.
    bits : int
        ``>= 0``: the interval is narrower than ``2^{-(bits + 8)}``.

    Returns
    -------
    tuple of int

    Raises
    ------
    ValueError
        If ``x < 0``.

    Notes
    -----
    Module docstring (the enclosure): ``decimal``'s correctly rounded division and ``exp`` at
    ``P`` digits give ``v``; the interval is ``[v (1 - 2 eps), v (1 + 5 eps)]``,
    ``eps = max(1, x) / 10^{P-1}``, written over one denominator (no fraction normalised).
    """
    if x < 0:
        raise ValueError(f"x must be >= 0, got {x}")
    if x == 0:
        return 1, 1, 1
    a, b = x.numerator, x.denominator
    size = max(1, math.ceil(math.log10(float(x) + 1.0)))  # digits before the point
    digits = math.ceil((bits + 12) * math.log10(2)) + size + 2  # 7 eps <= 2^-(bits + 8)
    with decimal.localcontext() as ctx:
        ctx.prec = digits
        ctx.Emin = decimal.MIN_EMIN
        ctx.Emax = decimal.MAX_EMAX
        ctx.traps[decimal.Underflow] = True
        p, q = (-(decimal.Decimal(a) / decimal.Decimal(b))).exp().as_integer_ratio()
    scale = b * 10 ** (digits - 1)  # eps = max(a, b) / scale
    return p * (scale - 2 * max(a, b)), p * (scale + 5 * max(a, b)), q * scale


def exp_floor(x: Fraction, bits: int = WORD_BITS) -> int:
    """``min(floor(2^bits e^{-x}), 2^bits - 1)``, exactly (``x >= 0`` rational).

    Raises
    ------
    ValueError
        If ``x < 0``.
    """
    if x == 0:
        return 2**bits - 1
    extra = 0
    while True:  # ends: 2^bits e^{-x} is irrational for x > 0
        low, high, den = exp_enclosure(x, bits + extra)
        floor_low, floor_high = (low << bits) // den, (high << bits) // den
        if floor_low == floor_high:
            return min(floor_low, 2**bits - 1)
        extra += 32


def exp_table(xs: list[Fraction]) -> NDArray[np.uint32]:
    """:func:`exp_floor` of each ``x`` at 32 bits, as uint32 (the vectorised samplers' table)."""
    return np.array([exp_floor(x) for x in xs], dtype=np.uint32)


@functools.cache
def fraction_table() -> NDArray[np.uint32]:
    """``floor(2^32 e^{-h / 4096})`` for ``h = 0, ..., 4095`` (``h = 0``: ``2^32 - 1``), built once
    (about 25 ms) at the first exact draw."""
    table = exp_table([Fraction(h, 2**FRACTION_BITS) for h in range(2**FRACTION_BITS)])
    table.setflags(write=False)
    return table


class LazyUniform:
    """A uniform ``W'`` on [0, 1) of which the first ``bits`` bits ``prefix`` were read; the
    next bits are read from ``random_bytes`` only when a comparison needs them.

    Parameters
    ----------
    prefix : int
        ``0 <= prefix < 2^bits``.
    bits : int
        >= 0.
    random_bytes : callable
        ``random_bytes(n) -> bytes``.
    """

    def __init__(self, prefix: int, bits: int, random_bytes: RandomBytes = secure_bytes) -> None:
        if not 0 <= prefix < 2**bits:
            raise ValueError(f"prefix must be in [0, 2^bits), got {prefix} for bits={bits}")
        self.prefix = int(prefix)
        self.bits = int(bits)
        self._random_bytes = random_bytes

    def below_exp(self, x: Fraction) -> bool:
        """``[W' < e^{-x}]``, exactly, reading 32 more bits of ``W'`` while its cell holds the
        threshold (module docstring). Several calls compare the same ``W'``."""
        while True:
            low, high, den = exp_enclosure(x, self.bits)
            if (self.prefix + 1) * den <= low << self.bits:  # the whole cell lies below e^{-x}
                return True
            if self.prefix * den >= high << self.bits:  # the whole cell lies above it
                return False
            more = int.from_bytes(self._random_bytes(4), "little")
            self.prefix = (self.prefix << 32) | more
            self.bits += 32


def below_exp(prefix: int, x: Fraction, random_bytes: RandomBytes = secure_bytes) -> bool:
    """``[(prefix + V') 2^-32 < e^{-x}]`` for a fresh uniform ``V'``: the exact answer in the
    cell ``W = prefix`` of a 32-bit table comparison (module docstring)."""
    return LazyUniform(prefix, WORD_BITS, random_bytes).below_exp(x)
