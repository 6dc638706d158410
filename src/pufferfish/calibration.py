"""Calibration of Laplace noise for discrete priors: l1, Kantorovich, relaxed and optimal.

Each calibrator returns the Laplace scale ``theta`` (noise variance ``2 theta^2``) that makes
``Y = X + Laplace(theta)`` (eps, S)-pufferfish private for every pair and prior of a
:class:`~pufferfish.priors.Scenario`, and checks it against the exact privacy loss of SPEC 2.1
before returning it (``Calibration.check``). A scale that fails the check after a bounded move to
the safe side raises :class:`PrivacyCheckError`: that would be a bug or a false theorem.

===============  ====================================================  ======================
mechanism        scale                                                 source
===============  ====================================================  ======================
``l1``           ``max |x - x'|`` over both alphabets, / eps           seed 001 eq (26)
``kantorovich``  ``max |x - x'|`` over the Kantorovich plan, / eps     seed 002 Lemma 1;
                                                                       seed 000 Prop 1-2;
                                                                       seed 001 eq (4)
``relaxed``      largest root over plan columns and rows of            seed 002 Thm 2
                 ``sum pi(x, x') (e^{|x - x'|/theta} - e^eps) = 0``    (14a, 14b); seed 001
                                                                       Prop 3.2-3.3, Alg 1
``optimal``      smallest theta whose exact loss is <= eps             SPEC sec 2.1
===============  ====================================================  ======================

Always ``optimal <= relaxed <= kantorovich <= l1``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import brentq
from scipy.special import logsumexp

from ._checks import check_epsilon, check_epsilons
from .loss import PrivacyLoss, privacy_loss
from .priors import Scenario
from .transport import TransportPlan, kantorovich_plan

#: Names of the calibrators, from most to least noise.
MECHANISMS: tuple[str, ...] = ("l1", "kantorovich", "relaxed", "optimal")

#: Relative steps by which a scale that fails the exact check is moved up before giving up.
_NUDGES = (0.0, 1e-12, 1e-11, 1e-10, 1e-9, 1e-8, 1e-7, 1e-6)


def _num(x: float) -> str:
    """Short text of a number for messages (``g`` format, 10 significant digits)."""
    return f"{float(x):.10g}"


class PrivacyCheckError(RuntimeError):
    """A calibrated scale failed the exact privacy-loss check (a bug or a false theorem)."""


@dataclass(frozen=True)
class RootFinding:
    """Convergence data of the root finds behind a scale.

    Attributes
    ----------
    method : str
        ``"brentq"`` (scipy.optimize.brentq).
    variable : str
        What was solved for: ``"t = exp(1/theta)"`` (relaxed) or ``"log theta"`` (optimal).
    conditions : int
        Number of conditions examined (relaxed: plan rows and columns over all pairs and priors;
        optimal: 1). The relaxed calibrator bounds every condition's root by a vectorised
        bisection and runs brentq only where the bound can decide the scale.
    solves : int
        Number of brentq root finds.
    iterations : int
        Total iterations over all solves.
    function_calls : int
        Total function evaluations over all solves.
    converged : bool
        Whether every solve converged.
    bracket : (float, float)
        Scale bracket ``(theta_low, theta_high)`` of the deciding solve.
    """

    method: str
    variable: str
    conditions: int
    solves: int
    iterations: int
    function_calls: int
    converged: bool
    bracket: tuple[float, float]


@dataclass(frozen=True)
class Calibration:
    """A calibrated Laplace scale and its exact privacy check.

    Attributes
    ----------
    mechanism : str
        One of :data:`MECHANISMS`.
    epsilon : float
        Target privacy budget (nats, > 0).
    scale : float
        Laplace scale ``theta >= 0`` in the unit of the released column.
    checked_loss : float
        Exact privacy loss at ``scale`` (SPEC 2.1), ``<= epsilon`` (with its rounding bound).
    check : PrivacyLoss
        The full check: worst prior, pair, released value, rounding bound, every pair's loss.
    prior, pair :
        The prior and pair that decided the scale (for ``optimal``: the binding pair of the check).
    decided_by : str
        What in that pair decided it, e.g. ``"plan atom 1.0 -> 3.0"`` or ``"column x' = 1.0"``.
    root : RootFinding or None
        Convergence data where a root finder ran.
    safety_step : float
        Relative amount by which the scale was moved up to pass the check (0 if none).
    noiseless : bool
        ``True`` when ``scale == 0``: the priors are already eps-indistinguishable and the data
        can be released without noise. This holds only if the priors are right.
    """

    mechanism: str
    epsilon: float
    scale: float
    checked_loss: float
    check: PrivacyLoss
    prior: str
    pair: tuple[str, str]
    decided_by: str
    root: RootFinding | None
    safety_step: float
    noiseless: bool

    @property
    def variance(self) -> float:
        """Noise variance ``2 theta^2`` (the mean squared error of the release, seed 001 eq 3)."""
        return 2.0 * self.scale**2

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary."""
        out: dict[str, Any] = {
            "mechanism": self.mechanism,
            "epsilon": self.epsilon,
            "scale": self.scale,
            "variance": self.variance,
            "checked_loss": self.checked_loss,
            "check_error_bound": self.check.error_bound,
            "check_worst_y": self.check.worst_y,
            "check_pair": list(self.check.pair),
            "check_prior": self.check.prior,
            "prior": self.prior,
            "pair": list(self.pair),
            "decided_by": self.decided_by,
            "safety_step": self.safety_step,
            "noiseless": self.noiseless,
            "root": None,
        }
        if self.root is not None:
            out["root"] = {
                "method": self.root.method,
                "variable": self.root.variable,
                "conditions": self.root.conditions,
                "solves": self.root.solves,
                "iterations": self.root.iterations,
                "function_calls": self.root.function_calls,
                "converged": self.root.converged,
                "bracket": list(self.root.bracket),
            }
        return out


