"""``pufferfish markov ...``: pufferfish privacy for a count on a Markov chain (issue 30), a thin
layer over :mod:`pufferfish.markov` and the registry's :func:`~pufferfish.calibration.compare`."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.console import Console

from ._checks import check_epsilons
from .cli_common import guard, parse_mechanisms, print_comparisons

markov_app = typer.Typer(
    name="markov",
    help="Pufferfish privacy for a count on a Markov chain (a person's time series).",
    no_args_is_help=True,
)

#: The mechanisms compared by default on a chain (the additive ones and the Markov baselines).
DEFAULT_MECHANISMS = (
    "group-dp", "gk16", "mqm-approx", "mqm-exact",
    "l1", "kantorovich", "wasserstein-inf", "relaxed", "optimal",
)  # fmt: skip


def _initial(text: str) -> Any:
    """``stationary`` or a probability vector ``"0.5,0.5"``."""
    if text.strip() == "stationary":
        return "stationary"
    try:
        return [float(x) for x in text.split(",")]
    except ValueError:
        raise ValueError(
            f"--initial must be 'stationary' or probabilities 'p0,p1,...', got {text!r}"
        ) from None


@markov_app.command("calibrate")
def markov_calibrate(
    transition: Annotated[
        str, typer.Option("--transition", help="Transition matrix, rows ';' entries ',': '0.9,0.1;0.1,0.9'.")
    ],
    length: Annotated[int, typer.Option("--length", min=2, help="Length T of the series (>= 2).")],
    epsilon: Annotated[list[float], typer.Option("--epsilon", help="Privacy budget (repeatable).")],
    initial: Annotated[
        str, typer.Option("--initial", help="Distribution of X_0: stationary, or probabilities 'p0,p1,...'.")
    ] = "stationary",
    states: Annotated[
        str | None, typer.Option("--states", help="Names of the states 'a,b,...' (default 0,1,...).")
    ] = None,
    target_state: Annotated[
        str | None,
        typer.Option("--target-state", help="The state whose visits are counted (default: the last)."),
    ] = None,
    query: Annotated[str, typer.Option("--query", help="count, or frequency (count / T).")] = "count",
    mechanism: Annotated[
        str,
        typer.Option(
            "--mechanism", help="Calibrators 'a,b' or all (the Markov baselines and the additive ones)."
        ),
    ] = "all",
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object instead of tables.")] = False,
) -> None:
    """Laplace scales for a count of visits to a state on a Markov chain of length T: the exact
    optimum on the count priors P(count | X_i = a), the Markov quilt mechanism (exact and
    approximate), GK16 and group differential privacy, each checked exactly."""
    from .calibration import compare
    from .markov import CountModel, MarkovChain, count_scenario

    def run() -> tuple[Any, Any]:
        eps = check_epsilons(epsilon)
        names = None if states is None else [s.strip() for s in states.split(",")]
        chain = MarkovChain(transition, _initial(initial), names)
        model = CountModel(
            (chain,), length, target_state if target_state is not None else chain.states[-1], query
        )
        scenario = count_scenario(model)
        names_asked = parse_mechanisms(mechanism)
        return model, compare(scenario, eps, list(names_asked or DEFAULT_MECHANISMS))

    model, results = guard(run)
    if as_json:
        out = {"model": model.describe(), "results": [r.to_dict() for r in results]}
        typer.echo(json.dumps(out, allow_nan=False))
        return
    console = Console()
    chain = model.chains[0]
    console.print(
        f"chain: {chain.k} states {', '.join(chain.states)}; T = {model.length}; X_0 "
        f"{'stationary' if chain.stationary else 'given'} {[round(x, 6) for x in chain.initial_distribution]}"
    )
    console.print(
        f"query: {model.query} of state {model.target!r} (sensitivity {model.sensitivity:g}); secrets "
        "X[i]=a for every time i, pairs (X[i]=a, X[i]=b)"
    )
    print_comparisons(console, results, 0.0, show_pair=True)
