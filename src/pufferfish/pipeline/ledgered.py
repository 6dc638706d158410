"""A table release made with a ledger (issue 42): its entry, and its noise calibrated against what
was released before.

:func:`entry_body` is what the ledger records of a release. :func:`against_ledger` checks the
release together with the ledger's earlier releases about its secret before any noise is drawn
(:mod:`pufferfish.ledger.record`); with a budget that the calibrated release would exceed, a
Laplace release is *calibrated against the ledger*: the smallest scale whose joint check meets
the budget (SciPy's ``brentq`` on the log of the scale, then the closest passing scale above it,
checked), since raising a scale is post-processing of the release (SPEC sec 2.1) so the joint
loss never grows with it. A mapping is re-calibrated at the largest smaller epsilon found whose
matrix meets the budget together (:func:`_mapping_against`; not monotone: the closest passing
value found), or, for a default release, replaced by the most accurate other mapping that can.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from pufferfish.calibration import Calibration, MappingCalibration, Skipped
from pufferfish.calibration.check import measure
from pufferfish.ledger.guarantee import COMPOSES, JointGuarantee, guarantee
from pufferfish.ledger.record import (
    MAX_RAISE,
    BudgetError,
    LedgerContext,
    LedgerPlan,
    plan,
    prepare,
    smallest_raise,
)
from pufferfish.ledger.store import Entry
from pufferfish.ledger.views import record_views
from pufferfish.pipeline.draws import released_columns
from pufferfish.pipeline.results import TableCalibration
from pufferfish.tables.missing import ATOM_ROUNDING
from pufferfish.tables.perturb import ReleasedColumn
from pufferfish.tables.source import TableSource


def entry_body(
    table: TableCalibration,
    source: TableSource,
    chosen: Calibration | MappingCalibration,
    columns: list[ReleasedColumn],
    rng: Any,
    sampler: str,
) -> dict[str, Any]:
    """The ledger entry of a table release (:class:`pufferfish.ledger.store.Entry` ``body``)."""
    noise = "laplace" if isinstance(chosen, MappingCalibration) else chosen.noise
    inputs = table.inputs
    kind = str(inputs.get("prior_set") or "none")
    read = source.csv
    return {
        "kind": "table",
        "secret": str(inputs["secret"]),
        "pairs": [[str(a), str(b)] for a, b in table.scenario.pairs],
        "columns": [c.name for c in columns],
        "mechanism": chosen.mechanism,
        "epsilon": _whole_epsilon(table, chosen),
        "delta": float(getattr(chosen, "delta", 0.0)),
        "criterion": getattr(chosen, "criterion", "eps-PP"),
        "prior_set": [kind, float(inputs.get("confidence") or 0.95), inputs.get("prior_radius")],
        "views": record_views(columns, noise=noise, sampler=None if rng is not None else sampler),
        "weight": inputs.get("weight"),
        "missing": inputs.get("missing", "value"),
        "composes": COMPOSES.get(chosen.mechanism),
        "insecure": rng is not None,
        "read": {
            "names": None if read.names is None else list(read.names),
            "na": list(read.na),
            "delimiter": read.delimiter,
            "encoding": read.encoding,
        },
    }


def _whole_epsilon(table: TableCalibration, chosen: Calibration | MappingCalibration) -> float:
    """The epsilon the whole release is certified for: with a numeric column's missing cells,
    the requested budget whose present values' share ``eps'`` the mechanism was calibrated at
    (:meth:`pufferfish.tables.missing.MissingAtom.present_epsilon`), else the mechanism's own."""
    atom = table.missing_atom
    if atom is None:
        return float(chosen.epsilon)
    requested = table.inputs["epsilon"]
    requested = list(requested) if isinstance(requested, (list, tuple)) else [requested]
    for eps, present in zip(requested, table.epsilons, strict=False):
        if present == chosen.epsilon:
            return float(eps)
    return max(float(chosen.epsilon) + atom.offset + ATOM_ROUNDING, atom.atom_loss)  # re-calibrated lower


