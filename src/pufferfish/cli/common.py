"""What the ``pufferfish`` commands share: one-line errors, the parsing of a few options, and
the comparison tables printed by ``calibrate`` and ``release`` (one column or several)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import typer
from rich.console import Console
from rich.table import Table

from pufferfish._checks import short_text

if TYPE_CHECKING:  # the classes load with the numerical libraries, when a command runs (issue 45)
    from pufferfish.calibration import Calibration, MappingCalibration, Skipped

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


def refuse_report_path_early(report: str | None, force: bool) -> None:
    """Before any work: a ``--report`` path that is not a new ``.html`` file (or an existing one
    without ``--force``) is one line and exit code 1
    (:func:`pufferfish.pipeline.page.check_report_path`)."""
    if report is not None:
        from pufferfish.pipeline.page import check_report_path

        guard(lambda: check_report_path(report, force=force))


def interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` is a Ctrl-C (or SIGTERM, which the CLI turns into one) wrapped by a library
    that catches it: DuckDB stops a query with ``InterruptException`` or "Query interrupted", and
    quotes a ``KeyboardInterrupt`` raised in a Python stream or function it was running; PyArrow
    and others chain it (``__cause__``, ``__context__``)."""
    from pufferfish.tables.errors import INTERRUPT_TEXT  # on an error only: not at start-up

    seen: set[int] = set()
    at: BaseException | None = exc
    while at is not None and id(at) not in seen:
        seen.add(id(at))
        if isinstance(at, KeyboardInterrupt) or type(at).__name__ == "InterruptException":
            return True
        # the text only of an engine's own error (never of the library's messages, which may quote
        # a user's value such as a label 'Query interrupted')
        foreign = (
            type(at).__module__.split(".")[0] in ("duckdb", "_duckdb", "pyarrow") or type(at) is RuntimeError
        )
        if foreign and INTERRUPT_TEXT.search(str(at)):
            return True
        at = at.__cause__ or at.__context__
    return False


def guard(fn: Callable[[], T]) -> T:
    """Run ``fn``; turn the library's input errors into one line on stderr and exit code 1, and an
    interrupt however wrapped (:func:`interrupted`) into ``KeyboardInterrupt`` (exit code 130)."""
    try:
        try:
            return fn()
        except Exception as exc:
            if interrupted(exc):
                raise KeyboardInterrupt from None
            raise
    except (ValueError, FileExistsError, FileNotFoundError, PermissionError, IsADirectoryError) as exc:
        fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    except OSError as exc:  # a read-only file system, a full disk, ...: one line, the user's path
        fail(os_error_line(exc))
    except Exception as exc:
        from pufferfish.calibration import MemoryLimitError, PrivacyCheckError, TimeLimitError

        if isinstance(exc, TimeLimitError):
            fail(f"did not finish: {exc}")
        if isinstance(exc, MemoryLimitError):
            fail(str(exc))
        if isinstance(exc, PrivacyCheckError):
            fail(f"privacy check failed (please report this bug): {exc}")
        raise
    raise AssertionError("unreachable")  # pragma: no cover


def os_error_line(exc: OSError) -> str:
    """One line for an operating-system error: the reason and the path the user gave (an output's
    temporary file ``.NAME.pufferfish-PID-XXXX.tmp`` is named as ``NAME``, the file it was to
    become)."""
    name = exc.filename
    if isinstance(name, str):
        path = Path(name)
        match = re.fullmatch(r"\.(.+)\.pufferfish-\d+-[^.]+\.tmp", path.name)
        name = str(path.with_name(match.group(1))) if match else name
        return f"cannot write or read {name!r}: {exc.strerror or exc}"
    return f"{exc.strerror or exc}"


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
    """The names of ``--mechanism a,b`` (None for ``auto`` or ``all``: the library's default set;
    one column's ``calibrate`` reads ``all`` as every mechanism itself)."""
    return None if mechanism in ("auto", "all") else [m.strip() for m in mechanism.split(",")]


