"""Joint priors of a tuple of public columns, and the weighted L1 metric that puts the columns on
one scale (issue 17).

A :class:`JointPrior` is ``P(X = x | s)`` for a tuple ``X = (X_1, ..., X_d)``: the empirical joint
distribution on the distinct tuples of the rows with secret ``s`` (seed 002 sec 3.3 states the
mechanisms for ``f(X)`` in a metric space; seed 004 Thm 3-4 for ``f(X)`` in ``R^d``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pufferfish.priors.distributions import normalised_log_pmf, to_grid

#: The value a missing cell of a numeric column has in a joint prior (issue 41): larger than any
#: value a table can hold (the largest float; a value this large is refused when read), so it is
#: the last point of the column's axis, and rounding to any sampler grid leaves it where it is. The
#: channel releases it as missing: with :attr:`Metric.missing` the column's channel is the missing
#: atom (an output "missing" for this value only, ``x + Laplace(b w)`` for every other).
MISSING_NUMBER = float(np.finfo(np.float64).max)

#: Largest number of distinct tuples of one joint prior (memory: a few floats per tuple and
#: column; the transport plans have their own limit, :data:`pufferfish.transport.plans.MAX_PLAN_ENTRIES`).
MAX_TUPLES = 10_000_000


@dataclass(frozen=True, eq=False)
class JointPrior:
    """A probability distribution on a finite set of distinct points of ``R^d``.

    Parameters
    ----------
    support : array_like of float, shape (n, d)
        Distinct tuples (rows), finite; ``1 <= n <= MAX_TUPLES``, ``d >= 1``. Stored sorted
        lexicographically.
    pmf : array_like of float, shape (n,)
        ``P(X = support[k])``, finite, >= 0, summing to 1 within ``1e-9`` (then renormalised).
    counts : array_like of int, shape (n,), optional
        Integer row counts behind ``pmf`` (``pmf = counts / counts.sum()``), when known: the
        bottleneck plan is then computed on exact integers (:func:`~.plans.bottleneck_plan`).
    log_pmf : array_like of float, shape (n,), optional
        ``log P(X = support[k])`` when probabilities underflow float64 (the count priors of a
        Markov chain); the exact check starts from it (:func:`from_log_pmf`). Default
        ``log(pmf)``.
    log_error : float
        Bound (nats, >= 0) on the error of each entry of ``log_pmf``; the exact check adds it.

    Raises
    ------
    ValueError
        If a shape is wrong, a value is not finite, a tuple repeats, a probability is negative,
        the sum is off by more than 1e-9, there are more than :data:`MAX_TUPLES` tuples (bin the
        columns), or ``counts`` disagrees with ``pmf``. The message names the argument.

    Notes
    -----
    This is ``P_{X|S}(. | s)`` of seed 002 sec 3.1 for a vector ``X``.
    """

    support: NDArray[np.float64]
    pmf: NDArray[np.float64]
    counts: NDArray[np.int64] | None = None
    log_pmf: NDArray[np.float64] | None = None
    log_error: float = 0.0

    def __post_init__(self) -> None:
        support = np.array(self.support, dtype=np.float64)
        if support.ndim == 1:
            support = support[:, None]
        if support.ndim != 2 or support.shape[0] == 0 or support.shape[1] == 0:
            raise ValueError(f"support must be a non-empty (n, d) array, got shape {support.shape}")
        if not np.isfinite(support).all():
            raise ValueError("support must hold finite numbers only")
        pmf = np.array(self.pmf, dtype=np.float64).ravel()
        if pmf.shape != (support.shape[0],):
            raise ValueError(f"pmf must have one entry per tuple ({support.shape[0]}), got {pmf.size}")
        if not np.isfinite(pmf).all() or (pmf < 0).any():
            raise ValueError("pmf must hold finite probabilities >= 0")
        total = float(pmf.sum())
        if abs(total - 1.0) > 1e-9:
            raise ValueError(f"pmf must sum to 1 (within 1e-9), got a sum of {total!r}")
        if support.shape[0] > MAX_TUPLES:
            raise ValueError(
                f"a joint prior may have at most {MAX_TUPLES:,} distinct tuples, got {support.shape[0]:,}: "
                "bin the columns (fewer distinct values)"
            )
        order = np.lexsort(support.T[::-1])
        support, pmf = support[order], pmf[order] / total
        if support.shape[0] > 1 and (np.diff(support, axis=0) == 0).all(axis=1).any():
            raise ValueError("support must hold distinct tuples, got a repeated tuple")
        counts = None
        if self.counts is not None:
            counts = np.array(self.counts, dtype=np.int64).ravel()
            if counts.shape != pmf.shape or (counts < 0).any():
                raise ValueError("counts must hold one integer >= 0 per tuple")
            counts = counts[order]
            if not np.allclose(counts / counts.sum(), pmf, rtol=1e-12, atol=0.0):
                raise ValueError("counts must be proportional to pmf")
            counts.setflags(write=False)
        raw = None if self.log_pmf is None else np.array(self.log_pmf, dtype=np.float64).ravel()
        if raw is not None and raw.shape == pmf.shape:
            raw = raw[order]
        log_pmf, log_error = normalised_log_pmf(raw, pmf, self.log_error)
        for arr in (support, pmf, log_pmf):
            arr.setflags(write=False)
        object.__setattr__(self, "support", support)
        object.__setattr__(self, "pmf", pmf)
        object.__setattr__(self, "counts", counts)
        object.__setattr__(self, "log_pmf", log_pmf)
        object.__setattr__(self, "log_error", log_error)

    @classmethod
    def from_log_pmf(cls, support: Any, log_pmf: Any, *, log_error: float = 0.0) -> JointPrior:
        """A joint prior from log-probabilities (``-inf`` for zero mass), normalised.

        Parameters
        ----------
        support : array_like of float, shape (n, d)
        log_pmf : array_like of float, shape (n,)
            Unnormalised; at least one finite entry.
        log_error : float
            Bound (nats) on the error of each entry.

        Returns
        -------
        JointPrior
            ``pmf = exp(log_pmf - logsumexp(log_pmf))``; :attr:`log_pmf` keeps the exact logs.

        Raises
        ------
        ValueError
            If ``log_pmf`` holds NaN or ``+inf`` or no finite entry.
        """
        lp = np.array(log_pmf, dtype=np.float64).ravel()
        if np.isnan(lp).any() or (lp == np.inf).any() or not np.isfinite(lp).any():
            raise ValueError("log_pmf must hold log-probabilities (no NaN or +inf), one of them finite")
        lp = lp - float(np.logaddexp.reduce(lp))
        return cls(support, np.exp(lp), log_pmf=lp, log_error=log_error)

    @classmethod
    def from_rows(cls, rows: Any, weights: Any = None) -> JointPrior:
        """The empirical joint distribution of ``rows`` (shape (N, d)), optionally weighted.

        Parameters
        ----------
        rows : array_like of float, shape (N, d)
            One tuple per row, finite, ``N >= 1``.
        weights : array_like of float, shape (N,), optional
            Non-negative frequency weights (default: 1 per row; integer weights keep
            :attr:`counts`).

        Returns
        -------
        JointPrior
        """
        x = np.array(rows, dtype=np.float64)
        if x.ndim == 1:
            x = x[:, None]
        if x.ndim != 2 or x.shape[0] == 0:
            raise ValueError(f"rows must be a non-empty (N, d) array, got shape {x.shape}")
        support, inverse = np.unique(x, axis=0, return_inverse=True)
        inverse = inverse.ravel()
        if weights is None:
            counts = np.bincount(inverse, minlength=support.shape[0]).astype(np.int64)
            return cls(support, counts / counts.sum(), counts)
        w = np.array(weights, dtype=np.float64).ravel()
        if w.shape != (x.shape[0],) or not np.isfinite(w).all() or (w < 0).any() or w.sum() <= 0:
            raise ValueError("weights must be one finite number >= 0 per row, not all 0")
        mass = np.bincount(inverse, weights=w, minlength=support.shape[0])
        keep = mass > 0
        integer = bool(np.all(w == np.round(w))) and w.sum() < 2**53
        return cls(support[keep], mass[keep] / mass.sum(), mass[keep].astype(np.int64) if integer else None)

    @property
    def dimension(self) -> int:
        """``d``, the number of columns."""
        return int(self.support.shape[1])

    @property
    def size(self) -> int:
        """``n``, the number of distinct tuples."""
        return int(self.support.shape[0])

    @property
    def mean(self) -> NDArray[np.float64]:
        """``E[X_k]`` of each column, shape (d,)."""
        return np.asarray(self.pmf @ self.support, dtype=np.float64)

    @property
    def variance(self) -> NDArray[np.float64]:
        """``Var(X_k)`` of each column, shape (d,)."""
        centred = self.support - self.mean
        return np.asarray(self.pmf @ centred**2, dtype=np.float64)

    def on_grid(self, exponents: tuple[int, ...] | list[int]) -> JointPrior:
        """This prior with column ``k`` rounded by :func:`~pufferfish.priors.distributions.to_grid`
        at ``exponents[k]`` (the secure samplers' grids), tuples that meet merged (their masses and
        counts added); ``self`` when nothing moves."""
        moved = np.column_stack([to_grid(self.support[:, c], int(k)) for c, k in enumerate(exponents)])
        if np.array_equal(moved, self.support):
            return self
        support, inverse = np.unique(moved, axis=0, return_inverse=True)
        inverse = inverse.ravel()
        pmf = np.asarray(np.bincount(inverse, weights=self.pmf, minlength=support.shape[0]), dtype=np.float64)
        counts = None
        if self.counts is not None:
            counts = np.bincount(inverse, weights=self.counts, minlength=support.shape[0]).astype(np.int64)
        return JointPrior(support, pmf, counts)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: ``{"kind": "joint", "support": n lists of d, "pmf": n floats}``."""
        return {"kind": "joint", "support": self.support.tolist(), "pmf": self.pmf.tolist()}


