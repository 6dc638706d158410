"""The figures of the HTML report, drawn by matplotlib (``Figure`` objects, no pyplot) from
precomputed results only (:mod:`pufferfish.pipeline.figures`), as inline SVG text: for one public
column the priors per secret, the Kantorovich plan, scale versus epsilon, loss versus scale, a
randomized mapping's matrix, accuracy versus epsilon and the released distribution; for several
columns the joint priors (heat maps on two columns, marginals beyond), the plans' moves, the
distance moved under each plan, loss versus the scale ``b`` and each column's released values.

Figures with thousands of cells or segments are rasterised inside their SVG (an embedded PNG):
the page of the README's Adult release of two columns (two priors of about 2,000 tuples) is under
1 MB (``tests/test_joint_table.py``) instead of 5.6 MB of vector paths.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from matplotlib.colors import LogNorm
from matplotlib.figure import Figure

from pufferfish.calibration import Calibration, MappingCalibration
from pufferfish.pipeline.page import fmt, log_axes, svg_text
from pufferfish.priors.distributions import DiscretePrior, GaussianMixturePrior
from pufferfish.tables.estimate import EstimatedPriors
from pufferfish.tables.fit import FittedPriors
from pufferfish.tables.model import label_text
from pufferfish.transport.line import TransportPlan

if TYPE_CHECKING:
    from pufferfish.pipeline.figures import JointReportFigures, ReportFigures
    from pufferfish.pipeline.results import TableCalibration
    from pufferfish.priors.joint import JointPrior
    from pufferfish.tables.histograms import ReleasedHistogram

__all__ = [
    "MATRIX_FIGURE_MAX_K",
    "accuracy_figure",
    "joint_loss_figure",
    "joint_plans_figure",
    "joint_priors_caption",
    "joint_priors_figure",
    "joint_release_figure",
    "label_release_figure",
    "loss_scale_figure",
    "mapping_loss_figure",
    "matrix_figure",
    "plan_distances_figure",
    "plan_figure",
    "priors_figure",
    "release_figure",
    "scale_epsilon_figure",
]


def priors_figure(estimated: EstimatedPriors, fitted: FittedPriors | None) -> str:
    """SVG of the empirical prior per secret (bars), with the fitted density if any."""
    conditionals = estimated.scenario.priors[0].conditionals
    secrets = list(conditionals)
    fig = Figure(figsize=(3.6 * len(secrets), 2.8))
    axes = fig.subplots(1, len(secrets), sharey=True, squeeze=False)
    labels = [label_text(label) for label, _ in estimated.mapping]
    for ax, s in zip(axes[0], secrets, strict=True):
        prior = conditionals[s]
        assert isinstance(prior, DiscretePrior)
        width = 0.8 if estimated.categorical else _bar_width(prior.support)
        many = prior.support.size > RASTER_BARS  # hundreds of bars: one image in the SVG (fast to write)
        ax.bar(
            prior.support,
            prior.pmf,
            width=width,
            color="#4477aa",
            label="empirical",
            zorder=2,
            rasterized=many,
        )
        if fitted is not None:
            from scipy.stats import norm

            model = fitted.scenario.priors[0].conditionals[s]
            assert isinstance(model, GaussianMixturePrior)
            grid = np.linspace(prior.support[0], prior.support[-1], 400)
            density = sum(
                w * norm.pdf(grid, m, sd)
                for w, m, sd in zip(model.weights, model.means, model.stds, strict=True)
            )
            ax.plot(grid, density * width, color="#cc6677", label=f"fitted ({fitted.model})")
        sets = estimated.scenario.priors[0].sets
        if sets is not None:  # the range of P(x) over the secret's prior set, at each point
            from pufferfish.loss.robust import extremes

            ps = sets[s]
            ext = extremes(ps, 0.0)
            ax.vlines(
                ps.alphabet,
                np.exp(ext.log_min),
                np.exp(ext.log_max),
                color="#cc6677",
                lw=1.0,
                alpha=0.6,
                zorder=1,  # behind the bars
                label=f"{ps.kind} set: range of P(x)",
                rasterized=many,
            )
        if fitted is not None or sets is not None:  # above the axes: never over the tallest bar
            ax.legend(fontsize=7, loc="lower center", bbox_to_anchor=(0.5, 1.08), ncols=2, frameon=False)
        ax.set_title(f"P(x | {s})", fontsize=9)
        categorical_axis = estimated.categorical and len(labels) <= 20
        coded = estimated.categorical and not categorical_axis  # too many labels: codes on the axis
        ax.set_xlabel(estimated.public_column + (" (code)" if coded else ""), fontsize=8)
        if categorical_axis:
            ax.set_xticks(range(len(labels)))
            ax.set_xticklabels(labels, rotation=60, ha="right", fontsize=6)
    axes[0][0].set_ylabel("probability", fontsize=8)
    return svg_text(fig)


#: Bars beyond which a figure draws them as one image inside its SVG (the page stays small and fast
#: to write; the axes, labels and legend stay vector).
RASTER_BARS = 60


def _bar_width(support: np.ndarray) -> float:
    gaps = np.diff(support)
    return float(0.8 * gaps.min()) if gaps.size else 0.8


def plan_figure(
    plan: TransportPlan, p_i: DiscretePrior, p_j: DiscretePrior, a: str, b: str
) -> tuple[str, str]:
    """SVG heat map of the Kantorovich plan between the priors of secrets a and b, and its caption.

    Seed 001 Fig 2a; ``plan`` from :func:`~pufferfish.transport.line.kantorovich_plan`.
    """
    fig = Figure(figsize=(4.4, 3.8))
    ax = fig.subplots()
    if p_i.support.size <= 60 and p_j.support.size <= 60:
        dense = plan.to_dense(p_i.support, p_j.support)
        shown = np.where(dense > 0, dense, np.nan)
        img = ax.imshow(shown, origin="lower", cmap="viridis", aspect="auto")
        ax.set_xticks(range(p_j.support.size))
        ax.set_yticks(range(p_i.support.size))
        ax.set_xticklabels([fmt(v) for v in p_j.support], fontsize=6, rotation=90)
        ax.set_yticklabels([fmt(v) for v in p_i.support], fontsize=6)
        how = "cells are atoms pi(x, x') > 0 (blank: 0)"
    else:
        hist, xe, ye = np.histogram2d(plan.source, plan.target, bins=80, weights=plan.mass)
        img = ax.imshow(
            np.where(hist.T > 0, hist.T, np.nan),
            origin="lower",
            cmap="viridis",
            aspect="auto",
            extent=(xe[0], xe[-1], ye[0], ye[-1]),
        )
        how = "mass of the plan's atoms binned on an 80 x 80 grid"
    fig.colorbar(img, ax=ax, label="pi(x, x')")
    ax.set_xlabel(f"x' ~ P(. | {b})", fontsize=8)
    ax.set_ylabel(f"x ~ P(. | {a})", fontsize=8)
    caption = (
        f"Kantorovich optimal transport plan between P(. | {a}) and P(. | {b}) (seed 001 Fig 2a; "
        f"seed 002 Lemma 1): {how}. Largest displacement {fmt(plan.max_displacement)}."
    )
    return svg_text(fig), caption


def scale_epsilon_figure(figures: ReportFigures) -> str:
    """Scale versus epsilon for every applicable mechanism (seed 001 Fig 4)."""
    fig = Figure(figsize=(5.6, 3.6))
    ax = fig.subplots()
    mechanisms = [c.mechanism for c in figures.comparison if isinstance(c, Calibration)]
    for mech in mechanisms:
        pts = [
            (c.epsilon, c.scale)
            for c in figures.scale_curves
            if isinstance(c, Calibration) and c.mechanism == mech and c.scale > 0
        ]
        if pts:
            xs, ys = zip(*pts, strict=True)
            ax.plot(xs, ys, marker="o", markersize=3, label=mech)
    return _against_epsilon(fig, ax, figures.epsilon, "noise scale (Laplace b or Gaussian sigma)", log_y=True)


def loss_scale_figure(figures: ReportFigures) -> tuple[str, str]:
    """Exact privacy loss (or delta) versus the scale, target marked (SPEC sec 2.1)."""
    epsilon, delta, noise = figures.epsilon, figures.delta, figures.noise
    fig = Figure(figsize=(5.6, 3.6))
    ax = fig.subplots()
    robust = figures.point_loss_values is not None
    label = "worst case over the prior sets" if robust else "exact loss"
    ax.plot(figures.loss_scales, figures.loss_values, color="#4477aa", label=label)
    if figures.point_loss_values is not None:
        ax.plot(figures.loss_scales, figures.point_loss_values, color="#4477aa", linestyle=":",
                label="point estimate only")  # fmt: skip
    target = epsilon if delta == 0.0 else delta
    what = "exact privacy loss (nats)" if delta == 0.0 else f"checked delta at eps = {fmt(epsilon)}"
    ax.axhline(target, color="#cc6677", linestyle="--", label=f"target {'eps' if delta == 0 else 'delta'}")
    for c in figures.comparison:
        if isinstance(c, Calibration) and c.noise == noise and c.scale > 0:
            ax.axvline(c.scale, color="grey", linewidth=0.6)
            ax.text(c.scale, target, c.mechanism, rotation=90, fontsize=6, va="bottom")
    log_axes(ax, x=True)
    if delta > 0:
        log_axes(ax, y=True)
    ax.set_xlabel(f"{noise} scale")
    ax.set_ylabel(what)
    ax.legend(fontsize=7)
    caption = (
        f"{what.capitalize()} of {noise} noise against its scale, with the target marked and each "
        "mechanism's scale as a vertical line: a scale passes where the curve is at or below the "
        "target (SPEC sec 2.1)."
        + (
            " The solid curve is the worst case over every prior in the sets, the dotted one the "
            "loss of the point estimates alone."
            if robust
            else ""
        )
    )
    return svg_text(fig), caption


def release_figure(estimated: EstimatedPriors, released: Sequence[ReleasedHistogram]) -> str:
    conditionals = estimated.scenario.priors[0].conditionals
    fig = Figure(figsize=(3.8 * len(released), 2.8))
    axes = fig.subplots(1, len(released), sharey=True, squeeze=False)
    for ax, h in zip(axes[0], released, strict=True):
        prior = conditionals[h.secret]
        assert isinstance(prior, DiscretePrior)
        total = h.counts.sum()
        widths = np.diff(h.edges)
        density = h.counts / (total * widths) if total > 0 else h.counts
        ax.stairs(density, h.edges, color="#cc6677", label="released (density)")
        width = _bar_width(prior.support)
        ax.bar(prior.support, prior.pmf / width, width=width, alpha=0.5, color="#4477aa", label="original",
               rasterized=prior.support.size > RASTER_BARS)  # fmt: skip
        ax.set_title(f"secret = {h.secret}", fontsize=9)
        ax.set_xlabel(estimated.public_column, fontsize=8)
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel("density", fontsize=8)
    return svg_text(fig)


def label_release_figure(estimated: EstimatedPriors, released: Sequence[ReleasedHistogram]) -> str:
    """Per secret, each label's share of the rows in the table and in the release (a categorical
    column released by a randomized mapping): grouped bars, probabilities, labels by name."""
    conditionals = estimated.scenario.priors[0].conditionals
    labels = [label_text(label) for label, _ in estimated.mapping]
    k = len(labels)
    fig = Figure(figsize=(max(3.8, 0.32 * k + 1.8) * len(released), 3.2))
    axes = fig.subplots(1, len(released), sharey=True, squeeze=False)
    top = 0.0
    for ax, h in zip(axes[0], released, strict=True):
        prior = conditionals[h.secret]
        assert isinstance(prior, DiscretePrior)
        total = h.counts.sum()
        out = h.counts / total if total > 0 else h.counts
        original = np.zeros(k)
        original[prior.support.astype(np.int64)] = prior.pmf
        at = np.arange(k)
        _share_bars(ax, at, original, out)
        top = max(top, float(original.max()), float(out.max()) if out.size else 0.0)
        ax.set_title(f"secret = {h.secret} ({int(total):,} rows)", fontsize=9)
        ax.set_xlabel(estimated.public_column, fontsize=8)
        if k <= 30:
            ax.set_xticks(at, labels, rotation=60, ha="right", fontsize=6)
        ax.legend(fontsize=7, loc="lower center", bbox_to_anchor=(0.5, 1.1), ncols=2, frameon=False)
    axes[0][0].set_ylim(0.0, min(1.0, 1.1 * top) if top > 0 else 1.0)
    axes[0][0].set_ylabel("share of the secret's rows", fontsize=8)
    return svg_text(fig)


def _share_bars(ax: Any, at: np.ndarray, original: np.ndarray, released: np.ndarray) -> None:
    """Each label's share in the table (blue, left) and in the release (red, right) at ``at``."""
    ax.bar(at - 0.2, original, width=0.4, color="#4477aa", label="in the table")
    ax.bar(at + 0.2, released, width=0.4, color="#cc6677", label="released")


