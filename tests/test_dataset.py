"""Dataset-level secrets (issue 58; SPEC sec 8): the share of rows with a property.

Reference values: SPEC sec 8 (the count of n = 100 rows at shares 0.45 vs 0.55). Cross-checks:
the statistic's distribution against a brute-force enumeration of every data set of n rows
(exact fractions), the exact loss against the densities evaluated on a dense grid, the optimum
of a count against the root of its tail loss (SPEC sec 8's closed form), and every certified
scale against the exact check.
"""

from __future__ import annotations

import itertools
import json
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import brentq
from typer.testing import CliRunner

from pufferfish.calibration import Calibration, compare
from pufferfish.cli.app import app
from pufferfish.dataset import (
    PropertyModel,
    PropertySpec,
    RowValues,
    StatisticSpec,
    parse_shares,
    property_scenario,
    read_property_table,
    statistic_prior,
)
from pufferfish.dataset.attack import attack_property
from pufferfish.dataset.calibrate import calibrate_property
from pufferfish.dataset.coupling import binomial_w_infinity, row_w_infinity, vector_scale
from pufferfish.dataset.release import release_property
from pufferfish.dataset.statistic import MAX_SUM_POINTS, StatisticTooLarge, joint_count_prior
from pufferfish.dataset.table import PropertyTable, RowVectors
from pufferfish.loss.exact import privacy_loss
from pufferfish.priors.distributions import to_release_grid
from pufferfish.tables.source import DataError

runner = CliRunner()


def _values(kind: str, with_: dict[float, int], without: dict[float, int]) -> RowValues:
    ws, wos = sorted(with_), sorted(without)
    return RowValues(
        StatisticSpec(kind, None if kind == "count" else "x"),
        np.array(ws, dtype=float), np.array([with_[v] for v in ws], dtype=np.int64),
        np.array(wos, dtype=float), np.array([without[v] for v in wos], dtype=np.int64),
        0.0,
    )  # fmt: skip


def _model(values: RowValues, shares: tuple[float, ...], n: int) -> PropertyModel:
    table = PropertyTable(PropertySpec("p", "=", "yes"), 10, 0, 5, (values,), "test")
    return PropertyModel(table, shares, n)


def _brute_pmf(values: RowValues, theta: float, n: int) -> dict[float, Fraction]:
    """Every data set of n rows: each row with the property (prob theta) or not, then a value of
    that group; the statistic as released (a mean divided as a float, then the release grid)."""
    t = Fraction(theta)
    row: dict[Fraction, Fraction] = {}
    for support, counts, w in (
        (values.with_support, values.with_counts, t),
        (values.without_support, values.without_counts, 1 - t),
    ):
        total = int(counts.sum())
        for v, c in zip(support.tolist(), counts.tolist(), strict=True):
            row[Fraction(v)] = row.get(Fraction(v), Fraction(0)) + w * Fraction(int(c), total)
    out: dict[float, Fraction] = {}
    for combo in itertools.product(row.items(), repeat=n):
        s = sum((v for v, _ in combo), Fraction(0))
        p = math.prod((q for _, q in combo), start=Fraction(1))
        x = float(s)
        if values.statistic.kind == "mean":
            x = float(to_release_grid(float(s) / n))
        out[x] = out.get(x, Fraction(0)) + p
    return {x: p for x, p in out.items() if p > 0}


# ------------------------------------------------------------------------------------------
# Reference values


def test_count_reference_matches_spec_and_group_dp() -> None:
    # SPEC sec 8: n = 100, shares 0.45 vs 0.55: optimal 19.996 / 9.992 / 4.983, group DP n / eps
    model = _model(_values("count", {1.0: 1}, {0.0: 1}), (0.45, 0.55), 100)
    res = compare(property_scenario(model), [0.5, 1.0, 2.0], ["group-dp", "optimal"])
    scales = {(r.mechanism, r.epsilon): r.scale for r in res if isinstance(r, Calibration)}
    for eps, want, group in ((0.5, 19.996, 200.0), (1.0, 9.992, 100.0), (2.0, 4.983, 50.0)):
        assert scales[("optimal", eps)] == pytest.approx(want, abs=1e-3)
        assert scales[("group-dp", eps)] == group


