"""The tuples, units and prior sets of a joint estimate (issues 17, 31, 41): the steps of
:func:`pufferfish.tables.estimate.estimate_joint` that turn a table's counts into joint priors on
a metric, with the declared domain of the one numeric column (:mod:`pufferfish.priors.bands`) and
the missing atom of each numeric column (:data:`pufferfish.priors.joint.MISSING_NUMBER`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from pufferfish.priors.distributions import to_release_grid
from pufferfish.priors.joint import MISSING_NUMBER
from pufferfish.tables.domain import domain_grid, grid_gap
from pufferfish.tables.model import SecretGroup, TableAggregates
from pufferfish.tables.source import DataError

__all__ = ["bounded_column", "check_number", "default_units", "joint_rows", "joint_sets", "missing_atoms"]


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


def joint_rows(
    agg: TableAggregates,
    columns: Sequence[str],
    codes: list[dict[str, float]],
    bounded: int | None,
    bounds: tuple[float, float],
) -> tuple[dict[str, tuple[list[list[float]], list[float]]], dict[str, SecretGroup], int]:
    """Per secret the tuples (label codes; numbers clamped into ``bounds`` on the release grid,
    as every released value; a missing number :data:`MISSING_NUMBER`) and their weights, the
    groups' sizes, and the rows clamped."""
    lo, hi = bounds
    rows: dict[str, tuple[list[list[float]], list[float]]] = {}
    groups: dict[str, SecretGroup] = {}
    clamped = 0
    for s, values, n_rows, n, n2 in agg.counts:  # numbers on the release grid, as every released value
        if bounded is not None and values[bounded] is not None and not lo <= float(values[bounded]) <= hi:
            clamped += n_rows
        tup = [
            codes[k][v]
            if agg.categorical[k]
            else MISSING_NUMBER  # the column's missing atom (released as missing)
            if v is None
            else check_number(float(to_release_grid(min(max(float(v), lo), hi))), columns[k])
            for k, v in enumerate(values)
        ]
        rows.setdefault(s, ([], []))[0].append(tup)
        rows[s][1].append(n)
        g = groups.get(s, SecretGroup(s, 0, 0.0, 0.0))
        groups[s] = SecretGroup(s, g.rows + n_rows, g.weight + n, g.weight_sq + n2)
    return rows, groups, clamped


def check_number(value: float, column: str) -> float:
    """A present number of a joint release, below the missing atom :data:`MISSING_NUMBER`."""
    if value >= MISSING_NUMBER:
        raise DataError(f"public column {column!r} holds {value!r}, the value a missing number has here")
    return value


def joint_sets(
    conditionals: Mapping[str, Any],
    sizes: Mapping[str, float],
    categories: tuple[int, ...],
    prior_set: tuple[str, float, float | None],
    bounded: int | None,
    bounds: tuple[float, float],
) -> tuple[Any, float]:
    """The prior sets of :func:`estimate_joint` and the grid's largest gap: None without a set;
    the L1 balls on the tuples seen without bounds; with them the DKW bands on every label tuple
    times the bounds' grid and the values seen (:mod:`pufferfish.priors.bands`)."""
    from pufferfish.priors.balls import joint_balls
    from pufferfish.priors.bands import joint_bands

    kind, confidence, radius = prior_set
    if kind == "none":
        return None, 0.0
    if bounded is None:
        return joint_balls(conditionals, sizes, confidence=confidence, requested=kind, radius=radius), 0.0
    seen = np.concatenate([p.support[:, bounded] for p in conditionals.values()])
    alphabet = np.unique(np.concatenate([seen, domain_grid(*bounds)]))
    bands = joint_bands(
        conditionals, sizes, categories, alphabet, confidence=confidence, requested=kind, radius=radius
    )
    return bands, grid_gap(alphabet[alphabet != MISSING_NUMBER])  # the atom does not move


def bounded_column(
    columns: Sequence[str], categorical: Sequence[bool], bounds: tuple[float, float] | None
) -> int | None:
    """The position of the column ``bounds`` declare: the one numeric column (None without bounds).

    Raises
    ------
    ValueError
        If ``bounds`` are given and the columns do not hold exactly one numeric column.
    """
    if bounds is None:
        return None
    numeric = [c for c, cat in zip(columns, categorical, strict=True) if not cat]
    if len(numeric) != 1:
        raise ValueError(
            "bounds declare the domain of the one numeric column of a joint release; got "
            f"{len(numeric)} numeric columns {numeric}: no prior set is built here on a declared domain of "
            "several numeric columns (leave out --bounds, or release the numeric columns one at a time)"
        )
    return columns.index(numeric[0])


def missing_atoms(conditionals: Mapping[str, Any], columns: Sequence[str]) -> tuple[bool, ...]:
    """Per column: whether a joint prior holds its missing atom (a missing number,
    :data:`MISSING_NUMBER`), for :attr:`pufferfish.priors.joint.Metric.missing` (with declared
    bounds the atom is the last value of the band's alphabet, :mod:`pufferfish.priors.bands`)."""
    return tuple(
        any(MISSING_NUMBER in p.support[:, k] for p in conditionals.values()) for k in range(len(columns))
    )
