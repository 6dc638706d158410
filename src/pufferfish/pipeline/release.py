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
from typing import Any

import numpy as np

from pufferfish._checks import check_delta, check_epsilons
from pufferfish.calibration import (
    REGISTRY,
    TIME_LIMIT,
    Calibration,
    MappingCalibration,
    Mechanism,
    PrivacyCheckError,
    Skipped,
    check_time_limit,
    lookup,
)
from pufferfish.calibration.check import measure, passes
from pufferfish.calibration.mapping import check_utility
from pufferfish.calibration.search import GRID_SAFETY_STEPS, first_passing
from pufferfish.loss.density import check_noise
from pufferfish.noise.samplers import (
    check_sampler,
    check_workers,
    discretisation_delta,
    moved_centres_term,
    sampler_grid,
)
from pufferfish.pipeline.calibrate import TableCalibration, calibrate_request, columns_and_kinds, report_dict
from pufferfish.pipeline.joint_release import JointReleaseResult, ReleaseTarget, release_columns
from pufferfish.pipeline.request import (
    DEFAULT_BATCH_ROWS,
    TableRequest,
    check_batch_rows,
)
from pufferfish.priors.distributions import RELEASE_EXPONENT
from pufferfish.priors.sets import check_prior_set
from pufferfish.tables.estimate import EstimatedPriors, check_pairs
from pufferfish.tables.fit import FittedPriors, parse_prior_model
from pufferfish.tables.source import (
    CsvOptions,
    OutputExistsError,
    TableSource,
    atomic_outputs,
    check_release_outputs,
    is_parquet,
    output_format,
    report_path_for,
    resolve_source,
    write_text,
)

__all__ = ["OutputExistsError", "ReleaseResult", "release", "write_html_report"]


