"""Randomized mappings of a finite alphabet (issue 16): the LP, its baselines, their exact check,
the secure categorical sampler, and the release of a categorical column as labels.

Independent computations: a brute-force grid over every row-stochastic matrix (k = 2, 3), the
DP special case (point-mass priors: the LP must give k-ary randomized response exactly), the
closed form of the largest randomized-response ``p`` for point priors, HiGHS on the inner
problems of the prior sets, and chi-square tests of the sampler with a fixed byte source.
"""

from __future__ import annotations

import itertools
import json
import math
import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.optimize import linprog
from scipy.stats import chisquare
from typer.testing import CliRunner

from pufferfish import AdversaryPrior, DiscretePrior, Scenario
from pufferfish.calibration import (
    MAPPING_MECHANISMS,
    MECHANISMS,
    Skipped,
    Utility,
    calibrate,
    calibrate_mapping,
    compare,
    mapping_loss,
    optimal_matrix,
)
from pufferfish.calibration.mapping import (
    MAPPING_MAX_K,
    additive_utility,
    dyadic_weights,
    geometric_matrix,
    randomized_response_matrix,
)
from pufferfish.cli.app import app
from pufferfish.noise.samplers import sample_mapping
from pufferfish.pipeline.calibrate import calibrate_table
from pufferfish.pipeline.release import release
from pufferfish.priors.sets import PriorSet, dkw_band, set_extremes

runner = CliRunner()
ADULT_PAIR = "Married-civ-spouse,Never-married"


def _pair(p: list[float], q: list[float], support: list[float] | None = None) -> Scenario:
    a = np.arange(len(p), dtype=float) if support is None else np.asarray(support, dtype=float)
    return Scenario.single(DiscretePrior(a, np.asarray(p) / sum(p)), DiscretePrior(a, np.asarray(q) / sum(q)))


def _brute_loss(scenario: Scenario, matrix: np.ndarray) -> float:
    """Privacy loss of a matrix with every output's pmf summed by hand (no matrix product)."""
    worst = 0.0
    for _, _, p_i, p_j in scenario.iter_pairs():
        for w in range(matrix.shape[1]):
            qi = sum(float(p_i.pmf[x]) * float(matrix[x, w]) for x in range(matrix.shape[0]))
            qj = sum(float(p_j.pmf[x]) * float(matrix[x, w]) for x in range(matrix.shape[0]))
            if qi == 0 and qj == 0:
                continue
            if qi == 0 or qj == 0:
                return math.inf
            worst = max(worst, abs(math.log(qi) - math.log(qj)))
    return worst


# ----------------------------------------------------------------------------- the LP


def test_lp_against_brute_force_grid_k2() -> None:
    sc = _pair([0.7, 0.3], [0.4, 0.6])
    util = Utility("accuracy", np.array([0.5, 0.5]), np.arange(2.0))
    for eps in (0.1, 0.5, 1.0):
        got = calibrate_mapping(sc, eps, utility=util)
        grid = np.linspace(0, 1, 401)
        a, b = np.meshgrid(grid, grid, indexing="ij")  # M = [[a, 1-a], [1-b, b]]
        p, q = sc.priors[0].conditionals["s_i"].pmf, sc.priors[0].conditionals["s_j"].pmf
        ok = np.ones_like(a, dtype=bool)
        for col0, col1 in ((a, 1 - b), (1 - a, b)):  # the two outputs' columns
            qi = p[0] * col0 + p[1] * col1
            qj = q[0] * col0 + q[1] * col1
            ok &= (qi <= math.exp(eps) * qj + 1e-15) & (qj <= math.exp(eps) * qi + 1e-15)
        best = float(np.max(np.where(ok, 0.5 * a + 0.5 * b, -1)))
        assert best <= got.expected_accuracy + 1e-9  # nothing on the grid beats the LP
        assert got.expected_accuracy - best <= 2.5e-3  # and the grid gets within its step
        assert got.checked_loss + got.check_error_bound <= eps
        assert _brute_loss(sc, got.matrix) <= eps + 1e-12


