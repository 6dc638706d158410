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
class RowVectors:
    """Every statistic's per-row value at once: the distinct vectors ``(f_1(row), ..., f_d(row))``
    among the rows with the property and among those without, with their counts (the joint law of
    one row in each group, which :mod:`pufferfish.dataset.composition` checks).

    Attributes
    ----------
    with_support, without_support : numpy.ndarray of float64, shape (k, d), (m, d)
        Distinct vectors, sorted lexicographically; column ``j`` is statistic ``j``'s per-row
        value (a mean's is the row's value, not yet divided by ``n``).
    with_counts, without_counts : numpy.ndarray of int64, shape (k,), (m,)
        How many rows of each group have each vector (>= 1).
    """

    with_support: NDArray[np.float64]
    with_counts: NDArray[np.int64]
    without_support: NDArray[np.float64]
    without_counts: NDArray[np.int64]

    @property
    def dimension(self) -> int:
        """``d``, the number of statistics."""
        return int(self.with_support.shape[1])

    def pair_classes(self, i: int, j: int) -> NDArray[np.int64]:
        """For two count statistics ``i`` and ``j`` (per-row values 0 or 1): how many rows with the
        property (row 0) and without (row 1) have ``(f_i, f_j)`` = (0, 0), (0, 1), (1, 0), (1, 1)
        (columns ``2 f_i + f_j``), the input of
        :func:`~pufferfish.dataset.statistic.joint_count_prior`."""
        out = np.zeros((2, 4), dtype=np.int64)
        for g, (support, counts) in enumerate(
            ((self.with_support, self.with_counts), (self.without_support, self.without_counts))
        ):
            np.add.at(out[g], (2 * support[:, i] + support[:, j]).astype(np.int64), counts)
        return out


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
    vectors : RowVectors or None
        The statistics' per-row values jointly (:func:`read_property_table` always reads them).
        None only for a table built by hand: :attr:`row_vectors` then has them for one statistic.
    """

    prop: PropertySpec
    rows: int
    rows_left_out: int
    rows_with_property: int
    values: tuple[RowValues, ...]
    description: str
    vectors: RowVectors | None = None

    @property
    def share(self) -> float:
        """The table's own share of rows with the property (in [0, 1])."""
        return self.rows_with_property / self.rows

    @property
    def row_vectors(self) -> RowVectors:
        """:attr:`vectors`; for one statistic built by hand, its :class:`RowValues` as vectors.

        Raises
        ------
        ValueError
            If several statistics were built by hand without their joint per-row values.
        """
        if self.vectors is not None:
            return self.vectors
        if len(self.values) != 1:
            raise ValueError(
                f"the joint per-row values of the {len(self.values)} statistics are not known (vectors=None)"
            )
        v = self.values[0]
        with_, without = v.with_support[:, None], v.without_support[:, None]
        return RowVectors(with_, v.with_counts, without, v.without_counts)

    @property
    def pair_classes(self) -> NDArray[np.int64] | None:
        """For exactly two count statistics: how many rows with the property (row 0) and without
        (row 1) have the per-row values ``(f_1, f_2)`` = (0, 0), (0, 1), (1, 0), (1, 1) (columns
        ``2 f_1 + f_2``): their joint distribution, which
        :func:`~pufferfish.dataset.statistic.joint_count_prior` needs. None otherwise."""
        if len(self.values) != 2 or any(v.statistic.kind != "count" for v in self.values):
            return None
        return self.row_vectors.pair_classes(0, 1)


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
            vectors = _row_vectors(con, statistics, has, kept)
        except duckdb.Error as exc:
            raise read_error(exc, source.description) from None
    values = tuple(_row_values(vectors, j, s) for j, s in enumerate(statistics))
    left_out = int(total) - int(rows)
    return PropertyTable(prop, int(rows), left_out, int(with_prop), values, source.description, vectors)


def _row_vectors(
    con: duckdb.DuckDBPyConnection, statistics: Sequence[StatisticSpec], has: str, kept: str
) -> RowVectors:
    """The distinct per-row vectors of every statistic in each group, and their counts (one scan)."""
    exprs = ", ".join(_value_sql(s, has) for s in statistics)
    keys = ", ".join(str(k) for k in range(1, len(statistics) + 2))
    found = con.execute(
        f"SELECT {has}, {exprs}, count(*) FROM t WHERE {kept} GROUP BY {keys} ORDER BY {keys}"
    ).fetchnumpy()
    cols = list(found.values())
    group = np.asarray(cols[0], dtype=bool)
    support = np.column_stack([np.asarray(c, dtype=np.float64) for c in cols[1:-1]])
    counts = np.asarray(cols[-1], dtype=np.int64)
    bad = ~np.isfinite(support)
    if bad.any():
        j = int(np.nonzero(bad.any(axis=0))[0][0])
        s = statistics[j]
        v = support[bad[:, j], j][0]
        raise DataError(f"query {s.text!r}: column {s.column!r} holds a non-finite value {v!r}")
    return RowVectors(support[group], counts[group], support[~group], counts[~group])


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


def _row_values(vectors: RowVectors, j: int, s: StatisticSpec) -> RowValues:
    """Statistic ``j``'s per-row values in each group (the vectors' marginal) and the table's own
    statistic."""
    groups = []
    for support, counts in (
        (vectors.with_support, vectors.with_counts),
        (vectors.without_support, vectors.without_counts),
    ):
        xs, where = np.unique(support[:, j], return_inverse=True)
        summed = np.zeros(xs.size, dtype=np.int64)
        np.add.at(summed, where.ravel(), counts)
        groups.append((xs, summed))
    n_rows = int(vectors.with_counts.sum() + vectors.without_counts.sum())
    # as the model's distribution has it (pufferfish.multiuser.convolution.sum_distribution): the
    # exact sum of the rows' floats rounded once to the nearest float; a mean is that sum on the
    # release grid divided by n (pufferfish.dataset.statistic)
    exact = sum(
        (Fraction(x) * int(n) for xs, ns in groups for x, n in zip(xs.tolist(), ns.tolist(), strict=True)),
        Fraction(0),
    )
    total = float(exact)
    if s.kind == "mean":
        total = float(to_release_grid(total)) / n_rows
    (w, wn), (wo, won) = groups
    return RowValues(s, w, wn, wo, won, float(total))
