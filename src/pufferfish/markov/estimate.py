"""A Markov chain estimated from a table of time series, and the confidence set around it.

The table has one row per person and time step: an id column, a time column (numbers, dates or
timestamps; a text column whose values are all numbers, or all dates, is read as such, and any
other value is an error naming it) and a state column whose values are the labels as written.
DuckDB (or Spark) counts, inside each id ordered by time, the transitions ``(X_t, X_{t+1})``
(pooled over ids), the first states, and each id's length and visits to every state; no row
leaves the engine.

Time is read as time (issue 43). The step of the series is the smallest difference between two
consecutive times of an id, over the table. A series is *broken* where two consecutive times are
further apart than one step (a gap) and around a row whose state is missing (a step whose state
is unknown is never bridged); the pieces between breaks are the *segments*. Transitions are
counted within segments only (never across a break), each segment's first state is a first
state, and the lengths calibrated are the segments'. Rows without an id or a time are left out
and counted. A release is one count per id: it refuses a table with breaks (it would need the
priors of a count over a series with holes), naming the first.

The transition matrix is the maximum-likelihood estimate ``n(a, b) / n(a)``; the chain starts from
its stationary distribution (default) or from the empirical distribution of the first states.

The confidence set is a product of L1 balls, one per row: by Weissman, Ordentlich, Seroussi,
Verdu and Weinberger ("Inequalities for the L1 deviation of the empirical distribution", HP Labs
2003, Thm 2.1), ``P(||p_hat - p||_1 >= r) <= (2^k - 2) e^{-n r^2 / 2}`` for a row estimated from
``n`` transitions, so with a union bound over the ``k`` rows the radius
``r_a = sqrt(2 (log(2^k - 2) + log(k / alpha)) / n_a)`` covers every row at once with probability
at least ``1 - alpha``. Three scales are certified over that infinite set: for a binary chain the
smallest scale a branch and bound certifies over the whole set (:mod:`.setopt`), MQMApprox with
bounds on mixing and stationary mass that hold for every chain of it (:mod:`.rowballs`,
:func:`~.quilts.row_balls_sigma`) and group DP. Every other scale is checked on a finite list of
its chains, the estimate and, for each row and each ordered pair of states, the chain that moves
``min(r_a / 2, p_hat(a, c))`` of row ``a``'s mass from ``c`` to ``b`` (one row at a time; the
loss of a count is not largest at these, so they are a list, never a certificate), and the result
says so: "over N listed chains: NOT a guarantee for the set".
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
from pufferfish.tables.duckdb_read import connect, open_table, read_error
from pufferfish.tables.source import (
    CsvOptions,
    DataError,
    TableSource,
    first_line,
    quote_identifier,
    resolve_source,
)

#: Work (about ``k^2 T^2`` per chain: its count priors) the listed chains of a set may take.
LISTED_WORK = 1.5e9

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
        Rows left out: a missing id or time (``missing_ids + missing_times``).
    segment_lengths : numpy.ndarray of int64
        The length of every segment (a series between breaks; one per id when none is broken).
    breaks : SeriesBreaks
        What broke the series: gaps in time, missing states, the rows left out.
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
    segment_lengths: NDArray[np.int64]
    breaks: SeriesBreaks

    def describe(self) -> dict[str, Any]:
        """JSON-ready summary (no id's counts)."""
        return {
            "source": self.source,
            "states": list(self.states),
            "transition_counts": self.transitions.tolist(),
            "first_state_counts": self.first.tolist(),
            "ids": len(self.ids),
            "lengths": {"min": int(self.lengths.min()), "max": int(self.lengths.max())},
            "segments": int(self.segment_lengths.size),
            "rows": self.rows,
            "rows_dropped": self.rows_dropped,
            "breaks": self.breaks.to_dict(),
        }


@dataclass(frozen=True)
class SeriesBreaks:
    """Where the series of a table are not one unbroken run of steps (module docstring).

    Attributes
    ----------
    step : float
        The step of the series: the smallest difference of consecutive times of an id (the
        time column's unit; seconds for dates and timestamps).
    time_kind : str
        ``"number"`` or ``"date"`` (dates and timestamps, as seconds).
    gaps : int
        Consecutive times of an id further apart than ``step``.
    missing_states : int
        Rows with an id and a time but no state (each breaks its series).
    missing_ids, missing_times : int
        Rows left out: no id, or an id and no time (where the step lies is unknown).
    ids_broken : int
        Ids whose series has at least one break.
    first : str or None
        The first break, in words (id and time), or None.
    """

    step: float
    time_kind: str
    gaps: int
    missing_states: int
    missing_ids: int
    missing_times: int
    ids_broken: int
    first: str | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "step": self.step,
            "time": self.time_kind,
            "gaps": self.gaps,
            "missing_states": self.missing_states,
            "missing_ids": self.missing_ids,
            "missing_times": self.missing_times,
            "ids_broken": self.ids_broken,
            "first": self.first,
        }

    def sentence(self) -> str | None:
        """One line on the breaks, or None when every series is whole."""
        if not (self.gaps or self.missing_states or self.missing_times or self.missing_ids):
            return None
        return (
            f"{self.gaps} gap(s) in time (step {self.step:g}) and {self.missing_states} missing state(s) "
            f"break the series of {self.ids_broken} id(s) (first: {self.first}); {self.missing_ids} row(s) "
            f"without an id and {self.missing_times} without a time left out; transitions are counted "
            "within the pieces"
        )


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
        time_type = str(rel.types[list(rel.columns).index(names[1])]).upper()

        def run(sql: str) -> list[Any]:
            return con.execute(sql).fetchall()

        def view(name: str, sql: str) -> None:
            con.execute(f"CREATE TEMP TABLE {name} AS {sql}")

        try:
            quoted = [quote_identifier(c) for c in names]
            return _series_counts(run, view, names, quoted, source, "VARCHAR", time_type, "epoch({})")
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

    time_type = dict(frame.dtypes)[names[1]].upper()
    try:
        quoted = ["`" + c.replace("`", "``") + "`" for c in names]  # Spark SQL's identifiers
        return _series_counts(
            run, view, names, quoted, source, "STRING", time_type, "CAST(CAST({} AS TIMESTAMP) AS DOUBLE)"
        )
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


