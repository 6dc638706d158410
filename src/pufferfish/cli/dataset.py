"""``pufferfish property ...``: protect the share of a table's rows with a property (issue 58), a
thin layer over :mod:`pufferfish.dataset`."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any

import typer
from rich.console import Console

from pufferfish.cli.common import (
    guard,
    parse_mechanisms,
    plain_console,
    print_comparisons,
    refuse_report_path_early,
    working,
)

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

WeightsOpt = Annotated[
    str,
    typer.Option(
        "--weights",
        help="How statistics released together share the noise: rows (each statistic's noise in units of "
        "what one row changes it by, the squared sum smallest) or l2 (the plain squared L2 error smallest, "
        "Chen and Ohrimenko's measure).",
    ),
]

PriorSetOpt = Annotated[
    str,
    typer.Option(
        "--prior-set",
        help="The adversary's conditionals: none (the table's rows as drawn, the point estimate) or dkw / l1 "
        "(every pair in confidence sets around them, on the values seen; certified by row-composition).",
    ),
]

ConfidenceOpt = Annotated[
    float, typer.Option("--confidence", help="Confidence level of --prior-set dkw or l1, in (0, 1).")
]

MechanismOpt = Annotated[
    str | None,
    typer.Option(
        "--mechanism",
        help="One statistic: a calibrator (default optimal, the smallest scale passing the exact check; "
        "row-composition and wasserstein-coupling need no exact distribution). Several: row-composition "
        "(default) or wasserstein-coupling; two counts of a small table: a calibrator on their joint law.",
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
    weights: WeightsOpt = "rows",
    prior_set: PriorSetOpt = "none",
    confidence: ConfidenceOpt = 0.95,
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
    report: Annotated[
        str | None,
        typer.Option(
            "--report", help="Also write a self-contained HTML report (confidential: the table's values)."
        ),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing report file.")] = False,
) -> None:
    """Noise scales that keep the share of rows with --property secret (shares --shares), for each
    statistic of n rows drawn from DATA's rows with and without the property: every mechanism's
    scale checked exactly on the statistic's exact distribution at each share, beside group DP;
    and the theorems' product Laplace scales (group-dp, wasserstein-coupling, row-composition) for
    the statistics together, or for one whose exact distribution is too large."""
    from pufferfish.dataset.calibrate import calibrate_property

    refuse_report_path_early(report, force)

    def run() -> Any:
        return calibrate_property(
            data, property=prop, epsilon=epsilon, queries=query, shares=shares, rows=rows,
            delta=delta, noise=noise, mechanisms=parse_mechanisms(mechanism), weights=weights,
            prior_set=prior_set, confidence=confidence,
        )  # fmt: skip

    with working("calibrating (exact distributions of the statistics, mechanisms, exact checks)"):
        found = guard(run)
    if report is not None:
        from pufferfish.dataset.report import property_report_html

        _write_report(property_report_html, found, report, force)
    if as_json:
        typer.echo(json.dumps(found.to_dict(), allow_nan=False))
        return
    _print(found, delta)
    if report is not None:
        plain_console().print(f"HTML report: {report} (confidential: the table's own values)")


def _print(found: Any, delta: float) -> None:
    console = plain_console()
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
        f"without): {model.prior_text()}",
        highlight=False,
    )
    for values, results, scenario in zip(t.values, found.results, found.scenarios, strict=True):
        console.print(
            f"\nquery {values.statistic.text}: the table's own value {values.total:g} (its {t.rows} "
            f"rows), per-row range "
            f"{values.value_range:g}",
            highlight=False,
        )
        if scenario is None:  # every mechanism skipped for the same reason: said once
            console.print(f"not calibrated on it: {results[0].reason}", highlight=False)
            continue
        print_comparisons(console, results, delta, show_pair=False)
    if found.joint:
        names = " and ".join(v.statistic.text for v in t.values)
        console.print(
            f"\n{names} released together (each count + Laplace(scale)), checked exactly on their joint "
            "distribution at each share:",
            highlight=False,
        )
        print_comparisons(console, found.joint, delta, show_pair=False)
    if found.theorems:
        _print_theorems(console, found.theorems)
    console.print(
        "\nchecked: every scale by the exact privacy loss on the statistic's exact distribution at each "
        "share, for the point-estimate prior; group DP holds for every prior in the table's range; the "
        f"theorems' scales by their bound (one row checked exactly), for {model.prior_text()}",
        highlight=False,
    )


def _print_theorems(console: Console, theorems: Any) -> None:
    """The theorems' product Laplace scales, one table per group of statistics."""
    from rich.table import Table

    for queries in dict.fromkeys(t.queries for t in theorems):
        console.print(
            f"\n{', '.join(queries)}{' together' if len(queries) > 1 else ''}: product Laplace certified by "
            "a theorem, without the exact distribution",
            highlight=False,
        )
        table = Table("epsilon", "mechanism", "scales", "L2 error (rms)", "loss <=")
        for t in theorems:
            if t.queries == queries:
                table.add_row(f"{t.epsilon:g}", t.mechanism, ", ".join(f"{x:.5g}" for x in t.scales),
                              f"{t.l2_error:.5g}", f"{t.loss:.6g}")  # fmt: skip
        console.print(table)