def test_lp_against_brute_force_grid_k3() -> None:
    sc = _pair([0.5, 0.3, 0.2], [0.2, 0.3, 0.5])
    mu = np.array([0.3, 0.4, 0.3])
    util = Utility("accuracy", mu, np.arange(3.0))
    eps = 0.7
    got = calibrate_mapping(sc, eps, utility=util)
    step = 10
    rows = np.array([(i, j, step - i - j) for i in range(step + 1) for j in range(step + 1 - i)]) / step
    p, q = (sc.priors[0].conditionals[s].pmf for s in ("s_i", "s_j"))
    best = -1.0
    for r0 in rows:
        m = np.stack(np.broadcast_arrays(r0[None, None, :], rows[:, None, :], rows[None, :, :]), axis=2)
        qi = np.einsum("x,abxw->abw", p, m)
        qj = np.einsum("x,abxw->abw", q, m)
        e = math.exp(eps)
        ok = np.all((qi <= e * qj + 1e-15) & (qj <= e * qi + 1e-15), axis=2)
        acc = mu[0] * r0[0] + mu[1] * rows[:, None, 1] + mu[2] * rows[None, :, 2]
        best = max(best, float(np.max(np.where(ok, acc, -1))))
    assert best <= got.expected_accuracy + 1e-9
    assert got.expected_accuracy - best < 0.1
    assert _brute_loss(sc, got.matrix) <= eps + 1e-12


@pytest.mark.parametrize("k", [2, 3, 5, 8])
@pytest.mark.parametrize("eps", [0.1, 0.5, 1.0, 2.0])
def test_point_mass_priors_give_k_ary_randomized_response(k: int, eps: float) -> None:
    """The DP special case: a secret per value with a point-mass prior, every pair."""
    a = np.arange(k, dtype=float)
    conds = {f"v{x}": DiscretePrior(a, np.eye(k)[x]) for x in range(k)}
    pairs = tuple((f"v{x}", f"v{y}") for x, y in itertools.combinations(range(k), 2))
    sc = Scenario(pairs, (AdversaryPrior("dp", conds),))
    rr = math.exp(eps) / (math.exp(eps) + k - 1)
    uniform = calibrate_mapping(sc, eps, utility=Utility("accuracy", np.ones(k), a))
    assert uniform.expected_accuracy == pytest.approx(rr, abs=1e-7)
    skewed = calibrate_mapping(sc, eps, utility=Utility("accuracy", np.arange(1, k + 1.0), a))
    assert skewed.expected_accuracy >= rr - 1e-9  # never worse with a non-uniform mu
    dp = calibrate_mapping(sc, eps, "randomized-response-dp", utility=Utility("accuracy", np.ones(k), a))
    assert dp.parameter == pytest.approx(rr, rel=1e-15)
    assert dp.checked_loss == pytest.approx(eps, abs=1e-9)  # k-RR is tight for point masses


def test_randomized_response_matches_its_closed_form() -> None:
    """For point priors the largest p solves (1 + a t) = e^eps (1 + b t), t = p (k-1)/(1-p) - 1."""
    p_i, p_j = np.array([0.1, 0.5, 0.15, 0.25]), np.array([0.3, 0.2, 0.4, 0.1])
    sc = _pair(list(p_i), list(p_j))
    k = 4
    for eps in (0.2, 0.6, 1.5):
        e = math.exp(eps)
        pairs = [*zip(p_i, p_j, strict=True), *zip(p_j, p_i, strict=True)]
        t = min(((e - 1) / (a - e * b) for a, b in pairs if a > e * b), default=math.inf)
        want = 1.0 if t == math.inf else (1 + t) / (k + t)  # identity passes when no ratio binds
        got = calibrate_mapping(sc, eps, "randomized-response")
        assert got.parameter == pytest.approx(want, rel=1e-9)


def test_absolute_utility_and_numeric_alphabet() -> None:
    sc = _pair([0.6, 0.3, 0.1], [0.1, 0.3, 0.6], support=[18.0, 40.0, 65.0])
    util = Utility("absolute", np.array([1.0, 1.0, 1.0]), np.array([18.0, 40.0, 65.0]))
    got = calibrate_mapping(sc, 0.5, utility=util)
    sol = optimal_matrix(sc, 0.5, util)
    assert got.expected_abs_error == pytest.approx(sol.bound, abs=1e-6)
    for name in ("randomized-response", "randomized-response-dp", "geometric"):
        assert (
            calibrate_mapping(sc, 0.5, name, utility=util).expected_abs_error >= got.expected_abs_error - 1e-9
        )