def _against_epsilon(fig: Any, ax: Any, epsilon: float, ylabel: str, *, log_y: bool) -> str:
    """The end of every figure against epsilon: the target epsilon as a dotted line, log axes
    with plain numbers (y too if ``log_y``), the labels and the legend; the figure as SVG."""
    ax.axvline(epsilon, color="black", linestyle=":", label=f"target eps = {fmt(epsilon)}")
    log_axes(ax, x=True, y=log_y)
    ax.set_xlabel("epsilon")
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=7)
    return svg_text(fig)


def _epsilon_curves(ax: Any, curves: Sequence[tuple[str, Sequence[tuple[float, float]]]]) -> None:
    """One line per mechanism of ``(epsilon, value)`` points (optimal-mapping solid, the rest dashed)."""
    for name, pts in curves:
        if pts:
            xs, ys = zip(*pts, strict=True)
            ax.plot(xs, ys, "-" if name == "optimal-mapping" else "--", marker="o", markersize=3, label=name)


def mapping_loss_figure(figures: ReportFigures) -> str:
    """Each randomized mapping's checked privacy loss at every epsilon of the accuracy figure."""
    fig = Figure(figsize=(5.6, 3.6))
    ax = fig.subplots()
    _epsilon_curves(ax, figures.mapping_loss_curves)
    grid = np.array(figures.epsilon_grid)
    ax.plot(grid, grid, color="grey", linewidth=0.8, label="loss = epsilon (the bound)")
    return _against_epsilon(fig, ax, figures.epsilon, "checked privacy loss (nats)", log_y=True)


