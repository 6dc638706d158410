"""Exact comparisons with e^{-x} (pufferfish.noise.thresholds) and the samplers built on them
(issue 45), against mpmath at 100 digits, brute force and binomial tests on forced ties."""

from __future__ import annotations

import math
import threading
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from scipy.stats import binomtest

from pufferfish.noise import discrete
from pufferfish.noise.discrete import _laplace_block, _laplace_fix, _ratio_inverse, _ratio_table
from pufferfish.noise.randomness import SOURCE, secure_bytes
from pufferfish.noise.thresholds import (
    LazyUniform,
    below_exp,
    exp_enclosure,
    exp_floor,
    fraction_table,
)
from pufferfish.tables.ahead import read_ahead

mpmath.mp.dps = 100


def _exp(x: Fraction) -> mpmath.mpf:
    return mpmath.exp(-mpmath.mpf(x.numerator) / x.denominator)


def _chunks(*words: int):
    """A byte source returning the given 32-bit words, little-endian, 4 bytes per call."""
    queue = list(words)

    def source(k: int) -> bytes:
        assert k == 4, k
        return queue.pop(0).to_bytes(4, "little")

    return source


@pytest.mark.parametrize(
    "x",
    [Fraction(1, 4096), Fraction(4095, 4096), Fraction(1), Fraction(22), Fraction(64),
     Fraction(2**40, 2**40 + 12345), Fraction(45 * 2**45, 2**46 - 1), Fraction(1000), Fraction(7, 3)],
)  # fmt: skip
@pytest.mark.parametrize("bits", [0, 32, 64, 200])
def test_enclosure_holds_the_value_and_is_narrow(x: Fraction, bits: int) -> None:
    low, high, den = exp_enclosure(x, bits)
    value = _exp(x) if bits < 200 else None
    if value is not None:
        assert mpmath.mpf(low) / den <= value <= mpmath.mpf(high) / den
    assert (high - low) * 2 ** (bits + 8) <= den


def test_enclosure_at_high_precision_against_mpmath() -> None:
    with mpmath.workdps(400):
        for x in (Fraction(3, 7), Fraction(50), Fraction(2**45 + 1, 2**44)):
            low, high, den = exp_enclosure(x, 1000)
            value = mpmath.exp(-mpmath.mpf(x.numerator) / x.denominator)
            assert mpmath.mpf(low) / den <= value <= mpmath.mpf(high) / den
    with pytest.raises(ValueError, match="x must be >= 0"):
        exp_enclosure(Fraction(-1), 32)


def test_fraction_table_is_the_exact_floor() -> None:
    table = fraction_table()
    expected = [min(int(mpmath.floor(2**32 * _exp(Fraction(h, 4096)))), 2**32 - 1) for h in range(4096)]
    assert table.dtype == np.uint32 and table.tolist() == expected
    assert not table.flags.writeable


@pytest.mark.parametrize("t", [1, 2, 3, 1000, 2**40, 2**40 + 12345, 2**41 - 1, 2**45])
def test_ratio_table_is_the_exact_floor_to_its_first_zero(t: int) -> None:
    g = _ratio_table(t)
    m = t.bit_length() - 1
    rho = Fraction(2**m, t)
    assert g[0] == 2**32 - 1 and g[-1] == 0 and (g[1:-1] > 0).all() and g.size <= 47
    for a in range(1, g.size):
        assert int(g[a]) == int(mpmath.floor(2**32 * _exp(a * rho)))


