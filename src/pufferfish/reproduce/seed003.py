"""Seed 003's settings: sec V (Fig 3) on the shipped Adult data with three-component GMM priors, and
Fig 2 (K identical Gaussian users, the Corollary 1 scale against the optimal one).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pufferfish.priors.distributions import DiscretePrior, GaussianMixturePrior
from pufferfish.priors.scenario import Scenario

# ---------------------------------------------------------------------------------------------
# Seed 003 sec V (Fig 3): education-num given race Black vs Asian-Pac-Islander, three-component GMMs


@dataclass(frozen=True)
class Seed003Adult:
    """Seed 003 sec V on the shipped Adult data: Thm 2's Laplace scale against the optimal one.

    Attributes
    ----------
    epsilon : float
    deltas : tuple of float
    theorem_scales, optimal_scales : tuple of float
        Seed 003 Thm 2 (eq 13) and the smallest scale passing the exact (eps, delta) check, per delta.
    checked_deltas : tuple of float
        Checked hockey-stick divergence at the theorem's scale, per delta.
    optimal_pure : float
        The smallest Laplace scale giving pure eps (delta = 0) for the same priors.
    priors : dict
        The fitted mixtures per secret (weights, means, stds, fit record).
    setting : str
        What was fitted and how.
    """

    epsilon: float
    deltas: tuple[float, ...]
    theorem_scales: tuple[float, ...]
    optimal_scales: tuple[float, ...]
    checked_deltas: tuple[float, ...]
    optimal_pure: float
    priors: dict[str, Any]
    setting: str


def seed003_adult(
    epsilon: float = 1.0, deltas: Sequence[float] = (0.5, 0.3), *, seed: int = 0
) -> Seed003Adult:
    """Seed 003 sec V / Fig 3: three-component GMMs of education-num for Black and Asian-Pac-Islander.

    Parameters
    ----------
    epsilon : float
        Default 1 (the paper's).
    deltas : sequence of float
        Default (0.5, 0.3) (the paper's).
    seed : int
        Seed of the mixture fit (scikit-learn EM).

    Returns
    -------
    Seed003Adult
    """
    from pufferfish.calibration import calibrate, calibrate_optimal
    from pufferfish.tables import estimate_priors
    from pufferfish.tables.fit import fit_priors

    est = estimate_priors(
        "adult", secret="race", public="education-num", pairs=[("Black", "Asian-Pac-Islander")]
    )
    fitted = fit_priors(est, "gmm", n_components=3, rng=seed)
    thm, opt, chk = [], [], []
    for d in deltas:
        c = calibrate(fitted.scenario, epsilon, "gmm", delta=d)
        thm.append(c.scale)
        chk.append(float(c.checked_delta or 0.0))
        opt.append(calibrate_optimal(fitted.scenario, epsilon, delta=d, upper=c).scale)
    pure = calibrate_optimal(fitted.scenario, epsilon, delta=0.0).scale
    rows = {g.secret: g.rows for g in est.groups}
    return Seed003Adult(
        epsilon=epsilon,
        deltas=tuple(float(d) for d in deltas),
        theorem_scales=tuple(thm),
        optimal_scales=tuple(opt),
        checked_deltas=tuple(chk),
        optimal_pure=pure,
        priors=fitted.to_dict()["fitted_priors"],
        setting=(
            "shipped UCI Adult (adult.data + adult.test, 48,842 rows); X = education-num, "
            f"S = race; Black ({rows['Black']} rows) vs Asian-Pac-Islander ({rows['Asian-Pac-Islander']} "
            f"rows); 3-component GMM per secret (scikit-learn, seed {seed}); Laplace noise"
        ),
    )


def write_seed003_adult(res: Seed003Adult, folder: str | Path, *, rng_seed: int = 0) -> list[Path]:
    """Write the table (CSV, Markdown) and Fig 3 (histograms of X and of Y = X + N per secret, SVG).

    The released histograms use NumPy's seeded (insecure) Laplace sampler: this is a simulation
    figure, not a release.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from pufferfish.tables import dataset_path, estimate_priors

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    csv_path = out / "seed003_fig3.csv"
    with csv_path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["epsilon", "delta", "gmm_thm2_scale", "checked_delta_at_thm2", "optimal_scale"])
        for d, t, c, o in zip(
            res.deltas, res.theorem_scales, res.checked_deltas, res.optimal_scales, strict=True
        ):
            w.writerow([res.epsilon, d, repr(t), repr(c), repr(o)])
        w.writerow([res.epsilon, 0.0, "", "", repr(res.optimal_pure)])
    md = out / "seed003_fig3.md"
    lines = [
        f"# Seed 003 sec V, Fig 3: {res.setting}",
        "",
        "| (eps, delta) | Thm 2 scale b | checked delta at b | optimal b |",
        "|---|---|---|---|",
    ]
    for d, t, c, o in zip(
        res.deltas, res.theorem_scales, res.checked_deltas, res.optimal_scales, strict=True
    ):
        lines.append(f"| ({res.epsilon:g}, {d:g}) | {t:.4g} | {c:.3g} | {o:.4g} |")
    lines.append(f"| ({res.epsilon:g}, 0) | - | - | {res.optimal_pure:.4g} |")
    md.write_text("\n".join(lines) + "\n")
    est = estimate_priors(
        dataset_path("adult"), secret="race", public="education-num", pairs=[("Black", "Asian-Pac-Islander")]
    )
    prior = est.scenario.priors[0]
    gen = np.random.default_rng(rng_seed)
    fig, axes = plt.subplots(2, 1 + len(res.deltas), figsize=(4 * (1 + len(res.deltas)), 6), sharex=True)
    bins = np.arange(-10.5, 28.5, 1.0)
    for r, g in enumerate(est.groups):
        p = prior.conditionals[g.secret]
        assert isinstance(p, DiscretePrior)
        x = np.repeat(p.support, np.round(p.pmf * g.weight).astype(np.int64))
        axes[r, 0].hist(x, bins=bins, density=True, color="0.4")
        axes[r, 0].set_title(f"{g.secret}: X (original)", fontsize=9)
        for k, (d, b) in enumerate(zip(res.deltas, res.theorem_scales, strict=True)):
            y = x + gen.laplace(0.0, b, size=x.size)
            axes[r, k + 1].hist(y, bins=bins, density=True, color="C0")
            axes[r, k + 1].set_title(f"{g.secret}: Y = X + L({b:.3g}), ({res.epsilon:g}, {d:g})", fontsize=9)
    for ax in axes[-1]:
        ax.set_xlabel("education-num")
    fig.tight_layout()
    svg = out / "seed003_fig3.svg"
    fig.savefig(svg)
    plt.close(fig)
    return [csv_path, md, svg]


# ---------------------------------------------------------------------------------------------
# Seed 003 Fig 2: Cor 1 (eq 11) for K identical users against the optimal Laplace scale

#: Numbers of users of the Fig 2 reproduction (the paper's x axis is K).
FIG2_USERS: tuple[int, ...] = (2, 3, 5, 10, 20, 50, 100, 200, 500, 1000)

#: User variances sigma^2 of the Fig 2 reproduction (the paper varies sigma^2 from 1 to 25).
FIG2_VARIANCES: tuple[float, ...] = (1.0, 4.0, 9.0, 16.0, 25.0)


@dataclass(frozen=True)
class Seed003Fig2Row:
    """One point of the Fig 2 reproduction: K identical users with mean ``mu`` and variance ``sigma^2``.

    Attributes
    ----------
    users : int
        ``K``.
    variance : float
        ``sigma^2`` of one user.
    delta : float
        Target delta (with the reproduction's epsilon).
    eq11_scale : float
        Seed 003 eq (11).
    checked_delta_at_eq11 : float
        Exact hockey-stick divergence of the pair at the eq (11) scale.
    optimal_scale : float
        Smallest Laplace scale passing the exact (eps, delta) check.
    priors_delta : float
        Hockey-stick divergence of the pair with no noise (``optimal_scale == 0`` when it is <= delta).
    """

    users: int
    variance: float
    delta: float
    eq11_scale: float
    checked_delta_at_eq11: float
    optimal_scale: float
    priors_delta: float


@dataclass(frozen=True)
class Seed003Fig2:
    """Seed 003 Fig 2 (Cor 1, identical users) with the optimal scales beside the theorem's.

    Attributes
    ----------
    epsilon, mean : float
        The paper's eps = 1 and mu = 1.
    rows : tuple of Seed003Fig2Row
        One per (delta, variance, K).
    pure : dict
        ``{variance: (optimal pure-eps scale at the largest K, closed form)}``; the closed form is
        ``(|mu| + sqrt(mu^2 + 2 eps sigma^2)) / (2 eps)`` (see Notes of :func:`seed003_fig2`).
    pure_by_users : dict
        ``{(variance, K): optimal pure-eps scale}``.
    """

    epsilon: float
    mean: float
    rows: tuple[Seed003Fig2Row, ...]
    pure: dict[float, tuple[float, float]]
    pure_by_users: dict[tuple[float, int], float]


def identical_users_pair_limit(mean: float, variance: float, epsilon: float) -> float:
    """Smallest Laplace scale whose tail log-ratio stays <= eps for present vs absent (any K).

    ``N(K mu, K s^2) * L(b)`` vs ``N((K-1) mu, (K-1) s^2) * L(b)``: as ``y -> +-inf`` the log-ratio
    tends to ``+-mu/b + s^2/(2 b^2)`` (the normal-Laplace density behaves like
    ``e^{s^2/2b^2 - (y - mu)/b}/(2b)`` in its right tail), so pure eps needs
    ``|mu|/b + s^2/(2b^2) <= eps``, i.e. ``b >= (|mu| + sqrt(mu^2 + 2 eps s^2)) / (2 eps)``, whatever K.
    """
    return (abs(mean) + math.sqrt(mean * mean + 2.0 * epsilon * variance)) / (2.0 * epsilon)


def seed003_fig2(
    epsilon: float = 1.0,
    mean: float = 1.0,
    deltas: Sequence[float] = (0.3, 1e-6),
    variances: Sequence[float] = FIG2_VARIANCES,
    users: Sequence[int] = FIG2_USERS,
) -> Seed003Fig2:
    """Seed 003 Fig 2: eq (11) versus K for identical users, and the optimal Laplace scale.

    Parameters
    ----------
    epsilon : float
        Default 1 (the paper's).
    mean : float
        Each user's mean ``mu``; default 1 (the paper's).
    deltas : sequence of float
        Default ``(0.3, 1e-6)``: the paper's 0.3 and a small delta where the optimum is not 0.
    variances : sequence of float
        Each user's ``sigma^2``; the paper varies it from 1 to 25.
    users : sequence of int
        Values of ``K >= 2``.

    Returns
    -------
    Seed003Fig2

    Notes
    -----
    The pair is seed 003 Cor 1(a)'s: ``X ~ N(K mu, K sigma^2)`` (user present) against
    ``N((K-1) mu, (K-1) sigma^2)`` (absent), built by
    :func:`~pufferfish.calibration.gaussian.summation_scenario`. The paper says that as K grows eq (11) tends
    to ``b = mu/eps`` and "we can attain eps-pufferfish privacy"; the exact check says pure eps
    needs ``b >= (|mu| + sqrt(mu^2 + 2 eps sigma^2)) / (2 eps)`` for every K
    (:func:`identical_users_pair_limit`; 1.366 for ``sigma^2 = 1``), because the variances of the
    pair differ by ``sigma^2`` whatever K, so the statement holds only with the delta > 0 of eq (11).
    """
    from pufferfish.calibration import calibrate_optimal, corollary1_identical_scale, summation_scenario
    from pufferfish.loss.density import release_density
    from pufferfish.loss.divergence import hockey_stick

    rows = []
    pure_by_users: dict[tuple[float, int], float] = {}
    for var in variances:
        sd = math.sqrt(var)
        for k in users:
            scenario = summation_scenario([mean] * k, [sd] * k)
            prior = scenario.priors[0]
            present, absent = scenario.pairs[0]
            p, q = prior.conditionals[present], prior.conditionals[absent]
            assert isinstance(p, GaussianMixturePrior) and isinstance(q, GaussianMixturePrior)
            own = hockey_stick(
                release_density(p, "laplace", 0.0), release_density(q, "laplace", 0.0), epsilon
            )
            one = Scenario.single(p, q, names=(present, absent))  # all users alike: one pair decides
            for d in deltas:
                b = corollary1_identical_scale(mean, sd, k, epsilon, d)
                chk = hockey_stick(
                    release_density(p, "laplace", b), release_density(q, "laplace", b), epsilon
                )
                opt = calibrate_optimal(one, epsilon, delta=d, upper=b).scale
                rows.append(Seed003Fig2Row(k, float(var), float(d), b, chk.delta, opt, own.delta))
            pure_by_users[(float(var), k)] = calibrate_optimal(one, epsilon, delta=0.0).scale
    pure = {
        float(v): (pure_by_users[(float(v), users[-1])], identical_users_pair_limit(mean, v, epsilon))
        for v in variances
    }
    return Seed003Fig2(float(epsilon), float(mean), tuple(rows), pure, pure_by_users)


def write_seed003_fig2(res: Seed003Fig2, folder: str | Path) -> list[Path]:
    """Write the Fig 2 table (CSV, Markdown) and the plot (b versus K per sigma^2, SVG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    csv_path = out / "seed003_fig2.csv"
    with csv_path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(
            [
                "K",
                "sigma2",
                "epsilon",
                "delta",
                "eq11_scale",
                "checked_delta_at_eq11",
                "optimal_scale",
                "priors_delta",
                "optimal_pure_scale",
            ]
        )
        for r in res.rows:
            w.writerow(
                [
                    r.users,
                    r.variance,
                    res.epsilon,
                    r.delta,
                    repr(r.eq11_scale),
                    repr(r.checked_delta_at_eq11),
                    repr(r.optimal_scale),
                    repr(r.priors_delta),
                    repr(res.pure_by_users[(r.variance, r.users)]),
                ]
            )
    md = out / "seed003_fig2.md"
    lines = [
        f"# Seed 003 Fig 2: K identical users, mu = {res.mean:g}, eps = {res.epsilon:g}, Laplace noise",
        "",
        "Pair: sum of K users N(K mu, K sigma^2) (user present) vs N((K-1) mu, (K-1) sigma^2) (absent).",
        "",
        "| delta | sigma^2 | K | eq (11) b | checked delta at eq (11) b | optimal b | delta of the priors "
        "(b = 0) | optimal pure-eps b |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in res.rows:
        lines.append(
            f"| {r.delta:g} | {r.variance:g} | {r.users} | {r.eq11_scale:.4f} | "
            f"{r.checked_delta_at_eq11:.3g} | {r.optimal_scale:.4f} | {r.priors_delta:.3g} | "
            f"{res.pure_by_users[(r.variance, r.users)]:.6f} |"
        )
    lines += [
        "",
        "Pure eps for every K: optimal b (largest K) vs the tail limit "
        "(|mu| + sqrt(mu^2 + 2 eps sigma^2))/(2 eps):",
        "",
    ]
    lines += ["| sigma^2 | optimal pure-eps b | tail limit |", "|---|---|---|"]
    for v, (o, c) in res.pure.items():
        lines.append(f"| {v:g} | {o:.8f} | {c:.8f} |")
    md.write_text("\n".join(lines) + "\n")
    deltas = sorted({r.delta for r in res.rows}, reverse=True)
    fig, axes = plt.subplots(1, len(deltas), figsize=(5.5 * len(deltas), 4), squeeze=False)
    for ax, d in zip(axes[0], deltas, strict=True):
        for n, v in enumerate(sorted({r.variance for r in res.rows})):
            rs = [r for r in res.rows if r.delta == d and r.variance == v]
            ks = [r.users for r in rs]
            ax.plot(ks, [r.eq11_scale for r in rs], "-", color=f"C{n}", label=f"eq (11), sigma^2 = {v:g}")
            ax.plot(
                ks,
                [r.optimal_scale for r in rs],
                ":",
                marker=".",
                color=f"C{n}",
                label=f"optimal, sigma^2 = {v:g}",
            )
        ax.axhline(res.mean / res.epsilon, color="0.5", lw=0.8)
        ax.set_xscale("log")
        ax.set_xlabel("number of users K")
        ax.set_ylabel("Laplace scale b")
        ax.set_title(f"(eps, delta) = ({res.epsilon:g}, {d:g})", fontsize=10)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    svg = out / "seed003_fig2.svg"
    fig.savefig(svg)
    plt.close(fig)
    return [csv_path, md, svg]
