"""Several public columns of a table calibrated jointly (issue 17): ``--public a,b`` and
``--unit col=w``.

The joint prior of the tuple of public columns given each secret value is the empirical joint
distribution on its distinct tuples (:class:`~pufferfish.vector.JointPrior`, counted by DuckDB,
:func:`~pufferfish.tables.duckdb_engine.joint_aggregates`); a categorical column is coded
``0, 1, ...`` in the sorted order of its labels, a numeric column is used as it is. The metric
``d(x, x') = sum_k |x_k - x'_k| / w_k`` puts the columns on one scale (``w_k`` from ``--unit``,
default 1), and every mechanism of the registry that applies to joint priors is compared
(:func:`~pufferfish.calibration.run_comparison`): one check for the whole tuple, as pufferfish
privacy does not compose in general (Kifer and Machanavajjhala 2014).

Prior sets are not supported for several columns (the worst case over sets of joint priors is
not implemented); the guarantee is stated for the point estimate.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._checks import check_delta, check_epsilons
from .calibration import Calibration, MappingCalibration, Skipped, check_mechanisms, run_comparison
from .density import check_noise
from .scenario import AdversaryPrior, Scenario
from .tables.estimate import check_pairs
from .tables.source import DataError, resolve_source
from .vector import JointPrior, Metric

#: Why a joint release states its guarantee for the point estimate only.
NO_PRIOR_SETS = "prior sets are not supported for several columns: the guarantee is for the point estimate"


def parse_columns(public: str | Sequence[str]) -> tuple[str, ...]:
    """The public columns of ``"a,b"`` or ``["a", "b"]``: distinct, non-empty names.

    Raises
    ------
    ValueError
        On an empty name or a repeated column.
    """
    cols = tuple(c.strip() for c in public.split(",")) if isinstance(public, str) else tuple(public)
    if not cols or any(not isinstance(c, str) or not c for c in cols):
        raise ValueError(f"public must name columns 'a,b', got {public!r}")
    if len(set(cols)) != len(cols):
        raise ValueError(f"public must name distinct columns, got {public!r}")
    return cols


def parse_units(
    units: Mapping[str, float] | Iterable[str] | None, columns: Sequence[str]
) -> tuple[float, ...]:
    """The unit ``w_k`` of each column from ``{"col": w}`` or texts ``"col=w"`` (default 1).

    Raises
    ------
    ValueError
        On a text that is not ``col=w``, a column that is not public, or ``w`` not finite and > 0.
    """
    given: dict[str, float] = {}
    if isinstance(units, Mapping):
        given = {str(k): v for k, v in units.items()}
    elif units is not None:
        for text in units:
            name, sep, value = str(text).rpartition("=")
            if not sep or not name:
                raise ValueError(f"unit must be 'column=w', got {text!r}")
            try:
                given[name.strip()] = float(value)
            except ValueError:
                raise ValueError(f"unit of {name.strip()!r} must be a number, got {value!r}") from None
    for name, w in given.items():
        if name not in columns:
            raise ValueError(f"unit names column {name!r}, which is not a public column {list(columns)}")
        if not (isinstance(w, (int, float)) and math.isfinite(w) and w > 0):
            raise ValueError(f"unit of {name!r} must be finite and > 0, got {w!r}")
    return tuple(float(given.get(c, 1.0)) for c in columns)


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
        """The noise scale on each column, ``scale w_k``."""
        return {c: scale * w for c, w in zip(self.columns, self.units, strict=True)}

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
            "prior_set": {"kind": "none", "reason": NO_PRIOR_SETS},
            "results": rows,
        }


def calibrate_joint_table(
    data: Any,
    *,
    secret: str,
    public: str | Sequence[str],
    pairs: Iterable[tuple[str, str] | str],
    epsilon: float | Iterable[float],
    units: Mapping[str, float] | Iterable[str] | None = None,
    mechanisms: Sequence[str] | None = None,
    weight: str | None = None,
    noise: str = "laplace",
    delta: float = 0.0,
    categorical: Sequence[str] = (),
    numeric: Sequence[str] = (),
) -> JointTableCalibration:
    """Estimate the joint priors of several public columns and compare every mechanism.

    Parameters
    ----------
    data : str, pathlib.Path or pandas.DataFrame
        CSV or Parquet file, DataFrame, or ``"adult"`` (DuckDB engine).
    secret : str
        Secret column.
    public : str or sequence of str
        Two or more public columns, ``"a,b"`` or a list.
    pairs : iterable of (str, str) or str
        Discriminative pairs of secret values.
    epsilon : float or iterable of float
        Each finite and > 0.
    units : mapping or iterable of "col=w", optional
        ``w_k > 0`` per column (default 1): the metric ``sum_k |x_k - x'_k| / w_k``.
    mechanisms : sequence of str, optional
        Names from the registry (default: every (eps, delta)-PP mechanism that applies).
    weight : str, optional
        Frequency-weight column (numbers >= 0).
    noise : {"laplace", "gaussian"}
    delta : float
        In [0, 1). Laplace scales are checked as pure eps (which implies every delta); Gaussian
        scales on several columns are reported "not numerically checked".
    categorical, numeric : sequence of str
        Columns to read as labels or as numbers (default: by DuckDB's type).

    Returns
    -------
    JointTableCalibration

    Raises
    ------
    ValueError
        On a bad argument, fewer than two columns, or more than
        :data:`~pufferfish.vector.joint.MAX_TUPLES` distinct tuples for a secret (bin the columns).
    DataError
        If the table cannot be read, a column is unknown, or a secret of the pairs has no row.
    """
    from .tables.duckdb_engine import joint_aggregates

    columns = parse_columns(public)
    if len(columns) < 2:
        raise ValueError(f"public must name two or more columns for a joint release, got {list(columns)}")
    eps = check_epsilons([epsilon] if isinstance(epsilon, (int, float)) else list(epsilon))
    delta = check_delta(delta)
    noise = check_noise(noise)
    w = parse_units(units, columns)
    pair_list = check_pairs(pairs)
    mechs = check_mechanisms(mechanisms)
    kinds = {c: "categorical" for c in categorical} | {c: "numeric" for c in numeric}
    source = resolve_source(data, "duckdb")
    agg = joint_aggregates(source, secret=secret, columns=columns, weight=weight, kinds=kinds)
    codes = [{lab: float(k) for k, lab in enumerate(labs)} for labs in agg.labels]
    rows: dict[str, tuple[list[list[float]], list[float]]] = {}
    for s, values, n in agg.counts:
        tup = [codes[k][v] if agg.categorical[k] else float(v) for k, v in enumerate(values)]
        xs, ws = rows.setdefault(s, ([], []))
        xs.append(tup)
        ws.append(n)
    secrets = [s for pair in pair_list for s in pair]
    missing = [s for s in dict.fromkeys(secrets) if s not in rows]
    if missing:
        raise DataError(
            f"secret value(s) {missing} of the pairs have no row with every public column present"
        )
    conditionals = {
        s: JointPrior.from_rows(np.array(rows[s][0]), np.array(rows[s][1])) for s in dict.fromkeys(secrets)
    }
    scenario = Scenario(tuple(pair_list), (AdversaryPrior("empirical", conditionals),), Metric(w))
    comparison = run_comparison(scenario, eps, mechs, delta=delta, noise=noise)
    inputs = {
        "data": str(data) if isinstance(data, (str,)) or hasattr(data, "__fspath__") else type(data).__name__,
        "secret": secret,
        "columns": list(columns),
        "units": list(w),
        "pairs": [list(p) for p in pair_list],
        "epsilons": list(eps),
        "noise": noise,
        "delta": delta,
        "weight": weight,
    }
    return JointTableCalibration(
        inputs,
        columns,
        w,
        agg.categorical,
        agg.labels,
        scenario,
        comparison,
        agg.rows_total,
        agg.rows_dropped,
    )
