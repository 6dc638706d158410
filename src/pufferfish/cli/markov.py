"""``pufferfish markov ...``: pufferfish privacy for a count on a Markov chain (issue 30), a thin
layer over :mod:`pufferfish.markov` and the registry's :func:`~pufferfish.calibration.compare`."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Annotated, Any

import typer

from pufferfish._checks import check_epsilons
from pufferfish.cli.common import (
    guard,
    parse_mechanisms,
    plain_console,
    print_comparisons,
    refuse_report_path_early,
    working,
)
from pufferfish.cli.ledger import BudgetOpt, LedgerOpt

markov_app = typer.Typer(
    name="markov",
    help="Pufferfish privacy for a count on a Markov chain (a person's time series).",
    no_args_is_help=True,
)


@dataclass(frozen=True)
class _ChainArgs:
    """The options that name a chain on the command line (``--transition`` or ``--interval``,
    with ``--length`` and friends), read by the calibration and by ``--scale`` alike; ``columns``
    are ``--id, --time, --state``, which a chain given here must not have."""

    transition: str | None
    interval: str | None
    grid: int
    length: int | None
    initial: str
    states: str | None
    target_state: str | None
    query: str
    columns: tuple[str | None, str | None, str | None]


def _initial(text: str) -> Any:
    """``stationary`` or a probability vector ``"0.5,0.5"``."""
    if text.strip() in ("stationary", "any"):
        return text.strip()
    try:
        return [float(x) for x in text.split(",")]
    except ValueError:
        raise ValueError(
            f"--initial must be 'stationary', 'any' or probabilities 'p0,p1,...', got {text!r}"
        ) from None


DataArg = Annotated[
    str | None, typer.Argument(help="CSV or Parquet table of time series: one row per id and time step.")
]
IdOpt = Annotated[str | None, typer.Option("--id", help="Column naming the person (series) of a row.")]
TimeOpt = Annotated[str | None, typer.Option("--time", help="Column ordering the steps of a series.")]
StateOpt = Annotated[
    str | None, typer.Option("--state", help="Column holding the state (labels as written).")
]
TargetOpt = Annotated[
    str | None, typer.Option("--target-state", help="The state whose visits are counted (default: the last).")
]
QueryOpt = Annotated[
    str, typer.Option("--query", help="count, frequency (count / T), or histogram (two states).")
]
EngineOpt = Annotated[
    str, typer.Option("--engine", help="Who counts a DATA table's transitions: duckdb or spark.")
]
PriorSetOpt = Annotated[
    str,
    typer.Option(
        "--prior-set",
        help="From data: l1-rows (every chain with each row in a 95% L1 ball around the estimated row; "
        "optimal-set, mqm-approx and group-dp are certified over the whole set, other rows are over listed "
        "chains of it) or none (the estimate).",
    ),
]
InitialOpt = Annotated[
    str,
    typer.Option(
        "--initial",
        help="Distribution of X_0: stationary, any (every start), 'p0,p1,...' (with --transition), or "
        "empirical (DATA).",
    ),
]


@markov_app.command("calibrate")
def markov_calibrate(
    data: DataArg = None,
    epsilon: Annotated[
        list[float] | None,
        typer.Option("--epsilon", help="Privacy budget (repeatable; one value with a DATA table)."),
    ] = None,
    transition: Annotated[
        str | None,
        typer.Option("--transition", help="Transition matrix, rows ';' entries ',': '0.9,0.1;0.1,0.9'."),
    ] = None,
    length: Annotated[
        int | None,
        typer.Option("--length", min=1, help="Length T of the series (data: default the longest series)."),
    ] = None,
    initial: InitialOpt = "stationary",
    states: Annotated[
        str | None, typer.Option("--states", help="Names of the states 'a,b,...' (default 0,1,...).")
    ] = None,
    target_state: TargetOpt = None,
    query: QueryOpt = "count",
    mechanism: Annotated[
        str,
        typer.Option(
            "--mechanism", help="Calibrators 'a,b' or all (the Markov baselines and the additive ones)."
        ),
    ] = "all",
    id_column: IdOpt = None,
    time_column: TimeOpt = None,
    state_column: StateOpt = None,
    prior_set: PriorSetOpt = "l1-rows",
    engine: EngineOpt = "duckdb",
    interval: Annotated[
        str | None,
        typer.Option(
            "--interval",
            help="Instead of --transition: every binary chain with P(0->1), P(1->0) in 'low,high' "
            "(checked on a --grid x --grid grid; MQMApprox and group DP certified over the class).",
        ),
    ] = None,
    report: Annotated[
        str | None,
        typer.Option("--report", help="Also write a self-contained HTML report (first --epsilon)."),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing report file.")] = False,
    grid: Annotated[
        int, typer.Option("--grid", min=2, help="Grid points per probability of --interval.")
    ] = 5,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object instead of tables.")] = False,
    scale: Annotated[
        float | None,
        typer.Option(
            "--scale",
            help="Audit instead of calibrating: the exact loss of Laplace noise of this scale "
            "(e.g. 1/eps of a differentially private count), with the worst time and pair.",
        ),
    ] = None,
) -> None:
    """Laplace scales for a count of visits to a state on a Markov chain: from --transition and
    --length, or estimated from DATA (--id, --time, --state). The exact optimum on the count priors
    P(count | X_i = a), the Markov quilt mechanism (exact and approximate), GK16 and group
    differential privacy, each checked exactly. With --scale: the exact loss of a given scale."""
    chain_args = _ChainArgs(transition, interval, grid, length, initial, states, target_state, query,
                            (id_column, time_column, state_column))  # fmt: skip
    if scale is not None:
        if report is not None or mechanism != "all":
            guard(
                lambda: _refuse("--scale audits a given scale: --mechanism and --report are for calibrations")
            )
        _audit(data, scale, epsilon, chain_args, prior_set, as_json, engine)
        return
    if data is None and engine != "duckdb":
        guard(lambda: _refuse("--engine reads a DATA table; --transition and --interval give the chain"))
    if data is not None:
        if interval is not None:
            guard(
                lambda: _refuse("--interval describes a class of chains; with a DATA table it is estimated")
            )
        _calibrate_data(
            data, epsilon, length, initial, target_state, query, mechanism, id_column, time_column,
            state_column, prior_set, transition, states, as_json, report, force, engine,
        )  # fmt: skip
        return
    refuse_report_path_early(report, force)
    with working("calibrating (count priors, mechanisms, exact checks)"):
        scenario, results = guard(lambda: _calibrate_chain(epsilon, chain_args, mechanism))
    model = scenario.model
    certified = _certified(model)
    out = {"model": model.describe(), "certified_over_class": certified}
    from pufferfish.markov.audit import result_row

    out["results"] = [result_row(r, model) for r in results]
    if report is not None:
        guard(lambda: _chain_report(scenario, results, mechanism, out, certified, report, force))
    if as_json:
        typer.echo(json.dumps(out, allow_nan=False))
        return
    _print_chain(model, results, certified)


def _print_chain(model: Any, results: Any, certified: list[str]) -> None:
    """The text output of a calibration on ``--transition`` or ``--interval``."""
    console = plain_console()
    chain = model.chains[0]
    if chain.any_start:
        console.print(
            f"chain: {chain.k} states {', '.join(chain.states)}; T = {model.length}; X_0: any distribution. "
            f"Certified for every start: {', '.join(certified)}. The other scales are NOT certified: "
            f"checked on {chain.k + 1} starts (uniform, and near each state).",
            highlight=False,
        )  # fmt: skip
    elif model.interval is not None:
        lo, hi = model.interval
        console.print(
            f"class: every binary chain with P(0->1) and P(1->0) in [{lo:g}, {hi:g}], stationary; T = "
            f"{model.length}. Certified over the class: {', '.join(certified)}. The other scales are NOT "
            f"certified: checked on the {len(model.chains)} chains of a grid of the class.",
            highlight=False,
        )  # fmt: skip
    else:
        start = [round(float(x), 6) for x in chain.initial_distribution]
        console.print(
            f"chain: {chain.k} states {', '.join(chain.states)}; T = {model.length}; X_0 "
            f"{'stationary' if chain.stationary else 'given'} {start}"
        )
    console.print(
        f"query: {model.query} of state {model.target!r} (sensitivity {model.sensitivity:g}); secrets "
        "X[i]=a for every time i, pairs (X[i]=a, X[i]=b)",
        markup=False,
    )
    print_comparisons(console, results, 0.0, show_pair=True)


def _audit(
    data: str | None,
    scale: float,
    epsilon: list[float] | None,
    chain: _ChainArgs,
    prior_set: str,
    as_json: bool,
    engine: str = "duckdb",
) -> None:
    """``markov calibrate --scale B``: the exact loss of ``Laplace(B)`` (:mod:`.markov.audit`)."""
    from pufferfish.markov.audit import audit_scale

    def run() -> tuple[Any, dict[int, Any]]:
        eps = check_epsilons(epsilon) if epsilon else []
        if data is not None:
            from pufferfish.markov.release import audit_series

            if chain.transition is not None or chain.states is not None or chain.interval is not None:
                raise ValueError(
                    "--transition, --states and --interval describe a chain; a DATA table's is estimated"
                )
            budget = eps[0] if eps else 1.0  # the request's epsilon; an audit does not use it
            request = _series_request(data, budget, chain.length, chain.initial, chain.target_state,
                                      chain.query, None, *chain.columns, prior_set, engine)  # fmt: skip
            estimate, audits = audit_series(request, scale)
            return estimate.to_dict() | {"results": None}, audits
        model = _chain_model(chain)
        return {"model": model.describe()}, {model.length: audit_scale(model, scale)}

    head, audits = guard(run)
    eps = [float(e) for e in epsilon or []]
    if as_json:
        audited = {
            str(t): a.to_dict() | {"satisfies": {repr(e): a.satisfies(e) for e in eps}}
            for t, a in audits.items()
        }
        typer.echo(
            json.dumps({k: v for k, v in head.items() if v is not None} | {"audit": audited}, allow_nan=False)
        )
        return
    console = plain_console()
    for t, a in audits.items():
        w = a.worst
        which = "" if len(a.chains) == 1 else f", chain {w.chain!r}"
        at = ", ".join(f"{y:g}" for y in w.worst_y)
        console.print(
            f"T = {t}: Laplace scale {a.scale:g} on the {chain.query}: exact pufferfish loss "
            f"{a.loss:.6g} nats (rounding bound {a.error_bound:.2g}), worst at time {w.time}, states "
            f"({w.pair[0]}, {w.pair[1]}), released value {at}{which}. A differentially private "
            f"analysis would state epsilon {a.epsilon_dp:.6g}. {a.note}."
            + "".join(f" epsilon {e:g}: {'satisfied' if a.satisfies(e) else 'NOT satisfied'}." for e in eps),
            highlight=False, markup=False,
        )  # fmt: skip


def _chain_report(
    scenario: Any, results: Any, mechanism: str, payload: dict[str, Any], certified: list[str], report: str,
    force: bool,
) -> None:  # fmt: skip
    """``--report`` of ``--transition`` / ``--interval``: the first epsilon's comparison, and the
    same mechanisms at the lengths of :func:`~.markov.report.length_ladder` for the figure."""
    from dataclasses import replace

    from pufferfish.calibration import compare
    from pufferfish.markov import count_scenario
    from pufferfish.markov.counts import binding_priors
    from pufferfish.markov.report import length_ladder, markov_report_html, write_markov_report

    model = scenario.model
    eps = results[0].epsilon
    first = tuple(r for r in results if r.epsilon == eps)
    from pufferfish.markov.counts import MARKOV_MECHANISMS

    names = list(parse_mechanisms(mechanism) or MARKOV_MECHANISMS)
    curve = {model.length: first}
    for t in length_ladder(model.length)[:-1]:
        curve[t] = compare(count_scenario(replace(model, length=t)), eps, names)
    page = markov_report_html(
        model, first, payload, certified, chains_checked=len(scenario.priors),
        binding=binding_priors(scenario, first), curve=curve,
    )  # fmt: skip
    write_markov_report(page, report, force=force)


def _refuse(message: str) -> None:
    raise ValueError(message)


def _calibrate_chain(epsilon: list[float] | None, chain: _ChainArgs, mechanism: str) -> tuple[Any, Any]:
    """The comparison on a given chain (``--transition``) or an interval class (``--interval``)."""
    from pufferfish.calibration import compare
    from pufferfish.markov import count_scenario

    eps = check_epsilons(epsilon or [])
    from pufferfish.markov.counts import MARKOV_MECHANISMS

    names = list(parse_mechanisms(mechanism) or MARKOV_MECHANISMS)
    scenario = count_scenario(_chain_model(chain))
    return scenario, compare(scenario, eps, names)


def _chain_model(a: _ChainArgs) -> Any:
    """The :class:`~.markov.CountModel` of ``--transition`` or ``--interval``."""
    from pufferfish.markov import CountModel, MarkovChain
    from pufferfish.markov.chain import binary_interval_chains

    if (a.transition is None) == (a.interval is None) or a.length is None:
        raise ValueError(
            "give --transition (or --interval) and --length, or a DATA table with --id, --time, --state"
        )
    if any(o is not None for o in a.columns):
        raise ValueError("--id, --time and --state read a DATA table; with --transition give none of them")
    if a.interval is not None:
        if a.initial != "stationary" or a.states is not None:
            raise ValueError("an --interval class starts stationary on the states 0,1")
        low, high = _pair_of_floats(a.interval)
        target = a.target_state if a.target_state is not None else "1"
        chains = binary_interval_chains(low, high, a.grid)
        return CountModel(chains, a.length, target, a.query, interval=(low, high))
    chain = MarkovChain(a.transition, _initial(a.initial), None if a.states is None else a.states.split(","))
    target = a.target_state if a.target_state is not None else chain.states[-1]
    return CountModel((chain,), a.length, target, a.query)


def _pair_of_floats(text: str) -> tuple[float, float]:
    try:
        low, high = (float(x) for x in text.split(","))
    except ValueError:
        raise ValueError(f"--interval must be 'low,high', got {text!r}") from None
    return low, high


def _certified(model: Any) -> list[str]:
    """The mechanisms whose scale holds for the whole class (an interval class), else all."""
    if model.interval is not None:
        return ["mqm-approx (the class's smallest eigengap and pi_min)", "group-dp (any chain)"]
    if any(c.any_start for c in model.chains):
        return ["mqm-exact (the ratio of any two marginals bounded over every start)", "group-dp (any chain)"]
    return ["every mechanism (one chain, checked exactly)"]


def _series_request(
    data: str,
    epsilon: float,
    length: int | None,
    initial: str,
    target_state: str | None,
    query: str,
    mechanisms: tuple[str, ...] | None,
    id_column: str | None,
    time_column: str | None,
    state_column: str | None,
    prior_set: str,
    engine: str = "duckdb",
) -> Any:
    from pufferfish.markov.release import SeriesRequest

    if id_column is None or time_column is None or state_column is None:
        raise ValueError("a DATA table needs --id, --time and --state")
    if target_state is None:
        raise ValueError("a DATA table needs --target-state: the state (as written) whose visits are counted")
    return SeriesRequest(
        data, id_column, time_column, state_column, target_state, epsilon, query, initial, prior_set,
        length="longest" if length is None else length, mechanisms=mechanisms, engine=engine,
    )  # fmt: skip


def _calibrate_data(
    data: str,
    epsilon: list[float] | None,
    length: int | None,
    initial: str,
    target_state: str | None,
    query: str,
    mechanism: str,
    id_column: str | None,
    time_column: str | None,
    state_column: str | None,
    prior_set: str,
    transition: str | None,
    states: str | None,
    as_json: bool,
    report: str | None = None,
    force: bool = False,
    engine: str = "duckdb",
) -> None:
    from pufferfish.markov.release import calibrate_series, series_report

    def run() -> Any:
        if transition is not None or states is not None:
            raise ValueError(
                "--transition and --states describe a chain; with a DATA table the chain is estimated"
            )
        eps = check_epsilons(epsilon or [])
        if len(eps) != 1:
            raise ValueError("a DATA table is calibrated at one --epsilon")
        names = parse_mechanisms(mechanism)
        request = _series_request(data, eps[0], length, initial, target_state, query,
                                  tuple(names) if names else None, id_column, time_column, state_column,
                                  prior_set, engine)  # fmt: skip
        return calibrate_series(request)

    refuse_report_path_early(report, force)
    with working("estimating the chain and calibrating (mechanisms, exact checks)"):
        result = guard(run)
    if report is not None:
        from pufferfish.markov.report import write_markov_report

        guard(lambda: write_markov_report(series_report(result, result.to_dict()), report, force=force))
    if as_json:
        typer.echo(json.dumps(result.to_dict(), allow_nan=False))
        return
    console = plain_console()
    s = result.series
    console.print(f"data: {s.source}", markup=False)
    console.print(f"{len(s.ids)} ids, {s.rows} rows ({s.rows_dropped} without an id or a time left out)")
    if s.breaks.sentence() is not None:
        console.print(f"breaks: {s.breaks.sentence()}", highlight=False, markup=False)
    console.print(f"states: {', '.join(s.states)}; transitions counted: {int(s.transitions.sum())}")
    est = result.chain.transition
    rows = "; ".join(f"{a}: " + ", ".join(f"{x:.4f}" for x in est[n]) for n, a in enumerate(s.states))
    console.print(f"estimated transition rows ({', '.join(s.states)}): {rows}", highlight=False)
    if result.prior_set is not None:
        radii = ", ".join(f"{k} {v:.4g}" for k, v in result.prior_set["radius"].items())
        console.print(
            f"prior set: {result.prior_set['confidence']:.0%} L1 balls around each row (radius {radii}; "
            f"{result.prior_set['bound']}). Certified for every chain of the set: optimal-set (binary "
            f"chains), mqm-approx and group-dp; every other row is over {len(result.chains)} listed chains "
            "of it (the estimate and each row's moves of one pair of states): NOT a guarantee for the set.",
            highlight=False,
        )  # fmt: skip
        eps = result.request.epsilon
        for name, found in result.attacks.items():
            above = " ABOVE EPSILON" if found.loss > eps else ""
            console.print(
                f"attack at {name}'s scale {found.scale:.6g} (T = {max(result.results)}): the worst chain "
                f"found in the set has loss {found.loss:.4g} (eps {eps:g}; {found.evaluations} chains "
                f"searched: a lower bound, not a certificate){above}",
                highlight=False,
            )
    for t, rows_t in list(result.results.items())[:5]:
        console.print(f"T = {t}")
        print_comparisons(console, rows_t, 0.0, show_pair=True)
    if len(result.results) > 5:
        console.print(f"({len(result.results) - 5} more lengths: every one in --json)")


@markov_app.command("release")
def markov_release(
    data: Annotated[str, typer.Argument(help="CSV or Parquet table of time series.")],
    output: Annotated[
        str, typer.Option("--output", help="Released table (.csv or .parquet): id, T, the count.")
    ],
    epsilon: Annotated[float, typer.Option("--epsilon", help="Privacy budget.")],
    id_column: IdOpt = None,
    time_column: TimeOpt = None,
    state_column: StateOpt = None,
    target_state: TargetOpt = None,
    query: QueryOpt = "count",
    initial: InitialOpt = "stationary",
    prior_set: PriorSetOpt = "l1-rows",
    engine: EngineOpt = "duckdb",
    mechanism: Annotated[
        str | None,
        typer.Option(
            "--mechanism",
            help="Calibrator whose scale is used. Default: optimal with --prior-set none; over the l1-rows "
            "set the smallest of those certified over it (optimal-set, mqm-approx, group-dp).",
        ),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Overwrite existing output and report files.")
    ] = False,
    rng_seed: Annotated[
        int | None,
        typer.Option("--rng-seed", min=0, help="Use a seeded, INSECURE sampler (experiments only)."),
    ] = None,
    report: Annotated[
        str | None,
        typer.Option("--report", help="Also write a self-contained HTML report to this .html file."),
    ] = None,
    ledger: LedgerOpt = None,
    budget: BudgetOpt = None,
) -> None:
    """Release each id's count of visits to --target-state with Laplace noise of --mechanism's
    scale for its length, calibrated on the chain estimated from DATA and checked exactly."""
    from pufferfish.markov.release import release_series

    def run() -> Any:
        request = _series_request(data, epsilon, None, initial, target_state, query, None, id_column,
                                  time_column, state_column, prior_set, engine)  # fmt: skip
        return release_series(
            request, output, mechanism=mechanism, force=force, rng=rng_seed, html_report=report,
            announce=lambda line: console.print(line, highlight=False, markup=False),
            ledger=ledger, budget=budget,
        )  # fmt: skip

    console = plain_console()
    with working("estimating the chain, calibrating and releasing the series"):
        result = guard(run)
    cal = result.calibration
    console.print(f"released: {result.output} ({len(cal.series.ids)} ids, one {query} each)")
    for t, (scale, drawn) in list(result.scales.items())[:5]:
        console.print(f"T = {t}: {result.mechanism} Laplace scale {scale:.6g} (drawn at {drawn:.6g})")
    if result.raised != 1.0:
        console.print(
            f"budget {budget:g}: every drawn scale is the calibrated one raised {result.raised:.6g} times, "
            "so that the ledger's releases and this one meet the budget together",
            highlight=False,
        )
    if len(result.scales) > 5:
        console.print(f"({len(result.scales) - 5} more lengths: every one in the report)")
    console.print(f"noise: {result.noise.get('sampler', 'none')}")
    console.print(f"report: {result.report_path} (confidential: it holds figures of the table)", markup=False)
    if result.html_report is not None:
        console.print(f"HTML report: {result.html_report}")
    if result.together is not None:
        console.print(f"ledger: {ledger}", soft_wrap=True, highlight=False, markup=False)  # never folded
        console.print(f"  {result.together.line()}", highlight=False, markup=False)
