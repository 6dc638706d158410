"""What of a release may be published beside its output (issue 54).

A release's JSON and HTML reports hold figures of the table: each secret's row count and the
priors estimated from it (``rows x pmf`` rebuilds every count, counts of 1 included), a
mapping's released counts per value, the data's own losses, the missing cells' rates. They are
*confidential*: :func:`confidential` marks the JSON (``"confidential": true`` and what it holds)
and every HTML page says so at its top (:func:`pufferfish.pipeline.page.html_page`).

What may be published is the released file and a *public summary* (:func:`public_summary`,
``public_report``): the guarantee in words with epsilon (and delta), the secret and the pairs, the
mechanism and the noise's kind, what the file holds (its columns, which the check covers, the
columns kept outside it and their assumption, the rows' order, how missing cells are written),
and for which priors, with no count, pmf, rate, loss or figure of the table. The parameters
fitted to the table (a scale, a mapping's matrix) are functions of it: the summary says so and
holds them only when asked (``public_report_parameters``).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

#: What a confidential report holds, in its JSON and at the top of its HTML page.
CONFIDENTIAL = (
    "CONFIDENTIAL: this report holds figures of the table (each secret's row count and the priors "
    "estimated from it, from which its counts can be rebuilt; released counts per value; the data's "
    "own losses and missing cells' rates; the scale or matrix fitted to it). Do not publish it: "
    "publish the released file and, if wanted, the public summary (--public-report)."
)


def confidential(report: Mapping[str, Any], note: str = CONFIDENTIAL) -> dict[str, Any]:
    """``report`` with ``"confidential": true`` and ``note`` (what it holds) first."""
    return {"confidential": True, "confidential_note": note, **report}


#: What a series release's report holds (:func:`pufferfish.markov.release.release_series`).
SERIES_CONFIDENTIAL = (
    "CONFIDENTIAL: this report holds figures of the table (the chain estimated from it, its "
    "transition counts and lengths, the count priors, the scales calibrated on them). Do not publish "
    "it: publish the released file."
)


def _priors(inputs: Mapping[str, Any]) -> str:
    """For which priors the guarantee holds, from the request alone (no figure of the table)."""
    kind, confidence, bounds = inputs.get("prior_set"), inputs.get("confidence"), inputs.get("bounds")
    where = "" if not bounds else f", on the declared domain [{bounds[0]:g}, {bounds[1]:g}]"
    if kind in (None, "none"):
        return f"at the priors estimated from the table (the point estimate){where}"
    radius = inputs.get("prior_radius")
    size = f"of radius {radius:g}" if radius is not None else f"at {float(confidence or 0.95):.0%} confidence"
    name = {"dkw": "DKW band", "l1": "L1 ball"}.get(str(kind), str(kind))
    return f"for every prior in the {name} {size} around the estimate from the table{where}"


def public_summary(report: Mapping[str, Any], *, parameters: bool = False) -> dict[str, Any]:
    """The public summary of a release's report (module docstring).

    Parameters
    ----------
    report : mapping
        The release's JSON report (:func:`pufferfish.pipeline.results.report_dict`), one column
        or several.
    parameters : bool
        Include the scale(s) or matrix fitted to the table (functions of the table).

    Returns
    -------
    dict
        JSON-ready: ``public`` (true), ``tool``, ``created``, ``guarantee``, ``secret``, ``pairs``,
        ``epsilon``, ``delta``, ``criterion``, ``mechanism``, ``noise``, ``priors``, ``output``
        (``file``, ``written``, ``covered_by_the_guarantee``, ``kept_unchecked``, ``row_order``,
        ``missing_cells``) and ``parameters`` (the values, or why they are withheld).
    """
    inputs = report["inputs"]
    release = report.get("release", report)
    chosen = report.get("chosen") or release
    criterion = str(chosen.get("criterion") or "eps-PP")
    if not inputs.get("delta") and criterion == "(eps, delta)-PP":
        criterion = "eps-PP"  # delta 0: the pure guarantee
    pairs = [list(p) for p in inputs["pairs"]]
    cols = release.get("output_columns", {})
    priors = _priors(inputs)
    eps, delta = float(inputs["epsilon"]), float(inputs.get("delta") or 0.0)
    guarantee = (
        f"({eps:g}{f', {delta:g}' if delta else ''}, S)-pufferfish privacy ({criterion}) of the secret "
        f"{inputs['secret']!r} for the pairs {', '.join(' vs '.join(map(repr, p)) for p in pairs)}, "
        f"checked exactly {priors}, for every column of the file the check covers"
    )
    noise = report.get("noise") if "release" not in report else release.get("noise")
    kept = [{"column": k["column"], "assumed": k["assumed"]} for k in cols.get("kept_unchecked", [])]
    missing = (
        "a missing cell of a released column is released by the same check (a label of its own, or a "
        "number's missing atom) or written missing"
        if inputs.get("missing", "value") == "value"
        else "rows with a missing cell were left out of the priors"
    )
    out: dict[str, Any] = {
        "public": True,
        "tool": report.get("tool"),
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "guarantee": guarantee,
        "secret": inputs["secret"],
        "pairs": pairs,
        "epsilon": eps,
        "delta": delta,
        "criterion": criterion,
        "mechanism": chosen.get("mechanism") or inputs.get("mechanism"),
        "noise": (noise or {}).get("sampler") if isinstance(noise, Mapping) else None,
        "priors": priors,
        "output": {
            "file": Path(str(release.get("output", report.get("output")))).name,
            "written": cols.get("written"),
            "covered_by_the_guarantee": cols.get("covered_by_the_guarantee"),
            "kept_unchecked": kept,
            "row_order": cols.get("row_order"),
            "missing_cells": missing,
        },
        "holds": "no count, pmf, rate, loss or figure of the table",
    }
    about = "functions of the table (calibrated on its priors): publishing them tells something about it"
    if not parameters:
        out["parameters"] = (
            f"withheld: the scale or matrix are {about} (--public-report-parameters includes them)"
        )
        return out
    values: dict[str, Any] = {"note": about}
    if "release" in report:
        values["column_scales"] = release.get("drawn_scales")
        values["column_noise"] = release.get("column_noise")
    elif chosen.get("matrix") is not None:
        values["matrix"] = chosen["matrix"]
        values["labels"] = [m.get("label") for m in report.get("mapping") or []]
    else:
        values["scale"] = (noise or {}).get("scale") if isinstance(noise, Mapping) else None
        values["scale"] = values["scale"] if values["scale"] is not None else chosen.get("scale")
    out["parameters"] = values
    return out
