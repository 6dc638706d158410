"""DuckDB aggregates of several public columns (issue 17): the counts of the joint priors.

One ``GROUP BY secret, columns`` over the table (rows never leave DuckDB), read as the DuckDB
engine reads one column (:mod:`pufferfish.tables.duckdb_engine`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import duckdb

from .duckdb_engine import check_numbers, connect, is_numeric_type, open_table, read_error
from .model import JointAggregates, check_columns, check_row_counts
from .source import TableSource, quote_identifier


def joint_aggregates(
    source: TableSource,
    *,
    secret: str,
    columns: Sequence[str],
    weight: str | None,
    kinds: Mapping[str, str] | None = None,
) -> JointAggregates:
    """``GROUP BY secret, columns`` of a table by DuckDB: the joint priors' counts.

    Parameters
    ----------
    source : TableSource
    secret : str
    columns : sequence of str
        The public columns (distinct, each a column of the table).
    weight : str, optional
        Frequency-weight column (numeric, >= 0).
    kinds : mapping of str to {"categorical", "numeric"}, optional
        How to read a column; default numeric if DuckDB's type is numeric.

    Returns
    -------
    JointAggregates

    Raises
    ------
    DataError
        If the table cannot be read or has no rows, a column is unknown, a weight is not a number,
        negative or NaN, or a numeric public column holds a non-number or a non-finite value.
    """
    kinds = dict(kinds or {})
    with connect() as con:
        try:
            rel = open_table(con, source)
            names = list(rel.columns)
            types = {c: str(t) for c, t in zip(rel.columns, rel.types, strict=True)}
            for col in columns:
                check_columns(names, secret=secret, public=col, weight=weight)
            categorical = tuple(
                kinds.get(c) == "categorical" or (kinds.get(c) is None and not is_numeric_type(types[c]))
                for c in columns
            )
            if source.kind == "csv":  # labels as written
                text = [secret] + [c for c, cat in zip(columns, categorical, strict=True) if cat]
                rel = open_table(con, source, text_columns=text)
            con.register("t", rel)
            s_col = quote_identifier(secret)
            exprs = [
                f"CAST({quote_identifier(c)} AS {'VARCHAR' if cat else 'DOUBLE'})"
                for c, cat in zip(columns, categorical, strict=True)
            ]
            valid = " AND ".join(
                [f"{s_col} IS NOT NULL"] + [f"{quote_identifier(c)} IS NOT NULL" for c in columns]
            )
            numeric = [c for c, cat in zip(columns, categorical, strict=True) if not cat]
            check_numbers(con, types, weight=weight, numeric=numeric)
            w_expr = "1.0"
            if weight:
                valid += f" AND {quote_identifier(weight)} IS NOT NULL"
                w_expr = f"CAST({quote_identifier(weight)} AS DOUBLE)"
            finite = "".join(
                f", count(*) FILTER (WHERE NOT isfinite(CAST({quote_identifier(c)} AS DOUBLE)))"
                for c in numeric
            )
            total, dropped, negative, *non_finite = con.execute(
                f"SELECT count(*), count(*) FILTER (WHERE NOT ({valid})), "
                f"count(*) FILTER (WHERE {w_expr} < 0 OR isnan({w_expr})){finite} FROM t"
            ).fetchone()  # type: ignore[misc]
            check_row_counts(int(total), weight, int(negative), dict(zip(numeric, non_finite, strict=True)))
            labels = tuple(
                [
                    r[0]
                    for r in con.execute(
                        f"SELECT DISTINCT {e} FROM t WHERE {e} IS NOT NULL ORDER BY 1"
                    ).fetchall()
                ]
                if cat
                else []
                for e, cat in zip(exprs, categorical, strict=True)
            )
            keys = ", ".join(str(k + 2) for k in range(len(columns)))
            rows = con.execute(
                f"SELECT CAST({s_col} AS VARCHAR), {', '.join(exprs)}, sum({w_expr}), "
                f"sum(({w_expr}) ^ 2) FROM t "
                f"WHERE {valid} GROUP BY 1, {keys}"
            ).fetchall()
        except duckdb.Error as exc:
            raise read_error(exc, "the table") from None
    counts = [(str(r[0]), tuple(r[1:-2]), float(r[-2]), float(r[-1])) for r in rows]
    return JointAggregates(int(total), int(dropped), categorical, labels, counts)
