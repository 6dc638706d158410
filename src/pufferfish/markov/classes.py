"""The comparison of mechanisms over a finite class of chains, one chain in memory at a time
(issue 43: the 267 chains of a confidence set around an 8-state chain did not finish in 590 s
at 1.8 GB when every chain's priors were held at once).

Two monotone facts make the class answer a combination of per-chain answers:

* Every mechanism's scale over a class is the largest of its scales on the chains (each is a
  maximum over the chain's pairs: the transport mechanisms, l1, the Markov baselines, whose
  ``sigma`` is a maximum over the chains, :func:`~.quilts.model_sigma`), and the exact loss of each
  chain is non-increasing in the scale (SPEC sec 2.1), so the largest scale passes every chain
  once each chain's own scale passed its own check. The class row is the row of the chain with
  the largest scale; a mechanism that does not apply to one chain does not apply to the class.
* ``optimal`` over the class is the smallest scale that passes every chain: the largest of the
  chains' own optima. It is found as the search over pairs finds it (the worst pairs first, then
  every pair checked at the answer): the estimate's optimum ``b``; every other chain checked at
  ``b``; the worst few that fail searched together with the binding chain for a new ``b``; the
  chains that failed checked again at it; until none fails. Each search is on a subset of the
  class, so it never ends above the class optimum, and the answer has passed the exact check of
  every chain (at that scale, or at a smaller one, which implies it).

An interval class (``CountModel.interval``) keeps the whole-class comparison: MQMApprox is
certified there from bounds over the infinite class, not from its grid's chains.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pufferfish.calibration import Calibration, Skipped, compare
from pufferfish.calibration.check import check_pairs
from pufferfish.calibration.registry import lookup, not_applicable
from pufferfish.markov.counts import CountModel, NoPairError, count_scenario
from pufferfish.priors.scenario import AdversaryPrior, Scenario

#: How many failing chains join the searched subset at each round of the ``optimal`` search.
ACTIVE_CHAINS = 4

#: The per-pair transport mechanisms: on a class of more than :data:`CLASS_DEFAULT_LIMIT` chains
#: they are left out of the default comparison (seconds per chain each: a transport plan per
#: pair), and computed when named.
TRANSPORT_MECHANISMS = ("kantorovich", "wasserstein-inf", "relaxed")

#: Largest class whose default comparison includes :data:`TRANSPORT_MECHANISMS`.
CLASS_DEFAULT_LIMIT = 16

#: Largest number of pairs (chains x T x k^2) whose transport plans a default comparison computes.
TRANSPORT_PAIRS = 2e5

#: Largest work (chains x k^3 x quilt distances) of ``mqm-exact`` in a default comparison.
MQM_EXACT_WORK = 2e9


@dataclass(frozen=True)
class ClassComparison:
    """The rows of a comparison over a class, and the scenario of the chains that decided
    ``optimal`` (for the report's figure of the binding priors).

    Attributes
    ----------
    results : tuple of Calibration or Skipped
        One row per epsilon and mechanism, as :func:`~pufferfish.calibration.compare` orders them;
        each row's ``prior`` names the chain of the class that decided it (``"chain n"``).
    scenario : Scenario
        The count scenario of the last chains searched for ``optimal`` (adversary priors named as
        in ``results``).
    chains_checked : int
        The chains of the class (every one was checked).
    """

    results: tuple[Any, ...]
    scenario: Scenario
    chains_checked: int


def default_mechanisms(
    names: Sequence[str], chains: int, states: int = 2, length: int = 1
) -> tuple[list[str], list[str]]:
    """``(run, left_out)``: the default list of a comparison over ``chains`` chains of ``states``
    states at ``length``: the transport mechanisms are left out beyond :data:`CLASS_DEFAULT_LIMIT`
    chains or :data:`TRANSPORT_PAIRS` pairs (``T k^2`` per chain), ``mqm-exact`` beyond
    :data:`MQM_EXACT_WORK` (its influence tables cost about ``k^3`` per quilt distance and chain)."""
    left: set[str] = set()
    if chains > CLASS_DEFAULT_LIMIT or chains * length * states**2 > TRANSPORT_PAIRS:
        left.update(TRANSPORT_MECHANISMS)
    if chains * states**3 * min(length, 400) > MQM_EXACT_WORK:
        left.add("mqm-exact")
    return [n for n in names if n not in left], [n for n in names if n in left]


def left_out_rows(
    names: Iterable[str], epsilons: Sequence[float], chains: int, states: int = 2
) -> list[Skipped]:
    """The rows of the mechanisms :func:`default_mechanisms` left out, with the reason."""
    why = {
        "mqm-exact": f"not run by default on {chains} chain(s) of {states} states (its influence tables cost "
        "about k^3 per quilt distance and chain); name it with --mechanism to run it",
    }
    transport = (
        f"not run by default on {chains} chain(s) of {states} states (a transport plan per pair of every "
        "chain: seconds per chain); name it with --mechanism to run it"
    )
    return [Skipped(name, eps, why.get(name, transport)) for eps in epsilons for name in names]


def _own_scale(scenario: Any, name: str, eps: float, index: int) -> float | Skipped:
    """A mechanism's own scale on chain ``index`` of a class (its theorem, no check), or a Skipped
    row when it does not apply there, its theorem's condition failing included (GK16 with
    ``||Gamma|| >= 1`` on one chain; issue 55: that ended the whole comparison)."""
    reason = not_applicable(scenario, name, "laplace", 0.0, eps)
    if reason is not None:
        return Skipped(name, eps, f"chain {index}: {reason}")
    try:
        return float(lookup(name).scale(scenario, eps, 0.0, None).scale)  # type: ignore[misc]
    except ValueError as exc:
        return Skipped(name, eps, f"chain {index}: {exc}")


def compare_class(
    model: CountModel, epsilons: float | Sequence[float], mechanisms: Sequence[str]
) -> ClassComparison:
    """:func:`~pufferfish.calibration.compare` of ``mechanisms`` on ``count_scenario(model)``,
    one chain at a time (module docstring).

    Parameters
    ----------
    model : CountModel
        A class of one or more chains (not an interval class).
    epsilons : float or sequence of float
        Each finite and > 0.
    mechanisms : sequence of str
        Registry names (Laplace noise, pure eps).

    Returns
    -------
    ClassComparison

    Raises
    ------
    ValueError
        For an interval class; NoPairError (a ValueError) when no chain has a pair to protect.

    Notes
    -----
    The first chain with a pair (the estimate of a confidence set) is compared in full. On each
    other chain, each mechanism's own scale is computed (its theorem, no check) and ``optimal``'s
    current answer is checked exactly; then ``optimal`` is refined over the failing chains. A
    mechanism's class row is then its row on the chain of its largest scale, checked exactly
    there; it holds on every other chain because it is at least the class's ``optimal`` (which
    passed every chain) and each chain's loss is non-increasing in the scale. Without
    ``optimal`` among ``mechanisms`` every chain is checked at each class row's scale instead.
    A row below the class optimum fails on some chain: it becomes a Skipped row saying so.
    """
    if model.interval is not None:
        raise ValueError("an interval class is compared whole (its MQMApprox bound is over the class)")
    eps_list = [float(epsilons)] if isinstance(epsilons, (int, float)) else [float(e) for e in epsilons]
    names = list(mechanisms)
    others = [n for n in names if n != "optimal"]
    first: int | None = None
    rows: dict[tuple[float, str], Any] = {}
    largest: dict[tuple[float, str], tuple[float, int]] = {}  # each mechanism's largest own scale
    refused: dict[tuple[float, str], Skipped] = {}
    failing: dict[float, list[tuple[float, int]]] = {e: [] for e in eps_list}  # optimal's
    for index in range(len(model.chains)):
        scenario = chain_scenario(model, (index,))
        if scenario is None:
            continue
        if first is None:
            first = index
            for row in compare(scenario, eps_list, names):
                rows[(row.epsilon, row.mechanism)] = row
                if isinstance(row, Calibration):
                    largest[(row.epsilon, row.mechanism)] = (row.scale, index)
            continue
        for eps in eps_list:
            for name in others:
                key = (eps, name)
                if key in refused or isinstance(rows.get(key), Skipped):
                    continue
                value = _own_scale(scenario, name, eps, index)
                if isinstance(value, Skipped):
                    refused[key] = value
                    continue
                if key not in largest or value > largest[key][0]:
                    largest[key] = (value, index)
            current = rows.get((eps, "optimal"))
            if isinstance(current, Calibration):  # does this chain pass at the current optimum?
                chk = check_pairs(scenario, "laplace", current.scale, eps, 0.0)
                if not chk.passes(eps):
                    failing[eps].append((chk.upper, index))
    if first is None:
        raise NoPairError()
    last = None
    for eps in eps_list:
        current = rows.get((eps, "optimal"))
        if not isinstance(current, Calibration):
            continue
        searched = [_chain_of(current.prior)]
        todo = failing[eps]
        while todo:
            todo.sort(key=lambda item: -item[0])
            searched.extend(i for _, i in todo[:ACTIVE_CHAINS] if i not in searched)
            subset = chain_scenario(model, tuple(searched))
            assert subset is not None
            (current,) = compare(subset, eps, ["optimal"])
            last = subset
            if not isinstance(current, Calibration):
                break  # a search that failed (time limit): the row says why
            rest = [i for _, i in todo if i not in searched]
            todo = []
            for i in rest:
                one = chain_scenario(model, (i,))
                assert one is not None
                chk = check_pairs(one, "laplace", current.scale, eps, 0.0)
                if not chk.passes(eps):
                    todo.append((chk.upper, i))
        rows[(eps, "optimal")] = current
    for eps in eps_list:
        optimum = rows.get((eps, "optimal"))
        for name in others:
            key = (eps, name)
            if key in refused or key not in largest or isinstance(rows.get(key), Skipped):
                rows[key] = refused.get(key, rows.get(key))
                continue
            at = largest[key][1]
            if at != first:
                one = chain_scenario(model, (at,))
                assert one is not None
                (rows[key],) = compare(one, eps, [name])
            rows[key] = _over_class(model, rows[key], optimum)
    if last is None:
        binding = rows.get((eps_list[0], "optimal"))
        at = _chain_of(binding.prior) if isinstance(binding, Calibration) else first
        last = chain_scenario(model, (at,))
        assert last is not None
    ordered = tuple(rows[(e, n)] for e in eps_list for n in names if rows.get((e, n)) is not None)
    return ClassComparison(ordered, last, len(model.chains))


def _over_class(model: CountModel, row: Any, optimum: Any) -> Any:
    """A row checked on the chain of its largest scale, made a row of the class.

    At or above the class's ``optimal`` (``optimum``) it passes every chain. Otherwise (no
    ``optimum``, or a scale a rounding nudge below it) each chain is checked at its scale; a chain
    that fails is calibrated alone (its own check moves the scale to the safe side, as
    :func:`~pufferfish.calibration.search.verified` does on a whole scenario), and the larger
    scale goes on; a chain on which the mechanism's own scale fails its check makes the row a
    Skipped row saying where.
    """
    if not isinstance(row, Calibration):
        return row
    chains = len(model.chains)
    if isinstance(optimum, Calibration) and row.scale >= optimum.scale:
        return replace(
            row,
            decided_by=f"{row.decided_by}; every chain of the {chains} passes: the scale is at least "
            f"the class optimum {optimum.scale:.6g}",
        )
    for index in range(chains):
        if isinstance(optimum, Calibration) and row.scale >= optimum.scale:
            break
        scenario = chain_scenario(model, (index,))
        if scenario is None:
            continue
        chk = check_pairs(scenario, "laplace", row.scale, row.epsilon, 0.0)
        if chk.passes(row.epsilon):
            continue
        (own,) = compare(scenario, row.epsilon, [row.mechanism])
        if not isinstance(own, Calibration):
            return Skipped(row.mechanism, row.epsilon, f"chain {index}: {getattr(own, 'reason', own)}")
        row = own  # larger: it passes this chain, and every chain checked before (monotone)
    return replace(row, decided_by=f"{row.decided_by}; checked exactly on each of the {chains} chains")


def _chain_of(prior: str) -> int:
    """``"chain 12"`` or ``"chain 12 start 3"`` -> 12."""
    return int(prior.split()[1])


def chain_scenario(model: CountModel, indices: tuple[int, ...]) -> Scenario | None:
    """The count scenario of the chains ``indices`` of the class, each adversary prior named
    ``"chain n"`` (``"chain n start j"`` for the starts of an ``initial="any"`` chain) by its place
    in the class; None when these chains have no pair to protect."""
    sub = replace(model, chains=tuple(model.chains[i] for i in indices))
    try:
        scenario = count_scenario(sub)
    except NoPairError:
        return None
    names = []
    for i in indices:
        starts = model.chains[i].starts()
        names.extend(
            [f"chain {i}"] if len(starts) == 1 else [f"chain {i} start {j}" for j in range(len(starts))]
        )
    priors = tuple(
        AdversaryPrior(name, p.conditionals, p.sets, p.impossible)
        for name, p in zip(names, scenario.priors, strict=True)
    )
    return Scenario(scenario.pairs, priors, scenario.metric, scenario.model)