@st.composite
def mapping_scenarios(draw: st.DrawFn) -> tuple[Scenario, Utility]:
    k = draw(st.integers(2, 6))
    masses = st.lists(st.one_of(st.just(0.0), st.floats(0.01, 1.0)), min_size=k, max_size=k)
    p, q, mu = (np.asarray(draw(masses)) for _ in range(3))
    for v in (p, q, mu):
        if v.sum() == 0:
            v[draw(st.integers(0, k - 1))] = 1.0
    a = np.arange(k, dtype=float)
    sc = Scenario.single(DiscretePrior(a, p / p.sum()), DiscretePrior(a, q / q.sum()))
    kind = draw(st.sampled_from(["none", "none", "dkw", "l1"]))
    if kind != "none":
        r = draw(st.floats(0.0, 0.3))
        rho = sc.priors[0]
        sets = {s: PriorSet(kind, a, pr.pmf, r) for s, pr in rho.conditionals.items()}  # type: ignore[union-attr]
        sc = Scenario(sc.pairs, (AdversaryPrior(rho.name, rho.conditionals, sets),))
    return sc, Utility(draw(st.sampled_from(["accuracy", "absolute"])), mu, a)


def _oracle(scenario: Scenario, matrix: np.ndarray) -> float:
    """Worst-case loss over the sets by HiGHS on each inner problem (or the point loss)."""
    if not scenario.robust:
        return _brute_loss(scenario, matrix)
    rho = scenario.priors[0]
    assert rho.sets is not None
    worst = 0.0
    (pair,) = scenario.pairs
    for up, down in (pair, pair[::-1]):
        for w in range(matrix.shape[1]):
            hi = _inner_lp(rho.sets[up], matrix[:, w], maximize=True)
            lo = _inner_lp(rho.sets[down], matrix[:, w], maximize=False)
            if hi <= 1e-300:
                continue
            worst = max(worst, math.inf if lo <= 0 else math.log(hi / lo))
    return worst


def _inner_lp(ps: PriorSet, v: np.ndarray, *, maximize: bool) -> float:
    k = v.size
    if ps.kind == "l1":
        # P = c + r d, ||d||_1 <= 1, sum d = 0, P >= 0: HiGHS's absolute tolerance (1e-10) then
        # acts on d, not on P, so a ball of radius 1e-11 is not widened ten times by it
        r = ps.radius
        if r == 0.0:
            return float(ps.center @ v)
        c = np.concatenate([-r * v if maximize else r * v, np.zeros(k)])
        eye = np.eye(k)
        a_ub = np.block(
            [[eye, -eye], [-eye, -eye], [np.zeros((1, k)), np.ones((1, k))], [-r * eye, np.zeros((k, k))]]
        )
        b_ub = np.concatenate([np.zeros(k), np.zeros(k), [1.0], ps.center])
        a_eq = np.concatenate([np.ones(k), np.zeros(k)])[None]
        tight = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}
        res = linprog(c, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=[0.0], bounds=(None, None), method="highs",
                      options=tight)  # fmt: skip
        return float(ps.center @ v + (-res.fun if maximize else res.fun))
    else:
        lower, upper = dkw_band(ps.center, ps.radius)
        tri = np.tril(np.ones((k, k)))
        c, a_ub, b_ub, a_eq = (
            (-v if maximize else v),
            np.vstack([tri, -tri]),
            np.concatenate([upper, -lower]),
            np.ones((1, k)),
        )
    tight = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}
    res = linprog(
        c, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=[1.0], bounds=(0, None), method="highs", options=tight
    )
    return float(-res.fun if maximize else res.fun)


