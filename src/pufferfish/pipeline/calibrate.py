"""From a table to checked calibrations of one public column or several: ``calibrate_table``
(the release itself: :mod:`pufferfish.pipeline.release`).

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
5. build one JSON report (:func:`~pufferfish.pipeline.results.report_dict`) for both, and on
   request the HTML report from precomputed figures (:func:`pufferfish.pipeline.release.write_html_report`,
   :func:`pufferfish.pipeline.figures.report_figures`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from pufferfish._checks import check_delta, check_epsilons
from pufferfish.calibration import (
    MECHANISMS,
    REGISTRY,
    TIME_LIMIT,
    Calibration,
    MappingCalibration,
    Mechanism,
    Skipped,
    Utility,
    check_mechanisms,
    check_time_limit,
    run_comparison,
)
from pufferfish.calibration.mapping import (
    DEFAULT_UTILITY_LABELS,
    DEFAULT_UTILITY_NUMBERS,
    additive_utility,
    check_utility,
)
from pufferfish.calibration.registry import JOINT_GAUSSIAN
from pufferfish.loss.density import check_noise
from pufferfish.pipeline.request import (
    TableRequest,
    check_keep,
    check_labels,
    parse_columns,
    parse_units,
    refuse_for_several,
)
from pufferfish.pipeline.results import TableCalibration
from pufferfish.priors.joint import MISSING_NUMBER
from pufferfish.priors.scenario import Scenario
from pufferfish.priors.sets import check_prior_set
from pufferfish.tables.domain import check_bounds, check_impute, grid_gap, snapping_margin
from pufferfish.tables.estimate import (
    EstimatedPriors,
    check_column_kinds,
    check_pairs,
    estimate_from_source,
    estimate_joint,
    estimate_two_sources,
    with_prior_sets,
)
from pufferfish.tables.fit import FittedPriors, fit_priors, parse_prior_model
from pufferfish.tables.missing import MissingAtom, missing_atom, present_confidence
from pufferfish.tables.model import EstimatedJointPriors, label_text
from pufferfish.tables.source import CsvOptions, DataError, resolve_source

__all__ = [
    "TableCalibration",
    "calibrate_request",
    "calibrate_table",
    "column_kinds",
    "columns_and_kinds",
]


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
    missing: str | None = None,
    labels: Sequence[str] | None = None,
    bounds: str | Sequence[float] | None = None,
    keep: str | Sequence[str] | None = None,
    impute: float | None = None,
) -> TableCalibration:
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
        (:func:`~pufferfish.tables.estimate.estimate_joint`): their default prior set
        is the L1 ball on the joint alphabet; ``order``, ``prior``, ``priors_from``, ``utility``
        and Gaussian noise are for one column and refused.
    pairs, epsilon : iterable of (str, str) or str, float or sequence of float
        Discriminative pairs of secret values ('A,B' or tuples); budgets, each finite and > 0 (nats).
    mechanisms : sequence of str, optional
        Names from :data:`~pufferfish.calibration.MECHANISMS` (those that do not apply are
        reported with the reason). Default: the column's set (:func:`releases_labels`): the
        randomized mappings (:data:`~pufferfish.calibration.MAPPING_MECHANISMS`, labels in and
        out) for a categorical column, the additive mechanisms otherwise; a categorical column's
        codes get additive noise only when named.
    order, labels, bounds, weight : sequence of str, sequence of str, (float, float), str, optional
        Label order of a categorical public column (default: sorted); labels of its domain never
        seen, or a numeric column's domain ``lo,hi`` (values clamped; sets: :mod:`~pufferfish.tables.domain`,
        among several columns :mod:`~pufferfish.priors.bands`); frequency-weight column.
    prior : {"empirical", "gaussian", "gmm", "gmm:K"}
        Empirical (default), a fitted Gaussian or mixture per secret (:mod:`pufferfish.tables.fit`).
    noise, delta, fit_seed : {"laplace", "gaussian"}, float, int
        Noise of ``optimal`` (the theorems fix their own); target delta in [0, 1) (default 0:
        pure eps); seed of the mixture fit (EM initialisation).
    engine, spark : {"duckdb", "spark"}, pyspark.sql.SparkSession or None
        Engine of the aggregates, and its Spark session.
    categorical, numeric : sequence of str
        Columns read as labels or numbers where the engine guesses wrong (``check_column_kinds``).
    prior_set : {"dkw", "l1", "none"}, optional
        Guarantee for every prior in a confidence set around each estimate (DKW band or L1 ball,
        :mod:`pufferfish.priors.sets`), or the estimate alone; default ``"dkw"`` for empirical
        priors with pure eps and Laplace noise, else ``"none"``. Under a set only ``optimal``
        and ``l1`` (and the mappings) apply, with the point-estimate optimum beside them.
    confidence, prior_radius, priors_from : float, float, table, optional
        The sets' level in (0, 1) (default 0.95) or radius (DKW ``eta``, L1 ``r``) >= 0; a table
        to estimate the priors from instead (same columns; the codes cover both tables).
    utility : {"shares", "accuracy", "absolute"}, optional
        Objective of ``optimal-mapping`` (:mod:`pufferfish.calibration.mapping`); default shares.
    read : CsvOptions, optional
        How a CSV is read (:func:`~pufferfish.tables.source.check_csv_options`); default: a header.
    time_limit : float
        Seconds of each mechanism (search, LP; default :data:`~pufferfish.calibration.TIME_LIMIT`).
    units : mapping or iterable of "col=w", optional
        Several columns: each column's unit ``w_k > 0`` in the metric ``sum_k d_k / w_k``
        (default :func:`~pufferfish.tables.joint.default_units`).
    missing, impute, keep : {None, "value", "omit", "impute"}, float, str or sequence of str
        A missing public cell is a label or a number's missing atom (``"value"``, the default
        without bounds), its row is left out (``"omit"``, the seed papers'), or, under declared
        ``bounds`` (the default there), the constant ``impute`` inside them (default the lower
        bound; :func:`~pufferfish.tables.domain.check_impute`); columns kept in clear inside the
        check (the identity channel, as :func:`~pufferfish.pipeline.release.release` writes them).

    Returns
    -------
    TableCalibration
        Of one column or several (:attr:`TableCalibration.columns`); its JSON report is
        :func:`~pufferfish.pipeline.results.report_dict`.

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
    one_column = dict(
        order=order is not None, prior=prior != "empirical", priors_from=priors_from is not None,
        utility=utility is not None, labels=labels is not None,
    )  # fmt: skip
    columns, kinds, unit_list = columns_and_kinds(
        public, units, categorical, numeric, secret=secret, weight=weight, **one_column
    )
    keep_cols, _ = check_keep(keep, None, secret=secret, columns=columns, one_column=one_column)
    prior_model, noise, delta = parse_prior_model(prior), check_noise(noise), check_delta(delta)
    if len(columns) + len(keep_cols) > 1 and noise != "laplace":  # the product channel (issue 31)
        raise ValueError(JOINT_GAUSSIAN)
    sets = check_prior_set(
        prior_set, confidence, prior_radius, prior_model=prior_model, delta=delta, noise=noise
    )
    source = resolve_source(data, engine, read)  # validates the engine; the table is resolved once
    priors_source = None if priors_from is None else resolve_source(priors_from, engine, read)
    domain = check_bounds(bounds)
    missing_read, impute_value = check_impute(missing, impute, domain)
    request = TableRequest(
        source, secret, columns, pair_list, epsilons, mechs, weight=weight, delta=delta, noise=noise,
        categorical=kinds[0], numeric=kinds[1], prior_set=sets, engine=engine, spark=spark, prior=prior,
        prior_model=prior_model, fit_seed=fit_seed, order=None if order is None else tuple(order),
        public_kind=kinds[2], priors_source=priors_source,
        utility=None if utility is None else check_utility(utility), default_set=mechanisms is None,
        time_limit=check_time_limit(time_limit), units=unit_list, labels=check_labels(labels),
        bounds=domain, keep=keep_cols,
        missing=missing_read, impute=impute_value,
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
    """:func:`calibrate_table` on a validated request of ``d >= 1`` columns (each argument checked
    once, at the edge): estimate, fit, calibrate and check.

    The estimate is the one step that depends on ``d``: one column's empirical priors on its
    alphabet, with its DKW band or L1 ball, fitted on request (:func:`_estimate_one_column`), or
    several columns' joint priors on the product metric with their L1 balls
    (:func:`~pufferfish.tables.estimate.estimate_joint`). Then, for any ``d``: every mechanism
    compared and checked (:func:`~pufferfish.calibration.run_comparison`; ``request.default_set``:
    one column keeps its kind's set, :func:`releases_labels`, several every mechanism that
    applies), under a prior set the best mechanism at the point estimate beside it
    (``request.point_row``: the price of the uncertainty), and one
    :class:`~pufferfish.pipeline.results.TableCalibration`.
    """
    r = request
    kind, confidence, radius = r.prior_set
    estimated: EstimatedPriors | EstimatedJointPriors
    best: Mechanism | None
    if r.dimension > 1:
        units = (*(r.units or (None,) * len(r.columns)), *(None,) * len(r.keep))  # kept: unused
        estimated = estimate_joint(
            r.source, secret=r.secret, columns=(*r.columns, *r.keep), pairs=r.pairs, weight=r.weight,
            categorical=r.categorical, numeric=r.numeric, units=units, prior_set=r.prior_set,
            engine=r.engine, spark=r.spark, missing=r.missing, keep=r.keep, bounds=r.bounds, impute=r.impute,
        )  # fmt: skip
        if r.keep or any(estimated.missing_atoms):  # released as they are
            refuse_kept_alone(estimated, r.keep, min(r.epsilons))
        fitted, data, util, weights = None, None, None, None
        extra: dict[str, Any] = {"units": list(estimated.units)}
        mechanisms = None if r.default_set else r.mechanisms  # None: every one that applies
        point = estimated.scenario.without_sets()
        best = REGISTRY["optimal"]
    else:
        estimated, point, fitted, data, util, mechanisms = _estimate_one_column(r)
        weights = estimated.secret_weights
        extra = {}
        best = next((REGISTRY[n] for n in ("optimal", "optimal-mapping") if REGISTRY[n] in mechanisms), None)
    scenario = estimated.scenario if fitted is None else fitted.scenario
    atom = _missing_atom(r, estimated)  # a numeric column's missing cells: eps' for its values
    epsilons = r.epsilons if atom is None else tuple(atom.present_epsilon(e) for e in r.epsilons)
    how: dict[str, Any] = dict(delta=r.delta, noise=r.noise, utility=util, time_limit=r.time_limit)
    gap = _domain_gap(estimated, kind)
    margins: tuple[float, ...] = ()
    if gap:  # declared bounds: the sets are checked on a grid, the margin covers the interval
        margins = _snapping_margins(scenario, epsilons, best, gap, how)
        epsilons = tuple(e - m for e, m in zip(epsilons, margins, strict=True))
    comparison = run_comparison(scenario, epsilons, mechanisms, secret_weights=weights, **how)
    if gap:
        comparison = tuple(
            _within_margin(c, gap, dict(zip(epsilons, margins, strict=True))) for c in comparison
        )
    if r.point_row and kind != "none" and best is not None:  # the price of the uncertainty
        at_point = run_comparison(point, epsilons, (best,), **how)
        comparison = tuple(
            c
            for eps, extra in zip(epsilons, at_point, strict=True)
            for c in (*(c for c in comparison if c.epsilon == eps), extra)
        )
    comparison = tuple(_with_utility(_composes(c, atom), util) for c in comparison)
    names = [m.name for m in (mechanisms or ())]
    inputs = {
        "data": estimated.source,
        "secret": r.secret,
        "public": ",".join(r.columns),
        "columns": list(r.columns),
        "pairs": [list(p) for p in r.pairs],
        "epsilon": r.epsilons[0] if len(r.epsilons) == 1 else list(r.epsilons),
        "delta": r.delta,
        "prior": r.prior,
        "noise": r.noise,
        "mechanism": "all" if mechanisms is None or len(names) == len(MECHANISMS) else names,
        "order": list(r.order) if r.order is not None else None,
        "weight": r.weight,
        "engine": r.engine,
        "prior_set": kind,
        "confidence": confidence if kind != "none" else None,
        "prior_radius": radius,
        "priors_from": None if r.priors_source is None else r.priors_source.description,
        "utility": None if util is None else util.kind,
        "missing": r.missing,
        "impute": r.impute,
        "labels": list(r.labels) or None,
        "bounds": None if r.bounds is None else list(r.bounds),
    }
    inputs.update(extra)  # several columns: the units used
    if r.categorical or r.numeric:  # the type overrides, when given
        inputs.update({"categorical": list(r.categorical), "numeric": list(r.numeric)})
    return TableCalibration(
        inputs, estimated, fitted, comparison, epsilons, r.delta, r.noise, data, util, atom, margins
    )


def _domain_gap(estimated: EstimatedPriors | EstimatedJointPriors, kind: str) -> float:
    """``delta`` of a declared numeric domain in the distance the scale divides: the largest gap
    of the grid the sets are checked on (one column), divided by the numeric column's unit for
    several (its noise is ``Laplace(b w)``); 0 without declared bounds or a prior set."""
    if estimated.bounds is None or kind == "none":
        return 0.0
    if isinstance(estimated, EstimatedPriors):
        return grid_gap(estimated.support)
    column = estimated.bounded_column
    assert column is not None
    return estimated.grid_gap / estimated.units[column]


def _snapping_margins(
    scenario: Scenario, epsilons: tuple[float, ...], best: Mechanism | None, gap: float, how: dict[str, Any]
) -> tuple[float, ...]:
    """Each budget's margin ``2 delta / b0`` (:func:`~pufferfish.tables.domain.snapping_margin`),
    ``b0`` the best mechanism's scale on the grid at the whole budget, at most half the budget:
    every scale calibrated at ``eps - margin`` is at least ``b0`` (a smaller budget needs more
    noise), so its own ``2 delta / b`` stays within the margin (checked by :func:`_within_margin`)."""
    first = run_comparison(scenario, epsilons, () if best is None else (best,), **how)
    out = []
    for eps in epsilons:
        scales = [c.scale for c in first if isinstance(c, Calibration) and c.epsilon == eps]
        b0 = max(scales, default=0.0)
        out.append(min(eps / 2.0, snapping_margin(gap, b0)))
    return tuple(out)


def _within_margin(c: Any, gap: float, margins: Mapping[float, float]) -> Any:
    """``c``, or a Skipped row when its scale does not keep ``2 delta / b`` within the margin of
    its budget, or it is not Laplace noise (the snapping bound is for Laplace kernels)."""
    if isinstance(c, Skipped) or c.epsilon not in margins or c.prior_set is None:
        return c
    if not isinstance(c, Calibration) or c.noise != "laplace":
        return Skipped(
            c.mechanism, c.epsilon, "declared bounds: the interval is checked for Laplace noise only"
        )
    if snapping_margin(gap, c.scale) > margins[c.epsilon] * (1 + 1e-12):
        return Skipped(
            c.mechanism, c.epsilon,
            f"declared bounds: scale {c.scale:.6g} leaves 2 delta / b above {margins[c.epsilon]:.3g}",
        )  # fmt: skip
    return c


#: A scale at which every noisy column is flat (``Laplace(1e12 w_k)``): the loss left is the kept
#: columns' own, up to about ``1e-12`` of each column's range.
KEPT_ALONE_SCALE = 1e12


def refuse_kept_alone(estimated: EstimatedJointPriors, keep: Sequence[str], epsilon: float) -> None:
    """Refuse, before any noise is drawn or anything written, columns kept in clear, and patterns
    of missing numbers (released as they are, :attr:`~pufferfish.priors.joint.Metric.missing`),
    whose own loss exceeds ``epsilon``: no noise on the released columns can hide them (issue 41).

    The decision is the exact check at :data:`KEPT_ALONE_SCALE` (over the prior sets when there
    are some); the message has one line per kept column with its loss at the point estimate and
    the value that decides it (``relationship: loss inf ('Husband' occurs only with
    Married-civ-spouse)``), and one per numeric column with missing cells (``age: missing cells:
    loss 0.615 at the estimate (rates 0.0766 vs 0.0414)``).

    Raises
    ------
    DataError
        When the kept columns alone exceed ``epsilon``.
    """
    from pufferfish.calibration import check_pairs

    chk = check_pairs(estimated.scenario, "laplace", KEPT_ALONE_SCALE, epsilon, 0.0)
    if chk.passes(epsilon):
        return
    lines = []
    (prior,) = estimated.scenario.priors
    for name in keep:
        k = estimated.columns.index(name)
        labels = estimated.labels[k]
        worst = (0.0, "")
        for a, b in estimated.scenario.pairs:
            p, q = (_marginal(prior.conditionals[s], k, len(labels)) for s in (a, b))
            for code, (x, y) in enumerate(zip(p, q, strict=True)):
                shown = label_text(labels[code])
                if (x > 0) != (y > 0) and worst[0] < math.inf:
                    worst = (math.inf, f"{shown!r} occurs only with {a if x > 0 else b}")
                elif x > 0 and y > 0 and abs(math.log(x / y)) > worst[0]:
                    worst = (abs(math.log(x / y)), f"{shown!r}: {x:.4g} vs {y:.4g}")
        lines.append(f"{name}: loss {worst[0]:.6g} at the estimate ({worst[1]})")
    for k in (k for k, atom in enumerate(estimated.missing_atoms) if atom):
        for a, b in estimated.scenario.pairs:
            x, y = (_atom_rate(prior.conditionals[s], k) for s in (a, b))
            loss = math.inf if (x > 0) != (y > 0) else abs(math.log(x / y)) if x > 0 else 0.0
            lines.append(f"{estimated.columns[k]}: missing cells: loss {loss:.6g} at the estimate for "
                         f"{a} vs {b} (rates {x:.4g} vs {y:.4g})")  # fmt: skip
    lines += _pattern_line(estimated)
    why = ""
    if prior.sets is not None:
        why = (
            "; the prior sets hold priors the values released as they are tell apart beyond epsilon, "
            "e.g. without mass on a value for one secret: give --prior-set none for the estimate, or keep "
            "fewer values"
        )
    raise DataError(
        f"{_released_as_is(bool(keep), len(lines) > len(keep))} alone exceed epsilon {epsilon:g} (exact loss "
        f"{chk.value:.6g} over the "
        f"priors checked{why}), whatever the noise on the others: " + "; ".join(lines)
    )


def _released_as_is(kept: bool, missing: bool) -> str:
    """What a release publishes as it is, in words: the kept columns, the missing cells, or both."""
    what = [w for w, on in (("the columns kept in clear", kept), ("the missing numbers", missing)) if on]
    return " and ".join(what)


def _pattern_line(estimated: EstimatedJointPriors) -> list[str]:
    """With two or more numeric columns with missing cells: the pattern of missing columns whose
    rates differ most between the secrets of a pair (rare patterns decide), one line."""
    cols = [k for k, atom in enumerate(estimated.missing_atoms) if atom]
    if len(cols) < 2:
        return []
    (prior,) = estimated.scenario.priors
    worst = (-1.0, "")
    for a, b in estimated.scenario.pairs:
        rates = []
        for s in (a, b):
            p: Any = prior.conditionals[s]
            gone = p.support[:, cols] == MISSING_NUMBER  # (tuples, atoms)
            keys = [tuple(row) for row in gone]
            rates.append({key: float(p.pmf[[k == key for k in keys]].sum()) for key in set(keys)})
        for key in set(rates[0]) | set(rates[1]):
            x, y = rates[0].get(key, 0.0), rates[1].get(key, 0.0)
            loss = math.inf if (x > 0) != (y > 0) else abs(math.log(x / y))
            if loss > worst[0]:
                names = ", ".join(estimated.columns[k] for k, g in zip(cols, key, strict=True) if g) or "none"
                worst = (loss, f"missing pattern ({names} missing): loss {loss:.6g} at the estimate for "
                               f"{a} vs {b} (rates {x:.4g} vs {y:.4g})")  # fmt: skip
    return [worst[1]]


def _atom_rate(prior: Any, k: int) -> float:
    """The mass of column ``k``'s missing atom under a joint prior."""
    return float(prior.pmf[prior.support[:, k] == MISSING_NUMBER].sum())