# ---------------------------------------------------------------------------------------------
# Verification (calibrate, then verify and move to the safe side)


def _verified(
    scenario: Scenario,
    mechanism: str,
    epsilon: float,
    scale: float,
    *,
    prior: str,
    pair: tuple[str, str],
    decided_by: str,
    root: RootFinding | None = None,
    known: PrivacyLoss | None = None,
) -> Calibration:
    """Check ``scale`` exactly; move it up by at most a relative 1e-6 to pass, else raise.

    ``known``, when given, is the exact check already computed at some scale (reused if it is
    ``scale``).
    """
    for step in _NUDGES:
        trial = scale * (1.0 + step)
        check = known if known is not None and known.scale == trial else privacy_loss(scenario, trial)
        if check.satisfies(epsilon):
            return Calibration(
                mechanism=mechanism,
                epsilon=epsilon,
                scale=trial,
                checked_loss=check.loss,
                check=check,
                prior=prior,
                pair=pair,
                decided_by=decided_by,
                root=root,
                safety_step=step,
                noiseless=trial == 0.0,
            )
        if scale == 0.0:
            break
    raise PrivacyCheckError(
        f"{mechanism} scale {scale!r} at epsilon {epsilon!r} fails the exact privacy check: "
        f"loss {check.loss!r} (+ rounding bound {check.error_bound:.3g}) > epsilon for pair "
        f"{check.pair} of prior {check.prior!r} at y = {check.worst_y!r}"
    )


# ---------------------------------------------------------------------------------------------
# l1 and Kantorovich


def calibrate_l1(scenario: Scenario, epsilon: float) -> Calibration:
    """The l1-sensitivity scale ``max |x - x'| / eps`` over both priors' alphabets.

    Parameters
    ----------
    scenario : Scenario
        Pairs and discrete priors.
    epsilon : float
        Privacy budget, finite and > 0.

    Returns
    -------
    Calibration
        With the exact check at the returned scale.

    Raises
    ------
    ValueError
        If ``epsilon`` is not finite and > 0.
    PrivacyCheckError
        If the scale fails the exact check (it cannot, by seed 001 eq 26).

    Notes
    -----
    Seed 001 eq (26): ``theta_l = max_{(x, x') in X^2} |x - x'| / eps`` over the alphabet ``X``;
    here the alphabet of a pair is the declared support of each prior (zero-probability points
    included), so ``max(max X_i - min X_j, max X_j - min X_i)``. Equal to the Laplace mechanism
    of differential privacy calibrated to the query's sensitivity.
    """
    epsilon = check_epsilon(epsilon)
    best = (-1.0, "", ("", ""), "")
    for prior, pair, p_i, p_j in scenario.iter_pairs():
        right = float(p_j.support[-1] - p_i.support[0])
        left = float(p_i.support[-1] - p_j.support[0])
        if right >= left:
            d, how = right, f"{_num(p_i.support[0])} -> {_num(p_j.support[-1])}"
        else:
            d, how = left, f"{_num(p_i.support[-1])} -> {_num(p_j.support[0])}"
        d = max(d, 0.0)
        if d > best[0]:
            best = (d, prior.name, pair, f"alphabet extremes {how} (distance {_num(d)})")
    d, prior_name, pair, how = best
    return _verified(scenario, "l1", epsilon, d / epsilon, prior=prior_name, pair=pair, decided_by=how)


