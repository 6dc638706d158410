"""Self-contained HTML reports of a calibration or a release: tables and inline SVG figures.

One file, no network needed to open it: the CSS is inline and every figure is an SVG drawn by
matplotlib and written into the page. Every number shown in a table is also in the page's JSON
(``<script type="application/json" id="report-json">``), which is the same payload as
``calibrate --json`` or the release's ``.report.json``.
"""

from __future__ import annotations

import html
import io
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from matplotlib.figure import Figure

from pufferfish.calibration import Calibration, MappingCalibration, Skipped
from pufferfish.priors.distributions import DiscretePrior, GaussianMixturePrior
from pufferfish.priors.sets import set_label
from pufferfish.tables.estimate import EstimatedPriors
from pufferfish.tables.fit import FittedPriors
from pufferfish.tables.source import check_output_path
from pufferfish.transport.line import TransportPlan

if TYPE_CHECKING:
    from pufferfish.pipeline.figures import ReportFigures
    from pufferfish.tables.histograms import ReleasedHistogram

#: Figures every report has (``id`` of the ``<figure>``), in page order; a release adds
#: ``fig-release``, and a comparison with randomized mappings :data:`MAPPING_FIGURES`.
FIGURES = ("fig-priors", "fig-plan", "fig-scale-epsilon", "fig-loss-scale")

#: Figures of a comparison with randomized mappings: the matrix and accuracy versus epsilon.
MAPPING_FIGURES = ("fig-matrix", "fig-accuracy-epsilon")


def fmt(x: Any) -> str:
    """A number as shown in a report: 6 significant digits, integers with separators, ``-`` for
    None."""
    if x is None:
        return "-"
    if isinstance(x, (bool, np.bool_)):
        return str(bool(x))
    if isinstance(x, (int, np.integer)):
        return f"{int(x):,}"
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    return f"{float(x):.6g}"


def svg_text(fig: Any) -> str:
    """The figure as inline SVG text (no XML header).

    Figures are ``matplotlib.figure.Figure`` objects (no pyplot), so a report never touches the
    user's matplotlib backend or global figure state.
    """
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    text = buf.getvalue()
    return text[text.index("<svg") :]


def figure_html(fig_id: str, title: str, svg: str, caption: str) -> str:
    """``<figure id=fig_id>`` with a heading, the inline SVG and its (escaped) caption."""
    return (
        f'<figure id="{fig_id}"><h3>{html.escape(title)}</h3>{svg}'
        f"<figcaption>{html.escape(caption)}</figcaption></figure>"
    )


def table_html(headers: Sequence[str], rows: Sequence[Sequence[str]], table_id: str) -> str:
    """``<table id=table_id>``: escaped headers and rows of cells already made by :func:`cell`."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(rows_cell for rows_cell in row) + "</tr>" for row in rows)
    return f'<table id="{table_id}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def cell(text: Any, key: str | None = None) -> str:
    """One escaped ``<td>``; ``key`` sets ``data-key`` (what tests read back from the page)."""
    attr = f' data-key="{html.escape(key)}"' if key else ""
    return f"<td{attr}>{html.escape(str(text))}</td>"


def priors_figure(estimated: EstimatedPriors, fitted: FittedPriors | None) -> str:
    """SVG of the empirical prior per secret (bars), with the fitted density if any."""
    conditionals = estimated.scenario.priors[0].conditionals
    secrets = list(conditionals)
    fig = Figure(figsize=(3.6 * len(secrets), 2.8))
    axes = fig.subplots(1, len(secrets), sharey=True, squeeze=False)
    labels = [label for label, _ in estimated.mapping]
    for ax, s in zip(axes[0], secrets, strict=True):
        prior = conditionals[s]
        assert isinstance(prior, DiscretePrior)
        width = 0.8 if estimated.categorical else _bar_width(prior.support)
        ax.bar(prior.support, prior.pmf, width=width, color="#4477aa", label="empirical")
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
            ax.legend(fontsize=7)
        sets = estimated.scenario.priors[0].sets
        if sets is not None:  # the range of P(x) over the secret's prior set, at each point
            from pufferfish.loss.robust import extremes

            ps = sets[s]
            ext = extremes(ps, 0.0)
            ax.vlines(ps.alphabet, np.exp(ext.log_min), np.exp(ext.log_max), color="#cc6677", lw=1.5,
                      label=f"{ps.kind} set: range of P(x)")  # fmt: skip
            ax.legend(fontsize=7)
        ax.set_title(f"P(x | {s})", fontsize=9)
        ax.set_xlabel(estimated.public_column + (" (code)" if estimated.categorical else ""), fontsize=8)
        if estimated.categorical and len(labels) <= 20:
            ax.set_xticks(range(len(labels)))
            ax.set_xticklabels(labels, rotation=60, ha="right", fontsize=6)
    axes[0][0].set_ylabel("probability", fontsize=8)
    return svg_text(fig)


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


def _scale_epsilon_figure(figures: ReportFigures) -> str:
    """Scale versus epsilon for every applicable mechanism (seed 001 Fig 4)."""
    from matplotlib.ticker import NullFormatter

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
    ax.axvline(figures.epsilon, color="black", linestyle=":", label=f"target eps = {fmt(figures.epsilon)}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("epsilon")
    ax.set_ylabel("noise scale (Laplace b or Gaussian sigma)")
    ax.legend(fontsize=7)
    return svg_text(fig)


def _loss_scale_figure(figures: ReportFigures) -> tuple[str, str]:
    """Exact privacy loss (or delta) versus the scale, target marked (SPEC sec 2.1)."""
    from matplotlib.ticker import NullFormatter

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
    ax.set_xscale("log")
    ax.xaxis.set_minor_formatter(NullFormatter())
    if delta > 0:
        ax.set_yscale("log")
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


def _release_figure(estimated: EstimatedPriors, released: Sequence[ReleasedHistogram]) -> str:
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
        ax.bar(prior.support, prior.pmf / width, width=width, alpha=0.5, color="#4477aa", label="original")
        ax.set_title(f"secret = {h.secret}", fontsize=9)
        ax.set_xlabel(estimated.public_column, fontsize=8)
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel("density", fontsize=8)
    return svg_text(fig)


CSS = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;color:#222}
table{border-collapse:collapse;margin:0.5em 0 1.5em}
td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px;text-align:left}
th{background:#f2f2f2} figure{margin:1.5em 0} figcaption{font-size:13px;color:#555}
svg{max-width:100%;height:auto} .note{font-size:13px;color:#555}
"""