@pytest.mark.parametrize(("n", "eps"), [(100, 0.5), (100, 1.0), (100, 2.0), (1000, 1.0), (100_000, 1.0)])
def test_count_optimum_is_the_root_of_the_tail_loss(n: int, eps: float) -> None:
    # SPEC sec 8: the loss of a count binds in the tail, n log((1 - p1 + p1 e^{1/b}) / (1 - p2 +
    # p2 e^{1/b})); its root, solved here independently, is the optimum (also at n = 10^5, where
    # 0.45^n is e^-79851: only the log-space binomial keeps it)
    p1, p2 = 0.55, 0.45

    def tail(b: float) -> float:
        return n * (math.log1p(p1 * math.expm1(1 / b)) - math.log1p(p2 * math.expm1(1 / b))) - eps

    root = brentq(tail, 0.1, 1e7, xtol=1e-12, rtol=1e-14)
    model = _model(_values("count", {1.0: 1}, {0.0: 1}), (0.45, 0.55), n)
    scenario = property_scenario(model)
    (res,) = compare(scenario, [eps], ["optimal"])
    assert isinstance(res, Calibration)
    assert res.scale == pytest.approx(root, rel=1e-6)
    assert res.checked_loss <= eps
    prior = scenario.priors[0].conditionals["share=0.45"]
    assert prior.log_pmf is not None and np.isfinite(prior.log_pmf).all()
    assert prior.log_error < 1e-6


# ------------------------------------------------------------------------------------------
# Brute force


@st.composite
def small_cases(draw: st.DrawFn) -> tuple[RowValues, float, int]:
    kind = draw(st.sampled_from(["count", "sum", "mean"]))
    if kind == "count":
        with_ = (
            {1.0: 1} if draw(st.booleans()) else {0.0: draw(st.integers(1, 5)), 1.0: draw(st.integers(1, 5))}
        )
        without = {0.0: draw(st.integers(1, 5)), 1.0: draw(st.integers(0, 5))}
        without = {v: c for v, c in without.items() if c > 0}
    else:
        pool = [-1.5, 0.0, 0.25, 1.0, 2.0, 3.5]
        a = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=3, unique=True))
        b = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=3, unique=True))
        with_ = {v: draw(st.integers(1, 4)) for v in a}
        without = {v: draw(st.integers(1, 4)) for v in b}
    theta = draw(st.sampled_from([0.0, 0.1, 0.45, 0.5, 0.9, 1.0]))
    return _values(kind, with_, without), theta, draw(st.integers(1, 4))


@settings(max_examples=60, deadline=None)
@given(small_cases())
def test_statistic_distribution_matches_brute_force(case: tuple[RowValues, float, int]) -> None:
    values, theta, n = case
    prior = statistic_prior(values, theta, n)
    brute = _brute_pmf(values, theta, n)
    got = {x: p for x, p in zip(prior.support.tolist(), prior.pmf.tolist(), strict=True) if p > 0}
    assert sorted(got) == sorted(brute)
    for x, p in brute.items():
        assert got[x] == pytest.approx(float(p), rel=1e-12)


@settings(max_examples=30, deadline=None)
@given(small_cases(), st.floats(0.05, 5.0))
def test_exact_loss_matches_the_densities_on_a_grid(case: tuple[RowValues, float, int], scale: float) -> None:
    values, _, n = case
    model = _model(values, (0.3, 0.7), n)
    loss = privacy_loss(property_scenario(model), scale)
    b1, b2 = _brute_pmf(values, 0.3, n), _brute_pmf(values, 0.7, n)
    xs = sorted(set(b1) | set(b2))
    ys = np.concatenate([np.linspace(xs[0] - 3 * scale, xs[-1] + 3 * scale, 801), np.array(xs)])

    def density(pmf: dict[float, Fraction]) -> np.ndarray:
        x = np.array(list(pmf), dtype=float)
        p = np.array([float(v) for v in pmf.values()])
        return (p[None, :] * np.exp(-np.abs(ys[:, None] - x[None, :]) / scale)).sum(axis=1)

    grid = float(np.max(np.abs(np.log(density(b1)) - np.log(density(b2)))))
    assert grid <= loss.loss + loss.error_bound + 1e-9  # no output beats the exact supremum
    assert grid >= loss.loss - 1e-9  # attained at a support point, which the grid holds


