"""Scales for Gaussian and Gaussian-mixture priors, and Gaussian noise (seeds 002, 003).

==========================  =========  ===================  ========================================
mechanism                   noise      priors               scale (source)
==========================  =========  ===================  ========================================
``monge``                   Laplace    Gaussian             seed 003 Thm 1, eq (5) with
                                                            ``tau* = Q^{-1}(delta/2)`` (eq 20);
                                                            delta = 0: Remark 1, eq (6)
``monge-lambertw``          Laplace    Gaussian             seed 003 Thm 1 with ``tau*`` of eq (23)
``gmm``                     Laplace    Gaussian mixture     seed 003 Thm 2, eq (13); ``w*`` by POT
                                                            ``ot.emd``
``gmm-translation``         Laplace    Gaussian mixture     seed 003 Cor 2, eq (15)
``kantorovich-gaussian``    Gaussian   discrete, Gaussian   seed 002 Thm 3(a): ``sigma = c Delta/eps``,
                                       translates           ``c^2 > 2 ln(1.25/delta)``, eps < 1
``analytic-gaussian``       Gaussian   same                 Balle and Wang (2018) Thm 8 at ``Delta``
==========================  =========  ===================  ========================================

``Delta`` is the largest displacement of the Kantorovich plan (SPEC sec 1); the analytic Gaussian
calibration at ``Delta`` is valid for pufferfish privacy because the hockey-stick divergence is
jointly convex and the plan couples the two priors by shifts of at most ``Delta`` (SPEC sec 5).
Also here: seed 003 Cor 1, the K-user summation query with CLT priors.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
from scipy.optimize import brentq
from scipy.special import lambertw, log_ndtr, ndtri

from pufferfish._checks import check_epsilon
from pufferfish.calibration.result import num as _num
from pufferfish.calibration.search import Proposal, worst_pair
from pufferfish.loss.gaussian import gaussian_delta_bound
from pufferfish.priors.distributions import DiscretePrior, GaussianMixturePrior, Prior
from pufferfish.priors.scenario import AdversaryPrior, Scenario
from pufferfish.transport.line import kantorovich_plan

# ---------------------------------------------------------------------------------------------
# tau*(delta) of seed 003


def tau_star(delta: float, method: str = "q") -> float:
    """``tau*(delta)``: the Gaussian tail point of seed 003 Thm 1.

    Parameters
    ----------
    delta : float
        In (0, 1).
    method : {"q", "lambertw"}
        ``"q"``: ``Q^{-1}(delta/2)`` (eq 20), the smallest ``tau`` with ``P(Z > tau) <= delta/2``.
        ``"lambertw"``: ``sqrt(W0(2/(pi delta^2)))`` (eq 23), from the tail bound (21); never
        smaller than eq (20).

    Returns
    -------
    float
        ``tau* > 0``.

    Raises
    ------
    ValueError
        If ``delta`` is not in (0, 1) or ``method`` is unknown.

    Examples
    --------
    >>> round(tau_star(0.05), 4), round(tau_star(0.05, "lambertw"), 4)
    (1.96, 2.0306)
    """
    d = float(delta)
    if not (0.0 < d < 1.0):
        raise ValueError(f"delta must be in (0, 1) for tau*, got {delta!r}")
    if method == "q":
        return float(-ndtri(d / 2.0))
    if method == "lambertw":
        return float(math.sqrt(lambertw(2.0 / (math.pi * d * d)).real))
    raise ValueError(f"method must be 'q' or 'lambertw', got {method!r}")


# ---------------------------------------------------------------------------------------------
# Closed forms for Gaussian releases


def gaussian_delta(mean_i: float, var_i: float, mean_j: float, var_j: float, epsilon: float) -> float:
    """``int [N(mean_i, var_i) - e^eps N(mean_j, var_j)]_+``: one direction, closed form.

    Parameters
    ----------
    mean_i, mean_j : float
        Means.
    var_i, var_j : float
        Variances (> 0).
    epsilon : float
        >= 0.

    Returns
    -------
    float
        In [0, 1]: the ``forward`` value of :func:`~pufferfish.loss.gaussian.gaussian_delta_bound`,
        which also gives its derived error bound.

    Notes
    -----
    ``log N_i - log N_j - eps`` is a quadratic in ``y``; the set where it is positive is an
    interval, a half-line, two half-lines, empty or the line, and the integral is a sum of normal
    tail masses, each taken from the side without cancellation (SPEC sec 5; seed 003 eq (16)).
    Equal variances give the formula of Balle and Wang (2018) Thm 8.
    """
    return min(gaussian_delta_bound(mean_i, var_i, mean_j, var_j, epsilon).forward, 1.0)


def analytic_gaussian_delta(sigma: float, sensitivity: float, epsilon: float) -> float:
    """delta of the Gaussian mechanism at ``sigma``: Balle and Wang (2018) Thm 8.

    ``Phi(D/(2 sigma) - eps sigma/D) - e^eps Phi(-D/(2 sigma) - eps sigma/D)`` (log space), for
    sensitivity ``D > 0``, ``sigma > 0``, ``eps >= 0``.
    """
    if sigma == 0.0:  # two distinct point masses (sigma underflowed in a bracket search)
        return 1.0
    a = sensitivity / (2.0 * sigma)
    b = epsilon * sigma / sensitivity
    first = math.exp(float(log_ndtr(a - b)))
    second = math.exp(epsilon + float(log_ndtr(-a - b)))
    return max(first - second, 0.0)


def analytic_gaussian_sigma(sensitivity: float, epsilon: float, delta: float) -> float:
    """Smallest ``sigma`` with :func:`analytic_gaussian_delta` ``<= delta`` (brentq on log sigma).

    Parameters
    ----------
    sensitivity : float
        ``Delta > 0``.
    epsilon : float
        > 0.
    delta : float
        In (0, 1).

    Returns
    -------
    float
        ``sigma`` (returned on the passing side of the root).
    """
    if sensitivity == 0.0:
        return 0.0

    def f(log_s: float) -> float:
        return analytic_gaussian_delta(math.exp(log_s), sensitivity, epsilon) - delta

    lo, hi = math.log(sensitivity) - 10.0, math.log(sensitivity) + 2.0
    while f(hi) > 0:
        hi += 2.0
    while f(lo) <= 0:
        lo -= 10.0
    root = brentq(f, lo, hi, xtol=1e-14, rtol=1e-15)
    # nudges to the passing side, no coarser than a decade apart: a jump from 1e-14 to 1e-12 made
    # the same sigma computed in other units (a joint prior with unit w) differ by 1e-12
    for step in (0.0, 1e-14, 1e-13, 1e-12, 1e-11, 1e-10, 1e-9, 1e-8):
        if f(root + step) <= 0:
            return math.exp(root + step)
    return math.exp(hi)  # pragma: no cover


def _translation_gaussians(scenario: Scenario) -> bool:
    for _, _, p_i, p_j in scenario.iter_prior_pairs():
        if not (isinstance(p_i, GaussianMixturePrior) and isinstance(p_j, GaussianMixturePrior)):
            return False
        if not (p_i.is_gaussian and p_j.is_gaussian and p_i.stds[0] == p_j.stds[0]):
            return False
    return True


def _translation_mixtures(scenario: Scenario) -> bool:
    for _, _, p_i, p_j in scenario.iter_prior_pairs():
        if not (isinstance(p_i, GaussianMixturePrior) and isinstance(p_j, GaussianMixturePrior)):
            return False
        if p_i.n_components != p_j.n_components:
            return False
        if not (
            np.allclose(p_i.weights, p_j.weights, rtol=1e-12, atol=0)
            and np.allclose(p_i.stds, p_j.stds, rtol=1e-12, atol=0)
        ):
            return False
    return True


def component_transport(p_i: GaussianMixturePrior, p_j: GaussianMixturePrior) -> np.ndarray:
    """Optimal weights ``w*`` between the components of two mixtures (seed 003 eq 12, fn 5).

    Solves ``min sum_{m,l} w_ml ((mu_m - mu_l)^2 + (sigma_m - sigma_l)^2)`` over couplings of the
    weights with POT's exact network-simplex solver ``ot.emd``.

    Returns
    -------
    numpy.ndarray, shape (m_i, m_j)
        Row sums ``alpha_i``, column sums ``alpha_j``.
    """
    import ot

    cost = (p_i.means[:, None] - p_j.means[None, :]) ** 2 + (p_i.stds[:, None] - p_j.stds[None, :]) ** 2
    return np.asarray(ot.emd(p_i.weights.copy(), p_j.weights.copy(), cost), dtype=np.float64)


# ---------------------------------------------------------------------------------------------
# Applicability


def _all_gaussian(scenario: Scenario) -> bool:
    return all(
        isinstance(p, GaussianMixturePrior) and p.is_gaussian
        for a in scenario.priors
        for p in a.conditionals.values()
    )


def monge_applies(scenario: Scenario, noise: str, delta: float, epsilon: float) -> str | None:
    """Why seed 003 Thm 1 (eq 20) does not apply, or ``None``."""
    if not _all_gaussian(scenario):
        return "needs Gaussian priors (one component)"
    if delta == 0.0 and not _translation_gaussians(scenario):
        return "delta = 0 needs equal standard deviations in every pair (Remark 1)"
    return None


def monge_lambertw_applies(scenario: Scenario, noise: str, delta: float, epsilon: float) -> str | None:
    """Why seed 003 Thm 1 (eq 23) does not apply, or ``None``."""
    if not _all_gaussian(scenario):
        return "needs Gaussian priors (one component)"
    if delta == 0.0:
        return "eq (23) needs delta > 0 (for delta = 0 see monge, Remark 1)"
    return None


def gmm_applies(scenario: Scenario, noise: str, delta: float, epsilon: float) -> str | None:
    """Why seed 003 Thm 2 does not apply, or ``None``."""
    if scenario.kind != "gaussian-mixture":
        return "needs Gaussian-mixture priors"
    if delta == 0.0:
        return "eq (13) needs delta > 0 (for translated mixtures see gmm-translation)"
    return None


def gmm_translation_applies(scenario: Scenario, noise: str, delta: float, epsilon: float) -> str | None:
    """Why seed 003 Cor 2 does not apply, or ``None``."""
    if scenario.kind != "gaussian-mixture":
        return "needs Gaussian-mixture priors"
    if not _translation_mixtures(scenario):
        return "needs mixtures with the same weights and standard deviations component by component (eq 14)"
    return None


def _finite_delta(scenario: Scenario) -> str | None:
    if scenario.kind in ("discrete", "joint") or _translation_gaussians(scenario):
        return None
    return "needs discrete or joint priors, or Gaussian priors with equal standard deviations (finite Delta)"


def kantorovich_gaussian_applies(scenario: Scenario, noise: str, delta: float, epsilon: float) -> str | None:
    """Why seed 002 Thm 3(a) does not apply, or ``None``."""
    if delta == 0.0:
        return "needs delta > 0"
    if not epsilon < 1.0:
        return "Thm 3(a) needs eps < 1"
    return _finite_delta(scenario)


def analytic_gaussian_applies(scenario: Scenario, noise: str, delta: float, epsilon: float) -> str | None:
    """Why the analytic Gaussian mechanism at ``Delta`` does not apply, or ``None``."""
    if delta == 0.0:
        return "needs delta > 0"
    return _finite_delta(scenario)


# ---------------------------------------------------------------------------------------------
# Scales (no check: the registry checks them)


def _worst_pair(
    scenario: Scenario, epsilon: float, value_of: Callable[[Any, Any], tuple[float, str]]
) -> Proposal:
    """``max`` over (prior, pair) of ``value_of(p_i, p_j) = (value, how)``, divided by eps."""
    best = worst_pair(scenario.iter_prior_pairs(), value_of)
    return replace(best, scale=best.scale / epsilon)


def _monge(scenario: Scenario, epsilon: float, delta: float, method: str) -> Proposal:
    def value_of(p_i: GaussianMixturePrior, p_j: GaussianMixturePrior) -> tuple[float, str]:
        dmu = abs(float(p_i.means[0] - p_j.means[0]))
        dsd = abs(float(p_i.stds[0] - p_j.stds[0]))
        if delta == 0.0:
            return dmu, f"|mu_i - mu_j| = {_num(dmu)} (Remark 1)"
        tau = tau_star(delta, method)
        return (
            dmu + dsd * tau,
            f"|mu_i - mu_j| + |sigma_i - sigma_j| tau* = {_num(dmu)} + {_num(dsd)} * {_num(tau)}",
        )

    return _worst_pair(scenario, epsilon, value_of)


def monge_scale(scenario: Scenario, epsilon: float, delta: float, secret_weights: Any = None) -> Proposal:
    """Seed 003 Thm 1 eq (5): ``max (|mu_i - mu_j| + |sigma_i - sigma_j| tau*) / eps``, eq (20)."""
    return _monge(scenario, epsilon, delta, "q")


def monge_lambertw_scale(
    scenario: Scenario, epsilon: float, delta: float, secret_weights: Any = None
) -> Proposal:
    """Seed 003 Thm 1 eq (5) with ``tau*`` of eq (23)."""
    return _monge(scenario, epsilon, delta, "lambertw")


def gmm_scale(scenario: Scenario, epsilon: float, delta: float, secret_weights: Any = None) -> Proposal:
    """Seed 003 Thm 2 eq (13): ``sum w* (|dmu| + tau* |dsigma|) / eps``, ``w*`` by POT."""

    def value_of(p_i: GaussianMixturePrior, p_j: GaussianMixturePrior) -> tuple[float, str]:
        w = component_transport(p_i, p_j)
        tau = tau_star(delta, "q")
        dmus = np.abs(p_i.means[:, None] - p_j.means[None, :])
        dsds = np.abs(p_i.stds[:, None] - p_j.stds[None, :])
        return float(
            np.sum(w * (dmus + tau * dsds))
        ), f"sum w* (|dmu| + tau* |dsigma|) with tau* = {_num(tau)}"

    return _worst_pair(scenario, epsilon, value_of)


def gmm_translation_scale(
    scenario: Scenario, epsilon: float, delta: float, secret_weights: Any = None
) -> Proposal:
    """Seed 003 Cor 2 eq (15): ``sum alpha_m |mu_im - mu_jm| / eps`` (pure eps)."""

    def value_of(p_i: GaussianMixturePrior, p_j: GaussianMixturePrior) -> tuple[float, str]:
        return float(np.sum(p_i.weights * np.abs(p_i.means - p_j.means))), "sum alpha_m |mu_im - mu_jm|"

    return _worst_pair(scenario, epsilon, value_of)


def _sensitivity(p_i: Prior, p_j: Prior) -> float:
    """Kantorovich plan's largest displacement (W-infinity in 1-D) for discrete or translated Gaussians."""
    if isinstance(p_i, DiscretePrior) and isinstance(p_j, DiscretePrior):
        return kantorovich_plan(p_i, p_j).max_displacement
    assert isinstance(p_i, GaussianMixturePrior) and isinstance(p_j, GaussianMixturePrior)
    return abs(float(p_i.means[0] - p_j.means[0]))