def test_a_tie_is_decided_by_the_next_bits_as_mpmath_says() -> None:
    """``W = floor(2^32 e^{-x})``: the answer is ``[W' < e^{-x}]`` for ``W'`` with the next words
    read, checked against mpmath, including a second tie that needs a third word."""
    gen = np.random.default_rng(3)
    for x in (Fraction(1, 4096), Fraction(777, 4096), Fraction(5), Fraction(2**40, 2**40 + 99)):
        w = exp_floor(x)
        frac64 = int(mpmath.floor(2**64 * _exp(x))) - (w << 32)  # the next word's tie
        for v in [*gen.integers(0, 2**32, 50).tolist(), frac64 - 1, frac64 + 1, 0, 2**32 - 1]:
            centre = (mpmath.mpf(w) * 2**32 + v + mpmath.mpf(1) / 2) / 2**64
            assert below_exp(w, x, _chunks(int(v))) == (centre < _exp(x))
        third = int(gen.integers(0, 2**32))
        centre = ((mpmath.mpf(w) * 2**32 + frac64) * 2**32 + third + mpmath.mpf(1) / 2) / 2**96
        lazy = LazyUniform(w, 32, _chunks(frac64, third))
        assert lazy.below_exp(x) == (centre < _exp(x)) and lazy.bits == 96


def test_a_tie_has_the_fractional_part_as_probability() -> None:
    gen = np.random.default_rng(11)
    x = Fraction(1)
    w = exp_floor(x)
    share = float(2**32 * _exp(x) - w)
    n = 20_000
    ones = sum(below_exp(w, x, gen.bytes) for _ in range(n))
    assert binomtest(ones, n, share).pvalue > 1e-3
    assert below_exp(2**32 - 1, Fraction(0), gen.bytes)  # e^0 = 1: always below
    assert exp_floor(Fraction(0)) == 2**32 - 1
    with pytest.raises(ValueError, match="prefix must be in"):
        LazyUniform(2**32, 32)


@pytest.mark.parametrize("t", [1, 3, 2**40 + 12345, 2**45])
def test_geometric_part_by_inversion_against_brute_force(t: int) -> None:
    """``A = #{a >= 1 : W' < e^{-a rho}}`` for 32-bit ``w`` at random, at every table entry (a
    tie), next to them and at 0, with the next word given: brute force with mpmath."""
    g = _ratio_table(t)
    m = t.bit_length() - 1
    rho = mpmath.mpf(2**m) / t
    gen = np.random.default_rng(t % 1000)
    words = [
        *gen.integers(0, 2**32, 300).tolist(),
        *g.tolist(),
        *(g[1:-1] + 1).tolist(),
        *(g[1:-1] - 1).tolist(),
        0,
    ]
    nexts = gen.integers(0, 2**32, len(words)).tolist()
    source = iter(nexts)
    used = []

    def next_word(k: int) -> bytes:
        assert k == 4
        v = next(source)
        used.append(v)
        return v.to_bytes(4, "little")

    w = np.array(words, dtype=np.uint32)
    got = _ratio_inverse(w, m, t, g, next_word)
    # the entries equal to a table entry (ties) read one next word each, in order
    ties = [i for i, v in enumerate(words) if v in set(g[1:].tolist())]
    assert len(used) == len(ties) >= g.size - 1
    tie_words = dict(zip(ties, used, strict=True))
    for i, v in enumerate(words):
        if i in tie_words:
            u = (mpmath.mpf(v) * 2**32 + tie_words[i] + mpmath.mpf(1) / 2) / 2**64
        else:
            u = (mpmath.mpf(v) + mpmath.mpf(1) / 2) / 2**32
        a = 0
        while u < mpmath.exp(-(a + 1) * rho):
            a += 1
        assert got[i] == a, (i, v)


def test_block_split_of_r_is_exact() -> None:
    """``4096 R = h t + n`` with ``0 <= n < t``: the residual ``y = n / (4096 t) < 2^-12``, so a
    first digit >= 16 decides ``A_1 = 0`` (brute force over random ``R`` and ``t``)."""
    gen = np.random.default_rng(8)
    for _ in range(200):
        t = int(gen.integers(1, 2**45 + 1))
        m = t.bit_length() - 1
        r = gen.integers(0, 2**m, 1000, dtype=np.int64) if m else np.zeros(1000, dtype=np.int64)
        scaled = r << 12
        h = scaled // t
        n = scaled - h * t
        assert ((n >= 0) & (n < t) & (h >= 0) & (h < 4096)).all()
        assert all(
            4096 * int(a) == int(b) * t + int(c) for a, b, c in zip(r[:20], h[:20], n[:20], strict=True)
        )


