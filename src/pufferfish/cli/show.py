"""What ``pufferfish calibrate`` and ``pufferfish release`` print, for one public column or several:
the priors, the comparison of the mechanisms and, for a release, what was drawn and written.
:func:`print_calibration` and :func:`print_release` read the library's results
(:class:`~pufferfish.pipeline.results.TableCalibration`,
:class:`~pufferfish.pipeline.results.ReleaseResult`) and print the tables of one column (the
priors per value, fitted priors, the mappings' counts) or of several (the units, the joint priors'
sizes, the drawn channel per column).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.table import Table

from pufferfish._checks import short_text
from pufferfish.calibration import Calibration, MappingCalibration, Skipped
from pufferfish.cli.common import checked_text, head_and_tail, num, print_comparisons, print_table
from pufferfish.noise.channels import DENSE_MAX_K
from pufferfish.pipeline.results import CHANNEL_TEXT
from pufferfish.priors.distributions import DiscretePrior, GaussianMixturePrior
from pufferfish.priors.sets import prior_scope
from pufferfish.tables.fit import FittedPriors
from pufferfish.tables.kept import ASSUMED
from pufferfish.tables.model import EstimatedPriors, label_text

__all__ = ["PRIORS_ROWS", "print_calibration", "print_release"]


def print_calibration(
    console: Console, table: Any, *, scale_zero_note: bool = True, scope_line: bool = True
) -> None:
    """The tables and notes of ``calibrate`` (and the head of ``release``'s).

    The head shows what was estimated: one column's priors per value (and fitted priors), or
    several columns' units and joint priors' sizes; then, for any number of columns, one
    comparison table per epsilon and the notes: for which priors the checks hold, the price of
    the uncertainty of the estimate, and what a scale of 0 means.

    Parameters
    ----------
    console : rich.console.Console
    table : pufferfish.pipeline.results.TableCalibration
    scale_zero_note : bool
        Say what a scale of 0 means (a release's summary says it itself: False).
    scope_line : bool
        Say for which priors the checks hold on a line of its own (a release's guarantee
        paragraph says it: False).
    """
    if len(table.columns) > 1:
        _head_joint(console, table)
    else:
        _head_one_column(console, table.estimated, table.fitted)
    scenario = table.scenario
    results = table.comparison
    print_comparisons(console, results, table.delta, show_pair=scenario.checked_pairs > 1)
    robust = next((c for c in results if not isinstance(c, Skipped) and c.prior_set is not None), None)
    if len(table.columns) > 1:
        ps = table.prior_set()
        scope = prior_scope(None if ps["kind"] == "none" else ps, table.prior_kind)
        metric = table.scenario.metric
        kept = [c for c, same in zip(table.columns, metric.identity if metric else (), strict=False) if same]
        also = f" Kept in clear inside the check: {', '.join(kept)} (released as it is)." if kept else ""
        console.print(f"The {CHANNEL_TEXT}.{also} {scope}", highlight=False, markup=False)
        _print_column_scales(console, table, kept)
    elif robust is not None and scope_line:
        console.print(f"priors: {prior_scope(robust.prior_set)}", highlight=False)
    point = next((c for c in results if not isinstance(c, Skipped) and c.prior_set is None), None)
    if robust is not None and point is not None:
        console.print(
            f"The 'estimate only' {point.mechanism} holds only if the adversary's prior is exactly the "
            "sample frequencies; the difference is the price of the uncertainty of the estimate.",
            highlight=False,
        )
    if robust is not None or len(table.columns) > 1:  # where the sets live (issue 41)
        console.print(f"domain: {table.domain()['text']}", highlight=False, markup=False)
    atom = table.missing_atom
    if atom is not None:  # the epsilons shown are the present values' (issue 41)
        requested = table.inputs["epsilon"]
        for eps in requested if isinstance(requested, list) else [requested]:
            console.print(atom.guarantee(float(eps)), highlight=False, markup=False)
    if scale_zero_note and any(isinstance(c, Calibration) and c.noiseless for c in results):
        what = "the column" if len(table.columns) == 1 else "the columns"
        console.print(
            f"note: scale 0 means the priors already meet the target: {what} may be released "
            "without noise. This holds only if the adversary's prior is the one shown."
        )


def print_release(console: Console, result: Any) -> None:
    """The tables and the summary lines of ``release``.

    Parameters
    ----------
    console : rich.console.Console
    result : pufferfish.pipeline.results.ReleaseResult
        Of one column or several.
    """
    print_calibration(console, result.calibration, scale_zero_note=False, scope_line=False)
    if len(result.calibration.columns) > 1:
        _print_joint_release(console, result)
    else:
        _print_one_column_release(console, result)
    cols = result.report.get("output_columns") or result.report.get("release", {}).get("output_columns", {})
    console.print(
        f"written: {', '.join(cols.get('written', []))} (covered by the guarantee: "
        f"{', '.join(cols.get('covered_by_the_guarantee', []))}); not written: {cols.get('not_written')}",
        highlight=False, markup=False,
    )  # fmt: skip
    layout = result.report.get("output_layout") or result.report.get("release", {}).get("output_layout", [])
    if layout:  # what the output's layout does not keep of the input's (issue 44)
        console.print(f"layout: {'; '.join(layout)}", highlight=False, markup=False)
    if cols.get("row_order"):
        console.print(f"rows: {cols['row_order']}", highlight=False, markup=False)
    if result.kept:  # outside the check: the assumption and the whole record's figure (issue 54)
        whole = cols.get("whole_record") or {}
        loss = whole.get("loss")
        figure = f"not measured ({whole.get('not_measured')})" if loss is None else f"{loss:.6g}" if (
            isinstance(loss, float)) else str(loss)  # fmt: skip
        console.print(
            f"kept in clear, NOT covered: {', '.join(k.column for k in result.kept)}, assumed {ASSUMED}; "
            f"the whole written record's loss at the estimate: {figure}",
            highlight=False, markup=False,
        )  # fmt: skip
    book = result.report.get("ledger")
    if book:  # what everything released about the secret guarantees together (issue 42)
        together = book["together"]
        eps = together["epsilon"]
        before = ", ".join(map(str, together["entries"][:-1])) or "none before"
        # the path alone on its line (never folded); the figure and its rule wrapped below it
        console.print(f"ledger: {book['file']}", soft_wrap=True, highlight=False, markup=False)
        line = f"  release {book['entry']}; together with releases {before}: " + (
            f"no guarantee ({together['detail']})" if eps is None
            else f"eps {eps:.6g} by the {together['rule']} ({together['priors']})"
            + (f"; {together['detail']}" if together.get("detail") else "")
        )  # fmt: skip
        if book.get("budget") is not None:
            line += f"; budget {book['budget']:g}"
        console.print(line, highlight=False, markup=False)


def _print_column_scales(console: Console, table: Any, kept: list[str]) -> None:
    """Each calibration's noise per column, in the column's own units (issue 44): ``x:
    Laplace(97.35)`` on a numeric column, the randomized response's log ratio on a categorical one."""
    for c in table.comparison:
        if isinstance(c, Skipped) or getattr(c, "scale", None) is None or not c.scale:
            continue
        per = []
        for name, w_scale in table.column_scales(c.scale).items():
            cat = table.categorical[table.columns.index(name)]
            if name in kept:
                per.append(f"{name} as it is")
            elif cat:
                per.append(f"{name}: randomized response, log ratio <= {1.0 / w_scale:.4g}")
            else:
                per.append(f"{name}: Laplace({w_scale:.4g})")
        console.print(
            f"{c.mechanism} (eps {c.epsilon:g}) per column: {'; '.join(per)}",
            highlight=False, markup=False,
        )  # fmt: skip


def _pmf(prior: Any) -> Any:
    assert isinstance(prior, DiscretePrior)
    return prior.pmf


def _inputs_table(est: EstimatedPriors) -> Table:
    table = Table(title=f"Priors P({est.public_column} | {est.secret_column})", title_justify="left")
    table.add_column(est.public_column)
    table.add_column("code", justify="right")
    prior = est.scenario.priors[0]
    for g in est.groups:
        table.add_column(f"{short_text(g.secret)}\n(n={g.rows})", justify="right")
    labels = (
        [short_text(label_text(label)) for label, _ in est.mapping]
        if est.categorical
        else [num(float(v), 8) for v in est.support]
    )
    for k in head_and_tail(len(labels), PRIORS_ROWS):
        if k < 0:
            table.add_row(
                f"({-k:,} more values: every one in --json and in --report)", *[""] * (len(est.groups) + 1)
            )
            continue
        row = [labels[k], num(float(est.support[k]), 8)]
        row += [f"{_pmf(prior.conditionals[g.secret])[k]:.4f}" for g in est.groups]
        table.add_row(*row)
    return table


#: Rows of the printed priors table; a longer alphabet is cut to a head and a tail (issue 34: a
#: 10,000-label column printed 10,056 lines).
PRIORS_ROWS = 40


def _fitted_table(fitted: FittedPriors) -> Table:
    table = Table(title=f"Fitted {fitted.model} priors (per secret)", title_justify="left")
    for name in ("secret", "component", "weight", "mean", "std"):
        table.add_column(name, justify="left" if name == "secret" else "right")
    prior = fitted.scenario.priors[0]
    for g in fitted.estimated.groups:
        p = prior.conditionals[g.secret]
        assert isinstance(p, GaussianMixturePrior)
        for m in range(p.n_components):
            table.add_row(
                g.secret if m == 0 else "",
                str(m + 1),
                f"{p.weights[m]:.4f}",
                f"{p.means[m]:.4f}",
                f"{p.stds[m]:.4f}",
            )
    return table


def _head_one_column(console: Console, est: EstimatedPriors, fitted: FittedPriors | None) -> None:
    """The table read, its rows, how each column was read, the priors per value (and the fitted
    priors) of one column."""
    console.print(f"data: {est.source}")
    console.print(
        f"rows: {est.rows_total} read, {est.rows_dropped} left out of the priors (missing secret, "
        f"public value or weight)"
    )
    read_as = ", ".join(f"{col}: {how}" for col, how in est.columns_read_as.items())
    console.print(f"columns read as: {read_as}", highlight=False)
    print_table(console, _inputs_table(est))
    if fitted is not None:
        print_table(console, _fitted_table(fitted))
        if fitted.model == "gaussian":
            console.print("Gaussian priors: maximum-likelihood mean and standard deviation (dividing by n).")


def _counts_table(counts: dict[str, Any], est: EstimatedPriors, report: Any) -> Table:
    """Released rows per label (or value), in the input and in the output, side by side; a long
    alphabet as a head and a tail with the count of the others (all of them in ``report``)."""
    table = Table(title=f"{est.public_column}: released rows per value", title_justify="left")
    table.add_column(est.public_column)
    for name in ("input", "output", "output - input"):
        table.add_column(name, justify="right")
    total_in, total_out = sum(counts["input"]), sum(counts["output"])
    for k in head_and_tail(len(counts["values"]), PRIORS_ROWS):
        if k < 0:
            table.add_row(f"({-k:,} more values: every one in {report})", "", "", "")
            continue
        value, n_in, n_out = counts["values"][k], counts["input"][k], counts["output"][k]
        if value is None:  # a missing cell, a label of its own (issue 41)
            label = "(missing)"
        else:
            label = short_text(label_text(value)) if isinstance(value, str) else num(float(value), 8)
        table.add_row(label, str(n_in), str(n_out), f"{n_out - n_in:+d}")
    table.add_row("total", str(total_in), str(total_out), f"{total_out - total_in:+d}")
    return table


def _print_one_column_release(console: Console, result: Any) -> None:
    """The tables and the summary lines of a release of one column."""
    c = result.chosen
    how = "mapped" if isinstance(c, MappingCalibration) else "with noise"
    if c.noiseless:  # said once, here: no "with noise", no separate noise line
        how = (
            "as they are: no noise is needed, scale 0 passes the exact check for the priors shown"
            if isinstance(c, Calibration)
            else "as they are: the checked mapping is the identity"
        )
    console.print(
        f"released: {result.output} ({result.rows_released} rows {how}; "
        f"{result.rows_missing} missing left missing)"
    )
    if isinstance(c, MappingCalibration):
        what = "its matrix is" if c.channel.k <= DENSE_MAX_K else "its two weights are"
        console.print(
            f"mechanism: {c.mechanism}, a randomized mapping of {c.support.size} values ({what} in the "
            f"report), expected accuracy {c.expected_accuracy:.4f}, checked {checked_text(c)}"
        )
    else:
        console.print(f"mechanism: {c.mechanism}, {c.noise} scale {c.scale:.6g}, checked {checked_text(c)}")
    book = result.report.get("ledger") or {}
    if isinstance(c, Calibration) and c.raised_from is not None:  # said once, with what it meets
        console.print(
            f"budget {book.get('budget', 0.0):g}: the scale is raised from {c.raised_from:.6g} (this release "
            f"alone at epsilon {c.epsilon:g}) to {c.scale:.6g}, so that the ledger's releases and this one "
            f"meet the budget together; alone it is checked at {c.scale:.6g}: {checked_text(c)}",
            highlight=False,
        )
    if result.calibration.inputs.get("fallback"):
        console.print(f"fallback: {result.calibration.inputs['fallback']}", highlight=False)
    console.print(f"guarantee: {result.report['guarantee']}")
    if not c.noiseless:
        console.print(f"noise: {result.noise['sampler']}")
    if result.noise.get("rounding"):  # noise on a grid; a mapping has none
        console.print(f"rounding: {result.noise['rounding']}")
    if result.noise.get("counts"):  # a mapping: the released rows per value, in and out
        counts = result.noise["counts"]
        print_table(console, _counts_table(counts, result.calibration.estimated, result.report_path))
    console.print(f"report: {result.report_path} (confidential: it holds figures of the table)", markup=False)


def _head_joint(console: Console, table: Any) -> None:
    """The table read, the columns and units, the rows and the joint priors' sizes."""
    console.print(f"data: {table.estimated.source}")
    units = ", ".join(
        f"{c} ({'categorical' if cat else 'numeric'}, unit {num(w)})"
        for c, w, cat in zip(table.columns, table.units, table.categorical, strict=True)
    )
    console.print(
        f"columns released jointly: {units}; metric d(x, x') = sum_k d_k(x_k, x'_k) / w_k "
        "(|x_k - x'_k| on a numeric column, [x_k != x'_k] on a categorical one)",
        highlight=False,
        markup=False,
    )
    console.print(
        f"rows: {table.rows_total} read, {table.rows_dropped} left out of the priors (a missing value)"
    )
    sizes = ", ".join(f"{s}: {p.size} distinct tuples" for s, p in table.priors().items())
    console.print(f"joint priors: {sizes}", highlight=False)


def _print_joint_release(console: Console, result: Any) -> None:
    """The tables and the summary lines of a release of several columns.

    Parameters
    ----------
    console : rich.console.Console
    result : pufferfish.pipeline.results.ReleaseResult
    """
    rel = result.report["release"]
    console.print(
        f"released: {result.output} ({result.rows_released} rows with noise on every column, "
        f"{result.rows_missing} with a missing number: that cell written missing, inside the check, the "
        "others released as drawn)"
    )
    c = result.chosen
    drawn = ", ".join(_drawn_text(col, about) for col, about in rel["column_noise"].items())
    console.print(
        f"mechanism: {c.mechanism}, scale b = {c.scale:.6g}, checked loss {c.checked_loss:.6g}; "
        f"drawn per column: {drawn}" + (" (checked jointly again)" if rel["drawn_scales_checked"] else ""),
        highlight=False,
        markup=False,
    )
    console.print(f"guarantee: {rel['guarantee']}", highlight=False)
    for col, about in rel["noise"]["columns"].items():
        console.print(f"noise on {col}: {about['sampler']}", highlight=False)
    console.print(f"report: {result.report_path} (confidential: it holds figures of the table)", markup=False)


def _drawn_text(column: str, about: Mapping[str, Any]) -> str:
    """``"age Laplace(2.5)"`` or ``"workclass randomized response, keep 0.61"``."""
    if about["kind"] == "laplace":
        return f"{column} Laplace({about['scale']:.6g})"
    if about["kind"] == "randomized-response" and about["keep_probability"] == 1.0:
        return f"{column} as it is (kept, or no noise needed; inside the check)"
    if about["kind"] == "randomized-response":
        return (
            f"{column} randomized response on {about['labels']} labels, keep {about['keep_probability']:.4g}"
        )
    return f"{column} as is (one label)"
