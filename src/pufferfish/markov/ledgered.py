"""Rule 2 of the ledger (issue 42): count releases of one series checked together exactly.

Every ``markov release`` publishes, per id, the count of visits to a state over the whole series
(one window, ``[0, T)``), with Laplace noise of its length's scale. Releases of the same series
(the same data, query, state and chains) are therefore windows that coincide: the vector of window
counts is ``(C, ..., C)`` and its exact priors given a secret ``X_i = a`` are the count's,
``P(C | X_i = a)`` (:func:`pufferfish.markov.counts.count_priors`, forward-backward over the
chain). Each release is a Laplace view of ``C`` (:class:`pufferfish.loss.composed.View`; a
histogram of a binary chain is two: ``T - (T - C + N) = C - N``; a frequency's noise is drawn on
the count at ``T`` times its scale), and the loss of every pair, time and chain is exact
(:func:`pufferfish.loss.composed.composed_point_loss`), for every length ``T`` of the table.

:data:`SERIES_CHECKS` is the rule as the ledger takes it: given explicitly to whoever reads series
entries (the series release's ledger context, ``ledger show``, :meth:`pufferfish.Session.spent`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from pufferfish.ledger.guarantee import RULES, ExactCheck, JointGuarantee, PairJoint
from pufferfish.ledger.record import (
    MAX_RAISE,
    BudgetError,
    LedgerContext,
    LedgerPlan,
    entries_before,
    plan_other,
    smallest_raise,
    together_with,
)
from pufferfish.ledger.store import Entry
from pufferfish.ledger.views import Unsupported
from pufferfish.loss.composed import MAX_POINT_ENTRIES, View, composed_point_loss
from pufferfish.loss.divergence import MemoryLimitError
from pufferfish.markov.chain import MarkovChain
from pufferfish.markov.counts import CountModel, count_scenario
from pufferfish.priors.distributions import DiscretePrior


def series_record(calibration: Any, scales: dict[int, tuple[float, float]]) -> dict[str, Any]:
    """What the ledger keeps of a series release for rule 2: the query, the counted state, every
    chain the scales were checked on, and the drawn noise scale on the count for each length."""
    r = calibration.request
    on_count = {str(t): (drawn * t if r.query == "frequency" else drawn) for t, (_, drawn) in scales.items()}
    return {
        "query": r.query,
        "target": r.target,
        "chains": [c.describe() for c in calibration.chains],
        "count_scales": on_count,
        "window": "the whole series",
    }


def _chain(d: dict[str, Any]) -> MarkovChain:
    initial = d["initial"] if isinstance(d["initial"], str) else np.asarray(d["initial"], dtype=np.float64)
    return MarkovChain(np.asarray(d["transition"], dtype=np.float64), initial, tuple(d["states"]))


def series_joint(entries: Sequence[Entry]) -> tuple[float, tuple[PairJoint, ...], str]:
    """Rule 2: every release of ``entries`` (series of one data set) together, exactly.

    Returns
    -------
    (float, tuple of PairJoint, str)
        The largest ``loss + error_bound`` over lengths, times, pairs and chains; the worst pair
        of each length; for which priors.

    Raises
    ------
    Unsupported
        If the releases are of different data, queries, states or chains, or one was recorded
        without its series.
    pufferfish.loss.divergence.MemoryLimitError
        If a check would evaluate more than :data:`~pufferfish.loss.composed.MAX_POINT_ENTRIES`
        released records ("not run").
    """
    if any(e.body.get("series") is None for e in entries):
        raise Unsupported("a series release was recorded without its counts' model")
    specs: list[dict[str, Any]] = [e.body["series"] for e in entries]
    keys = {json.dumps([e.body["data"]["hash"], s["query"], s["target"], s["chains"]], sort_keys=True)
            for e, s in zip(entries, specs, strict=True)}  # fmt: skip
    if len(keys) > 1:
        raise Unsupported("the series releases are of different data, queries, states or chains")
    first = specs[0]
    chains = tuple(_chain(d) for d in first["chains"])
    views_per = 2 if first["query"] == "histogram" else 1
    lengths = sorted({int(t) for s in specs for t in s["count_scales"]})
    worst_pairs = []
    for t in lengths:
        if (t + 1) ** (views_per * len(entries)) > MAX_POINT_ENTRIES:
            raise MemoryLimitError(
                f"not run: the joint check of {len(entries)} releases at T = {t} evaluates "
                f"{t + 1}^{views_per * len(entries)} released records (more than {MAX_POINT_ENTRIES:,})"
            )
        views = [
            View(0, "laplace", float(s["count_scales"][str(t)]), name=f"count (release {e.id})")
            for e, s in zip(entries, specs, strict=True)
            for _ in range(views_per)
        ]
        scenario = count_scenario(CountModel(chains, t, first["target"], "count"))
        best: PairJoint | None = None
        for adversary in scenario.priors:
            for a, b in scenario.pairs:
                if a in adversary.impossible or b in adversary.impossible:
                    continue
                pa, pb = adversary.conditionals[a], adversary.conditionals[b]
                assert isinstance(pa, DiscretePrior) and isinstance(pb, DiscretePrior)
                res = composed_point_loss(pa.support[:, None], pa.pmf, pb.pmf, views)  # one support 0..T
                bound = res.error_bound + pa.log_error + pb.log_error
                if best is None or res.loss + bound > best.loss + best.error_bound:
                    best = PairJoint((a, b), res.loss, bound, res.worst_output)
        if best is not None:
            worst_pairs.append(best)
    if not worst_pairs:
        raise Unsupported("no pair of states to protect")
    eps = max(p.loss + p.error_bound for p in worst_pairs)
    chains_text = "the estimated chain" if len(chains) == 1 else f"each of the {len(chains)} chains checked"
    return (
        eps if math.isfinite(eps) else math.inf,
        tuple(worst_pairs),
        (f"at the exact priors of the count under {chains_text}, every time and pair of states"),
    )


def plan_within_budget(
    context: LedgerContext,
    body: dict[str, Any],
    calibration: Any,
    scales_at: Callable[[float], dict[int, tuple[float, float]]],
) -> tuple[LedgerPlan, float]:
    """The ledger plan of a series release, its scales raised by the smallest factor found that
    meets the budget together with the ledger's earlier releases.

    Every length's scale is multiplied by one factor ``f >= 1``, found by the search the table
    releases use (:func:`pufferfish.ledger.record.smallest_raise`, up to
    :data:`~pufferfish.ledger.record.MAX_RAISE`); every candidate is the ledger's own joint check
    of the earlier releases (read once) with this one.

    Parameters
    ----------
    context : LedgerContext
        The ledger and its budget.
    body : dict
        The entry's body without its ``series`` record.
    calibration : SeriesCalibration
    scales_at : callable
        ``f -> {T: (calibrated scale, drawn scale)}`` with every scale times ``f``.

    Returns
    -------
    (LedgerPlan, float)
        The plan to record (its body's scales raised) and the factor ``f`` (1.0: not raised).

    Raises
    ------
    BudgetError
        If no factor up to ``MAX_RAISE`` meets the budget (the ledger's releases alone may reach
        it), or there is no guarantee together at any.
    LedgerError
        If the data is not the earlier releases'.
    """

    def body_at(factor: float) -> dict[str, Any]:
        return body | {"series": series_record(calibration, scales_at(factor))}

    before = entries_before(context, body_at(1.0))
    found: dict[float, JointGuarantee] = {}

    def together(factor: float) -> JointGuarantee:
        if factor not in found:
            found[factor] = together_with(context, body_at(factor), before)
        return found[factor]

    factor, first = 1.0, together(1.0).epsilon
    if context.budget is not None and (first is None or first > context.budget):
        factor = smallest_raise(lambda f: together(f).epsilon, context.budget)
        if not factor <= MAX_RAISE:  # inf, or a doubling past it: refused, as a table release
            try:  # the ledger's own message at the largest factor: what the releases reach together
                plan_other(context, body_at(MAX_RAISE), before, together(MAX_RAISE))
            except BudgetError as exc:
                raise BudgetError(
                    f"{exc}; raising this release's scales up to {MAX_RAISE:g} times does not meet it"
                ) from None
    return plan_other(context, body_at(factor), before, together(factor)), factor


#: The ledger's rule 2 for ``markov`` entries, given explicitly to whoever reads them
#: (:func:`pufferfish.ledger.guarantee.guarantee`'s ``checks``): the series release's ledger
#: context, ``ledger show`` and :meth:`pufferfish.Session.spent`.
SERIES_CHECKS: dict[str, ExactCheck] = {"markov": (RULES[1], series_joint)}
