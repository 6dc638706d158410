"""Every calibrator for any prior (discrete, Gaussian, Gaussian mixture), Laplace or Gaussian noise
and (eps, delta), each checked exactly; the optimal scale for a target (eps, delta).

========================  =========  ====================  =========================================
mechanism                 noise      priors                scale (source)
========================  =========  ====================  =========================================
``l1``                    Laplace    discrete              seed 001 eq (26) (:mod:`.calibration`)
``kantorovich``           Laplace    discrete              seed 002 Lemma 1 (:mod:`.calibration`)
``relaxed``               Laplace    discrete              seed 002 Thm 2 (:mod:`.calibration`)
``monge``                 Laplace    Gaussian              seed 003 Thm 1, eq (5) with
                                                           ``tau* = Q^{-1}(delta/2)`` (eq 20);
                                                           delta = 0: Remark 1, eq (6)
``monge-lambertw``        Laplace    Gaussian              seed 003 Thm 1 with ``tau*`` of eq (23)
``gmm``                   Laplace    Gaussian mixture      seed 003 Thm 2, eq (13); ``w*`` by POT
                                                           ``ot.emd``
``gmm-translation``       Laplace    Gaussian mixture      seed 003 Cor 2, eq (15)
``kantorovich-gaussian``  Gaussian   discrete, Gaussian    seed 002 Thm 3(a): ``sigma = c Delta/eps``,
                                     translates            ``c^2 > 2 ln(1.25/delta)``, eps < 1
``analytic-gaussian``     Gaussian   same                  Balle and Wang (2018) Thm 8 at ``Delta``
``mi-gaussian``           Gaussian   any                   seed 004 Thm 3 (eps-MI PP)
``mi-gaussian-entropy``   Gaussian   Gaussian mixture      seed 004 Thm 4 (eps-MI PP)
``mi-laplace``            Laplace    any                   seed 004 Remark 6 (eps-MI PP)
``optimal``               either     any                   smallest scale passing the exact check
========================  =========  ====================  =========================================

``Delta`` is the largest displacement of the Kantorovich plan (SPEC sec 1); the analytic Gaussian
calibration at ``Delta`` is valid for pufferfish privacy because the hockey-stick divergence is
jointly convex and the plan couples the two priors by shifts of at most ``Delta`` (SPEC sec 5).

Checks (``NoiseCalibration.checked_*``): pure eps with Laplace noise by the exact loss (discrete
priors, SPEC 2.1) or the certified supremum (:func:`~pufferfish.divergence.privacy_loss_sup`);
(eps, delta) by the certified hockey-stick divergence of the two releases, both directions
(:func:`~pufferfish.divergence.hockey_stick`; closed form for two Gaussians with Gaussian noise);
eps-MI by the certified mutual information (:func:`~pufferfish.divergence.mutual_information`).
A theorem's scale that fails its check is reported as a finding, never returned as passing.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from scipy.optimize import brentq
from scipy.special import lambertw, log_ndtr, ndtri

from ._checks import check_epsilon, check_epsilons
from .calibration import PrivacyCheckError, RootFinding, calibrate
from .calibration import calibrate_optimal as calibrate_optimal_discrete
from .divergence import (
    GridTooFineError,
    check_noise,
    gaussian_delta_bound,
    hockey_stick,
    mutual_information,
    privacy_loss_sup,
    release_density,
)
from .loss import privacy_loss
from .multiuser_calibration import Skipped
from .priors import DiscretePrior, GaussianMixturePrior, Prior, Scenario
from .transport import kantorovich_plan

#: Every calibrator name, in the order of comparisons.
NOISE_MECHANISMS: tuple[str, ...] = (
    "l1",
    "kantorovich",
    "relaxed",
    "monge",
    "monge-lambertw",
    "gmm",
    "gmm-translation",
    "kantorovich-gaussian",
    "analytic-gaussian",
    "mi-gaussian",
    "mi-gaussian-entropy",
    "mi-laplace",
    "optimal",
)

#: The noise each mechanism adds (``optimal`` adds the noise asked for).
MECHANISM_NOISE: dict[str, str] = {
    "l1": "laplace",
    "kantorovich": "laplace",
    "relaxed": "laplace",
    "monge": "laplace",
    "monge-lambertw": "laplace",
    "gmm": "laplace",
    "gmm-translation": "laplace",
    "kantorovich-gaussian": "gaussian",
    "analytic-gaussian": "gaussian",
    "mi-gaussian": "gaussian",
    "mi-gaussian-entropy": "gaussian",
    "mi-laplace": "laplace",
}

#: Where each mechanism comes from.
SOURCES: dict[str, str] = {
    "l1": "seed 001 eq (26)",
    "kantorovich": "seed 002 Lemma 1; seed 000 Prop 1-2; seed 001 eq (4)",
    "relaxed": "seed 002 Thm 2 (14a, 14b); seed 001 Prop 3.2-3.3",
    "monge": "seed 003 Thm 1 eq (5), tau* = Q^-1(delta/2) eq (20); Remark 1 eq (6) for delta = 0",
    "monge-lambertw": "seed 003 Thm 1 eq (5), tau* = sqrt(W0(2/(pi delta^2))) eq (23)",
    "gmm": "seed 003 Thm 2 eq (13), w* by POT ot.emd",
    "gmm-translation": "seed 003 Cor 2 eq (15)",
    "kantorovich-gaussian": "seed 002 Thm 3(a): sigma = c Delta / eps, c^2 > 2 ln(1.25/delta)",
    "analytic-gaussian": "Balle and Wang (2018) Thm 8 at the Kantorovich sensitivity (SPEC sec 5)",
    "mi-gaussian": "seed 004 Thm 3 (d = 1, no public function)",
    "mi-gaussian-entropy": "seed 004 Thm 4 with B = exp(2h - 1)/(2 pi) (SPEC sec 6)",
    "mi-laplace": "seed 004 Remark 6 (d = 1, no public function)",
    "optimal": "smallest scale passing the exact check (SPEC sec 2.1, 4, 5)",
}

#: Privacy criteria.
CRITERIA = ("(eps, delta)-PP", "eps-MI PP")

_MI = ("mi-gaussian", "mi-gaussian-entropy", "mi-laplace")
_STEPS = (0.0, 1e-12, 1e-10, 1e-8, 1e-6, 1e-4)


def _num(x: float) -> str:
    return f"{float(x):.10g}"


def check_delta(delta: Any) -> float:
    """Return ``delta`` as a float after checking ``0 <= delta < 1``."""
    try:
        value = float(delta)
    except (TypeError, ValueError):
        raise ValueError(f"delta must be in [0, 1), got {delta!r}") from None
    if not (0.0 <= value < 1.0):
        raise ValueError(f"delta must be in [0, 1), got {delta!r}")
    return value


def check_mechanism_name(mechanism: Any) -> str:
    """Return ``mechanism`` after checking it is one of :data:`NOISE_MECHANISMS`."""
    if mechanism not in NOISE_MECHANISMS:
        raise ValueError(f"mechanism must be one of {', '.join(NOISE_MECHANISMS)}, got {mechanism!r}")
    return str(mechanism)


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
        In [0, 1]: the ``forward`` value of :func:`~pufferfish.divergence.gaussian_delta_bound`,
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
    for step in (0.0, 1e-14, 1e-12, 1e-10, 1e-8):
        if f(root + step) <= 0:
            return math.exp(root + step)
    return math.exp(hi)  # pragma: no cover


# ---------------------------------------------------------------------------------------------
# Result


@dataclass(frozen=True)
class NoiseCalibration:
    """A calibrated noise scale and the exact check it passed.

    Attributes
    ----------
    mechanism : str
        One of :data:`NOISE_MECHANISMS`.
    noise : {"laplace", "gaussian"}
        The noise: ``scale`` is the Laplace ``b`` (variance ``2 b^2``) or the Gaussian ``sigma``.
    epsilon : float
        Target eps (> 0), nats.
    delta : float
        Target delta in [0, 1) (0 for pure eps and for eps-MI).
    criterion : str
        ``"(eps, delta)-PP"`` or ``"eps-MI PP"`` (seed 004 Def 3).
    scale : float
        The scale (>= 0, unit of the released column).
    checked_loss : float or None
        Checked privacy loss ``sup |log ratio|`` (pure eps with Laplace noise), else ``None``.
    checked_delta : float or None
        Checked hockey-stick divergence at ``epsilon`` (both directions), else ``None``.
    checked_information : float or None
        Checked ``I(S; Y)`` (eps-MI mechanisms), else ``None``.
    check_error_bound : float
        Numerical error bound of the checked value; the check passed with it added.
    prior, pair :
        The prior and pair deciding the scale (the binding pair of the check for ``optimal``).
    decided_by : str
        What decided it.
    source : str
        Paper, theorem and equation.
    root : RootFinding or None
        Convergence data where a root finder ran.
    safety_step : float
        Relative move up needed to pass the check (0 if none).
    noiseless : bool
        ``scale == 0``: the priors already satisfy the criterion (only if the priors are right).
    """

    mechanism: str
    noise: str
    epsilon: float
    delta: float
    criterion: str
    scale: float
    checked_loss: float | None
    checked_delta: float | None
    checked_information: float | None
    check_error_bound: float
    prior: str
    pair: tuple[str, str]
    decided_by: str
    source: str
    root: RootFinding | None
    safety_step: float
    noiseless: bool

    @property
    def variance(self) -> float:
        """Noise variance: ``2 b^2`` (Laplace) or ``sigma^2`` (Gaussian)."""
        return 2.0 * self.scale**2 if self.noise == "laplace" else self.scale**2

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (``None`` where a field does not apply)."""
        return {
            "mechanism": self.mechanism,
            "noise": self.noise,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "criterion": self.criterion,
            "scale": self.scale,
            "variance": self.variance,
            "checked_loss": self.checked_loss,
            "checked_delta": self.checked_delta,
            "checked_information": self.checked_information,
            "check_error_bound": self.check_error_bound,
            "prior": self.prior,
            "pair": list(self.pair),
            "decided_by": self.decided_by,
            "source": self.source,
            "safety_step": self.safety_step,
            "noiseless": self.noiseless,
            "root": None
            if self.root is None
            else {
                "method": self.root.method,
                "variable": self.root.variable,
                "iterations": self.root.iterations,
                "function_calls": self.root.function_calls,
                "converged": self.root.converged,
                "bracket": list(self.root.bracket),
            },
        }


