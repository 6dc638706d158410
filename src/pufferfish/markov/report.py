"""The self-contained HTML report of a count on a Markov chain (``pufferfish markov calibrate
--report``, ``markov release --report``): the model and what is certified, the mechanisms' table,
the scales, the scales against the length ``T``, and the count priors of the pair that decided the
exact optimum. Every number shown is one of the embedded
JSON payload's (the comparison rows of :func:`~pufferfish.calibration.compare`)."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from pufferfish.calibration import Calibration, MappingCalibration, Skipped
from pufferfish.markov.counts import Binding, CountModel
from pufferfish.pipeline.page import (
    cell,
    curves_svg,
    figure_html,
    fmt,
    html_page,
    svg_text,
    table_html,
)
from pufferfish.priors.distributions import DiscretePrior
from pufferfish.tables.source import write_text

Result = Calibration | MappingCalibration | Skipped


def markov_report_html(
    model: CountModel,
    results: tuple[Result, ...],
    payload: dict[str, Any],
    certified: list[str],
    *,
    chains_checked: int,
    binding: Binding | None = None,
    curve: dict[int, tuple[Result, ...]] | None = None,
) -> str:
    """The report page.

    Parameters
    ----------
    model : CountModel
        The chain (or class), ``T``, target and query.
    results : tuple
        The comparison at one epsilon and ``T = model.length``.
    payload : dict
        The JSON embedded in the page (the CLI's ``--json`` object, or a release's report).
    certified : list of str
        What holds for the whole class (the CLI's statement).
    chains_checked : int
        How many chains (or starts) every scale was checked on.
    binding : Binding, optional
        The count priors of the optimal scale's binding pair (:func:`binding_priors`).
    curve : dict, optional
        ``T -> results`` at several lengths: drawn as the scale against ``T`` (two lengths or more).

    Returns
    -------
    str
        One HTML document.
    """
    chain = model.chains[0]
    parts = [
        "<h2>Model</h2>",
        f"<p>{chain.k} states ({html.escape(', '.join(chain.states))}), T = {model.length}, query "
        f"{html.escape(model.query)} of state {html.escape(model.target)} "
        f"(sensitivity {fmt(model.sensitivity)}). "
        "Secrets X[i]=a for every time i and state a; pairs (X[i]=a, X[i]=b). The priors "
        "P(count | X[i]=a) are exact (forward-backward convolution), and every scale below passed "
        f"the exact privacy check on each of them.</p><p>Certified: {html.escape('; '.join(certified))}. "
        f"Chains checked: {chains_checked}.</p>",
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
        caption = "The calibrated scale of each mechanism: less is less noise for the same guarantee."
        parts.append(figure_html("fig-scales", "Laplace scale per mechanism", _scales_figure(used), caption))
    if curve is not None and len(curve) >= 2:
        caption = (
            f"The calibrated scale of each mechanism against the length T ({len(curve)} lengths: "
            f"{', '.join(str(t) for t in sorted(curve))}); group DP grows as T / eps, the exact "
            "optimum stops growing once T exceeds the chain's memory."
        )
        parts.append(figure_html("fig-length", "Laplace scale against T", _length_figure(curve), caption))
    if binding is not None:
        title = f"Count priors of the binding pair {binding.pair[0]} vs {binding.pair[1]}"
        caption = (
            f"P(count | secret) for the pair whose exact loss decided the optimal scale {fmt(binding.scale)} "
            f"({binding.prior})."
        )
        figure = _priors_figure(binding.prior_i, binding.prior_j, binding.pair)
        parts.append(figure_html("fig-priors", title, figure, caption))
    return html_page("Pufferfish privacy for a count on a Markov chain", parts, payload)


def length_ladder(length: int) -> list[int]:
    """The lengths of the report's scale-against-T figure: 10, 20, 50, 100, 200, 500 below ``T``,
    and ``T``."""
    return sorted({t for t in (10, 20, 50, 100, 200, 500) if t < length} | {int(length)})


def _length_figure(curve: dict[int, tuple[Result, ...]]) -> str:
    lengths = sorted(curve)
    names = dict.fromkeys(r.mechanism for t in lengths for r in curve[t] if isinstance(r, Calibration))
    points = {
        name: [
            (t, r.scale)
            for t in lengths
            for r in curve[t]
            if isinstance(r, Calibration) and r.mechanism == name and r.scale > 0
        ]
        for name in names
    }
    return curves_svg(points, "T (length of the series)", "Laplace scale")


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
    ax.barh(names, [r.scale for r in used], color="#4477aa")  # from 0: a bar's length is its scale
    ax.set_xlim(0.0, None)
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
