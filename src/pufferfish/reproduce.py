"""Reproductions of the seed papers' settings on shipped data: scale-versus-epsilon curves.

:func:`seed000_fig5a` and :func:`seed000_fig9a` rebuild the Adult settings of seed 000 Fig 5(a)
and Fig 9(a) from the shipped UCI Adult data (48,842 rows); :func:`seed000_fig4` and
:func:`seed000_fig8` the 4-user example of seed 000 Tables 2-3. Each returns a
:class:`ScaleCurves` (a table of scales per mechanism and epsilon, every scale exactly checked),
which :func:`write_curves` saves as CSV, Markdown and an SVG plot.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .multiuser import MultiUserSystem, User
from .multiuser_calibration import MultiUserCalibration, compare_user
from .priors import DiscretePrior

#: Epsilon grid of the reproductions: 0.05, 0.10, ..., 2.00 (the papers plot eps in (0, 2]).
EPSILON_GRID: tuple[float, ...] = tuple(round(0.05 * k, 2) for k in range(1, 41))

#: Relationship reduced to married (1) / unmarried (0), seed 000 Fig 9(a).
MARRIED_CODES: dict[str, float] = {
    "Husband": 1.0,
    "Wife": 1.0,
    "Own-child": 0.0,
    "Not-in-family": 0.0,
    "Other-relative": 0.0,
    "Unmarried": 0.0,
}


@dataclass(frozen=True)
class ScaleCurves:
    """Laplace scale versus epsilon for several mechanisms of one setting.

    Attributes
    ----------
    name : str
        Short identifier, e.g. ``"seed000-fig5a"``.
    title : str
        What the setting is (data, user, pair set).
    setting : str
        How the system was built (users, codes), stated for the reader.
    epsilons : tuple of float, length E
    mechanisms : tuple of str, length M
    scales : numpy.ndarray, shape (E, M)
        ``scales[e, m]``: the checked scale, ``nan`` where the mechanism does not apply.
    losses : numpy.ndarray, shape (E, M)
        Exact privacy loss at each scale (``<= epsilon``).
    """

    name: str
    title: str
    setting: str
    epsilons: tuple[float, ...]
    mechanisms: tuple[str, ...]
    scales: np.ndarray
    losses: np.ndarray

    def column(self, mechanism: str) -> np.ndarray:
        """Scales of one mechanism over :attr:`epsilons`, shape (E,)."""
        return self.scales[:, self.mechanisms.index(mechanism)]


def curves(
    name: str,
    title: str,
    setting: str,
    system: MultiUserSystem,
    user: str,
    pair_set: str,
    mechanisms: Sequence[str],
    epsilons: Sequence[float] = EPSILON_GRID,
) -> ScaleCurves:
    """Compute :class:`ScaleCurves` for one user's pair set (every scale exactly checked).

    Parameters
    ----------
    name, title, setting : str
        Labels (see :class:`ScaleCurves`).
    system : MultiUserSystem
    user : str
    pair_set : {"ab", "a-bot", "P-bot", "P-Q"}
    mechanisms : sequence of str
        Names from :data:`~pufferfish.multiuser_calibration.MULTIUSER_MECHANISMS`.
    epsilons : sequence of float
        Budgets, each finite and > 0.

    Returns
    -------
    ScaleCurves

    Raises
    ------
    ValueError
        On a bad argument.
    """
    results = compare_user(system, user, pair_set, list(epsilons), list(mechanisms))
    scales = np.full((len(epsilons), len(mechanisms)), np.nan)
    losses = np.full_like(scales, np.nan)
    k = 0
    for e in range(len(epsilons)):
        for m in range(len(mechanisms)):
            r = results[k]
            k += 1
            if isinstance(r, MultiUserCalibration):
                scales[e, m] = r.scale
                losses[e, m] = r.checked_loss
    return ScaleCurves(name, title, setting, tuple(epsilons), tuple(mechanisms), scales, losses)


def seed000_fig5a(data: str = "adult", epsilons: Sequence[float] = EPSILON_GRID) -> ScaleCurves:
    """Seed 000 Fig 5(a): ``P_i = Pr(education | race = White)``, user present vs absent.

    The system has one user per race (``P_j = Pr(education-num | race = j)``, the 16 education
    levels coded 1..16 by the data's own ``education-num``); the target user is ``White`` and the
    pair set ``P-bot``. Mechanisms: Thm 3 eq (14) and eq (13) as in the figure, and the optimal
    scale (plus the Kantorovich and relaxed ones on the query).
    """
    system = MultiUserSystem.from_table(data, value="education-num", user_by="race")
    return curves(
        "seed000-fig5a",
        "Adult: education | race = White, present vs absent (seed 000 Fig 5a)",
        "users = races (P_j = Pr(education-num | race = j), codes 1..16), target White, pair set P-bot",
        system,
        "White",
        "P-bot",
        ("thm3-eq14", "thm3-eq13", "kantorovich", "relaxed", "optimal"),
        epsilons,
    )


def seed000_fig9a(data: str = "adult", epsilons: Sequence[float] = EPSILON_GRID) -> ScaleCurves:
    """Seed 000 Fig 9(a): married/unmarried given race Asian-Pac-Islander vs Amer-Indian-Eskimo.

    ``relationship`` is reduced to married (Husband, Wife = 1) / unmarried (0). The target user's
    two distributions are ``P = Pr(married | race = Asian-Pac-Islander)`` and
    ``Q = Pr(married | race = Amer-Indian-Eskimo)``; the other users are the remaining races
    (White, Black, Other), one user per class of records. Pair set ``P-Q``; Lemma 1, Lemma 2 and
    the optimal scale (plus Thm 4, Kantorovich, relaxed).
    """
    by_race = MultiUserSystem.from_table(data, value="relationship", user_by="race", codes=MARRIED_CODES)
    p = by_race.user("Asian-Pac-Islander").prior
    q = by_race.user("Amer-Indian-Eskimo").prior
    others = [u for u in by_race.users if u.name not in ("Asian-Pac-Islander", "Amer-Indian-Eskimo")]
    target = User("API-or-AIE", p, alternative=q)
    system = MultiUserSystem((*others, target))
    return curves(
        "seed000-fig9a",
        "Adult: married | race, Asian-Pac-Islander vs Amer-Indian-Eskimo (seed 000 Fig 9a)",
        "target user P = Pr(married | API), Q = Pr(married | AIE); other users White, Black, Other; "
        "pair set P-Q",
        system,
        "API-or-AIE",
        "P-Q",
        ("lemma1", "lemma2", "thm4", "kantorovich", "relaxed", "optimal"),
        epsilons,
    )


def _table2_system(target: User) -> MultiUserSystem:
    s = np.arange(1.0, 6.0)
    table2 = [[0.01, 0.04, 0.1, 0.2, 0.65], [0.7, 0.2, 0.05, 0.04, 0.01], [0.2] * 5]
    users = [User(f"u{i + 1}", DiscretePrior(s, np.array(p))) for i, p in enumerate(table2)]
    return MultiUserSystem((*users, target))


def seed000_fig4(epsilons: Sequence[float] = EPSILON_GRID) -> ScaleCurves:
    """Seed 000 Fig 4: users 1-3 of Table 2 plus user 4 ``~ P_4`` of Table 3, pair set ``P-bot``."""
    s = np.arange(1.0, 6.0)
    target = User("u4", DiscretePrior(s, np.array([0.4, 0.1, 0.0, 0.1, 0.4])))
    return curves(
        "seed000-fig4",
        "4-user example: user 4 ~ P_4 present vs absent (seed 000 Fig 3-4)",
        "users 1-3 of seed 000 Table 2, user 4 ~ P_4 of Table 3, pair set P-bot",
        _table2_system(target),
        "u4",
        "P-bot",
        ("thm3-eq14", "thm3-eq13", "kantorovich", "relaxed", "optimal"),
        epsilons,
    )


def seed000_fig8(epsilons: Sequence[float] = EPSILON_GRID) -> ScaleCurves:
    """Seed 000 Fig 8: user 4 Bernoulli(0.2) vs Bernoulli(0.9) added to Table 2, pair set ``P-Q``."""
    b = np.array([0.0, 1.0])
    target = User(
        "u4", DiscretePrior(b, np.array([0.8, 0.2])), alternative=DiscretePrior(b, np.array([0.1, 0.9]))
    )
    return curves(
        "seed000-fig8",
        "4-user example: user 4 Bernoulli(0.2) vs Bernoulli(0.9) (seed 000 Fig 7-8)",
        "users 1-3 of seed 000 Table 2, user 4 Bernoulli(0.2) or Bernoulli(0.9), pair set P-Q",
        _table2_system(target),
        "u4",
        "P-Q",
        ("lemma1", "lemma2", "thm4", "kantorovich", "relaxed", "optimal"),
        epsilons,
    )


def write_curves(result: ScaleCurves, directory: str | Path) -> list[Path]:
    """Write ``NAME.csv``, ``NAME.md`` and ``NAME.svg`` (matplotlib) into ``directory``.

    Parameters
    ----------
    result : ScaleCurves
    directory : str or pathlib.Path
        Created if missing. Existing files of the same names are replaced (they are outputs of
        this function, not user data).

    Returns
    -------
    list of pathlib.Path
        The three files written.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    csv_path = out / f"{result.name}.csv"
    with csv_path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["epsilon", *result.mechanisms])
        for e, eps in enumerate(result.epsilons):
            w.writerow([eps, *[("" if np.isnan(v) else f"{v:.6g}") for v in result.scales[e]]])
    md_path = out / f"{result.name}.md"
    lines = [
        f"# {result.title}",
        "",
        result.setting,
        "",
        "Laplace scale theta (every one exactly checked):",
        "",
    ]
    lines.append("| epsilon | " + " | ".join(result.mechanisms) + " |")
    lines.append("|---" * (len(result.mechanisms) + 1) + "|")
    for e, eps in enumerate(result.epsilons):
        cells = ["n/a" if np.isnan(v) else f"{v:.4g}" for v in result.scales[e]]
        lines.append(f"| {eps:g} | " + " | ".join(cells) + " |")
    md_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for m, mech in enumerate(result.mechanisms):
        col = result.scales[:, m]
        if np.all(np.isnan(col)):
            continue
        style = "-" if mech == "optimal" else "--"
        ax.plot(result.epsilons, col, style, marker="o", markersize=2.5, label=mech)
    ax.set_xlabel("epsilon")
    ax.set_ylabel("Laplace scale theta")
    ax.set_ylim(bottom=0)
    ax.set_title(result.title, fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    svg_path = out / f"{result.name}.svg"
    fig.savefig(svg_path, format="svg")
    plt.close(fig)
    return [csv_path, md_path, svg_path]


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
    from .data import estimate_priors, fit_priors
    from .mechanisms import calibrate_noise, calibrate_optimal_noise

    est = estimate_priors(
        "adult", secret="race", public="education-num", pairs=[("Black", "Asian-Pac-Islander")]
    )
    fitted = fit_priors(est, "gmm", n_components=3, rng=seed)
    thm, opt, chk = [], [], []
    for d in deltas:
        c = calibrate_noise(fitted.scenario, epsilon, delta=d, mechanism="gmm")
        thm.append(c.scale)
        chk.append(float(c.checked_delta or 0.0))
        opt.append(calibrate_optimal_noise(fitted.scenario, epsilon, delta=d, upper=c.scale).scale)
    pure = calibrate_optimal_noise(fitted.scenario, epsilon, delta=0.0).scale
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

    from .data import dataset_path, estimate_priors

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