def calibrate_kantorovich(scenario: Scenario, epsilon: float) -> Calibration:
    """The Kantorovich (W1) mechanism: the plan's largest displacement over eps.

    Parameters
    ----------
    scenario : Scenario
        Pairs and discrete priors.
    epsilon : float
        Privacy budget, finite and > 0.

    Returns
    -------
    Calibration
        With the exact check at the returned scale.

    Raises
    ------
    ValueError
        If ``epsilon`` is not finite and > 0.
    PrivacyCheckError
        If the scale fails the exact check (it cannot, by seed 002 Lemma 1).

    Notes
    -----
    ``theta = max_{rho, (s_i, s_j)} max_{(x, x') in supp(pi*)} |x - x'| / eps`` with ``pi*`` the
    Kantorovich optimal transport plan (seed 002 Lemma 1; seed 000 Prop 1-2 and eq 28; seed 001
    eq 4). In 1-D this equals the W-infinity mechanism of Song et al. (2017).
    """
    epsilon = check_epsilon(epsilon)
    best = (-1.0, "", ("", ""), "")
    for prior, pair, p_i, p_j in scenario.iter_pairs():
        plan = kantorovich_plan(p_i, p_j)
        k = int(np.argmax(plan.displacement))
        d = float(plan.displacement[k])
        if d > best[0]:
            best = (d, prior.name, pair, f"plan atom {_num(plan.source[k])} -> {_num(plan.target[k])}")
    d, prior_name, pair, how = best
    return _verified(
        scenario, "kantorovich", epsilon, d / epsilon, prior=prior_name, pair=pair, decided_by=how
    )


# ---------------------------------------------------------------------------------------------
# Relaxed


@dataclass(frozen=True)
class _GroupRoot:
    scale: float
    iterations: int
    function_calls: int
    converged: bool
    bracket: tuple[float, float]
    solved: bool


def _relaxed_group_scale(
    log_mass: np.ndarray,
    distance: np.ndarray,
    epsilon: float,
    bracket: tuple[float, float] | None = None,
) -> _GroupRoot:
    """Smallest theta with ``sum pi (e^{d/theta} - e^eps) <= 0`` for one plan row or column.

    Solved for ``t = e^{1/theta}`` with brentq on ``log sum pi t^d - eps - log sum pi``, which is
    increasing in ``t > 1``. Bracket from seed 001 eq (14)-(15), generalised to real distances:
    ``Phi = log((e^eps P - pi_0)/(P - pi_0))`` with ``pi_0`` the mass at distance 0, and
    ``t in [e^{Phi/d_max}, e^{Phi/d_min}]`` (``theta in [d_min/Phi, d_max/Phi]``). The returned
    theta is on the safe side: the condition holds at it. ``bracket = (log t_lo, log t_hi)``, when
    given, is a narrower bracket already known to hold the root (from the vectorised screening).
    """
    off = distance > 0
    if not off.any():
        return _GroupRoot(0.0, 0, 0, True, (0.0, 0.0), False)
    log_total = float(logsumexp(log_mass))
    log_off = float(logsumexp(log_mass[off]))
    log_diag = float(logsumexp(log_mass[~off])) if (~off).any() else -math.inf
    # Phi = log(e^eps P - pi_0) - log(P - pi_0), in log space.
    log_num = log_total + epsilon + math.log1p(-math.exp(min(log_diag - log_total - epsilon, 0.0)))
    phi = log_num - log_off
    d_min = float(distance[off].min())
    d_max = float(distance[off].max())
    theta_hi = d_max / phi  # condition holds here (seed 001 Prop 3.3 (1))
    if d_min == d_max:
        return _GroupRoot(theta_hi, 0, 0, True, (theta_hi, theta_hi), False)
    log_t_lo, log_t_hi = (phi / d_max, phi / d_min) if bracket is None else bracket
    theta_lo = 1.0 / log_t_hi
    theta_hi = min(theta_hi, 1.0 / log_t_lo)
    target = epsilon + log_total

    def g_log_t(log_t: float) -> float:
        return float(logsumexp(log_mass + distance * log_t)) - target

    # brentq runs in t = e^{1/theta} (seed 001 Alg 1) unless t overflows float64, then in log t.
    in_t = log_t_hi < 700.0
    to_log_t: Callable[[float], float] = math.log if in_t else float

    def g(x: float) -> float:
        return g_log_t(to_log_t(x))

    a, b = (math.exp(log_t_lo), math.exp(log_t_hi)) if in_t else (log_t_lo, log_t_hi)

    # In exact arithmetic g(a) <= 0 <= g(b); a sign that rounding flips puts the root at that
    # end of the bracket (the exact check verifies the scale either way).
    if g(a) >= 0.0:
        return _GroupRoot(theta_hi, 0, 1, True, (theta_lo, theta_hi), False)
    if g(b) <= 0.0:
        return _GroupRoot(theta_lo, 0, 2, True, (theta_lo, theta_hi), False)
    root, info = brentq(g, a, b, xtol=1e-15, rtol=1e-15, full_output=True, disp=False)
    # Safe side: the largest t <= root with g(t) <= 0, i.e. the smallest passing theta.
    x_safe, steps = float(root), 1
    if g(x_safe) > 0.0:
        lo, hi = a, x_safe  # g(lo) < 0 < g(hi)
        while steps < 200:
            mid = 0.5 * (lo + hi)
            if mid in (lo, hi):
                break
            steps += 1
            if g(mid) <= 0.0:
                lo = mid
            else:
                hi = mid
        x_safe = lo
    u_safe = to_log_t(x_safe)
    theta = min(1.0 / u_safe, theta_hi) if u_safe > 0.0 else theta_hi
    return _GroupRoot(
        theta,
        int(info.iterations),
        int(info.function_calls) + steps + 1,
        bool(info.converged),
        (theta_lo, theta_hi),
        True,
    )


