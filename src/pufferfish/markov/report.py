"""The self-contained HTML report of a count on a Markov chain (``pufferfish markov calibrate
--report``): the model and what is certified, the mechanisms' table, the scales, and the count
priors of the pair that decided the exact optimum. Every number shown is one of the embedded
JSON payload's (the comparison rows of :func:`~pufferfish.calibration.compare`)."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from ..calibration import Calibration, MappingCalibration, Skipped
from ..priors import DiscretePrior
from ..report import cell, figure_html, fmt, html_page, svg_text, table_html
from ..scenario import Scenario
from ..tables.source import write_text

Result = Calibration | MappingCalibration | Skipped


def markov_report_html(
    scenario: Scenario, results: tuple[Result, ...], payload: dict[str, Any], certified: list[str]
) -> str:
    """The report page.

    Parameters
    ----------
    scenario : Scenario
        From :func:`~.counts.count_scenario` (its ``model`` is the :class:`~.counts.CountModel`).
    results : tuple
        The comparison at one epsilon.
    payload : dict
        The JSON embedded in the page (the CLI's ``--json`` object).
    certified : list of str
        What holds for the whole class (the CLI's statement).

    Returns
    -------
    str
        One HTML document.
    """
    model = scenario.model
    chain = model.chains[0]
    parts = [
        "<h2>Model</h2>",
        f"<p>{chain.k} states ({html.escape(', '.join(chain.states))}), T = {model.length}, query "
        f"{html.escape(model.query)} of state {html.escape(model.target)} "
        f"(sensitivity {fmt(model.sensitivity)}). "
        "Secrets X[i]=a for every time i and state a; pairs (X[i]=a, X[i]=b). The priors "
        "P(count | X[i]=a) are exact (forward-backward convolution), and every scale below passed "
        f"the exact privacy check on each of them.</p><p>Certified: {html.escape('; '.join(certified))}. "
        f"Chains checked: {len(scenario.priors)}.</p>",
        table_html(
            ["from \\ to", *chain.states],
            [
                [cell(a), *(cell(fmt(float(x))) for x in chain.transition[n])]
                for n, a in enumerate(chain.states)
            ],
            "transition",
        ),
        "<h2>Mechanisms</h2>",
        table_html(
            ["mechanism", "Laplace scale", "checked loss", "bound", "pair", "decided by / why not"],
            [_row(r) for r in results],
            "mechanisms",
        ),
    ]
    used = [r for r in results if isinstance(r, Calibration)]
    if used:
        caption = (
            "The calibrated scale of each mechanism (log scale): less is less noise for the same guarantee."
        )
        parts.append(figure_html("fig-scales", "Laplace scale per mechanism", _scales_figure(used), caption))
    best = next((r for r in used if r.mechanism == "optimal"), None)
    if best is not None:
        rho = next(p for p in scenario.priors if p.name == best.prior)
        p_i, p_j = (rho.conditionals[s] for s in best.pair)
        assert isinstance(p_i, DiscretePrior) and isinstance(p_j, DiscretePrior)
        title = f"Count priors of the binding pair {best.pair[0]} vs {best.pair[1]}"
        caption = (
            f"P(count | secret) for the pair whose exact loss decided the optimal scale {fmt(best.scale)} "
            f"({best.prior})."
        )
        parts.append(figure_html("fig-priors", title, _priors_figure(p_i, p_j, best.pair), caption))
    return html_page("Pufferfish privacy for a count on a Markov chain", parts, payload)


def _row(r: Result) -> list[str]:
    key = r.mechanism
    if isinstance(r, Skipped):
        return [cell(key, "mechanism"), cell("-"), cell("-"), cell("-"), cell("-"), cell(r.reason, key)]
    assert isinstance(r, Calibration)
    return [
        cell(key, "mechanism"),
        cell(fmt(r.scale), f"{key}:scale"),
        cell(fmt(r.checked_loss), f"{key}:loss"),
        cell(f"{r.check_error_bound:.2g}"),
        cell(f"{r.pair[0]} vs {r.pair[1]}"),
        cell(r.decided_by),
    ]


def _scales_figure(used: list[Calibration]) -> str:
    fig = Figure(figsize=(6.0, 0.35 * len(used) + 1.2))
    ax = fig.subplots()
    names = [r.mechanism for r in used]
    ax.barh(names, [max(r.scale, 1e-12) for r in used], color="#4477aa")
    ax.set_xscale("log")
    ax.set_xlabel("Laplace scale")
    ax.invert_yaxis()
    return svg_text(fig)


def _priors_figure(p_i: DiscretePrior, p_j: DiscretePrior, pair: tuple[str, str]) -> str:
    fig = Figure(figsize=(6.0, 3.0))
    ax = fig.subplots()
    width = float(np.min(np.diff(p_i.support))) * 0.4 if p_i.support.size > 1 else 0.4
    ax.bar(p_i.support - width / 2, p_i.pmf, width=width, label=pair[0], color="#4477aa")
    ax.bar(p_j.support + width / 2, p_j.pmf, width=width, label=pair[1], color="#ee6677")
    ax.set_xlabel("released value (before noise)")
    ax.set_ylabel("probability")
    ax.legend()
    return svg_text(fig)


def write_markov_report(page: str, path: str | Path, *, force: bool = False) -> Path:
    """Write the page atomically (:func:`pufferfish.tables.source.write_text`)."""
    return write_text(page, Path(path), force=force, kind="report")