@pytest.mark.slow
@given(mapping_scenarios(), st.sampled_from([0.1, 0.5, 1.0, 3.0]))
def test_every_mapping_passes_an_independent_check_and_the_lp_is_best(case, eps) -> None:
    sc, util = case
    results = {name: calibrate_mapping(sc, eps, name, utility=util) for name in MAPPING_MECHANISMS}
    for res in results.values():
        assert np.all(res.weights.sum(axis=1) == 2**52)
        assert res.checked_loss + res.check_error_bound <= eps
        # HiGHS meets constraints within 1e-10 absolute: on a set of radius ~1e-7 that moves the
        # smallest side by a relative 1e-4 at worst, seen as up to 1e-7 nats here
        assert _oracle(sc, res.matrix) <= eps + 1e-6
    best = results["optimal-mapping"]
    for res in results.values():
        if util.kind == "accuracy":
            assert best.expected_accuracy >= res.expected_accuracy - 1e-7
        else:
            assert best.expected_abs_error <= res.expected_abs_error + 1e-7


@given(mapping_scenarios())
def test_lp_bound_holds_against_the_additive_optimal(case) -> None:
    """No mechanism beats the LP: the optimal Laplace scale, scored after rounding, included."""
    sc, util = case
    if util.kind != "accuracy":
        return
    lp = calibrate_mapping(sc, 0.5, utility=util)
    additive = calibrate(sc, 0.5, "optimal")
    assert lp.expected_accuracy >= additive_utility("laplace", additive.scale, util)[0] - 1e-7


def test_set_extremes_against_highs() -> None:
    rng = np.random.default_rng(1)
    for trial in range(200):
        k = int(rng.integers(2, 10))
        ps = PriorSet(("dkw", "l1")[trial % 2], np.arange(k, dtype=float), rng.dirichlet(np.ones(k) * 0.5),
                      float(rng.uniform(0, 0.6)))  # fmt: skip
        v = rng.random((k, 3)) * (rng.random((k, 3)) < 0.7)
        for maximize in (True, False):
            pmfs = set_extremes(ps, v, maximize=maximize)
            for col in range(3):
                assert pmfs[col] @ v[:, col] == pytest.approx(
                    _inner_lp(ps, v[:, col], maximize=maximize), abs=1e-8
                )
                if ps.kind == "dkw":
                    lower, upper = dkw_band(ps.center, ps.radius)
                    cdf = np.cumsum(pmfs[col])
                    assert np.all(cdf >= lower - 1e-12) and np.all(cdf <= upper + 1e-12)
                else:
                    assert np.abs(pmfs[col] - ps.center).sum() <= ps.radius + 1e-12


# ----------------------------------------------------------------------------- pieces


def test_dyadic_weights_sum_exactly_and_keep_zeros() -> None:
    rng = np.random.default_rng(3)
    m = rng.dirichlet(np.ones(7), size=7) * (rng.random((7, 7)) < 0.6)
    m[:, 0] += 1e-3
    w = dyadic_weights(m)
    assert w.dtype == np.int64 and np.all(w.sum(axis=1) == 2**52)
    assert np.all(w[m == 0] == 0)
    assert np.max(np.abs(w / 2.0**52 - m / m.sum(1, keepdims=True))) < 1e-15


def test_geometric_and_rr_matrices_are_stochastic() -> None:
    for k, alpha in ((2, 0.3), (5, 0.0), (9, 0.9)):
        g = geometric_matrix(k, alpha)
        assert np.allclose(g.sum(axis=1), 1.0) and np.all(g >= 0)
    assert np.allclose(randomized_response_matrix(6, 0.4).sum(axis=1), 1.0)


def test_additive_utility_closed_form() -> None:
    util = Utility("accuracy", np.array([0.25, 0.5, 0.25]), np.arange(3.0))
    b = 0.8
    interior = 1 - math.exp(-0.5 / b)
    end = 1 - 0.5 * math.exp(-0.5 / b)
    acc, mae = additive_utility("laplace", b, util)
    assert acc == pytest.approx(0.5 * end + 0.5 * interior, rel=1e-12)
    assert mae == b
    assert additive_utility("gaussian", 0.0, util) == (1.0, 0.0)


def test_check_finds_an_output_only_one_secret_can_produce() -> None:
    sc = _pair([1.0, 0.0], [0.5, 0.5])
    loss = mapping_loss(sc, np.eye(2), np.arange(2.0))
    assert loss.loss == math.inf
    assert mapping_loss(sc, np.full((2, 2), 0.5), np.arange(2.0)).loss == 0.0