# ---------------------------------------------------------------------------------------------
# Exact checks on a scenario


@dataclass(frozen=True)
class _Check:
    value: float  # loss, delta or information
    error: float
    prior: str
    pair: tuple[str, str]
    where: str

    @property
    def upper(self) -> float:
        return self.value + self.error


def _discrete_delta_at_zero(p_i: DiscretePrior, p_j: DiscretePrior, eps: float) -> tuple[float, float]:
    """Hockey-stick divergence of two pmfs (no noise) and its rounding bound.

    Each term ``[a - e^eps b]_+``: ``a``, ``b`` within 2u (renormalised), ``e^eps`` within u, the
    product and difference u each: at most ``6u (a + e^eps b)``, counted also for the terms that
    rounding may have left out (``a - e^eps b > -6u (a + e^eps b)``); ``n u`` times the sum for the
    summation of ``n`` terms.
    """
    support = np.union1d(p_i.support, p_j.support)
    a, b = p_i.on(support), p_j.on(support)
    e = math.exp(min(eps, 700.0))
    u = 2.0**-53
    best = (0.0, 0.0)
    for x, y in ((a, b), (b, a)):
        diff = x - e * y
        mag = x + e * y
        value = float(np.maximum(diff, 0.0).sum())
        near = diff > -6.0 * u * mag
        err = float((6.0 * u + support.size * u) * mag[near].sum())
        if value + err > best[0] + best[1]:
            best = (value, err)
    return best


