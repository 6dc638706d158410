"""A numeric column's declared domain ``[lo, hi]`` (issue 41): clamping, the grid the prior sets
live on, and the margin that extends their check from the grid to every prior on the interval.

Without bounds a prior set holds priors on the values seen only, so a true prior with mass on a
value never sampled lies outside every set (``shared/repro/published/coverage_one_column.py``: 12
of 100 samples, true loss up to 80.9 at eps 1). With ``bounds = (lo, hi)``, public and not derived
from the protected rows, values outside are clamped (and counted, as DP libraries do) and the
column's alphabet holds, besides the values seen, a grid ``lo = a_0 < a_1 < ... < a_G = hi`` of
spacing at most ``delta`` (zero mass in the estimate). The sets (DKW band, L1 ball) then live on
that alphabet, and their exact worst case is checked there (:mod:`pufferfish.priors.sets`).

From the grid to the interval. Let ``P`` be a prior on ``[lo, hi]`` in the continuous set and
``P'`` the prior that moves each mass to the nearest alphabet point at or below it (a move of at
most ``delta``). ``P'`` lies in the set on the alphabet: for the L1 ball, mass off the alphabet is
mass ``P_hat`` does not have, and moving it onto the alphabet does not increase the L1 distance;
for the DKW band, ``F_hat`` is constant between consecutive alphabet points, and
``F_P'(a_j) = F_P(a_{j+1}^-)``, a value of ``F_P`` on ``[a_j, a_{j+1})``, where
``|F_P - F_hat| <= eta``. Under Laplace noise of scale ``b`` a move of at most ``delta`` changes
the density at any output by a factor within ``e^(+-delta / b)``, so for every pair

    loss(P, Q) <= loss(P', Q') + 2 delta / b.

The calibration therefore checks the grid at ``eps - 2 delta / b`` (:func:`snapping_margin`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pufferfish.priors.distributions import to_release_grid
from pufferfish.tables.model import check_missing

__all__ = ["DOMAIN_POINTS", "check_bounds", "domain_grid", "grid_gap", "snapping_margin"]

#: Points of the grid on a declared numeric domain (``delta = (hi - lo) / 4096``): the snapping
#: margin ``2 delta / b`` is then ``(hi - lo) / (2048 b)``, below 0.005 for ``b >= (hi - lo) / 10``.
DOMAIN_POINTS = 4097


#: Largest magnitude of a declared bound (issue 56: ``--bounds 0,1e200`` ended in an OverflowError).
MAX_BOUND = 2.0**53


def check_bounds(bounds: Any) -> tuple[float, float] | None:
    """``(lo, hi)`` from ``"lo,hi"`` or a pair of numbers; None for None.

    Raises
    ------
    ValueError
        Unless both are finite numbers with ``lo < hi`` within ``+-2^53`` (naming the value).
    """
    if bounds is None:
        return None
    parts: Sequence[Any] = bounds.split(",") if isinstance(bounds, str) else bounds
    try:
        lo, hi = (float(v) for v in parts)
    except (TypeError, ValueError):
        raise ValueError(f"bounds must be two numbers 'lo,hi', got {bounds!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f"bounds must be finite with lo < hi, got {bounds!r}")
    if max(abs(lo), abs(hi)) > MAX_BOUND:
        raise ValueError(
            f"bounds must lie within +-2^53 = {MAX_BOUND:.4g} (beyond, a float does not hold every integer, "
            f"the noise's scale squared overflows and the release keeps no digit of the data), got {bounds!r}"
        )
    return lo, hi


def check_impute(missing: Any, impute: Any, bounds: tuple[float, float] | None) -> tuple[str, float | None]:
    """How a missing numeric cell is read, with the declared bounds (issue 54): ``(missing,
    impute)``.

    Under a declared domain a missing cell is a value of that domain: by default (``missing``
    None) it is imputed with ``impute``, a constant inside the bounds (default the lower bound;
    OpenDP's ``make_impute_constant`` convention), and released with the same noise, so the output
    does not show which cells were missing and the check covers every prior of the domain's set.
    ``missing="value"`` keeps them missing (the missing atom, checked over its rates' intervals).

    Parameters
    ----------
    missing : {None, "value", "omit", "impute"}
        None: ``"impute"`` with bounds (or with ``impute`` given), else ``"value"``.
    impute : float or None
        The constant; None: the lower bound.
    bounds : (float, float) or None
        From :func:`check_bounds`.

    Raises
    ------
    ValueError
        ``missing`` not a policy; ``impute`` without bounds, not a finite number, outside the
        bounds, or with ``missing`` "value" or "omit".
    """
    if missing is None:
        missing = "impute" if bounds is not None or impute is not None else "value"
    missing = check_missing(missing)
    if impute is not None and missing != "impute":
        raise ValueError(
            f"impute applies with missing='impute' (the default with bounds), got missing={missing!r}"
        )
    if missing != "impute":
        return missing, None
    if bounds is None:
        raise ValueError("missing='impute' needs bounds (a declared domain the constant lies in), got none")
    if impute is None:
        return missing, bounds[0]
    if isinstance(impute, bool) or not isinstance(impute, (int, float)) or not math.isfinite(impute):
        raise ValueError(f"impute must be a finite number, got {impute!r}")
    if not bounds[0] <= impute <= bounds[1]:
        raise ValueError(f"impute must lie inside the bounds [{bounds[0]:g}, {bounds[1]:g}], got {impute!r}")
    return missing, float(impute)


def domain_grid(lo: float, hi: float, points: int = DOMAIN_POINTS) -> NDArray[np.float64]:
    """``points`` equally spaced values from ``lo`` to ``hi`` (both in), on the release grid."""
    return np.unique(to_release_grid(np.linspace(lo, hi, points)))


def grid_gap(support: NDArray[np.float64]) -> float:
    """``delta``: the largest gap between consecutive points of the alphabet."""
    return float(np.max(np.diff(support))) if support.size > 1 else 0.0


def snapping_margin(gap: float, scale: float) -> float:
    """``2 delta / b``: what the loss of a prior on the interval may exceed that of its snapped
    prior on the grid (module docstring); ``inf`` at scale 0."""
    if gap == 0.0:
        return 0.0
    return math.inf if scale <= 0 else 2.0 * gap / scale