#: Largest alphabet drawn as a heat map of the mapping (a larger one is described in the tables:
#: its JSON ``channel``, and ``matrix`` up to 1024 values).
MATRIX_FIGURE_MAX_K = 60


def matrix_figure(m: MappingCalibration, estimated: EstimatedPriors) -> tuple[str, str]:
    """The mapping as a heat map: rows the true value, columns the released one."""
    matrix = m.matrix
    k = matrix.shape[0]
    names = (
        [label_text(label) for label, _ in estimated.mapping]
        if estimated.categorical and len(estimated.mapping) == k
        else [fmt(float(v)) for v in m.support]
    )
    fig = Figure(figsize=(max(4.0, 0.45 * k + 2.5), max(3.4, 0.4 * k + 1.8)))
    ax = fig.subplots()
    image = ax.imshow(matrix, cmap="viridis", vmin=0.0, vmax=1.0)
    fig.colorbar(image, ax=ax, label="probability")
    if k <= 30:
        ax.set_xticks(range(k), names, rotation=90, fontsize=7)
        ax.set_yticks(range(k), names, fontsize=7)
        for x in range(k):
            for w in range(k):
                if matrix[x, w] >= 0.005:
                    color = "black" if matrix[x, w] > 0.6 else "white"
                    ax.text(w, x, f"{matrix[x, w]:.2f}", ha="center", va="center", fontsize=6, color=color)
    ax.set_xlabel(f"released {estimated.public_column}")
    ax.set_ylabel(f"true {estimated.public_column}")
    caption = (
        f"The {m.mechanism} matrix at eps = {fmt(m.epsilon)}: row = true value, column = released "
        f"value, each row a distribution (on the grid 2^-52, the matrix that was checked: loss "
        f"{fmt(m.checked_loss)}). Expected accuracy {fmt(m.expected_accuracy)}."
    )
    return svg_text(fig), caption