def against_ledger(
    context: LedgerContext,
    table: TableCalibration,
    chosen: Calibration | MappingCalibration,
    columns: list[ReleasedColumn],
    rng: Any,
    sampler: str,
    alternatives: tuple[MappingCalibration, ...] = (),
) -> tuple[Calibration | MappingCalibration, list[ReleasedColumn], LedgerPlan]:
    """Check the release against the ledger; with a budget it would exceed, raise a Laplace
    release's scale, or lower a mapping's epsilon (:func:`_mapping_against`; then, if it cannot,
    the most accurate of ``alternatives`` that can), until the whole ledger meets it.

    Returns
    -------
    (chosen, columns, plan)
        The result released (its scale raised if needed, said in ``decided_by``), the columns as
        drawn, and the ledger plan to record.

    Raises
    ------
    BudgetError
        If the earlier releases alone exceed the budget, no guarantee holds for them together, a
        mapping would exceed it, or no scale meets it.
    LedgerError
        If the table is not the ledger's.
    """
    body = entry_body(table, context.source, chosen, columns, rng, sampler)
    prepared = prepare(context, body)
    try:
        return chosen, columns, plan(context, body, prepared)
    except BudgetError:
        mapping = isinstance(chosen, MappingCalibration)
        if not mapping and (
            not isinstance(chosen, Calibration) or chosen.scale == 0.0 or chosen.noise != "laplace"
        ):
            raise
    before, full, joint = prepared
    budget = context.budget
    assert budget is not None
    spent = 0.0
    if before:  # what was released before, alone, must meet the budget
        alone = guarantee(before, context.source, engine=context.engine, spark=context.spark)
        spent = math.inf if alone.epsilon is None else alone.epsilon
        if alone.epsilon is None or alone.epsilon > budget:
            ids = ", ".join(map(str, alone.entries))
            reach = (
                f"have no guarantee together ({alone.detail})" if alone.epsilon is None
                else f"already reach eps {alone.epsilon:.6g} together"
            )  # fmt: skip
            raise BudgetError(
                f"refused before any noise was drawn: the ledger's releases {ids} {reach} (budget {budget:g})"
            )

    if isinstance(chosen, MappingCalibration):
        return _best_mapping_against(context, table, [chosen, *alternatives], prepared, rng, sampler)
    assert isinstance(chosen, Calibration)

    def joint_at(scale: float) -> tuple[JointGuarantee, list[ReleasedColumn]]:
        cols = released_columns(table, replace(chosen, scale=scale), rng, sampler)
        at = full | {
            "views": record_views(cols, noise="laplace", sampler=None if rng is not None else sampler)
        }
        new = Entry(max((e.id for e in before), default=0) + 1, "pending", "", at)
        return guarantee(
            [*before, new], context.source, engine=context.engine, spark=context.spark, joint=joint
        ), cols

    scale = chosen.scale * smallest_raise(lambda f: joint_at(chosen.scale * f)[0].epsilon, budget)
    if scale > MAX_RAISE * chosen.scale:
        raise BudgetError(
            f"refused before any noise was drawn: the ledger's releases already reach eps {spent:.6g} of "
            f"the budget {budget:g} ({max(budget - spent, 0.0):.3g} left); meeting it would take a scale "
            f"more than {MAX_RAISE:g} times the {chosen.scale:.6g} this release needs alone: noise that "
            "leaves nothing to read"
        )
    # The raised scale's own exact check (the same criterion and priors): what the release alone
    # meets at the scale it is drawn with, printed and reported beside the budget.
    alone_check, _ = measure(
        table.scenario, chosen.criterion, chosen.noise, scale, chosen.epsilon, chosen.delta
    )
    raised = replace(
        chosen,
        scale=scale,
        raised_from=chosen.scale,
        checked_loss=alone_check.value if chosen.checked_loss is not None else None,
        checked_delta=alone_check.value if chosen.checked_loss is None else chosen.checked_delta,
        check_error_bound=alone_check.error,
        check=None,
        decided_by=f"{chosen.decided_by}; raised from {chosen.scale!r} to {scale!r} so that the "
        f"ledger's releases and this one meet the budget {budget:g} together "
        "(raising a scale is post-processing)",
    )
    cols = joint_at(scale)[1]
    body = entry_body(table, context.source, raised, cols, rng, sampler)
    return raised, cols, plan(context, body, (before, full | {"views": body["views"]}, joint))


def _best_mapping_against(
    context: LedgerContext, table: TableCalibration, mappings: list[MappingCalibration], prepared: Any,
    rng: Any, sampler: str,
) -> tuple[MappingCalibration, list[ReleasedColumn], LedgerPlan]:  # fmt: skip
    """The first mapping's :func:`_mapping_against`, else the most accurate of the others that
    meets the budget (the release's own fallback order, :func:`pufferfish.pipeline.release._pick`)."""
    errors, passed = [], []
    for m in mappings:
        try:
            passed.append(_mapping_against(context, table, m, prepared, rng, sampler))
        except BudgetError as exc:
            errors.append(str(exc))
        if passed and m is mappings[0]:
            return passed[0]
    if not passed:
        raise BudgetError("; ".join(errors))
    best = max(passed, key=lambda r: r[0].expected_accuracy)
    why = f"used as {mappings[0].mechanism} cannot meet the budget"
    return replace(best[0], decided_by=f"{best[0].decided_by}; {why}"), best[1], best[2]