def check_pairs(
    scenario: Scenario,
    noise: str,
    scale: float,
    epsilon: float,
    delta: float = 0.0,
    *,
    time_limit: float = 30.0,
) -> _Check:
    """Worst pair of the exact (eps, delta) check at one scale (internal; see module docstring)."""
    worst: _Check | None = None
    if delta == 0.0:
        if noise != "laplace":
            raise ValueError("pure eps (delta = 0) is checked for Laplace noise only; give delta > 0")
        if scenario.kind == "discrete":
            loss = privacy_loss(scenario, scale)
            return _Check(loss.loss, loss.error_bound, loss.prior, loss.pair, f"y = {_num(loss.worst_y)}")
        if scale == 0.0:
            return _Check(math.inf, 0.0, scenario.priors[0].name, scenario.pairs[0], "no noise")
        for prior, pair, p_i, p_j in scenario.iter_prior_pairs():
            lb = privacy_loss_sup(release_density(p_i, noise, scale), release_density(p_j, noise, scale))
            c = _Check(lb.loss, lb.error_bound, prior.name, pair, f"y = {_num(lb.worst_y)}")
            if worst is None or c.upper > worst.upper:
                worst = c
        assert worst is not None
        return worst
    for prior, pair, p_i, p_j in scenario.iter_prior_pairs():
        if scale == 0.0 and isinstance(p_i, DiscretePrior) and isinstance(p_j, DiscretePrior):
            d0, e0 = _discrete_delta_at_zero(p_i, p_j, epsilon)
            c = _Check(d0, e0, prior.name, pair, "no noise")
        elif (
            noise == "gaussian"
            and isinstance(p_i, GaussianMixturePrior)
            and isinstance(p_j, GaussianMixturePrior)
            and p_i.is_gaussian
            and p_j.is_gaussian
        ):
            vi = float(p_i.stds[0] ** 2 + scale**2)
            vj = float(p_j.stds[0] ** 2 + scale**2)
            mi, mj = float(p_i.means[0]), float(p_j.means[0])
            gd = gaussian_delta_bound(mi, vi, mj, vj, epsilon)
            c = _Check(gd.delta, gd.error_bound, prior.name, pair, "closed form (two Gaussians)")
        elif (
            isinstance(p_i, GaussianMixturePrior)
            and isinstance(p_j, GaussianMixturePrior)
            and p_i.is_gaussian
            and p_j.is_gaussian
            and not scale > 1e-150 * min(float(p_i.stds[0]), float(p_j.stds[0]))
        ):
            # Noise this small (s/b > 1e150) overflows the kernel arithmetic. Adding noise is
            # post-processing, so the delta of the two Gaussian priors themselves bounds it.
            mi, mj = float(p_i.means[0]), float(p_j.means[0])
            vi, vj = float(p_i.stds[0] ** 2), float(p_j.stds[0] ** 2)
            gd = gaussian_delta_bound(mi, vi, mj, vj, epsilon)
            c = _Check(
                gd.delta, gd.error_bound, prior.name, pair, "no-noise bound (post-processing), two Gaussians"
            )
        else:
            hb = hockey_stick(
                release_density(p_i, noise, scale),
                release_density(p_j, noise, scale),
                epsilon,
                resolution=min(1e-6 * delta, 1e-14),
                time_limit=time_limit,
            )
            side = "forward" if hb.forward >= hb.backward else "backward"
            c = _Check(hb.delta, hb.error_bound, prior.name, pair, f"hockey-stick ({side})")
        if worst is None or c.upper > worst.upper:
            worst = c
    assert worst is not None
    return worst


