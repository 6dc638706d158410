"""A table's rows as the dataset-level model reads them: per statistic, the per-row values of the
rows with the property and of those without, counted by DuckDB (rows never leave DuckDB).

The model (SPEC sec 8; Chen and Ohrimenko 2023, sec 5) draws each row with the property with
probability ``theta`` and then its other columns from the table's rows with the property (else
from those without): :class:`PropertyTable` holds those two empirical distributions of each
statistic's per-row value, and the table's own statistic (what a release adds noise to).

Rows left out, for every statistic alike: a missing cell in the property's column or in a column a
``sum`` or ``mean`` reads (a ``count:COLUMN=VALUE`` reads a missing cell as not ``VALUE``). The
number of rows ``n`` of a release is the number of rows kept.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import duckdb
import numpy as np
from numpy.typing import NDArray

from pufferfish.dataset.spec import PropertySpec, StatisticSpec
from pufferfish.priors.distributions import to_release_grid
from pufferfish.tables.duckdb_engine import is_numeric_type
from pufferfish.tables.duckdb_read import connect, copy_columns, open_table, read_error
from pufferfish.tables.source import DataError, quote_identifier, resolve_source


@dataclass(frozen=True)
class RowValues:
    """The per-row values of one statistic among the rows with the property and those without.

    Attributes
    ----------
    statistic : StatisticSpec
    with_support, without_support : numpy.ndarray of float64, shape (k,), (m,)
        Strictly increasing values ``f(row)``.
    with_counts, without_counts : numpy.ndarray of int64, shape (k,), (m,)
        How many rows of each group have each value (>= 1).
    total : float
        The statistic of the table itself: ``sum f(row)`` over the rows kept, exactly summed and
        rounded once (as the model's distribution rounds it); for a mean, that sum on the release
        grid divided by their number.
    """

    statistic: StatisticSpec
    with_support: NDArray[np.float64]
    with_counts: NDArray[np.int64]
    without_support: NDArray[np.float64]
    without_counts: NDArray[np.int64]
    total: float

    @property
    def value_range(self) -> float:
        """``max f - min f`` over both groups: how much one row changes the sum (>= 0)."""
        both = np.concatenate([self.with_support, self.without_support])
        return float(both.max() - both.min()) if both.size else 0.0


@dataclass(frozen=True)
class PropertyTable:
    """What the dataset-level model reads of a table (module docstring).

    Attributes
    ----------
    prop : PropertySpec
        The property.
    rows : int
        Rows kept (>= 1): the ``n`` of a release of this table.
    rows_left_out : int
        Rows with a missing cell in the property's column or a summed column.
    rows_with_property : int
        Rows kept that have the property (their share is the table's own ``theta``).
    values : tuple of RowValues
        One per statistic, in the order asked.
    description : str
        The table, for messages and reports.
    pair_classes : numpy.ndarray of int64, shape (2, 4), or None
        For exactly two count statistics: how many rows with the property (row 0) and without
        (row 1) have the per-row values ``(f_1, f_2)`` = (0, 0), (0, 1), (1, 0), (1, 1) (columns
        ``2 f_1 + f_2``): their joint distribution, which
        :func:`~pufferfish.dataset.statistic.joint_count_prior` needs. None otherwise.
    """

    prop: PropertySpec
    rows: int
    rows_left_out: int
    rows_with_property: int
    values: tuple[RowValues, ...]
    description: str
    pair_classes: NDArray[np.int64] | None = None

    @property
    def share(self) -> float:
        """The table's own share of rows with the property (in [0, 1])."""
        return self.rows_with_property / self.rows


def read_property_table(data: Any, prop: PropertySpec, statistics: Sequence[StatisticSpec]) -> PropertyTable:
    """Count a table's per-row values of each statistic, among rows with and without the property.

    Parameters
    ----------
    data : str, pathlib.Path or pandas.DataFrame
        A CSV or Parquet file, a shipped data set name (``adult``) or a DataFrame.
    prop : PropertySpec
        The property (its column must exist; numeric for ``>=``, ``>``, ``<=``, ``<``).
    statistics : sequence of StatisticSpec
        At least one; the columns of ``sum`` and ``mean`` must be numeric.

    Returns
    -------
    PropertyTable

    Raises
    ------
    DataError
        If the table cannot be read, a column is unknown or of the wrong kind, a summed value is
        not finite, no row is kept, or every kept row (or none) has the property.
    """
    source = resolve_source(data)
    with connect() as con:
        try:
            has, kept = _open(con, source, prop, statistics)
            total, rows, with_prop = con.execute(
                f"SELECT count(*), count(*) FILTER (WHERE {kept}), "
                f"count(*) FILTER (WHERE {kept} AND {has}) FROM t"
            ).fetchone()  # type: ignore[misc]
            _check_rows(int(rows), int(with_prop), prop)
            values = tuple(_row_values(con, s, has, kept, prop) for s in statistics)
            pairs = _pair_classes(con, statistics, has, kept)
        except duckdb.Error as exc:
            raise read_error(exc, source.description) from None
    left_out = int(total) - int(rows)
    return PropertyTable(prop, int(rows), left_out, int(with_prop), values, source.description, pairs)


def _pair_classes(
    con: duckdb.DuckDBPyConnection, statistics: Sequence[StatisticSpec], has: str, kept: str
) -> NDArray[np.int64] | None:
    """:attr:`PropertyTable.pair_classes` of two count statistics (None otherwise)."""
    if len(statistics) != 2 or any(s.kind != "count" for s in statistics):
        return None
    a, b = (_value_sql(s, has) for s in statistics)
    out = np.zeros((2, 4), dtype=np.int64)
    for h, v1, v2, n in con.execute(
        f"SELECT {has}, {a}, {b}, count(*) FROM t WHERE {kept} GROUP BY 1, 2, 3"
    ).fetchall():
        out[0 if h else 1, 2 * int(v1) + int(v2)] = int(n)
    return out


def _open(
    con: duckdb.DuckDBPyConnection, source: Any, prop: PropertySpec, statistics: Sequence[StatisticSpec]
) -> tuple[str, str]:
    """The table as ``t`` on ``con`` (its labels as written), its columns checked; returns the
    SQL of the property's predicate and of the rows kept (module docstring)."""
    rel = open_table(con, source)
    names = list(rel.columns)
    types = {c: str(t) for c, t in zip(rel.columns, rel.types, strict=True)}
    text = _check_columns(names, types, prop, statistics)
    if source.kind == "csv" and text:  # labels as written (not BOOLEAN, DATE or 7 for 007)
        rel = open_table(con, source, text_columns=text)
    if source.kind == "csv":  # the counts' queries each scan t: the file is parsed once
        copy_columns(con, rel, [prop.column, *(str(s.column) for s in statistics if s.column)])
    else:
        con.register("t", rel)
    kept = " AND ".join(
        [f"{quote_identifier(prop.column)} IS NOT NULL"]
        + [f"{quote_identifier(str(s.column))} IS NOT NULL" for s in statistics if s.kind != "count"]
    )
    return _predicate(prop), kept


def _check_columns(
    names: list[str], types: dict[str, str], prop: PropertySpec, statistics: Sequence[StatisticSpec]
) -> list[str]:
    """Each named column exists and is of the right kind; returns those read as text."""
    used = [("property", prop.column)] + [(f"query {s.text!r}", s.column) for s in statistics if s.column]
    for what, col in used:
        if col not in names:
            raise DataError(f"{what}: column {col!r} is not in the table; columns are {names}")
    if prop.numeric and not is_numeric_type(types[prop.column]):
        raise DataError(
            f"property {prop.text!r} compares a number, but column {prop.column!r} holds text "
            f"({types[prop.column]}): use {prop.column}=VALUE"
        )
    for s in statistics:
        if s.kind != "count" and not is_numeric_type(types[str(s.column)]):
            raise DataError(f"query {s.text!r}: column {s.column!r} is not numeric ({types[str(s.column)]})")
    text = [prop.column] if not prop.numeric else []
    text += [str(s.column) for s in statistics if s.kind == "count" and s.column]
    return list(dict.fromkeys(text))


def _predicate(prop: PropertySpec) -> str:
    col = quote_identifier(prop.column)
    if prop.numeric:
        return f"(CAST({col} AS DOUBLE) {prop.operator} {float(prop.value)!r})"
    value = prop.value.replace("'", "''")
    op = "=" if prop.operator == "=" else "<>"
    return f"(CAST({col} AS VARCHAR) {op} '{value}')"


def _check_rows(rows: int, with_prop: int, prop: PropertySpec) -> None:
    if rows == 0:
        raise DataError(
            f"no row has a value in the property's column {prop.column!r} (and each summed column)"
        )
    if with_prop in (0, rows):
        which = "no" if with_prop == 0 else "every"
        raise DataError(
            f"{which} row of the {rows} kept has the property {prop.text!r}: the model needs rows with "
            "it and rows without it (the labels are compared as written)"
        )


def _value_sql(s: StatisticSpec, has: str) -> str:
    """SQL of a row's value ``f(row)`` for statistic ``s`` (``has``: the property's predicate)."""
    if s.column is None:
        return f"CAST({has} AS INTEGER)"
    if s.kind == "count":
        label = str(s.value).replace("'", "''")
        return f"CAST(coalesce(CAST({quote_identifier(s.column)} AS VARCHAR) = '{label}', false) AS INTEGER)"
    return f"CAST({quote_identifier(s.column)} AS DOUBLE)"


def property_rows(
    data: Any, prop: PropertySpec, statistics: Sequence[StatisticSpec]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Each kept row's per-row values of every statistic, for simulations (:mod:`pufferfish.dataset.attack`).

    Parameters
    ----------
    data, prop, statistics
        As :func:`read_property_table` (same rules, rows kept and errors).

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        Shapes ``(rows with the property, d)`` and ``(rows without, d)``, float64: row ``i``'s
        ``f_k(row_i)`` for the ``d`` statistics, in the table's order. They hold the table's rows:
        confidential.
    """
    source = resolve_source(data)
    with connect() as con:
        try:
            has, kept = _open(con, source, prop, statistics)
            exprs = ", ".join(_value_sql(s, has) for s in statistics)
            out = []
            for want in ("", "NOT "):
                rows = con.execute(f"SELECT {exprs} FROM t WHERE {kept} AND {want}{has}").fetchnumpy()
                out.append(np.column_stack([np.asarray(v, dtype=np.float64) for v in rows.values()]))
        except duckdb.Error as exc:
            raise read_error(exc, source.description) from None
    return out[0], out[1]


def _row_values(
    con: duckdb.DuckDBPyConnection, s: StatisticSpec, has: str, kept: str, prop: PropertySpec
) -> RowValues:
    """The per-row value's counts in each group, and the table's own statistic."""
    value = _value_sql(s, has)
    rows = con.execute(
        f"SELECT {has}, {value}, count(*) FROM t WHERE {kept} GROUP BY 1, 2 ORDER BY 1, 2"
    ).fetchall()
    groups: dict[bool, list[tuple[float, int]]] = {True: [], False: []}
    for h, v, n in rows:
        x = float(v)
        if not math.isfinite(x):
            raise DataError(f"query {s.text!r}: column {s.column!r} holds a non-finite value {v!r}")
        groups[bool(h)].append((x, int(n)))
    n_rows = sum(n for g in groups.values() for _, n in g)
    # as the model's distribution has it (pufferfish.multiuser.convolution.sum_distribution): the
    # exact sum of the rows' floats rounded once to the nearest float; a mean is that sum on the
    # release grid divided by n (pufferfish.dataset.statistic)
    exact = sum((Fraction(x) * n for g in groups.values() for x, n in g), Fraction(0))
    total = float(exact)
    if s.kind == "mean":
        total = float(to_release_grid(total)) / n_rows
    w, wo = groups[True], groups[False]
    return RowValues(
        s,
        np.array([x for x, _ in w], dtype=np.float64),
        np.array([n for _, n in w], dtype=np.int64),
        np.array([x for x, _ in wo], dtype=np.float64),
        np.array([n for _, n in wo], dtype=np.int64),
        float(total),
    )