def build_report(
    payload: dict[str, Any],
    *,
    estimated: EstimatedPriors,
    fitted: FittedPriors | None,
    figures: ReportFigures,
    title: str,
) -> str:
    """The HTML text of a report, drawn from precomputed results only.

    Parameters
    ----------
    payload : dict
        The JSON report (:func:`pufferfish.pipeline.results.report_dict`: ``calibrate --json`` or the
        release's ``.report.json``); it is embedded in the page, and the tables show its numbers.
    estimated : EstimatedPriors
        Inputs, mapping and empirical priors.
    fitted : FittedPriors or None
        Fitted priors (``--prior gaussian|gmm``), drawn over the empirical bars.
    figures : pufferfish.pipeline.figures.ReportFigures
        The numbers behind the figures (:func:`pufferfish.pipeline.figures.report_figures`): the
        comparison at the target epsilon, the scale-versus-epsilon curves, the loss-versus-scale
        curve, the transport plan and, for a release, the binned released values.
    title : str
        Page title.

    Returns
    -------
    str
        One self-contained HTML document (inline CSS and SVG; no external resource).

    Notes
    -----
    Figures: priors per secret; the Kantorovich plan of the first pair as a heat map (seed 001
    Fig 2a); scale versus epsilon for every mechanism (seed 001 Fig 4); the exact privacy loss
    (SPEC sec 2.1) or checked delta versus the scale with the target marked; with randomized
    mappings, the matrix as a heat map and every mechanism's accuracy versus epsilon; for a
    release the original and released distributions per secret.
    """
    parts = _input_sections(payload, estimated, figures)
    parts += _mechanism_section(payload, figures.comparison)
    parts += _figure_section(estimated, fitted, figures)
    return html_page(title, parts, payload)


def html_page(title: str, parts: Sequence[str], payload: dict[str, Any]) -> str:
    """One self-contained HTML document: the title, the sections ``parts`` (HTML), and
    ``payload`` embedded as ``<script type="application/json" id="report-json">``."""
    data = json.dumps(payload, allow_nan=False).replace("</", "<\\/")
    body = "\n".join([f"<h1>{html.escape(title)}</h1>", *parts])
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>\n{body}\n"
        f'<script type="application/json" id="report-json">{data}</script>\n</body></html>\n'
    )


def _input_sections(payload: dict[str, Any], estimated: EstimatedPriors, figures: ReportFigures) -> list[str]:
    """Inputs, row counts and the category-to-code mapping."""
    inputs = payload.get("inputs") or {
        "data": estimated.source,
        "secret": estimated.secret_column,
        "public": estimated.public_column,
        "pairs": [list(p) for p in estimated.scenario.pairs],
        "epsilon": figures.epsilon,
        "delta": figures.delta,
        "noise": figures.noise,
    }
    parts = ["<h2>Inputs</h2>"]
    parts.append(
        table_html(
            ["input", "value"],
            [
                [cell(k), cell(json.dumps(v) if not isinstance(v, str) else v, f"input:{k}")]
                for k, v in inputs.items()
            ],
            "inputs",
        )
    )
    rows = [
        [cell("rows in the table"), cell(fmt(estimated.rows_total), "rows_total")],
        [cell("rows dropped from the estimate"), cell(fmt(estimated.rows_dropped), "rows_dropped")],
    ] + [
        [cell(f"rows with secret {g.secret}"), cell(fmt(g.rows), f"rows:{g.secret}")]
        for g in estimated.groups
    ]
    parts.append(table_html(["count", "value"], rows, "counts"))
    if estimated.categorical:
        parts.append("<h2>Category to code</h2>")
        parts.append(
            table_html(
                ["label", "code"],
                [[cell(label), cell(code, f"code:{label}")] for label, code in estimated.mapping],
                "mapping",
            )
        )
    return parts


