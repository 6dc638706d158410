"""One calibration (or release) of a table's public columns, validated once at the edge: the
request object that goes from the API and the command line through estimation and calibration
(issue 31). One column is the case ``d = 1``.

:func:`pufferfish.pipeline.calibrate.calibrate_table` and :func:`pufferfish.pipeline.release.release` build a
:class:`TableRequest` for one column, :func:`pufferfish.pipeline.joint.calibrate_joint_table` and
:func:`~pufferfish.pipeline.joint.release_joint` for several; the steps below them read it and
never validate an argument again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pufferfish.calibration import TIME_LIMIT, Mechanism
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
    mechanisms : tuple of Mechanism or None
        The registry entries to calibrate (None: every one that applies).
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
        The mechanisms are the default set (narrowed to the column's kind).
    point_row : bool
        Under a prior set, add the best mechanism at the point estimate beside it.
    time_limit : float
        Seconds of each mechanism.
    units : tuple of float or None
        Several columns: each column's unit as given (None: the default of
        :func:`pufferfish.pipeline.joint.default_units`).
    """

    source: TableSource
    secret: str
    columns: tuple[str, ...]
    pairs: list[tuple[str, str]]
    epsilons: tuple[float, ...]
    mechanisms: tuple[Mechanism, ...] | None
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

    @property
    def dimension(self) -> int:
        """``d``, the number of public columns."""
        return len(self.columns)

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
