"""Prior sets on the joint alphabet of several columns: an L1 ball around each secret's empirical
joint distribution (issue 31).

The adversary may hold any prior ``P`` on the alphabet ``A`` (the distinct tuples of the rows of
the pairs' secrets) with ``||P - P_hat||_1 <= r``, ``r`` the radius of Weissman, Ordentlich,
Seroussi, Verdu and Weinberger (2003), Thm 2.1, at the stated confidence
(:func:`pufferfish.priors.sets.l1_radius` with ``k = |A|``). A CDF band (``dkw``) has no form on a
product of columns, so on several columns both ``--prior-set dkw`` and ``l1`` give this ball (the
result says which was asked for). The exact worst case of the product channel over two balls is
:func:`pufferfish.loss.balls.ball_loss`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pufferfish.priors.bands import JointBand, same_domain
from pufferfish.priors.distributions import to_grid
from pufferfish.priors.joint import JointPrior
from pufferfish.priors.sets import l1_radius


@dataclass(frozen=True, eq=False)
class JointBall:
    """Every prior on the alphabet ``A`` within L1 distance ``radius`` of a joint prior.

    Attributes
    ----------
    alphabet : numpy.ndarray, shape (k, d)
        Distinct tuples, sorted lexicographically, holding the center's support.
    center : JointPrior
        The estimate (the empirical joint distribution of the secret's rows).
    radius : float
        ``r >= 0``, the L1 radius (``r / 2`` of the mass may move).
    confidence : float or None
        The confidence the radius was computed for, or None when given directly.
    requested : {"l1", "dkw"}
        The prior set asked for (``dkw`` on several columns is this L1 ball).

    Raises
    ------
    ValueError
        If the alphabet is not distinct tuples of the center's dimension holding its support, or
        the radius is not finite and >= 0.
    """

    alphabet: NDArray[np.float64]
    center: JointPrior
    radius: float
    confidence: float | None = None
    requested: str = "l1"

    def __post_init__(self) -> None:
        a = np.unique(np.asarray(self.alphabet, dtype=np.float64), axis=0)
        if a.ndim != 2 or a.shape[1] != self.center.dimension or a.shape[0] != len(self.alphabet):
            raise ValueError(f"alphabet must be distinct tuples of {self.center.dimension} columns")
        pos = _rows_in(a, self.center.support)
        if (pos < 0).any():
            raise ValueError("alphabet must hold every tuple of the center's support")
        r = float(self.radius)
        if not (math.isfinite(r) and r >= 0):
            raise ValueError(f"radius must be finite and >= 0, got {self.radius!r}")
        if self.requested not in ("l1", "dkw"):
            raise ValueError(f"requested must be 'l1' or 'dkw', got {self.requested!r}")
        a.setflags(write=False)
        object.__setattr__(self, "alphabet", a)
        object.__setattr__(self, "radius", r)

    @property
    def kind(self) -> str:
        """``"l1"``: the distance of the set (as :attr:`pufferfish.priors.sets.PriorSet.kind`)."""
        return "l1"

    def mass(self) -> NDArray[np.float64]:
        """The center's pmf on :attr:`alphabet`, shape (k,)."""
        out = np.zeros(self.alphabet.shape[0])
        out[_rows_in(self.alphabet, self.center.support)] = self.center.pmf
        return out

    def on_grid(self, exponents: tuple[int, ...]) -> JointBall:
        """The ball of the same radius around the center rounded to the sampler grids
        (:func:`pufferfish.priors.distributions.to_grid` per column, tuples that meet merged): rounding pushes
        every prior of this ball into that ball (a push-forward never increases L1 distance)."""
        moved = np.column_stack([to_grid(self.alphabet[:, k], e) for k, e in enumerate(exponents)])
        pushed = self.center.on_grid(exponents)  # the conditional's own push (Scenario.on_grid)
        return JointBall(np.unique(moved, axis=0), pushed, self.radius, self.confidence, self.requested)


def _rows_in(alphabet: NDArray[np.float64], rows: NDArray[np.float64]) -> NDArray[np.intp]:
    """Index of each row of ``rows`` in the sorted distinct ``alphabet`` (-1 when absent)."""
    both = np.concatenate([alphabet, rows])
    _, inverse = np.unique(both, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    lookup = np.full(alphabet.shape[0] + rows.shape[0], -1, dtype=np.intp)
    lookup[inverse[: alphabet.shape[0]]] = np.arange(alphabet.shape[0])
    return lookup[inverse[alphabet.shape[0] :]]


def joint_balls(
    conditionals: Mapping[str, JointPrior],
    sizes: Mapping[str, float],
    *,
    confidence: float = 0.95,
    requested: str = "l1",
    radius: float | None = None,
) -> dict[str, JointBall]:
    """One L1 ball per secret on the union of the supports, at ``confidence``.

    Parameters
    ----------
    conditionals : mapping of str to JointPrior
        The empirical joint prior of each secret of the pairs (``m`` secrets).
    sizes : mapping of str to float
        Rows of each secret's group (> 0), or Kish's effective size with weights.
    confidence : float
        In (0, 1): each radius is :func:`pufferfish.priors.sets.l1_radius` ``(n, |A|, confidence,
        m)`` (union bound over the ``m`` secrets).
    requested : {"l1", "dkw"}
        What was asked for (both give this ball on several columns).
    radius : float, optional
        A radius for every secret instead (then no confidence is stated).

    Returns
    -------
    dict of str to JointBall

    Raises
    ------
    ValueError
        If a secret lacks a size, or an argument is out of range.
    """
    alphabet = np.unique(np.concatenate([p.support for p in conditionals.values()]), axis=0)
    k = max(alphabet.shape[0], 2)
    out = {}
    for s, p in conditionals.items():
        if s not in sizes:
            raise ValueError(f"sizes must give the rows of secret {s!r}")
        r = radius if radius is not None else l1_radius(sizes[s], k, confidence, len(conditionals))
        out[s] = JointBall(alphabet, p, r, None if radius is not None else confidence, requested)
    return out


def check_balls(balls: Mapping[str, Any], conditionals: Mapping[str, Any]) -> dict[str, Any]:
    """The sets of one adversary on joint priors, checked against its joint conditionals: one per
    secret, all L1 balls on one alphabet or all DKW bands on one declared domain
    (:class:`pufferfish.priors.bands.JointBand`), each centred on its secret's prior.

    Raises
    ------
    ValueError, TypeError
        If a secret lacks a set or a set breaks a rule above.
    """
    out = dict(balls)
    if set(out) != set(conditionals):
        raise ValueError(f"sets must give a ball for each secret {sorted(conditionals)}, got {sorted(out)}")
    first = next(iter(out.values()))
    kind = type(first) if isinstance(first, (JointBall, JointBand)) else JointBall
    for s, ball in out.items():
        if not isinstance(ball, kind):
            raise TypeError(f"sets[{s!r}] must be a {kind.__name__}, got {type(ball).__name__}")
        if isinstance(ball, JointBand) and not same_domain(ball, first):
            raise ValueError("joint bands must share one domain")
        if isinstance(ball, JointBall) and not np.array_equal(ball.alphabet, first.alphabet):
            raise ValueError("joint balls must share one alphabet")
        prior = conditionals[s]
        same = ball.center.support.shape == prior.support.shape and np.array_equal(
            ball.center.support, prior.support
        )
        if not same or np.max(np.abs(ball.center.pmf - prior.pmf)) > 1e-9:
            raise ValueError(f"sets[{s!r}] must be centred on the prior of {s!r}")
    return out
