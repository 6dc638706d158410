"""Laplace calibration for multi-user summation queries (seed 000 sec 4).

Every calibrator returns a scale ``theta`` for the pair set of one target user and checks it
against the exact privacy loss (SPEC sec 2.1) of the query's two conditional distributions,
computed from the whole system. A scale that fails the check raises
:class:`~pufferfish.calibration.PrivacyCheckError`; a theorem whose scale failed would be a finding.

===============  =========================  ========================================================
mechanism        pair set                   scale (uses only the target user's data unless noted)
===============  =========================  ========================================================
``thm1``         ``ab``                     ``|a - b| / eps``, seed 000 Thm 1 eq (10)
``thm2``         ``a-bot``                  ``|a| / eps``, seed 000 Thm 2 eq (12)
``thm3-eq13``    ``P-bot``                  root of ``E_{P_i}[e^{|D_i|/theta}] = e^eps``, Thm 3 (13)
``thm3-eq14``    ``P-bot``                  ``max |t| / eps`` over ``supp P_i``, Thm 3 eq (14)
``eq15``         ``P-bot``, Bernoulli       ``1 / log((e^eps - (1 - p)) / p)``, eq (15)
``thm4``         ``P-Q``                    ``sup_t Delta*(t) / eps`` from ``F_P, F_Q``, Thm 4 (16-17)
``lemma1``       ``P-Q``, Bernoulli         ``1 / eps``, Lemma 1 eq (18)
``lemma2``       ``P-Q``, Bernoulli         eq (21); uses the other users' distribution
``kantorovich``  any                        seed 002 Lemma 1 on the query's conditionals
``relaxed``      any                        seed 002 Thm 2 on the query's conditionals
``optimal``      any                        smallest scale with exact loss <= eps (SPEC 2.1)
===============  =========================  ========================================================
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import brentq
from scipy.special import logsumexp

from ._checks import check_epsilon, check_epsilons
from .calibration import Calibration, PrivacyCheckError, RootFinding, _verified, calibrate, calibrate_optimal
from .loss import PrivacyLoss, privacy_loss
from .multiuser import (
    SYSTEM_PRIOR,
    MultiUserSystem,
    User,
    _check_fit,
    check_pair_set,
    others_distribution,
    own_pair,
    pair_scenario,
    secret_names,
)
from .priors import RELEASE_GRID, DiscretePrior, Scenario, to_release_grid
from .transport import max_displacement_from_cdfs

#: Calibrators of seed 000, by pair set.
THEOREMS: dict[str, tuple[str, ...]] = {
    "ab": ("thm1",),
    "a-bot": ("thm2",),
    "P-bot": ("thm3-eq13", "thm3-eq14", "eq15"),
    "P-Q": ("thm4", "lemma1", "lemma2"),
}
#: Calibrators that apply to any pair set, on the query's conditional distributions.
GENERAL: tuple[str, ...] = ("kantorovich", "relaxed", "optimal")
#: Every multi-user mechanism name.
MULTIUSER_MECHANISMS: tuple[str, ...] = (
    "thm1",
    "thm2",
    "thm3-eq13",
    "thm3-eq14",
    "eq15",
    "thm4",
    "lemma1",
    "lemma2",
    *GENERAL,
)

SOURCES: dict[str, str] = {
    "thm1": "seed 000 Thm 1 eq (10)",
    "thm2": "seed 000 Thm 2 eq (12)",
    "thm3-eq13": "seed 000 Thm 3 eq (13), brentq",
    "thm3-eq14": "seed 000 Thm 3 eq (14)",
    "eq15": "seed 000 eq (15) (Bernoulli)",
    "thm4": "seed 000 Thm 4 eq (16)-(17) (Delta* by the corrected Lemma 3 scan)",
    "lemma1": "seed 000 Lemma 1 eq (18) (Bernoulli)",
    "lemma2": "seed 000 Lemma 2 eq (21) (Bernoulli), as printed",
    "kantorovich": "seed 002 Lemma 1; seed 000 Prop 1 on the query's conditionals",
    "relaxed": "seed 002 Thm 2 (both conditions) on the query's conditionals",
    "optimal": "exact privacy loss, SPEC sec 2.1",
}


# ---------------------------------------------------------------------------------------------
# Results


@dataclass(frozen=True)
class TheoremScale:
    """A scale from a closed form of seed 000, before the exact check.

    Attributes
    ----------
    mechanism : str
        One of :data:`MULTIUSER_MECHANISMS` (a theorem).
    epsilon : float
        Target budget (nats, > 0).
    scale : float
        Laplace scale ``theta >= 0`` in the unit of the users' values.
    decided_by : str
        The quantity behind the scale, e.g. ``"|a - b| = 2"``.
    root : RootFinding or None
        Convergence data where a root finder ran (``thm3-eq13``).
    """

    mechanism: str
    epsilon: float
    scale: float
    decided_by: str
    root: RootFinding | None = None


@dataclass(frozen=True)
class MultiUserCalibration:
    """A calibrated scale for one user's pair set of a summation query, with its exact check.

    Attributes
    ----------
    user : str
        The target user ``i``.
    pair_set : str
        One of :data:`~pufferfish.multiuser.PAIR_SETS`.
    source : str
        Paper, theorem and equation of the mechanism.
    uses_other_users : bool
        Whether the scale itself depends on the other users (the check always does).
    calibration : Calibration
        The scale and its exact privacy check on the query's conditional distributions
        (``calibration.check``); ``calibration.mechanism`` is the mechanism name.
    """

    user: str
    pair_set: str
    source: str
    uses_other_users: bool
    calibration: Calibration

    @property
    def mechanism(self) -> str:
        """Mechanism name (see :data:`MULTIUSER_MECHANISMS`)."""
        return self.calibration.mechanism

    @property
    def epsilon(self) -> float:
        """Target budget (nats)."""
        return self.calibration.epsilon

    @property
    def scale(self) -> float:
        """Laplace scale ``theta`` (noise variance ``2 theta^2``)."""
        return self.calibration.scale

    @property
    def checked_loss(self) -> float:
        """Exact privacy loss of the query at :attr:`scale` (``<= epsilon``)."""
        return self.calibration.checked_loss

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary: ``mechanism``, ``epsilon``, ``scale``, ``checked_loss`` first."""
        inner = self.calibration.to_dict()
        out: dict[str, Any] = {
            "mechanism": self.mechanism,
            "epsilon": self.epsilon,
            "scale": self.scale,
            "checked_loss": self.checked_loss,
            "user": self.user,
            "pair_set": self.pair_set,
            "source": self.source,
            "uses_other_users": self.uses_other_users,
        }
        for key, value in inner.items():
            out.setdefault(key, value)
        return out