def _relaxed_plan_scale(plan: TransportPlan, epsilon: float) -> tuple[float, str, _Tally]:
    """Relaxed scale of one transport plan: max over its columns (14a) and rows (14b).

    Parameters
    ----------
    plan : TransportPlan
        Kantorovich plan of ``(P(.|s_i), P(.|s_j))``.
    epsilon : float
        Privacy budget, > 0.

    Returns
    -------
    scale : float
        ``max`` over columns ``x'`` and rows ``x`` of the smallest theta satisfying
        ``sum_x pi(x, x') (e^{|x - x'|/theta} - e^eps) <= 0`` (column) and
        ``sum_{x'} pi(x, x') (e^{|x - x'|/theta} - e^eps) <= 0`` (row).
    decided_by : str
        Which row or column gave the maximum.
    tally : _Tally
        Convergence data of the root finds.

    Notes
    -----
    Seed 002 Thm 2, eq (14a)-(14b); seed 001 Prop 3.2, eq (11)-(12), Alg 1. Seed 001 writes only
    the column condition (11); the row condition (12) is the other direction of eq (1) and is
    needed too.
    """
    log_mass = np.log(plan.mass)
    distance = plan.displacement
    tally = _Tally()
    screens = []
    for label, keys in (("column x'", plan.target), ("row x", plan.source)):
        order = np.argsort(keys, kind="stable")
        sorted_keys = keys[order]
        starts = np.flatnonzero(np.concatenate([[True], np.diff(sorted_keys) != 0]))
        lower, upper, u_lo, u_hi, open_ = _screen_groups(log_mass[order], distance[order], starts, epsilon)
        screens.append((label, order, starts, sorted_keys[starts], lower, upper, u_lo, u_hi, open_))
    # Every group's root lies in [lower, upper]; the largest root is at least max(lower), so only
    # groups whose upper bound reaches it can decide the scale: solve those with brentq.
    floor = max(float(sc[4].max()) for sc in screens)
    best, how = 0.0, "no off-diagonal mass"
    for label, order, starts, keys, _, upper, u_lo, u_hi, open_ in screens:
        ends = np.append(starts[1:], order.size)
        tally.groups += int(starts.size)
        for g in np.flatnonzero((upper >= floor) & (upper > 0)).tolist():
            idx = order[starts[g] : ends[g]]
            bracket = (float(u_lo[g]), float(u_hi[g])) if open_[g] else None
            res = _relaxed_group_scale(log_mass[idx], distance[idx], epsilon, bracket)
            tally.add(res)
            if res.scale > best:
                best, how = res.scale, f"{label} = {_num(keys[g])}"
                tally.deciding_bracket = res.bracket
    return best, how, tally