def secret_weights_for(scenario: Scenario, secret_weights: Any = None) -> np.ndarray:
    """The secret's marginal over ``scenario.secrets`` (default uniform), checked and normalised."""
    k = len(scenario.secrets)
    if secret_weights is None:
        return np.full(k, 1.0 / k)
    if isinstance(secret_weights, dict):
        try:
            w = np.array([float(secret_weights[s]) for s in scenario.secrets])
        except KeyError as exc:
            raise ValueError(
                f"secret_weights must give every secret of the pairs a weight; lacks {exc}"
            ) from None
    else:
        w = np.asarray(secret_weights, dtype=np.float64)
    if w.shape != (k,) or not np.all(np.isfinite(w)) or (w <= 0).any():
        raise ValueError(f"secret_weights must be {k} positive finite numbers, got {secret_weights!r}")
    return np.asarray(w / w.sum(), dtype=np.float64)


def check_information(
    scenario: Scenario, noise: str, scale: float, secret_weights: Any = None, *, tol: float = 1e-5
) -> _Check:
    """Largest certified ``I(S; Y)`` over the priors, each to ``tol`` (internal)."""
    pi = secret_weights_for(scenario, secret_weights)
    worst: _Check | None = None
    for prior in scenario.priors:
        dens = [release_density(prior.conditionals[s], noise, scale) for s in scenario.secrets]
        ib = mutual_information(dens, pi, tol=tol)
        c = _Check(ib.information, ib.error_bound, prior.name, tuple(scenario.secrets[:2]), "I(S; Y)")  # type: ignore[arg-type]
        if worst is None or c.upper > worst.upper:
            worst = c
    assert worst is not None
    return worst


# ---------------------------------------------------------------------------------------------
# Applicability


def not_applicable(
    scenario: Scenario, mechanism: str, noise: str, delta: float, epsilon: float = 0.5
) -> str | None:
    """Why ``mechanism`` does not apply to these priors, noise and delta, or ``None`` if it does."""
    check_mechanism_name(mechanism)
    kind = scenario.kind
    if mechanism == "optimal":
        if noise == "gaussian" and delta == 0.0:
            return "Gaussian noise gives pure eps only for special priors; give delta > 0"
        return None
    if MECHANISM_NOISE[mechanism] != noise:
        return f"adds {MECHANISM_NOISE[mechanism]} noise, not {noise}"
    if mechanism in ("l1", "kantorovich", "relaxed"):
        return None if kind == "discrete" else "needs discrete priors"
    if mechanism in ("monge", "monge-lambertw"):
        if not all(
            isinstance(p, GaussianMixturePrior) and p.is_gaussian
            for a in scenario.priors
            for p in a.conditionals.values()
        ):
            return "needs Gaussian priors (one component)"
        if delta == 0.0:
            if mechanism == "monge-lambertw":
                return "eq (23) needs delta > 0 (for delta = 0 see monge, Remark 1)"
            if not _translation_gaussians(scenario):
                return "delta = 0 needs equal standard deviations in every pair (Remark 1)"
        return None
    if mechanism == "gmm":
        if kind != "gaussian-mixture":
            return "needs Gaussian-mixture priors"
        if delta == 0.0:
            return "eq (13) needs delta > 0 (for translated mixtures see gmm-translation)"
        return None
    if mechanism == "gmm-translation":
        if kind != "gaussian-mixture":
            return "needs Gaussian-mixture priors"
        if not _translation_mixtures(scenario):
            return (
                "needs mixtures with the same weights and standard deviations component by component (eq 14)"
            )
        return None
    if mechanism in ("kantorovich-gaussian", "analytic-gaussian"):
        if delta == 0.0:
            return "needs delta > 0"
        if mechanism == "kantorovich-gaussian" and not epsilon < 1.0:
            return "Thm 3(a) needs eps < 1"
        if kind == "discrete" or _translation_gaussians(scenario):
            return None
        return "needs discrete priors or Gaussian priors with equal standard deviations (finite Delta)"
    if mechanism == "mi-gaussian-entropy" and kind == "discrete":
        return "needs continuous priors (h(X|S) = -inf for discrete priors; Thm 4 reduces to Thm 3)"
    return None


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


# ---------------------------------------------------------------------------------------------
# Theorem scales (no check)


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


