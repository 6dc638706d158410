"""Release a table with its public column replaced by a pufferfish-private noisy version.

Steps: estimate the empirical priors (:func:`pufferfish.data.estimate_priors`), calibrate every
mechanism and check each scale exactly (:func:`pufferfish.calibration.compare`), add Laplace noise
of the chosen mechanism's scale to every non-missing value of the public column (secure sampler
unless a seed is given), and write the table (CSV or Parquet by extension) and a JSON report
beside it, each atomically and never over an existing file unless ``force``.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib.metadata import version
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

from ._checks import check_delta, check_epsilon
from .calibration import MECHANISMS, Calibration, Skipped, compare, lookup
from .data import (
    DataError,
    EstimatedPriors,
    FittedPriors,
    _first_line,
    _is_parquet,
    _quote,
    connect,
    estimate_priors,
    fit_priors,
    open_table,
    parse_prior_model,
    resolve_source,
)
from .divergence import check_noise
from .noise import add_gaussian, add_laplace, check_workers, insecure_generator
from .spark import check_engine

_FORMATS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}

#: Rows per batch of a streamed release (about 100 MB for a 15-column table).
DEFAULT_BATCH_ROWS = 1_000_000

_VALUE = "__pufferfish_public_value__"


class OutputExistsError(FileExistsError):
    """The output file exists and ``force`` was not given."""


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
        The report's content.
    chosen : Calibration
        The calibration whose scale was used.
    comparison : tuple of Calibration or Skipped
        Every mechanism at the same epsilon and delta (inapplicable ones with the reason).
    estimated : EstimatedPriors
        Empirical priors, mapping and row counts.
    fitted : FittedPriors or None
        Gaussian or Gaussian-mixture priors fitted per secret (``prior="gaussian"`` / ``"gmm"``).
    noise : dict
        How the noise was drawn (:meth:`~pufferfish.noise.NoisyValues.describe`: sampler, secure,
        granularity, seed, scale). The noisy values are in the output file only: the table is
        streamed in batches and never held whole.
    rows_released : int
        Rows whose public value received noise.
    rows_missing_public : int
        Rows whose public value was missing and stays missing.
    """

    output: Path
    report_path: Path
    report: dict[str, Any]
    chosen: Calibration
    comparison: tuple[Calibration | Skipped, ...]
    estimated: EstimatedPriors
    fitted: FittedPriors | None
    noise: dict[str, Any]
    rows_released: int
    rows_missing_public: int


def output_format(path: Path) -> str:
    """``"csv"`` or ``"parquet"`` from the file name (``.csv``, ``.csv.gz``, ``.parquet``, ``.pq``).

    Raises
    ------
    ValueError
        For any other extension.
    """
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes[-2:] == [".csv", ".gz"]:
        return "csv"
    if suffixes and suffixes[-1] in _FORMATS:
        return _FORMATS[suffixes[-1]]
    raise ValueError(f"output must end in .csv, .csv.gz, .parquet or .pq, got {str(path)!r}")


def report_path_for(output: Path) -> Path:
    """The report file beside ``output``: ``name.csv`` -> ``name.report.json``."""
    name = output.name
    for ext in (".csv.gz", ".csv", ".parquet", ".pq"):
        if name.lower().endswith(ext):
            name = name[: -len(ext)]
            break
    return output.with_name(name + ".report.json")


