"""Gaussian and GMM priors, Laplace/Gaussian noise, (eps, delta) and eps-MI (seeds 002, 003, 004)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy.integrate import quad
from scipy.special import ndtr
from typer.testing import CliRunner

from pufferfish.calibration import (
    MECHANISMS,
    Calibration,
    Skipped,
    analytic_gaussian_delta,
    approximate_from_mi,
    calibrate,
    calibrate_optimal,
    compare,
    corollary1_identical_scale,
    corollary1_scale,
    gaussian_delta,
    mi_from_approximate,
    summation_scenario,
    tau_star,
)
from pufferfish.cli.app import app
from pufferfish.loss.density import release_density
from pufferfish.loss.divergence import hockey_stick, mutual_information, privacy_loss_sup
from pufferfish.priors.distributions import DiscretePrior, GaussianMixturePrior
from pufferfish.priors.scenario import Scenario
from pufferfish.tables import estimate_priors
from pufferfish.tables.fit import fit_priors

G = GaussianMixturePrior


def _grid_delta(f_i, f_j, eps, lo=-400.0, hi=400.0, n=4_000_001):
    y = np.linspace(lo, hi, n)
    h = y[1] - y[0]
    p, q = np.exp(f_i.log_pdf(y)), np.exp(f_j.log_pdf(y))
    e = math.exp(eps)
    return max(np.maximum(p - e * q, 0).sum() * h, np.maximum(q - e * p, 0).sum() * h)


def test_normal_laplace_density_and_cdf() -> None:
    f = release_density(G([0.3, 0.7], [0.0, 5.0], [1.0, 2.0]), "laplace", 1.5)
    total, _ = quad(lambda y: math.exp(f.log_pdf(np.array([y]))[0]), -80, 80, limit=200)
    assert total == pytest.approx(1.0, abs=1e-10)
    part, _ = quad(lambda y: math.exp(f.log_pdf(np.array([y]))[0]), -80, 2.0, limit=200)
    assert f.cdf(np.array([2.0]))[0] == pytest.approx(part, abs=1e-10)
    rng = np.random.default_rng(0)  # Monte Carlo of X + N
    n = 400_000
    x = np.where(rng.random(n) < 0.3, rng.normal(0, 1, n), rng.normal(5, 2, n)) + rng.laplace(0, 1.5, n)
    assert np.mean(x <= 2.0) == pytest.approx(f.cdf(np.array([2.0]))[0], abs=4e-3)


@pytest.mark.slow
def test_loss_delta_information_against_brute_force() -> None:
    fi = release_density(G.gaussian(0, 1), "laplace", 2.0)
    fj = release_density(G.gaussian(1, 2), "laplace", 2.0)
    lb = privacy_loss_sup(fi, fj)
    # beyond the Gaussians the log-ratio tends to (4 - 1)/(2 * 4) + 1/2 = 0.875 (SPEC sec 4)
    assert lb.loss == pytest.approx(0.875, abs=1e-9) and lb.error_bound < 1e-9
    y = np.linspace(-200, 200, 400_001)
    assert np.abs(fi.log_pdf(y) - fj.log_pdf(y)).max() <= lb.upper
    hb = hockey_stick(fi, fj, 0.3)
    assert hb.delta == pytest.approx(_grid_delta(fi, fj, 0.3), abs=1e-9)
    assert hb.error_bound < 1e-9
    ib = mutual_information([fi, fj], [0.5, 0.5], tol=1e-5)
    y = np.linspace(-300, 300, 3_000_001)
    p, q = np.exp(fi.log_pdf(y)), np.exp(fj.log_pdf(y))
    m = 0.5 * (p + q)
    brute = np.sum(0.5 * p * np.log(p / m) + 0.5 * q * np.log(q / m)) * (y[1] - y[0])
    assert abs(ib.information - brute) <= ib.error_bound + 1e-9 and ib.error_bound <= 1e-5


def test_gaussian_noise_discrete_priors_delta_against_grid_and_dp_accounting() -> None:
    from dp_accounting.pld import privacy_loss_distribution as pld

    pi = DiscretePrior([0, 1, 2], [0.2, 0.3, 0.5])
    pj = DiscretePrior([0, 1, 2], [0.5, 0.3, 0.2])
    fi, fj = release_density(pi, "gaussian", 1.3), release_density(pj, "gaussian", 1.3)
    hb = hockey_stick(fi, fj, 0.4)
    assert hb.delta == pytest.approx(_grid_delta(fi, fj, 0.4, -40, 40, 800_001), abs=1e-8)
    # dp_accounting on a fine discretisation (its loss rounding is pessimistic, the grid optimistic)
    y = np.linspace(-15, 17, 64_001)
    w = y[1] - y[0]
    lp, lq = fi.log_pdf(y) + math.log(w), fj.log_pdf(y) + math.log(w)
    for upper, lower, mine in ((lp, lq, hb.forward), (lq, lp, hb.backward)):
        dist = pld.from_two_probability_mass_functions(
            dict(enumerate(upper)), dict(enumerate(lower)), value_discretization_interval=1e-5
        )
        theirs = dist.get_delta_for_epsilon(0.4)
        assert abs(theirs - mine) < 1e-5


@pytest.mark.parametrize("v", [(0.0, 1.0, 1.0, 1.0), (0.0, 1.0, 0.5, 3.0), (2.0, 4.0, 0.0, 1.0)])
def test_gaussian_delta_closed_form(v) -> None:
    mi, vi, mj, vj = v
    fi = release_density(G.gaussian(mi, math.sqrt(vi)), "gaussian", 0.0)
    fj = release_density(G.gaussian(mj, math.sqrt(vj)), "gaussian", 0.0)
    hb = hockey_stick(fi, fj, 0.5)
    closed = max(gaussian_delta(mi, vi, mj, vj, 0.5), gaussian_delta(mj, vj, mi, vi, 0.5))
    assert closed == pytest.approx(hb.delta, abs=1e-9)
    if vi == vj:  # Balle and Wang (2018) Thm 8
        assert closed == pytest.approx(analytic_gaussian_delta(1.0, abs(mi - mj), 0.5), abs=1e-12)


def test_tau_star() -> None:
    for d in (1e-6, 1e-3, 0.1, 0.3, 0.5, 0.9):
        q = tau_star(d)
        assert 2 * (1 - ndtr(q)) == pytest.approx(d, rel=1e-9)  # eq (20)
        assert tau_star(d, "lambertw") >= q  # eq (23) comes from the tail bound (21)
    with pytest.raises(ValueError, match="delta must be in"):
        tau_star(0.0)


def test_corollary1_is_theorem1_on_the_summation_query() -> None:
    means, stds = [1.0, 0.5, 2.0, 0.0], [1.0, 3.0, 0.5, 2.0]
    sc = summation_scenario(means, stds)
    c = calibrate(sc, 1.0, delta=0.3, mechanism="monge")
    assert c.scale == pytest.approx(corollary1_scale(means, stds, 1.0, 0.3), rel=1e-12)
    k, mu, sd = 50, 1.0, 5.0
    same = corollary1_scale([mu] * k, [sd] * k, 1.0, 0.3)
    assert same == pytest.approx(corollary1_identical_scale(mu, sd, k, 1.0, 0.3), rel=1e-12)  # eq (11)
    opt = calibrate_optimal(sc, 1.0, delta=0.3)
    assert opt.scale <= c.scale


@pytest.mark.slow
@settings(deadline=None)  # examples from the hypothesis profile (quick: 60)
@given(
    st.floats(-5, 5), st.floats(0.2, 4), st.floats(-5, 5), st.floats(0.2, 4),
    st.sampled_from([0.5, 1.0]), st.sampled_from([0.05, 0.3]),
)  # fmt: skip
@example(4e-16, 1.0, 0.0, 1.0, 0.5, 0.05)  # theorem scale 8e-16: s/b = 1e15 once lost all digits
@example(1e-161, 0.2, 0.0, 0.2, 0.5, 0.05)  # s/b = 1e160: the tilted modes once overflowed to NaN
@example(5e-324, 1.0, 0.0, 1.0, 0.5, 0.05)  # b denormal: s/b overflowed, the mode solve had no bracket
@example(0.5, 0.5, 0.0, 0.5, 0.5, 0.3)  # Remark 1 scale: g tends to eps in both tails (was 5 s)
def test_every_theorem_scale_passes_and_optimal_is_smallest(mi, si, mj, sj, eps, delta) -> None:
    sc = Scenario.single(G.gaussian(mi, si), G.gaussian(mj, sj))
    res = compare(sc, eps, delta=delta, mechanisms=("monge", "monge-lambertw", "gmm", "optimal"))
    used = [r for r in res if isinstance(r, Calibration)]
    assert [r.mechanism for r in used] == ["monge", "monge-lambertw", "gmm", "optimal"]  # none failed
    for r in used:
        assert r.checked_delta is not None and r.checked_delta + r.check_error_bound <= delta
    assert used[-1].scale <= min(r.scale for r in used[:-1]) * (1 + 1e-9)
    assert used[0].scale == pytest.approx(used[2].scale, rel=1e-9)  # Thm 2 with one component = Thm 1


def test_gaussian_noise_mechanisms_on_discrete_priors() -> None:
    sc = Scenario.single(DiscretePrior([0, 1, 2], [0.2, 0.3, 0.5]), DiscretePrior([0, 1, 2], [0.5, 0.3, 0.2]))
    res = {r.mechanism: r for r in compare(sc, 0.5, MECHANISMS, delta=1e-3, noise="gaussian")}
    kg, ag, opt = res["kantorovich-gaussian"], res["analytic-gaussian"], res["optimal"]
    assert isinstance(kg, Calibration) and isinstance(ag, Calibration)
    assert kg.scale == pytest.approx(math.sqrt(2 * math.log(1.25 / 1e-3)) * 1 / 0.5, rel=1e-12)  # Delta = 1
    assert opt.scale <= ag.scale <= kg.scale
    assert opt.checked_delta == pytest.approx(1e-3, rel=1e-6)
    assert isinstance(res["monge"], Skipped) and "laplace" in res["monge"].reason
    assert isinstance(res["mi-gaussian-entropy"], Skipped)
    bad = compare(sc, 1.5, delta=1e-3, noise="gaussian", mechanisms=["kantorovich-gaussian"])
    assert isinstance(bad[0], Skipped) and "eps < 1" in bad[0].reason
    with pytest.raises(ValueError, match="delta > 0"):
        calibrate_optimal(sc, 0.5, delta=0.0, noise="gaussian")


def test_mi_calibrators_pass_their_check_and_conversions() -> None:
    sc = Scenario.single(G.gaussian(0, 1), G.gaussian(1, 2))
    for noise, mech in (
        ("gaussian", "mi-gaussian"),
        ("laplace", "mi-laplace"),
        ("gaussian", "mi-gaussian-entropy"),
    ):
        r = calibrate(sc, 0.05, noise=noise, mechanism=mech, secret_weights=[0.3, 0.7])
        assert r.criterion == "eps-MI PP" and r.checked_information + r.check_error_bound <= 0.05
    thm3 = calibrate(sc, 0.05, mechanism="mi-gaussian")
    thm4 = calibrate(sc, 0.05, mechanism="mi-gaussian-entropy")
    assert thm4.scale <= thm3.scale  # the entropy power B only lowers the bound
    assert approximate_from_mi(0.02) == pytest.approx(0.2)
    assert mi_from_approximate(1.0, 0.0, 3) > 0
    assert mi_from_approximate(1e-9, 0.0, 3) == pytest.approx(0.0, abs=1e-6)


def test_gmm_translation_and_fits() -> None:
    a = G([0.4, 0.6], [0.0, 3.0], [1.0, 0.5])
    b = G([0.4, 0.6], [1.0, 2.0], [1.0, 0.5])
    sc = Scenario.single(a, b)
    r = calibrate(sc, 1.0, mechanism="gmm-translation")  # Cor 2, eq (15): pure eps
    assert r.scale == pytest.approx(0.4 * 1 + 0.6 * 1) and r.checked_loss <= 1.0
    x = np.array([1.0, 2.0, 3.0, 4.0])
    g = G.fit_gaussian(x, [1, 1, 1, 1])
    assert g.means[0] == 2.5 and g.stds[0] == pytest.approx(math.sqrt(1.25))  # divides by n
    with pytest.raises(ValueError, match="weights must be > 0"):
        G([0.0, 1.0], [0.0, 1.0], [1.0, 1.0])


@pytest.mark.slow
def test_seed003_adult_section_v() -> None:
    est = estimate_priors(
        "adult", secret="race", public="education-num", pairs=[("Black", "Asian-Pac-Islander")]
    )
    fitted = fit_priors(est, "gmm", n_components=3, rng=0)
    for d in (0.5, 0.3):
        thm = calibrate(fitted.scenario, 1.0, delta=d, mechanism="gmm")
        opt = calibrate_optimal(fitted.scenario, 1.0, delta=d, upper=thm.scale)
        assert thm.checked_delta + thm.check_error_bound <= d
        assert opt.scale < thm.scale
    pure = calibrate_optimal(fitted.scenario, 1.0, delta=0.0)
    assert pure.checked_loss + pure.check_error_bound <= 1.0


runner = CliRunner()


@pytest.mark.slow
def test_cli_gmm_delta_and_gaussian_release(tmp_path) -> None:
    res = runner.invoke(app, [
        "calibrate", "adult", "--secret", "race", "--pair", "Black,Asian-Pac-Islander", "--public",
        "education-num", "--epsilon", "1", "--delta", "0.3", "--prior", "gmm:3", "--json",
    ])  # fmt: skip
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    rows = {r["mechanism"]: r for r in out["results"]}
    assert rows["gmm"]["delta"] == 0.3 and rows["gmm"]["checked_delta"] <= 0.3
    assert rows["l1"]["scale"] is None and rows["l1"]["reason"] == "needs discrete priors"
    assert out["prior_model"] == "gmm" and len(out["fitted_priors"]["Black"]["weights"]) == 3
    dest = tmp_path / "rel.csv"
    res = runner.invoke(app, [
        "release", "adult", "--secret", "race", "--pair", "Black,Asian-Pac-Islander", "--public",
        "education-num", "--epsilon", "0.5", "--delta", "0.001", "--noise", "gaussian", "--output",
        str(dest), "--rng-seed", "3",
    ])  # fmt: skip
    assert res.exit_code == 0, res.output
    report = json.loads((tmp_path / "rel.report.json").read_text())
    assert report["chosen"]["noise"] == "gaussian" and report["chosen"]["checked_delta"] <= 0.001
    assert "delta=0.001" in report["guarantee"]
    bad = runner.invoke(
        app,
        [
            "calibrate",
            "adult",
            "--secret",
            "race",
            "--pair",
            "Black,White",
            "--public",
            "education-num",
            "--epsilon",
            "1",
            "--prior",
            "gmm:x",
        ],
    )
    assert bad.exit_code == 1 and "prior must be" in bad.output
