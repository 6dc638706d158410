"""Randomized mappings of a finite alphabet as exact integer channels on the dyadic grid ``2^-52``.

A randomized mapping releases alphabet position ``x`` as ``w`` with probability
``W[x, w] / 2^52``, every row of integer weights summing to ``2^52`` exactly, so the secure
sampler draws it without floating point (:func:`pufferfish.noise.samplers.sample_mapping`) and the exact
check (:func:`pufferfish.calibration.mapping.mapping_loss`) sees the very matrix released.

Two representations, one interface (``k``, :meth:`diagonal`, :meth:`dense_weights`,
:meth:`draw`, :meth:`describe`):

* :class:`DenseChannel`: any matrix, ``k^2`` integers (the LP's optimal mapping, the clamped
  geometric mechanism); ``k <=`` :data:`DENSE_MAX_K`.
* :class:`RandomizedResponseChannel`: k-ary randomized response, two integers (``keep`` on the
  diagonal, ``other`` elsewhere): memory independent of ``k``, so alphabets of 10^4 labels and
  more release in O(n) time and O(k) memory (issue 34).

The draw is exact for both: ``U`` uniform on ``{0, ..., 2^52 - 1}``; the dense channel returns
the first ``w`` whose cumulative row weight exceeds ``U``; randomized response keeps ``x`` when
``U < keep`` and otherwise returns the ``j``-th other position, ``j = (U - keep) // other``: the
range ``[keep, 2^52)`` has length ``(k - 1) other`` exactly, so each other position has
probability ``other / 2^52`` exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

#: Bits of the grid of a mapping's integer weights.
MAPPING_BITS = 52

#: ``2^52``: the sum of every row of integer weights.
ONE = 2**MAPPING_BITS

#: Largest alphabet of a dense channel (its cumulative weights are searched in one int64 array
#: ``x 2^53 + C[x, w]``, which needs ``k 2^53 < 2^63``).
DENSE_MAX_K = 1024


@dataclass(frozen=True, eq=False)
class DenseChannel:
    """A mapping given by its full matrix of integer weights.

    Parameters
    ----------
    weights : array_like of int, shape (k, k)
        ``W[x, w] >= 0``, every row summing to ``2^52`` exactly, ``2 <= k <=``
        :data:`DENSE_MAX_K`.

    Raises
    ------
    ValueError
        If the shape, a sign or a row sum breaks these rules.
    """

    weights: NDArray[np.int64]
    _cumulative: NDArray[np.int64] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        w = np.asarray(self.weights)
        if w.ndim != 2 or w.shape[0] != w.shape[1] or not 2 <= w.shape[0] <= DENSE_MAX_K:
            raise ValueError(
                f"weights must be a square array with 2 to {DENSE_MAX_K} rows, got shape {w.shape}"
            )
        w = w.astype(np.int64)
        if np.any(w < 0) or np.any(w.sum(axis=1) != ONE):
            raise ValueError("weights must be >= 0 with every row summing to 2^52")
        w.setflags(write=False)
        object.__setattr__(self, "weights", w)
        k = w.shape[0]
        offset = np.int64(2 ** (MAPPING_BITS + 1))
        flat = (np.arange(k, dtype=np.int64)[:, None] * offset + np.cumsum(w, axis=1)).ravel()
        object.__setattr__(self, "_cumulative", flat)

    @property
    def k(self) -> int:
        """The alphabet size."""
        return int(self.weights.shape[0])

    def diagonal(self) -> NDArray[np.int64]:
        """``W[x, x]`` for every ``x``, shape (k,)."""
        return np.asarray(np.diag(self.weights), dtype=np.int64)

    def dense_weights(self) -> NDArray[np.int64]:
        """The matrix of integer weights, shape (k, k)."""
        return self.weights

    def draw(self, x: NDArray[np.int64], u: NDArray[np.int64]) -> NDArray[np.intp]:
        """Released positions for true positions ``x`` and uniforms ``u`` in ``[0, 2^52)``."""
        offset = np.int64(2 ** (MAPPING_BITS + 1))
        pos = np.searchsorted(self._cumulative, x * offset + u, side="right") - x * self.k
        return pos.astype(np.intp)

    def describe(self) -> dict[str, Any]:
        """JSON-ready structure (``kind``; the matrix itself is the calibration's ``matrix``)."""
        return {"kind": "dense", "k": self.k}


@dataclass(frozen=True)
class RandomizedResponseChannel:
    """k-ary randomized response on the dyadic grid: keep ``x`` with probability ``keep / 2^52``,
    else release each other position with probability ``other / 2^52``.

    Parameters
    ----------
    k : int
        Alphabet size, >= 2.
    keep, other : int
        Integer weights, ``keep >= other >= 0`` (keep probability at least ``1/k``: the released
        value is never less likely to be the true one), ``keep + (k - 1) other = 2^52``.

    Raises
    ------
    ValueError
        If the weights do not sum to ``2^52``, are negative, or ``keep < other``.

    Notes
    -----
    Warner (1965); the k-ary form of Kairouz, Oh and Viswanath (2014). The released pmf for a
    prior ``P`` is ``q(w) = (other sum_x P(x) + (keep - other) P(w)) / 2^52``.
    """

    k: int
    keep: int
    other: int

    def __post_init__(self) -> None:
        k, keep, other = int(self.k), int(self.keep), int(self.other)
        if k < 2 or keep < other or other < 0 or keep + (k - 1) * other != ONE:
            raise ValueError(
                "randomized response needs k >= 2 and keep + (k - 1) other = 2^52 with keep >= other >= 0, "
                f"got k={k}, keep={keep}, other={other}"
            )
        object.__setattr__(self, "k", k)
        object.__setattr__(self, "keep", keep)
        object.__setattr__(self, "other", other)

    @classmethod
    def from_probability(cls, k: int, p: float) -> RandomizedResponseChannel:
        """The channel of keep probability ``p`` in ``[1/k, 1]`` on the grid: ``other`` is
        ``floor((1 - p) / (k - 1) 2^52)`` and ``keep`` takes the rest (so the keep probability
        is ``p`` or slightly above, by less than ``k 2^-52``)."""
        if not (math.isfinite(p) and 0.0 <= p <= 1.0):
            raise ValueError(f"p must be in [0, 1], got {p!r}")
        other = math.floor((1.0 - p) / (k - 1) * ONE)
        other = min(other, ONE // k)  # keep >= other: p >= 1/k
        return cls(k, ONE - (k - 1) * other, other)

    @classmethod
    def from_log_ratio(cls, k: int, rate: float) -> RandomizedResponseChannel:
        """The channel on the grid whose log ratio ``log(keep / other)`` is at most ``rate``
        (within the grid's rounding), as close to it as the grid allows: ``other = ceil(2^52 /
        (e^rate + k - 1))``, ``keep`` the rest. Its exact ratio is :attr:`log_ratio`.

        Raises
        ------
        ValueError
            If ``k < 2`` or ``rate`` is not > 0.
        """
        if not (k >= 2 and rate > 0):
            raise ValueError(f"k must be >= 2 and rate > 0, got k={k!r}, rate={rate!r}")
        denominator = math.exp(rate) + (k - 1) if rate < 700.0 else math.inf
        other = min(math.ceil(ONE / denominator), ONE // k)
        return cls(k, ONE - (k - 1) * other, other)

    @property
    def log_ratio(self) -> float:
        """``log(keep / other)``, rounded up (``inf`` when ``other = 0``): the largest log ratio
        of two inputs' probabilities of one output."""
        if self.other == 0:
            return math.inf
        value = math.log(self.keep) - math.log(self.other)  # each log within u of its value
        return math.nextafter(value + 4.0 * 2.0**-53 * (math.log(ONE) + abs(value)), math.inf)

    @property
    def keep_probability(self) -> float:
        """``keep / 2^52`` (exact in float64)."""
        return self.keep / float(ONE)

    def diagonal(self) -> NDArray[np.int64]:
        """``keep`` for every ``x``, shape (k,)."""
        return np.full(self.k, self.keep, dtype=np.int64)

    def dense_weights(self) -> NDArray[np.int64]:
        """The full matrix, shape (k, k) (``k^2`` integers: for small alphabets only)."""
        w = np.full((self.k, self.k), self.other, dtype=np.int64)
        np.fill_diagonal(w, self.keep)
        return w

    def draw(self, x: NDArray[np.int64], u: NDArray[np.int64]) -> NDArray[np.intp]:
        """Released positions for true positions ``x`` and uniforms ``u`` in ``[0, 2^52)``."""
        out = np.array(x, dtype=np.intp, copy=True)
        moved = u >= self.keep
        if np.any(moved):  # other > 0 here: keep < 2^52
            j = (u[moved] - self.keep) // self.other
            out[moved] = j + (j >= x[moved])
        return out

    def describe(self) -> dict[str, Any]:
        """JSON-ready structure: the two weights and their probabilities."""
        return {
            "kind": "randomized-response",
            "k": self.k,
            "keep_weight": self.keep,
            "other_weight": self.other,
            "keep_probability": self.keep / float(ONE),
            "other_probability": self.other / float(ONE),
        }


#: A mapping's channel.
Channel = DenseChannel | RandomizedResponseChannel
