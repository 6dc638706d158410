"""``pufferfish ledger ...``: what a ledger's releases guarantee together (issue 42), a thin layer
over :func:`pufferfish.ledger.summary.summarize`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.console import Console
from rich.table import Table

from pufferfish.cli.common import guard, plain_console, working

ledger_app = typer.Typer(
    name="ledger",
    help="What was released from a data set, and what it guarantees together.",
    no_args_is_help=True,
)

LedgerOpt = Annotated[
    str | None,
    typer.Option(
        "--ledger",
        help="Record the release in this ledger file (SQLite; created if new): entry and output are "
        "published together, and `pufferfish ledger show FILE` gives the guarantee of everything released.",
    ),
]
BudgetOpt = Annotated[
    float | None,
    typer.Option(
        "--budget",
        help="With --ledger: the guarantee of everything released about the secret together must meet this "
        "epsilon; a Laplace release's scale is raised until it does, a mapping is re-calibrated at a smaller "
        "epsilon (or another mapping used), else the release is refused before any noise is drawn.",
    ),
]


def against_the_ledger(table: Any, data: Any, read: Any, ledger: str | None, budget: float | None) -> Any:
    """``calibrate --ledger``: each mechanism of ``table`` against the ledger (nothing written)."""
    from pufferfish.ledger.record import LedgerContext, check_budget
    from pufferfish.ledger.store import Ledger
    from pufferfish.pipeline.ledgered import against_each
    from pufferfish.tables.source import resolve_source

    spent = check_budget(budget)
    if ledger is None:
        raise ValueError(
            f"budget needs a ledger (--ledger FILE) to count what was released, got budget {budget!r}"
        )
    book = Ledger(ledger, create=not Path(ledger).exists())  # read only: an existing ledger may be read-only
    return against_each(LedgerContext(book, spent, resolve_source(data, "duckdb", read)), table)


def print_against(console: Console, rows: Any) -> None:
    """The table of :func:`against_the_ledger`."""
    table = Table(title="against the ledger: each mechanism's release together with what it records")
    for name in ("mechanism", "eps", "scale to release", "together", "by"):
        table.add_column(name)
    for row in rows:
        if row.chosen is None:
            table.add_row(row.mechanism, "", "refused", "", row.refused)
            continue
        scale = getattr(row.chosen, "scale", None)
        together = row.together
        table.add_row(
            row.mechanism, f"{row.chosen.epsilon:g}", "mapping" if scale is None else f"{scale:.6g}",
            "none" if together.epsilon is None else f"{together.epsilon:.6g}", together.rule,
        )  # fmt: skip
    console.print(table)


@ledger_app.command("show")
def show(
    ledger: Annotated[str, typer.Argument(help="The ledger file.")],
    data: Annotated[
        str | None,
        typer.Option(
            "--data", help="The table the releases were made from (default: the file the ledger records)."
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
) -> None:
    """Every release recorded in LEDGER and, per secret, their guarantee together: the exact joint
    check, a theorem that adds, or no guarantee (with the reason); never a silent sum."""
    from pufferfish.ledger.summary import summarize
    from pufferfish.markov.ledgered import SERIES_CHECKS  # rule 2, given explicitly

    with working("checking the releases together"):
        summary = guard(lambda: summarize(ledger, data=data, checks=SERIES_CHECKS))
    if as_json:
        typer.echo(json.dumps(summary.to_dict(), indent=2, allow_nan=False))
        return
    console = plain_console()
    data = summary.data.split(":")[0] if summary.data.startswith("shipped data set ") else summary.data
    console.print(f"ledger: {summary.path}", soft_wrap=True, highlight=False, markup=False)  # never folded
    table = Table(  # a shipped set by its name, not a path; no outer border: the tour's rows in 80
        title=f"releases of {data}", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False
    )
    for name in ("#", "time (UTC)", "secret", "columns", "mechanism", "eps", "priors", "output"):
        table.add_column(name, overflow="fold")
    for e in summary.entries:
        body = e.body
        prior_set = body.get("prior_set") or ["none"]
        table.add_row(
            str(e.id) + (" (publishing)" if e.state == "pending" else ""),
            e.created[:16].replace("T", " "),  # to the minute, whole (was cut to 2026-11-29T...)
            e.secret,
            ", ".join(body.get("columns", [])),
            str(body.get("mechanism")),
            f"{e.epsilon:g}",
            "estimate" if prior_set[0] == "none" else f"{prior_set[0]} {float(prior_set[1]):.0%}",
            str(body.get("output")),
        )
    # never cropped: as wide as its widest row (a terminal narrower than that wraps the lines)
    natural = console.measure(table, options=console.options.update_width(10_000)).maximum
    plain_console(width=max(console.width, natural)).print(table)
    for g in summary.secrets:
        console.print(g.line(), soft_wrap=False, highlight=False, markup=False)
