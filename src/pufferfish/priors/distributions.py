"""Priors and pufferfish scenarios.

A *prior* ``rho`` is the adversary's belief: one conditional distribution ``P_{X|S}(. | s, rho)``
of the public value ``X`` per secret ``s`` (SPEC sec 0; Kifer and Machanavajjhala 2014; seed 001
sec 2). This module holds

* :class:`DiscretePrior`: one such conditional distribution on a finite real support;
* :class:`GaussianMixturePrior`: a Gaussian or Gaussian-mixture conditional distribution
  (seed 003 sec III-IV), given directly or fitted to values (maximum likelihood; scikit-learn's
  ``GaussianMixture`` for more than one component);
* the release grid every released value and checked support point is rounded to.

An adversary's prior over several secrets, and the scenario (pairs and priors), are in
:mod:`pufferfish.priors.scenario`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Union

import numpy as np
from numpy.typing import NDArray

from pufferfish._checks import as_float_vector

#: Largest allowed ``|sum(pmf) - 1|`` before renormalising a probability vector.
PMF_SUM_TOLERANCE = 1e-9


def log_total(log_values: NDArray[np.float64]) -> float:
    """``log sum exp(log_values)`` of a 1-D array with a finite maximum: ``m + log(sum(exp(v -
    m)))``, ``m`` the largest entry (as :func:`scipy.special.logsumexp`, whose checks cost more
    than the sum for the short vectors of a Markov chain's ``T k`` priors); ``-inf`` when every
    entry is."""
    top = float(np.max(log_values))
    if top == -math.inf:
        return top
    return top + math.log(float(np.exp(log_values - top).sum()))


def normalised_log_pmf(
    log_pmf: Any, pmf: NDArray[np.float64], log_error: Any
) -> tuple[NDArray[np.float64], float]:
    """The log-probabilities of a prior, normalised, and their error bound, checked.

    Parameters
    ----------
    log_pmf : array_like of float, shape (n,), or None
        Logs of the probabilities (``-inf`` for zero mass), in the order of ``pmf``; None takes
        ``log(pmf)``.
    pmf : numpy.ndarray, shape (n,)
        The probabilities (already checked).
    log_error : float
        Bound (nats) on the error of each entry of ``log_pmf``, finite and >= 0.

    Returns
    -------
    (numpy.ndarray, float)
        ``log_pmf - logsumexp(log_pmf)`` (or ``log(pmf)``), and ``log_error`` as a float.

    Raises
    ------
    ValueError
        If ``log_error`` is not finite and >= 0, or ``log_pmf`` is not one log-probability
        (NaN and ``+inf`` refused) per entry of ``pmf``.
    """
    if not (isinstance(log_error, (int, float)) and math.isfinite(log_error) and log_error >= 0):
        raise ValueError(f"log_error must be finite and >= 0, got {log_error!r}")
    if log_pmf is None:
        with np.errstate(divide="ignore"):
            return np.log(pmf), float(log_error)
    lp = np.array(log_pmf, dtype=np.float64)
    if lp.shape != pmf.shape or np.isnan(lp).any() or (lp == np.inf).any():
        raise ValueError(f"log_pmf must be one log-probability (< inf) per entry of pmf ({pmf.size})")
    return lp - log_total(lp), float(log_error)


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
        log_pmf, log_error = normalised_log_pmf(self.log_pmf, pmf, self.log_error)
        for arr in (support, pmf, log_pmf):
            arr.setflags(write=False)
        object.__setattr__(self, "support", support)
        object.__setattr__(self, "pmf", pmf)
        object.__setattr__(self, "log_pmf", log_pmf)
        object.__setattr__(self, "log_error", log_error)

    @classmethod
    def point(cls, value: float) -> DiscretePrior:
        """The point mass ``delta_value`` (a deterministic value; finite float)."""
        return cls(np.array([float(value)]), np.array([1.0]))

    @classmethod
    def from_log_pmf(
        cls, support: Any, log_pmf: Any, *, log_error: float = 0.0, keep_pmf: bool = True
    ) -> DiscretePrior:
        """Build a prior from log-probabilities, keeping those that underflow float64.

        Parameters
        ----------
        support : array_like of float, shape (n,)
            Strictly increasing values.
        log_pmf : array_like of float, shape (n,)
            Unnormalised log-probabilities (``-inf`` for zero mass); shifted to sum to one.
        log_error : float
            Bound on the absolute error of each entry of ``log_pmf`` (nats, >= 0).
        keep_pmf : bool
            ``False`` keeps only :attr:`log_pmf`: :attr:`pmf` is then recomputed from it at each
            access (``exp(log_pmf)`` renormalised), which halves the memory of thousands of long
            priors (the times of a Markov chain) whose exact check reads only the logs.

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
        lp = lp - log_total(lp)
        prior = cls(support, np.exp(lp), log_pmf=lp, log_error=log_error)
        if not keep_pmf:
            object.__delattr__(prior, "pmf")  # recomputed by __getattr__ when read
        return prior

    if not TYPE_CHECKING:  # (hidden from mypy, which would type every unknown attribute as Any)

        def __getattr__(self, name: str) -> Any:
            # reached only for an attribute not set: the pmf of a prior made with keep_pmf=False
            log_pmf = self.__dict__.get("log_pmf") if name == "pmf" else None
            if log_pmf is None:
                raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
            pmf = np.exp(log_pmf)
            pmf /= pmf.sum()
            pmf.setflags(write=False)
            return pmf

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

    @cached_property
    def mean(self) -> float:
        """Expectation ``sum_k x_k p_k`` (computed once: the arrays are read-only)."""
        return float(np.dot(self.support, self.pmf))

    @cached_property
    def variance(self) -> float:
        """Variance ``sum_k p_k (x_k - mean)^2`` (>= 0; computed once)."""
        return float(self.pmf @ (self.support - self.mean) ** 2)

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
        if support is self.support:  # the prior's own grid (union_support of equal supports)
            return self.support, np.arange(self.support.size)
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


@dataclass(frozen=True, eq=False)
class GaussianMixturePrior:
    """A Gaussian or Gaussian-mixture distribution of the public value for one secret.

    Parameters
    ----------
    weights : array_like of float, shape (m,)
        Component weights ``alpha_m > 0`` summing to 1 within ``1e-9`` (renormalised).
    means : array_like of float, shape (m,)
        Component means ``mu_m`` (unit of the released column).
    stds : array_like of float, shape (m,)
        Component standard deviations ``sigma_m >= 0`` (same unit). ``0`` is a point mass, as in
        the differential-privacy special case of seed 003 sec III-A.

    Attributes
    ----------
    weights, means, stds : numpy.ndarray, shape (m,)
        Read-only float64 copies, in the order given (fitted mixtures: by mean).
    fit : dict or None
        How the prior was fitted to data (method, rows, components, BIC), ``None`` if given.

    Raises
    ------
    ValueError
        If an argument is not a 1-D array of finite numbers, the lengths differ, a weight is
        not > 0, a standard deviation is negative, or the weights do not sum to 1.

    Notes
    -----
    ``P_{X|S}(x | s, rho) = sum_m alpha_m g(x; mu_m, sigma_m^2)``: seed 003 sec IV (a single
    component is the Gaussian prior of sec III). The standard deviation, not the variance, is
    stored: seed 003's theorems use ``|sigma_i - sigma_j|``.

    Examples
    --------
    >>> p = GaussianMixturePrior.gaussian(10.0, 2.0)
    >>> p.mean, p.variance
    (10.0, 4.0)
    """

    weights: NDArray[np.float64]
    means: NDArray[np.float64]
    stds: NDArray[np.float64]
    fit: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        w = as_float_vector(self.weights, "weights")
        mu = as_float_vector(self.means, "means")
        sd = as_float_vector(self.stds, "stds")
        if not (w.shape == mu.shape == sd.shape):
            raise ValueError(
                f"weights, means and stds must have the same length, got {w.size}, {mu.size} and {sd.size}"
            )
        if (w <= 0).any():
            k = int(np.flatnonzero(w <= 0)[0])
            raise ValueError(f"weights must be > 0, got {float(w[k])!r} at index {k}")
        if (sd < 0).any():
            k = int(np.flatnonzero(sd < 0)[0])
            raise ValueError(f"stds must be >= 0, got {float(sd[k])!r} at index {k}")
        total = float(w.sum())
        if abs(total - 1.0) > PMF_SUM_TOLERANCE:
            raise ValueError(f"weights must sum to 1 (within 1e-9), got a sum of {total!r}")
        w = w / total
        for arr in (w, mu, sd):
            arr.setflags(write=False)
        object.__setattr__(self, "weights", w)
        object.__setattr__(self, "means", mu)
        object.__setattr__(self, "stds", sd)
        if self.fit is not None:
            object.__setattr__(self, "fit", MappingProxyType(dict(self.fit)))

    @classmethod
    def gaussian(cls, mean: float, std: float) -> GaussianMixturePrior:
        """The Gaussian prior ``N(mean, std^2)`` (seed 003 sec III); ``std >= 0``."""
        return cls(np.array([1.0]), np.array([float(mean)]), np.array([float(std)]))

    @classmethod
    def fit_gaussian(cls, values: Any, counts: Any = None) -> GaussianMixturePrior:
        """Maximum-likelihood Gaussian: the mean and the standard deviation dividing by ``n``.

        Parameters
        ----------
        values : array_like of float, shape (n,)
            Observed values (finite).
        counts : array_like of float, shape (n,), optional
            Frequency of each value (>= 0, positive sum); default 1 each.

        Returns
        -------
        GaussianMixturePrior
            One component; ``fit`` records ``{"method": "maximum likelihood (divide by n)", ...}``.

        Raises
        ------
        ValueError
            On non-finite values, negative counts or no data.
        """
        x = as_float_vector(values, "values")
        c = np.ones_like(x) if counts is None else as_float_vector(counts, "counts")
        if c.shape != x.shape:
            raise ValueError(f"values and counts must have the same length, got {x.size} and {c.size}")
        if (c < 0).any() or c.sum() <= 0:
            raise ValueError("counts must be >= 0 with a positive sum")
        n = float(c.sum())
        mean = float(np.dot(c, x) / n)
        std = math.sqrt(float(np.dot(c, (x - mean) ** 2) / n))
        fit = {"method": "maximum likelihood: mean and standard deviation dividing by n", "rows": n}
        return cls(np.array([1.0]), np.array([mean]), np.array([std]), fit=fit)

    @classmethod
    def fit_mixture(
        cls,
        values: Any,
        counts: Any = None,
        *,
        n_components: int | None = None,
        max_components: int = 6,
        rng: np.random.Generator | int | None = 0,
    ) -> GaussianMixturePrior:
        """Fit a Gaussian mixture with scikit-learn (EM), the number of components given or by BIC.

        Parameters
        ----------
        values : array_like of float, shape (n,)
            Observed values (finite).
        counts : array_like of int, shape (n,), optional
            Integer frequency of each value (the rows are expanded); default 1 each.
        n_components : int, optional
            Number of components ``K >= 1``; ``None`` picks ``K`` in ``1..max_components`` with the
            lowest BIC (Schwarz criterion).
        max_components : int
            Largest ``K`` tried by BIC (default 6).
        rng : numpy.random.Generator, int or None
            Seed of the EM initialisation (k-means); default 0 so a fit is reproducible.

        Returns
        -------
        GaussianMixturePrior
            With ``fit`` recording the method, rows, ``K``, the BIC of every ``K`` tried, the seed.

        Raises
        ------
        ValueError
            On non-finite values, non-integer or negative counts, fewer rows than components, or a
            bad ``n_components`` / ``max_components``.

        Notes
        -----
        ``sklearn.mixture.GaussianMixture(n_components=K, covariance_type="full", n_init=3,
        random_state=seed)``; its ``reg_covar = 1e-6`` is added to every variance, so a component
        on one repeated value has standard deviation 1e-3. Seed 003 sec IV, V (three components on
        Adult's education-num).
        """
        from sklearn.mixture import GaussianMixture

        x = as_float_vector(values, "values")
        if counts is not None:
            c = as_float_vector(counts, "counts")
            if c.shape != x.shape:
                raise ValueError(f"values and counts must have the same length, got {x.size} and {c.size}")
            if (c < 0).any() or not np.all(c == np.round(c)):
                raise ValueError("counts must be non-negative integers to fit a mixture (rows are expanded)")
            x = np.repeat(x, c.astype(np.int64))
        if isinstance(n_components, bool) or (
            n_components is not None and (not isinstance(n_components, (int, np.integer)) or n_components < 1)
        ):
            raise ValueError(f"n_components must be an integer >= 1 or None (BIC), got {n_components!r}")
        if (
            isinstance(max_components, bool)
            or not isinstance(max_components, (int, np.integer))
            or max_components < 1
        ):
            raise ValueError(f"max_components must be an integer >= 1, got {max_components!r}")
        ks = [int(n_components)] if n_components is not None else list(range(1, int(max_components) + 1))
        if x.size < max(ks):
            raise ValueError(f"need at least {max(ks)} rows to fit {max(ks)} components, got {x.size}")
        if isinstance(rng, np.random.Generator):
            seed = int(rng.integers(2**31 - 1))
        elif rng is None:
            seed = None
        elif isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
            seed = int(rng)
        else:
            raise TypeError(
                f"rng must be a numpy.random.Generator, an int seed or None, got {type(rng).__name__}"
            )
        data = x.reshape(-1, 1)
        best = None
        bics: dict[int, float] = {}
        for k in ks:
            model = GaussianMixture(n_components=k, covariance_type="full", n_init=3, random_state=seed)
            model.fit(data)
            bics[k] = float(model.bic(data))
            if best is None or bics[k] < bics[best[0]]:
                best = (k, model)
        assert best is not None
        k, model = best
        order = np.argsort(model.means_[:, 0], kind="stable")
        fit = {
            "method": "scikit-learn GaussianMixture (EM, full covariance, n_init=3, reg_covar=1e-6)",
            "rows": int(x.size),
            "n_components": k,
            "chosen_by": "given" if n_components is not None else f"lowest BIC over K = 1..{max(ks)}",
            "bic": {str(kk): v for kk, v in bics.items()},
            "seed": seed,
        }
        return cls(
            model.weights_[order].astype(np.float64),
            model.means_[order, 0].astype(np.float64),
            np.sqrt(model.covariances_[order, 0, 0]).astype(np.float64),
            fit=fit,
        )

    @property
    def n_components(self) -> int:
        """Number of components ``m``."""
        return int(self.weights.size)

    @property
    def mean(self) -> float:
        """Mean ``sum_m alpha_m mu_m``."""
        return float(np.dot(self.weights, self.means))

    @property
    def variance(self) -> float:
        """Variance ``sum_m alpha_m (sigma_m^2 + mu_m^2) - mean^2`` (>= 0)."""
        second = float(np.dot(self.weights, self.stds**2 + self.means**2))
        return max(second - self.mean**2, 0.0)

    @property
    def is_gaussian(self) -> bool:
        """Whether there is one component (seed 003 Thm 1 applies)."""
        return self.n_components == 1

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: weights, means, stds and the fit record."""
        return {
            "weights": self.weights.tolist(),
            "means": self.means.tolist(),
            "stds": self.stds.tolist(),
            "fit": None if self.fit is None else dict(self.fit),
        }


#: A conditional distribution of the public value for one secret.
Prior = Union[DiscretePrior, GaussianMixturePrior]  # noqa: UP007 (a runtime alias on Python 3.10)


#: Every released value is first rounded to this grid, and so is every support point that the
#: checks see (the secure sampler's own grid ``2^k``, ``k <= -30``, contains it).
RELEASE_GRID = 2.0**-30


def to_release_grid(values: Any) -> NDArray[np.float64]:
    """Round values to :data:`RELEASE_GRID`, exactly (values of magnitude >= 2^22 already lie on it).

    The secure samplers (:mod:`pufferfish.noise.samplers`) round their inputs to the grid ``2^k`` with
    ``k <= -30``; rounding here first, before priors are built and before noise is added, makes the
    checked support points exactly the released centres (issue 19: an off-grid value once moved by up
    to ``2^-39`` relative, which no check accounted for). Scaling by a power of two is exact, so
    ``round(x 2^30) 2^-30`` is the nearest grid point.
    """
    x = np.asarray(values, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.round(x / RELEASE_GRID) * RELEASE_GRID
    return np.asarray(np.where(np.abs(x) < 2.0**22, out, x), dtype=np.float64)


#: Exponent of :data:`RELEASE_GRID` (``2^RELEASE_EXPONENT``).
RELEASE_EXPONENT = -30


def to_grid(values: Any, exponent: int) -> NDArray[np.float64]:
    """The centres a secure sampler of grid ``2^exponent`` releases: :func:`to_release_grid`,
    then, for a grid coarser than :data:`RELEASE_GRID`, the nearest multiple of ``2^exponent``.

    Parameters
    ----------
    values : array_like of float
        Finite values.
    exponent : int
        The sampler's grid exponent ``k`` (:func:`pufferfish.noise.samplers.grid_exponent`).

    Returns
    -------
    numpy.ndarray
        ``to_release_grid(values)`` for ``k <= -30`` (those values already lie on ``2^k``);
        otherwise ``rint(x / 2^k) 2^k`` of them (ties to even), which moves each by at most
        ``2^(k-1)``. Division and multiplication by a power of two are exact, so this is the
        nearest grid point, and it is what :func:`pufferfish.noise.samplers.add_laplace` and
        :func:`~pufferfish.noise.samplers.add_gaussian` release before adding ``2^k Z``.

    Notes
    -----
    The secure samplers' grid is ``2^(floor(log2 scale) - 40)`` (issue 29: capping it at
    ``2^-30`` made integer scales beyond ``2^45`` for every scale above ``2^15``, and the sampler
    refused them). Releasing ``round(X) + N`` is not post-processing of ``X + N``, so the checks of
    a release are done on priors rounded by this same function (:func:`on_grid`).
    """
    x = to_release_grid(values)
    if exponent <= RELEASE_EXPONENT:
        return x
    g = 2.0**exponent
    return np.asarray(np.rint(x / g) * g, dtype=np.float64)


def on_grid(prior: DiscretePrior, exponent: int = RELEASE_EXPONENT) -> DiscretePrior:
    """``prior`` with its support rounded by :func:`to_grid`; points that meet are merged (their
    masses added in log space). Returns ``prior`` itself when nothing moves.

    Parameters
    ----------
    prior : DiscretePrior
    exponent : int
        The grid exponent (default ``-30``: :data:`RELEASE_GRID`).

    Returns
    -------
    DiscretePrior
        The distribution of the released centre.
    """
    support = to_grid(prior.support, exponent)
    if np.array_equal(support, prior.support):
        return prior
    assert prior.log_pmf is not None
    return merged_points(support, prior.log_pmf, prior.log_error)


def merged_points(support: Any, log_pmf: Any, log_error: float) -> DiscretePrior:
    """A prior on ``support`` (non-decreasing values, which may repeat: points that met when
    rounded) whose equal points' masses are added in log space.

    Parameters
    ----------
    support : array_like of float, shape (n,)
        Non-decreasing.
    log_pmf : array_like of float, shape (n,)
        ``log P`` of each point (``-inf`` for zero mass).
    log_error : float
        Bound on each entry's error (nats); adding in log space keeps it a bound.

    Returns
    -------
    DiscretePrior
        On the distinct values of ``support``.
    """
    uniq, inverse = np.unique(np.asarray(support, dtype=np.float64), return_inverse=True)
    if uniq.size == inverse.size:
        return DiscretePrior.from_log_pmf(uniq, log_pmf, log_error=log_error)
    merged = np.full(uniq.size, -np.inf)
    np.logaddexp.at(merged, inverse, np.asarray(log_pmf, dtype=np.float64))
    return DiscretePrior.from_log_pmf(uniq, merged, log_error=log_error)


def on_release_grid(prior: DiscretePrior) -> DiscretePrior:
    """``prior`` with its support rounded by :func:`to_release_grid` (:func:`on_grid` at ``-30``)."""
    return on_grid(prior, RELEASE_EXPONENT)


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

    Notes
    -----
    Each support is strictly increasing, so this is a merge of sorted runs (a stable sort detects
    the runs) and one pass to drop repeats: O(N) for two priors. Equal supports are returned as is.
    """
    first = priors[0].support
    if all(p.support is first or np.array_equal(p.support, first) for p in priors[1:]):
        return first
    merged = np.sort(np.concatenate([p.support for p in priors]), kind="stable")
    return merged[np.concatenate([[True], np.diff(merged) > 0])]