@settings(max_examples=15, deadline=None)
@given(small_cases(), st.sampled_from([0.25, 1.0, 3.0]))
def test_every_scale_passes_the_exact_check(case: tuple[RowValues, float, int], eps: float) -> None:
    values, _, n = case
    scenario = property_scenario(_model(values, (0.2, 0.5, 0.8), n))
    for res in compare(
        scenario, [eps], ["group-dp", "l1", "kantorovich", "wasserstein-inf", "relaxed", "optimal"]
    ):
        if isinstance(res, Calibration):
            loss = privacy_loss(scenario, res.scale)
            assert loss.loss <= eps + 1e-9, (res.mechanism, res.scale, loss.loss)


# ------------------------------------------------------------------------------------------
# The table and the API


def test_table_reads_labels_as_written_and_leaves_out_missing_cells(tmp_path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("code,age,sex\n007,30,F\n007,40,M\n7,50,F\n7,,F\n,20,M\n007,60,\n7,35,M\n")
    table = read_property_table(
        path, PropertySpec.parse("code=007"),
        [StatisticSpec.parse("count"), StatisticSpec.parse("count:sex=F"), StatisticSpec.parse("mean:age")],
    )  # fmt: skip
    # kept: the rows with a code and an age (the missing sex reads as not F): 5 of 7
    assert (table.rows, table.rows_left_out, table.rows_with_property) == (5, 2, 3)
    count, female, age = table.values
    assert count.total == 3.0 and female.total == 2.0
    assert age.total == pytest.approx((30 + 40 + 60 + 50 + 35) / 5)
    assert age.with_support.tolist() == [30.0, 40.0, 60.0] and age.without_support.tolist() == [35.0, 50.0]


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"property": "income"}, ValueError, "property must be COLUMN=VALUE"),
        ({"property": "nope=1"}, DataError, "column 'nope' is not in the table"),
        ({"property": "sex>=1"}, DataError, "compares a number, but column 'sex' holds text"),
        ({"property": "age>=old"}, ValueError, "compares a number, got 'old'"),
        ({"queries": "sum:sex"}, DataError, "column 'sex' is not numeric"),
        ({"queries": "median:age"}, ValueError, "query must be count, count:COLUMN=VALUE"),
        ({"property": "income=>100K"}, DataError, "no row of the 48842 kept has the property"),
        ({"shares": "0.5"}, ValueError, "shares must hold at least two values"),
        ({"shares": "0.5,1.5"}, ValueError, "shares must be numbers in [0, 1], got '1.5'"),
        ({"rows": 0}, ValueError, "rows must be an integer >= 1, got 0"),
        (
            {"queries": "sum:fnlwgt", "noise": "gaussian", "delta": 1e-3},
            ValueError,
            "the exact convolution is limited to",
        ),
        ({"epsilon": -1.0}, ValueError, "epsilon must be finite and > 0"),
    ],
)
def test_bad_input_is_named(kwargs: dict, error: type, message: str) -> None:
    args = {"property": "income=>50K", "epsilon": 1.0, "rows": 100} | kwargs
    with pytest.raises(error) as exc:
        calibrate_property("adult", **args)
    assert message in str(exc.value)


def test_sum_lattice_limit_names_the_rows_that_fit() -> None:
    values = _values("sum", {0.0: 1, 1000.0: 1}, {1.0: 1})
    with pytest.raises(ValueError, match=f"limited to {MAX_SUM_POINTS:,}"):
        statistic_prior(values, 0.5, 1000)


def test_parse_rules() -> None:
    assert PropertySpec.parse("income=>50K") == PropertySpec("income", "=", ">50K")
    assert PropertySpec.parse("age>=60") == PropertySpec("age", ">=", "60")
    assert PropertySpec.parse("a!=b") == PropertySpec("a", "!=", "b")
    assert PropertySpec.parse("hours-per-week<40.5") == PropertySpec("hours-per-week", "<", "40.5")
    assert StatisticSpec.parse("count:marital-status=Never-married").value == "Never-married"
    assert parse_shares("0.45, 0.55") == (0.45, 0.55)
    with pytest.raises(ValueError, match="shares must be distinct"):
        parse_shares("0.5,0.5")