# ----------------------------------------------------------------------------- the sampler


def _byte_source(seed: int):
    gen = np.random.default_rng(seed)
    return lambda n: gen.bytes(n)


def test_secure_sampler_frequencies_match_the_matrix() -> None:
    m = np.array(
        [[0.5, 0.25, 0.125, 0.125], [0.1, 0.6, 0.3, 0.0], [0.0, 0.0, 1.0, 0.0], [0.2, 0.2, 0.2, 0.4]]
    )
    w = dyadic_weights(m)
    n = 200_000
    x = np.repeat(np.arange(4), n)
    drawn = sample_mapping(x, w, random_bytes=_byte_source(20261123))
    assert drawn.secure and drawn.seed is None
    for row in range(4):
        counts = np.bincount(drawn.indices[x == row], minlength=4)
        live = m[row] > 0
        assert np.all(counts[~live] == 0)  # a zero weight is never drawn
        if live.sum() > 1:
            assert chisquare(counts[live], n * m[row][live]).pvalue > 1e-3


def test_insecure_sampler_is_reproducible_and_os_sampler_runs() -> None:
    w = dyadic_weights(randomized_response_matrix(3, 0.5))
    a = sample_mapping(np.arange(3).repeat(10), w, rng=7)
    b = sample_mapping(np.arange(3).repeat(10), w, rng=7)
    assert np.array_equal(a.indices, b.indices) and not a.secure and a.seed == 7
    c = sample_mapping(np.arange(3).repeat(1000), w)
    assert c.secure and set(np.unique(c.indices)) <= {0, 1, 2}


@pytest.mark.parametrize(
    ("weights", "indices", "message"),
    [
        (np.ones((2, 2), dtype=np.int64), [0], "summing to 2^52"),
        (dyadic_weights(np.eye(2)), [2], "indices must be integers in [0, 2)"),
        (np.ones((1, 1), dtype=np.int64) * 2**52, [0], "2 to 1024 rows"),
    ],
)
def test_sampler_rejects_bad_input(weights, indices, message) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        sample_mapping(np.asarray(indices), weights)


# ----------------------------------------------------------------------------- bad input


def test_bad_input_names_the_argument() -> None:
    sc = _pair([0.5, 0.5], [0.4, 0.6])
    with pytest.raises(ValueError, match="utility must be one of shares, accuracy, absolute, got 'best'"):
        Utility("best", np.ones(2), np.arange(2.0))
    with pytest.raises(ValueError, match="optimal-mapping is a randomized mapping"):
        calibrate(sc, 0.5, "optimal-mapping")
    with pytest.raises(ValueError, match="mechanism must be one of randomized-response-dp"):
        calibrate_mapping(sc, 0.5, "optimal")
    one = Scenario.single(DiscretePrior.point(1.0), DiscretePrior.point(1.0))
    with pytest.raises(ValueError, match="at least 2 values, got 1"):
        calibrate_mapping(one, 0.5)
    big = MAPPING_MAX_K + 1
    wide = _pair(list(np.ones(big)), list(np.arange(1.0, big + 1)))
    with pytest.raises(ValueError, match="needs about 0.4 GiB for 1,001 labels"):
        calibrate_mapping(wide, 0.5)
    skipped = compare(wide, 0.5, ["optimal-mapping", "geometric"])
    assert all("GiB for 1,001 labels" in s.reason for s in skipped)  # type: ignore[union-attr]
    # randomized response has no alphabet limit (two integers, O(k) check)
    assert calibrate_mapping(wide, 0.5, "randomized-response").channel.k == big


def test_cli_bad_utility_and_mechanism_are_one_line() -> None:
    base = [
        "calibrate",
        "adult",
        "--secret",
        "sex",
        "--pair",
        "Male,Female",
        "--public",
        "race",
        "--epsilon",
        "1",
    ]
    res = runner.invoke(app, [*base, "--utility", "best"])
    assert res.exit_code == 1 and res.output.strip().splitlines() == [
        "error: utility must be one of shares, accuracy, absolute, got 'best'"
    ]
    res = runner.invoke(app, [*base, "--mechanism", "optimal-map"])
    assert res.exit_code == 1 and len(res.output.strip().splitlines()) == 1
    assert "optimal-mapping" in res.output


