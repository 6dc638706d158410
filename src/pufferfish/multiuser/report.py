"""The self-contained HTML report of a sum over users (``pufferfish multiuser --report``,
``multiuser-release --report``; seed 000): the users, the mechanisms' table, the scale of each
mechanism against epsilon, the query's distributions under the two secrets of the user that
decides the scale and, for a release, the released sum and its noise. Every number shown is one
of the embedded JSON payload's (the command's ``--json`` object)."""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from pufferfish.multiuser.system import MultiUserSystem, query_priors
from pufferfish.pipeline.page import cell, figure_html, fmt, html_page, log_axes, svg_text, table_html
from pufferfish.priors.distributions import DiscretePrior
from pufferfish.tables.source import write_text


def sum_report_html(
    system: MultiUserSystem, pair_set: str, rows: Sequence[dict[str, Any]], payload: dict[str, Any]
) -> str:
    """The report page of a sum's calibration or release.

    Parameters
    ----------
    system : MultiUserSystem
        The users (each one's presence and distribution).
    pair_set : {"ab", "a-bot", "P-bot", "P-Q"}
        The secrets protected (seed 000 sec 4).
    rows : sequence of dict
        The comparison's JSON rows (``mechanism``, ``epsilon``, ``scale``, ``checked_loss``,
        ``source``, ``user``; a row that does not apply has ``reason``; the optimal scale over
        every user has ``users`` and ``certified_alone``).
    payload : dict
        The JSON embedded in the page; a release's has ``released_sum`` and ``noise``.

    Returns
    -------
    str
        One HTML document.
    """
    parts = ["<h2>Users</h2>", _users_table(system)]
    parts.append(
        f"<p>Pair set {html.escape(pair_set)} (seed 000 sec 4) for "
        f"{html.escape(str(payload.get('user') or 'every user'))}: the released value is the sum of "
        "the users' values plus Laplace noise, and every scale below passed the exact privacy check "
        "on the sum's distributions under the two secrets (seed 000 eq 7-9).</p>"
    )
    parts += ["<h2>Mechanisms</h2>", _mechanisms_table(rows)]
    if "released_sum" in payload:
        noise = payload.get("noise") or {}
        parts.append(
            f'<p>Released sum <b data-key="released_sum">{fmt(payload["released_sum"])}</b> with '
            f"<b>{html.escape(str(payload['mechanism']))}</b>: Laplace scale "
            f'<span data-key="scale">{fmt(payload["scale"])}</span> at epsilon {fmt(payload["epsilon"])}. '
            f"Noise: {html.escape(str(noise.get('sampler', '')).rstrip('.'))}. The true sum and the "
            "users' values are not written.</p>"
        )
    scaled = [r for r in rows if r.get("scale") is not None]
    if scaled:
        parts.append(
            figure_html(
                "fig-scales",
                "Laplace scale per mechanism",
                _scales_figure(scaled),
                "Each mechanism's calibrated Laplace scale on the sum at each epsilon: less is less "
                "noise for the same guarantee (seed 000's theorems beside the exact optimum).",
            )
        )
    decider = _decider(rows)
    if decider is not None:
        (a, p_a), (b, p_b) = query_priors(system, decider, pair_set)
        parts.append(
            figure_html(
                "fig-priors",
                f"The sum under the two secrets of {html.escape(decider)}",
                _priors_figure(p_a, p_b, (a, b)),
                f"P(sum | secret) for the user whose pair decides the optimal scale "
                f"({html.escape(decider)}): the noise must hide the difference between these two "
                "distributions.",
            )
        )
    return html_page(f"Pufferfish privacy for a sum over users ({pair_set})", parts, payload)


def _users_table(system: MultiUserSystem) -> str:
    rows = []
    for u in system.users:
        mean = float(np.dot(u.prior.support, u.prior.pmf))
        rows.append(
            [
                cell(u.name),
                cell(fmt(u.presence), f"presence:{u.name}"),
                cell(fmt(u.prior.support.size)),
                cell(f"{fmt(float(u.prior.support[0]))} .. {fmt(float(u.prior.support[-1]))}"),
                cell(fmt(mean)),
                cell("yes" if u.alternative is not None else "-"),
            ]
        )
    return table_html(["user", "presence", "values", "range", "mean", "alternative"], rows, "users")


