"""The self-contained HTML reports of a dataset-level calibration (``pufferfish property calibrate
--report``: the model, and for each statistic its exact distribution under each share, the
mechanisms' table at each epsilon and their scales against epsilon) and release (``pufferfish
property release --report``: the released values, the guarantee and the distributions). Every
number shown is one of the embedded JSON payload's.

The pages hold distributions built from the table's rows (and a calibration's page the table's
own statistics and share): they are confidential (each page says so, as every report does).
"""

from __future__ import annotations

import html

import numpy as np
from matplotlib.figure import Figure

from pufferfish.calibration import Calibration
from pufferfish.calibration.registry import Result
from pufferfish.calibration.result import Skipped
from pufferfish.dataset.calibrate import PropertyComparison
from pufferfish.dataset.model import property_scenario
from pufferfish.dataset.release import PropertyRelease
from pufferfish.dataset.statistic import StatisticTooLarge
from pufferfish.pipeline.page import cell, curves_svg, figure_html, fmt, html_page, svg_text, table_html


def property_report_html(found: PropertyComparison) -> str:
    """The report page of :func:`~pufferfish.dataset.calibrate.calibrate_property`'s result.

    Parameters
    ----------
    found : PropertyComparison

    Returns
    -------
    str
        One HTML document with the payload ``found.to_dict()`` embedded.
    """
    model = found.model
    t = model.table
    payload = found.to_dict()
    shares = ", ".join(f"{s:g}" for s in model.shares)
    parts = [
        "<h2>Model</h2>",
        f"<p>Secret: the share of rows with {html.escape(t.prop.text)} among n = {model.rows} rows, one of "
        f"{html.escape(shares)}; every pair protected. Each row has the property with probability equal to "
        "the share and then the values of one of the table's rows with the property (or without): the "
        "point estimate of the conditional distributions. A statistic's prior under a share is its exact "
        "distribution over the n rows (SPEC sec 8), and every scale below passed the exact privacy check "
        "on it, except where a row says it rests on a theorem.</p>",
        f"<p>Table: {html.escape(t.description)}; {t.rows} rows kept ({t.rows_left_out} left out), "
        f"{t.rows_with_property} with the property (share {t.share:.4f}: the secret of this table).</p>",
    ]
    for k, (values, results) in enumerate(zip(t.values, found.results, strict=True)):
        name = values.statistic.text
        parts.append(f"<h2>{html.escape(name)}</h2>")
        parts.append(
            f"<p>The table's own value {fmt(values.total)} (its {t.rows} rows); the per-row values span "
            f"{fmt(values.value_range)}.</p>"
        )
        parts.append(
            table_html(
                ["epsilon", "mechanism", "scale", "checked", "bound", "decided by / why not"],
                [_row(r, k) for r in results],
                f"mechanisms-{k}",
            )
        )
        used = [r for r in results if isinstance(r, Calibration)]
        if len({r.epsilon for r in used}) >= 2:
            caption = "Each mechanism's scale against epsilon (log axes): less is less noise, same guarantee."
            parts.append(
                figure_html(f"fig-scales-{k}", f"Scale against epsilon: {name}", _curve(used), caption)
            )
        scenario = found.scenarios[k] if found.scenarios else property_scenario(model, k)
        if scenario is None:
            parts.append("<p>Its exact distribution is too large to compute: see the theorems below.</p>")
            continue
        caption = (
            f"The exact distribution of {name} over n = {model.rows} rows under each share (before noise)."
        )
        parts.append(figure_html(f"fig-priors-{k}", f"{name} under each share", _priors(scenario), caption))
    if found.theorems:
        parts.append("<h2>Certified by a theorem (no exact distribution)</h2>")
        parts.append(
            "<p>Product Laplace noise on the statistics listed, pure eps, certified by the theorem named "
            "(row-composition: one row's exact loss composed through the binomial count of rows with the "
            "property; wasserstein-coupling: seed 002 Thm 1 on the coupling of the shares).</p>"
        )
        rows = [
            [
                cell(", ".join(t.queries)), cell(fmt(t.epsilon)), cell(t.mechanism, f"theorem:{j}"),
                cell(", ".join(fmt(x) for x in t.scales), f"theorem:{j}:scales"), cell(fmt(t.l2_error)),
                cell(fmt(t.loss)), cell(t.checked),
            ]
            for j, t in enumerate(found.theorems)
        ]  # fmt: skip
        heads = ["statistics", "epsilon", "mechanism", "scales", "L2 error (rms)", "loss <=", "checked"]
        parts.append(table_html(heads, rows, "theorems"))
    return html_page("Pufferfish privacy for a property of the table", parts, payload)