# ----------------------------------------------------------------------------- Adult


def test_adult_reference_values_point_estimate() -> None:
    """Issue 16's reference values: workclass given marital-status, 8 labels, the rows with '?'
    left out (``missing="omit"``; the default reads it as a ninth label, issue 41)."""
    table = calibrate_table(
        "adult", secret="marital-status", public="workclass", pairs=[ADULT_PAIR],
        epsilon=[0.1, 0.5, 1.0], prior_set="none", mechanisms=list(MECHANISMS), utility="accuracy",
        missing="omit",
    )  # fmt: skip
    rows = {(c.mechanism, c.epsilon): c for c in table.comparison}
    for eps, lp, rr in ((0.1, 0.8216, 0.1364), (0.5, 0.9085, 0.1906), (1.0, 0.9874, 0.2797)):
        assert round(rows["optimal-mapping", eps].expected_accuracy, 4) == lp
        assert round(rows["randomized-response-dp", eps].expected_accuracy, 4) == rr
        best = rows["optimal-mapping", eps].expected_accuracy  # type: ignore[union-attr]
        for c in table.at(eps):
            if not isinstance(c, Skipped):
                assert c.expected_accuracy is not None and c.expected_accuracy <= best + 1e-9
    assert table.utility is not None and table.utility.support.size == 8
    assert table.utility.weights[3] == pytest.approx(0.7364, abs=1e-4)  # Private over the released rows


