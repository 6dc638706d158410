"""The one safe-side ladder and the one smallest-passing search.

Calibrate, then verify and move to the safe side (the rule of Google's dp_accounting): every
proposed scale goes through :func:`verified`, which evaluates the exact check
(:func:`.check.measure`) and, if it fails, moves the scale up by the relative steps of
:data:`SAFETY_STEPS` (at most 1e-4) until it passes, else raises :class:`PrivacyCheckError`.
:func:`smallest_passing` finds the smallest scale that passes the check (SPEC sec 2.1, 4, 5).

Every checked quantity (loss, delta, information) is non-increasing in the scale:
``Laplace(t2)`` is ``Laplace(t1)`` convolved with ``(t1/t2)^2 delta_0 + (1 - (t1/t2)^2)
Laplace(t2)``, ``N(0, s2^2) = N(0, s1^2) * N(0, s2^2 - s1^2)``, and convolution is
post-processing. So the passing scales form an interval ``[scale*, inf)`` and a bisection on
"passes" converges to its left end.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import brentq

from pufferfish.calibration.check import Check, from_loss, joint_pair_checks, measure
from pufferfish.calibration.result import Calibration, PrivacyCheckError, RootFinding, TimeLimitError, num
from pufferfish.loss.divergence import GridTooFineError, MemoryLimitError
from pufferfish.priors.distributions import GaussianMixturePrior
from pufferfish.priors.joint import MISSING_NUMBER
from pufferfish.priors.scenario import AdversaryPrior, Scenario

#: Relative steps by which a scale that fails its exact check is moved up before giving up.
SAFETY_STEPS: tuple[float, ...] = (0.0, 1e-12, 1e-11, 1e-10, 1e-9, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4)

#: Pairs a search over many pairs runs on before checking them all (:func:`_search_pairs`).
ACTIVE_PAIRS = 16

#: Source of the optimal mechanism.
OPTIMAL_SOURCE = "smallest scale passing the exact check (SPEC sec 2.1, 4, 5)"


@dataclass(frozen=True)
class Proposal:
    """A scale proposed by a mechanism, before its exact check.

    Attributes
    ----------
    scale : float
        >= 0, unit of the released column.
    prior, pair :
        The prior and pair that decided it.
    decided_by : str
        What in that pair decided it.
    root : RootFinding or None
        Convergence data where a root finder ran.
    """

    scale: float
    prior: str
    pair: tuple[str, str]
    decided_by: str
    root: RootFinding | None = None


@dataclass(frozen=True)
class Target:
    """What a scale must achieve: the criterion, noise, budget and secret weights.

    Attributes
    ----------
    mechanism : str
    source : str
    criterion : {"(eps, delta)-PP", "eps-MI PP"}
    noise : {"laplace", "gaussian"}
    epsilon : float
        > 0 (validated at the edge).
    delta : float
        In [0, 1); 0 for pure eps and for eps-MI.
    secret_weights : Any
        The secret's marginal (eps-MI), or ``None``.
    """

    mechanism: str
    source: str
    criterion: str
    noise: str
    epsilon: float
    delta: float = 0.0
    secret_weights: Any = None


#: Relative increases of a scale tried when a scale fails at the grid its sampler draws on (the
#: release's safe-side ladder, with :func:`first_passing`).
GRID_SAFETY_STEPS = (0.0, 2.0**-30, 2.0**-20, 2.0**-10)


def first_passing(
    scale: float,
    passes_at: Callable[[float], bool],
    max_step: float = SAFETY_STEPS[-1],
    steps: Sequence[float] = SAFETY_STEPS,
) -> tuple[float, float] | None:
    """The first ``scale (1 + step)``, step in ``steps`` up to ``max_step``, that passes.

    Parameters
    ----------
    scale : float
        >= 0 (a zero scale is tried once).
    passes_at : callable
        ``passes_at(trial) -> bool``, the exact check.
    max_step : float
        Largest step tried (default the ladder's last, 1e-4). A caller whose ``scale`` is a bound
        that may be loose (not only rounded) stops early, at 1e-6, and falls back to an exact
        search rather than accept up to 1e-4 more noise than needed.
    steps : sequence of float
        Increasing relative steps, the first 0 (default :data:`SAFETY_STEPS`).

    Returns
    -------
    (float, float) or None
        ``(trial, step)``, or ``None`` when no step passes.
    """
    for step in steps:
        if step > max_step:
            break
        trial = scale * (1.0 + step)
        if passes_at(trial):
            return trial, step
        if scale == 0.0:
            break
    return None


def worst_pair(
    pairs: Iterable[tuple[AdversaryPrior, tuple[str, str], Any, Any]],
    value_of: Callable[[Any, Any], tuple[float, str]],
) -> Proposal:
    """``Proposal(value)`` of the (prior, pair) with the largest ``value_of(p_i, p_j) = (value,
    how)`` (the first of equal ones), over ``pairs`` as yielded by
    :meth:`~pufferfish.priors.scenario.Scenario.iter_prior_pairs` or ``iter_joint_pairs``."""
    best = (-1.0, "", ("", ""), "")
    for prior, pair, p_i, p_j in pairs:
        value, how = value_of(p_i, p_j)
        if value > best[0]:
            best = (value, prior.name, pair, how)
    value, name, pair, how = best
    return Proposal(value, name, pair, how)


def build(
    target: Target, proposal: Proposal, chk: Check | None, step: float, not_checked: str | None = None
) -> Calibration:
    """The :class:`Calibration` of a passing check, or of an unchecked scale (``chk`` None and
    ``not_checked`` the reason: every ``checked_*`` field None, a zero error bound)."""
    mi = target.criterion == "eps-MI PP"
    pure = not mi and target.delta == 0.0
    value = None if chk is None else chk.value
    return Calibration(
        mechanism=target.mechanism,
        noise=target.noise,
        epsilon=target.epsilon,
        delta=0.0 if mi else target.delta,
        criterion=target.criterion,
        scale=proposal.scale,
        checked_loss=value if pure else None,
        checked_delta=value if (not mi and not pure) else None,
        checked_information=value if mi else None,
        check_error_bound=0.0 if chk is None else chk.error,
        prior=proposal.prior,
        pair=proposal.pair,
        decided_by=proposal.decided_by,
        source=target.source,
        root=proposal.root,
        safety_step=step,
        noiseless=proposal.scale == 0.0,
        check=None if chk is None else chk.loss,
        prior_set=None if chk is None else chk.prior_set,
        not_checked=not_checked,
    )


def unverified(target: Target, proposal: Proposal, reason: str) -> Calibration:
    """The :class:`Calibration` of a theorem's scale for which no numerical check exists.

    Parameters
    ----------
    target : Target
    proposal : Proposal
        The theorem's scale (:attr:`Target.source`).
    reason : str
        Why it cannot be checked (:func:`.check.uncheckable`).

    Returns
    -------
    Calibration
        With ``not_checked = reason``, every ``checked_*`` field ``None`` and a zero error bound:
        tables, JSON and :meth:`~.result.Calibration.guarantee` say "not numerically checked".
    """
    return build(target, proposal, None, 0.0, reason)


def verified(
    scenario: Scenario, target: Target, proposal: Proposal, *, known: Check | None = None
) -> Calibration:
    """Check ``proposal`` exactly; move it up by at most :data:`SAFETY_STEPS` to pass, else raise.

    Parameters
    ----------
    scenario : Scenario
    target : Target
    proposal : Proposal
    known : Check, optional
        The check already evaluated at ``proposal.scale`` (reused for the first step).

    Returns
    -------
    Calibration

    Raises
    ------
    PrivacyCheckError
        If no step passes (a false theorem or a bug); the message gives the worst pair.
    """
    seen: dict[float, Check] = {} if known is None else {proposal.scale: known}

    def passes_at(trial: float) -> bool:
        if trial not in seen:
            seen[trial] = measure(
                scenario,
                target.criterion,
                target.noise,
                trial,
                target.epsilon,
                target.delta,
                target.secret_weights,
            )[0]
        return seen[trial].passes(_goal(target))

    found = first_passing(proposal.scale, passes_at)
    if found is not None:
        trial, step = found
        return build(target, replace(proposal, scale=trial), seen[trial], step)
    chk = seen[max(seen)]
    goal = _goal(target)
    if goal <= chk.error and chk.value <= chk.error:  # value and target within the rounding bound:
        # not a failure, the check cannot resolve a target this small
        raise ValueError(
            f"{target.mechanism}: the target {goal!r} is below what the exact check resolves here (its "
            f"rounding bound is {chk.error:.2g} at scale {max(seen):.3g}, the value {chk.value:.3g} is "
            f"within it): the supported range is a target > {chk.error:.2g}"
        )
    what = "I(S; Y)" if target.criterion == "eps-MI PP" else ("loss" if target.delta == 0.0 else "delta")
    at = f" at {chk.where}" if chk.where.startswith("y = ") else ""
    raise PrivacyCheckError(
        f"{target.mechanism} scale {proposal.scale!r} at epsilon {target.epsilon!r}, delta "
        f"{target.delta!r} fails the exact privacy check: {what} {chk.value!r} (+ rounding bound "
        f"{chk.error:.3g}) > {_goal(target)!r} for pair {chk.pair} of prior {chk.prior!r}{at}"
    )


def _goal(target: Target) -> float:
    """The value the checked quantity must not exceed."""
    if target.criterion == "eps-MI PP" or target.delta == 0.0:
        return target.epsilon
    return target.delta


# ---------------------------------------------------------------------------------------------
# The smallest passing scale


def smallest_passing(
    scenario: Scenario,
    epsilon: float,
    *,
    delta: float = 0.0,
    noise: str = "laplace",
    upper: Calibration | float | None = None,
    time_limit: float = 300.0,
) -> Calibration:
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
        The arguments are validated by the caller (:func:`.registry.calibrate_optimal`).
    upper : Calibration or float, optional
        A scale to bracket from, doubled until it passes (default: the priors' spread over eps);
        a :class:`Calibration` at the same eps has its check reused when it is the exact loss.
    time_limit : float
        Seconds (default 300). The search answers or fails within about this time.

    Returns
    -------
    Calibration
        The closest passing scale to the root of ``check(scale) = target``, with brentq data:
        after brentq, the smallest passing scale is found by nudges and a bisection between the
        root and the passing end of the bracket (to a relative 1e-9), never above that end. With
        Laplace noise and ``delta > 0`` the answer is never above the pure-eps optimum, which
        satisfies every ``(eps, delta)``: if the delta search fails or ends above it, the pure-eps
        optimum is returned (``checked_delta = 0`` then, as its loss is checked).
        ``scale == 0`` and ``noiseless`` when the priors themselves pass.

    Raises
    ------
    ValueError
        If ``upper`` is for another epsilon.
    PrivacyCheckError
        If no passing scale is found, or none within ``time_limit`` (the message says which).

    Notes
    -----
    SPEC sec 2.1 (beyond the seed papers). For Gaussian-mixture priors a finite Laplace scale
    reaches pure eps because the log-ratio of the convolved densities is bounded (SPEC sec 4).
    """
    if isinstance(upper, Calibration) and upper.epsilon != epsilon:
        raise ValueError(f"upper must be calibrated at epsilon {epsilon!r}, got {upper.epsilon!r}")
    if scenario.kind == "joint" and delta > 0.0:  # checked as pure eps, which implies any delta
        pure = smallest_passing(scenario, epsilon, noise=noise, upper=upper, time_limit=time_limit)
        return replace(pure, delta=delta, checked_delta=0.0)
    target = Target("optimal", OPTIMAL_SOURCE, "(eps, delta)-PP", noise, epsilon, delta)
    zero = _at_zero(scenario, target)
    if zero is not None:
        return zero
    deadline = time.monotonic() + time_limit
    try:
        found: Calibration | None = _search_pairs(scenario, target, upper, deadline, time_limit)
    except (PrivacyCheckError, TimeLimitError, MemoryLimitError):
        # with Laplace noise and delta > 0 the pure-eps optimum (a check in linear memory) still
        # answers: pure eps implies (eps, delta)
        if not (noise == "laplace" and delta > 0.0) or time.monotonic() >= deadline:
            raise
        found = None
    if not (noise == "laplace" and delta > 0.0):
        assert found is not None
        return found
    # pure eps implies (eps, delta): never answer above the pure-eps optimum. One loss check at
    # the found scale tells whether the pure-eps optimum can be smaller.
    if found is not None:
        try:
            if found.scale == 0.0 or not measure(
                scenario, target.criterion, noise, found.scale, epsilon, 0.0
            )[0].passes(epsilon):
                return found
        except GridTooFineError:
            return found
    pure = smallest_passing(
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
    return found


def _at_zero(scenario: Scenario, target: Target) -> Calibration | None:
    """The noiseless calibration when the priors themselves pass, else ``None``."""
    pure = target.delta == 0.0
    if pure and scenario.kind == "gaussian-mixture":
        return None  # a density against a point mass: infinite loss
    if not pure and any(
        isinstance(p, GaussianMixturePrior) and (p.stds <= 0).any()
        for a in scenario.priors
        for p in a.conditionals.values()
    ):
        return None
    chk, goal = measure(scenario, target.criterion, target.noise, 0.0, target.epsilon, target.delta)
    if not chk.passes(goal):
        return None
    how = (
        f"prior log-ratio {num(chk.value)} <= epsilon: no noise needed"
        if pure
        else "the priors already satisfy (eps, delta): no noise needed"
    )
    return build(target, Proposal(0.0, chk.prior, chk.pair, how), chk, 0.0)


def _search_pairs(
    scenario: Scenario, target: Target, upper: Calibration | float | None, deadline: float, time_limit: float
) -> Calibration:
    """:func:`_search` on the pairs that decide, then the check of every pair.

    A scenario with more than ``2 ACTIVE_PAIRS`` pairs of discrete or joint priors (pure eps
    with Laplace noise, no prior sets; e.g. the ``T`` times of a Markov chain) is searched on its
    :data:`ACTIVE_PAIRS` worst pairs at the starting scale; the answer is checked on every pair,
    and the worst pairs that fail there join the searched ones until one passes. Each pair's
    loss is non-increasing in the scale (module docstring), so the smallest scale passing all
    pairs is the largest of the pairs' own: a search on some pairs never ends above it, and the
    answer returned has passed the exact check of every pair (it is :func:`verified` on the
    whole scenario). Other scenarios go to :func:`_search` as they are.
    """
    pairs = scenario.checked_pairs
    plain = scenario.kind in ("discrete", "joint") and not scenario.robust and target.noise == "laplace"
    if not plain or target.delta != 0.0 or pairs <= 2 * ACTIVE_PAIRS:
        return _search(scenario, target, upper, deadline, time_limit)
    start = upper.scale if isinstance(upper, Calibration) else upper
    hi = start if start is not None and start > 0 else _spread(scenario) / target.epsilon
    everywhere, uppers = _every_pair(scenario, target, hi)
    active: list[tuple[str, str]] = []
    bound = start
    found: Calibration | None = None
    while True:
        ranked = sorted(uppers, key=lambda item: -item[0])
        fresh = [p for u, p in ranked if p not in active and (not active or u > target.epsilon)]
        if found is not None and (everywhere.passes(target.epsilon) or not fresh):
            # passes; or the pairs searched fail only by the rounding bound of all pairs, a little
            # larger than theirs: the safe-side ladder moves the scale up (by 1e-12 first)
            how = f"exact loss binding at {everywhere.where}"
            proposal = Proposal(found.scale, everywhere.prior, everywhere.pair, how, found.root)
            return verified(scenario, target, proposal, known=everywhere)
        active.extend(dict.fromkeys(fresh[:ACTIVE_PAIRS]))
        some = Scenario(tuple(active), scenario.priors, scenario.metric, scenario.model)
        found = _search(some, target, bound, deadline, time_limit)
        everywhere, uppers = _every_pair(scenario, target, found.scale)
        bound = found.scale  # if it fails on some pair, the search of more pairs starts above it


def _every_pair(
    scenario: Scenario, target: Target, scale: float
) -> tuple[Check, list[tuple[float, tuple[str, str]]]]:
    """The exact pure-eps check at ``scale`` and each (prior, pair)'s ``loss + bound``."""
    if scenario.kind == "joint":
        checks = joint_pair_checks(scenario, scale)
        return max(checks, key=lambda c: c.upper), [(c.upper, c.pair) for c in checks]
    chk = measure(scenario, target.criterion, target.noise, scale, target.epsilon, 0.0)[0]
    assert chk.loss is not None
    error = chk.loss.error_bound
    return chk, [(p.loss + error, p.pair) for p in chk.loss.pairs]


def _search(
    scenario: Scenario, target: Target, upper: Calibration | float | None, deadline: float, time_limit: float
) -> Calibration:
    """Bracket, brentq on log scale, then the smallest passing scale (see calibrate_optimal)."""
    eps, delta, noise = target.epsilon, target.delta, target.noise
    goal = _goal(target)
    checks: dict[float, Check] = {}
    start = upper.scale if isinstance(upper, Calibration) else upper
    if isinstance(upper, Calibration) and upper.check is not None and delta == 0.0 and upper.scale > 0.0:
        if upper.check.scale == upper.scale:
            checks[upper.scale] = from_loss(upper.check)

    def check_at(scale: float) -> Check | None:
        if scale not in checks:
            left = deadline - time.monotonic()
            if left <= 0.0:
                raise TimeLimitError(
                    f"optimal: no answer within the time limit of {time_limit:g} s (epsilon {eps!r}, "
                    f"delta {delta!r}, {noise} noise); give a larger time_limit or a larger delta"
                )
            try:
                with np.errstate(invalid="ignore", over="ignore"):  # a NaN check fails (safe side)
                    checks[scale] = measure(
                        scenario, target.criterion, noise, scale, eps, delta, time_limit=min(left, 30.0)
                    )[0]
            except GridTooFineError:
                return None  # too small a scale to check: treated as failing (safe side)
        return checks[scale]

    def fails(scale: float) -> bool:
        chk = check_at(scale)
        return chk is None or not chk.passes(goal)

    def excess(log_scale: float) -> float:
        chk = check_at(math.exp(log_scale))
        return 1.0 if chk is None else chk.upper - goal

    hi = start if start is not None and start > 0 else _spread(scenario) / eps
    hi = max(hi, 1e-300)
    while fails(hi):
        hi *= 2.0
        if not math.isfinite(hi):
            within = [c.error for c in checks.values() if c is not None and c.value <= goal]
            if within and min(within) >= goal:  # the value met the target, its rounding bound never did
                what = "epsilon" if delta == 0.0 else "delta"
                bound = min(within)
                raise ValueError(
                    f"{what} {goal!r} is below what the exact check resolves here (its smallest rounding "
                    f"bound is {bound:.2g}): the supported range is {what} > {bound:.2g}"
                )
            raise PrivacyCheckError(
                f"optimal: no scale up to the largest float passes the exact check (epsilon {eps!r}, "
                f"delta {delta!r}, {noise} noise)"
            )
    lo = _bracket_below(hi, eps, delta, fails, check_at)
    if lo is None:
        chk = checks[min(checks)]
        proposal = Proposal(
            min(checks), chk.prior, chk.pair, "passes at every scale tried (down to 2^-1100 of the start)"
        )
        return verified(scenario, target, proposal)
    hi = min(s for s, c in checks.items() if c is not None and c.passes(goal) and s > lo)
    tight = scenario.kind in ("discrete", "joint") and delta == 0.0  # exact loss: tighter tolerance
    root, info = brentq(
        excess,
        math.log(lo),
        math.log(hi),
        xtol=1e-13 if tight else 1e-10,
        rtol=1e-15 if tight else 1e-12,
        full_output=True,
        disp=False,
    )
    # the closest passing scale: a few nudges, then bisection on "passes" between root and hi
    log_hi = math.log(hi)
    for step in (0.0, 1e-13, 1e-12, 1e-11, 1e-10, 1e-9):
        trial = root + step
        if trial >= log_hi:
            break
        if not fails(math.exp(trial)):
            log_hi = trial
            break
    else:
        log_lo = root
        while log_hi - log_lo > 1e-9:
            mid = 0.5 * (log_lo + log_hi)
            if fails(math.exp(mid)):
                log_lo = mid
            else:
                log_hi = mid
    scale = min(math.exp(log_hi), hi)
    if fails(scale):  # exp(log(hi)) may differ from hi in the last ulp
        scale = hi
    final = check_at(scale)
    assert final is not None
    rootdata = RootFinding(
        "brentq", "log scale", 1, 1, int(info.iterations), len(checks), bool(info.converged), (lo, hi)
    )
    how = (
        f"exact loss binding at {final.where}"
        if final.loss is not None
        else f"exact check binding ({final.where})"
    )
    return verified(scenario, target, Proposal(scale, final.prior, final.pair, how, rootdata), known=final)


def _bracket_below(
    hi: float,
    eps: float,
    delta: float,
    fails: Callable[[float], bool],
    check_at: Callable[[float], Check | None],
) -> float | None:
    """A failing scale below the passing ``hi``, or ``None`` if every scale tried passes.

    With pure eps, first jump to ``theta L(theta) / eps`` (the root if the loss were proportional
    to ``1/theta``, as it is for large ``theta``) while that passes and cuts ``theta`` by a quarter;
    then halve until a scale fails. Every evaluated scale that passes is an upper end and every
    one that fails a lower end (the check is non-increasing), so the jump cannot misplace the root.
    """
    if delta == 0.0:
        for _ in range(8):
            chk = check_at(hi)
            if chk is None:
                break
            guess = hi * chk.value / eps
            if not 0.0 < guess <= 0.75 * hi:
                break
            if fails(guess):
                return guess
            hi = guess
    for _ in range(1100):
        if fails(hi / 2.0):
            return hi / 2.0
        hi /= 2.0
        if hi == 0.0:
            break
    return None


def _present_moments(prior: Any, atoms: NDArray[np.bool_]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Each column's mean and variance under a joint prior, over its present values on a column
    with a missing atom (:data:`~pufferfish.priors.joint.MISSING_NUMBER` is no number)."""
    x = prior.support.copy()
    w = np.broadcast_to(prior.pmf[:, None], x.shape).copy()
    gone = (x == MISSING_NUMBER) & atoms[None, :]
    x[gone], w[gone] = 0.0, 0.0
    total = np.maximum(w.sum(axis=0), 1e-300)
    mean = (w * x).sum(axis=0) / total
    return mean, (w * (x - mean) ** 2).sum(axis=0) / total


def _spread(scenario: Scenario) -> float:
    """A length scale of the priors (largest mean gap plus spread), to start bracketing."""
    out = 0.0
    if scenario.kind == "joint":  # in the metric: sum over columns of (gap + spread) / w_k
        assert scenario.metric is not None
        units = np.array(scenario.metric.units)
        atoms = np.array(scenario.metric.missing)
        for _, _, q_i, q_j in scenario.iter_joint_pairs():
            (m_i, v_i), (m_j, v_j) = (_present_moments(q, atoms) for q in (q_i, q_j))
            per = np.abs(m_i - m_j) + np.sqrt(v_i) + np.sqrt(v_j)
            per[np.array(scenario.metric.categorical)] = 1.0  # Hamming: at most 1 per column
            out = max(out, float((per / units).sum()))
        return out if out > 0 else 1.0
    for _, _, p_i, p_j in scenario.iter_prior_pairs():
        gap = abs(p_i.mean - p_j.mean) + math.sqrt(p_i.variance) + math.sqrt(p_j.variance)
        out = max(out, gap)
    return out if out > 0 else 1.0
