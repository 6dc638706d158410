"""A release's rows in a uniformly random order, in bounded memory: random buckets, each shuffled.

A release writes its rows in a uniformly random order (its position would otherwise tell a row's
secret when the table is sorted by it). :func:`shuffled` draws that order in two passes:

1. each row goes to one of ``B`` buckets (``B`` a power of two, at most :data:`MAX_BUCKETS`) by a
   uniform random byte of its own (the low ``log2 B`` bits); a bucket is an Arrow IPC file in a
   temporary folder;
2. each bucket in turn is read whole (about ``n / B`` rows) and written in the order of
   i.i.d. uniform 64-bit keys drawn for its rows (NumPy's ``argsort``); when two keys of the
   bucket tie, all of the bucket's keys are drawn again.

**Why every order is equally likely.** Given the bucket sizes ``n_1, ..., n_B``, the rows of
bucket ``j`` are a uniformly random subset of size ``n_j`` of the rows not in buckets ``< j``
(the bytes are i.i.d. and uniform, so every assignment with these sizes has the same
probability), and their order within the bucket is uniform (distinct i.i.d. keys are
exchangeable; redrawing on a tie keeps the draw conditioned on a symmetric event). Output
position ``1..n_1`` holds bucket 1, and so on, so given the sizes every sequence of the rows has
probability ``1 / n!``, hence also without conditioning. No tie decides anything: the order is
exactly uniform, not up to ``2^-128``.

The randomness is OpenSSL's CSPRNG (:func:`~pufferfish.noise.randomness.secure_bytes`: one byte a
row for the bucket when ``B > 1``, eight for the key), or a seeded NumPy generator for an
insecure, reproducible run. Before, two 64-bit keys a row were attached to the batches and DuckDB's
``ORDER BY`` sorted the whole table on them: ``python benchmarks/bench_row_order_memory.py`` gave
840 MiB peak and 4.71 s for a release of 3x10^7 rows then (commit fe2bf67), 438 MiB and 3.63 s
with the buckets, which carry no keys and each sort in the CPU's cache (350 MiB and 3.37 s with
the Parquet copy on one thread as well, :func:`~pufferfish.tables.duckdb_engine.copy_arrow_to`).

``B`` keeps a bucket near :data:`BUCKET_ROWS` rows; the memory is one batch in the first pass
and one bucket in the second. The buckets' folder is a spill folder
(:func:`~pufferfish.tables.outputs.spill_path`, as DuckDB's): removed when the writing ends, or by
the next run if this one is killed.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pyarrow as pa

from pufferfish.noise.randomness import secure_bytes
from pufferfish.tables.outputs import spill_path

#: Rows a bucket holds on average.
BUCKET_ROWS = 2**18

#: Most buckets (files open at once in the first pass; a bucket number is one random byte).
MAX_BUCKETS = 256


def bucket_count(rows: int, bucket_rows: int = BUCKET_ROWS) -> int:
    """The power of two ``B`` with about ``bucket_rows`` rows a bucket, 1..:data:`MAX_BUCKETS`."""
    need = max(1, -(-int(rows) // max(1, int(bucket_rows))))
    return min(MAX_BUCKETS, 1 << (need - 1).bit_length())


def _positions(order: np.ndarray) -> pa.Array:
    """Row positions for ``take``, sharing NumPy's buffer (``pa.array`` would copy them)."""
    order = np.ascontiguousarray(order, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), order.size, [None, pa.py_buffer(order)])


def _buckets(rows: int, b: int, gen: np.random.Generator | None) -> np.ndarray:
    """A uniform bucket number in ``0..b-1`` for each of ``rows`` rows (``b`` a power of two <= 256;
    no randomness drawn for one bucket)."""
    if b == 1:
        return np.zeros(rows, dtype=np.uint8)
    if gen is not None:
        return gen.integers(0, b, rows, dtype=np.uint8)
    return np.frombuffer(secure_bytes(rows), dtype=np.uint8) & np.uint8(b - 1)


def _permutation(rows: int, gen: np.random.Generator | None) -> np.ndarray:
    """A uniformly random order of ``rows`` rows: the ranks of distinct i.i.d. uniform 64-bit keys
    (drawn again until no two tie)."""
    while True:
        if gen is None:
            keys = np.frombuffer(secure_bytes(8 * rows), dtype=np.uint64)
        else:
            keys = gen.integers(0, 2**64, rows, dtype=np.uint64, endpoint=False)
        order = np.argsort(keys)
        ranked = keys[order]
        if ranked.size < 2 or not np.any(ranked[1:] == ranked[:-1]):
            return order


@contextmanager
def shuffled(
    batches: Iterable[pa.RecordBatch],
    schema: pa.Schema,
    rows: int,
    gen: np.random.Generator | None,
    *,
    bucket_rows: int = BUCKET_ROWS,
) -> Iterator[Iterator[pa.RecordBatch]]:
    """The rows of ``batches`` in a uniformly random order (module docstring).

    Parameters
    ----------
    batches : iterable of pyarrow.RecordBatch
        With ``schema``; consumed whole before the first batch is yielded.
    schema : pyarrow.Schema
    rows : int
        About how many rows ``batches`` holds (>= 0): sets the number of buckets.
    gen : numpy.random.Generator or None
        None: OpenSSL's CSPRNG; else this seeded generator (insecure, reproducible).
    bucket_rows : int
        Rows a bucket holds on average (default :data:`BUCKET_ROWS`; small values for tests).

    Yields
    ------
    iterator of pyarrow.RecordBatch
        The rows in a uniformly random order, with ``schema``. The temporary folder is removed
        when the block ends, also on an error or an interrupt.
    """
    b = bucket_count(rows, bucket_rows)
    folder = spill_path()
    folder.mkdir()
    writers: dict[int, pa.ipc.RecordBatchStreamWriter] = {}
    try:
        for batch in batches:
            if batch.num_rows == 0:
                continue
            which = _buckets(batch.num_rows, b, gen)
            # bucket numbers are bytes: NumPy's stable sort of uint8 is a radix sort
            grouped = batch if b == 1 else batch.take(_positions(np.argsort(which, kind="stable")))
            counts = np.bincount(which, minlength=b)
            start = 0
            for j in np.flatnonzero(counts).tolist():
                if j not in writers:
                    writers[j] = pa.ipc.new_stream(str(folder / f"{j}.arrows"), schema)
                writers[j].write_batch(grouped.slice(start, int(counts[j])))
                start += int(counts[j])
        for w in writers.values():
            w.close()
        yield _shuffled_buckets(folder, sorted(writers), gen)
    finally:
        for w in writers.values():
            try:
                w.close()
            except (OSError, pa.ArrowException):
                pass
        shutil.rmtree(folder, ignore_errors=True)


def _shuffled_buckets(
    folder: Path, buckets: list[int], gen: np.random.Generator | None
) -> Iterator[pa.RecordBatch]:
    """Each bucket read whole and handed on in a uniformly random order."""
    for j in buckets:
        path = folder / f"{j}.arrows"
        with pa.OSFile(str(path), "rb") as source:
            table = pa.ipc.open_stream(source).read_all()
        path.unlink()
        yield from table.take(_positions(_permutation(table.num_rows, gen))).to_batches()