@dataclass(frozen=True)
class ReleaseResult:
    """What :func:`release` wrote.

    Attributes
    ----------
    output : pathlib.Path
        The released table.
    report_path : pathlib.Path
        The JSON report beside it.
    report : dict
        The report's content (:func:`report_dict`).
    calibration : TableCalibration
        Priors and every mechanism at the release's epsilon and delta.
    chosen : Calibration or MappingCalibration
        The calibration whose scale (or matrix) was used.
    noise : dict
        How the noise was drawn (:meth:`~pufferfish.noise.samplers.NoisyValues.describe` or
        :meth:`~pufferfish.noise.samplers.MappedValues.describe`: sampler, secure, granularity, seed,
        scale). The noisy values are in the output file only: the table is streamed in batches
        and never held whole.
    rows_released : int
        Rows whose public value received noise.
    rows_missing_public : int
        Rows whose public value was missing and stays missing.
    """

    output: Path
    report_path: Path
    report: dict[str, Any]
    calibration: TableCalibration
    chosen: Calibration | MappingCalibration
    noise: dict[str, Any]
    rows_released: int
    rows_missing_public: int

    @property
    def comparison(self) -> tuple[Calibration | MappingCalibration | Skipped, ...]:
        """Every mechanism at the release's epsilon and delta (inapplicable ones with the reason)."""
        return self.calibration.comparison

    @property
    def estimated(self) -> EstimatedPriors:
        """Empirical priors, mapping and row counts."""
        return self.calibration.estimated

    @property
    def fitted(self) -> FittedPriors | None:
        """Fitted priors (``prior="gaussian"|"gmm"``), else None."""
        return self.calibration.fitted


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
) -> ReleaseResult | JointReleaseResult:
    """Release ``data`` with its public column made (eps, S)-pufferfish private by additive noise
    or by a randomized mapping of its values.

    Parameters
    ----------
    data, secret, pairs : see :func:`~pufferfish.pipeline.calibrate.calibrate_table`
        The table (CSV, Parquet, DataFrame or ``"adult"``), its secret column, the pairs.
    public : str or sequence of str
        Column to release, or several (``"a,b"`` or a list: released jointly by the product
        channel, :func:`~pufferfish.pipeline.joint_release.release_columns`, which then returns a
        :class:`~pufferfish.pipeline.joint_release.JointReleaseResult`; ``order``, ``prior``,
        ``priors_from``, ``utility``, ``compare``, Gaussian noise and ``delta`` are for one
        column and refused). With additive noise a categorical column is replaced by its codes plus
        noise (see the report's ``mapping``), a numeric column by its values plus noise; with a
        mapping mechanism (:data:`~pufferfish.calibration.MAPPING_MECHANISMS`) each value is
        replaced by a value of the alphabet drawn from the checked matrix: labels stay labels.
        Missing values stay missing.
    epsilon : float
        Privacy budget, finite and > 0.
    output : str or pathlib.Path
        Output file, ``.csv``, ``.csv.gz``, ``.parquet`` or ``.pq``. The JSON report is written
        beside it (:func:`~pufferfish.tables.source.report_path_for`).
    mechanism : str, optional
        Calibrator whose scale (or matrix) is used, one of
        :data:`~pufferfish.calibration.MECHANISMS`. Default (None): the column's
        (:func:`~pufferfish.pipeline.calibrate.releases_labels`): ``optimal-mapping`` for a categorical
        column (labels in, labels out), falling back to the most accurate other mapping that
        passes its check when the LP cannot answer (the report's ``fallback`` says why);
        ``optimal`` otherwise. Only this mechanism is computed, unless ``compare``.
    order : sequence of str, optional
        Label order of a categorical public column (default: sorted labels).
    weight : str, optional
        Frequency-weight column for the prior estimate.
    rng : numpy.random.Generator, int or None
        ``None`` (default) samples securely (``sampler``). A seed or Generator switches to NumPy's
        insecure sampler, labelled as such in the report; for experiments only.
    force : bool
        Overwrite existing output and report files.
    prior, noise, delta, fit_seed : see :func:`calibrate_table`
        The adversary's prior, the noise of ``optimal``, delta in [0, 1), the mixture fit's seed.
    batch_rows : int
        Rows per streamed batch (>= 1, default :data:`DEFAULT_BATCH_ROWS`). The table is read,
        perturbed and written one batch at a time, so memory stays bounded whatever its size.
    progress : callable, optional
        ``progress(rows_done, rows_total)``, called after each batch (for a progress bar).
    workers : int, optional
        Threads of the secure sampler (default every core); each draws its own chunk of a batch
        from OS randomness (:mod:`pufferfish.noise.samplers`). Ignored with a seeded ``rng``.
    sampler : {"exact", "opendp"}
        Secure sampler of Laplace and Gaussian noise: the exact one (:mod:`pufferfish.noise.samplers`,
        at the scale rounded up to its grid), or OpenDP's; the scale it draws is checked again
        (:func:`sampler_scale`).
    engine : {"duckdb", "spark"}
        ``"duckdb"`` (default): embedded, streamed in batches. ``"spark"``: priors by Spark
        aggregations and the release by a per-partition Arrow map with one sampler per partition
        (:mod:`pufferfish.tables.spark_engine`); ``data`` may be a Spark DataFrame or a folder,
        ``output`` is written as a folder of part files, ``rng`` must be None or an int, and
        ``batch_rows``, ``progress`` and ``workers`` do not apply (Spark runs one partition per
        core).
    spark, categorical, numeric, prior_set, confidence, prior_radius, priors_from, utility : see below
        The Spark session, column kinds, the priors the guarantee holds for and their table, the
        mappings' objective (:func:`calibrate_table`).
    read, time_limit, units : see :func:`calibrate_table`
        How a CSV is read, each mechanism's seconds, several columns' units.
    compare : bool
        Also compute and report the other mechanisms of the column's set (every mechanism when
        ``mechanism`` names one outside it), as ``calibrate`` does; default False.

    Returns
    -------
    ReleaseResult or JointReleaseResult

    Raises
    ------
    ValueError
        Bad epsilon, mechanism, pair or output extension; :class:`~pufferfish.tables.source.DataError`
        for unreadable data, unknown columns or values, empty groups.
    OutputExistsError
        If the output or report file exists and ``force`` is false (nothing is written).
    TypeError
        If ``rng`` is a Generator with ``engine="spark"`` (partitions cannot share one; pass an int).
    pufferfish.calibration.PrivacyCheckError
        If a scale fails the exact privacy check (a bug).

    Notes
    -----
    Calibration: seed 001 eq (4), (26), Prop 3.2-3.3; seed 002 Lemma 1, Thm 2; SPEC sec 2.1. For
    a CSV written from a CSV every other column is copied as text, unchanged; row order is kept.
    The release and its JSON report are published together, or neither, and nothing is
    replaced without ``force`` (:func:`~pufferfish.tables.source.atomic_outputs`). Spark commits
    its output folder itself; a failed Spark job may leave a partial folder, as any Spark write.
    """
    # The edge: every argument validated once, the table resolved once, outputs checked first.
    (eps,) = check_epsilons([epsilon])
    delta = check_delta(delta)
    chosen_mechanism = None if mechanism is None else lookup(mechanism)
    noise_used = (chosen_mechanism.noise if chosen_mechanism else None) or check_noise(noise)
    check_batch_rows(batch_rows)
    n_workers = check_workers(workers)
    prior_model = parse_prior_model(prior)
    sets = check_prior_set(
        prior_set, confidence, prior_radius, prior_model=prior_model, delta=delta, noise=noise_used
    )
    pair_list = check_pairs(pairs)
    columns, kinds, unit_list = columns_and_kinds(  # several: the product channel (issue 31)
        public, units, categorical, numeric, secret=secret, weight=weight, order=order is not None,
        prior=prior != "empirical", compare=compare, priors_from=priors_from is not None,
        utility=utility is not None, noise=noise != "laplace", delta=delta != 0.0,
    )  # fmt: skip
    several = len(columns) > 1
    out_path = Path(output)
    fmt = output_format(out_path)
    rep_path = report_path_for(out_path)
    _check_sampling(engine, rng, sampler)
    source = resolve_source(data, engine, read)  # validates the engine and the reading options
    priors_source = None if priors_from is None else resolve_source(priors_from, engine, read)
    others = () if priors_source is None else (priors_source,)  # the priors' table is an input too
    check_release_outputs(source, out_path, rep_path, force=force, others=others)

    request = TableRequest(
        source, secret, columns, pair_list, (eps,), _mechanisms_to_run(chosen_mechanism, compare, several),
        weight=weight, delta=delta, noise=noise_used, categorical=kinds[0], numeric=kinds[1], prior_set=sets,
        engine=engine, spark=spark, prior=prior, prior_model=prior_model, fit_seed=fit_seed,
        order=None if order is None else tuple(order), public_kind=kinds[2], priors_source=priors_source,
        utility=None if utility is None else check_utility(utility), default_set=chosen_mechanism is None,
        point_row=compare, time_limit=check_time_limit(time_limit), units=unit_list,
    )  # fmt: skip
    if several:
        target = ReleaseTarget(out_path, rep_path, fmt, force, batch_rows, progress, n_workers, sampler)
        return release_columns(request, chosen_mechanism or REGISTRY["optimal"], target, rng)
    table = calibrate_request(request)
    picked, fallback = _pick(table.comparison, chosen_mechanism)
    inputs = {**table.inputs, "mechanism": picked.mechanism, "sampler": sampler}
    table = replace(table, inputs=inputs | ({"fallback": fallback} if fallback else {}))
    scale = sampler_scale(table, picked, rng, sampler)

    report, drawn, rows_released, rows_missing = _publish(
        source, out_path, rep_path, fmt, table=table, chosen=picked, rng=rng, force=force, engine=engine,
        spark=spark, batch_rows=batch_rows, progress=progress, workers=n_workers, sampler=sampler,
        scale=scale,
    )  # fmt: skip
    return ReleaseResult(out_path, rep_path, report, table, picked, drawn, rows_released, rows_missing)


