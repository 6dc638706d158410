"""Spark engine in local mode: the same priors as DuckDB, and a release by a per-partition Arrow map.

Skipped when pyspark (the ``spark`` extra) or Java is not installed; CI installs both.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

pyspark = pytest.importorskip("pyspark")
if shutil.which("java") is None:  # pragma: no cover - depends on the machine
    pytest.skip("Spark needs Java", allow_module_level=True)

from pufferfish import estimate_priors, release  # noqa: E402
from pufferfish.cli.app import app  # noqa: E402
from pufferfish.tables import DataError, dataset_path  # noqa: E402
from pufferfish.tables.model import MISSING_LABEL, SecretGroup  # noqa: E402

pytestmark = pytest.mark.slow  # Spark starts a JVM: with the long tests (python -m pytest -m slow)

PAIR = [("Married-civ-spouse", "Never-married")]


@pytest.fixture(scope="module")
def spark() -> Any:
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("pufferfish-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="module")
def adult_parquet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped Adult table as Parquet (written by DuckDB, read by both engines)."""
    path = tmp_path_factory.mktemp("adult") / "adult.parquet"
    con = duckdb.connect()
    con.execute(
        f"COPY (SELECT * FROM read_csv('{dataset_path('adult')}', header=true)) TO '{path}' (FORMAT parquet)"
    )
    con.close()
    return path


def _same_priors(a: Any, b: Any) -> None:
    da, db = a.to_dict(), b.to_dict()
    da.pop("source"), db.pop("source")
    assert da == db
    for s, prior in a.scenario.priors[0].conditionals.items():
        other = b.scenario.priors[0].conditionals[s]
        np.testing.assert_array_equal(prior.support, other.support)
        np.testing.assert_array_equal(prior.pmf, other.pmf)  # bit for bit


@pytest.mark.parametrize(
    "kwargs",
    [
        {"public": "workclass"},
        {"public": "age"},
        {"public": "workclass", "weight": "fnlwgt"},
        {"public": "education", "order": None},
    ],
)
def test_spark_priors_equal_duckdb_priors_on_adult(spark: Any, adult_parquet: Path, kwargs: dict) -> None:
    """Same file, both engines: equal mapping, counts, dropped rows and bit-identical priors."""
    a = estimate_priors(adult_parquet, secret="marital-status", pairs=PAIR, **kwargs)
    b = estimate_priors(
        adult_parquet, secret="marital-status", pairs=PAIR, engine="spark", spark=spark, **kwargs
    )
    _same_priors(a, b)
    assert a.rows_total == b.rows_total == 48_842


def test_spark_priors_from_the_shipped_csv_and_a_spark_dataframe(spark: Any, adult_parquet: Path) -> None:
    a = estimate_priors("adult", secret="marital-status", public="workclass", pairs=PAIR)
    b = estimate_priors(
        "adult", secret="marital-status", public="workclass", pairs=PAIR, engine="spark", spark=spark
    )
    _same_priors(a, b)
    df = spark.read.parquet(str(adult_parquet))
    c = estimate_priors(
        df, secret="marital-status", public="workclass", pairs=PAIR, engine="spark", spark=spark
    )
    _same_priors(a, c)
    assert c.source.startswith("Spark DataFrame")


def test_spark_errors_match_duckdb_errors(spark: Any, adult_parquet: Path) -> None:
    for engine in ("duckdb", "spark"):
        with pytest.raises(DataError, match="public column 'nope' is not in the table"):
            estimate_priors(adult_parquet, secret="marital-status", public="nope", pairs=PAIR, engine=engine)
        with pytest.raises(DataError, match="secret value 'Married' does not occur"):
            estimate_priors(
                adult_parquet,
                secret="marital-status",
                public="age",
                pairs=[("Married", "Never-married")],
                engine=engine,
            )
    with pytest.raises(ValueError, match="engine must be one of duckdb, spark, got 'polars'"):
        estimate_priors(adult_parquet, secret="marital-status", public="age", pairs=PAIR, engine="polars")
    df = spark.read.parquet(str(adult_parquet))
    with pytest.raises(DataError, match="read by engine 'spark'"):
        estimate_priors(df, secret="marital-status", public="age", pairs=PAIR)


