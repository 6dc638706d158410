"""A release's rows in a uniformly random order (:mod:`pufferfish.tables.shuffle`): every row once
and whole, every order equally likely (random buckets, each shuffled), reproducible with a seed,
no file left behind."""

from __future__ import annotations

import itertools
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from pufferfish.tables import shuffle
from pufferfish.tables.shuffle import MAX_BUCKETS, bucket_count, shuffled
from pufferfish.tables.source import TEMP_MARK

SCHEMA = pa.schema([("row", pa.int64()), ("label", pa.string())])


def _batches(n: int, size: int) -> list[pa.RecordBatch]:
    rows = np.arange(n)
    return [
        pa.RecordBatch.from_arrays(
            [pa.array(rows[i : i + size]), pa.array([f"v{r}" for r in rows[i : i + size]])], schema=SCHEMA
        )
        for i in range(0, n, size)
    ]


def _order(n: int, size: int, gen, bucket_rows: int) -> list[int]:
    with shuffled(_batches(n, size), SCHEMA, n, gen, bucket_rows=bucket_rows) as ordered:
        got = pa.Table.from_batches(list(ordered), schema=SCHEMA)
    rows = got.column("row").to_pylist()
    assert got.column("label").to_pylist() == [f"v{r}" for r in rows]  # each row whole
    return rows


def _leftovers() -> list[str]:
    return [
        p.name for p in Path(tempfile.gettempdir()).iterdir() if p.name.startswith(f"{TEMP_MARK}-duckdb-")
    ]


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(0, 3000), size=st.integers(1, 700), bucket_rows=st.sampled_from([1, 7, 64, 2**18]),
    seed=st.integers(0, 2**32 - 1),
)  # fmt: skip
def test_every_row_is_written_once_and_whole(n, size, bucket_rows, seed) -> None:
    before = _leftovers()
    rows = _order(n, size, np.random.default_rng(seed), bucket_rows)
    assert sorted(rows) == list(range(n))
    assert _leftovers() == before


@pytest.mark.slow
@pytest.mark.parametrize("bucket_rows", [1, 2, 100])  # 4, 2 and 1 buckets for 4 rows
def test_every_order_of_four_rows_is_equally_likely(bucket_rows) -> None:
    """4,800 seeded shuffles of 4 rows in batches of 3: chi-square over the 24 orders."""
    gen = np.random.default_rng(20261129)
    seen = [tuple(_order(4, 3, gen, bucket_rows)) for _ in range(4800)]
    counts = [seen.count(p) for p in itertools.permutations(range(4))]
    assert stats.chisquare(counts).pvalue > 1e-3


def test_secure_shuffles_draw_every_order_of_three_rows() -> None:
    """OpenSSL's bytes (no seed), 2 buckets: 600 shuffles of 3 rows, chi-square over the 6 orders."""
    seen = [tuple(_order(3, 2, None, 1)) for _ in range(600)]
    counts = [seen.count(p) for p in itertools.permutations(range(3))]
    assert stats.chisquare(counts).pvalue > 1e-4


def test_a_seed_gives_the_same_order_and_another_seed_another() -> None:
    one = _order(5000, 999, np.random.default_rng(1), 500)
    assert one == _order(5000, 999, np.random.default_rng(1), 500)
    assert one != _order(5000, 999, np.random.default_rng(2), 500)


def test_keys_that_tie_are_drawn_again(monkeypatch) -> None:
    draws = iter([np.array([5, 5, 1], dtype=np.uint64), np.array([9, 2, 7], dtype=np.uint64)])

    class Gen:
        def integers(self, *args, **kwargs):
            return next(draws)

    assert shuffle._permutation(3, Gen()).tolist() == [1, 2, 0]  # the second draw's ranks


def test_the_bucket_count_is_a_power_of_two_up_to_its_limit() -> None:
    assert [bucket_count(r, 100) for r in (0, 1, 100, 101, 250, 10**9)] == [1, 1, 1, 2, 4, MAX_BUCKETS]


def test_an_error_or_an_early_stop_leaves_no_file() -> None:
    before = _leftovers()

    def failing():
        yield from _batches(50, 10)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt), shuffled(failing(), SCHEMA, 50, None, bucket_rows=4) as ordered:
        list(ordered)
    assert _leftovers() == before
    with shuffled(_batches(50, 10), SCHEMA, 50, None, bucket_rows=4) as ordered:
        next(ordered)  # the writer stops after the first batch (DuckDB failed, or an interrupt)
    assert _leftovers() == before