def accuracy_figure(figures: ReportFigures) -> str:
    """Expected accuracy versus epsilon for every mechanism (additive ones after rounding)."""
    fig = Figure(figsize=(5.6, 3.6))
    ax = fig.subplots()
    _epsilon_curves(ax, figures.accuracy_curves)
    ax.set_ylim(0.0, 1.02)
    return _against_epsilon(fig, ax, figures.epsilon, "expected accuracy", log_y=False)


#: Largest number of distinct values per axis drawn cell by cell in a heat map (else binned).
DENSE_AXIS = 150


def _axis_values(table: TableCalibration, k: int) -> tuple[str, list[str] | None]:
    """Axis label of column ``k`` and its labels (categorical columns with at most 20 labels)."""
    if table.categorical[k]:
        labels = table.labels[k]
        if len(labels) <= 20:  # the labels by name on the axis
            return table.columns[k], [label_text(v) for v in labels]
        return f"{table.columns[k]} (code)", None
    return table.columns[k], None


def _grid(prior: JointPrior, u0: np.ndarray, u1: np.ndarray) -> np.ndarray:
    """The pmf of a two-column prior on the product grid ``u1 x u0`` (NaN where 0)."""
    grid = np.full((u1.size, u0.size), np.nan)
    grid[np.searchsorted(u1, prior.support[:, 1]), np.searchsorted(u0, prior.support[:, 0])] = prior.pmf
    return grid