def _screen_groups(
    log_mass: np.ndarray, distance: np.ndarray, starts: np.ndarray, epsilon: float, steps: int = 60
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Brackets of every group's relaxed root, narrowed for all groups at once in ``u = log t``.

    Atoms are sorted by group; ``starts`` are the first atom of each group. Returns ``lower`` and
    ``upper`` bounds on each group's theta (equal for a closed-form group, 0 for a group without
    off-diagonal mass) and the bracket ``[u_lo, u_hi]`` in ``log t`` (``g(u_lo) <= 0 <= g(u_hi)``
    up to rounding), and which groups need a root find (off-diagonal atoms at more than one
    distance).

    Notes
    -----
    ``g(u) = log sum pi e^{d u} - eps - log sum pi`` is increasing and convex in ``u = 1/theta``
    (a log-sum-exp of affine functions), so a Newton step from the upper end lands at or above the
    root and the chord between the ends at or below it. Each pass evaluates both candidates for
    every group (O(K) for K atoms, vectorised by segment reductions) and keeps each by the sign of
    ``g`` (a candidate that rounding puts outside the bracket moves 1/64 of the width in from that
    end). The brackets shrink superlinearly. Only groups that can still decide the maximum are
    refined (their upper bound reaches the largest lower bound of any group; the others keep the
    bracket they have, which already excludes them), and the loop stops when every such bracket
    is within 1e-10 relative (or ``g`` is exactly 0 at its lower end) or after ``steps`` passes;
    brentq then solves the few groups left that can decide.
    """
    n_groups = starts.size
    group = np.repeat(np.arange(n_groups), np.diff(np.append(starts, log_mass.size)))
    off = distance > 0

    def seg_lse(values: np.ndarray) -> np.ndarray:
        top = np.maximum.reduceat(values, starts)
        shift = np.where(np.isfinite(top), top, 0.0)
        with np.errstate(divide="ignore"):
            return np.log(np.add.reduceat(np.exp(values - shift[group]), starts)) + shift

    log_total = seg_lse(log_mass)
    log_off = seg_lse(np.where(off, log_mass, -np.inf))
    log_diag = seg_lse(np.where(off, -np.inf, log_mass))
    has_off = np.isfinite(log_off)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_num = log_total + epsilon + np.log1p(-np.exp(np.minimum(log_diag - log_total - epsilon, 0.0)))
        phi = log_num - log_off
        d_min = np.minimum.reduceat(np.where(off, distance, np.inf), starts)
        d_max = np.maximum.reduceat(np.where(off, distance, 0.0), starts)
        u_lo = np.where(has_off, phi / d_max, 0.0)
        u_hi = np.where(has_off, phi / d_min, 0.0)
    target = epsilon + log_total
    open_ = has_off & (d_min < d_max)
    lo, hi = u_lo.copy(), u_hi.copy()

    sizes = np.diff(np.append(starts, log_mass.size))

    def g_and_slope(u: np.ndarray, sel: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``g`` and ``g'`` at ``u`` (one value per selected group) for the groups ``sel``."""
        atoms = np.repeat(sel, sizes)
        lm, dist, n_sel = log_mass[atoms], distance[atoms], int(np.count_nonzero(sel))
        sub_sizes = sizes[sel]
        sub_starts = np.concatenate([[0], np.cumsum(sub_sizes)[:-1]])
        values = lm + dist * np.repeat(u, sub_sizes)
        top = np.maximum.reduceat(values, sub_starts)
        shift = np.where(np.isfinite(top), top, 0.0)
        weight = np.exp(values - np.repeat(shift, sub_sizes))
        total = np.add.reduceat(weight, sub_starts)
        assert total.size == n_sel
        with np.errstate(divide="ignore", invalid="ignore"):
            g = np.log(total) + shift - target[sel]
            return g, np.add.reduceat(weight * dist, sub_starts) / total

    def can_decide() -> np.ndarray:
        """Groups whose root may still be the largest: upper theta >= every group's lower theta."""
        with np.errstate(divide="ignore"):
            lower_theta = np.where(open_, 1.0 / hi, np.where(has_off, d_max / phi, 0.0))
            upper_theta = np.where(open_, 1.0 / lo, lower_theta)
        floor = float(lower_theta.max()) if n_groups else 0.0
        return open_ & (upper_theta * (1 + 1e-9) >= floor * (1 - 1e-9))

    first = can_decide()
    if first.any():
        g_lo, _ = g_and_slope(lo[first], first)
        g_hi, slope_hi_first = g_and_slope(hi[first], first)
        glo, ghi, slope_hi = np.zeros(n_groups), np.zeros(n_groups), np.ones(n_groups)
        glo[first], ghi[first], slope_hi[first] = np.minimum(g_lo, 0.0), np.maximum(g_hi, 0.0), slope_hi_first
        for _ in range(steps):
            # Narrow to 1e-10 relative (brentq finishes the groups that can decide the maximum);
            # g(lo) == 0 in floating point means lo is the root to working precision.
            active = first & can_decide() & (hi - lo > 1e-10 * hi) & (glo < 0.0)
            if not active.any():
                break
            a_lo, a_hi, a_glo, a_ghi, a_slope = (
                lo[active],
                hi[active],
                glo[active],
                ghi[active],
                slope_hi[active],
            )
            with np.errstate(divide="ignore", invalid="ignore"):
                newton = a_hi - a_ghi / a_slope
                chord = a_lo - a_glo * (a_hi - a_lo) / (a_ghi - a_glo)
            for cand in (newton, chord):
                # A candidate at or beyond an end (rounding near a root there) moves 1/64 of the
                # width in from that end; a non-finite one bisects.
                step = (a_hi - a_lo) / 64.0
                cand = np.where(cand <= a_lo, a_lo + step, np.where(cand >= a_hi, a_hi - step, cand))
                cand = np.where(np.isfinite(cand), cand, 0.5 * (a_lo + a_hi))
                g_c, slope_c = g_and_slope(cand, active)
                below, above = g_c <= 0.0, g_c > 0.0
                a_lo, a_glo = np.where(below, cand, a_lo), np.where(below, g_c, a_glo)
                a_hi, a_ghi = np.where(above, cand, a_hi), np.where(above, g_c, a_ghi)
                a_slope = np.where(above, slope_c, a_slope)
            lo[active], hi[active], glo[active], ghi[active], slope_hi[active] = (
                a_lo,
                a_hi,
                a_glo,
                a_ghi,
                a_slope,
            )
    with np.errstate(divide="ignore"):
        lower = np.where(has_off, 1.0 / hi, 0.0)
        upper = np.where(has_off, 1.0 / lo, 0.0)
    closed = has_off & ~open_
    lower[closed] = upper[closed] = (d_max / phi)[closed]
    # Widen by a few ulps so rounding in the screen never excludes the deciding group.
    return lower * (1 - 1e-12), upper * (1 + 1e-12), lo, hi, open_


