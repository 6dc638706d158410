"""The ``pufferfish`` command line: a thin layer over :mod:`pufferfish.pipeline` (tables) and
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

from ._checks import check_epsilons
from .calibration import Calibration, MappingCalibration, PrivacyCheckError, Skipped
from .fit import FittedPriors
from .priors import DiscretePrior, GaussianMixturePrior
from .priorsets import prior_scope, set_label
from .tables.estimate import EstimatedPriors

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
        "--unit", help="With several --public columns: 'col=w', w of col counts as distance 1 (default 1)."
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
        help="Objective of optimal-mapping: accuracy (default for a categorical column) or absolute "
        "(mean absolute error; default for a numeric one).",
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


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code=1)


def _guard(fn: Callable[[], T]) -> T:
    """Run ``fn``; turn the library's input errors into one line on stderr and exit code 1."""
    try:
        return fn()
    except (ValueError, FileExistsError, FileNotFoundError, PermissionError, IsADirectoryError) as exc:
        _fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    except PrivacyCheckError as exc:
        _fail(f"privacy check failed (please report this bug): {exc}")
    raise AssertionError("unreachable")  # pragma: no cover


def _order(order: str | None) -> list[str] | None:
    if order is None:
        return None
    values = [v.strip() for v in order.split(",")]
    if any(not v for v in values):
        raise ValueError(f"order must be comma-separated labels without empty entries, got {order!r}")
    return values


def _pairs(pair: list[str]) -> list[str]:
    """The ``--pair`` texts ('A,B'), parsed by the library; at least one is needed."""
    if not pair:
        raise ValueError("--pair is required: give at least one pair of secret values 'A,B'")
    return pair


def _num(x: float, digits: int = 4) -> str:
    if x == 0:
        return "0"
    return f"{x:.{digits}g}" if abs(x) < 1e4 else f"{x:.4e}"


def _pmf(prior: Any) -> Any:
    assert isinstance(prior, DiscretePrior)
    return prior.pmf


def _inputs_table(est: EstimatedPriors) -> Table:
    table = Table(title=f"Priors P({est.public_column} | {est.secret_column})", title_justify="left")
    table.add_column(est.public_column)
    table.add_column("code", justify="right")
    prior = est.scenario.priors[0]
    for g in est.groups:
        table.add_column(f"{g.secret}\n(n={g.rows})", justify="right")
    labels = (
        [label for label, _ in est.mapping] if est.categorical else [_num(float(v), 8) for v in est.support]
    )
    for k, label in enumerate(labels):
        row = [label, _num(float(est.support[k]), 8)]
        row += [f"{_pmf(prior.conditionals[g.secret])[k]:.4f}" for g in est.groups]
        table.add_row(*row)
    return table


def _checked(c: Calibration | MappingCalibration) -> str:
    if isinstance(c, MappingCalibration):
        return f"loss = {c.checked_loss:.6g}"
    if c.not_checked is not None:
        return "not numerically checked"
    if c.checked_information is not None:
        return f"I = {c.checked_information:.6g}"
    if c.checked_delta is not None and c.checked_loss is None:
        return f"delta = {c.checked_delta:.6g}"
    return f"loss = {c.checked_loss:.6g}"


def _comparison_table(
    results: list[Calibration | MappingCalibration | Skipped],
    epsilon: float,
    delta: float,
    *,
    show_pair: bool,
) -> Table:
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
            "-" if isinstance(c, MappingCalibration) else _num(c.scale),
            "-" if isinstance(c, MappingCalibration) else _num(c.variance),
            _checked(c),
            *((_num(c.expected_accuracy), _num(c.expected_abs_error)) if utility else ()),  # type: ignore[arg-type]
            (f"{c.pair[0]} vs {c.pair[1]} ({c.prior}): " if show_pair else "") + c.decided_by,
        )
    return table


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


