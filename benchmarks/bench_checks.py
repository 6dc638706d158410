"""Time of the exact checks and optimal calibrations for Gaussian/GMM priors (seeds 002-004).

Run: ``python benchmarks/bench_checks.py``. Prints, for each case, the median wall time of 5 runs
(3 for calibrations and the mutual information), the number of log-density evaluations or grid
intervals and the stated numerical error bound, and the machine.

Cases: seed 003 Cor 1 pair (K = 1000 identical users, sigma^2 = 25, mu = 1) and seed 003 sec V
(education-num, Black vs Asian-Pac-Islander, 3-component GMMs fitted with seed 0) on the shipped
Adult data; the discrete empirical priors of the same pair for Gaussian noise and for the
mutual information.
"""

from __future__ import annotations

import math

from _timing import machine, median_seconds

from pufferfish.calibration import calibrate_optimal, summation_scenario
from pufferfish.loss.density import release_density
from pufferfish.loss.divergence import hockey_stick, mutual_information, privacy_loss_sup
from pufferfish.priors.scenario import Scenario
from pufferfish.tables import estimate_priors
from pufferfish.tables.fit import fit_priors


def _one_pair(scenario: Scenario) -> tuple[Scenario, object, object]:
    i, j = scenario.pairs[0]
    prior = scenario.priors[0]
    p, q = prior.conditionals[i], prior.conditionals[j]
    return Scenario.single(p, q, names=(i, j)), p, q


def _row(name: str, seconds: float, detail: str) -> None:
    print(f"{name:<58} {seconds * 1e3:>10.1f} ms  {detail}")


def main() -> None:
    print(machine())
    cor1, cp, cq = _one_pair(summation_scenario([1.0] * 1000, [5.0] * 1000))
    est = estimate_priors(
        "adult", secret="race", public="education-num", pairs=[("Black", "Asian-Pac-Islander")]
    )
    gmm, gp, gq = _one_pair(fit_priors(est, "gmm", n_components=3, rng=0).scenario)
    emp, ep, eq = _one_pair(est.scenario)
    print(f"{'case':<58} {'median':>13}  detail")
    for label, p, q, b in (("Cor 1 K=1000 s^2=25", cp, cq, 4.07), ("Adult GMM (003 sec V)", gp, gq, 2.0)):
        fi, fj = release_density(p, "laplace", b), release_density(q, "laplace", b)
        lb = privacy_loss_sup(fi, fj)
        _row(
            f"loss sup, {label}, Laplace b={b}",
            median_seconds(lambda fi=fi, fj=fj: privacy_loss_sup(fi, fj)),
            f"loss {lb.loss:.6f}, error bound {lb.error_bound:.1e}, {lb.evaluations} evaluations",
        )
        hb = hockey_stick(fi, fj, 1.0)
        _row(
            f"delta at eps=1, {label}, Laplace b={b}",
            median_seconds(lambda fi=fi, fj=fj: hockey_stick(fi, fj, 1.0)),
            f"delta {hb.delta:.3e}, error bound {hb.error_bound:.1e}, {hb.intervals} intervals",
        )
    for label, sc in (("Cor 1 K=1000 s^2=25", cor1), ("Adult GMM (003 sec V)", gmm)):
        for d in (0.0, 1e-6):
            c = calibrate_optimal(sc, 1.0, delta=d)
            _row(
                f"optimal Laplace b, {label}, (1, {d:g})",
                median_seconds(lambda sc=sc, d=d: calibrate_optimal(sc, 1.0, delta=d), repeats=3),
                f"b = {c.scale:.6f}",
            )
    c = calibrate_optimal(emp, 1.0, delta=1e-5, noise="gaussian")
    _row(
        "optimal Gaussian sigma, Adult empirical priors, (1, 1e-5)",
        median_seconds(lambda: calibrate_optimal(emp, 1.0, delta=1e-5, noise="gaussian"), repeats=3),
        f"sigma = {c.scale:.6f}",
    )
    w = [0.5, 0.5]
    fi, fj = release_density(ep, "laplace", 1.0), release_density(eq, "laplace", 1.0)
    for tol in (1e-3, 1e-4):  # 1e-3 * eps is the tolerance of the MI calibrators' check
        ib = mutual_information([fi, fj], w, tol=tol)
        _row(
            f"mutual information, Adult empirical, Laplace b=1, tol {tol:g}",
            median_seconds(lambda tol=tol: mutual_information([fi, fj], w, tol=tol), repeats=3),
            f"I = {ib.information:.8f} nats, error bound {ib.error_bound:.1e}, {ib.intervals} intervals",
        )
    print(f"(Cor 1 pure-eps tail limit: {(1 + math.sqrt(1 + 50)) / 2:.6f})")


if __name__ == "__main__":
    main()