def publish(
    payload: Mapping[str, Any],
    *,
    as_json: bool,
    report: str | None,
    write_report: Callable[[str], object] | None,
    show: Callable[[Console], None],
) -> None:
    """The end of ``calibrate`` and ``release``: the HTML report if asked for
    (``write_report(report)``; None when the command has written it already), then one JSON
    object (``--json``) or the printed tables (``show``) and the report's path.

    Raises
    ------
    typer.Exit
        If the report cannot be written (code 1, one line on standard error).
    """
    if report is not None and write_report is not None:
        path, write = report, write_report
        guard(lambda: write(path))
    if as_json:
        typer.echo(json.dumps(payload, allow_nan=False))
        return
    console = plain_console()
    show(console)
    if report is not None:
        console.print(f"HTML report: {report}")


def plain_console(*, stderr: bool = False, width: int | None = None) -> Console:
    """A Rich console that prints text as written: no markup (``[x]``), no emoji codes (``:x:``)
    and no highlighting, so labels, queries and paths are never rewritten on screen.

    Parameters
    ----------
    stderr : bool
        Print to standard error.
    width : int, optional
        Fixed width (default: the terminal's).

    Returns
    -------
    rich.console.Console
    """
    return Console(stderr=stderr, width=width, markup=False, emoji=False, highlight=False)


def num(x: float, digits: int = 4) -> str:
    """``x`` as printed in the tables: ``digits`` significant digits, scientific from 1e4."""
    if x == 0:
        return "0"
    return f"{x:.{digits}g}" if abs(x) < 1e4 else f"{x:.4e}"


def checked_text(c: Calibration | MappingCalibration) -> str:
    """What the ``checked`` column shows: the checked loss, delta or information, or
    ``not numerically checked``."""
    from pufferfish.calibration import MappingCalibration

    if isinstance(c, MappingCalibration):
        return f"loss = {c.checked_loss:.6g}"
    if c.not_checked is not None:
        return "not numerically checked"
    if c.checked_information is not None:
        return f"I = {c.checked_information:.6g}"
    if c.checked_delta is not None and c.checked_loss is None:
        return f"delta = {c.checked_delta:.6g}"
    return f"loss = {c.checked_loss:.6g}"


def head_and_tail(n: int, rows: int) -> list[int]:
    """Row indices of a table of ``n`` rows printed in at most ``rows`` lines: every index when
    ``n <= rows``, else the first ``rows - 5``, then ``-hidden`` (a marker: how many are not
    printed), then the last 5 (issue 34: a 10,000-label column printed 10,056 lines)."""
    if n <= rows:
        return list(range(n))
    head = rows - 5
    return [*range(head), -(n - rows), *range(n - 5, n)]


