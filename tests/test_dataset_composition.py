"""``row-composition`` (issue 58; pufferfish.dataset.composition): one row's exact loss composed
through the binomial count of rows with the property.

Cross-checks: the theorem's bound against the exact loss of the statistics' whole joint law
enumerated by brute force (every data set of n rows, exact fractions) at random scales; the count
reference of SPEC sec 8 (where the bound is the exact loss); the order optimal <= row-composition
<= wasserstein-coupling; the scales the release draws (the secure sampler's rounding included).
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

from pufferfish.calibration import Calibration
from pufferfish.dataset import PropertyModel, PropertySpec, RowValues, StatisticSpec, property_scenario
from pufferfish.dataset.calibrate import calibrate_property
from pufferfish.dataset.composition import composed_loss, composition_scales, row_loss
from pufferfish.dataset.coupling import vector_scale
from pufferfish.dataset.release import release_property, sampler_rounding
from pufferfish.dataset.table import PropertyTable, RowVectors
from pufferfish.loss.exact import privacy_loss


def _table(kinds: tuple[str, ...], with_rows: list[tuple[float, ...]], without_rows: list[tuple[float, ...]]):
    """A hand-built table: the rows' per-row vectors in each group (repeats are counts)."""

    def group(rows: list[tuple[float, ...]]) -> tuple[np.ndarray, np.ndarray]:
        points = sorted(set(rows))
        return np.array(points, dtype=float), np.array([rows.count(p) for p in points], dtype=np.int64)

    (ws, wc), (wos, woc) = group(with_rows), group(without_rows)
    values = []
    for j, kind in enumerate(kinds):
        cols = []
        for support, counts in ((ws, wc), (wos, woc)):
            xs, where = np.unique(support[:, j], return_inverse=True)
            c = np.zeros(xs.size, dtype=np.int64)
            np.add.at(c, where, counts)
            cols += [xs, c]
        spec = StatisticSpec(kind, None if kind == "count" else f"x{j}")
        values.append(RowValues(spec, cols[0], cols[1], cols[2], cols[3], 0.0))
    n_rows = len(with_rows) + len(without_rows)
    return PropertyTable(
        PropertySpec("p", "=", "yes"), n_rows, 0, len(with_rows), tuple(values), "test",
        RowVectors(ws, wc, wos, woc),
    )  # fmt: skip


def _joint_brute(table: PropertyTable, theta: float, n: int) -> dict[tuple[float, ...], Fraction]:
    """The statistics' joint law over every data set of n rows (exact fractions; a mean divided)."""
    t = Fraction(theta)
    vec = table.row_vectors
    row: dict[tuple[Fraction, ...], Fraction] = {}
    for support, counts, w in (
        (vec.with_support, vec.with_counts, t),
        (vec.without_support, vec.without_counts, 1 - t),
    ):
        total = int(counts.sum())
        for x, c in zip(support.tolist(), counts.tolist(), strict=True):
            key = tuple(Fraction(v) for v in x)
            row[key] = row.get(key, Fraction(0)) + w * Fraction(int(c), total)
    kinds = [v.statistic.kind for v in table.values]
    out: dict[tuple[float, ...], Fraction] = {}
    for combo in itertools.product(row.items(), repeat=n):
        sums = [sum((x[j] for x, _ in combo), Fraction(0)) for j in range(len(kinds))]
        key = tuple(float(s / n if k == "mean" else s) for s, k in zip(sums, kinds, strict=True))
        p = math.prod((q for _, q in combo), start=Fraction(1))
        out[key] = out.get(key, Fraction(0)) + p
    return out


def _brute_loss(p1: dict, p2: dict, scales: tuple[float, ...]) -> float:
    """sup_y |log f1(y) - log f2(y)| of product Laplace noise: the vertices of the product grid of
    the laws' coordinates and points far beyond them (the log-ratio is constant out there)."""
    xs = np.array(list(set(p1) | set(p2)), dtype=float)
    axes = []
    for k in range(xs.shape[1]):
        ax = np.unique(xs[:, k])
        far = 50.0 * (ax[-1] - ax[0] + 1.0)
        axes.append(np.concatenate([[ax[0] - far], ax, [ax[-1] + far]]))
    grid = np.array(list(itertools.product(*axes)), dtype=float)
    s = np.array(scales)

    def log_density(p: dict) -> np.ndarray:
        keep = [k for k, v in p.items() if v > 0]
        x = np.array(keep, dtype=float)
        w = np.log(np.array([float(p[k]) for k in keep]))
        a = w[None, :] - (np.abs(grid[:, None, :] - x[None, :, :]) / s).sum(axis=2)
        top = a.max(axis=1, keepdims=True)
        return (top + np.log(np.exp(a - top).sum(axis=1, keepdims=True))).ravel()

    return float(np.max(np.abs(log_density(p1) - log_density(p2))))