class _Tally:
    """Running totals of root-finding effort."""

    def __init__(self) -> None:
        self.groups = 0
        self.solves = 0
        self.iterations = 0
        self.function_calls = 0
        self.converged = True
        self.deciding_bracket: tuple[float, float] = (0.0, 0.0)

    def add(self, res: _GroupRoot) -> None:
        if res.solved:
            self.solves += 1
        self.iterations += res.iterations
        self.function_calls += res.function_calls
        self.converged = self.converged and res.converged

    def merge(self, other: _Tally) -> None:
        self.groups += other.groups
        self.solves += other.solves
        self.iterations += other.iterations
        self.function_calls += other.function_calls
        self.converged = self.converged and other.converged


def calibrate_relaxed(scenario: Scenario, epsilon: float) -> Calibration:
    """The relaxed Kantorovich mechanism: the largest root of the row and column conditions.

    Parameters
    ----------
    scenario : Scenario
        Pairs and discrete priors.
    epsilon : float
        Privacy budget, finite and > 0.

    Returns
    -------
    Calibration
        ``root`` holds the brentq convergence data summed over all rows and columns.

    Raises
    ------
    ValueError
        If ``epsilon`` is not finite and > 0.
    PrivacyCheckError
        If the scale fails the exact check (it cannot, by seed 002 Thm 2).

    Notes
    -----
    ``theta = max_{rho, (s_i, s_j)} max(max_{x'} theta_col(x'), max_x theta_row(x))`` where
    ``theta_col(x')`` is the root of ``sum_x pi*(x, x') (e^{|x - x'|/theta} - e^eps) = 0``
    (seed 002 Thm 2 eq 14a; seed 001 eq 11 and Prop 3.2) and ``theta_row(x)`` the root of the row
    sum (seed 002 eq 14b; seed 001 eq 12). Every root is first bracketed by seed 001 eq (14)-(15),
    generalised to real distances, and narrowed by a vectorised bisection over all rows and columns
    at once (O(K) per step for K plan atoms); the conditions whose bracket can still decide the
    maximum are then solved with ``scipy.optimize.brentq`` in ``t = e^{1/theta}`` (seed 001 Alg 1;
    in ``log t`` where ``t`` overflows) and returned on the safe side. A condition whose
    off-diagonal mass sits at a single distance ``d`` has the closed form ``d / Phi``.
    ``relaxed <= kantorovich`` always (seed 001 Thm 4.1).
    """
    epsilon = check_epsilon(epsilon)
    total = _Tally()
    best = (0.0, "", ("", ""), "no off-diagonal mass", (0.0, 0.0))
    first = True
    for prior, pair, p_i, p_j in scenario.iter_pairs():
        plan = kantorovich_plan(p_i, p_j)
        scale, how, tally = _relaxed_plan_scale(plan, epsilon)
        total.merge(tally)
        if first or scale > best[0]:
            best = (scale, prior.name, pair, how, tally.deciding_bracket)
            first = False
    scale, prior_name, pair, how, bracket = best
    root = RootFinding(
        method="brentq",
        variable="t = exp(1/theta)",
        conditions=total.groups,
        solves=total.solves,
        iterations=total.iterations,
        function_calls=total.function_calls,
        converged=total.converged,
        bracket=bracket,
    )
    return _verified(
        scenario, "relaxed", epsilon, scale, prior=prior_name, pair=pair, decided_by=how, root=root
    )