@dataclass(frozen=True)
class Skipped:
    """A mechanism left out of a comparison, with the reason.

    Attributes
    ----------
    mechanism : str
    epsilon : float
    reason : str
        Why it does not apply (e.g. ``"needs Bernoulli distributions"``) or why it failed the
        exact check (``"fails the exact privacy check: ..."``).
    delta : float
        The target delta of the comparison (0 for pure eps).
    """

    mechanism: str
    epsilon: float
    reason: str
    delta: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``scale`` is ``None``)."""
        return {
            "mechanism": self.mechanism,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "scale": None,
            "reason": self.reason,
        }


# ---------------------------------------------------------------------------------------------
# Closed forms of seed 000 (the target user's data only)


def _bernoulli(prior: DiscretePrior, what: str) -> float:
    """``P(D = 1)`` of a distribution on {0, 1}; ValueError naming ``what`` otherwise."""
    support = prior.support[prior.pmf > 0]
    if not np.all(np.isin(support, (0.0, 1.0))):
        raise ValueError(f"{what} must be Bernoulli (values in {{0, 1}}), got support {support.tolist()}")
    return float(prior.pmf[prior.support == 1.0].sum())


def thm1_scale(user: User, epsilon: float) -> TheoremScale:
    """Seed 000 Thm 1 eq (10): ``theta = |a - b| / eps`` for the pair ``(s_{a,i}, s_{b,i})``.

    Parameters
    ----------
    user : User
        With ``values = (a, b)``, ``a != b``.
    epsilon : float
        Budget, finite and > 0.

    Returns
    -------
    TheoremScale

    Raises
    ------
    ValueError
        If ``epsilon`` is bad or the user has no ``values = (a, b)``.

    Notes
    -----
    The exact loss of this pair is ``|a - b| / theta`` whatever the other users (a shift; the
    ratio reaches ``e^{|a-b|/theta}`` beyond the ends of the support), so Thm 1 is optimal.
    """
    epsilon = check_epsilon(epsilon)
    _check_fit(user, "ab")
    assert user.values is not None
    d = abs(user.values[0] - user.values[1])
    return TheoremScale("thm1", epsilon, d / epsilon, f"|a - b| = {d:g}")


def thm2_scale(user: User, epsilon: float) -> TheoremScale:
    """Seed 000 Thm 2 eq (12): ``theta = |a| / eps`` for the pair ``(s_{a,i}, s_{bot,i})``.

    Parameters
    ----------
    user : User
        With ``values = (a,)`` or ``(a, b)`` (``a`` is used).
    epsilon : float
        Budget, finite and > 0.

    Returns
    -------
    TheoremScale

    Raises
    ------
    ValueError
        If ``epsilon`` is bad or the user has no ``values``.

    Notes
    -----
    Remark 1: absence is reporting 0, so this is Thm 1 with ``b = 0`` (and also optimal).
    """
    epsilon = check_epsilon(epsilon)
    _check_fit(user, "a-bot")
    assert user.values is not None
    a = abs(user.values[0])
    return TheoremScale("thm2", epsilon, a / epsilon, f"|a| = {a:g}")


def thm3_eq13_scale(user: User, epsilon: float) -> TheoremScale:
    """Seed 000 Thm 3 eq (13): the ``theta`` with ``E_{P_i}[e^{|D_i|/theta}] = e^eps``.

    Parameters
    ----------
    user : User
        Its ``prior`` is ``P_i`` (any real support).
    epsilon : float
        Budget, finite and > 0.

    Returns
    -------
    TheoremScale
        ``theta = 1/u`` where ``u`` solves ``log E[e^{u|D|}] = eps`` (scipy ``brentq`` on ``u``,
        then the safe side: the returned ``u`` satisfies ``log E[e^{u|D|}] <= eps``). ``0`` when
        ``D_i = 0`` almost surely.

    Raises
    ------
    ValueError
        If ``epsilon`` is bad.

    Notes
    -----
    ``g(u) = log E[e^{u|D|}]`` is convex and increasing from ``g(0) = 0``, so the root is unique;
    it lies in ``[eps / max|D|, eps / E|D|]`` (``u|D| <= u max|D|`` and Jensen), so the scale lies
    between ``E|D| / eps`` and the eq (14) scale ``max|D| / eps``.
    For one-signed ``D_i`` this is exactly the optimal scale: beyond the end of the support the
    query's density ratio is ``E[e^{D_i/theta}]`` whatever the other users.
    """
    epsilon = check_epsilon(epsilon)
    p = user.prior
    mask = p.pmf > 0
    mags = np.abs(p.support[mask])
    logp = np.log(p.pmf[mask])
    top = float(mags.max())
    if top == 0.0:
        return TheoremScale("thm3-eq13", epsilon, 0.0, "D_i = 0 almost surely")

    def g(u: float) -> float:
        return float(logsumexp(logp + u * mags)) - epsilon

    # u |D| <= u max|D| gives the lower end (where g <= 0: the eq (14) scale); Jensen,
    # log E e^{u|D|} >= u E|D|, gives the upper end (g >= 0).
    u_lo = epsilon / top
    u_hi = epsilon / float(np.dot(np.exp(logp), mags))
    while g(u_hi) < 0:  # rounding; the bound is exact in real arithmetic
        u_hi *= 1.0 + 1e-9
    if g(u_lo) >= 0.0:  # |D| constant: the root is the lower end
        u, iterations, calls, converged = u_lo, 0, 1, True
    else:
        u, info = brentq(
            g, u_lo, u_hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, full_output=True, disp=False
        )
        iterations, calls, converged = int(info.iterations), int(info.function_calls), bool(info.converged)
    while g(u) > 0.0:
        u = math.nextafter(u, 0.0)
    root = RootFinding(
        method="brentq",
        variable="u = 1/theta",
        conditions=1,
        solves=1,
        iterations=iterations,
        function_calls=calls,
        converged=converged,
        bracket=(1.0 / u_hi, 1.0 / u_lo),
    )
    return TheoremScale(
        "thm3-eq13", epsilon, 1.0 / u, f"E[e^(|D|/theta)] = e^eps at 1/theta = {u:.10g}", root
    )


def thm3_eq14_scale(user: User, epsilon: float) -> TheoremScale:
    """Seed 000 Thm 3 eq (14): ``theta = max_{t in supp P_i} |t| / eps``.

    Parameters
    ----------
    user : User
    epsilon : float
        Budget, finite and > 0.

    Returns
    -------
    TheoremScale

    Raises
    ------
    ValueError
        If ``epsilon`` is bad.
    """
    epsilon = check_epsilon(epsilon)
    top = float(np.abs(user.prior.positive_support()).max())
    return TheoremScale("thm3-eq14", epsilon, top / epsilon, f"max |t| = {top:g}")


def eq15_scale(user: User, epsilon: float) -> TheoremScale:
    """Seed 000 eq (15): ``theta = 1 / log((e^eps - (1 - p)) / p)`` for ``D_i ~ Bernoulli(p)``.

    Parameters
    ----------
    user : User
        ``prior`` on {0, 1}.
    epsilon : float
        Budget, finite and > 0.

    Returns
    -------
    TheoremScale
        ``0`` when ``p = 0``.

    Raises
    ------
    ValueError
        If ``epsilon`` is bad or ``P_i`` is not Bernoulli.

    Notes
    -----
    Eq (13) solved in closed form: ``p e^{1/theta} + 1 - p = e^eps``. Computed as
    ``1 / (log(expm1(eps) + p) - log p)`` to keep precision for small ``eps``.
    """
    epsilon = check_epsilon(epsilon)
    p = _bernoulli(user.prior, f"P of user {user.name!r} (eq15)")
    if p == 0.0:
        return TheoremScale("eq15", epsilon, 0.0, "p = 0")
    u = math.log(math.expm1(epsilon) + p) - math.log(p)
    return TheoremScale("eq15", epsilon, 1.0 / u, f"p = {p:.10g}")


def thm4_scale(user: User, epsilon: float) -> TheoremScale:
    """Seed 000 Thm 4 eq (16)-(17): ``theta = sup_t Delta*(t) / eps`` from ``F_{P_i}, F_{Q_i}``.

    Parameters
    ----------
    user : User
        With an ``alternative`` ``Q_i``.
    epsilon : float
        Budget, finite and > 0.

    Returns
    -------
    TheoremScale

    Raises
    ------
    ValueError
        If ``epsilon`` is bad or the user has no alternative.

    Notes
    -----
    ``sup_t Delta*(t)`` is the largest displacement of the Kantorovich plan between ``P_i`` and
    ``Q_i`` (Lemma 3). Eq (17) repeats the case analysis of Lemma 3 eq (25), whose third case
    misses leftward moves; :func:`~pufferfish.transport.max_displacement_from_cdfs` is the
    corrected scan (tested against the plan).
    """
    epsilon = check_epsilon(epsilon)
    _check_fit(user, "P-Q")
    assert user.alternative is not None
    d = max_displacement_from_cdfs(user.prior, user.alternative)
    return TheoremScale("thm4", epsilon, d / epsilon, f"sup Delta*(t) = {d:g}")


def lemma1_scale(user: User, epsilon: float) -> TheoremScale:
    """Seed 000 Lemma 1 eq (18): ``theta = 1 / eps`` for Bernoulli ``P_i`` and ``Q_i``.

    Parameters
    ----------
    user : User
        Bernoulli ``prior`` and ``alternative``.
    epsilon : float
        Budget, finite and > 0.

    Returns
    -------
    TheoremScale

    Raises
    ------
    ValueError
        If ``epsilon`` is bad or a distribution is not Bernoulli.
    """
    epsilon = check_epsilon(epsilon)
    _check_fit(user, "P-Q")
    assert user.alternative is not None
    _bernoulli(user.prior, f"P of user {user.name!r} (lemma1)")
    _bernoulli(user.alternative, f"Q of user {user.name!r} (lemma1)")
    return TheoremScale("lemma1", epsilon, 1.0 / epsilon, "Bernoulli P, Q: sup Delta* = 1")


def lemma2_scale(user: User, epsilon: float, others: DiscretePrior) -> TheoremScale:
    """Seed 000 Lemma 2 eq (21), as printed: the relaxed (column) condition for Bernoulli users.

    Parameters
    ----------
    user : User
        Bernoulli ``prior`` (``p = P_i(1)``) and ``alternative`` (``q = Q_i(1)``), ``p != q``.
    epsilon : float
        Budget, finite and > 0.
    others : DiscretePrior
        Distribution of the other users' sum ``f(D_{-i})`` on integers
        (:func:`~pufferfish.multiuser.others_distribution`).

    Returns
    -------
    TheoremScale
        ``theta = sup_x 1 / log(e^eps + (e^eps - 1) psi(x))`` with, for ``r = Pr(f(D_{-i}) = .)``,
        ``psi(x) = ((1 - q) r(x)/r(x-1) + p) / (q - p)`` if ``p < q`` and
        ``psi(x) = ((1 - p) r(x)/r(x-1) + q) / (p - q)`` if ``p > q``, over ``x`` with
        ``r(x - 1) > 0`` (the plan columns ``x' = x`` of the proof).

    Raises
    ------
    ValueError
        If ``epsilon`` is bad, a distribution is not Bernoulli, ``p == q``, or ``others`` is not
        on the integers.

    Notes
    -----
    Eq (21) keeps only the column condition (20) of the relaxed mechanism. The proof's plan
    masses for ``p > q`` give ``pi(x'+1, x') = (p - q) r(x')``, not ``(p - q) r(x' - 1)``; the
    formula is implemented as printed and checked exactly like every other scale.
    """
    epsilon = check_epsilon(epsilon)
    _check_fit(user, "P-Q")
    assert user.alternative is not None
    p = _bernoulli(user.prior, f"P of user {user.name!r} (lemma2)")
    q = _bernoulli(user.alternative, f"Q of user {user.name!r} (lemma2)")
    if p == q:
        raise ValueError(f"lemma2 needs p != q for user {user.name!r}, got p = q = {p!r}")
    xs = others.support
    if not np.all(xs == np.round(xs)):
        raise ValueError("lemma2 needs the other users' sum on the integers")
    assert others.log_pmf is not None
    lo, hi = int(xs[0]), int(xs[-1])
    log_r = np.full(hi - lo + 3, -np.inf)  # r on lo-1 .. hi+1
    log_r[xs.astype(np.int64) - lo + 1] = others.log_pmf
    # columns x = lo .. hi + 1 where r(x - 1) > 0
    cur, prev = log_r[1:], log_r[:-1]
    valid = np.isfinite(prev)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.exp(np.where(valid, cur - prev, -np.inf))
    small, big = (p, q) if p < q else (q, p)
    keep = 1.0 - big
    psi = (keep * ratio[valid] + small) / (big - small)
    e = math.exp(epsilon)
    logs = np.log(e + (e - 1.0) * psi)
    k = int(np.argmin(logs))
    x_at = lo + int(np.flatnonzero(valid)[k])
    return TheoremScale(
        "lemma2", epsilon, float(1.0 / logs[k]), f"column x' = {x_at} (psi = {float(psi[k]):.6g})"
    )


_OWN_DATA = {
    "thm1": thm1_scale,
    "thm2": thm2_scale,
    "thm3-eq13": thm3_eq13_scale,
    "thm3-eq14": thm3_eq14_scale,
    "eq15": eq15_scale,
    "thm4": thm4_scale,
    "lemma1": lemma1_scale,
}


def check_mechanism(mechanism: str) -> str:
    """Return ``mechanism`` if it is in :data:`MULTIUSER_MECHANISMS`, else raise ValueError."""
    if mechanism not in MULTIUSER_MECHANISMS:
        raise ValueError(f"mechanism must be one of {', '.join(MULTIUSER_MECHANISMS)}, got {mechanism!r}")
    return mechanism


def not_applicable(user: User, pair_set: str, mechanism: str) -> str | None:
    """Why ``mechanism`` does not apply to ``user`` under ``pair_set`` (None if it applies).

    Raises
    ------
    ValueError
        If the pair set or mechanism name is unknown, or the pair set does not fit the user.
    """
    check_pair_set(pair_set)
    check_mechanism(mechanism)
    _check_fit(user, pair_set)
    if mechanism in GENERAL:
        return None
    if mechanism not in THEOREMS[pair_set]:
        return f"applies to pair set {_set_of(mechanism)}, not {pair_set}"
    if mechanism == "eq15" and not _is_bernoulli(user.prior):
        return "needs a Bernoulli P (values in {0, 1})"
    if mechanism in ("lemma1", "lemma2"):
        assert user.alternative is not None
        if not (_is_bernoulli(user.prior) and _is_bernoulli(user.alternative)):
            return "needs Bernoulli P and Q (values in {0, 1})"
        if mechanism == "lemma2" and _bernoulli(user.prior, "P") == _bernoulli(user.alternative, "Q"):
            return "needs p != q"
    return None


def _set_of(mechanism: str) -> str:
    return next(k for k, v in THEOREMS.items() if mechanism in v)


def _is_bernoulli(prior: DiscretePrior) -> bool:
    return bool(np.all(np.isin(prior.support[prior.pmf > 0], (0.0, 1.0))))


# ---------------------------------------------------------------------------------------------
# One user


def calibrate_user(
    system: MultiUserSystem,
    user: str,
    pair_set: str,
    epsilon: float,
    mechanism: str = "optimal",
    *,
    others: DiscretePrior | None = None,
) -> MultiUserCalibration:
    """Calibrate Laplace noise on the sum for one user's pair of secrets, and check it exactly.

    Parameters
    ----------
    system : MultiUserSystem
    user : str
        Name of the target user ``i``.
    pair_set : {"ab", "a-bot", "P-bot", "P-Q"}
        Seed 000 sec 4 (see :func:`~pufferfish.multiuser.query_priors`).
    epsilon : float
        Budget, finite and > 0.
    mechanism : str
        One of :data:`MULTIUSER_MECHANISMS` that applies (see :func:`not_applicable`).
    others : DiscretePrior, optional
        The other users' sum ``R_i``, if already computed.

    Returns
    -------
    MultiUserCalibration
        The scale and its exact check on the query's two conditional distributions.

    Raises
    ------
    ValueError
        On a bad argument or a mechanism that does not apply (the message says why).
    PrivacyCheckError
        If the scale fails the exact check after a move of at most 1e-6 to the safe side.
    """
    epsilon = check_epsilon(epsilon)
    u = system.user(user)
    reason = not_applicable(u, pair_set, mechanism)
    if reason is not None:
        raise ValueError(f"mechanism {mechanism} does not apply to user {user!r}: {reason}")
    r = others_distribution(system, user) if others is None else others
    scenario = pair_scenario(system, pair_set, [user], others={user: r})
    return _calibrate_on(scenario, r, u, pair_set, epsilon, mechanism)


def _calibrate_on(
    scenario: Scenario,
    others: DiscretePrior,
    u: User,
    pair_set: str,
    epsilon: float,
    mechanism: str,
    *,
    upper: Calibration | None = None,
) -> MultiUserCalibration:
    """One applicable mechanism on a built query scenario (``upper``: a relaxed result to bracket)."""
    if mechanism == "optimal":
        result = calibrate_optimal(scenario, epsilon, upper=upper)
    elif mechanism in GENERAL:
        result = calibrate(scenario, epsilon, mechanism)
    else:
        ts = lemma2_scale(u, epsilon, others) if mechanism == "lemma2" else _OWN_DATA[mechanism](u, epsilon)
        result = _verified(
            scenario,
            mechanism,
            epsilon,
            ts.scale,
            prior=SYSTEM_PRIOR,
            pair=secret_names(u, pair_set),
            decided_by=ts.decided_by,
            root=ts.root,
        )
    uses = mechanism in GENERAL or mechanism == "lemma2"
    return MultiUserCalibration(
        user=u.name, pair_set=pair_set, source=SOURCES[mechanism], uses_other_users=uses, calibration=result
    )


def compare_user(
    system: MultiUserSystem,
    user: str,
    pair_set: str,
    epsilons: float | Iterable[float],
    mechanisms: Sequence[str] | None = None,
) -> tuple[MultiUserCalibration | Skipped, ...]:
    """Every applicable mechanism for one user's pair set at several budgets.

    Parameters
    ----------
    system : MultiUserSystem
    user : str
    pair_set : {"ab", "a-bot", "P-bot", "P-Q"}
    epsilons : float or iterable of float
        Budgets, each finite and > 0.
    mechanisms : sequence of str, optional
        Default: the pair set's theorems, then ``kantorovich``, ``relaxed``, ``optimal``.

    Returns
    -------
    tuple of MultiUserCalibration or Skipped
        Ordered by epsilon, then mechanism. A mechanism that does not apply, or whose scale fails
        the exact check (a finding about its theorem), is a :class:`Skipped` with the reason.

    Raises
    ------
    ValueError
        On a bad argument, or a pair set that does not fit the user's data.
    """
    check_pair_set(pair_set)
    eps_list = check_epsilons([epsilons] if isinstance(epsilons, (int, float)) else epsilons)
    u = system.user(user)
    _check_fit(u, pair_set)
    mechs = tuple(THEOREMS[pair_set] + GENERAL if mechanisms is None else mechanisms)
    if not mechs:
        raise ValueError("mechanisms needs at least one name, got none")
    for m in mechs:
        check_mechanism(m)
    r = others_distribution(system, user)
    scenario = pair_scenario(system, pair_set, [user], others={user: r})  # built once, used by all
    out: list[MultiUserCalibration | Skipped] = []
    for eps in eps_list:
        relaxed: Calibration | None = None
        for m in mechs:
            reason = not_applicable(u, pair_set, m)
            if reason is not None:
                out.append(Skipped(m, eps, reason))
                continue
            try:
                res = _calibrate_on(scenario, r, u, pair_set, eps, m, upper=relaxed)
            except PrivacyCheckError as exc:
                out.append(Skipped(m, eps, f"fails the exact privacy check: {exc}"))
                continue
            except ValueError as exc:
                if m != "lemma2":  # lemma2 needs the others' sum on the integers: a data condition
                    raise
                out.append(Skipped(m, eps, str(exc)))
                continue
            if m == "relaxed":
                relaxed = res.calibration
            out.append(res)
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# Every user of a system


@dataclass(frozen=True)
class SystemCalibration:
    """The optimal scale for a pair set over every user of a system, with how it was certified.

    Attributes
    ----------
    pair_set : str
    epsilon : float
    scale : float
        ``max_i theta_i``: the smallest scale whose exact loss is ``<= epsilon`` for every user's
        pair (each ``theta_i`` is user ``i``'s optimal scale).
    user : str
        The user whose pair decides the scale.
    lower_bound : float
        ``max_i`` of the tail bound (below it some user's loss exceeds ``epsilon``).
    users : int
        Number of users.
    certified_alone : int
        Users certified by the exact loss of their own pair without the others (post-processing).
    checked_query : int
        Users whose optimal scale was computed on the full query distributions.
    deciding : MultiUserCalibration or None
        The full-query calibration of the deciding user, when it was computed.
    query_check : PrivacyLoss or None
        Exact loss of the deciding user's full query (seed 000 eq 7-9) at :attr:`scale`, when it
        was evaluated (``check_query``); the scale was moved up (at most 1e-6) until it passed.
    seconds : float
        Wall time of the calibration.

    Notes
    -----
    Two bounds per user need only its own data. *Lower*: beyond the ends of the support the
    query's density ratio is ``E[e^{D/theta}]``-based (``M_P(1/theta) / M_Q(1/theta)`` for ``P-Q``,
    ``E[e^{+-D/theta}]`` for ``P-bot``), whatever the other users, so ``theta_i`` is at least the
    scale where that tail ratio reaches ``e^eps``. *Upper*: adding the independent sum of the
    other users is post-processing of ``D_i + N``, so the query's loss never exceeds the loss of
    the user's own pair (``P_i`` vs ``delta_0`` or ``Q_i``) with the same noise; that loss is exact
    and O(``|supp P_i|``). Users whose own-pair loss at the current scale is ``<= eps`` are done;
    the rest are calibrated on the full query (seed 000 eq 7-9), largest first.
    """

    pair_set: str
    epsilon: float
    scale: float
    user: str
    lower_bound: float
    users: int
    certified_alone: int
    checked_query: int
    deciding: MultiUserCalibration | None
    query_check: PrivacyLoss | None
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary."""
        return {
            "mechanism": "optimal",
            "pair_set": self.pair_set,
            "epsilon": self.epsilon,
            "scale": self.scale,
            "user": self.user,
            "lower_bound": self.lower_bound,
            "users": self.users,
            "certified_alone": self.certified_alone,
            "checked_query": self.checked_query,
            "deciding": None if self.deciding is None else self.deciding.to_dict(),
            "query_check": None
            if self.query_check is None
            else {
                "loss": self.query_check.loss,
                "error_bound": self.query_check.error_bound,
                "worst_y": self.query_check.worst_y,
            },
            "seconds": self.seconds,
        }


def _own_pairs(system: MultiUserSystem, pair_set: str) -> list[tuple[DiscretePrior, DiscretePrior]]:
    """Each user's own pair of value distributions (``P_i`` vs ``delta_0`` / ``Q_i`` / points)."""
    out = [own_pair(u, pair_set) for u in system.users]
    return out


def _padded(priors: Sequence[DiscretePrior]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Support points and log-probabilities of many priors, padded with ``-inf`` mass: (K, m)."""
    m = max(p.size for p in priors)
    xs = np.zeros((len(priors), m))
    lp = np.full((len(priors), m), -np.inf)
    for k, p in enumerate(priors):
        assert p.log_pmf is not None
        xs[k, : p.size] = p.support
        lp[k, : p.size] = p.log_pmf
    return xs, lp


def _tail_lower(
    first: Sequence[DiscretePrior], second: Sequence[DiscretePrior], epsilon: float
) -> NDArray[np.float64]:
    """Per pair, the scale below which a tail ratio of the query exceeds ``e^eps`` (lower bound).

    Vectorised bisection on ``log u``, ``u = 1/theta``, over all pairs at once (100 halvings:
    relative precision ~1e-15 of ``u`` within ``[1e-30, 1e30]``); the result is the upper end of
    the final bracket in ``u``, hence never above the true bound in ``theta``.
    """
    xa, la = _padded(first)
    xb, lb = _padded(second)

    def excess(u: NDArray[np.float64]) -> NDArray[np.float64]:
        best = np.zeros(u.size)
        for sign in (1.0, -1.0):
            a = logsumexp(la + sign * u[:, None] * xa, axis=1)
            b = logsumexp(lb + sign * u[:, None] * xb, axis=1)
            best = np.maximum(best, np.abs(a - b))
        return best - epsilon

    lo = np.full(len(first), math.log(1e-30))
    hi = np.full(len(first), math.log(1e30))
    never = excess(np.exp(hi)) <= 0.0  # tails never separate: no lower bound from them
    for _ in range(110):
        mid = 0.5 * (lo + hi)
        bad = excess(np.exp(mid)) > 0.0
        hi = np.where(bad, mid, hi)
        lo = np.where(bad, lo, mid)
    out = 1.0 / np.exp(hi)
    out[never] = 0.0
    return out


def _own_losses(
    first: Sequence[DiscretePrior], second: Sequence[DiscretePrior], scale: float
) -> NDArray[np.float64]:
    """Exact loss plus rounding bound of every user's own pair with ``Laplace(scale)``.

    Small supports are evaluated all at once (dense ``logsumexp`` over (K, points, atoms)); a
    pair with more than 64 atoms goes through :func:`~pufferfish.loss.privacy_loss`.
    """
    from .loss import privacy_loss

    out = np.empty(len(first))
    small = [k for k in range(len(first)) if first[k].size + second[k].size <= 64]
    large = [k for k in range(len(first)) if first[k].size + second[k].size > 64]
    for k in large:
        check = privacy_loss(Scenario.single(first[k], second[k]), scale)
        out[k] = check.loss + check.error_bound
    if small and scale == 0.0:
        for k in small:
            check = privacy_loss(Scenario.single(first[k], second[k]), scale)
            out[k] = check.loss + check.error_bound
    elif small:
        for chunk in range(0, len(small), 20_000):
            ids = small[chunk : chunk + 20_000]
            xa, la = _padded([first[k] for k in ids])
            xb, lb = _padded([second[k] for k in ids])
            points = np.concatenate([xa, xb], axis=1)  # every support point (padding repeats)
            da = logsumexp(la[:, None, :] - np.abs(points[:, :, None] - xa[:, None, :]) / scale, axis=2)
            db = logsumexp(lb[:, None, :] - np.abs(points[:, :, None] - xb[:, None, :]) / scale, axis=2)
            loss = np.abs(da - db).max(axis=1)
            span = float(np.abs(points).max()) * 2.0 / scale
            fin = np.concatenate([la[np.isfinite(la)], lb[np.isfinite(lb)]])
            bound = 8.0 * _EPS * points.shape[1] * (span + float(np.abs(fin).max()) + 1.0)
            out[ids] = loss + bound
    if scale > 0.0 and any(
        not np.array_equal(to_release_grid(p.support), p.support) for p in (*first, *second)
    ):
        # the sum is released on the grid (priors.to_release_grid): round(D_i + R) + N is not a
        # post-processing of D_i + N, but it moves every centre by <= RELEASE_GRID / 2, so each log
        # density by <= RELEASE_GRID / (2 scale) and the loss by at most RELEASE_GRID / scale
        out += RELEASE_GRID / scale
    return out


_EPS = float(np.finfo(np.float64).eps)
_NUDGES = (0.0, 1e-12, 1e-11, 1e-10, 1e-9, 1e-8, 1e-7, 1e-6)


def calibrate_system(
    system: MultiUserSystem, pair_set: str, epsilon: float, *, check_query: bool | None = None
) -> SystemCalibration:
    """The optimal Laplace scale for ``pair_set`` over every user of the system.

    Parameters
    ----------
    system : MultiUserSystem
    pair_set : {"ab", "a-bot", "P-bot", "P-Q"}
        Every user must fit it (e.g. carry an alternative for ``P-Q``).
    epsilon : float
        Budget, finite and > 0.
    check_query : bool, optional
        Also evaluate the exact loss of the deciding user's *full* query (the other users' sum by
        :func:`~pufferfish.multiuser.sum_distribution`) and move the scale up until it passes.
        Default: only when the system is small (total support size <= 20,000); on 10^5 users
        this one convolution dominates the run time.

    Returns
    -------
    SystemCalibration
        ``max_i theta_i`` of the users' optimal scales, the deciding user, and how each user was
        certified (see the Notes of :class:`SystemCalibration`).

    Raises
    ------
    ValueError
        On a bad argument or a user that does not fit the pair set.
    PrivacyCheckError
        If a full-query calibration fails its exact check (a bug).

    Notes
    -----
    Seed 000 sec 4 with the exact loss of SPEC sec 2.1. Only users whose own tail bound and
    own-pair loss leave the answer open are convolved with the others; for ``ab``, ``a-bot`` and
    one-signed ``P-bot`` values the two bounds meet (Thm 1-3 are tight), so no user needs the
    others' sum.
    """
    start = time.perf_counter()
    check_pair_set(pair_set)
    epsilon = check_epsilon(epsilon)
    pairs = _own_pairs(system, pair_set)
    first = [a for a, _ in pairs]
    second = [b for _, b in pairs]
    lower = _tail_lower(first, second, epsilon)
    k_lo = int(np.argmax(lower))
    scale = float(lower[k_lo])
    deciding_user = system.users[k_lo].name
    # Move the tail bound to the safe side of its own user's exact own-pair check (1e-6 at most).
    a0, b0 = pairs[k_lo]
    for step in _NUDGES:
        trial = scale * (1.0 + step)
        if _own_losses([a0], [b0], trial)[0] <= epsilon:
            scale = trial
            break
    own = _own_losses(first, second, scale)
    open_users = np.flatnonzero(own > epsilon).tolist()
    alone = len(pairs) - len(open_users)
    deciding: MultiUserCalibration | None = None
    checked = 0
    if open_users:
        # Largest own-pair optimum first: the users most likely to raise the scale.
        uppers = {k: calibrate(Scenario.single(*pairs[k]), epsilon, "optimal").scale for k in open_users}
        for k in sorted(open_users, key=lambda j: -uppers[j]):
            if uppers[k] <= scale:
                alone += 1
                continue
            res = calibrate_user(system, system.users[k].name, pair_set, epsilon, "optimal")
            checked += 1
            if res.scale > scale:
                scale, deciding_user, deciding = res.scale, res.user, res
    query_check = None
    if check_query is None:
        check_query = sum(u.prior.size for u in system.users) <= 20_000
    if deciding is not None:
        query_check = deciding.calibration.check
    elif check_query:
        scenario = pair_scenario(system, pair_set, [deciding_user])
        base = scale
        query_check = privacy_loss(scenario, scale)
        for step in _NUDGES:
            scale = base * (1.0 + step)
            query_check = privacy_loss(scenario, scale)
            if query_check.satisfies(epsilon):
                break
        else:
            assert query_check is not None
            raise PrivacyCheckError(
                f"system scale {base!r} fails the exact check of user {deciding_user!r}'s full query: "
                f"loss {query_check.loss!r} (+ bound {query_check.error_bound:.3g}) > {epsilon!r}"
            )
    return SystemCalibration(
        pair_set=pair_set,
        epsilon=epsilon,
        scale=scale,
        user=deciding_user,
        lower_bound=float(lower[k_lo]),
        users=len(system.users),
        certified_alone=alone,
        checked_query=checked,
        deciding=deciding,
        query_check=query_check,
        seconds=time.perf_counter() - start,
    )


# ---------------------------------------------------------------------------------------------
# Releasing the sum


@dataclass(frozen=True)
class SumRelease:
    """A noisy summation query and the calibration behind it.

    Attributes
    ----------
    value : float
        The released ``X + N`` (the true sum is not kept).
    scale : float
        Laplace scale ``theta`` of ``N``.
    epsilon : float
    pair_set : str
    user : str or None
        The target user, or ``None`` when the scale covers every user (:func:`calibrate_system`).
    mechanism : str
    noise : dict
        How the noise was drawn (:meth:`~pufferfish.noise.NoisyValues.describe`).
    calibration : MultiUserCalibration or SystemCalibration
    """

    value: float
    scale: float
    epsilon: float
    pair_set: str
    user: str | None
    mechanism: str
    noise: dict[str, Any]
    calibration: MultiUserCalibration | SystemCalibration

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary."""
        return {
            "released_sum": self.value,
            "scale": self.scale,
            "epsilon": self.epsilon,
            "pair_set": self.pair_set,
            "user": self.user,
            "mechanism": self.mechanism,
            "noise": self.noise,
            "calibration": self.calibration.to_dict(),
        }


def release_sum(
    system: MultiUserSystem,
    value: float,
    pair_set: str,
    epsilon: float,
    *,
    user: str | None = None,
    mechanism: str = "optimal",
    rng: np.random.Generator | int | None = None,
) -> SumRelease:
    """Release the sum of the users' reports with calibrated Laplace noise.

    Parameters
    ----------
    system : MultiUserSystem
        The users and their distributions (the adversary's prior, seed 000 sec 3).
    value : float
        The true value of the summation query ``X = sum_i D_i`` (finite).
    pair_set : {"ab", "a-bot", "P-bot", "P-Q"}
    epsilon : float
        Budget, finite and > 0.
    user : str, optional
        Protect this user's pair only. Default: every user (:func:`calibrate_system`, which
        needs ``mechanism = "optimal"``).
    mechanism : str
        One of :data:`MULTIUSER_MECHANISMS` (with ``user``), or ``"optimal"``.
    rng : numpy.random.Generator, int or None
        ``None``: secure sampler (OpenDP). A Generator or seed: NumPy, **not secure**.

    Returns
    -------
    SumRelease

    Raises
    ------
    ValueError
        If ``value`` is not finite or another argument is bad.
    PrivacyCheckError
        If the scale fails the exact check.
    """
    from .noise import add_laplace

    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"value must be a finite number, got {value!r}") from None
    if not math.isfinite(x):
        raise ValueError(f"value must be a finite number, got {value!r}")
    calib: MultiUserCalibration | SystemCalibration
    if user is None:
        if mechanism != "optimal":
            raise ValueError(f"without a user, mechanism must be optimal (every user), got {mechanism!r}")
        calib = calibrate_system(system, pair_set, epsilon)
    else:
        calib = calibrate_user(system, user, pair_set, epsilon, mechanism)
    noisy = add_laplace(np.array([x]), calib.scale, rng=rng)
    return SumRelease(
        value=float(noisy.values[0]),
        scale=calib.scale,
        epsilon=calib.epsilon,
        pair_set=pair_set,
        user=user,
        mechanism=mechanism,
        noise=noisy.describe(),
        calibration=calib,
    )