def release(
    data: Any,
    *,
    secret: str,
    public: str,
    pairs: Iterable[tuple[str, str]],
    epsilon: float,
    output: str | Path,
    mechanism: str = "optimal",
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
) -> ReleaseResult:
    """Release ``data`` with its public column made (eps, S)-pufferfish private by Laplace noise.

    Parameters
    ----------
    data : str, pathlib.Path or pandas.DataFrame
        CSV (any delimiter, quoted fields, header) or Parquet file, DataFrame, or ``"adult"``.
    secret : str
        Secret column; its values in ``pairs`` define the discriminative pairs.
    public : str
        Column to release. A categorical column is replaced by its codes plus noise (see the
        report's ``mapping``); a numeric column by its values plus noise. Missing values stay
        missing.
    pairs : iterable of (str, str)
        Discriminative pairs of secret values.
    epsilon : float
        Privacy budget, finite and > 0.
    output : str or pathlib.Path
        Output file, ``.csv``, ``.csv.gz``, ``.parquet`` or ``.pq``. The JSON report is written
        beside it (:func:`report_path_for`).
    mechanism : str
        Calibrator whose scale is used (default ``"optimal"``), one of
        :data:`~pufferfish.calibration.MECHANISMS`; every mechanism is computed and reported
        (those that do not apply with the reason).
    order : sequence of str, optional
        Label order of a categorical public column (default: sorted labels).
    weight : str, optional
        Frequency-weight column for the prior estimate.
    rng : numpy.random.Generator, int or None
        ``None`` (default) samples securely (OpenDP). A seed or Generator switches to NumPy's
        insecure sampler, labelled as such in the report; for experiments only.
    force : bool
        Overwrite existing output and report files.
    prior : {"empirical", "gaussian", "gmm", "gmm:K"}
        The adversary's prior: the empirical distribution per secret (default), a maximum-likelihood
        Gaussian, or a Gaussian mixture (K components, or chosen by BIC), fitted per secret.
    noise : {"laplace", "gaussian"}
        Noise for ``mechanism="optimal"`` (the theorems fix their own).
    delta : float
        Target delta in [0, 1) (default 0: pure eps).
    fit_seed : int
        Seed of the mixture fit (EM initialisation).
    batch_rows : int
        Rows per streamed batch (>= 1, default :data:`DEFAULT_BATCH_ROWS`). The table is read,
        perturbed and written one batch at a time, so memory stays bounded whatever its size.
    progress : callable, optional
        ``progress(rows_done, rows_total)``, called after each batch (for a progress bar).
    workers : int, optional
        Threads of the secure sampler (default every core); each draws its own chunk of a batch
        from OS randomness (:mod:`pufferfish.noise`). Ignored with a seeded ``rng``.
    engine : {"duckdb", "spark"}
        ``"duckdb"`` (default): embedded, streamed in batches. ``"spark"``: priors by Spark
        aggregations and the release by a per-partition Arrow map with one sampler per partition
        (:mod:`pufferfish.spark`); ``data`` may be a Spark DataFrame or a folder, ``output`` is
        written as a folder of part files, ``rng`` must be None or an int, and ``batch_rows``,
        ``progress`` and ``workers`` do not apply (Spark runs one partition per core).
    spark : pyspark.sql.SparkSession, optional
        Session of the Spark engine (default: the active one, else a local one).

    Returns
    -------
    ReleaseResult

    Raises
    ------
    ValueError
        Bad epsilon, mechanism, pair or output extension; :class:`~pufferfish.data.DataError` for
        unreadable data, unknown columns or values, empty groups.
    OutputExistsError
        If the output or report file exists and ``force`` is false (nothing is written).
    pufferfish.calibration.PrivacyCheckError
        If a scale fails the exact privacy check (a bug).

    Notes
    -----
    Calibration: seed 001 eq (4), (26), Prop 3.2-3.3; seed 002 Lemma 1, Thm 2; SPEC sec 2.1. For
    a CSV written from a CSV every other column is copied as text, unchanged; row order is kept.
    Files are written to a temporary file in the same folder and then linked into place, so a
    failure never leaves a partial file and never replaces an existing one without ``force``.
    With ``engine="spark"`` Spark's own commit protocol writes the output folder (mode
    ``errorifexists``, or ``overwrite`` with ``force``); a failed Spark job may leave a partial
    folder, as any Spark write does.
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    noise = check_noise(noise)
    mechanism = lookup(mechanism).name
    if isinstance(batch_rows, bool) or not isinstance(batch_rows, int) or batch_rows < 1:
        raise ValueError(f"batch_rows must be an int >= 1, got {batch_rows!r}")
    n_workers = check_workers(workers)
    model, n_components = parse_prior_model(prior)
    out_path = Path(output)
    fmt = output_format(out_path)
    rep_path = report_path_for(out_path)
    if not out_path.parent.is_dir():
        raise ValueError(f"output folder must exist, got {str(out_path.parent)!r}")
    engine = check_engine(engine)
    source = data if engine == "spark" and not isinstance(data, (str, Path)) else resolve_source(data)
    if engine == "spark" and isinstance(data, (str, Path)) and Path(data).is_dir():
        source = Path(data)
    if isinstance(source, (str, Path)) and Path(source).resolve() == out_path.resolve():
        raise ValueError(f"output must differ from the input file, got {str(out_path)!r} for both")
    for path in (out_path, rep_path):
        if path.exists() and not force:
            raise OutputExistsError(
                f"output file {str(path)!r} exists; pass --force (force=True) to overwrite it"
            )

    estimated = estimate_priors(
        data if engine == "spark" else source,
        secret=secret,
        public=public,
        pairs=pairs,
        order=order,
        weight=weight,
        engine=engine,
        spark=spark,
    )
    fitted = (
        None
        if model == "empirical"
        else fit_priors(estimated, model, n_components=n_components, rng=fit_seed)
    )
    scenario = estimated.scenario if fitted is None else fitted.scenario
    noise_used = lookup(mechanism).noise or noise
    comparison = compare(
        scenario,
        [epsilon],
        MECHANISMS,
        delta=delta,
        noise=noise_used,
        secret_weights=estimated.secret_weights,
    )
    picked = next(c for c in comparison if c.mechanism == mechanism)
    if isinstance(picked, Skipped):
        raise ValueError(f"mechanism {mechanism} cannot be used here: {picked.reason}")
    chosen = picked

    text_copy = fmt == "csv" and isinstance(source, (str, Path)) and not _is_parquet(Path(source))
    if engine == "spark":
        from .spark import release_table_spark

        sampler, rows_released, rows_missing = release_table_spark(
            source,
            out_path,
            fmt,
            public=public,
            estimated=estimated,
            scale=chosen.scale,
            noise=chosen.noise,
            rng=rng,  # type: ignore[arg-type]
            force=force,
            text_copy=text_copy,
            spark=spark,
        )
    else:
        sampler, rows_released, rows_missing = _stream_release(
            source,
            out_path,
            fmt,
            public=public,
            estimated=estimated,
            chosen=chosen,
            rng=rng,
            text_copy=text_copy,
            batch_rows=batch_rows,
            progress=progress,
            force=force,
            workers=n_workers,
        )

    report = _report(
        estimated=estimated,
        fitted=fitted,
        comparison=comparison,
        chosen=chosen,
        noise=sampler,
        inputs={
            "data": estimated.source,
            "secret": secret,
            "public": public,
            "pairs": [list(p) for p in estimated.scenario.pairs],
            "epsilon": epsilon,
            "delta": delta,
            "prior": prior,
            "noise": noise_used,
            "mechanism": mechanism,
            "order": list(order) if order is not None else None,
            "weight": weight,
        },
        output=out_path,
        rows_released=rows_released,
        rows_missing_public=rows_missing,
    )
    _write_text(json.dumps(report, indent=2, allow_nan=False) + "\n", rep_path, force=force)
    return ReleaseResult(
        output=out_path,
        report_path=rep_path,
        report=report,
        chosen=chosen,
        comparison=comparison,
        estimated=estimated,
        fitted=fitted,
        noise=sampler,
        rows_released=rows_released,
        rows_missing_public=rows_missing,
    )


def _report(
    *,
    estimated: EstimatedPriors,
    fitted: FittedPriors | None,
    comparison: tuple[Calibration | Skipped, ...],
    chosen: Calibration,
    noise: dict[str, Any],
    inputs: dict[str, Any],
    output: Path,
    rows_released: int,
    rows_missing_public: int,
) -> dict[str, Any]:
    est = estimated.to_dict()
    noise_name = "Laplace" if chosen.noise == "laplace" else "Gaussian"
    if chosen.criterion == "eps-MI PP":
        guarantee = (
            f"epsilon={chosen.epsilon} mutual-information pufferfish privacy (seed 004 Def 3): "
            f"checked I(S; Y) {chosen.checked_information:.6g} (+ bound {chosen.check_error_bound:.2g}) "
            "<= epsilon with the secret's marginal taken from the rows; by seed 004 Thm 1 this implies "
            f"(eps', {math.sqrt(2 * chosen.epsilon):.6g})-pufferfish privacy for every eps'."
        )
    elif chosen.delta == 0.0:
        guarantee = (
            f"(epsilon={chosen.epsilon}, S)-pufferfish privacy for the pairs above: exact privacy loss "
            f"{chosen.checked_loss:.6g} <= epsilon (SPEC sec 2.1, 4)."
        )
    else:
        guarantee = (
            f"(epsilon={chosen.epsilon}, delta={chosen.delta}, S)-pufferfish privacy for the pairs above: "
            f"checked delta {chosen.checked_delta:.6g} (+ bound {chosen.check_error_bound:.2g}) <= delta "
            "(hockey-stick divergence, both directions; SPEC sec 0, 4, 5)."
        )
    which = (
        "empirical" if fitted is None else ("fitted Gaussian" if fitted.model == "gaussian" else "fitted GMM")
    )
    guarantee += f" It holds for adversaries whose prior is the {which} one."
    out = {
        "tool": f"pufferfish-privacy {version('pufferfish-privacy')}",
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "inputs": inputs,
        "output": str(output),
        "public_column_released_as": (
            f"code of the label (see mapping) + {noise_name} noise"
            if estimated.categorical
            else f"value + {noise_name} noise"
        ),
        "mapping": est["mapping"],
        "priors": est["priors"],
        "rows": {
            "total": estimated.rows_total,
            "dropped_from_prior_estimate_missing_values": estimated.rows_dropped,
            "released_with_noise": rows_released,
            "missing_public_left_missing": rows_missing_public,
        },
        "mechanisms": [c.to_dict() for c in comparison],
        "chosen": chosen.to_dict(),
        "noise": noise,
        "guarantee": guarantee,
    }
    if fitted is not None:
        out["fitted_priors"] = fitted.to_dict()["fitted_priors"]
        out["prior_model"] = fitted.model
    return out


def _publish(tmp: Path, final: Path, *, force: bool) -> None:
    """Move ``tmp`` to ``final`` atomically; without ``force`` never replace an existing file."""
    try:
        if force:
            os.replace(tmp, final)
            return
        try:
            os.link(tmp, final)
        except FileExistsError:
            raise OutputExistsError(
                f"output file {str(final)!r} exists; pass --force (force=True) to overwrite it"
            ) from None
        except OSError:  # file system without hard links
            if final.exists():
                raise OutputExistsError(
                    f"output file {str(final)!r} exists; pass --force (force=True) to overwrite it"
                ) from None
            os.replace(tmp, final)
    finally:
        if tmp.exists():
            tmp.unlink()


def _temp_beside(final: Path) -> Path:
    """An empty temporary file in ``final``'s folder, with the permissions a new file gets."""
    fd, name = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent)
    os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(name, 0o666 & ~umask)
    return Path(name)


