"""One calibration (or release) of a table's public columns, validated once at the edge: the
request object that goes from the API and the command line through estimation and calibration
(issue 31). One column is the case ``d = 1``.

:func:`pufferfish.pipeline.calibrate.calibrate_table` and :func:`pufferfish.pipeline.release.release`
build one :class:`TableRequest` for one column or several; the steps below them
(:func:`~pufferfish.pipeline.calibrate.calibrate_request`, which estimates several columns'
joint priors by :func:`~pufferfish.tables.estimate.estimate_joint`, and the release's steps)
read it and never validate an argument again.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pufferfish.calibration import TIME_LIMIT, Mechanism
from pufferfish.tables.kept import check_kept
from pufferfish.tables.source import TableSource


@dataclass(frozen=True)
class TableRequest:
    """A validated calibration of ``d >= 1`` public columns of a table.

    Attributes
    ----------
    source : TableSource
        The table, resolved once for ``engine``.
    secret : str
        The secret column.
    columns : tuple of str
        The public columns, distinct, ``d >= 1`` of them.
    pairs : list of (str, str)
        The discriminative pairs of secret values.
    epsilons : tuple of float
        Each finite and > 0.
    mechanisms : tuple of Mechanism
        The registry entries to calibrate.
    weight : str or None
        Frequency-weight column.
    delta : float
        In [0, 1).
    noise : {"laplace", "gaussian"}
    categorical, numeric : tuple of str
        Columns read as labels or as numbers where the engine's guess is wrong.
    prior_set : (str, float, float or None)
        ``(kind, confidence, radius)`` (:func:`pufferfish.priors.sets.check_prior_set`).
    engine : {"duckdb", "spark"}
    spark : pyspark.sql.SparkSession or None
    prior : str
        One column: the prior model as written (``empirical``, ``gaussian``, ``gmm``, ``gmm:K``).
    prior_model : (str, int or None)
        One column: the parsed prior model (:func:`pufferfish.tables.fit.parse_prior_model`).
    fit_seed : int
        One column: the seed of a mixture fit.
    order : tuple of str or None
        One column: the label order of a categorical column.
    public_kind : {"categorical", "numeric"} or None
        One column: its kind, when given.
    priors_source : TableSource or None
        One column: the table the priors are estimated from instead.
    utility : str or None
        One column: the objective of ``optimal-mapping``.
    default_set : bool
        The mechanisms are the default set: one column narrows them to its kind's
        (:func:`pufferfish.pipeline.calibrate.releases_labels`), several columns keep every one
        that applies to joint priors.
    point_row : bool
        Under a prior set, add the best mechanism at the point estimate beside it.
    time_limit : float
        Seconds of each mechanism.
    units : tuple of float or None
        Several columns: each column's unit as given (None: the default of
        :func:`pufferfish.tables.joint.default_units`).
    missing : {"value", "omit", "impute"}
        How a missing public cell is read (:data:`pufferfish.tables.model.MISSING_POLICIES`).
    impute : float or None
        Under ``"impute"``: the constant inside ``bounds`` a missing number is read and released as.
    labels : tuple of str
        One categorical column: labels of its domain, added to the alphabet when never seen.
    bounds : (float, float) or None
        One numeric column: its declared domain (:mod:`pufferfish.tables.domain`).
    keep : tuple of str
        Columns written as they are, inside the check: released jointly with ``columns`` by the
        identity channel (:class:`~pufferfish.priors.joint.Metric` ``identity``).
    """

    source: TableSource
    secret: str
    columns: tuple[str, ...]
    pairs: list[tuple[str, str]]
    epsilons: tuple[float, ...]
    mechanisms: tuple[Mechanism, ...]
    weight: str | None = None
    delta: float = 0.0
    noise: str = "laplace"
    categorical: tuple[str, ...] = ()
    numeric: tuple[str, ...] = ()
    prior_set: tuple[str, float, float | None] = ("none", 0.95, None)
    engine: str = "duckdb"
    spark: Any = None
    prior: str = "empirical"
    prior_model: tuple[str, int | None] = ("empirical", None)
    fit_seed: int = 0
    order: tuple[str, ...] | None = None
    public_kind: str | None = None
    priors_source: TableSource | None = None
    utility: str | None = None
    default_set: bool = False
    point_row: bool = True
    time_limit: float = TIME_LIMIT
    units: tuple[float | None, ...] = ()
    missing: str = "value"
    labels: tuple[str, ...] = ()
    bounds: tuple[float, float] | None = None
    keep: tuple[str, ...] = ()
    impute: float | None = None

    @property
    def dimension(self) -> int:
        """``d``, the number of columns the check covers: the released ones and the kept ones."""
        return len(self.columns) + len(self.keep)

    @property
    def public(self) -> str:
        """The public column of a one-column request.

        Raises
        ------
        ValueError
            If the request has several columns.
        """
        if len(self.columns) != 1:
            raise ValueError(f"this step releases one column, got {list(self.columns)}")
        return self.columns[0]


def parse_columns(public: str | Sequence[str]) -> tuple[str, ...]:
    """The public columns of ``"a,b"`` or ``["a", "b"]``: distinct, non-empty names.

    Raises
    ------
    ValueError
        On an empty name or a repeated column.
    """
    cols = tuple(c.strip() for c in public.split(",")) if isinstance(public, str) else tuple(public)
    if not cols or any(not isinstance(c, str) or not c for c in cols):
        raise ValueError(f"public must name columns 'a,b', got {public!r}")
    if len(set(cols)) != len(cols):
        raise ValueError(f"public must name distinct columns, got {public!r}")
    return cols


def parse_units(
    units: Mapping[str, float] | Iterable[str] | None, columns: Sequence[str]
) -> tuple[float | None, ...]:
    """The unit ``w_k`` of each column from ``{"col": w}`` or texts ``"col=w"`` (None where not
    given: the default of :func:`~pufferfish.tables.joint.default_units`).

    Raises
    ------
    ValueError
        On a text that is not ``col=w``, a column that is not public, or ``w`` not finite and > 0.
    """
    given: dict[str, float] = {}
    if isinstance(units, Mapping):
        given = {str(k): v for k, v in units.items()}
    elif units is not None:
        for text in units:
            name, sep, value = str(text).rpartition("=")
            if not sep or not name:
                raise ValueError(f"unit must be 'column=w', got {text!r}")
            try:
                given[name.strip()] = float(value)
            except ValueError:
                raise ValueError(f"unit of {name.strip()!r} must be a number, got {value!r}") from None
    for name, w in given.items():
        if name not in columns:
            raise ValueError(f"unit names column {name!r}, which is not a public column {list(columns)}")
        if not (isinstance(w, (int, float)) and math.isfinite(w) and w > 0):
            raise ValueError(f"unit of {name!r} must be finite and > 0, got {w!r}")
    return tuple(float(given[c]) if c in given else None for c in columns)


#: Rows per batch of a streamed release (about 100 MB for a 15-column table).
DEFAULT_BATCH_ROWS = 1_000_000


def check_batch_rows(batch_rows: Any) -> int:
    """``batch_rows`` of a streamed release, an int >= 1.

    Raises
    ------
    ValueError
        Naming the value otherwise (a bool is not a count).
    """
    if isinstance(batch_rows, bool) or not isinstance(batch_rows, int) or batch_rows < 1:
        raise ValueError(f"batch_rows must be an int >= 1, got {batch_rows!r}")
    return batch_rows


#: The options of one column, by parameter name, with their command-line flag.
ONE_COLUMN_OPTIONS = {
    "order": "--order",
    "labels": "--labels",
    "prior": "--prior",
    "priors_from": "--priors-from",
    "utility": "--utility",
    "compare": "--compare",
    "noise": "--noise gaussian",
    "delta": "--delta",
}


def check_labels(labels: Any) -> tuple[str, ...]:
    """The declared labels of a categorical column's domain: ``"a,b"`` or a sequence of distinct,
    non-empty texts (empty for None).

    Raises
    ------
    ValueError
        On an empty or repeated label.
    """
    if labels is None:
        return ()
    items = [v.strip() for v in labels.split(",")] if isinstance(labels, str) else [str(v) for v in labels]
    if not items or any(not v for v in items):
        raise ValueError(f"labels must name non-empty labels 'a,b', got {labels!r}")
    if len(set(items)) != len(items):
        raise ValueError(f"labels must name each label once, got {labels!r}")
    return tuple(items)


def check_keep(
    keep: Any, keep_unchecked: Any, *, secret: str, columns: Sequence[str], one_column: Mapping[str, bool]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The columns kept inside the check and those kept outside it, validated
    (:func:`~pufferfish.tables.kept.check_kept`). Kept columns make the release one of several
    columns (the product channel): the options of one column given (``one_column``) are then
    refused, as for several public columns (:func:`refuse_for_several`).

    Raises
    ------
    ValueError
        Naming the column or the options and the rule.
    """
    keep_cols = check_kept(keep, secret=secret, released=columns, name="keep")
    if keep_cols:
        refuse_for_several((*columns, *keep_cols), **one_column)
    released = (*columns, *keep_cols)
    return keep_cols, check_kept(keep_unchecked, secret=secret, released=released, inside=keep_cols)


def refuse_for_several(columns: Sequence[str], **given: bool) -> None:
    """Refuse, in one message, the options of one column given (``True``) for several columns;
    the message names each by its parameter and its command-line flag
    (:data:`ONE_COLUMN_OPTIONS`), so the API and the CLI say the same line.

    Parameters
    ----------
    columns : sequence of str
        The public columns (two or more).
    **given : bool
        ``{option name: whether it was given}``, names among :data:`ONE_COLUMN_OPTIONS`.

    Raises
    ------
    ValueError
        Naming every option given and the columns.
    """
    names = [f"{name} ({ONE_COLUMN_OPTIONS[name]})" for name, used in given.items() if used]
    if names:
        verb = "applies" if len(names) == 1 else "apply"
        raise ValueError(
            f"{', '.join(names)} {verb} to one public column, got several: {list(columns)} (several columns "
            "are released jointly by the product channel on empirical joint priors)"
        )