def _edges(values: np.ndarray) -> np.ndarray:
    """Cell edges around sorted distinct values: half-way between neighbours, half a gap outside."""
    if values.size == 1:
        return np.array([values[0] - 0.5, values[0] + 0.5])
    mid = (values[1:] + values[:-1]) / 2
    return np.concatenate([[2 * values[0] - mid[0]], mid, [2 * values[-1] - mid[-1]]])


def joint_priors_figure(table: TableCalibration) -> str:
    """Two columns: heat maps of P(x | s); more: each column's marginal per secret."""
    priors, _ = table.drawn_priors()
    secrets = list(priors)
    if len(table.columns) != 2:
        return _marginals_figure(table)
    fig = Figure(figsize=(4.2 * len(secrets), 3.6), layout="constrained")
    axes = fig.subplots(1, len(secrets), squeeze=False)[0]
    u0 = np.unique(np.concatenate([p.support[:, 0] for p in priors.values()]))
    u1 = np.unique(np.concatenate([p.support[:, 1] for p in priors.values()]))
    dense = u0.size <= DENSE_AXIS and u1.size <= DENSE_AXIS
    norm = LogNorm(
        vmin=min(float(p.pmf.min()) for p in priors.values()),
        vmax=max(float(p.pmf.max()) for p in priors.values()),
    )
    img = None
    for ax, s in zip(axes, secrets, strict=True):
        p = priors[s]
        if dense:  # one cell per pair of values, edges half-way between neighbouring values
            img = ax.pcolormesh(
                _edges(u0), _edges(u1), _grid(p, u0, u1), cmap="viridis", norm=norm, rasterized=True
            )
        else:
            hist, xe, ye = np.histogram2d(p.support[:, 0], p.support[:, 1], bins=60, weights=p.pmf)
            img = ax.pcolormesh(
                xe, ye, np.where(hist.T > 0, hist.T, np.nan), cmap="viridis", norm=norm, rasterized=True
            )
        _label_axes(ax, table)
        ax.set_title(f"P(x | {s}): {p.size} tuples", fontsize=9)
    if img is not None:
        fig.colorbar(img, ax=list(axes), label="probability (log scale)")
    return svg_text(fig)


def joint_priors_caption(table: TableCalibration) -> str:
    _, at = table.drawn_priors()
    where = "".join(
        f" A missing {c} is drawn at {fmt(v)} (its largest value plus its unit)." for c, v in at.items()
    )
    if len(table.columns) != 2:
        return (
            f"Each column's marginal per secret ({len(table.columns)} columns: the joint priors are not "
            f"drawn; they are what the check uses).{where}"
        )
    return where + (
        f"Joint distribution of ({table.columns[0]}, {table.columns[1]}) given each secret, on the "
        f"product of their values (cells with probability 0 blank; over {DENSE_AXIS} distinct values "
        "per axis the mass is binned on a 60 x 60 grid). One logarithmic colour scale for both panels."
    )


def _label_axes(ax: Any, table: TableCalibration) -> None:
    for k, (set_label, set_ticks, set_ticklabels) in enumerate(
        (
            (ax.set_xlabel, ax.set_xticks, ax.set_xticklabels),
            (ax.set_ylabel, ax.set_yticks, ax.set_yticklabels),
        )
    ):
        name, labels = _axis_values(table, k)
        set_label(name, fontsize=8)
        if labels is not None:
            set_ticks(range(len(labels)))
            set_ticklabels(labels, fontsize=6, rotation=60 if k == 0 else 0)


