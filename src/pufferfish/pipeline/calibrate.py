"""From a table to checked calibrations: ``calibrate_table``, and the one JSON report of a
calibration or a release (the release itself: :mod:`pufferfish.pipeline.release`).

The walk, each step once:

1. validate every argument at the edge (:func:`calibrate_table`,
   :func:`pufferfish.pipeline.release.release`) and resolve the
   table once (:func:`~pufferfish.tables.source.resolve_source`);
2. estimate the empirical priors (:mod:`pufferfish.tables.estimate`, by the DuckDB or the Spark
   engine) and, with ``prior="gaussian"|"gmm"``, fit them (:mod:`pufferfish.tables.fit`);
3. calibrate the mechanisms and check each scale exactly
   (:func:`~pufferfish.calibration.run_comparison`);
4. for a release (:mod:`pufferfish.pipeline.release`), add noise of the chosen mechanism's scale
   to every non-missing public value, or draw it from the chosen mapping's matrix (secure
   sampler unless a seed is given), streamed by the engine and written atomically;
5. build one JSON report (:func:`report_dict`) for both, and on request the HTML report from
   precomputed figures (:func:`pufferfish.pipeline.release.write_html_report`,
   :func:`pufferfish.pipeline.figures.report_figures`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from importlib.metadata import version
from typing import Any

import numpy as np

from pufferfish._checks import check_delta, check_epsilons
from pufferfish.calibration import (
    MECHANISMS,
    REGISTRY,
    TIME_LIMIT,
    Calibration,
    MappingCalibration,
    Skipped,
    Utility,
    check_mechanisms,
    check_time_limit,
    run_comparison,
)
from pufferfish.calibration.mapping import additive_utility, check_utility
from pufferfish.calibration.registry import JOINT_GAUSSIAN
from pufferfish.loss.density import check_noise
from pufferfish.pipeline.joint import calibrate_joint
from pufferfish.pipeline.joint_result import JointTableCalibration
from pufferfish.pipeline.request import TableRequest, parse_columns, parse_units, refuse_for_several
from pufferfish.priors.scenario import Scenario
from pufferfish.priors.sets import check_prior_set
from pufferfish.tables.estimate import (
    EstimatedPriors,
    check_column_kinds,
    check_pairs,
    estimate_from_source,
    estimate_two_sources,
    with_prior_sets,
)
from pufferfish.tables.fit import FittedPriors, fit_priors, parse_prior_model
from pufferfish.tables.source import CsvOptions, resolve_source

__all__ = [
    "TableCalibration",
    "calibrate_request",
    "calibrate_table",
    "column_kinds",
    "columns_and_kinds",
    "report_dict",
]


@dataclass(frozen=True)
class TableCalibration:
    """Priors estimated (and fitted) from a table, and every mechanism calibrated on them.

    Attributes
    ----------
    inputs : dict
        The validated arguments, as they go into the report (JSON types).
    estimated : EstimatedPriors
        Empirical priors, mapping and row counts.
    fitted : FittedPriors or None
        Gaussian or Gaussian-mixture priors (``prior="gaussian"|"gmm"``), else None.
    comparison : tuple of Calibration, MappingCalibration or Skipped
        Every mechanism asked for at every epsilon (ordered by epsilon, then mechanism); those that
        do not apply, or fail their exact check, as :class:`~pufferfish.calibration.Skipped`.
        Each carries its expected accuracy and absolute error on the released rows.
    epsilons : tuple of float
        The budgets, each finite and > 0.
    delta : float
        Target delta in [0, 1).
    noise : {"laplace", "gaussian"}
        Noise of the ``optimal`` calibrator (the theorems fix their own).
    data : EstimatedPriors or None
        With ``priors_from``: the estimate of the table to release (its rows and codes; the
        priors are ``estimated``, from the other table). None when the priors are the data's.
    utility : Utility or None
        The alphabet and the distribution ``mu`` of the released rows behind every row's
        expected accuracy and absolute error (and the objective of ``optimal-mapping``); None for
        a column with one value.
    """

    inputs: dict[str, Any]
    estimated: EstimatedPriors
    fitted: FittedPriors | None
    comparison: tuple[Calibration | MappingCalibration | Skipped, ...]
    epsilons: tuple[float, ...]
    delta: float
    noise: str
    data: EstimatedPriors | None = None
    utility: Utility | None = None

    @property
    def released_table(self) -> EstimatedPriors:
        """The estimate of the table a release writes: :attr:`data`, else :attr:`estimated`."""
        return self.data if self.data is not None else self.estimated

    @property
    def scenario(self) -> Scenario:
        """The priors the scales are calibrated for (fitted if any, else empirical)."""
        return self.estimated.scenario if self.fitted is None else self.fitted.scenario

    @property
    def prior_kind(self) -> str:
        """``"empirical"``, ``"fitted Gaussian"`` or ``"fitted GMM"``: whose prior the guarantee is for."""
        if self.fitted is None:
            return "empirical"
        return "fitted Gaussian" if self.fitted.model == "gaussian" else "fitted GMM"

    def at(self, epsilon: float) -> tuple[Calibration | MappingCalibration | Skipped, ...]:
        """The comparison rows at one epsilon."""
        return tuple(c for c in self.comparison if c.epsilon == epsilon)


def calibrate_table(
    data: Any,
    *,
    secret: str,
    public: str | Sequence[str],
    pairs: Iterable[tuple[str, str] | str],
    epsilon: float | Sequence[float],
    mechanisms: Sequence[str] | None = None,
    order: Sequence[str] | None = None,
    weight: str | None = None,
    prior: str = "empirical",
    noise: str = "laplace",
    delta: float = 0.0,
    fit_seed: int = 0,
    engine: str = "duckdb",
    spark: Any = None,
    categorical: Sequence[str] = (),
    numeric: Sequence[str] = (),
    prior_set: str | None = None,
    confidence: float = 0.95,
    prior_radius: float | None = None,
    priors_from: Any = None,
    utility: str | None = None,
    read: CsvOptions | None = None,
    time_limit: float = TIME_LIMIT,
    units: Mapping[str, float] | Iterable[str] | None = None,
) -> TableCalibration | JointTableCalibration:
    """Estimate the priors of a table, fit them if asked, and calibrate every mechanism on them.

    Parameters
    ----------
    data : str, pathlib.Path, pandas.DataFrame or pyspark.sql.DataFrame
        CSV or Parquet file, DataFrame, or ``"adult"`` (:func:`~pufferfish.tables.source.resolve_source`).
    secret : str
        Secret column; its values in ``pairs`` define the discriminative pairs.
    public : str or sequence of str
        Column to release (numeric, or categorical mapped to codes by ``order``); or several
        (``"a,b"`` or a list), calibrated jointly for the product channel
        (:func:`~pufferfish.pipeline.joint.calibrate_joint`, a
        :class:`~pufferfish.pipeline.joint_result.JointTableCalibration`): their default prior set
        is the L1 ball on the joint alphabet; ``order``, ``prior``, ``priors_from``, ``utility``
        and Gaussian noise are for one column and refused.
    pairs : iterable of (str, str) or str
        Discriminative pairs of secret values, as tuples or as texts 'A,B'.
    epsilon : float or sequence of float
        Privacy budgets, each finite and > 0 (nats).
    mechanisms : sequence of str, optional
        Names from :data:`~pufferfish.calibration.MECHANISMS` (those that do not apply are
        reported with the reason). Default: the column's set (:func:`releases_labels`): the
        randomized mappings (:data:`~pufferfish.calibration.MAPPING_MECHANISMS`, labels in and
        out) for a categorical column, the additive mechanisms otherwise; a categorical column's
        codes get additive noise only when named.
    order : sequence of str, optional
        Label order of a categorical public column (default: sorted labels).
    weight : str, optional
        Frequency-weight column.
    prior : {"empirical", "gaussian", "gmm", "gmm:K"}
        The adversary's prior: empirical (default), a maximum-likelihood Gaussian, or a Gaussian
        mixture (K components, or chosen by BIC), per secret (:mod:`pufferfish.tables.fit`).
    noise : {"laplace", "gaussian"}
        Noise of ``optimal`` (the theorems fix their own).
    delta : float
        Target delta in [0, 1) (default 0: pure eps).
    fit_seed : int
        Seed of the mixture fit (EM initialisation).
    engine, spark : {"duckdb", "spark"}, pyspark.sql.SparkSession or None
        Engine that computes the aggregates, and the Spark engine's session.
    categorical, numeric : sequence of str
        Columns to read as categorical or numeric where the engine's guess is wrong
        (:func:`~pufferfish.tables.estimate.check_column_kinds`).
    prior_set : {"dkw", "l1", "none"}, optional
        Guarantee for every prior in a confidence set around each estimate (DKW band or L1 ball,
        :mod:`pufferfish.priors.sets`), or the estimate alone; default ``"dkw"`` for empirical
        priors with pure eps and Laplace noise, else ``"none"``. Under a set only ``optimal``
        and ``l1`` (and the mappings) apply; the point-estimate ``optimal`` (or
        ``optimal-mapping``) is added beside them.
    confidence, prior_radius : float
        The sets' level in (0, 1) (default 0.95), or their radius (DKW ``eta``, L1 ``r``) >= 0.
    priors_from : str, pathlib.Path or DataFrame, optional
        Table to estimate the priors from instead (same columns; the codes cover both tables).
    utility : {"shares", "accuracy", "absolute"}, optional
        Objective of ``optimal-mapping`` (:mod:`pufferfish.calibration.mapping`); default
        ``"shares"`` (accuracy, each label keeping its share) for labels, else ``"absolute"``.
    read : CsvOptions, optional
        How a CSV is read (:func:`~pufferfish.tables.source.check_csv_options`: names of a
        header-less file, markers, delimiter, encoding); default: a header row, sniffed, UTF-8.
    time_limit : float
        Seconds of each mechanism (search, LP), default :data:`~pufferfish.calibration.TIME_LIMIT`;
        one that does not finish gets a row ``did not finish: ...``.
    units : mapping or iterable of "col=w", optional
        Several columns: each column's unit ``w_k > 0`` in the metric ``sum_k d_k / w_k``
        (default: a numeric column's range, 1 for a categorical one;
        :func:`~pufferfish.pipeline.joint.default_units`).

    Returns
    -------
    TableCalibration or JointTableCalibration

    Raises
    ------
    ValueError
        On a bad argument (the message names it); :class:`~pufferfish.tables.source.DataError`
        for unreadable data, unknown columns or values, empty groups.

    Notes
    -----
    Seed 001 sec 6.1 (empirical priors), eq (4), (26), Prop 3.2-3.3; seed 002 Lemma 1, Thm 2;
    seed 003 Thm 1-2 and Cor 1; seed 004 Thm 3-4; every scale checked exactly (SPEC sec 2.1).
    """
    epsilons = check_epsilons([epsilon] if isinstance(epsilon, (int, float)) else epsilon)
    mechs = tuple(REGISTRY.values()) if mechanisms is None else check_mechanisms(mechanisms)
    assert mechs is not None
    pair_list = check_pairs(pairs)
    columns, kinds, unit_list = columns_and_kinds(
        public, units, categorical, numeric, secret=secret, weight=weight, order=order is not None,
        prior=prior != "empirical", priors_from=priors_from is not None, utility=utility is not None,
    )  # fmt: skip
    prior_model, noise, delta = parse_prior_model(prior), check_noise(noise), check_delta(delta)
    if len(columns) > 1 and noise != "laplace":  # several columns: the product channel (issue 31)
        raise ValueError(JOINT_GAUSSIAN)
    sets = check_prior_set(
        prior_set, confidence, prior_radius, prior_model=prior_model, delta=delta, noise=noise
    )
    source = resolve_source(data, engine, read)  # validates the engine; the table is resolved once
    if len(columns) > 1:
        return calibrate_joint(
            TableRequest(
                source, secret, columns, pair_list, epsilons, None if mechanisms is None else mechs,
                weight=weight, delta=delta, categorical=kinds[0], numeric=kinds[1], prior_set=sets,
                engine=engine, spark=spark, units=unit_list, time_limit=check_time_limit(time_limit),
            )
        )  # fmt: skip
    priors_source = None if priors_from is None else resolve_source(priors_from, engine, read)
    request = TableRequest(
        source, secret, columns, pair_list, epsilons, mechs, weight=weight, delta=delta, noise=noise,
        categorical=kinds[0], numeric=kinds[1], prior_set=sets, engine=engine, spark=spark, prior=prior,
        prior_model=prior_model, fit_seed=fit_seed, order=None if order is None else tuple(order),
        public_kind=kinds[2], priors_source=priors_source,
        utility=None if utility is None else check_utility(utility), default_set=mechanisms is None,
        time_limit=check_time_limit(time_limit),
    )  # fmt: skip
    return calibrate_request(request)


def columns_and_kinds(
    public: str | Sequence[str],
    units: Mapping[str, float] | Iterable[str] | None,
    categorical: Sequence[str],
    numeric: Sequence[str],
    *,
    secret: str,
    weight: str | None,
    **one_column: bool,
) -> tuple[tuple[str, ...], tuple[tuple[str, ...], tuple[str, ...], str | None], tuple[float | None, ...]]:
    """The public columns, their kinds and units, validated once at the edge.

    One column: ``(columns, column_kinds(...), ())`` (``units`` refused). Several: the options of
    one column given (``one_column``, ``{name: given}``) are refused in one message
    (:func:`~pufferfish.pipeline.request.refuse_for_several`), the kinds are checked against the
    table later (:func:`~pufferfish.tables.estimate.check_kind_lists`), and ``units`` parsed
    (:func:`~pufferfish.pipeline.request.parse_units`).

    Raises
    ------
    ValueError
        On a bad column list, a one-column option with several columns, or units with one.
    """
    columns = parse_columns(public)
    if len(columns) > 1:
        refuse_for_several(columns, **one_column)
        return columns, (tuple(categorical), tuple(numeric), None), parse_units(units, columns)
    if units is not None:
        raise ValueError(f"units apply to several public columns, got one: {columns[0]!r}")
    return columns, column_kinds(categorical, numeric, secret=secret, public=columns[0], weight=weight), ()


def column_kinds(
    categorical: Sequence[str], numeric: Sequence[str], *, secret: str, public: str, weight: str | None
) -> tuple[tuple[str, ...], tuple[str, ...], str | None]:
    """``(categorical, numeric, public_kind)`` validated (:func:`check_column_kinds`)."""
    cats, nums = tuple(str(c) for c in categorical), tuple(str(c) for c in numeric)
    return cats, nums, check_column_kinds(cats, nums, secret=secret, public=public, weight=weight)


def calibrate_request(request: TableRequest) -> TableCalibration:
    """:func:`calibrate_table` on a validated request of one column (each argument checked once,
    at the edge): estimate, fit, calibrate and check (``request.default_set``: the mechanisms are
    the default set, narrowed to the column's: :func:`releases_labels`; ``request.point_row``:
    under a prior set, add the best mechanism at the point estimate beside it)."""
    r = request
    public, epsilons, noise, delta, order = r.public, r.epsilons, r.noise, r.delta, r.order
    assert r.mechanisms is not None, "a one-column request names its mechanisms"
    mechanisms = r.mechanisms
    model, n_components = r.prior_model
    how = dict(
        secret=r.secret, public=public, pairs=r.pairs, order=order, weight=r.weight, engine=r.engine,
        spark=r.spark,
    )  # fmt: skip
    data: EstimatedPriors | None = None
    if r.priors_source is None:
        estimated = estimate_from_source(r.source, **how, public_kind=r.public_kind)
    else:  # the priors from another table, with the codes of both
        data, estimated = estimate_two_sources(r.source, r.priors_source, **how, public_kind=r.public_kind)
    fitted = None
    if model != "empirical":
        fitted = fit_priors(estimated, model, n_components=n_components, rng=r.fit_seed)
    point = estimated
    kind, confidence, radius = r.prior_set
    estimated = with_prior_sets(
        point, kind, confidence=confidence, radius=radius, full_alphabet=order is not None
    )
    scenario = estimated.scenario if fitted is None else fitted.scenario
    released = point if data is None else data
    if r.default_set:
        mappings = releases_labels(released, model, noise, delta)
        mechanisms = tuple(m for m in mechanisms if m.mapping == mappings)
    util = _utility(released, point, r.utility)
    comparison = run_comparison(
        scenario,
        epsilons,
        mechanisms,
        delta=delta,
        noise=noise,
        secret_weights=estimated.secret_weights,
        utility=util,
        time_limit=r.time_limit,
    )
    best = next((REGISTRY[n] for n in ("optimal", "optimal-mapping") if REGISTRY[n] in mechanisms), None)
    if r.point_row and kind != "none" and best is not None:  # the price of the uncertainty
        at_point = run_comparison(
            point.scenario, epsilons, (best,), delta=delta, noise=noise, utility=util, time_limit=r.time_limit
        )
        comparison = tuple(
            r
            for eps, extra in zip(epsilons, at_point, strict=True)
            for r in (*(c for c in comparison if c.epsilon == eps), extra)
        )
    comparison = tuple(_with_utility(c, util) for c in comparison)
    inputs = {
        "data": estimated.source,
        "secret": r.secret,
        "public": public,
        "pairs": [list(p) for p in estimated.scenario.pairs],
        "epsilon": epsilons[0] if len(epsilons) == 1 else list(epsilons),
        "delta": delta,
        "prior": r.prior,
        "noise": noise,
        "mechanism": "all" if len(mechanisms) == len(MECHANISMS) else [m.name for m in mechanisms],
        "order": list(order) if order is not None else None,
        "weight": r.weight,
        "prior_set": kind,
        "confidence": confidence if kind != "none" else None,
        "prior_radius": radius,
        "priors_from": None if r.priors_source is None else r.priors_source.description,
        "utility": None if util is None else util.kind,
    }
    if r.categorical or r.numeric:  # the type overrides, when given
        inputs.update({"categorical": list(r.categorical), "numeric": list(r.numeric)})
    return TableCalibration(inputs, estimated, fitted, comparison, epsilons, delta, noise, data, util)


def releases_labels(released: EstimatedPriors, model: str, noise: str, delta: float) -> bool:
    """Whether the column's default mechanisms are the randomized mappings (labels in, labels
    out): a categorical column with empirical priors and a pure-eps Laplace request (issue 32).
    Otherwise the additive mechanisms (a numeric column, fitted priors, Gaussian noise or a delta);
    ``--mechanism`` names any."""
    return released.categorical and model == "empirical" and noise == "laplace" and delta == 0.0


def _utility(released: EstimatedPriors, priors: EstimatedPriors, kind: str | None) -> Utility | None:
    """The utility of a mapping on the alphabet of both estimates: ``mu`` = the released table's
    distribution of the public column (:attr:`EstimatedPriors.marginal`); None for one value."""
    support = np.union1d(np.asarray(released.support), np.asarray(priors.support))
    if support.size < 2:
        return None
    mu = np.zeros(support.size)
    marginal = released.marginal if released.marginal is not None else np.ones(released.support.size)
    mu[np.searchsorted(support, released.support)] = marginal
    default = "shares" if released.categorical else "absolute"
    return Utility(kind or default, mu, support)


def _with_utility(c: Calibration | MappingCalibration | Skipped, util: Utility | None) -> Any:
    """An additive calibration with its expected accuracy and absolute error (others as they are)."""
    if util is None or not isinstance(c, Calibration):
        return c
    accuracy, abs_error = additive_utility(c.noise, c.scale, util)
    return replace(c, expected_accuracy=accuracy, expected_abs_error=abs_error)


def report_dict(table: TableCalibration, *, release: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON report of a calibration (``pufferfish calibrate --json``) or of a release.

    One builder for both: the tool, the inputs, the mapping, the priors (and fitted priors) and
    every mechanism's calibration with its check come from ``table``; a release adds what was
    written.

    Parameters
    ----------
    table : TableCalibration
        From :func:`calibrate_table` (or the release's own).
    release : dict, optional
        For a release: ``output`` (str), ``chosen`` (Calibration), ``noise`` (the sampler's
        description), ``released_with_noise`` and ``missing_public_left_missing`` (int).

    Returns
    -------
    dict
        JSON-ready (no NaN). A calibration has the keys of
        :meth:`~pufferfish.tables.model.EstimatedPriors.to_dict` (and of
        :meth:`~pufferfish.tables.fit.FittedPriors.to_dict`), ``tool``, ``inputs``, ``delta``, ``noise``
        (the noise name) and ``results``. A release has ``tool``, ``created``, ``inputs``,
        ``output``, ``public_column_released_as``, ``mapping``, ``priors``, ``rows``,
        ``mechanisms``, ``chosen``, ``noise`` (how it was drawn), ``guarantee`` and, with fitted
        priors, ``fitted_priors`` and ``prior_model``.
    """
    est = table.estimated
    tool = f"pufferfish-privacy {version('pufferfish-privacy')}"
    rows = [c.to_dict() for c in table.comparison]
    head = est.to_dict() if table.fitted is None else table.fitted.to_dict()
    if release is None:
        return {
            "tool": tool,
            "inputs": table.inputs,
            **head,
            "delta": table.delta,
            "noise": table.noise,
            "results": rows,
        }
    chosen: Calibration | MappingCalibration = release["chosen"]
    noise_name = "Laplace" if chosen.noise == "laplace" else "Gaussian"
    released_as = (
        f"code of the label (see mapping) + {noise_name} noise"
        if est.categorical
        else f"value + {noise_name} noise"
    )
    if isinstance(chosen, MappingCalibration):
        released_as = (
            "a label drawn from row 'label' of the checked matrix (chosen.matrix; rows and columns in "
            "the order of mapping)"
            if est.categorical
            else "a value of the alphabet drawn from the checked matrix (chosen.matrix)"
        )
    out = {
        "tool": tool,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "inputs": table.inputs,
        "output": release["output"],
        "public_column_released_as": released_as,
        "mapping": head["mapping"],
        "priors": head["priors"],
        "rows": {
            "total": est.rows_total,
            "dropped_from_prior_estimate_missing_values": est.rows_dropped,
            "released_with_noise": release["released_with_noise"],
            "missing_public_left_missing": release["missing_public_left_missing"],
        },
        "mechanisms": rows,
        "chosen": chosen.to_dict(),
        "noise": release["noise"],
        "guarantee": chosen.guarantee(table.prior_kind),
    }
    if table.fitted is not None:
        out["fitted_priors"] = head["fitted_priors"]
        out["prior_model"] = table.fitted.model
    return out