def theorem_scale(
    scenario: Scenario, mechanism: str, epsilon: float, delta: float, secret_weights: Any = None
) -> tuple[float, str, tuple[str, str], str]:
    """Scale of a closed-form mechanism: ``(scale, prior, pair, decided_by)`` (no check).

    Raises
    ------
    ValueError
        If the mechanism does not apply (:func:`not_applicable`).
    """
    reason = not_applicable(scenario, mechanism, MECHANISM_NOISE.get(mechanism, "laplace"), delta, epsilon)
    if reason is not None:
        raise ValueError(f"{mechanism} does not apply: {reason}")
    best = (-1.0, "", ("", ""), "")
    if mechanism in _MI:
        pi = secret_weights_for(scenario, secret_weights)
        for prior in scenario.priors:
            conds = [prior.conditionals[s] for s in scenario.secrets]
            means = np.array([p.mean for p in conds])
            var_within = np.array([_variance(p) for p in conds])
            total_mean = float(pi @ means)
            var = float(pi @ (var_within + means**2)) - total_mean**2
            var = max(var, 0.0)
            if mechanism == "mi-gaussian":
                s = math.sqrt(var / math.expm1(2.0 * epsilon))
                how = f"Var(X) = {_num(var)}"
            elif mechanism == "mi-laplace":
                s = math.sqrt(var) / math.expm1(epsilon)
                how = f"sd(X) = {_num(math.sqrt(var))}"
            else:
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
                how = f"A = Var(X) = {_num(var)}, B = {_num(big_b)} (h(X|S) >= {_num(h)})"
            if s > best[0]:
                best = (s, prior.name, tuple(scenario.secrets[:2]), how)  # type: ignore[assignment]
        return best
    for prior, pair, p_i, p_j in scenario.iter_prior_pairs():
        if mechanism in ("monge", "monge-lambertw"):
            assert isinstance(p_i, GaussianMixturePrior) and isinstance(p_j, GaussianMixturePrior)
            dmu = abs(float(p_i.means[0] - p_j.means[0]))
            dsd = abs(float(p_i.stds[0] - p_j.stds[0]))
            if delta == 0.0:
                value, how = dmu, f"|mu_i - mu_j| = {_num(dmu)} (Remark 1)"
            else:
                tau = tau_star(delta, "q" if mechanism == "monge" else "lambertw")
                value = dmu + dsd * tau
                how = f"|mu_i - mu_j| + |sigma_i - sigma_j| tau* = {_num(dmu)} + {_num(dsd)} * {_num(tau)}"
        elif mechanism == "gmm":
            assert isinstance(p_i, GaussianMixturePrior) and isinstance(p_j, GaussianMixturePrior)
            w = component_transport(p_i, p_j)
            tau = tau_star(delta, "q")
            dmus = np.abs(p_i.means[:, None] - p_j.means[None, :])
            dsds = np.abs(p_i.stds[:, None] - p_j.stds[None, :])
            value = float(np.sum(w * (dmus + tau * dsds)))
            how = f"sum w* (|dmu| + tau* |dsigma|) with tau* = {_num(tau)}"
        elif mechanism == "gmm-translation":
            assert isinstance(p_i, GaussianMixturePrior) and isinstance(p_j, GaussianMixturePrior)
            value = float(np.sum(p_i.weights * np.abs(p_i.means - p_j.means)))
            how = "sum alpha_m |mu_im - mu_jm|"
        else:  # kantorovich-gaussian, analytic-gaussian
            value = _sensitivity(p_i, p_j)
            if mechanism == "kantorovich-gaussian":
                c = math.nextafter(math.sqrt(2.0 * math.log(1.25 / delta)), math.inf)
                value = c * value
                how = f"c * Delta, c = {_num(c)}, Delta = {_num(value / c)}"
            else:
                sens = value
                value = analytic_gaussian_sigma(sens, epsilon, delta) * epsilon if sens > 0 else 0.0
                how = f"analytic Gaussian at Delta = {_num(sens)}"
        if value > best[0]:
            best = (value, prior.name, pair, how)
    value, name, pair, how = best
    return value / epsilon, name, pair, how


def _variance(p: Prior) -> float:
    if isinstance(p, DiscretePrior):
        return float(p.pmf @ (p.support - p.mean) ** 2)
    return p.variance


def _sensitivity(p_i: Prior, p_j: Prior) -> float:
    """Kantorovich plan's largest displacement (W-infinity in 1-D) for discrete or translated Gaussians."""
    if isinstance(p_i, DiscretePrior) and isinstance(p_j, DiscretePrior):
        return kantorovich_plan(p_i, p_j).max_displacement
    assert isinstance(p_i, GaussianMixturePrior) and isinstance(p_j, GaussianMixturePrior)
    return abs(float(p_i.means[0] - p_j.means[0]))


# ---------------------------------------------------------------------------------------------
# Verification and the front doors


def _criterion(mechanism: str) -> str:
    return "eps-MI PP" if mechanism in _MI else "(eps, delta)-PP"


def _measure(
    scenario: Scenario,
    mechanism: str,
    noise: str,
    scale: float,
    epsilon: float,
    delta: float,
    secret_weights: Any,
) -> tuple[_Check, float]:
    """The check at ``scale`` and the value it must not exceed."""
    if mechanism in _MI:  # error budget: 0.1% of eps
        return check_information(scenario, noise, scale, secret_weights, tol=1e-3 * epsilon), epsilon
    chk = check_pairs(scenario, noise, scale, epsilon, delta)
    return chk, (epsilon if delta == 0.0 else delta)