def test_spark_release_matches_duckdb_release(spark: Any, adult_parquet: Path, tmp_path: Path) -> None:
    """Secure release by mapInArrow: same calibration as DuckDB, every row kept with its other
    columns, missing public values still missing, noise on the sampler's grid."""
    names = duckdb.connect().execute(f"SELECT * FROM read_parquet('{adult_parquet}') LIMIT 0").df().columns
    kept = [c for c in names if c not in ("marital-status", "workclass")]  # the secret is never written
    args = dict(secret="marital-status", public="workclass", pairs=PAIR, epsilon=0.5, keep_unchecked=kept)
    ref = release(
        adult_parquet, output=tmp_path / "duck.parquet", mechanism="optimal", **args, keep_order=True
    )
    out = tmp_path / "spark.parquet"
    res = release(
        adult_parquet, output=out, engine="spark", spark=spark, mechanism="optimal", **args, keep_order=True
    )
    assert res.chosen.scale == ref.chosen.scale
    assert res.rows_released == ref.rows_released and res.rows_missing == ref.rows_missing
    assert res.noise["engine"] == "spark" and res.noise["secure"] is True
    assert out.is_dir()  # Spark writes a folder of part files
    con = duckdb.connect()
    got = con.execute(f"SELECT * FROM read_parquet('{out}/*.parquet') ORDER BY fnlwgt, age, education").df()
    src = con.execute(f"SELECT * FROM read_parquet('{adult_parquet}') ORDER BY fnlwgt, age, education").df()
    assert len(got) == len(src) == 48_842 and "marital-status" not in got.columns
    assert got.drop(columns="workclass").equals(src.drop(columns=["workclass", "marital-status"]))
    # a missing cell is the ninth label (code 8), released with noise as every other (issue 41)
    assert got["workclass"].notna().all() and src["workclass"].isna().sum() == 2_799
    codes = dict(res.estimated.mapping)
    noise = got["workclass"].to_numpy() - src["workclass"].fillna(MISSING_LABEL).map(codes).to_numpy()
    steps = noise / res.noise["granularity"]
    np.testing.assert_array_equal(steps, np.round(steps))
    assert abs(np.mean(np.abs(noise)) - res.chosen.scale) < 0.05  # E|Laplace(b)| = b
    report = json.loads(res.report_path.read_text())
    assert report["noise"]["engine"] == "spark"
    with pytest.raises(Exception, match="exists"):
        release(
            adult_parquet,
            output=out,
            engine="spark",
            spark=spark,
            mechanism="optimal",
            **args,
            keep_order=True,
        )


def test_spark_seeded_release_is_reproducible(spark: Any, adult_parquet: Path, tmp_path: Path) -> None:
    args = dict(
        secret="marital-status", public="age", pairs=PAIR, epsilon=1.0, rng=7, engine="spark", spark=spark
    )
    release(adult_parquet, output=tmp_path / "a.parquet", **args)
    release(adult_parquet, output=tmp_path / "b.parquet", **args)
    con = duckdb.connect()
    a = con.execute(f"SELECT age FROM read_parquet('{tmp_path}/a.parquet/*.parquet')").fetchnumpy()["age"]
    b = con.execute(f"SELECT age FROM read_parquet('{tmp_path}/b.parquet/*.parquet')").fetchnumpy()["age"]
    np.testing.assert_array_equal(a, b)
    with pytest.raises(TypeError, match="int seed or None with engine 'spark'"):
        release(
            adult_parquet,
            output=tmp_path / "c.parquet",
            **{**args, "rng": np.random.default_rng(1)},
        )


def rel_written(result: Any) -> list[str]:
    """The columns a release's report says it wrote."""
    return list(result.report["release"]["output_columns"]["written"])