def test_block_accepts_a_table_tie_with_the_fractional_part() -> None:
    """Every candidate's 32-bit draw equal to its table entry: the share accepted is the
    fractional part of ``2^32 e^{-h/4096}`` (digits 0xFFFF, so the remainder always passes)."""
    t = 2**40 + 12345
    m = 40
    r0 = t // 3
    h = (r0 << 12) // t
    share = float(2**32 * _exp(Fraction(h, 4096))) % 1
    count = 60_000
    gen = np.random.default_rng(4)
    calls: list[int] = []

    def crafted(k: int) -> bytes:
        calls.append(k)
        if len(calls) == 1:  # R = r0, sign 0, digit 0xFFFF
            return np.full(count, r0 | (0xFFFF << 48), dtype="<u8").tobytes()
        if len(calls) == 2:  # the table compare: a tie everywhere
            return np.full(count, fraction_table()[h], dtype="<u4").tobytes()
        return gen.bytes(k)

    z = _laplace_block(t, m, count, _ratio_table(t), crafted)
    assert binomtest(z.size, count, share).pvalue > 1e-3
    assert ((z - r0) % (1 << m) == 0).all() and (z > 0).all()


@pytest.mark.parametrize("digit", [15, 16])
def test_block_sends_digits_below_16_to_the_remainder(digit: int) -> None:
    """``R`` with the largest remainder ``y`` just below ``2^-12`` (``2^16 y`` just below 16) and
    a table pass (draw 0): digit 15 gives ``A_1 = 1`` almost surely, so almost every candidate
    is rejected (acceptance about ``y / 2``); digit 16 decides ``A_1 = 0``: all accepted."""
    t, m = 2**40 + 12345, 40
    h = 1000
    r0 = -(-(h + 1) * t // 4096) - 1  # 4096 r0 = h t + n with n in [t - 4096, t)
    assert t - 4096 <= 4096 * r0 - h * t < t
    count = 60_000
    gen = np.random.default_rng(9)
    calls: list[int] = []

    def crafted(k: int) -> bytes:
        calls.append(k)
        if len(calls) == 1:
            return np.full(count, r0 | (digit << 48), dtype="<u8").tobytes()
        if len(calls) == 2:
            return np.zeros(count, dtype="<u4").tobytes()
        return gen.bytes(k)

    z = _laplace_block(t, m, count, _ratio_table(t), crafted)
    assert z.size == count if digit == 16 else z.size < 60


def test_small_digit_decides_the_remainder_exactly() -> None:
    """``_laplace_fix`` with a table pass and a first digit ``d < 16``: ``A_1 = 1`` with
    probability ``q = 2^16 y - d`` (here 1/2), then Algorithm 1 goes on; the acceptance is
    ``1 - q + q (e^{-y} - 1 + y) / y``."""
    t = 2**40
    d = 5
    n = (2 * d + 1) << 35  # y = n / (4096 t) = (d + 1/2) 2^-16
    y = Fraction(n, 4096 * t)
    q = 2**16 * y - d
    expected = float(1 - q + q * (_exp(y) - 1 + mpmath.mpf(y.numerator) / y.denominator) / float(y))
    gen = np.random.default_rng(6)
    trials = 200_000

    def fix(w: int, digit: int, size: int) -> np.ndarray:
        full = np.full(size, 1, dtype=np.int64)
        return _laplace_fix(np.full(size, w, dtype=np.uint32), np.full(size, 100, dtype=np.uint32), 0 * full,
                            n * full, np.full(size, digit, dtype=np.uint64), t, gen.bytes)  # fmt: skip

    assert binomtest(int(fix(0, d, trials).sum()), trials, expected).pvalue > 1e-3
    assert not fix(101, 20, 100).any()  # above the table entry: rejected
    assert fix(99, 20, 100).all()  # below it, digit >= 16: accepted


def test_gaussian_table_tie_has_the_fractional_part_as_probability() -> None:
    """``_gaussian_accept`` with ``gamma`` in [1, 2): the draw for ``e^{-g}`` (g = 1) ties its
    table everywhere, the draw for ``e^{-h/4096}`` is 0 (always below), the digit 0xFFFF: the
    share accepted is the fractional part of ``2^32 e^{-1}``."""
    s = 1000
    t = s + 1
    y = 1000 + int(1.5 * s)  # u about 1.5 + 1/1000: gamma about 1.1
    m, _ = discrete.screened_split(np.array([y]), s, t)
    assert m[0] >> 12 == 1
    count = 40_000
    gen = np.random.default_rng(12)
    calls: list[int] = []
    whole = int(exp_floor(Fraction(1)))

    def crafted(k: int) -> bytes:
        calls.append(k)
        if len(calls) == 1:
            return np.full(count, whole, dtype="<u4").tobytes()
        if len(calls) == 2:
            return np.zeros(count, dtype="<u4").tobytes()
        if len(calls) == 3:
            return np.full(count, 0xFFFF, dtype="<u2").tobytes()
        return gen.bytes(k)

    accepted = discrete._gaussian_accept(np.full(count, y, dtype=np.int64), s, t, crafted, 2.0**-32)
    share = float(2**32 * _exp(Fraction(1))) - whole
    assert binomtest(int(accepted.sum()), count, share).pvalue > 1e-3


@pytest.mark.parametrize("t", [2**40, 2**41 - 1, 2**45])
def test_laplace_at_the_ends_of_the_split(t: int) -> None:
    """``rho = 2^m / t`` at 1 (``t = 2^m``), near 1/2 and at ``T_MAX``: mean of ``|Z| / t`` and
    the share of ``|Z| <= t`` as for the continuous Laplace, on 400,000 draws."""
    z = discrete.discrete_laplace(t, 400_000, np.random.default_rng(t % 997).bytes)
    a = np.abs(z).astype(np.float64) / t
    assert abs(a.mean() - 1.0) < 5 * 1 / math.sqrt(400_000)
    inside = int((np.abs(z) <= t).sum())
    assert binomtest(inside, z.size, 1 - math.exp(-1)).pvalue > 1e-3


def test_secure_bytes_are_bytes_from_openssl() -> None:
    a, b = secure_bytes(64), secure_bytes(64)
    assert isinstance(a, bytes) and len(a) == 64 and a != b and secure_bytes(0) == b""
    assert SOURCE == "OpenSSL RAND_bytes"
    bits = np.unpackbits(np.frombuffer(secure_bytes(100_000), dtype=np.uint8))
    assert binomtest(int(bits.sum()), bits.size, 0.5).pvalue > 1e-6


def test_read_ahead_keeps_order_raises_in_place_and_stops() -> None:
    with read_ahead(iter(range(100)), depth=2) as items:
        assert list(items) == list(range(100))

    def failing():
        yield 1
        yield 2
        raise KeyError("third")

    seen = []
    with pytest.raises(KeyError, match="third"), read_ahead(failing()) as items:
        for item in items:
            seen.append(item)
    assert seen == [1, 2]
    produced = []

    def counting():
        for i in range(10_000):
            produced.append(i)
            yield i

    before = threading.active_count()
    with read_ahead(counting(), depth=1) as items:
        assert next(items) == 0
    assert len(produced) <= 4 and threading.active_count() == before  # stopped and joined
    with pytest.raises(ValueError, match="depth must be >= 1"), read_ahead(iter(()), depth=0):
        pass