_NUMBER_TYPES = ("TINYINT", "SMALLINT", "INT", "BIGINT", "HUGEINT", "LONG", "SHORT", "BYTE",
                 "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT", "INTEGER", "FLOAT",
                 "DOUBLE", "REAL", "DECIMAL", "NUMERIC")  # fmt: skip
_DATE_TYPES = ("DATE", "TIMESTAMP")
_TEXT_TYPES = ("VARCHAR", "STRING", "TEXT")


def _time_expression(
    run: Callable[[str], list[Any]], column: str, t: str, time_type: str, epoch: str
) -> tuple[str, str]:
    """The SQL of the time column as a number (``(expression, kind)``): numbers as they are,
    dates and timestamps as seconds (``epoch`` formats the engine's conversion), text only when
    every value is a number (or every value a date or timestamp).

    Raises
    ------
    DataError
        Naming the first value that is neither, or the column's type.
    """
    base = time_type.split("(")[0].strip()
    if base in _NUMBER_TYPES:
        return f"CAST({t} AS DOUBLE)", "number"
    if base.startswith(_DATE_TYPES):
        return epoch.format(t), "date"
    if base not in _TEXT_TYPES:
        raise DataError(f"time column {column!r} must hold numbers or dates, got type {time_type}")
    bad = run(f"SELECT {t} FROM series_raw WHERE {t} IS NOT NULL AND TRY_CAST({t} AS DOUBLE) IS NULL LIMIT 1")
    if not bad:
        return f"CAST({t} AS DOUBLE)", "number"
    undated = run(
        f"SELECT {t} FROM series_raw WHERE {t} IS NOT NULL AND TRY_CAST({t} AS TIMESTAMP) IS NULL LIMIT 1"
    )
    if not undated:
        return epoch.format(f"CAST({t} AS TIMESTAMP)"), "date"
    raise DataError(
        f"time column {column!r} must hold numbers or dates (text sorts '10' before '2'); {bad[0][0]!r} is "
        "not a number"
    )


