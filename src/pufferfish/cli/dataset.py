"""``pufferfish property ...``: protect the share of a table's rows with a property (issue 58), a
thin layer over :mod:`pufferfish.dataset`."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.console import Console

from pufferfish.cli.common import guard, parse_mechanisms, print_comparisons, working

property_app = typer.Typer(
    name="property",
    help="Protect a property of the whole table: the share of rows with it (dataset-level secrets).",
    no_args_is_help=True,
)

DataArg = Annotated[str, typer.Argument(help="CSV or Parquet file, or a shipped data set name: adult.")]
PropertyOpt = Annotated[
    str,
    typer.Option(
        "--property",
        help="The property whose share of rows is the secret: COLUMN=VALUE (labels as written), "
        "COLUMN!=VALUE, or COLUMN>=NUMBER (also >, <=, <).",
    ),
]
SharesOpt = Annotated[
    str,
    typer.Option(
        "--shares", help="The secrets: shares of rows with the property 'A,B,...'; every pair is protected."
    ),
]
RowsOpt = Annotated[
    int | None,
    typer.Option("--rows", min=1, help="Rows n of the data set released (default: the table's rows kept)."),
]
QueryOpt = Annotated[
    str,
    typer.Option(
        "--query",
        help="Statistics 'Q,Q,...': count (rows with the property), count:COLUMN=VALUE, sum:COLUMN, "
        "mean:COLUMN.",
    ),
]


@property_app.command("calibrate")
def property_calibrate(
    data: DataArg,
    prop: PropertyOpt,
    epsilon: Annotated[list[float], typer.Option("--epsilon", help="Privacy budget (repeatable).")],
    shares: SharesOpt = "0.45,0.55",
    rows: RowsOpt = None,
    query: QueryOpt = "count",
    mechanism: Annotated[
        str,
        typer.Option(
            "--mechanism",
            help="Calibrators 'a,b' or all (group DP, the additive ones and the exact optimum).",
        ),
    ] = "all",
    noise: Annotated[
        str, typer.Option("--noise", help="laplace, or gaussian (with --delta > 0).")
    ] = "laplace",
    delta: Annotated[float, typer.Option("--delta", help="Target delta in [0, 1) (Gaussian noise).")] = 0.0,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object instead of tables.")] = False,
) -> None:
    """Noise scales that keep the share of rows with --property secret (shares --shares), for each
    statistic of n rows drawn from DATA's rows with and without the property: every mechanism's
    scale checked exactly on the statistic's exact distribution at each share, beside group DP."""
    from pufferfish.dataset.calibrate import calibrate_property

    def run() -> Any:
        return calibrate_property(
            data, property=prop, epsilon=epsilon, queries=query, shares=shares, rows=rows,
            delta=delta, noise=noise, mechanisms=parse_mechanisms(mechanism),
        )  # fmt: skip

    with working("calibrating (exact distributions of the statistics, mechanisms, exact checks)"):
        found = guard(run)
    if as_json:
        typer.echo(json.dumps(found.to_dict(), allow_nan=False))
        return
    _print(found, delta)


def _print(found: Any, delta: float) -> None:
    console = Console()
    model = found.model
    t = model.table
    console.print(f"data: {t.description}", highlight=False)
    console.print(
        f"rows: {t.rows} kept ({t.rows_left_out} left out: a missing cell in a column used); "
        f"{t.rows_with_property} have {t.prop.text} (share {t.share:.4f})",
        highlight=False,
    )
    shares = ", ".join(f"{s:g}" for s in model.shares)
    console.print(
        f"secret: the share of rows with {t.prop.text} among n = {model.rows} rows, one of {shares} "
        "(every pair protected); prior: each row drawn from the table's rows with the property (or "
        "without), the point estimate",
        highlight=False,
    )
    for values, results in zip(t.values, found.results, strict=True):
        console.print(
            f"\nquery {values.statistic.text}: the table's own value {values.total:g} (its {t.rows} "
            f"rows), per-row range "
            f"{values.value_range:g}",
            highlight=False,
        )
        print_comparisons(console, results, delta, show_pair=False)
    console.print(
        "\nchecked: every scale by the exact privacy loss on the statistic's exact distribution at each "
        "share, for the point-estimate prior; group DP holds for every prior in the table's range",
        highlight=False,
    )