def _stream_release(
    source: Any,
    final: Path,
    fmt: str,
    *,
    public: str,
    estimated: EstimatedPriors,
    chosen: Calibration,
    rng: np.random.Generator | int | None,
    text_copy: bool,
    batch_rows: int,
    progress: Callable[[int, int], None] | None,
    force: bool,
    workers: int,
) -> tuple[dict[str, Any], int, int]:
    """Read, perturb and write the table batch by batch: (sampler description, released, missing).

    DuckDB reads the source as a stream of Arrow record batches; each batch gets its public
    column replaced by ``code + noise`` (missing stays missing) and DuckDB's ``COPY`` writes the
    stream of new batches to a temporary file beside ``final``, which is published atomically.
    Row order is kept (DuckDB preserves insertion order). A seed or Generator gives one NumPy
    stream across batches, so the noise does not depend on ``batch_rows``.
    """
    adder = add_laplace if chosen.noise == "laplace" else add_gaussian
    gen, seed = insecure_generator(rng)  # one stream across batches
    counts = {"released": 0, "missing": 0}
    described: dict[str, Any] = {}

    con = connect()
    tmp = _temp_beside(final)
    try:
        try:
            rel = open_table(con, source, all_varchar=text_copy)
            cast = "VARCHAR" if estimated.categorical else "DOUBLE"
            query = rel.select(f"*, CAST({_quote(public)} AS {cast}) AS {_quote(_VALUE)}")
            to_reader = getattr(query, "to_arrow_reader", None) or query.fetch_arrow_reader  # duckdb < 1.4
            reader = to_reader(batch_rows)
        except duckdb.Error as exc:
            raise DataError(f"cannot read the table: {_first_line(exc)}") from None
        fields = [f for f in reader.schema if f.name != _VALUE]
        idx = [f.name for f in fields].index(public)
        fields[idx] = pa.field(public, pa.float64())
        schema = pa.schema(fields)

        def batches() -> Iterator[pa.RecordBatch]:
            for batch in reader:
                value = batch.column(batch.schema.get_field_index(_VALUE))
                if estimated.categorical:
                    codes = estimated.codes_for(value)
                else:
                    codes = value.to_numpy(zero_copy_only=False).astype(np.float64)
                    codes[np.asarray(value.is_null())] = np.nan
                present = ~np.isnan(codes)
                noisy = adder(codes[present], chosen.scale, rng=gen, workers=workers)
                if not described:
                    described.update(noisy.describe())
                released = np.full(codes.shape, np.nan)
                released[present] = noisy.values
                cols = [batch.column(k) for k, f in enumerate(batch.schema) if f.name != _VALUE]
                cols[idx] = pa.array(released, type=pa.float64(), mask=~present)
                counts["released"] += int(present.sum())
                counts["missing"] += int((~present).sum())
                yield pa.RecordBatch.from_arrays(cols, schema=schema)
                if progress is not None:
                    progress(counts["released"] + counts["missing"], estimated.rows_total)

        stream = pa.RecordBatchReader.from_batches(schema, batches())
        out = connect()
        try:
            out.register("out_stream", stream)
            if fmt == "parquet":
                options = "FORMAT parquet"
            else:
                gz = final.name.lower().endswith(".gz")
                options = "FORMAT csv, HEADER true" + (", COMPRESSION gzip" if gz else "")
            path_sql = str(tmp).replace("'", "''")
            try:
                out.execute(f"COPY (SELECT * FROM out_stream) TO '{path_sql}' ({options})")
            except duckdb.Error as exc:
                raise DataError(f"cannot write the release: {_first_line(exc)}") from None
        finally:
            out.close()
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    finally:
        con.close()
    if not described:  # no row at all: describe the sampler on an empty draw
        described.update(adder(np.empty(0), chosen.scale, rng=gen).describe())
    if seed is not None:
        described["seed"] = seed
    if counts["released"] + counts["missing"] != estimated.rows_total:
        tmp.unlink(missing_ok=True)
        raise DataError("the table changed while it was read")  # pragma: no cover
    _publish(tmp, final, force=force)
    return described, counts["released"], counts["missing"]


def _write_text(text: str, final: Path, *, force: bool) -> None:
    tmp = _temp_beside(final)
    try:
        tmp.write_text(text, encoding="utf-8")
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _publish(tmp, final, force=force)