def _series_counts(
    run: Callable[[str], list[Any]],
    view: Callable[[str, str], None],
    names: list[str],
    quoted: list[str],
    source: TableSource,
    text: str,
    time_type: str,
    epoch: str,
) -> SeriesTable:
    """The counting queries of :func:`read_series` on the table ``series_raw``, run by ``run``
    (rows) and ``view`` (a named intermediate table); ``quoted`` are the columns as the engine's
    SQL names them, ``text`` is its text type, ``time_type`` the time column's type and
    ``epoch`` the engine's seconds of a date (module docstring: breaks and segments)."""
    i, t, s = quoted
    tn, time_kind = _time_expression(run, names[1], t, time_type, epoch)
    total = _first(run("SELECT count(*) FROM series_raw"))
    missing_ids = _first(run(f"SELECT count(*) FROM series_raw WHERE {i} IS NULL"))
    missing_times = _first(run(f"SELECT count(*) FROM series_raw WHERE {i} IS NOT NULL AND {t} IS NULL"))
    view(
        "series",
        f"SELECT {i} AS i_raw, CAST({i} AS {text}) AS i, {tn} AS t, CAST({s} AS {text}) AS s "
        f"FROM series_raw WHERE {i} IS NOT NULL AND {t} IS NOT NULL",
    )
    dup = run("SELECT i, t FROM series GROUP BY i, t HAVING count(*) > 1 LIMIT 1")
    if dup:
        raise DataError(
            f"id {dup[0][0]!r} has two rows at time {dup[0][1]!r}: the order of its steps is unknown"
        )
    states = tuple(str(r[0]) for r in run("SELECT DISTINCT s FROM series WHERE s IS NOT NULL ORDER BY s"))
    if len(states) < 2:
        raise DataError(f"column {names[2]!r} holds {len(states)} state(s); a chain needs at least 2")
    view(
        "ordered",
        "SELECT i_raw, i, t, s, LAG(t) OVER (PARTITION BY i ORDER BY t) AS prev_t, "
        "LAG(s) OVER (PARTITION BY i ORDER BY t) AS prev_s, "
        "LAG(CASE WHEN s IS NULL THEN 1 ELSE 0 END) OVER (PARTITION BY i ORDER BY t) AS prev_missing "
        "FROM series",
    )
    step_row = run("SELECT min(t - prev_t) FROM ordered WHERE prev_t IS NOT NULL")
    step = float(step_row[0][0]) if step_row and step_row[0][0] is not None else 1.0
    # a row starts a segment when it is its id's first, follows a gap, or follows a missing state
    view(
        "steps",
        "SELECT i_raw, i, t, s, prev_s, CASE WHEN prev_t IS NULL OR t - prev_t > "
        f"{step!r} OR prev_missing = 1 THEN 1 ELSE 0 END AS starts, "
        f"CASE WHEN prev_t IS NOT NULL AND t - prev_t > {step!r} THEN 1 ELSE 0 END AS gap "
        "FROM ordered",
    )
    view(
        "segmented",
        "SELECT i_raw, i, t, s, prev_s, starts, sum(starts) OVER (PARTITION BY i ORDER BY t "
        "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS seg FROM steps WHERE s IS NOT NULL",
    )
    gaps = _first(run("SELECT count(*) FROM steps WHERE gap = 1"))
    missing_states = _first(run("SELECT count(*) FROM steps WHERE s IS NULL"))
    broken = run("SELECT i, min(t) FROM steps WHERE gap = 1 OR s IS NULL GROUP BY i ORDER BY min(t), i")
    first_break = None
    if broken:
        first_break = f"id {broken[0][0]!r} at time {_time_text(broken[0][1], time_kind)}"
    pairs = run("SELECT prev_s, s, count(*) FROM segmented WHERE starts = 0 GROUP BY prev_s, s")
    firsts = run("SELECT s, count(*) FROM segmented WHERE starts = 1 GROUP BY s")
    per_id = run(
        "SELECT i, min(t) AS start, count(*), min(i_raw) FROM segmented GROUP BY i ORDER BY start, min(i_raw)"
    )
    per_state = run("SELECT i, s, count(*) FROM segmented GROUP BY i, s")
    segments = run("SELECT count(*) FROM segmented GROUP BY i, seg")
    index = {name: n for n, name in enumerate(states)}
    k = len(states)
    transitions = np.zeros((k, k), dtype=np.int64)
    for a, b, n in pairs:
        transitions[index[a], index[b]] += int(n)
    first = np.zeros(k, dtype=np.int64)
    for a, n in firsts:
        first[index[a]] += int(n)
    if not transitions.sum():
        raise DataError("no id has two consecutive steps: there is no transition to estimate")
    ids = [str(r[0]) for r in per_id]
    lengths = np.array([int(r[2]) for r in per_id], dtype=np.int64)
    visits = np.zeros((len(ids), k), dtype=np.int64)
    row_of = {name: n for n, name in enumerate(ids)}
    for name, label, n in per_state:
        visits[row_of[str(name)], index[label]] += int(n)
    breaks = SeriesBreaks(
        step, time_kind, gaps, missing_states, missing_ids, missing_times, len(broken), first_break
    )
    return SeriesTable(
        source.description, states, transitions, first, ids, lengths, visits, total,
        missing_ids + missing_times, np.array(sorted(int(r[0]) for r in segments), dtype=np.int64), breaks,
    )  # fmt: skip