def release_report_html(found: PropertyRelease) -> str:
    """The report page of :func:`~pufferfish.dataset.release.release_property`'s result: the
    released values and their noise, the guarantee, and each statistic's exact distribution under
    each share where it was computed (confidential: built from the table's rows).

    Parameters
    ----------
    found : PropertyRelease

    Returns
    -------
    str
        One HTML document with the public output (:meth:`PropertyRelease.to_dict`) embedded.
    """
    payload = found.to_dict()
    parts = [
        "<h2>Released</h2>",
        table_html(
            ["statistic", "released value", "noise", "scale"],
            [
                [
                    cell(r["query"]),
                    cell(fmt(r["value"]), f"{r['query']}:value"),
                    cell(r["noise"]),
                    cell(fmt(r["scale"]), f"{r['query']}:scale"),
                ]
                for r in payload["released"]
            ],
            "released",
        ),
        f"<p>Mechanism: {html.escape(found.mechanism)}. Guarantee: {html.escape(payload['guarantee'])}.</p>",
        f"<p>Checked: {html.escape(found.checked)}.</p>",
    ]
    for k, values in enumerate(found.model.table.values):
        try:  # the release's own scenario when it computed one (one statistic checked exactly)
            scenario = found.scenario if found.scenario is not None else property_scenario(found.model, k)
        except StatisticTooLarge:
            continue  # its exact distribution was not computed: nothing to draw
        name = values.statistic.text
        caption = f"The exact distribution of {name} over n = {found.model.rows} rows under each share."
        parts.append(figure_html(f"fig-priors-{k}", f"{name} under each share", _priors(scenario), caption))
    return html_page("Pufferfish privacy for a property of the table: release", parts, payload)


def _row(r: Result | Skipped, k: int) -> list[str]:
    key = f"{k}:{r.mechanism}:{r.epsilon:g}"
    if not isinstance(r, Calibration):
        reason = getattr(r, "reason", "")
        return [cell(fmt(r.epsilon)), cell(r.mechanism, key), cell("-"), cell("-"), cell("-"), cell(reason)]
    checked = r.checked_loss if r.checked_delta is None else r.checked_delta
    what = "loss" if r.checked_delta is None else "delta"
    return [
        cell(fmt(r.epsilon)),
        cell(r.mechanism, key),
        cell(fmt(r.scale), f"{key}:scale"),
        cell(f"{what} {fmt(checked)}"),
        cell(f"{r.check_error_bound:.2g}"),
        cell(r.decided_by),
    ]


def _curve(used: list[Calibration]) -> str:
    names = dict.fromkeys(r.mechanism for r in used)
    points = {m: [(r.epsilon, r.scale) for r in used if r.mechanism == m and r.scale > 0] for m in names}
    return curves_svg(points, "epsilon", "noise scale")


def _priors(scenario: object) -> str:
    fig = Figure(figsize=(6.0, 3.0))
    ax = fig.subplots()
    prior = scenario.priors[0]  # type: ignore[attr-defined]
    colours = ["#4477aa", "#ee6677", "#228833", "#ccbb44", "#66ccee"]
    for n, (secret, p) in enumerate(prior.conditionals.items()):
        keep = p.pmf > 1e-12 * float(np.max(p.pmf))  # drawn where visible; the check reads every point
        ax.plot(
            p.support[keep], p.pmf[keep], drawstyle="steps-mid", color=colours[n % len(colours)], label=secret
        )
    ax.set_xlabel("statistic (before noise)")
    ax.set_ylabel("probability")
    ax.legend()
    return svg_text(fig)
