"""What the whole written record of a release with columns kept in clear outside the check says
about the secret (issue 54).

A column ``u`` kept with ``keep_unchecked`` is written as it is beside the released columns
``Y = K(X)``. The record of a row is ``(Y, u)`` and its distribution given secret ``s`` is

    P(y, u | s) = sum_x P(x, u | s) K(y | x),

so the release's guarantee, checked on ``P(x | s)`` alone, carries over to the record only if
``u`` is independent of the secret *and of the released columns together*: ``P(x, u | s) =
P(x | s) P(u)``. Independence of ``u`` and the secret alone is not enough (issue 54's reproducer:
``u = x XOR [s = B]`` is independent of ``s`` and of ``x`` each, and ``(x, u)`` gives ``s`` in
every row). The figure a release states beside that assumption is therefore the exact loss of
the *whole record* at the estimated joint priors of the released and kept columns: the release's
own channels (as the ledger records them, :func:`pufferfish.ledger.views.record_views`) and the
identity on each kept column, checked by the ledger's exact joint check
(:func:`pufferfish.ledger.guarantee.joint_loss`, :mod:`pufferfish.loss.composed`). Each kept
column alone (its marginal loss, :mod:`pufferfish.tables.kept`) is a lower bound on it (the
column alone is a post-processing of the record), never a bound on the record.

No figure is stated when none can be measured: a kept column holding a different value on every
row (an identifier: any estimate from the rows gives each of its values to one secret only, so the
loss at the estimate is infinite whatever the column is), a channel the exact check cannot read
(Gaussian noise), or a check too large to run (its size is counted before any allocation).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pufferfish.ledger.guarantee import JointPriors, joint_loss
from pufferfish.ledger.views import Unsupported, record_views, to_views
from pufferfish.loss.composed import View
from pufferfish.loss.divergence import MemoryLimitError
from pufferfish.pipeline.request import TableRequest
from pufferfish.priors.joint import MISSING_NUMBER
from pufferfish.tables.kept import KeptColumn
from pufferfish.tables.perturb import ReleasedColumn
from pufferfish.tables.source import DataError


@dataclass(frozen=True)
class RecordLoss:
    """The exact loss of the whole written record (released and kept columns) at the estimate.

    Attributes
    ----------
    loss : float or None
        Nats (``inf`` when a record can be written under one secret of a pair only), with the
        check's rounding bound added; None when it cannot be measured (``why``).
    pair : (str, str) or None
        The pair that decides it.
    record : tuple of str
        The written record where it is attained, one entry per view (released values as numbers
        or label codes of the release, kept columns' labels).
    why : str
        Why no figure (empty when measured).
    """

    loss: float | None
    pair: tuple[str, str] | None = None
    record: tuple[str, ...] = ()
    why: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (``inf`` as the string ``"inf"``)."""
        loss: Any = self.loss
        if loss is not None and loss == float("inf"):
            loss = "inf"
        return {
            "loss": loss,
            "pair": None if self.pair is None else list(self.pair),
            "record": list(self.record),
            "not_measured": self.why or None,
            "at": "the estimated joint priors of the released and kept columns (the point estimate)",
        }

    def sentence(self) -> str:
        """The figure in words, for the guarantee."""
        if self.loss is None:
            return f"the whole written record's loss cannot be measured here ({self.why})"
        loss = "inf" if self.loss == float("inf") else f"{self.loss:.6g}"
        assert self.pair is not None
        return (
            f"the whole written record's exact loss at the estimate is {loss} (pair {self.pair[0]!r} vs "
            f"{self.pair[1]!r}, record ({', '.join(self.record)}))"
        )


def record_loss(
    request: TableRequest,
    columns: Sequence[ReleasedColumn],
    kept: Sequence[KeptColumn],
    *,
    noise: str,
    sampler: str | None,
) -> RecordLoss | None:
    """The exact loss of the whole written record at the estimate (module docstring), or None
    without a column kept outside the check.

    Parameters
    ----------
    request : TableRequest
        The release's request (table, secret, pairs, weight, how missing cells are read).
    columns : sequence of ReleasedColumn
        The columns as drawn (:func:`pufferfish.pipeline.draws.released_columns`), those kept
        inside the check included.
    kept : sequence of KeptColumn
        The columns kept in clear outside the check.
    noise : {"laplace", "gaussian"}
    sampler : {"exact", "opendp"} or None
        The secure sampler whose grid the release rounds to, or None for a seeded draw.

    Returns
    -------
    RecordLoss or None
    """
    if not kept:
        return None
    from pufferfish.tables.estimate import estimate_joint

    names = tuple(k.column for k in kept)
    records = record_views(columns, noise=noise, sampler=sampler)
    released = tuple(str(r["column"]) for r in records)
    categorical = [str(r["column"]) for r in records if r["read_as"] == "categorical"]
    try:
        est = estimate_joint(
            request.source, secret=request.secret, columns=(*released, *names), pairs=list(request.pairs),
            weight=request.weight, categorical=categorical,
            numeric=[c for c in released if c not in categorical], engine=request.engine,
            spark=request.spark, missing=request.missing, keep=names,
        )  # fmt: skip
    except (ValueError, DataError) as exc:  # e.g. more distinct tuples than the priors hold
        return RecordLoss(None, why=f"the joint priors cannot be estimated: {exc}")
    for k, name in enumerate(names):
        if len(est.labels[len(released) + k]) >= est.rows_total - est.rows_dropped > 1:
            return RecordLoss(
                None,
                why=f"{name!r} holds a different value on every row, an identifier: the estimate gives each "
                "value one secret only",
            )
    positions = {c: k for k, c in enumerate(est.columns)}
    kinds = tuple("categorical" if cat else "numeric" for cat in est.categorical)
    try:
        views = to_views(records, positions, est.labels, release=0)
    except Unsupported as exc:
        return RecordLoss(None, why=str(exc).replace(" (release 0)", ""))
    views += [View(positions[n], "identity", name=n) for n in names]
    try:
        _, pairs = joint_loss(views, JointPriors(est.columns, kinds, est))
    except MemoryLimitError as exc:
        return RecordLoss(None, why=str(exc))
    worst = max(pairs, key=lambda p: p.loss + p.error_bound)
    shown = []
    for k, (view, value) in enumerate(zip(views, worst.worst_output, strict=True)):
        labels = est.labels[view.coordinate]
        if view.kind == "matrix":  # an output of the release's mapping: its label
            shown.append(repr(records[k]["labels"][int(value)]))
        elif view.kind == "identity" and labels:
            shown.append(repr(labels[int(value)]))
        else:
            shown.append("missing" if value >= MISSING_NUMBER else f"{value:.6g}")
    return RecordLoss(worst.loss + worst.error_bound, worst.pair, tuple(shown))
