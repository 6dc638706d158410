"""``pufferfish calibrate`` and ``pufferfish release`` on several public columns
(``--public a,b [--unit col=w]``): a thin layer over :mod:`pufferfish.pipeline.joint`.

:mod:`pufferfish.cli.app` parses the options and hands them here when ``--public`` names several
columns; the library validates each value once. Options that have no meaning for a joint release
(fitted priors, a label order, a second table of priors, a mapping's utility) are refused in one
line rather than ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console

from pufferfish.calibration import TIME_LIMIT
from pufferfish.cli.common import (
    fail,
    guard,
    num,
    parse_mechanisms,
    print_comparisons,
    progress_bar,
    publish,
    require_pairs,
)
from pufferfish.tables.source import CsvOptions


def refuse(options: Mapping[str, bool]) -> None:
    """Fail in one line naming the options given (``True``) that several columns do not support.

    Parameters
    ----------
    options : mapping of str to bool
        ``{"--prior-set": given, ...}``.

    Raises
    ------
    typer.Exit
        If any option was given (code 1, after ``error: ...`` on standard error).
    """
    given = [name for name, used in options.items() if used]
    if given:
        verb = "is" if len(given) == 1 else "are"
        fail(
            f"with several --public columns, {', '.join(given)} {verb} not supported (empirical joint "
            "priors, the product channel)"
        )


def joint_calibrate(
    data: str, *, secret: str, public: str, unit: list[str] | None, epsilon: list[float], pair: list[str],
    mechanism: str, weight: str | None, noise: str, delta: float, categorical: list[str] | None,
    numeric: list[str] | None, engine: str, as_json: bool, report: str | None, force: bool,
    read: CsvOptions | None = None, prior_set: tuple[str | None, float, float | None] = (None, 0.95, None),
    time_limit: float = TIME_LIMIT,
) -> None:  # fmt: skip
    """``calibrate`` on several public columns (:func:`pufferfish.pipeline.calibrate.calibrate_table`):
    the tables (or one JSON object) and, with ``report``, the HTML report at the first epsilon.

    Raises
    ------
    typer.Exit
        On bad input (code 1, one line on standard error).
    """
    from pufferfish.pipeline.calibrate import calibrate_table
    from pufferfish.pipeline.joint_release import write_joint_report
    from pufferfish.pipeline.report import check_report_path

    def run() -> Any:
        if report is not None:
            check_report_path(report, force=force)
        return calibrate_table(
            data, secret=secret, public=public, pairs=require_pairs(pair), epsilon=epsilon, units=unit,
            mechanisms=parse_mechanisms(mechanism),
            weight=weight, noise=noise, delta=delta, categorical=categorical or (), numeric=numeric or (),
            read=read, prior_set=prior_set[0], confidence=prior_set[1], prior_radius=prior_set[2],
            engine=engine, time_limit=time_limit,
        )  # fmt: skip

    table = guard(run)
    payload = table.to_dict()
    publish(
        payload, as_json=as_json, report=report,
        write_report=lambda path: write_joint_report(table, path, payload=payload, force=force),
        show=lambda console: print_joint_calibration(console, table, delta),
    )  # fmt: skip


def print_joint_calibration(console: Console, table: Any, delta: float) -> None:
    """The columns and units, the priors' sizes and one comparison table per epsilon.

    Parameters
    ----------
    console : rich.console.Console
    table : pufferfish.pipeline.joint_result.JointTableCalibration
    delta : float
        Target delta of the comparison (shown in the tables' titles when > 0).
    """
    from pufferfish.pipeline.joint_result import CHANNEL_TEXT
    from pufferfish.priors.sets import prior_scope

    units = ", ".join(
        f"{c} ({'categorical' if cat else 'numeric'}, unit {num(w)})"
        for c, w, cat in zip(table.columns, table.units, table.categorical, strict=True)
    )
    console.print(
        f"columns released jointly: {units}; metric d(x, x') = sum_k d_k(x_k, x'_k) / w_k "
        "(|x_k - x'_k| on a numeric column, [x_k != x'_k] on a categorical one)",
        soft_wrap=True,
        highlight=False,
        markup=False,
    )
    console.print(
        f"rows: {table.rows_total} read, {table.rows_dropped} left out of the priors (a missing value)"
    )
    sizes = ", ".join(f"{s}: {p.size} distinct tuples" for s, p in table.priors().items())
    console.print(f"joint priors: {sizes}", soft_wrap=True, highlight=False)
    show_pair = len(table.scenario.pairs) > 1
    print_comparisons(console, table.comparison, delta, show_pair=show_pair)
    ps = table.prior_set()
    scope = prior_scope(None if ps["kind"] == "none" else ps, "empirical joint")
    if ps.get("requested") == "dkw":
        scope += " (dkw on several columns is this L1 ball: a CDF band has no form on a product of columns)"
    console.print(f"The {CHANNEL_TEXT}. {scope}", soft_wrap=True, highlight=False, markup=False)


def joint_release(
    data: str, *, secret: str, public: str, unit: list[str] | None, epsilon: list[float], output: str,
    pair: list[str], mechanism: str, weight: str | None, rng_seed: int | None, force: bool,
    workers: int | None, engine: str, report: str | None, as_json: bool, categorical: list[str] | None,
    numeric: list[str] | None, sampler: str, read: CsvOptions | None = None,
    prior_set: tuple[str | None, float, float | None] = (None, 0.95, None), time_limit: float = TIME_LIMIT,
) -> None:  # fmt: skip
    """``release`` of several public columns (:func:`pufferfish.pipeline.release.release`):
    product Laplace noise, one draw per column and row; the output, its JSON report and, with
    ``report``, the HTML report.

    Raises
    ------
    typer.Exit
        On bad input (code 1, one line on standard error).
    """
    from pufferfish.pipeline.joint_release import write_joint_report
    from pufferfish.pipeline.release import release
    from pufferfish.pipeline.report import check_report_path

    def run(progress: Any) -> Any:
        if report is not None:
            check_report_path(report, force=force)
        if len(epsilon) != 1:
            raise ValueError(f"release takes one --epsilon, got {len(epsilon)}")
        return release(
            data, secret=secret, public=public, pairs=require_pairs(pair), epsilon=epsilon[0], output=output,
            units=unit, mechanism=mechanism, weight=weight, rng=rng_seed, force=force, progress=progress,
            workers=workers, categorical=categorical or (), numeric=numeric or (), sampler=sampler, read=read,
            prior_set=prior_set[0], confidence=prior_set[1], prior_radius=prior_set[2], engine=engine,
            time_limit=time_limit,
        )  # fmt: skip

    with progress_bar() as advance:
        result = guard(lambda: run(advance))
    publish(
        result.report, as_json=as_json, report=report,
        write_report=lambda path: write_joint_report(result, path, payload=result.report, force=force),
        show=lambda console: print_joint_release(console, result),
    )  # fmt: skip


def print_joint_release(console: Console, result: Any) -> None:
    """The tables and the summary lines of a release of several columns.

    Parameters
    ----------
    console : rich.console.Console
    result : pufferfish.pipeline.joint_release.JointReleaseResult
    """
    print_joint_calibration(console, result.table, 0.0)
    rel = result.report["release"]
    console.print(
        f"released: {result.output} ({result.rows_released} rows with noise on every column, "
        f"{result.rows_missing} with a missing value: that cell left missing, the others noised)"
    )
    c = result.chosen
    drawn = ", ".join(_drawn_text(col, about) for col, about in rel["column_noise"].items())
    console.print(
        f"mechanism: {c.mechanism}, scale b = {c.scale:.6g}, checked loss {c.checked_loss:.6g}; "
        f"drawn per column: {drawn}" + (" (checked jointly again)" if rel["drawn_scales_checked"] else ""),
        soft_wrap=True,
        highlight=False,
        markup=False,
    )
    console.print(f"guarantee: {rel['guarantee']}", soft_wrap=True, highlight=False)
    for col, about in rel["noise"]["columns"].items():
        console.print(f"noise on {col}: {about['sampler']}", soft_wrap=True, highlight=False)
    console.print(f"report: {result.report_path}")


def _drawn_text(column: str, about: Mapping[str, Any]) -> str:
    """``"age Laplace(2.5)"`` or ``"workclass randomized response, keep 0.61"``."""
    if about["kind"] == "laplace":
        return f"{column} Laplace({about['scale']:.6g})"
    if about["kind"] == "randomized-response":
        return (
            f"{column} randomized response on {about['labels']} labels, keep {about['keep_probability']:.4g}"
        )
    return f"{column} as is (one label)"