def row_key(row: dict[str, Any]) -> str:
    """The page's key of a result row: its mechanism, with ``@kind`` for a worst case over prior
    sets (the point-estimate ``optimal`` beside a robust one keeps the plain name)."""
    kind = (row.get("prior_set") or {}).get("kind", "none")
    return row["mechanism"] if kind == "none" else f"{row['mechanism']}@{kind}"


def _mechanism_section(
    payload: dict[str, Any], comparison: Sequence[Calibration | MappingCalibration | Skipped]
) -> list[str]:
    """The mechanisms table (numbers from the JSON rows), what was not used, and the choice."""
    parts = ["<h2>Mechanisms</h2>"]
    mech_rows = []
    for c in comparison:
        if isinstance(c, Skipped):
            continue
        d = c.to_dict()
        checked = d["checked_loss"] if d["checked_loss"] is not None else d["checked_delta"]
        if checked is None:
            checked = d["checked_information"]
        key = row_key(d)
        mech_rows.append(
            [
                cell(d["mechanism"]),
                cell(set_label(d["prior_set"])),
                cell(d["noise"]),
                cell(fmt(d["scale"]), f"scale:{key}"),
                cell(fmt(d["variance"]), f"variance:{key}"),
                cell(fmt(checked), f"checked:{key}"),
                cell(fmt(d["expected_accuracy"]), f"accuracy:{key}"),
                cell(fmt(d["expected_abs_error"]), f"abs_error:{key}"),
                cell(d["source"]),
            ]
        )
    headers = ["mechanism", "priors", "noise", "scale", "noise variance", "checked (loss, delta or I)"]
    headers += ["expected accuracy", "mean abs error", "source"]
    parts.append(table_html(headers, mech_rows, "mechanisms"))
    parts.append(
        '<p class="note">Expected accuracy: the probability that a released value (rounded to the '
        "nearest value of the alphabet, for additive noise) equals the true one; mean abs error: "
        "E|released - true| (codes for a categorical column), both over the released rows.</p>"
    )
    skipped = [c for c in comparison if isinstance(c, Skipped)]
    if skipped:
        items = "".join(f"<li>{html.escape(s.mechanism)}: {html.escape(s.reason)}</li>" for s in skipped)
        parts.append(f'<p class="note">Not used:</p><ul class="note">{items}</ul>')
    chosen = payload.get("chosen")
    if chosen:
        what = (
            "the matrix below"
            if chosen.get("matrix") is not None
            else 'scale <span data-key="chosen:scale">{}</span>'.format(fmt(chosen["scale"]))
        )
        parts.append(
            '<p>Released with <b>{}</b>: {}, checked <span data-key="chosen:checked">{}</span>.</p>'.format(
                html.escape(str(chosen["mechanism"])),
                what,
                fmt(
                    chosen["checked_loss"] if chosen["checked_loss"] is not None else chosen["checked_delta"]
                ),
            )
        )
    noise = payload.get("noise")
    if isinstance(noise, dict) and noise.get("sampler"):
        rounding = noise.get("rounding")
        checked = noise.get("checked_on")
        text = f"Noise: {noise['sampler']}." + (f" {rounding}" if rounding else "")
        text += f"; checked on {checked}." if checked else ("." if rounding else "")
        parts.append(f'<p class="note" id="release-noise">{html.escape(text)}</p>')
        if noise.get("counts"):
            parts.append(_counts_table(noise["counts"]))
    if payload.get("guarantee"):
        parts.append(f'<p class="note">{html.escape(str(payload["guarantee"]))}</p>')
    return parts


def _counts_table(counts: dict[str, Any]) -> str:
    """A mapping's released rows per value, in the input and in the output, side by side."""
    cells = []
    for v, a, b in zip(counts["values"], counts["input"], counts["output"], strict=True):
        name = html.escape(str(v))
        cells.append(
            f'<tr><td>{name}</td><td data-key="count-in:{name}">{a}</td>'
            f'<td data-key="count-out:{name}">{b}</td></tr>'
        )
    rows = "".join(cells)
    return (
        '<table id="label-counts"><caption>Released rows per value: input and output</caption>'
        f"<tr><th>value</th><th>input</th><th>output</th></tr>{rows}</table>"
    )