# ---------------------------------------------------------------------------------------------
# Optimal


def calibrate_optimal(scenario: Scenario, epsilon: float, *, upper: Calibration | None = None) -> Calibration:
    """The smallest Laplace scale whose exact privacy loss is at most eps.

    Parameters
    ----------
    scenario : Scenario
        Pairs and discrete priors.
    epsilon : float
        Privacy budget, finite and > 0.
    upper : Calibration, optional
        A passing calibration at the same ``epsilon`` to bracket from (default: the relaxed one).

    Returns
    -------
    Calibration
        The closest passing scale to the root of ``L(theta) = eps`` (the returned scale passes the
        exact check; any smaller scale found on the way did not), with brentq convergence data.
        ``scale == 0`` and ``noiseless`` when the priors themselves are eps-indistinguishable.

    Raises
    ------
    ValueError
        If ``epsilon`` is not finite and > 0, or ``upper`` is for another epsilon.
    PrivacyCheckError
        If no passing scale is found (a bug).

    Notes
    -----
    SPEC sec 2.1 (beyond the seed papers). ``L(theta)`` is non-increasing: ``Laplace(t2)`` is
    ``Laplace(t1)`` convolved with ``(t1/t2)^2 delta_0 + (1 - (t1/t2)^2) Laplace(t2)``, and
    convolution is post-processing. So ``{theta : L(theta) <= eps}`` is an interval
    ``[theta*, inf)``. It is bracketed by halving from the relaxed scale and solved with brentq on
    ``log theta``; the result is moved up to the nearest scale that passes the check (including
    its rounding bound) and never exceeds the bracketing scale.
    """
    epsilon = check_epsilon(epsilon)
    at_zero = privacy_loss(scenario, 0.0)
    if at_zero.satisfies(epsilon):
        return _verified(
            scenario,
            "optimal",
            epsilon,
            0.0,
            prior=at_zero.prior,
            pair=at_zero.pair,
            decided_by=f"prior log-ratio {_num(at_zero.loss)} <= epsilon: no noise needed",
        )
    if upper is None:
        upper = calibrate_relaxed(scenario, epsilon)
    elif upper.epsilon != epsilon:
        raise ValueError(f"upper must be calibrated at epsilon {epsilon!r}, got {upper.epsilon!r}")
    hi = upper.scale
    checks: dict[float, PrivacyLoss] = {}

    scale_of_log: dict[float, float] = {}  # exp(log(s)) may differ from s in the last ulp

    def check_at(scale: float) -> PrivacyLoss:
        if scale not in checks:
            checks[scale] = privacy_loss(scenario, scale)
            scale_of_log[math.log(scale)] = scale
        return checks[scale]

    def excess(log_scale: float) -> float:
        check = check_at(scale_of_log.get(log_scale, math.exp(log_scale)))
        return check.loss + check.error_bound - epsilon

    if hi > 0.0 and upper.check.scale == hi:
        checks[hi], scale_of_log[math.log(hi)] = upper.check, hi

    def fails(scale: float) -> bool:
        check = check_at(scale)
        return check.loss + check.error_bound > epsilon

    # Bracket from above. First jump to theta * L(theta) / eps (the root if L were proportional
    # to 1/theta, as it is for large theta), while that passes and cuts theta by a quarter; then
    # halve until a scale fails. Every evaluated scale that passes becomes the upper end, every
    # one that fails the lower end (L is non-increasing), so the heuristic cannot misplace the
    # root.
    lo = 0.0
    for _ in range(8):
        guess = hi * check_at(hi).loss / epsilon
        if not 0.0 < guess <= 0.75 * hi:
            break
        if fails(guess):
            lo = guess
            break
        hi = guess
    for _ in range(2000):
        if lo > 0.0:
            break
        if fails(hi / 2.0):
            lo = hi / 2.0
        else:
            hi = hi / 2.0
    else:  # pragma: no cover - L(theta) -> L(0) > eps as theta -> 0
        raise PrivacyCheckError("could not bracket the optimal scale from below")
    if fails(hi):  # pragma: no cover - hi passed the check
        raise PrivacyCheckError(f"bracketing scale {hi!r} fails the exact check")
    root, info = brentq(
        excess, math.log(lo), math.log(hi), xtol=1e-13, rtol=1e-15, full_output=True, disp=False
    )
    # Move up to the nearest passing scale, never above the passing end of the bracket.
    scale = hi
    for step in (0.0, 1e-13, 1e-12, 1e-11, 1e-10, 1e-9):
        trial = min(math.exp(root + step), hi)
        if not fails(trial):
            scale = trial
            break
    check = check_at(scale)
    rootdata = RootFinding(
        method="brentq",
        variable="log theta",
        conditions=1,
        solves=1,
        iterations=int(info.iterations),
        function_calls=len(checks),
        converged=bool(info.converged),
        bracket=(lo, hi),
    )
    return _verified(
        scenario,
        "optimal",
        epsilon,
        scale,
        prior=check.prior,
        pair=check.pair,
        decided_by=f"exact loss binding at y = {_num(check.worst_y)}",
        root=rootdata,
        known=check,
    )


