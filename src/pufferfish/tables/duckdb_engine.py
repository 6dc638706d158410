"""The DuckDB engine (embedded, the default): read a table, aggregate it (one column, or several
columns' joint counts), stream a release.

The process's DuckDB database has a memory limit (:data:`~.duckdb_read.DUCKDB_MEMORY_LIMIT`;
each stage takes a cursor of it, :func:`~.duckdb_read.connect`): DuckDB streams or spills beyond
it, so memory stays bounded whatever the table's size. The priors need only aggregates
(:class:`~pufferfish.tables.model.TableAggregates`); the release reads, perturbs and writes
the table one Arrow record batch at a time.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from pufferfish.noise.samplers import insecure_generator
from pufferfish.tables.ahead import read_ahead
from pufferfish.tables.duckdb_read import (
    connect,
    copy_columns,
    csv_dialect,
    interrupted,
    open_table,
    read_error,
    table_columns,
)
from pufferfish.tables.kept import KeptColumn, measured_losses, written_columns
from pufferfish.tables.model import (
    MISSING_LABEL,
    TableAggregates,
    check_columns,
    check_no_missing_label,
    check_row_counts,
    mostly_numbers_hint,
    refuse_mostly_numbers,
)
from pufferfish.tables.perturb import ReleasedColumn, column_perturber, perturb_batch
from pufferfish.tables.shuffle import shuffled
from pufferfish.tables.source import (
    DataError,
    TableSource,
    first_line,
    quote_identifier,
    resolve_source,
)

_NUMERIC_TYPES = (
    "TINYINT",
    "SMALLINT",
    "INTEGER",
    "BIGINT",
    "HUGEINT",
    "UTINYINT",
    "USMALLINT",
    "UINTEGER",
    "UBIGINT",
    "UHUGEINT",
    "FLOAT",
    "DOUBLE",
    "DECIMAL",
)

_VALUE = "__pufferfish_public_value__"


#: Integer types whose values may exceed 2^53, where float64 merges neighbours.
_WIDE_INTEGERS = ("BIGINT", "HUGEINT", "UBIGINT", "UHUGEINT")


def is_numeric_type(name: str) -> bool:
    """Whether a DuckDB type name is numeric (other columns are categorical)."""
    return name.upper().startswith(_NUMERIC_TYPES)


def check_numbers(
    con: duckdb.DuckDBPyConnection, types: Mapping[str, str], *, weight: str | None, numeric: Sequence[str]
) -> None:
    """Refuse, naming the first offending value, a weight column or a public column read as
    numbers (``--numeric`` on a column DuckDB reads as text) that holds something else.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        With the table registered as ``t``.
    types : mapping of str to str
        DuckDB's type of each column as sniffed.
    weight : str or None
    numeric : sequence of str
        Public columns read as numbers.

    Raises
    ------
    DataError
    """

    def first_non_number(column: str) -> Any:
        col = quote_identifier(column)
        return con.execute(
            f"SELECT CAST({col} AS VARCHAR) FROM t WHERE {col} IS NOT NULL AND "
            f"TRY_CAST(CAST({col} AS VARCHAR) AS DOUBLE) IS NULL LIMIT 1"
        ).fetchone()

    if weight and not is_numeric_type(types[weight]):
        bad = first_non_number(weight)
        if bad:
            raise DataError(f"weight column {weight!r} must hold numbers, got {bad[0]!r}")
    for column in numeric:
        bad = None if is_numeric_type(types[column]) else first_non_number(column)
        if bad:
            raise DataError(f"public column {column!r} is read as numeric but holds {bad[0]!r}, not a number")
        if types[column].upper() in _WIDE_INTEGERS:  # beyond 2^53 two integers may be one float
            col = quote_identifier(column)
            wide = con.execute(
                f"SELECT {col} FROM t WHERE abs(CAST({col} AS HUGEINT)) > {2**53} LIMIT 1"
            ).fetchone()
            if wide:
                raise DataError(
                    f"public column {column!r} holds integers beyond 2^53 (e.g. {wide[0]}) that float64 "
                    f"cannot tell apart; pass --categorical {column} to release them as labels"
                )


def mostly_numbers(con: duckdb.DuckDBPyConnection, column: str) -> str | None:
    """The hint for a column read as text whose values are mostly numbers (table ``t``): the share,
    the other values (up to 5, with their rows) and the option that reads them as missing; None
    below :data:`MOSTLY_NUMBERS` (issue 33: a cholesterol column with a few ``?`` became 150
    labels)."""
    col = quote_identifier(column)
    text = f"CAST({col} AS VARCHAR)"
    total, numbers = con.execute(
        f"SELECT count(*), count(*) FILTER (WHERE TRY_CAST({text} AS DOUBLE) IS NOT NULL) "
        f"FROM t WHERE {col} IS NOT NULL"
    ).fetchone()  # type: ignore[misc]
    return mostly_numbers_hint(
        total,
        numbers,
        lambda: con.execute(
            f"SELECT {text}, count(*) FROM t WHERE {col} IS NOT NULL AND TRY_CAST({text} AS DOUBLE) IS NULL "
            f"GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 5"
        ).fetchall(),
    )


def table_aggregates(
    source: TableSource,
    *,
    secret: str,
    columns: Sequence[str],
    weight: str | None,
    kinds: Mapping[str, str] | None = None,
    missing: str = "value",
) -> TableAggregates:
    """``GROUP BY secret, public columns`` of a table by DuckDB: the aggregates behind the priors
    of one public column or the joint priors of several (rows never leave DuckDB).

    Parameters
    ----------
    source : TableSource
        The table.
    secret : str
        Secret column.
    columns : sequence of str
        The public columns, ``d >= 1`` (distinct, each a column of the table).
    weight : str, optional
        Frequency-weight column (numeric, >= 0).
    kinds : mapping of str to {"categorical", "numeric"}, optional
        How to read a public column; default numeric if DuckDB's type is numeric.
    missing : {"value", "omit"}
        How a missing public cell is read (:data:`~pufferfish.tables.model.MISSING_POLICIES`).

    Returns
    -------
    TableAggregates

    Raises
    ------
    DataError
        If the table cannot be read or has no rows, a column is unknown, a weight is not a number,
        negative or NaN, or a public column read as numeric holds a non-number or a non-finite
        value (:func:`~pufferfish.tables.model.check_row_counts`).
    """
    kinds = dict(kinds or {})
    with connect() as con:
        try:
            types, categorical = _load(con, source, secret, columns, weight, kinds)
            s_col = quote_identifier(secret)
            exprs, valid = _public_exprs(con, s_col, columns, categorical, missing)
            numeric = [c for c, cat in zip(columns, categorical, strict=True) if not cat]
            check_numbers(con, types, weight=weight, numeric=numeric)
            for c, cat in zip(columns, categorical, strict=True):
                hint = mostly_numbers(con, c) if cat and kinds.get(c) is None else None
                if hint is not None:  # before any work (issue 44): never 150 labels in string order
                    raise DataError(refuse_mostly_numbers(c, hint))
            w_expr = "1.0"
            if weight:
                valid += f" AND {quote_identifier(weight)} IS NOT NULL"
                w_expr = f"CAST({quote_identifier(weight)} AS DOUBLE)"
            finite = "".join(
                f", count(*) FILTER (WHERE NOT isfinite(CAST({quote_identifier(c)} AS DOUBLE)))"
                for c in numeric
            )
            absent = "".join(f", count(*) FILTER (WHERE {quote_identifier(c)} IS NULL)" for c in columns)
            total, dropped, negative, *rest = con.execute(
                f"SELECT count(*), count(*) FILTER (WHERE NOT ({valid})), "
                f"count(*) FILTER (WHERE {w_expr} < 0 OR isnan({w_expr})){finite}{absent} FROM t"
            ).fetchone()  # type: ignore[misc]
            non_finite, missing_cells = rest[: len(numeric)], rest[len(numeric) :]
            check_row_counts(int(total), weight, int(negative), dict(zip(numeric, non_finite, strict=True)))
            # Each column's alphabet over the whole table (the release covers every row).
            labels = tuple(
                [
                    r[0]
                    for r in con.execute(
                        f"SELECT DISTINCT {e} FROM t WHERE {e} IS NOT NULL ORDER BY 1"
                    ).fetchall()
                ]
                for e in exprs
            )
            secret_values = {
                r[0]
                for r in con.execute(
                    f"SELECT DISTINCT CAST({s_col} AS VARCHAR) FROM t WHERE {s_col} IS NOT NULL"
                ).fetchall()
            }
            keys = ", ".join(str(k + 2) for k in range(len(columns)))
            rows = con.execute(
                f"SELECT CAST({s_col} AS VARCHAR), {', '.join(exprs)}, count(*), sum({w_expr}), "
                f"sum({w_expr} * {w_expr}) FROM t WHERE {valid} GROUP BY 1, {keys}"
            ).fetchall()
            atom = []  # one numeric column: the rows of each secret with the cell missing
            if len(columns) == 1 and not categorical[0] and missing == "value":
                atom = _missing_groups(con, s_col, columns[0], weight, w_expr)
        except duckdb.Error as exc:
            raise read_error(exc, "the table") from None
    counts = [(str(r[0]), tuple(r[1:-3]), int(r[-3]), float(r[-2]), float(r[-1])) for r in rows]
    return TableAggregates(
        rows_total=int(total),
        rows_dropped=int(dropped),
        categorical=categorical,
        types=tuple(types[c] for c in columns),
        labels=labels,
        secret_values=secret_values,
        counts=counts,
        missing_cells=tuple(int(n) for n in missing_cells),
        missing_groups=tuple((str(s), int(n), float(w), float(w2)) for s, n, w, w2 in atom),
    )


def _load(
    con: duckdb.DuckDBPyConnection,
    source: TableSource,
    secret: str,
    columns: Sequence[str],
    weight: str | None,
    kinds: Mapping[str, str],
) -> tuple[dict[str, str], tuple[bool, ...]]:
    """The table as ``t`` on ``con`` and ``(DuckDB type of each column, whether each public column
    is read as labels)``; a CSV's secret and label columns read as the text written, and its used
    columns copied once into DuckDB's own storage (spilled beyond its memory limit): the queries
    of :func:`table_aggregates` each scan ``t``, and a CSV would be parsed again by each."""
    rel = open_table(con, source)
    names = list(rel.columns)
    types = {c: str(t) for c, t in zip(rel.columns, rel.types, strict=True)}
    for col in columns:
        check_columns(names, secret=secret, public=col, weight=weight)
    sniffed = [is_numeric_type(types[c]) for c in columns]
    categorical = tuple(
        kinds.get(c) == "categorical" or (kinds.get(c) is None and not num)
        for c, num in zip(columns, sniffed, strict=True)
    )
    if source.kind != "csv":
        con.register("t", rel)
        return types, categorical
    text = [c for c, cat, num in zip(columns, categorical, sniffed, strict=True) if cat or not num]
    rel = open_table(con, source, text_columns=[secret, *text])
    copy_columns(con, rel, [secret, *columns, *([weight] if weight else [])])
    return types, categorical


def _missing_groups(
    con: duckdb.DuckDBPyConnection, s_col: str, column: str, weight: str | None, w_expr: str
) -> list[Any]:
    """``(secret, rows, sum of weights, sum of squared weights)`` of the rows with the secret (and
    weight) present and ``column`` missing, per secret: the missing atom's counts."""
    where = f"{s_col} IS NOT NULL AND {quote_identifier(column)} IS NULL"
    where += f" AND {quote_identifier(weight)} IS NOT NULL" if weight else ""
    return con.execute(
        f"SELECT CAST({s_col} AS VARCHAR), count(*), sum({w_expr}), sum({w_expr} * {w_expr}) "
        f"FROM t WHERE {where} GROUP BY 1"
    ).fetchall()