@property_app.command("release")
def property_release(
    data: DataArg,
    prop: PropertyOpt,
    epsilon: Annotated[float, typer.Option("--epsilon", help="Privacy budget.")],
    output: Annotated[str, typer.Option("--output", help="JSON file to write the released statistics to.")],
    shares: SharesOpt = "0.45,0.55",
    query: QueryOpt = "count",
    weights: WeightsOpt = "rows",
    prior_set: PriorSetOpt = "none",
    confidence: ConfidenceOpt = 0.95,
    mechanism: MechanismOpt = None,
    noise: Annotated[
        str, typer.Option("--noise", help="laplace, or gaussian (one statistic, with --delta > 0).")
    ] = "laplace",
    delta: Annotated[float, typer.Option("--delta", help="Target delta in [0, 1) (Gaussian noise).")] = 0.0,
    seed: Annotated[
        int | None,
        typer.Option("--seed", help="NumPy seed: reproducible but NOT secure noise (simulations only)."),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing output file.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Also print the JSON written.")] = False,
    report: Annotated[
        str | None,
        typer.Option(
            "--report", help="Also write a self-contained HTML report (confidential: the distributions)."
        ),
    ] = None,
) -> None:
    """Release DATA's statistics (n = its rows kept) with noise that keeps the share of rows with
    --property secret among --shares: one statistic by a calibrator checked exactly, two counts of
    a small table checked on their joint law, others by row-composition (one row's exact loss
    composed through the binomial count of rows with the property). The output holds the noisy
    values, their noise and the guarantee, never the table's own values or share."""
    from pufferfish.dataset.release import release_property
    from pufferfish.tables.outputs import check_output_path, write_text

    path = guard(lambda: check_output_path(output, force=force))
    refuse_report_path_early(report, force)

    def run() -> Any:
        return release_property(
            data, property=prop, epsilon=epsilon, queries=query, shares=shares, mechanism=mechanism,
            delta=delta, noise=noise, weights=weights, prior_set=prior_set, confidence=confidence, rng=seed,
        )  # fmt: skip

    with working("releasing (exact distributions, calibration, checks, noise)"):
        found = guard(run)
    payload = found.to_dict()
    text = json.dumps(payload, allow_nan=False, indent=1) + "\n"
    guard(lambda: write_text(text, path, force=force))
    if report is not None:
        from pufferfish.dataset.report import release_report_html

        _write_report(release_report_html, found, report, force)
    if as_json:
        typer.echo(json.dumps(payload, allow_nan=False))
        return
    console = plain_console()
    for row in payload["released"]:
        console.print(
            f"released {row['query']}: {row['value']:.6g} ({row['noise']} noise of scale {row['scale']:.6g})",
            highlight=False,
        )
    console.print(f"mechanism: {payload['mechanism']}", highlight=False)
    console.print(f"guarantee: {payload['guarantee']}", highlight=False)
    console.print(f"checked: {payload['checked']}", highlight=False)
    secure = "seeded NumPy (NOT secure)" if seed is not None else "secure (cryptographic randomness)"
    console.print(f"noise: {secure}; written: {path}", highlight=False)
    if report is not None:
        console.print(
            f"HTML report: {report} (confidential: distributions built from the table)", highlight=False
        )


@property_app.command("attack")
def property_attack(
    data: DataArg,
    prop: PropertyOpt,
    epsilon: Annotated[float, typer.Option("--epsilon", help="Privacy budget of the release attacked.")],
    rows: Annotated[int, typer.Option("--rows", min=1, help="Rows n of each simulated data set.")],
    shares: SharesOpt = "0.45,0.55",
    query: QueryOpt = "count",
    weights: WeightsOpt = "rows",
    prior_set: PriorSetOpt = "none",
    confidence: ConfidenceOpt = 0.95,
    mechanism: MechanismOpt = None,
    samples: Annotated[
        int,
        typer.Option("--samples", min=10, help="Simulated data sets of each share, to train and to test."),
    ] = 200,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the simulation.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """A shadow classifier (logistic regression, as Chen and Ohrimenko's) trained on the statistics
    of data sets drawn at each of two shares: its accuracy without noise and with the calibrated
    noise, beside the bound e^eps / (1 + e^eps) that the guarantee implies."""
    from pufferfish.dataset.attack import attack_property

    def run() -> Any:
        return attack_property(
            data, property=prop, epsilon=epsilon, rows=rows, queries=query, shares=shares,
            mechanism=mechanism, train=samples, test=samples, weights=weights, prior_set=prior_set,
            confidence=confidence, rng=seed,
        )  # fmt: skip

    with working("simulating data sets and training the shadow classifier"):
        found = guard(run)
    if as_json:
        typer.echo(json.dumps(found.to_dict(), allow_nan=False))
        return
    console = plain_console()
    a, b = found.shares
    console.print(
        f"shadow classifier: {found.train} + {found.train} simulated data sets of n = {found.rows} rows at "
        f"shares {a:g} and {b:g}, scored on {found.test} + {found.test} fresh ones",
        highlight=False,
    )
    console.print(f"accuracy without noise: {found.accuracy_without_noise:.4f}", highlight=False)
    console.print(
        f"accuracy with {found.mechanism} noise (scales {', '.join(f'{s:.4g}' for s in found.scales)}): "
        f"{found.accuracy_with_noise:.4f}",
        highlight=False,
    )
    console.print(
        f"bound at eps {found.epsilon:g}: e^eps / (1 + e^eps) = {found.bound:.4f} (sampling error of an "
        f"accuracy here: +/- {found.sampling_error:.3f})",
        highlight=False,
    )


def _write_report(render: Callable[[Any], str], found: Any, report: str, force: bool) -> None:
    """``render(found)`` written to ``report`` atomically (:func:`pufferfish.tables.outputs.write_text`);
    an error is one line and exit code 1."""
    from pathlib import Path

    from pufferfish.tables.outputs import write_text

    page = guard(lambda: render(found))
    guard(lambda: write_text(page, Path(report), force=force, kind="report"))
