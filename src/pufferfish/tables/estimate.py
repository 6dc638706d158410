"""Empirical priors from a table: ``P(public = x | secret = v)`` for each secret of the pairs, of
one public column (:func:`estimate_from_source`) or of a tuple of several
(:func:`estimate_joint`).

The prior of the public column given each secret value is ``(rows or summed weights with secret
v and public x) / (rows with secret v)``, as in seed 001 sec 6.1 and seed 000 Fig 5 and 9. An
engine (:mod:`~pufferfish.tables.duckdb_engine`, :mod:`~pufferfish.tables.spark_engine`)
computes the aggregates (:class:`TableAggregates`); one builder turns them into priors, so both
engines give the same priors on the same data.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from pufferfish._checks import short_repr
from pufferfish.priors.distributions import DiscretePrior, to_release_grid
from pufferfish.priors.joint import MISSING_NUMBER
from pufferfish.priors.scenario import AdversaryPrior, Scenario
from pufferfish.tables.domain import domain_grid
from pufferfish.tables.joint import bounded_column, default_units, joint_rows, joint_sets, missing_atoms
from pufferfish.tables.model import (
    MISSING_LABEL,
    EstimatedJointPriors,
    EstimatedPriors,
    SecretGroup,
    TableAggregates,
    check_missing,
)
from pufferfish.tables.source import (
    CsvOptions,
    DataError,
    TableSource,
    check_engine,
    check_markers_and_pairs,
    resolve_source,
)


def parse_pair(text: str) -> tuple[str, str]:
    """Parse ``"A,B"`` into the pair ``("A", "B")``, with CSV quoting for a value that holds a
    comma: ``'"Doe, Jane",Smith'`` is ``("Doe, Jane", "Smith")`` (issue 33).

    Raises
    ------
    ValueError
        If the text is not two non-empty, distinct values separated by one comma.
    """
    import csv

    try:
        rows = list(csv.reader([str(text)], skipinitialspace=True, strict=True))
    except csv.Error:
        rows = []
    parts = [p.strip() for p in rows[0]] if len(rows) == 1 else []
    if len(parts) != 2 or not parts[0] or not parts[1]:
        quoting = "quote a value holding a comma: '\"A, x\",B'"
        raise ValueError(f"pair must be two secret values 'A,B' ({quoting}), got {text!r}")
    if parts[0] == parts[1]:
        raise ValueError(f"pair must name two different secret values, got {text!r}")
    return parts[0], parts[1]


def estimate_priors(
    data: Any,
    *,
    secret: str,
    public: str,
    pairs: Iterable[tuple[str, str] | str],
    order: Sequence[str] | None = None,
    weight: str | None = None,
    engine: str = "duckdb",
    spark: Any = None,
    categorical: Sequence[str] = (),
    numeric: Sequence[str] = (),
    read: CsvOptions | None = None,
    missing: str = "value",
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
    pairs : iterable of (str, str) or str
        Discriminative pairs of secret values, as tuples or as texts 'A,B'.
    order : sequence of str, optional
        Order of the labels of a categorical public column (codes are positions). Must list every
        label present; extra labels extend the alphabet. Default: labels sorted.
    weight : str, optional
        Column of non-negative frequency weights (pre-aggregated tables).
    engine : {"duckdb", "spark"}
        ``"duckdb"`` (default, embedded) or ``"spark"``: the same aggregates computed by Spark
        (:func:`pufferfish.tables.spark_engine.table_aggregates`; ``data`` may then be a Spark
        DataFrame or a folder).
    spark : pyspark.sql.SparkSession, optional
        Session of the Spark engine (default: the active one, else a local one).
    categorical, numeric : sequence of str
        Columns to read as categorical or numeric where the engine's type guess is wrong: the public
        column (``numeric``: its text must parse as numbers), the secret (always compared as text)
        or the weight (always numeric). Labels are always the text written in the file.
    read : CsvOptions, optional
        How a CSV file is read (:func:`~pufferfish.tables.source.check_csv_options`: the column
        names of a header-less file, missing-value markers, the delimiter, the encoding); default:
        a header row, the delimiter sniffed, UTF-8.
    missing : {"value", "omit"}
        How a missing public cell is read (:data:`~pufferfish.tables.model.MISSING_POLICIES`):
        ``"value"`` (default) a label of its own (a numeric column with a missing cell is
        refused); ``"omit"`` rows left out, the seed papers' convention.

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
    engine = check_engine(engine)
    missing = check_missing(missing)
    pair_list = check_pairs(pairs)
    public_kind = check_column_kinds(categorical, numeric, secret=secret, public=public, weight=weight)
    return estimate_from_source(
        resolve_source(data, engine, read),
        secret=secret,
        public=public,
        pairs=pair_list,
        order=order,
        weight=weight,
        engine=engine,
        spark=spark,
        public_kind=public_kind,
        missing=missing,
    )


def check_column_kinds(
    categorical: Sequence[str], numeric: Sequence[str], *, secret: str, public: str, weight: str | None
) -> str | None:
    """How the public column is read: ``"categorical"``, ``"numeric"`` or None (the engine's guess).

    Raises
    ------
    ValueError
        As :func:`check_kind_lists`.
    """
    check_kind_lists(categorical, numeric, secret=secret, public=[public], weight=weight)
    if public in [str(c) for c in categorical]:
        return "categorical"
    return "numeric" if public in [str(c) for c in numeric] else None


def check_kind_lists(
    categorical: Sequence[str],
    numeric: Sequence[str],
    *,
    secret: str,
    public: Sequence[str],
    weight: str | None,
) -> None:
    """Check ``--categorical`` and ``--numeric`` against the secret, public and weight columns.

    Parameters
    ----------
    categorical, numeric : sequence of str
        Columns to read as labels and as numbers.
    secret : str
    public : sequence of str
        The public column, or the several public columns of a joint release.
    weight : str or None

    Raises
    ------
    ValueError
        If a column is named in both lists, the secret is named numeric, the weight categorical,
        a named column is none of the secret, public and weight columns, or the secret is also a
        public column (its release would be the secret itself, issue 34).
    """
    if secret in public:
        raise ValueError(
            f"public must differ from the secret column, got {secret!r} for both: releasing the secret "
            "itself protects nothing"
        )
    cats, nums = [str(c) for c in categorical], [str(c) for c in numeric]
    if secret in cats:
        raise ValueError(
            f"categorical names the secret column {secret!r}, which is always read as labels as written: "
            "name only released columns"
        )
    for col in cats + nums:
        if col != secret and col not in public and col != weight:
            raise ValueError(f"categorical/numeric may name the public or weight column, got {col!r}")
        if col in cats and col in nums:
            raise ValueError(f"column {col!r} cannot be both categorical and numeric")
    if secret in nums:
        raise ValueError(f"the secret column {secret!r} is compared as text; it cannot be numeric")
    if weight is not None and weight in cats:
        raise ValueError(f"the weight column {weight!r} holds numbers; it cannot be categorical")


def estimate_from_source(
    source: TableSource,
    *,
    secret: str,
    public: str,
    pairs: list[tuple[str, str]],
    order: Sequence[str] | None,
    weight: str | None,
    engine: str,
    spark: Any = None,
    public_kind: str | None = None,
    missing: str = "value",
    labels: Sequence[str] = (),
    bounds: tuple[float, float] | None = None,
    impute: float | None = None,
) -> EstimatedPriors:
    """:func:`estimate_priors` on a source already resolved and pairs already checked.

    The one path from a table to priors: the engine computes the aggregates, then
    :func:`priors_from_aggregates` builds the priors (``impute``: under ``missing="impute"``, the
    constant a missing number reads as, :func:`~pufferfish.tables.domain.check_impute`).
    """
    check_markers_and_pairs(source, pairs)
    kinds = {} if public_kind is None else {public: public_kind}
    agg = aggregates(source, secret, (public,), weight, engine, spark, kinds, missing, impute)
    return priors_from_aggregates(
        agg, secret=secret, public=public, pairs=pairs, order=order, weight=weight, source=source.description,
        missing=missing, declared=labels, bounds=bounds, impute=impute,
    )  # fmt: skip


def estimate_two_sources(
    source: TableSource,
    priors_source: TableSource,
    *,
    secret: str,
    public: str,
    pairs: list[tuple[str, str]],
    order: Sequence[str] | None,
    weight: str | None,
    engine: str,
    spark: Any = None,
    public_kind: str | None = None,
    missing: str = "value",
    labels: Sequence[str] = (),
    bounds: tuple[float, float] | None = None,
    impute: float | None = None,
) -> tuple[EstimatedPriors, EstimatedPriors]:
    """The table to release and the priors from another one (same column names), one mapping.

    Parameters
    ----------
    source : TableSource
        The table to release (its rows, labels and codes).
    priors_source : TableSource
        The table the priors (and their sets) are estimated from, e.g. a public or historical
        sample.
    secret, public, pairs, order, weight, engine, spark, public_kind, missing, labels, bounds :
        As :func:`estimate_from_source`; a categorical public column gets the codes of ``order``,
        or of the sorted labels of both tables.

    Returns
    -------
    (EstimatedPriors, EstimatedPriors)
        The estimate of ``source`` and that of ``priors_source``, with the same mapping.

    Raises
    ------
    DataError
        As :func:`estimate_from_source`, or if the public column is text in one table and numeric
        in the other.
    """
    kinds = {} if public_kind is None else {public: public_kind}
    agg = aggregates(source, secret, (public,), weight, engine, spark, kinds, missing, impute)
    agg_p = aggregates(priors_source, secret, (public,), weight, engine, spark, kinds, missing, impute)
    if agg.categorical != agg_p.categorical:
        kinds_read = ["categorical" if a.categorical[0] else "numeric" for a in (agg, agg_p)]
        raise DataError(
            f"public column {public!r} is {kinds_read[0]} in the data but {kinds_read[1]} in the priors' "
            "table; give --categorical or --numeric"
        )
    if agg.categorical[0] and order is None:
        order = sorted(set(agg.labels[0]) | set(agg_p.labels[0]) | {str(v) for v in labels})
    both = (*labels, *agg.labels[0], *agg_p.labels[0]) if agg.categorical[0] else tuple(labels)
    common = dict(  # each table's labels are labels of the other's domain
        secret=secret, public=public, pairs=pairs, order=order, weight=weight, missing=missing,
        declared=both, bounds=bounds, impute=impute,
    )  # fmt: skip
    return (
        priors_from_aggregates(agg, **common, source=source.description),  # type: ignore[arg-type]
        priors_from_aggregates(agg_p, **common, source=priors_source.description),  # type: ignore[arg-type]
    )


def estimate_joint(
    source: TableSource,
    *,
    secret: str,
    columns: Sequence[str],
    pairs: list[tuple[str, str]],
    weight: str | None,
    categorical: Sequence[str] = (),
    numeric: Sequence[str] = (),
    units: Sequence[float | None] = (),
    prior_set: tuple[str, float, float | None] = ("none", 0.95, None),
    engine: str = "duckdb",
    spark: Any = None,
    missing: str = "value",
    keep: Sequence[str] = (),
    bounds: tuple[float, float] | None = None,
    impute: float | None = None,
) -> EstimatedJointPriors:
    """The empirical joint priors of ``d >= 1`` public columns given each secret of the pairs
    (issues 17, 31): the counterpart of :func:`estimate_from_source` for a tuple of columns.

    The engine counts the distinct tuples per secret (only aggregates reach Python); a
    categorical column is coded ``0, 1, ...`` in the sorted order of its labels (a missing cell a
    label of its own), a numeric one is used as it is, on the release grid (a missing cell its
    column's missing atom, :data:`~pufferfish.priors.joint.MISSING_NUMBER`). The metric ``d(x,
    x') = sum_k d_k(x_k, x'_k) / w_k`` (absolute difference on a numeric column, Hamming on a
    categorical one) puts the columns on one scale (:func:`~pufferfish.tables.joint.default_units`).
    With a prior set (``prior_set[0]`` ``"dkw"`` or ``"l1"``) each secret gets the L1 ball around
    its joint distribution on the tuples of the pairs' groups (:func:`pufferfish.priors.balls.joint_balls`;
    ``dkw`` on several columns is this ball without declared bounds), of Kish's effective size for
    weighted rows; with ``bounds`` the DKW band of the declared domain.

    Parameters
    ----------
    source : TableSource
    secret : str
    columns : sequence of str
        Distinct public columns (one for the ledger's joint check of a column released twice).
    pairs : list of (str, str)
        Checked pairs (:func:`check_pairs`).
    weight : str or None
    categorical, numeric : sequence of str
        Columns read as labels or as numbers where the engine's guess is wrong.
    units : sequence of float or None
        Each column's unit as given (None or empty: the default).
    prior_set : (str, float, float or None)
        ``(kind, confidence, radius)`` (:func:`pufferfish.priors.sets.check_prior_set`).
    engine : {"duckdb", "spark"}
    spark : pyspark.sql.SparkSession or None
    missing : {"value", "omit"}
        How a missing public cell is read (:data:`~pufferfish.tables.model.MISSING_POLICIES`):
        under ``"value"`` a row with a categorical cell missing is inside the joint priors, that
        cell a label of its own.
    keep : sequence of str
        Columns among ``columns`` released as they are (read as labels; the identity channel of
        :class:`~pufferfish.priors.joint.Metric`): kept in clear inside the check.
    bounds : (float, float), optional
        The one numeric column's declared domain (issue 41): values clamped (counted), unit ``hi -
        lo``, a prior set the DKW band on it (:func:`~pufferfish.tables.joint.joint_sets`).
    impute : float, optional
        Under ``missing="impute"``: the constant inside ``bounds`` its missing cells read as.

    Returns
    -------
    EstimatedJointPriors

    Raises
    ------
    ValueError
        On no column, or ``categorical``/``numeric`` naming a column twice or one
        that is not the secret, a public or the weight column (:func:`check_kind_lists`), more
        than :data:`~pufferfish.priors.joint.MAX_TUPLES` distinct tuples for a secret, or
        ``bounds`` with other than one numeric column.
    DataError
        If the table cannot be read, a column is unknown, or a secret of the pairs has no row with
        every public column present.
    """
    from pufferfish.priors.joint import JointPrior, Metric

    columns = tuple(columns)
    if not columns:
        raise ValueError("public must name one or more columns, got none")
    check_kind_lists(categorical, numeric, secret=secret, public=columns, weight=weight)
    check_markers_and_pairs(source, pairs)
    kinds = {c: "categorical" for c in [*categorical, *keep]} | {c: "numeric" for c in numeric}
    how = (source, secret, columns, weight, engine, spark, kinds, missing, impute)
    agg = _kept_named(lambda: aggregates(*how), keep)
    labels = tuple(labs if cat else [] for labs, cat in zip(agg.labels, agg.categorical, strict=True))
    codes = [{lab: float(k) for k, lab in enumerate(labs)} for labs in labels]
    bounded = bounded_column(columns, agg.categorical, bounds)
    lo, hi = bounds if bounds is not None else (-math.inf, math.inf)
    rows, groups, clamped = joint_rows(agg, columns, codes, bounded, (lo, hi))
    secrets = list(dict.fromkeys(s for pair in pairs for s in pair))
    for s in secrets:
        check_secret_value(s, agg.secret_values, secret)
    absent = [s for s in secrets if s not in rows]
    if absent:
        raise DataError(f"secret value(s) {absent} of the pairs have no row with every public column present")
    conditionals = {s: JointPrior.from_rows(np.array(rows[s][0]), np.array(rows[s][1])) for s in secrets}
    every = [
        [v for v in r if v != MISSING_NUMBER] or [0.0]
        for r in zip(*(r for xs, _ in rows.values() for r in xs), strict=True)
    ]
    given = [
        hi - lo if k == bounded and u is None else u
        for k, u in enumerate(list(units) or [None] * len(columns))
    ]
    w = default_units(given, agg.categorical, every)  # the missing atom is no value of the range
    categories = tuple(len(labs) if cat else 0 for labs, cat in zip(labels, agg.categorical, strict=True))
    atoms = missing_atoms(conditionals, columns)
    metric = Metric(w, categories, tuple(c in keep for c in columns), atoms)
    sizes = {s: groups[s].effective_size for s in secrets}  # Kish's, as for one column
    sets, gap = joint_sets(conditionals, sizes, categories, prior_set, bounded, (lo, hi))
    scenario = Scenario(tuple(pairs), (AdversaryPrior("empirical", conditionals, sets),), metric)
    return EstimatedJointPriors(
        scenario, secret, columns, weight, agg.categorical, labels, w, agg.rows_total, agg.rows_dropped,
        source.description, missing, agg.missing_cells, bounds, clamped, gap, impute,
    )  # fmt: skip


def aggregates(
    source: TableSource,
    secret: str,
    columns: Sequence[str],
    weight: str | None,
    engine: str,
    spark: Any,
    kinds: Mapping[str, str],
    missing: str,
    impute: float | None = None,
) -> TableAggregates:
    """The engine's :class:`TableAggregates` of ``source`` for ``d >= 1`` public columns; under
    ``missing="impute"`` the numeric column's missing cells read as ``impute``
    (:meth:`~pufferfish.tables.model.TableAggregates.imputed`; the engines count them as under
    ``"value"``)."""
    read = "value" if missing == "impute" else missing
    if engine == "spark":
        from pufferfish.tables.spark_engine import table_aggregates as spark_aggregates

        agg = spark_aggregates(
            source, secret=secret, columns=columns, weight=weight, kinds=kinds, spark=spark, missing=read
        )
    else:
        from pufferfish.tables.duckdb_engine import table_aggregates

        agg = table_aggregates(
            source, secret=secret, columns=columns, weight=weight, kinds=kinds, missing=read
        )
    if missing == "impute" and impute is not None:
        for k, cat in enumerate(agg.categorical):
            if not cat:  # the one numeric column the bounds declare (bounded_column)
                agg = agg.imputed(k, impute)
    return agg


def check_pairs(pairs: Iterable[tuple[str, str] | str]) -> list[tuple[str, str]]:
    """The discriminative pairs as a list of distinct-value string pairs (ValueError otherwise;
    a bare tuple of two plain values, one pair not wrapped in a list, is named as such)."""
    if isinstance(pairs, str):
        pairs = [pairs]  # one pair 'A,B'
    elif (
        isinstance(pairs, tuple)
        and len(pairs) == 2
        and all(isinstance(p, str) and "," not in p for p in pairs)
    ):
        raise ValueError(
            f"pairs must be a list of pairs such as [{pairs!r}] or ['{pairs[0]},{pairs[1]}'], got the tuple "
            f"{pairs!r}: one pair? wrap it in a list"
        )
    pair_list = [_check_pair_values(p) for p in pairs]
    if not pair_list:
        raise ValueError("pairs must hold at least one pair of secret values, got none")
    return pair_list


#: Largest magnitude of a numeric public value: variances and squared distances of the
#: calibrators stay far from float64 overflow (1.8e308).
PUBLIC_MAX = 1e100


def _kept_named(run: Callable[[], Any], keep: Sequence[str]) -> Any:
    """``run()``'s aggregates with the missing atom (:meth:`TableAggregates.with_atom`); a kept
    column that is not in the table is named for its option (``keep column``), not as a public one."""
    try:
        return run().with_atom()
    except DataError as exc:
        if any(str(exc).startswith(f"public column {k!r} is not in the table") for k in keep):
            raise DataError(f"keep column{str(exc)[len('public column') :]}") from None
        raise


def priors_from_aggregates(
    aggregates: TableAggregates,
    *,
    secret: str,
    public: str,
    pairs: list[tuple[str, str]],
    order: Sequence[str] | None,
    weight: str | None,
    source: str,
    missing: str = "value",
    declared: Sequence[str] = (),
    bounds: tuple[float, float] | None = None,
    impute: float | None = None,
) -> EstimatedPriors:
    """The empirical priors from an engine's :class:`TableAggregates` (shared by every engine);
    ``declared`` are labels of a categorical column's domain, added to its alphabet when unseen;
    ``bounds`` a numeric column's domain: values clamped, the grid of
    :func:`~pufferfish.tables.domain.domain_grid` added to its alphabet.

    Raises
    ------
    DataError
        As :func:`estimate_priors`.
    """
    agg = aggregates
    categorical, labels = agg.categorical[0], sorted(agg.labels[0])
    if not labels:
        raise DataError(f"public column {public!r} has no non-missing value")
    if not categorical and max(abs(labels[0]), abs(labels[-1])) > PUBLIC_MAX:
        big = labels[0] if abs(labels[0]) > abs(labels[-1]) else labels[-1]
        raise DataError(
            f"public column {public!r} must hold numbers within +-{PUBLIC_MAX:g} (their squares and "
            f"spreads must stay finite in float64), got {big!r}; rescale the column"
        )
    mapping: tuple[tuple[str, int], ...] = ()
    if not categorical and declared:
        raise DataError(
            f"labels declare a categorical column's domain; {public!r} is numeric ({agg.types[0]})"
        )
    if categorical and bounds is not None:
        raise DataError(
            f"bounds declare a numeric column's domain; {public!r} is categorical ({agg.types[0]})"
        )
    if categorical:
        unseen = [str(v) for v in dict.fromkeys(declared) if str(v) not in set(labels)]
        alphabet = _category_order(sorted([*labels, *unseen]), order, public)
        mapping = tuple((label, k) for k, label in enumerate(alphabet))
        index = {label: k for label, k in mapping}
        support = np.arange(len(alphabet), dtype=np.float64)
    else:
        if order is not None:
            raise DataError(
                f"order applies to a categorical public column; {public!r} is numeric ({agg.types[0]})"
            )
        support, index = _numeric_alphabet(labels, bounds)

    secrets: list[str] = []
    for a, b in pairs:
        for s in (a, b):
            if s not in secrets:
                secrets.append(s)
    rows = {s: 0 for s in secrets}
    squares = {s: 0.0 for s in secrets}
    weights = {s: np.zeros(support.size) for s in secrets}
    marginal = np.zeros(support.size)
    for s, (value,), n, w, w2 in agg.counts:
        marginal[index[value]] += float(w)
        if s in weights:
            weights[s][index[value]] += float(w)
            rows[s] += int(n)
            squares[s] += float(w2)
    conditionals: dict[str, DiscretePrior] = {}
    groups = []
    for s in secrets:
        check_secret_value(s, agg.secret_values, secret)
        total_w = float(weights[s].sum())
        if rows[s] == 0 or not total_w > 0 or not math.isfinite(total_w):
            raise DataError(
                f"secret value {s!r} has no row with a public value in {public!r} "
                f"(and positive weight): its prior would be empty"
            )
        conditionals[s] = DiscretePrior.from_counts(support, weights[s])
        groups.append(SecretGroup(secret=s, rows=rows[s], weight=total_w, weight_sq=squares[s]))
    scenario = Scenario(tuple(pairs), (AdversaryPrior("empirical", conditionals),))
    return EstimatedPriors(
        scenario=scenario,
        secret_column=secret,
        public_column=public,
        weight_column=weight,
        categorical=categorical,
        mapping=mapping,
        support=support,
        groups=tuple(groups),
        rows_total=agg.rows_total,
        rows_dropped=agg.rows_dropped,
        source=source,
        marginal=marginal,
        missing=missing,
        missing_cells=agg.missing_cells[0],
        missing_groups=tuple(SecretGroup(s, n, w, w2) for s, n, w, w2 in agg.missing_groups if s in rows),
        bounds=bounds,
        clamped=0
        if bounds is None
        else sum(n for _, (v,), n, _, _ in agg.counts if not bounds[0] <= v <= bounds[1]),
        impute=impute,
    )


def _numeric_alphabet(values: list[Any], bounds: tuple[float, float] | None) -> tuple[Any, dict[Any, int]]:
    """A numeric column's alphabet and each value's index in it: the released centres, values
    rounded to the release grid (:func:`~pufferfish.priors.distributions.to_release_grid`); with
    ``bounds``, values clamped first and the domain's grid added (:mod:`pufferfish.tables.domain`)."""
    raw = np.asarray(values, dtype=np.float64)
    if bounds is None:
        support, where = np.unique(to_release_grid(raw), return_inverse=True)
        return support, {v: int(where[k]) for k, v in enumerate(values)}
    on_grid = to_release_grid(np.clip(raw, bounds[0], bounds[1]))
    support = np.unique(np.concatenate([on_grid, domain_grid(*bounds)]))
    where = np.searchsorted(support, on_grid)
    return support, {v: int(where[k]) for k, v in enumerate(values)}


def check_secret_value(value: str, known: set[str], secret: str) -> None:
    """Refuse a secret value of the pairs that does not occur in the secret column, listing the
    values that do (up to 12)."""
    if value not in known:
        values = sorted(known)
        shown = ", ".join(short_repr(v) for v in values[:12]) + (", ..." if len(values) > 12 else "")
        raise DataError(
            f"secret value {short_repr(value)} does not occur in column {secret!r}; values are {shown}"
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
    """The labels in ``order`` (default sorted); the label of a missing cell, not a label the user
    can name, comes last when ``order`` leaves it out."""
    if order is None:
        return sorted(labels)
    alphabet = [str(v) for v in order]
    if MISSING_LABEL in labels and MISSING_LABEL not in alphabet:
        alphabet.append(MISSING_LABEL)
    seen: set[str] = set()
    for v in alphabet:
        if v in seen:
            raise DataError(f"order must list each label once, got {v!r} twice")
        seen.add(v)
    missing = [v for v in labels if v not in seen]
    if missing:
        raise DataError(f"order must list every label of {public!r}; it lacks {missing}")
    extra = [v for v in alphabet if v not in set(labels)]
    if extra:  # a label released by no row: part of the domain only when declared (issue 44)
        raise DataError(
            f"order lists {extra}, which {public!r} does not hold: declare them as labels of its domain "
            "with --labels (labels=), or leave them out"
        )
    return alphabet


def with_prior_sets(
    estimated: EstimatedPriors,
    kind: str,
    *,
    confidence: float = 0.95,
    radius: float | None = None,
    full_alphabet: bool = False,
) -> EstimatedPriors:
    """The estimate with a confidence set around each secret's prior (issue 15's robust model).

    Parameters
    ----------
    estimated : EstimatedPriors
        Point estimates (one adversary prior ``"empirical"``).
    kind : {"dkw", "l1", "none"}
        The set: a DKW band of the CDF, an L1 ball, or none (``estimated`` unchanged).
    confidence : float
        In (0, 1): the probability that every secret's true prior lies in its set (a union
        bound over the ``m`` secrets of the pairs).
    radius : float, optional
        ``eta`` (dkw) or ``r`` (l1) for every secret, >= 0, instead of the radius at
        ``confidence``.
    full_alphabet : bool
        Put the sets on the whole declared support (every label of ``--order``); default: the
        union of the values observed in the pairs' groups.

    Returns
    -------
    EstimatedPriors
        With ``scenario.priors[0].sets`` set (kind ``"none"``: ``estimated`` itself).

    Raises
    ------
    ValueError
        On an unknown kind, a confidence outside (0, 1) or a negative radius.

    Notes
    -----
    Radii: :func:`pufferfish.priors.sets.dkw_radius` and :func:`~pufferfish.priors.sets.l1_radius`
    with ``n`` the group's rows, or Kish's effective size ``(sum w)^2 / sum w^2`` with a weight
    column (:attr:`SecretGroup.effective_size`).
    """
    from pufferfish.priors.sets import PriorSet, check_prior_set, dkw_radius, l1_radius, mass_on

    kind, conf, radius = check_prior_set(
        kind, confidence, radius, prior_model=("empirical", None), delta=0.0, noise="laplace"
    )
    if kind == "none":
        return estimated
    (rho,) = estimated.scenario.priors
    conds = {s: p for s, p in rho.conditionals.items() if isinstance(p, DiscretePrior)}
    if len(conds) != len(rho.conditionals):
        raise ValueError("prior sets need the empirical (discrete) priors; fitted priors have none")
    if full_alphabet:
        alphabet = np.asarray(estimated.support, dtype=np.float64)
    else:
        alphabet = np.unique(np.concatenate([p.positive_support() for p in conds.values()]))
    m = len(estimated.scenario.secrets)
    sizes = {g.secret: g.effective_size for g in estimated.groups}
    sets = {}
    for s, prior in conds.items():
        if radius is not None:
            r, level = float(radius), None
        elif kind == "dkw":
            r, level = dkw_radius(sizes[s], conf, m), conf
        else:
            r, level = l1_radius(sizes[s], max(alphabet.size, 2), conf, m), conf
        sets[s] = PriorSet(kind, alphabet, mass_on(prior, alphabet), r, level)
    robust = AdversaryPrior(rho.name, rho.conditionals, sets)
    scenario = Scenario(estimated.scenario.pairs, (robust,))
    return replace(estimated, scenario=scenario)
