"""The numbers behind the HTML report's figures, computed before anything is drawn.

:func:`report_figures` calibrates the scale-versus-epsilon curves (and, with randomized
mappings, every mechanism's expected accuracy over the same budgets), evaluates the exact privacy
loss (or checked delta) over a range of scales and computes the first pair's transport plan;
:mod:`pufferfish.pipeline.report` and :mod:`pufferfish.pipeline.plots` only draw what they are
given. :func:`joint_report_figures` does the same for several public columns.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from pufferfish.calibration import REGISTRY, Calibration, MappingCalibration, Skipped, run_comparison
from pufferfish.calibration import check_pairs as check_privacy
from pufferfish.calibration.mapping import additive_utility
from pufferfish.priors.distributions import DiscretePrior
from pufferfish.priors.joint import Metric
from pufferfish.tables.model import EstimatedPriors
from pufferfish.transport.line import TransportPlan, kantorovich_plan

if TYPE_CHECKING:
    from pufferfish.pipeline.results import TableCalibration


@dataclass(frozen=True)
class ReportFigures:
    """The numbers behind the HTML report's figures, computed here so the report only draws.

    Attributes
    ----------
    epsilon : float
        Target epsilon of the figures.
    delta : float
        Target delta.
    noise : {"laplace", "gaussian"}
        Noise of the privacy-loss curve.
    comparison : tuple of Calibration or Skipped
        Every mechanism at ``epsilon`` (the report's table).
    epsilon_grid : tuple of float
        Budgets of the scale-versus-epsilon figure, ``eps/8, eps/4, ..., 4 eps`` (6 values).
    scale_curves : tuple of Calibration or Skipped
        The applicable mechanisms calibrated at every budget of ``epsilon_grid`` (seed 001 Fig 4).
    loss_scales, loss_values : numpy.ndarray, shape (40,)
        Scales (log-spaced around the mechanisms' scales) and the exact privacy loss (pure eps) or
        checked delta of ``noise`` at each (SPEC sec 2.1).
    plan : TransportPlan
        The Kantorovich plan of the first pair's empirical priors (seed 001 Fig 2a).
    released : tuple of ReleasedHistogram
        For a release: its released values binned per secret; empty otherwise.
    point_loss_values : numpy.ndarray or None, shape (40,)
        Under prior sets (``loss_values`` is then the worst case over them): the loss of the
        point estimates at the same scales; None without sets.
    accuracy_curves : tuple of (str, tuple of (float, float))
        Per mechanism (additive and mapping), its expected accuracy at each budget of
        ``epsilon_grid`` where it applies (:mod:`pufferfish.calibration.mapping`); empty
        without a randomized mapping in the comparison.
    matrix : MappingCalibration or None
        The mapping drawn as a heat map: the one released, else ``optimal-mapping`` at
        ``epsilon``; None without one.
    mapping_loss_curves : tuple of (str, tuple of (float, float))
        Per randomized mapping, its checked privacy loss (nats) at each budget of
        ``epsilon_grid``; empty without one.
    released_labels : bool
        :attr:`released` counts labels, one bin per code (a categorical column released by the
        mapping :attr:`matrix`), not binned numbers.
    """

    epsilon: float
    delta: float
    noise: str
    comparison: tuple[Calibration | MappingCalibration | Skipped, ...]
    epsilon_grid: tuple[float, ...]
    scale_curves: tuple[Calibration | MappingCalibration | Skipped, ...]
    loss_scales: np.ndarray
    loss_values: np.ndarray
    plan: TransportPlan
    released: tuple[Any, ...] = ()
    point_loss_values: np.ndarray | None = None
    accuracy_curves: tuple[tuple[str, tuple[tuple[float, float], ...]], ...] = ()
    matrix: MappingCalibration | None = None
    mapping_loss_curves: tuple[tuple[str, tuple[tuple[float, float], ...]], ...] = ()
    released_labels: bool = False

    @property
    def additive(self) -> bool:
        """Whether a mechanism that adds noise to the value is compared (else only mappings,
        which release labels: no scale, no transport plan, no loss against a scale)."""
        return any(isinstance(c, Calibration) for c in self.comparison)


def _secret_weights(table: TableCalibration) -> dict[str, float] | None:
    """The secrets' shares of one column's estimate (the eps-MI criterion's weights)."""
    est = table.estimated
    return est.secret_weights if isinstance(est, EstimatedPriors) else None


def loss_scale_grid(scales: Sequence[float], points: int = 40) -> np.ndarray:
    """The log-spaced scales of a loss-versus-scale figure: from a quarter of the smallest
    positive ``scales`` to twice the largest (``[0.25, 2]`` without any).

    Returns
    -------
    numpy.ndarray, shape (points,)
    """
    positive = [s for s in scales if s > 0]
    top, low = (max(positive), min(positive)) if positive else (1.0, 1.0)
    return np.geomspace(low / 4, top * 2, points)


#: Scales of the loss curve of several columns: each point is an exact check on the joint
#: alphabet (about 0.2 s for two diabetes columns over the L1 balls), the curve is smooth and
#: monotone, and the report should cost no more than the release it describes (issue 46).
JOINT_LOSS_POINTS = 12


def report_figures(
    table: TableCalibration,
    *,
    epsilon: float,
    noise: str,
    released: tuple[Any, ...] = (),
    chosen: MappingCalibration | None = None,
) -> ReportFigures:
    """Compute everything the HTML report draws: curves, plan and released histograms.

    Parameters
    ----------
    table : TableCalibration
        The calibration (of ``pufferfish calibrate`` or of a release).
    epsilon : float
        One of ``table.epsilons``: the figures' target.
    noise : {"laplace", "gaussian"}
        Noise of the privacy-loss curve (a release: the chosen mechanism's).
    released : tuple of ReleasedHistogram
        A release's binned output (:func:`~pufferfish.tables.histograms.released_histograms`).
    chosen : MappingCalibration, optional
        The mapping a release used (its heat map).

    Returns
    -------
    ReportFigures
    """
    comparison = table.at(epsilon)
    used = [c for c in comparison if isinstance(c, Calibration)]
    # eps/8, eps/4, ..., 4 eps: each budget is a calibration of every mechanism (the report's main
    # cost beside drawing; the curves are smooth on log axes)
    grid = [epsilon * 2.0**k for k in range(-3, 3)]
    mechs = tuple(dict.fromkeys(REGISTRY[c.mechanism] for c in used))  # optimal may come twice
    curves = (
        run_comparison(
            table.scenario,
            grid,
            mechs,
            delta=table.delta,
            noise=table.noise,
            secret_weights=_secret_weights(table),
        )
        if mechs
        else ()
    )
    # the loss against the scale of added noise: only when a mechanism adds noise (not for mappings)
    loss_scales = loss_scale_grid([c.scale for c in used if c.noise == noise]) if used else np.empty(0)
    loss_values = np.array(
        [check_privacy(table.scenario, noise, float(s), epsilon, table.delta).value for s in loss_scales]
    )
    point_values = None
    if table.scenario.robust and used:  # the point estimates' loss beside the worst case over the sets
        point = table.scenario.without_sets()
        point_values = np.array([check_privacy(point, noise, float(s), epsilon).value for s in loss_scales])
    mapped = [c for c in comparison if isinstance(c, MappingCalibration)]
    accuracy: tuple[tuple[str, tuple[tuple[float, float], ...]], ...] = ()
    mapping_loss: dict[str, list[tuple[float, float]]] = {}
    if mapped and table.utility is not None:
        util = table.utility
        map_curves = run_comparison(
            table.scenario, grid, tuple(REGISTRY[c.mechanism] for c in mapped), delta=table.delta,
            noise=table.noise, utility=util,
        )  # fmt: skip
        points: dict[str, list[tuple[float, float]]] = {}
        for c in (*curves, *map_curves):
            if isinstance(c, Calibration):
                points.setdefault(c.mechanism, []).append(
                    (c.epsilon, additive_utility(c.noise, c.scale, util)[0])
                )
            elif isinstance(c, MappingCalibration):
                points.setdefault(c.mechanism, []).append((c.epsilon, c.expected_accuracy))
                mapping_loss.setdefault(c.mechanism, []).append((c.epsilon, c.checked_loss))
        accuracy = tuple((name, tuple(pts)) for name, pts in points.items())
    matrix = chosen or next((c for c in mapped if c.mechanism == "optimal-mapping"), None)
    (a, b) = table.estimated.scenario.pairs[0]
    conditionals = table.estimated.scenario.priors[0].conditionals
    p_i, p_j = conditionals[a], conditionals[b]
    assert isinstance(p_i, DiscretePrior) and isinstance(p_j, DiscretePrior)
    return ReportFigures(
        epsilon=epsilon,
        delta=table.delta,
        noise=noise,
        comparison=comparison,
        epsilon_grid=tuple(grid),
        scale_curves=curves,
        loss_scales=loss_scales,
        loss_values=loss_values,
        plan=kantorovich_plan(p_i, p_j),
        released=released,
        point_loss_values=point_values,
        accuracy_curves=accuracy,
        matrix=matrix,
        mapping_loss_curves=tuple((name, tuple(pts)) for name, pts in mapping_loss.items()),
        released_labels=bool(released) and chosen is not None and table.estimated.categorical is True,
    )


@dataclass(frozen=True)
class JointReportFigures:
    """The numbers behind the HTML report of several public columns (issue 17).

    Attributes
    ----------
    epsilon : float
        Target epsilon of the figures.
    comparison : tuple of Calibration or Skipped
        Every mechanism at ``epsilon``.
    pair : (str, str)
        The first discriminative pair, whose plans are drawn.
    plans : tuple of VectorPlan
        Its W1-optimal plan of smallest largest distance (``kantorovich``) and its bottleneck
        plan (``bottleneck``), the plans of the ``kantorovich`` and ``wasserstein-inf``
        mechanisms (:func:`pufferfish.calibration.joint.joint_plan`).
    loss_scales, loss_values : numpy.ndarray, shape (JOINT_LOSS_POINTS,)
        Product-Laplace scales ``b`` (log-spaced around the Laplace mechanisms' scales) and the
        exact privacy loss at each (:func:`pufferfish.loss.product.product_laplace_loss`, every pair).
    released : tuple of (str, tuple of ReleasedHistogram)
        For a release: per public column, its released values binned per secret; empty otherwise.
    """

    epsilon: float
    comparison: tuple[Calibration | MappingCalibration | Skipped, ...]
    pair: tuple[str, str]
    plans: tuple[Any, ...]
    loss_scales: np.ndarray
    loss_values: np.ndarray
    released: tuple[tuple[str, tuple[Any, ...]], ...] = ()


def joint_report_figures(
    table: TableCalibration, *, epsilon: float, output: str | Path | None = None, source: Any = None
) -> JointReportFigures:
    """Compute what the HTML report of several columns draws: plans, loss curve, released values.

    Parameters
    ----------
    table : TableCalibration
        The joint calibration (of ``calibrate --public a,b`` or of a release).
    epsilon : float
        One of the table's epsilons: the figures' target.
    output : str or pathlib.Path, optional
        A release's output: its released columns are binned per secret
        (:func:`pufferfish.tables.histograms.column_histograms`; a categorical column's labels
        counted, :func:`~pufferfish.tables.histograms.label_histograms`).
    source : TableSource, optional
        The table released (its secret, matched with the output row by row); with ``output``.

    Returns
    -------
    JointReportFigures
    """
    from pufferfish.calibration.joint import joint_plan
    from pufferfish.tables.histograms import column_histograms, label_histograms

    comparison = tuple(c for c in table.comparison if c.epsilon == epsilon)
    pair = table.scenario.pairs[0]
    priors, _ = table.drawn_priors()  # a missing number drawn beyond the column's values
    metric = table.scenario.metric
    assert metric is not None, "joint scenarios carry a metric"
    # a kept column (identity channel) is infinitely far from another label: its plans are drawn
    # with the Hamming distance instead (the figure shows how mass moves; no scale is read from it)
    drawn = Metric(metric.units, metric.categories)
    plans = tuple(
        joint_plan(priors[pair[0]], priors[pair[1]], drawn, k) for k in ("kantorovich", "bottleneck")
    )
    checked = [c for c in comparison if isinstance(c, Calibration) and c.numerically_checked]
    loss_scales = loss_scale_grid([c.scale for c in checked if c.noise == "laplace"], JOINT_LOSS_POINTS)
    with ThreadPoolExecutor(max_workers=2) as pool:  # NumPy releases the GIL: two checks at a time
        loss_values = np.array(
            list(
                pool.map(
                    lambda s: check_privacy(table.scenario, "laplace", float(s), epsilon, 0.0).value,
                    loss_scales,
                )
            )
        )
    released: tuple[tuple[str, tuple[Any, ...]], ...] = ()
    if output is not None and source is not None:
        secret = str(table.inputs["secret"])
        released = tuple(
            (
                c,
                label_histograms(
                    output, source, secret_column=secret, column=c, labels=labels, secrets=list(priors)
                )
                if cat
                else column_histograms(output, source, secret_column=secret, column=c, secrets=list(priors)),
            )
            for c, cat, labels in zip(table.columns, table.categorical, table.labels, strict=True)
        )
    return JointReportFigures(epsilon, comparison, pair, plans, loss_scales, loss_values, released)
