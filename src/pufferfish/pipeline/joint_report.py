"""The self-contained HTML report of several public columns calibrated or released jointly.

Like :mod:`pufferfish.pipeline.report` (whose page, table and figure helpers it uses), it only draws what it
is given: the numbers of the tables come from the JSON payload
(:func:`pufferfish.pipeline.results.report_dict`, plus a ``release`` section for a
release), which is embedded in the page; the figures' numbers from
:func:`pufferfish.pipeline.figures.joint_report_figures`.

Figures with thousands of cells or segments are rasterised inside their SVG (an embedded PNG):
the page of the README's Adult release (two priors of about 2,000 tuples) is under 1 MB
(``tests/test_joint_table.py``) instead of 5.6 MB of vector paths.

Sections: inputs (columns, units, coding of categorical columns, tuples per secret), the
mechanisms at the target epsilon (scale ``b``, per-column scales ``b w_k``, the exact check or
"not numerically checked"), for a release the per-column noise; figures: the joint priors (two
columns: heat maps on the product of their values; more: each column's marginal), the plans of the
first pair (two columns: the moves ``x -> x'``), the distribution of the distance moved under each
plan, the exact privacy loss against ``b``, and for a release each column's original and released
distributions.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from matplotlib.colors import LogNorm
from matplotlib.figure import Figure

from pufferfish.calibration import Calibration, MappingCalibration, Skipped
from pufferfish.pipeline.report import cell, figure_html, fmt, html_page, svg_text, table_html
from pufferfish.priors.sets import prior_scope

if TYPE_CHECKING:
    from pufferfish.pipeline.figures import JointReportFigures
    from pufferfish.pipeline.results import TableCalibration
    from pufferfish.priors.joint import JointPrior

#: Figures of every joint report (``id`` of the ``<figure>``), in page order; a release adds
#: ``fig-release``.
JOINT_FIGURES = ("fig-joint-priors", "fig-plans", "fig-plan-distances", "fig-loss-scale")

#: Largest number of distinct values per axis drawn cell by cell in a heat map (else binned).
DENSE_AXIS = 150


def build_joint_report(
    payload: dict[str, Any], *, table: TableCalibration, figures: JointReportFigures, title: str
) -> str:
    """The HTML text of the report of several public columns, from precomputed results only.

    Parameters
    ----------
    payload : dict
        :func:`~pufferfish.pipeline.results.report_dict` (``calibrate --public a,b
        --json``) or a joint release's report (with its ``release`` section); embedded in the page.
    table : TableCalibration
        The joint priors, columns, units and labels.
    figures : pufferfish.pipeline.figures.JointReportFigures
        Plans, loss curve and (release) binned released values.
    title : str
        Page title.

    Returns
    -------
    str
        One self-contained HTML document (inline CSS and SVG).
    """
    parts = _inputs(payload, table)
    parts += _mechanisms(payload, figures.comparison)
    if payload.get("release"):
        parts += _release(payload["release"], table)
    parts.append("<h2>Figures</h2>")
    parts.append(
        figure_html(
            "fig-joint-priors",
            "Joint priors per secret",
            _priors_figure(table),
            _priors_caption(table),
        )
    )
    svg, caption = _plans_figure(table, figures)
    parts.append(figure_html("fig-plans", "Transport plans of the first pair", svg, caption))
    svg, caption = _distances_figure(figures)
    parts.append(figure_html("fig-plan-distances", "Distance moved under each plan", svg, caption))
    svg, caption = _loss_figure(figures)
    parts.append(figure_html("fig-loss-scale", "Privacy loss versus scale", svg, caption))
    if figures.released:
        svg, caption = _release_figure(table, figures)
        parts.append(figure_html("fig-release", "Original versus released, per column", svg, caption))
    return html_page(title, parts, payload)


def _inputs(payload: dict[str, Any], table: TableCalibration) -> list[str]:
    """Inputs, columns with their units, counts, and the coding of categorical columns."""
    import json

    parts = ["<h2>Inputs</h2>"]
    rows = [
        [cell(k), cell(v if isinstance(v, str) else json.dumps(v), f"input:{k}")]
        for k, v in payload["inputs"].items()
    ]
    parts.append(table_html(["input", "value"], rows, "inputs"))
    col_rows = [
        [cell(c), cell(payload["columns_read_as"][c]), cell(fmt(w), f"unit:{c}")]
        for c, w in zip(payload["columns"], payload["units"], strict=True)
    ]
    parts.append(table_html(["column", "read as", "unit w_k"], col_rows, "columns"))
    parts.append(
        "<p class=\"note\">Metric d(x, x') = sum_k |x_k - x'_k| / w_k; a scale b adds Laplace(b w_k) to "
        "column k. One check covers the whole tuple: pufferfish privacy does not compose across "
        "correlated columns (Kifer and Machanavajjhala 2014).</p>"
    )
    counts = [
        [cell("rows in the table"), cell(fmt(payload["rows_total"]), "rows_total")],
        [cell("rows left out (a missing value)"), cell(fmt(payload["rows_dropped"]), "rows_dropped")],
    ] + [
        [cell(f"distinct tuples, secret {s}"), cell(fmt(n), f"tuples:{s}")]
        for s, n in payload["tuples"].items()
    ]
    parts.append(table_html(["count", "value"], counts, "counts"))
    for c, labels in payload.get("labels", {}).items():
        parts.append(f"<h3>Codes of {html.escape(c)}</h3>")
        parts.append(
            table_html(
                ["label", "code"],
                [[cell(lab), cell(k, f"code:{c}:{lab}")] for k, lab in enumerate(labels)],
                f"codes-{c}",
            )
        )
    ps = payload["prior_set"]
    scope = prior_scope(None if ps["kind"] == "none" else ps, "empirical joint")
    if ps.get("requested") == "dkw":
        scope += " (dkw on several columns is this L1 ball: a CDF band has no form on a product of columns)"
    parts.append(f'<p class="note">Priors: {html.escape(scope)} {html.escape(payload["channel"])}.</p>')
    return parts


def _mechanisms(
    payload: dict[str, Any], comparison: Sequence[Calibration | MappingCalibration | Skipped]
) -> list[str]:
    """The mechanisms at the figures' epsilon: numbers from the payload's rows."""
    eps = comparison[0].epsilon if comparison else None
    parts = [f"<h2>Mechanisms at epsilon = {fmt(eps)}</h2>"]
    rows = []
    for d in payload["results"]:
        if d["epsilon"] != eps or d.get("scale") is None:
            continue
        key = d["mechanism"]
        checked = (
            "not numerically checked" if not d.get("numerically_checked", True) else fmt(d["checked_loss"])
        )
        per_col = ", ".join(f"{c} {fmt(b)}" for c, b in d["column_scales"].items())
        rows.append(
            [
                cell(key),
                cell(d["noise"]),
                cell(fmt(d["scale"]), f"scale:{key}"),
                cell(per_col, f"column_scales:{key}"),
                cell(checked, f"checked:{key}"),
                cell(d["decided_by"]),
                cell(d["source"]),
            ]
        )
    headers = ["mechanism", "noise", "scale b", "per column b w_k", "checked loss", "decided by", "source"]
    parts.append(table_html(headers, rows, "mechanisms"))
    unchecked = [c for c in comparison if isinstance(c, Calibration) and c.not_checked is not None]
    if unchecked:
        items = "".join(
            html.escape(f"{c.mechanism} rests on {c.source} alone ({c.not_checked})").join(("<li>", "</li>"))
            for c in unchecked
        )
        parts.append(f'<p class="note">Not numerically checked:</p><ul class="note">{items}</ul>')
    skipped = [c for c in comparison if isinstance(c, Skipped)]
    if skipped:
        items = "".join(f"<li>{html.escape(s.mechanism)}: {html.escape(s.reason)}</li>" for s in skipped)
        parts.append(f'<p class="note">Not used:</p><ul class="note">{items}</ul>')
    return parts


def _release(release: dict[str, Any], table: TableCalibration) -> list[str]:
    """The mechanism used and the noise drawn on each column."""
    parts = ["<h2>Release</h2>"]
    parts.append(
        '<p>Released with <b>{}</b>: scale b = <span data-key="chosen:scale">{}</span>, exact loss '
        '<span data-key="chosen:checked">{}</span> &le; epsilon {}; {} rows with noise on every column, '
        "{} with a "
        "missing value (that cell left missing, the others noised). Output: {}.</p>".format(
            html.escape(release["mechanism"]),
            fmt(release["scale"]),
            fmt(release["checked_loss"]),
            fmt(release["epsilon"]),
            fmt(release["rows_released_with_noise"]),
            fmt(release["rows_with_a_missing_value"]),
            html.escape(release["output"]),
        )
    )
    rows = []
    for c, w in zip(table.columns, table.units, strict=True):
        drawn = release["drawn_scales"][c]
        about = release["noise"]["columns"][c]
        noise = release["column_noise"][c]
        if noise["kind"] == "laplace":
            how = f"Laplace, sd {fmt(math.sqrt(2.0) * drawn)}"
        elif noise["kind"] == "randomized-response":
            how = (
                f"randomized response on {noise['labels']} labels, keep {fmt(noise['keep_probability'])}, "
                f"log ratio {fmt(noise['log_ratio'])}"
            )
        else:
            how = "released as it is (one label)"
        rows.append(
            [
                cell(c),
                cell(fmt(w)),
                cell(fmt(release["column_scales"][c]), f"column_scale:{c}"),
                cell(fmt(drawn), f"drawn_scale:{c}"),
                cell(how, f"noise:{c}"),
                cell(about["sampler"]),
            ]
        )
    parts.append(
        table_html(["column", "unit w_k", "b w_k", "drawn scale", "noise", "sampler"], rows, "column-noise")
    )
    checked = (
        "checked jointly again (exact loss at the drawn scales)" if release["drawn_scales_checked"] else ""
    )
    rounding = "; ".join(
        f"{c}: {release['noise']['columns'][c]['rounding']}"
        for c in table.columns
        if release["noise"]["columns"][c].get("rounding") and not release.get("insecure")
    )
    drawn_how = (
        "The seeded sampler draws b w_k as it is"
        if release.get("insecure")
        else "The drawn scale of a numeric column is b w_k rounded up to the sampler's grid, and its "
        f"values are rounded to that grid first ({html.escape(rounding)}); a categorical column's "
        "randomized response has probabilities on the 2^-52 grid with log ratio at most 1 / (b w_k) "
        "(its drawn scale is 1 / log ratio); the check is on the drawn channels and the rounded priors"
    )
    parts.append(
        f'<p class="note">Each row gets one independent draw per column. {drawn_how}'
        f"{'; ' + checked if checked else ''}. Guarantee: {html.escape(release['guarantee'])}</p>"
    )
    if release.get("insecure"):
        parts.append('<p class="note"><b>Seeded, insecure sampler: for experiments only.</b></p>')
    return parts


def _axis_values(table: TableCalibration, k: int) -> tuple[str, list[str] | None]:
    """Axis label of column ``k`` and its labels (categorical columns with at most 20 labels)."""
    if table.categorical[k]:
        labels = table.labels[k]
        return f"{table.columns[k]} (code)", labels if len(labels) <= 20 else None
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


def _priors_figure(table: TableCalibration) -> str:
    """Two columns: heat maps of P(x | s); more: each column's marginal per secret."""
    priors = table.priors()
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


