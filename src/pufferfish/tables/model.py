"""What the engines and the estimate share: the aggregates an engine computes from a table
(:class:`TableAggregates`, of one public column or several), the priors built from them
(:class:`EstimatedPriors` of one column, :class:`EstimatedJointPriors` of several), and the checks
both make. The engines (:mod:`~pufferfish.tables.duckdb_engine`,
:mod:`~pufferfish.tables.spark_engine`) import this module, and :mod:`~pufferfish.tables.estimate`
imports them: no cycle.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pufferfish.priors.scenario import Scenario
from pufferfish.tables.source import DataError


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
    weight_sq : float
        Their summed squared weight (equal to ``rows`` without a weight column).
    """

    secret: str
    rows: int
    weight: float
    weight_sq: float = math.nan

    @property
    def effective_size(self) -> float:
        """Kish's effective sample size ``(sum w)^2 / sum w^2`` (``rows`` without weights): the
        ``n`` of the group's confidence set (:mod:`pufferfish.priors.sets`)."""
        if not self.weight_sq > 0:
            return float(self.rows)
        return min(self.weight**2 / self.weight_sq, float(self.rows))


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
    marginal : numpy.ndarray or None, shape (n,)
        Summed weight (rows without a weight column) of each support value over every row with
        a secret and a public value, whatever the secret: the distribution ``mu`` of the values a
        release replaces (the utility of :mod:`pufferfish.calibration.mapping`).
    missing : {"value", "omit"}
        How a missing public cell was read (:data:`MISSING_POLICIES`).
    missing_cells : int
        Rows of the table with the public cell missing (under ``"value"`` a categorical column's
        are the label :data:`MISSING_LABEL`, a numeric column's the missing atom; under ``"omit"``
        they are in ``rows_dropped``).
    missing_groups : tuple of SecretGroup
        A numeric column under ``"value"``: the rows of each secret of the pairs with the cell
        missing (:mod:`pufferfish.tables.missing`); empty otherwise.
    bounds : (float, float) or None
        A numeric column's declared domain (:mod:`pufferfish.tables.domain`): values clamped into
        it, its grid in ``support``.
    clamped : int
        Rows whose value lay outside ``bounds`` (clamped).
    impute : float or None
        Under ``missing="impute"``: the constant inside ``bounds`` a missing cell was read as (and
        is released as, with the same noise; issue 54); ``missing_cells`` counts them.
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
    marginal: np.ndarray | None = None
    missing: str = "value"
    missing_cells: int = 0
    missing_groups: tuple[SecretGroup, ...] = ()
    bounds: tuple[float, float] | None = None
    clamped: int = 0
    impute: float | None = None

    @property
    def secret_weights(self) -> dict[str, float]:
        """Share of each secret among the rows of the pairs' secrets (the secret's marginal)."""
        total = sum(g.weight for g in self.groups)
        return {g.secret: g.weight / total for g in self.groups}

    @property
    def columns_read_as(self) -> dict[str, str]:
        """How each column was read: the secret as text, the public column as categorical text or
        numbers, the weight as numbers."""
        out = {self.secret_column: "text (labels as written)"}
        out[self.public_column] = "categorical (labels as written)" if self.categorical else "numeric"
        if self.weight_column is not None:
            out[self.weight_column] = "numeric (weights)"
        return out

    def codes_for(self, labels: Any) -> NDArray[np.float64]:
        """Map public-column labels to codes (``nan`` for missing), shape (len(labels),).

        ``labels``: a pyarrow string array or a sequence of str / None (vectorised by Arrow).

        Raises
        ------
        DataError
            If a label is not in the mapping.
        """
        known = [label for label, _ in self.mapping]
        return label_codes(labels, known, [c for _, c in self.mapping], self.public_column)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready description: columns, mapping, priors and row counts."""
        prior = self.scenario.priors[0]
        return {
            "source": self.source,
            "secret_column": self.secret_column,
            "public_column": self.public_column,
            "weight_column": self.weight_column,
            "categorical": self.categorical,
            "columns_read_as": self.columns_read_as,
            "mapping": [{"label": label_json(label), "code": code} for label, code in self.mapping],
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


@dataclass(frozen=True)
class EstimatedJointPriors:
    """Empirical joint priors of ``d >= 2`` public columns estimated from a table (issues 17, 31):
    the counterpart of :class:`EstimatedPriors` for a tuple of columns.

    Attributes
    ----------
    scenario : Scenario
        The pairs, one adversary prior ``"empirical"`` of :class:`~pufferfish.priors.joint.JointPrior`
        per secret (with its L1 balls when a prior set was asked for), and the metric.
    secret_column : str
    columns : tuple of str
        The public columns, in the order of the tuples.
    weight_column : str or None
    categorical : tuple of bool
        Per column: coded labels (``labels[k][c]`` has code ``c``) or numbers.
    labels : tuple of list of str
        Sorted labels of each categorical column (empty for numeric ones).
    units : tuple of float
        ``w_k`` of each column in the metric ``sum_k d_k / w_k``.
    rows_total, rows_dropped : int
        Rows of the table, and rows left out of the priors (a missing value).
    source : str
        Description of the table read.
    missing : {"value", "omit"}
        How a missing public cell was read (:data:`MISSING_POLICIES`).
    missing_cells : tuple of int
        Per column the rows with that cell missing.
    bounds : (float, float) or None
        The declared domain of the one numeric column (issue 41), or None.
    clamped : int
        Rows whose numeric value lay outside ``bounds`` (clamped into them).
    grid_gap : float
        With ``bounds`` and a prior set: ``delta``, the largest gap of the numeric column's
        alphabet (:mod:`pufferfish.priors.bands`), in the column's own units; else 0.
    impute : float or None
        Under ``missing="impute"``: the constant the numeric column's missing cells were read as.
    """

    scenario: Scenario
    secret_column: str
    columns: tuple[str, ...]
    weight_column: str | None
    categorical: tuple[bool, ...]
    labels: tuple[list[str], ...]
    units: tuple[float, ...]
    rows_total: int
    rows_dropped: int
    source: str
    missing: str = "value"
    missing_cells: tuple[int, ...] = ()
    bounds: tuple[float, float] | None = None
    clamped: int = 0
    grid_gap: float = 0.0
    impute: float | None = None

    @property
    def missing_atoms(self) -> tuple[bool, ...]:
        """Per column: whether it is numeric with missing cells, its missing atom inside the check
        (:attr:`pufferfish.priors.joint.Metric.missing`)."""
        metric = self.scenario.metric
        return metric.missing if metric is not None else (False,) * len(self.columns)

    @property
    def bounded_column(self) -> int | None:
        """The position of the column ``bounds`` declare (the one numeric column), or None."""
        if self.bounds is None:
            return None
        return self.categorical.index(False)

    @property
    def columns_read_as(self) -> dict[str, str]:
        """How each public column was read: ``"categorical"`` or ``"numeric"``."""
        return {
            c: "categorical" if cat else "numeric"
            for c, cat in zip(self.columns, self.categorical, strict=True)
        }


#: The label a missing cell of a categorical public column has in the priors, the mappings and
#: the label counts (issue 41: "missing" is a value the release publishes, so it is inside the
#: check). Never written: a released cell with this label is written missing. A column that
#: holds this text as a real label is refused (:func:`check_no_missing_label`).
MISSING_LABEL = "\u2400missing"


#: How a missing cell of a public column is read (issue 41). ``"value"`` (the default): a release
#: publishes it, so it is a value inside the check: one more label of a categorical column
#: (:data:`MISSING_LABEL`); one numeric column's missing cells are the missing atom
#: (:mod:`pufferfish.tables.missing`); among several columns each numeric column's missing cells
#: are its atom in the joint priors (:data:`pufferfish.priors.joint.MISSING_NUMBER`).
#: ``"omit"``: the rows with a public cell missing are left out of the
#: priors, the convention of the seed papers' figures (seed 001 sec 6.1 estimates the adult priors
#: on the rows with a value); a calibration only, since a release would write those cells outside
#: the check (:func:`refuse_omitted_cells`).
MISSING_POLICIES = ("value", "omit", "impute")


def check_missing(missing: Any) -> str:
    """``missing``, one of :data:`MISSING_POLICIES` (``"impute"`` needs declared bounds:
    :func:`pufferfish.tables.domain.check_impute` resolves it with them).

    Raises
    ------
    ValueError
        Naming the value otherwise.
    """
    if missing not in MISSING_POLICIES:
        raise ValueError(f"missing must be one of {', '.join(MISSING_POLICIES)}, got {missing!r}")
    return str(missing)


def refuse_omitted_cells(columns: Sequence[str], missing_cells: Sequence[int], missing: str) -> None:
    """Refuse a release under ``missing="omit"`` of columns with missing cells.

    Those rows are outside the priors, and the release would write them (missing is published).

    Raises
    ------
    DataError
        Naming the first such column and its count.
    """
    if missing != "omit":
        return
    for col, n in zip(columns, missing_cells, strict=True):
        if n:
            raise DataError(
                f"missing='omit' leaves the {n} rows with {col!r} missing out of the check, and a release "
                "writes them: release with missing='value' (--missing value)"
            )


def label_text(label: Any) -> str:
    """A label as shown to a person: ``"(missing)"`` for :data:`MISSING_LABEL` (or None, its JSON)."""
    return "(missing)" if label is None or label == MISSING_LABEL else str(label)


def label_json(label: Any) -> Any:
    """A label as written in JSON: ``None`` (null) for :data:`MISSING_LABEL`."""
    return None if label == MISSING_LABEL else label


def check_no_missing_label(count: int, column: str) -> None:
    """Refuse a column one of whose values is the text of :data:`MISSING_LABEL`.

    Raises
    ------
    DataError
        If ``count > 0``.
    """
    if count:
        raise DataError(
            f"public column {column!r} holds the label {MISSING_LABEL!r} ({count} rows), the name this "
            "library gives a missing cell: rename it"
        )


def label_codes(
    labels: Any, known: Sequence[str], codes: Sequence[float], column: str
) -> NDArray[np.float64]:
    """The code of each label (``codes[k]`` for ``known[k]``; a missing cell has the code of
    :data:`MISSING_LABEL` when ``known`` holds it, else ``nan``), vectorised by Arrow.

    Parameters
    ----------
    labels : pyarrow string array or sequence of str / None
    known, codes : sequences of the same length
        The labels of the column and their codes.
    column : str
        The column's name, for the message.

    Raises
    ------
    DataError
        If a label is not in ``known``.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    arrow = isinstance(labels, (pa.Array, pa.ChunkedArray))
    arr = labels if arrow else pa.array(labels, type=pa.string())
    if MISSING_LABEL in known:  # a missing cell is a label of its own (issue 41)
        arr = pc.fill_null(arr, MISSING_LABEL)
    position = pc.index_in(arr, value_set=pa.array(list(known), type=pa.string()))
    unknown = pc.and_(pc.is_null(position), pc.is_valid(arr))
    if pc.any(unknown).as_py():
        first = pc.filter(arr, unknown)[0].as_py()
        raise DataError(f"public column {column!r} has a label not in the mapping: {first!r}")
    code = np.array([*codes, np.nan], dtype=np.float64)
    index = pc.fill_null(position, len(known)).to_numpy(zero_copy_only=False)
    return np.asarray(code[index], dtype=np.float64)


