"""A Markov chain estimated from a table of time series, and the confidence set around it.

The table has one row per person and time step: an id column, a time column (anything DuckDB
orders: numbers, dates, text) and a state column whose values are the labels as written. DuckDB
counts, inside each id ordered by time, the transitions ``(X_t, X_{t+1})`` (pooled over ids), the
first states, and each id's length and visits to every state; no row leaves DuckDB.

The transition matrix is the maximum-likelihood estimate ``n(a, b) / n(a)``; the chain starts from
its stationary distribution (default) or from the empirical distribution of the first states.

The confidence set is a product of L1 balls, one per row: by Weissman, Ordentlich, Seroussi,
Verdu and Weinberger ("Inequalities for the L1 deviation of the empirical distribution", HP Labs
2003, Thm 2.1), ``P(||p_hat - p||_1 >= r) <= (2^k - 2) e^{-n r^2 / 2}`` for a row estimated from
``n`` transitions, so with a union bound over the ``k`` rows the radius
``r_a = sqrt(2 (log(2^k - 2) + log(k / alpha)) / n_a)`` covers every row at once with probability
at least ``1 - alpha``. A scale is not certified over that infinite set: it is checked on a finite
list of its chains, the estimate and, for each row and each ordered pair of states, the chain
that moves ``min(r_a / 2, p_hat(a, c))`` of row ``a``'s mass from ``c`` to ``b`` (the vertices of
the ball in the simplex along the coordinate directions), and the result says so.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np
from numpy.typing import NDArray

from pufferfish.markov.chain import MarkovChain
from pufferfish.tables.duckdb_engine import connect, open_table, read_error
from pufferfish.tables.source import (
    CsvOptions,
    DataError,
    TableSource,
    first_line,
    quote_identifier,
    resolve_source,
)

#: Starting distributions of an estimated chain.
ESTIMATED_INITIALS = ("stationary", "empirical")


@dataclass(frozen=True)
class SeriesTable:
    """What a table of time series says about a chain (aggregates only).

    Attributes
    ----------
    source : str
        The table, as named.
    states : tuple of str
        The state labels as written, sorted.
    transitions : numpy.ndarray of int64, shape (k, k)
        ``n(a, b)``: steps from ``a`` to ``b`` within an id, pooled.
    first : numpy.ndarray of int64, shape (k,)
        First state of each id, counted.
    ids : list of str
        The ids as written, in their first order of appearance by time.
    lengths : numpy.ndarray of int64, shape (n_ids,)
        Each id's number of steps ``T``.
    visits : numpy.ndarray of int64, shape (n_ids, k)
        Each id's visits to every state (the true counts: released only with noise).
    rows : int
        Rows read.
    rows_dropped : int
        Rows left out (a missing id, time or state).
    """

    source: str
    states: tuple[str, ...]
    transitions: NDArray[np.int64]
    first: NDArray[np.int64]
    ids: list[str]
    lengths: NDArray[np.int64]
    visits: NDArray[np.int64]
    rows: int
    rows_dropped: int

    def describe(self) -> dict[str, Any]:
        """JSON-ready summary (no id's counts)."""
        return {
            "source": self.source,
            "states": list(self.states),
            "transition_counts": self.transitions.tolist(),
            "first_state_counts": self.first.tolist(),
            "ids": len(self.ids),
            "lengths": {"min": int(self.lengths.min()), "max": int(self.lengths.max())},
            "rows": self.rows,
            "rows_dropped": self.rows_dropped,
        }


def read_series(
    data: Any,
    *,
    id_column: str,
    time_column: str,
    state_column: str,
    csv_options: CsvOptions | None = None,
    engine: str = "duckdb",
    spark: Any = None,
) -> SeriesTable:
    """Count the transitions, first states, lengths and visits of every id (module docstring).

    Parameters
    ----------
    data : str, pathlib.Path, pandas.DataFrame, pyspark.sql.DataFrame or TableSource
        A CSV or Parquet file, a shipped data set name, or a DataFrame (pandas for DuckDB, Spark
        for Spark).
    id_column, time_column, state_column : str
        Columns of the table (distinct).
    csv_options : CsvOptions, optional
        How to read a CSV.
    engine : {"duckdb", "spark"}
        Who runs the counting queries (the same SQL; only aggregates reach Python: a few
        numbers per state pair, and per id its length and visits).
    spark : pyspark.sql.SparkSession, optional
        The Spark session (default the active one, else a local one).

    Returns
    -------
    SeriesTable

    Raises
    ------
    DataError
        If the table cannot be read, a column is missing, two rows of one id share a time, fewer
        than two states occur, or no id has two steps.
    ValueError
        If two of the column names are the same, or on another engine.
    """
    names = [id_column, time_column, state_column]
    if len(set(names)) != 3:
        raise ValueError(f"--id, --time and --state must be three different columns, got {names}")
    source: TableSource = resolve_source(data, engine, csv_options)
    if engine == "spark":
        return _read_series_spark(source, names, spark)
    with connect() as con:
        rel = open_table(con, source, text_columns=[names[2]] if source.kind == "csv" else ())
        _check_columns(names, list(rel.columns), source)
        con.register("series_raw", rel)

        def run(sql: str) -> list[Any]:
            return con.execute(sql).fetchall()

        def view(name: str, sql: str) -> None:
            con.execute(f"CREATE TEMP TABLE {name} AS {sql}")

        try:
            return _series_counts(run, view, names, [quote_identifier(c) for c in names], source, "VARCHAR")
        except duckdb.Error as exc:  # an interrupt stays an interrupt (read_error)
            raise read_error(exc, repr(source.description)) from None


def _read_series_spark(source: TableSource, names: list[str], spark: Any) -> SeriesTable:
    """:func:`read_series` with Spark SQL (the same queries, on temporary views)."""
    from pufferfish.tables.spark_engine import read_table, spark_session

    session = spark_session(spark)
    frame = read_table(session, source, text_columns=[names[2]])
    _check_columns(names, list(frame.columns), source)
    frame.createOrReplaceTempView("series_raw")

    def run(sql: str) -> list[Any]:
        return [tuple(row) for row in session.sql(sql).collect()]

    def view(name: str, sql: str) -> None:
        session.sql(f"CREATE OR REPLACE TEMPORARY VIEW {name} AS {sql}")

    try:
        quoted = ["`" + c.replace("`", "``") + "`" for c in names]  # Spark SQL's identifiers
        return _series_counts(run, view, names, quoted, source, "STRING")
    except DataError:
        raise
    except Exception as exc:  # Spark raises AnalysisException and Py4J errors
        raise DataError(
            f"cannot count the series of {source.description} with Spark: {first_line(exc)}"
        ) from None


def _check_columns(names: list[str], columns: list[str], source: TableSource) -> None:
    missing = [c for c in names if c not in columns]
    if missing:
        raise DataError(f"column {missing[0]!r} is not in {source.description}; columns: {columns}")


def _series_counts(
    run: Callable[[str], list[Any]],
    view: Callable[[str, str], None],
    names: list[str],
    quoted: list[str],
    source: TableSource,
    text: str,
) -> SeriesTable:
    """The counting queries of :func:`read_series` on the table ``series_raw``, run by ``run``
    (rows) and ``view`` (a named intermediate table); ``quoted`` are the columns as the engine's
    SQL names them, ``text`` is its text type."""
    i, t, s = quoted
    view(
        "series",
        f"SELECT CAST({i} AS {text}) AS i, {t} AS t, CAST({s} AS {text}) AS s FROM series_raw "
        f"WHERE {i} IS NOT NULL AND {t} IS NOT NULL AND {s} IS NOT NULL",
    )
    total = _first(run("SELECT count(*) FROM series_raw"))
    kept = _first(run("SELECT count(*) FROM series"))
    dup = run("SELECT i, t FROM series GROUP BY i, t HAVING count(*) > 1 LIMIT 1")
    if dup:
        raise DataError(
            f"id {dup[0][0]!r} has two rows at time {dup[0][1]!r}: the order of its steps is unknown"
        )
    states = tuple(str(r[0]) for r in run("SELECT DISTINCT s FROM series ORDER BY s"))
    if len(states) < 2:
        raise DataError(f"column {names[2]!r} holds {len(states)} state(s); a chain needs at least 2")
    view(
        "steps",
        "SELECT i, t, s, LAG(s) OVER (PARTITION BY i ORDER BY t) AS prev, "
        "row_number() OVER (PARTITION BY i ORDER BY t) AS n FROM series",
    )
    pairs = run("SELECT prev, s, count(*) FROM steps WHERE prev IS NOT NULL GROUP BY prev, s")
    firsts = run("SELECT s, count(*) FROM steps WHERE n = 1 GROUP BY s")
    per_id = run("SELECT i, min(t) AS start, count(*) FROM steps GROUP BY i ORDER BY start, i")
    per_state = run("SELECT i, s, count(*) FROM steps GROUP BY i, s")
    index = {name: n for n, name in enumerate(states)}
    k = len(states)
    transitions = np.zeros((k, k), dtype=np.int64)
    for a, b, n in pairs:
        transitions[index[a], index[b]] += int(n)
    first = np.zeros(k, dtype=np.int64)
    for a, n in firsts:
        first[index[a]] += int(n)
    if not transitions.sum():
        raise DataError("no id has two steps: there is no transition to estimate")
    ids = [str(r[0]) for r in per_id]
    lengths = np.array([int(r[2]) for r in per_id], dtype=np.int64)
    visits = np.zeros((len(ids), k), dtype=np.int64)
    row_of = {name: n for n, name in enumerate(ids)}
    for name, label, n in per_state:
        visits[row_of[str(name)], index[label]] += int(n)
    return SeriesTable(
        source.description, states, transitions, first, ids, lengths, visits, total, total - kept
    )


def _first(rows: list[Any]) -> int:
    return int(rows[0][0]) if rows else 0


def estimated_chain(series: SeriesTable, initial: str = "stationary") -> MarkovChain:
    """The maximum-likelihood chain ``n(a, b) / n(a)``.

    Parameters
    ----------
    series : SeriesTable
    initial : {"stationary", "empirical"}
        Start from the chain's stationary distribution, or from the distribution of the first
        states.

    Raises
    ------
    DataError
        If a state is never followed by another step (its row cannot be estimated).
    ValueError
        On another ``initial``, or a stationary start of a chain with several closed classes.
    """
    if initial not in ESTIMATED_INITIALS:
        raise ValueError(f"initial must be one of {', '.join(ESTIMATED_INITIALS)}, got {initial!r}")
    rows = series.transitions.sum(axis=1)
    if np.any(rows == 0):
        label = series.states[int(np.flatnonzero(rows == 0)[0])]
        raise DataError(
            f"state {label!r} is never followed by another step: its transition row cannot be estimated"
        )
    m = series.transitions / rows[:, None]
    start: Any = "stationary" if initial == "stationary" else series.first / series.first.sum()
    return MarkovChain(m, start, series.states)


def row_radii(series: SeriesTable, confidence: float) -> NDArray[np.float64]:
    """``r_a = sqrt(2 (log(2^k - 2) + log(k / alpha)) / n_a)`` per row (module docstring)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    k = len(series.states)
    alpha = 1.0 - confidence
    n = series.transitions.sum(axis=1).astype(np.float64)
    return np.sqrt(2.0 * (math.log(2.0**k - 2.0) + math.log(k / alpha)) / n)


def confidence_chains(
    series: SeriesTable, chain: MarkovChain, confidence: float
) -> tuple[tuple[MarkovChain, ...], dict[str, Any]]:
    """The chains of the confidence set a scale is checked on (module docstring), the estimate
    first, and the set's description.

    Chains whose stationary distribution is not unique (a move that disconnects the chain) are
    left out and counted.
    """
    radii = row_radii(series, confidence)
    m = chain.transition
    k = chain.k
    start: Any = "stationary" if chain.stationary else chain.initial_distribution
    out = [chain]
    skipped = 0
    for a in range(k):
        for b in range(k):
            for c in range(k):
                if b == c or m[a, c] == 0:
                    continue
                moved = m.copy()
                step = min(radii[a] / 2.0, m[a, c])
                moved[a, c] -= step
                moved[a, b] += step
                try:
                    out.append(MarkovChain(moved, start, chain.states))
                except ValueError:
                    skipped += 1
    description = {
        "kind": "l1-rows",
        "confidence": confidence,
        "radius": {label: float(r) for label, r in zip(chain.states, radii, strict=True)},
        "bound": "Weissman et al. 2003 Thm 2.1, union bound over the rows",
        "chains_checked": len(out),
        "chains_skipped": skipped,
        "certified": False,
    }
    return tuple(out), description
