"""Calibrate and release a count per person from a table of time series (issue 30).

One path: the chain is estimated from the table (:mod:`pufferfish.markov.estimate`), each length
``T`` met among the ids gets its :class:`~.counts.CountModel` and scenario
(:func:`~.counts.count_scenario`), and the registry's :func:`~pufferfish.calibration.compare`
calibrates and checks every mechanism on it, as for any other scenario. The release adds Laplace
noise of the chosen mechanism's scale for the id's ``T`` to the id's count, with the secure
sampler; a frequency is the noisy count divided by ``T`` (post-processing: the count's guarantee
carries over), so the noise is always drawn on the integers, where the exact sampler's lattice
holds every count.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pufferfish._checks import check_epsilon, short_list
from pufferfish.calibration import Calibration, MappingCalibration, Skipped, compare
from pufferfish.ledger.guarantee import COMPOSES, JointGuarantee
from pufferfish.ledger.record import LedgerContext, check_budget, check_ledger_path, recording
from pufferfish.ledger.store import Ledger
from pufferfish.markov.attack import ATTACK_EVALUATIONS, ATTACK_MAX_STATES, ChainAttack, attack_scale
from pufferfish.markov.audit import CERTIFIED_OVER, ScaleAudit, audit_scale, result_row
from pufferfish.markov.chain import MarkovChain
from pufferfish.markov.classes import compare_class, default_mechanisms, left_out_rows
from pufferfish.markov.counts import (
    MARKOV_MECHANISMS,
    QUERIES,
    Binding,
    CountModel,
    binding_priors,
    count_scenario,
)
from pufferfish.markov.estimate import (
    ESTIMATED_INITIALS,
    SeriesTable,
    confidence_chains,
    estimated_chain,
    read_series,
    row_radii,
)
from pufferfish.markov.ledgered import SERIES_CHECKS, plan_within_budget
from pufferfish.markov.rowballs import RowBalls
from pufferfish.noise.samplers import add_laplace, exact_grid, insecure_generator
from pufferfish.tables.source import (
    CsvOptions,
    atomic_outputs,
    check_engine,
    check_release_outputs,
    output_format,
    report_path_for,
    resolve_source,
)

#: Prior sets of an estimated chain: the confidence set (default) or the estimate alone.
PRIOR_SETS = ("l1-rows", "none")


Result = Calibration | MappingCalibration | Skipped

#: Among certified scales equal at the longest length, the one a release takes: the simpler theorem.
TIE_ORDER = {"group-dp": 0, "optimal-set": 1, "mqm-approx": 2}


@dataclass(frozen=True)
class SeriesRequest:
    """What to calibrate on a table of time series (validated once, here).

    Parameters
    ----------
    data : str, pathlib.Path, pandas.DataFrame
        The table.
    id_column, time_column, state_column : str
        Its columns.
    target : str
        The counted state, as written in the table.
    epsilon : float
        Finite and > 0.
    query : {"count", "frequency"}
    initial : {"stationary", "empirical"}
    prior_set : {"l1-rows", "none"}
        The 95% (``confidence``) set of chains around the estimate, checked on its listed chains
        (:func:`~.estimate.confidence_chains`, not certified over the whole set), or the estimate.
    confidence : float
        In (0, 1).
    length : int or "longest", optional
        Calibrate for this ``T`` only, or for the longest series (the command line's default);
        default None: every length met among the ids (what a release needs).
    mechanisms : sequence of str, optional
        Default :data:`MARKOV_MECHANISMS`.
    csv_options : CsvOptions, optional
    engine : {"duckdb", "spark"}
        Who counts the transitions (:func:`~.estimate.read_series`); ``data`` may be a Spark
        DataFrame with ``"spark"``.
    """

    data: Any
    id_column: str
    time_column: str
    state_column: str
    target: str
    epsilon: float
    query: str = "count"
    initial: str = "stationary"
    prior_set: str = "l1-rows"
    confidence: float = 0.95
    length: int | str | None = None
    mechanisms: tuple[str, ...] | None = None
    csv_options: CsvOptions | None = None
    engine: str = "duckdb"

    def __post_init__(self) -> None:
        eps = check_epsilon(self.epsilon)
        check_engine(self.engine)
        if self.initial not in ESTIMATED_INITIALS:
            raise ValueError(f"initial must be one of {', '.join(ESTIMATED_INITIALS)}, got {self.initial!r}")
        if self.query not in QUERIES:
            raise ValueError(f"query must be one of {', '.join(QUERIES)}, got {self.query!r}")
        if self.prior_set not in PRIOR_SETS:
            raise ValueError(f"prior set must be one of {', '.join(PRIOR_SETS)}, got {self.prior_set!r}")
        if not 0.0 < float(self.confidence) < 1.0:
            raise ValueError(f"confidence must be in (0, 1), got {self.confidence!r}")
        if (
            self.length is not None
            and self.length != "longest"
            and (isinstance(self.length, (bool, str)) or int(self.length) < 1)
        ):
            raise ValueError(f"length must be an integer >= 1 or 'longest', got {self.length!r}")
        object.__setattr__(self, "epsilon", eps)
        if self.mechanisms is not None:
            object.__setattr__(self, "mechanisms", tuple(self.mechanisms))


@dataclass(frozen=True)
class SeriesCalibration:
    """The mechanisms' scales for every length, on the estimated chain (or its set).

    Attributes
    ----------
    request : SeriesRequest
    series : SeriesTable
    chain : MarkovChain
        The estimate.
    chains : tuple of MarkovChain
        The chains every scale was checked on (the estimate first).
    prior_set : dict or None
        The confidence set's description (``certified`` is False: checked on ``chains`` only).
    results : dict
        ``T -> tuple of results`` (one per mechanism).
    binding : dict
        ``T -> the count priors of the optimal scale's binding pair`` (for the report).
    row_balls : RowBalls or None
        The confidence set itself (``prior_set="l1-rows"``): what the certified mechanisms hold over.
    attacks : dict
        ``mechanism -> ChainAttack``: over a set, a worst-chain search (:mod:`.attack`) at the
        longest length against the listed chains' optimum and the smallest certified scale.
    """

    request: SeriesRequest
    series: SeriesTable
    chain: MarkovChain
    chains: tuple[MarkovChain, ...]
    prior_set: dict[str, Any] | None
    results: dict[int, tuple[Result, ...]]
    binding: dict[int, Binding | None] = field(default_factory=dict, repr=False)
    row_balls: RowBalls | None = None
    attacks: dict[str, ChainAttack] = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary."""
        r = self.request
        return {
            "data": self.series.describe(),
            "target": r.target,
            "query": r.query,
            "epsilon": r.epsilon,
            "chain": self.chain.describe(),
            "prior_set": self.prior_set,
            "chains_checked": len(self.chains),
            "attack": {
                name: {"length": max(self.results), **a.to_dict(r.epsilon)}
                for name, a in self.attacks.items()
            },
            "results": {
                str(t): [
                    result_row(x, CountModel(self.chains, t, r.target, r.query, row_balls=self.row_balls))
                    for x in rows
                ]
                for t, rows in self.results.items()
            },
        }


def calibrate_series(request: SeriesRequest, *, whole_series: bool = False) -> SeriesCalibration:
    """Estimate the chain and calibrate every mechanism for each length (module docstring).

    Parameters
    ----------
    request : SeriesRequest
    whole_series : bool
        Refuse, before estimating, a table whose series have holes (gaps in time, missing
        states, rows without an id or a time: :class:`~.estimate.SeriesBreaks`): what a release
        of one count per id needs. Default False: the segments between holes are calibrated.

    Raises
    ------
    DataError
        If the table cannot be read or does not determine a chain (see :func:`~.estimate.read_series`).
    ValueError
        If the target is not a state of the table.
    """
    series, chain, chains, description, lengths, balls = _estimated(request, whole_series)
    names, left_out = list(request.mechanisms or MARKOV_MECHANISMS), list[str]()
    if request.mechanisms is None:
        names, left_out = default_mechanisms(names, len(chains), chain.k, lengths[-1])
    results: dict[int, tuple[Result, ...]] = {}
    binding: dict[int, Binding | None] = {}
    for t in lengths:
        model = CountModel(chains, t, request.target, request.query, row_balls=balls)
        if len(chains) == 1:
            scenario = count_scenario(model)
            results[t] = compare(scenario, request.epsilon, names)
        else:  # a confidence set: one chain in memory at a time (.classes)
            found = compare_class(model, request.epsilon, names)
            scenario, results[t] = found.scenario, found.results
        binding[t] = binding_priors(scenario, results[t])
        results[t] = results[t] + tuple(left_out_rows(left_out, [request.epsilon], len(chains), chain.k))
    attacks = {}
    if balls is not None:
        longest = CountModel(chains, lengths[-1], request.target, request.query, row_balls=balls)
        attacks = _attacks(longest, results[lengths[-1]])
    return SeriesCalibration(request, series, chain, chains, description, results, binding, balls, attacks)


def _attacks(model: CountModel, rows: tuple[Result, ...]) -> dict[str, ChainAttack]:
    """A worst-chain search (:func:`~.attack.attack_scale`) at the listed chains' optimum and at
    ``mqm-approx``'s scale over the set when below group DP's, when computed; its budget shrinks with the cost
    of one chain (about ``T^2 k^2``): 48 chains at ``T^2 k^2 <= 1.2e6``, never fewer than 4; none beyond
    :data:`~.attack.ATTACK_MAX_STATES` states (each chain tried has every row moved, and its exact
    stationary start costs ``k^3`` rational operations)."""
    if model.chains[0].k > ATTACK_MAX_STATES:  # every row moved: dense chains, each start exact (GTH)
        return {}
    cost = model.length**2 * model.chains[0].k ** 2
    budget = int(min(ATTACK_EVALUATIONS, max(4, ATTACK_EVALUATIONS * 1.2e6 / cost)))
    passed = [r for r in rows if isinstance(r, Calibration) and r.scale > 0]
    dp = next((r.scale for r in passed if r.mechanism == "group-dp"), None)
    # group DP holds for any chain, optimal-set's branch and bound searched the whole set: the
    # theorem of mqm-approx over the set is the one a search can still confirm
    chosen = [
        r
        for r in passed
        if r.mechanism == "optimal" or (r.mechanism == "mqm-approx" and (dp is None or r.scale < dp))
    ]
    return {r.mechanism: attack_scale(model, r.scale, evaluations=budget) for r in chosen}


def _output_columns(counts: list[str]) -> dict[str, Any]:
    """What a release of counts writes (issue 41): ``id``, ``T`` and the counts, the counts covered."""
    return {
        "written": ["id", "T", *counts],
        "covered_by_the_guarantee": counts,
        "public_by_the_model": {
            "id": "who the series is about: the guarantee is about each person's states, given who",
            "T": "the series' length: the chain model conditions on it (each T is calibrated)",
        },
        "not_written": "every column of the table: the states, times and ids are read, never copied",
        "row_order": "sorted by id (as text): the order reveals nothing but the ids written",
    }


def guarantee_line(calibration: SeriesCalibration, mechanism: str) -> str:
    """One line: for which priors the release of ``mechanism``'s scales holds (a release says it
    before it writes).

    The estimated chain alone (``--prior-set none``): for that chain, checked exactly. The
    ``l1-rows`` set: for every chain of the set, by the certificate of ``optimal-set`` (binary
    chains, :mod:`.setopt`), ``mqm-approx`` (bounds over the set, :func:`~.quilts.row_balls_sigma`)
    or ``group-dp`` (any chain); any other scale holds
    for the chains listed from the set only, and the line says so (a release refuses it,
    :func:`release_series`).
    """
    r = calibration.request
    eps = f"(eps = {r.epsilon:g})-pufferfish for every secret X[i] = a and pair of states"
    if calibration.prior_set is None:
        return f"guarantee: {eps}, for an adversary whose prior is the estimated chain (checked exactly)"
    conf = f"{calibration.prior_set['confidence']:.0%}"
    if mechanism == "group-dp":
        return f"guarantee: {eps}, for every chain (group DP, T / eps), the {conf} set included"
    if mechanism == "optimal-set":
        return (
            f"guarantee: {eps}, for every chain of the {conf} set around the estimate (certified: a branch "
            "and bound over the whole set of binary chains)"
        )
    if mechanism == "mqm-approx":
        return (
            f"guarantee: {eps}, for every chain of the {conf} set around the estimate (certified: the Markov "
            "quilt mechanism with bounds on mixing and stationary mass over the whole set)"
        )
    return (
        f"guarantee: {eps}, over {len(calibration.chains)} listed chains of the {conf} set: NOT a guarantee "
        "for the set"
    )


def release_mechanisms(request: SeriesRequest, mechanism: str | None) -> tuple[str, ...]:
    """The mechanisms a release calibrates, before any work: ``mechanism``, or by default
    ``optimal`` for the estimated chain and, over the ``l1-rows`` set, the mechanisms certified over
    it (``optimal-set`` for a binary chain and ``mqm-approx``, both for a stationary start, and
    ``group-dp``: the release takes the smallest, :func:`_smaller`).

    Raises
    ------
    ValueError
        For a mechanism that is not certified over the set (its scale holds on the listed chains only).
    """
    if request.prior_set == "none":
        return (mechanism or "optimal",)
    certified = CERTIFIED_OVER["row balls"]
    if mechanism is None:
        return certified if request.initial == "stationary" else ("group-dp",)
    if mechanism not in certified:
        raise ValueError(
            f"mechanism {mechanism!r} is checked on chains listed from the {request.confidence:.0%} set, not "
            f"certified over it: over the set a release uses {' or '.join(certified)} (the default takes the "
            "smallest), or give --prior-set none to release for the estimated chain alone"
        )
    return (mechanism,)


def _smaller(calibration: SeriesCalibration) -> tuple[SeriesCalibration, str]:
    """The calibration kept to one mechanism: of those that apply at every length, the one with
    the smallest scale at the longest length (on a tie the simpler theorem: group DP, then the
    certified optimum, then MQMApprox; MQMApprox is never above group DP, its trivial quilt being
    T / eps)."""
    rows = calibration.results
    longest = max(rows)
    names = [x.mechanism for x in rows[longest]]
    usable = [
        n
        for n in names
        if all(isinstance(x, Calibration) for r in rows.values() for x in r if x.mechanism == n)
    ]
    if not usable:  # none applies at every length: the first, whose row says why (refused below)
        chosen = names[0]
    else:
        scale = {x.mechanism: x.scale for x in rows[longest] if isinstance(x, Calibration)}
        chosen = min(usable, key=lambda n: (scale[n], TIE_ORDER.get(n, len(TIE_ORDER))))
    kept = {t: tuple(x for x in r if x.mechanism == chosen) for t, r in rows.items()}
    return replace(calibration, results=kept), chosen


def series_report(calibration: SeriesCalibration, payload: dict[str, Any]) -> str:
    """The HTML report of a table's calibration (or release): the longest length's model and
    mechanisms, the scales against ``T`` over the lengths calibrated, the binding count priors
    (:func:`~.report.markov_report_html`)."""
    from pufferfish.markov.report import markov_report_html

    longest = max(calibration.results)
    r = calibration.request
    model = CountModel(calibration.chains, longest, r.target, r.query, row_balls=calibration.row_balls)
    conf = "" if calibration.prior_set is None else f"{calibration.prior_set['confidence']:.0%}"
    certified = (
        [
            f"optimal-set over the whole {conf} set (binary chains: branch and bound over the set)",
            f"mqm-approx over the whole {conf} set (bounds on mixing and stationary mass over the set)",
            f"group-dp over the whole {conf} set (T / eps holds for any chain)",
            f"every other scale: over the {len(calibration.chains)} listed chains, NOT a guarantee for the "
            "set",
        ]
        if calibration.prior_set is not None
        else ["every mechanism, for the estimated chain (checked exactly)"]
    )
    return markov_report_html(
        model, calibration.results[longest], payload, certified, chains_checked=len(calibration.chains),
        binding=calibration.binding.get(longest), curve=calibration.results,
    )  # fmt: skip


def audit_series(request: SeriesRequest, scale: float) -> tuple[SeriesCalibration, dict[int, ScaleAudit]]:
    """The exact loss of ``Laplace(scale)`` on each length's query, on the estimated chain (or the
    chains of its confidence set): :func:`~.audit.audit_scale` per length.

    Returns
    -------
    (SeriesCalibration, dict)
        The estimate (with no mechanism results) and ``T -> ScaleAudit``.

    Raises
    ------
    DataError, ValueError
        As :func:`calibrate_series`; ``ValueError`` for a negative or non-finite scale.
    """
    series, chain, chains, description, lengths, balls = _estimated(request)
    audits = {
        t: audit_scale(CountModel(chains, t, request.target, request.query, row_balls=balls), scale)
        for t in lengths
    }
    return SeriesCalibration(request, series, chain, chains, description, {}, row_balls=balls), audits


def _estimated(
    request: SeriesRequest, whole_series: bool = False
) -> tuple[
    SeriesTable, MarkovChain, tuple[MarkovChain, ...], dict[str, Any] | None, list[int], RowBalls | None
]:
    """The table read, the estimated chain, the chains checked, the set's description, the
    lengths to calibrate (``whole_series``: see :func:`calibrate_series`) and the set itself."""
    series = read_series(
        request.data, id_column=request.id_column, time_column=request.time_column,
        state_column=request.state_column, csv_options=request.csv_options, engine=request.engine,
    )  # fmt: skip
    if whole_series and series.breaks.sentence() is not None:
        raise ValueError(
            "the series have holes, and a count per id over a series with holes is not calibrated here: "
            f"{series.breaks.sentence()}; fill the holes or split the ids before releasing"
        )
    if request.target not in series.states:
        raise ValueError(f"target state must be one of {short_list(series.states)}, got {request.target!r}")
    chain = estimated_chain(series, request.initial)
    # the segments' lengths (module docstring of .estimate: a series is cut at its holes)
    lengths = sorted({int(t) for t in series.segment_lengths})
    if request.length == "longest":
        lengths = lengths[-1:]
    elif request.length is not None:
        lengths = [int(request.length)]
    chains: tuple[MarkovChain, ...] = (chain,)
    description, balls = None, None
    if request.prior_set == "l1-rows":
        chains, description = confidence_chains(
            series, chain, request.confidence, request.target, lengths[-1]
        )
        balls = RowBalls(chain.transition, row_radii(series, request.confidence), request.confidence)
        names = request.mechanisms
        if names is not None and set(names) <= set(CERTIFIED_OVER["row balls"]):
            # certified over the whole set by their theorems: checked exactly on the estimate (a
            # member), attacked over the set; the listed chains would add time, not a guarantee
            chains = (chain,)
            description = description | {"chains_checked": 1, "moves_listed": "none (certified mechanisms)"}
    return series, chain, chains, description, lengths, balls


@dataclass(frozen=True)
class SeriesRelease:
    """A released table of one noisy count (or frequency) per id.

    Attributes
    ----------
    calibration : SeriesCalibration
    mechanism : str
    output, report_path : pathlib.Path
    html_report : pathlib.Path or None
    together : JointGuarantee or None
        With a ledger: the guarantee of its releases about the series together with this one.
    scales : dict
        ``T -> (calibrated scale, drawn scale)``, both in the query's unit (a frequency's noise is
        drawn on the count at ``T`` times the scale, rounded up; a histogram's on each bar).
    noise : dict
        The sampler's description.
    raised : float
        The factor a ledger's budget raised every drawn scale by (1.0: not raised).
    """

    calibration: SeriesCalibration
    mechanism: str
    output: Path
    report_path: Path
    scales: dict[int, tuple[float, float]]
    noise: dict[str, Any]
    html_report: Path | None = None
    together: JointGuarantee | None = None
    raised: float = 1.0


def release_series(
    request: SeriesRequest,
    output: str | Path,
    *,
    mechanism: str | None = None,
    force: bool = False,
    rng: np.random.Generator | int | None = None,
    html_report: str | Path | None = None,
    announce: Callable[[str], None] | None = None,
    ledger: str | Path | None = None,
    budget: float | None = None,
) -> SeriesRelease:
    """Release ``id, T, <query>`` per id with the noise of ``mechanism`` for the id's length
    (``count_<state>``, ``frequency_<state>``, or ``count_<state>`` for each state of a
    histogram).

    Parameters
    ----------
    request : SeriesRequest
    output : str or pathlib.Path
        A ``.csv`` or ``.parquet`` file; its report is written beside it (``.report.json``).
    mechanism : str, optional
        The calibrator whose scale is used, at every length; default and what is refused:
        :func:`release_mechanisms` (over the ``l1-rows`` set, only scales certified over it).
    force : bool
        Replace existing files.
    rng : numpy.random.Generator, int or None
        None: the secure sampler; a seed: NumPy's sampler, INSECURE (experiments only).
    html_report : str or pathlib.Path, optional
        Also write the HTML report (:func:`series_report`) there.
    announce : callable, optional
        Called once with :func:`guarantee_line` after the calibration and before anything is
        written (the command line prints it).
    ledger, budget : str or pathlib.Path, float, optional
        Record the release in this ledger (issue 42, :func:`pufferfish.ledger.record.plan_other`:
        series of one data set; a theorem that adds, or no guarantee, for several releases), entry
        and output published together; with ``budget``, every length's scale is raised by the
        smallest factor found that meets it together with the ledger's releases
        (:func:`pufferfish.markov.ledgered.plan_within_budget`), else the release is refused before
        any noise is drawn.

    Raises
    ------
    ValueError
        If the mechanism does not apply at a length, the output exists (without ``force``), is
        the input, or does not end in ``.csv``, ``.csv.gz``, ``.parquet`` or ``.pq``; if the
        series have holes (:func:`calibrate_series`, ``whole_series``).
    """
    import pyarrow as pa

    from pufferfish.tables.duckdb_engine import copy_arrow_to

    source = resolve_source(request.data, request.engine, request.csv_options)  # read once, below too
    out_path, rep_path = Path(output), report_path_for(Path(output))
    fmt = output_format(out_path)  # before any work: a .txt is not written as CSV in silence
    check_release_outputs(source, out_path, rep_path, force=force)  # inputs protected, before any work
    html_path = _html_target(html_report, force, [*source.inputs, out_path, rep_path])
    names = release_mechanisms(request, mechanism)
    check_ledger_path(ledger, [out_path, rep_path, html_path, *source.inputs])
    book = _ledger_context(ledger, budget, source)
    calibration, mechanism = _smaller(
        calibrate_series(replace(request, data=source, length=None, mechanisms=names), whole_series=True)
    )
    series = calibration.series
    book_body = None if book is None else _entry_body(calibration, mechanism, source, rng)
    book_plan, raised = None, 1.0
    if book is not None and book_body is not None:  # the scales to draw are known: checked before the noise
        book_plan, raised = plan_within_budget(
            book, book_body, calibration,
            lambda f: _drawn_scales(calibration, mechanism, secure=rng is None, factor=f)[0],
        )  # fmt: skip
    scales, count_scales = _drawn_scales(calibration, mechanism, secure=rng is None, factor=raised)
    bars = list(series.states) if request.query == "histogram" else [request.target]
    released, noise = _draw_counts(series, bars, count_scales, rng)
    if request.query == "frequency":
        columns = {f"frequency_{request.target}": released[request.target] / series.lengths}
    else:
        columns = {f"count_{b}": released[b] for b in bars}
    table = pa.table({"id": series.ids, "T": series.lengths, **columns})
    by_id = sorted(range(table.num_rows), key=lambda i: (str(series.ids[i]), i))
    table = table.take(pa.array(by_id, type=pa.int64()))  # sorted by id: the order tells the ids only
    what = {
        "count": "visits + Laplace noise",
        "frequency": "(visits + Laplace noise of T times the scale) / T",
        "histogram": "each state's visits + its own Laplace noise of the scale",
    }[request.query]
    from pufferfish.pipeline.public import SERIES_CONFIDENTIAL, confidential

    report = {
        **confidential(calibration.to_dict(), SERIES_CONFIDENTIAL),
        "mechanism": mechanism,
        "scales": {str(t): {"calibrated": s, "drawn": d} for t, (s, d) in scales.items()},
        "raised_by_budget": raised,
        "noise": noise,
        "output": str(out_path),
        "released": f"one row per id: id, T (its length), {', '.join(columns)} = {what}",
        "guarantee": guarantee_line(calibration, mechanism),
        "output_columns": _output_columns(list(columns)),
    }
    if announce is not None:
        announce(report["guarantee"])
    paths, kinds = [out_path, rep_path], ["output", "report"]
    if html_path is not None:
        paths.append(html_path)
        kinds.append("HTML report")
    with (
        recording(book_plan, book, out_path) as record,
        atomic_outputs(paths, force=force, kinds=kinds) as tmps,
    ):
        copy_arrow_to(table.to_reader(), tmps[0], fmt, gzip=out_path.name.lower().endswith(".gz"))
        entry = record(tmps[0])  # pending until the output is published
        if book is not None and book_plan is not None:
            report["ledger"] = {"file": str(book.ledger.path), "entry": entry, "budget": book.budget,
                                "together": book_plan.joint.to_dict()}  # fmt: skip
        tmps[1].write_text(json.dumps(report, indent=2, allow_nan=False) + "\n", encoding="utf-8")
        if html_path is not None:
            tmps[2].write_text(series_report(calibration, report), encoding="utf-8")
    return SeriesRelease(calibration, mechanism, out_path, rep_path, scales, noise, html_path,
                         None if book_plan is None else book_plan.joint, raised)  # fmt: skip


def _html_target(html_report: str | Path | None, force: bool, taken: list[Path]) -> Path | None:
    """The HTML report's path, checked before any work: free (or ``force``), and none of the
    input and output files ``taken``."""
    from pufferfish.pipeline.page import check_report_path

    html_path = None if html_report is None else check_report_path(html_report, force=force)
    if html_path is not None and html_path.resolve() in {p.resolve() for p in taken}:
        raise ValueError(f"report must differ from the input and the outputs, got {str(html_path)!r}")
    return html_path


def _drawn_scales(
    calibration: SeriesCalibration, mechanism: str, *, secure: bool, factor: float = 1.0
) -> tuple[dict[int, tuple[float, float]], dict[int, float]]:
    """Per length ``T``: ``(calibrated scale, drawn scale)`` in the query's unit, and the scale
    handed to the sampler for the counts, all known before any noise is drawn; with ``factor``
    (a ledger's budget, :func:`pufferfish.markov.ledgered.plan_within_budget`) every drawn scale
    is the calibrated one times it.

    The noise is drawn on the counts (integers: on every grid of the exact sampler). A
    frequency's scale is in shares of ``T``: the count gets ``T`` times it, rounded up (``C +
    Laplace(T s)``, then divided by ``T``, is ``C / T + Laplace(s)``); a histogram's bars each get
    the scale as it is. The exact sampler rounds the scale up to its grid (never down: the pure-eps
    loss is non-increasing in the scale, SPEC sec 2.1).

    Raises
    ------
    ValueError
        If the mechanism does not apply at a length.
    """
    query = calibration.request.query
    scales: dict[int, tuple[float, float]] = {}
    count_scales: dict[int, float] = {}
    for t, rows in calibration.results.items():
        (row,) = rows
        if not isinstance(row, Calibration):
            raise ValueError(
                f"mechanism {mechanism} cannot be used at T = {t}: {getattr(row, 'reason', row)}"
            )
        count_scale = row.scale * factor  # exact at factor 1.0
        if query == "frequency":
            count_scale = float(np.nextafter(count_scale * t, np.inf))
        used = exact_grid(count_scale)[2] if secure and count_scale > 0 else count_scale
        assert used >= count_scale
        count_scales[t] = count_scale
        scales[t] = (row.scale, used / t if query == "frequency" else used)
    return scales, count_scales


def _draw_counts(
    series: Any, bars: list[str], count_scales: dict[int, float], rng: Any
) -> tuple[dict[str, NDArray[np.float64]], dict[str, Any]]:
    """Each bar's visits plus Laplace noise of its length's count scale (one generator for every
    length; None: the secure sampler), and how the noise was drawn."""
    released = {b: np.empty(series.lengths.size) for b in bars}
    noise: dict[str, Any] = {}
    gen, seed = insecure_generator(rng)
    for t, count_scale in count_scales.items():
        at = series.lengths == t
        for b in bars:
            drawn = add_laplace(
                series.visits[at, series.states.index(b)].astype(np.float64), count_scale, rng=gen
            )
            released[b][at] = drawn.values
            noise = {"sampler": drawn.sampler, "secure": drawn.secure, "seed": seed}
    return released, noise


def _ledger_context(ledger: str | Path | None, budget: Any, source: Any) -> LedgerContext | None:
    """The ledger of a series release, validated before any work; a budget needs a ledger."""
    spent = check_budget(budget)
    if ledger is None:
        if spent is not None:
            raise ValueError(f"budget needs a ledger (--ledger FILE), got budget {budget!r}")
        return None
    return LedgerContext(Ledger(ledger), spent, source, checks=SERIES_CHECKS)


def _entry_body(calibration: SeriesCalibration, mechanism: str, source: Any, rng: Any) -> dict[str, Any]:
    """The ledger entry of a series release: the secret is each time step's state; the data's
    fingerprint is a hash of the series' visit counts and lengths, the chain's of its estimate."""
    series, r = calibration.series, calibration.request
    counts = hashlib.sha256(np.ascontiguousarray(series.visits).tobytes() + series.lengths.tobytes())
    chain = json.dumps(calibration.chain.describe(), sort_keys=True) + json.dumps(
        calibration.prior_set, default=str
    )
    path = source.origin or source.path
    return {
        "kind": "markov",
        "secret": "the state at each time step (markov series)",
        "pairs": [],
        "columns": [f"{r.query}_{r.target}"],
        "mechanism": mechanism,
        "epsilon": float(r.epsilon),
        "delta": 0.0,
        "criterion": "eps-PP",
        "prior_set": [str((calibration.prior_set or {}).get("kind", "none")), 0.95, None],
        "views": [],
        "composes": COMPOSES.get(mechanism),
        "insecure": rng is not None,
        "chain": hashlib.sha256(chain.encode()).hexdigest(),
        "data": {
            "description": source.description,
            "hash": counts.hexdigest(),
            "path": None if path is None else str(Path(path).resolve()),
            "rows": int(series.lengths.size),
        },
    }