def _result(
    mechanism: str,
    noise: str,
    epsilon: float,
    delta: float,
    scale: float,
    chk: _Check,
    prior: str,
    pair: tuple[str, str],
    decided_by: str,
    root: RootFinding | None,
    step: float,
) -> NoiseCalibration:
    mi = mechanism in _MI
    return NoiseCalibration(
        mechanism=mechanism,
        noise=noise,
        epsilon=epsilon,
        delta=0.0 if mi else delta,
        criterion=_criterion(mechanism),
        scale=scale,
        checked_loss=chk.value if (not mi and delta == 0.0) else None,
        checked_delta=chk.value if (not mi and delta > 0.0) else None,
        checked_information=chk.value if mi else None,
        check_error_bound=chk.error,
        prior=prior,
        pair=pair,
        decided_by=decided_by,
        source=SOURCES[mechanism],
        root=root,
        safety_step=step,
        noiseless=scale == 0.0,
    )


def _verified(
    scenario: Scenario,
    mechanism: str,
    noise: str,
    epsilon: float,
    delta: float,
    scale: float,
    prior: str,
    pair: tuple[str, str],
    decided_by: str,
    secret_weights: Any,
    root: RootFinding | None = None,
) -> NoiseCalibration:
    chk = None
    for step in _STEPS:
        trial = scale * (1.0 + step)
        chk, target = _measure(scenario, mechanism, noise, trial, epsilon, delta, secret_weights)
        if chk.upper <= target:
            return _result(mechanism, noise, epsilon, delta, trial, chk, prior, pair, decided_by, root, step)
        if scale == 0.0:
            break
    assert chk is not None
    what = {"eps-MI PP": "I(S; Y)", "(eps, delta)-PP": "loss" if delta == 0.0 else "delta"}[
        _criterion(mechanism)
    ]
    raise PrivacyCheckError(
        f"{mechanism} scale {scale!r} at epsilon {epsilon!r}, delta {delta!r} fails the exact check: "
        f"{what} {chk.value!r} (+ bound {chk.error:.3g}) for pair {chk.pair} of prior {chk.prior!r}"
    )


