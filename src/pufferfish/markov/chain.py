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
from fractions import Fraction
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
        The distribution of ``X_0``: the chain's stationary distribution (it must be unique;
        every entry to the nearest float, transient states exactly 0,
        :func:`stationary_distribution`),
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
    log_initial_distribution : numpy.ndarray, shape (k,)
        Its logarithms (``-inf`` where it is 0), what the priors are computed from: for a
        stationary start, computed from the exact value (:func:`stationary_with_logs`), so a
        state whose stationary probability is below the smallest float keeps a finite log.
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
    >>> chain.initial_distribution.tolist()  # each entry the float nearest the exact value
    [0.5, 0.5]
    """

    transition: Any
    initial: Any = "stationary"
    states: Any = None
    initial_distribution: NDArray[np.float64] = field(init=False)
    log_initial_distribution: NDArray[np.float64] = field(init=False, repr=False)

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
            if self.initial == "stationary":
                q0, log_q0 = stationary_with_logs(m)
            else:
                q0 = np.full(k, 1.0 / k)
        else:
            q0 = np.array(self.initial, dtype=np.float64)
            if q0.shape != (k,) or not np.all(np.isfinite(q0)) or np.any(q0 < 0):
                raise ValueError(f"initial must be a probability vector of length {k}, got {self.initial!r}")
            if abs(float(q0.sum()) - 1.0) > STOCHASTIC_TOLERANCE:
                raise ValueError(f"initial must sum to 1 (within 1e-9), got a sum of {float(q0.sum())!r}")
            q0 = q0 / q0.sum()
        if not self.stationary:
            with np.errstate(divide="ignore"):
                log_q0 = np.log(q0)
        q0.setflags(write=False)
        log_q0.setflags(write=False)
        object.__setattr__(self, "log_initial_distribution", log_q0)
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
        """A bound (nats) on ``|log_initial_distribution[a] - log pi_a|`` for the exact
        stationary ``pi`` of the matrix as given: ``3 u (1 + max_a |log pi_a|)``, ``u = 2^-53``
        (:func:`stationary_with_logs`; exact zeros stay zeros). ``0`` for a given start or the
        uniform one of ``initial="any"`` (their logs are within the rounding the priors'
        bound already counts)."""
        if not self.stationary:
            return 0.0
        finite = self.log_initial_distribution[np.isfinite(self.log_initial_distribution)]
        return 3.0 * 2.0**-53 * (1.0 + float(np.max(np.abs(finite))))

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
    """The unique stationary distribution ``pi = pi P`` of a row-stochastic matrix, each entry
    the float nearest the exact ``pi_a`` of the matrix as given (relative error ``<= 2^-53`` in
    every entry, however small), and exactly 0 on the transient states.

    Parameters
    ----------
    transition : numpy.ndarray, shape (k, k)
        Row-stochastic; each row is divided by its exact sum (the off-diagonal entries of the
        rows so divided decide ``pi``).

    Returns
    -------
    numpy.ndarray, shape (k,)
        ``pi``; it sums to 1 within ``k 2^-53`` (not renormalised: renormalising would move
        every entry by that much).

    Raises
    ------
    ValueError
        If it is not unique: the chain has several closed classes (e.g. the identity matrix).

    Notes
    -----
    The chain is the matrix as given with each row divided by its exact sum (see
    :func:`row_sum_log_error`). The states are split into communicating classes from the zero
    pattern of the matrix (an exact
    graph computation, :func:`scipy.sparse.csgraph.connected_components`); a unique stationary
    distribution exists iff exactly one class is closed, and it vanishes off that class (the
    transient states: exact zeros, never ``1e-16``). On the closed class it is computed by the
    Grassmann-Taksar-Heyman state reduction (GTH; Grassmann, Taksar and Heyman, "Regenerative
    analysis and steady state distributions for Markov chains", Operations Research 33, 1985),
    which uses no subtraction, here in exact rational arithmetic (:class:`fractions.Fraction`; a
    float is a dyadic rational, so the input is exact): the only rounding is the final
    conversion of each ``pi_a`` to the nearest float, so ``|log pi_hat_a - log pi_a| <= -log(1 -
    2^-53)``, below :attr:`MarkovChain.start_log_error`. Cost: ``k^3 / 3`` rational operations
    on numbers of at most about ``k`` times the bits of an entry (k = 8: milliseconds). A
    least-squares solution has an absolute error near ``1e-16`` instead: a relative error of
    17% at ``pi_a = 1e-15``, and a state of probability ``1e-16`` dropped or a transient state
    given ``2e-16`` (issue 43).
    """
    return stationary_with_logs(transition)[0]


def stationary_with_logs(
    transition: NDArray[np.float64],
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """:func:`stationary_distribution` and the logarithms of its entries, each within ``3 u (1 +
    |log pi_a|)`` of the exact ``log pi_a`` (``u = 2^-53``) even where ``pi_a`` is below the
    smallest float (a state of stationary probability ``1e-339`` is a state, and a secret, all
    the same: its float is 0, its log is about -780); ``-inf`` exactly on the transient states.

    Raises
    ------
    ValueError
        If the stationary distribution is not unique.
    """
    m = np.asarray(transition, dtype=np.float64)
    k = m.shape[0]
    closed = _closed_class(m)
    pi = np.zeros(k, dtype=np.float64)
    log_pi = np.full(k, -np.inf, dtype=np.float64)
    if closed.size == 1:
        pi[closed[0]] = 1.0
        log_pi[closed[0]] = 0.0
        return pi, log_pi
    # the chain of the matrix as given: each row divided by its exact sum (a row of floats
    # rarely sums to 1 exactly; :func:`row_sum_log_error` bounds the difference)
    sums = {a: _exact_sum(m[a]) for a in closed}  # once a row (was once an entry: k^3 work)
    sub = [[Fraction(float(m[a, b])) / sums[a] for b in closed] for a in closed]
    n = len(sub)
    # state reduction: censor the chain on states 0..last-1, one state at a time
    for last in range(n - 1, 0, -1):
        out = sum(sub[last][:last], Fraction(0))  # > 0: the class is irreducible
        for i in range(last):
            sub[i][last] /= out
        for i in range(last):
            lift = sub[i][last]
            if lift:
                row, src = sub[i], sub[last]
                for j in range(last):
                    if src[j]:
                        row[j] += lift * src[j]
    weights = [Fraction(1)]
    for last in range(1, n):
        weights.append(sum((weights[i] * sub[i][last] for i in range(last)), Fraction(0)))
    total = sum(weights, Fraction(0))
    for a, w in zip(closed, weights, strict=True):
        share = w / total
        pi[a] = share.numerator / share.denominator  # int / int: correctly rounded
        log_pi[a] = _log_fraction(share)
    return pi, log_pi


def _log_fraction(x: Fraction) -> float:
    """``log x`` of a positive rational, within ``3 u (1 + |log x|)`` (``u = 2^-53``), however
    small ``x`` is (no underflow): ``x = r 2^e`` with ``r`` in ``[1/2, 2)`` rounded once, then
    ``log r + e log 2``."""
    e = x.numerator.bit_length() - x.denominator.bit_length()
    r = x / (Fraction(2) ** e)
    return math.log(r.numerator / r.denominator) + e * math.log(2.0)


def row_sum_log_error(transition: NDArray[np.float64]) -> float:
    """``max_a |log S_a|``, ``S_a`` the exact sum of row ``a`` of the float matrix (nats, a bound
    rounded up).

    The model of a :class:`MarkovChain` is the float matrix with each row divided by its exact
    sum ``S_a`` (a stochastic matrix in the reals); the floats themselves are each within a factor
    ``S_a`` of it, so a probability of a path of ``n`` transitions computed from the floats is
    within ``n max_a |log S_a|`` nats of the model's (a few ``2^-53`` per step after the
    renormalisation of :class:`MarkovChain`).
    """
    worst = 0.0
    for row in np.asarray(transition, dtype=np.float64):
        worst = max(worst, abs(float(_exact_sum(row) - 1)))  # |S_a - 1|, to within a relative 2^-53
    # |log S| <= |S - 1| / (1 - |S - 1|); doubled for the roundings of defect (<< 1 here)
    return 2.0 * worst / (1.0 - worst) if worst < 0.5 else math.inf


def _exact_sum(row: NDArray[np.float64]) -> Fraction:
    """The exact sum of a row of floats (each a dyadic rational)."""
    return sum((Fraction(float(x)) for x in row), Fraction(0))


def _closed_class(transition: NDArray[np.float64]) -> NDArray[np.int64]:
    """The states of the unique closed communicating class (sorted), from the zero pattern.

    Raises
    ------
    ValueError
        If several classes are closed.
    """
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    edges = transition > 0
    count, labels = connected_components(csr_matrix(edges), directed=True, connection="strong")
    closed = [c for c in range(count) if not edges[np.ix_(labels == c, labels != c)].any()]
    if len(closed) != 1:
        raise ValueError(
            "initial='stationary' needs a unique stationary distribution; this transition matrix has "
            f"several closed classes ({len(closed)}): give initial as a probability vector"
        )
    return np.flatnonzero(labels == closed[0]).astype(np.int64)


def _reversible(transition: NDArray[np.float64]) -> bool:
    """A binary matrix, or an exactly symmetric one (see :attr:`MarkovChain.time_reversible`)."""
    return bool(transition.shape[0] == 2 or np.array_equal(transition, transition.T))


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
