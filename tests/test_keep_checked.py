"""Issue 41: columns kept in clear INSIDE the check (--keep, keep=): released jointly with the
public column by the identity channel; refused, one line per column, when they alone exceed eps."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from pufferfish import DataError
from pufferfish.cli.app import app
from pufferfish.pipeline.release import release


def _table(seed: int, n: int = 600) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    s = rng.choice(["A", "B"], size=n)
    k = np.where(rng.random(n) < np.where(s == "A", 0.45, 0.55), "u", "v")
    x = rng.integers(0, 5, n) + (s == "B") * rng.integers(0, 2, n) + (k == "u")
    return pd.DataFrame({"s": s, "x": x.astype(float), "k": k, "id": [f"{i:04d}" for i in range(n)]})


def _whole_row_loss(frame: pd.DataFrame, b: float) -> float:
    """sup over the kept label e and a fine grid of y of |log P_A(y, e) - log P_B(y, e)|, with
    P_s(y, e) = sum_x P(x, e | s) Laplace(y - x; b)."""
    ys = np.linspace(-40.0, 50.0, 9001)
    worst = 0.0
    for e in ("u", "v"):
        dens = []
        for s in ("A", "B"):
            g = frame[frame["s"] == s]
            f = np.zeros_like(ys)
            for x, mass in (g[g["k"] == e]["x"].value_counts() / len(g)).items():
                f += mass * np.exp(-np.abs(ys - float(x)) / b) / (2 * b)
            dens.append(f)
        worst = max(worst, float(np.max(np.abs(np.log(dens[0]) - np.log(dens[1])))))
    return worst


@pytest.mark.parametrize("seed", range(5))
def test_the_whole_row_meets_eps_by_brute_force(tmp_path: Path, seed: int) -> None:
    frame = _table(seed)
    src = tmp_path / "t.csv"
    frame.to_csv(src, index=False)
    res = release(src, secret="s", public="x", pairs=[("A", "B")], epsilon=1.0, output=tmp_path / "o.csv",
                  keep="k", prior_set="none", rng=seed, keep_unchecked="id", keep_order=True)  # fmt: skip
    got = pd.read_csv(tmp_path / "o.csv", dtype={"id": str})
    assert list(got.columns) == ["x", "k", "id"]
    assert (got["k"] == frame["k"]).all() and (got["id"] == frame["id"]).all()  # as written
    assert not np.allclose(got["x"], frame["x"])  # noised
    cols = res.report["release"]["output_columns"]
    assert cols["covered_by_the_guarantee"] == ["x", "k"] and [
        c["column"] for c in cols["kept_unchecked"]
    ] == ["id"]
    b = res.report["release"]["drawn_scales"]["x"]
    loss = _whole_row_loss(frame, b)
    assert loss <= 1.0 + 1e-9
    assert loss > 0.9  # the kept column is inside the check: the noise is calibrated with it
    if seed == 0:  # the secure sampler: the drawn scale is checked again, the kept column undrawn
        secure = release(src, secret="s", public="x", pairs=[("A", "B")], epsilon=1.0, keep="k",
                         output=tmp_path / "secure.csv", prior_set="none", keep_order=True)  # fmt: skip
        assert secure.report["release"]["drawn_scales_checked"]
        assert _whole_row_loss(frame, secure.report["release"]["drawn_scales"]["x"]) <= 1.0 + 1e-9
        assert (pd.read_csv(tmp_path / "secure.csv")["k"] == frame["k"]).all()


def test_kept_columns_alone_beyond_eps_are_refused_one_line_each(tmp_path: Path) -> None:
    res = CliRunner().invoke(
        app,
        ["release", "adult", "--secret", "marital-status", "--pair", "Married-civ-spouse,Never-married",
         "--public", "workclass", "--keep", "relationship,sex", "--epsilon", "0.5", "--output",
         str(tmp_path / "o.csv"), "--prior-set", "none"],
    )  # fmt: skip
    assert res.exit_code == 1 and not (tmp_path / "o.csv").exists()
    line = res.output.strip()
    assert line.count("\n") == 0 and line.startswith(
        "error: the columns kept in clear alone exceed epsilon 0.5"
    )
    assert "relationship: loss inf at the estimate ('Husband' occurs only with Married-civ-spouse)" in line
    assert "sex: loss" in line


def test_keep_is_checked_at_the_edge(tmp_path: Path) -> None:
    frame = _table(1)
    src = tmp_path / "t.csv"
    frame.to_csv(src, index=False)
    how = dict(secret="s", public="x", pairs=[("A", "B")], epsilon=1.0, output=tmp_path / "o.csv")
    with pytest.raises(ValueError, match="keep cannot hold the secret column 's'"):
        release(src, keep="s", **how)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="keep names 'x', a released column"):
        release(src, keep="x", **how)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'k' is named by both keep .* and keep_unchecked"):
        release(src, keep="k", keep_unchecked="k", **how)  # type: ignore[arg-type]
    with pytest.raises(DataError, match="the columns kept in clear alone exceed epsilon 1"):
        release(src, keep="id", prior_set="none", **how)  # type: ignore[arg-type]
    assert not (tmp_path / "o.csv").exists() and math.isfinite(1.0)


def test_default_balls_cover_the_kept_column(tmp_path: Path) -> None:
    # the default prior set (95% L1 balls on the joint alphabet of (x, k)): the whole row is
    # checked over the balls, and the point estimate's loss at the drawn scale is within eps
    frame = _table(3, n=6000)
    src = tmp_path / "t.csv"
    frame.to_csv(src, index=False)
    res = release(src, secret="s", public="x", pairs=[("A", "B")], epsilon=1.0, output=tmp_path / "o.csv",
                  keep="k", rng=1)  # fmt: skip
    rel = res.report["release"]
    assert res.report["prior_set"]["kind"] == "l1" and rel["checked_loss"] <= 1.0
    assert _whole_row_loss(frame, rel["drawn_scales"]["x"]) <= 1.0


def test_cli_keep_with_an_html_report(tmp_path: Path) -> None:
    # the report's transport-plan figures draw a kept column with the Hamming distance (the
    # identity channel's is infinite); the page says the column is released as it is
    frame = _table(2, n=3000)
    src = tmp_path / "t.csv"
    frame.to_csv(src, index=False)
    page = tmp_path / "o.html"
    res = CliRunner().invoke(
        app,
        ["release", str(src), "--secret", "s", "--pair", "A,B", "--public", "x", "--keep", "k",
         "--epsilon", "1", "--output", str(tmp_path / "o.csv"), "--report", str(page)],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "released as it is (a kept column, or no noise needed), inside the check" in page.read_text()
    assert "written: x, k (covered by the guarantee: x, k)" in res.output


def test_one_column_options_are_refused_with_a_kept_column(tmp_path: Path) -> None:
    # a kept column makes the release one of several columns: options of one column are refused
    # in one line (never silently ignored)
    frame = _table(4)
    src = tmp_path / "t.csv"
    frame.to_csv(src, index=False)
    how = dict(secret="s", public="x", pairs=[("A", "B")], epsilon=1.0, output=tmp_path / "o.csv", keep="k")
    with pytest.raises(ValueError, match=r"prior \(--prior\) applies to one public column"):
        release(src, prior="gaussian", **how)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"noise \(--noise gaussian\), labels \(--labels\) apply to one"):
        release(src, labels="z", noise="gaussian", **how)  # type: ignore[arg-type]
    assert not (tmp_path / "o.csv").exists()


def test_calibrate_with_a_kept_column_compares_what_applies(tmp_path: Path) -> None:
    from pufferfish.calibration import Calibration, Skipped
    from pufferfish.pipeline.calibrate import calibrate_table

    frame = _table(0)
    src = tmp_path / "t.csv"
    frame.to_csv(src, index=False)
    table = calibrate_table(
        src,
        secret="s",
        public="x",
        pairs=["A,B"],
        epsilon=1.0,
        keep="k",
        prior_set="none",
        mechanisms=["l1", "kantorovich", "optimal"],
    )
    assert table.columns == ("x", "k") and table.scenario.metric.identity == (False, True)  # type: ignore[union-attr]
    (optimal,) = [c for c in table.comparison if isinstance(c, Calibration)]
    assert optimal.mechanism == "optimal" and optimal.checked_loss <= 1.0  # type: ignore[operator]
    assert _whole_row_loss(frame, optimal.scale * table.units[0]) <= 1.0 + 1e-9  # Laplace(b w_x)
    reasons = {c.mechanism: c.reason for c in table.comparison if isinstance(c, Skipped)}
    assert "only the exact check (optimal) applies" in reasons["l1"]


def test_typed_kept_columns_are_written_in_their_own_type(tmp_path: Path) -> None:
    """Issue 41 (c): a Parquet column kept inside the check comes back in its own type, equal to the
    input value by value (a function of its released labels, checked equal); a CSV keeps its text."""
    import datetime as dt

    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(2)
    n = 400
    table = pa.table({
        "s": rng.choice(["A", "B"], n),
        "x": rng.integers(0, 9, n).astype(float),
        "i": pa.array(rng.choice([1, 2, None], n).tolist(), type=pa.int64()),
        "f": pa.array(rng.choice([0.1, 1e-5, 1.5], n)),
        "b": pa.array(rng.choice([True, False], n)),
        "d": pa.array([dt.date(2020, 1, 1 + int(v)) for v in rng.integers(0, 2, n)]),
        "ts": pa.array([dt.datetime(2020, 1, 1, 3, 4, int(v)) for v in rng.integers(0, 2, n)]),
    })  # fmt: skip
    src = tmp_path / "t.parquet"
    pq.write_table(table, src)
    for col in ("i", "f", "b", "d", "ts"):
        out = tmp_path / f"o-{col}.parquet"
        release(src, secret="s", public="x", keep=col, pairs=["A,B"], epsilon=3.0, output=out, rng=1,
                prior_set="none", keep_order=True)  # fmt: skip
        written = pq.read_table(out)
        assert written.schema.field(col).type == table.schema.field(col).type, col
        assert written.column(col).equals(table.column(col)), col
    csv = tmp_path / "t.csv"
    csv.write_text(
        "s,x,f\n" + "".join(f"{'AB'[i % 2]},{i % 5},{['1.50', '2.25'][i % 3 % 2]}\n" for i in range(200))
    )
    how = dict(secret="s", public="x", keep="f", pairs=["A,B"], epsilon=3.0, rng=1, prior_set="none")
    release(csv, output=tmp_path / "c.csv", **how, keep_order=True)  # type: ignore[arg-type]
    assert pd.read_csv(tmp_path / "c.csv", dtype=str)["f"].tolist() == [
        ["1.50", "2.25"][i % 3 % 2] for i in range(200)
    ]


def test_restore_type_refuses_a_text_that_does_not_come_back() -> None:
    import pyarrow as pa

    from pufferfish.tables.perturb import restore_type

    labels = pa.array(["0.1", None, "2"])
    assert restore_type(labels, pa.array([0.1, None, 2.0]), "f").equals(pa.array([0.1, None, 2.0]))
    with pytest.raises(DataError, match="kept column 'f' \\(double\\) does not come back from its text"):
        restore_type(labels, pa.array([0.1000001, None, 2.0]), "f")
    with pytest.raises(DataError, match="kept column 'g' \\(int64\\)"):
        restore_type(pa.array(["x"]), pa.array([1]), "g")
    assert restore_type(labels, pa.array(["a", "b", "c"]), "t") is labels