@st.composite
def small_tables(draw: st.DrawFn) -> tuple[PropertyTable, tuple[float, float], int]:
    d = draw(st.integers(1, 2))
    kinds = tuple(draw(st.sampled_from(["sum", "mean", "count"])) for _ in range(d))
    pools = [[0.0, 1.0] if k == "count" else [-1.0, 0.0, 0.5, 2.0, 3.0] for k in kinds]
    row = st.tuples(*[st.sampled_from(p) for p in pools])
    with_rows = draw(st.lists(row, min_size=1, max_size=3))
    without_rows = draw(st.lists(row, min_size=1, max_size=3))
    shares = draw(st.sampled_from([(0.2, 0.6), (0.45, 0.55), (0.0, 0.3), (0.1, 1.0)]))
    return _table(kinds, with_rows, without_rows), shares, draw(st.integers(1, 3))


@settings(max_examples=40, deadline=None)
@given(small_tables(), st.lists(st.sampled_from([0.2, 0.5, 1.0, 3.0]), min_size=2, max_size=2))
def test_composed_bound_is_above_the_brute_force_loss(case, raw_scales) -> None:
    # the theorem as an inequality at any scales: L(c) >= the exact loss of the whole joint law
    table, shares, n = case
    model = PropertyModel(table, shares, n)
    d = len(table.values)
    scales = tuple(raw_scales[:d])
    c, how = row_loss(model, range(d), scales)
    assert how.startswith("exact product check")
    bound = composed_loss(n, shares, c)
    brute = _brute_loss(_joint_brute(table, shares[0], n), _joint_brute(table, shares[1], n), scales)
    assert brute <= bound + 1e-9


@settings(max_examples=30, deadline=None)
@given(small_tables(), st.sampled_from([0.3, 1.0, 2.5]))
def test_calibrated_scales_pass_the_brute_force_joint_check(case, eps: float) -> None:
    table, shares, n = case
    model = PropertyModel(table, shares, n)
    found = composition_scales(model, eps)
    assert found.loss <= eps
    if min(found.scales) == 0:  # no noise needed: the laws themselves are within e^eps
        p1, p2 = _joint_brute(table, shares[0], n), _joint_brute(table, shares[1], n)
        assert all((p1.get(k, 0) == 0) == (p2.get(k, 0) == 0) for k in set(p1) | set(p2))
        worst = max(abs(math.log(p1[k] / p2[k])) for k in p1 if p1[k] > 0)
        assert worst <= eps + 1e-9
        return
    brute = _brute_loss(_joint_brute(table, shares[0], n), _joint_brute(table, shares[1], n), found.scales)
    assert brute <= eps + 1e-9


def _count_root(eps: float) -> float:
    """SPEC sec 8: the b with n log((1 - p1 + p1 e^(1/b)) / (1 - p2 + p2 e^(1/b))) = eps."""
    from scipy.optimize import brentq

    def f(b: float) -> float:
        return 100 * (math.log1p(0.55 * math.expm1(1 / b)) - math.log1p(0.45 * math.expm1(1 / b))) - eps

    return brentq(f, 1.0, 1000.0, xtol=1e-13)


def test_count_reference_is_the_exact_tail_root() -> None:
    # SPEC sec 8: 19.996 / 9.992 / 4.983; the bound is the count's exact loss (c = 1 / b)
    res = calibrate_property("adult", property="income=>50K", epsilon=[0.5, 1.0, 2.0], rows=100)
    got = [r for r in res.results[0] if isinstance(r, Calibration) and r.mechanism == "row-composition"]
    for r, want in zip(got, (19.996, 9.992, 4.983), strict=True):
        assert r.scale == pytest.approx(want, abs=5e-4)
        assert r.scale == pytest.approx(_count_root(r.epsilon), rel=1e-8)
        assert r.scale >= _count_root(r.epsilon)  # on the passing side
        assert r.checked_loss <= r.epsilon  # and the registry's exact check agrees


