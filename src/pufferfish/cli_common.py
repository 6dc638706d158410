"""What the ``pufferfish`` commands share: one-line errors, the parsing of a few options, and
the comparison tables printed by ``calibrate`` and ``release`` (one column or several)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeVar

import typer
from rich.console import Console
from rich.table import Table

from .calibration import Calibration, MappingCalibration, PrivacyCheckError, Skipped
from .priorsets import set_label

T = TypeVar("T")


def fail(message: str) -> None:
    """Print ``error: <message>`` on standard error and exit with code 1.

    Raises
    ------
    typer.Exit
        Always (code 1).
    """
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code=1)


def guard(fn: Callable[[], T]) -> T:
    """Run ``fn``; turn the library's input errors into one line on stderr and exit code 1."""
    try:
        return fn()
    except (ValueError, FileExistsError, FileNotFoundError, PermissionError, IsADirectoryError) as exc:
        fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    except PrivacyCheckError as exc:
        fail(f"privacy check failed (please report this bug): {exc}")
    raise AssertionError("unreachable")  # pragma: no cover


def parse_order(order: str | None) -> list[str] | None:
    """The labels of ``--order "v1,v2,..."`` (None: sorted order).

    Raises
    ------
    ValueError
        On an empty entry.
    """
    if order is None:
        return None
    values = [v.strip() for v in order.split(",")]
    if any(not v for v in values):
        raise ValueError(f"order must be comma-separated labels without empty entries, got {order!r}")
    return values


def require_pairs(pair: list[str]) -> list[str]:
    """The ``--pair`` texts ('A,B'), parsed by the library; at least one is needed."""
    if not pair:
        raise ValueError("--pair is required: give at least one pair of secret values 'A,B'")
    return pair


def parse_mechanisms(mechanism: str) -> list[str] | None:
    """The names of ``--mechanism a,b`` (None for ``all``: the library's default set)."""
    return None if mechanism == "all" else [m.strip() for m in mechanism.split(",")]


def publish(
    payload: Mapping[str, Any],
    *,
    as_json: bool,
    report: str | None,
    write_report: Callable[[str], object],
    show: Callable[[Console], None],
) -> None:
    """The end of ``calibrate`` and ``release``: the HTML report if asked for
    (``write_report(report)``), then one JSON object (``--json``) or the printed tables
    (``show``) and the report's path.

    Raises
    ------
    typer.Exit
        If the report cannot be written (code 1, one line on standard error).
    """
    if report is not None:
        path = report
        guard(lambda: write_report(path))
    if as_json:
        typer.echo(json.dumps(payload, allow_nan=False))
        return
    console = Console()
    show(console)
    if report is not None:
        console.print(f"HTML report: {report}")


def num(x: float, digits: int = 4) -> str:
    """``x`` as printed in the tables: ``digits`` significant digits, scientific from 1e4."""
    if x == 0:
        return "0"
    return f"{x:.{digits}g}" if abs(x) < 1e4 else f"{x:.4e}"


def checked_text(c: Calibration | MappingCalibration) -> str:
    """What the ``checked`` column shows: the checked loss, delta or information, or
    ``not numerically checked``."""
    if isinstance(c, MappingCalibration):
        return f"loss = {c.checked_loss:.6g}"
    if c.not_checked is not None:
        return "not numerically checked"
    if c.checked_information is not None:
        return f"I = {c.checked_information:.6g}"
    if c.checked_delta is not None and c.checked_loss is None:
        return f"delta = {c.checked_delta:.6g}"
    return f"loss = {c.checked_loss:.6g}"


def comparison_table(
    results: list[Calibration | MappingCalibration | Skipped],
    epsilon: float,
    delta: float,
    *,
    show_pair: bool,
) -> Table:
    """The comparison at one epsilon: one row per mechanism used (scale, noise variance, checked
    value, and what decided it or why it is not used)."""
    title = f"epsilon = {epsilon:g}" + (f", delta = {delta:g}" if delta > 0 else "")
    table = Table(title=title, title_justify="left")
    used = [c for c in results if not isinstance(c, Skipped)]
    robust = any(c.prior_set is not None for c in used)
    utility = any(c.expected_accuracy is not None for c in used)
    for name, justify in (
        ("mechanism", "left"),
        *((("priors", "left"),) if robust else ()),
        ("noise", "left"),
        ("scale", "right"),
        ("noise variance", "right"),
        ("checked", "right"),
        *((("accuracy", "right"), ("abs error", "right")) if utility else ()),
        ("decided by / why not", "left"),
    ):
        table.add_column(name, justify=justify)
    for c in used:
        mapped = isinstance(c, MappingCalibration)
        table.add_row(
            c.mechanism + (" (eps-MI)" if c.criterion == "eps-MI PP" else ""),
            *((set_label(c.prior_set),) if robust else ()),
            "mapping" if mapped else c.noise,
            "-" if isinstance(c, MappingCalibration) else num(c.scale),
            "-" if isinstance(c, MappingCalibration) else num(c.variance),
            checked_text(c),
            *((num(c.expected_accuracy), num(c.expected_abs_error)) if utility else ()),  # type: ignore[arg-type]
            (f"{c.pair[0]} vs {c.pair[1]} ({c.prior}): " if show_pair else "") + c.decided_by,
        )
    return table


def print_comparisons(
    console: Console,
    results: tuple[Calibration | MappingCalibration | Skipped, ...],
    delta: float,
    *,
    show_pair: bool,
) -> None:
    """One table per epsilon, then the mechanisms not used (grouped by reason) and the scales
    that rest on their theorem alone (not numerically checked)."""
    for eps in dict.fromkeys(c.epsilon for c in results):
        here = [c for c in results if c.epsilon == eps]
        console.print(comparison_table(here, eps, delta, show_pair=show_pair))
        reasons: dict[str, list[str]] = {}
        for c in here:
            if isinstance(c, Skipped):
                reasons.setdefault(c.reason, []).append(c.mechanism)
        for reason, names in reasons.items():
            console.print(f"not used: {', '.join(names)}: {reason}", soft_wrap=True, highlight=False)
        for c in here:
            if isinstance(c, Calibration) and c.not_checked is not None:
                note = f"not numerically checked: {c.mechanism} rests on {c.source} alone ({c.not_checked})"
                console.print(note, soft_wrap=True, highlight=False)


@contextmanager
def progress_bar(what: str = "releasing rows") -> Iterator[Callable[[int, int], None]]:
    """A Rich progress bar on standard error (only on a terminal), as ``progress(done, total)``.

    Yields
    ------
    callable
        ``advance(rows_done, rows_total)``, the ``progress`` argument of the releases.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    err = Console(stderr=True)
    bar = Progress(
        TextColumn(what),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=err,
        transient=True,
        disable=not err.is_terminal,  # a bar only on a terminal; pipes get the one-line messages
    )
    with bar:
        task = bar.add_task("release", total=None)

        def advance(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield advance
