"""Prior sets of several columns on a declared domain: a DKW band of the joint CDF in
lexicographic order (issue 41).

Why not the L1 ball. The L1 ball of :mod:`pufferfish.priors.balls` lives on the tuples seen, so
a true prior with mass on a tuple never sampled lies outside it whatever its radius
(``shared/repro/published/coverage_sim.py``: 10 of 100 samples, true loss up to 14.8 at eps 1).
On a declared domain (every label of each categorical column, times a grid of the numeric
column's declared bounds) the ball holds those priors, but its radius (Weissman et al. 2003, Thm
2.1) grows like ``sqrt(k / n)`` with the ``k`` points of the domain: at 4 labels x 4,097 points
and 300 rows it is about 8.7, every prior.

The band. Order the domain lexicographically: the categorical columns first (in column order,
by code), the numeric column last. A tuple ``X`` drawn from a prior ``P`` on the domain has a
CDF ``F_P(z) = P(X <= z)`` in that order, a CDF on the line once the order is embedded in R. The
Dvoretzky-Kiefer-Wolfowitz inequality with Massart's constant holds for every distribution on R
(atoms included), so with ``n`` rows of a secret ``P(sup_z |F_n(z) - F_P(z)| > eta) <= 2
exp(-2 n eta^2)``, and with ``eta = sqrt(ln(2 m / alpha) / (2 n))`` (a union bound over the ``m``
secrets of the pairs) every true prior lies in its band ``{P : sup |F_P - F_hat| <= eta}`` with
probability at least ``1 - alpha``: whatever the size of the domain, unseen tuples included.

From the interval to the alphabet. The numeric column's alphabet holds the values seen (clamped
into the bounds) and the grid of :func:`pufferfish.tables.domain.domain_grid`. Moving each mass
to the nearest alphabet value at or below it, within its label tuple, is non-decreasing in the
lexicographic order, and ``F_hat`` is constant between consecutive alphabet points, so the moved
prior lies in the band on the alphabet (the argument of :mod:`pufferfish.tables.domain`, per
label tuple); a move of at most ``delta`` in the numeric column changes a Laplace density of
scale ``b w`` by a factor within ``e^(+-delta / (b w))``. The calibration checks the alphabet at
``eps - 2 delta / (b w)``.

The exact worst case over two bands is :func:`pufferfish.loss.bands.band_loss`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pufferfish.priors.distributions import to_grid
from pufferfish.priors.joint import JointPrior
from pufferfish.priors.sets import dkw_radius

#: The order the band's CDF is taken in, in words (reports).
BAND_ORDER = "lexicographic (labels of the categorical columns, then the numeric column)"


@dataclass(frozen=True, eq=False)
class JointBand:
    """Every prior on a declared product domain whose CDF in lexicographic order lies within
    ``radius`` of the estimate's (module docstring).

    Attributes
    ----------
    categories : tuple of int, length d
        Per column: its number of labels ``m_k >= 1`` (codes ``0, ..., m_k - 1``, every one in
        the domain) for a categorical column, 0 for the one numeric column.
    values : numpy.ndarray, shape (X,)
        The numeric column's alphabet: distinct, sorted, holding every value of the center.
    center : JointPrior
        The estimate (the empirical joint distribution of the secret's rows).
    radius : float
        ``eta >= 0``, the sup-distance of the CDFs.
    confidence : float or None
        The confidence ``eta`` was computed for, or None when given directly.
    requested : {"dkw", "l1"}
        The prior set asked for (both give this band on a declared domain of several columns).

    Raises
    ------
    ValueError
        If not exactly one column is numeric, the values are not distinct and sorted, the
        center's support leaves the domain, or the radius is not finite and >= 0.
    """

    categories: tuple[int, ...]
    values: NDArray[np.float64]
    center: JointPrior
    radius: float
    confidence: float | None = None
    requested: str = "dkw"

    def __post_init__(self) -> None:
        cats = tuple(int(m) for m in self.categories)
        if cats.count(0) != 1 or any(m < 0 for m in cats) or len(cats) != self.center.dimension:
            raise ValueError(
                f"categories must give {self.center.dimension} columns, exactly one numeric (0), got {cats}"
            )
        values = np.array(self.values, dtype=np.float64).ravel()
        if values.size == 0 or not np.isfinite(values).all() or (np.diff(values) <= 0).any():
            raise ValueError("values must be distinct finite numbers in increasing order")
        r = float(self.radius)
        if not (math.isfinite(r) and r >= 0):
            raise ValueError(f"radius must be finite and >= 0, got {self.radius!r}")
        if self.requested not in ("l1", "dkw"):
            raise ValueError(f"requested must be 'l1' or 'dkw', got {self.requested!r}")
        values.setflags(write=False)
        object.__setattr__(self, "categories", cats)
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "radius", r)
        if (self.positions(self.center.support) < 0).any():
            raise ValueError("the center's support must lie in the domain (labels and values)")

    @property
    def kind(self) -> str:
        """``"dkw"``: the distance of the set (as :attr:`pufferfish.priors.sets.PriorSet.kind`)."""
        return "dkw"

    @property
    def order(self) -> str:
        """The order the band's CDF is taken in, in words (:data:`BAND_ORDER`)."""
        return BAND_ORDER

    @property
    def numeric(self) -> int:
        """The position of the numeric column."""
        return self.categories.index(0)

    @property
    def tuples(self) -> NDArray[np.float64]:
        """Every combination of the categorical columns' codes, in lexicographic order: shape
        ``(T, d - 1)``, ``T = prod m_k``."""
        sizes = [m for m in self.categories if m]
        grids = np.meshgrid(*[np.arange(m, dtype=np.float64) for m in sizes], indexing="ij")
        return np.column_stack([g.ravel() for g in grids]) if sizes else np.zeros((1, 0))

    @property
    def size(self) -> int:
        """``k = T X``, the points of the alphabet."""
        return math.prod(m for m in self.categories if m) * int(self.values.size)

    @property
    def alphabet(self) -> NDArray[np.float64]:
        """Every point of the domain's alphabet, shape ``(k, d)``, in the band's order (tuple
        of labels major, numeric value minor)."""
        t, x = self.tuples, self.values
        out = np.empty((t.shape[0] * x.size, len(self.categories)))
        cat_cols = [c for c, m in enumerate(self.categories) if m]
        out[:, cat_cols] = np.repeat(t, x.size, axis=0)
        out[:, self.numeric] = np.tile(x, t.shape[0])
        return out

    def positions(self, points: NDArray[np.float64]) -> NDArray[np.intp]:
        """The position of each point (rows, shape (n, d)) in the band's order, -1 outside."""
        pts = np.asarray(points, dtype=np.float64)
        index = np.zeros(pts.shape[0], dtype=np.intp)
        ok = np.ones(pts.shape[0], dtype=bool)
        for c, m in enumerate(self.categories):
            if not m:
                continue
            code = pts[:, c]
            ok &= (code >= 0) & (code < m) & (code == np.round(code))
            index = index * m + np.where(ok, code, 0).astype(np.intp)
        x = pts[:, self.numeric]
        j = np.minimum(np.searchsorted(self.values, x), self.values.size - 1)
        ok &= self.values[j] == x
        out = index * self.values.size + j
        return np.where(ok, out, -1).astype(np.intp)

    def mass(self) -> NDArray[np.float64]:
        """The center's pmf on the alphabet in the band's order, shape (k,)."""
        out = np.zeros(self.size)
        out[self.positions(self.center.support)] = self.center.pmf
        return out

    def on_grid(self, exponents: tuple[int, ...]) -> JointBand:
        """The band of the same radius around the center rounded to the sampler grids: rounding
        (:func:`pufferfish.priors.distributions.to_grid`) is non-decreasing in the numeric column
        and leaves the label codes, so it is non-decreasing in the band's order and never
        increases the sup-distance of two CDFs; every prior of this band is pushed into that band."""
        values = np.unique(to_grid(self.values, int(exponents[self.numeric])))
        pushed = self.center.on_grid(exponents)
        return JointBand(self.categories, values, pushed, self.radius, self.confidence, self.requested)


def joint_bands(
    conditionals: Mapping[str, JointPrior],
    sizes: Mapping[str, float],
    categories: tuple[int, ...],
    values: NDArray[np.float64],
    *,
    confidence: float = 0.95,
    requested: str = "dkw",
    radius: float | None = None,
) -> dict[str, JointBand]:
    """One band per secret on the declared domain, at ``confidence``.

    Parameters
    ----------
    conditionals : mapping of str to JointPrior
        The empirical joint prior of each secret of the pairs (``m`` secrets).
    sizes : mapping of str to float
        Rows of each secret's group (> 0), or Kish's effective size with weights.
    categories, values :
        The domain (:class:`JointBand`).
    confidence : float
        In (0, 1): each radius is :func:`pufferfish.priors.sets.dkw_radius` ``(n, confidence,
        m)``, which does not depend on the size of the domain.
    requested : {"dkw", "l1"}
    radius : float, optional
        A radius for every secret instead (then no confidence is stated).

    Returns
    -------
    dict of str to JointBand

    Raises
    ------
    ValueError
        If a secret lacks a size, or an argument is out of range.
    """
    out = {}
    for s, p in conditionals.items():
        if s not in sizes:
            raise ValueError(f"sizes must give the rows of secret {s!r}")
        eta = radius if radius is not None else dkw_radius(sizes[s], confidence, len(conditionals))
        out[s] = JointBand(categories, values, p, eta, None if radius is not None else confidence, requested)
    return out


def same_domain(a: Any, b: Any) -> bool:
    """Whether two bands share one domain (categories and numeric values)."""
    return bool(a.categories == b.categories and np.array_equal(a.values, b.values))