def calibrate_optimal_noise(
    scenario: Scenario,
    epsilon: float,
    *,
    delta: float = 0.0,
    noise: str = "laplace",
    upper: float | None = None,
    time_limit: float = 300.0,
) -> NoiseCalibration:
    """The smallest scale whose exact check passes for the target (eps, delta).

    Parameters
    ----------
    scenario : Scenario
        Pairs and priors (discrete or Gaussian mixtures).
    epsilon : float
        Finite and > 0.
    delta : float
        In [0, 1). ``0`` asks for pure eps (Laplace noise only).
    noise : {"laplace", "gaussian"}
    upper : float, optional
        A scale known to pass, to bracket from (default: doubling search).
    time_limit : float
        Seconds (default 300). The search answers or fails within about this time.

    Returns
    -------
    NoiseCalibration
        The closest passing scale to the root of ``check(scale) = target``, with brentq data:
        after brentq, the smallest passing scale is found by bisection between the root and the
        passing end of the bracket (to a relative 1e-9), never the bracket's end itself. With Laplace
        noise and ``delta > 0`` the answer is never above the pure-eps optimum, which satisfies
        every ``(eps, delta)``: if the delta search fails or ends above it, the pure-eps optimum is
        returned (``checked_delta = 0`` then, as its loss is checked).

    Raises
    ------
    ValueError
        On a bad argument, or Gaussian noise with ``delta = 0``.
    PrivacyCheckError
        If no passing scale is found, or none within ``time_limit`` (the message says which).

    Notes
    -----
    The checked quantity (loss or delta) is non-increasing in the scale: ``Laplace(t2)`` is
    ``Laplace(t1)`` convolved with a probability measure, ``N(0, s2^2) = N(0, s1^2) * N(0, s2^2 -
    s1^2)``, and convolution is post-processing (SPEC sec 2.1). For Gaussian-mixture priors a
    finite Laplace scale reaches pure eps because the log-ratio of the convolved densities is
    bounded (SPEC sec 4).
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    noise = check_noise(noise)
    reason = not_applicable(scenario, "optimal", noise, delta)
    if reason is not None:
        raise ValueError(f"optimal does not apply: {reason}")
    if scenario.kind == "discrete" and noise == "laplace" and delta == 0.0:
        c = calibrate_optimal_discrete(scenario, epsilon)
        chk = _Check(c.checked_loss, c.check.error_bound, c.prior, c.pair, c.decided_by)
        return _result(
            "optimal", noise, epsilon, 0.0, c.scale, chk, c.prior, c.pair, c.decided_by, c.root, c.safety_step
        )
    target = epsilon if delta == 0.0 else delta
    zero_ok = delta > 0.0  # pure eps at scale 0 is the discrete case, handled above
    if any(
        isinstance(p, GaussianMixturePrior) and (p.stds <= 0).any()
        for a in scenario.priors
        for p in a.conditionals.values()
    ):
        zero_ok = False
    if zero_ok:
        chk0 = check_pairs(scenario, noise, 0.0, epsilon, delta)
        if chk0.upper <= target:
            return _result(
                "optimal",
                noise,
                epsilon,
                delta,
                0.0,
                chk0,
                chk0.prior,
                chk0.pair,
                "the priors already satisfy (eps, delta): no noise needed",
                None,
                0.0,
            )

    deadline = time.monotonic() + time_limit
    try:
        found = _search_optimal(scenario, epsilon, delta, noise, upper, deadline, time_limit)
    except PrivacyCheckError:
        if not (noise == "laplace" and delta > 0.0) or time.monotonic() >= deadline:
            raise
        found = None
    if noise == "laplace" and delta > 0.0:
        # pure eps implies (eps, delta): never answer above the pure-eps optimum. One loss check
        # at the found scale tells whether the pure-eps optimum can be smaller.
        if found is not None:
            try:
                if (
                    found.scale == 0.0
                    or check_pairs(scenario, noise, found.scale, epsilon, 0.0).upper > epsilon
                ):
                    return found
            except GridTooFineError:
                return found
        pure = calibrate_optimal_noise(
            scenario, epsilon, delta=0.0, noise=noise, time_limit=max(deadline - time.monotonic(), 1e-3)
        )
        if found is None or pure.scale < found.scale:
            return replace(
                pure,
                delta=delta,
                checked_delta=0.0,
                decided_by=f"pure eps optimum (implies any delta; the delta search gave no smaller scale): "
                f"{pure.decided_by}",
            )
    assert found is not None
    return found


def _search_optimal(
    scenario: Scenario,
    epsilon: float,
    delta: float,
    noise: str,
    upper: float | None,
    deadline: float,
    time_limit: float,
) -> NoiseCalibration:
    """Bracket, brentq on log scale, then the smallest passing scale (see calibrate_optimal_noise)."""
    target = epsilon if delta == 0.0 else delta
    calls = 0

    def excess(log_scale: float) -> float:
        nonlocal calls
        calls += 1
        left = deadline - time.monotonic()
        if left <= 0.0:
            raise PrivacyCheckError(
                f"optimal: no answer within the time limit of {time_limit:g} s (epsilon {epsilon!r}, "
                f"delta {delta!r}, {noise} noise); give a larger time_limit or a larger delta"
            )
        try:
            chk = check_pairs(
                scenario, noise, math.exp(log_scale), epsilon, delta, time_limit=min(left, 30.0)
            )
        except GridTooFineError:
            return 1.0  # too small a scale to check: treated as failing (safe side)
        return chk.upper - target

    hi = upper if upper is not None and upper > 0 else _spread(scenario) / epsilon
    hi = max(hi, 1e-300)
    for _ in range(200):
        if excess(math.log(hi)) <= 0:
            break
        hi *= 2.0
        if not math.isfinite(hi):
            break
    else:  # pragma: no cover
        raise PrivacyCheckError("could not find a passing scale to bracket from")
    if not (math.isfinite(hi) and excess(math.log(hi)) <= 0):
        raise PrivacyCheckError(
            f"optimal: no scale up to the largest float passes the exact check (epsilon {epsilon!r}, "
            f"delta {delta!r}, {noise} noise)"
        )
    lo = hi
    for _ in range(200):
        lo /= 2.0
        if excess(math.log(lo)) > 0:
            break
        hi = lo
    else:
        return _verified(
            scenario,
            "optimal",
            noise,
            epsilon,
            delta,
            lo,
            scenario.priors[0].name,
            scenario.pairs[0],
            "passes at every scale tried (down to 2^-200 of the start)",
            None,
        )
    root, info = brentq(
        excess, math.log(lo), math.log(hi), xtol=1e-10, rtol=1e-12, full_output=True, disp=False
    )
    # the closest passing scale: a few nudges, then bisection on "passes" between root and hi
    log_hi = math.log(hi)
    for step in (0.0, 1e-12, 1e-10):
        trial = root + step
        if trial >= log_hi:
            break
        if excess(trial) <= 0:
            log_hi = trial
            break
    else:
        log_lo = root
        while log_hi - log_lo > 1e-9:
            mid = 0.5 * (log_lo + log_hi)
            if excess(mid) <= 0:
                log_hi = mid
            else:
                log_lo = mid
    scale = min(math.exp(log_hi), hi)
    chk = check_pairs(scenario, noise, scale, epsilon, delta)
    rootdata = RootFinding(
        "brentq", "log scale", 1, 1, int(info.iterations), calls, bool(info.converged), (lo, hi)
    )
    return _verified(
        scenario,
        "optimal",
        noise,
        epsilon,
        delta,
        scale,
        chk.prior,
        chk.pair,
        f"exact check binding ({chk.where})",
        None,
        root=rootdata,
    )


def _spread(scenario: Scenario) -> float:
    """A length scale of the priors (largest mean gap plus spread), to start bracketing."""
    out = 0.0
    for _, _, p_i, p_j in scenario.iter_prior_pairs():
        gap = abs(p_i.mean - p_j.mean) + math.sqrt(_variance(p_i)) + math.sqrt(_variance(p_j))
        out = max(out, gap)
    return out if out > 0 else 1.0


def calibrate_noise(
    scenario: Scenario,
    epsilon: float,
    *,
    delta: float = 0.0,
    noise: str | None = None,
    mechanism: str = "optimal",
    secret_weights: Any = None,
) -> NoiseCalibration:
    """Calibrate one mechanism and check its scale exactly.

    Parameters
    ----------
    scenario : Scenario
        Pairs and priors (discrete or Gaussian mixtures).
    epsilon : float
        Finite and > 0 (nats).
    delta : float
        In [0, 1) (default 0). Ignored by the eps-MI mechanisms.
    noise : {"laplace", "gaussian"}, optional
        Default: the mechanism's own (Laplace for ``optimal``).
    mechanism : str
        One of :data:`NOISE_MECHANISMS`.
    secret_weights : mapping or array_like, optional
        The secret's marginal over ``scenario.secrets`` (eps-MI mechanisms; default uniform).

    Returns
    -------
    NoiseCalibration

    Raises
    ------
    ValueError
        On a bad argument or a mechanism that does not apply (the reason is given).
    PrivacyCheckError
        If the scale fails its exact check (a false theorem or a bug).
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    mechanism = check_mechanism_name(mechanism)
    noise = check_noise(noise if noise is not None else MECHANISM_NOISE.get(mechanism, "laplace"))
    if mechanism == "optimal":
        return calibrate_optimal_noise(scenario, epsilon, delta=delta, noise=noise)
    reason = not_applicable(scenario, mechanism, noise, delta, epsilon)
    if reason is not None:
        raise ValueError(f"{mechanism} does not apply: {reason}")
    if mechanism in ("l1", "kantorovich", "relaxed"):
        c = calibrate(scenario, epsilon, mechanism)
        chk = _Check(c.checked_loss, c.check.error_bound, c.prior, c.pair, c.decided_by)
        out = _result(
            mechanism, noise, epsilon, 0.0, c.scale, chk, c.prior, c.pair, c.decided_by, c.root, c.safety_step
        )
        if delta > 0.0:  # pure eps implies (eps, delta) for every delta; checked as pure eps
            out = replace(out, delta=delta, checked_delta=0.0)
        return out
    scale, prior, pair, how = theorem_scale(scenario, mechanism, epsilon, delta, secret_weights)
    return _verified(scenario, mechanism, noise, epsilon, delta, scale, prior, pair, how, secret_weights)