#: The UCI Adult file's columns (``adult.data`` has no header row; the shipped copy has one).
ADULT_NAMES = (
    "age,workclass,fnlwgt,education,education-num,marital-status,occupation,relationship,race,sex,"
    "capital-gain,capital-loss,hours-per-week,native-country,income"
)


def _looks_like_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def header_hint(columns: Sequence[str]) -> str:
    """Why a named column may be missing, read from the names found: one column (no delimiter
    found) or a first row of data read as names (some are numbers: a file without a header row,
    which ``--names`` reads; the UCI Adult's 15 names suggested for a file of 15 columns)."""
    if len(columns) == 1:
        return " (one column: no field delimiter was found; is it a CSV with a header row?)"
    numbers = [c for c in columns if _looks_like_number(str(c))]
    if not numbers:
        return ""
    adult = (
        f"; the UCI Adult's are --names {ADULT_NAMES}" if len(columns) == ADULT_NAMES.count(",") + 1 else ""
    )
    return (
        f" (the first row looks like data, not names: {', '.join(map(repr, numbers[:2]))} are numbers; a CSV "
        f"file without a header row needs --names with its {len(columns)} column names{adult})"
    )


def check_columns(columns: Sequence[str], *, secret: str, public: str, weight: str | None) -> None:
    """DataError naming the argument if ``secret``, ``public`` or ``weight`` is not a column, with
    :func:`header_hint`."""
    for arg, col in (("secret", secret), ("public", public), ("weight", weight)):
        if col is not None and col not in columns:
            hint = header_hint(columns)
            raise DataError(f"{arg} column {col!r} is not in the table; columns are {list(columns)}{hint}")


