"""The ``pufferfish`` command line: a thin layer over :mod:`pufferfish.pipeline.calibrate` (tables) and
:mod:`pufferfish.multiuser` (sums): parse the options, call the library, print.

Errors in the input (unknown column or value, one-sided pair, empty group, bad epsilon,
unreadable file, existing output) print one line ``error: ...`` on standard error and exit 1.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.table import Table

from pufferfish._checks import check_epsilons
from pufferfish.cli.common import (
    guard,
    num,
    parse_mechanisms,
    parse_order,
    plain_console,
    progress_bar,
    publish,
    refuse_report_path_early,
    require_pairs,
    working,
)
from pufferfish.cli.dataset import property_app
from pufferfish.cli.ledger import BudgetOpt, LedgerOpt, against_the_ledger, ledger_app, print_against
from pufferfish.cli.markov import markov_app
from pufferfish.defaults import DEFAULT_UTILITY_LABELS, DEFAULT_UTILITY_NUMBERS, TIME_LIMIT, UTILITIES

app = typer.Typer(
    name="pufferfish",
    help="Calibrate and release data under pufferfish privacy (Laplace or Gaussian noise; empirical, "
    "Gaussian or Gaussian-mixture priors).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

T = TypeVar("T")


class Noise(str, Enum):
    laplace = "laplace"
    gaussian = "gaussian"


DataArg = Annotated[str, typer.Argument(help="CSV or Parquet file, or a shipped data set name: adult.")]
SecretOpt = Annotated[str, typer.Option("--secret", help="Column holding the secret.")]
PairOpt = Annotated[
    list[str], typer.Option("--pair", help="Discriminative pair of secret values 'A,B' (repeatable).")
]
PublicOpt = Annotated[
    str, typer.Option("--public", help="Column to release; 'a,b' for several columns calibrated jointly.")
]
UnitOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--unit",
        help="With several --public columns: 'col=w', w of col counts as distance 1 (default: a numeric "
        "column's range, hi - lo with --bounds; 1 for a categorical one).",
    ),
]
OrderOpt = Annotated[
    str | None,
    typer.Option("--order", help="Label order of a categorical public column 'v1,v2,...' (default: sorted)."),
]
WeightOpt = Annotated[str | None, typer.Option("--weight", help="Frequency-weight column.")]
CategoricalOpt = Annotated[
    list[str] | None,
    typer.Option("--categorical", help="Read this column as categorical labels (repeatable)."),
]
NumericOpt = Annotated[
    list[str] | None,
    typer.Option("--numeric", help="Read this column as numbers (repeatable)."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object instead of tables.")]
NamesOpt = Annotated[
    str | None,
    typer.Option("--names", help="Column names 'a,b,c' of a CSV file without a header row."),
]
NaOpt = Annotated[
    list[str] | None,
    typer.Option("--na", help="A missing-value marker such as '?', 'NA' or '-' (repeatable)."),
]
DelimiterOpt = Annotated[
    str | None,
    typer.Option("--delimiter", help="Field delimiter of a CSV file, e.g. ';' or '\\t' (default: sniffed)."),
]
TimeLimitOpt = Annotated[
    float,
    typer.Option(
        "--time-limit", help="Seconds each mechanism may take before its row says it did not finish."
    ),
]
EncodingOpt = Annotated[
    str, typer.Option("--encoding", help="Text encoding of a CSV file, e.g. latin-1 (default utf-8).")
]
PriorOpt = Annotated[
    str,
    typer.Option(
        "--prior",
        help="Adversary prior: empirical, gaussian (ML fit), gmm (BIC) or gmm:K, fitted per secret.",
    ),
]
NoiseOpt = Annotated[Noise, typer.Option("--noise", help="Noise for the optimal scale: laplace or gaussian.")]
DeltaOpt = Annotated[float, typer.Option("--delta", help="Target delta in [0, 1) (default 0: pure eps).")]
FitSeedOpt = Annotated[int, typer.Option("--fit-seed", help="Seed of the mixture fit (EM initialisation).")]
ReportOpt = Annotated[
    str | None,
    typer.Option(
        "--report",
        help="Also write a self-contained HTML report (tables and figures) to this .html file "
        "(for the first --epsilon).",
    ),
]
PriorSetOpt = Annotated[
    str | None,
    typer.Option(
        "--prior-set",
        help="dkw, l1 or none: the guarantee holds for every prior in a confidence set around each "
        "estimate (default dkw with empirical priors, pure eps and Laplace noise; else none).",
    ),
]
ConfidenceOpt = Annotated[
    float, typer.Option("--confidence", help="Confidence level of the prior sets, in (0, 1).")
]
PriorRadiusOpt = Annotated[
    float | None,
    typer.Option(
        "--prior-radius", help="Radius of every prior set (DKW eta or L1 r) instead of --confidence."
    ),
]
PriorsFromOpt = Annotated[
    str | None,
    typer.Option(
        "--priors-from",
        help="Estimate the priors (and their sets) from this table instead (same column names), "
        "e.g. a public or historical sample.",
    ),
]
UtilityOpt = Annotated[
    str | None,
    typer.Option(
        "--utility",
        help=f"Objective of optimal-mapping: {', '.join(UTILITIES)} (default {DEFAULT_UTILITY_LABELS} for a "
        f"categorical column: every label keeps its share of the released rows; {DEFAULT_UTILITY_NUMBERS}, "
        "the mean absolute error, for a numeric one).",
    ),
]
MissingOpt = Annotated[
    str | None,
    typer.Option(
        "--missing",
        help="value (default without --bounds): a missing public cell is inside the check: a label of its "
        "own in a categorical column; in a numeric one written missing, its rates checked. impute (default "
        "with --bounds): a missing number is the --impute value, released with the same noise. omit: rows "
        "with a missing public cell left out of the priors, as the seed papers' figures (calibration only).",
    ),
]
ImputeOpt = Annotated[
    float | None,
    typer.Option(
        "--impute",
        metavar="VALUE",
        help="With --bounds: the value inside them a missing number is read and released as (default the "
        "lower bound); the output does not show which cells were missing.",
    ),
]
LabelsOpt = Annotated[
    str | None,
    typer.Option(
        "--labels",
        help="Labels 'a,b' of the public column's domain never seen in the data: added to its alphabet, "
        "so the prior sets put mass on them and a mapping may write them.",
    ),
]
BoundsOpt = Annotated[
    str | None,
    typer.Option(
        "--bounds",
        help="Domain 'lo,hi' of a numeric public column (among several: of the one numeric column), public "
        "(not from the data): values outside are clamped, and the prior sets hold priors with mass anywhere "
        "in it.",
    ),
]
KeepOpt = Annotated[
    str | None,
    typer.Option(
        "--keep",
        help="Other columns 'a,b' written as they are, INSIDE the check: released jointly with the "
        "public column(s) (only optimal applies); refused, one line per column, when they alone "
        "exceed epsilon.",
    ),
]
EngineOpt = Annotated[
    str,
    typer.Option(
        "--engine",
        help="duckdb (embedded, default) or spark (pyspark extra; DATA may be a folder; a release "
        "is written as a folder of part files).",
    ),
]


def _csv_options(names: Any, na: Any, delimiter: Any, encoding: str) -> Any:
    from pufferfish.tables.source import check_csv_options  # the table layer loads when a command runs

    return check_csv_options(names, na or (), delimiter, encoding)


def _print_release(console: Console, result: Any, beside: list[Any] | None = None) -> None:
    from pufferfish.cli.show import print_release
    from pufferfish.ledger.beside import same_secret_and_columns

    print_release(console, result)
    inputs = result.report.get("inputs") or {}
    earlier = same_secret_and_columns(beside or [], inputs, list(result.calibration.columns))
    if earlier:  # what a ledger would have checked: said once, in one line
        shown = ", ".join(f"{e.report.name} (eps {e.epsilon:g})" for e in earlier[:3])
        more = f" and {len(earlier) - 3} more" if len(earlier) > 3 else ""
        console.print(
            f"note: no ledger, and {shown}{more} beside the output record earlier releases of "
            f"{', '.join(sorted(set(earlier[0].columns) & set(result.calibration.columns)))} about "
            f"{inputs.get('secret')!r} from this table: no guarantee covers them together with this one "
            "(pufferfish guarantees need not add up); record releases with --ledger FILE to check them "
            "together",
            highlight=False, markup=False,
        )  # fmt: skip


def show_calibration(console: Console, table: Any, rows: Any) -> None:
    """``calibrate``'s tables, and the ledger's when given."""
    from pufferfish.cli.show import print_calibration

    print_calibration(console, table)
    if rows is not None:
        print_against(console, rows)


@app.command()
def calibrate(
    data: DataArg,
    secret: SecretOpt,
    public: PublicOpt,
    epsilon: Annotated[list[float], typer.Option("--epsilon", help="Privacy budget (repeatable).")],
    pair: PairOpt,
    order: OrderOpt = None,
    weight: WeightOpt = None,
    mechanism: Annotated[
        str,
        typer.Option(
            "--mechanism",
            help="Calibrator, several 'a,b', all, or auto (default: the column's set: the randomized "
            "mappings for a categorical column, the additive mechanisms for a numeric one).",
        ),
    ] = "auto",
    prior: PriorOpt = "empirical",
    noise: NoiseOpt = Noise.laplace,
    delta: DeltaOpt = 0.0,
    fit_seed: FitSeedOpt = 0,
    engine: EngineOpt = "duckdb",
    report: ReportOpt = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing report file.")] = False,
    as_json: JsonOpt = False,
    categorical: CategoricalOpt = None,
    numeric: NumericOpt = None,
    prior_set: PriorSetOpt = None,
    confidence: ConfidenceOpt = 0.95,
    prior_radius: PriorRadiusOpt = None,
    priors_from: PriorsFromOpt = None,
    utility: UtilityOpt = None,
    unit: UnitOpt = None,
    names: NamesOpt = None,
    na: NaOpt = None,
    delimiter: DelimiterOpt = None,
    encoding: EncodingOpt = "utf-8",
    time_limit: TimeLimitOpt = TIME_LIMIT,
    missing: MissingOpt = None,
    impute: ImputeOpt = None,
    labels: LabelsOpt = None,
    bounds: BoundsOpt = None,
    keep: KeepOpt = None,
    ledger: LedgerOpt = None,
    budget: BudgetOpt = None,
) -> None:
    """Compare the calibrators' noise scales (and randomized mappings) on priors estimated (or
    fitted) from DATA; with --public a,b, on the joint priors of several columns; with --ledger,
    each one against what the ledger records (and --budget), nothing written to it."""
    from pufferfish.calibration import REGISTRY
    from pufferfish.pipeline.calibrate import calibrate_table
    from pufferfish.pipeline.page import check_report_path
    from pufferfish.pipeline.release import write_html_report
    from pufferfish.pipeline.results import report_dict

    read = guard(lambda: _csv_options(names, na, delimiter, encoding))
    _will_write(report)

    def run() -> Any:
        if report is not None:
            check_report_path(report, force=force)
        return calibrate_table(
            data,
            secret=secret,
            public=public,
            pairs=require_pairs(pair),
            epsilon=epsilon,
            mechanisms=list(REGISTRY) if mechanism == "all" else parse_mechanisms(mechanism),
            order=parse_order(order),
            weight=weight,
            prior=prior,
            noise=noise.value,
            delta=delta,
            fit_seed=fit_seed,
            engine=engine,
            categorical=categorical or (),
            numeric=numeric or (),
            prior_set=prior_set,
            confidence=confidence,
            prior_radius=prior_radius,
            priors_from=priors_from,
            utility=utility,
            read=read,
            time_limit=time_limit,
            units=unit,
            missing=missing,
            impute=impute,
            labels=labels,
            bounds=bounds,
            keep=keep,
        )

    with working("calibrating (priors, mechanisms, exact checks)"):
        table = guard(run)
    payload = report_dict(table)
    rows = None
    if ledger is not None or budget is not None:  # each mechanism against the ledger (issue 42)
        with working("checking each mechanism together with the ledger"):
            rows = guard(lambda: against_the_ledger(table, data, read, ledger, budget))
        payload["ledger"] = {"file": ledger, "budget": budget, "against": [row.to_dict() for row in rows]}
    publish(
        payload, as_json=as_json, report=report,
        write_report=lambda path: write_html_report(table, path, payload=payload, force=force),
        show=lambda console: show_calibration(console, table, rows),
    )  # fmt: skip
    empty = [e for e in table.epsilons if not any(hasattr(c, "checked_loss") for c in table.at(e))]
    if empty:  # nothing answered at a budget: not a success (issue 44), the reasons are printed above
        typer.echo(
            f"error: no mechanism gives a checked scale at epsilon {', '.join(f'{e:g}' for e in empty)} "
            "(each one's reason is listed above)",
            err=True,
        )
        raise typer.Exit(1)


KeepUncheckedOpt = Annotated[
    str | None,
    typer.Option(
        "--keep-unchecked",
        help="Other columns 'a,b' written in clear, NOT covered by the check: the guarantee then "
        "assumes them independent of the secret and the released columns together (the whole written "
        "record's loss at the estimate is printed). The output holds the released columns and these "
        "only; the secret is never written.",
    ),
]
KeepOrderOpt = Annotated[
    bool,
    typer.Option(
        "--keep-order",
        help="Write the rows in the input order; the guarantee then assumes that order independent of "
        "the secret. Default: a uniformly random order (cryptographic randomness).",
    ),
]
PublicReportOpt = Annotated[
    str | None,
    typer.Option(
        "--public-report",
        help="Also write a public summary (.json): the guarantee, epsilon, the pairs, the mechanism, "
        "what the file holds and for which priors, with no count or figure of the table. The JSON and "
        "HTML reports are confidential.",
    ),
]
PublicParametersOpt = Annotated[
    bool,
    typer.Option(
        "--public-report-parameters",
        help="Put the fitted scale or matrix in the public summary (they are functions of the table).",
    ),
]


@app.command()
def release(
    data: DataArg,
    secret: SecretOpt,
    public: PublicOpt,
    epsilon: Annotated[
        list[float],
        typer.Option("--epsilon", metavar="FLOAT", help="Privacy budget (one value; a second is refused)."),
    ],
    output: Annotated[str, typer.Option("--output", help="Output file: .csv, .csv.gz, .parquet or .pq.")],
    pair: PairOpt,
    order: OrderOpt = None,
    weight: WeightOpt = None,
    mechanism: Annotated[
        str | None,
        typer.Option(
            "--mechanism",
            help="Calibrator whose scale is used, or a randomized mapping (optimal-mapping, "
            "randomized-response, randomized-response-dp, geometric) that releases labels. Default: "
            "optimal-mapping for a categorical column (labels out), optimal for a numeric one.",
        ),
    ] = None,
    compare: Annotated[
        bool, typer.Option("--compare", help="Also calibrate and show the other mechanisms.")
    ] = False,
    prior: PriorOpt = "empirical",
    noise: NoiseOpt = Noise.laplace,
    delta: DeltaOpt = 0.0,
    fit_seed: FitSeedOpt = 0,
    rng_seed: Annotated[
        int | None,
        typer.Option("--rng-seed", min=0, help="Use a seeded, INSECURE sampler (experiments only)."),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite existing output files.")] = False,
    workers: Annotated[
        int | None,
        typer.Option("--workers", help="Threads of the secure sampler (default: every core)."),
    ] = None,
    engine: EngineOpt = "duckdb",
    report: ReportOpt = None,
    as_json: JsonOpt = False,
    categorical: CategoricalOpt = None,
    numeric: NumericOpt = None,
    prior_set: PriorSetOpt = None,
    confidence: ConfidenceOpt = 0.95,
    prior_radius: PriorRadiusOpt = None,
    priors_from: PriorsFromOpt = None,
    utility: UtilityOpt = None,
    sampler: Annotated[
        str,
        typer.Option(
            "--sampler",
            help="Secure Laplace and Gaussian sampler: exact (OpenSSL's CSPRNG; default) or opendp.",
        ),
    ] = "exact",
    unit: UnitOpt = None,
    names: NamesOpt = None,
    na: NaOpt = None,
    delimiter: DelimiterOpt = None,
    encoding: EncodingOpt = "utf-8",
    time_limit: TimeLimitOpt = TIME_LIMIT,
    keep_unchecked: KeepUncheckedOpt = None,
    missing: MissingOpt = None,
    impute: ImputeOpt = None,
    labels: LabelsOpt = None,
    bounds: BoundsOpt = None,
    keep: KeepOpt = None,
    ledger: LedgerOpt = None,
    budget: BudgetOpt = None,
    keep_order: KeepOrderOpt = False,
    public_report: PublicReportOpt = None,
    public_report_parameters: PublicParametersOpt = False,
) -> None:
    """Write the public column(s) of DATA as a pufferfish-private noisy version (with --public a,b,
    several columns released jointly with product Laplace noise); no other column is written
    unless named with --keep-unchecked, and the secret never is."""
    from pufferfish.pipeline.release import release as do_release
    from pufferfish.tables.source import report_path_for

    _will_write(output, guard(lambda: report_path_for(Path(output))), report)
    read = guard(lambda: _csv_options(names, na, delimiter, encoding))
    from pufferfish.ledger.beside import releases_beside

    beside = [] if ledger is not None else releases_beside(Path(output).parent)  # read before --force

    def run(advance: Callable[[int, int], None]) -> Any:
        if len(epsilon) != 1:
            raise ValueError(f"release takes one --epsilon, got {len(epsilon)}")
        return do_release(
            data, secret=secret, public=public, pairs=require_pairs(pair), epsilon=epsilon[0], output=output,
            mechanism=mechanism, order=parse_order(order), weight=weight, rng=rng_seed, force=force,
            prior=prior, noise=noise.value, delta=delta, fit_seed=fit_seed, progress=advance, workers=workers,
            engine=engine, categorical=categorical or (), numeric=numeric or (), prior_set=prior_set,
            confidence=confidence, prior_radius=prior_radius, priors_from=priors_from, utility=utility,
            sampler=sampler, compare=compare, read=read, time_limit=time_limit, units=unit,
            keep_unchecked=keep_unchecked, missing=missing, impute=impute, labels=labels, bounds=bounds,
            keep=keep,
            html_report=report, ledger=ledger, budget=budget, keep_order=keep_order,
            public_report=public_report, public_report_parameters=public_report_parameters,
        )  # fmt: skip

    with progress_bar() as advance:
        result = guard(lambda: run(advance))
    publish(  # the HTML report was published with the output (all or none)
        result.report, as_json=as_json, report=report, write_report=None,
        show=lambda console: _print_release(console, result, beside),
    )  # fmt: skip


SystemArg = Annotated[
    str,
    typer.Argument(
        help='JSON file {"users": [{"name", "support", "pmf", ...}]}, or a shipped example: seed000-4users.'
    ),
]
PairSetOpt = Annotated[str, typer.Option("--pair-set", help="Secret pairs: ab, a-bot, P-bot or P-Q.")]
UserOpt = Annotated[
    str | None, typer.Option("--user", help="Target user (default: every user, optimal scale).")
]


@app.command()
def multiuser(
    system: SystemArg,
    pair_set: PairSetOpt,
    epsilon: Annotated[list[float], typer.Option("--epsilon", help="Privacy budget (repeatable).")],
    user: UserOpt = None,
    mechanism: Annotated[
        list[str] | None,
        typer.Option("--mechanism", help="Calibrator (repeatable; default: all that apply)."),
    ] = None,
    as_json: JsonOpt = False,
    report: Annotated[
        str | None,
        typer.Option("--report", help="Also write a self-contained HTML report to this .html file."),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing report file.")] = False,
) -> None:
    """Laplace scales for a summation query over the users of SYSTEM (seed 000)."""
    from pufferfish.multiuser import MultiUserSystem, calibrate_system, check_pair_set, compare_user

    refuse_report_path_early(report, force)

    def run() -> list[Any]:
        sys_ = MultiUserSystem.from_json(system)
        check_pair_set(pair_set)
        if user is None:
            if mechanism and list(mechanism) != ["optimal"]:
                raise ValueError("without --user only the optimal scale over every user is computed")
            return [calibrate_system(sys_, pair_set, e) for e in check_epsilons(epsilon)]
        return list(compare_user(sys_, user, pair_set, epsilon, mechanism or None))

    with working("calibrating (the system's mechanisms, exact checks)"):
        results = guard(run)
    rows: list[dict[str, Any]] = []
    for r in results:
        d = r.to_dict()
        d.setdefault("checked_loss", None)
        rows.append(d)
    out = {"system": system, "user": user, "pair_set": pair_set, "results": rows}
    if report is not None:
        _sum_report(system, pair_set, rows, out, report, force)
    if as_json:
        typer.echo(json.dumps(out, allow_nan=False))
        return
    table = Table(
        title=f"Laplace scale for pair set {pair_set}, user {user or '(every user)'}", title_justify="left"
    )
    for col in ("epsilon", "mechanism", "scale", "exact loss", "note"):
        table.add_column(col, justify="right" if col in ("epsilon", "scale", "exact loss") else "left")
    for r in results:
        d = r.to_dict()
        if d.get("scale") is None:
            table.add_row(num(d["epsilon"]), d["mechanism"], "-", "-", d["reason"])
        elif "certified_alone" in d:
            note = (
                f"decided by {d['user']}; {d['certified_alone']} users certified alone, "
                f"{d['checked_query']} on the full query"
            )
            table.add_row(num(d["epsilon"]), "optimal", num(d["scale"], 6), "<= eps", note)
        else:
            table.add_row(
                num(d["epsilon"]),
                d["mechanism"],
                num(d["scale"], 6),
                num(d["checked_loss"], 6),
                d["source"],
            )
    plain_console().print(table)


@app.command("multiuser-release")
def multiuser_release(
    system: SystemArg,
    pair_set: PairSetOpt,
    value: Annotated[float, typer.Option("--sum", help="True value of the summation query.")],
    epsilon: Annotated[float, typer.Option("--epsilon", help="Privacy budget.")],
    user: UserOpt = None,
    mechanism: Annotated[
        str,
        typer.Option("--mechanism", help="Calibrator of the sum whose scale is used (see multiuser)."),
    ] = "optimal",
    rng_seed: Annotated[
        int | None,
        typer.Option("--rng-seed", min=0, help="Use a seeded, INSECURE sampler (experiments only)."),
    ] = None,
    as_json: JsonOpt = False,
    ledger: LedgerOpt = None,
    budget: BudgetOpt = None,
    report: Annotated[
        str | None,
        typer.Option("--report", help="Also write a self-contained HTML report to this .html file."),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing report file.")] = False,
) -> None:
    """Release the sum of the users' values of SYSTEM with calibrated Laplace noise (seed 000)."""
    from pufferfish.multiuser import MultiUserSystem, release_sum

    refuse_report_path_early(report, force)

    def run() -> Any:
        sys_ = MultiUserSystem.from_json(system)
        return release_sum(sys_, value, pair_set, epsilon, user=user, mechanism=mechanism, rng=rng_seed,
                           ledger=ledger, budget=budget)  # fmt: skip

    with working("calibrating and releasing"):
        result = guard(run)
    if report is not None:
        payload = result.to_dict()
        _sum_report(system, pair_set, [payload["calibration"]], payload, report, force)
    if as_json:
        typer.echo(json.dumps(result.to_dict(), allow_nan=False))
        return
    console = plain_console()
    console.print(f"released sum: {result.value:.6g}")
    console.print(
        f"mechanism: {result.mechanism} ({pair_set}, user {user or 'every user'}), "
        f"Laplace scale {result.scale:.6g}, epsilon {result.epsilon:g}"
    )
    console.print(f"noise: {result.noise['sampler']}")
    if result.together is not None:
        console.print(f"ledger: {ledger}", soft_wrap=True, highlight=False, markup=False)  # never folded
        console.print(f"  {result.together.line()}", highlight=False, markup=False)


