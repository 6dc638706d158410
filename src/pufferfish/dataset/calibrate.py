"""Calibrate the noise of dataset-level statistics: every mechanism of the registry on each
statistic's exact priors, each scale checked exactly (SPEC sec 2.1), group DP beside them; and
the theorems that need no exact distribution (``row-composition``, ``wasserstein-coupling``) on
the statistics together and on a statistic whose exact distribution is too large.

:func:`calibrate_property` validates its arguments once into a :class:`PropertyRequest`, reads the
table once (:func:`~pufferfish.dataset.table.read_property_table`) and runs the registry's
comparison (:func:`~pufferfish.calibration.registry.run_comparison`) on
:func:`~pufferfish.dataset.model.property_scenario` of each statistic. It is the API behind
``pufferfish property calibrate``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pufferfish._checks import check_delta, check_epsilons
from pufferfish.calibration.registry import Result, check_mechanisms, run_comparison
from pufferfish.calibration.result import Skipped
from pufferfish.dataset.composition import composition_scales
from pufferfish.dataset.coupling import vector_scale
from pufferfish.dataset.model import (
    DATASET_GAUSSIAN_MECHANISMS,
    DATASET_MECHANISMS,
    PRIOR_NAME,
    WEIGHTINGS,
    PropertyModel,
    joint_scenario,
    noise_weights,
    property_scenario,
)
from pufferfish.dataset.spec import PropertySpec, StatisticSpec, parse_shares, parse_statistics
from pufferfish.dataset.statistic import StatisticTooLarge
from pufferfish.dataset.table import read_property_table
from pufferfish.loss.density import check_noise
from pufferfish.pipeline.public import confidential
from pufferfish.priors.scenario import Scenario
from pufferfish.priors.sets import PRIOR_SET_KINDS

#: The mechanisms compared on two counts together (the transport plans of 10,201 x 10,201 pairs
#: would need about 9 GiB: ``kantorovich``, ``wasserstein-inf`` and ``relaxed`` are left out).
JOINT_COUNT_MECHANISMS = (
    "group-dp", "wasserstein-coupling", "row-composition", "l1", "optimal", "analytic-gaussian",
)  # fmt: skip

#: What a dataset-level calibration's JSON and report hold.
DATASET_CONFIDENTIAL = (
    "CONFIDENTIAL: this holds the table's own statistics, its share of rows with the property (the "
    "secret itself) and distributions built from its rows. Do not publish it: publish the output file "
    "of pufferfish property release."
)


@dataclass(frozen=True)
class PropertyRequest:
    """A dataset-level calibration, every argument checked (:func:`calibrate_property`).

    Attributes
    ----------
    data : Any
        The table (a path, a shipped data set name or a DataFrame).
    prop : PropertySpec
        The property.
    statistics : tuple of StatisticSpec
    shares : tuple of float
    rows : int or None
        ``n`` (None: the table's rows kept).
    epsilons : tuple of float
    delta : float
    noise : {"laplace", "gaussian"}
    mechanisms : tuple of str
        Registry names.
    weights : {"rows", "l2"}
        How statistics released together share the noise
        (:data:`~pufferfish.dataset.model.WEIGHTINGS`).
    prior_set : {"none", "dkw", "l1"}
    confidence : float
        As :class:`~pufferfish.dataset.model.PropertyModel`.
    """

    data: Any
    prop: PropertySpec
    statistics: tuple[StatisticSpec, ...]
    shares: tuple[float, ...]
    rows: int | None
    epsilons: tuple[float, ...]
    delta: float
    noise: str
    mechanisms: tuple[str, ...]
    weights: str = "rows"
    prior_set: str = "none"
    confidence: float = 0.95


@dataclass(frozen=True)
class TheoremScales:
    """Product Laplace scales certified by a theorem without the statistics' exact (joint)
    distribution: ``row-composition`` (:mod:`pufferfish.dataset.composition`) or
    ``wasserstein-coupling`` (:mod:`pufferfish.dataset.coupling`).

    Attributes
    ----------
    queries : tuple of str
        The statistics released together (one: a statistic whose exact distribution is too large).
    mechanism : str
    epsilon : float
    scales : tuple of float
        The Laplace scale of each statistic (its unit).
    loss : float
        The theorem's bound on the loss at these scales (<= ``epsilon``).
    checked : str
        What the guarantee rests on.
    """

    queries: tuple[str, ...]
    mechanism: str
    epsilon: float
    scales: tuple[float, ...]
    loss: float
    checked: str

    @property
    def l2_error(self) -> float:
        """``sqrt(2 sum_j s_j^2)``: the root mean square of the noise's L2 norm."""
        return math.sqrt(2.0 * math.fsum(s * s for s in self.scales))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, with ``checked_for`` as :func:`result_row`."""
        return {
            "queries": list(self.queries), "mechanism": self.mechanism, "epsilon": self.epsilon,
            "noise": "laplace", "delta": 0.0, "scales": list(self.scales), "l2_error_rms": self.l2_error,
            "loss_bound": self.loss, "checked": self.checked,
            "checked_for": f"the point estimate ({PRIOR_NAME}: the table's rows as drawn)",
        }  # fmt: skip


def theorem_scales(
    model: PropertyModel, statistics: Sequence[int], epsilon: float, weights: str = "rows"
) -> list[TheoremScales]:
    """``group-dp``, ``wasserstein-coupling`` and ``row-composition`` on ``statistics`` together
    at ``epsilon``, product Laplace, each one's noise shared by
    :func:`~pufferfish.dataset.model.noise_weights` (``weights``) of its own first order: group
    DP's change of all ``n`` rows, the coupling's change of one row, ``row-composition``'s
    :func:`~pufferfish.dataset.composition.first_order_weights`.

    Parameters
    ----------
    model : PropertyModel
    statistics : sequence of int
        0-based indices of the statistics released together (one or more).
    epsilon : float
        > 0 (checked at the edge).
    weights : {"rows", "l2"}
        :data:`~pufferfish.dataset.model.WEIGHTINGS` (checked at the edge).

    Returns
    -------
    list of TheoremScales
        In that order (most noise first, as the registry's comparisons); with a prior set
        without ``wasserstein-coupling`` (its coupling pairs the point estimate's rows).
    """
    queries = tuple(model.values(k).statistic.text for k in statistics)
    sens = [model.group_dp_sensitivity(k) for k in statistics]
    units = noise_weights(model, statistics, sens, weights)
    b = math.fsum(x / w for x, w in zip(sens, units, strict=True)) / epsilon
    group = tuple(b * w for w in units)
    moves = ", ".join(f"{x:g}" for x in sens)
    why = f"group DP over all {model.rows} rows: the statistics move by at most {moves}"
    comp = composition_scales(model, epsilon, statistics, weighting=weights)
    out = [TheoremScales(queries, "group-dp", epsilon, group, epsilon, why)]
    if model.prior_set == "none":  # the coupling pairs the point estimate's rows
        coupled = vector_scale(model, epsilon, statistics, weighting=weights)
        out.append(
            TheoremScales(
                queries, "wasserstein-coupling", epsilon, coupled.scales, epsilon, coupled.sentence()
            )
        )
    out.append(TheoremScales(queries, "row-composition", epsilon, comp.scales, comp.loss, comp.sentence()))
    return out


@dataclass(frozen=True)
class PropertyComparison:
    """The calibrations of each statistic of a dataset-level model.

    Attributes
    ----------
    model : PropertyModel
    results : tuple of tuple of (Calibration or Skipped)
        One tuple per statistic (in the order of ``model.table.values``), as
        :func:`~pufferfish.calibration.compare` returns them (by epsilon, then mechanism).
    joint : tuple of (Calibration or Skipped)
        Two count statistics released together, checked exactly on their joint distribution
        (:func:`~pufferfish.dataset.model.joint_scenario`; each count gets ``Laplace(scale)``);
        empty when that scenario does not apply.
    theorems : tuple of TheoremScales
        Laplace, pure eps: the statistics together (two or more), and each statistic whose exact
        distribution is too large (its ``results`` are then skipped, with the reason).
    scenarios : tuple of (Scenario or None)
        The scenario each statistic's results were computed on (its exact priors; None when too
        large), kept for the report (:mod:`pufferfish.dataset.report`), which draws them instead
        of computing them again.
    """

    model: PropertyModel
    results: tuple[tuple[Result | Skipped, ...], ...]
    joint: tuple[Result | Skipped, ...] = ()
    theorems: tuple[TheoremScales, ...] = ()
    scenarios: tuple[Scenario | None, ...] = field(default=(), compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``confidential`` and what it holds (:data:`DATASET_CONFIDENTIAL`), the model,
        then per statistic its table value and rows of results (each a calibration's fields and
        ``checked_for``: which priors the check covers)."""
        out = []
        for values, rows in zip(self.model.table.values, self.results, strict=True):
            out.append(
                {
                    "query": values.statistic.text,
                    "table_value": values.total,
                    "per_row_range": values.value_range,
                    "results": [result_row(r) for r in rows],
                }
            )
        body: dict[str, Any] = {"model": self.model.describe(), "statistics": out, "joint": None}
        if self.joint:
            names = [v.statistic.text for v in self.model.table.values]
            body["joint"] = {"queries": names, "results": [result_row(r) for r in self.joint]}
        body["theorems"] = [t.to_dict() for t in self.theorems]
        return confidential(body, DATASET_CONFIDENTIAL)


def result_row(result: Result | Skipped) -> dict[str, Any]:
    """A result's JSON row with ``checked_for``: the priors its guarantee is stated for.

    Group DP holds for every prior whose per-row values lie in the table's range; every other
    scale is checked on the point estimate (:data:`~pufferfish.dataset.model.PRIOR_NAME`: the
    table's rows with and without the property, as drawn), not for a set of conditionals around
    it.
    """
    row: dict[str, Any] = result.to_dict()
    if isinstance(result, Skipped):
        return row | {"checked_for": None}
    if result.mechanism == "group-dp":
        return row | {"checked_for": "every prior with per-row values in the table's range (group DP)"}
    return row | {"checked_for": f"the point estimate ({PRIOR_NAME}: the table's rows as drawn)"}


def calibrate_property(
    data: Any,
    *,
    property: str | PropertySpec,
    epsilon: float | Sequence[float],
    queries: str | Sequence[str | StatisticSpec] = "count",
    shares: str | Sequence[float] = (0.45, 0.55),
    rows: int | None = None,
    delta: float = 0.0,
    noise: str = "laplace",
    mechanisms: Sequence[str] | None = None,
    weights: str = "rows",
    prior_set: str = "none",
    confidence: float = 0.95,
) -> PropertyComparison:
    """Noise scales protecting the share of rows with a property, for each statistic.

    Parameters
    ----------
    data : str, pathlib.Path or pandas.DataFrame
        The table whose rows give the conditional distributions (shipped ``adult``, CSV, Parquet).
    property : str or PropertySpec
        ``COLUMN=VALUE`` (as written), ``COLUMN!=VALUE`` or ``COLUMN>=x`` (also ``>``, ``<=``,
        ``<``).
    epsilon : float or sequence of float
        Each finite and > 0 (nats).
    queries : str or sequence
        ``"count,mean:age"``, or a sequence of such texts or :class:`StatisticSpec`.
    shares : str or sequence of float
        The secrets ``theta``: at least two distinct values in [0, 1]; every pair is
        discriminative (default 0.45 and 0.55).
    rows : int, optional
        ``n``, the rows of the data set to be released (>= 1; default: the table's rows kept).
    delta : float
        In [0, 1); with Gaussian noise.
    noise : {"laplace", "gaussian"}
    mechanisms : sequence of str, optional
        Registry names (default :data:`~pufferfish.dataset.model.DATASET_MECHANISMS`, or
        :data:`~pufferfish.dataset.model.DATASET_GAUSSIAN_MECHANISMS` with Gaussian noise).
    weights : {"rows", "l2"}
        How the theorems' product Laplace shares the noise among statistics together
        (:data:`~pufferfish.dataset.model.WEIGHTINGS`; default ``rows``).
    prior_set : {"none", "dkw", "l1"}
        ``none`` (default): the point estimate of the conditionals. ``dkw`` or ``l1``: every pair
        in confidence sets around them (:meth:`~pufferfish.dataset.model.PropertyModel.row_sets`),
        certified by the theorems only (Laplace, delta 0): the exact mechanisms are listed as not
        run.
    confidence : float
        The sets' confidence level, in (0, 1) (default 0.95).

    Returns
    -------
    PropertyComparison

    Raises
    ------
    ValueError
        On a bad argument (named), or a statistic whose exact distribution is too large
        (:data:`~pufferfish.dataset.statistic.MAX_SUM_POINTS`).
    DataError
        If the table cannot be read or does not fit the property and queries
        (:func:`~pufferfish.dataset.table.read_property_table`).

    Notes
    -----
    SPEC sec 8. The count of ``n = 100`` rows at shares 0.45 vs 0.55 needs Laplace scale 19.996 /
    9.992 / 4.983 at eps 0.5 / 1 / 2 (``optimal``), against group DP's 200 / 100 / 50.
    """
    request = property_request(
        data,
        property,
        epsilon,
        queries,
        shares,
        rows,
        delta,
        noise,
        mechanisms,
        weights,
        prior_set,
        confidence,
    )
    return run_property_calibration(request)


def property_request(
    data: Any,
    prop: str | PropertySpec,
    epsilon: float | Sequence[float],
    queries: str | Sequence[str | StatisticSpec],
    shares: str | Sequence[float],
    rows: int | None,
    delta: float,
    noise: str,
    mechanisms: Sequence[str] | None,
    weights: str = "rows",
    prior_set: str = "none",
    confidence: float = 0.95,
) -> PropertyRequest:
    """Check every argument of :func:`calibrate_property` once (same rules and errors)."""
    if weights not in WEIGHTINGS:
        raise ValueError(f"weights must be one of {', '.join(WEIGHTINGS)}, got {weights!r}")
    if prior_set not in PRIOR_SET_KINDS:
        raise ValueError(f"prior_set must be one of {', '.join(PRIOR_SET_KINDS)}, got {prior_set!r}")
    if isinstance(confidence, bool) or not isinstance(confidence, float | int) or not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    if prior_set != "none" and (noise != "laplace" or delta != 0.0):
        raise ValueError(
            f"a prior set is certified by row-composition (Laplace noise, delta = 0), got noise {noise!r}, "
            f"delta {delta!r}"
        )
    spec = prop if isinstance(prop, PropertySpec) else PropertySpec.parse(prop)
    if isinstance(queries, str):
        statistics = parse_statistics(queries)
    else:
        statistics = tuple(q if isinstance(q, StatisticSpec) else StatisticSpec.parse(q) for q in queries)
        if not statistics:
            raise ValueError("queries must name at least one statistic, got none")
    if isinstance(shares, str):
        share_values = parse_shares(shares)
    else:
        share_values = parse_shares(",".join(repr(float(s)) for s in shares))
    if rows is not None and (isinstance(rows, bool) or not isinstance(rows, int) or rows < 1):
        raise ValueError(f"rows must be an integer >= 1, got {rows!r}")
    eps = check_epsilons([epsilon] if isinstance(epsilon, (int, float)) else epsilon)
    noise = check_noise(noise)
    d = check_delta(delta)
    default = DATASET_GAUSSIAN_MECHANISMS if noise == "gaussian" else DATASET_MECHANISMS
    names = tuple(mechanisms) if mechanisms is not None else default
    check_mechanisms(names)
    return PropertyRequest(
        data,
        spec,
        statistics,
        share_values,
        rows,
        eps,
        d,
        noise,
        names,
        weights,
        prior_set,
        float(confidence),
    )


def run_property_calibration(request: PropertyRequest) -> PropertyComparison:
    """:func:`calibrate_property` on a checked request."""
    table = read_property_table(request.data, request.prop, request.statistics)
    rows = request.rows if request.rows is not None else table.rows
    model = PropertyModel(table, request.shares, rows, request.prior_set, request.confidence)
    mechs = check_mechanisms(request.mechanisms)
    laplace = request.noise == "laplace" and request.delta == 0.0
    scenarios: list[Scenario | None] = []
    results: list[tuple[Result | Skipped, ...]] = []
    theorems: list[TheoremScales] = []
    for k in range(len(table.values)):
        scenario, reason = _exact_scenario(model, k, laplace)
        if scenario is None:
            results.append(tuple(Skipped(m, e, reason) for e in request.epsilons for m in request.mechanisms))
            theorems += [t for e in request.epsilons for t in theorem_scales(model, [k], e, request.weights)]
            scenarios.append(None)
            continue
        scenarios.append(scenario)
        found = run_comparison(scenario, request.epsilons, mechs, delta=request.delta, noise=request.noise)
        results.append(found)
    if laplace and len(table.values) > 1:
        every = range(len(table.values))
        theorems += [t for e in request.epsilons for t in theorem_scales(model, every, e, request.weights)]
    joint: tuple[Result | Skipped, ...] = ()
    scenario2 = joint_scenario(model) if model.prior_set == "none" else None
    if scenario2 is not None:
        named = tuple(m for m in request.mechanisms if m in JOINT_COUNT_MECHANISMS) or ("optimal",)
        joint = run_comparison(
            scenario2, request.epsilons, check_mechanisms(named), delta=request.delta, noise=request.noise
        )
    return PropertyComparison(model, tuple(results), joint, tuple(theorems), tuple(scenarios))


def _exact_scenario(model: PropertyModel, k: int, laplace: bool) -> tuple[Scenario | None, str]:
    """Statistic ``k``'s scenario of exact priors, or None and why the exact mechanisms do not run
    on it: a prior set (the exact check is the point estimate's), or a distribution too large
    (with Laplace noise, pure eps; otherwise :class:`StatisticTooLarge` is raised)."""
    if model.prior_set != "none":
        return None, (
            "not run: the exact check is the point estimate's, not every prior of the "
            f"{model.prior_set} sets; the theorems' scales are listed apart"
        )
    try:
        return property_scenario(model, k), ""
    except StatisticTooLarge as exc:
        if not laplace:
            raise
        return None, f"needs the exact distribution: {exc}; the theorems' scales are listed apart"