def _print_comparisons(
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
        console.print(_comparison_table(here, eps, delta, show_pair=show_pair))
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


def _print_tables(
    console: Console,
    est: EstimatedPriors,
    fitted: FittedPriors | None,
    results: tuple[Calibration | MappingCalibration | Skipped, ...],
    delta: float,
) -> None:
    console.print(f"data: {est.source}")
    console.print(
        f"rows: {est.rows_total} read, {est.rows_dropped} left out of the priors (missing secret, "
        f"public value or weight)"
    )
    read_as = ", ".join(f"{col}: {how}" for col, how in est.columns_read_as.items())
    console.print(f"columns read as: {read_as}", soft_wrap=True, highlight=False)
    console.print(_inputs_table(est))
    scenario = est.scenario if fitted is None else fitted.scenario
    if fitted is not None:
        console.print(_fitted_table(fitted))
        if fitted.model == "gaussian":
            console.print("Gaussian priors: maximum-likelihood mean and standard deviation (dividing by n).")
    show_pair = len(scenario.pairs) * len(scenario.priors) > 1
    _print_comparisons(console, results, delta, show_pair=show_pair)
    robust = next((c for c in results if not isinstance(c, Skipped) and c.prior_set is not None), None)
    if robust is not None:
        console.print(f"priors: {prior_scope(robust.prior_set)}", soft_wrap=True, highlight=False)
        console.print(
            "The 'estimate only' optimal holds only if the adversary's prior is exactly the sample "
            "frequencies; the difference is the price of the uncertainty of the estimate.",
            soft_wrap=True,
            highlight=False,
        )
    if any(isinstance(c, Calibration) and c.noiseless for c in results):
        console.print(
            "note: scale 0 means the priors already meet the target: the column may be released "
            "without noise. This holds only if the adversary's prior is the one shown."
        )


def _joint_calibrate(
    data: str, secret: str, public: str, unit: list[str] | None, epsilon: list[float], pair: list[str],
    mechanism: str, weight: str | None, noise: str, delta: float, categorical: list[str] | None,
    numeric: list[str] | None, engine: str, as_json: bool,
) -> None:  # fmt: skip
    """``calibrate`` on several public columns (:func:`pufferfish.joint_table.calibrate_joint_table`)."""
    from .joint_table import NO_PRIOR_SETS, calibrate_joint_table

    if engine != "duckdb":
        _fail("several --public columns are calibrated with --engine duckdb only")
    table = _guard(
        lambda: calibrate_joint_table(
            data, secret=secret, public=public, pairs=_pairs(pair), epsilon=epsilon, units=unit,
            mechanisms=None if mechanism == "all" else [m.strip() for m in mechanism.split(",")],
            weight=weight, noise=noise, delta=delta, categorical=categorical or (), numeric=numeric or (),
        )
    )  # fmt: skip
    if as_json:
        typer.echo(json.dumps(table.to_dict(), allow_nan=False))
        return
    console = Console()
    units = ", ".join(f"{c} (unit {_num(w)})" for c, w in zip(table.columns, table.units, strict=True))
    console.print(f"columns released jointly: {units}; metric d(x, x') = sum_k |x_k - x'_k| / unit_k")
    console.print(
        f"rows: {table.rows_total} read, {table.rows_dropped} left out of the priors (a missing value)"
    )
    sizes = ", ".join(f"{s}: {p.size} distinct tuples" for s, p in table.priors().items())
    console.print(f"joint priors: {sizes}", soft_wrap=True, highlight=False)
    show_pair = len(table.scenario.pairs) > 1
    _print_comparisons(console, table.comparison, delta, show_pair=show_pair)
    console.print(f"Scale b adds Laplace(b unit_k) (Gaussian: sigma unit_k) to column k; {NO_PRIOR_SETS}.")


@app.command()
def calibrate(
    data: DataArg,
    secret: SecretOpt,
    public: PublicOpt,
    epsilon: Annotated[list[float], typer.Option("--epsilon", help="Privacy budget (repeatable).")],
    pair: PairOpt,
    order: OrderOpt = None,
    weight: WeightOpt = None,
    mechanism: Annotated[str, typer.Option("--mechanism", help="Calibrator, several 'a,b', or all.")] = "all",
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
) -> None:
    """Compare the calibrators' noise scales (and randomized mappings) on priors estimated (or
    fitted) from DATA; with --public a,b, on the joint priors of several columns."""
    from .pipeline import calibrate_table, report_dict
    from .report import check_report_path
    from .table_release import write_html_report

    if "," in public or unit:
        if (
            report is not None
            or prior_set not in (None, "none")
            or prior != "empirical"
            or order
            or priors_from
        ):
            _fail("with several --public columns, --report, --prior-set, --prior, --order and --priors-from "
                  "are not supported (empirical joint priors, point estimate)")  # fmt: skip
        _joint_calibrate(data, secret, public, unit, epsilon, pair, mechanism, weight, noise.value, delta,
                         categorical, numeric, engine, as_json)  # fmt: skip
        return
    _will_write(report)

    def run() -> Any:
        if report is not None:
            check_report_path(report, force=force)
        return calibrate_table(
            data,
            secret=secret,
            public=public,
            pairs=_pairs(pair),
            epsilon=epsilon,
            mechanisms=None if mechanism == "all" else [m.strip() for m in mechanism.split(",")],
            order=_order(order),
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
        )

    table = _guard(run)
    payload = report_dict(table)
    if report is not None:
        _guard(lambda: write_html_report(table, report, payload=payload, force=force))
    if as_json:
        typer.echo(json.dumps(payload, allow_nan=False))
        return
    _print_tables(Console(), table.estimated, table.fitted, table.comparison, table.delta)
    if report is not None:
        Console().print(f"HTML report: {report}")


@app.command()
def release(
    data: DataArg,
    secret: SecretOpt,
    public: PublicOpt,
    epsilon: Annotated[list[float], typer.Option("--epsilon", help="Privacy budget (one value).")],
    output: Annotated[str, typer.Option("--output", help="Output file: .csv, .csv.gz, .parquet or .pq.")],
    pair: PairOpt,
    order: OrderOpt = None,
    weight: WeightOpt = None,
    mechanism: Annotated[
        str,
        typer.Option(
            "--mechanism",
            help="Calibrator whose scale is used, or a randomized mapping (optimal-mapping, "
            "randomized-response, randomized-response-dp, geometric) that releases labels.",
        ),
    ] = "optimal",
    prior: PriorOpt = "empirical",
    noise: NoiseOpt = Noise.laplace,
    delta: DeltaOpt = 0.0,
    fit_seed: FitSeedOpt = 0,
    rng_seed: Annotated[
        int | None,
        typer.Option("--rng-seed", help="Use a seeded, INSECURE sampler (experiments only)."),
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
            help="Secure Laplace and Gaussian sampler: exact (vectorised, OS randomness; default) or opendp.",
        ),
    ] = "exact",
) -> None:
    """Write DATA with the public column replaced by a pufferfish-private noisy version."""
    from .report import check_report_path
    from .table_release import release as do_release
    from .table_release import write_html_report
    from .tables.source import report_path_for

    _will_write(output, report_path_for(Path(output)), report)

    def run() -> Any:
        if report is not None:
            check_report_path(report, force=force)
        if len(epsilon) != 1:
            raise ValueError(f"release takes one --epsilon, got {len(epsilon)}")
        return do_release(
            data,
            secret=secret,
            public=public,
            pairs=_pairs(pair),
            epsilon=epsilon[0],
            output=output,
            mechanism=mechanism,
            order=_order(order),
            weight=weight,
            rng=rng_seed,
            force=force,
            prior=prior,
            noise=noise.value,
            delta=delta,
            fit_seed=fit_seed,
            progress=advance,
            workers=workers,
            engine=engine,
            categorical=categorical or (),
            numeric=numeric or (),
            prior_set=prior_set,
            confidence=confidence,
            prior_radius=prior_radius,
            priors_from=priors_from,
            utility=utility,
            sampler=sampler,
        )

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    err = Console(stderr=True)
    bar = Progress(
        TextColumn("releasing rows"),
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

        result = _guard(run)
    if report is not None:
        _guard(lambda: write_html_report(result, report, payload=result.report, force=force))
    if as_json:
        typer.echo(json.dumps(result.report, allow_nan=False))
        return
    console = Console()
    _print_release(console, result)
    if report is not None:
        console.print(f"HTML report: {report}")


def _print_release(console: Console, result: Any) -> None:
    """The tables and the summary lines of a release."""
    _print_tables(console, result.estimated, result.fitted, result.comparison, result.chosen.delta)
    c = result.chosen
    console.print(
        f"released: {result.output} ({result.rows_released} rows "
        f"{'mapped' if isinstance(c, MappingCalibration) else 'with noise'}, "
        f"{result.rows_missing_public} missing left missing)"
    )
    if isinstance(c, MappingCalibration):
        console.print(
            f"mechanism: {c.mechanism}, a randomized mapping of {c.support.size} values (its matrix is "
            f"in the report), expected accuracy {c.expected_accuracy:.4f}, checked {_checked(c)}"
        )
    else:
        console.print(f"mechanism: {c.mechanism}, {c.noise} scale {c.scale:.6g}, checked {_checked(c)}")
    console.print(f"guarantee: {result.report['guarantee']}")
    console.print(f"noise: {result.noise['sampler']}")
    console.print(f"report: {result.report_path}")


SystemArg = Annotated[str, typer.Argument(help='JSON file {"users": [{"name", "support", "pmf", ...}]}.')]
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
) -> None:
    """Laplace scales for a summation query over the users of SYSTEM (seed 000)."""
    from .multiuser import MultiUserSystem, calibrate_system, check_pair_set, compare_user

    def run() -> list[Any]:
        sys_ = MultiUserSystem.from_json(system)
        check_pair_set(pair_set)
        if user is None:
            if mechanism and list(mechanism) != ["optimal"]:
                raise ValueError("without --user only the optimal scale over every user is computed")
            return [calibrate_system(sys_, pair_set, e) for e in check_epsilons(epsilon)]
        return list(compare_user(sys_, user, pair_set, epsilon, mechanism or None))

    results = _guard(run)
    if as_json:
        rows: list[dict[str, Any]] = []
        for r in results:
            d = r.to_dict()
            d.setdefault("checked_loss", None)
            rows.append(d)
        out = {"system": system, "user": user, "pair_set": pair_set, "results": rows}
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
            table.add_row(_num(d["epsilon"]), d["mechanism"], "-", "-", d["reason"])
        elif "certified_alone" in d:
            note = (
                f"decided by {d['user']}; {d['certified_alone']} users certified alone, "
                f"{d['checked_query']} on the full query"
            )
            table.add_row(_num(d["epsilon"]), "optimal", _num(d["scale"], 6), "<= eps", note)
        else:
            table.add_row(
                _num(d["epsilon"]),
                d["mechanism"],
                _num(d["scale"], 6),
                _num(d["checked_loss"], 6),
                d["source"],
            )
    Console().print(table)