def _public_exprs(
    con: duckdb.DuckDBPyConnection,
    s_col: str,
    columns: Sequence[str],
    categorical: Sequence[bool],
    missing: str,
) -> tuple[list[str], str]:
    """The SQL of each public column's value and the condition of a row in the priors.

    Under ``missing="value"`` a missing cell of a categorical column is a label of its own
    (:data:`~.model.MISSING_LABEL`, issue 41: a release publishes it, so the check covers it); a
    column holding that text is refused. Among several columns a missing number is NULL in the
    counts (the atom of its column, :data:`~pufferfish.priors.joint.MISSING_NUMBER`); one
    numeric column's missing cells are counted apart (:mod:`~.missing`). Under ``"omit"`` a row
    with any public column missing is left out of the priors, as one with the secret missing.
    """
    missing_label = "'" + MISSING_LABEL + "'"
    labelled = [cat and missing == "value" for cat in categorical]
    for c, cat in zip(columns, labelled, strict=True):
        if cat:
            text = f"CAST({quote_identifier(c)} AS VARCHAR)"
            check_no_missing_label(
                _first_int(con, f"SELECT count(*) FROM t WHERE {text} = {missing_label}"), c
            )
    exprs = [
        f"COALESCE(CAST({quote_identifier(c)} AS VARCHAR), {missing_label})"
        if lab
        else f"CAST({quote_identifier(c)} AS {'VARCHAR' if cat else 'DOUBLE'})"
        for c, cat, lab in zip(columns, categorical, labelled, strict=True)
    ]
    atom = missing == "value" and len(columns) > 1  # a missing number is the atom of its column
    present = [quote_identifier(c) for c, lab in zip(columns, labelled, strict=True) if not (lab or atom)]
    valid = " AND ".join([f"{s_col} IS NOT NULL"] + [f"{c} IS NOT NULL" for c in present])
    return exprs, valid