@dataclass(frozen=True)
class TableAggregates:
    """What an engine (DuckDB, Spark) computes from a table to estimate the priors of ``d >= 1``
    public columns: one ``GROUP BY secret, columns`` and the columns' alphabets.

    Every field is an aggregate (counts, sums, distinct values), never a row, so an engine on a
    cluster returns it without collecting the table. The engine has already refused a table
    without rows, negative or NaN weights and non-finite numbers
    (:func:`check_row_counts`).

    Attributes
    ----------
    rows_total, rows_dropped : int
        All rows; rows with a missing secret, public value or weight.
    categorical : tuple of bool
        Per public column: text (labels, coded later) rather than numbers.
    types : tuple of str
        The engine's name of each public column's type (for messages).
    labels : tuple of list of str or list of float
        Per public column its distinct non-missing values over the whole table, sorted (text
        for a categorical column, float64 otherwise).
    secret_values : set of str
        Distinct non-missing secret values, as text.
    counts : list of (str, tuple, int, float, float)
        ``(secret, tuple of public values, rows, sum of weights, sum of squared weights)`` per
        group of valid rows (the squares give Kish's effective size of a weighted group).
    missing_cells : tuple of int
        Per public column the rows (any secret, missing or not) with that cell missing.
    missing_groups : tuple of (str, int, float, float)
        One numeric column under ``missing="value"``: ``(secret, rows, sum of weights, sum of
        squared weights)`` of the rows with the secret present and the cell missing (the missing
        atom, :mod:`pufferfish.tables.missing`); empty otherwise.
    """

    rows_total: int
    rows_dropped: int
    categorical: tuple[bool, ...]
    types: tuple[str, ...]
    labels: tuple[list[Any], ...]
    secret_values: set[str]
    counts: list[tuple[str, tuple[Any, ...], int, float, float]]
    missing_cells: tuple[int, ...]
    missing_groups: tuple[tuple[str, int, float, float], ...] = ()

    def imputed(self, column: int, value: float) -> TableAggregates:
        """The aggregates with numeric column ``column``'s missing cells read as ``value`` (a
        declared constant inside the declared bounds, issue 54): one column's ``missing_groups``
        and several columns' missing entries become groups of that value, equal tuples merged.
        ``missing_cells`` still counts them (the report says how many were imputed)."""
        merged: dict[tuple[str, tuple[Any, ...]], list[float]] = {}
        atom = [(s, (None,), n, w, w2) for s, n, w, w2 in self.missing_groups]
        for s, values, n, w, w2 in [*self.counts, *atom]:
            if values[column] is None:
                values = (*values[:column], value, *values[column + 1 :])
            got = merged.setdefault((s, values), [0, 0.0, 0.0])
            got[0], got[1], got[2] = got[0] + n, got[1] + w, got[2] + w2
        counts = [(s, values, int(n), w, w2) for (s, values), (n, w, w2) in merged.items()]
        labels = list(self.labels)
        labels[column] = sorted({*labels[column], value})
        return replace(self, counts=counts, missing_groups=(), labels=tuple(labels))

    def with_atom(self) -> TableAggregates:
        """The same aggregates with one numeric column's missing cells (``missing_groups``) as
        groups of their own whose value is missing (``None``), as among several columns: what a
        joint prior of that column holds (its missing atom, issue 54). Unchanged otherwise."""
        if not self.missing_groups:
            return self
        atom = [(s, (None,), n, w, w2) for s, n, w, w2 in self.missing_groups]
        return replace(self, counts=[*self.counts, *atom], missing_groups=())