def test_release_adult_workclass_as_labels(tmp_path) -> None:
    out = tmp_path / "wc.csv"
    res = runner.invoke(
        app,
        ["release", "adult", "--secret", "marital-status", "--pair", ADULT_PAIR, "--public", "workclass",
         "--epsilon", "0.5", "--mechanism", "optimal-mapping", "--output", str(out),
         "--report", str(tmp_path / "wc.html")],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    report = json.loads((tmp_path / "wc.report.json").read_text())
    chosen = report["chosen"]
    assert chosen["scale"] is None and chosen["mechanism"] == "optimal-mapping"
    assert len(chosen["matrix"]) == 9 and all(abs(sum(r) - 1) < 1e-12 for r in chosen["matrix"])
    assert chosen["checked_loss"] + chosen["check_error_bound"] <= 0.5
    assert report["noise"]["secure"] is True
    for row in (r for r in report["mechanisms"] if "reason" not in r):  # every calibrated row
        assert {"mechanism", "epsilon", "checked_loss", "expected_accuracy", "expected_abs_error"} <= set(row)
    import csv

    labels = {label or "" for label, _ in (tuple(m.values()) for m in report["mapping"])}  # None: missing
    with out.open(newline="") as f:
        rows = list(csv.reader(f))  # one column (issue 41): a missing cell is an empty line ([])
    assert rows[0] == ["workclass"]
    released = [r[0] if r else "" for r in rows[1:]]
    assert len(released) == 48_842
    assert set(released) <= labels and "" in labels  # a missing cell is a label, drawn as any other
    page = (tmp_path / "wc.html").read_text()
    assert 'id="fig-matrix"' in page and 'id="fig-accuracy-epsilon"' in page
    counts = report["noise"]["counts"]  # the label counts in and out, side by side in the page
    assert 'id="label-counts"' in page and counts["values"][-1] is None
    assert [v or "" for v in counts["values"]] == [*sorted(labels - {""}), ""]
    assert counts["input"][-1] == 2_799  # the '?' cells, in the check (issue 41)
    for label, n_in, n_out in zip(counts["values"], counts["input"], counts["output"], strict=True):
        shown = label or "(missing)"
        assert (
            f'data-key="count-in:{shown}">{n_in}<' in page
            and f'data-key="count-out:{shown}">{n_out}<' in page
        )
        assert released.count(label or "") == n_out


def test_release_keeps_other_columns_and_numeric_alphabet(tmp_path) -> None:
    src = tmp_path / "t.csv"
    rng = np.random.default_rng(5)
    lines = ["id,group,score,note"]
    for i in range(400):
        g = "a" if i % 2 else "b"
        lines.append(f'{i:04d},{g},{int(rng.integers(1, 5)) if i % 7 else ""},"x, {i}"')
    src.write_text("\n".join(lines) + "\n")
    result = release(
        src, secret="group", public="score", pairs=["a,b"], epsilon=1.0, output=tmp_path / "o.csv",
        mechanism="optimal-mapping", rng=3, keep_unchecked="id,note",
     keep_order=True,)  # fmt: skip
    assert result.chosen.utility == "absolute"  # type: ignore[union-attr]
    import csv

    with (tmp_path / "o.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    with src.open(newline="") as f:
        orig = list(csv.DictReader(f))
    assert list(rows[0]) == ["id", "score", "note"]  # the secret 'group' is not written
    assert [r["id"] for r in rows] == [r["id"] for r in orig]
    assert [r["note"] for r in rows] == [r["note"] for r in orig]
    assert {r["score"] for r in rows} <= {"1.0", "2.0", "3.0", "4.0", ""}
    # the 58 missing cells stay missing, inside the check (the missing atom, issue 41)
    assert [r["score"] == "" for r in rows] == [r["score"] == "" for r in orig]
    atom = result.report["missing_atom"]
    assert sum(atom["rows"].values()) == 58 and atom["present_epsilons"][0] < 1.0


@pytest.mark.parametrize(
    ("public", "message"),
    [
        ("fnlwgt", "needs about 303 GiB for 28,523 labels (optimal-mapping works on a k x k matrix"),
        ("one", "a mapping needs an alphabet of at least 2 values, got 1"),
    ],
)
def test_cli_release_with_a_mapping_on_a_bad_alphabet_is_one_line(tmp_path, public, message) -> None:
    src = tmp_path / "t.csv"
    src.write_text("s,one\n" + "".join(f"{'ab'[i % 2]},x\n" for i in range(20)))
    data = "adult" if public == "fnlwgt" else str(src)
    pair = ADULT_PAIR if public == "fnlwgt" else "a,b"
    secret = "marital-status" if public == "fnlwgt" else "s"
    res = runner.invoke(
        app,
        ["release", data, "--secret", secret, "--pair", pair, "--public", public, "--epsilon", "1",
         "--mechanism", "optimal-mapping", "--output", str(tmp_path / "o.csv")],
    )  # fmt: skip
    lines = res.output.strip().splitlines()
    assert res.exit_code == 1 and len(lines) == 1 and message in lines[0], res.output
    assert not (tmp_path / "o.csv").exists()


# ----------------------------------------------------------------------------- issue 44: the LP's size


def _band_vertices(ps: PriorSet) -> list[np.ndarray]:
    """Every vertex of the DKW band, as pmfs: the CDF values F_1..F_{k-1} at which k - 1 of the
    constraints L <= F <= U, F_{j-1} <= F_j (F_0 = 0, F_k = 1) are tight and all hold."""
    lower, upper = dkw_band(ps.center, ps.radius)
    d = ps.center.size - 1
    rows, rhs = [], []  # a . F >= b
    for j in range(d):
        e = np.eye(d)[j]
        rows += [e, -e]
        rhs += [lower[j], -upper[j]]
        rows.append(e - (np.eye(d)[j - 1] if j else 0.0))
        rhs.append(0.0)
    rows.append(-np.eye(d)[d - 1])
    rhs.append(-1.0)
    a, b = np.array(rows), np.array(rhs)
    out = []
    for pick in itertools.combinations(range(len(b)), d):
        sub = a[list(pick)]
        if abs(np.linalg.det(sub)) < 1e-12:
            continue
        f = np.linalg.solve(sub, b[list(pick)])
        if np.all(a @ f >= b - 1e-12):
            out.append(np.diff(np.concatenate([[0.0], f, [1.0]])))
    return out


@pytest.mark.parametrize("seed", range(6))
def test_dkw_dual_form_gives_the_optimum_of_the_vertex_form(seed: int) -> None:
    """The mapping LP over DKW bands (its dual form, issue 44) against the same LP written with
    every vertex of both bands (an independent formulation), on 3 and 4 labels."""
    rng = np.random.default_rng(seed)
    k = 3 + seed % 2
    a = np.arange(k, dtype=float)
    p, q = rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))
    eta = float(rng.uniform(0.02, 0.15))
    sets = {"s_i": PriorSet("dkw", a, p, eta), "s_j": PriorSet("dkw", a, q, eta)}
    rho = AdversaryPrior("p", {"s_i": DiscretePrior(a, p), "s_j": DiscretePrior(a, q)}, sets)
    sc = Scenario([("s_i", "s_j")], (rho,))
    mu = rng.dirichlet(np.ones(k))
    util = Utility("accuracy", mu, a)
    eps = float(rng.choice([0.3, 0.8]))
    got = optimal_matrix(sc, eps, util)
    # variables: M (k x k) then I_w for each output and direction
    n = k * k + 2 * k
    a_ub, b_ub = [], []
    for d, (up, down) in enumerate((("s_i", "s_j"), ("s_j", "s_i"))):
        for w in range(k):
            for v in _band_vertices(sets[up]):  # <P, m_w> <= e^eps I_w
                row = np.zeros(n)
                row[np.arange(k) * k + w] = v
                row[k * k + d * k + w] = -math.exp(eps)
                a_ub.append(row), b_ub.append(0.0)
            for v in _band_vertices(sets[down]):  # I_w <= <Q, m_w>
                row = np.zeros(n)
                row[np.arange(k) * k + w] = -v
                row[k * k + d * k + w] = 1.0
                a_ub.append(row), b_ub.append(0.0)
    a_eq = np.zeros((k, n))
    for x in range(k):
        a_eq[x, x * k : (x + 1) * k] = 1.0
    c = np.zeros(n)
    c[np.arange(k) * (k + 1)] = -mu
    res = linprog(
        c, A_ub=np.array(a_ub), b_ub=b_ub, A_eq=a_eq, b_eq=np.ones(k), bounds=(0, None), method="highs"
    )
    assert res.status == 0
    assert got.bound == pytest.approx(-res.fun, abs=1e-7)