def sampler_scale(
    table: TableCalibration, picked: Calibration | MappingCalibration, rng: Any, sampler: str
) -> float:
    """The scale handed to the sampler: the chosen one, checked again as the sampler draws it.

    Parameters
    ----------
    table : TableCalibration
        The calibration of the released column (its scenario and secret weights).
    picked : Calibration or MappingCalibration
        The chosen result; a mapping (or a scale of 0) is released as it is: returns 0.
    rng : numpy.random.Generator, int or None
        Anything but None is the insecure continuous sampler: the chosen scale is returned.
    sampler : {"exact", "opendp"}
        ``"exact"`` rounds the scale up to its grid, OpenDP's sampler draws the scale as it is
        (:func:`pufferfish.noise.samplers.sampler_grid`). Either is checked here.

    Returns
    -------
    float
        The smallest of ``scale (1 + r)``, ``r`` in :data:`GRID_SAFETY_STEPS`, whose rounded scale
        passes the check of what is released: the priors' values rounded to the sampler's grid
        ``2^k`` (:meth:`pufferfish.priors.scenario.Scenario.on_grid`; a Gaussian-mixture prior adds the
        bound :func:`pufferfish.noise.samplers.moved_centres_term` instead), with, for an (eps, delta)
        criterion, the grid's extra delta (:func:`pufferfish.noise.samplers.discretisation_delta`) added
        to the check's error bound.

    Raises
    ------
    pufferfish.calibration.PrivacyCheckError
        If none passes (the steps are far larger than that term: a bug).

    Notes
    -----
    The loss is non-increasing in the scale (SPEC sec 2.1), so rounding the scale up cannot fail a
    pure-eps check, but from a scale of ``2^11`` on the sampler's grid is coarser than the release
    grid and the values move (by at most ``2^-41`` of the scale), which the check here sees; with
    delta > 0 the discrete noise's delta may exceed the continuous noise's by the
    grid term (about 1e-12 (1 + e^eps)), so a scale calibrated to meet delta to the last digit is
    raised by a relative 2^-30 (or more) until the sum passes.
    """
    if not isinstance(picked, Calibration) or picked.scale == 0.0:
        return 0.0
    if rng is not None:
        return picked.scale
    with_delta = picked.criterion == "(eps, delta)-PP" and picked.delta > 0.0
    tried: list[str] = []
    target = picked.delta if with_delta else picked.epsilon

    continuous = table.scenario.kind == "gaussian-mixture"

    def passes_at(scale: float) -> bool:
        k, units, drawn = sampler_grid(scale, picked.noise, sampler)
        if continuous and picked.criterion == "eps-MI PP" and k > RELEASE_EXPONENT:
            raise PrivacyCheckError(
                f"{picked.mechanism}: an eps-MI check of Gaussian-mixture priors cannot account for "
                f"the sampler's grid 2^{k} at scale {drawn!r}; use discrete priors (--prior empirical)"
            )
        # what is released: the values rounded to the sampler's grid (priors.to_grid), then noise
        scenario = table.scenario if continuous else table.scenario.on_grid(k)
        chk, goal = measure(scenario, picked.criterion, picked.noise, drawn, picked.epsilon,
                            picked.delta, table.estimated.secret_weights)  # fmt: skip
        extra = discretisation_delta(picked.noise, picked.epsilon, units) if with_delta else 0.0
        if continuous:
            extra += moved_centres_term(picked.noise, picked.epsilon, with_delta, k, drawn)
        tried.append(f"{drawn!r}: {chk.value!r} + {chk.error + extra!r}")
        return passes(chk.value, chk.error + extra, goal)

    found = first_passing(picked.scale, passes_at, steps=GRID_SAFETY_STEPS)
    if found is None:
        raise PrivacyCheckError(
            f"{picked.mechanism} at the sampler's rounded scales fails its check against {target!r} ("
            + "; ".join(tried)
            + ")"
        )
    return found[0]


