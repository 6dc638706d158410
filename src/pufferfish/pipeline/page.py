"""The page of every HTML report (tables, calibrations, releases, Markov chains): one
self-contained document with inline CSS and inline SVG figures, and the report's JSON embedded in
it (``<script type="application/json" id="report-json">``), so every number shown is also in the
page's data. The sections are :mod:`pufferfish.pipeline.report`'s, the figures
:mod:`pufferfish.pipeline.plots`'.
"""

from __future__ import annotations

import html
import io
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pufferfish.pipeline.public import CONFIDENTIAL
from pufferfish.tables.source import check_output_path

__all__ = [
    "CSS",
    "cell",
    "check_report_path",
    "figure_html",
    "fmt",
    "html_page",
    "row_key",
    "svg_text",
    "table_html",
]


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


def log_axes(ax: Any, *, x: bool = False, y: bool = False) -> None:
    """Log scale on the axes asked, with ticks a reader can read on any span: labels at 1, 2 and 5
    times the powers of ten on a span of at most two decades, at the powers of ten beyond (at most 8
    labels, so they never overlap; on less than a decade matplotlib then labels a linear choice),
    written as plain numbers (``0.5``, not ``5 x 10^-1``: easier to read, and no mathtext to
    typeset, the slowest part of writing a figure); minor ticks unlabelled.
    """
    from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter

    class Readable(LogLocator):
        def tick_values(self, vmin: float, vmax: float) -> Any:
            lo, hi = sorted((max(vmin, 1e-300), max(vmax, 1e-300)))
            subs = (1.0, 2.0, 5.0) if math.log10(hi / lo) <= 2.0 else (1.0,)
            ticks = np.asarray(LogLocator(base=10.0, subs=subs, numticks=8).tick_values(vmin, vmax))
            if np.count_nonzero((ticks >= lo) & (ticks <= hi)) >= 2:
                return ticks
            linear = np.asarray(MaxNLocator(nbins=4).tick_values(lo, hi), dtype=np.float64)  # a narrow span
            return linear[linear > 0]

    plain = FuncFormatter(lambda v, _: f"{v:g}")
    for on, axis, scale in ((x, ax.xaxis, ax.set_xscale), (y, ax.yaxis, ax.set_yscale)):
        if on:
            scale("log")
            axis.set_major_locator(Readable(base=10.0, numticks=8))
            axis.set_major_formatter(plain)
            axis.set_minor_locator(LogLocator(base=10.0, subs="auto", numticks=12))
            axis.set_minor_formatter(NullFormatter())


def curves_svg(curves: Mapping[str, Sequence[tuple[float, float]]], xlabel: str, ylabel: str) -> str:
    """One line per name through its ``(x, y)`` points (sorted by ``x``; a name without points is
    left out), on log axes (:func:`log_axes`), with a legend: a mechanism's scale against epsilon
    or against a series' length.

    Parameters
    ----------
    curves : mapping of str to sequence of (float, float)
        Positive ``x`` and ``y``, per line, in the legend's order.
    xlabel, ylabel : str

    Returns
    -------
    str
        The figure as inline SVG (:func:`svg_text`).
    """
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.0, 3.4))
    ax = fig.subplots()
    for name, points in curves.items():
        ordered = sorted(points)
        if ordered:
            ax.plot([p[0] for p in ordered], [p[1] for p in ordered], marker="o", markersize=3, label=name)
    log_axes(ax, x=True, y=True)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=7)
    return svg_text(fig)


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


CSS = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;color:#222}
table{border-collapse:collapse;margin:0.5em 0 1.5em}
td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px;text-align:left}
th{background:#f2f2f2} figure{margin:1.5em 0} figcaption{font-size:13px;color:#555}
svg{max-width:100%;height:auto} .note{font-size:13px;color:#555}
.confidential{border:2px solid #b00;color:#b00;padding:6px 10px;font-weight:600}
"""


def html_page(title: str, parts: Sequence[str], payload: dict[str, Any]) -> str:
    """One self-contained HTML document: the title, the sections ``parts`` (HTML), and
    ``payload`` embedded as ``<script type="application/json" id="report-json">``."""
    data = json.dumps(payload, allow_nan=False).replace("</", "<\\/")
    warn = f'<p class="confidential" id="confidential">{html.escape(CONFIDENTIAL)}</p>'  # issue 54
    body = "\n".join([f"<h1>{html.escape(title)}</h1>", warn, *parts])
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>\n{body}\n"
        f'<script type="application/json" id="report-json">{data}</script>\n</body></html>\n'
    )


def row_key(row: dict[str, Any]) -> str:
    """The page's key of a result row: its mechanism, with ``@kind`` for a worst case over prior
    sets (the point-estimate ``optimal`` beside a robust one keeps the plain name)."""
    kind = (row.get("prior_set") or {}).get("kind", "none")
    return row["mechanism"] if kind == "none" else f"{row['mechanism']}@{kind}"


def check_report_path(path: str | Path, *, force: bool = False) -> Path:
    """``path`` as a Path if an HTML report may be written there (before any work is done).

    Raises
    ------
    ValueError
        If ``path`` does not end in ``.html`` (or ``.htm``), is a folder, or its folder does not
        exist.
    OutputExistsError
        If ``path`` exists and ``force`` is false.
    """
    out = Path(path)
    if out.suffix.lower() not in (".html", ".htm"):
        raise ValueError(f"report must be an .html file, got {str(out)!r}")
    if out.is_dir():  # never replaced, --force or not (issue 44)
        raise ValueError(f"report {str(out)!r} is a folder: give the path of an .html file")
    return check_output_path(out, force=force, kind="report")