def _time_text(value: Any, kind: str) -> str:
    """A time as the table's unit says it: a number, or a UTC date-time for seconds."""
    if kind == "date":
        import datetime as dt

        return dt.datetime.fromtimestamp(float(value), tz=dt.timezone.utc).isoformat(sep=" ")
    return f"{float(value):g}"


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
    series: SeriesTable, chain: MarkovChain, confidence: float, target: str | None = None, length: int = 1
) -> tuple[tuple[MarkovChain, ...], dict[str, Any]]:
    """The chains of the confidence set a scale is checked on (module docstring), the estimate
    first, and the set's description.

    Chains whose stationary distribution is not unique (a move that disconnects the chain) are
    left out and counted. The moves are at most ``k^2 (k - 1)``; beyond what
    :data:`LISTED_WORK` allows at ``length`` (a chain's count priors cost about ``k^2 T^2``) the
    moves to and from ``target`` are listed first, then the others in order, and the description
    says how many of how many (the list is never a guarantee for the set: only its certified
    mechanisms are, whatever the list).
    """
    radii = row_radii(series, confidence)
    m = chain.transition
    k = chain.k
    start: Any = "stationary" if chain.stationary else chain.initial_distribution
    moves = [(a, b, c) for a in range(k) for b in range(k) for c in range(k) if b != c and m[a, c] > 0]
    room = max(1, int(LISTED_WORK // (k * k * max(1, length) ** 2)))
    if len(moves) > room and target is not None:
        t = chain.states.index(target)
        moves.sort(key=lambda move: (t not in move[1:], move))
    listed, total = moves[:room], len(moves)
    out = [chain]
    skipped = 0
    for a, b, c in listed:
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
        "certified_over_the_set": [
            "optimal-set (binary, stationary start)",
            "mqm-approx (stationary start)",
            "group-dp",
        ],
        "listed_chains": "the estimate and each row's move of min(r_a / 2, p(a, c)) from c to b, one row "
        "at a time: a scale checked on them only is NOT a guarantee for the set",
        "moves_listed": f"{len(listed)} of {total}"
        + ("" if len(listed) == total else f" (the work limit at T = {length}; those of the target first)"),
    }
    return tuple(out), description
