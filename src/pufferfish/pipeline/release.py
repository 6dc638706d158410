"""Release a table: estimate, calibrate, perturb (noise or a randomized mapping), publish.

:func:`release` validates every argument at the edge, calibrates through
:func:`pufferfish.pipeline.calibrate.calibrate_table`'s steps, streams the table through the chosen
mechanism (the DuckDB or Spark engine; a secure sampler unless a seed is given) and publishes the
output and its JSON report together (:func:`~pufferfish.tables.source.atomic_outputs`).
:func:`write_html_report` draws the HTML report of a calibration or a release.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from pufferfish._checks import check_delta, check_epsilons, check_flag
from pufferfish.calibration import (
    REGISTRY,
    TIME_LIMIT,
    Calibration,
    MappingCalibration,
    Mechanism,
    Skipped,
    check_time_limit,
    lookup,
)
from pufferfish.calibration.mapping import check_utility
from pufferfish.ledger.record import LedgerContext, LedgerPlan, check_budget, check_ledger_path, recording
from pufferfish.ledger.store import Ledger
from pufferfish.loss.density import check_noise
from pufferfish.noise.samplers import check_sampler, check_workers
from pufferfish.pipeline.calibrate import calibrate_request, columns_and_kinds
from pufferfish.pipeline.draws import released_columns
from pufferfish.pipeline.ledgered import against_ledger
from pufferfish.pipeline.page import check_report_path
from pufferfish.pipeline.public import public_summary
from pufferfish.pipeline.request import (
    DEFAULT_BATCH_ROWS,
    TableRequest,
    check_batch_rows,
    check_keep,
    check_labels,
)
from pufferfish.pipeline.results import (
    ReleaseResult,
    ReleaseTarget,
    TableCalibration,
    drawn_scales,
    report_dict,
)
from pufferfish.pipeline.unchecked import RecordLoss, record_loss
from pufferfish.priors.sets import check_prior_set
from pufferfish.tables.domain import check_bounds, check_impute
from pufferfish.tables.estimate import check_pairs
from pufferfish.tables.fit import parse_prior_model
from pufferfish.tables.kept import KeptColumn
from pufferfish.tables.model import EstimatedJointPriors, refuse_omitted_cells
from pufferfish.tables.perturb import ReleasedColumn
from pufferfish.tables.source import (
    CsvOptions,
    OutputExistsError,
    TableSource,
    atomic_outputs,
    check_output_path,
    check_release_outputs,
    is_parquet,
    output_format,
    report_path_for,
    resolve_source,
    write_text,
)

__all__ = [
    "OutputExistsError",
    "ReleaseResult",
    "html_report_text",
    "release",
    "release_request",
    "write_html_report",
]


def release(
    data: Any,
    *,
    secret: str,
    public: str | Sequence[str],
    pairs: Iterable[tuple[str, str] | str],
    epsilon: float,
    output: str | Path,
    mechanism: str | None = None,
    order: Sequence[str] | None = None,
    weight: str | None = None,
    rng: np.random.Generator | int | None = None,
    force: bool = False,
    prior: str = "empirical",
    noise: str = "laplace",
    delta: float = 0.0,
    fit_seed: int = 0,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    progress: Callable[[int, int], None] | None = None,
    workers: int | None = None,
    engine: str = "duckdb",
    spark: Any = None,
    categorical: Sequence[str] = (),
    numeric: Sequence[str] = (),
    prior_set: str | None = None,
    confidence: float = 0.95,
    prior_radius: float | None = None,
    priors_from: Any = None,
    utility: str | None = None,
    sampler: str = "exact",
    compare: bool = False,
    read: CsvOptions | None = None,
    time_limit: float = TIME_LIMIT,
    units: Mapping[str, float] | Iterable[str] | None = None,
    keep_unchecked: str | Sequence[str] | None = None,
    missing: str | None = None,
    keep: str | Sequence[str] | None = None,
    labels: Sequence[str] | None = None,
    bounds: str | Sequence[float] | None = None,
    html_report: str | Path | None = None,
    ledger: str | Path | None = None,
    budget: float | None = None,
    keep_order: bool = False,
    public_report: str | Path | None = None,
    public_report_parameters: bool = False,
    impute: float | None = None,
) -> ReleaseResult:
    """Release the public column(s) of ``data`` made (eps, S)-pufferfish private by additive noise
    or a randomized mapping; the output holds them (and ``keep_unchecked``) only, never the secret.

    Parameters
    ----------
    data, secret, pairs : see :func:`~pufferfish.pipeline.calibrate.calibrate_table`
        The table (CSV, Parquet, DataFrame or ``"adult"``), its secret column, the pairs.
    public : str or sequence of str
        Column to release, or several (``"a,b"`` or a list: released jointly by the product
        channel, :func:`~pufferfish.pipeline.draws.drawn_scales_check`; ``order``, ``prior``,
        ``priors_from``, ``utility``, ``compare``, Gaussian noise and ``delta`` are for one
        column and refused). Additive noise: a categorical column's codes (report's ``mapping``)
        or a numeric column's values plus noise; a mapping (:data:`~.calibration.MAPPING_MECHANISMS`)
        draws each value from the checked matrix: labels stay labels (a missing cell one of them).
    epsilon, output : float, str or pathlib.Path
        Finite and > 0; ``.csv``, ``.csv.gz``, ``.parquet`` or ``.pq`` (the JSON report beside it).
    mechanism : str, optional
        Calibrator whose scale (or matrix) is used, one of :data:`~pufferfish.calibration.MECHANISMS`.
        Default (None): the column's (:func:`~pufferfish.pipeline.calibrate.releases_labels`):
        ``optimal-mapping`` for a categorical column (labels in, labels out), falling back to the
        most accurate other mapping that passes its check when the LP cannot answer (the report's
        ``fallback`` says why); ``optimal`` otherwise. Only this one is computed, unless ``compare``.
    order, weight : sequence of str, str, optional
        Label order of a categorical public column (default: sorted); frequency-weight column.
    rng : numpy.random.Generator, int or None
        ``None`` (default) samples securely (``sampler``). A seed or Generator switches to NumPy's
        insecure sampler, labelled as such in the report; for experiments only.
    force, prior, noise, delta, fit_seed : bool; see :func:`calibrate_table`
        Overwrite existing outputs; the prior, the noise of ``optimal``, delta in [0, 1), the seed.
    batch_rows : int
        Rows per streamed batch (>= 1, default :data:`DEFAULT_BATCH_ROWS`): bounded memory.
    progress, workers : callable, int, optional
        ``progress(rows_done, rows_total)`` after each batch; threads of the secure sampler (default
        every core), ignored with a seeded ``rng``.
    sampler : {"exact", "opendp"}
        Secure Laplace and Gaussian sampler: the exact one (:mod:`pufferfish.noise.samplers`, scale
        rounded up to its grid) or OpenDP's; the scale drawn is checked again (``sampler_scale``).
    engine : {"duckdb", "spark"}
        DuckDB (default, streamed in batches) or Spark (:mod:`pufferfish.tables.spark_engine`;
        ``data`` a DataFrame or folder, ``output`` a folder of part files, ``rng`` None or an int).
    html_report, public_report, public_report_parameters : str or pathlib.Path, optional; bool
        Also the (confidential) HTML report and a public summary (``.json``, no figure of the
        table; with ``public_report_parameters`` the fitted scale or matrix too), published with
        the output (:mod:`pufferfish.pipeline.public`).
    ledger, budget : str or pathlib.Path, float, optional
        Record the release in this ledger file (:mod:`pufferfish.ledger.record`); with ``budget``
        (nats) everything released about the secret must meet it together (see that module).
    spark, categorical, numeric, prior_set, confidence, prior_radius : see :func:`calibrate_table`
        The Spark session, column kinds, the priors the guarantee holds for.
    priors_from, utility, read, time_limit, units, missing, impute, labels, bounds : see calibrate_table
        The priors' table, the mappings' objective, CSV reading, seconds per mechanism, units, how
        a missing cell is read (``"omit"`` refused with one; under bounds imputed), the domain.
    compare, keep_order : bool
        Also report the other mechanisms (as ``calibrate`` does). Keep the rows' input order (the
        guarantee assumes it independent of the secret); default: a uniformly random one (issue 54).
    keep, keep_unchecked : str or sequence of str, optional
        Other columns written as they are: ``keep`` inside the check (released jointly, the
        identity channel), ``keep_unchecked`` NOT covered (assumed independent of the secret and
        the released columns together: :mod:`pufferfish.pipeline.unchecked`); never the secret.

    Returns
    -------
    ReleaseResult

    Raises
    ------
    ValueError
        Bad epsilon, mechanism, pair, output extension or ``keep_unchecked``; ``DataError`` for
        unreadable data, unknown columns or values, empty groups.
    OutputExistsError
        If an output or report file exists and ``force`` is false (nothing is written).
    TypeError
        If ``rng`` is a Generator with ``engine="spark"`` (partitions cannot share one).
    pufferfish.calibration.PrivacyCheckError
        If a scale fails the exact privacy check (a bug).

    Notes
    -----
    Seed 001 eq (4), (26), Prop 3.2-3.3; seed 002 Lemma 1, Thm 2; SPEC sec 2.1. Output and reports
    are published together or none is (issue 44), nothing replaced without ``force`` (a failed
    Spark job may leave a partial folder).
    """
    arguments = dict(locals())  # every argument by name: the request is built from them once
    return run_release(plan_release(arguments))


@dataclass(frozen=True)
class ReleasePlan:
    """A release validated at the edge, before any work: what :func:`release` (and
    :meth:`pufferfish.Session.release`) build from their arguments (:func:`plan_release`) and
    :func:`run_release` carries out.

    Attributes
    ----------
    request : TableRequest
        The calibration of the public column(s).
    mechanism : Mechanism or None
        The one released (None: the column's default).
    target : ReleaseTarget
        Where and how the release is written, its ledger.
    rng : numpy.random.Generator, int or None
        None: the secure samplers.
    """

    request: TableRequest
    mechanism: Mechanism | None
    target: ReleaseTarget
    rng: Any


def plan_release(arguments: Mapping[str, Any]) -> ReleasePlan:
    """Validate every argument of a release once, at the edge, and build its request.

    Parameters
    ----------
    arguments : mapping
        Every parameter of :func:`release` by name, defaults included (``dict(locals())`` there;
        :meth:`pufferfish.Session.release` binds its own to :func:`release`'s signature).

    Returns
    -------
    ReleasePlan

    Raises
    ------
    ValueError, DataError, OutputExistsError, TypeError
        As :func:`release`, before anything is read beyond the table's header or written.
    """
    a = SimpleNamespace(**arguments)
    (eps,), delta = check_epsilons([a.epsilon]), check_delta(a.delta)
    chosen_mechanism = None if a.mechanism is None else lookup(a.mechanism)
    noise_used = (chosen_mechanism.noise if chosen_mechanism else None) or check_noise(a.noise)
    batch_rows, n_workers = check_batch_rows(a.batch_rows), check_workers(a.workers)
    prior_model = parse_prior_model(a.prior)
    sets = check_prior_set(
        a.prior_set, a.confidence, a.prior_radius, prior_model=prior_model, delta=delta, noise=noise_used
    )
    pair_list = check_pairs(a.pairs)
    one_column = dict(  # the options of one column, refused for several (the product channel)
        order=a.order is not None, prior=a.prior != "empirical", compare=a.compare,
        utility=a.utility is not None, priors_from=a.priors_from is not None, noise=a.noise != "laplace",
        delta=delta != 0.0, labels=a.labels is not None,
    )  # fmt: skip
    columns, kinds, unit_list = columns_and_kinds(
        a.public, a.units, a.categorical, a.numeric, secret=a.secret, weight=a.weight, **one_column
    )
    keep_cols, kept = check_keep(
        a.keep, a.keep_unchecked, secret=a.secret, columns=columns, one_column=one_column
    )
    several = _several(columns, keep_cols, chosen_mechanism)
    if a.utility is not None and chosen_mechanism is not None and not chosen_mechanism.mapping:
        refuse_utility(a.utility, f"mechanism {chosen_mechanism.name} adds noise")
    fmt, rep_path = output_format(out_path := Path(a.output)), report_path_for(out_path)
    _check_sampling(a.engine, a.rng, a.sampler)
    source = resolve_source(a.data, a.engine, a.read)  # validates the engine and the reading options
    priors_source = None if a.priors_from is None else resolve_source(a.priors_from, a.engine, a.read)
    others = () if priors_source is None else (priors_source,)  # the priors' table is an input too
    check_release_outputs(
        source, out_path, rep_path, force=a.force, others=others, folder=a.engine == "spark"
    )
    html = None if a.html_report is None else check_report_path(a.html_report, force=a.force)
    summary = _public_target(a.public_report, a.public_report_parameters, a.force, (out_path, rep_path, html))
    book = _ledger_context(a.ledger, a.budget, source, a.engine, a.spark, (out_path, rep_path, html, *others))
    to_run, default_set = _mechanisms_to_run(chosen_mechanism, a.compare, several)
    domain = check_bounds(a.bounds)
    missing_read, impute_value = check_impute(a.missing, a.impute, domain)
    request = TableRequest(
        source, a.secret, columns, pair_list, (eps,), to_run, weight=a.weight, delta=delta, noise=noise_used,
        categorical=kinds[0], numeric=kinds[1], prior_set=sets, engine=a.engine, spark=a.spark, prior=a.prior,
        prior_model=prior_model, fit_seed=a.fit_seed, order=None if a.order is None else tuple(a.order),
        public_kind=kinds[2], priors_source=priors_source,
        utility=None if a.utility is None else check_utility(a.utility), default_set=default_set,
        point_row=a.compare, time_limit=check_time_limit(a.time_limit), units=unit_list, keep=keep_cols,
        labels=check_labels(a.labels), bounds=domain,
        missing=missing_read, impute=impute_value,
    )  # fmt: skip
    target = ReleaseTarget(out_path, rep_path, fmt, a.force, batch_rows, a.progress, n_workers, a.sampler,
                           kept, html, book, check_flag(a.keep_order, "keep_order"), summary)  # fmt: skip
    return ReleasePlan(request, chosen_mechanism, target, a.rng)


def run_release(plan: ReleasePlan) -> ReleaseResult:
    """Carry out a validated release (:func:`plan_release`): :func:`release_request`."""
    return release_request(plan.request, plan.mechanism, plan.target, plan.rng)


def _public_target(
    path: str | Path | None, parameters: Any, force: bool, others: Sequence[Path | None]
) -> tuple[Path, bool] | None:
    """The public summary's path (a ``.json`` file, not another output) and whether it holds the
    fitted parameters; None without one. Raises ValueError naming the rule."""
    parameters = check_flag(parameters, "public_report_parameters")
    if path is None:
        if parameters:
            raise ValueError(
                "public_report_parameters needs public_report (the file the summary is written to)"
            )
        return None
    out = check_output_path(path, force=force, kind="public report")
    if out.suffix.lower() != ".json":
        raise ValueError(f"public_report must be a .json file, got {str(path)!r}")
    if any(o is not None and out.resolve() == Path(o).resolve() for o in others):
        raise ValueError(f"public_report {str(path)!r} is another output of this release")
    return out, parameters


def release_request(
    request: TableRequest, mechanism: Mechanism | None, target: ReleaseTarget, rng: Any
) -> ReleaseResult:
    """Calibrate, draw, write and report a release of a request validated at the edge
    (:func:`release`), for one column or several.

    Parameters
    ----------
    request : TableRequest
        One epsilon; the mechanisms to calibrate (:func:`_mechanisms_to_run`).
    mechanism : Mechanism or None
        The one released (None: the column's default, :func:`_pick`).
    target : ReleaseTarget
        Where and how the release is written.
    rng : numpy.random.Generator, int or None
        None: the secure samplers; else NumPy's, insecure (an int with Spark).

    Returns
    -------
    ReleaseResult

    Raises
    ------
    ValueError
        If the mechanism cannot be used here (the reason); OutputExistsError if an output
        exists and ``target.force`` is false.
    PrivacyCheckError
        If what is drawn fails its exact check (a bug).
    """
    table = calibrate_request(request)
    if request.utility is not None and not any(isinstance(c, MappingCalibration) for c in table.comparison):
        refuse_utility(request.utility, f"{request.public!r} is released with additive noise")
    released_est = table.estimated if table.data is None else table.data
    cells = released_est.missing_cells
    refuse_omitted_cells(request.columns, (cells,) if isinstance(cells, int) else cells, request.missing)
    picked, fallback = _pick(table.comparison, mechanism)
    inputs = {**table.inputs, "mechanism": picked.mechanism, "sampler": target.sampler}
    table = replace(table, inputs=inputs | ({"fallback": fallback} if fallback else {}))
    written, kept = _output_plan(request, target.keep)  # before any noise is drawn or anything written
    columns = released_columns(table, picked, rng, target.sampler)
    book = None
    if target.ledger is not None:  # checked against the ledger before any noise is drawn
        others = (
            ()
            if mechanism is not None
            else tuple(c for c in table.comparison if isinstance(c, MappingCalibration) and c is not picked)
        )  # the default mapping may fall back to another one, as without a ledger (_pick)
        picked, columns, book = against_ledger(
            target.ledger, table, picked, columns, rng, target.sampler, others
        )
    drawn = drawn_scales(columns)
    kind = "laplace" if isinstance(picked, MappingCalibration) else picked.noise
    whole = record_loss(
        request, columns, kept, noise=kind, sampler=None if rng is not None else target.sampler
    )

    def page(output: Path, about: dict[str, Any], rows: int, gone: int, report: dict[str, Any]) -> str:
        """The HTML report of this release, its output read at ``output`` (a temporary file)."""
        result = ReleaseResult(output, target.report, report, table, picked, about, drawn, rows, gone, kept,
                               request.source)  # fmt: skip
        return html_report_text(result, payload=report)

    noise, released, missing, report = _write(
        request, target, table, picked, columns, rng, (written, kept, whole), page if target.html else None,
        book,
    )  # fmt: skip
    return ReleaseResult(
        target.output,
        target.report,
        report,
        table,
        picked,
        noise,
        drawn,
        released,
        missing,
        kept,
        request.source,
    )


def _output_plan(request: TableRequest, keep: Sequence[str]) -> tuple[list[str], tuple[KeptColumn, ...]]:
    """The columns written (in the table's order) and the measured loss of each column kept in
    clear, by the request's engine."""
    how: dict[str, Any] = dict(
        secret=request.secret, pairs=[(str(a), str(b)) for a, b in request.pairs],
        released=(*request.columns, *request.keep), keep=keep, weight=request.weight,
    )  # fmt: skip
    if request.engine == "spark":
        from pufferfish.tables import spark_engine

        written, found = spark_engine.written_and_kept(request.source, **how, spark=request.spark)
    else:
        from pufferfish.tables import duckdb_engine

        written, found = duckdb_engine.written_and_kept(request.source, **how)
    return written, tuple(found)


def refuse_utility(utility: str, why: str) -> None:
    """A ValueError: ``utility`` is the objective of the randomized mappings, and ``why`` none is
    released (it would change nothing: silently ignored before)."""
    raise ValueError(
        f"utility is the objective of the randomized mappings (optimal-mapping), and {why}, which it does "
        f"not change, got utility {utility!r}: drop --utility, or give --mechanism optimal-mapping"
    )


def _several(columns: Sequence[str], keep: Sequence[str], chosen: Mechanism | None) -> bool:
    """Whether the release is of several columns (kept ones included), where only the mechanisms
    of :data:`JOINT_RELEASE` have a numerical check (a ValueError names the others); with kept
    columns only ``optimal`` (the others move mass along every column)."""
    several = len(columns) + len(keep) > 1
    if keep and chosen is not None and chosen.name != "optimal":
        raise ValueError(
            f"keep releases {', '.join(map(repr, keep))} as written, jointly with the public column(s): only "
            f"the optimal search checks a channel that leaves a column without noise, got mechanism "
            f"{chosen.name}: give --mechanism optimal (or leave it out), or drop --keep"
        )
    if several and chosen is not None and chosen.name not in JOINT_RELEASE:
        raise ValueError(
            f"mechanism {chosen.name} has no numerical check on several columns: release with "
            f"{', '.join(JOINT_RELEASE)} (the product channel)"
        )
    return several


def _ledger_context(
    ledger: str | Path | None, budget: Any, source: Any, engine: str, spark: Any, taken: Sequence[Any] = ()
) -> LedgerContext | None:
    """The ledger of a release, validated at the edge (a file that is not a ledger, or one of the
    release's outputs and inputs ``taken``, is refused before anything is read or written); a
    budget needs a ledger."""
    files = [p for t in taken for p in (t.inputs if isinstance(t, TableSource) else [t])]
    check_ledger_path(ledger, [*files, *source.inputs])
    spent = check_budget(budget)
    if ledger is None:
        if spent is not None:
            raise ValueError(
                f"budget needs a ledger (--ledger FILE) to count what was released, got budget {budget!r}"
            )
        return None
    if engine == "spark":
        raise ValueError(
            "ledger is not available with engine 'spark' in this version: release with engine 'duckdb'"
        )
    return LedgerContext(Ledger(ledger), spent, source, engine, spark)


def _check_sampling(engine: str, rng: Any, sampler: str) -> None:
    """A known sampler, and what the Spark engine cannot do: share one Generator across
    partitions."""
    check_sampler(sampler)
    if engine == "spark" and isinstance(rng, np.random.Generator):
        raise TypeError("rng must be an int seed or None with engine 'spark', got a Generator")


#: The randomized mappings, the default release of a categorical column, in order of preference
#: after ``optimal-mapping`` when it cannot answer (ties of accuracy keep this order).
_MAPPINGS = tuple(m for m in REGISTRY.values() if m.mapping)


#: The mechanisms a release of several columns can use: Laplace, numerically checked on the
#: joint alphabet (the product channel).
JOINT_RELEASE = ("optimal", "relaxed", "wasserstein-inf", "kantorovich", "l1")


def _mechanisms_to_run(
    chosen: Mechanism | None, compare: bool, several: bool
) -> tuple[tuple[Mechanism, ...], bool]:
    """The mechanisms to calibrate and whether they are the default set
    (:attr:`~pufferfish.pipeline.request.TableRequest.default_set`): the named one (every one
    with ``compare``); by default the additive optimum and the mappings, of which the column's
    kind keeps one set (:func:`~pufferfish.pipeline.calibrate.releases_labels`), with either
    engine. Several columns: every mechanism that applies to joint priors, so the report
    compares them (the one named is among them: :data:`JOINT_RELEASE`)."""
    every = tuple(REGISTRY.values())
    if several:
        return every, True
    if chosen is not None:
        return (every if compare else (chosen,)), False
    return (every if compare else (REGISTRY["optimal"], *_MAPPINGS)), True


def _pick(
    comparison: Sequence[Calibration | MappingCalibration | Skipped], mechanism: Mechanism | None
) -> tuple[Calibration | MappingCalibration, str | None]:
    """The result released, and why it is not the one asked for (None when it is).

    A named mechanism is used or refused. The default is the first of ``optimal`` (additive set)
    or ``optimal-mapping`` (mapping set) in the comparison; when ``optimal-mapping`` could not
    answer (too many labels for its LP, its time limit), the mapping of highest expected accuracy
    among those that passed their exact check, with the reason.
    """
    if mechanism is not None:
        picked = next((c for c in comparison if c.mechanism == mechanism.name), None)
        if picked is None:  # not run: it does not apply to these priors
            raise ValueError(
                f"mechanism {mechanism.name} cannot be used here: it does not apply to these priors"
            )
        if isinstance(picked, Skipped):
            raise ValueError(f"mechanism {mechanism.name} cannot be used here: {picked.reason}")
        return picked, None
    names = [c.mechanism for c in comparison]
    first = "optimal-mapping" if "optimal-mapping" in names else "optimal"
    picked = next(c for c in comparison if c.mechanism == first)
    if not isinstance(picked, Skipped):
        return picked, None
    passed = [c for c in comparison if isinstance(c, MappingCalibration)]
    if not passed:
        raise ValueError(f"mechanism {first} cannot be used here: {picked.reason}")
    best = max(passed, key=lambda c: c.expected_accuracy)  # max keeps the first of equal ones
    return best, f"{best.mechanism} used: {first} {picked.reason}"


def _write(
    request: TableRequest,
    target: ReleaseTarget,
    table: TableCalibration,
    chosen: Calibration | MappingCalibration,
    columns: Sequence[ReleasedColumn],
    rng: Any,
    plan: tuple[Sequence[str], Sequence[KeptColumn], RecordLoss | None] = ((), (), None),
    page: Callable[[Path, dict[str, Any], int, int, dict[str, Any]], str] | None = None,
    book: LedgerPlan | None = None,
) -> tuple[dict[str, Any], int, int, dict[str, Any]]:
    """Write and publish the release, its JSON report and (with ``page``) its HTML report by the
    request's engine: ``(how the noise was drawn, rows released, rows with a missing value, report)``.

    DuckDB streams the table in batches into temporary files published together with the reports
    (:func:`~pufferfish.tables.source.atomic_outputs`; the HTML page reads the temporary output),
    or none is; Spark writes and commits its output folder itself (one sampler per partition),
    then both reports are published together. A CSV
    source (or a folder of CSV parts) is read with every column as the text written in it, so
    the other columns are copied unchanged (as strings, to a Parquet output); a Parquet source
    or a DataFrame keeps its column types.
    """
    source = request.source
    text_copy = source.path is not None and not is_parquet(source.path)
    noise = "laplace" if isinstance(chosen, MappingCalibration) else chosen.noise

    def report_for(about: dict[str, Any], released: int, missing: int) -> dict[str, Any]:
        if about.get("granularity"):  # one column's sampler (several: per column, no such key)
            about = {
                **about,
                "checked_on": "the priors rounded to this grid, at the drawn scale (exact check)",
            }
        facts = {"output": str(target.output), "chosen": chosen, "noise": about, "released": released,
                 "missing": missing, "columns": columns, "insecure": rng is not None, "written": plan[0],
                 "kept": plan[1], "record_loss": plan[2], "secret": request.secret,
                 "layout": source.layout_changes(),
                 "shuffled": not target.keep_order}  # fmt: skip
        out = report_dict(table, release=facts)
        if book is not None:
            out["ledger"] = {"file": str(book.ledger.path), "entry": entry[0], "budget": book.budget,
                             "together": book.joint.to_dict()}  # fmt: skip
        return out

    entry: list[int | None] = [None]

    if request.engine == "spark":
        from pufferfish.tables.spark_engine import release_table

        about, released, missing = release_table(
            source, target.output, target.fmt, columns=columns, noise=noise,
            rng=None if rng is None else int(rng), force=target.force, text_copy=text_copy,
            spark=request.spark, sampler=target.sampler, written=plan[0], shuffle=not target.keep_order,
        )  # fmt: skip
        report = report_for(about, released, missing)
        reports = [target.report, *([target.html] if target.html and page else [])]
        reports += [target.public[0]] if target.public else []
        with atomic_outputs(reports, force=target.force, kinds=["report"] * len(reports)) as tmps:
            tmps[0].write_text(_json_text(report), encoding="utf-8")
            if page is not None and target.html:
                tmps[1].write_text(page(target.output, about, released, missing, report), encoding="utf-8")
            if target.public:
                tmps[-1].write_text(_json_text(public_summary(report, parameters=target.public[1])), "utf-8")
        return about, released, missing, report
    from pufferfish.tables.duckdb_engine import stream_release

    outputs = [target.output, target.report, *([target.html] if target.html and page else [])]
    outputs += [target.public[0]] if target.public else []
    kinds = ["output", *["report"] * (len(outputs) - 1)]
    with (
        recording(book, target.ledger, target.output) as record,
        atomic_outputs(outputs, force=target.force, kinds=kinds) as tmps,
    ):
        tmp, tmp_rep = tmps[0], tmps[1]
        about, released, missing = stream_release(
            source, tmp, target.fmt, columns=columns, rows_total=table.released_table.rows_total,
            noise=noise, rng=rng, text_copy=text_copy, batch_rows=target.batch_rows,
            progress=target.progress, workers=target.workers, sampler=target.sampler, written=plan[0],
            gzip=target.output.name.lower().endswith(".gz"), shuffle=not target.keep_order,
        )  # fmt: skip
        entry[0] = record(tmp)  # the ledger's entry, pending until the output is published
        report = report_for(about, released, missing)
        tmp_rep.write_text(_json_text(report), encoding="utf-8")
        if page is not None and target.html:  # the page reads the output before it is published
            tmps[2].write_text(page(tmp, about, released, missing, report), encoding="utf-8")
        if target.public:  # what may be published beside the output (issue 54)
            tmps[-1].write_text(_json_text(public_summary(report, parameters=target.public[1])), "utf-8")
    return about, released, missing, report


def _json_text(report: dict[str, Any]) -> str:
    return json.dumps(report, indent=2, allow_nan=False) + "\n"  # strict JSON: no NaN or inf


def write_html_report(
    result: TableCalibration | ReleaseResult,
    path: str | Path,
    *,
    payload: dict[str, Any],
    force: bool = False,
) -> Path:
    """Write the self-contained HTML report of a calibration or a release.

    Parameters
    ----------
    result : TableCalibration or ReleaseResult
        What to report; for a calibration the figures are at its first epsilon.
    path : str or pathlib.Path
        ``.html`` (or ``.htm``) file in an existing folder.
    payload : dict
        The JSON report (:func:`report_dict`), embedded in the page; its numbers are the ones shown.
    force : bool
        Replace an existing file.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    ValueError
        If ``path`` is not ``.html``/``.htm`` or its folder does not exist.
    OutputExistsError
        If ``path`` exists and ``force`` is false.
    """
    out = check_report_path(path, force=force)
    return write_text(html_report_text(result, payload=payload), out, force=force, kind="report")


def html_report_text(result: TableCalibration | ReleaseResult, *, payload: dict[str, Any]) -> str:
    """The self-contained HTML report of a calibration or a release (:func:`write_html_report`),
    as text; a release's figures read its output at ``result.output``."""
    from pufferfish.pipeline.figures import joint_report_figures, report_figures
    from pufferfish.pipeline.report import build_report
    from pufferfish.tables.histograms import released_histograms

    released = result if isinstance(result, ReleaseResult) else None
    table = result.calibration if isinstance(result, ReleaseResult) else result
    what = "calibration" if released is None else "release"
    eps = table.epsilons[0] if released is None else released.chosen.epsilon
    est = table.estimated
    figures: Any
    if isinstance(est, EstimatedJointPriors):  # several columns: joint priors and the product channel
        title = f"pufferfish {what}: ({', '.join(table.columns)}) given {est.secret_column}, eps = {eps:g}"
        figures = joint_report_figures(
            table, epsilon=eps, output=None if released is None else released.output,
            source=None if released is None else released.table_source,
        )  # fmt: skip
    else:
        title = f"pufferfish {what}: {est.public_column} given {est.secret_column}, eps = {eps:g}"
        if released is not None:
            chosen = released.chosen
            mapped = isinstance(chosen, MappingCalibration)
            figures = report_figures(
                table,
                epsilon=eps,
                noise=chosen.noise if isinstance(chosen, Calibration) else table.noise,
                released=released_histograms(
                    released.output, est, released.table_source, labels=mapped and est.categorical
                ),
                chosen=chosen if isinstance(chosen, MappingCalibration) else None,
            )
        else:
            figures = report_figures(table, epsilon=eps, noise=table.noise)
    return build_report(payload, table=table, figures=figures, title=title)