@settings(max_examples=30, deadline=None)
@given(small_tables(), st.sampled_from([0.3, 1.0, 2.5]))
def test_optimal_below_row_composition_below_the_coupling(case, eps: float) -> None:
    table, shares, n = case
    if len(table.values) != 1:
        return
    model = PropertyModel(table, shares, n)
    mine = composition_scales(model, eps, units=[1.0]).scales[0]
    coupling = vector_scale(model, eps, [0], [1.0]).distance / eps
    assert mine <= coupling * (1 + 1e-9)
    if mine > 0:
        assert privacy_loss(property_scenario(model), mine).loss <= eps + 1e-9


def test_adult_statistics_equal_their_optima_and_the_whole_table_mean_is_certified() -> None:
    # one statistic at n = 100: the bound binds where the exact loss does (the tails): equal to
    # the optimum found by the exact check (issue 58: mean:age 0.79085 at eps 1)
    res = calibrate_property("adult", property="income=>50K", epsilon=1.0, rows=100, queries="mean:age",
                             mechanisms=["row-composition", "optimal"])  # fmt: skip
    mine, best = (r.scale for r in res.results[0] if isinstance(r, Calibration))
    assert best <= mine <= best * (1 + 1e-8)
    assert mine == pytest.approx(0.79085, abs=1e-5)
    # the whole table (48,842 rows): its exact distribution is refused, the theorem is not
    rel = release_property("adult", property="income=>50K", epsilon=1.0, queries="mean:age", rng=1)
    assert rel.mechanism == "row-composition"
    assert rel.scales[0] == pytest.approx(0.76188, abs=1e-5)
    assert "composed through the binomial count" in rel.checked
    coupling = release_property("adult", property="income=>50K", epsilon=1.0, queries="mean:age", rng=1,
                                mechanism="wasserstein-coupling")  # fmt: skip
    assert rel.scales[0] < coupling.scales[0] / 1.3


def test_secure_release_of_several_statistics_covers_the_rounding() -> None:
    rel = release_property("adult", property="income=>50K", epsilon=2.0, queries="count,mean:age")
    assert rel.mechanism == "row-composition" and rel.sampler.get("per_statistic")
    assert "secure sampler's rounding" in rel.checked
    seeded = release_property("adult", property="income=>50K", epsilon=2.0, queries="count,mean:age", rng=4)
    assert all(s >= t for s, t in zip(rel.scales, seeded.scales, strict=True))
    model = PropertyModel(rel.model.table, (0.45, 0.55), rel.model.rows)
    c, _ = row_loss(model, [0, 1], rel.scales)
    assert composed_loss(model.rows, model.shares, c) + sampler_rounding(rel.scales) <= 2.0


def test_large_grids_fall_back_to_the_range_bound() -> None:
    from pufferfish.dataset.spec import parse_statistics
    from pufferfish.dataset.table import read_property_table

    table = read_property_table("adult", PropertySpec.parse("income=>50K"),
                                parse_statistics("sum:fnlwgt,sum:age,sum:hours-per-week"))  # fmt: skip
    model = PropertyModel(table, (0.45, 0.55), 100)
    c, how = row_loss(model, [0, 1, 2], [1e5, 10.0, 10.0])
    assert how.startswith("the range bound")
    moves = [
        max(v.with_support.max() - v.without_support.min(), v.without_support.max() - v.with_support.min())
        for v in table.values
    ]
    assert c == pytest.approx(moves[0] / 1e5 + moves[1] / 10.0 + moves[2] / 10.0, rel=1e-12)


