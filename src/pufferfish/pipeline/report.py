"""The self-contained HTML report of a calibration or a release, of one public column or several:
its sections (inputs, mechanisms, the release, the figures) from the JSON payload and precomputed
results only (:mod:`pufferfish.pipeline.figures`), on the page of :mod:`pufferfish.pipeline.page`
with the figures of :mod:`pufferfish.pipeline.plots`. One builder, :func:`build_report`, for any
number of columns: one column's sections show its priors per value, mapping and fitted priors;
several columns' their units, codes, the joint priors' sizes and each column's drawn channel.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pufferfish.calibration import Calibration, MappingCalibration, Skipped
from pufferfish.pipeline.page import cell, figure_html, fmt, html_page, row_key, table_html
from pufferfish.pipeline.plots import (
    MATRIX_FIGURE_MAX_K,
    accuracy_figure,
    joint_loss_figure,
    joint_plans_figure,
    joint_priors_caption,
    joint_priors_figure,
    joint_release_figure,
    label_release_figure,
    loss_scale_figure,
    mapping_loss_figure,
    matrix_figure,
    plan_distances_figure,
    plan_figure,
    priors_figure,
    release_figure,
    scale_epsilon_figure,
)
from pufferfish.priors.distributions import DiscretePrior
from pufferfish.priors.sets import prior_scope, set_label
from pufferfish.tables.estimate import EstimatedPriors
from pufferfish.tables.fit import FittedPriors
from pufferfish.tables.model import label_text

if TYPE_CHECKING:
    from pufferfish.pipeline.figures import JointReportFigures, ReportFigures
    from pufferfish.pipeline.results import TableCalibration

__all__ = ["FIGURES", "JOINT_FIGURES", "MAPPING_FIGURES", "build_report"]

#: Figures of a one-column report whose comparison has a mechanism adding noise (``id`` of the
#: ``<figure>``), in page order: the priors, then the transport plan, scale versus epsilon and
#: loss versus scale; a release adds ``fig-release``, and a comparison with randomized mappings
#: :data:`MAPPING_FIGURES`. A comparison of mappings only (a categorical column's default) has
#: the priors, :data:`MAPPING_FIGURES` and, for a release, the labels in and out (``fig-release``).
FIGURES = ("fig-priors", "fig-plan", "fig-scale-epsilon", "fig-loss-scale")

#: Figures of a comparison with randomized mappings: the matrix, accuracy versus epsilon and the
#: checked loss versus epsilon.
MAPPING_FIGURES = ("fig-matrix", "fig-accuracy-epsilon", "fig-mapping-loss")

#: Figures of every joint report (``id`` of the ``<figure>``), in page order; a release adds
#: ``fig-release``.
JOINT_FIGURES = ("fig-joint-priors", "fig-plans", "fig-plan-distances", "fig-loss-scale")


def build_report(
    payload: dict[str, Any],
    *,
    table: TableCalibration,
    figures: ReportFigures | JointReportFigures,
    title: str,
) -> str:
    """The HTML text of the report of a calibration or a release, drawn from precomputed results
    only, for one public column or several.

    Parameters
    ----------
    payload : dict
        The JSON report (:func:`pufferfish.pipeline.results.report_dict`: ``calibrate --json`` or
        the release's ``.report.json``); it is embedded in the page, and the tables show its
        numbers.
    table : TableCalibration
        The calibration: one column's estimate (inputs, mapping, empirical and fitted priors) or
        several columns' joint priors, columns, units and labels.
    figures : ReportFigures or JointReportFigures
        The numbers behind the figures (:func:`pufferfish.pipeline.figures.report_figures` for
        one column: the comparison at the target epsilon, the scale-versus-epsilon curves, the
        loss-versus-scale curve, the transport plan and, for a release, the binned released
        values; :func:`pufferfish.pipeline.figures.joint_report_figures` for several: the plans,
        the loss curve and each column's released values).
    title : str
        Page title.

    Returns
    -------
    str
        One self-contained HTML document (inline CSS and SVG; no external resource).

    Notes
    -----
    One column (:data:`FIGURES`): priors per secret; the Kantorovich plan of the first pair as a
    heat map (seed 001 Fig 2a); scale versus epsilon for every mechanism (seed 001 Fig 4); the
    exact privacy loss (SPEC sec 2.1) or checked delta versus the scale with the target marked;
    with randomized mappings, the matrix as a heat map and every mechanism's accuracy versus
    epsilon; for a release the original and released distributions per secret. Several columns
    (:data:`JOINT_FIGURES`): the joint priors, the plans of the first pair, the distance moved
    under each plan, the exact loss against ``b``, and for a release each column's original and
    released distributions.
    """
    if len(table.columns) > 1:
        assert not hasattr(figures, "curves"), "several columns: joint_report_figures"
        parts = _joint_sections(payload, table, figures)  # type: ignore[arg-type]
        return html_page(title, parts, payload)
    estimated = table.estimated
    assert isinstance(estimated, EstimatedPriors)
    one: ReportFigures = figures  # type: ignore[assignment]
    parts = _input_sections(payload, estimated, one)
    parts += _mechanism_section(payload, one, numeric=not estimated.categorical)
    parts += _figure_section(estimated, table.fitted, one)
    return html_page(title, parts, payload)


def _inputs_table(inputs: dict[str, Any]) -> str:
    """The table of the inputs as given: text as written, numbers rounded for reading (6
    significant digits; the JSON keeps every digit), other values as JSON."""
    rows = [[cell(k), cell(_readable(v), f"input:{k}")] for k, v in inputs.items()]
    return table_html(["input", "value"], rows, "inputs")


def _readable(value: Any) -> str:
    """An input as shown: a float by :func:`fmt`, a list item by item, text as written."""
    if isinstance(value, str):
        return value
    if isinstance(value, float):
        return fmt(value)
    if isinstance(value, list) and any(isinstance(v, float) for v in value):
        return (
            "["
            + ", ".join(_readable(v) if isinstance(v, (float, list)) else json.dumps(v) for v in value)
            + "]"
        )
    return json.dumps(value)


def _not_used(comparison: Sequence[Calibration | MappingCalibration | Skipped]) -> list[str]:
    """The mechanisms that were not used, each with its reason (none: nothing)."""
    skipped = [c for c in comparison if isinstance(c, Skipped)]
    if not skipped:
        return []
    items = "".join(f"<li>{html.escape(s.mechanism)}: {html.escape(s.reason)}</li>" for s in skipped)
    return [f'<p class="note">Not used:</p><ul class="note">{items}</ul>']


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
    if not figures.additive and "noise" in inputs:  # only mappings compared: no noise is added
        inputs = {**inputs, "noise": f"{inputs['noise']} (not used: the mechanisms compared release labels)"}
    parts = ["<h2>Inputs</h2>", _inputs_table(inputs)]
    rows = [
        [cell("rows in the table"), cell(fmt(estimated.rows_total), "rows_total")],
        [cell("rows dropped from the estimate"), cell(fmt(estimated.rows_dropped), "rows_dropped")],
    ] + [
        [cell(f"rows with secret {g.secret}"), cell(fmt(g.rows), f"rows:{g.secret}")]
        for g in estimated.groups
    ]
    parts.append(table_html(["count", "value"], rows, "counts"))
    domain = payload.get("domain")
    if isinstance(domain, dict):  # where the prior sets live (issue 41)
        parts.append(f'<p class="note" id="domain">Domain: {html.escape(str(domain["text"]))}.</p>')
    atom = payload.get("missing_atom")
    if isinstance(atom, dict):  # a numeric column's missing cells, inside the check (issue 41)
        rates = "; ".join(f"{s}: {fmt(m)} ({atom['rows'][s]} rows)" for s, m in atom["rates"].items())
        text = (
            f"Missing cells of {atom['column']}, published as missing: rate {rates}; interval "
            f"{atom['interval']}; loss of 'missing' alone {fmt(atom['atom_loss'])}; the present values "
            f"are calibrated at epsilon' = epsilon - {fmt(atom['offset'])} "
            f"({', '.join(fmt(e) for e in atom['present_epsilons'])})."
        )
        parts.append(f'<p class="note" id="missing-atom">{html.escape(text)}</p>')
    if estimated.categorical:
        parts.append("<h2>Category to code</h2>")
        parts.append(
            table_html(
                ["label", "code"],
                [
                    [cell(label_text(label)), cell(code, f"code:{label_text(label)}")]
                    for label, code in estimated.mapping
                ],
                "mapping",
            )
        )
    return parts


def _mechanism_section(payload: dict[str, Any], figures: ReportFigures, *, numeric: bool = True) -> list[str]:
    """The mechanisms table (numbers from the JSON rows), what was not used, and the choice. The
    noise, scale and variance columns appear only when a mechanism adds noise
    (:attr:`ReportFigures.additive`), the mean absolute error only for a numeric column (a label
    has no distance)."""
    parts = ["<h2>Mechanisms</h2>"]
    comparison, additive = figures.comparison, figures.additive
    rows = [c.to_dict() for c in comparison if not isinstance(c, Skipped)]
    columns: list[tuple[str, Any]] = [
        ("mechanism", lambda d, key: cell(d["mechanism"])),
        ("priors", lambda d, key: cell(set_label(d["prior_set"]))),
    ]
    if additive:
        columns += [
            ("noise", lambda d, key: cell(d["noise"])),
            ("scale", lambda d, key: cell(fmt(d["scale"]), f"scale:{key}")),
            ("noise variance", lambda d, key: cell(fmt(d["variance"]), f"variance:{key}")),
        ]
    columns += [
        ("checked (loss, delta or I)", lambda d, key: cell(fmt(_checked(d)), f"checked:{key}")),
        ("expected accuracy", lambda d, key: cell(fmt(d["expected_accuracy"]), f"accuracy:{key}")),
    ]
    if numeric:
        columns.append(
            ("mean abs error", lambda d, key: cell(fmt(d["expected_abs_error"]), f"abs_error:{key}"))
        )
    columns.append(("source", lambda d, key: cell(d["source"])))
    mech_rows = [[make(d, row_key(d)) for _, make in columns] for d in rows]
    parts.append(table_html([name for name, _ in columns], mech_rows, "mechanisms"))
    accuracy = (
        "Expected accuracy: the probability that a released value (rounded to the nearest value of the "
        "alphabet, for additive noise) equals the true one"
        if additive
        else "Expected accuracy: the probability that a released label is the true one"
    )
    accuracy += "; mean abs error: E|released - true|" if numeric else ""
    parts.append(f'<p class="note">{accuracy}, over the released rows.</p>')
    parts += _not_used(comparison)
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
        sentences = [f"Noise: {str(noise['sampler']).rstrip('.')}."]
        sentences += [f"{str(rounding).rstrip('.')}."] if rounding else []
        sentences += [f"Checked on {str(checked).rstrip('.')}."] if checked else []
        text = " ".join(sentences)
        parts.append(f'<p class="note" id="release-noise">{html.escape(text)}</p>')
        if noise.get("counts"):
            parts.append(_counts_table(noise["counts"]))
    if payload.get("guarantee"):
        parts.append(f'<p class="note">{html.escape(str(payload["guarantee"]))}</p>')
    parts.extend(_output_columns(payload.get("output_columns")))
    return parts


def _checked(d: dict[str, Any]) -> Any:
    """A JSON row's checked number: its loss, else its delta, else its mutual information."""
    for key in ("checked_loss", "checked_delta", "checked_information"):
        if d[key] is not None:
            return d[key]
    return None


def _output_columns(cols: Any) -> list[str]:
    """One paragraph: the columns the output holds, which the guarantee covers, the columns kept
    in clear outside the check (issue 41)."""
    if not isinstance(cols, dict):
        return []
    text = (
        f"Written: {', '.join(cols['written'])}; covered by the guarantee: "
        f"{', '.join(cols['covered_by_the_guarantee'])}; not written: {cols['not_written']}."
    )
    for kept in cols.get("kept_unchecked", []):
        text += (
            f" {kept['column']} is kept in clear, NOT covered: assumed {kept['assumed']} (its loss alone, "
            f"a lower bound: {kept['loss_of_the_column_alone']})."
        )
    if whole := cols.get("whole_record"):
        loss = whole["loss"] if whole["loss"] is not None else f"not measured ({whole['not_measured']})"
        text += f" The whole written record's loss at the estimate: {loss}."
    if order := cols.get("row_order"):
        text += f" Rows: {order}."
    return [f'<p class="note" id="output-columns">{html.escape(text)}</p>']


def _counts_table(counts: dict[str, Any]) -> str:
    """A mapping's released rows per value, in the input and in the output, side by side."""
    cells = []
    for v, a, b in zip(counts["values"], counts["input"], counts["output"], strict=True):
        name = html.escape(label_text(v))
        cells.append(
            f'<tr><td>{name}</td><td data-key="count-in:{name}">{a}</td>'
            f'<td data-key="count-out:{name}">{b}</td></tr>'
        )
    rows = "".join(cells)
    return (
        '<table id="label-counts"><caption>Released rows per value: input and output</caption>'
        f"<tr><th>value</th><th>input</th><th>output</th></tr>{rows}</table>"
    )


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
    if figures.additive:  # figures of added noise: only when a mechanism compared adds noise
        parts += _additive_figures(estimated, figures)
    if figures.matrix is not None and figures.matrix.channel.k <= MATRIX_FIGURE_MAX_K:
        svg, caption = matrix_figure(figures.matrix, estimated)
        parts.append(figure_html("fig-matrix", "Randomized mapping", svg, caption))
    if figures.accuracy_curves:
        parts.append(
            figure_html(
                "fig-accuracy-epsilon",
                "Accuracy versus epsilon",
                accuracy_figure(figures),
                "Each mechanism's expected accuracy over the released rows for epsilon from eps/8 "
                "to 4 eps: the randomized mappings release a value of the alphabet"
                + (
                    ", the additive mechanisms are scored after rounding to the nearest one"
                    if figures.additive
                    else ""
                )
                + ". optimal-mapping is the largest accuracy any mechanism can reach for these priors.",
            )
        )
    if figures.mapping_loss_curves:
        parts.append(
            figure_html(
                "fig-mapping-loss",
                "Privacy loss versus epsilon",
                mapping_loss_figure(figures),
                "Each randomized mapping's checked privacy loss (SPEC sec 2.1, the exact check of its "
                "matrix) at the budgets of the accuracy figure; a mapping is valid at epsilon where its "
                "point is on or below the grey line. randomized-response-dp is valid for every prior, "
                "so it stays below the line for these priors.",
            )
        )
    if figures.released_labels:
        parts.append(
            figure_html(
                "fig-release",
                "Labels in the table and in the release",
                label_release_figure(estimated, figures.released),
                "Per secret: each label's share of the secret's rows in the table (blue) and in the "
                "released column (red); a missing cell counts as the label (missing).",
            )
        )
    elif figures.released:
        parts.append(
            figure_html(
                "fig-release",
                "Original versus released",
                release_figure(estimated, figures.released),
                "Per secret: the original distribution of the public column (bars) and the "
                "released values with their noise (density of binned values).",
            )
        )
    return parts


def _additive_figures(estimated: EstimatedPriors, figures: ReportFigures) -> list[str]:
    """The transport plan, scale versus epsilon and loss versus scale (mechanisms adding noise)."""
    (a, b) = estimated.scenario.pairs[0]
    conditionals = estimated.scenario.priors[0].conditionals
    p_i, p_j = conditionals[a], conditionals[b]
    assert isinstance(p_i, DiscretePrior) and isinstance(p_j, DiscretePrior)
    svg, caption = plan_figure(figures.plan, p_i, p_j, a, b)
    parts = [figure_html("fig-plan", "Kantorovich transport plan", svg, caption)]
    parts.append(
        figure_html(
            "fig-scale-epsilon",
            "Scale versus epsilon",
            scale_epsilon_figure(figures),
            "Each mechanism's calibrated scale for epsilon from eps/8 to 4 eps (seed 001 Fig 4); "
            "the dotted line is the target epsilon.",
        )
    )
    svg, caption = loss_scale_figure(figures)
    parts.append(figure_html("fig-loss-scale", "Privacy loss versus scale", svg, caption))
    return parts


def _joint_sections(
    payload: dict[str, Any], table: TableCalibration, figures: JointReportFigures
) -> list[str]:
    """Several columns: inputs, mechanisms, the release (if any) and :data:`JOINT_FIGURES`."""
    parts = _joint_inputs(payload, table)
    parts += _joint_mechanisms(payload, figures.comparison)
    if payload.get("release"):
        parts += _joint_release(payload["release"], table)
    parts.append("<h2>Figures</h2>")
    parts.append(
        figure_html(
            "fig-joint-priors",
            "Joint priors per secret",
            joint_priors_figure(table),
            joint_priors_caption(table),
        )
    )
    svg, caption = joint_plans_figure(table, figures)
    parts.append(figure_html("fig-plans", "Transport plans of the first pair", svg, caption))
    svg, caption = plan_distances_figure(figures)
    parts.append(figure_html("fig-plan-distances", "Distance moved under each plan", svg, caption))
    svg, caption = joint_loss_figure(figures)
    parts.append(figure_html("fig-loss-scale", "Privacy loss versus scale", svg, caption))
    if figures.released:
        svg, caption = joint_release_figure(table, figures)
        parts.append(figure_html("fig-release", "Original versus released, per column", svg, caption))
    return parts


def _joint_inputs(payload: dict[str, Any], table: TableCalibration) -> list[str]:
    """Inputs, columns with their units, counts, and the coding of categorical columns."""
    parts = ["<h2>Inputs</h2>", _inputs_table(payload["inputs"])]
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
                [
                    [cell(label_text(lab)), cell(k, f"code:{c}:{label_text(lab)}")]
                    for k, lab in enumerate(labels)
                ],
                f"codes-{c}",
            )
        )
    ps = payload["prior_set"]
    scope = prior_scope(None if ps["kind"] == "none" else ps, "empirical joint")
    parts.append(f'<p class="note">Priors: {html.escape(scope)} {html.escape(payload["channel"])}.</p>')
    return parts


def _joint_mechanisms(
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
    parts += _not_used(comparison)
    return parts


def _joint_release(release: dict[str, Any], table: TableCalibration) -> list[str]:
    """The mechanism used and the noise drawn on each column."""
    parts = ["<h2>Release</h2>"]
    parts.append(
        '<p>Released with <b>{}</b>: scale b = <span data-key="chosen:scale">{}</span>, exact loss '
        '<span data-key="chosen:checked">{}</span> &le; epsilon {}; {} rows with noise on every column, '
        "{} with a "
        "missing number (that cell written missing inside the check, the others as drawn). "
        "Output: {}.</p>".format(
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
        elif noise["kind"] == "randomized-response" and noise["keep_probability"] == 1.0:
            how = "released as it is (a kept column, or no noise needed), inside the check"
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
    parts.extend(_output_columns(release.get("output_columns")))
    if release.get("insecure"):
        parts.append('<p class="note"><b>Seeded, insecure sampler: for experiments only.</b></p>')
    return parts
