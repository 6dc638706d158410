"""eps-mutual-information pufferfish privacy (seed 004): Gaussian and Laplace scales, and the
conversions between eps-PP, eps-MI PP and (eps, delta)-PP of seed 004 Thm 1.

========================  =========  ==================  ==========================================
mechanism                 noise      priors              scale (source)
========================  =========  ==================  ==========================================
``mi-gaussian``           Gaussian   any                 seed 004 Thm 3 (no public function)
``mi-gaussian-entropy``   Gaussian   Gaussian mixture    seed 004 Thm 4, ``B = exp(2h - 1)/(2 pi)``
``mi-laplace``            Laplace    any                 seed 004 Remark 6
========================  =========  ==================  ==========================================

Every scale is checked by the certified ``I(S; Y)`` (:func:`.check.check_information`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from pufferfish._checks import check_delta, check_epsilon
from pufferfish.calibration.check import possible_conditionals, secret_weights_for
from pufferfish.calibration.result import num as _num
from pufferfish.calibration.search import Proposal
from pufferfish.priors.distributions import GaussianMixturePrior
from pufferfish.priors.scenario import Scenario


def _total_variances(
    scenario: Scenario, secret_weights: Any
) -> list[tuple[str, np.ndarray, np.ndarray, list[Any]]]:
    """Per prior: ``(name, Var(X_k) for each column k, secret weights, conditionals)`` with ``X``
    mixed over the secret; joint priors in the metric's units (``X_k / w_k``), one column else."""
    weights = secret_weights_for(scenario, secret_weights)
    units = np.array(scenario.metric.units) if scenario.metric is not None else np.ones(1)
    out = []
    for prior in scenario.priors:
        conds, pi = possible_conditionals(scenario, prior, weights)
        means = np.array([np.atleast_1d(p.mean) for p in conds]) / units  # (secrets, d)
        var_within = np.array([np.atleast_1d(p.variance) for p in conds]) / units**2
        total_mean = pi @ means
        var = np.maximum(pi @ (var_within + means**2) - total_mean**2, 0.0)
        out.append((prior.name, var, pi, conds))
    return out


def _largest(scenario: Scenario, rows: list[tuple[float, str, str]]) -> Proposal:
    best = max(rows, key=lambda r: r[0])  # first of the largest
    return Proposal(best[0], best[1], (scenario.secrets[0], scenario.secrets[1]), best[2])


def mi_gaussian_scale(
    scenario: Scenario, epsilon: float, delta: float, secret_weights: Any = None
) -> Proposal:
    """Seed 004 Thm 3: ``sigma^2 = sum_k Var(X_k) / (d (e^{2 eps/d} - 1))`` (``d = 1``:
    ``sqrt(Var(X) / (e^{2 eps} - 1))``); joint priors in the metric's units, column ``k`` then
    gets ``N(0, (sigma w_k)^2)``."""
    rows = []
    for name, var, _, _ in _total_variances(scenario, secret_weights):
        d = var.size
        total = float(var.sum())
        what = f"Var(X) = {_num(total)}" if d == 1 else f"sum of Var(X_k / w_k) = {_num(total)}, d = {d}"
        rows.append((math.sqrt(total / (d * math.expm1(2.0 * epsilon / d))), name, what))
    return _largest(scenario, rows)


def mi_laplace_scale(
    scenario: Scenario, epsilon: float, delta: float, secret_weights: Any = None
) -> Proposal:
    """Seed 004 Remark 6: ``b = sum_k sd(X_k) / (d (e^{eps/d} - 1))`` (``d = 1``: ``sd(X) /
    (e^eps - 1)``); joint priors in the metric's units, column ``k`` then gets ``Laplace(b w_k)``."""
    rows = []
    for name, var, _, _ in _total_variances(scenario, secret_weights):
        d = var.size
        total = float(np.sqrt(var).sum())
        what = f"sd(X) = {_num(total)}" if d == 1 else f"sum of sd(X_k / w_k) = {_num(total)}, d = {d}"
        rows.append((total / (d * math.expm1(epsilon / d)), name, what))
    return _largest(scenario, rows)


def mi_gaussian_entropy_scale(
    scenario: Scenario, epsilon: float, delta: float, secret_weights: Any = None
) -> Proposal:
    """Seed 004 Thm 4 with ``A = Var(X)``, ``B = exp(2h - 1)/(2 pi)``, ``h`` a lower bound of ``h(X|S)``."""
    rows = []
    for name, variances, pi, conds in _total_variances(scenario, secret_weights):
        var = float(variances[0])
        h = 0.0
        for w, p in zip(pi, conds, strict=True):
            assert isinstance(p, GaussianMixturePrior)
            if (p.stds <= 0).any():
                h = -math.inf
                break
            h += w * float(p.weights @ (0.5 * np.log(2 * math.pi * math.e * p.stds**2)))
        big_b = math.exp(2.0 * h - 1.0) / (2.0 * math.pi) if math.isfinite(h) else 0.0
        e2 = math.exp(2.0 * epsilon)
        s = math.sqrt(max((var - e2 * big_b) / (e2 - 1.0), 0.0))
        rows.append((s, name, f"A = Var(X) = {_num(var)}, B = {_num(big_b)} (h(X|S) >= {_num(h)})"))
    return _largest(scenario, rows)


def mi_gaussian_entropy_applies(scenario: Scenario, noise: str, delta: float, epsilon: float) -> str | None:
    """Why seed 004 Thm 4 does not apply (discrete or joint empirical priors), or ``None``."""
    if scenario.kind != "gaussian-mixture":
        return "needs continuous priors (h(X|S) = -inf for discrete priors; Thm 4 reduces to Thm 3)"
    return None


# ---------------------------------------------------------------------------------------------
# Seed 004 Theorem 1: conversions between eps-PP, eps-MI PP and (eps', delta)-PP


def mi_from_pure(epsilon: float) -> float:
    """eps-PP implies eps-MI PP (seed 004 Thm 1, first implication): returns ``epsilon``."""
    return check_epsilon(epsilon)


def approximate_from_mi(epsilon: float) -> float:
    """eps-MI PP implies (eps', sqrt(2 eps))-PP for every eps' >= 0 (seed 004 Thm 1): the delta.

    Examples
    --------
    >>> approximate_from_mi(0.02)
    0.2
    """
    return math.sqrt(2.0 * check_epsilon(epsilon))


def mi_from_approximate(epsilon: float, delta: float, size: int) -> float:
    """(eps, delta)-PP implies eps*-MI PP when the release or the secret is finite (seed 004 Thm 1).

    Parameters
    ----------
    epsilon : float
        > 0.
    delta : float
        In [0, 1).
    size : int
        ``min(|supp M(X)|, max_g |Im(g)| + 1)`` (>= 2), e.g. the number of secret values plus 1.

    Returns
    -------
    float
        ``eps* = 2 h_b(delta') + 2 delta' log(size)`` with ``delta' = 1 - 2 (1 - delta)/(e^eps + 1)``
        and ``h_b`` the binary entropy in nats.
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 2:
        raise ValueError(f"size must be an integer >= 2, got {size!r}")
    dp = 1.0 - 2.0 * (1.0 - delta) / (math.exp(epsilon) + 1.0)
    hb = 0.0 if dp in (0.0, 1.0) else -(dp * math.log(dp) + (1 - dp) * math.log(1 - dp))
    return 2.0 * hb + 2.0 * dp * math.log(size)