def _sum_report(
    system: str, pair_set: str, rows: list[dict[str, Any]], payload: dict[str, Any], report: str, force: bool
) -> None:
    """Write the HTML report of a sum (:func:`pufferfish.multiuser.report.sum_report_html`)."""
    from pufferfish.multiuser import MultiUserSystem
    from pufferfish.multiuser.report import sum_report_html, write_sum_report

    page = guard(lambda: sum_report_html(MultiUserSystem.from_json(system), pair_set, rows, payload))
    guard(lambda: write_sum_report(page, report, force=force))


app.add_typer(markov_app, name="markov")
app.add_typer(ledger_app, name="ledger")
app.add_typer(property_app, name="property")


@app.command()
def reproduce(
    output: Annotated[
        str, typer.Option("--output", help="Folder to write the tables, figures and index.md to.")
    ],
    what: Annotated[
        str | None,
        typer.Argument(
            help="000, 001, 002, 003, 004 (seed papers), markov (Song et al. 2017's grid) or chen2023 "
            "(Chen and Ohrimenko's Adult release of a dataset property)."
        ),
    ] = None,
    paper: Annotated[str | None, typer.Option("--paper", help="The same as WHAT (default: all).")] = None,
) -> None:
    """Regenerate the seed papers' tables and figures (and Song et al.'s Markov grid) with an index
    of printed vs our values."""
    from pufferfish.reproduce import reproduce as do_reproduce

    if what is not None and paper is not None and what != paper:
        guard(lambda: _refuse_both(what, paper))
    with working("reproducing"):
        result = guard(lambda: do_reproduce(what or paper, output))
    compared = [v for v in result.values if v.difference is not None]
    worst = max((abs(v.difference) for v in compared if v.difference is not None), default=0.0)
    typer.echo(f"index: {result.files[0]}")
    typer.echo(
        f"{len(result.values)} items, {len(compared)} compared with a printed value "
        f"(largest |difference| {worst:.4g}); {len(result.files)} files written"
    )


