"""Released values binned per secret, read back from a release's output by DuckDB: what the
HTML reports draw beside the original distributions.

The output does not hold the secret (issue 41): each released row is matched with its input row
by position (the output keeps the row order; DuckDB's ``POSITIONAL JOIN`` of the input table's
secret column and the output's released columns), and the row counts must agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pufferfish.tables.duckdb_read import connect, open_table
from pufferfish.tables.estimate import EstimatedPriors
from pufferfish.tables.model import MISSING_LABEL
from pufferfish.tables.source import DataError, TableSource, quote_identifier


@dataclass(frozen=True)
class ReleasedHistogram:
    """Released values of one secret, binned: what a release adds to its report.

    Attributes
    ----------
    secret : str
        The secret value.
    edges : numpy.ndarray, shape (B + 1,)
        Bin edges, increasing, in the unit of the released column.
    counts : numpy.ndarray, shape (B,)
        Rows of that secret whose released value falls in each bin (missing values left out).
    """

    secret: str
    edges: np.ndarray
    counts: np.ndarray


def released_histograms(
    output: str | Path,
    estimated: EstimatedPriors,
    table: TableSource,
    *,
    bins: int = 60,
    labels: bool = False,
) -> tuple[ReleasedHistogram, ...]:
    """Bin the released column of a release's output per secret of the pairs (DuckDB, streamed).

    Parameters
    ----------
    output : str or pathlib.Path
        The release's output: a CSV or Parquet file, or a folder of Parquet or CSV part files
        (Spark engine).
    estimated : EstimatedPriors
        The release's priors (names the secret and public columns and the secrets).
    table : TableSource
        The table released (its secret column, matched with the output row by row).
    bins : int
        Bins over the range of released values (>= 1).
    labels : bool
        The released column holds labels (a categorical column released by a randomized
        mapping): counted per label, one bin ``[code - 1/2, code + 1/2)`` per code of the mapping.

    Returns
    -------
    tuple of ReleasedHistogram
        One per secret of the pairs, in the priors' order; missing released values left out.
    """
    secrets = list(estimated.scenario.priors[0].conditionals)
    if labels:
        return _label_histograms(
            output, table, estimated.mapping, secrets, estimated.secret_column, estimated.public_column
        )
    return column_histograms(
        output,
        table,
        secret_column=estimated.secret_column,
        column=estimated.public_column,
        secrets=secrets,
        bins=bins,
    )


def _output_source(output: str | Path) -> str:
    """DuckDB's reader of a release's output (a file or a folder of part files)."""
    path = Path(output)
    if path.is_dir():
        parts = sorted(path.glob("*.parquet")) or sorted(path.glob("*.csv*"))
        files = [str(p) for p in parts]
    else:
        files = [str(path)]
    reader = "read_parquet" if files and files[0].endswith((".parquet", ".pq")) else "read_csv"
    return f"{reader}([{', '.join(repr(f) for f in files)}])"


def _released_view(con: Any, output: str | Path, table: TableSource, secret_column: str, column: str) -> None:
    """The view ``released(s, v)``: each input row's secret (as text) beside its released value
    (as text), matched by position; refused if the row counts differ."""
    rel = open_table(con, table, text_columns=[secret_column] if table.kind == "csv" else ())
    con.register("input_rows", rel)
    s_col, v_col = quote_identifier(secret_column), quote_identifier(column)
    reader = _output_source(output)
    con.execute(
        f"CREATE TEMP VIEW released AS SELECT i.s, o.v FROM (SELECT CAST({s_col} AS VARCHAR) AS s FROM "
        f"input_rows) i POSITIONAL JOIN (SELECT CAST({v_col} AS VARCHAR) AS v FROM {reader}) o"
    )
    n_in, n_out = con.execute(
        f"SELECT (SELECT count(*) FROM input_rows), (SELECT count(*) FROM {reader})"
    ).fetchone()
    if n_in != n_out:
        raise DataError(
            f"the output has {n_out} rows and the table {n_in}: they cannot be matched row by row"
        )


def column_histograms(
    output: str | Path,
    table: TableSource,
    *,
    secret_column: str,
    column: str,
    secrets: Sequence[str],
    bins: int = 60,
) -> tuple[ReleasedHistogram, ...]:
    """Bin one numeric column of a release's output per secret value (DuckDB, streamed).

    Parameters
    ----------
    output, table : str or pathlib.Path, TableSource
        As :func:`released_histograms`.
    secret_column, column : str
        The secret column and the released column to bin.
    secrets : sequence of str
        The secret values, in the order returned.
    bins : int
        Bins over the range of released values (>= 1), the same edges for every secret.

    Returns
    -------
    tuple of ReleasedHistogram
        One per secret; missing released values left out.
    """
    with connect() as con:
        _released_view(con, output, table, secret_column, column)
        con.execute("CREATE TEMP VIEW numbers AS SELECT s, TRY_CAST(v AS DOUBLE) AS v FROM released")
        lo, hi = con.execute("SELECT min(v), max(v) FROM numbers WHERE v IS NOT NULL").fetchone()  # type: ignore[misc]
        lo, hi = (0.0, 1.0) if lo is None else (float(lo), float(hi))
        hi = hi if hi > lo else lo + 1.0
        edges = np.linspace(lo, hi, bins + 1)
        width = (hi - lo) / bins
        rows = con.execute(  # one scan for every secret (was one per secret)
            f"SELECT s, least(CAST(floor((v - {lo!r}) / {width!r}) AS BIGINT), {bins - 1}) AS b, count(*) "
            f"FROM numbers WHERE v IS NOT NULL AND s IN ({', '.join('?' for _ in secrets)}) GROUP BY 1, 2",
            list(secrets),
        ).fetchall()
    counts = {s: np.zeros(bins) for s in secrets}
    for s, b, n in rows:
        counts[s][int(b)] += n
    return tuple(ReleasedHistogram(secret=s, edges=edges, counts=counts[s]) for s in secrets)


def label_histograms(
    output: str | Path,
    table: TableSource,
    *,
    secret_column: str,
    column: str,
    labels: Sequence[str],
    secrets: Sequence[str],
) -> tuple[ReleasedHistogram, ...]:
    """Count the labels of one categorical column of a release's output per secret value.

    Parameters
    ----------
    output : str or pathlib.Path
        As :func:`released_histograms`.
    secret_column, column : str
        The secret column and the released column.
    labels : sequence of str
        The column's labels; label ``k`` is counted in the bin ``[k - 0.5, k + 0.5)``.
    secrets : sequence of str
        The secret values, in the order returned.

    Returns
    -------
    tuple of ReleasedHistogram
    """
    mapping = [(lab, float(k)) for k, lab in enumerate(labels)]
    return _label_histograms(output, table, mapping, list(secrets), secret_column, column)


def _label_histograms(
    output: str | Path,
    table: TableSource,
    mapping: Sequence[tuple[str, float]],
    secrets: list[str],
    secret_column: str,
    column: str,
) -> tuple[ReleasedHistogram, ...]:
    """Released labels counted per secret, one bin per code of the mapping; an empty released
    cell is the missing label when the mapping has one (a release writes it as an empty cell)."""
    code = {label: int(c) for label, c in mapping}
    if MISSING_LABEL in code:
        code[None] = code[MISSING_LABEL]  # type: ignore[index]
    k = len(mapping)
    edges = np.arange(k + 1, dtype=np.float64) - 0.5
    with connect() as con:
        _released_view(con, output, table, secret_column, column)
        rows = con.execute("SELECT s, v, count(*) FROM released GROUP BY 1, 2").fetchall()
    out = []
    for s in secrets:
        counts = np.zeros(k)
        for sec, label, n in rows:
            if sec == s and label in code:
                counts[code[label]] += n
        out.append(ReleasedHistogram(secret=s, edges=edges, counts=counts))
    return tuple(out)