def _first_int(con: duckdb.DuckDBPyConnection, sql: str) -> int:
    row = con.execute(sql).fetchone()
    return int(row[0]) if row else 0


def estimate_class_counts(
    data: Any,
    *,
    value: str,
    by: str,
    codes: Mapping[str, float] | None = None,
) -> dict[str, tuple[NDArray[np.float64], NDArray[np.float64]]]:
    """Counts of a column's values within each class of records (one DuckDB aggregation).

    Parameters
    ----------
    data : str, pathlib.Path or pandas.DataFrame
        The table (see :func:`resolve_source`).
    value : str
        Column whose values are counted. Numeric columns are used as they are; a text column
        needs ``codes``, whose keys are compared with the text written in the file.
    by : str
        Column defining the classes, read as the text written in the file (a CSV's ``yes``/``no``
        or ``007`` stay as written).
    codes : mapping of str to float, optional
        Number of each label of a text ``value`` column; labels may share a number.

    Returns
    -------
    dict
        ``class -> (support, counts)``: strictly increasing values (float64, shape (n,)) and the
        number of rows with each value (float64, shape (n,)). Rows where ``value`` or ``by`` is
        missing are left out.

    Raises
    ------
    DataError
        If the table cannot be read, a column is unknown, a text column has no ``codes`` or a
        label without a code, or ``codes`` is given for a numeric column.

    Notes
    -----
    Seed 000 sec 4.3-4.4: a class of records as one user, ``P_i = Pr(value | by = i)``.
    """
    source = resolve_source(data)
    with connect() as con:
        try:
            rel = open_table(con, source)
            columns = list(rel.columns)
            types = {c: str(t) for c, t in zip(rel.columns, rel.types, strict=True)}
            for arg, col in (("value", value), ("by", by)):
                if col not in columns:
                    raise DataError(f"{arg} column {col!r} is not in the table; columns are {columns}")
            categorical = not is_numeric_type(types[value])
            if source.kind == "csv":  # class labels and text values as written (not BOOLEAN or DATE)
                rel = open_table(con, source, text_columns=[by] + ([value] if categorical else []))
            con.register("t", rel)
            v_col, b_col = quote_identifier(value), quote_identifier(by)
            if categorical and codes is None:
                raise DataError(f"value column {value!r} holds text: give codes (label -> number)")
            if not categorical and codes is not None:
                raise DataError(f"codes apply to a text value column; {value!r} is numeric ({types[value]})")
            v_expr = f"CAST({v_col} AS VARCHAR)" if categorical else f"CAST({v_col} AS DOUBLE)"
            rows = con.execute(
                f"SELECT CAST({b_col} AS VARCHAR), {v_expr}, count(*) FROM t "
                f"WHERE {b_col} IS NOT NULL AND {v_col} IS NOT NULL GROUP BY 1, 2"
            ).fetchall()
        except duckdb.Error as exc:
            raise read_error(exc, source.description) from None
    grouped: dict[str, dict[float, float]] = {}
    for cls, raw, n in rows:
        if categorical:
            assert codes is not None
            if raw not in codes:
                raise DataError(f"codes has no number for label {raw!r} of column {value!r}")
            x = float(codes[raw])
            if not math.isfinite(x):
                raise DataError(f"codes must map labels to finite numbers, got {raw!r} -> {x!r}")
        else:
            x = float(raw)
            if not math.isfinite(x):
                raise DataError(f"value column {value!r} holds a non-finite value {raw!r}")
        bucket = grouped.setdefault(cls, {})
        bucket[x] = bucket.get(x, 0.0) + float(n)
    out = {}
    for cls, bucket in grouped.items():
        xs = np.array(sorted(bucket), dtype=np.float64)
        out[cls] = (xs, np.array([bucket[x] for x in xs.tolist()], dtype=np.float64))
    return out


