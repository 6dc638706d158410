"""The synthetic grid of Song, Wang and Chaudhuri (SIGMOD 2017, arXiv 1603.03977, sec 6.1): binary
Markov chains over ``(p0, p1)``, ``T = 100``, ``eps = 1``, with our exact optimum beside the
Markov quilt mechanism and its baselines (``pufferfish reproduce markov``, issue 30).

A chain of the grid stays in state 0 with probability ``p0`` and in state 1 with ``p1``:
``transition = [[p0, 1 - p0], [1 - p1, p1]]``, started at its stationary distribution; the query
is the number of visits to state 1. Every scale comes from the registry (:func:`~pufferfish.
calibration.compare` on :func:`~pufferfish.markov.count_scenario`) and every one is checked
exactly (SPEC sec 2.1). The reference values are the figures of the authors' MATLAB code
(``run_synthetic.m``) at ``p0 = p1 = 0.9`` and ``p0 = p1 = 0.6`` (flip probabilities 0.1 and
0.4), as quoted in issue 30.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

#: Mechanisms of the grid, in the order of its table.
GRID_MECHANISMS = ("group-dp", "gk16", "mqm-approx", "mqm-exact", "optimal")

#: Stay probabilities of the grid (both ``p0`` and ``p1``).
GRID_PROBABILITIES = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)

#: ``(p0, p1) -> {mechanism: scale}``: the MATLAB code's figures (T = 100, eps 1), issue 30.
MATLAB_FIGURES: dict[tuple[float, float], dict[str, float]] = {
    (0.9, 0.9): {"mqm-exact": 31.7378, "mqm-approx": 49.2202, "group-dp": 100.0},
    (0.6, 0.6): {"mqm-exact": 3.5718, "mqm-approx": 11.5368, "gk16": 3.8873},
}


@dataclass(frozen=True)
class GridRow:
    """One chain of the grid.

    Attributes
    ----------
    p0, p1 : float
        Stay probabilities.
    scales : dict
        ``mechanism -> scale`` (counts), ``None`` where the mechanism does not apply.
    reasons : dict
        ``mechanism -> why it does not apply`` for the ``None`` scales.
    """

    p0: float
    p1: float
    scales: dict[str, float | None]
    reasons: dict[str, str]


@dataclass(frozen=True)
class MarkovGrid:
    """The grid's scales (see the module docstring).

    Attributes
    ----------
    length : int
    epsilon : float
    rows : tuple of GridRow
    """

    length: int
    epsilon: float
    rows: tuple[GridRow, ...]

    def row(self, p0: float, p1: float) -> GridRow:
        """The row of ``(p0, p1)``.

        Raises
        ------
        KeyError
            If the grid has no such chain.
        """
        for r in self.rows:
            if abs(r.p0 - p0) < 1e-12 and abs(r.p1 - p1) < 1e-12:
                return r
        raise KeyError(f"no chain ({p0}, {p1}) in the grid")


def song2017_grid(
    probabilities: Sequence[float] = GRID_PROBABILITIES, length: int = 100, epsilon: float = 1.0
) -> MarkovGrid:
    """Every mechanism of :data:`GRID_MECHANISMS` on every chain ``(p0, p1)`` of the grid.

    Parameters
    ----------
    probabilities : sequence of float
        Stay probabilities, each in (0, 1); the grid is their square.
    length : int
        ``T`` (default 100, as in the paper).
    epsilon : float
        Default 1.

    Returns
    -------
    MarkovGrid
    """
    from pufferfish.calibration import Calibration, compare
    from pufferfish.markov import CountModel, MarkovChain, count_scenario

    rows = []
    for p0 in probabilities:
        for p1 in probabilities:
            chain = MarkovChain([[p0, 1.0 - p0], [1.0 - p1, p1]])
            results = compare(count_scenario(CountModel((chain,), length, "1")), epsilon, GRID_MECHANISMS)
            scales: dict[str, float | None] = {}
            reasons: dict[str, str] = {}
            for r in results:
                scales[r.mechanism] = r.scale if isinstance(r, Calibration) else None
                if not isinstance(r, Calibration):
                    reasons[r.mechanism] = getattr(r, "reason", "")
            rows.append(GridRow(float(p0), float(p1), scales, reasons))
    return MarkovGrid(int(length), float(epsilon), tuple(rows))


def write_song2017_grid(grid: MarkovGrid, out: Path) -> list[Path]:
    """``song2017-grid.csv`` (every chain and mechanism; empty where it does not apply) and
    ``song2017-grid.svg`` (left: the scales of the chains ``p0 = p1``; right: MQMExact over the
    exact optimum on the whole grid)."""
    import numpy as np
    from matplotlib.figure import Figure

    csv = out / "song2017-grid.csv"
    lines = ["p0,p1," + ",".join(GRID_MECHANISMS)]
    for r in grid.rows:
        cells = ["" if r.scales[m] is None else f"{r.scales[m]:.6g}" for m in GRID_MECHANISMS]
        lines.append(f"{r.p0:g},{r.p1:g}," + ",".join(cells))
    csv.write_text("\n".join(lines) + "\n", encoding="utf-8")
    probs = sorted({r.p0 for r in grid.rows})
    fig = Figure(figsize=(9.0, 3.6))
    left, right = fig.subplots(1, 2)
    diagonal = [grid.row(p, p) for p in probs]
    for m in GRID_MECHANISMS:
        xs = [r.p0 for r in diagonal if r.scales[m] is not None]
        ys = [r.scales[m] for r in diagonal if r.scales[m] is not None]
        left.plot(xs, ys, marker="o", markersize=3, label=m)
    left.set_yscale("log")
    left.set_xlabel("p0 = p1 (probability of staying)")
    left.set_ylabel(f"Laplace scale (T = {grid.length}, eps = {grid.epsilon:g})")
    left.legend(fontsize=7)
    ratio = np.full((len(probs), len(probs)), np.nan)
    for r in grid.rows:
        exact, opt = r.scales["mqm-exact"], r.scales["optimal"]
        if exact is not None and opt is not None and opt > 0:
            ratio[probs.index(r.p1), probs.index(r.p0)] = exact / opt
    half = (probs[1] - probs[0]) / 2 if len(probs) > 1 else 0.05
    box = (probs[0] - half, probs[-1] + half, probs[0] - half, probs[-1] + half)
    image = right.imshow(ratio, origin="lower", extent=box, aspect="auto")
    fig.colorbar(image, ax=right, label="MQMExact / exact optimum")
    right.set_xlabel("p0")
    right.set_ylabel("p1")
    svg = out / "song2017-grid.svg"
    fig.savefig(svg, format="svg", bbox_inches="tight")
    return [csv, svg]
