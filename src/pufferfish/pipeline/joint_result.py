"""The result of calibrating several public columns jointly: what :mod:`pufferfish.pipeline.joint`
computes and what the figures and the report read (:mod:`pufferfish.pipeline.figures`,
:mod:`pufferfish.pipeline.joint_report`), kept apart so that none of them imports the others back."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pufferfish.calibration import Calibration, MappingCalibration, Skipped
from pufferfish.priors.joint import JointPrior
from pufferfish.priors.scenario import Scenario

#: How the product channel treats each kind of column, in words (the CLI and the report).
CHANNEL_TEXT = (
    "scale b adds Laplace(b w_k) to a numeric column and draws a categorical column by a randomized "
    "response of log ratio at most 1 / (b w_k), which keeps its labels"
)


@dataclass(frozen=True, eq=False)
class JointTableCalibration:
    """The joint priors of several public columns and every mechanism's calibration.

    Attributes
    ----------
    inputs : mapping
        The request (data, secret, columns, units, pairs, epsilons, noise, delta, weight).
    columns : tuple of str
        The public columns, in the order of the tuples.
    units : tuple of float
        ``w_k`` of each column: a Laplace scale ``b`` adds ``Laplace(b w_k)`` to column ``k``.
    categorical : tuple of bool
        Per column: coded labels (``labels[k][c]`` has code ``c``) or numbers.
    labels : tuple of list of str
        Sorted labels of each categorical column (empty for numeric ones).
    scenario : Scenario
        Joint priors (one per secret of the pairs) and the metric.
    comparison : tuple of Calibration or Skipped
        Every mechanism at every epsilon (:func:`~pufferfish.calibration.run_comparison`).
    rows_total, rows_dropped : int
        Rows of the table, and rows left out of the priors (a missing value).
    """

    inputs: Mapping[str, Any]
    columns: tuple[str, ...]
    units: tuple[float, ...]
    categorical: tuple[bool, ...]
    labels: tuple[list[str], ...]
    scenario: Scenario
    comparison: tuple[Calibration | MappingCalibration | Skipped, ...]
    rows_total: int
    rows_dropped: int

    def priors(self) -> dict[str, JointPrior]:
        """The joint prior of each secret value of the pairs."""
        return {s: p for s, p in self.scenario.priors[0].conditionals.items() if isinstance(p, JointPrior)}

    def column_scales(self, scale: float) -> dict[str, float]:
        """The scale of each column's channel, ``scale w_k`` (a categorical column's randomized
        response has log ratio at most ``1 / (scale w_k)``)."""
        return {c: scale * w for c, w in zip(self.columns, self.units, strict=True)}

    def prior_set(self) -> dict[str, Any]:
        """The prior sets' summary (:func:`pufferfish.priors.sets.set_summary`): kind, confidence,
        radius per secret, what was requested and the alphabet's size; kind ``none`` for the
        point estimate."""
        return self.scenario.priors[0].set_summary()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary: inputs, columns and units, the priors' sizes, and one row per
        result (as :meth:`Calibration.to_dict`, plus ``columns``, ``units`` and
        ``column_scales``)."""
        rows = []
        for c in self.comparison:
            row = c.to_dict()
            row.update(columns=list(self.columns), units=list(self.units))
            if isinstance(c, Calibration):
                row["column_scales"] = self.column_scales(c.scale)
            rows.append(row)
        return {
            "inputs": dict(self.inputs),
            "columns": list(self.columns),
            "units": list(self.units),
            "columns_read_as": {
                c: "categorical" if cat else "numeric"
                for c, cat in zip(self.columns, self.categorical, strict=True)
            },
            "labels": {
                c: lab for c, lab, cat in zip(self.columns, self.labels, self.categorical, strict=True) if cat
            },
            "rows_total": self.rows_total,
            "rows_dropped": self.rows_dropped,
            "tuples": {s: p.size for s, p in self.priors().items()},
            "prior_set": self.prior_set(),
            "channel": CHANNEL_TEXT,
            "results": rows,
        }