def stream_release(
    source: TableSource,
    target: Path,
    fmt: str,
    *,
    columns: Sequence[ReleasedColumn],
    rows_total: int,
    noise: str,
    rng: np.random.Generator | int | None,
    text_copy: bool,
    batch_rows: int,
    progress: Callable[[int, int], None] | None,
    workers: int,
    gzip: bool = False,
    sampler: str = "exact",
    written: Sequence[str] = (),
    shuffle: bool = True,
) -> tuple[dict[str, Any], int, int]:
    """Read, perturb and write the table batch by batch: (sampler description, released, missing).

    DuckDB reads the source as Arrow record batches; each batch's released columns are replaced
    (:mod:`~pufferfish.tables.perturb`) and DuckDB's ``COPY`` writes them to ``target``, a
    temporary file the caller publishes (:func:`~pufferfish.tables.source.atomic_outputs`), in a
    uniformly random order (:func:`~pufferfish.tables.shuffle.shuffled`: random buckets on disk,
    each shuffled in memory) or, without ``shuffle``, in the input order; a seed gives one NumPy
    stream across batches (and a stream of its own to the order).

    Parameters
    ----------
    source, target : TableSource, pathlib.Path
        The table; the file to write (overwritten), in format ``fmt``: ``"csv"`` or ``"parquet"``.
    columns : sequence of ReleasedColumn
        The released columns (one, or several released jointly), each drawn independently per
        row; a row counts as released when every one is present.
    rows_total : int
        Rows of the table (the progress bar's total; a table changed while read is refused).
    noise, rng : {"laplace", "gaussian"}; numpy.random.Generator, int or None
        The noise; None: the secure sampler, else NumPy's (insecure).
    text_copy : bool
        Read every column as the text in the file, so other columns are copied unchanged.
    batch_rows, progress, workers, gzip : int, callable or None, int, bool
        Rows per batch; ``progress(rows_done, rows_total)`` after each batch; threads of the
        secure sampler; compress a CSV output with gzip.
    sampler : {"exact", "opendp"}
        The secure sampler (:func:`pufferfish.noise.samplers.add_laplace`, ``add_gaussian``).
    written : sequence of str
        The columns written, in the table's order (:func:`written_and_kept`: the released ones
        and those kept in clear); every other column, the secret's included, is left out of the
        output (issue 41). Empty: the released columns.
    shuffle : bool
        Write the rows in a uniformly random order (default, issue 54), or in the input order.

    Raises
    ------
    DataError
        If DuckDB cannot read the table or write the release, or a value is not in a mapping's
        alphabet.
    KeyboardInterrupt
        On Ctrl-C (or SIGTERM under the CLI), also when DuckDB is the one stopped.
    """
    gen, seed = insecure_generator(rng)  # one stream across batches
    counts = {"released": 0, "missing": 0}
    described: dict[str, Any] = {}
    names = [c.name for c in columns]
    values = [f"{_VALUE}{k}" for k in range(len(columns))]

    with connect() as con:
        reader, dialect = _release_reader(con, source, fmt, columns, values, text_copy, batch_rows, written)
        fields = [f for f in reader.schema if f.name not in values]
        idx = [[f.name for f in fields].index(n) for n in names]
        for i, c in zip(idx, columns, strict=True):
            fields[i] = pa.field(c.name, c.arrow_type(fields[i].type))
        order_gen = None if gen is None else gen.spawn(1)[0]  # a seeded noise stream left as it was
        schema = pa.schema(fields)
        perturbs = [column_perturber(c, noise, workers, sampler) for c in columns]

        def perturbed() -> Iterator[tuple[pa.RecordBatch, int, int]]:
            for batch in reader:
                cols, every = perturb_batch(batch, columns, values, idx, perturbs, gen, described)
                released = int(every.sum())
                yield pa.RecordBatch.from_arrays(cols, schema=schema), released, every.size - released

        def batches(ready: Iterator[tuple[pa.RecordBatch, int, int]]) -> Iterator[pa.RecordBatch]:
            for batch, released, missing in ready:
                counts["released"] += released
                counts["missing"] += missing
                yield batch
                if progress is not None:
                    progress(counts["released"] + counts["missing"], rows_total)

        with read_ahead(perturbed()) as ready:
            rows = batches(ready)  # with ``shuffle``: in a uniformly random order, bucket by bucket
            with shuffled(rows, schema, rows_total, order_gen) if shuffle else nullcontext(rows) as ordered:
                copy_arrow_to(pa.RecordBatchReader.from_batches(schema, ordered), target, fmt, gzip, dialect)
        if counts["released"] + counts["missing"] != rows_total:
            raise DataError("the table changed while it was read")  # pragma: no cover
    for c, perturb in zip(columns, perturbs, strict=True):  # no row at all: describe an empty draw
        described.setdefault(c.name, perturb(np.empty(0), np.zeros(0, dtype=bool), gen)[1])
    out = dict(described[names[0]]) if len(columns) == 1 else {"columns": described}
    if seed is not None:
        out["seed"] = seed
    return out, counts["released"], counts["missing"]