def _marginal(prior: Any, k: int, labels: int) -> list[float]:
    """The pmf of column ``k``'s label codes ``0..labels-1`` under a joint prior."""
    return np.bincount(prior.support[:, k].astype(np.intp), weights=prior.pmf, minlength=labels).tolist()


def _missing_atom(r: TableRequest, estimated: EstimatedPriors | EstimatedJointPriors) -> MissingAtom | None:
    """The missing atom of one numeric column with missing cells under ``missing="value"``
    (:mod:`pufferfish.tables.missing`), else None."""
    if not isinstance(estimated, EstimatedPriors) or estimated.categorical or r.missing != "value":
        return None
    if not estimated.missing_cells:
        return None
    absent = {g.secret: g for g in estimated.missing_groups}
    return missing_atom(r.public, estimated.groups, absent, r.pairs, r.prior_set)


def _composes(c: Any, atom: MissingAtom | None) -> Any:
    """``c``, or a Skipped row when the missing atom's split does not apply to its criterion (it
    composes eps-PP and (eps, delta)-PP, not mutual information)."""
    if atom is None or not isinstance(c, Calibration) or c.criterion != "eps-MI PP":
        return c
    return Skipped(c.mechanism, c.epsilon, "missing cells: their check composes with eps-PP, not eps-MI")


