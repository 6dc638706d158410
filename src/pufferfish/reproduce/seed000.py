"""Seed 000's scale-versus-epsilon curves: Fig 5(a) and 9(a) on the shipped Adult data, Fig 4 and 8 on
the 4-user example of Tables 2-3.

Each function returns a :class:`ScaleCurves` (a table of scales per mechanism and epsilon, every
scale exactly checked), which :func:`write_curves` saves as CSV, Markdown and an SVG plot.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pufferfish.multiuser import MultiUserCalibration, MultiUserSystem, User, compare_user
from pufferfish.priors.distributions import DiscretePrior

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
        Names from :data:`~pufferfish.multiuser.MULTIUSER_MECHANISMS`.
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