def test_cli_calibrate_json_on_adult() -> None:
    res = runner.invoke(
        app, ["property", "calibrate", "adult", "--property", "income=>50K", "--rows", "100",
              "--epsilon", "1", "--query", "count,mean:age", "--json"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["model"]["rows"] == 100 and out["model"]["shares"] == [0.45, 0.55]
    count, age = out["statistics"]
    rows = {r["mechanism"]: r for r in count["results"]}
    assert rows["optimal"]["scale"] == pytest.approx(9.992, abs=1e-3)
    assert rows["group-dp"]["scale"] == 100.0
    assert rows["optimal"]["checked_loss"] <= 1.0
    assert "point estimate" in rows["optimal"]["checked_for"]
    assert age["query"] == "mean:age" and age["per_row_range"] == 73.0
    assert {r["mechanism"]: r for r in age["results"]}["group-dp"]["scale"] == 73.0


def test_cli_bad_input_is_one_line() -> None:
    res = runner.invoke(app, ["property", "calibrate", "adult", "--property", "nope=1", "--epsilon", "1"])
    assert res.exit_code == 1
    assert (
        res.output.strip().splitlines() == [res.output.strip().splitlines()[0]]
        and "column 'nope' is not in the table" in res.output
    )


# ------------------------------------------------------------------------------------------
# Several statistics: the Wasserstein mechanism on the coupling


def _exact_w_infinity(n: int, a: float, b: float) -> int:
    lo, hi = sorted((Fraction(a), Fraction(b)))
    f_lo = list(itertools.accumulate(math.comb(n, k) * lo**k * (1 - lo) ** (n - k) for k in range(n + 1)))
    f_hi = list(itertools.accumulate(math.comb(n, k) * hi**k * (1 - hi) ** (n - k) for k in range(n + 1)))
    return max(next(j for j in range(k, n + 1) if f_hi[j] >= f_lo[k]) - k for k in range(n + 1))


@settings(max_examples=80, deadline=None)
@given(
    st.integers(1, 70),
    st.sampled_from([0.0, 0.01, 0.1, 0.3, 0.45, 0.5, 0.9, 1.0]),
    st.sampled_from([0.02, 0.2, 0.4, 0.55, 0.6, 0.95, 1.0]),
)
def test_binomial_w_infinity_matches_exact_fractions(n: int, a: float, b: float) -> None:
    assert binomial_w_infinity(n, a, b) == _exact_w_infinity(n, a, b)


def test_binomial_w_infinity_reference() -> None:
    # issue 58: "about 11 rows at n = 100, 0.45 vs 0.55"; the tails stay in log space at 10^5
    assert binomial_w_infinity(100, 0.45, 0.55) == 11
    assert binomial_w_infinity(100_000, 0.45, 0.55) == 10_001


def _joint_brute(columns: list[RowValues], pairs: list[tuple[tuple[float, ...], tuple[float, ...]]],
                 theta: float, n: int) -> dict[tuple[float, ...], Fraction]:  # fmt: skip
    """The joint distribution of the statistics (sums) of n rows: rows are (has, per-row vector)
    drawn uniformly from ``pairs[has]`` lists (the table's rows of each group)."""
    with_rows, without_rows = pairs
    t = Fraction(theta)
    row: dict[tuple[float, ...], Fraction] = {}
    for rows, w in ((with_rows, t), (without_rows, 1 - t)):
        for r in rows:
            row[r] = row.get(r, Fraction(0)) + w / len(rows)
    out: dict[tuple[float, ...], Fraction] = {}
    for combo in itertools.product(row.items(), repeat=n):
        s = tuple(float(sum(Fraction(v[k]) for v, _ in combo)) for k in range(len(columns)))
        p = math.prod((q for _, q in combo), start=Fraction(1))
        out[s] = out.get(s, Fraction(0)) + p
    return out


def _product_laplace_loss(p1: dict, p2: dict, scales: tuple[float, ...]) -> float:
    """sup_y |log f1(y) / f2(y)| of product Laplace noise: on the product grid of the support
    coordinates, where it is attained (monotone between grid lines in each coordinate)."""
    xs = np.array(list(set(p1) | set(p2)), dtype=float)
    noisy = [k for k, sk in enumerate(scales) if sk > 0]
    for k, sk in enumerate(scales):  # no noise only where no row changes the statistic: a constant
        assert sk > 0 or np.unique(xs[:, k]).size == 1
    if not noisy:
        return 0.0 if p1 == p2 else math.inf
    p1 = {tuple(x[k] for k in noisy): v for x, v in p1.items()}
    p2 = {tuple(x[k] for k in noisy): v for x, v in p2.items()}
    scales = tuple(scales[k] for k in noisy)
    xs = np.array(list(set(p1) | set(p2)), dtype=float)
    axes = [np.unique(xs[:, k]) for k in range(xs.shape[1])]
    grid = np.array(list(itertools.product(*axes)), dtype=float)
    s = np.array(scales)

    def density(p: dict) -> np.ndarray:
        x = np.array(list(p), dtype=float)
        w = np.array([float(v) for v in p.values()])
        return (w[None, :] * np.exp(-(np.abs(grid[:, None, :] - x[None, :, :]) / s).sum(axis=2))).sum(axis=1)

    return float(np.max(np.abs(np.log(density(p1)) - np.log(density(p2)))))


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 3), st.integers(0, 1)), min_size=1, max_size=3),
    st.lists(st.tuples(st.integers(0, 3), st.integers(0, 1)), min_size=1, max_size=3),
    st.integers(1, 3),
    st.sampled_from([0.3, 1.0, 2.0]),
)
def test_coupling_scales_pass_the_brute_force_joint_check(with_rows, without_rows, n, eps) -> None:
    # two statistics (a sum and a count of the same rows), their joint law enumerated exactly
    w_rows = [tuple(map(float, r)) for r in with_rows]
    wo_rows = [tuple(map(float, r)) for r in without_rows]
    columns = []
    for k, kind in ((0, "sum"), (1, "sum")):
        a, b = [r[k] for r in w_rows], [r[k] for r in wo_rows]
        columns.append(_values(kind, {v: a.count(v) for v in set(a)}, {v: b.count(v) for v in set(b)}))
    table = PropertyTable(PropertySpec("p", "=", "yes"), 10, 0, 5, tuple(columns), "test")
    model = PropertyModel(table, (0.2, 0.6), n)
    found = vector_scale(model, eps)
    p1 = _joint_brute(columns, [w_rows, wo_rows], 0.2, n)
    p2 = _joint_brute(columns, [w_rows, wo_rows], 0.6, n)
    assert _product_laplace_loss(p1, p2, found.scales) <= eps + 1e-9