def kantorovich_gaussian_scale(
    scenario: Scenario, epsilon: float, delta: float, secret_weights: Any = None
) -> Proposal:
    """Seed 002 Thm 3(a): ``sigma = c Delta / eps`` with ``c`` just above ``sqrt(2 ln(1.25/delta))``."""
    c = math.nextafter(math.sqrt(2.0 * math.log(1.25 / delta)), math.inf)

    def value_of(p_i: Prior, p_j: Prior) -> tuple[float, str]:
        sens = _sensitivity(p_i, p_j)
        return c * sens, f"c * Delta, c = {_num(c)}, Delta = {_num(c * sens / c)}"

    return _worst_pair(scenario, epsilon, value_of)


def analytic_gaussian_scale(
    scenario: Scenario, epsilon: float, delta: float, secret_weights: Any = None
) -> Proposal:
    """Balle and Wang (2018) Thm 8 at the Kantorovich sensitivity ``Delta`` (SPEC sec 5)."""

    def value_of(p_i: Prior, p_j: Prior) -> tuple[float, str]:
        sens = _sensitivity(p_i, p_j)
        value = analytic_gaussian_sigma(sens, epsilon, delta) * epsilon if sens > 0 else 0.0
        return value, f"analytic Gaussian at Delta = {_num(sens)}"

    return _worst_pair(scenario, epsilon, value_of)