def check_row_counts(
    rows_total: int, weight: str | None, negative_weights: int, non_finite: Mapping[str, int]
) -> None:
    """Refuse a table without rows, negative or NaN weights, or non-finite public numbers.

    Parameters
    ----------
    rows_total : int
        Rows of the table.
    weight : str or None
        The weight column's name.
    negative_weights : int
        Rows whose weight is < 0 or NaN.
    non_finite : mapping of str to int
        Per numeric public column, its rows holding inf or NaN.

    Raises
    ------
    DataError
        Naming the column, the rule and how many rows break it.
    """
    if rows_total == 0:
        raise DataError("the table has no rows (a header only)")
    if negative_weights:
        raise DataError(f"weight column {weight!r} must be >= 0 and not NaN; {negative_weights} rows are not")
    for column, n in non_finite.items():
        if n:
            raise DataError(f"public column {column!r} must hold finite numbers; {n} rows do not")


#: Share of a text column's values that parse as numbers from which the column is refused as
#: labels (issue 44): a numeric column with a few stray markers, read as text.
MOSTLY_NUMBERS = 0.9


def mostly_numbers_hint(
    total: int, numbers: int, others: Callable[[], Sequence[tuple[Any, int]]]
) -> str | None:
    """The hint for a column read as text whose values are mostly numbers, the same from every
    engine: the share of ``numbers`` among ``total`` present cells, the other values with their
    rows (``others()``, asked only then: up to 5, most rows first) and the ``--na`` flags that
    read them as missing; None below :data:`MOSTLY_NUMBERS` or when every value is a number."""
    if not total or numbers == total or numbers < MOSTLY_NUMBERS * total:
        return None
    found = others()
    listed = ", ".join(f"{v!r} ({n} rows)" for v, n in found)
    flags = " ".join(f"--na {_quoted(str(v))}" for v, _ in found)
    return (
        f"{100 * numbers / total:.0f}% of its values are numbers; the others are {listed}: "
        f"pass {flags} to read it as numbers"
    )


def refuse_mostly_numbers(column: str, hint: str) -> str:
    """The one line refusing a public column read as text whose values are mostly numbers
    (:func:`mostly_numbers`), with the two ways on; both engines say it."""
    return (
        f"public column {column!r} is read as text, but {hint}, or --categorical {_quoted(column)} "
        "to read it as labels"
    )


def _quoted(text: str) -> str:
    """``text`` as a shell word (:func:`shlex.quote`)."""
    import shlex

    return shlex.quote(text)