def compare_noise(
    scenario: Scenario,
    epsilons: float | Iterable[float],
    *,
    delta: float = 0.0,
    noise: str = "laplace",
    mechanisms: Sequence[str] | None = None,
    secret_weights: Any = None,
) -> tuple[NoiseCalibration | Skipped, ...]:
    """Every mechanism for these priors, noise and delta; the inapplicable ones with the reason.

    Parameters
    ----------
    scenario : Scenario
    epsilons : float or iterable of float
        Each finite and > 0.
    delta : float
        In [0, 1).
    noise : {"laplace", "gaussian"}
    mechanisms : sequence of str, optional
        Default: all of :data:`NOISE_MECHANISMS`.
    secret_weights : mapping or array_like, optional
        The secret's marginal (eps-MI mechanisms).

    Returns
    -------
    tuple of NoiseCalibration or Skipped
        Ordered by epsilon, then mechanism. A mechanism that does not apply, or whose scale fails
        its exact check (a finding about its theorem), is a :class:`Skipped` with the reason.
    """
    eps_list = check_epsilons([epsilons] if isinstance(epsilons, (int, float)) else epsilons)
    delta = check_delta(delta)
    noise = check_noise(noise)
    mechs = tuple(NOISE_MECHANISMS if mechanisms is None else mechanisms)
    if not mechs:
        raise ValueError("mechanisms needs at least one name, got none")
    for m in mechs:
        check_mechanism_name(m)
    out: list[NoiseCalibration | Skipped] = []
    for eps in eps_list:
        best_passing: float | None = None
        for m in mechs:
            reason = not_applicable(scenario, m, noise, delta, eps)
            if reason is not None:
                out.append(Skipped(m, eps, reason, delta))
                continue
            try:
                if m == "optimal":
                    res = calibrate_optimal_noise(scenario, eps, delta=delta, noise=noise, upper=best_passing)
                else:
                    res = calibrate_noise(
                        scenario, eps, delta=delta, noise=noise, mechanism=m, secret_weights=secret_weights
                    )
            except PrivacyCheckError as exc:
                out.append(Skipped(m, eps, f"fails the exact privacy check: {exc}", delta))
                continue
            if res.criterion == "(eps, delta)-PP" and res.scale > 0:
                best_passing = res.scale if best_passing is None else min(best_passing, res.scale)
            out.append(res)
    return tuple(out)


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
    from .priors import AdversaryPrior

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
