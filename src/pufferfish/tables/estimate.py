"""Empirical priors from a table: ``P(public = x | secret = v)`` for each secret of the pairs.

The prior of the public column given each secret value is ``(rows or summed weights with secret
v and public x) / (rows with secret v)``, as in seed 001 sec 6.1 and seed 000 Fig 5 and 9. An
engine (:mod:`~pufferfish.tables.duckdb_engine`, :mod:`~pufferfish.tables.spark_engine`)
computes the aggregates (:class:`TableAggregates`); one builder turns them into priors, so both
engines give the same priors on the same data.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from pufferfish._checks import short_repr
from pufferfish.priors.distributions import DiscretePrior, to_release_grid
from pufferfish.priors.scenario import AdversaryPrior, Scenario
from pufferfish.tables.model import EstimatedPriors, SecretGroup, TableAggregates, check_row_counts
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
    for col in cats + nums:
        if col != secret and col not in public and col != weight:
            raise ValueError(f"categorical/numeric may name the secret, public or weight column, got {col!r}")
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
) -> EstimatedPriors:
    """:func:`estimate_priors` on a source already resolved and pairs already checked.

    The one path from a table to priors: the engine computes the aggregates, then
    :func:`priors_from_aggregates` builds the priors.
    """
    check_markers_and_pairs(source, pairs)
    agg = _aggregates(source, secret, public, pairs, weight, engine, spark, public_kind)
    return priors_from_aggregates(
        agg, secret=secret, public=public, pairs=pairs, order=order, weight=weight, source=source.description
    )


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
) -> tuple[EstimatedPriors, EstimatedPriors]:
    """The table to release and the priors from another one (same column names), one mapping.

    Parameters
    ----------
    source : TableSource
        The table to release (its rows, labels and codes).
    priors_source : TableSource
        The table the priors (and their sets) are estimated from, e.g. a public or historical
        sample.
    secret, public, pairs, order, weight, engine, spark, public_kind :
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
    agg = _aggregates(source, secret, public, pairs, weight, engine, spark, public_kind)
    agg_p = _aggregates(priors_source, secret, public, pairs, weight, engine, spark, public_kind)
    if agg.categorical != agg_p.categorical:
        kinds = ["categorical" if a.categorical else "numeric" for a in (agg, agg_p)]
        raise DataError(
            f"public column {public!r} is {kinds[0]} in the data but {kinds[1]} in the priors' table; "
            "give --categorical or --numeric"
        )
    if agg.categorical and order is None:
        order = sorted(set(agg.labels) | set(agg_p.labels))
    common = dict(secret=secret, public=public, pairs=pairs, order=order, weight=weight)
    return (
        priors_from_aggregates(agg, **common, source=source.description),  # type: ignore[arg-type]
        priors_from_aggregates(agg_p, **common, source=priors_source.description),  # type: ignore[arg-type]
    )


def _aggregates(
    source: TableSource,
    secret: str,
    public: str,
    pairs: list[tuple[str, str]],
    weight: str | None,
    engine: str,
    spark: Any,
    public_kind: str | None,
) -> TableAggregates:
    """The engine's :class:`TableAggregates` of ``source``."""
    if engine == "spark":
        from pufferfish.tables.spark_engine import table_aggregates as spark_aggregates

        return spark_aggregates(
            source,
            secret=secret,
            public=public,
            pairs=pairs,
            weight=weight,
            spark=spark,
            public_kind=public_kind,
        )
    from pufferfish.tables.duckdb_engine import table_aggregates

    return table_aggregates(source, secret=secret, public=public, weight=weight, public_kind=public_kind)


def check_pairs(pairs: Iterable[tuple[str, str] | str]) -> list[tuple[str, str]]:
    """The discriminative pairs as a list of distinct-value string pairs (ValueError otherwise)."""
    pair_list = [_check_pair_values(p) for p in pairs]
    if not pair_list:
        raise ValueError("pairs must hold at least one pair of secret values, got none")
    return pair_list


#: Largest magnitude of a numeric public value: variances and squared distances of the
#: calibrators stay far from float64 overflow (1.8e308).
PUBLIC_MAX = 1e100


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
    check_row_counts(agg.rows_total, weight, agg.negative_weights, {public: agg.non_finite_public})
    labels = sorted(agg.labels)
    if not labels:
        raise DataError(f"public column {public!r} has no non-missing value")
    if not agg.categorical and max(abs(labels[0]), abs(labels[-1])) > PUBLIC_MAX:
        big = labels[0] if abs(labels[0]) > abs(labels[-1]) else labels[-1]
        raise DataError(
            f"public column {public!r} must hold numbers within +-{PUBLIC_MAX:g} (their squares and "
            f"spreads must stay finite in float64), got {big!r}; rescale the column"
        )
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
    squares = {s: 0.0 for s in secrets}
    weights = {s: np.zeros(support.size) for s in secrets}
    marginal = np.zeros(support.size)
    for s, value, n, w, w2 in agg.counts:
        marginal[index[value]] += float(w)
        if s in weights:
            weights[s][index[value]] += float(w)
            rows[s] += int(n)
            squares[s] += float(w2)
    conditionals: dict[str, DiscretePrior] = {}
    groups = []
    for s in secrets:
        if s not in agg.secret_values:
            known = sorted(agg.secret_values)
            shown = ", ".join(short_repr(v) for v in known[:12]) + (", ..." if len(known) > 12 else "")
            raise DataError(
                f"secret value {short_repr(s)} does not occur in column {secret!r}; values are {shown}"
            )
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
        categorical=agg.categorical,
        mapping=mapping,
        support=support,
        groups=tuple(groups),
        rows_total=agg.rows_total,
        rows_dropped=agg.rows_dropped,
        source=source,
        marginal=marginal,
        read_hint=agg.hint,
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
