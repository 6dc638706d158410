"""What a given Laplace scale guarantees on a chain: the exact pufferfish loss, with the worst time
and pair (issue 30, "audit a given scale").

A differentially private count adds ``Laplace(1 / eps_DP)``, which protects each ``X_t`` only as
if the steps were independent. When the series is a Markov chain the adversary who knows the chain
learns more: the exact loss of the release ``C + Laplace(B)`` for the secrets ``X_i = a`` against
``X_i = b`` is the largest over times, pairs and released values of ``|log P(y | X_i = a) - log
P(y | X_i = b)|``, computed here by the exact check of SPEC sec 2.1 on the count priors of
:func:`~.counts.count_priors`. Cao, Yoshikawa, Xiao and Xiong ("Quantifying Differential Privacy
under Temporal Correlations", ICDE 2017) bound this temporal leakage with a linear program; this is
the exact value for a count, with the rounding bound of the check.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pufferfish.calibration.check import joint_pair_checks
from pufferfish.loss.exact import privacy_loss
from pufferfish.markov.classes import chain_scenario
from pufferfish.markov.counts import CountModel, NoPairError, count_scenario
from pufferfish.priors.scenario import Scenario

_SECRET = re.compile(r"X\[(\d+)\]=(.*)", re.DOTALL)


def time_and_states(pair: tuple[str, str]) -> tuple[int, tuple[str, str]]:
    """``("X[3]=a", "X[3]=b") -> (3, ("a", "b"))``: the time and states of a pair of
    :func:`~.counts.secret_name` secrets."""
    first, second = (_SECRET.fullmatch(s) for s in pair)
    if first is None or second is None:
        raise ValueError(f"pair must be two secrets 'X[i]=state', got {pair!r}")
    return int(first.group(1)), (first.group(2), second.group(2))


@dataclass(frozen=True)
class ChainLoss:
    """The worst pair of one chain of the class at the audited scale.

    Attributes
    ----------
    chain : str
        The adversary prior's name (``"chain"``, or ``"chain n"`` in a class).
    loss : float
        Nats, ``>= 0``.
    time : int
        ``i`` of the worst pair ``(X_i = a, X_i = b)``.
    pair : (str, str)
        The states ``a, b``.
    worst_y : tuple of float
        A released value attaining the loss (query units; two bars for a histogram).
    """

    chain: str
    loss: float
    time: int
    pair: tuple[str, str]
    worst_y: tuple[float, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "chain": self.chain,
            "loss": self.loss,
            "time": self.time,
            "pair": list(self.pair),
            "worst_y": list(self.worst_y),
        }


@dataclass(frozen=True)
class ScaleAudit:
    """The exact pufferfish loss of ``query + Laplace(scale)`` on a chain (or class).

    Attributes
    ----------
    scale : float
        The audited Laplace scale (query units: counts, or shares of ``T`` for a frequency).
    loss : float
        The largest exact loss over the chains checked, their times and pairs (nats).
    error_bound : float
        Rounding bound of ``loss`` (the priors' ``log_error`` included): the true loss is at most
        ``loss + error_bound``.
    worst : ChainLoss
        Where ``loss`` is attained.
    chains : tuple of ChainLoss
        The worst pair of each chain checked.
    epsilon_dp : float
        ``sensitivity / scale``: the budget a differentially private analysis would state for
        this scale (``inf`` at scale 0).
    certified : bool
        ``True`` when the class is the finite list of chains checked; ``False`` for an interval
        class, a confidence set of row balls or ``initial="any"``, checked on some of their chains
        only (``note`` says which).
    note : str
        What was checked.
    """

    scale: float
    loss: float
    error_bound: float
    worst: ChainLoss
    chains: tuple[ChainLoss, ...]
    epsilon_dp: float
    certified: bool
    note: str

    def satisfies(self, epsilon: float) -> bool:
        """Whether ``loss + error_bound <= epsilon``."""
        return self.loss + self.error_bound <= epsilon

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (``inf`` as the string ``"inf"``)."""
        return {
            "scale": self.scale,
            "loss": _finite(self.loss),
            "error_bound": self.error_bound,
            "worst": self.worst.to_dict() | {"loss": _finite(self.worst.loss)},
            "chains": [c.to_dict() | {"loss": _finite(c.loss)} for c in self.chains],
            "epsilon_dp": _finite(self.epsilon_dp),
            "certified": self.certified,
            "note": self.note,
        }


def audit_scale(model: CountModel, scale: float, scenario: Scenario | None = None) -> ScaleAudit:
    """The exact pufferfish loss of Laplace noise of a given scale on a count (or frequency).

    Parameters
    ----------
    model : CountModel
        The chain or class, length, target state and query.
    scale : float
        Laplace scale ``B >= 0``, finite, in the query's unit.
    scenario : Scenario, optional
        ``count_scenario(model)`` when already computed.

    Returns
    -------
    ScaleAudit

    Raises
    ------
    ValueError
        If ``scale`` is negative, NaN or infinite.

    Notes
    -----
    SPEC sec 2.1 applied to the priors ``P(C | X_i = a)`` of :func:`~.counts.count_priors` (exact
    up to the stated rounding bound). A time-reversible stationary chain is checked at the times
    ``0..ceil(T/2)-1`` (:attr:`~.counts.CountModel.mirrored`).
    """
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not (0.0 <= float(scale) < math.inf):
        raise ValueError(f"scale must be a finite number >= 0, got {scale!r}")
    scale = float(scale)
    if scenario is not None:
        parts: Iterable[Scenario] = [scenario]
    elif len(model.chains) > 1 and model.interval is None:  # one chain in memory at a time
        parts = (p for i in range(len(model.chains)) if (p := chain_scenario(model, (i,))) is not None)
    else:
        parts = [count_scenario(model)]
    items: list[tuple[str, float, tuple[str, str], tuple[float, ...]]] = []
    error_bound = 0.0
    priors = 0
    for part in parts:
        priors += len(part.priors)
        if part.kind == "joint":  # a histogram: product Laplace on the bars
            if scale == 0.0:
                raise ValueError("scale must be > 0 to audit a histogram, got 0.0")
            checks = joint_pair_checks(part, scale)
            items.extend((c.prior, c.value, c.pair, _vertex(c.where)) for c in checks)
            error_bound = max(error_bound, max(c.error for c in checks))
        else:
            loss = privacy_loss(part, scale)
            items.extend((p.prior, p.loss, p.pair, (p.worst_y,)) for p in loss.pairs)
            error_bound = max(error_bound, loss.error_bound)
    if not items:
        raise NoPairError()
    per_chain: dict[str, ChainLoss] = {}
    for prior, value, pair, y in items:
        if prior not in per_chain or value > per_chain[prior].loss:
            time, states = time_and_states(pair)
            per_chain[prior] = ChainLoss(prior, value, time, states, y)
    chains = tuple(per_chain.values())
    worst = max(chains, key=lambda c: c.loss)
    first = model.chains[0]
    if model.interval is not None:
        note = f"NOT certified over the interval class: checked on the {len(model.chains)} chains of its grid"
    elif model.row_balls is not None:
        note = (
            f"NOT certified over the {model.row_balls.confidence:.0%} set: checked on {len(model.chains)} "
            "chains listed from it"
        )
    elif first.any_start:
        note = f"NOT certified for every start: checked on {priors} starts (uniform, near each state)"
    else:
        note = f"exact for the {'chain' if len(chains) == 1 else f'{len(chains)} chains'} given"
    return ScaleAudit(
        scale=scale,
        loss=worst.loss,
        error_bound=error_bound,
        worst=worst,
        chains=chains,
        epsilon_dp=model.sensitivity / scale if scale > 0 else math.inf,
        certified=model.interval is None and model.row_balls is None and not first.any_start,
        note=note,
    )


def _vertex(where: str) -> tuple[float, ...]:
    """``"y = (3, 7)"`` -> ``(3.0, 7.0)`` (the worst vertex of a joint check)."""
    inside = where.split("(", 1)[1].rstrip(")") if "(" in where else ""
    return tuple(float(x) for x in inside.split(",") if x.strip())


def _finite(value: float) -> float | str:
    return value if math.isfinite(value) else "inf"


#: Mechanisms whose scale holds for every chain of an interval class, of a confidence set of row
#: balls, or for every start.
CERTIFIED_OVER = {
    "interval": ("mqm-approx", "group-dp"),
    "row balls": ("optimal-set", "mqm-approx", "group-dp"),
    "any start": ("mqm-exact", "group-dp"),
}


def result_row(result: Any, model: CountModel) -> dict[str, Any]:
    """A comparison row as the ``--json`` of ``pufferfish markov calibrate`` prints it: the
    calibration's own fields and ``worst`` (``{"time": i, "pair": [a, b]}``, the pair that decided
    the scale), ``certified`` and ``note``.

    Parameters
    ----------
    result : Calibration or Skipped
        From :func:`~pufferfish.calibration.compare` on :func:`~.counts.count_scenario`.
    model : CountModel
        With ``row_balls`` (a confidence set around an estimate, :mod:`.rowballs`), ``chains`` are
        the chains listed from it: only ``mqm-approx`` (bounds over the set) and ``group-dp`` (any
        chain) are certified over it.

    Returns
    -------
    dict
        ``certified`` is true when the scale holds for the whole class the guarantee names: one
        chain or a finite list (each checked exactly), or a mechanism certified over the infinite
        class (:data:`CERTIFIED_OVER`); otherwise false, and ``note`` says on which chains it was
        checked.
    """
    row: dict[str, Any] = result.to_dict()
    pair = getattr(result, "pair", None)
    if pair is None:
        return row | {"worst": None, "certified": False, "note": getattr(result, "reason", "")}
    time, states = time_and_states(tuple(pair))
    name = result.mechanism
    if model.row_balls is not None:
        certified = name in CERTIFIED_OVER["row balls"]
        conf = f"{model.row_balls.confidence:.0%}"
        note = (
            "T / eps holds for any chain"
            if name == "group-dp"
            else f"certified for every chain of the {conf} set (branch and bound over the set)"
            if name == "optimal-set"
            else f"certified for every chain of the {conf} set (bounds over the set)"
            if certified
            else f"over {len(model.chains)} listed chains of the {conf} set: NOT a guarantee for the set"
        )
    elif model.interval is not None:
        certified = name in CERTIFIED_OVER["interval"]
        note = (
            "certified over the interval class"
            if certified
            else (f"checked on the {len(model.chains)} chains of a grid of the class, NOT certified over it")
        )
    elif model.chains[0].any_start:
        certified = name in CERTIFIED_OVER["any start"]
        note = (
            "certified for every start"
            if certified
            else (f"checked on {model.chains[0].k + 1} starts, NOT certified for every start")
        )
    else:
        certified = True
        note = (
            f"checked exactly on the {'chain' if len(model.chains) == 1 else f'{len(model.chains)} chains'}"
        )
    return row | {"worst": {"time": time, "pair": list(states)}, "certified": certified, "note": note}