def _refuse_both(what: str, paper: str) -> None:
    raise ValueError(f"give the paper once: WHAT is {what!r} and --paper {paper!r}")


# Typer's base class of command-line usage errors (its vendored click's ClickException).
_CLICK_ERROR: type[Exception] = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")


def main() -> None:
    """Entry point of the ``pufferfish`` console script.

    A usage error (an unknown option, ``--epsilon abc``) is one line on stderr and exit code 2,
    like the library's input errors (exit code 1); no arguments print the help. Ctrl-C or
    SIGTERM stops the command (every temporary file is removed) with exit code 130 (Ctrl-C) or
    143 (SIGTERM, 128 + 15, as a shell reports it) and one line saying which outputs, if any,
    were published before it (:func:`_interrupted_message`).
    """
    if len(sys.argv) <= 1:
        app()
        return
    signal.signal(signal.SIGTERM, _interrupt)  # SIGTERM unwinds like Ctrl-C: temporary files go
    error = None
    try:
        code = app(standalone_mode=False)
    except _CLICK_ERROR as exc:
        message = exc.format_message().splitlines()  # type: ignore[attr-defined]
        error = f"error: {message[0] if message else type(exc).__name__}"
        code = int(getattr(exc, "exit_code", 2))
    except KeyboardInterrupt:  # outside the command (Typer turns one inside it into 130)
        code = _INTERRUPTED
    # The command is over: a signal now would only break the interpreter's teardown.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if code == _INTERRUPTED:
        error = _interrupted_message()
        code = 128 + _SIGNALLED[-1] if _SIGNALLED else code  # SIGTERM: 143
    if error is not None:
        typer.echo(error, err=True)
    sys.exit(code if isinstance(code, int) else 0)