# ------------------------------------------------------------------------------------------
# Releases


def test_release_of_a_count_checks_exactly_and_publishes_no_table_value() -> None:
    rel = release_property("adult", property="income=>50K", epsilon=1.0, rng=7)
    out = rel.to_dict()
    assert out["mechanism"] == "optimal" and out["rows"] == 48842
    assert out["released"][0]["scale"] == pytest.approx(4884.2, rel=1e-4)  # the tail root, n = 48,842
    assert "exact loss" in out["checked"] and "point-estimate" in out["checked"]
    text = json.dumps(out)
    for secret in ("table_share", "table_value", "rows_with_property", "11687"):
        assert secret not in text


def test_release_of_several_statistics_uses_the_coupling_when_asked() -> None:
    rel = release_property(
        "adult", property="income=>50K", epsilon=2.0, queries="count,mean:age", rng=3,
        mechanism="wasserstein-coupling", weights="l2",
    )  # fmt: skip
    assert rel.mechanism == "wasserstein-coupling"
    w = binomial_w_infinity(48842, 0.45, 0.55)
    r_age = 73.0 / 48842
    weights = (1.0, r_age ** (1 / 3))  # l2: the plain squared error smallest, w^3 ~ r
    b = w * (1.0 / weights[0] + r_age / weights[1]) / 2.0
    assert rel.scales == pytest.approx((b * weights[0], b * weights[1]), rel=1e-12)
    rows = release_property(
        "adult", property="income=>50K", epsilon=2.0, queries="count,mean:age", rng=3,
        mechanism="wasserstein-coupling",
    )  # fmt: skip
    b = w * 2.0 / 2.0  # rows (default): each noise in units of one row's change, w = r
    assert rows.scales == pytest.approx((b, b * r_age), rel=1e-12)
    with pytest.raises(ValueError, match="Laplace noise and delta = 0"):
        release_property("adult", property="income=>50K", epsilon=2.0, queries="count,mean:age", delta=1e-3,
                         noise="gaussian")  # fmt: skip