def print_table(console: Console, table: Table) -> None:
    """Print ``table`` whole at the console's width, no cell cut (issue 32).

    Each column gets at least its longest word (names of mechanisms and labels, numbers and
    headers are single words, so none is ever split or shortened with ``…``); the width left over
    goes to the columns that wrap, in proportion to what they lack. When even the longest words
    do not fit side by side, the table is printed as one record per row: the row's first cell,
    then ``header: value`` lines.
    """
    opts = console.options
    sizes = [table._measure_column(console, opts, c) for c in table.columns]  # with padding
    edges = len(table.columns) + 1 if table.box else 0
    if sum(m.maximum for m in sizes) + edges > console.width:
        spare = console.width - edges - sum(m.minimum for m in sizes)
        if spare < 0:
            _print_records(console, table)
            return
        lack = [m.maximum - m.minimum for m in sizes]
        total = sum(lack)
        give = [spare * x // total if total else 0 for x in lack]
        pad = table.padding[1] + table.padding[3] if len(table.padding) == 4 else 2
        for column, m, extra in zip(table.columns, sizes, give, strict=True):
            column.width = m.minimum + extra - pad
    for column in table.columns:
        column.overflow = "fold"  # never reached: every column holds its longest word
    console.print(table)


def _print_records(console: Console, table: Table) -> None:
    """``table`` as one record per row (:func:`print_table` when its columns cannot fit)."""
    if table.title:
        console.print(str(table.title), highlight=False)
    headers = [str(c.header).replace("\n", " ") for c in table.columns]
    for row in zip(*(list(c.cells) for c in table.columns), strict=True):
        console.print(f"- {row[0]}", highlight=False)
        for header, value in zip(headers[1:], row[1:], strict=True):
            if str(value) not in ("", "-"):  # wrapped at the width, word by word
                console.print(f"    {header}: {value}", highlight=False)


def comparison_table(
    results: list[Calibration | MappingCalibration | Skipped],
    epsilon: float,
    delta: float,
    *,
    show_pair: bool,
) -> Table:
    """The comparison at one epsilon: one row per mechanism used (scale, noise variance, checked
    value, and what decided it or why it is not used)."""
    from pufferfish.calibration import Calibration, MappingCalibration, Skipped
    from pufferfish.priors.sets import set_label

    title = f"epsilon = {epsilon:g}" + (f", delta = {delta:g}" if delta > 0 else "")
    table = Table(title=title, title_justify="left")
    used = [c for c in results if not isinstance(c, Skipped)]
    robust = any(c.prior_set is not None for c in used)
    utility = any(c.expected_accuracy is not None for c in used)
    # a table of mappings of labels has no noise, scale or variance, and no distance between labels
    additive = not used or any(isinstance(c, Calibration) for c in used)
    distance = additive or any(isinstance(c, MappingCalibration) and c.utility == "absolute" for c in used)
    for name, justify in (
        ("mechanism", "left"),
        *((("priors", "left"),) if robust else ()),
        *((("noise", "left"), ("scale", "right"), ("noise variance", "right")) if additive else ()),
        ("checked", "right"),
        *((("accuracy", "right"),) if utility else ()),
        *((("abs error", "right"),) if utility and distance else ()),
        ("decided by / why not", "left"),
    ):
        table.add_column(name, justify=justify)
    for c in used:
        if isinstance(c, MappingCalibration):
            noise = ("mapping", "-", "-")
        else:
            noise = (c.noise, num(c.scale), num(c.variance))
        table.add_row(
            c.mechanism + (" (eps-MI)" if c.criterion == "eps-MI PP" else ""),
            *((set_label(c.prior_set),) if robust else ()),
            *(noise if additive else ()),
            checked_text(c),
            *((num(c.expected_accuracy),) if utility else ()),  # type: ignore[arg-type]
            *((num(c.expected_abs_error),) if utility and distance else ()),  # type: ignore[arg-type]
            (f"{short_text(c.pair[0])} vs {short_text(c.pair[1])} ({c.prior}): " if show_pair else "")
            + short_text(c.decided_by, 400),
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
    from pufferfish.calibration import Calibration, Skipped

    for eps in dict.fromkeys(c.epsilon for c in results):
        here = [c for c in results if c.epsilon == eps]
        print_table(console, comparison_table(here, eps, delta, show_pair=show_pair))
        reasons: dict[str, list[str]] = {}
        for c in here:
            if isinstance(c, Skipped):
                reasons.setdefault(c.reason, []).append(c.mechanism)
        for reason, names in reasons.items():
            console.print(f"not used: {', '.join(names)}: {reason}", highlight=False)
        for c in here:
            if isinstance(c, Calibration) and c.not_checked is not None:
                note = f"not numerically checked: {c.mechanism} rests on {c.source} alone ({c.not_checked})"
                console.print(note, highlight=False)


@contextmanager
def progress_bar(what: str = "releasing rows") -> Iterator[Callable[[int, int], None]]:
    """A Rich progress bar on standard error (only on a terminal), as ``progress(done, total)``.

    Yields
    ------
    callable
        ``advance(rows_done, rows_total)``, the ``progress`` argument of the releases.
    """
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    err = plain_console(stderr=True)
    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err,
        transient=True,
        disable=not err.is_terminal,  # a bar only on a terminal; pipes get the one-line messages
    )
    with bar:  # before the first row: the calibration (priors, mechanisms, checks), its time shown
        task = bar.add_task("calibrating (priors, mechanisms, exact checks)", total=None)

        def advance(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total, description=what)

        yield advance


@contextmanager
def working(what: str) -> Iterator[None]:
    """A spinner with the time elapsed on standard error while a long step runs (only on a
    terminal; issue 44: ``markov calibrate`` printed nothing for 85 s)."""
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    err = plain_console(stderr=True)
    spin = Progress(SpinnerColumn(), TextColumn(what), TimeElapsedColumn(), console=err, transient=True,
                    disable=not err.is_terminal)  # fmt: skip
    with spin:
        spin.add_task(what, total=None)
        yield