def _estimate_one_column(
    r: TableRequest,
) -> tuple[
    EstimatedPriors,
    Scenario,
    FittedPriors | None,
    EstimatedPriors | None,
    Utility | None,
    tuple[Mechanism, ...],
]:
    """One column's estimate: ``(priors with their sets, the point estimate's scenario, fitted
    priors or None, the released table's estimate with priors_from or None, the utility, the
    mechanisms narrowed to the column's set)``."""
    model, n_components = r.prior_model
    how = dict(
        secret=r.secret, public=r.public, pairs=r.pairs, order=r.order, weight=r.weight, engine=r.engine,
        spark=r.spark, missing=r.missing, labels=r.labels, bounds=r.bounds, impute=r.impute,
    )  # fmt: skip
    data: EstimatedPriors | None = None
    if r.priors_source is None:
        point = estimate_from_source(r.source, **how, public_kind=r.public_kind)
    else:  # the priors from another table, with the codes of both
        data, point = estimate_two_sources(r.source, r.priors_source, **how, public_kind=r.public_kind)
    fitted = None
    if model != "empirical":
        fitted = fit_priors(point, model, n_components=n_components, rng=r.fit_seed)
    kind, confidence, radius = r.prior_set
    cells = point.missing_cells + (0 if data is None else data.missing_cells)
    if not point.categorical and cells and r.missing == "value":  # the missing atom of a number
        if data is not None:
            raise DataError(
                f"public column {r.public!r} has missing numbers; their check needs the rates of the table "
                "released: drop --priors-from, or fill or drop those rows"
            )
        confidence = present_confidence(confidence)  # the other half goes to the rates' intervals
    # the sets live on the column's domain: every value of the table and every declared label
    estimated = with_prior_sets(point, kind, confidence=confidence, radius=radius, full_alphabet=True)
    released = point if data is None else data
    mechanisms = r.mechanisms
    if r.default_set:
        mappings = releases_labels(released, model, r.noise, r.delta)
        mechanisms = tuple(m for m in mechanisms if m.mapping == mappings)
    return estimated, point.scenario, fitted, data, _utility(released, point, r.utility), mechanisms


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
    default = DEFAULT_UTILITY_LABELS if released.categorical else DEFAULT_UTILITY_NUMBERS
    return Utility(kind or default, mu, support)


def _with_utility(c: Calibration | MappingCalibration | Skipped, util: Utility | None) -> Any:
    """An additive calibration with its expected accuracy and absolute error (others as they are)."""
    if util is None or not isinstance(c, Calibration):
        return c
    accuracy, abs_error = additive_utility(c.noise, c.scale, util)
    return replace(c, expected_accuracy=accuracy, expected_abs_error=abs_error)
