"""Several public columns of a table calibrated and released jointly (issues 17 and 31):
``--public a,b`` and ``--unit col=w``.

The joint prior of the tuple of public columns given each secret value is the empirical joint
distribution on its distinct tuples (:class:`~pufferfish.priors.joint.JointPrior`, counted by DuckDB,
:func:`~pufferfish.tables.duckdb_engine.joint_aggregates`); a categorical column is coded
``0, 1, ...`` in the sorted order of its labels, a numeric column is used as it is. The metric
``d(x, x') = sum_k d_k(x_k, x'_k) / w_k`` (absolute difference on a numeric column, Hamming on a
categorical one) puts the columns on one scale: ``w_k`` from ``--unit``, by default the range of
a numeric column and 1 for a categorical one, so that changing any one column across its whole
range counts as one unit. The release is a product channel: ``Laplace(b w_k)`` on a numeric
column, a randomized response of log ratio at most ``1 / (b w_k)`` on a categorical one, which
keeps its labels. Every mechanism of the registry that applies to joint priors is compared
(:func:`~pufferfish.calibration.run_comparison`) and exactly checked on the joint alphabet: one
check for the whole tuple, as pufferfish privacy does not compose in general (Kifer and
Machanavajjhala 2014).

Prior sets (``--prior-set``, default ``dkw``): the L1 ball around each secret's empirical joint
distribution on the tuples of the pairs' groups (:mod:`pufferfish.priors.balls`), the worst case
over the balls checked exactly.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from pufferfish._checks import check_delta, check_epsilons
from pufferfish.calibration import (
    TIME_LIMIT,
    Calibration,
    PrivacyCheckError,
    check_mechanisms,
    check_time_limit,
    lookup,
    not_applicable,
    run_comparison,
)
from pufferfish.calibration import check_pairs as check_scenario
from pufferfish.calibration.registry import JOINT_GAUSSIAN
from pufferfish.calibration.search import first_passing
from pufferfish.loss.density import check_noise
from pufferfish.noise.channels import ONE, RandomizedResponseChannel
from pufferfish.noise.samplers import check_sampler, check_workers, sampler_grid
from pufferfish.pipeline.joint_result import JointTableCalibration
from pufferfish.pipeline.release import DEFAULT_BATCH_ROWS, GRID_SAFETY_STEPS, check_batch_rows
from pufferfish.pipeline.request import TableRequest
from pufferfish.priors.balls import joint_balls
from pufferfish.priors.distributions import RELEASE_EXPONENT, to_release_grid
from pufferfish.priors.joint import JointPrior, Metric
from pufferfish.priors.scenario import AdversaryPrior, Scenario
from pufferfish.priors.sets import check_prior_set
from pufferfish.tables.estimate import check_kind_lists, check_pairs
from pufferfish.tables.model import JointAggregates, label_codes
from pufferfish.tables.perturb import ReleasedColumn
from pufferfish.tables.source import (
    CsvOptions,
    DataError,
    TableSource,
    atomic_outputs,
    check_markers_and_pairs,
    check_release_outputs,
    is_parquet,
    output_format,
    report_path_for,
    resolve_source,
    write_text,
)


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
    given: the default of :func:`default_units`).

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


def default_units(
    given: Sequence[float | None], categorical: Sequence[bool], values: Sequence[Sequence[float]]
) -> tuple[float, ...]:
    """Each column's unit: as given, else 1 for a categorical column (a change of label) and the
    range ``max - min`` of a numeric column's values (1 if the column is constant).

    Parameters
    ----------
    given : sequence of float or None
        :func:`parse_units`.
    categorical : sequence of bool
    values : sequence of sequences of float
        The values of each column over the rows used (codes for a categorical one).
    """
    out = []
    for w, cat, vals in zip(given, categorical, values, strict=True):
        if w is None:
            span = float(max(vals) - min(vals)) if (len(vals) and not cat) else 0.0
            w = span if span > 0 and math.isfinite(span) else 1.0
        out.append(float(w))
    return tuple(out)


def calibrate_joint_table(
    data: Any,
    *,
    secret: str,
    public: str | Sequence[str],
    pairs: Iterable[tuple[str, str] | str],
    epsilon: float | Iterable[float],
    units: Mapping[str, float] | Iterable[str] | None = None,
    mechanisms: Sequence[str] | None = None,
    weight: str | None = None,
    noise: str = "laplace",
    delta: float = 0.0,
    categorical: Sequence[str] = (),
    numeric: Sequence[str] = (),
    read: CsvOptions | None = None,
    prior_set: str | None = None,
    confidence: float = 0.95,
    prior_radius: float | None = None,
    engine: str = "duckdb",
    spark: Any = None,
    time_limit: float = TIME_LIMIT,
) -> JointTableCalibration:
    """Estimate the joint priors of several public columns and compare every mechanism.

    Parameters
    ----------
    data : str, pathlib.Path, pandas.DataFrame or TableSource
        CSV or Parquet file, DataFrame, or ``"adult"`` (DuckDB engine), or a table already
        resolved (:func:`~pufferfish.tables.source.resolve_source`).
    secret : str
        Secret column.
    public : str or sequence of str
        Two or more public columns, ``"a,b"`` or a list.
    pairs : iterable of (str, str) or str
        Discriminative pairs of secret values.
    epsilon : float or iterable of float
        Each finite and > 0.
    units : mapping or iterable of "col=w", optional
        ``w_k > 0`` per column: the metric ``sum_k d_k / w_k``. Default (:func:`default_units`):
        the range of a numeric column, 1 for a categorical one.
    mechanisms : sequence of str, optional
        Names from the registry (default: every (eps, delta)-PP mechanism that applies).
    weight : str, optional
        Frequency-weight column (numbers >= 0).
    noise : {"laplace"}
        Gaussian noise on several columns is refused (no exact check on the joint alphabet).
    delta : float
        In [0, 1). Laplace scales are checked as pure eps (which implies every delta).
    categorical, numeric : sequence of str
        Columns to read as labels or as numbers (default: by DuckDB's type).
    read : CsvOptions, optional
        How a CSV file is read (:func:`~pufferfish.tables.source.check_csv_options`: the column
        names of a header-less file, missing-value markers, the delimiter, the encoding); default:
        a header row, the delimiter sniffed, UTF-8.
    prior_set : {"dkw", "l1", "none"}, optional
        Default ``dkw`` for pure eps (``none`` for ``delta > 0``). On several columns both ``dkw``
        and ``l1`` are the L1 ball of :func:`pufferfish.priors.balls.joint_balls` around each
        secret's joint prior, on the tuples of the pairs' groups.
    confidence : float
        In (0, 1): the confidence of the balls' radii.
    prior_radius : float, optional
        One L1 radius for every ball instead (>= 0).
    engine : {"duckdb", "spark"}
        Who counts the joint priors: DuckDB (embedded, default) or Spark
        (:func:`pufferfish.tables.spark_engine.joint_aggregates`; ``data`` may then be a Spark
        DataFrame or a folder). Only the counts reach Python.
    spark : pyspark.sql.SparkSession, optional
        The session of ``engine="spark"`` (default: the active one, else a local one).
    time_limit : float
        Seconds of each mechanism (the optimal search), default
        :data:`~pufferfish.calibration.TIME_LIMIT`; one that does not finish gets a row ``did
        not finish: ...``.

    Returns
    -------
    JointTableCalibration

    Raises
    ------
    ValueError
        On a bad argument (including ``categorical``/``numeric`` naming a column twice or one
        that is not the secret, a public or the weight column), fewer than two columns, Gaussian
        noise, or more than :data:`~pufferfish.priors.joint.MAX_TUPLES` distinct tuples for a
        secret (bin the columns; the transport plans answer "not run" well before, beyond
        :data:`~pufferfish.transport.plans.MAX_PLAN_ENTRIES` entries).
    DataError
        If the table cannot be read, a column is unknown, or a secret of the pairs has no row.
    """
    columns = parse_columns(public)
    eps = check_epsilons([epsilon] if isinstance(epsilon, (int, float)) else list(epsilon))
    noise, delta = check_noise(noise), check_delta(delta)
    if noise != "laplace":
        raise ValueError(JOINT_GAUSSIAN)
    sets = check_prior_set(
        prior_set, confidence, prior_radius, prior_model=("empirical", None), delta=delta, noise=noise
    )
    source = data if isinstance(data, TableSource) else resolve_source(data, engine, read)  # checks engine
    engine = "spark" if source.kind == "spark-dataframe" else engine
    request = TableRequest(
        source, secret, columns, check_pairs(pairs), tuple(eps), check_mechanisms(mechanisms), weight=weight,
        delta=delta, categorical=tuple(categorical), numeric=tuple(numeric), prior_set=sets, engine=engine,
        spark=spark, units=parse_units(units, columns), time_limit=check_time_limit(time_limit),
    )  # fmt: skip
    return _calibrate(request)


def _aggregates(request: TableRequest) -> JointAggregates:
    """The joint priors' counts from the request's engine (only aggregates reach Python)."""
    kinds = {c: "categorical" for c in request.categorical} | {c: "numeric" for c in request.numeric}
    args = dict(secret=request.secret, columns=request.columns, weight=request.weight, kinds=kinds)
    if request.engine == "spark":
        from pufferfish.tables.spark_engine import joint_aggregates as spark_aggregates

        return spark_aggregates(request.source, spark=request.spark, **args)  # type: ignore[arg-type]
    from pufferfish.tables.duckdb_engine import joint_aggregates

    return joint_aggregates(request.source, **args)  # type: ignore[arg-type]


def _calibrate(request: TableRequest) -> JointTableCalibration:
    """:func:`calibrate_joint_table` on a validated request (each argument checked once, at the
    edge)."""
    source, secret, columns, pair_list = request.source, request.secret, request.columns, request.pairs
    if len(columns) < 2:
        raise ValueError(f"public must name two or more columns for a joint release, got {list(columns)}")
    check_kind_lists(
        request.categorical, request.numeric, secret=secret, public=columns, weight=request.weight
    )
    check_markers_and_pairs(source, pair_list)
    agg = _aggregates(request)
    codes = [{lab: float(k) for k, lab in enumerate(labs)} for labs in agg.labels]
    rows: dict[str, tuple[list[list[float]], list[float], list[float]]] = {}
    for s, values, n, n2 in agg.counts:  # numbers on the release grid, as every released value
        tup = [
            codes[k][v] if agg.categorical[k] else float(to_release_grid(float(v)))
            for k, v in enumerate(values)
        ]
        xs, ws, w2 = rows.setdefault(s, ([], [], []))
        xs.append(tup)
        ws.append(n)
        w2.append(n2)
    secrets = list(dict.fromkeys(s for pair in pair_list for s in pair))
    missing = [s for s in secrets if s not in rows]
    if missing:
        raise DataError(
            f"secret value(s) {missing} of the pairs have no row with every public column present"
        )
    conditionals = {s: JointPrior.from_rows(np.array(rows[s][0]), np.array(rows[s][1])) for s in secrets}
    every = [r for xs, _, _ in rows.values() for r in xs]
    w = default_units(request.units, agg.categorical, list(zip(*every, strict=True)))
    metric = Metric(
        w, tuple(len(labs) if cat else 0 for labs, cat in zip(agg.labels, agg.categorical, strict=True))
    )
    kind, confidence, radius = request.prior_set
    balls = None
    if kind != "none":
        sizes = {s: sum(rows[s][1]) ** 2 / sum(rows[s][2]) for s in secrets}  # Kish (rows unweighted)
        balls = joint_balls(conditionals, sizes, confidence=confidence, requested=kind, radius=radius)
    scenario = Scenario(tuple(pair_list), (AdversaryPrior("empirical", conditionals, balls),), metric)
    comparison = run_comparison(
        scenario, request.epsilons, request.mechanisms, delta=request.delta, noise="laplace",
        time_limit=request.time_limit,
    )  # fmt: skip
    inputs = {
        "data": str(source.data) if source.path is not None else type(source.data).__name__,
        "secret": secret,
        "columns": list(columns),
        "units": list(w),
        "pairs": [list(p) for p in pair_list],
        "epsilons": list(request.epsilons),
        "noise": "laplace",
        "delta": request.delta,
        "weight": request.weight,
        "engine": request.engine,
        "prior_set": kind,
        "confidence": confidence if radius is None else None,
        "prior_radius": radius,
    }
    return JointTableCalibration(
        inputs,
        columns,
        w,
        agg.categorical,
        agg.labels,
        scenario,
        comparison,
        agg.rows_total,
        agg.rows_dropped,
    )


@dataclass(frozen=True, eq=False)
class JointReleaseResult:
    """A release of several columns and what it rests on.

    Attributes
    ----------
    output, report_path : pathlib.Path
        The released table and its JSON report.
    report : mapping
        The report (:meth:`JointTableCalibration.to_dict` plus a ``release`` section).
    table : JointTableCalibration
    chosen : Calibration
        The mechanism whose scale ``b`` was used (Laplace, numerically checked).
    drawn_scales : mapping of str to float or None
        The Laplace scale drawn on each numeric column (``b w_k``, rounded up to the sampler's
        grid), ``1 / log ratio`` of the randomized response drawn on a categorical one (None for
        a column of one label), checked again jointly.
    rows_released, rows_missing : int
        Rows with every column present (each got noise), and rows with a missing value in some
        column (that cell left missing, the others noised).
    """

    output: Path
    report_path: Path
    report: Mapping[str, Any]
    table: JointTableCalibration
    chosen: Calibration
    drawn_scales: Mapping[str, float | None]
    rows_released: int
    rows_missing: int


def column_draws(table: JointTableCalibration, scale: float, sampler: str | None) -> list[ReleasedColumn]:
    """How each column is drawn at the scale ``b``: numeric column ``k`` gets ``Laplace(b w_k)``
    (rounded up to the secure sampler's grid, :func:`pufferfish.noise.samplers.sampler_grid`, unless
    ``sampler`` is None: a seeded NumPy draw); a categorical column of ``m >= 2`` labels gets the
    randomized response of log ratio at most ``1 / (b w_k)`` on the dyadic grid
    (:meth:`~pufferfish.noise.channels.RandomizedResponseChannel.from_log_ratio`), its labels kept; one
    label is released as it is. :attr:`ReleasedColumn.scale` is the drawn Laplace scale, or
    ``1 / log ratio`` of the drawn response (the scale of the metric's channel it is)."""
    out = []
    for c, cat, labels, w in zip(table.columns, table.categorical, table.labels, table.units, strict=True):
        if cat:
            codes_for = partial(label_codes, known=labels, codes=range(len(labels)), column=c)
            channel = None
            drawn = math.inf
            if len(labels) >= 2 and scale > 0:
                channel = RandomizedResponseChannel.from_log_ratio(len(labels), 1.0 / (scale * w))
                drawn = 1.0 / channel.log_ratio
            elif len(labels) >= 2:
                channel = RandomizedResponseChannel(len(labels), ONE, 0)
                drawn = 0.0
            out.append(ReleasedColumn(c, True, codes_for, drawn, channel, tuple(labels)))
        else:
            b = scale * w
            drawn = b if sampler is None or b == 0.0 else sampler_grid(b, "laplace", sampler)[2]
            out.append(ReleasedColumn(c, False, None, drawn))
    return out


def drawn_scales_check(
    table: JointTableCalibration, chosen: Calibration, rng: Any, sampler: str
) -> list[ReleasedColumn]:
    """Each column's draw (:func:`column_draws`), checked jointly.

    The secure sampler draws numeric column ``k`` at ``b w_k`` rounded up to its grid and a
    categorical one by a randomized response on the dyadic grid; a seeded ``rng`` draws ``b w_k``
    exactly (and is not checked again: experiments only). The exact loss of the product channel
    at the drawn parameters (the metric with units = the drawn scales, scale 1), on the priors
    with each numeric column rounded to its sampler's grid as the release rounds it
    (:meth:`pufferfish.priors.scenario.Scenario.on_grid`; values move only for scales from ``2^11`` on, by
    at most ``2^-41`` of the scale; label codes never move), must pass eps, over the prior sets
    when there are some. Raising one column's scale is post-processing on that column
    (``Laplace(b') = Laplace(b) * (mixture)``, SPEC sec 2.1; a weaker randomized response is the
    stronger one followed by another), but moving the values is not, so a tight scale may fail
    at its grid: ``b`` is then raised by the release's ladder
    (:data:`pufferfish.pipeline.release.GRID_SAFETY_STEPS`, a relative 2^-30 first) until the check
    passes. Pure eps needs no grid term: at grid points the pmf ratio is the density ratio.

    Raises
    ------
    PrivacyCheckError
        If no step of the ladder passes the check (a bug).
    """
    if rng is not None or chosen.scale == 0.0:
        return column_draws(table, chosen.scale, None)
    tried: list[str] = []
    found: list[ReleasedColumn] = []
    metric = table.scenario.metric
    assert metric is not None

    def passes_at(b: float) -> bool:
        draws = column_draws(table, b, sampler)
        units = tuple(d.scale if math.isfinite(d.scale) and d.scale > 0 else 1.0 for d in draws)
        exponents = [
            RELEASE_EXPONENT if d.categorical else sampler_grid(b * w, "laplace", sampler)[0]
            for d, w in zip(draws, table.units, strict=True)
        ]
        # what is released: each numeric column rounded to its sampler's grid (priors.to_grid)
        at = Scenario(table.scenario.pairs, table.scenario.priors, metric.with_units(units))
        chk = check_scenario(at.on_grid(exponents), "laplace", 1.0, chosen.epsilon, 0.0)
        tried.append(
            f"{dict(zip(table.columns, units, strict=True))}: loss {chk.value!r} (+ {chk.error:.3g})"
        )
        if chk.passes(chosen.epsilon):
            found[:] = draws
            return True
        return False

    if first_passing(chosen.scale, passes_at, steps=GRID_SAFETY_STEPS) is None:
        raise PrivacyCheckError(
            f"{chosen.mechanism} at the drawn scales fails the exact check against {chosen.epsilon!r}: "
            + "; ".join(tried)
        )
    return found


def release_joint(
    data: Any,
    *,
    secret: str,
    public: str | Sequence[str],
    pairs: Iterable[tuple[str, str] | str],
    epsilon: float,
    output: str | Path,
    units: Mapping[str, float] | Iterable[str] | None = None,
    mechanism: str = "optimal",
    weight: str | None = None,
    rng: np.random.Generator | int | None = None,
    force: bool = False,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    progress: Callable[[int, int], None] | None = None,
    workers: int | None = None,
    categorical: Sequence[str] = (),
    numeric: Sequence[str] = (),
    sampler: str = "exact",
    read: CsvOptions | None = None,
    prior_set: str | None = None,
    confidence: float = 0.95,
    prior_radius: float | None = None,
    engine: str = "duckdb",
    spark: Any = None,
    time_limit: float = TIME_LIMIT,
) -> JointReleaseResult:
    """Release several public columns jointly with the product channel (issues 17, 31).

    Every row gets one independent draw per column, with ``b`` the chosen mechanism's scale on
    the joint priors (:func:`calibrate_joint_table`): ``Laplace(b w_k)`` on a numeric column, a
    randomized response of log ratio at most ``1 / (b w_k)`` on a categorical one, which comes
    back as its labels (:func:`column_draws`). Other columns reach the output as written;
    missing stays missing. The table is streamed by DuckDB in batches.

    Parameters
    ----------
    data, secret, public, pairs, units, weight, categorical, numeric, read : see below
        As :func:`calibrate_joint_table`.
    prior_set, confidence, prior_radius, engine, spark, time_limit : see below
        As :func:`calibrate_joint_table`. With ``engine="spark"`` Spark also writes the release
        (a folder of part files, :func:`pufferfish.tables.spark_engine.release_table`), each
        partition with its own secure sampler; ``rng`` must then be an int seed or None.
    epsilon : float
        Finite and > 0 (pure eps).
    output : str or pathlib.Path
        ``.csv``, ``.csv.gz``, ``.parquet`` or ``.pq``; the JSON report is written beside it.
    mechanism : str
        A Laplace mechanism with a numerical check on joint priors: ``optimal`` (default),
        ``relaxed``, ``wasserstein-inf``, ``kantorovich`` or ``l1`` (under prior sets ``optimal``
        or ``l1``, the ones valid for every prior of a set).
    rng : numpy.random.Generator, int or None
        ``None``: the secure sampler (``sampler``); a seed: NumPy's, insecure (experiments).
    force : bool
        Overwrite existing output and report files.
    batch_rows : int
        Rows per batch (>= 1).
    progress : callable, optional
        ``progress(rows_done, rows_total)``.
    workers : int, optional
        Threads of the secure sampler (default every core).
    sampler : {"exact", "opendp"}
        The secure sampler.

    Returns
    -------
    JointReleaseResult

    Raises
    ------
    ValueError
        On a bad argument, a mechanism without a numerical check here (Gaussian, eps-MI) or that
        does not apply; OutputExistsError if an output exists and ``force`` is false.
    PrivacyCheckError
        If the drawn scales fail the exact check (a bug).

    Notes
    -----
    A row with a missing value in some column has its other columns released with the same
    noise; the joint priors are estimated on complete rows only, so such rows are covered by
    the guarantee only if their tuple's distribution is the estimated one (as a missing value
    is itself released).
    """
    (eps,) = check_epsilons([epsilon])
    m = lookup(mechanism)
    if (m.noise != "laplace" and m.name != "optimal") or m.criterion != "(eps, delta)-PP" or m.mapping:
        raise ValueError(
            f"mechanism {m.name} has no numerical check on several columns: release with optimal, relaxed, "
            "wasserstein-inf, kantorovich or l1 (product Laplace noise)"
        )
    check_batch_rows(batch_rows)
    n_workers = check_workers(workers)
    check_sampler(sampler)
    out_path = Path(output)
    fmt = output_format(out_path)
    rep_path = report_path_for(out_path)
    source = resolve_source(data, engine, read)  # checks engine
    if engine == "spark" and isinstance(rng, np.random.Generator):
        raise TypeError("rng must be an int seed or None with engine 'spark', got a Generator")
    check_release_outputs(source, out_path, rep_path, force=force)
    cols = parse_columns(public)
    sets = check_prior_set(
        prior_set, confidence, prior_radius, prior_model=("empirical", None), delta=0.0, noise="laplace"
    )
    mechs = None if m.name in ("l1", "kantorovich", "wasserstein-inf", "relaxed", "optimal") else (m,)
    request = TableRequest(
        source, secret, cols, check_pairs(pairs), (eps,), mechs, weight=weight,
        categorical=tuple(categorical), numeric=tuple(numeric), prior_set=sets, engine=engine, spark=spark,
        units=parse_units(units, cols), time_limit=check_time_limit(time_limit),
    )  # fmt: skip
    table = _calibrate(request)
    chosen = next((c for c in table.comparison if c.mechanism == m.name), None)
    if not isinstance(chosen, Calibration):
        reason = getattr(chosen, "reason", None) or not_applicable(table.scenario, m, "laplace", 0.0, eps)
        raise ValueError(f"mechanism {m.name} cannot be used here: {reason}")
    columns = drawn_scales_check(table, chosen, rng, sampler)
    target = _Target(out_path, rep_path, fmt, force, batch_rows, progress, n_workers, sampler)
    (released, missing), report = _write(request, table, chosen, columns, rng, target)
    drawn = {c.name: c.scale if math.isfinite(c.scale) else None for c in columns}
    return JointReleaseResult(out_path, rep_path, report, table, chosen, drawn, released, missing)


@dataclass(frozen=True)
class _Target:
    """Where and how a joint release is written (validated at the edge)."""

    output: Path
    report: Path
    fmt: str
    force: bool
    batch_rows: int
    progress: Callable[[int, int], None] | None
    workers: int
    sampler: str


def _write(
    request: TableRequest,
    table: JointTableCalibration,
    chosen: Calibration,
    columns: Sequence[ReleasedColumn],
    rng: Any,
    target: _Target,
) -> tuple[tuple[int, int], dict[str, Any]]:
    """Write the release and its JSON report by the request's engine: ``((released, missing),
    report)``. DuckDB streams into temporary files published together; Spark writes and
    commits its output folder itself, then the report is written."""
    source = request.source
    text_copy = source.path is not None and not is_parquet(source.path)
    if request.engine == "spark":
        from pufferfish.tables.spark_engine import release_table

        about, released, missing = release_table(
            source, target.output, target.fmt, columns=columns, noise="laplace",
            rng=None if rng is None else int(rng), force=target.force, text_copy=text_copy,
            spark=request.spark, sampler=target.sampler,
        )  # fmt: skip
        report = _release_report(
            table, chosen, columns, about, (released, missing), target.output, rng is not None
        )
        text = json.dumps(report, indent=2, allow_nan=False) + "\n"
        write_text(text, target.report, force=target.force, kind="report")
        return (released, missing), report
    from pufferfish.tables.duckdb_engine import stream_release

    outputs = [target.output, target.report]
    with atomic_outputs(outputs, force=target.force, kinds=["output", "report"]) as (tmp, tmp_rep):
        about, released, missing = stream_release(
            source, tmp, target.fmt, public=table.columns[0], estimated=None, scale=chosen.scale,
            noise="laplace", rng=rng, text_copy=text_copy, batch_rows=target.batch_rows,
            progress=target.progress, workers=target.workers,
            gzip=target.output.name.lower().endswith(".gz"), sampler=target.sampler, columns=columns,
            rows_total=table.rows_total,
        )  # fmt: skip
        report = _release_report(
            table, chosen, columns, about, (released, missing), target.output, rng is not None
        )
        tmp_rep.write_text(json.dumps(report, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    return (released, missing), report


def _release_report(
    table: JointTableCalibration,
    chosen: Calibration,
    columns: Sequence[ReleasedColumn],
    about: Mapping[str, Any],
    rows: tuple[int, int],
    out_path: Path,
    insecure: bool,
) -> dict[str, Any]:
    """The JSON report of :func:`release_joint`: the calibration and a ``release`` section."""
    report = table.to_dict()
    drawn = {c.name: c.scale if math.isfinite(c.scale) else None for c in columns}
    report["release"] = {
        "output": str(out_path),
        "mechanism": chosen.mechanism,
        "epsilon": chosen.epsilon,
        "scale": chosen.scale,
        "checked_loss": chosen.checked_loss,
        "guarantee": chosen.guarantee(),
        "column_scales": table.column_scales(chosen.scale),
        "drawn_scales": drawn,
        "column_noise": {c.name: column_noise(c) for c in columns},
        "drawn_scales_checked": chosen.scale > 0.0 and not insecure,
        "noise": dict(about),
        "insecure": insecure,
        "rows_released_with_noise": rows[0],
        "rows_with_a_missing_value": rows[1],
    }
    return report


def column_noise(column: ReleasedColumn) -> dict[str, Any]:
    """JSON-ready description of how one column was drawn: ``{"kind": "laplace", "scale"}``, or
    ``{"kind": "randomized-response", "labels", "log_ratio", "keep_probability"}``, or ``{"kind":
    "none"}`` for a column of one label."""
    if not column.categorical:
        return {"kind": "laplace", "scale": column.scale}
    if column.channel is None:
        return {"kind": "none", "labels": len(column.labels), "reason": "one label"}
    ratio = column.channel.log_ratio
    return {
        "kind": "randomized-response",
        "labels": column.channel.k,
        "log_ratio": ratio if math.isfinite(ratio) else None,
        "keep_probability": column.channel.keep_probability,
    }


def write_joint_report(
    result: JointTableCalibration | JointReleaseResult,
    path: str | Path,
    *,
    payload: dict[str, Any] | Mapping[str, Any],
    force: bool = False,
) -> Path:
    """Write the self-contained HTML report of a joint calibration or release.

    Parameters
    ----------
    result : JointTableCalibration or JointReleaseResult
        What to report; for a calibration the figures are at its first epsilon, for a release at
        the release's.
    path : str or pathlib.Path
        ``.html`` (or ``.htm``) file in an existing folder.
    payload : mapping
        :meth:`JointTableCalibration.to_dict` or the release's report, embedded in the page.
    force : bool
        Replace an existing file.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    ValueError
        If ``path`` is not ``.html``/``.htm`` or its folder does not exist.
    OutputExistsError
        If ``path`` exists and ``force`` is false.
    """
    from pufferfish.pipeline.figures import joint_report_figures
    from pufferfish.pipeline.joint_report import build_joint_report
    from pufferfish.pipeline.report import check_report_path
    from pufferfish.tables.source import write_text

    out = check_report_path(path, force=force)
    if isinstance(result, JointReleaseResult):
        table, eps, output, what = result.table, result.chosen.epsilon, result.output, "release"
    else:
        table, eps, output, what = result, float(result.inputs["epsilons"][0]), None, "calibration"
    figures = joint_report_figures(table, epsilon=eps, output=output)
    title = f"pufferfish {what}: ({', '.join(table.columns)}) given {table.inputs['secret']}, eps = {eps:g}"
    text = build_joint_report(dict(payload), table=table, figures=figures, title=title)
    return write_text(text, out, force=force, kind="report")
