"""The confidence set of an estimated chain as a set: every transition matrix whose rows lie in L1
balls around the estimated rows, and bounds on how every chain of it mixes, certified over the
whole (infinite) set.

The set (:mod:`.estimate`, Weissman et al. 2003 Thm 2.1 with a union bound over the rows) is

    C = {P row-stochastic : ||P_a - P^_a||_1 <= r_a for every row a}.

What a certified Markov quilt mechanism needs over ``C`` (Song, Wang and Chaudhuri, SIGMOD 2017,
arXiv 1603.03977, sec 4.3: MQMApprox needs only a bound on how fast every chain of the class
forgets its start and a lower bound on its stationary probabilities) is derived here from the
estimate alone, with ``r = max_a r_a`` and ``d(Q) = max_{u,v} (1/2) ||Q_u - Q_v||_1`` the
Dobrushin coefficient of a stochastic matrix (Seneta, "Non-negative Matrices and Markov Chains",
2006, sec 3.1 and 4.3: ``||w Q||_1 <= d(Q) ||w||_1`` for every row vector ``w`` summing to 0,
and ``d(A B) <= d(A) d(B)``):

1. ``P^m - P^^m = sum_{j<m} P^j (P - P^) P^^{m-1-j}``. A row of ``P^j (P - P^)`` is a mixture of
   rows of ``P - P^``: it sums to 0 and its L1 norm is at most ``r``; the factor ``P^^n`` then
   contracts it by ``d(P^^n)``. So ``||P^m_u - P^^m_u||_1 <= r S_m`` with
   ``S_m = sum_{n<m} d(P^^n)`` (``d(P^^0) = 1``).
2. Hence ``d(P^m) <= D_m = min(1, d(P^^m) + r S_m)`` (the triangle inequality on both rows), and
   by submultiplicativity ``d(P^n) <= tau_n``, with ``tau_0 = 1`` and
   ``tau_n = min_{1 <= m <= min(n, m_max)} D_m tau_{n-m}``.
3. ``pi = pi P^n``, so ``P^n_s - pi`` is a mixture of the zero-sum vectors ``P^n_s - P^n_u``: each
   entry ``|P^n(s, z) - pi(z)| <= tau_n`` (an entry of a zero-sum vector is at most half its L1
   norm).
4. ``pi(z) = sum_u pi(u) P^m(u, z) >= min_u P^m(u, z) >= min_u P^^m(u, z) - r S_m / 2``: the
   lower bound ``pi_low(z)`` is the largest of these over ``m``.

Every bound holds for every chain of ``C`` at once: none is computed from a chain other than the
estimate.

Rounding: ``P^^n`` is computed by ``n`` products of ``k x k`` non-negative matrices whose rows sum
to 1; a product's row moves by at most ``gamma_k = k u / (1 - k u)`` in L1 (``u = 2^-53``), so the
computed power is within ``err_n = (n + 2) 2 gamma_k`` of the exact one in every row (the estimate's
own rows, each divided by its exact sum, are within ``k u`` of the floats; the ``+ 2`` covers it and
the sums of the coefficients): every ``d(P^^n)`` is raised and every ``min_u P^^m(u, z)`` lowered by
``err_n``.

Points of the set are drawn by :func:`ball_points` (an attack and the tests: vertices of every
row at once, interior points, mass moved to transitions never seen); :func:`in_row_balls` says
whether a matrix is in the set.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

#: Largest ``m`` whose ``D_m`` is computed (longer distances by submultiplicativity).
MAX_POWER = 64

#: Largest work ``m_max k^3`` (floating operations) the powers and coefficients may take.
MAX_WORK = 4e9

_U = 2.0**-53


@dataclass(frozen=True)
class MixingBounds:
    """How every chain of a :class:`RowBalls` set forgets its start (module docstring).

    Attributes
    ----------
    tau : numpy.ndarray, shape (reach + 1,)
        ``tau[n]`` bounds ``|P^n(s, z) - pi(z)|`` (and ``d(P^n)``) for every chain of the set, every
        ``s`` and ``z``; non-increasing, ``tau[0] = 1``, in [0, 1].
    pi_low : numpy.ndarray, shape (k,)
        A lower bound of each stationary probability over the set (0 where none is known).
    powers : int
        The ``m_max`` of step 2.
    """

    tau: NDArray[np.float64]
    pi_low: NDArray[np.float64]
    powers: int


@dataclass(frozen=True)
class RowBalls:
    """The set ``{P : ||P_a - P^_a||_1 <= r_a for every row a}`` (module docstring).

    Parameters
    ----------
    center : array_like, shape (k, k)
        The estimate ``P^``: non-negative rows summing to 1 (within 1e-9).
    radii : array_like, shape (k,)
        ``r_a >= 0`` (finite).
    confidence : float
        The confidence the radii were drawn for, in (0, 1) (for the words only).

    Raises
    ------
    ValueError
        If the shapes disagree, a radius is negative or not finite, or ``center`` is not
        row-stochastic.
    """

    center: NDArray[np.float64]
    radii: NDArray[np.float64]
    confidence: float = 0.95
    _cache: dict[int, MixingBounds] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        center = np.array(self.center, dtype=np.float64)
        radii = np.array(self.radii, dtype=np.float64).reshape(-1)
        if center.ndim != 2 or center.shape[0] != center.shape[1] or center.shape[0] < 2:
            raise ValueError(f"center must be a k x k matrix with k >= 2, got shape {center.shape}")
        if radii.shape != (center.shape[0],):
            raise ValueError(f"radii must hold one radius per row ({center.shape[0]}), got {radii.shape[0]}")
        if not np.all(np.isfinite(radii)) or np.any(radii < 0):
            raise ValueError(f"radii must be finite and >= 0, got {radii.tolist()}")
        if (
            np.any(~np.isfinite(center))
            or np.any(center < 0)
            or np.any(np.abs(center.sum(axis=1) - 1) > 1e-9)
        ):
            raise ValueError("center must be row-stochastic (non-negative rows summing to 1)")
        if not 0.0 < float(self.confidence) < 1.0:
            raise ValueError(f"confidence must be in (0, 1), got {self.confidence!r}")
        center.setflags(write=False)
        radii.setflags(write=False)
        object.__setattr__(self, "center", center)
        object.__setattr__(self, "radii", radii)

    @property
    def k(self) -> int:
        """The number of states."""
        return int(self.center.shape[0])

    def bounds(self, reach: int) -> MixingBounds:
        """:class:`MixingBounds` up to distance ``reach`` (>= 1), computed once per reach."""
        reach = max(1, int(reach))
        found = self._cache.get(reach)
        if found is None:
            found = mixing_bounds(self.center, self.radii, reach)
            self._cache[reach] = found
        return found

    def describe(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"radii": self.radii.tolist(), "confidence": float(self.confidence)}


def _dobrushin(q: NDArray[np.float64]) -> float:
    """``max_{u,v} (1/2) ||q_u - q_v||_1`` (rows compared in blocks: at most about 2^24 floats)."""
    k = q.shape[0]
    step = max(1, (1 << 24) // (k * k))
    best = 0.0
    for lo in range(0, k, step):
        block = q[lo : lo + step]
        best = max(best, float(np.abs(block[:, None, :] - q[None, :, :]).sum(axis=2).max()) / 2.0)
    return best


def mixing_bounds(center: NDArray[np.float64], radii: NDArray[np.float64], reach: int) -> MixingBounds:
    """Steps 1-4 of the module docstring for every chain of the row balls, up to ``reach``.

    Parameters
    ----------
    center : numpy.ndarray, shape (k, k)
        Row-stochastic.
    radii : numpy.ndarray, shape (k,)
        Non-negative.
    reach : int
        The largest distance ``n`` of ``tau[n]`` (>= 1).

    Returns
    -------
    MixingBounds
    """
    k = center.shape[0]
    r = float(np.max(radii))
    gamma = k * _U / (1.0 - k * _U)
    m_max = int(max(1, min(MAX_POWER, reach, MAX_WORK // float(k) ** 3)))
    power = np.eye(k)
    d_hat = np.ones(m_max + 1)  # d(P^^n), raised by the rounding bound
    pi_low = np.zeros(k)
    partial = np.zeros(m_max + 1)  # S_m = sum_{n < m} d(P^^n)
    for m in range(1, m_max + 1):
        power = power @ center
        err = (m + 2) * 2.0 * gamma
        partial[m] = partial[m - 1] + d_hat[m - 1]
        d_hat[m] = min(1.0, _dobrushin(power) + err)
        pi_low = np.maximum(pi_low, power.min(axis=0) - err - r * partial[m] / 2.0)
    big = np.minimum(1.0, d_hat + r * partial)  # D_m; D_0 is unused
    tau = np.ones(reach + 1)
    for n in range(1, reach + 1):
        ms = np.arange(1, min(n, m_max) + 1)
        tau[n] = min(tau[n - 1], float(np.min(big[ms] * tau[n - ms])))  # d(P^n) <= d(P^{n-1})
    return MixingBounds(tau, np.maximum(pi_low, 0.0), m_max)


def in_row_balls(balls: RowBalls, transition: NDArray[np.float64], slack: float = 1e-12) -> bool:
    """Whether ``transition`` is row-stochastic with every row within its radius (plus ``slack``)."""
    m = np.asarray(transition, dtype=np.float64)
    if m.shape != balls.center.shape or np.any(m < 0) or np.any(np.abs(m.sum(axis=1) - 1) > 1e-9):
        return False
    return bool(np.all(np.abs(m - balls.center).sum(axis=1) <= balls.radii + slack))


def ball_points(
    balls: RowBalls, count: int, rng: np.random.Generator, kind: str = "mixed"
) -> list[NDArray[np.float64]]:
    """``count`` transition matrices of the set, every row moved at once.

    Parameters
    ----------
    balls : RowBalls
    count : int
        How many (>= 0).
    rng : numpy.random.Generator
        Simulation randomness (an attack's starts; never noise).
    kind : {"vertex", "interior", "unseen", "mixed"}
        ``vertex``: each row moves ``min(r_a / 2, P^(a, c))`` from a random state ``c`` to another
        (a vertex of its ball, or of the ball cut by the simplex); ``interior``: a random fraction
        of the way to the boundary along a random zero-sum direction; ``unseen``: each row moves
        to the boundary giving mass to the transitions never seen (estimated 0) where it has
        some, else along a random direction; ``mixed``: a third of each.

    Returns
    -------
    list of numpy.ndarray, each (k, k), each inside the set (:func:`in_row_balls`).
    """
    out: list[NDArray[np.float64]] = []
    kinds = ("vertex", "interior", "unseen")
    for j in range(int(count)):
        how = kinds[j % 3] if kind == "mixed" else kind
        m = balls.center.copy()
        for a in range(balls.k):
            m[a] = _moved_row(balls.center[a], float(balls.radii[a]), how, rng)
        out.append(m)
    return out


def _moved_row(
    row: NDArray[np.float64], radius: float, how: str, rng: np.random.Generator
) -> NDArray[np.float64]:
    """One row moved inside its ball and the simplex (:func:`ball_points`).

    A vertex of the ball (in the simplex) moves ``min(radius / 2, row[c])`` from a state ``c`` to
    a state ``b``; an interior point moves a random fraction of the way along a random zero-sum
    direction; an unseen move gives mass to the transitions estimated 0."""
    k = row.size
    if how == "vertex":
        donors = np.flatnonzero(row > 0)
        c = int(rng.choice(donors))
        b = int(rng.choice([j for j in range(k) if j != c]))
        moved = row.copy()
        step = min(radius / 2.0, float(row[c]))
        moved[c] -= step
        moved[b] += step
        return np.maximum(moved, 0.0) / np.maximum(moved, 0.0).sum()
    if how == "unseen" and np.any(row == 0):
        direction = -row.copy()
        zeros = np.flatnonzero(row == 0)
        direction[zeros] = rng.dirichlet(np.ones(zeros.size)) * row.sum()
    else:
        direction = rng.standard_normal(k)
        direction -= direction.mean()
    length = float(np.abs(direction).sum())
    if length == 0.0:
        return row.copy()
    direction /= length  # L1 norm 1
    step = radius
    falling = direction < 0
    if np.any(falling):
        step = min(step, float(np.min(row[falling] / -direction[falling])))
    if how == "interior":
        step *= float(rng.random())
    moved = np.maximum(row + step * direction, 0.0)
    return moved / moved.sum()