def _marginals_figure(table: TableCalibration) -> str:
    priors, _ = table.drawn_priors()
    d = len(table.columns)
    fig = Figure(figsize=(3.6 * d, 2.8), layout="constrained")
    axes = fig.subplots(1, d, squeeze=False)[0]
    for k, ax in enumerate(axes):
        for n, (s, p) in enumerate(priors.items()):
            values, inverse = np.unique(p.support[:, k], return_inverse=True)
            mass = np.bincount(inverse, weights=p.pmf)
            ax.plot(
                values, mass, drawstyle="steps-mid", color=("#4477aa", "#cc6677", "#228833")[n % 3], label=s
            )
        ax.set_xlabel(_axis_values(table, k)[0], fontsize=8)
        ax.legend(fontsize=7)
    axes[0].set_ylabel("probability", fontsize=8)
    return svg_text(fig)


def joint_plans_figure(table: TableCalibration, figures: JointReportFigures) -> tuple[str, str]:
    """Two columns: each plan's moves x -> x' (distance > 0) coloured by d; else one line."""
    from matplotlib.collections import LineCollection

    a, b = figures.pair
    priors = table.priors()
    p_i, p_j = priors[a], priors[b]
    if len(table.columns) != 2:
        fig = Figure(figsize=(5.6, 1.2), layout="constrained")
        fig.text(
            0.02, 0.5, f"{len(table.columns)} columns: the moves are not drawn; see the distances below."
        )
        return svg_text(fig), "The plans' moves are drawn for two columns only."
    fig = Figure(figsize=(9.0, 4.0), layout="constrained")
    axes = fig.subplots(1, len(figures.plans), squeeze=False, sharex=True, sharey=True)[0]
    top = max(plan.max_distance for plan in figures.plans) or 1.0
    lines = None
    for ax, plan in zip(axes, figures.plans, strict=True):
        moved = plan.distance > 0
        src, dst = p_i.support[plan.source[moved]], p_j.support[plan.target[moved]]
        mass = plan.mass[moved]
        segments = np.stack([src[:, :2], dst[:, :2]], axis=1)
        widths = 0.3 + 2.5 * mass / mass.max() if mass.size else []
        lines = LineCollection(
            list(segments),
            array=plan.distance[moved],
            cmap="plasma",
            linewidths=widths,
            alpha=0.6,
            rasterized=True,
        )
        lines.set_clim(0.0, top)
        ax.add_collection(lines)
        ax.scatter(
            p_i.support[:, 0],
            p_i.support[:, 1],
            s=2,
            color="#4477aa",
            label=f"x ~ P(. | {a})",
            rasterized=True,
        )
        ax.scatter(
            p_j.support[:, 0],
            p_j.support[:, 1],
            s=2,
            color="#228833",
            marker="x",
            label=f"x' ~ P(. | {b})",
            rasterized=True,
        )
        worst = np.argmax(plan.distance)
        w_src, w_dst = p_i.support[plan.source[worst]], p_j.support[plan.target[worst]]
        ax.annotate(
            "",
            xy=(w_dst[0], w_dst[1]),
            xytext=(w_src[0], w_src[1]),
            arrowprops={"arrowstyle": "->", "color": "red", "lw": 1.5},
        )
        name = "W1 plan (kantorovich)" if plan.kind == "kantorovich" else "bottleneck plan (wasserstein-inf)"
        ax.set_title(f"{name}: max d = {fmt(plan.max_distance)}", fontsize=9)
        _label_axes(ax, table)
        ax.legend(fontsize=6, loc="upper right")
    if lines is not None:
        fig.colorbar(lines, ax=list(axes), label="d(x, x')")
    kinds = {plan.kind: plan for plan in figures.plans}
    caption = (
        f"Couplings of P(. | {a}) and P(. | {b}): each segment moves mass from x to x' (width by mass, "
        f"colour by d(x, x'); mass that stays is not drawn); the red arrow is the largest move, which sets "
        f"b = max d / epsilon (seed 002 Thm 1). Left: among the W1-optimal plans the one of smallest largest "
        f"distance (W1 = {fmt(kinds['kantorovich'].cost())}; W1 plans are not unique in several dimensions). "
        f"Right: the bottleneck plan, the coupling of smallest largest distance (Song et al. 2017)."
    )
    return svg_text(fig), caption


