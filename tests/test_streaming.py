"""Streamed release: batches do not change the output; order, missing values and progress."""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest

from pufferfish import dataset_path, release

ADULT = dict(
    secret="marital-status", public="workclass", pairs=[("Married-civ-spouse", "Never-married")], epsilon=0.5
)


def test_batch_size_does_not_change_a_seeded_release(tmp_path) -> None:
    seen: list[tuple[int, int]] = []
    small = release(
        "adult",
        **ADULT,
        output=tmp_path / "small.csv",
        rng=3,
        batch_rows=4_999,
        progress=lambda d, t: seen.append((d, t)),
    )
    whole = release("adult", **ADULT, output=tmp_path / "whole.csv", rng=3)
    assert (tmp_path / "small.csv").read_bytes() == (tmp_path / "whole.csv").read_bytes()
    assert small.report["noise"] == whole.report["noise"] and small.noise["seed"] == 3
    assert len(seen) == 10 and seen[-1] == (48_842, 48_842)  # ceil(48,842 / 4,999) batches
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    assert small.rows_released + small.rows_missing == 48_842


def test_streamed_parquet_keeps_order_and_types(tmp_path) -> None:
    src = tmp_path / "in.parquet"
    n = 25_000
    con = duckdb.connect()
    con.execute(
        f"COPY (SELECT i AS id, CASE WHEN i % 3 = 0 THEN 'a' ELSE 'b' END AS s, "
        f"(i % 5)::DOUBLE AS x, i * 0.5 AS y "
        f"FROM range({n}) t(i)) TO '{src}' (FORMAT parquet)"
    )
    con.close()
    out = tmp_path / "out.parquet"
    res = release(
        src,
        secret="s",
        public="x",
        pairs=[("a", "b")],
        epsilon=1.0,
        output=out,
        batch_rows=1_000,
        keep_unchecked="id,y",
        keep_order=True,
    )
    table = pd.read_parquet(out)
    assert table["id"].tolist() == list(range(n))  # row order kept across 25 batches
    assert table["y"].tolist() == [i * 0.5 for i in range(n)]
    assert table["x"].notna().all() and res.rows_missing == 0 and res.noise["secure"] is True
    noise = table["x"].to_numpy() - (np.arange(n) % 5)
    assert np.mean(np.abs(noise)) == pytest.approx(res.chosen.scale, rel=0.05)  # E|Laplace(b)| = b


def test_bad_batch_rows(tmp_path) -> None:
    with pytest.raises(ValueError, match="batch_rows must be an int >= 1, got 0"):
        release(dataset_path("adult"), **ADULT, output=tmp_path / "o.csv", batch_rows=0)
    assert not list(tmp_path.iterdir())


def test_codes_for_arrow_and_lists() -> None:
    import pyarrow as pa

    from pufferfish import estimate_priors
    from pufferfish.tables import DataError
    from pufferfish.tables.model import MISSING_LABEL

    est = estimate_priors("adult", secret=ADULT["secret"], public=ADULT["public"], pairs=ADULT["pairs"])
    codes = dict(est.mapping)
    got = est.codes_for(pa.array(["Private", None, "State-gov"]))
    # a missing cell has the code of its label (issue 41); with missing="omit", no code
    assert got[0] == codes["Private"] and got[1] == codes[MISSING_LABEL] == 8 and got[2] == codes["State-gov"]
    omit = estimate_priors("adult", **{k: ADULT[k] for k in ("secret", "public", "pairs")}, missing="omit")
    assert np.isnan(omit.codes_for(["Private", None])[1])
    assert np.array_equal(est.codes_for(["Private", None]), got[:2], equal_nan=True)
    with pytest.raises(DataError, match="label not in the mapping: 'zzz'"):
        est.codes_for(["Private", "zzz"])


def test_a_noiseless_release_keeps_integers_and_text_as_numbers(tmp_path) -> None:
    """Issue 44: at scale 0 (equal priors) an integer column stays integers (8, not 8.0), in a
    CSV and in a Parquet file; a float column's value is the one the check saw (8.50 and 8.5 are
    one value, written 8.5)."""
    import pandas as pd
    import pyarrow.parquet as pq

    from pufferfish.pipeline.release import release

    frame = pd.DataFrame([("A", 8), ("B", 8), ("A", 3), ("B", 3)] * 10, columns=["s", "x"])
    frame.to_csv(tmp_path / "t.csv", index=False)
    frame.to_parquet(tmp_path / "t.parquet")
    how = dict(secret="s", public="x", pairs=["A,B"], epsilon=1.0, prior_set="none")
    res = release(tmp_path / "t.csv", output=tmp_path / "o.csv", **how, keep_order=True)  # type: ignore[arg-type]
    assert res.chosen.scale == 0.0
    assert (tmp_path / "o.csv").read_text().splitlines()[:3] == ["x", "8", "8"]
    release(tmp_path / "t.parquet", output=tmp_path / "p.parquet", **how, keep_order=True)  # type: ignore[arg-type]
    table = pq.read_table(tmp_path / "p.parquet")
    assert str(table.schema.field("x").type) == "int64" and table.column("x").to_pylist()[:4] == [8, 8, 3, 3]
    text = "s,x\n" + "".join(
        f"{s},{v}\n" for s, v in [("A", "8.50"), ("B", "8.5"), ("A", "3"), ("B", "3.0")] * 5
    )
    (tmp_path / "f.csv").write_text(text)
    release(tmp_path / "f.csv", output=tmp_path / "g.csv", **how, keep_order=True)  # type: ignore[arg-type]
    assert (tmp_path / "g.csv").read_text().splitlines()[1:5] == ["8.5", "8.5", "3", "3"]
