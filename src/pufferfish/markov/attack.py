"""A worst-chain search over a confidence set of row balls: an attack on a scale, never a certificate.

A scale checked on a list of chains of a set may fail on other chains of it (the loss of a count
is not largest at the vertices of the balls, nor at the listed moves). The search looks for the
chain of the set whose exact loss (:func:`~.audit.audit_scale`, SPEC sec 2.1) at a given scale
is largest: it starts from the listed chains' worst and from points of the set that move every
row at once (:func:`~.rowballs.ball_points`: vertices, interior points, mass moved to unseen
transitions), then climbs: from the best chain found it steps part of the way towards random
points of the set (the set is convex, so every step stays inside), halving the step after a
round without gain. What it reports is a lower bound of the set's worst loss: a loss above
epsilon disproves a guarantee; a loss below proves nothing (the certificate is the theorem of
:func:`~.quilts.row_balls_sigma`, or group DP).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pufferfish.markov.audit import audit_scale
from pufferfish.markov.chain import MarkovChain
from pufferfish.markov.counts import CountModel, NoPairError
from pufferfish.markov.rowballs import ball_points, in_row_balls

#: Exact-loss evaluations an attack spends by default (each is one chain's count priors).
ATTACK_EVALUATIONS = 48

#: Most states a default attack runs on (:func:`pufferfish.markov.release.calibrate_series`).
ATTACK_MAX_STATES = 32


@dataclass(frozen=True)
class ChainAttack:
    """The worst chain a search found in the set, at one scale.

    Attributes
    ----------
    scale : float
        The Laplace scale attacked (query units).
    loss : float
        The largest exact loss found (nats; ``inf`` possible), a lower bound of the set's worst.
    transition : numpy.ndarray, shape (k, k)
        The chain where it was found (inside the set).
    time : int
        The time of the secret.
    pair : (str, str)
        The pair of states.
    evaluations : int
        Chains whose loss was computed.
    """

    scale: float
    loss: float
    transition: NDArray[np.float64]
    time: int
    pair: tuple[str, str]
    evaluations: int

    def to_dict(self, epsilon: float) -> dict[str, Any]:
        """JSON-ready, with whether the loss found exceeds ``epsilon``."""
        return {
            "scale": self.scale,
            "worst_loss_found": self.loss if np.isfinite(self.loss) else "inf",
            "above_epsilon": bool(self.loss > epsilon),
            "chain": self.transition.tolist(),
            "time": self.time,
            "pair": list(self.pair),
            "evaluations": self.evaluations,
            "what": "a worst-chain search over the set (an attack: a lower bound of the worst loss, not a "
            "certificate)",
        }


def attack_scale(
    model: CountModel,
    scale: float,
    *,
    evaluations: int = ATTACK_EVALUATIONS,
    rng: np.random.Generator | int | None = 0,
) -> ChainAttack:
    """Search the row balls of ``model`` for the chain of largest exact loss at ``scale``.

    Parameters
    ----------
    model : CountModel
        With ``row_balls`` (:mod:`.rowballs`) and its listed chains (their starts: stationary, or
        the given initial distribution, kept for every chain tried).
    scale : float
        Laplace scale, finite and > 0 (query units).
    evaluations : int
        How many chains' losses to compute (>= 1).
    rng : numpy.random.Generator, int or None
        Simulation randomness for the search (never noise; default seed 0: the same search each run).

    Returns
    -------
    ChainAttack

    Raises
    ------
    ValueError
        Without ``row_balls``, or a scale that is not finite and > 0.
    """
    balls = model.row_balls
    if balls is None:
        raise ValueError("an attack over a set needs a model with row_balls")
    if not (isinstance(scale, (int, float)) and 0.0 < float(scale) < np.inf):
        raise ValueError(f"scale must be finite and > 0, got {scale!r}")
    gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    first = model.chains[0]
    start: Any = "stationary" if first.stationary else first.initial_distribution
    one = replace(model, chains=(first,), row_balls=None)
    best: ChainAttack | None = None
    spent = 0

    def evaluate(m: NDArray[np.float64]) -> None:
        nonlocal best, spent
        spent += 1
        try:
            audit = audit_scale(replace(one, chains=(MarkovChain(m, start, first.states),)), float(scale))
        except (ValueError, NoPairError):  # a chain without a unique start, or no pair: not a member tried
            return
        if best is None or audit.loss > best.loss:
            best = ChainAttack(float(scale), audit.loss, m, audit.worst.time, audit.worst.pair, spent)

    budget = max(1, int(evaluations))
    opening = max(1, budget // 2)
    evaluate(first.transition.copy())
    for m in ball_points(balls, opening - 1, gen):
        evaluate(m)
    step = 0.5
    for _ in range(2 * budget):  # a round may try nothing (a step out of the set): bounded anyway
        if spent >= budget or best is None:
            break
        before = best.loss
        for target in ball_points(balls, 2, gen):
            moved = best.transition + step * (target - best.transition)
            moved = np.maximum(moved, 0.0)
            moved /= moved.sum(axis=1, keepdims=True)
            if in_row_balls(balls, moved) and spent < budget:
                evaluate(moved)
        if best.loss <= before:
            step /= 2.0
    if best is None:
        raise NoPairError()
    return replace(best, evaluations=spent)