def test_lp_size_is_counted_before_building_and_large_lps_are_not_run(tmp_path) -> None:
    import pufferfish.calibration.mapping_lp as mp

    rng = np.random.default_rng(3)
    k = 12
    a = np.arange(k, dtype=float)
    built = []
    real = mp.linprog

    def spy(**problem):  # the LP actually built
        built.append((problem["c"].size, problem["A_ub"].nnz + problem["A_eq"].nnz))
        return real(**problem)

    for kind in ("dkw", "l1"):
        p, q = rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))
        sets = {"s_i": PriorSet(kind, a, p, 0.05), "s_j": PriorSet(kind, a, q, 0.05)}
        rho = AdversaryPrior("p", {"s_i": DiscretePrior(a, p), "s_j": DiscretePrior(a, q)}, sets)
        sc = Scenario([("s_i", "s_j")], (rho,))
        util = Utility("shares", rng.dirichlet(np.ones(k)), a)
        built.clear()
        mp.linprog = spy
        try:
            mp.optimal_matrix(sc, 1.0, util)
        finally:
            mp.linprog = real
        assert built == [mp.lp_size(sc, a, "shares")]  # (variables, entries), exactly
    # 300 labels under the default band: refused before anything is built, the others answer
    labels = [f"L{i:03d}" for i in rng.integers(0, 300, 6000)]
    src = tmp_path / "t.csv"
    src.write_text("s,v\n" + "".join(f"{'AB'[i % 2]},{v}\n" for i, v in enumerate(labels)))
    out = tmp_path / "o.csv"
    res = release(src, secret="s", public="v", pairs=["A,B"], epsilon=1.0, output=out, rng=1)
    skipped = [
        c for c in res.calibration.comparison if c.mechanism == "optimal-mapping" and hasattr(c, "reason")
    ]
    assert any("not run: the mapping LP of 300 labels" in c.reason for c in skipped)  # type: ignore[attr-defined]
    assert res.chosen.mechanism != "optimal-mapping" and out.exists()
