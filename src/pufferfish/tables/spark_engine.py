"""Apache Spark engine: prior estimation as Spark aggregations, release as a per-partition Arrow map.

For tables on a cluster. The priors need only aggregates (counts and weight sums per secret and
public value, distinct values, row counts), which Spark computes where the data lives; the driver
receives those aggregates, never the rows, and builds the priors with the same code as the DuckDB
engine (:func:`pufferfish.tables.estimate.priors_from_aggregates`), so both engines give the same priors on
the same data. The release is ``DataFrame.mapInArrow``: each partition's Arrow record batches get
their public column replaced by ``code + noise`` on the executor that holds them, with its own
sampler, and Spark writes the result. ``pyspark`` is an optional extra
(``pip install 'pufferfish-privacy[spark]'``).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pufferfish.priors.distributions import to_release_grid
from pufferfish.tables.kept import KeptColumn, measured_losses, written_columns
from pufferfish.tables.model import (
    MISSING_LABEL,
    TableAggregates,
    check_columns,
    check_no_missing_label,
    check_row_counts,
    label_json,
    mostly_numbers_hint,
    refuse_mostly_numbers,
)
from pufferfish.tables.outputs import publish_folder, temp_prefix
from pufferfish.tables.perturb import (
    ORDER_KEYS,
    ReleasedColumn,
    column_perturber,
    noiseless_as_written,
    order_keys,
    restore_type,
    suppress_partial_rows,
)
from pufferfish.tables.source import DataError, TableSource, first_line, is_parquet

#: Spark SQL type names of numeric columns (the others are categorical).
_SPARK_NUMERIC = ("tinyint", "smallint", "int", "bigint", "float", "double", "decimal")


def _pyspark() -> Any:
    try:
        import pyspark.sql
    except ImportError:  # pragma: no cover - depends on the environment
        raise ValueError("engine 'spark' needs pyspark: pip install 'pufferfish-privacy[spark]'") from None
    return pyspark.sql


def spark_session(spark: Any = None) -> Any:
    """The Spark session to use: ``spark``, else the active one, else a new local one.

    Parameters
    ----------
    spark : pyspark.sql.SparkSession, optional
        A session (e.g. on a cluster).

    Returns
    -------
    pyspark.sql.SparkSession
        ``spark``; or the active session; or ``local[*]`` with the web UI and the console
        progress bar off (it would print into the CLI's output), its workers on this interpreter
        (``PYSPARK_PYTHON`` is set to ``sys.executable`` unless already set).

    Raises
    ------
    ValueError
        If pyspark is not installed.
    """
    sql = _pyspark()
    if spark is not None:
        return spark
    active = sql.SparkSession.getActiveSession()
    if active is not None:
        return active
    # the local workers run this interpreter (issue 56: a venv's pufferfish called by its path, not
    # activated, had workers on another Python without pufferfish); a user's setting wins
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    session = (
        sql.SparkSession.builder.master("local[*]")
        .appName("pufferfish")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "8")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("OFF")  # a failed task's Java frames: its cause is raised, in one line
    return session


def spark_cause(exc: BaseException) -> str:
    """One line for a failed Spark job: the last Python exception its workers quote (the cause,
    e.g. ``ModuleNotFoundError: No module named 'pufferfish'``, which sits among Java frames), with
    the fix when the workers cannot import pufferfish; else the error's first line."""
    text = str(exc)
    found = [
        m for m in re.findall(r"^\s*([A-Za-z_.]*(?:Error|Exception)): (.+)$", text, re.M)
        if not m[0].endswith(("PythonException", "Py4JJavaError", "SparkException"))
    ]  # fmt: skip
    if not found:
        return first_line(exc)
    name, message = found[-1]
    line = f"{name.rsplit('.', 1)[-1]}: {message.strip()}"
    if "No module named 'pufferfish'" in message:
        line += (
            f" in Spark's Python workers (PYSPARK_PYTHON={os.environ.get('PYSPARK_PYTHON')!r}): point "
            f"PYSPARK_PYTHON at an interpreter with pufferfish installed, such as {sys.executable!r}"
        )
    return line


#: Spark CSV options for RFC 4180 files (Spark's defaults escape quotes with a backslash and end
#: a record at every newline, even inside quotes).
CSV_READ: dict[str, Any] = {"header": True, "quote": '"', "escape": '"', "multiLine": True}
#: Spark CSV options that write every field back as read: quotes doubled, blanks kept (Spark's
#: writer trims leading and trailing blanks by default), ``""`` for an empty string.
CSV_WRITE: dict[str, Any] = {
    "header": True,
    "quote": '"',
    "escape": '"',
    "ignoreLeadingWhiteSpace": False,
    "ignoreTrailingWhiteSpace": False,
}
# No CSV field is this text, so Spark reads only unquoted empty fields as missing.
_NO_NULL_TEXT = "\u0001pufferfish-no-null\u0001"


def read_table(
    spark: Any, source: TableSource, *, all_text: bool = False, text_columns: Sequence[str] = ()
) -> Any:
    """A Spark DataFrame over a resolved table: a Spark DataFrame as is, a Parquet or CSV file or folder.

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
    source : TableSource
        From :func:`~pufferfish.tables.source.resolve_source` with ``engine="spark"``: a Spark
        DataFrame, a Parquet file or folder (``.parquet``, ``.pq``), or a CSV file or folder
        (header row; column types inferred unless ``all_text``).
    all_text : bool
        Read CSV columns as the text written in the file, so a release copies them unchanged: a
        quoted empty field ``""`` stays an empty string, an unquoted one is missing.
    text_columns : sequence of str
        CSV columns read as the text written in the file whatever the inferred type (``007``
        would become 7); the others keep their inferred types.

    Raises
    ------
    DataError
        If Spark cannot read it.

    Notes
    -----
    CSV is read as RFC 4180 writes it (:data:`CSV_READ`): a quote inside a quoted field is
    doubled (Spark's default escape is a backslash) and a quoted field may span lines.
    """
    if source.kind == "spark-dataframe":
        return source.data
    path = Path(source.data)
    try:
        if is_parquet(path):
            return spark.read.parquet(str(path))
        if all_text:  # a quoted empty field stays "" (as DuckDB's text copy); unquoted is missing
            return spark.read.csv(str(path), inferSchema=False, nullValue=_NO_NULL_TEXT, **CSV_READ)
        df = spark.read.csv(str(path), inferSchema=True, **CSV_READ)
        if not text_columns:
            return df
        types = _pyspark().types
        schema = types.StructType(
            [
                types.StructField(f.name, types.StringType(), True) if f.name in text_columns else f
                for f in df.schema
            ]
        )
        return spark.read.csv(str(path), schema=schema, **CSV_READ)
    except Exception as exc:  # Spark raises AnalysisException and Py4J errors
        raise DataError(f"cannot read {str(path)!r} with Spark: {first_line(exc)}") from None


def table_aggregates(
    source: TableSource,
    *,
    secret: str,
    columns: Sequence[str],
    weight: str | None = None,
    kinds: Mapping[str, str] | None = None,
    spark: Any = None,
    missing: str = "value",
) -> TableAggregates:
    """``GROUP BY secret, public columns`` of a table by Spark, where the data lives: the
    aggregates :func:`pufferfish.tables.duckdb_engine.table_aggregates` computes with DuckDB, for
    one public column or several.

    Parameters
    ----------
    source : TableSource
        See :func:`read_table`.
    secret : str
    columns : sequence of str
        The public columns, ``d >= 1`` (distinct, each a column of the table).
    weight : str, optional
        Frequency-weight column (numeric, >= 0).
    kinds : mapping of str to {"categorical", "numeric"}, optional
        How to read a public column; default numeric if Spark infers a numeric type.
    spark : pyspark.sql.SparkSession, optional
        Session (default: :func:`spark_session`).
    missing : {"value", "omit"}
        How a missing public cell is read (:data:`~pufferfish.tables.model.MISSING_POLICIES`).

    Returns
    -------
    TableAggregates
        The same aggregates as the DuckDB engine's on the same data, so the same priors (every
        secret's group counted: the released rows' distribution weighs the mappings' expected
        accuracy). Weight sums are float64 sums, exact for integer weights (below 2^53). The
        read hint of issue 33 is DuckDB's only (None here).

    Raises
    ------
    DataError
        If Spark cannot read the table or it has no rows, a column is unknown, a weight is
        negative or NaN, or a numeric public column holds a non-number or a non-finite value;
        ValueError if pyspark is missing.

    Notes
    -----
    Four Spark jobs: row counts (all, dropped, bad weights, non-finite values per numeric
    column), the distinct values of each column, the distinct secret values, and the grouped
    counts and weight sums. Only these aggregates reach the driver.
    """
    kinds = dict(kinds or {})
    session = spark_session(spark)
    F = _pyspark().functions
    df = read_table(session, source)
    for col in columns:
        check_columns(df.columns, secret=secret, public=col, weight=weight)
    types = dict(df.dtypes)
    inferred = {c: types[c].startswith(_SPARK_NUMERIC) for c in columns}
    categorical = tuple(
        kinds.get(c) == "categorical" or (kinds.get(c) is None and not inferred[c]) for c in columns
    )
    if source.kind != "spark-dataframe":  # labels as written: text columns read as text
        text = [secret] + [c for c, cat in zip(columns, categorical, strict=True) if cat or not inferred[c]]
        df = read_table(session, source, text_columns=text)
        types = dict(df.dtypes)
    s_col = F.col(f"`{secret}`")
    cols = [F.col(f"`{c}`") for c in columns]
    exprs, valid = _public_exprs(df, s_col, columns, categorical, missing)
    w_expr = F.col(f"`{weight}`").cast("double") if weight else F.lit(1.0)
    if weight:
        valid = valid & F.col(f"`{weight}`").isNotNull()
    numeric = [k for k, cat in enumerate(categorical) if not cat]
    try:
        _refuse_mostly_numbers(df, columns, categorical, kinds)  # as DuckDB, before any work
        _check_numbers(df, [(columns[k], cols[k]) for k in numeric if not inferred[columns[k]]])
        non_finite = [
            F.count(F.when(cols[k].isNotNull() & (F.isnan(exprs[k]) | (F.abs(exprs[k]) == float("inf"))), 1))
            for k in numeric
        ]
        total, dropped, negative, *rest = df.agg(
            F.count(F.lit(1)),
            F.count(F.when(~valid, 1)),
            F.count(F.when((w_expr < 0) | F.isnan(w_expr), 1)),
            *non_finite,
            *[F.count(F.when(c.isNull(), 1)) for c in cols],
        ).first()
        bad_counts, missing_cells = rest[: len(numeric)], rest[len(numeric) :]
        check_row_counts(
            int(total),
            weight,
            int(negative),
            {columns[k]: int(n) for k, n in zip(numeric, bad_counts, strict=True)},
        )
        labels = tuple(
            sorted(r[0] for r in df.where(e.isNotNull()).select(e.alias("v")).distinct().collect())
            for e in exprs
        )
        secret_values = {
            r[0]
            for r in df.where(s_col.isNotNull()).select(s_col.cast("string").alias("s")).distinct().collect()
        }
        counts = _grouped_counts(df.where(valid), s_col, exprs, w_expr)
        one_number = len(columns) == 1 and not categorical[0] and missing == "value"
        atom = _missing_groups(df, s_col, cols[0], weight, w_expr) if one_number else []
    except DataError:
        raise
    except Exception as exc:  # Spark's AnalysisException / Py4JJavaError
        raise DataError(f"cannot read the table with Spark: {first_line(exc)}") from None
    return TableAggregates(
        rows_total=int(total),
        rows_dropped=int(dropped),
        categorical=categorical,
        types=tuple(types[c] for c in columns),
        labels=labels,
        secret_values=secret_values,
        counts=counts,
        missing_cells=tuple(int(n) for n in missing_cells),
        missing_groups=tuple(atom),
    )


def _missing_groups(df: Any, s_col: Any, col: Any, weight: str | None, w_expr: Any) -> list[Any]:
    """The missing atom's counts per secret, as
    :func:`pufferfish.tables.duckdb_engine._missing_groups` (one Spark job)."""
    F = _pyspark().functions
    where = s_col.isNotNull() & col.isNull()
    if weight:
        where = where & F.col(f"`{weight}`").isNotNull()
    grouped = df.where(where).groupBy(s_col.cast("string"))
    rows = grouped.agg(F.count(F.lit(1)), F.sum(w_expr), F.sum(w_expr * w_expr)).collect()
    return [(str(r[0]), int(r[1]), float(r[2]), float(r[3])) for r in rows]


def _keeps_type(spark_type: str) -> bool:
    """Whether a noiseless column keeps this Spark type (integers and text; floats become double)."""
    return spark_type in ("tinyint", "smallint", "int", "bigint", "string")


def _refuse_mostly_numbers(
    df: Any, columns: Sequence[str], categorical: Sequence[bool], kinds: Mapping[str, str]
) -> None:
    """Refuse a public column read as text (not asked for as labels) whose values are mostly
    numbers (:func:`pufferfish.tables.model.refuse_mostly_numbers`)."""
    for name, cat in zip(columns, categorical, strict=True):
        hint = _mostly_numbers(df, name) if cat and kinds.get(name) is None else None
        if hint is not None:
            raise DataError(refuse_mostly_numbers(name, hint))


def _mostly_numbers(df: Any, name: str) -> str | None:
    """:func:`pufferfish.tables.duckdb_engine.mostly_numbers` with Spark: the hint for a text
    column whose values are mostly numbers (:func:`~pufferfish.tables.model.mostly_numbers_hint`),
    or None."""
    F = _pyspark().functions
    quoted = "`" + name.replace("`", "``") + "`"
    col = F.col(quoted)
    text = col.cast("string")
    number = F.expr(f"try_cast(CAST({quoted} AS STRING) AS DOUBLE)").isNotNull()  # ANSI: cast raises
    total, numbers = df.where(col.isNotNull()).agg(F.count(F.lit(1)), F.count(F.when(number, 1))).first()

    def others() -> list[tuple[Any, int]]:
        rows = (
            df.where(col.isNotNull() & ~number).groupBy(text.alias("v")).count()
            .orderBy(F.desc("count"), F.asc("v")).limit(5).collect()
        )  # fmt: skip
        return [(r["v"], r["count"]) for r in rows]

    return mostly_numbers_hint(int(total), int(numbers), others)


def _public_exprs(
    df: Any, s_col: Any, columns: Sequence[str], categorical: Sequence[bool], missing: str
) -> tuple[list[Any], Any]:
    """Each public column's value and the condition of a row in the priors, as
    :func:`pufferfish.tables.duckdb_engine._public_exprs` (under ``missing="value"`` a missing
    categorical cell is the label :data:`~.model.MISSING_LABEL`, issue 41)."""
    F = _pyspark().functions
    cols = [F.col(f"`{c}`") for c in columns]
    labelled = [cat and missing == "value" for cat in categorical]
    exprs = [
        F.coalesce(c.cast("string"), F.lit(MISSING_LABEL)) if lab else c.cast("string" if cat else "double")
        for c, cat, lab in zip(cols, categorical, labelled, strict=True)
    ]
    atom = missing == "value" and len(columns) > 1  # a missing number is the atom of its column
    valid = s_col.isNotNull()
    for c, name, cat in zip(cols, columns, labelled, strict=True):
        if cat:
            check_no_missing_label(int(df.where(c.cast("string") == MISSING_LABEL).count()), name)
        elif not atom:
            valid = valid & c.isNotNull()
    return exprs, valid


def _check_numbers(df: Any, columns: Sequence[tuple[str, Any]]) -> None:
    """Refuse, naming the first non-number, a public column read as numbers (``--numeric``) that
    Spark reads as text; ``columns`` holds ``(name, Spark column)``."""
    for name, col in columns:
        bad = df.where(col.isNotNull() & col.cast("double").isNull()).select(col).first()
        if bad is not None:
            raise DataError(f"public column {name!r} is read as numeric but holds {bad[0]!r}, not a number")


def _grouped_counts(valid_rows: Any, s_col: Any, exprs: Sequence[Any], w_expr: Any) -> list[Any]:
    """``(secret, tuple of values, rows, sum of weights, sum of squared weights)`` per group of
    the valid rows (one Spark job; only the groups reach the driver)."""
    F = _pyspark().functions
    names = [f"v{k}" for k in range(len(exprs))]
    rows = (
        valid_rows.groupBy(
            s_col.cast("string").alias("s"), *[e.alias(n) for e, n in zip(exprs, names, strict=True)]
        )
        .agg(F.count(F.lit(1)).alias("n"), F.sum(w_expr).alias("w"), F.sum(w_expr * w_expr).alias("w2"))
        .collect()
    )
    return [
        (str(r["s"]), tuple(r[n] for n in names), int(r["n"]), float(r["w"]), float(r["w2"])) for r in rows
    ]


def _perturb_partition(
    batches: Iterator[pa.RecordBatch],
    *,
    columns: Sequence[ReleasedColumn],
    noise: str,
    seed: int | None,
    empty_is_missing: bool,
    sampler: str = "exact",
    shuffle: bool = False,
) -> Iterator[pa.RecordBatch]:
    """One partition of the Spark release, on the executor: each released column replaced by
    :func:`pufferfish.tables.perturb.column_perturber` (value plus noise, or a label drawn by a
    randomized response), missing left missing; with ``shuffle`` two random sort keys added
    (:func:`pufferfish.tables.perturb.order_keys`).

    ``empty_is_missing``: the columns are the CSV text (:func:`read_table` with ``all_text``),
    where an empty string is a missing value.

    The partition has its own sampler: the secure one (every random bit from the executor's OS
    randomness, nothing shipped from the driver), or with ``seed`` a NumPy generator seeded by
    ``(seed, partition id)``.
    """
    from pyspark import TaskContext

    ctx = TaskContext.get()
    part = ctx.partitionId() if ctx is not None else 0
    gen = None if seed is None else np.random.default_rng([seed, part])
    keys_gen = None if seed is None else np.random.default_rng([seed, part, 1])  # the noise's left as it was
    perturbs = [column_perturber(c, noise, 1, sampler) for c in columns]  # one partition per core
    for batch in batches:
        cols, fields = list(batch.columns), list(batch.schema)
        every = np.ones(batch.num_rows, dtype=bool)  # every missing cell inside the check
        for c, perturb in zip(columns, perturbs, strict=True):
            k = batch.schema.get_field_index(c.name)
            value = batch.column(k)
            if empty_is_missing:  # "" is missing, as when the priors were estimated
                value = pc.if_else(pc.equal(value, ""), pa.scalar(None, pa.string()), value)
            codes = c.values(value.cast(pa.string() if c.codes_for is not None else pa.float64()))
            every &= ~np.isnan(codes) | c.missing_checked
            cols[k] = perturb(codes, ~np.isnan(codes), gen)[0]
            if c.kept:  # in the table's own type (text from a CSV), checked equal to it
                cols[k] = restore_type(cols[k], batch.column(k), c.name)
            elif c.noiseless:  # the value the check saw, in the table's integer or text type
                cols[k] = noiseless_as_written(cols[k], batch.column(k).type)
            fields[k] = pa.field(c.name, c.arrow_type(fields[k].type))
        perturbed = [batch.schema.get_field_index(c.name) for c in columns if not c.kept]  # kept: as is
        suppress_partial_rows(cols, perturbed, every)
        if shuffle:
            cols += order_keys(batch.num_rows, keys_gen)
            fields += [pa.field(k, pa.int64(), False) for k in ORDER_KEYS]
        yield pa.RecordBatch.from_arrays(cols, schema=pa.schema(fields))


def release_table(
    source: TableSource,
    output: Path,
    fmt: str,
    *,
    columns: Sequence[ReleasedColumn],
    noise: str,
    rng: int | None,
    force: bool,
    text_copy: bool,
    spark: Any = None,
    sampler: str = "exact",
    written: Sequence[str] = (),
    shuffle: bool = True,
) -> tuple[dict[str, Any], int, int]:
    """Write the release with Spark: ``(sampler description, rows released, rows missing)``;
    with ``shuffle`` the rows sorted by two random keys a row (a uniformly random order; the
    parts in name order hold it), else in the input order.

    Parameters
    ----------
    source : TableSource
        The table (:func:`read_table`).
    output : pathlib.Path
        Output folder (Spark writes a folder of part files), Parquet or CSV by ``fmt``.
    fmt : {"csv", "parquet"}
        Output format; ``.csv.gz`` names write gzip-compressed parts.
    columns : sequence of ReleasedColumn
        The released columns (one for a column's release; several released jointly, issue 31),
        each with its scale or randomized response.
    noise : {"laplace", "gaussian"}
    rng : int or None
        ``None``: the secure sampler in every partition. An int: NumPy generators seeded by
        ``(rng, partition id)``, reproducible for the same partitioning, **not secure**.
    force : bool
        Overwrite an existing output folder.
    text_copy : bool
        Read CSV input as text so other columns are copied unchanged.
    spark : pyspark.sql.SparkSession, optional
    sampler : {"exact", "opendp"}
        The secure sampler of every partition (:func:`pufferfish.noise.samplers.add_laplace`).
    written : sequence of str
        The columns written, in the table's order (:func:`written_and_kept`); every other column,
        the secret's included, is left out of the output (issue 41). Empty: the released columns.

    Returns
    -------
    (dict, int, int)
        The description of the sampler (of each column, under ``"columns"``, for several), the
        rows with every released column present, and the others.

    Raises
    ------
    DataError
        If Spark cannot read the table or write the output.
    """
    seed = None if rng is None else int(rng)
    session = spark_session(spark)
    F = _pyspark().functions
    types = _pyspark().types
    text = [c.name for c in columns if c.categorical]
    df = read_table(session, source, all_text=text_copy, text_columns=text)
    written = list(written) or [c.name for c in columns]  # nothing else is written (issue 41)
    df = df.select(*[F.col(f"`{c}`") for c in written])
    dtypes = dict(df.dtypes)
    kinds = {
        c.name: types.StringType() if c.as_labels else types.DoubleType()
        for c in columns
        if not (c.kept or (c.noiseless and _keeps_type(dtypes[c.name])))  # these keep the table's type
    }
    schema = types.StructType(
        [types.StructField(f.name, kinds[f.name], True) if f.name in kinds else f for f in df.schema.fields]
        + ([types.StructField(k, types.LongType(), False) for k in ORDER_KEYS] if shuffle else [])
    )

    def perturb(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return _perturb_partition(
            batches, columns=columns, noise=noise, seed=seed, empty_is_missing=text_copy, sampler=sampler,
            shuffle=shuffle,
        )  # fmt: skip

    try:
        missing, total = _missing_rows(df, columns, text_copy)
        drawn = any(c.codes_a_missing_cell for c in columns)  # the missing label may be drawn
        if fmt == "csv" and len(written) == 1 and (missing or drawn):
            which = f"its {missing:,} missing cells" if missing else "the missing label the release draws"
            raise DataError(
                f"a Spark CSV output of one column cannot hold a missing cell ({which}: Spark skips the "
                "empty lines, and the rows would no longer line up): write .parquet, or keep another "
                "column with keep_unchecked"
            )
        frame = df.mapInArrow(perturb, schema)
        if shuffle:
            frame = frame.orderBy(*ORDER_KEYS).drop(*ORDER_KEYS)
        _write_whole(frame, output, fmt, force)
    except (DataError, OSError, KeyboardInterrupt):
        raise
    except Exception as exc:
        raise DataError(f"cannot write the release with Spark: {spark_cause(exc)}") from None
    gen = None if seed is None else np.random.default_rng(seed)
    described = {}
    for c in columns:  # the samplers' descriptions, from one draw on the driver (discarded)
        probe = np.zeros(1) if c.mapping is None else np.asarray(c.mapping.support[:1], dtype=np.float64)
        about = column_perturber(c, noise, 1, sampler)(probe, np.ones(1, dtype=bool), gen)[1]
        about.update({"engine": "spark", "workers": "one sampler per partition", "seed": seed})
        if c.mapping is not None:  # released rows per value of the alphabet, counted by Spark
            about["counts"] = _mapping_counts(session, df, output, fmt, c, text_copy)
        if seed is not None:
            about["sampler"] += "; seeded per partition by (seed, partition id)"
        described[c.name] = about
    out_about = described[columns[0].name] if len(columns) == 1 else {"columns": described}
    return out_about, total - missing, missing


def _write_whole(frame: Any, output: Path, fmt: str, force: bool) -> None:
    """Write ``frame`` to a hidden folder beside ``output`` and publish it whole
    (:func:`~pufferfish.tables.outputs.publish_folder`): a failed job leaves nothing, and an output
    replaced with ``force`` is kept until the new one is in place."""
    tmp = Path(tempfile.mkdtemp(prefix=temp_prefix(output), suffix=".tmp", dir=output.parent))
    try:
        out = frame.write.mode("overwrite")
        if fmt == "parquet":
            out.parquet(str(tmp))
        else:
            gz = output.name.lower().endswith(".gz")
            out.options(**CSV_WRITE, **({"compression": "gzip"} if gz else {})).csv(str(tmp))
        publish_folder(tmp, output, force=force)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _missing_rows(df: Any, columns: Sequence[ReleasedColumn], text_copy: bool) -> tuple[int, int]:
    """``(rows with a released cell written missing, rows)`` of a Spark DataFrame (two jobs)."""
    F = _pyspark().functions
    absent = F.lit(False)
    for c in columns:
        if c.codes_a_missing_cell:  # a label of its own: released as any other (issue 41)
            continue
        column = F.col(f"`{c.name}`")
        absent = absent | (column.isNull() | (column == "") if text_copy else column.isNull())
    return int(df.agg(F.count(F.when(absent, 1))).first()[0]), int(df.count())


def written_and_kept(
    source: TableSource,
    *,
    secret: str,
    pairs: Sequence[tuple[str, str]],
    released: Sequence[str],
    keep: Sequence[str],
    weight: str | None,
    spark: Any = None,
) -> tuple[list[str], list[KeptColumn]]:
    """:func:`pufferfish.tables.duckdb_engine.written_and_kept` by Spark SQL (the same queries)."""
    session = spark_session(spark)
    written = written_columns(list(read_table(session, source).columns), released, keep)
    if not keep:
        return written, []
    df = read_table(session, source, text_columns=[secret, *keep])
    df.createOrReplaceTempView("t")
    try:
        return written, measured_losses(
            lambda sql: [tuple(r) for r in session.sql(sql).collect()],
            quote=lambda c: "`" + c.replace("`", "``") + "`", text="STRING", secret=secret, pairs=pairs,
            columns=keep, weight=weight,
        )  # fmt: skip
    except Exception as exc:
        raise DataError(f"cannot measure the kept columns with Spark: {first_line(exc)}") from None


def _mapping_counts(
    session: Any, df: Any, output: Path, fmt: str, column: ReleasedColumn, text_copy: bool
) -> dict[str, Any]:
    """``{"values", "input", "output"}``: the rows per value of a mapping's alphabet in the table
    and in the written release, by two Spark aggregations (the DuckDB engine counts them while it
    streams)."""
    F = _pyspark().functions
    est = column.estimated
    assert est is not None and column.mapping is not None
    support = np.asarray(column.mapping.support, dtype=np.float64)
    labels = {float(code): label for label, code in est.mapping}
    names = [labels.get(float(v)) for v in support] if est.categorical else support.tolist()
    position = {name: k for k, name in enumerate(names)}
    cast = "string" if est.categorical else "double"
    labelled = est.categorical and MISSING_LABEL in position  # a missing cell is a label (issue 41)

    def counts(frame: Any) -> list[int]:
        col = F.col(f"`{column.name}`")
        if labelled:
            col = F.coalesce(F.when(col.cast("string") != "", col.cast("string")), F.lit(MISSING_LABEL))
        present = col.isNotNull() & (col != "") if text_copy or est.categorical else col.isNotNull()
        out = [0] * len(names)
        for row in frame.where(present).groupBy(col.cast(cast).alias("v")).count().collect():
            value = row["v"] if est.categorical else float(to_release_grid(float(row["v"])))
            if value in position:
                out[position[value]] += int(row["count"])
        return out

    written = (
        session.read.parquet(str(output)) if fmt == "parquet" else session.read.csv(str(output), **CSV_READ)
    )
    return {"values": [label_json(v) for v in names], "input": counts(df), "output": counts(written)}