#: Largest alphabet drawn as a heat map of the mapping (a larger one is described in the tables:
#: its JSON ``channel``, and ``matrix`` up to 1024 values).
MATRIX_FIGURE_MAX_K = 60


def _matrix_figure(m: MappingCalibration, estimated: EstimatedPriors) -> tuple[str, str]:
    """The mapping as a heat map: rows the true value, columns the released one."""
    matrix = m.matrix
    k = matrix.shape[0]
    names = (
        [label for label, _ in estimated.mapping]
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


def _accuracy_figure(figures: ReportFigures) -> str:
    """Expected accuracy versus epsilon for every mechanism (additive ones after rounding)."""
    from matplotlib.ticker import NullFormatter

    fig = Figure(figsize=(5.6, 3.6))
    ax = fig.subplots()
    for name, pts in figures.accuracy_curves:
        if pts:
            xs, ys = zip(*pts, strict=True)
            style = "-" if name in ("optimal-mapping",) else "--"
            ax.plot(xs, ys, style, marker="o", markersize=3, label=name)
    ax.axvline(figures.epsilon, color="black", linestyle=":", label=f"target eps = {fmt(figures.epsilon)}")
    ax.set_xscale("log")
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_ylim(0.0, 1.02)
    ax.set_xlabel("epsilon")
    ax.set_ylabel("expected accuracy")
    ax.legend(fontsize=7)
    return svg_text(fig)


def _figure_section(
    estimated: EstimatedPriors, fitted: FittedPriors | None, figures: ReportFigures
) -> list[str]:
    """The figures of :data:`FIGURES` (and ``fig-release`` for a release)."""
    parts = ["<h2>Figures</h2>"]
    parts.append(
        figure_html(
            "fig-priors",
            "Priors per secret",
            priors_figure(estimated, fitted),
            f"P({estimated.public_column} | {estimated.secret_column}) estimated from the table"
            + (f", with the fitted {fitted.model} density" if fitted is not None else "")
            + (
                "; the red lines span P(x) over each secret's prior set (the guarantee holds for "
                "every prior in it)"
                if estimated.scenario.robust
                else ""
            )
            + ".",
        )
    )
    (a, b) = estimated.scenario.pairs[0]
    conditionals = estimated.scenario.priors[0].conditionals
    p_i, p_j = conditionals[a], conditionals[b]
    assert isinstance(p_i, DiscretePrior) and isinstance(p_j, DiscretePrior)
    svg, caption = plan_figure(figures.plan, p_i, p_j, a, b)
    parts.append(figure_html("fig-plan", "Kantorovich transport plan", svg, caption))
    parts.append(
        figure_html(
            "fig-scale-epsilon",
            "Scale versus epsilon",
            _scale_epsilon_figure(figures),
            "Each mechanism's calibrated scale for epsilon from eps/8 to 4 eps (seed 001 Fig 4); "
            "the dotted line is the target epsilon.",
        )
    )
    svg, caption = _loss_scale_figure(figures)
    parts.append(figure_html("fig-loss-scale", "Privacy loss versus scale", svg, caption))
    if figures.matrix is not None and figures.matrix.channel.k <= MATRIX_FIGURE_MAX_K:
        svg, caption = _matrix_figure(figures.matrix, estimated)
        parts.append(figure_html("fig-matrix", "Randomized mapping", svg, caption))
    if figures.accuracy_curves:
        parts.append(
            figure_html(
                "fig-accuracy-epsilon",
                "Accuracy versus epsilon",
                _accuracy_figure(figures),
                "Each mechanism's expected accuracy over the released rows for epsilon from eps/8 "
                "to 4 eps: the randomized mappings release a value of the alphabet, the additive "
                "mechanisms are scored after rounding to the nearest one. optimal-mapping is the "
                "largest accuracy any mechanism can reach for these priors.",
            )
        )
    if figures.released:
        parts.append(
            figure_html(
                "fig-release",
                "Original versus released",
                _release_figure(estimated, figures.released),
                "Per secret: the original distribution of the public column (bars) and the "
                "released values with their noise (density of binned values).",
            )
        )
    return parts


def check_report_path(path: str | Path, *, force: bool = False) -> Path:
    """``path`` as a Path if an HTML report may be written there (before any work is done).

    Raises
    ------
    ValueError
        If ``path`` does not end in ``.html`` (or ``.htm``) or its folder does not exist.
    OutputExistsError
        If ``path`` exists and ``force`` is false.
    """
    out = Path(path)
    if out.suffix.lower() not in (".html", ".htm"):
        raise ValueError(f"report must be an .html file, got {str(out)!r}")
    return check_output_path(out, force=force, kind="report")