def test_release_of_a_large_mean_names_the_way_out() -> None:
    with pytest.raises(StatisticTooLarge, match="release with mechanism row-composition"):
        release_property(
            "adult", property="income=>50K", epsilon=1.0, queries="mean:age", rng=1, mechanism="optimal"
        )
    rel = release_property(
        "adult", property="income=>50K", epsilon=1.0, queries="mean:age", mechanism="wasserstein-coupling",
        rng=1,
    )  # fmt: skip
    r = row_w_infinity(
        read_property_table(
            "adult", PropertySpec.parse("income=>50K"), [StatisticSpec.parse("mean:age")]
        ).values[0]
    )
    assert r == 12.0  # ages paired by their quantiles differ by at most 12 years (range 73)
    assert rel.scales[0] == pytest.approx(binomial_w_infinity(48842, 0.45, 0.55) * r / 48842, rel=1e-12)


def test_cli_release_writes_the_json_and_keeps_an_existing_file(tmp_path) -> None:
    out = tmp_path / "rel.json"
    args = ["property", "release", "adult", "--property", "income=>50K", "--epsilon", "1", "--seed", "5",
            "--output", str(out)]  # fmt: skip
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    first = out.read_text()
    assert json.loads(first)["released"][0]["query"] == "count"
    assert "NOT secure" in res.output
    again = runner.invoke(app, args)
    assert again.exit_code == 1 and "exists" in again.output
    assert out.read_text() == first


# ------------------------------------------------------------------------------------------
# The attack

ADULT_FIVE = (
    "mean:age,mean:education-num,count:marital-status=Never-married,count:sex=Female,mean:hours-per-week"
)


@pytest.mark.parametrize(
    ("queries", "eps"), [("count", 0.5), ("count", 1.0), ("count", 2.0), (ADULT_FIVE, 2.0)]
)
def test_attack_accuracy_stays_under_the_bound(queries: str, eps: float) -> None:
    res = attack_property(
        "adult", property="income=>50K", epsilon=eps, rows=100, queries=queries, shares=(0.4, 0.6), rng=11
    )
    assert res.bound == pytest.approx(math.exp(eps) / (1 + math.exp(eps)))
    assert res.accuracy_with_noise <= res.bound + res.sampling_error
    assert res.accuracy_without_noise >= 0.85  # theirs 0.91-0.925 on the five statistics (no noise)