#: Halvings of a mapping's epsilon tried before the budget is declared out of its reach.
MAX_HALVINGS = 20


def _mapping_against(
    context: LedgerContext, table: TableCalibration, chosen: MappingCalibration, prepared: Any, rng: Any,
    sampler: str,
) -> tuple[MappingCalibration, list[ReleasedColumn], LedgerPlan]:  # fmt: skip
    """A mapping calibrated against the ledger: the same mechanism re-calibrated (the registry's
    search and exact check, on the release's priors and utility) at the largest epsilon ``eps' <=
    eps`` found whose matrix meets the budget together with the ledger: halving ``eps'`` until
    one passes, then bisecting on ``log eps'`` between the last failing and the first passing
    one (30 steps). A mapping's joint loss need not be monotone in ``eps'``, so the result is the
    closest passing value found, every candidate checked; none is a :class:`BudgetError`."""
    from pufferfish.calibration import REGISTRY
    from pufferfish.calibration.registry import run_comparison

    before, full, joint = prepared
    budget = context.budget
    assert budget is not None
    found: dict[float, tuple[MappingCalibration, list[ReleasedColumn]] | None] = {}

    def passing(eps: float) -> bool:
        mechs = (REGISTRY[chosen.mechanism],)
        (res,) = run_comparison(
            table.scenario, [eps], mechs, delta=0.0, noise="laplace", utility=table.utility
        )
        if not isinstance(res, MappingCalibration):
            found[eps] = None
            return False
        cols = released_columns(table, res, rng, sampler)
        at = full | {
            "views": record_views(cols, noise="laplace", sampler=None if rng is not None else sampler)
        }
        new = Entry(max((e.id for e in before), default=0) + 1, "pending", "", at)
        together = guarantee(
            [*before, new], context.source, engine=context.engine, spark=context.spark, joint=joint
        )
        ok = together.epsilon is not None and together.epsilon <= budget
        found[eps] = (res, cols) if ok else None
        return ok

    hi, lo = chosen.epsilon, chosen.epsilon
    for _ in range(MAX_HALVINGS):
        lo /= 2.0
        if passing(lo):
            break
    else:
        raise BudgetError(
            f"refused before any noise was drawn: {chosen.mechanism} at no epsilon down to {lo:.3g} meets "
            f"the budget {budget:g} together with the ledger's releases"
        )
    for _ in range(30):  # lo passes, hi fails
        mid = math.sqrt(lo * hi)
        if passing(mid):
            lo = mid
        else:
            hi = mid
    got = found[lo]
    assert got is not None
    res, cols = got
    why = f"calibrated at eps {lo!r} (not {chosen.epsilon!r}) so that the ledger's releases and this one meet"
    res = replace(res, decided_by=f"{res.decided_by}; {why} the budget {budget:g} together")
    body = entry_body(table, context.source, res, cols, rng, sampler)
    return res, cols, plan(context, body, (before, full | {"views": body["views"]}, joint))


@dataclass(frozen=True)
class Against:
    """One mechanism of :meth:`Session.calibrate`, against the session's ledger.

    Attributes
    ----------
    mechanism : str
    chosen : Calibration, MappingCalibration or None
        What a release would use: the calibration itself, or (a Laplace release over the budget)
        its scale raised until everything released meets the budget together; None when refused.
    together : JointGuarantee or None
        The guarantee of the ledger's releases and this one together (None when refused).
    refused : str
        Why the budget refuses it (empty otherwise).
    """

    mechanism: str
    chosen: Calibration | MappingCalibration | None
    together: JointGuarantee | None
    refused: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "mechanism": self.mechanism,
            "scale": getattr(self.chosen, "scale", None),
            "together": None if self.together is None else self.together.to_dict(),
            "refused": self.refused or None,
        }


def against_each(
    context: LedgerContext, table: TableCalibration, sampler: str = "exact"
) -> tuple[Against, ...]:
    """Each mechanism of a calibration against the ledger (``calibrate --ledger``,
    :meth:`pufferfish.Session.calibrate`): what its release would guarantee together with the
    ledger's, with a budget the scale that meets it (a Laplace release) or why it is refused.
    Nothing is written."""
    rows = []
    for c in table.comparison:
        if isinstance(c, Skipped):
            continue
        columns = released_columns(table, c, None, sampler)
        try:
            chosen, _, planned = against_ledger(context, table, c, columns, None, sampler)
            rows.append(Against(c.mechanism, chosen, planned.joint))
        except BudgetError as exc:
            rows.append(Against(c.mechanism, None, None, str(exc)))
    return tuple(rows)
