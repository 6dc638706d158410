"""Priors and pufferfish scenarios.

A *prior* ``rho`` is the adversary's belief: one conditional distribution ``P_{X|S}(. | s, rho)``
of the public value ``X`` per secret ``s`` (SPEC sec 0; Kifer and Machanavajjhala 2014; seed 001
sec 2). This module holds

* :class:`DiscretePrior`: one such conditional distribution on a finite real support;
* :class:`AdversaryPrior`: one adversary's prior, a named map ``secret -> DiscretePrior``;
* :class:`Scenario`: the discriminative pairs and one or more adversary priors. Every guarantee
  computed on a scenario is a maximum over its pairs and its priors.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.special import logsumexp

from ._checks import as_float_vector

#: Largest allowed ``|sum(pmf) - 1|`` before renormalising a probability vector.
PMF_SUM_TOLERANCE = 1e-9


@dataclass(frozen=True, eq=False)
class DiscretePrior:
    """A probability distribution on a finite, strictly increasing set of real values.

    Parameters
    ----------
    support : array_like of float, shape (n,)
        The values ``x_1 < x_2 < ... < x_n`` that ``X`` can take (any finite reals, in the unit
        of the released column). Must be strictly increasing.
    pmf : array_like of float, shape (n,)
        ``pmf[k] = P(X = support[k])``. Finite, non-negative, and summing to 1 within
        ``1e-9``; it is then renormalised to sum to 1 exactly (up to rounding).

    log_pmf : array_like of float, shape (n,), optional
        ``log P(X = support[k])`` when the probabilities are too small for float64 (sums of many
        users, whose tails reach ``1e-70000``). Given, it is the reference: it is shifted so that
        ``logsumexp(log_pmf) = 0`` and ``pmf`` must be ``exp(log_pmf)`` (use :meth:`from_log_pmf`).
        Default ``log(pmf)``.
    log_error : float, optional
        Bound on ``|error|`` of every entry of ``log_pmf`` (nats, >= 0), for example from a
        convolution; added to the error bound of the exact privacy loss. Default 0.

    Attributes
    ----------
    support, pmf, log_pmf : numpy.ndarray, shape (n,)
        Read-only float64 copies of the inputs (``pmf`` renormalised).
    log_error : float

    Raises
    ------
    ValueError
        If an argument is not 1-D, is empty, holds a non-finite value, the lengths differ, the
        support is not strictly increasing, a probability is negative, or the sum is off by more
        than ``1e-9``. The message names the argument, the rule and the offending value.

    Notes
    -----
    This is ``P_{X|S}(. | s, rho)`` for one secret ``s`` and one prior ``rho`` (seed 001 eq 1-2;
    seed 002 sec 3.1). Points of zero probability are allowed; they belong to the alphabet used by
    the l1-sensitivity calibration (seed 001 eq 26) but not to the support of the transport plan.

    Examples
    --------
    >>> p = DiscretePrior([0, 1], [0.52, 0.48])
    >>> p.mean
    0.48
    """

    support: NDArray[np.float64]
    pmf: NDArray[np.float64]
    log_pmf: NDArray[np.float64] | None = None
    log_error: float = 0.0

    def __post_init__(self) -> None:
        support = as_float_vector(self.support, "support")
        pmf = as_float_vector(self.pmf, "pmf")
        if support.shape != pmf.shape:
            raise ValueError(f"support and pmf must have the same length, got {support.size} and {pmf.size}")
        steps = np.diff(support)
        if (steps <= 0).any():
            k = int(np.flatnonzero(steps <= 0)[0])
            raise ValueError(
                "support must be strictly increasing, got "
                f"{float(support[k])!r} then {float(support[k + 1])!r} at index {k}"
            )
        if (pmf < 0).any():
            k = int(np.flatnonzero(pmf < 0)[0])
            raise ValueError(f"pmf must be >= 0, got {float(pmf[k])!r} at index {k}")
        total = float(pmf.sum())
        if abs(total - 1.0) > PMF_SUM_TOLERANCE:
            raise ValueError(f"pmf must sum to 1 (within 1e-9), got a sum of {total!r}")
        pmf = pmf / total
        if not (math.isfinite(self.log_error) and self.log_error >= 0):
            raise ValueError(f"log_error must be finite and >= 0, got {self.log_error!r}")
        if self.log_pmf is None:
            with np.errstate(divide="ignore"):
                log_pmf = np.log(pmf)
        else:
            log_pmf = np.array(self.log_pmf, dtype=np.float64)
            if log_pmf.shape != support.shape or np.isnan(log_pmf).any() or (log_pmf == np.inf).any():
                raise ValueError("log_pmf must be a vector of log-probabilities (< inf) as long as support")
            log_pmf = log_pmf - float(logsumexp(log_pmf))
        for arr in (support, pmf, log_pmf):
            arr.setflags(write=False)
        object.__setattr__(self, "support", support)
        object.__setattr__(self, "pmf", pmf)
        object.__setattr__(self, "log_pmf", log_pmf)
        object.__setattr__(self, "log_error", float(self.log_error))

    @classmethod
    def point(cls, value: float) -> DiscretePrior:
        """The point mass ``delta_value`` (a deterministic value; finite float)."""
        return cls(np.array([float(value)]), np.array([1.0]))

    @classmethod
    def from_log_pmf(cls, support: Any, log_pmf: Any, *, log_error: float = 0.0) -> DiscretePrior:
        """Build a prior from log-probabilities, keeping those that underflow float64.

        Parameters
        ----------
        support : array_like of float, shape (n,)
            Strictly increasing values.
        log_pmf : array_like of float, shape (n,)
            Unnormalised log-probabilities (``-inf`` for zero mass); shifted to sum to one.
        log_error : float
            Bound on the absolute error of each entry of ``log_pmf`` (nats, >= 0).

        Returns
        -------
        DiscretePrior
            ``pmf = exp(log_pmf - logsumexp(log_pmf))``; :attr:`log_pmf` keeps the exact logs.

        Raises
        ------
        ValueError
            If ``log_pmf`` holds NaN or ``+inf``, or every entry is ``-inf``.
        """
        lp = as_float_vector(log_pmf, "log_pmf", allow_neg_inf=True)
        if np.isnan(lp).any() or (lp == np.inf).any():
            raise ValueError("log_pmf must hold log-probabilities (no NaN or +inf)")
        if not np.isfinite(lp).any():
            raise ValueError("log_pmf must have at least one finite entry, got all -inf")
        lp = lp - float(logsumexp(lp))
        return cls(support, np.exp(lp), log_pmf=lp, log_error=log_error)

    @classmethod
    def from_counts(cls, support: Any, counts: Any) -> DiscretePrior:
        """Build the empirical distribution from non-negative counts or frequency weights.

        Parameters
        ----------
        support : array_like of float, shape (n,)
            Strictly increasing values.
        counts : array_like of float, shape (n,)
            Non-negative counts (or summed frequency weights) per value; their sum must be > 0.

        Returns
        -------
        DiscretePrior
            ``pmf = counts / counts.sum()``.

        Raises
        ------
        ValueError
            If a count is negative or not finite, or all counts are zero.
        """
        c = as_float_vector(counts, "counts")
        if (c < 0).any():
            k = int(np.flatnonzero(c < 0)[0])
            raise ValueError(f"counts must be >= 0, got {float(c[k])!r} at index {k}")
        total = float(c.sum())
        if total <= 0:
            raise ValueError(f"counts must have a positive sum, got {total!r}")
        return cls(support, c / total)

    @property
    def size(self) -> int:
        """Number of support points ``n``."""
        return int(self.support.size)

    @property
    def mean(self) -> float:
        """Expectation ``sum_k x_k p_k``."""
        return float(np.dot(self.support, self.pmf))

    def cdf(self) -> NDArray[np.float64]:
        """Cumulative probabilities ``F(x_k) = sum_{l <= k} p_l``, shape (n,), last entry 1."""
        out = np.cumsum(self.pmf)
        out[-1] = 1.0
        return out

    def positive_support(self) -> NDArray[np.float64]:
        """The support points with positive probability, shape (m,), m <= n."""
        return self.support[self.pmf > 0]

    def on(self, support: Any) -> NDArray[np.float64]:
        """Probabilities of this prior on a larger grid that contains its support.

        Parameters
        ----------
        support : array_like of float, shape (N,)
            Strictly increasing grid that contains every point of ``self.support``.

        Returns
        -------
        numpy.ndarray, shape (N,)
            ``pmf`` placed on the grid, zero elsewhere.

        Raises
        ------
        ValueError
            If a point of this prior's support is missing from the grid.
        """
        grid, idx = self._grid_index(support)
        out = np.zeros(grid.size)
        out[idx] = self.pmf
        return out

    def _grid_index(self, support: Any) -> tuple[NDArray[np.float64], NDArray[np.intp]]:
        """The grid as float64 and the position of each support point in it (ValueError if absent)."""
        grid = np.asarray(support, dtype=np.float64)
        idx = np.searchsorted(grid, self.support)
        ok = (idx < grid.size) & (grid[np.minimum(idx, grid.size - 1)] == self.support)
        if not ok.all():
            k = int(np.flatnonzero(~ok)[0])
            raise ValueError(f"support must contain {float(self.support[k])!r}, which is missing")
        return grid, idx

    def log_on(self, support: Any) -> NDArray[np.float64]:
        """Log-probabilities of this prior on a larger grid (``-inf`` off its support).

        Parameters
        ----------
        support : array_like of float, shape (N,)
            Strictly increasing grid containing every point of ``self.support``.

        Returns
        -------
        numpy.ndarray, shape (N,)
            :attr:`log_pmf` placed on the grid, ``-inf`` elsewhere.

        Raises
        ------
        ValueError
            If a point of this prior's support is missing from the grid.
        """
        grid, idx = self._grid_index(support)
        out = np.full(grid.size, -np.inf)
        assert self.log_pmf is not None
        out[idx] = self.log_pmf
        return out

    def to_dict(self) -> dict[str, list[float]]:
        """JSON-ready ``{"support": [...], "pmf": [...]}``."""
        return {"support": self.support.tolist(), "pmf": self.pmf.tolist()}


def union_support(*priors: DiscretePrior) -> NDArray[np.float64]:
    """Sorted union of the supports of ``priors``.

    Parameters
    ----------
    *priors : DiscretePrior
        One or more priors.

    Returns
    -------
    numpy.ndarray, shape (N,)
        Strictly increasing values, ``N <= sum of the support sizes``. The exact privacy loss of a
        pair is attained on this grid (SPEC sec 2.1).
    """
    return np.unique(np.concatenate([p.support for p in priors]))


@dataclass(frozen=True)
class AdversaryPrior:
    """One adversary's prior ``rho``: a conditional distribution of ``X`` for each secret.

    Parameters
    ----------
    name : str
        A label used in results to say which prior decided a scale (e.g. ``"empirical"``).
    conditionals : mapping of str to DiscretePrior
        ``conditionals[s] = P_{X|S}(. | s, rho)`` for every secret ``s`` this prior speaks of.

    Raises
    ------
    ValueError
        If ``name`` is empty or ``conditionals`` is empty.
    TypeError
        If a value of ``conditionals`` is not a :class:`DiscretePrior`.

    Notes
    -----
    Seed 001 sec 2 ("each rho uniquely identifies one of them"); SPEC sec 0.
    """

    name: str
    conditionals: Mapping[str, DiscretePrior]

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"name must be a non-empty string, got {self.name!r}")
        conds = dict(self.conditionals)
        if not conds:
            raise ValueError("conditionals must name at least one secret, got none")
        for secret, prior in conds.items():
            if not isinstance(prior, DiscretePrior):
                raise TypeError(
                    f"conditionals[{secret!r}] must be a DiscretePrior, got {type(prior).__name__}"
                )
        object.__setattr__(self, "conditionals", MappingProxyType(conds))


@dataclass(frozen=True)
class Scenario:
    """A pufferfish scenario: discriminative pairs of secrets and the adversaries' priors.

    Parameters
    ----------
    pairs : iterable of (str, str)
        The discriminative pair set ``S``: pairs ``(s_i, s_j)`` of distinct secrets an adversary
        must not tell apart. Both directions of the inequality are always enforced.
    priors : iterable of AdversaryPrior
        One or more priors; each must give a conditional distribution for every secret that
        appears in ``pairs``. Prior names must be distinct.

    Attributes
    ----------
    secrets : tuple of str
        The secrets appearing in ``pairs``, in order of first appearance.

    Raises
    ------
    ValueError
        If there is no pair, a pair is not two distinct secrets, no prior is given, two priors
        share a name, or a prior lacks a secret of a pair.

    Notes
    -----
    Definition of (eps, S)-pufferfish privacy: seed 001 eq (1); SPEC sec 0. Every result computed
    on a scenario is the maximum over ``pairs`` and ``priors`` and says which pair and prior
    decided it.

    Examples
    --------
    >>> p = AdversaryPrior("rho", {"a": DiscretePrior([0, 1], [0.52, 0.48]),
    ...                            "b": DiscretePrior([0, 1], [0.5, 0.5])})
    >>> Scenario([("a", "b")], [p]).secrets
    ('a', 'b')
    """

    pairs: tuple[tuple[str, str], ...]
    priors: tuple[AdversaryPrior, ...]
    secrets: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        pairs = tuple(_check_pair(p) for p in self.pairs)
        if not pairs:
            raise ValueError("pairs must hold at least one discriminative pair, got none")
        priors = tuple(self.priors)
        if not priors:
            raise ValueError("priors must hold at least one AdversaryPrior, got none")
        names = [p.name for p in priors]
        if len(set(names)) != len(names):
            raise ValueError(f"priors must have distinct names, got {names}")
        secrets: list[str] = []
        for a, b in pairs:
            for s in (a, b):
                if s not in secrets:
                    secrets.append(s)
        for prior in priors:
            missing = [s for s in secrets if s not in prior.conditionals]
            if missing:
                raise ValueError(
                    f"prior {prior.name!r} must give a distribution for every secret of the "
                    f"pairs; it lacks {missing}"
                )
        object.__setattr__(self, "pairs", pairs)
        object.__setattr__(self, "priors", priors)
        object.__setattr__(self, "secrets", tuple(secrets))

    @classmethod
    def single(
        cls, prior_i: DiscretePrior, prior_j: DiscretePrior, *, names: tuple[str, str] = ("s_i", "s_j")
    ) -> Scenario:
        """The scenario of one pair ``(s_i, s_j)`` and one prior named ``"rho"``.

        Parameters
        ----------
        prior_i, prior_j : DiscretePrior
            ``P_{X|S}(. | s_i)`` and ``P_{X|S}(. | s_j)``.
        names : (str, str), optional
            Names of the two secrets.

        Returns
        -------
        Scenario
        """
        rho = AdversaryPrior("rho", {names[0]: prior_i, names[1]: prior_j})
        return cls(((names[0], names[1]),), (rho,))

    def iter_pairs(self) -> Iterable[tuple[AdversaryPrior, tuple[str, str], DiscretePrior, DiscretePrior]]:
        """Yield ``(prior, (s_i, s_j), P(.|s_i), P(.|s_j))`` for every prior and pair."""
        for prior in self.priors:
            for a, b in self.pairs:
                yield prior, (a, b), prior.conditionals[a], prior.conditionals[b]


def _check_pair(pair: Any) -> tuple[str, str]:
    try:
        a, b = pair
    except (TypeError, ValueError):
        raise ValueError(f"each pair must be two secrets (s_i, s_j), got {pair!r}") from None
    if a == b:
        raise ValueError(f"each pair must be two distinct secrets, got {pair!r}")
    return (a, b)
