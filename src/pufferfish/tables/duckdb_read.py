"""Reading tables with DuckDB: the library's connections (bounded memory, interrupts), the CSV
dialect, and one relation over a resolved table (:func:`open_table`).

A CSV file's column types are sniffed once per process and file: DuckDB's sniffer reads a sample
of the file each time a relation is opened (68 ms for the shipped Adult file, measured with
``read_csv`` in a loop), and a release opens the same file several times (the counts, the rows
written). Later opens give the sniffed types as ``columns`` (22 ms), so every relation over the
file has the same types, which the release relies on (the counts and the rows it writes read
the same values). The cache is keyed by the file's path, size and modification time and the
reading options, so a file changed in between is sniffed again.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb

from pufferfish.tables.errors import INTERRUPT_TEXT
from pufferfish.tables.outputs import spill_path
from pufferfish.tables.source import DataError, TableSource, first_line, quote_identifier

#: DuckDB memory limit of the database the library opens: bounded memory on large tables
#: (DuckDB spills or streams beyond it) whatever the machine's RAM.
DUCKDB_MEMORY_LIMIT = "512MB"


#: The process's DuckDB database (:func:`_database`) and the process that opened it.
_DATABASE: tuple[int, duckdb.DuckDBPyConnection, Path] | None = None
_DATABASE_LOCK = threading.Lock()


def _database() -> duckdb.DuckDBPyConnection:
    """This process's in-memory DuckDB database, opened at its first use with
    :data:`DUCKDB_MEMORY_LIMIT` and a spill folder of its own (:func:`~.outputs.spill_path`),
    both closed and removed when the process exits.

    Opening a database costs 11.6 ms (``duckdb.connect``), a cursor on it 0.19 ms (medians,
    ``python benchmarks/bench_connections.py``), and a release used four (counts, columns written,
    rows read, rows written): one database and a cursor for each stage instead. A forked child
    opens its own (a database is not fork-safe).
    """
    global _DATABASE
    with _DATABASE_LOCK:
        if _DATABASE is None or _DATABASE[0] != os.getpid():
            spill = spill_path()
            db = duckdb.connect(config={"memory_limit": DUCKDB_MEMORY_LIMIT, "temp_directory": str(spill)})
            atexit.register(_close_database, db, spill, os.getpid())
            _DATABASE = (os.getpid(), db, spill)
        return _DATABASE[1]


def _close_database(db: duckdb.DuckDBPyConnection, spill: Path, pid: int) -> None:
    """Close ``db`` and remove its spill folder (at exit) in the process ``pid`` that opened it (a
    forked child inherits the exit handler, not the folder)."""
    if os.getpid() != pid:
        return
    try:
        db.close()
    finally:
        shutil.rmtree(spill, ignore_errors=True)


def close_database() -> None:
    """Close this process's DuckDB database now and remove its spill folder; the next
    :func:`connect` opens a new one (tests: a new process's first connection)."""
    global _DATABASE
    with _DATABASE_LOCK:
        if _DATABASE is not None and _DATABASE[0] == os.getpid():
            atexit.unregister(_close_database)
            _close_database(_DATABASE[1], _DATABASE[2], _DATABASE[0])
        _DATABASE = None


@contextmanager
def connect(*, threads: int | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection (a cursor) to the process's in-memory DuckDB database (:func:`_database`),
    without a progress bar (DuckDB would print one on long queries, into the CLI's output), closed
    when the block ends with its temporary tables and registered views.

    An interrupt (Ctrl-C, or SIGTERM under the CLI) that stops a query leaves the block as
    ``KeyboardInterrupt`` (:func:`interrupted`), not as a DuckDB error.

    The database holds at most :data:`DUCKDB_MEMORY_LIMIT` over all its connections and spills
    beyond it to ``pufferfish-duckdb-PID-N`` in the system's temporary folder (not to ``.tmp`` in
    the working folder), removed when the process exits; the first database of a run removes
    those of killed runs. A block may create only temporary tables (``CREATE TEMP TABLE``, local
    to it) and must not change a global setting: other blocks share the database.

    With ``threads`` (>= 1), a database of its own with that many threads (DuckDB's ``threads`` is
    a setting of the whole database), closed and its spill folder removed when the block ends.
    """
    spill = None
    if threads is None:
        con = _database().cursor()
    else:
        spill = spill_path()
        con = duckdb.connect(
            config={"memory_limit": DUCKDB_MEMORY_LIMIT, "temp_directory": str(spill), "threads": threads}
        )
    try:
        con.execute("SET enable_progress_bar = false")
        yield con
    except (duckdb.Error, RuntimeError) as exc:
        if interrupted(exc):
            raise KeyboardInterrupt from None
        raise
    finally:
        con.close()
        if spill is not None:
            shutil.rmtree(spill, ignore_errors=True)


def copy_columns(
    con: duckdb.DuckDBPyConnection, rel: duckdb.DuckDBPyRelation, columns: Sequence[str]
) -> None:
    """``columns`` of ``rel`` copied once into a temporary table ``t`` local to ``con`` (spilled
    beyond the memory limit): queries that each scan ``t`` then read a CSV once, not once each."""
    con.register("source_table", rel.select(", ".join(quote_identifier(c) for c in dict.fromkeys(columns))))
    con.execute("CREATE TEMP TABLE t AS SELECT * FROM source_table")


def interrupted(exc: BaseException) -> bool:
    """Whether a DuckDB error is a Ctrl-C, not bad data (``InterruptException``, or ``INTERRUPT_TEXT``)."""
    return isinstance(exc, duckdb.InterruptException) or INTERRUPT_TEXT.search(str(exc)) is not None


def read_error(exc: duckdb.Error, what: str) -> BaseException:
    """The error to raise for a DuckDB error while reading ``what``: ``KeyboardInterrupt`` for
    an interrupt, else :class:`DataError` with DuckDB's first line."""
    if interrupted(exc):
        return KeyboardInterrupt()
    text = str(exc)
    ragged = re.search(
        r"CSV Error on Line: (\d+).*?Expected Number of Columns: (\d+) Found: (\d+)", text, re.S
    )
    if ragged:  # a ragged row beyond the head that inspect_csv checks: its line and field count
        line, expected, found = ragged.groups()
        return DataError(
            f"cannot read {what}: line {line} has {found} fields where the header has {expected}"
        )
    return DataError(f"cannot read {what}: {first_line(exc)}")


#: How CSV files are read: a header row on the first line, RFC 4180 quoting (a quote inside a
#: quoted field is doubled), no comment lines and no rows skipped (DuckDB's sniffer may otherwise
#: take ``#`` for a comment and drop what follows it). The delimiter is sniffed (``,``, ``;``,
#: tab, ``|``), and a release writes its CSV with the delimiter and line ending of its source
#: (:func:`csv_dialect`).
CSV_DIALECT: dict[str, Any] = {
    "header": True,
    "quotechar": '"',
    "escapechar": '"',
    "comment": "",
    "skiprows": 0,
}


def csv_args(source: TableSource, *, as_written: bool = False) -> dict[str, Any]:
    """``read_csv`` arguments of a CSV source: :data:`CSV_DIALECT` with its :class:`CsvOptions`
    (names of a header-less file, the delimiter, the missing-value markers; with ``as_written``
    no markers, so every field is read as the text in the file and copied unchanged)."""
    options = source.csv
    args = dict(CSV_DIALECT)
    if options.names is not None:
        args.update(header=False, names=list(options.names))
    if options.delimiter is not None:
        args["delimiter"] = options.delimiter
    if options.na and not as_written:
        args["na_values"] = ["", *options.na]
    return args


def csv_dialect(con: duckdb.DuckDBPyConnection, source: TableSource) -> tuple[str, str]:
    """The field delimiter and line ending of a CSV source (its own delimiter, or DuckDB's
    sniffer's).

    Returns
    -------
    (str, str)
        The delimiter (as :func:`open_table` reads the file) and the line ending (``"\\n"``,
        ``"\\r\\n"`` or ``"\\r"``), which a release of the file writes back.

    Raises
    ------
    DataError
        If DuckDB cannot sniff the file.
    """
    path_sql = str(source.path).replace("'", "''")
    header = "true" if source.csv.names is None else "false"
    given = source.csv.delimiter
    delim = "" if given is None else ", delim = '{}'".format(given.replace("'", "''"))
    try:
        rows = con.execute(
            f"SELECT Delimiter, NewLineDelimiter FROM sniff_csv('{path_sql}', header = {header}, "
            f"quote = '\"', escape = '\"', comment = '', skip = 0{delim})"
        ).fetchall()
    except duckdb.Error as exc:
        raise read_error(exc, repr(str(source.data))) from None
    if not rows:  # pragma: no cover - sniff_csv returns one row
        return given or ",", "\n"
    delimiter, newline = rows[0]
    return given or str(delimiter), {"\\r\\n": "\r\n", "\\r": "\r"}.get(str(newline), "\n")


def open_table(
    con: duckdb.DuckDBPyConnection,
    source: TableSource,
    *,
    all_varchar: bool = False,
    text_columns: Sequence[str] = (),
) -> duckdb.DuckDBPyRelation:
    """A DuckDB relation over a resolved table (CSV, Parquet or DataFrame), row order kept; a CSV
    file read in the dialect :data:`CSV_DIALECT`, column types sniffed.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        Connection to read with.
    source : TableSource
        From :func:`~pufferfish.tables.source.resolve_source`.
    all_varchar : bool
        Read every CSV column as the text written in the file, so values are written back
        unchanged: a quoted empty field ``""`` stays an empty string (an unquoted empty field is
        missing), where the default reading makes both missing.
    text_columns : sequence of str
        CSV columns read as the text written in the file whatever the sniffer guesses (it turns
        ``yes``/``no`` into BOOLEAN, ``01/02/2020`` into DATE and ``007`` into 7); each must be a
        column of the file.

    Returns
    -------
    duckdb.DuckDBPyRelation

    Raises
    ------
    DataError
        If DuckDB cannot read it.
    """
    try:
        if source.kind == "dataframe":
            return con.from_df(source.data)
        if source.kind == "parquet":
            return con.read_parquet(str(source.data))
        path = str(source.data)
        args = csv_args(source, as_written=all_varchar)
        key = _sniff_key(source, csv_args(source))  # the as-written read takes only the names
        if key is not None and key not in _SNIFFED and not all_varchar:
            plain = con.read_csv(path, **args)
            _remember(key, plain)
            if not text_columns:
                return plain
        sniffed = _SNIFFED.get(key)
        if sniffed is None or not set(sniffed.values()) <= _PLAIN_TYPES:
            # not sniffed yet, or types read only with the sniffer's options (dates): sniffed again
            if all_varchar:
                return con.read_csv(path, all_varchar=True, allow_quoted_nulls=False, **args)
            if text_columns:
                args["dtype"] = dict.fromkeys(text_columns, "VARCHAR")
            return con.read_csv(path, **args)
        args.pop("names", None)  # the names are the keys of ``columns``
        if all_varchar:
            columns = dict.fromkeys(sniffed, "VARCHAR")
            return con.read_csv(path, allow_quoted_nulls=False, columns=columns, **args)
        return con.read_csv(path, columns=sniffed | dict.fromkeys(text_columns, "VARCHAR"), **args)
    except duckdb.Error as exc:
        raise read_error(exc, repr(str(source.data))) from None


#: Column types given back to DuckDB at a later open of a CSV; a file with another type (a date, a
#: time, a decimal: types with options of their own) is sniffed again at every open, as before.
_PLAIN_TYPES = frozenset(
    {"VARCHAR", "BOOLEAN", "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
     "UINTEGER", "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE"}
)  # fmt: skip

#: ``key -> {column: type}`` of the CSV files sniffed in this process (module docstring).
_SNIFFED: dict[tuple[Any, ...] | None, dict[str, str]] = {}  # None (no key) is never stored


def _sniff_key(source: TableSource, args: dict[str, Any]) -> tuple[Any, ...] | None:
    """The file (path, size, modification time) and the reading options; None when the file
    cannot be examined (nothing is kept for it: a change could not be seen)."""
    try:
        st = os.stat(source.data)
    except OSError:
        return None
    return (str(source.data), st.st_size, st.st_mtime_ns, repr(sorted(args.items())))


def _remember(key: tuple[Any, ...], rel: duckdb.DuckDBPyRelation) -> None:
    """Keep a plain read's sniffed names and types."""
    if len(_SNIFFED) > 64:
        _SNIFFED.clear()
    _SNIFFED[key] = dict(zip(rel.columns, (str(t) for t in rel.types), strict=True))


def table_columns(con: duckdb.DuckDBPyConnection, source: TableSource) -> list[str]:
    """The names of a table's columns, in order (a CSV already sniffed in this process is not
    opened again).

    Raises
    ------
    DataError
        If DuckDB cannot read it.
    """
    if source.kind == "csv":
        sniffed = _SNIFFED.get(_sniff_key(source, csv_args(source)))
        if sniffed is not None:
            return list(sniffed)
    return list(open_table(con, source).columns)