@app.command("multiuser-release")
def multiuser_release(
    system: SystemArg,
    pair_set: PairSetOpt,
    value: Annotated[float, typer.Option("--sum", help="True value of the summation query.")],
    epsilon: Annotated[float, typer.Option("--epsilon", help="Privacy budget.")],
    user: UserOpt = None,
    mechanism: Annotated[
        str,
        typer.Option(
            "--mechanism",
            help="Calibrator whose scale is used, or a randomized mapping (optimal-mapping, "
            "randomized-response, randomized-response-dp, geometric) that releases labels.",
        ),
    ] = "optimal",
    rng_seed: Annotated[
        int | None,
        typer.Option("--rng-seed", help="Use a seeded, INSECURE sampler (experiments only)."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Release the sum of the users' values of SYSTEM with calibrated Laplace noise (seed 000)."""
    from .multiuser import MultiUserSystem, release_sum

    def run() -> Any:
        sys_ = MultiUserSystem.from_json(system)
        return release_sum(sys_, value, pair_set, epsilon, user=user, mechanism=mechanism, rng=rng_seed)

    result = _guard(run)
    if as_json:
        typer.echo(json.dumps(result.to_dict(), allow_nan=False))
        return
    console = Console()
    console.print(f"released sum: {result.value:.6g}")
    console.print(
        f"mechanism: {result.mechanism} ({pair_set}, user {user or 'every user'}), "
        f"Laplace scale {result.scale:.6g}, epsilon {result.epsilon:g}"
    )
    console.print(f"noise: {result.noise['sampler']}")


@app.command()
def reproduce(
    output: Annotated[
        str, typer.Option("--output", help="Folder to write the tables, figures and index.md to.")
    ],
    paper: Annotated[
        str | None, typer.Option("--paper", help="Seed paper: 000, 001, 002, 003 or 004 (default: all).")
    ] = None,
) -> None:
    """Regenerate the seed papers' tables and figures with an index of printed vs our values."""
    from .reproduce import reproduce as do_reproduce

    result = _guard(lambda: do_reproduce(paper, output))
    compared = [v for v in result.values if v.difference is not None]
    worst = max((abs(v.difference) for v in compared if v.difference is not None), default=0.0)
    typer.echo(f"index: {result.files[0]}")
    typer.echo(
        f"{len(result.values)} items, {len(compared)} compared with a printed value "
        f"(largest |difference| {worst:.4g}); {len(result.files)} files written"
    )


# Typer's base class of command-line usage errors (its vendored click's ClickException).
_CLICK_ERROR: type[Exception] = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")


def main() -> None:
    """Entry point of the ``pufferfish`` console script.

    A usage error (an unknown option, ``--epsilon abc``) is one line on stderr and exit code 2,
    like the library's input errors (exit code 1); no arguments print the help. Ctrl-C or
    SIGTERM stops the command (every temporary file is removed) with exit code 130 and one line
    saying which outputs, if any, were published before it (:func:`_interrupted_message`).
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


def _interrupt(signum: int, frame: object) -> None:
    """SIGTERM handler: raise KeyboardInterrupt, so every ``finally`` (and DuckDB) cleans up."""
    raise KeyboardInterrupt


if __name__ == "__main__":  # pragma: no cover
    main()
