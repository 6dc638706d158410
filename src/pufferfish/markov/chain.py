"""A finite Markov chain: the model of a person's time series (activity, location, power use).

``X_0, ..., X_{T-1}`` take states ``0..k-1`` (named by ``states``, the labels as written when
the chain is estimated from data); ``P(X_{t+1} = b | X_t = a) = transition[a, b]`` and ``X_0``
follows ``initial``: the stationary distribution (the default), or a given probability vector.
Song, Wang and Chaudhuri, "Pufferfish Privacy Mechanisms for Correlated Data", SIGMOD 2017
(arXiv 1603.03977), sec 4: the secrets are ``X_i = a``, the pairs ``(X_i = a, X_i = b)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

#: How far a row of the transition matrix (or the initial vector) may sum from 1.
STOCHASTIC_TOLERANCE = 1e-9

#: Initial distributions by name.
INITIALS = ("stationary", "any")

#: Weight of the uniform distribution in the near-vertex starts an ``initial="any"`` chain is
#: checked on (:meth:`MarkovChain.starts`).
ANY_START_MIX = 0.01


def parse_matrix(text: str) -> NDArray[np.float64]:
    """A matrix written as rows separated by ``;``, entries by ``,`` (``"0.9,0.1;0.1,0.9"``).

    Raises
    ------
    ValueError
        Naming the entry that is not a number or the row of another length.
    """
    rows = [r for r in str(text).split(";")]
    out = []
    for r, row in enumerate(rows):
        entries = [e.strip() for e in row.split(",")]
        values = []
        for e in entries:
            try:
                values.append(float(e))
            except ValueError:
                raise ValueError(f"transition entry {e!r} in row {r} is not a number") from None
        out.append(values)
    if len({len(v) for v in out}) != 1:
        raise ValueError(f"transition rows must all have one length, got {[len(v) for v in out]}")
    return np.array(out, dtype=np.float64)


@dataclass(frozen=True)
class MarkovChain:
    """A row-stochastic transition matrix, an initial distribution and the names of the states.

    Parameters
    ----------
    transition : array_like, shape (k, k), or str
        ``transition[a, b] = P(X_{t+1} = b | X_t = a)``: finite, >= 0, each row summing to 1
        within 1e-9 (then renormalised), ``k >= 2``; a string ``"0.9,0.1;0.1,0.9"`` is parsed
        (:func:`parse_matrix`).
    initial : "stationary", "any" or array_like, shape (k,)
        The distribution of ``X_0``: the chain's stationary distribution (it must be unique),
        every distribution (``"any"``: the class of Song et al. 2017; the Markov quilt mechanism
        bounds it, other scales are checked on the starts of :meth:`starts`), or a probability
        vector (>= 0, summing to 1 within 1e-9).
    states : sequence of str, optional
        Names of the states (default ``"0"``, ..., ``"k-1"``); distinct.

    Attributes
    ----------
    transition : numpy.ndarray, shape (k, k)
    initial_distribution : numpy.ndarray, shape (k,)
        The distribution of ``X_0``.
    states : tuple of str

    Raises
    ------
    ValueError
        If the matrix is not square, has fewer than 2 states, a negative or non-finite entry, a
        row that does not sum to 1; if ``initial`` is ``"stationary"`` and the stationary
        distribution is not unique (the chain has several closed classes); if ``initial`` is not
        a probability vector of length ``k``; if ``states`` has another length or repeats a name.

    Examples
    --------
    >>> chain = MarkovChain("0.9,0.1;0.1,0.9")
    >>> [round(p, 12) for p in chain.initial_distribution.tolist()]  # computed to about 1e-15
    [0.5, 0.5]
    """

    transition: Any
    initial: Any = "stationary"
    states: Any = None
    initial_distribution: NDArray[np.float64] = field(init=False)

    def __post_init__(self) -> None:
        m = parse_matrix(self.transition) if isinstance(self.transition, str) else self.transition
        try:
            m = np.array(m, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(
                f"transition must be a square matrix of numbers, got {self.transition!r}"
            ) from None
        if m.ndim != 2 or m.shape[0] != m.shape[1]:
            raise ValueError(f"transition must be a square matrix, got shape {m.shape}")
        k = m.shape[0]
        if k < 2:
            raise ValueError(f"transition must have at least 2 states, got {k}")
        if not np.all(np.isfinite(m)):
            raise ValueError("transition entries must be finite, got a NaN or an infinity")
        if np.any(m < 0):
            a, b = np.argwhere(m < 0)[0]
            raise ValueError(
                f"transition entries must be >= 0, got {float(m[a, b])!r} at row {a}, column {b}"
            )
        sums = m.sum(axis=1)
        bad = np.flatnonzero(np.abs(sums - 1.0) > STOCHASTIC_TOLERANCE)
        if bad.size:
            raise ValueError(
                f"transition rows must sum to 1 (within 1e-9): row {int(bad[0])} sums to "
                f"{float(sums[bad[0]])!r}"
            )
        m = m / sums[:, None]
        m.setflags(write=False)
        names = tuple(str(i) for i in range(k)) if self.states is None else tuple(str(s) for s in self.states)
        if len(names) != k or len(set(names)) != k:
            raise ValueError(f"states must be {k} distinct names, got {list(names)}")
        if isinstance(self.initial, str):
            if self.initial not in INITIALS:
                raise ValueError(
                    f"initial must be 'stationary', 'any' or a probability vector of length {k}, got "
                    f"{self.initial!r}"
                )
            q0 = stationary_distribution(m) if self.initial == "stationary" else np.full(k, 1.0 / k)
            if self.initial == "stationary" and _reversible(m):
                q0 = _reversible_stationary(m)
        else:
            q0 = np.array(self.initial, dtype=np.float64)
            if q0.shape != (k,) or not np.all(np.isfinite(q0)) or np.any(q0 < 0):
                raise ValueError(f"initial must be a probability vector of length {k}, got {self.initial!r}")
            if abs(float(q0.sum()) - 1.0) > STOCHASTIC_TOLERANCE:
                raise ValueError(f"initial must sum to 1 (within 1e-9), got a sum of {float(q0.sum())!r}")
            q0 = q0 / q0.sum()
        q0.setflags(write=False)
        object.__setattr__(self, "transition", m)
        object.__setattr__(self, "states", names)
        object.__setattr__(self, "initial_distribution", q0)

    @property
    def k(self) -> int:
        """The number of states."""
        return int(self.transition.shape[0])

    @property
    def stationary(self) -> bool:
        """Whether ``X_0`` follows the stationary distribution (so every ``X_t`` does)."""
        return isinstance(self.initial, str) and self.initial == "stationary"

    @property
    def time_reversible(self) -> bool:
        """Whether the chain, started at its stationary distribution, has the law of its time
        reversal ``(X_{T-1}, ..., X_0)`` exactly: a stationary start and a binary or exactly
        symmetric matrix (detailed balance ``pi_a P[a, b] = pi_b P[b, a]`` then holds exactly:
        for two states ``pi_0 P[0, 1] = pi_1 P[1, 0]`` is the balance of the flow between them,
        and a symmetric matrix has the uniform stationary distribution). A count is symmetric in
        time, so ``P(C | X_i = a) = P(C | X_{T-1-i} = a)``: half the times decide a scale
        (:func:`~.counts.count_scenario`). Other reversible chains are not detected (no float test
        of detailed balance is exact) and are checked at every time."""
        return self.stationary and _reversible(self.transition)

    @property
    def start_log_error(self) -> float:
        """A bound (nats) on ``|log initial_distribution[a] - log pi_a|`` for the exact stationary
        ``pi`` of a :attr:`time_reversible` chain, whose start is the closed form (``(P[1, 0],
        P[0, 1]) / (P[0, 1] + P[1, 0])``, two roundings; or ``1/k``, one): ``3 u``, ``u = 2^-53``.
        ``0`` for a given start. Other stationary starts are least-squares solutions: the priors
        are exact for that start, within about 1e-15 of stationary (not bounded here)."""
        return 3.0 * 2.0**-53 if self.time_reversible else 0.0

    @property
    def any_start(self) -> bool:
        """Whether the class is every initial distribution (Song et al. 2017): the chain's
        ``initial_distribution`` is then only the uniform representative."""
        return isinstance(self.initial, str) and self.initial == "any"

    def starts(self) -> tuple[MarkovChain, ...]:
        """The chains a scale is checked on: this chain, or for ``initial="any"`` the uniform start
        and, for every state ``s``, the start ``(1 - 0.01) e_s + 0.01 / k`` (near each vertex of
        the simplex; members of the class, not all of it: the check is not a certificate)."""
        if not self.any_start:
            return (self,)
        k = self.k
        out = [MarkovChain(self.transition, np.full(k, 1.0 / k), self.states)]
        for s in range(k):
            q0 = np.full(k, ANY_START_MIX / k)
            q0[s] += 1.0 - ANY_START_MIX
            out.append(MarkovChain(self.transition, q0, self.states))
        return tuple(out)

    def marginals(self, length: int) -> NDArray[np.float64]:
        """``P(X_t = a)`` for ``t = 0..length-1``, shape (length, k)."""
        out = np.empty((length, self.k))
        q = self.initial_distribution.copy()
        for t in range(length):
            out[t] = q
            q = q @ self.transition
        return out

    def describe(self) -> dict[str, Any]:
        """JSON-ready description."""
        return {
            "states": list(self.states),
            "transition": self.transition.tolist(),
            "initial": self.initial if isinstance(self.initial, str) else self.initial_distribution.tolist(),
            "initial_distribution": self.initial_distribution.tolist(),
        }


def stationary_distribution(transition: NDArray[np.float64]) -> NDArray[np.float64]:
    """The unique stationary distribution ``pi = pi P`` of a row-stochastic matrix.

    Solved as the least-squares solution of ``(P^T - I) pi = 0``, ``sum pi = 1``, then clipped at
    0 and renormalised (entries below 1e-15 of a true zero).

    Raises
    ------
    ValueError
        If it is not unique: ``P^T - I`` has rank below ``k - 1`` (several closed classes, e.g.
        the identity matrix).
    """
    k = transition.shape[0]
    a = transition.T - np.eye(k)
    if np.linalg.matrix_rank(a, tol=1e-10) < k - 1:
        raise ValueError(
            "initial='stationary' needs a unique stationary distribution; this transition matrix has "
            "several closed classes: give initial as a probability vector"
        )
    system = np.vstack([a, np.ones((1, k))])
    rhs = np.zeros(k + 1)
    rhs[-1] = 1.0
    pi, *_ = np.linalg.lstsq(system, rhs, rcond=None)
    pi = np.clip(pi, 0.0, None)
    total = float(pi.sum())
    if not (total > 0 and math.isfinite(total)):  # pragma: no cover - rank checked above
        raise ValueError("no stationary distribution found")
    return np.asarray(pi / total, dtype=np.float64)


def _reversible(transition: NDArray[np.float64]) -> bool:
    """A binary matrix, or an exactly symmetric one (see :attr:`MarkovChain.time_reversible`)."""
    return bool(transition.shape[0] == 2 or np.array_equal(transition, transition.T))


def _reversible_stationary(transition: NDArray[np.float64]) -> NDArray[np.float64]:
    """The stationary distribution of a binary or symmetric matrix in closed form (the rank of
    ``P^T - I`` is checked by :func:`stationary_distribution` first)."""
    k = transition.shape[0]
    if k == 2:
        flow = float(transition[0, 1] + transition[1, 0])
        return np.array([transition[1, 0] / flow, transition[0, 1] / flow], dtype=np.float64)
    return np.full(k, 1.0 / k)


def binary_interval_chains(low: float, high: float, steps: int = 5) -> tuple[MarkovChain, ...]:
    """Binary chains with ``P(0 -> 1)`` and ``P(1 -> 0)`` on a ``steps x steps`` grid of
    ``[low, high]`` (stationary starts): the chains an interval class is checked on.

    Parameters
    ----------
    low, high : float
        ``0 < low <= high < 1``.
    steps : int
        Grid points per probability (>= 2; 1 when ``low == high``).

    Raises
    ------
    ValueError
        If the interval is not inside (0, 1) or ``steps < 2``.
    """
    lo, hi = float(low), float(high)
    if not (0.0 < lo <= hi < 1.0):
        raise ValueError(f"the interval must satisfy 0 < low <= high < 1, got [{low!r}, {high!r}]")
    if isinstance(steps, bool) or int(steps) < 2:
        raise ValueError(f"steps must be an integer >= 2, got {steps!r}")
    grid = np.unique(np.linspace(lo, hi, int(steps)))
    return tuple(MarkovChain([[1 - a, a], [b, 1 - b]]) for a in grid for b in grid)


def interval_class_bounds(low: float, high: float) -> tuple[float, float]:
    """``(g, pi_min)``: the smallest eigengap and the smallest stationary probability over every
    binary chain with ``P(0 -> 1) = a`` and ``P(1 -> 0) = b`` in ``[low, high]``.

    The eigenvalues are 1 and ``1 - a - b``, so the gap ``1 - |1 - a - b|`` is smallest where
    ``a + b`` is at an end, ``2 low`` or ``2 high``; the stationary distribution is
    ``(b, a) / (a + b)``, whose smaller entry ``min(a, b) / (a + b)`` is smallest at
    ``(low, high)``: ``low / (low + high)``. These bound MQMApprox over the whole class (Song et al.
    2017, sec 4.3: the bound needs only ``g_Theta`` and ``pi_Theta``).
    """
    gap = min(1.0 - abs(1.0 - 2.0 * low), 1.0 - abs(1.0 - 2.0 * high))
    return gap, low / (low + high)