_INTERRUPTED = 130  # Typer's exit code for KeyboardInterrupt

#: Files the running command may publish, with their state before it began (:func:`_stamp`).
_OUTPUTS: dict[Path, tuple[int, int, int] | None] = {}


def _will_write(*paths: str | Path | None) -> None:
    """Record the files a command may publish, before it writes any (None: no such file)."""
    for path in paths:
        if path is not None:
            _OUTPUTS[Path(path)] = _stamp(Path(path))


def _stamp(path: Path) -> tuple[int, int, int] | None:
    """(inode, size, modification time in ns) of ``path``, or None if there is none. Outputs are
    published by renaming or linking a new file into place, so a published file has a new stamp."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def _interrupted_message() -> str:
    """The line printed after an interrupt: which recorded outputs were published before it."""
    if not _OUTPUTS:
        return "error: interrupted (unfinished files removed)"
    published: list[str] = []
    rest: list[str] = []
    for path, before in _OUTPUTS.items():
        (published if _stamp(path) != before else rest).append(str(path))
    if not published:
        return "error: interrupted; no output was published (unfinished files removed)"
    verb = "was" if len(published) == 1 else "were"
    text = f"error: interrupted after {', '.join(published)} {verb} published"
    return text + (f"; not written: {', '.join(rest)}" if rest else "") + " (unfinished files removed)"


#: Signals turned into KeyboardInterrupt by :func:`_interrupt` (the exit code says which).
_SIGNALLED: list[int] = []


def _interrupt(signum: int, frame: object) -> None:
    """SIGTERM handler: raise KeyboardInterrupt, so every ``finally`` (and DuckDB) cleans up."""
    _SIGNALLED.append(int(signum))
    raise KeyboardInterrupt


if __name__ == "__main__":  # pragma: no cover
    main()