def test_calibrate_gives_the_theorems_for_a_statistic_too_large_and_for_statistics_together() -> None:
    from typer.testing import CliRunner

    from pufferfish.cli.app import app

    # a mean of the whole table: every exact mechanism skipped with the reason, the theorems listed
    res = calibrate_property("adult", property="income=>50K", epsilon=1.0, queries="mean:age")
    assert all(not isinstance(r, Calibration) and "exact distribution" in r.reason for r in res.results[0])
    rows = {t.mechanism: t for t in res.theorems}
    assert list(rows) == ["group-dp", "wasserstein-coupling", "row-composition"]
    assert rows["row-composition"].scales[0] == pytest.approx(0.76188, abs=1e-5)
    assert rows["group-dp"].scales[0] == 73.0 and rows["row-composition"].loss <= 1.0
    # several statistics: their joint law is not computed; the theorems certify them together
    five = "mean:age,count:sex=Female"
    res = calibrate_property("adult", property="income=>50K", epsilon=2.0, rows=100, queries=five)
    together = {t.mechanism: t for t in res.theorems}
    assert together["row-composition"].queries == ("mean:age", "count:sex=Female")
    assert together["row-composition"].l2_error < together["wasserstein-coupling"].l2_error / 3
    # Chen and Ohrimenko's five statistics (docs/reference.md quotes these L2 errors)
    from pufferfish.reproduce.chen2023 import FIVE

    for weights, want in (
        ("rows", {"group-dp": 662.929, "wasserstein-coupling": 72.922, "row-composition": 12.147}),
        ("l2", {"group-dp": 582.671, "wasserstein-coupling": 64.094, "row-composition": 11.034}),
    ):
        res5 = calibrate_property("adult", property="income=>50K", epsilon=2.0, rows=100, queries=FIVE,
                                  mechanisms=["optimal"], weights=weights)  # fmt: skip
        l2 = {t.mechanism: t.l2_error for t in res5.theorems}
        assert l2 == pytest.approx(want, abs=1e-3)
    # the whole table: l2 puts noise of scale 117 on a mean of age (docs/reference.md), rows 2.63
    for weights, want in (("l2", 116.674), ("rows", 2.6282)):
        whole = calibrate_property("adult", property="income=>50K", epsilon=2.0, queries=FIVE,
                                   mechanisms=["optimal"], weights=weights)  # fmt: skip
        (mine,) = [t for t in whole.theorems if len(t.queries) == 5 and t.mechanism == "row-composition"]
        assert mine.scales[0] == pytest.approx(want, abs=1e-3)
    body = res.to_dict()
    assert body["confidential"] and [t["mechanism"] for t in body["theorems"]][-1] == "row-composition"
    out = CliRunner().invoke(app, ["property", "calibrate", "adult", "--property", "income=>50K", "--query",
                                   "mean:age", "--epsilon", "1"])  # fmt: skip
    assert out.exit_code == 0, out.output
    assert "not calibrated on it" in out.output and "row-composition" in out.output


def test_cli_prints_queries_and_labels_as_written(tmp_path) -> None:
    # ":x:" is an emoji code and "[y]" markup to Rich: both must reach the screen as written; a
    # table of 4 rows needs no noise at eps 1 (telling the count itself has loss 4 log(11/9) < 1)
    from typer.testing import CliRunner

    from pufferfish.cli.app import app

    data = tmp_path / "t.csv"
    data.write_text("p,x,z\n[y],1,3\n[y],2,4\nn,1,3\nn,2,5\n")
    out = tmp_path / "r.json"
    res = CliRunner().invoke(app, ["property", "release", str(data), "--property", "p=[y]", "--query",
                                   "sum:x,sum:z", "--epsilon", "1", "--output", str(out)])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "released sum:x: 6" in res.output and "p=[y]" in res.output
    assert "tells at most the count of rows with the property" in json.loads(out.read_text())["checked"]
    assert 4 * math.log(0.55 / 0.45) < 1.0


# ------------------------------------------------------------------------------------------
# Prior sets around the conditionals


def _law_of_rows(rows: list[tuple[dict[float, float], float]], n: int, kind: str) -> dict[float, float]:
    """The law of a sum (or mean) of n i.i.d. rows from the mixture ``sum_g w_g P_g``."""
    mix: dict[float, float] = {}
    for pmf, w in rows:
        for x, p in pmf.items():
            mix[x] = mix.get(x, 0.0) + w * p
    out: dict[float, float] = {}
    for combo in itertools.product(mix.items(), repeat=n):
        s = sum(x for x, _ in combo)
        key = s / n if kind == "mean" else s
        out[key] = out.get(key, 0.0) + math.prod(p for _, p in combo)
    return out


def _member(prior_set, gen: np.random.Generator) -> dict[float, float]:
    """A random prior of a (convex) DKW or L1 set: the centre moved towards a random pmf."""
    c = prior_set.center
    p = gen.dirichlet(np.ones(c.size))
    if prior_set.kind == "dkw":
        gap = float(np.max(np.abs(np.cumsum(p) - np.cumsum(c))))
    else:
        gap = float(np.abs(p - c).sum())
    t = 1.0 if gap <= prior_set.radius else prior_set.radius / gap
    q = c + t * (p - c)
    return dict(zip(prior_set.alphabet.tolist(), q.tolist(), strict=True))