def _check_sampling(engine: str, rng: Any, sampler: str) -> None:
    """A known sampler, and what the Spark engine cannot do: share one Generator across
    partitions."""
    check_sampler(sampler)
    if engine == "spark" and isinstance(rng, np.random.Generator):
        raise TypeError("rng must be an int seed or None with engine 'spark', got a Generator")


#: The randomized mappings, the default release of a categorical column, in order of preference
#: after ``optimal-mapping`` when it cannot answer (ties of accuracy keep this order).
_MAPPINGS = tuple(m for m in REGISTRY.values() if m.mapping)


def _mechanisms_to_run(
    chosen: Mechanism | None, compare: bool, several: bool
) -> tuple[Mechanism, ...] | None:
    """The mechanisms to calibrate: the named one (every one with ``compare``); by default the
    additive optimum and the mappings, of which the column's kind keeps one set
    (:func:`~pufferfish.pipeline.calibrate.releases_labels`), with either engine. Several
    columns: every mechanism that applies (None) when the one named is among them, so the report
    compares them, else the one named."""
    if several:
        joint = ("l1", "kantorovich", "wasserstein-inf", "relaxed", "optimal")
        return None if chosen is None or chosen.name in joint else (chosen,)
    if chosen is not None:
        return tuple(REGISTRY.values()) if compare else (chosen,)
    return tuple(REGISTRY.values()) if compare else (REGISTRY["optimal"], *_MAPPINGS)


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
        picked = next(c for c in comparison if c.mechanism == mechanism.name)
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