def _priors_caption(table: TableCalibration) -> str:
    if len(table.columns) != 2:
        return (
            f"Each column's marginal per secret ({len(table.columns)} columns: the joint priors are not "
            "drawn; they are what the check uses)."
        )
    return (
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
    priors = table.priors()
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


def _plans_figure(table: TableCalibration, figures: JointReportFigures) -> tuple[str, str]:
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


def _distances_figure(figures: JointReportFigures) -> tuple[str, str]:
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


def _loss_figure(figures: JointReportFigures) -> tuple[str, str]:
    """Exact product-Laplace loss against b, with epsilon and each mechanism's scale."""
    from matplotlib.ticker import NullFormatter

    fig = Figure(figsize=(5.6, 3.6), layout="constrained")
    ax = fig.subplots()
    ax.plot(figures.loss_scales, figures.loss_values, color="#4477aa", label="exact loss")
    ax.axhline(figures.epsilon, color="#cc6677", linestyle="--", label="target eps")
    for c in figures.comparison:
        if isinstance(c, Calibration) and c.noise == "laplace" and c.numerically_checked and c.scale > 0:
            ax.axvline(c.scale, color="grey", linewidth=0.6)
            ax.text(c.scale, figures.epsilon, c.mechanism, rotation=90, fontsize=6, va="bottom")
    ax.set_xscale("log")
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("product Laplace scale b")
    ax.set_ylabel("exact privacy loss (nats)")
    ax.legend(fontsize=7)
    caption = (
        "The exact privacy loss of product Laplace noise Laplace(b w_k) on every column, the largest over "
        "the pairs and over R^d (attained at a vertex of the product grid; pufferfish.loss.product), "
        "against b; a scale passes where the curve is at or below the target."
    )
    return svg_text(fig), caption


def _release_figure(table: TableCalibration, figures: JointReportFigures) -> tuple[str, str]:
    """Per column (rows) and secret (columns): the original marginal and the released values."""
    priors = table.priors()
    secrets = list(priors)
    fig = Figure(figsize=(3.6 * len(secrets), 2.6 * len(figures.released)), layout="constrained")
    axes = fig.subplots(len(figures.released), len(secrets), squeeze=False)
    for r, (column, hists) in enumerate(figures.released):
        k = table.columns.index(column)
        for ax, h in zip(axes[r], hists, strict=True):
            p = priors[h.secret]
            widths = np.diff(h.edges)
            values = np.clip(p.support[:, k], h.edges[0], h.edges[-1])
            original = np.histogram(values, bins=h.edges, weights=p.pmf)[0]
            ax.stairs(original / widths, h.edges, fill=True, alpha=0.5, color="#4477aa", label="original")
            total = h.counts.sum()
            density = h.counts / (total * widths) if total > 0 else h.counts
            ax.stairs(density, h.edges, color="#cc6677", label="released (density)")
            ax.set_title(f"{column}, secret = {h.secret}", fontsize=9)
            ax.set_xlabel(_axis_values(table, k)[0], fontsize=8)
            ax.legend(fontsize=6)
    caption = (
        "Each released column against its original distribution, per secret, as densities on the "
        "same bins: filled, the original marginal (rows with every public column present); the line, "
        "the released values with their Laplace noise."
    )
    return svg_text(fig), caption