def plan_distances_figure(figures: JointReportFigures) -> tuple[str, str]:
    """The distribution of d(x, x') under each plan: mass moved at most t, against t."""
    fig = Figure(figsize=(5.6, 3.4), layout="constrained")
    ax = fig.subplots()
    for plan, color in zip(figures.plans, ("#4477aa", "#cc6677"), strict=False):
        order = np.argsort(plan.distance)
        dist, mass = plan.distance[order], np.cumsum(plan.mass[order])
        name = "W1 plan" if plan.kind == "kantorovich" else "bottleneck plan"
        ax.step(dist, mass, where="post", color=color, label=f"{name} (max {fmt(plan.max_distance)})")
        ax.axvline(plan.max_distance, color=color, linestyle=":", linewidth=0.8)
    ax.set_xlabel("d(x, x') (units w_k)")
    ax.set_ylabel("mass moved at most d")
    ax.set_ylim(0, 1.02)
    ax.legend(fontsize=7)
    a, b = figures.pair
    caption = (
        f"Cumulative mass of the plans of {a} vs {b} against the distance moved. kantorovich and "
        "wasserstein-inf take the largest distance (dotted); relaxed (seed 002 Thm 2) weighs the "
        "mass moved far against the prior's mass, which is why it can be smaller."
    )
    return svg_text(fig), caption


def joint_loss_figure(figures: JointReportFigures) -> tuple[str, str]:
    """Exact product-Laplace loss against b, with epsilon and each mechanism's scale."""
    fig = Figure(figsize=(5.6, 3.6), layout="constrained")
    ax = fig.subplots()
    ax.plot(figures.loss_scales, figures.loss_values, color="#4477aa", label="exact loss")
    ax.axhline(figures.epsilon, color="#cc6677", linestyle="--", label="target eps")
    for c in figures.comparison:
        if isinstance(c, Calibration) and c.noise == "laplace" and c.numerically_checked and c.scale > 0:
            ax.axvline(c.scale, color="grey", linewidth=0.6)
            ax.text(c.scale, figures.epsilon, c.mechanism, rotation=90, fontsize=6, va="bottom")
    log_axes(ax, x=True)
    ax.set_xlabel("product Laplace scale b")
    ax.set_ylabel("exact privacy loss (nats)")
    ax.legend(fontsize=7)
    caption = (
        "The exact privacy loss of product Laplace noise Laplace(b w_k) on every column, the largest over "
        "the pairs and over R^d (attained at a vertex of the product grid; pufferfish.loss.product), "
        "against b; a scale passes where the curve is at or below the target."
    )
    return svg_text(fig), caption


def joint_release_figure(table: TableCalibration, figures: JointReportFigures) -> tuple[str, str]:
    """Per column (rows) and secret (columns): the original marginal and the released values."""
    priors = table.priors()
    secrets = list(priors)
    fig = Figure(figsize=(3.6 * len(secrets), 2.6 * len(figures.released)), layout="constrained")
    axes = fig.subplots(len(figures.released), len(secrets), squeeze=False)
    for r, (column, hists) in enumerate(figures.released):
        k = table.columns.index(column)
        name, labels = _axis_values(table, k)
        for ax, h in zip(axes[r], hists, strict=True):
            p = priors[h.secret]
            widths = np.diff(h.edges)
            values = np.clip(p.support[:, k], h.edges[0], h.edges[-1])
            original = np.histogram(values, bins=h.edges, weights=p.pmf)[0]
            total = h.counts.sum()
            if table.categorical[k]:  # labels in and out (a randomized response): shares, by name
                at = 0.5 * (h.edges[:-1] + h.edges[1:])
                _share_bars(ax, at, original, h.counts / total if total > 0 else h.counts)
                if labels is not None:
                    ax.set_xticks(at, labels, rotation=60, ha="right", fontsize=6)
            else:
                ax.stairs(original / widths, h.edges, fill=True, alpha=0.5, color="#4477aa", label="original")
                density = h.counts / (total * widths) if total > 0 else h.counts
                ax.stairs(density, h.edges, color="#cc6677", label="released (density)")
            ax.set_title(f"{column}, secret = {h.secret}", fontsize=9)
            ax.set_xlabel(name, fontsize=8)
            ax.legend(fontsize=6)
        what = "share of the secret's rows" if table.categorical[k] else f"density (per unit of {column})"
        axes[r][0].set_ylabel(what, fontsize=8)
    caption = (
        "Each released column against its original distribution, per secret (rows with every public "
        "column present): a numeric column as densities on the same bins, filled the original, the "
        "line the released values with their Laplace noise; a categorical column as each label's "
        "share of the rows in the table (blue) and in the release (red), drawn by its randomized "
        "response."
    )
    return svg_text(fig), caption