# ---------------------------------------------------------------------------------------------
# Seed 003 Corollary 1: the K-user summation query with CLT priors


def summation_scenario(means: Any, stds: Any, *, names: Sequence[str] | None = None) -> Scenario:
    """Gaussian (CLT) priors of a sum over K independent users, one pair per user: present vs absent.

    Parameters
    ----------
    means, stds : array_like of float, shape (K,)
        Each user's mean ``mu_k`` and standard deviation ``sigma_k >= 0``.
    names : sequence of str, optional
        User names (default ``u1..uK``).

    Returns
    -------
    Scenario
        Secrets ``"<name> present"`` (``X ~ N(sum mu, sum sigma^2)``, eq 7) and ``"<name> absent"``
        (``X ~ N(sum_{-k} mu, sum_{-k} sigma^2)``), pairs ``S_bot`` of seed 003 sec III-B; one prior
        ``"clt"``.
    """
    mu = np.asarray(means, dtype=np.float64)
    sd = np.asarray(stds, dtype=np.float64)
    if mu.ndim != 1 or mu.shape != sd.shape or mu.size < 2:
        raise ValueError(
            f"means and stds must be two 1-D arrays of the same length >= 2, got {mu.shape}, {sd.shape}"
        )
    if not (np.all(np.isfinite(mu)) and np.all(np.isfinite(sd))) or (sd < 0).any():
        raise ValueError("means must be finite and stds finite and >= 0")
    names = [f"u{k + 1}" for k in range(mu.size)] if names is None else list(names)
    total_mu, total_var = float(mu.sum()), float((sd**2).sum())
    conds: dict[str, Prior] = {}
    pairs = []
    for k, name in enumerate(names):
        rest_var = total_var - float(sd[k] ** 2)
        conds[f"{name} present"] = GaussianMixturePrior.gaussian(total_mu, math.sqrt(total_var))
        conds[f"{name} absent"] = GaussianMixturePrior.gaussian(
            total_mu - float(mu[k]), math.sqrt(max(rest_var, 0.0))
        )
        pairs.append((f"{name} present", f"{name} absent"))
    return Scenario(tuple(pairs), (AdversaryPrior("clt", conds),))