def written_and_kept(
    source: TableSource,
    *,
    secret: str,
    pairs: Sequence[tuple[str, str]],
    released: Sequence[str],
    keep: Sequence[str],
    weight: str | None,
) -> tuple[list[str], list[KeptColumn]]:
    """The columns a release writes, in the table's order, and the measured loss of each column
    kept in clear (:func:`~pufferfish.tables.kept.measured_losses`), by DuckDB (labels as
    written: a CSV's secret and kept columns read as text).

    Raises
    ------
    DataError
        If the table cannot be read or a kept column is unknown.
    """
    with connect() as con:
        try:
            written = written_columns(table_columns(con, source), released, keep)
            if not keep:
                return written, []
            rel = open_table(con, source, text_columns=[secret, *keep] if source.kind == "csv" else ())
            con.register("t", rel)
            return written, measured_losses(
                lambda sql: con.execute(sql).fetchall(), quote=quote_identifier, text="VARCHAR",
                secret=secret, pairs=pairs, columns=keep, weight=weight,
            )  # fmt: skip
        except duckdb.Error as exc:
            raise read_error(exc, "the table") from None


def _release_reader(
    con: duckdb.DuckDBPyConnection,
    source: TableSource,
    fmt: str,
    columns: Sequence[ReleasedColumn],
    values: Sequence[str],
    text_copy: bool,
    batch_rows: int,
    written: Sequence[str] = (),
) -> tuple[Any, tuple[str, str]]:
    """The Arrow batch reader of the ``written`` columns (default the released ones) with each
    released column's value (a label, or a number parsed from the text
    as written) added as ``values[k]``, and the CSV dialect."""
    try:
        text_csv = text_copy and fmt == "csv" and source.path is not None
        dialect = csv_dialect(con, source) if text_csv else (",", "\n")
        rel = open_table(con, source, all_varchar=text_copy, text_columns=[c.name for c in columns])
        na = source.csv.na
        exprs = [
            _value_sql(c.name, c.categorical, text_copy, v, na) for c, v in zip(columns, values, strict=True)
        ]
        shown = written or [c.name for c in columns]
        query = rel.select(", ".join([*(quote_identifier(c) for c in shown), *exprs]))
        to_reader = getattr(query, "to_arrow_reader", None) or query.fetch_arrow_reader  # duckdb < 1.4
        return to_reader(batch_rows), dialect
    except duckdb.Error as exc:
        raise read_error(exc, "the table") from None


