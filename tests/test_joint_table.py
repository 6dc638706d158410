"""Several public columns of a table calibrated jointly (issues 17, 31): the DuckDB joint priors,
``pufferfish calibrate --public a,b --unit col=w`` on Adult and on a small CSV, its JSON rows
(``columns``, ``units``, ``column_scales``), categorical columns released as labels, and bad
input. The prior sets on the joint alphabet are tested in tests/test_joint_sets.py."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from pufferfish.calibration import Calibration, Skipped, run_comparison
from pufferfish.cli.app import app
from pufferfish.loss.product import product_laplace_loss
from pufferfish.pipeline.calibrate import TableCalibration, calibrate_table
from pufferfish.pipeline.release import release
from pufferfish.pipeline.report import JOINT_FIGURES
from pufferfish.pipeline.request import parse_units
from pufferfish.priors.joint import JointPrior, Metric
from pufferfish.priors.scenario import AdversaryPrior, Scenario
from pufferfish.tables.source import DataError, dataset_path

runner = CliRunner()


@pytest.mark.slow
def test_adult_age_hours_given_sex_reference_figures() -> None:
    """The done-when figures (benchmarks/results/joint_tables.md): every Laplace scale passes the
    exact check, wasserstein-inf <= kantorovich, optimal the smallest."""
    t = calibrate_table(
        "adult", secret="sex", public="age,hours-per-week", pairs=["Male,Female"], epsilon=[0.5, 1.0],
        units=["age=1", "hours-per-week=1"], prior_set="none",
    )  # fmt: skip
    assert {s: p.size for s, p in t.priors().items()} == {"Male": 2472, "Female": 2025}
    assert t.rows_total == 48842 and t.rows_dropped == 0
    got = {(c.epsilon, c.mechanism): c for c in t.comparison if isinstance(c, Calibration)}
    for eps, ref in ((0.5, (338, 54, 38, 38)), (1.0, (169, 27, 19, 19))):
        scales = [got[eps, m].scale for m in ("l1", "kantorovich", "wasserstein-inf", "relaxed")]
        assert scales == pytest.approx(ref, rel=1e-12)
        assert got[eps, "optimal"].scale == pytest.approx(
            {0.5: 18.2776686643582, 1.0: 8.608849373619705}[eps], rel=1e-7
        )
        assert got[eps, "optimal"].scale < min(scales)
    prior_i, prior_j = t.priors()["Male"], t.priors()["Female"]
    for c in got.values():
        assert c.numerically_checked
        loss = product_laplace_loss(prior_i, prior_j, t.scenario.metric, c.scale)
        assert loss.loss + loss.error_bound <= c.epsilon


def test_units_scale_the_noise_per_column_and_categorical_columns_are_coded(tmp_path) -> None:
    gen = np.random.default_rng(5)
    n = 400
    frame = pd.DataFrame(
        {
            "id": [f"{k:04d}" for k in range(n)],
            "group": gen.choice(["a", "b"], size=n),
            "income": gen.integers(0, 20, size=n) * 1000,
            "level": gen.choice(["low", "mid", "high"], size=n),
        }
    )
    frame.loc[3, "income"] = None
    path = tmp_path / "t.csv"
    frame.to_csv(path, index=False)
    t = calibrate_table(
        path, secret="group", public=["income", "level"], pairs=["a,b"], epsilon=1.0, units=["income=1000"],
        prior_set="none", missing="omit",  # the missing income left out (a calibration only)
    )  # fmt: skip
    assert t.units == (1000.0, 1.0) and t.categorical == (False, True)
    assert t.labels[1] == ["high", "low", "mid"] and t.rows_dropped == 1
    assert t.scenario.metric is not None and t.scenario.metric.categories == (0, 3)
    unit1 = calibrate_table(
        path, secret="group", public=["income", "level"], pairs=["a,b"], epsilon=1.0, units=["income=1"],
        prior_set="none", missing="omit",
    )  # fmt: skip
    default = calibrate_table(
        path,
        secret="group",
        public=["income", "level"],
        pairs=["a,b"],
        epsilon=1.0,
        prior_set="none",
        missing="omit",
    )
    span = float(frame["income"].max() - frame["income"].min())
    assert default.units == (span, 1.0)  # a numeric column's range, 1 for a categorical one
    k1000 = next(c for c in t.comparison if c.mechanism == "kantorovich")
    k1 = next(c for c in unit1.comparison if c.mechanism == "kantorovich")
    assert isinstance(k1000, Calibration) and isinstance(k1, Calibration)
    assert k1000.scale < k1.scale  # distance 1 is now 1000 of income, not 1
    row = next(r for r in t.to_dict()["results"] if r["mechanism"] == "kantorovich")
    assert row["columns"] == ["income", "level"] and row["units"] == [1000.0, 1.0]
    assert row["column_scales"] == {"income": k1000.scale * 1000.0, "level": k1000.scale}


@pytest.mark.slow
def test_cli_calibrate_several_columns_json_and_table() -> None:
    res = runner.invoke(
        app,
        ["calibrate", "adult", "--secret", "sex", "--pair", "Male,Female", "--public", "age,hours-per-week",
         "--epsilon", "1", "--unit", "hours-per-week=2", "--unit", "age=1", "--prior-set", "none", "--json"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["columns"] == ["age", "hours-per-week"] and out["units"] == [1.0, 2.0]
    assert out["prior_set"]["kind"] == "none"
    rows = {r["mechanism"]: r for r in out["results"]}
    assert rows["wasserstein-inf"]["scale"] <= rows["kantorovich"]["scale"]
    assert rows["optimal"]["scale"] < rows["relaxed"]["scale"]
    assert all(r["numerically_checked"] for r in out["results"])
    res = runner.invoke(
        app,
        ["calibrate", "adult", "--secret", "sex", "--pair", "Male,Female", "--public", "age,hours-per-week",
         "--epsilon", "0.5", "--noise", "gaussian", "--delta", "1e-6", "--mechanism", "analytic-gaussian"],
    )  # fmt: skip
    assert res.exit_code == 1 and "Gaussian noise on several columns has no exact" in res.output
    assert len(res.output.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--unit", "age=0"], "unit of 'age' must be finite and > 0"),
        (["--unit", "fnlwgt=2"], "not a public column"),
        (["--unit", "age"], "unit must be 'column=w'"),
        (["--order", "a,b"], "order (--order) applies to one public column"),
        (["--categorical", "age", "--numeric", "age"], "cannot be both categorical and numeric"),
        (["--numeric", "sex"], "it cannot be numeric"),
        (["--categorical", "race"], "may name the public or weight column, got 'race'"),
        (["--mechanism", "optimal-mapping"], ""),
    ],
)
def test_cli_several_columns_bad_input(extra: list[str], message: str) -> None:
    res = runner.invoke(
        app,
        ["calibrate", "adult", "--secret", "sex", "--pair", "Male,Female", "--public", "age,hours-per-week",
         "--epsilon", "1", *extra],
    )  # fmt: skip
    if extra[0] == "--mechanism":  # named but not applicable: listed with the reason
        assert res.exit_code == 0 and "maps one column's alphabet" in res.output
        return
    assert res.exit_code == 1 and message in res.output
    assert len(res.output.strip().splitlines()) == 1


@pytest.mark.slow
def test_too_many_tuples_and_bad_columns() -> None:
    # 27,239 and 14,630 distinct (fnlwgt, age) tuples: the plans answer "not run" with the memory
    # they would need (issue 31; l1 and optimal run, benchmarks/bench_joint_mechanisms.py --large)
    t = calibrate_table(
        "adult", secret="sex", public="fnlwgt,age", pairs=["Male,Female"], epsilon=1.0,
        mechanisms=["kantorovich", "wasserstein-inf"], prior_set="none",
    )  # fmt: skip
    for row, what in zip(t.comparison, ("Kantorovich", "W-infinity"), strict=True):
        assert isinstance(row, Skipped)
        assert (
            f"not run: the {what} plan needs about 35.6 GiB for 27,239 x 14,630 distinct tuples" in row.reason
        )
    with pytest.raises(ValueError, match="distinct columns"):
        calibrate_table("adult", secret="sex", public="age,age", pairs=["Male,Female"], epsilon=1.0)
    one = calibrate_table("adult", secret="sex", public=["age"], pairs=["Male,Female"], epsilon=1.0)
    assert isinstance(one, TableCalibration)  # one column is the case d = 1 of the same entry
    with pytest.raises(ValueError, match="units apply to several public columns"):
        calibrate_table(
            "adult", secret="sex", public="age", pairs=["Male,Female"], epsilon=1.0, units=["age=2"]
        )
    with pytest.raises(ValueError, match=r"order \(--order\), prior \(--prior\) apply to one public column"):
        calibrate_table("adult", secret="sex", public="age,race", pairs=["Male,Female"], epsilon=1.0,
                        order=["a"], prior="gaussian")  # fmt: skip
    with pytest.raises(ValueError):
        parse_units({"age": float("nan")}, ("age", "sex"))
    with pytest.raises(DataError, match="secret value 'Nobody' does not occur in column 'sex'"):
        calibrate_table("adult", secret="sex", public="age,race", pairs=["Male,Nobody"], epsilon=1.0)
    t = calibrate_table(
        "adult", secret="sex", public="age,race", pairs=["Male,Female"], epsilon=1.0, mechanisms=["monge"]
    )
    assert isinstance(t.comparison[0], Skipped)


def test_release_of_two_columns_keeps_other_columns_and_checks_drawn_scales(tmp_path) -> None:
    gen = np.random.default_rng(11)
    n = 300
    frame = pd.DataFrame(
        {
            "id": [f"{k:04d}" for k in range(n)],
            "group": gen.choice(["a", "b"], size=n),
            "x": gen.integers(0, 6, size=n).astype(float),
            "level": gen.choice(["low", "mid", "high"], size=n),
        }
    )
    frame.loc[frame["group"] == "b", "x"] += 3.5  # the columns depend on the secret
    frame.loc[5, "level"] = None  # a label of its own (issue 41)
    src = tmp_path / "in.csv"
    frame.to_csv(src, index=False)
    before = src.read_bytes()
    out = tmp_path / "out.csv"
    r = release(src, secret="group", public="x,level", pairs=["a,b"], epsilon=1.0, output=out,
                      units={"x": 2.0}, prior_set="none", keep_unchecked="id", keep_order=True)  # fmt: skip
    assert src.read_bytes() == before
    got = pd.read_csv(out, dtype={"id": str})
    # the released columns and the kept id, in the table's order; the secret is not written
    assert (
        list(got.columns) == [c for c in frame.columns if c != "group"] and (got["id"] == frame["id"]).all()
    )
    assert r.report["release"]["output_columns"]["written"] == list(got.columns)
    # the row with level missing is inside the joint priors, its x noised as every other
    assert got["x"].notna().all() and r.rows_released == n and r.rows_missing == 0
    assert r.drawn_scales["x"] >= 2.0 * r.chosen.scale
    assert r.drawn_scales["x"] == pytest.approx(2.0 * r.chosen.scale, rel=1e-9)
    # the response's log ratio is at most 1 / b (unit 1), within the 2^-52 grid
    level = r.report["release"]["column_noise"]["level"]
    assert level["kind"] == "randomized-response" and level["labels"] == 4  # high, low, mid, missing
    assert level["log_ratio"] <= (1.0 / r.chosen.scale) * (1 + 1e-9)
    rel = r.report["release"]
    assert rel["noise"]["columns"]["x"]["secure"] and rel["checked_loss"] <= 1.0
    assert json.loads((tmp_path / "out.report.json").read_text())["columns"] == ["x", "level"]
    assert got["level"].fillna("").isin(["low", "mid", "high", ""]).all()  # labels, not codes plus noise
    assert (got["level"] != frame["level"]).any()  # the response moved some
    with pytest.raises(Exception, match="exists"):
        release(
            src, secret="group", public="x,level", pairs=["a,b"], epsilon=1.0, output=out, keep_order=True
        )
    with pytest.raises(ValueError, match="no numerical check"):
        release(src, secret="group", public="x,level", pairs=["a,b"], epsilon=1.0,
                      output=tmp_path / "g.csv", mechanism="analytic-gaussian", keep_order=True)  # fmt: skip
    seeded = release(src, secret="group", public="x,level", pairs=["a,b"], epsilon=1.0,
                     output=tmp_path / "s.parquet", rng=3, prior_set="none", keep_order=True)  # fmt: skip
    assert seeded.report["release"]["insecure"]
    assert seeded.drawn_scales["x"] == seeded.chosen.scale * seeded.calibration.units[0]  # unit: x's range


def _keys(page: str) -> dict[str, str]:
    """``data-key -> shown text`` of every keyed element of a report page."""
    return dict(re.findall(r'data-key="([^"]+)">([^<]*)<', page))


def _embedded(page: str) -> dict:
    text = page.split('id="report-json">', 1)[1].split("</script>", 1)[0]
    return json.loads(text.replace("<\\/", "</"))


@pytest.mark.slow
def test_cli_release_of_adult_age_and_hours_with_its_html_report(tmp_path) -> None:
    """The issue's done-when release: Adult (age, hours-per-week) given sex, eps 1, optimal; the
    output, its JSON report and the HTML report (joint priors, plans, per-column noise)."""
    out, page_path = tmp_path / "rel.csv", tmp_path / "rel.html"
    args = ["release", "adult", "--secret", "sex", "--pair", "Male,Female", "--public", "age,hours-per-week",
            "--epsilon", "1", "--output", str(out), "--report", str(page_path), "--unit", "age=1",
            "--unit", "hours-per-week=1", "--prior-set", "none"]  # fmt: skip
    res = runner.invoke(app, [*args, "--json"])
    assert res.exit_code == 0, res.output
    payload = json.loads(res.output)
    rel = payload["release"]
    assert rel["mechanism"] == "optimal" and rel["scale"] == pytest.approx(8.608849373619705, rel=1e-7)
    assert rel["checked_loss"] <= 1.0 and rel["drawn_scales_checked"] and not rel["insecure"]
    assert rel["rows_released_with_noise"] == 48842 and rel["rows_with_a_missing_value"] == 0
    for c in ("age", "hours-per-week"):
        assert rel["drawn_scales"][c] >= rel["column_scales"][c] == rel["scale"]
        assert rel["noise"]["columns"][c]["secure"]
    assert json.loads((tmp_path / "rel.report.json").read_text()) == payload
    got = pd.read_csv(out)
    assert len(got) == 48842 and "sex" not in got.columns  # the secret is never written
    assert not np.isin(got["age"], np.arange(17, 91)).all()  # noised
    page = page_path.read_text()
    assert _embedded(page) == payload
    for fig in (*JOINT_FIGURES, "fig-release"):
        assert f'<figure id="{fig}">' in page
    keys = _keys(page)
    assert float(keys["chosen:scale"]) == pytest.approx(rel["scale"], rel=1e-5)
    assert float(keys["drawn_scale:age"]) == pytest.approx(rel["drawn_scales"]["age"], rel=1e-5)
    assert keys["tuples:Male"] == "2,472" and keys["tuples:Female"] == "2,025"
    assert not re.search(r'<(link|img|script)[^>]+(src|href)="https?:', page)  # nothing to fetch
    assert page.count("<svg") == len(JOINT_FIGURES) + 1
    assert len(page.encode()) < 1_000_000  # dense figures rasterised inside their SVG
    before = out.read_bytes()
    again = runner.invoke(app, args)  # outputs exist: refused, nothing touched
    assert again.exit_code == 1 and "exists" in again.output and out.read_bytes() == before


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--noise", "gaussian"], "noise (--noise gaussian) applies to one public column"),
        (["--utility", "hamming"], "utility (--utility) applies to one public column"),
        (["--delta", "1e-6"], "delta (--delta) applies to one public column"),
        (["--prior", "gmm"], "prior (--prior) applies to one public column"),
        (["--mechanism", "analytic-gaussian"], "no numerical check on several columns"),
        (["--epsilon", "2"], "release takes one --epsilon"),
    ],
)
def test_cli_release_of_several_columns_bad_input(tmp_path, extra: list[str], message: str) -> None:
    out = tmp_path / "o.csv"
    res = runner.invoke(
        app,
        ["release", "adult", "--secret", "sex", "--pair", "Male,Female", "--public", "age,race",
         "--epsilon", "1", "--output", str(out), *extra],
    )  # fmt: skip
    assert res.exit_code == 1 and message in res.output, res.output
    assert len(res.output.strip().splitlines()) == 1 and not out.exists()


def test_cli_calibrate_report_of_three_columns(tmp_path) -> None:
    """Three columns: the priors are drawn as marginals, the plans' moves are not; the mechanisms'
    numbers on the page are the JSON's."""
    gen = np.random.default_rng(2)
    n = 300
    frame = pd.DataFrame(
        {"g": gen.choice(["u", "v"], size=n), "a": gen.integers(0, 5, size=n),
         "b": gen.integers(0, 4, size=n), "c": gen.choice(["x", "y"], size=n)}
    )  # fmt: skip
    frame.loc[frame["g"] == "v", "a"] += 1
    src = tmp_path / "t.csv"
    frame.to_csv(src, index=False)
    page_path = tmp_path / "cal.html"
    res = runner.invoke(
        app,
        ["calibrate", str(src), "--secret", "g", "--pair", "u,v", "--public", "a,b,c", "--unit", "b=2",
         "--epsilon", "1", "--epsilon", "2", "--report", str(page_path), "--prior-set", "none", "--json"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    payload = json.loads(res.output)
    page = page_path.read_text()
    assert _embedded(page) == payload and "fig-release" not in page
    keys = _keys(page)
    rows = {
        r["mechanism"]: r for r in payload["results"] if r["epsilon"] == 1.0 and r.get("scale") is not None
    }
    for m in ("l1", "kantorovich", "wasserstein-inf", "relaxed", "optimal"):
        assert float(keys[f"scale:{m}"]) == pytest.approx(rows[m]["scale"], rel=1e-5)
    assert keys["unit:b"] == "2" and keys["code:c:y"] == "1"
    assert "3 columns: the moves are not drawn" in page


@pytest.mark.parametrize(
    ("text", "extra", "message"),
    [
        ("g,a,b,w\nu,1,2,1\nv,2,3,-1\nu,3,1,2\nv,1,1,1\n", ["--weight", "w"],
         "weight column 'w' must be >= 0 and not NaN; 1 rows are not"),
        ("g,a,b,w\nu,1,2,1\nv,2,3,x\nu,3,1,2\nv,1,1,1\n", ["--weight", "w"],
         "weight column 'w' must hold numbers, got 'x'"),
        ("g,a,b\nu,1,2\nv,inf,3\nu,3,1\nv,1,1\n", [],
         "public column 'a' must hold finite numbers; 1 rows do not"),
        ("g,a,b\nu,1,2\nv,zz,3\nu,3,1\nv,1,1\n", ["--numeric", "a"],
         "public column 'a' is read as numeric but holds 'zz', not a number"),
        ("g,a,b\n", [], "the table has no rows"),
    ],
)  # fmt: skip
def test_several_columns_bad_table_same_messages_as_one_column(tmp_path, text, extra, message) -> None:
    """A bad weight or public value gets the one-column path's message (one shared check)."""
    src = tmp_path / "t.csv"
    src.write_text(text)
    for public in ("a,b", "a"):
        res = runner.invoke(
            app,
            [
                "calibrate",
                str(src),
                "--secret",
                "g",
                "--pair",
                "u,v",
                "--public",
                public,
                "--epsilon",
                "1",
                *extra,
            ],
        )
        assert res.exit_code == 1 and message in res.output, (public, res.output)


@pytest.mark.parametrize(("public", "categorical"), [("age", False), ("relationship", True)])
def test_one_column_is_the_case_d_1_of_the_joint_machinery(public: str, categorical: bool) -> None:
    """The joint priors and the product channel at d = 1 give the one-column path's scales: a
    numeric column with unit 1 is Laplace on its values; a categorical column's product channel is
    the randomized response (Hamming metric), which the one-column additive mechanisms do not
    model (they add noise to codes), so there only the two ends are compared: the l1 bound
    (every label apart by 1) and the exact check of the optimum (issue 31)."""
    one = calibrate_table(
        "adult", secret="sex", public=public, pairs=["Male,Female"], epsilon=1.0, prior_set="none",
        mechanisms=["l1", "kantorovich", "wasserstein-inf", "relaxed", "optimal"],
    )  # fmt: skip
    assert isinstance(one, TableCalibration) and one.columns == (public,) and one.units == (1.0,)
    frame = pd.read_csv(dataset_path("adult"), usecols=["sex", public]).dropna()
    labels = sorted(frame[public].unique()) if categorical else []
    priors = {}
    for s in ("Male", "Female"):
        values = frame.loc[frame["sex"] == s, public]
        x = values.map({lab: k for k, lab in enumerate(labels)}) if categorical else values
        priors[s] = JointPrior.from_rows(np.asarray(x, dtype=float)[:, None])
    metric = Metric((1.0,), (len(labels),) if categorical else (0,))
    scenario = Scenario((("Male", "Female"),), (AdversaryPrior("empirical", priors),), metric)
    joint = {
        c.mechanism: c
        for c in run_comparison(scenario, [1.0], None, delta=0.0, noise="laplace")
        if isinstance(c, Calibration)
    }
    single = {c.mechanism: c for c in one.comparison if isinstance(c, Calibration)}
    if not categorical:
        for name in ("l1", "kantorovich", "wasserstein-inf", "relaxed", "optimal"):
            assert joint[name].scale == pytest.approx(single[name].scale, rel=1e-7), name
    else:  # codes 0..7 one apart in the one-column path, every two labels 1 apart under Hamming
        assert joint["l1"].scale == pytest.approx(1.0, rel=1e-12)
        b = joint["optimal"].scale
        assert b <= joint["l1"].scale and (b == 0.0) == (single["optimal"].scale == 0.0)
        if b > 0:
            loss = product_laplace_loss(priors["Male"], priors["Female"], metric, b)
            assert loss.loss + loss.error_bound <= 1.0
        else:  # no noise needed: the label shares of the two sexes are within e^1 of each other
            shares = frame.groupby("sex")[public].value_counts(normalize=True).unstack()
            assert float(np.abs(np.log(shares.loc["Male"] / shares.loc["Female"])).max()) <= 1.0


def test_one_json_core_for_one_column_and_several() -> None:
    """The JSON report of a calibration has the same core whatever the number of columns:
    columns, units, the prior set and rows with each column's scale (issue 31)."""
    core = {"tool", "inputs", "columns", "units", "prior_set", "results"}
    for public, columns in (("age", ["age"]), ("age,race", ["age", "race"])):
        t = calibrate_table(
            "adult", secret="sex", public=public, pairs=["Male,Female"], epsilon=1.0, mechanisms=["optimal"]
        )
        payload = t.to_dict()
        assert core <= set(payload) and payload["columns"] == columns == list(t.columns)
        assert payload["prior_set"]["kind"] in ("dkw", "l1") and payload["inputs"]["columns"] == columns
        robust, point = payload["results"]  # under the set, and at the point estimate beside it
        assert robust["prior_set"]["kind"] != "none" and point["prior_set"]["kind"] == "none"
        for row in (robust, point):
            assert row["columns"] == columns and len(row["units"]) == len(columns)
            assert row["column_scales"] == {
                c: row["scale"] * w for c, w in zip(columns, row["units"], strict=True)
            }


@pytest.mark.slow
def test_release_report_of_labels_and_numbers_draws_each_column_as_released(tmp_path) -> None:
    """Issue 46: among several columns a categorical one is released as labels (randomized
    response): its panel shows each label's share in and out by name, not codes as densities."""
    out, page_path = tmp_path / "wa.csv", tmp_path / "wa.html"
    args = ["release", "adult", "--secret", "sex", "--pair", "Male,Female", "--public", "workclass,age",
            "--epsilon", "1", "--prior-set", "none", "--output", str(out),
            "--report", str(page_path)]  # fmt: skip
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    page = page_path.read_text()
    release = re.search(r'<figure id="fig-release">(.*?)</figure>', page, re.S)
    assert release is not None
    text = release.group(1)
    for shown in ("share of the secret", "Federal-gov", "Private", "(missing)", "density (per unit of age)"):
        assert shown in text, shown
    assert "per unit of workclass" not in text
