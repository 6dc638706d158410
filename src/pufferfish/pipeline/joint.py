"""Several public columns of a table calibrated and released jointly (issues 17 and 31):
``--public a,b`` and ``--unit col=w``.

The joint prior of the tuple of public columns given each secret value is the empirical joint
distribution on its distinct tuples (:class:`~pufferfish.priors.joint.JointPrior`, counted by DuckDB,
:func:`~pufferfish.tables.duckdb_engine.joint_aggregates`); a categorical column is coded
``0, 1, ...`` in the sorted order of its labels, a numeric column is used as it is. The metric
``d(x, x') = sum_k d_k(x_k, x'_k) / w_k`` (absolute difference on a numeric column, Hamming on a
categorical one) puts the columns on one scale: ``w_k`` from ``--unit``, by default the range of
a numeric column and 1 for a categorical one, so that changing any one column across its whole
range counts as one unit. The release is a product channel: ``Laplace(b w_k)`` on a numeric
column, a randomized response of log ratio at most ``1 / (b w_k)`` on a categorical one, which
keeps its labels. Every mechanism of the registry that applies to joint priors is compared
(:func:`~pufferfish.calibration.run_comparison`) and exactly checked on the joint alphabet: one
check for the whole tuple, as pufferfish privacy does not compose in general (Kifer and
Machanavajjhala 2014).

Prior sets (``--prior-set``, default ``dkw``): the L1 ball around each secret's empirical joint
distribution on the tuples of the pairs' groups (:mod:`pufferfish.priors.balls`), the worst case
over the balls checked exactly.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from pufferfish.calibration import run_comparison
from pufferfish.pipeline.request import TableRequest
from pufferfish.pipeline.results import TableCalibration
from pufferfish.priors.balls import joint_balls
from pufferfish.priors.distributions import to_release_grid
from pufferfish.priors.joint import JointPrior, Metric
from pufferfish.priors.scenario import AdversaryPrior, Scenario
from pufferfish.tables.estimate import check_kind_lists
from pufferfish.tables.model import EstimatedJointPriors, JointAggregates
from pufferfish.tables.source import DataError, check_markers_and_pairs

__all__ = ["calibrate_joint", "default_units"]


def default_units(
    given: Sequence[float | None], categorical: Sequence[bool], values: Sequence[Sequence[float]]
) -> tuple[float, ...]:
    """Each column's unit: as given, else 1 for a categorical column (a change of label) and the
    range ``max - min`` of a numeric column's values (1 if the column is constant).

    Parameters
    ----------
    given : sequence of float or None
        :func:`~pufferfish.pipeline.request.parse_units`.
    categorical : sequence of bool
    values : sequence of sequences of float
        The values of each column over the rows used (codes for a categorical one).
    """
    out = []
    for w, cat, vals in zip(given, categorical, values, strict=True):
        if w is None:
            span = float(max(vals) - min(vals)) if (len(vals) and not cat) else 0.0
            w = span if span > 0 and math.isfinite(span) else 1.0
        out.append(float(w))
    return tuple(out)


def _aggregates(request: TableRequest) -> JointAggregates:
    """The joint priors' counts from the request's engine (only aggregates reach Python)."""
    kinds = {c: "categorical" for c in request.categorical} | {c: "numeric" for c in request.numeric}
    args = dict(secret=request.secret, columns=request.columns, weight=request.weight, kinds=kinds)
    if request.engine == "spark":
        from pufferfish.tables.spark_engine import joint_aggregates as spark_aggregates

        return spark_aggregates(request.source, spark=request.spark, **args)  # type: ignore[arg-type]
    from pufferfish.tables.duckdb_engine import joint_aggregates

    return joint_aggregates(request.source, **args)  # type: ignore[arg-type]


def calibrate_joint(request: TableRequest) -> TableCalibration:
    """Estimate the joint priors of a validated request of ``d >= 2`` columns and compare every
    mechanism (:func:`~pufferfish.calibration.run_comparison`), each argument checked once at the
    edge (:func:`pufferfish.pipeline.calibrate.calibrate_table`).

    Parameters
    ----------
    request : TableRequest
        Two or more columns; ``units`` as given (None: :func:`default_units`); with
        ``default_set`` every mechanism that applies to joint priors (the others are not listed);
        ``prior_set`` the L1 balls' kind, confidence, radius.

    Returns
    -------
    TableCalibration
        With an :class:`~pufferfish.tables.model.EstimatedJointPriors` estimate, no fitted
        priors, Laplace noise.

    Raises
    ------
    ValueError
        On fewer than two columns, ``categorical``/``numeric`` naming a column twice or one that
        is not the secret, a public or the weight column, or more than
        :data:`~pufferfish.priors.joint.MAX_TUPLES` distinct tuples for a secret (the transport
        plans answer "not run" well before, beyond
        :data:`~pufferfish.transport.plans.MAX_PLAN_ENTRIES` entries).
    DataError
        If the table cannot be read, a column is unknown, or a secret of the pairs has no row.
    """
    source, secret, columns, pair_list = request.source, request.secret, request.columns, request.pairs
    if len(columns) < 2:
        raise ValueError(f"public must name two or more columns for a joint release, got {list(columns)}")
    check_kind_lists(
        request.categorical, request.numeric, secret=secret, public=columns, weight=request.weight
    )
    check_markers_and_pairs(source, pair_list)
    agg = _aggregates(request)
    codes = [{lab: float(k) for k, lab in enumerate(labs)} for labs in agg.labels]
    rows: dict[str, tuple[list[list[float]], list[float], list[float]]] = {}
    for s, values, n, n2 in agg.counts:  # numbers on the release grid, as every released value
        tup = [
            codes[k][v] if agg.categorical[k] else float(to_release_grid(float(v)))
            for k, v in enumerate(values)
        ]
        xs, ws, w2 = rows.setdefault(s, ([], [], []))
        xs.append(tup)
        ws.append(n)
        w2.append(n2)
    secrets = list(dict.fromkeys(s for pair in pair_list for s in pair))
    missing = [s for s in secrets if s not in rows]
    if missing:
        raise DataError(
            f"secret value(s) {missing} of the pairs have no row with every public column present"
        )
    conditionals = {s: JointPrior.from_rows(np.array(rows[s][0]), np.array(rows[s][1])) for s in secrets}
    every = [r for xs, _, _ in rows.values() for r in xs]
    w = default_units(request.units, agg.categorical, list(zip(*every, strict=True)))
    metric = Metric(
        w, tuple(len(labs) if cat else 0 for labs, cat in zip(agg.labels, agg.categorical, strict=True))
    )
    kind, confidence, radius = request.prior_set
    balls = None
    if kind != "none":
        sizes = {s: sum(rows[s][1]) ** 2 / sum(rows[s][2]) for s in secrets}  # Kish (rows unweighted)
        balls = joint_balls(conditionals, sizes, confidence=confidence, requested=kind, radius=radius)
    scenario = Scenario(tuple(pair_list), (AdversaryPrior("empirical", conditionals, balls),), metric)
    mechanisms = None if request.default_set else request.mechanisms  # None: every one that applies
    comparison = run_comparison(
        scenario, request.epsilons, mechanisms, delta=request.delta, noise="laplace",
        time_limit=request.time_limit,
    )  # fmt: skip
    description = str(source.data) if source.path is not None else type(source.data).__name__
    inputs = {
        "data": description,
        "secret": secret,
        "columns": list(columns),
        "units": list(w),
        "pairs": [list(p) for p in pair_list],
        "epsilons": list(request.epsilons),
        "noise": "laplace",
        "delta": request.delta,
        "weight": request.weight,
        "engine": request.engine,
        "prior_set": kind,
        "confidence": confidence if radius is None else None,
        "prior_radius": radius,
    }
    estimated = EstimatedJointPriors(
        scenario, secret, columns, request.weight, agg.categorical, agg.labels, w, agg.rows_total,
        agg.rows_dropped, description,
    )  # fmt: skip
    return TableCalibration(inputs, estimated, None, comparison, request.epsilons, request.delta, "laplace")
