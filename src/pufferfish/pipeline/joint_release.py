"""The release of several public columns (issues 17, 31): one independent draw per column and
row by the product channel whose scale the joint calibration chose
(:func:`pufferfish.pipeline.joint.calibrate_joint`), the drawn channels checked jointly again,
written by DuckDB or Spark with its JSON report; and the HTML report of a joint calibration or
release. :func:`pufferfish.pipeline.release.release` validates the request and calls
:func:`release_columns` when ``public`` names several columns.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from pufferfish.calibration import Calibration, Mechanism, PrivacyCheckError, not_applicable
from pufferfish.calibration import check_pairs as check_scenario
from pufferfish.calibration.search import GRID_SAFETY_STEPS, first_passing
from pufferfish.noise.channels import ONE, RandomizedResponseChannel
from pufferfish.noise.samplers import sampler_grid
from pufferfish.pipeline.joint import calibrate_joint
from pufferfish.pipeline.joint_result import JointTableCalibration
from pufferfish.pipeline.request import TableRequest
from pufferfish.priors.distributions import RELEASE_EXPONENT
from pufferfish.priors.scenario import Scenario
from pufferfish.tables.model import label_codes
from pufferfish.tables.perturb import ReleasedColumn
from pufferfish.tables.source import atomic_outputs, is_parquet, write_text

__all__ = [
    "JointReleaseResult",
    "ReleaseTarget",
    "column_draws",
    "drawn_scales_check",
    "release_columns",
    "write_joint_report",
]


@dataclass(frozen=True, eq=False)
class JointReleaseResult:
    """A release of several columns and what it rests on.

    Attributes
    ----------
    output, report_path : pathlib.Path
        The released table and its JSON report.
    report : mapping
        The report (:meth:`JointTableCalibration.to_dict` plus a ``release`` section).
    table : JointTableCalibration
    chosen : Calibration
        The mechanism whose scale ``b`` was used (Laplace, numerically checked).
    drawn_scales : mapping of str to float or None
        The Laplace scale drawn on each numeric column (``b w_k``, rounded up to the sampler's
        grid), ``1 / log ratio`` of the randomized response drawn on a categorical one (None for
        a column of one label), checked again jointly.
    rows_released, rows_missing : int
        Rows with every column present (each got noise), and rows with a missing value in some
        column (that cell left missing, the others noised).
    """

    output: Path
    report_path: Path
    report: Mapping[str, Any]
    table: JointTableCalibration
    chosen: Calibration
    drawn_scales: Mapping[str, float | None]
    rows_released: int
    rows_missing: int


def column_draws(table: JointTableCalibration, scale: float, sampler: str | None) -> list[ReleasedColumn]:
    """How each column is drawn at the scale ``b``: numeric column ``k`` gets ``Laplace(b w_k)``
    (rounded up to the secure sampler's grid, :func:`pufferfish.noise.samplers.sampler_grid`, unless
    ``sampler`` is None: a seeded NumPy draw); a categorical column of ``m >= 2`` labels gets the
    randomized response of log ratio at most ``1 / (b w_k)`` on the dyadic grid
    (:meth:`~pufferfish.noise.channels.RandomizedResponseChannel.from_log_ratio`), its labels kept; one
    label is released as it is. :attr:`ReleasedColumn.scale` is the drawn Laplace scale, or
    ``1 / log ratio`` of the drawn response (the scale of the metric's channel it is)."""
    out = []
    for c, cat, labels, w in zip(table.columns, table.categorical, table.labels, table.units, strict=True):
        if cat:
            codes_for = partial(label_codes, known=labels, codes=range(len(labels)), column=c)
            channel = None
            drawn = math.inf
            if len(labels) >= 2 and scale > 0:
                channel = RandomizedResponseChannel.from_log_ratio(len(labels), 1.0 / (scale * w))
                drawn = 1.0 / channel.log_ratio
            elif len(labels) >= 2:
                channel = RandomizedResponseChannel(len(labels), ONE, 0)
                drawn = 0.0
            out.append(ReleasedColumn(c, True, codes_for, drawn, channel, tuple(labels)))
        else:
            b = scale * w
            drawn = b if sampler is None or b == 0.0 else sampler_grid(b, "laplace", sampler)[2]
            out.append(ReleasedColumn(c, False, None, drawn))
    return out


def drawn_scales_check(
    table: JointTableCalibration, chosen: Calibration, rng: Any, sampler: str
) -> list[ReleasedColumn]:
    """Each column's draw (:func:`column_draws`), checked jointly.

    The secure sampler draws numeric column ``k`` at ``b w_k`` rounded up to its grid and a
    categorical one by a randomized response on the dyadic grid; a seeded ``rng`` draws ``b w_k``
    exactly (and is not checked again: experiments only). The exact loss of the product channel
    at the drawn parameters (the metric with units = the drawn scales, scale 1), on the priors
    with each numeric column rounded to its sampler's grid as the release rounds it
    (:meth:`pufferfish.priors.scenario.Scenario.on_grid`; values move only for scales from ``2^11`` on, by
    at most ``2^-41`` of the scale; label codes never move), must pass eps, over the prior sets
    when there are some. Raising one column's scale is post-processing on that column
    (``Laplace(b') = Laplace(b) * (mixture)``, SPEC sec 2.1; a weaker randomized response is the
    stronger one followed by another), but moving the values is not, so a tight scale may fail
    at its grid: ``b`` is then raised by the release's ladder
    (:data:`pufferfish.calibration.search.GRID_SAFETY_STEPS`, a relative 2^-30 first) until the check
    passes. Pure eps needs no grid term: at grid points the pmf ratio is the density ratio.

    Raises
    ------
    PrivacyCheckError
        If no step of the ladder passes the check (a bug).
    """
    if rng is not None or chosen.scale == 0.0:
        return column_draws(table, chosen.scale, None)
    tried: list[str] = []
    found: list[ReleasedColumn] = []
    metric = table.scenario.metric
    assert metric is not None

    def passes_at(b: float) -> bool:
        draws = column_draws(table, b, sampler)
        units = tuple(d.scale if math.isfinite(d.scale) and d.scale > 0 else 1.0 for d in draws)
        exponents = [
            RELEASE_EXPONENT if d.categorical else sampler_grid(b * w, "laplace", sampler)[0]
            for d, w in zip(draws, table.units, strict=True)
        ]
        # what is released: each numeric column rounded to its sampler's grid (priors.to_grid)
        at = Scenario(table.scenario.pairs, table.scenario.priors, metric.with_units(units))
        chk = check_scenario(at.on_grid(exponents), "laplace", 1.0, chosen.epsilon, 0.0)
        tried.append(
            f"{dict(zip(table.columns, units, strict=True))}: loss {chk.value!r} (+ {chk.error:.3g})"
        )
        if chk.passes(chosen.epsilon):
            found[:] = draws
            return True
        return False

    if first_passing(chosen.scale, passes_at, steps=GRID_SAFETY_STEPS) is None:
        raise PrivacyCheckError(
            f"{chosen.mechanism} at the drawn scales fails the exact check against {chosen.epsilon!r}: "
            + "; ".join(tried)
        )
    return found


def release_columns(
    request: TableRequest, mechanism: Mechanism, target: ReleaseTarget, rng: Any
) -> JointReleaseResult:
    """Release ``d >= 2`` public columns jointly with the product channel (issues 17, 31), on a
    request validated at the edge (:func:`pufferfish.pipeline.release.release`).

    Every row gets one independent draw per column, with ``b`` the chosen mechanism's scale on
    the joint priors (:func:`~pufferfish.pipeline.joint.calibrate_joint`): ``Laplace(b w_k)`` on a
    numeric column, a randomized response of log ratio at most ``1 / (b w_k)`` on a categorical
    one, which comes back as its labels (:func:`column_draws`). The drawn channels are checked
    jointly again (:func:`drawn_scales_check`). Other columns reach the output as written;
    missing stays missing. DuckDB streams the table in batches; Spark maps each partition with
    its own sampler and writes a folder.

    Parameters
    ----------
    request : TableRequest
        Two or more columns, one epsilon, ``delta = 0``.
    mechanism : Mechanism
        A Laplace mechanism with a numerical check on joint priors: ``optimal``, ``relaxed``,
        ``wasserstein-inf``, ``kantorovich`` or ``l1`` (under prior sets ``optimal`` or ``l1``).
    target : ReleaseTarget
    rng : numpy.random.Generator, int or None
        ``None``: the secure samplers; a seed: NumPy's, insecure (experiments; an int with Spark).

    Returns
    -------
    JointReleaseResult

    Raises
    ------
    ValueError
        If the mechanism has no numerical check on several columns or does not apply (with the
        reason); OutputExistsError if an output exists and ``force`` is false.
    PrivacyCheckError
        If the drawn channels fail the exact check (a bug).

    Notes
    -----
    A row with a missing value in some column has its other columns released with the same
    noise; the joint priors are estimated on complete rows only, so such rows are covered by
    the guarantee only if their tuple's distribution is the estimated one (as a missing value
    is itself released).
    """
    m = mechanism
    if (m.noise != "laplace" and m.name != "optimal") or m.criterion != "(eps, delta)-PP" or m.mapping:
        raise ValueError(
            f"mechanism {m.name} has no numerical check on several columns: release with optimal, relaxed, "
            "wasserstein-inf, kantorovich or l1 (the product channel)"
        )
    table = calibrate_joint(request)
    chosen = next((c for c in table.comparison if c.mechanism == m.name), None)
    if not isinstance(chosen, Calibration):
        eps = request.epsilons[0]
        reason = getattr(chosen, "reason", None) or not_applicable(table.scenario, m, "laplace", 0.0, eps)
        raise ValueError(f"mechanism {m.name} cannot be used here: {reason}")
    columns = drawn_scales_check(table, chosen, rng, target.sampler)
    (released, missing), report = _write(request, table, chosen, columns, rng, target)
    drawn = {c.name: c.scale if math.isfinite(c.scale) else None for c in columns}
    return JointReleaseResult(target.output, target.report, report, table, chosen, drawn, released, missing)


@dataclass(frozen=True)
class ReleaseTarget:
    """Where and how a release of several columns is written, validated at the edge
    (:func:`pufferfish.pipeline.release.release`).

    Attributes
    ----------
    output, report : pathlib.Path
        The released table (a file, or Spark's folder) and its JSON report.
    fmt : {"csv", "parquet"}
    force : bool
        Replace existing outputs.
    batch_rows : int
        Rows per DuckDB batch (>= 1).
    progress : callable or None
        ``progress(rows_done, rows_total)``.
    workers : int
        Threads of the secure sampler.
    sampler : {"exact", "opendp"}
    """

    output: Path
    report: Path
    fmt: str
    force: bool
    batch_rows: int
    progress: Callable[[int, int], None] | None
    workers: int
    sampler: str


def _write(
    request: TableRequest,
    table: JointTableCalibration,
    chosen: Calibration,
    columns: Sequence[ReleasedColumn],
    rng: Any,
    target: ReleaseTarget,
) -> tuple[tuple[int, int], dict[str, Any]]:
    """Write the release and its JSON report by the request's engine: ``((released, missing),
    report)``. DuckDB streams into temporary files published together; Spark writes and
    commits its output folder itself, then the report is written."""
    source = request.source
    text_copy = source.path is not None and not is_parquet(source.path)
    if request.engine == "spark":
        from pufferfish.tables.spark_engine import release_table

        about, released, missing = release_table(
            source, target.output, target.fmt, columns=columns, noise="laplace",
            rng=None if rng is None else int(rng), force=target.force, text_copy=text_copy,
            spark=request.spark, sampler=target.sampler,
        )  # fmt: skip
        report = _release_report(
            table, chosen, columns, about, (released, missing), target.output, rng is not None
        )
        text = json.dumps(report, indent=2, allow_nan=False) + "\n"
        write_text(text, target.report, force=target.force, kind="report")
        return (released, missing), report
    from pufferfish.tables.duckdb_engine import stream_release

    outputs = [target.output, target.report]
    with atomic_outputs(outputs, force=target.force, kinds=["output", "report"]) as (tmp, tmp_rep):
        about, released, missing = stream_release(
            source, tmp, target.fmt, public=table.columns[0], estimated=None, scale=chosen.scale,
            noise="laplace", rng=rng, text_copy=text_copy, batch_rows=target.batch_rows,
            progress=target.progress, workers=target.workers,
            gzip=target.output.name.lower().endswith(".gz"), sampler=target.sampler, columns=columns,
            rows_total=table.rows_total,
        )  # fmt: skip
        report = _release_report(
            table, chosen, columns, about, (released, missing), target.output, rng is not None
        )
        tmp_rep.write_text(json.dumps(report, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    return (released, missing), report


def _release_report(
    table: JointTableCalibration,
    chosen: Calibration,
    columns: Sequence[ReleasedColumn],
    about: Mapping[str, Any],
    rows: tuple[int, int],
    out_path: Path,
    insecure: bool,
) -> dict[str, Any]:
    """The JSON report of :func:`release_columns`: the calibration and a ``release`` section."""
    report = table.to_dict()
    drawn = {c.name: c.scale if math.isfinite(c.scale) else None for c in columns}
    report["release"] = {
        "output": str(out_path),
        "mechanism": chosen.mechanism,
        "epsilon": chosen.epsilon,
        "scale": chosen.scale,
        "checked_loss": chosen.checked_loss,
        "guarantee": chosen.guarantee(),
        "column_scales": table.column_scales(chosen.scale),
        "drawn_scales": drawn,
        "column_noise": {c.name: column_noise(c) for c in columns},
        "drawn_scales_checked": chosen.scale > 0.0 and not insecure,
        "noise": dict(about),
        "insecure": insecure,
        "rows_released_with_noise": rows[0],
        "rows_with_a_missing_value": rows[1],
    }
    return report


def column_noise(column: ReleasedColumn) -> dict[str, Any]:
    """JSON-ready description of how one column was drawn: ``{"kind": "laplace", "scale"}``, or
    ``{"kind": "randomized-response", "labels", "log_ratio", "keep_probability"}``, or ``{"kind":
    "none"}`` for a column of one label."""
    if not column.categorical:
        return {"kind": "laplace", "scale": column.scale}
    if column.channel is None:
        return {"kind": "none", "labels": len(column.labels), "reason": "one label"}
    ratio = column.channel.log_ratio
    return {
        "kind": "randomized-response",
        "labels": column.channel.k,
        "log_ratio": ratio if math.isfinite(ratio) else None,
        "keep_probability": column.channel.keep_probability,
    }


def write_joint_report(
    result: JointTableCalibration | JointReleaseResult,
    path: str | Path,
    *,
    payload: dict[str, Any] | Mapping[str, Any],
    force: bool = False,
) -> Path:
    """Write the self-contained HTML report of a joint calibration or release.

    Parameters
    ----------
    result : JointTableCalibration or JointReleaseResult
        What to report; for a calibration the figures are at its first epsilon, for a release at
        the release's.
    path : str or pathlib.Path
        ``.html`` (or ``.htm``) file in an existing folder.
    payload : mapping
        :meth:`JointTableCalibration.to_dict` or the release's report, embedded in the page.
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
    from pufferfish.pipeline.figures import joint_report_figures
    from pufferfish.pipeline.joint_report import build_joint_report
    from pufferfish.pipeline.report import check_report_path
    from pufferfish.tables.source import write_text

    out = check_report_path(path, force=force)
    if isinstance(result, JointReleaseResult):
        table, eps, output, what = result.table, result.chosen.epsilon, result.output, "release"
    else:
        table, eps, output, what = result, float(result.inputs["epsilons"][0]), None, "calibration"
    figures = joint_report_figures(table, epsilon=eps, output=output)
    title = f"pufferfish {what}: ({', '.join(table.columns)}) given {table.inputs['secret']}, eps = {eps:g}"
    text = build_joint_report(dict(payload), table=table, figures=figures, title=title)
    return write_text(text, out, force=force, kind="report")