@settings(max_examples=25, deadline=None)
@given(small_tables(), st.sampled_from(["dkw", "l1"]), st.sampled_from([0.5, 2.0]), st.integers(0, 2**31))
def test_prior_set_scales_pass_brute_force_for_members_of_the_sets(case, kind, eps, seed) -> None:
    table, shares, n = case
    if len(table.values) != 1:
        return
    model = PropertyModel(table, shares, n, prior_set=kind, confidence=0.9)
    scale = composition_scales(model, eps).scales[0]
    sets = model.row_sets(0)
    gen = np.random.default_rng(seed)
    kind_of = table.values[0].statistic.kind
    for _ in range(4):  # random members of both sets, each checked by brute force
        d1, d0 = _member(sets[0], gen), _member(sets[1], gen)
        laws = [
            {(x,): p for x, p in _law_of_rows([(d1, t), (d0, 1 - t)], n, kind_of).items()} for t in shares
        ]
        if scale == 0:  # no noise: the laws themselves within e^eps
            both = [k for k in laws[0] if laws[0][k] > 0 or laws[1].get(k, 0) > 0]
            assert max(abs(math.log(laws[0][k] / laws[1][k])) for k in both) <= eps + 1e-9
        else:
            assert _brute_loss(laws[0], laws[1], (scale,)) <= eps + 1e-9


def test_prior_sets_on_adult() -> None:
    # the count's conditionals are already the extreme ones (1 and 0 on {0, 1}): a set costs nothing;
    # a mean's set costs noise (every prior within the DKW band of each group's 11,687 / 37,155 rows)
    def scale(query: str, prior_set: str) -> float:
        res = calibrate_property("adult", property="income=>50K", epsilon=1.0, rows=100, queries=query,
                                 mechanisms=["optimal"], prior_set=prior_set)  # fmt: skip
        if prior_set == "none":
            return next(r.scale for r in res.results[0] if isinstance(r, Calibration))
        (mine,) = [t for t in res.theorems if t.mechanism == "row-composition"]
        assert all(not isinstance(r, Calibration) and "not run" in r.reason for r in res.results[0])
        return mine.scales[0]

    assert scale("count", "dkw") == pytest.approx(scale("count", "none"), rel=1e-8)
    point, dkw = scale("mean:age", "none"), scale("mean:age", "dkw")
    assert point == pytest.approx(0.79085, abs=1e-5) and dkw == pytest.approx(0.90828, abs=1e-5)
    rel = release_property("adult", property="income=>50K", epsilon=1.0, queries="mean:age", rng=2,
                           prior_set="dkw")  # fmt: skip
    out = rel.to_dict()
    assert out["mechanism"] == "row-composition" and "DKW confidence sets" in out["guarantee"]
    assert "exact worst case over the dkw sets" in out["checked"]
    with pytest.raises(ValueError, match="released by row-composition"):
        release_property("adult", property="income=>50K", epsilon=1.0, queries="mean:age", rng=2,
                         prior_set="dkw", mechanism="wasserstein-coupling")  # fmt: skip
    with pytest.raises(ValueError, match="a prior set is certified by row-composition"):
        calibrate_property("adult", property="income=>50K", epsilon=1.0, prior_set="l1", noise="gaussian",
                           delta=1e-3)  # fmt: skip


def test_mean_distances_match_the_direct_sum() -> None:
    # the weights' first order E|z - X| in O(m log m), against the len(z) x len(x) sum it replaced
    # (that matrix took 11 GB for sum:fnlwgt's 28,000 values)
    from pufferfish.dataset.composition import _mean_distances

    g = np.random.default_rng(0)
    for _ in range(200):
        x = np.unique(g.integers(-20, 20, int(g.integers(1, 15))).astype(float))
        c = g.integers(1, 9, x.size)
        z = np.unique(np.concatenate([x, g.integers(-25, 25, 10).astype(float)]))
        d, m = _mean_distances(z, x, c)
        p = c / c.sum()
        assert np.allclose(d, np.abs(z[:, None] - x[None, :]) @ p, rtol=1e-12, atol=1e-12)
        assert m == pytest.approx(float(x @ p), abs=1e-12)