def _value_sql(
    public: str, categorical: bool, text_copy: bool, alias: str = _VALUE, na: Sequence[str] = ()
) -> str:
    """SQL of the released column's value, from its text: a label, or a number parsed from it; in
    a CSV read as text, ``""`` and the missing-value markers ``na`` are missing, as when the priors
    were estimated."""
    value = f"CAST({quote_identifier(public)} AS VARCHAR)"
    if text_copy:
        markers = ", ".join("'{}'".format(m.replace("'", "''")) for m in ("", *na))
        value = f"CASE WHEN {value} IN ({markers}) THEN NULL ELSE {value} END"
    return f"CAST({value} AS {'VARCHAR' if categorical else 'DOUBLE'}) AS {quote_identifier(alias)}"


def copy_arrow_to(
    stream: pa.RecordBatchReader,
    tmp: Path,
    fmt: str,
    gzip: bool,
    dialect: tuple[str, str] = (",", "\n"),
) -> None:
    """DuckDB's ``COPY`` of an Arrow stream to the path ``tmp``: ``fmt`` ``"parquet"``, or ``"csv"``
    with a header and RFC 4180 quoting, ``dialect`` = (field delimiter, line ending), compressed if
    ``gzip``; a one-column CSV writes a missing cell as ``""`` (an empty line is skipped by pandas
    and R). Raises DataError if DuckDB cannot write, KeyboardInterrupt when interrupted."""
    # Parquet: one Python stream feeds the copy, and a second thread would only buffer row groups
    # to keep their order (peak memory growing with the rows), not write faster
    with connect(threads=1 if fmt == "parquet" else None) as out:
        out.register("out_stream", stream)
        if fmt == "parquet":
            options = "FORMAT parquet, USE_TMP_FILE false"  # ``tmp`` is already a temporary file
        else:
            delim, newline = (part.replace("'", "''") for part in dialect)
            options = (
                f"FORMAT csv, HEADER true, DELIMITER '{delim}', QUOTE '\"', ESCAPE '\"', "
                f"NEW_LINE '{newline}', COMMENT '', USE_TMP_FILE false"
            )  # no comment character: DuckDB would quote every field holding '#'
            options += ", COMPRESSION gzip" if gzip else ""
        path_sql = str(tmp).replace("'", "''")
        names, what = stream.schema.names, "*"
        if fmt == "csv" and len(names) == 1:  # a missing cell as "", not an empty line readers skip
            what = (
                f"COALESCE(CAST({quote_identifier(names[0])} AS VARCHAR), '') AS {quote_identifier(names[0])}"
            )
        query = f"SELECT {what} FROM out_stream"
        try:
            out.execute(f"COPY ({query}) TO '{path_sql}' ({options})")
        except (duckdb.Error, RuntimeError) as exc:
            # Ctrl-C (or SIGTERM, see the CLI) stops DuckDB ("Query interrupted", see connect) or
            # surfaces in the Arrow stream, whose Python traceback DuckDB quotes.
            if interrupted(exc):
                raise KeyboardInterrupt from None
            if not isinstance(exc, duckdb.Error):
                raise
            raise DataError(f"cannot write the release: {first_line(exc)}") from None
