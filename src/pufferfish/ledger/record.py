"""A release with a ledger: check the data and the budget before any noise is drawn, record the
entry and publish the output together (issue 42).

:func:`plan` runs before the noise: the table must be the ledger's (:func:`~.guarantee.check_data`),
and with a budget the guarantee of everything released about the secret, this release included
(:func:`~.guarantee.guarantee`), must meet it, else :class:`BudgetError` says the joint loss it
would reach. :func:`reserve` runs when the output is written but not yet published: it records the
entry ``pending`` in one transaction that re-reads the ledger, so a release recorded meanwhile by
another process is checked too (:class:`BudgetError` then, nothing published); :func:`settle`
marks it done once the output is published, or removes it when publishing failed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pufferfish.ledger.guarantee import (
    ExactCheck,
    JointGuarantee,
    JointPriors,
    check_data,
    column_kinds,
    estimate_for,
    fingerprint,
    guarantee,
)
from pufferfish.ledger.store import Entry, Ledger, LedgerError, add_pending, read_entries
from pufferfish.ledger.views import Unsupported
from pufferfish.tables.source import TableSource


class BudgetError(LedgerError):
    """A release whose guarantee together with what was released before would exceed the budget
    (refused before any noise is drawn; the message gives the joint loss it would reach)."""


def check_ledger_path(ledger: str | Path | None, taken: Iterable[Path | None]) -> None:
    """Refuse, before any work, a ledger that is also a release's output, report or input file
    (issue 56: the release was published, nothing recorded, and a retry released the rows again).

    Raises
    ------
    ValueError
        Naming the ledger.
    """
    if ledger is None:
        return
    mine = Path(ledger).resolve()
    if any(p is not None and Path(p).resolve() == mine for p in taken):
        raise ValueError(
            f"ledger must differ from the output, the reports and the input files, got {str(ledger)!r} "
            "for both"
        )


def check_budget(budget: Any) -> float | None:
    """``budget`` in nats: None, or finite and > 0.

    Raises
    ------
    ValueError
        Naming the value otherwise.
    """
    if budget is None:
        return None
    if (
        isinstance(budget, bool)
        or not isinstance(budget, (int, float))
        or not (math.isfinite(budget) and budget > 0)
    ):
        raise ValueError(f"budget must be finite and > 0, got {budget!r}")
    return float(budget)


@dataclass(frozen=True)
class LedgerPlan:
    """A release's entry, checked against its ledger before the noise.

    Attributes
    ----------
    ledger : Ledger
    budget : float or None
    body : dict
        The entry to record (with the data's fingerprint).
    before : tuple of int
        The ids of the entries about the secret the check covered.
    joint : JointGuarantee
        The guarantee of those entries and this release together.
    """

    ledger: Ledger
    budget: float | None
    body: dict[str, Any]
    before: tuple[int, ...]
    joint: JointGuarantee


@dataclass(frozen=True)
class LedgerContext:
    """What :func:`plan` needs besides the entry: the ledger, the budget and the table, and the exact
    checks of other entry kinds it reads (``checks``, :func:`~.guarantee.guarantee`)."""

    ledger: Ledger
    budget: float | None
    source: TableSource
    engine: str = "duckdb"
    spark: Any = None
    checks: Mapping[str, ExactCheck] = field(default_factory=dict)


def _provisional(entries: list[Entry], body: Mapping[str, Any]) -> Entry:
    return Entry(max((e.id for e in entries), default=0) + 1, "pending", "", dict(body))


def prepare(
    context: LedgerContext, body: Mapping[str, Any]
) -> tuple[list[Entry], dict[str, Any], JointPriors | None]:
    """The entries about the body's secret, the body with the data's fingerprint, and the joint
    priors of every column released about the secret with this release (None when rule 1 cannot
    read them).

    Raises
    ------
    LedgerError
        If the table is not the ledger's or changed since its last release about the secret.
    """
    secret = str(body["secret"])
    before = [e for e in context.ledger.entries() if e.secret == secret]
    how = dict(
        secret=secret,
        weight=body.get("weight"),
        missing=body.get("missing", "value"),
        engine=context.engine,
        spark=context.spark,
    )
    found = None
    if before:
        last = before[-1].body["data"]
        found = fingerprint(
            context.source, kinds=dict(zip(last["columns"], last["kinds"], strict=True)), **how
        )
        check_data(before, found, context.source.description)
    try:
        kinds = column_kinds([*before, _provisional(before, body)])
    except Unsupported as exc:
        raise LedgerError(f"this release cannot join the ledger's: {exc}") from None
    if (
        found is None
        or found["columns"] != sorted(kinds)
        or found["kinds"] != [kinds[c] for c in sorted(kinds)]
    ):
        found = fingerprint(context.source, kinds=kinds, **how)  # a column not released before
    data = found | {"description": context.source.description}
    path = context.source.origin or context.source.path
    data |= {"path": None if path is None else str(Path(path).resolve())}
    full = dict(body) | {"data": data}
    joint = None
    if all(e.body.get("kind") == "table" for e in before):
        try:
            joint = estimate_for(
                [*before, _provisional(before, full)],
                context.source,
                engine=context.engine,
                spark=context.spark,
            )
        except Unsupported:
            joint = None
    return before, full, joint


def plan(
    context: LedgerContext,
    body: Mapping[str, Any],
    prepared: tuple[list[Entry], dict[str, Any], JointPriors | None],
) -> LedgerPlan:
    """Check the release against the ledger before any noise is drawn.

    Raises
    ------
    BudgetError
        If the guarantee of the release together with the earlier ones exceeds the budget, or
        none holds (with the joint loss or the reason).
    """
    before, full, joint = prepared
    full = full | {k: v for k, v in body.items() if k != "data"}
    together = guarantee(
        [*before, _provisional(before, full)],
        context.source,
        engine=context.engine,
        spark=context.spark,
        joint=joint,
        checks=context.checks,
    )
    refuse_over(together, context.budget, context.ledger)
    return LedgerPlan(context.ledger, context.budget, full, tuple(e.id for e in before), together)


#: How a refusal begins: before the noise (:func:`plan`), or when the output is written but not
#: published (:func:`reserve`, a release recorded meanwhile by another process).
BEFORE_NOISE = "refused before any noise was drawn"
AFTER_NOISE = "refused after the noise was drawn; nothing was published and the drawn output was deleted"


def refuse_over(
    together: JointGuarantee, budget: float | None, ledger: Ledger, when: str = BEFORE_NOISE
) -> None:
    """Raise :class:`BudgetError` when ``together`` does not meet ``budget`` (None: no budget);
    the message begins with ``when`` (:data:`BEFORE_NOISE` or :data:`AFTER_NOISE`)."""
    if budget is None:
        return
    if together.epsilon is None:
        raise BudgetError(
            f"{when}: ledger {str(ledger.path)!r} has a budget of {budget:g} and "
            f"there is no guarantee for this release together with releases "
            f"{', '.join(map(str, together.entries[:-1])) or 'none'} ({together.detail})"
        )
    if together.epsilon > budget:
        earlier = ", ".join(map(str, together.entries[:-1]))
        with_ = (f"with release(s) {earlier} of ledger {str(ledger.path)!r} this release" if earlier
                 else f"ledger {str(ledger.path)!r} has no release before this one, which alone")  # fmt: skip
        raise BudgetError(
            f"{when}: {with_} would reach eps {together.epsilon:.6g} by the {together.rule} (budget "
            f"{budget:g}): use a larger --budget or a new ledger"
        )


def entries_before(context: LedgerContext, body: Mapping[str, Any]) -> list[Entry]:
    """The ledger's earlier entries about the secret of a release that is not of table columns (a
    series, a sum), read once; they must be of the same data (``body["data"]["hash"]``).

    Raises
    ------
    LedgerError
        If the data differs from the earlier releases'.
    """
    secret = str(body["secret"])
    before = [e for e in context.ledger.entries() if e.secret == secret]
    if before and before[-1].body.get("data", {}).get("hash") != body["data"]["hash"]:
        raise LedgerError(
            f"the data {body['data']['description']} is not the one the ledger's release {before[-1].id} "
            f"about {secret!r} was made from ({before[-1].body['data']['description']}): use another ledger"
        )
    return before


def together_with(context: LedgerContext, body: Mapping[str, Any], before: list[Entry]) -> JointGuarantee:
    """The guarantee of ``before`` (:func:`entries_before`) and the release ``body`` together
    (rules 2 to 4, with ``context.checks``)."""
    return guarantee([*before, _provisional(before, body)], None, checks=context.checks)


def plan_other(
    context: LedgerContext,
    body: Mapping[str, Any],
    before: list[Entry] | None = None,
    together: JointGuarantee | None = None,
) -> LedgerPlan:
    """:func:`plan` for a release that is not of table columns (a series, a sum): the earlier
    releases about its secret must be of the same data (``body["data"]["hash"]``), and with a
    budget their guarantee together (rules 2 to 4) must meet it. ``before`` and ``together``, when
    a caller already has them (:func:`entries_before`, :func:`together_with`), are not read again.

    Raises
    ------
    LedgerError
        If the data differs from the earlier releases'; :class:`BudgetError` over the budget.
    """
    before = entries_before(context, body) if before is None else before
    together = together_with(context, body, before) if together is None else together
    refuse_over(together, context.budget, context.ledger)
    return LedgerPlan(context.ledger, context.budget, dict(body), tuple(e.id for e in before), together)


#: Largest factor a budget may raise a release's scale by (table and series releases): beyond it
#: the release is refused, its noise being at least this many times what its own epsilon needs (a
#: usefulness rule, not a privacy one: any larger scale would meet the budget too).
MAX_RAISE = 100.0


def smallest_raise(epsilon_at: Callable[[float], float | None], budget: float) -> float:
    """The smallest factor ``f >= 1`` found (to a relative 1e-9, on its passing side) at which the
    releases together meet ``budget``, ``epsilon_at(f)`` being their guarantee with the new
    release's scales times ``f`` (None: no guarantee); ``inf`` when no factor up to
    :data:`MAX_RAISE` does. Doubling from 1, then SciPy's ``brentq`` on ``log f``, then the
    closest passing value above the root (as Google's dp_accounting). Raising a Laplace scale is
    post-processing (``Lap(f b) = Lap(b) + Z``, ``Z`` zero with probability ``1 / f^2`` and
    ``Lap(f b)`` otherwise), so the joint loss never grows with ``f``.
    """
    from scipy.optimize import brentq

    def excess(log_f: float) -> float:
        eps = epsilon_at(math.exp(log_f))
        return (math.inf if eps is None else eps) - budget

    lo = hi = 0.0
    while excess(hi) > 0:
        if hi > math.log(MAX_RAISE):
            return math.inf  # beyond what a release may be raised to (the caller refuses)
        lo, hi = hi, hi + math.log(2.0)
    if hi != lo:
        root = brentq(lambda t: min(excess(t), 1e3), lo, hi, xtol=1e-12, rtol=1e-10)
        hi = max(root, lo)
        step = 1e-9
        while excess(hi) > 0:  # move to the passing side (the closest passing factor found)
            hi += step
            step *= 2
    return math.exp(hi)


def reserve(plan_: LedgerPlan, context: LedgerContext, output: Path | None, temporary: Path | None) -> int:
    """Record the entry ``pending`` (output written, not yet published), re-checking the budget
    against entries recorded since :func:`plan`: its id.

    Raises
    ------
    BudgetError
        If a release recorded meanwhile makes this one exceed the budget.
    """
    with plan_.ledger.transaction() as con:
        now = [e for e in read_entries(con) if e.secret == plan_.body["secret"]]
        if tuple(e.id for e in now) != plan_.before and plan_.budget is not None:
            together = guarantee(
                [*now, _provisional(now, plan_.body)],
                context.source,
                engine=context.engine,
                spark=context.spark,
                checks=context.checks,
            )
            refuse_over(together, plan_.budget, plan_.ledger, AFTER_NOISE)
        return add_pending(
            con, plan_.body | {"output": None if output is None else str(output)}, output, temporary
        )


@contextmanager
def recording(
    plan_: LedgerPlan | None, context: LedgerContext | None, output: Path | None
) -> Iterator[Callable[[Path | None], int | None]]:
    """Record a release's entry with its output: yields ``record(temporary)``, to call once the
    output is written to its temporary file (the entry is then ``pending``, :func:`reserve`); when
    the block ends the entry is marked done (the output was published inside it) or, if the block
    raised, removed. Without a plan, ``record`` does nothing and returns None."""
    entry: list[int] = []

    def record(temporary: Path | None) -> int | None:
        if plan_ is None or context is None:
            return None
        entry.append(reserve(plan_, context, output, temporary))
        return entry[-1]

    try:
        yield record
    except BaseException:
        if plan_ is not None and entry:
            settle(plan_.ledger, entry[-1], published=False)
        raise
    if plan_ is not None and entry:
        settle(plan_.ledger, entry[-1], published=True)


def settle(ledger: Ledger, entry_id: int, published: bool) -> None:
    """Mark the entry done (its output published) or remove it (nothing was published)."""
    if published:
        ledger.confirm(entry_id)
    else:
        ledger.cancel(entry_id)


def with_joint(body: Mapping[str, Any], joint: JointGuarantee) -> dict[str, Any]:
    """The body with the guarantee together with the earlier releases (as checked)."""
    return dict(body) | {"together": joint.to_dict()}


__all__ = [
    "BudgetError",
    "LedgerContext",
    "LedgerPlan",
    "check_budget",
    "plan",
    "plan_other",
    "prepare",
    "recording",
    "reserve",
    "settle",
    "with_joint",
]