# ---------------------------------------------------------------------------------------------
# Front doors


def calibrate(scenario: Scenario, epsilon: float, mechanism: str = "optimal") -> Calibration:
    """Calibrate Laplace noise with one mechanism.

    Parameters
    ----------
    scenario : Scenario
        Pairs and discrete priors.
    epsilon : float
        Privacy budget, finite and > 0.
    mechanism : {"l1", "kantorovich", "relaxed", "optimal"}
        The calibrator (see the module docstring).

    Returns
    -------
    Calibration

    Raises
    ------
    ValueError
        If ``epsilon`` is not finite and > 0 or ``mechanism`` is unknown.
    PrivacyCheckError
        If a scale fails the exact privacy check.
    """
    fn = {
        "l1": calibrate_l1,
        "kantorovich": calibrate_kantorovich,
        "relaxed": calibrate_relaxed,
        "optimal": calibrate_optimal,
    }.get(mechanism)
    if fn is None:
        raise ValueError(f"mechanism must be one of {', '.join(MECHANISMS)}, got {mechanism!r}")
    return fn(scenario, epsilon)


def compare(
    scenario: Scenario,
    epsilons: float | Iterable[float],
    mechanisms: Sequence[str] = MECHANISMS,
) -> tuple[Calibration, ...]:
    """Calibrate several mechanisms at several budgets.

    Parameters
    ----------
    scenario : Scenario
        Pairs and discrete priors.
    epsilons : float or iterable of float
        Privacy budgets, each finite and > 0.
    mechanisms : sequence of str
        Names from :data:`MECHANISMS` (default: all four).

    Returns
    -------
    tuple of Calibration
        Ordered by epsilon, then by ``mechanisms``.

    Raises
    ------
    ValueError
        On a bad epsilon or an unknown mechanism.
    """
    eps_list = check_epsilons([epsilons] if isinstance(epsilons, (int, float)) else epsilons)
    mechs = tuple(mechanisms)
    for m in mechs:
        if m not in MECHANISMS:
            raise ValueError(f"mechanism must be one of {', '.join(MECHANISMS)}, got {m!r}")
    if not mechs:
        raise ValueError("mechanisms needs at least one name, got none")
    out: list[Calibration] = []
    for eps in eps_list:
        done: dict[str, Calibration] = {}
        for m in mechs:
            if m == "optimal":
                relaxed = done.get("relaxed") or calibrate_relaxed(scenario, eps)
                done[m] = calibrate_optimal(scenario, eps, upper=relaxed)
            else:
                done[m] = calibrate(scenario, eps, m)
            out.append(done[m])
    return tuple(out)