def _publish(
    source: TableSource,
    out_path: Path,
    rep_path: Path,
    fmt: str,
    *,
    table: TableCalibration,
    chosen: Calibration | MappingCalibration,
    force: bool,
    engine: str,
    **engine_args: Any,
) -> tuple[dict[str, Any], dict[str, Any], int, int]:
    """Write and publish the release and its JSON report: ``(report, sampler, released, missing)``.

    With DuckDB both are written to temporary files and published together
    (:func:`~pufferfish.tables.source.atomic_outputs`), or neither is; Spark commits its output
    folder itself, and the report is published after it.
    """

    def report_for(sampler: dict[str, Any], released: int, missing: int) -> dict[str, Any]:
        checked = "the priors rounded to this grid, at the drawn scale (exact check)"
        noise = {**sampler, "checked_on": checked} if sampler.get("granularity") else sampler
        facts: dict[str, Any] = {"output": str(out_path), "chosen": chosen, "noise": noise}
        facts.update(released_with_noise=released, missing_public_left_missing=missing)
        return report_dict(table, release=facts)

    gzip = out_path.name.lower().endswith(".gz")
    common = dict(table=table, chosen=chosen, force=force, engine=engine, gzip=gzip, **engine_args)
    if engine == "spark":
        sampler, released, missing = _write_release(source, out_path, fmt, **common)
        report = report_for(sampler, released, missing)
        write_text(_json_text(report), rep_path, force=force, kind="report")
    else:
        with atomic_outputs([out_path, rep_path], force=force, kinds=["output", "report"]) as (tmp, tmp_rep):
            sampler, released, missing = _write_release(source, tmp, fmt, **common)
            report = report_for(sampler, released, missing)
            tmp_rep.write_text(_json_text(report), encoding="utf-8")
    return report, sampler, released, missing


def _json_text(report: dict[str, Any]) -> str:
    return json.dumps(report, indent=2, allow_nan=False) + "\n"  # strict JSON: no NaN or inf


def _write_release(
    source: TableSource,
    out_path: Path,
    fmt: str,
    *,
    table: TableCalibration,
    chosen: Calibration | MappingCalibration,
    rng: np.random.Generator | int | None,
    force: bool,
    engine: str,
    gzip: bool,
    spark: Any,
    batch_rows: int,
    progress: Callable[[int, int], None] | None,
    workers: int,
    sampler: str = "exact",
    scale: float = 0.0,
) -> tuple[dict[str, Any], int, int]:
    """The engine's release of the validated request: ``(sampler description, released, missing)``.

    DuckDB writes ``out_path`` (a temporary file the caller publishes); Spark writes and
    commits the output folder ``out_path`` itself.

    A CSV source (or a folder of CSV parts) is read with every column as the text written in
    it, so the other columns are copied unchanged (as strings, to a Parquet output); a Parquet
    source or a DataFrame keeps its column types.
    """
    text_copy = source.path is not None and not is_parquet(source.path)
    if engine == "spark":
        from pufferfish.tables.perturb import ReleasedColumn
        from pufferfish.tables.spark_engine import release_table

        est = table.released_table
        mapping = chosen if isinstance(chosen, MappingCalibration) else None
        codes_for = est.codes_for if est.categorical else None
        column = ReleasedColumn(
            est.public_column, est.categorical, codes_for, scale, mapping=mapping, estimated=est
        )
        return release_table(
            source,
            out_path,
            fmt,
            columns=(column,),
            noise="laplace" if isinstance(chosen, MappingCalibration) else chosen.noise,
            rng=None if rng is None else int(rng),  # type: ignore[arg-type]
            force=force,
            text_copy=text_copy,
            spark=spark,
            sampler=sampler,
        )
    from pufferfish.tables.duckdb_engine import stream_release

    return stream_release(
        source,
        out_path,
        fmt,
        gzip=gzip,
        public=table.released_table.public_column,
        estimated=table.released_table,
        scale=scale,
        noise=chosen.noise,
        rng=rng,
        text_copy=text_copy,
        mapping=chosen if isinstance(chosen, MappingCalibration) else None,
        sampler=sampler,
        batch_rows=batch_rows,
        progress=progress,
        workers=workers,
    )


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
    from pufferfish.pipeline.figures import report_figures
    from pufferfish.pipeline.report import build_report, check_report_path
    from pufferfish.tables.histograms import released_histograms

    out = check_report_path(path, force=force)
    if isinstance(result, ReleaseResult):
        table, chosen = result.calibration, result.chosen
        figures = report_figures(
            table,
            epsilon=chosen.epsilon,
            noise=chosen.noise if isinstance(chosen, Calibration) else table.noise,
            released=released_histograms(
                result.output,
                table.estimated,
                labels=isinstance(chosen, MappingCalibration) and table.estimated.categorical,
            ),
            chosen=chosen if isinstance(chosen, MappingCalibration) else None,
        )
        what = "release"
    else:
        table = result
        figures = report_figures(table, epsilon=table.epsilons[0], noise=table.noise)
        what = "calibration"
    est = table.estimated
    title = f"pufferfish {what}: {est.public_column} given {est.secret_column}, eps = {figures.epsilon:g}"
    text = build_report(payload, estimated=est, fitted=table.fitted, figures=figures, title=title)
    return write_text(text, out, force=force, kind="report")