def test_attack_cli_json() -> None:
    res = runner.invoke(
        app, ["property", "attack", "adult", "--property", "income=>50K", "--rows", "100", "--epsilon", "1",
              "--samples", "50", "--json"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["mechanism"] == "optimal" and out["train"] == 50
    assert out["scales"][0] == pytest.approx(9.992, abs=1e-3)


def _vectors(w_rows: np.ndarray, wo_rows: np.ndarray) -> RowVectors:
    (ws, wc), (wos, woc) = (np.unique(r, axis=0, return_counts=True) for r in (w_rows, wo_rows))
    return RowVectors(ws, wc.astype(np.int64), wos, woc.astype(np.int64))


def test_joint_counts_of_two_statistics_match_brute_force() -> None:
    # pufferfish reproduce chen2023 bounds DirM's and DauM's loss by the joint law of two counts
    # (a multinomial of four row classes, in log space): against every data set of n rows
    from pufferfish.reproduce.chen2023 import joint_counts

    rng = np.random.default_rng(4)
    w_rows = rng.integers(0, 2, (7, 2)).astype(float)
    wo_rows = rng.integers(0, 2, (5, 2)).astype(float)
    for n in (1, 2, 4):
        logs = joint_counts(_vectors(w_rows, wo_rows), 0, 1, (0.3, 0.8), n)
        for t, grid in zip((0.3, 0.8), logs, strict=True):
            brute = np.zeros((n + 1, n + 1))
            rows = [(r, t / len(w_rows)) for r in w_rows] + [(r, (1 - t) / len(wo_rows)) for r in wo_rows]
            for combo in itertools.product(rows, repeat=n):
                a = int(sum(r[0] for r, _ in combo))
                b = int(sum(r[1] for r, _ in combo))
                brute[a, b] += math.prod(p for _, p in combo)
            with np.errstate(divide="ignore"):
                assert np.allclose(np.exp(grid), brute, rtol=1e-12, atol=0.0)


def test_cli_calibrate_report_is_written_and_confidential(tmp_path) -> None:
    page = tmp_path / "prop.html"
    res = runner.invoke(
        app, ["property", "calibrate", "adult", "--property", "income=>50K", "--rows", "100",
              "--epsilon", "1", "--epsilon", "2", "--query", "count", "--report", str(page)],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    text = page.read_text()
    assert 'id="confidential"' in text and 'id="fig-scales-0"' in text and 'id="fig-priors-0"' in text
    payload = json.loads(text.split('id="report-json">')[1].split("</script>")[0])
    rows = {(r["mechanism"], r["epsilon"]): r for r in payload["statistics"][0]["results"]}
    assert rows[("optimal", 1.0)]["scale"] == pytest.approx(9.992, abs=1e-3)
    again = runner.invoke(
        app, ["property", "calibrate", "adult", "--property", "income=>50K", "--rows", "100",
              "--epsilon", "1", "--report", str(page)],
    )  # fmt: skip
    assert again.exit_code == 1 and "exists" in again.output


def test_cli_release_report_and_calibrate_json_say_confidential(tmp_path) -> None:
    out, page = tmp_path / "rel.json", tmp_path / "rel.html"
    res = runner.invoke(
        app, ["property", "release", "adult", "--property", "income=>50K", "--epsilon", "1", "--seed", "2",
              "--output", str(out), "--report", str(page)],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    text = page.read_text()
    assert 'id="confidential"' in text and 'id="fig-priors-0"' in text
    payload = json.loads(text.split('id="report-json">')[1].split("</script>")[0])
    assert payload == json.loads(out.read_text())  # the page embeds the public output, nothing more
    cal = runner.invoke(
        app, ["property", "calibrate", "adult", "--property", "income=>50K", "--rows", "100",
              "--epsilon", "1", "--json"],
    )  # fmt: skip
    assert json.loads(cal.output)["confidential"] is True


def test_table_value_is_a_point_of_the_models_distribution(tmp_path) -> None:
    # the released statistic must be a support point of the checked distribution: the exact sum of
    # the rows' floats rounded once (0.1 + 0.1 + 0.1 is not 3 * 0.1 in floats), a mean on the grid
    path = tmp_path / "t.csv"
    rows = ["p,x"] + [f"{'ab'[i % 2]},{[0.1, 0.7, 1e-9][i % 3]}" for i in range(12)]
    path.write_text("\n".join(rows) + "\n")
    stats = [StatisticSpec.parse("sum:x"), StatisticSpec.parse("mean:x")]
    table = read_property_table(path, PropertySpec.parse("p=a"), stats)
    model = PropertyModel(table, (0.3, 0.6), table.rows)
    for k, values in enumerate(table.values):
        prior = property_scenario(model, k).priors[0].conditionals["share=0.3"]
        assert float(to_release_grid(values.total)) in set(prior.support.tolist())


# ------------------------------------------------------------------------------------------
# Two counts together: the exact joint check


def test_joint_count_prior_matches_brute_force() -> None:
    classes = np.array([[3, 1, 0, 2], [1, 4, 2, 0]], dtype=np.int64)
    for n in (1, 2, 3):
        for theta in (0.0, 0.35, 1.0):
            prior = joint_count_prior(classes, theta, n)
            p = [Fraction(theta) * int(classes[0, c]) / 6 + (1 - Fraction(theta)) * int(classes[1, c]) / 7
                 for c in range(4)]  # fmt: skip
            brute: dict[tuple[int, int], Fraction] = {}
            for combo in itertools.product(range(4), repeat=n):
                key = (sum(c >> 1 for c in combo), sum(c & 1 for c in combo))
                brute[key] = brute.get(key, Fraction(0)) + math.prod((p[c] for c in combo), start=Fraction(1))
            got = {(int(a), int(b)): q for (a, b), q in zip(prior.support, prior.pmf, strict=True) if q > 0}
            assert sorted(got) == sorted(k for k, v in brute.items() if v > 0)
            for key, q in got.items():
                assert q == pytest.approx(float(brute[key]), rel=1e-12)


def test_two_counts_together_are_checked_exactly_and_beat_the_coupling() -> None:
    res = calibrate_property(
        "adult", property="income=>50K", epsilon=1.0, rows=100,
        queries="count:marital-status=Never-married,count:sex=Female",
    )  # fmt: skip
    joint = {r.mechanism: r for r in res.joint if isinstance(r, Calibration)}
    assert joint["optimal"].checked_loss <= 1.0
    assert joint["wasserstein-coupling"].scale == 22.0  # W_inf 11 rows x (1 + 1)
    assert joint["group-dp"].scale == 200.0
    assert joint["optimal"].scale < joint["wasserstein-coupling"].scale / 3
    # the joint optimum needs more noise than either count alone (releasing both tells more)
    alone = [next(r.scale for r in rows if r.mechanism == "optimal") for rows in res.results]
    assert joint["optimal"].scale > max(alone)
    assert res.to_dict()["joint"]["results"]


def test_release_of_two_counts_of_a_small_table_uses_the_joint_check(tmp_path) -> None:
    path = tmp_path / "t.csv"
    rng = np.random.default_rng(9)
    draws = rng.random((60, 3)) < np.array([0.6, 0.3, 0.5])
    lines = ["p,a,b"] + [f"{'yn'[int(p)]},{int(a)},{int(b)}" for p, a, b in draws]
    path.write_text("\n".join(lines) + "\n")
    rel = release_property(path, property="p=y", epsilon=1.0, queries="count:a=1,count:b=1", rng=1)
    assert rel.mechanism == "optimal" and "exact product loss" in rel.checked
    assert rel.scales[0] == rel.scales[1]
    with pytest.raises(ValueError, match="wasserstein-coupling"):
        release_property(
            "adult", property="income=>50K", epsilon=1.0, queries="count,mean:age", mechanism="relaxed"
        )


def _exact_row_w_infinity(values: RowValues) -> float:
    """sup_u |Q_with(u) - Q_without(u)| over the common refinement of both steps (fractions)."""

    def steps(xs, counts):  # type: ignore[no-untyped-def]
        total = int(counts.sum())
        cum = itertools.accumulate(int(c) for c in counts)
        return [(Fraction(c, total), float(x)) for c, x in zip(cum, xs, strict=True)]

    a, b = (
        steps(values.with_support, values.with_counts),
        steps(values.without_support, values.without_counts),
    )
    cuts = sorted({u for u, _ in a} | {u for u, _ in b})
    worst, lo = 0.0, Fraction(0)
    for hi in cuts:
        mid = (lo + hi) / 2
        qa = next(x for u, x in a if u >= mid)
        qb = next(x for u, x in b if u >= mid)
        worst, lo = max(worst, abs(qa - qb)), hi
    return worst


@settings(max_examples=60, deadline=None)
@given(small_cases())
def test_row_w_infinity_matches_exact_fractions(case: tuple[RowValues, float, int]) -> None:
    values, _, _ = case
    assert row_w_infinity(values) == _exact_row_w_infinity(values)


@settings(max_examples=40, deadline=None)
@given(small_cases(), st.sampled_from([0.3, 1.0, 2.5]))
def test_coupling_scale_of_one_statistic_passes_the_exact_check(
    case: tuple[RowValues, float, int], eps: float
) -> None:
    # one statistic: the rows that change are paired by their quantiles (r = W_inf of a row's value
    # across the groups, not the range); the scale must pass the exact loss on the exact priors
    values, _, n = case
    model = _model(values, (0.2, 0.7), n)
    found = vector_scale(model, eps, [0], [1.0])
    scale = found.distance / eps
    if scale > 0:
        assert privacy_loss(property_scenario(model), scale).loss <= eps + 1e-9


def test_attack_simulates_the_noise_a_release_would_draw() -> None:
    # two counts of n = 100 rows: a release uses the joint optimum (checked on their joint law), and
    # so does the attack's simulation (one plan, pufferfish.dataset.release.plan_release)
    res = attack_property(
        "adult", property="income=>50K", epsilon=1.0, rows=100, shares=(0.45, 0.55),
        queries="count:marital-status=Never-married,count:sex=Female", train=20, test=20,
    )  # fmt: skip
    assert res.mechanism == "optimal" and res.scales == pytest.approx((6.1337, 6.1337), abs=1e-4)
    assert res.accuracy_with_noise <= res.bound + res.sampling_error
