"""The exact check of a scale: one rule, ``value + bound <= target``, for every criterion.

:func:`measure` evaluates, at one noise scale, the quantity the criterion bounds and its
numerical error bound:

=====================  ============  ==========================================================  =========
criterion              priors        checked value (and its derived rounding bound)              target
=====================  ============  ==========================================================  =========
pure eps, Laplace      discrete      exact loss (SPEC 2.1),                                      eps
                                     :func:`~pufferfish.loss.exact.privacy_loss`
pure eps, Laplace      mixtures      certified ``sup |log ratio|``,                              eps
                                     :func:`~pufferfish.loss.divergence.privacy_loss_sup`
pure eps, Laplace      joint         exact loss of the product channel (Laplace,                 eps
                                     randomized response) at the product grid's
                                     vertices,
                                     :func:`~pufferfish.loss.product.product_laplace_loss`;
                                     over L1 balls,
                                     :func:`~pufferfish.loss.balls.ball_loss`;
                                     over DKW bands on a declared domain,
                                     :func:`~pufferfish.loss.bands.band_loss`
(eps, delta), delta>0  any           hockey-stick divergence, both directions                    delta
                                     (:func:`~pufferfish.loss.divergence.hockey_stick`;
                                     closed form for two Gaussians with Gaussian noise)
eps-MI                 any           certified ``I(S; Y)``,                                      eps
                                     :func:`~pufferfish.loss.divergence.mutual_information`
=====================  ============  ==========================================================  =========

A scale passes when :func:`passes` holds for the worst (prior, pair): the checked value plus its
bound is at most the target. Nothing else in the library decides whether a scale is private.
Joint priors of several columns have the pure-eps Laplace check only; :func:`uncheckable` says
which other targets have no numerical check (their scales are reported "not numerically
checked", never as checked).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.special import logsumexp

from pufferfish.calibration.result import num
from pufferfish.loss.balls import ball_loss
from pufferfish.loss.bands import band_loss
from pufferfish.loss.density import release_density
from pufferfish.loss.divergence import hockey_stick, mutual_information, privacy_loss_sup
from pufferfish.loss.exact import PrivacyLoss, privacy_loss
from pufferfish.loss.gaussian import gaussian_delta_bound
from pufferfish.loss.product import product_laplace_loss
from pufferfish.loss.robust import worst_case_loss
from pufferfish.priors.bands import JointBand
from pufferfish.priors.distributions import DiscretePrior, GaussianMixturePrior, union_support
from pufferfish.priors.joint import MISSING_NUMBER, JointPrior
from pufferfish.priors.scenario import AdversaryPrior, Scenario


def passes(value: float, bound: float, target: float) -> bool:
    """The one safe-side rule: ``value + bound <= target``.

    Parameters
    ----------
    value : float
        A checked privacy quantity (loss, delta or information), >= 0, possibly ``inf``.
    bound : float
        Its numerical error bound (>= 0).
    target : float
        What it must not exceed (eps or delta).

    Returns
    -------
    bool
    """
    return value + bound <= target


@dataclass(frozen=True)
class Check:
    """The worst (prior, pair) of an exact check at one scale.

    Attributes
    ----------
    value : float
        Loss, delta or information (>= 0).
    error : float
        Its numerical error bound (>= 0).
    prior : str
    pair : (str, str)
    where : str
        Where the worst value is attained, e.g. ``"y = 1.5"`` or ``"hockey-stick (forward)"``.
    loss : PrivacyLoss or None
        The full exact loss when the check is SPEC 2.1's (discrete priors, Laplace, pure eps).
    prior_set : mapping or None
        For a worst case over prior sets, the sets' summary
        (:meth:`~pufferfish.priors.scenario.AdversaryPrior.set_summary`); None for the priors themselves.
    """

    value: float
    error: float
    prior: str
    pair: tuple[str, str]
    where: str
    loss: PrivacyLoss | None = None
    prior_set: Mapping[str, Any] | None = None

    @property
    def upper(self) -> float:
        """``value + error``: the certified upper end of the checked quantity."""
        return self.value + self.error

    def passes(self, target: float) -> bool:
        """Whether :func:`passes` holds for ``target``."""
        return passes(self.value, self.error, target)


def from_loss(loss: PrivacyLoss) -> Check:
    """The :class:`Check` of an exact loss (SPEC 2.1)."""
    return Check(loss.loss, loss.error_bound, loss.prior, loss.pair, f"y = {num(loss.worst_y)}", loss)


def discrete_delta_at_zero(p_i: DiscretePrior, p_j: DiscretePrior, eps: float) -> tuple[float, float]:
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


def _two_gaussians(p_i: Any, p_j: Any) -> bool:
    return (
        isinstance(p_i, GaussianMixturePrior)
        and isinstance(p_j, GaussianMixturePrior)
        and p_i.is_gaussian
        and p_j.is_gaussian
    )


def _pair_delta(
    p_i: Any, p_j: Any, noise: str, scale: float, epsilon: float, delta: float, time_limit: float
) -> tuple[float, float, str]:
    """``(delta, bound, where)`` of one pair at one scale (see :func:`check_pairs`)."""
    if scale == 0.0 and isinstance(p_i, DiscretePrior) and isinstance(p_j, DiscretePrior):
        d0, e0 = discrete_delta_at_zero(p_i, p_j, epsilon)
        return d0, e0, "no noise"
    if noise == "gaussian" and _two_gaussians(p_i, p_j):
        vi = float(p_i.stds[0] ** 2 + scale**2)
        vj = float(p_j.stds[0] ** 2 + scale**2)
        gd = gaussian_delta_bound(float(p_i.means[0]), vi, float(p_j.means[0]), vj, epsilon)
        return gd.delta, gd.error_bound, "closed form (two Gaussians)"
    if _two_gaussians(p_i, p_j) and not scale > 1e-150 * min(float(p_i.stds[0]), float(p_j.stds[0])):
        # Noise this small (s/b > 1e150) overflows the kernel arithmetic. Adding noise is
        # post-processing, so the delta of the two Gaussian priors themselves bounds it.
        mi, mj = float(p_i.means[0]), float(p_j.means[0])
        vi, vj = float(p_i.stds[0] ** 2), float(p_j.stds[0] ** 2)
        gd = gaussian_delta_bound(mi, vi, mj, vj, epsilon)
        return gd.delta, gd.error_bound, "no-noise bound (post-processing), two Gaussians"
    hb = hockey_stick(
        release_density(p_i, noise, scale),
        release_density(p_j, noise, scale),
        epsilon,
        resolution=min(1e-6 * delta, 1e-14),
        time_limit=time_limit,
    )
    side = "forward" if hb.forward >= hb.backward else "backward"
    return hb.delta, hb.error_bound, f"hockey-stick ({side})"


def check_pairs(
    scenario: Scenario,
    noise: str,
    scale: float,
    epsilon: float,
    delta: float = 0.0,
    *,
    time_limit: float = 30.0,
) -> Check:
    """Worst (prior, pair) of the exact (eps, delta) check at one scale.

    Parameters
    ----------
    scenario : Scenario
        Pairs and priors (discrete or Gaussian mixtures).
    noise : {"laplace", "gaussian"}
    scale : float
        Noise scale (>= 0).
    epsilon : float
        > 0.
    delta : float
        In [0, 1); 0 asks for pure eps (Laplace noise only).
    time_limit : float
        Seconds allowed to each hockey-stick evaluation.

    Returns
    -------
    Check
        The (prior, pair) with the largest ``value + error``: the loss for ``delta = 0`` (the full
        :class:`~pufferfish.loss.exact.PrivacyLoss` for discrete priors), else the delta at ``epsilon``.

    Raises
    ------
    ValueError
        For pure eps with Gaussian noise.
    pufferfish.loss.divergence.GridTooFineError
        If the release densities cannot be evaluated on a fine enough grid.
    """
    worst: Check | None = None
    if scenario.kind == "joint":
        return _check_joint(scenario, noise, scale, delta)
    if scenario.robust and (delta != 0.0 or noise != "laplace"):
        raise ValueError(
            "under prior sets, pure eps (delta = 0) with Laplace noise is checked; got "
            f"delta {delta!r} and {noise} noise"
        )
    if delta == 0.0:
        if noise != "laplace":
            raise ValueError("pure eps (delta = 0) is checked for Laplace noise only; give delta > 0")
        if scenario.robust:
            return _worst_over_sets(scenario, scale)
        if scenario.kind == "discrete":
            return from_loss(privacy_loss(scenario, scale))
        if scale == 0.0:
            return Check(math.inf, 0.0, scenario.priors[0].name, scenario.pairs[0], "no noise")
        for prior, pair, p_i, p_j in scenario.iter_prior_pairs():
            lb = privacy_loss_sup(release_density(p_i, noise, scale), release_density(p_j, noise, scale))
            c = Check(lb.loss, lb.error_bound, prior.name, pair, f"y = {num(lb.worst_y)}")
            if worst is None or c.upper > worst.upper:
                worst = c
        assert worst is not None
        return worst
    for prior, pair, p_i, p_j in scenario.iter_prior_pairs():
        value, error, where = _pair_delta(p_i, p_j, noise, scale, epsilon, delta, time_limit)
        c = Check(value, error, prior.name, pair, where)
        if worst is None or c.upper > worst.upper:
            worst = c
    assert worst is not None
    return worst


def uncheckable(scenario: Scenario, criterion: str, noise: str, delta: float) -> str | None:
    """Why no numerical check exists for this target, or ``None`` when :func:`measure` checks it.

    Parameters
    ----------
    scenario : Scenario
    criterion : {"(eps, delta)-PP", "eps-MI PP"}
    noise : {"laplace", "gaussian"}
    delta : float
        In [0, 1).

    Returns
    -------
    str or None
        For joint priors (several columns) only pure eps with Laplace noise is checked (the exact
        loss of product Laplace noise, :func:`~pufferfish.loss.product.product_laplace_loss`); a Laplace
        scale for ``delta > 0`` is checked as pure eps by the caller. Gaussian noise and eps-MI
        have no check in ``d > 1`` dimensions here.
    """
    if scenario.kind != "joint":
        return None
    if criterion == "eps-MI PP":
        return "I(S; Y) of a release of several columns is not computed"
    if noise != "laplace":
        return "the (eps, delta) check of Gaussian noise on several columns is not implemented"
    return None


def _check_joint(scenario: Scenario, noise: str, scale: float, delta: float) -> Check:
    """Worst (prior, pair) of the exact pure-eps loss of product Laplace noise on joint priors."""
    if delta != 0.0 or noise != "laplace":
        raise ValueError(
            "joint priors (several columns) are checked for pure eps (delta = 0) with Laplace noise "
            f"only; got delta {delta!r} and {noise} noise"
        )
    worst: Check | None = None
    for c in joint_pair_checks(scenario, scale):
        if worst is None or c.upper > worst.upper:
            worst = c
    assert worst is not None
    return worst


def joint_pair_checks(scenario: Scenario, scale: float) -> list[Check]:
    """The exact pure-eps loss of product Laplace noise of ``scale`` (>= 0) for every (prior,
    pair) of joint priors (:func:`pufferfish.loss.product.product_laplace_loss`), in the order of
    :meth:`~pufferfish.priors.scenario.Scenario.iter_joint_pairs`."""
    assert scenario.metric is not None
    out = []
    for prior, pair, p_i, p_j in scenario.iter_joint_pairs():
        if prior.sets is not None:  # the worst case over the L1 balls (issue 31)
            summary = prior.set_summary()
            if scale == 0.0:
                out.append(Check(math.inf, 0.0, prior.name, pair, "no noise", prior_set=summary))
                continue
            set_i, set_j = prior.sets[pair[0]], prior.sets[pair[1]]
            band = isinstance(set_i, JointBand)
            bl = (band_loss if band else ball_loss)(set_i, set_j, scenario.metric, scale)
            over = "the DKW bands on the declared domain" if band else "the L1 balls"
            where = f"y = ({_vertex(bl.worst_vertex)}), worst case over {over}"
            out.append(Check(bl.loss, bl.error_bound, prior.name, pair, where, prior_set=summary))
            continue
        if scale == 0.0:
            value, error, where = _joint_at_zero(p_i, p_j)
        else:
            vl = product_laplace_loss(p_i, p_j, scenario.metric, scale)
            value, error = vl.loss, vl.error_bound
            where = f"y = ({_vertex(vl.worst_vertex)})"
        out.append(Check(value, error, prior.name, pair, where))
    return out


def _vertex(vertex: tuple[float, ...]) -> str:
    """A vertex of the product grid in words: its numbers, a missing atom as ``missing``."""
    return ", ".join("missing" if v == MISSING_NUMBER else num(v) for v in vertex)


def _joint_at_zero(p_i: JointPrior, p_j: JointPrior) -> tuple[float, float, str]:
    """Loss without noise: ``max |log p_i(x) - log p_j(x)|`` (infinite if the supports differ);
    each log within ``2u`` of the exact one (renormalised pmf), the difference ``u`` more."""
    if p_i.support.shape != p_j.support.shape or not np.array_equal(p_i.support, p_j.support):
        return math.inf, 0.0, "no noise (the supports differ)"
    a, b = p_i.log_pmf, p_j.log_pmf
    assert a is not None and b is not None
    if (np.isfinite(a) != np.isfinite(b)).any():
        return math.inf, 0.0, "no noise (a tuple has mass under one secret only)"
    both = np.isfinite(a)
    value = float(np.abs(a[both] - b[both]).max())
    return value, 2.0**-53 * (5.0 + value) + p_i.log_error + p_j.log_error, "no noise"


def _worst_over_sets(scenario: Scenario, scale: float) -> Check:
    """The worst (prior, pair) of the exact Laplace loss over every prior in the prior sets
    (:func:`pufferfish.priors.sets.worst_case_loss`)."""
    worst: Check | None = None
    for prior in scenario.priors:
        assert prior.sets is not None
        summary = prior.set_summary()
        for a, b in scenario.pairs_for(prior):
            sl = worst_case_loss(prior.sets[a], prior.sets[b], scale)
            where = f"y = {num(sl.worst_y)}, worst case over the {summary['kind']} sets"
            c = Check(sl.loss, sl.error, prior.name, (a, b), where, prior_set=summary)
            if worst is None or c.upper > worst.upper:
                worst = c
    assert worst is not None
    return worst


def secret_weights_for(scenario: Scenario, secret_weights: Any = None) -> np.ndarray:
    """The secret's marginal over ``scenario.secrets``, checked and normalised.

    Parameters
    ----------
    scenario : Scenario
    secret_weights : mapping or array_like, optional
        Positive finite weights, one per secret (a mapping by secret name or an array in the order
        of ``scenario.secrets``). Default: uniform.

    Returns
    -------
    numpy.ndarray, shape (len(scenario.secrets),)
        Sums to 1.

    Raises
    ------
    ValueError
        If a secret lacks a weight or a weight is not positive and finite.
    """
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


_EPS = float(np.finfo(np.float64).eps)


def _discrete_information(conds: list[DiscretePrior], pi: NDArray[np.float64]) -> tuple[float, float]:
    """``(I(S; X), error bound)`` of discrete values released without noise (scale 0).

    ``I = sum_s pi_s sum_x p(x|s) (log p(x|s) - log p(x))``, ``p(x) = sum_s pi_s p(x|s)``, on the
    union support (a release without noise is the value itself, seed 004 Def 3 with ``M(X) = X``).
    Each term carries a few ulps of ``|log p| + 1`` and there are ``S n`` of them.
    """
    support = union_support(*conds)
    logs = np.array([p.log_on(support) for p in conds])
    log_mix = logsumexp(logs, axis=0, b=pi[:, None])
    with np.errstate(invalid="ignore"):
        terms = np.where(np.isfinite(logs), np.exp(logs) * (logs - log_mix[None, :]), 0.0)
    value = max(float((pi[:, None] * terms).sum()), 0.0)
    finite = np.abs(logs[np.isfinite(logs)])
    error = 8.0 * _EPS * logs.size * (float(finite.max()) + float(np.abs(log_mix).max()) + 1.0)
    return value, error


def possible_conditionals(
    scenario: Scenario, prior: AdversaryPrior, weights: NDArray[np.float64]
) -> tuple[list[Any], NDArray[np.float64]]:
    """The conditionals of the secrets of positive probability under ``prior``
    (:meth:`~pufferfish.priors.scenario.Scenario.possible_secrets`) and the secret's marginal
    ``weights`` (over ``scenario.secrets``) restricted to them and renormalised: under this
    prior the secret never takes the other values."""
    keep = [n for n, s in enumerate(scenario.secrets) if s not in prior.impossible]
    pi = weights[keep]
    conds = [prior.conditionals[scenario.secrets[n]] for n in keep]
    return conds, np.asarray(pi / pi.sum(), dtype=np.float64)


def check_information(
    scenario: Scenario, noise: str, scale: float, secret_weights: Any = None, *, tol: float = 1e-5
) -> Check:
    """Largest certified ``I(S; Y)`` over the priors, each to ``tol`` (seed 004 Def 3).

    Parameters
    ----------
    scenario : Scenario
    noise : {"laplace", "gaussian"}
    scale : float
        Noise scale (>= 0).
    secret_weights : mapping or array_like, optional
        See :func:`secret_weights_for`.
    tol : float
        Absolute tolerance of each information value (nats).

    Returns
    -------
    Check
        The prior with the largest ``I(S; Y) + error``.
    """
    weights = secret_weights_for(scenario, secret_weights)
    worst: Check | None = None
    for prior in scenario.priors:
        conds, pi = possible_conditionals(scenario, prior, weights)
        assert all(isinstance(p, (DiscretePrior, GaussianMixturePrior)) for p in conds)
        first_two = (scenario.secrets[0], scenario.secrets[1])
        if scale == 0.0 and all(isinstance(p, DiscretePrior) for p in conds):
            value, error = _discrete_information(conds, pi)
            c = Check(value, error, prior.name, first_two, "I(S; Y)")
            if worst is None or c.upper > worst.upper:
                worst = c
            continue
        dens = [release_density(p, noise, scale) for p in conds]
        ib = mutual_information(dens, pi, tol=tol)
        c = Check(ib.information, ib.error_bound, prior.name, first_two, "I(S; Y)")
        if worst is None or c.upper > worst.upper:
            worst = c
    assert worst is not None
    return worst


def measure(
    scenario: Scenario,
    criterion: str,
    noise: str,
    scale: float,
    epsilon: float,
    delta: float,
    secret_weights: Any = None,
    *,
    time_limit: float = 30.0,
) -> tuple[Check, float]:
    """The check of ``criterion`` at ``scale`` and the target it must not exceed.

    Parameters
    ----------
    scenario : Scenario
    criterion : {"(eps, delta)-PP", "eps-MI PP"}
    noise : {"laplace", "gaussian"}
    scale : float
        >= 0.
    epsilon : float
        > 0.
    delta : float
        In [0, 1) (ignored by eps-MI).
    secret_weights : mapping or array_like, optional
        The secret's marginal (eps-MI).
    time_limit : float
        Seconds allowed to each hockey-stick evaluation.

    Returns
    -------
    (Check, float)
        The worst check and its target: eps for pure eps and eps-MI (information to 0.1% of eps),
        delta otherwise.
    """
    if criterion == "eps-MI PP":  # error budget: 0.1% of eps
        return check_information(scenario, noise, scale, secret_weights, tol=1e-3 * epsilon), epsilon
    chk = check_pairs(scenario, noise, scale, epsilon, delta, time_limit=time_limit)
    return chk, (epsilon if delta == 0.0 else delta)