def corollary1_scale(means: Any, stds: Any, epsilon: float, delta: float) -> float:
    """Seed 003 Cor 1(a), eq (9): ``max_k (|mu_k| + Delta sigma_k tau*(delta)) / eps``.

    ``Delta sigma_k = sqrt(sum_{k' != k} sigma_k'^2 + sigma_k^2) - sqrt(sum_{k' != k} sigma_k'^2)``;
    ``tau*`` by eq (20). For identical users this is eq (11).
    """
    epsilon = check_epsilon(epsilon)
    mu = np.asarray(means, dtype=np.float64)
    sd = np.asarray(stds, dtype=np.float64)
    total = float((sd**2).sum())
    rest = total - sd**2
    dsd = np.sqrt(total) - np.sqrt(np.maximum(rest, 0.0))
    tau = tau_star(delta, "q")
    return float(np.max(np.abs(mu) + dsd * tau)) / epsilon


def corollary1_identical_scale(mean: float, std: float, users: int, epsilon: float, delta: float) -> float:
    """Seed 003 eq (11): ``(|mu| + (sqrt(K) - sqrt(K - 1)) sigma tau*(delta)) / eps``."""
    epsilon = check_epsilon(epsilon)
    if users < 2:
        raise ValueError(f"users must be >= 2, got {users!r}")
    return (abs(mean) + (math.sqrt(users) - math.sqrt(users - 1)) * std * tau_star(delta, "q")) / epsilon
