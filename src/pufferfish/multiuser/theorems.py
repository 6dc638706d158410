"""The closed-form Laplace scales of seed 000 sec 4 for one user of a summation query.

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
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq
from scipy.special import logsumexp

from pufferfish._checks import check_epsilon
from pufferfish.calibration.registry import list_table
from pufferfish.calibration.result import RootFinding
from pufferfish.multiuser.system import PAIR_SETS, User, check_fit, check_pair_set
from pufferfish.priors.distributions import DiscretePrior
from pufferfish.transport.line import max_displacement_from_cdfs

# ---------------------------------------------------------------------------------------------
# Results before the check


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
    check_fit(user, "ab")
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
    check_fit(user, "a-bot")
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
    misses leftward moves; :func:`~pufferfish.transport.line.max_displacement_from_cdfs` is the
    corrected scan (tested against the plan).
    """
    epsilon = check_epsilon(epsilon)
    check_fit(user, "P-Q")
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
    check_fit(user, "P-Q")
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
    check_fit(user, "P-Q")
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


@dataclass(frozen=True)
class UserMechanism:
    """A calibrator of one user's pair set for a summation query (seed 000 sec 4), as registered.

    Attributes
    ----------
    name : str
        The name users type (``--mechanism``).
    pair_sets : tuple of str
        Pair sets the mechanism is stated for; empty for the general mechanisms, which apply to
        any pair set through the query's two conditional distributions.
    source : str
        Paper, theorem and equation.
    scale : callable or None
        ``scale(user, epsilon, others) -> TheoremScale``: the closed form, before the exact check
        (``others``: the other users' sum, used by ``lemma2`` only). None for the general
        mechanisms, which go through :func:`pufferfish.calibration.calibrate` (or
        :func:`~pufferfish.calibration.calibrate_optimal`) on the query's scenario.
    applies : callable or None
        ``applies(user) -> reason or None``: a condition on the user's data beyond the pair set.
    uses_other_users : bool
        Whether the scale depends on the other users' data.
    """

    name: str
    pair_sets: tuple[str, ...]
    source: str
    scale: Callable[[User, float, DiscretePrior], TheoremScale] | None = None
    applies: Callable[[User], str | None] | None = None
    uses_other_users: bool = False


def _own(fn: Callable[[User, float], TheoremScale]) -> Callable[[User, float, DiscretePrior], TheoremScale]:
    """A closed form that uses only the target user's data, in the registry's signature."""

    def scale(user: User, epsilon: float, others: DiscretePrior) -> TheoremScale:
        return fn(user, epsilon)

    return scale


def _bernoulli_p(user: User) -> str | None:
    return None if _is_bernoulli(user.prior) else "needs a Bernoulli P (values in {0, 1})"


def _bernoulli_pq(user: User) -> str | None:
    assert user.alternative is not None
    if not (_is_bernoulli(user.prior) and _is_bernoulli(user.alternative)):
        return "needs Bernoulli P and Q (values in {0, 1})"
    return None


def _bernoulli_p_ne_q(user: User) -> str | None:
    reason = _bernoulli_pq(user)
    if reason is None and _bernoulli(user.prior, "P") == _bernoulli(user.alternative, "Q"):  # type: ignore[arg-type]
        return "needs p != q"
    return reason


#: The multi-user mechanisms: one entry each (adding one is an entry plus its scale function).
USER_MECHANISMS: dict[str, UserMechanism] = {
    m.name: m
    for m in (
        UserMechanism("thm1", ("ab",), "seed 000 Thm 1 eq (10)", _own(thm1_scale)),
        UserMechanism("thm2", ("a-bot",), "seed 000 Thm 2 eq (12)", _own(thm2_scale)),
        UserMechanism("thm3-eq13", ("P-bot",), "seed 000 Thm 3 eq (13), brentq", _own(thm3_eq13_scale)),
        UserMechanism("thm3-eq14", ("P-bot",), "seed 000 Thm 3 eq (14)", _own(thm3_eq14_scale)),
        UserMechanism("eq15", ("P-bot",), "seed 000 eq (15) (Bernoulli)", _own(eq15_scale), _bernoulli_p),
        UserMechanism(
            "thm4",
            ("P-Q",),
            "seed 000 Thm 4 eq (16)-(17) (Delta* by the corrected Lemma 3 scan)",
            _own(thm4_scale),
        ),
        UserMechanism(
            "lemma1", ("P-Q",), "seed 000 Lemma 1 eq (18) (Bernoulli)", _own(lemma1_scale), _bernoulli_pq
        ),
        UserMechanism(
            "lemma2",
            ("P-Q",),
            "seed 000 Lemma 2 eq (21) (Bernoulli), as printed",
            lemma2_scale,
            _bernoulli_p_ne_q,
            uses_other_users=True,
        ),
        UserMechanism(
            "kantorovich",
            (),
            "seed 002 Lemma 1; seed 000 Prop 1 on the query's conditionals",
            uses_other_users=True,
        ),
        UserMechanism(
            "relaxed",
            (),
            "seed 002 Thm 2 (both conditions) on the query's conditionals",
            uses_other_users=True,
        ),
        UserMechanism("optimal", (), "exact privacy loss, SPEC sec 2.1", uses_other_users=True),
    )
}

#: Every multi-user mechanism name, in registry order.
MULTIUSER_MECHANISMS: tuple[str, ...] = tuple(USER_MECHANISMS)
#: Calibrators of seed 000, by pair set (derived from the registry).
THEOREMS: dict[str, tuple[str, ...]] = {
    ps: tuple(m.name for m in USER_MECHANISMS.values() if ps in m.pair_sets) for ps in PAIR_SETS
}
#: Calibrators that apply to any pair set, on the query's conditional distributions.
GENERAL: tuple[str, ...] = tuple(m.name for m in USER_MECHANISMS.values() if not m.pair_sets)
#: Source of each mechanism (derived from the registry).
SOURCES: dict[str, str] = {m.name: m.source for m in USER_MECHANISMS.values()}


def user_mechanism_table() -> str:
    """The multi-user registry as a reStructuredText list table (for the documentation).

    Returns
    -------
    str
        One row per mechanism: name, pair sets, whether it uses the other users' data, source.
    """
    rows = [
        (f"``{m.name}``", ", ".join(m.pair_sets) or "any", "yes" if m.uses_other_users else "no", m.source)
        for m in USER_MECHANISMS.values()
    ]
    return list_table(("mechanism", "pair sets", "uses other users", "source"), rows)


def check_mechanism(mechanism: str) -> UserMechanism:
    """The registry entry of ``mechanism``; ValueError naming the choices if it is unknown."""
    if mechanism not in USER_MECHANISMS:
        raise ValueError(f"mechanism must be one of {', '.join(MULTIUSER_MECHANISMS)}, got {mechanism!r}")
    return USER_MECHANISMS[mechanism]


def not_applicable(user: User, pair_set: str, mechanism: str) -> str | None:
    """Why ``mechanism`` does not apply to ``user`` under ``pair_set`` (None if it applies).

    Raises
    ------
    ValueError
        If the pair set or mechanism name is unknown, or the pair set does not fit the user.
    """
    check_pair_set(pair_set)
    m = check_mechanism(mechanism)
    check_fit(user, pair_set)
    if m.pair_sets and pair_set not in m.pair_sets:
        return f"applies to pair set {', '.join(m.pair_sets)}, not {pair_set}"
    return m.applies(user) if m.applies is not None else None


def _is_bernoulli(prior: DiscretePrior) -> bool:
    return bool(np.all(np.isin(prior.support[prior.pmf > 0], (0.0, 1.0))))