def _mechanisms_table(rows: Sequence[dict[str, Any]]) -> str:
    body = []
    for r in rows:
        key = f"{r['mechanism']}:{fmt(r['epsilon'])}"
        if r.get("scale") is None:
            body.append(
                [
                    cell(fmt(r["epsilon"])),
                    cell(r["mechanism"]),
                    cell("-"),
                    cell("-"),
                    cell(r.get("reason", "")),
                ]
            )
            continue
        note = (
            f"decided by {r['user']}; {r['certified_alone']} of {r['users']} users certified alone"
            if "certified_alone" in r
            else str(r.get("source", ""))
        )
        loss = r.get("checked_loss")
        body.append(
            [
                cell(fmt(r["epsilon"])),
                cell(r["mechanism"]),
                cell(fmt(r["scale"]), f"scale:{key}"),
                cell("<= epsilon" if loss is None else fmt(loss), f"loss:{key}"),
                cell(note),
            ]
        )
    return table_html(
        ["epsilon", "mechanism", "Laplace scale", "checked loss", "source / why not"], body, "mechanisms"
    )


def _decider(rows: Sequence[dict[str, Any]]) -> str | None:
    """The user whose pair decides the first optimal scale (its own row's user)."""
    for r in rows:
        if r.get("mechanism") == "optimal" and r.get("scale") is not None and r.get("user"):
            return str(r["user"])
    return None


def _scales_figure(rows: Sequence[dict[str, Any]]) -> str:
    epsilons = sorted({float(r["epsilon"]) for r in rows})
    names = list(dict.fromkeys(str(r["mechanism"]) for r in rows))
    fig = Figure(figsize=(5.6, 3.4 if len(epsilons) > 1 else 0.35 * len(names) + 1.3))
    ax = fig.subplots()
    if len(epsilons) == 1:  # one budget: a bar per mechanism, from 0
        ax.barh(
            names,
            [next(float(r["scale"]) for r in rows if r["mechanism"] == n) for n in names],
            color="#4477aa",
        )
        ax.set_xlim(0.0, None)
        ax.set_xlabel(f"Laplace scale on the sum (epsilon {fmt(epsilons[0])})")
        ax.invert_yaxis()
        return svg_text(fig)
    for name in names:
        pts = sorted((float(r["epsilon"]), float(r["scale"])) for r in rows if r["mechanism"] == name)
        xs, ys = zip(*pts, strict=True)
        ax.plot(xs, ys, "-" if name == "optimal" else "--", marker="o", markersize=3, label=name)
    log_axes(ax, x=True, y=True)
    ax.set_xlabel("epsilon")
    ax.set_ylabel("Laplace scale on the sum")
    ax.legend(fontsize=7)
    return svg_text(fig)


def _priors_figure(p_i: DiscretePrior, p_j: DiscretePrior, pair: tuple[str, str]) -> str:
    fig = Figure(figsize=(6.0, 3.0))
    ax = fig.subplots()
    ax.vlines(p_i.support - 0.1, 0.0, p_i.pmf, color="#4477aa", lw=2.0, label=pair[0])
    ax.vlines(p_j.support + 0.1, 0.0, p_j.pmf, color="#ee6677", lw=2.0, label=pair[1])
    ax.set_ylim(0.0, None)
    ax.set_xlabel("sum of the users' values (before noise)")
    ax.set_ylabel("probability")
    ax.legend(fontsize=8)
    return svg_text(fig)


def write_sum_report(page: str, path: str | Path, *, force: bool = False) -> Path:
    """Write the page atomically (:func:`pufferfish.tables.source.write_text`)."""
    return write_text(page, Path(path), force=force, kind="report")