def test_cli_engine_spark(adult_parquet: Path, tmp_path: Path, spark: Any) -> None:
    out = tmp_path / "cli.csv"
    base = ["release", str(adult_parquet), "--secret", "marital-status", "--pair",
            "Married-civ-spouse,Never-married", "--public", "workclass", "--epsilon", "0.5", "--output",
            str(out), "--engine", "spark", "--json"]  # fmt: skip
    # one column with missing cells: Spark's CSV writer would skip their empty lines (rows lost)
    refused = CliRunner().invoke(app, base)
    assert refused.exit_code == 1 and "cannot hold a missing cell" in refused.output
    result = CliRunner().invoke(app, [*base, "--keep-unchecked", "age", "--force"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["noise"]["engine"] == "spark"
    parts = sorted(out.glob("part-*.csv"))
    assert parts and sum(len(p.read_text().splitlines()) - 1 for p in parts) == 48_842


def test_spark_reads_secret_labels_as_written(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("code,age\n007,30\n012,40\n007,35\n012,41\n")
    duck = estimate_priors(path, secret="code", public="age", pairs=[("007", "012")])
    spark = estimate_priors(path, secret="code", public="age", pairs=[("007", "012")], engine="spark")
    assert [g.secret for g in spark.groups] == [g.secret for g in duck.groups] == ["007", "012"]
    assert [g.rows for g in spark.groups] == [2, 2]


def test_spark_release_keeps_other_columns_byte_for_byte(tmp_path: Path, spark: Any) -> None:
    from tests.test_as_written import KEPT, RELEASED, _expected, _released_values, _table

    text, parts = _table(",", "\n")
    src = tmp_path / "in.csv"
    src.write_text(text)
    out = tmp_path / "out.csv"
    res = release(
        src,
        secret="secret",
        public="pub",
        pairs=[("yes", "no")],
        epsilon=1.0,
        output=out,
        rng=3,
        engine="spark",
        spark=spark,
        keep_unchecked=KEPT,
        keep_order=True,
    )
    texts = [f.read_text() for f in sorted(out.glob("part-*.csv")) if f.stat().st_size]
    got = texts[0] + "".join(t.split("\n", 1)[1] for t in texts[1:])  # one header per part
    values = _released_values(got, ",")
    assert got == _expected(parts, values, ",", "\n")
    assert all(v != "" for v in values) and len(values) == len(RELEASED)
    assert res.rows_released == 6 and res.rows_missing == 0


def test_spark_counts_a_table_of_series_as_duckdb_does(tmp_path: Path, spark: Any) -> None:
    # issue 30: the transitions, first states, lengths and visits of the shipped mvad sequences,
    # from a CSV file and from a Spark DataFrame, equal DuckDB's; the release runs on Spark too
    from pufferfish.markov.estimate import read_series
    from pufferfish.markov.release import SeriesRequest, release_series

    columns = {"id_column": "id", "time_column": "month", "state_column": "activity"}
    duck = read_series("mvad", **columns)
    csv = tmp_path / "mvad.csv"
    con = duckdb.connect()
    con.execute(f"COPY (SELECT * FROM read_csv('{dataset_path('mvad')}', header=true)) TO '{csv}' (HEADER)")
    con.close()
    frame = spark.read.csv(str(csv), header=True, inferSchema=True)
    for data in (csv, frame):
        got = read_series(data, **columns, engine="spark", spark=spark)
        assert got.states == duck.states and got.ids == duck.ids
        for name in ("transitions", "first", "lengths", "visits"):
            assert np.array_equal(getattr(got, name), getattr(duck, name)), name
        assert (got.rows, got.rows_dropped) == (duck.rows, duck.rows_dropped) == (51264, 0)
    request = SeriesRequest(
        frame, "id", "month", "activity", "joblessness", 1.0, prior_set="none", engine="spark"
    )
    out = tmp_path / "released.csv"
    res = release_series(request, out, rng=1)
    lines = out.read_text().splitlines()
    assert lines[0] == "id,T,count_joblessness" and len(lines) == 713
    assert res.scales[72][0] == pytest.approx(24.1717, abs=5e-5)
    cli = CliRunner().invoke(
        app, ["markov", "calibrate", str(csv), "--id", "id", "--time", "month", "--state", "activity",
              "--target-state", "joblessness", "--epsilon", "1", "--prior-set", "none",
              "--mechanism", "optimal", "--engine", "spark", "--json"],
    )  # fmt: skip
    assert cli.exit_code == 0, cli.output
    assert json.loads(cli.stdout)["results"]["72"][0]["scale"] == pytest.approx(24.1717, abs=5e-5)
    refused = CliRunner().invoke(
        app, ["markov", "calibrate", "--transition", "0.9,0.1;0.1,0.9", "--length", "10", "--epsilon", "1",
              "--engine", "spark"],
    )  # fmt: skip
    assert refused.exit_code == 1 and "--engine reads a DATA table" in refused.output


def test_spark_several_columns_equal_duckdb_and_release_labels(
    spark: Any, adult_parquet: Path, tmp_path: Path
) -> None:
    """Issue 31: several columns with Spark, from Parquet and a Spark DataFrame: the same joint
    priors, units, prior sets and scales as DuckDB; the release writes the categorical column as
    its labels and the numeric one as numbers, every other column unchanged."""
    import pandas as pd

    from pufferfish.pipeline.calibrate import calibrate_table
    from pufferfish.pipeline.release import release

    args = dict(secret="sex", public="workclass,age", pairs=["Male,Female"], epsilon=1.0,
                mechanisms=["l1", "optimal"])  # fmt: skip
    duck = calibrate_table(adult_parquet, **args)  # type: ignore[arg-type]
    for data in (adult_parquet, spark.read.parquet(str(adult_parquet))):
        sp = calibrate_table(data, engine="spark", spark=spark, **args)  # type: ignore[arg-type]
        assert sp.units == duck.units and sp.labels == duck.labels and sp.categorical == duck.categorical
        for s, p in duck.priors().items():
            q = sp.priors()[s]
            assert np.array_equal(p.support, q.support) and np.allclose(p.pmf, q.pmf, rtol=1e-12)
        assert sp.prior_set() == duck.prior_set()
        for a, b in zip(duck.comparison, sp.comparison, strict=True):
            assert a.scale == b.scale  # type: ignore[union-attr]
    out = tmp_path / "joint.parquet"
    r = release(adult_parquet, secret="sex", public="workclass,age", pairs=["Male,Female"], epsilon=1.0,
                      output=out, engine="spark", spark=spark)  # fmt: skip
    got = spark.read.parquet(str(out)).toPandas()
    orig = pd.read_parquet(adult_parquet)
    assert len(got) == len(orig) == r.rows_released + r.rows_missing
    assert got["workclass"].dropna().isin(r.calibration.labels[0]).all()  # labels, not codes
    assert r.rows_missing == 0 and r.rows_released == len(orig)  # a missing cell is a label (issue 41)
    assert got["age"].dtype == np.float64 and not got["age"].isin(range(17, 91)).all()
    assert list(got.columns) == ["age", "workclass"] == rel_written(r)  # nothing else (issue 41)
    rel = r.report["release"]
    assert rel["noise"]["columns"]["age"]["engine"] == "spark" and rel["noise"]["columns"]["age"]["secure"]
    assert rel["column_noise"]["workclass"]["kind"] == "randomized-response" and rel["drawn_scales_checked"]
    res = CliRunner().invoke(
        app,
        ["release", str(adult_parquet), "--secret", "sex", "--pair", "Male,Female", "--public",
         "workclass,age", "--epsilon", "1", "--output", str(tmp_path / "cli.csv"), "--engine", "spark",
         "--json"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["inputs"]["engine"] == "spark"


def test_spark_releases_a_mapping_of_a_categorical_column(
    spark: Any, adult_parquet: Path, tmp_path: Path
) -> None:
    """Issue 31: the randomized mappings with Spark (one column): the default release of a
    categorical column is optimal-mapping, labels in and out, with the rows per label counted as
    the DuckDB engine counts them."""
    import pandas as pd

    args = dict(secret="marital-status", public="workclass", pairs=PAIR, epsilon=1.0)
    duck = release(adult_parquet, output=tmp_path / "d.parquet", rng=5, **args)  # type: ignore[arg-type]
    sp = release(adult_parquet, output=tmp_path / "s.parquet", engine="spark", spark=spark, **args)  # type: ignore[arg-type]
    assert sp.chosen.mechanism == duck.chosen.mechanism == "optimal-mapping"
    assert sp.chosen.expected_accuracy == duck.chosen.expected_accuracy  # type: ignore[union-attr]
    counts, duck_counts = sp.noise["counts"], duck.noise["counts"]
    assert counts["values"] == duck_counts["values"] and counts["input"] == duck_counts["input"]
    assert sum(counts["output"]) == sum(counts["input"]) and sp.noise["secure"]
    got = spark.read.parquet(str(tmp_path / "s.parquet")).toPandas()
    orig = pd.read_parquet(adult_parquet)
    assert got["workclass"].dropna().isin(counts["values"]).all() and len(got) == len(orig)
    for label, n in zip(counts["values"], counts["output"], strict=True):  # None: a missing cell
        assert int((got["workclass"].isna() if label is None else got["workclass"] == label).sum()) == n


def test_spark_counts_the_missing_atom_as_duckdb_does(tmp_path: Path, spark: Any) -> None:
    # issue 41: one numeric column's missing cells per secret (the missing atom), weighted
    path = tmp_path / "t.csv"
    path.write_text("s,x,w\na,1,2\na,,1\nb,3,1\nb,,3\nb,,1\n,,5\na,4,\n")
    how = dict(secret="s", public="x", pairs=[("a", "b")], weight="w")
    duck = estimate_priors(path, **how)  # type: ignore[arg-type]
    spark_est = estimate_priors(path, **how, engine="spark")  # type: ignore[arg-type]
    by = {g.secret: g for g in duck.missing_groups}
    assert by == {g.secret: g for g in spark_est.missing_groups}
    assert by == {"a": SecretGroup("a", 1, 1.0, 1.0), "b": SecretGroup("b", 2, 4.0, 10.0)}
    assert duck.missing_cells == spark_est.missing_cells == 4


def test_spark_release_with_declared_bounds_clamps_as_duckdb(tmp_path: Path, spark: Any) -> None:
    # issue 41: --bounds with Spark: the same calibration (values clamped, sets on the grid) and a
    # release of clamped values plus noise
    import pandas as pd

    rng = np.random.default_rng(8)
    path = tmp_path / "t.csv"
    frame = pd.DataFrame({"s": rng.choice(["a", "b"], 300), "x": rng.integers(-10, 40, 300)})
    frame.to_csv(path, index=False)
    how = dict(secret="s", public="x", pairs=[("a", "b")], epsilon=1.0, bounds="0,30", rng=4)
    duck = release(path, output=tmp_path / "d.parquet", **how)  # type: ignore[arg-type]
    sp = release(path, output=tmp_path / "s.parquet", engine="spark", spark=spark, **how)  # type: ignore[arg-type]
    assert sp.chosen.scale == duck.chosen.scale and sp.report["domain"] == duck.report["domain"]  # type: ignore[union-attr]
    assert sp.report["domain"]["clamped_rows"] > 0
    got = pd.read_parquet(tmp_path / "s.parquet")["x"].to_numpy()
    assert abs(np.median(got) - 15) < 8 and got.size == 300


def test_spark_release_with_a_checked_kept_column(tmp_path: Path, spark: Any) -> None:
    # issue 41, --keep with Spark: the same joint calibration, the kept column written as it is
    import pandas as pd

    rng = np.random.default_rng(9)
    n = 2000
    s = rng.choice(["a", "b"], n)
    frame = pd.DataFrame({"s": s, "x": rng.integers(0, 6, n), "k": np.where(rng.random(n) < 0.5, "u", "v")})
    path = tmp_path / "t.csv"
    frame.to_csv(path, index=False)
    how = dict(secret="s", public="x", pairs=[("a", "b")], epsilon=1.0, keep="k", rng=3, prior_set="none")
    duck = release(path, output=tmp_path / "d.parquet", **how)  # type: ignore[arg-type]
    sp = release(path, output=tmp_path / "s.parquet", engine="spark", spark=spark, **how)  # type: ignore[arg-type]
    assert sp.chosen.scale == duck.chosen.scale  # type: ignore[union-attr]
    got = pd.read_parquet(tmp_path / "s.parquet")
    assert sorted(got.columns) == ["k", "x"] and sorted(got["k"]) == sorted(frame["k"])


def test_spark_typed_kept_columns_match_duckdb(spark: Any, tmp_path: Path) -> None:
    """Issue 41 (c): a Parquet column kept inside the check is written in its own type by Spark as
    by DuckDB, equal to the input value by value."""
    import datetime as dt

    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(2)
    n = 400
    table = pa.table({
        "s": rng.choice(["A", "B"], n),
        "x": rng.integers(0, 9, n).astype(float),
        "i": pa.array(rng.choice([1, 2, None], n).tolist(), type=pa.int64()),
        "b": pa.array(rng.choice([True, False], n)),
        "d": pa.array([dt.date(2020, 1, 1 + int(v)) for v in rng.integers(0, 2, n)]),
    })  # fmt: skip
    src = tmp_path / "t.parquet"
    pq.write_table(table, src)
    how = dict(secret="s", public="x", keep="i,b,d", pairs=[("A", "B")], epsilon=3.0, prior_set="none")
    release(src, output=tmp_path / "duck.parquet", **how, keep_order=True)  # type: ignore[arg-type]
    release(src, output=tmp_path / "spark.parquet", engine="spark", spark=spark, **how, keep_order=True)  # type: ignore[arg-type]
    duck = pq.read_table(tmp_path / "duck.parquet")
    got = pq.read_table(tmp_path / "spark.parquet")  # Spark's folder of part files
    for col in ("i", "b", "d"):
        assert duck.schema.field(col).type == table.schema.field(col).type
        assert duck.column(col).equals(table.column(col))
        assert got.schema.field(col).type == table.schema.field(col).type, col
        key = pa.compute.value_counts(got.column(col)).to_pylist()
        assert sorted(map(str, key)) == sorted(
            map(str, pa.compute.value_counts(table.column(col)).to_pylist())
        )


def test_spark_missing_numbers_among_several_columns_match_duckdb(spark: Any, tmp_path: Path) -> None:
    """Issue 41 (b): a missing number among several columns is its column's missing atom, the same
    priors and scale by Spark as by DuckDB, the cell written missing and the row's others released."""
    rng = np.random.default_rng(4)
    n = 1200
    s = rng.choice(["A", "B"], n)
    x = rng.integers(0, 5, n).astype(float)
    x[rng.random(n) < 0.1] = np.nan
    frame = pd.DataFrame({"s": s, "c": rng.choice(["u", "v"], n), "x": x})
    src = tmp_path / "t.parquet"
    frame.to_parquet(src)
    how = dict(secret="s", public="c,x", pairs=[("A", "B")], epsilon=1.0, prior_set="none")
    duck = release(src, output=tmp_path / "duck.parquet", **how)  # type: ignore[arg-type]
    res = release(src, output=tmp_path / "spark.parquet", engine="spark", spark=spark, **how)  # type: ignore[arg-type]
    assert res.chosen.scale == duck.chosen.scale
    assert res.calibration.scenario.metric.missing == (False, True)
    got = pd.read_parquet(tmp_path / "spark.parquet")
    assert (
        len(got) == n
        and got["c"].notna().all()
        and int(got["x"].isna().sum()) == int(frame["x"].isna().sum())
    )


def test_spark_refuses_a_text_column_of_mostly_numbers_as_duckdb(spark: Any, tmp_path: Path) -> None:
    """Issue 44: the same one line from both engines, before any work."""
    rows = [f"{'ab'[i % 2]},{'?' if i % 25 == 0 else 100 + i % 37}\n" for i in range(500)]
    src = tmp_path / "t.csv"
    src.write_text("g,chol\n" + "".join(rows))
    messages = []
    for engine in ("duckdb", "spark"):
        with pytest.raises(DataError) as err:
            estimate_priors(src, secret="g", public="chol", pairs=[("a", "b")], engine=engine, spark=spark)
        messages.append(str(err.value))
    assert messages[0] == messages[1]
    assert "96% of its values are numbers; the others are '?' (20 rows): pass --na '?'" in messages[0]


def test_spark_imputes_under_bounds_and_shuffles_like_duckdb(spark: Any, tmp_path: Path) -> None:
    # issue 54 on the Spark engine: a missing number under declared bounds is the imputed value,
    # released with the same noise (no missing cell written); the rows come out in a random order
    # with each kept cell beside its row's released value
    g = np.random.default_rng(5)
    n = 400
    x = g.integers(0, 7, n).astype(float)
    x[g.random(n) < 0.05] = np.nan
    src = tmp_path / "t.parquet"
    pd.DataFrame({"s": g.choice(["A", "B"], n), "x": x, "id": np.arange(n)}).to_parquet(src)
    how = dict(secret="s", public="x", pairs=["A,B"], epsilon=1.0, bounds="0,10", keep_unchecked="id",
               prior_set="none", rng=3)  # fmt: skip
    duck = release(src, output=tmp_path / "d.parquet", **how)  # type: ignore[arg-type]
    sp = release(src, output=tmp_path / "s.parquet", engine="spark", spark=spark, **how)  # type: ignore[arg-type]
    assert duck.drawn_scales == sp.drawn_scales and sp.report["inputs"]["impute"] == 0.0
    got = pd.read_parquet(tmp_path / "s.parquet")
    assert len(got) == n and not got["x"].isna().any() and sorted(got["id"].astype(int)) == list(range(n))
    assert list(got["id"].astype(int)) != list(range(n))  # not the input order


def test_spark_from_a_virtual_environment_called_by_its_path_not_activated(tmp_path) -> None:
    # issue 56: `venv/bin/pufferfish` called by its path (cron, pipx): the local workers ran another
    # Python without pufferfish (272 lines, an empty out.csv/ left behind). They run this interpreter.
    import os
    import subprocess
    import sys

    exe = Path(sys.executable).with_name("pufferfish")
    java = Path(shutil.which("java") or "java").resolve().parent
    env = {"PATH": f"{java}:/usr/bin:/bin", "HOME": os.environ.get("HOME", str(tmp_path))}
    env |= {k: v for k, v in os.environ.items() if k == "JAVA_HOME"}
    out = tmp_path / "out.csv"
    args = [str(exe), "release", "adult", "--secret", "sex", "--pair", "Male,Female", "--public", "age",
            "--epsilon", "1", "--engine", "spark", "--output", str(out), "--rng-seed", "1"]  # fmt: skip
    res = subprocess.run(args, capture_output=True, text=True, env=env, cwd=tmp_path, check=False)
    assert res.returncode == 0, res.stderr[-2000:]
    assert out.exists() and "No module named" not in res.stderr


def test_spark_workers_without_pufferfish_fail_in_one_line_and_leave_nothing(tmp_path) -> None:
    # issue 56: if the workers still cannot import pufferfish (a PYSPARK_PYTHON set to another
    # Python), the cause is one line naming the fix, and nothing is left where the output was to be;
    # an existing output replaced with --force is kept when the job fails.
    import os
    import subprocess
    import sys

    other = shutil.which("python3", path="/usr/bin:/bin")
    if (
        other is None
        or subprocess.run([other, "-c", "import pufferfish"], capture_output=True).returncode == 0
    ):
        pytest.skip("needs a Python without pufferfish")
    exe = Path(sys.executable).with_name("pufferfish")
    java = Path(shutil.which("java") or "java").resolve().parent
    env = {
        "PATH": f"{java}:/usr/bin:/bin",
        "HOME": os.environ.get("HOME", str(tmp_path)),
        "PYSPARK_PYTHON": other,
    }
    env |= {k: v for k, v in os.environ.items() if k == "JAVA_HOME"}
    out = tmp_path / "out.csv"
    out.mkdir()
    (out / "part-0.csv").write_text("the user's earlier output\n")
    args = [str(exe), "release", "adult", "--secret", "sex", "--pair", "Male,Female", "--public", "age",
            "--epsilon", "1", "--engine", "spark", "--output", str(out), "--force"]  # fmt: skip
    res = subprocess.run(args, capture_output=True, text=True, env=env, cwd=tmp_path, check=False)
    assert res.returncode == 1, res.stderr[-2000:]
    (line,) = [x for x in res.stderr.splitlines() if x.startswith("error:")]
    assert "ModuleNotFoundError: No module named 'pufferfish' in Spark's Python workers" in line
    assert f"PYSPARK_PYTHON={other!r}" in line and sys.executable in line
    assert "\tat " not in res.stderr  # no Java frames
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv"]  # no temporary folder left
    assert [p.name for p in out.iterdir()] == ["part-0.csv"]  # the earlier output kept


def test_a_one_column_csv_written_by_duckdb_reads_every_row_in_spark(tmp_path) -> None:
    # issue 56: a missing cell of a one-column CSV is written "" (not an empty line), so Spark's
    # reader with its defaults (as pandas', R's and DuckDB's) reads every row
    src = tmp_path / "one.csv"
    src.write_text(
        "s,c\n" + "".join(f"{'AB'[i % 2]},{'' if i % 9 == 0 else 'pqr'[i % 3]}\n" for i in range(300))
    )
    out = tmp_path / "one_out.csv"
    release(src, secret="s", pairs=["A,B"], public="c", epsilon=1.0, output=out)
    assert '""' in out.read_text().splitlines()  # the missing cells, quoted
    session = pyspark.sql.SparkSession.builder.master("local[1]").getOrCreate()
    assert session.read.csv(str(out), header=True).count() == 300