@dataclass(frozen=True)
class Metric:
    """The weighted metric ``d(x, x') = sum_k d_k(x_k, x'_k) / w_k`` on tuples of ``d`` columns.

    ``d_k`` is ``|x_k - x'_k|`` on a numeric column and the Hamming distance ``[x_k != x'_k]`` on
    a categorical one (its values are the codes ``0, ..., m_k - 1`` of ``m_k`` labels).

    Parameters
    ----------
    units : sequence of float, length d
        ``w_k > 0``, finite: the amount of column ``k`` that counts as one unit of distance
        (``--unit col=w``; a table's default is the range of a numeric column and 1 for a
        categorical one). Noise of scale ``b`` in this metric adds ``Laplace(b w_k)`` to a numeric
        column and a randomized response with log ratio at most ``1 / (b w_k)`` to a categorical
        one (:func:`pufferfish.loss.product.product_laplace_loss`).
    categories : sequence of int, length d, optional
        ``m_k >= 1``, the number of labels of a categorical column, or 0 for a numeric one.
        Default: every column numeric.
    identity : sequence of bool, length d, optional
        Categorical columns released as they are (the identity channel: a column kept in clear
        inside the check, issue 41): distance ``inf`` between different labels, no noise at any
        scale. Default: none.
    missing : sequence of bool, length d, optional
        Numeric columns whose value :data:`MISSING_NUMBER` is a missing cell (issue 41), released
        as missing: distance ``inf`` between a missing and a present value, 0 between two missing
        ones; the pattern of missing cells is released as it is, like a kept column. Default: none.

    Raises
    ------
    ValueError
        If ``units`` is empty or holds a value that is not finite and > 0, or ``categories`` is
        not ``d`` integers >= 0.

    Notes
    -----
    Both channels have noise density ``exp(-d_k(y_k, x_k) / (b w_k))`` up to a constant that
    does not depend on ``x_k`` (the Laplace density on the line; on ``m_k`` labels the
    randomized response keeping a label with probability ``e^a / (e^a + m_k - 1)``, ``a = 1 /
    (b w_k)``), so for every output ``y`` the likelihood ratio of two inputs is at most
    ``exp(d(x, x') / b)``: seed 002 Thm 1 and Thm 2 hold in this metric.
    """

    units: tuple[float, ...]
    categories: tuple[int, ...] = ()
    identity: tuple[bool, ...] = ()
    missing: tuple[bool, ...] = ()

    def __post_init__(self) -> None:
        units = tuple(float(w) for w in self.units)
        if not units or not all(math.isfinite(w) and w > 0 for w in units):
            raise ValueError(f"units must be finite numbers > 0, got {self.units!r}")
        cats = tuple(self.categories) or (0,) * len(units)
        if len(cats) != len(units) or not all(isinstance(m, (int, np.integer)) and m >= 0 for m in cats):
            raise ValueError(f"categories must be {len(units)} integers >= 0, got {self.categories!r}")
        same = tuple(bool(v) for v in self.identity) or (False,) * len(units)
        if len(same) != len(units) or any(v and not m for v, m in zip(same, cats, strict=True)):
            raise ValueError(
                f"identity must mark {len(units)} columns, categorical ones only, got {self.identity!r}"
            )
        atoms = tuple(bool(v) for v in self.missing) or (False,) * len(units)
        if len(atoms) != len(units) or any(v and m for v, m in zip(atoms, cats, strict=True)):
            raise ValueError(
                f"missing must mark {len(units)} columns, numeric ones only, got {self.missing!r}"
            )
        object.__setattr__(self, "units", units)
        object.__setattr__(self, "categories", tuple(int(m) for m in cats))
        object.__setattr__(self, "identity", same)
        object.__setattr__(self, "missing", atoms)

    @classmethod
    def ones(cls, d: int) -> Metric:
        """The plain L1 metric in ``d`` dimensions."""
        return cls((1.0,) * d)

    @property
    def dimension(self) -> int:
        """``d``."""
        return len(self.units)

    @property
    def categorical(self) -> tuple[bool, ...]:
        """Per column: Hamming (categorical) or absolute difference (numeric)."""
        return tuple(m > 0 for m in self.categories)

    def with_units(self, units: tuple[float, ...]) -> Metric:
        """The same columns with other units."""
        return Metric(units, self.categories, self.identity, self.missing)

    def distances(self, a: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.float64]:
        """``d(a_r, b_c)`` for every row ``r`` of ``a`` (n, d) and ``c`` of ``b`` (m, d): shape (n, m).

        Each column's distance is divided by its unit and the ``d`` terms are added in column
        order (so the same pair gives the same float wherever it is computed).
        """
        if a.shape[1] != self.dimension or b.shape[1] != self.dimension:
            raise ValueError(f"points must have {self.dimension} columns, got {a.shape[1]} and {b.shape[1]}")
        out = np.zeros((a.shape[0], b.shape[0]))
        for k, (w, cat) in enumerate(zip(self.units, self.categorical, strict=True)):
            if self.identity[k]:  # released as it is: another label is infinitely far
                out += np.where(a[:, k, None] != b[None, :, k], np.inf, 0.0)
            elif cat:
                out += (a[:, k, None] != b[None, :, k]) / w
            else:
                out += atom_distances(a[:, k, None], b[None, :, k], 1.0 / w, self.missing[k])
        return out


def atom_distances(y: Any, x: Any, rate: float | Any, missing: bool) -> Any:
    """``rate |y - x|`` on a numeric column; with its missing atom (:attr:`Metric.missing`),
    ``inf`` between a missing (:data:`MISSING_NUMBER`) and a present value and 0 between two
    missing ones (broadcast)."""
    if not missing:
        return rate * np.abs(y - x)
    y_gone, x_gone = y == MISSING_NUMBER, x == MISSING_NUMBER
    with np.errstate(over="ignore", invalid="ignore"):
        present = rate * np.abs(np.where(y_gone, 0.0, y) - np.where(x_gone, 0.0, x))
    return np.where(y_gone != x_gone, np.inf, np.where(y_gone, 0.0, present))
