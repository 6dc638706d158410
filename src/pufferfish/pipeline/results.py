"""What the one path of a table returns, for one public column or several (issue 31): a
calibration (:class:`TableCalibration`), a release (:class:`ReleaseResult`) and their JSON report
(:func:`report_dict`). The calibration (:mod:`pufferfish.pipeline.calibrate`), the release
(:mod:`pufferfish.pipeline.release`), the figures and the HTML report read them; none imports the
others back.

One column is the case ``d = 1``: its estimate is an
:class:`~pufferfish.tables.model.EstimatedPriors` (a mapping of labels to codes, fitted priors,
DKW bands), several columns' an :class:`~pufferfish.tables.model.EstimatedJointPriors` (the
product metric, L1 balls on the joint alphabet); the rest (columns, units, kinds, labels, row
counts, the prior sets, every mechanism's checked calibration) is read the same way.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np

from pufferfish.calibration import Calibration, MappingCalibration, Skipped, Utility
from pufferfish.pipeline.public import confidential
from pufferfish.priors.joint import MISSING_NUMBER, JointPrior
from pufferfish.priors.scenario import Scenario
from pufferfish.tables.fit import FittedPriors
from pufferfish.tables.kept import ASSUMED, KeptColumn
from pufferfish.tables.missing import MissingAtom
from pufferfish.tables.model import EstimatedJointPriors, EstimatedPriors, label_json
from pufferfish.tables.perturb import ReleasedColumn, order_text

__all__ = [
    "CHANNEL_TEXT",
    "ReleaseResult",
    "ReleaseTarget",
    "TableCalibration",
    "column_noise",
    "drawn_scales",
    "report_dict",
]

#: How the product channel of several columns treats each kind of column, in words (the CLI and
#: the report).
CHANNEL_TEXT = (
    "scale b adds Laplace(b w_k) to a numeric column and draws a categorical column by a randomized "
    "response of log ratio at most 1 / (b w_k), which keeps its labels"
)


@dataclass(frozen=True)
class TableCalibration:
    """Priors estimated (and fitted) from a table's ``d >= 1`` public columns, and every mechanism
    calibrated on them.

    Attributes
    ----------
    inputs : dict
        The validated arguments, as they go into the report (JSON types).
    estimated : EstimatedPriors or EstimatedJointPriors
        The empirical priors of one column (its mapping, support and groups), or the joint
        priors of several (their units, kinds and labels), with the row counts.
    fitted : FittedPriors or None
        One column: Gaussian or Gaussian-mixture priors (``prior="gaussian"|"gmm"``), else None.
    comparison : tuple of Calibration, MappingCalibration or Skipped
        Every mechanism asked for at every epsilon (ordered by epsilon, then mechanism); those that
        do not apply, or fail their exact check, as :class:`~pufferfish.calibration.Skipped`.
        One column: each carries its expected accuracy and absolute error on the released rows.
    epsilons : tuple of float
        The budgets, each finite and > 0.
    delta : float
        Target delta in [0, 1).
    noise : {"laplace", "gaussian"}
        Noise of the ``optimal`` calibrator (the theorems fix their own; several columns: Laplace).
    data : EstimatedPriors or None
        One column with ``priors_from``: the estimate of the table to release (its rows and
        codes; the priors are ``estimated``, from the other table). Else None.
    utility : Utility or None
        One column: the alphabet and the distribution ``mu`` of the released rows behind every
        row's expected accuracy and absolute error (and the objective of ``optimal-mapping``);
        None for a column with one value, and for several columns.
    missing_atom : MissingAtom or None
        One numeric column with missing cells: their rates, and the split of each budget
        (``epsilons`` are then the present values' ``eps'``, the requested ones in ``inputs``;
        :mod:`pufferfish.tables.missing`). Else None.
    domain_margins : tuple of float
        A numeric column with declared bounds under a prior set: each budget's margin ``2
        delta / b`` (``2 delta / (b w)`` among several columns) taken from it for the interval
        (:mod:`pufferfish.tables.domain`, :mod:`pufferfish.priors.bands`); empty else.
    """

    inputs: dict[str, Any]
    estimated: EstimatedPriors | EstimatedJointPriors
    fitted: FittedPriors | None
    comparison: tuple[Calibration | MappingCalibration | Skipped, ...]
    epsilons: tuple[float, ...]
    delta: float
    noise: str
    data: EstimatedPriors | None = None
    utility: Utility | None = None
    missing_atom: MissingAtom | None = None
    domain_margins: tuple[float, ...] = ()

    @property
    def columns(self) -> tuple[str, ...]:
        """The public columns, ``d >= 1`` of them."""
        est = self.estimated
        return est.columns if isinstance(est, EstimatedJointPriors) else (est.public_column,)

    @property
    def units(self) -> tuple[float, ...]:
        """``w_k`` of each column: the scale ``b`` adds ``Laplace(b w_k)`` to column ``k`` (one
        column: 1, the scale is in the column's own units or codes)."""
        est = self.estimated
        return est.units if isinstance(est, EstimatedJointPriors) else (1.0,)

    @property
    def categorical(self) -> tuple[bool, ...]:
        """Per column: read as labels (coded) or as numbers."""
        est = self.estimated
        return est.categorical if isinstance(est, EstimatedJointPriors) else (est.categorical,)

    @property
    def labels(self) -> tuple[list[str], ...]:
        """Per column the labels in code order (empty for a numeric column)."""
        est = self.estimated
        if isinstance(est, EstimatedJointPriors):
            return est.labels
        return ([label for label, _ in est.mapping],)

    @property
    def rows_total(self) -> int:
        """Rows of the table."""
        return self.estimated.rows_total

    @property
    def rows_dropped(self) -> int:
        """Rows left out of the priors (a missing secret, public value or weight)."""
        return self.estimated.rows_dropped

    @property
    def released_table(self) -> EstimatedPriors | EstimatedJointPriors:
        """The estimate of the table a release writes: :attr:`data`, else :attr:`estimated`."""
        return self.data if self.data is not None else self.estimated

    def domain(self) -> dict[str, Any]:
        """One column: the domain the prior sets live on, in one line (issue 41): the values seen in
        the table and the declared labels; a numeric column's bounds are declared or taken from the
        data (a value never seen lies outside every set). Several columns: the tuples' alphabet.
        Without a prior set the text says the guarantee is for the point estimate."""
        out = self._domain()
        if self.prior_set()["kind"] == "none":
            out["text"] += "; no prior set: the guarantee is for the point estimate"
        return out

    def _domain(self) -> dict[str, Any]:
        est = self.estimated
        if isinstance(est, EstimatedJointPriors):
            return self._joint_domain(est)
        declared = list(self.inputs.get("labels") or [])
        if est.categorical:
            text = f"the prior sets live on the column's {len(est.mapping)} labels: those seen in the table"
            text += (
                f" and the declared {declared}"
                if declared
                else " (no --labels: a label never seen is outside)"
            )
            return {"labels": len(est.mapping), "declared": declared, "text": text}
        lo, hi = float(est.support[0]), float(est.support[-1])
        if est.bounds is not None:  # declared: the sets hold priors anywhere in [lo, hi]
            margins = ", ".join(f"{m:.3g}" for m in self.domain_margins)
            return {
                "values": int(est.support.size),
                "bounds": list(est.bounds),
                "bounds_from": "declared",
                "clamped_rows": est.clamped,
                "margins": list(self.domain_margins),
                "text": (
                    f"the prior sets hold priors with mass anywhere in the declared bounds [{lo:.6g}, "
                    f"{hi:.6g}] ({est.clamped} rows clamped into them; checked on a grid of "
                    f"{est.support.size} points, plus the margin 2 delta / b = {margins} of epsilon)"
                    if margins
                    else f"declared bounds [{lo:.6g}, {hi:.6g}] ({est.clamped} rows clamped into them)"
                ),
            }
        return {
            "values": int(est.support.size),
            "bounds": [lo, hi],
            "bounds_from": "data",
            "text": (
                f"the prior sets live on the {est.support.size} values seen in the table, bounds "
                f"[{lo:.6g}, {hi:.6g}] taken from the data (no declared bounds: a value never seen is "
                "outside every set)"
            ),
        }

    def _joint_domain(self, est: EstimatedJointPriors) -> dict[str, Any]:
        column = est.bounded_column
        if column is None:
            return {"text": "the joint prior sets live on the tuples seen in the table (no declared domain)"}
        lo, hi = est.bounds or (0.0, 0.0)
        name = est.columns[column]
        tuples = math.prod(len(labs) for labs, cat in zip(est.labels, est.categorical, strict=True) if cat)
        margins = ", ".join(f"{m:.3g}" for m in self.domain_margins)
        text = f"declared bounds [{lo:.6g}, {hi:.6g}] of {name!r} ({est.clamped} rows clamped into them)"
        if margins:
            text = (
                f"the prior sets (DKW bands of the joint CDF in lexicographic order) hold priors with mass "
                f"on every one of the {tuples} label tuples and anywhere in the declared bounds "
                f"[{lo:.6g}, {hi:.6g}] of {name!r} ({est.clamped} rows clamped into them; checked on a "
                f"grid, plus the margin 2 delta / (b w) = {margins} of epsilon)"
            )
        return {
            "bounds": [lo, hi],
            "bounds_from": "declared",
            "bounded_column": name,
            "label_tuples": tuples,
            "clamped_rows": est.clamped,
            "margins": list(self.domain_margins),
            "text": text,
        }

    @property
    def scenario(self) -> Scenario:
        """The priors the scales are calibrated for (fitted if any, else empirical)."""
        return self.estimated.scenario if self.fitted is None else self.fitted.scenario

    @property
    def prior_kind(self) -> str:
        """``"empirical"`` (``"empirical joint"`` for several columns), ``"fitted Gaussian"`` or
        ``"fitted GMM"``: whose prior the guarantee is for."""
        if self.fitted is None:
            return "empirical" if len(self.columns) == 1 else "empirical joint"
        return "fitted Gaussian" if self.fitted.model == "gaussian" else "fitted GMM"

    def at(self, epsilon: float) -> tuple[Calibration | MappingCalibration | Skipped, ...]:
        """The comparison rows at one epsilon."""
        return tuple(c for c in self.comparison if c.epsilon == epsilon)

    def priors(self) -> dict[str, Any]:
        """The prior of each secret value of the pairs (a ``DiscretePrior`` of one column, a
        ``JointPrior`` of several; the estimate, without its set)."""
        return dict(self.estimated.scenario.priors[0].conditionals)

    def drawn_priors(self) -> tuple[dict[str, Any], dict[str, float]]:
        """:meth:`priors` for figures, and where each numeric column's missing atom is drawn: at its
        largest present value plus its unit (a missing number has no place on the axis; the
        checks use the atom itself, :data:`~pufferfish.priors.joint.MISSING_NUMBER`)."""
        priors = self.priors()
        est = self.estimated
        if not isinstance(est, EstimatedJointPriors) or not any(est.missing_atoms):
            return priors, {}
        support = np.concatenate([p.support for p in priors.values()])
        at = {}
        for k, atom in enumerate(est.missing_atoms):
            if atom:
                present = support[support[:, k] != MISSING_NUMBER, k]
                at[est.columns[k]] = (float(present.max()) if present.size else 0.0) + est.units[k]
        out = {}
        for s, p in priors.items():
            moved = p.support.copy()
            for k, name in ((k, c) for k, c in enumerate(est.columns) if c in at):
                moved[moved[:, k] == MISSING_NUMBER, k] = at[name]
            out[s] = JointPrior(moved, p.pmf)
        return out, at

    def column_scales(self, scale: float) -> dict[str, float]:
        """The scale of each column's channel, ``scale w_k`` (a categorical column's randomized
        response has log ratio at most ``1 / (scale w_k)``)."""
        return {c: scale * w for c, w in zip(self.columns, self.units, strict=True)}

    def prior_set(self) -> dict[str, Any]:
        """The prior sets' summary (:func:`pufferfish.priors.sets.set_summary`): kind, confidence,
        radius per secret (several columns: what was requested and the alphabet's size); kind
        ``none`` for the point estimate."""
        return self.estimated.scenario.priors[0].set_summary()

    def to_dict(self) -> dict[str, Any]:
        """The JSON report of this calibration (:func:`report_dict`)."""
        return report_dict(self)


@dataclass(frozen=True)
class ReleaseTarget:
    """Where and how a release is written, validated at the edge
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
    keep : tuple of str
        The other columns written in clear, outside the check (``keep_unchecked``); every other
        column is left out of the output.
    keep_order : bool
        Write the rows in the input order (the guarantee then assumes it independent of the
        secret); default False: a uniformly random order (issue 54).
    public : (pathlib.Path, bool) or None
        The public summary's file and whether it holds the fitted parameters
        (:func:`pufferfish.pipeline.public.public_summary`).
    html : pathlib.Path or None
        The HTML report, published with the output and the JSON report (all or none).
    ledger : LedgerContext or None
        The ledger the release is recorded in (:mod:`pufferfish.ledger.record`), with its budget.
    """

    output: Path
    report: Path
    fmt: str
    force: bool
    batch_rows: int
    progress: Callable[[int, int], None] | None
    workers: int
    sampler: str
    keep: tuple[str, ...] = ()
    html: Path | None = None
    ledger: Any = None
    keep_order: bool = False
    public: tuple[Path, bool] | None = None


@dataclass(frozen=True)
class ReleaseResult:
    """What :func:`pufferfish.pipeline.release.release` wrote, for one column or several.

    Attributes
    ----------
    output : pathlib.Path
        The released table (Spark: a folder of part files).
    report_path : pathlib.Path
        The JSON report beside it.
    report : dict
        The report's content (:func:`report_dict`).
    calibration : TableCalibration
        Priors and every mechanism computed at the release's epsilon and delta.
    chosen : Calibration or MappingCalibration
        The calibration whose scale (or matrix) was used.
    noise : dict
        How the noise was drawn (one column: sampler, secure, granularity, seed, scale; several:
        ``{"columns": {column: ...}}``). The noisy values are in the output only: the table is
        streamed in batches and never held whole.
    drawn_scales : mapping of str to float or None
        Per column the scale drawn: the Laplace scale (or Gaussian sigma) rounded up to the
        sampler's grid, ``1 / log ratio`` of a randomized response (several columns); None for
        a mapping or a column of one label.
    rows_released : int
        Rows whose public values were released with noise (every column present).
    rows_missing : int
        Rows written with a missing value: a numeric column's missing cells, inside the check (one
        column: :mod:`pufferfish.tables.missing`; several: each numeric column's missing atom,
        :attr:`pufferfish.priors.joint.Metric.missing`, the row's other columns released as
        drawn); a categorical missing cell is a label, released as any.
    kept : tuple of KeptColumn
        The columns written in clear outside the check (``keep_unchecked``), each with its
        measured loss; the output holds the released columns and these, nothing else.
    table_source : TableSource or None
        The table released (the HTML report matches its secret with the output row by row).
    """

    output: Path
    report_path: Path
    report: dict[str, Any]
    calibration: TableCalibration
    chosen: Calibration | MappingCalibration
    noise: dict[str, Any]
    drawn_scales: Mapping[str, float | None]
    rows_released: int
    rows_missing: int
    kept: tuple[KeptColumn, ...] = ()
    table_source: Any = None

    @property
    def comparison(self) -> tuple[Calibration | MappingCalibration | Skipped, ...]:
        """Every mechanism at the release's epsilon and delta (inapplicable ones with the reason)."""
        return self.calibration.comparison

    @property
    def estimated(self) -> EstimatedPriors | EstimatedJointPriors:
        """The estimated priors and row counts."""
        return self.calibration.estimated

    @property
    def fitted(self) -> FittedPriors | None:
        """Fitted priors (``prior="gaussian"|"gmm"``), else None."""
        return self.calibration.fitted


def drawn_scales(columns: Sequence[ReleasedColumn]) -> dict[str, float | None]:
    """Each released column's drawn scale (:attr:`ReleaseResult.drawn_scales`): the Laplace scale
    or Gaussian sigma as drawn, ``1 / log ratio`` of a randomized response; None for a mapping or
    a column of one label (infinite)."""
    return {c.name: None if c.mapping is not None or not math.isfinite(c.scale) else c.scale for c in columns}


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


def report_dict(table: TableCalibration, *, release: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """:func:`_report_dict`, marked confidential (:func:`pufferfish.pipeline.public.confidential`):
    it holds figures of the table (issue 54)."""
    return confidential(_report_dict(table, release=release))


def _report_dict(table: TableCalibration, *, release: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The JSON report of a calibration (``pufferfish calibrate --json``) or of a release, for one
    column or several.

    One builder for every case: the tool, the inputs, the priors and every mechanism's
    calibration with its check come from ``table``; a release adds what was written.

    Parameters
    ----------
    table : TableCalibration
        From :func:`~pufferfish.pipeline.calibrate.calibrate_table` (or the release's own).
    release : mapping, optional
        For a release: ``output`` (str), ``chosen`` (Calibration or MappingCalibration),
        ``noise`` (the sampler's description), ``released`` and ``missing`` (int) and
        ``columns`` (the :class:`~pufferfish.tables.perturb.ReleasedColumn` drawn) and
        ``insecure`` (a seeded draw, bool).

    Returns
    -------
    dict
        JSON-ready (no NaN). For any number of columns: ``tool``, ``inputs``, ``columns``,
        ``units``, ``prior_set`` (:meth:`TableCalibration.prior_set`) and one row per mechanism
        with ``columns``, ``units`` and (additive noise) ``column_scales``. One column: a
        calibration also has the keys of
        :meth:`~pufferfish.tables.model.EstimatedPriors.to_dict` (and of
        :meth:`~pufferfish.tables.fit.FittedPriors.to_dict`), ``tool``, ``inputs``, ``delta``,
        ``noise`` (the noise name) and ``results``; a release has ``tool``, ``created``,
        ``inputs``, ``output``, ``public_column_released_as``, ``mapping``, ``priors``, ``rows``,
        ``mechanisms``, ``chosen``, ``noise`` (how it was drawn), ``guarantee`` and, with fitted
        priors, ``fitted_priors`` and ``prior_model``. Several columns: ``tool``, ``inputs``,
        ``columns``, ``units``, ``columns_read_as``, ``labels``, the row counts, ``tuples`` (per
        secret), ``prior_set``, ``channel`` and ``results`` (each with ``columns``, ``units``
        and ``column_scales``), and for a release a ``release`` section.
    """
    if isinstance(table.estimated, EstimatedJointPriors):
        return _joint_dict(table, release)
    est = table.estimated
    tool = f"pufferfish-privacy {version('pufferfish-privacy')}"
    rows = _result_rows(table)
    head = est.to_dict() if table.fitted is None else table.fitted.to_dict()
    common = {
        "columns": list(table.columns),
        "units": list(table.units),
        "prior_set": table.prior_set(),
        "domain": table.domain(),
    }
    if table.missing_atom is not None:  # the missing cells of a numeric column, and eps' of its values
        common["missing_atom"] = table.missing_atom.to_dict() | {"present_epsilons": list(table.epsilons)}
    if release is None:
        return {
            "tool": tool,
            "inputs": table.inputs,
            **head,
            **common,
            "delta": table.delta,
            "noise": table.noise,
            "results": rows,
        }
    chosen: Calibration | MappingCalibration = release["chosen"]
    noise_name = "Laplace" if chosen.noise == "laplace" else "Gaussian"
    released_as = (
        f"code of the label (see mapping) + {noise_name} noise, written as a floating-point number"
        if est.categorical
        else f"value + {noise_name} noise, written as a floating-point number (an integer column too)"
    )
    if isinstance(chosen, Calibration) and chosen.scale == 0.0 and not est.categorical:
        released_as = "value as the check saw it (scale 0: no noise), in the column's integer or text type"
    if isinstance(chosen, MappingCalibration):
        released_as = (
            "a label drawn from row 'label' of the checked matrix (chosen.matrix; rows and columns in "
            "the order of mapping)"
            if est.categorical
            else "a value of the alphabet drawn from the checked matrix (chosen.matrix)"
        )
    out = {
        "tool": tool,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "inputs": table.inputs,
        **common,
        "output": release["output"],
        "public_column_released_as": released_as,
        "mapping": head["mapping"],
        "priors": head["priors"],
        "rows": {
            "total": est.rows_total,
            "dropped_from_prior_estimate_missing_values": est.rows_dropped,
            "released_with_noise": release["released"],
            "missing_public_left_missing": release["missing"],
        },
        "mechanisms": rows,
        "chosen": chosen.to_dict(),
        "noise": release["noise"],
        "guarantee": _with_kept(
            _with_imputed(table, _with_atom(table, chosen.guarantee(table.prior_kind))), release
        ),
        "output_columns": output_columns(table.columns, release),
        "output_layout": list(release.get("layout", ())),
    }
    if table.fitted is not None:
        out["fitted_priors"] = head["fitted_priors"]
        out["prior_model"] = table.fitted.model
    return out


def output_columns(released: Sequence[str], release: Mapping[str, Any]) -> dict[str, Any]:
    """What the output holds (issue 41): ``written`` (the released and the kept columns, in the
    table's order, as the file holds them),
    ``covered_by_the_guarantee`` (the released ones), ``kept_unchecked`` (each kept column with
    its measured loss and the assumption it rests on) and ``not_written``."""
    kept: Sequence[KeptColumn] = release.get("kept", ())
    return {
        "written": list(release.get("written") or [*released, *(k.column for k in kept)]),
        "covered_by_the_guarantee": list(released),
        "kept_unchecked": [k.to_dict() for k in kept],
        "not_written": (
            f"every other column of the table, the secret column {release.get('secret')!r} included"
        ),
        "row_order": order_text(bool(release.get("shuffled", True)), bool(release.get("insecure"))),
        **({"whole_record": record.to_dict()} if (record := release.get("record_loss")) is not None else {}),
    }


def _with_atom(table: TableCalibration, guarantee: str) -> str:
    """The guarantee of the present values, after the missing cells' part when there are any."""
    atom = table.missing_atom
    if atom is None:
        return guarantee
    epsilon = table.inputs["epsilon"]
    return f"{atom.guarantee(float(epsilon))} Present values: {guarantee}"


def _with_imputed(table: TableCalibration, guarantee: str) -> str:
    """The guarantee, with what the release did with a numeric column's missing cells under
    declared bounds (issue 54): imputed with a constant inside them, released with the same noise."""
    est = table.estimated
    if est.impute is None or est.bounds is None:
        return guarantee
    cells = est.missing_cells if isinstance(est.missing_cells, int) else sum(est.missing_cells)
    return (
        f"{guarantee} Missing numbers ({cells:,} cells) were read and released as {est.impute:g}, a value of "
        f"the declared domain [{est.bounds[0]:g}, {est.bounds[1]:g}], with the same noise: the output "
        "does not show which cells were missing."
    )


def _with_kept(guarantee: str, release: Mapping[str, Any]) -> str:
    """The guarantee, with the assumption of each column kept in clear outside the check."""
    kept: Sequence[KeptColumn] = release.get("kept", ())
    if not release.get("shuffled", True):  # keep_order: the order is outside the check (issue 54)
        guarantee += (
            " ASSUMES the rows' input order independent of the secret (written in the input order, "
            "keep_order)."
        )
    if not kept:
        return guarantee
    record = release.get("record_loss")
    names = ", ".join(k.column for k in kept)
    return (
        f"{guarantee} ASSUMES, for the columns kept in clear and NOT covered by the check ({names}): "
        f"that they are {ASSUMED}. "
        + ("" if record is None else f"Measured: {record.sentence()}; ")
        + "; ".join(k.sentence() for k in kept)
        + " (each a lower bound on the record's loss)."
    )


def _result_rows(table: TableCalibration) -> list[dict[str, Any]]:
    """One JSON row per result (:meth:`Calibration.to_dict`) with the ``columns``, their ``units``
    and, for an additive calibration, ``column_scales`` (each column's scale ``b w_k``)."""
    rows = []
    for c in table.comparison:
        row = c.to_dict()
        row.update(columns=list(table.columns), units=list(table.units))
        if isinstance(c, Calibration):
            row["column_scales"] = table.column_scales(c.scale)
        rows.append(row)
    return rows


def _joint_dict(table: TableCalibration, release: Mapping[str, Any] | None) -> dict[str, Any]:
    """:func:`report_dict` of several columns: the columns, units and kinds, the priors' sizes, one
    row per result (as :meth:`Calibration.to_dict` plus ``columns``, ``units`` and
    ``column_scales``), and a release's ``release`` section."""
    rows = _result_rows(table)
    out: dict[str, Any] = {
        "tool": f"pufferfish-privacy {version('pufferfish-privacy')}",
        "inputs": dict(table.inputs),
        "columns": list(table.columns),
        "units": list(table.units),
        "columns_read_as": dict(table.estimated.columns_read_as),
        "labels": {
            c: [label_json(v) for v in lab]
            for c, lab, cat in zip(table.columns, table.labels, table.categorical, strict=True)
            if cat
        },
        "rows_total": table.rows_total,
        "rows_dropped": table.rows_dropped,
        "tuples": {s: p.size for s, p in table.priors().items()},
        "prior_set": table.prior_set(),
        "domain": table.domain(),
        "channel": CHANNEL_TEXT,
        "results": rows,
    }
    if release is None:
        return out
    chosen: Calibration = release["chosen"]
    columns: Sequence[ReleasedColumn] = release["columns"]
    out["created"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    out["release"] = {
        "output": release["output"],
        "mechanism": chosen.mechanism,
        "epsilon": chosen.epsilon,
        "scale": chosen.scale,
        "checked_loss": chosen.checked_loss,
        "guarantee": _with_kept(_with_imputed(table, chosen.guarantee()), release),
        "output_columns": output_columns(table.columns, release),
        "output_layout": list(release.get("layout", ())),
        "column_scales": table.column_scales(chosen.scale),
        "drawn_scales": drawn_scales(columns),
        "column_noise": {c.name: column_noise(c) for c in columns},
        "drawn_scales_checked": chosen.scale > 0.0 and not release["insecure"],
        "noise": dict(release["noise"]),
        "insecure": release["insecure"],
        "rows_released_with_noise": release["released"],
        "rows_with_a_missing_value": release["missing"],
    }
    return out
