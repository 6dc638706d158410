"""What a release does to one batch of rows, whatever engine streams them: each released column's
values replaced by a noisy value (additive noise), a value of a mapping's alphabet, or a label of a
randomized response (issue 31), missing values left missing.

The engines (:mod:`.duckdb_engine`, :mod:`.spark_engine`) read and write; the functions here
build one :data:`Perturb` per column and apply them to Arrow record batches.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from pufferfish.noise.channels import RandomizedResponseChannel
from pufferfish.noise.randomness import SOURCE, secure_bytes
from pufferfish.noise.samplers import NoiseStream, add_gaussian, add_laplace, sample_mapping
from pufferfish.priors.distributions import to_release_grid
from pufferfish.tables.model import EstimatedPriors, label_json
from pufferfish.tables.source import DataError

Perturb = Callable[[NDArray[np.float64], NDArray[np.bool_], Any], tuple[pa.Array, dict[str, Any]]]
"""``perturb(codes, present, gen) -> (released column, sampler description)`` of one batch."""


@dataclass(frozen=True)
class ReleasedColumn:
    """A column a release replaces: by its value plus noise, or (categorical, with a ``channel``)
    by a label drawn by a randomized response.

    Attributes
    ----------
    name : str
        The column.
    categorical : bool
        Read as labels and coded by ``codes_for``; else read as numbers.
    codes_for : callable or None
        ``codes_for(labels) -> codes`` (``nan`` for missing), e.g.
        :meth:`~pufferfish.tables.model.EstimatedPriors.codes_for`; ``None`` for numbers.
    scale : float
        Its Laplace scale or Gaussian sigma (>= 0); unused with a ``channel``.
    channel : RandomizedResponseChannel, optional
        Release the label of code ``c`` as the label of the code this channel draws
        (:func:`pufferfish.noise.samplers.sample_mapping`): the column keeps its labels.
    labels : tuple of str
        The label of each code ``0, ..., k - 1`` of a column released as labels (with a
        ``channel``, or one label alone, released as it is); empty for a column released as
        numbers.
    mapping : MappingCalibration, optional
        Release each value as a value of this checked mapping's alphabet (:func:`mapper`): a
        categorical column keeps its labels, a numeric one gets values of the alphabet.
    estimated : EstimatedPriors, optional
        With ``mapping``: the column's label-to-code mapping.
    bounds : (float, float), optional
        A numeric column's declared domain: its values are clamped into it before the noise, as in
        its priors (:mod:`pufferfish.tables.domain`, :mod:`pufferfish.priors.bands`).
    missing_checked : bool
        A numeric column whose missing cells are inside the check (the missing atom of several
        columns, :attr:`pufferfish.priors.joint.Metric.missing`): written missing, the row's other
        columns released as they are drawn.
    kept : bool
        Kept in clear inside the check (the identity channel on its labels): written in the
        table's own type when its labels come back to the values exactly (:func:`restore_type`).
    impute : float, optional
        A numeric column under declared bounds: its missing cells are this value (inside the
        bounds), released with the same noise as any other (issue 54; :meth:`values`).
    """

    name: str
    categorical: bool
    codes_for: Callable[[Any], NDArray[np.float64]] | None
    scale: float
    channel: RandomizedResponseChannel | None = None
    labels: tuple[str, ...] = ()
    mapping: Any = None
    estimated: EstimatedPriors | None = None
    bounds: tuple[float, float] | None = None
    kept: bool = False
    missing_checked: bool = False
    impute: float | None = None

    def values(self, value: pa.Array) -> NDArray[np.float64]:
        """The codes or numbers the release perturbs for a batch's cells: ``nan`` for a missing
        cell, or the ``impute`` constant where one is declared."""
        if self.codes_for is not None:
            return self.codes_for(value)
        codes = value.to_numpy(zero_copy_only=False).astype(np.float64)
        codes[np.asarray(value.is_null())] = np.nan if self.impute is None else self.impute
        return codes

    @property
    def as_labels(self) -> bool:
        """Whether the released column holds labels (text) rather than numbers."""
        if self.mapping is not None:
            return self.categorical
        return bool(self.labels)

    @property
    def codes_a_missing_cell(self) -> bool:
        """Whether a missing cell has a code (a label of its own, issue 41) and is released as any
        other value, rather than written missing."""
        if self.codes_for is None:
            return False
        return not bool(np.isnan(self.codes_for(pa.array([None], type=pa.string()))[0]))

    @property
    def noiseless(self) -> bool:
        """A numeric column released without noise (scale 0, no mapping): written in the table's
        type (:func:`noiseless_as_written`)."""
        return not self.categorical and self.mapping is None and self.scale == 0.0

    def arrow_type(self, source: pa.DataType | None = None) -> pa.DataType:
        """The released column's Arrow type: text for labels, else float64; a kept column keeps
        ``source``, its type in the table (when given and not text), and a noiseless one keeps an
        integer or text type (:func:`noiseless_as_written`)."""
        if source is not None and self.kept and not pa.types.is_string(source):
            return source
        if source is not None and self.noiseless and _integer_or_text(source):
            return source
        return pa.string() if self.as_labels else pa.float64()


def _integer_or_text(kind: pa.DataType) -> bool:
    return bool(pa.types.is_integer(kind) or pa.types.is_string(kind) or pa.types.is_large_string(kind))


def noiseless_as_written(released: pa.Array, source: pa.DataType) -> pa.Array:
    """A numeric column released without noise, in the table's type (issue 44): ``released`` (the
    values the check saw, on the release grid, as float64) cast to an integer type or to text
    (``8`` stays ``8``, not ``8.0``), a float type left as float64. Only the checked values are
    written (a function of them), never the input's own text (``8.50`` and ``8.5`` are one value to
    the check, so they are one text in the output).

    Raises
    ------
    DataError
        If a value does not fit the integer type exactly (a bug: integers lie on the grid).
    """
    if not _integer_or_text(source):
        return released
    try:
        return pc.cast(released, source)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise DataError(f"a noiseless value does not fit the column's type {source}: {exc}") from None


def restore_type(labels: pa.Array, original: pa.Array, column: str) -> pa.Array:
    """A kept column's released labels (text, the identity channel's output) in the table's own
    type: ``labels`` cast back to ``original``'s type, a function of the released labels (so
    post-processing of what the check covered), and verified equal to ``original`` value by value,
    so nothing the table holds is altered; text stays text.

    Raises
    ------
    DataError
        If a label does not cast back to its value exactly (two values sharing one text would
        be told apart by the output but not by the check): the message names the column.
    """
    if pa.types.is_string(original.type) or pa.types.is_large_string(original.type):
        return labels
    try:
        typed = pc.cast(labels, original.type)
        same_nulls = pc.is_null(typed).equals(pc.is_null(original))
        exact = same_nulls and pc.all(pc.equal(typed, original)).as_py() is not False  # nulls skipped
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        exact = False
    if not exact:
        raise DataError(
            f"kept column {column!r} ({original.type}) does not come back from its text labels exactly; "
            "cast it to text in the table first, or write a CSV output"
        )
    return typed


def column_perturber(column: ReleasedColumn, noise: str, workers: int, sampler: str) -> Perturb:
    """The :data:`Perturb` of one released column: :func:`mapper` with a mapping,
    :func:`responder` with labels, else :func:`adder`; a numeric column with declared bounds has
    its values clamped into them first, as in its priors (:mod:`pufferfish.tables.domain`)."""
    if column.mapping is not None:
        assert column.estimated is not None, "a mapping's column carries its estimate"
        perturb = mapper(column.mapping, column.estimated)
    elif column.labels:
        return responder(column.channel, column.labels)
    else:
        perturb = adder(noise, column.scale, workers, sampler)
    if column.bounds is None:
        return perturb
    lo, hi = column.bounds

    def clamped(
        codes: NDArray[np.float64], present: NDArray[np.bool_], gen: Any
    ) -> tuple[pa.Array, dict[str, Any]]:
        return perturb(np.clip(codes, lo, hi), present, gen)

    return clamped


def adder(noise: str, scale: float, workers: int, sampler: str) -> Perturb:
    """Additive noise on the present codes or values; missing stays missing. The secure exact
    sampler draws ahead for several batches (:class:`pufferfish.noise.samplers.NoiseStream`)."""
    add = add_laplace if noise == "laplace" else add_gaussian
    streams: list[NoiseStream] = []  # made at the first secure batch

    def perturb(
        codes: NDArray[np.float64], present: NDArray[np.bool_], gen: Any
    ) -> tuple[pa.Array, dict[str, Any]]:
        if gen is None and sampler == "exact" and scale > 0:
            if not streams:
                streams.append(NoiseStream(noise, scale, workers))
            noisy = streams[0].add(codes[present])
        else:
            noisy = add(codes[present], scale, rng=gen, workers=workers, sampler=sampler)
        released = np.full(codes.shape, np.nan)
        released[present] = noisy.values
        return pa.array(released, type=pa.float64(), mask=~present), noisy.describe()

    return perturb


def responder(channel: RandomizedResponseChannel | None, labels: Sequence[str]) -> Perturb:
    """A randomized response on the codes ``0, ..., k - 1`` released as the labels ``labels``
    (:func:`pufferfish.noise.samplers.sample_mapping`: exact integer sampling from cryptographic
    randomness, or a seeded NumPy generator); missing stays missing. Without a channel, one label released as
    it is (a column with one label tells nothing).

    Raises
    ------
    ValueError
        If ``labels`` does not name the channel's ``k`` codes (one label without a channel).
    """
    k = 1 if channel is None else channel.k
    if len(labels) != k:
        raise ValueError(f"labels must name the channel's {k} codes, got {len(labels)}")
    out_values = pa.array([label_json(v) for v in labels], type=pa.string())  # the missing label: missing

    def perturb(
        codes: NDArray[np.float64], present: NDArray[np.bool_], gen: Any
    ) -> tuple[pa.Array, dict[str, Any]]:
        index = np.full(codes.shape, -1, dtype=np.int64)
        if channel is None:
            index[present] = 0
            about: dict[str, Any] = {"sampler": "none: the column has one label", "secure": True}
        else:
            drawn = sample_mapping(codes[present].astype(np.int64), channel, rng=gen)
            index[present] = drawn.indices
            about = {**drawn.describe(), "channel": channel.describe()}
        return pc.take(out_values, pa.array(index, mask=~present)), about

    return perturb


def mapper(mapping: Any, estimated: EstimatedPriors) -> Perturb:
    """``perturb(codes, present, gen) -> (released column, sampler description)`` for a mapping:
    positions in the alphabet, a draw of :func:`~pufferfish.noise.samplers.sample_mapping`, and the labels
    (categorical) or values (numeric) at the drawn positions. The description's ``counts`` are
    the released rows per value of the alphabet, in the input and in the output, so far."""
    support = np.asarray(mapping.support, dtype=np.float64)
    labels = dict((float(code), label) for label, code in estimated.mapping)
    out_values = (  # a drawn MISSING_LABEL is written missing (issue 41)
        pa.array([label_json(labels.get(float(v))) for v in support], type=pa.string())
        if estimated.categorical
        else pa.array(support, type=pa.float64())
    )

    names = [label_json(labels.get(float(v))) for v in support] if estimated.categorical else support.tolist()
    rows_in = np.zeros(support.size, dtype=np.int64)  # released rows per value, in and out
    rows_out = np.zeros(support.size, dtype=np.int64)

    def perturb(
        codes: NDArray[np.float64], present: NDArray[np.bool_], gen: Any
    ) -> tuple[pa.Array, dict[str, Any]]:
        nonlocal rows_in, rows_out
        values = to_release_grid(codes[present])
        pos = np.minimum(np.searchsorted(support, values), support.size - 1)
        if values.size and not np.array_equal(support[pos], values):
            bad = values[support[pos] != values][0]
            raise DataError(f"public value {bad!r} is not in the alphabet of the mapping")
        drawn = sample_mapping(pos, mapping.channel, rng=gen)
        index = np.full(codes.shape, -1, dtype=np.int64)
        index[present] = drawn.indices
        taken = pc.take(out_values, pa.array(index, mask=~present))
        rows_in += np.bincount(pos, minlength=support.size)
        rows_out += np.bincount(drawn.indices, minlength=support.size)
        counts = {"values": names, "input": rows_in.tolist(), "output": rows_out.tolist()}
        return taken, {**drawn.describe(), "counts": counts}  # the counts so far

    return perturb


def suppress_partial_rows(cols: list[pa.Array], at: Sequence[int], present: NDArray[np.bool_]) -> None:
    """Several released columns (``cols[k]`` for ``k`` in ``at``, replaced in place): a row with
    one of them missing outside the check (``present`` False) gets every one written missing
    (columns kept in clear are not among ``at``: they are written as they are).

    Its other columns would otherwise be released with the noise calibrated on the rows the
    priors hold, a release the check never saw (issue 41, reproducer ``partial_missing_rows.py``:
    at scale 0 the present column revealed the secret exactly). A guard: under ``missing="value"``
    a categorical cell is coded (a label of its own) and a numeric one is its column's missing
    atom (:attr:`ReleasedColumn.missing_checked`), so no such row reaches it.
    """
    if len(at) < 2 or present.all():
        return
    keep = pa.array(present)
    for k in at:
        cols[k] = pc.if_else(keep, cols[k], pa.scalar(None, cols[k].type))


def perturb_batch(
    batch: pa.RecordBatch,
    columns: Sequence[ReleasedColumn],
    values: Sequence[str],
    idx: Sequence[int],
    perturbs: Sequence[Perturb],
    gen: Any,
    described: dict[str, Any],
) -> tuple[list[pa.Array], NDArray[np.bool_]]:
    """One batch with each released column replaced (its value column ``values[k]`` dropped):
    ``(columns, rows with every released column present)``; each batch's sampler descriptions go
    into ``described`` (the same but for a mapping's running counts)."""
    cols = [batch.column(k) for k, f in enumerate(batch.schema) if f.name not in values]
    every = np.ones(batch.num_rows, dtype=bool)
    covered = np.ones(batch.num_rows, dtype=bool)  # every missing cell inside the check
    for k, c in enumerate(columns):
        codes = c.values(batch.column(batch.schema.get_field_index(values[k])))
        present = ~np.isnan(codes)
        every &= present
        covered &= present | c.missing_checked
        original = cols[idx[k]]
        cols[idx[k]], about = perturbs[k](codes, present, gen)
        if c.kept:  # in the table's own type, checked equal to it
            cols[idx[k]] = restore_type(cols[idx[k]], original, c.name)
        elif c.noiseless:  # the value the check saw, in the table's type (8 stays 8, not 8.0)
            cols[idx[k]] = noiseless_as_written(cols[idx[k]], original.type)
        described[c.name] = about  # the last batch's: a mapping's counts are the running totals
    # a kept column is written as it is, always (issue 54): only the perturbed ones are suppressed
    suppress_partial_rows(cols, [i for i, c in zip(idx, columns, strict=True) if not c.kept], covered)
    return cols, every


#: The two columns of random sort keys a shuffled release adds to each batch (and drops on writing).
ORDER_KEYS = ("__pufferfish_order_1", "__pufferfish_order_2")


def order_keys(rows: int, gen: np.random.Generator | None) -> list[pa.Array]:
    """Two columns of independent uniform 64-bit sort keys, one pair a row: the rows sorted by
    them are in a uniformly random order, independent of the table (issue 54: a table sorted by
    the secret, released in its order, told each row's secret by its position).

    Parameters
    ----------
    rows : int
        Rows of the batch, >= 0.
    gen : numpy.random.Generator or None
        None: OpenSSL's CSPRNG (:func:`pufferfish.noise.randomness.secure_bytes`); else this
        seeded generator (insecure, for experiments), so a seeded release is reproducible.

    Returns
    -------
    list of pyarrow.Array
        Two ``int64`` arrays of length ``rows``, uniform over the 2^64 values (signed, as Spark's
        long type holds them).

    Notes
    -----
    Sorting i.i.d. uniform keys gives every order the same probability except on a tie; two rows
    tie on both 64-bit keys with probability ``2^-128``, so over ``n`` rows a tie occurs with
    probability below ``n^2 / 2^129`` (``1.5e-25`` at ``10^7`` rows), the only event in which
    the sort (Spark's) rather than the keys decides two rows' order. The DuckDB engine draws its
    order without keys (:mod:`~pufferfish.tables.shuffle`).
    """
    if gen is None:
        keys = np.frombuffer(secure_bytes(16 * rows), dtype="<i8").reshape(rows, 2)
    else:
        keys = gen.integers(-(2**63), 2**63, size=(rows, 2), dtype=np.int64)
    return [pa.array(np.ascontiguousarray(keys[:, 0])), pa.array(np.ascontiguousarray(keys[:, 1]))]


def order_text(shuffled: bool, seeded: bool) -> str:
    """What the rows' order of a release is, for its report and guarantee."""
    if not shuffled:
        return "the input order (keep_order): the guarantee assumes the rows' order independent of the secret"
    source = "a seeded NumPy generator (insecure)" if seeded else f"cryptographic randomness ({SOURCE})"
    return f"a uniformly random order drawn from {source}, independent of the input order"
